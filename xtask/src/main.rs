//! `cargo xtask …`: the project's two commands and their set-up.
//!
//! - `cargo xtask test`: installs the system packages if missing, builds every
//!   binary and example, validates every shipped kernel (`cargo xtask shaders`),
//!   runs every test of the workspace.
//! - `cargo xtask shaders`: every shipped kernel and the generated device library
//!   through naga and spirv-val (the example `shaders_check` of vkshmem-device,
//!   built with the test build's features: xtask itself does not depend on the
//!   device crate, which it would build a second time).
//! - `cargo xtask bench`: the same set-up, then `vkshmem-bench` on 4 PEs on the
//!   default Vulkan device (every collective in every form, verified), written
//!   to `target/bench/vkshmem.{csv,json}` row by row as it goes (a failed run
//!   keeps the rows measured before it); on a terminal a progress bar stands
//!   for the rows, elsewhere they are printed as they come; it ends with a
//!   summary of a line per collective, the plot
//!   (`target/bench/vkshmem.{svg,png}`) and where the files are; `--compare-mpi`
//!   also runs the same sweep through Open MPI (`benches/mpi/mpi_bench.c`,
//!   installed and built here) and prints both side by side, then the bus
//!   bandwidth of both against size as a table and a plot
//!   (`vkshmem-bench --compare`, `target/bench/busbw-vs-mpi.svg`).
//! - `cargo xtask soak --minutes N [--pes P]`: random sequences of collectives,
//!   each checked against the host reference (`soak.rs`); `cargo xtask test`
//!   ends with a short one.

