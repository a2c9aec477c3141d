//! `cargo xtask …`: the project's two commands and their set-up.
//!
//! - `cargo xtask test`: installs the system packages if missing, validates every
//!   shipped kernel (`cargo xtask shaders`), builds every binary and example, runs
//!   every test of the workspace.
//! - `cargo xtask shaders`: every shipped kernel and the generated device library
//!   through naga and spirv-val.
//! - `cargo xtask bench`: the same set-up, then the benchmark on 4 PEs on the
//!   default Vulkan device, printed as a table.

mod deps;
mod shaders;

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
    /// Run the benchmark on the default Vulkan device and print the table.
    Bench {
        /// Number of PEs.
        #[arg(short = 'n', long, default_value_t = 4)]
        npes: u32,
        /// Barrier iterations.
        #[arg(long, default_value_t = 2000)]
        iters: u32,
    },
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
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
    shaders::check(&root())?;
    let mut build = cargo();
    build.args(["build", "--workspace", "--bins", "--examples"]);
    run(build)?;
    let mut t = cargo();
    t.args(["test", "--workspace"]);
    if !args.is_empty() {
        t.arg("--").args(args);
    }
    run(t)
}

/// `key=value` fields of the line of `text` that contains `marker`.
fn fields<'a>(text: &'a str, marker: &str) -> Result<Vec<(&'a str, &'a str)>> {
    let line = text
        .lines()
        .find(|l| l.contains(marker))
        .with_context(|| format!("no line with {marker:?} in:\n{text}"))?;
    Ok(line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect())
}

fn field<'a>(f: &[(&'a str, &'a str)], key: &str) -> &'a str {
    f.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
        .unwrap_or("-")
}

fn bench(npes: u32, iters: u32) -> Result<()> {
    deps::ensure()?;
    let mut build = cargo();
    build.args(["build", "--release", "--bins", "--examples"]);
    run(build)?;
    let dir = root().join("target/release");
    let launch = |prog: &str, args: &[String]| -> Result<String> {
        let mut c = Command::new(dir.join("vkshmrun"));
        c.arg("-n")
            .arg(npes.to_string())
            .arg(dir.join("examples").join(prog))
            .args(args);
        output(c)
    };
    let ring_out = launch("heap_ring", &[])?;
    let ring = fields(&ring_out, "heap_ring: ok")?;
    // The device name has spaces: it is the rest of the line after `device=`.
    let device = ring_out
        .lines()
        .find_map(|l| {
            l.split_once("device=")
                .map(|(_, d)| d.trim_matches('"').to_string())
        })
        .unwrap_or_default();
    let barrier = launch("host_barrier", &[iters.to_string()])?;
    let barrier = fields(&barrier, "host_barrier: ok")?;
    println!();
    println!("vkshmem bench: {npes} PEs, device {device}");
    println!("{:<28} {:>6} {:>14}", "test", "npes", "result");
    println!(
        "{:<28} {:>6} {:>14}",
        "heap_ring (u32 elems)",
        npes,
        format!("ok, {}", field(&ring, "elems"))
    );
    println!(
        "{:<28} {:>6} {:>11} us",
        "host barrier_all",
        npes,
        field(&barrier, "barrier_all_us")
    );
    println!(
        "{:<28} {:>6} {:>11} us",
        "host sync_all",
        npes,
        field(&barrier, "sync_all_us")
    );
    // The collectives sweep (host scope for now), verified.
    let mut c = Command::new(dir.join("vkshmrun"));
    c.arg("-n")
        .arg(npes.to_string())
        .arg(dir.join("vkshmem-bench"))
        .args([
            "--collective",
            "all",
            "--check",
            "--max-bytes",
            "256K",
            "--iters",
            "10",
        ]);
    println!();
    print!("{}", output(c)?);
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Test { args } => test(&args),
        Cmd::Shaders => {
            deps::ensure()?;
            shaders::check(&root())
        }
        Cmd::Bench { npes, iters } => bench(npes, iters),
    }
}