mod deps;
mod docs_check;
mod soak;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run every test (unit, multi-PE through vkshmrun, doc tests).
    Test {
        /// Extra arguments for `cargo test` (after `--`), e.g. a test name filter.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Validate every shipped kernel and the device library with naga and spirv-val.
    Shaders,
    /// Run the benchmark on the default Vulkan device: a summary on screen, every
    /// row and a plot in target/bench/.
    Bench(BenchArgs),
    /// Run random sequences of checked collectives for a while.
    Soak(soak::SoakArgs),
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Number of PEs.
    #[arg(short = 'n', long, default_value_t = 4)]
    npes: u32,
    /// Forms: host, thread, work_group, work_groups, queue (comma-separated) or all.
    #[arg(long, default_value = "all")]
    scope: String,
    /// Largest size in bytes (K/M/G suffixes).
    #[arg(long, default_value = "256K")]
    max_bytes: String,
    /// Timed calls per size.
    #[arg(long, default_value_t = 10)]
    iters: u32,
    /// Also run the sweep through Open MPI on as many processes and print both.
    #[arg(long)]
    compare_mpi: bool,
    /// Run under mpirun (vkshmem-bench built with the cargo feature `mpi`)
    /// as nodes of this many PEs (`VKSHMEM_NODE_SIZE`): the paths between
    /// nodes, on one machine. With `--compare-mpi`, MPI runs over the same
    /// ranks right after.
    #[arg(long)]
    nodes: Option<u32>,
    /// The one-sided sweep instead (`vkshmem-bench --rma`: put, get,
    /// fetch_add and the put_signal round trip between PE 0 and the last
    /// PE); with `--compare-mpi`, against MPI_Put/MPI_Get/MPI_Fetch_and_op
    /// on a window over the same ranks.
    #[arg(long)]
    rma: bool,
    /// More arguments for vkshmem-bench (after `--`), e.g. `--type double`.
    #[arg(last = true)]
    extra: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The cargo features `cargo xtask test` (and the soak it runs) build with:
/// MPI jobs (`mpirun`) are tested too.
pub const TEST_FEATURES: &str = "vkshmem/mpi,vkshmem-bench/mpi";

/// `cargo build` of `targets` with the packages and features of `cargo xtask
/// test`'s build (`--workspace`, [`TEST_FEATURES`]): the dev builds of `test`,
/// `shaders` and `soak` all go through here, so that none unifies other
/// features and rebuilds what another built (naga and the crates above it).
/// (`bench` makes its own release build.)
pub fn build_as_tested(targets: &[&str]) -> Result<()> {
    let mut build = cargo();
    build.args(["build", "--workspace", "--features", TEST_FEATURES]);
    build.args(targets);
    run(build)
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn run(mut cmd: Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let st = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !st.success() {
        bail!("{cmd:?} failed ({st})");
    }
    Ok(())
}

fn output(mut cmd: Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("starting {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn test(args: &[String]) -> Result<()> {
    deps::ensure()?;
    deps::ensure_mpi_build()?;
    // vkshmrun and vkshmem-bench are other packages' binaries to the root package's
    // tests (tests/launcher.rs finds them beside its executable): build them, and
    // the examples the tests run as PEs, before any test runs. `--lib` builds
    // libvkshmem_c.so, which oshcc links the C tests against (tests/c_abi.rs).
    build_as_tested(&["--lib", "--bins", "--examples"])?;
    // What docs/mpirun.md tells a reader to build (see docs_check.rs).
    docs_check::check_documented(&root(), |args| {
        let mut c = cargo();
        c.args(args);
        run(c)
    })?;
    check_shaders()?;
    let mut t = cargo();
    t.args(["test", "--workspace", "--features", TEST_FEATURES]);
    if !args.is_empty() {
        t.arg("--").args(args);
    }
    run(t)?;
    if args.is_empty() {
        // 20 seconds each of random checked collectives (thousands of
        // calls; tests/thread_pes.rs soaks thread-PEs for 30 more); host
        // forms only unless said. Short, so that CI stays well under 20
        // minutes.
        let short = soak::SoakArgs {
            minutes: 1.0 / 3.0,
            pes: 4,
            seed: None,
            device_kernels: Some(0),
            busy: 0,
            staged: false,
            queued: 0.0,
            nodes: None,
        };
        // On 4 PEs with one device kernel beside two CPU-hungry threads:
        // device waits must survive a busy machine (on lavapipe, PEs and
        // the load share the CPU).
        soak::soak(&soak::SoakArgs {
            device_kernels: Some(1),
            busy: 2,
            ..short.clone()
        })?;
        // On 8 PEs (more PEs than cores: the sync plane's waits must yield
        // to the PEs they wait for).
        soak::soak(&soak::SoakArgs {
            pes: 8,
            ..short.clone()
        })?;
        // Queued collectives mixed into the host calls on 3 PEs (their
        // kernels come from the cache the launcher tests filled).
        soak::soak(&soak::SoakArgs {
            pes: 3,
            queued: 0.3,
            ..short.clone()
        })?;
        // Through the staged transport on 4 PEs.
        soak::soak(&soak::SoakArgs {
            staged: true,
            ..short.clone()
        })?;
        // Under mpirun as 2 nodes of 2 PEs: every WORLD collective crosses
        // nodes (staging within a node, MPI between them), teams within a
        // node and across.
        soak::soak(&soak::SoakArgs {
            nodes: Some(2),
            ..short
        })?;
        loaded_device_barrier()?;
    }
    Ok(())
}

/// Runs the built `shaders_check` on the workspace (see the module docs).
fn check_shaders() -> Result<()> {
    let mut c = Command::new(root().join("target/debug/examples/shaders_check"));
    c.arg(root());
    run(c)
}

/// `vkshmrun -n 8 device_barrier 200` beside two busy threads: 600 device
/// barriers per PE, more PEs than cores, and a loaded machine.
fn loaded_device_barrier() -> Result<()> {
    let dir = root().join("target/debug");
    let _busy = soak::Busy::start(2);
    eprintln!("xtask: device_barrier on 8 PEs beside 2 busy threads");
    let mut c = Command::new(dir.join("vkshmrun"));
    // A hang becomes an error naming the PEs that did not arrive.
    c.args(["-n", "8", "--wait-timeout", "120"])
        .arg(dir.join("examples/device_barrier"))
        .arg("200");
    let out = output(c)?;
    print!("{out}");
    if !out.contains("device_barrier: ok") {
        bail!("device_barrier on 8 PEs beside a busy machine did not report ok");
    }
    Ok(())
}

/// The median time of a row of vkshmem-bench's or mpi_bench's CSV, µs: the
/// `median_us` column (vkshmem-bench), else `time_us` (mpi_bench, and
/// vkshmem-bench's CSVs from before the column was renamed).
fn median_us(row: &std::collections::HashMap<String, String>) -> Option<f64> {
    row.get("median_us")
        .or_else(|| row.get("time_us"))
        .and_then(|v| v.parse().ok())
}

/// After a failed sweep: how many rows the streamed CSV kept, and where.
fn report_partial(csv: &Path, json: &Path) {
    let rows = std::fs::read_to_string(csv)
        .map(|t| csv_rows(&t).len())
        .unwrap_or(0);
    eprintln!(
        "xtask: the sweep failed; the {rows} rows measured before it are in {} and {}",
        csv.display(),
        json.display()
    );
}

/// The rows of a CSV text with a header line, as maps from column to value.
fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(head) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = head.split(',').collect();
    lines
        .map(|l| {
            cols.iter()
                .zip(l.split(','))
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Runs the sweep `c` (vkshmem-bench under its launcher), its stdout copied
/// line by line to `log`. Where stdout is a terminal, a progress bar stands
/// for the table's rows (they are in the CSV and `log`), and the lines
/// around the table pass (the table's notes, such as what was skipped, stay
/// in `log`); elsewhere (CI, a pipe) every line passes as it comes, as the
/// bench printed it.
fn run_sweep(mut c: Command, log: &Path) -> Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    eprintln!("xtask: running {c:?}");
    let mut child = c
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {c:?}"))?;
    let stdout = child.stdout.take().expect("stdout piped");
    let mut screen = std::io::stdout().is_terminal().then(Screen::new);
    let copied = (|| -> Result<()> {
        let mut file = std::io::LineWriter::new(
            std::fs::File::create(log).with_context(|| format!("{}", log.display()))?,
        );
        for line in std::io::BufReader::new(stdout).split(b'\n') {
            let mut line = line?;
            line.push(b'\n');
            file.write_all(&line)?;
            match &mut screen {
                Some(s) => s.line(&String::from_utf8_lossy(&line)),
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&line)?;
                    out.flush()?;
                }
            }
        }
        Ok(())
    })();
    if let Some(s) = screen {
        s.end();
    }
    let st = child.wait().with_context(|| format!("waiting for {c:?}"))?;
    if !st.success() {
        bail!("{c:?} failed ({st})");
    }
    copied
}

/// vkshmem-bench's output on a terminal: the lines before the table, a
/// progress bar for the table (sized by the bench's `# sweep: N sizes` line),
/// then the summary (from its `# summary:` line on).
struct Screen {
    bar: indicatif::ProgressBar,
    part: Part,
}

/// Where in vkshmem-bench's output a line falls.
enum Part {
    Head,
    Table,
    Summary,
}

impl Screen {
    fn new() -> Screen {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stdout());
        bar.set_style(
            indicatif::ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}")
                .expect("a valid template"),
        );
        bar.set_message("starting the PEs, measuring the floors and the copy roofline");
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Screen {
            bar,
            part: Part::Head,
        }
    }

    /// One line of the bench's stdout (with its newline).
    fn line(&mut self, line: &str) {
        let line = line.trim_end_matches(['\n', '\r']);
        if line.starts_with("# summary:") {
            self.bar.finish_and_clear();
            self.part = Part::Summary;
        }
        match self.part {
            Part::Head if line.starts_with("# median_us:") => {
                // The table begins.
                self.part = Part::Table;
                self.bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
                    )
                    .expect("a valid template")
                    .progress_chars("=> "),
                );
                self.bar.set_message("");
            }
            Part::Head => {
                let sizes = line
                    .strip_prefix("# sweep: ")
                    .and_then(|r| r.split_whitespace().next().and_then(|n| n.parse().ok()));
                if let Some(n) = sizes {
                    self.bar.set_length(n);
                }
                self.bar.println(line);
            }
            Part::Table if line.starts_with("# phases ") => self.bar.println(line),
            Part::Table if line.starts_with('#') => {}
            Part::Table => {
                let f: Vec<&str> = line.split_whitespace().collect();
                // A row: collective, scope, type, op, npes, bytes, …; not the
                // column names.
                if f.len() > 5 && f[0] != "collective" {
                    self.bar.inc(1);
                    self.bar
                        .set_message(format!("{} {} {} B", f[0], f[1], f[5]));
                }
            }
            Part::Summary => println!("{line}"),
        }
    }

    /// The output ended: a bar still drawn (the sweep stopped before its
    /// summary) stays where it got to.
    fn end(self) {
        if !self.bar.is_finished() {
            self.bar.abandon();
        }
    }
}

fn bench(a: &BenchArgs) -> Result<()> {
    deps::ensure()?;
    if a.nodes.is_some() {
        deps::ensure_mpi_build()?;
    }
    let mut build = cargo();
    build.args(["build", "--release"]);
    build.args(["-p", "vkshmrun", "-p", "vkshmem-bench"]);
    if a.nodes.is_some() {
        build.args(["--features", "vkshmem-bench/mpi"]);
    }
    run(build)?;
    let dir = root().join("target/release");
    let out_dir = root().join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    if a.rma {
        return bench_rma(a, &dir, &out_dir);
    }
    let csv = out_dir.join("vkshmem.csv");
    let json = out_dir.join("vkshmem.json");
    let plots = [out_dir.join("vkshmem.svg"), out_dir.join("vkshmem.png")];
    let log = out_dir.join("vkshmem.txt");
    // A run that fails before its first row must not leave the last run's rows
    // looking like its own.
    for f in [&csv, &json, &log].into_iter().chain(&plots) {
        let _ = std::fs::remove_file(f);
    }
    let mut c = launcher(&dir, a.nodes);
    c.arg("-n")
        .arg(a.npes.to_string())
        .arg(dir.join("vkshmem-bench"))
        .args(["--collective", "all", "--scope", &a.scope, "--check"])
        .args(["--max-bytes", &a.max_bytes, "--iters", &a.iters.to_string()])
        .arg("--csv")
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&plots[0])
        .arg("--plot")
        .arg(&plots[1])
        .args(&a.extra);
    if let Err(e) = run_sweep(c, &log) {
        report_partial(&csv, &json);
        return Err(e);
    }
    println!(
        "# files in {}: vkshmem.csv and vkshmem.json (every row), vkshmem.svg and vkshmem.png \
         (the plot), vkshmem.txt (the whole output, every row and what was skipped)",
        out_dir.display()
    );
    if !a.compare_mpi {
        return Ok(());
    }
    // The MPI sweep must be the same sweep: the options that shape it follow.
    let value = |key: &str| {
        a.extra
            .iter()
            .position(|x| x == key)
            .and_then(|i| a.extra.get(i + 1))
            .cloned()
    };
    if value("--team").is_some() {
        bail!("--compare-mpi runs on every PE: leave out --team");
    }
    let mut same = Vec::new();
    for key in [
        "--min-bytes",
        "--step-factor",
        "--warmup",
        "--root",
        "--collective",
    ] {
        if let Some(v) = value(key).filter(|v| v != "all") {
            same.extend([key.to_string(), v]);
        }
    }
    let exe = build_mpi_bench(&dir)?;
    // The type and op of the vkshmem rows, for the same MPI sweep.
    let ours = csv_rows(&std::fs::read_to_string(&csv)?);
    let pick = |col: &str, coll: &str| {
        ours.iter()
            .find(|r| r["collective"] == coll)
            .map(|r| r[col].clone())
            .unwrap_or_default()
    };
    let (ty, op) = (pick("type", "reduce"), pick("op", "reduce"));
    let mut m = mpirun();
    m.args(["-n", &a.npes.to_string()])
        .arg(&exe)
        .args(["--max-bytes", &a.max_bytes])
        .args(["--iters", &a.iters.to_string()])
        .args(["--type", if ty.is_empty() { "float" } else { &ty }])
        .args(["--op", if op.is_empty() { "sum" } else { &op }])
        .args(&same);
    let theirs_text = output(m)?;
    std::fs::write(out_dir.join("mpi.csv"), &theirs_text)?;
    let title = format!(
        "vkshmem against Open MPI ({} processes{}, host memory), median us; ratio = vkshmem / MPI",
        a.npes,
        a.nodes
            .map_or(String::new(), |k| format!(", vkshmem as nodes of {k}"))
    );
    // MPI's `broadcast+barrier` row (MPI_Bcast then MPI_Barrier) gives the
    // completion our broadcast gives.
    side_by_side(
        &title,
        "collective",
        &csv_rows(&theirs_text),
        &ours,
        &["host", "work_group", "thread"],
    );
    // Bus bandwidth against size, both libraries, as a table and a plot.
    println!();
    let plot = out_dir.join("busbw-vs-mpi.svg");
    let mut c = Command::new(dir.join("vkshmem-bench"));
    c.arg("--compare")
        .arg(&csv)
        .arg(out_dir.join("mpi.csv"))
        .arg("--plot")
        .arg(&plot);
    run(c)?;
    println!(
        "(CSV: {} and {}; plot: {})",
        csv.display(),
        out_dir.join("mpi.csv").display(),
        plot.display()
    );
    Ok(())
}

type CsvRow = std::collections::HashMap<String, String>;

/// MPI's rows beside ours: per MPI row (named by column `key`, `bytes`), our
/// median in each of `scopes` and the ratio. A `+barrier` suffix of MPI's
/// name matches our row without it.
fn side_by_side(title: &str, key: &str, theirs: &[CsvRow], ours: &[CsvRow], scopes: &[&str]) {
    println!();
    println!("{title}");
    print!("{:>17} {:>10} {:>10}", key, "bytes", "mpi_us");
    for s in scopes {
        print!(" {:>12} {:>8}", format!("{s}_us"), "ratio");
    }
    println!();
    for t in theirs {
        let mpi = median_us(t).unwrap_or(f64::NAN);
        print!("{:>17} {:>10} {:>10.2}", t[key], t["bytes"], mpi);
        let name = t[key].trim_end_matches("+barrier");
        for &s in scopes {
            let mine = ours
                .iter()
                .find(|r| r[key] == name && r["bytes"] == t["bytes"] && r["scope"] == s);
            match mine.and_then(median_us) {
                Some(v) => print!(" {:>12.2} {:>8.1}", v, v / mpi),
                None => print!(" {:>12} {:>8}", "-", "-"),
            }
        }
        println!();
    }
}

/// `mpi_bench` (benches/mpi/mpi_bench.c) built into `dir` with mpicc.
fn build_mpi_bench(dir: &Path) -> Result<PathBuf> {
    deps::ensure_mpi()?;
    let exe = dir.join("mpi_bench");
    let mut cc = Command::new("mpicc");
    cc.args(["-O2", "-Wall", "-o"])
        .arg(&exe)
        .arg(root().join("benches/mpi/mpi_bench.c"));
    run(cc)?;
    Ok(exe)
}

/// `cargo xtask bench --rma`: the one-sided sweep, and with `--compare-mpi`
/// MPI's one-sided calls on the same ranks, side by side.
fn bench_rma(a: &BenchArgs, dir: &Path, out_dir: &Path) -> Result<()> {
    let csv = out_dir.join("rma.csv");
    let _ = std::fs::remove_file(&csv);
    let scope = if a.scope == "all" { "all" } else { &a.scope };
    let mut c = launcher(dir, a.nodes);
    c.arg("-n")
        .arg(a.npes.to_string())
        .arg(dir.join("vkshmem-bench"))
        .args(["--rma", "--scope", scope])
        .args(["--max-bytes", &a.max_bytes, "--iters", &a.iters.to_string()])
        .arg("--csv")
        .arg(&csv)
        .args(&a.extra);
    run(c)?;
    if !a.compare_mpi {
        return Ok(());
    }
    let exe = build_mpi_bench(dir)?;
    let mut m = mpirun();
    m.args(["-n", &a.npes.to_string()])
        .arg(&exe)
        .arg("--rma")
        .args(["--max-bytes", &a.max_bytes])
        .args(["--iters", &a.iters.to_string()]);
    for key in ["--min-bytes", "--step-factor", "--warmup", "--peer"] {
        if let Some(i) = a.extra.iter().position(|x| x == key) {
            if let Some(v) = a.extra.get(i + 1) {
                m.args([key, v]);
            }
        }
    }
    let theirs_text = output(m)?;
    std::fs::write(out_dir.join("mpi_rma.csv"), &theirs_text)?;
    let title = format!(
        "vkshmem against Open MPI one-sided ({} processes{}), median us; ratio = vkshmem / MPI",
        a.npes,
        a.nodes
            .map_or(String::new(), |k| format!(", vkshmem as nodes of {k}"))
    );
    side_by_side(
        &title,
        "op",
        &csv_rows(&theirs_text),
        &csv_rows(&std::fs::read_to_string(&csv)?),
        &["host", "thread", "work_group"],
    );
    println!(
        "(CSV: {} and {})",
        csv.display(),
        out_dir.join("mpi_rma.csv").display()
    );
    Ok(())
}

/// `mpirun` as the tests and benchmarks start it (as root when we are;
/// more ranks than cores allowed).
fn mpirun() -> Command {
    let mut m = Command::new("mpirun");
    if deps::is_root() {
        m.arg("--allow-run-as-root");
    }
    m.arg("--oversubscribe");
    m
}

/// What starts a job's PEs: `vkshmrun` from `dir`, or with `nodes`,
/// `mpirun` with nodes of that many PEs (`VKSHMEM_NODE_SIZE`), passing on
/// every `VKSHMEM_*` and `RUST_LOG` variable set here (mpirun does not).
pub fn launcher(dir: &Path, nodes: Option<u32>) -> Command {
    match nodes {
        None => Command::new(dir.join("vkshmrun")),
        Some(k) => {
            let mut m = mpirun();
            m.args(["-x", "VKSHMEM_NODE_SIZE"])
                .env("VKSHMEM_NODE_SIZE", k.to_string());
            for (var, _) in std::env::vars() {
                if (var.starts_with("VKSHMEM_") && var != "VKSHMEM_NODE_SIZE") || var == "RUST_LOG"
                {
                    m.args(["-x", &var]);
                }
            }
            m
        }
    }
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Test { args } => test(&args),
        Cmd::Shaders => {
            deps::ensure()?;
            build_as_tested(&["--example", "shaders_check"])?;
            check_shaders()
        }
        Cmd::Bench(a) => bench(&a),
        Cmd::Soak(a) => soak::soak(&a),
    }
}
