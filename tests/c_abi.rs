//! The C ABI (`capi/`, package vkshmem-c): C programs of ours, written from
//! the OpenSHMEM 1.5 text (`tests/c/`), compiled with `oshcc` and run as
//! jobs of 1, 2, 3, 4 and 8 PEs; the header checked against the library's
//! exported symbols; misuse ends the job with a message naming the call.
//! `cargo xtask test` builds oshcc, oshrun and libvkshmem_c first (they are
//! the vkshmem-c package's binaries and library, found beside vkshmrun).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::{bin_dir, run_vkshmrun_env, vkshmrun, Leftovers};

const TIMEOUT: Duration = Duration::from_secs(600);

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

/// Where the compiled C programs go (one directory for the test binary).
fn out_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Compiles `tests/c/<name>.c` with oshcc (strict warnings) once.
fn compile(name: &str) -> String {
    compile_file(&src(&format!("{name}.c")), name, "-O1")
}

/// Compiles `benches/c/<name>.c` as its users would, optimized, once.
fn compile_bench(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/c")
        .join(format!("{name}.c"));
    compile_file(&path, name, "-O2")
}

/// Compiles `source` with oshcc (strict warnings, `opt`) into the test's
/// directory as `name`, once. Tests run in parallel threads: the lock keeps
/// a second test from running a program the first is still linking.
fn compile_file(source: &Path, name: &str, opt: &str) -> String {
    static COMPILING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    let exe = out_dir().join(name);
    if !exe.exists() {
        let oshcc = bin_dir().join("oshcc");
        assert!(
            oshcc.exists(),
            "{} is missing: `cargo build --workspace --bins` first",
            oshcc.display()
        );
        let out = Command::new(&oshcc)
            .args([
                "-std=c11",
                opt,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-Wno-type-limits",
                "-o",
            ])
            .arg(&exe)
            .arg(source)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "oshcc {name}.c failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    exe.to_string_lossy().into_owned()
}

/// Runs `name` on `n` PEs and checks every PE said `<name>: ok`.
fn run_ok(name: &str, n: u32, env: &[(&str, &str)]) {
    let exe = compile(name);
    let np = n.to_string();
    let r = run_vkshmrun_env(
        &["-n", &np, &exe],
        env,
        TIMEOUT,
        Leftovers::Forbidden,
        |_| {},
    );
    let oks = r
        .stdout
        .lines()
        .filter(|l| l.starts_with(&format!("{name}: ok")))
        .count();
    assert!(
        r.code == Some(0) && oks == n as usize,
        "{name} on {n} PEs {env:?}: exit {:?}, {oks} ok lines\nstdout:\n{}\nstderr:\n{}",
        r.code,
        r.stdout,
        r.stderr
    );
}

#[test]
fn c_rma_holds_on_1_to_4_and_8_pes() {
    for n in [1, 2, 3, 4, 8] {
        run_ok("rma", n, &[]);
    }
    // PEs on two pretend devices: heap RMA through the proxy, globals
    // through the shared data segments.
    run_ok("rma", 3, &[("VKSHMEM_TRANSPORT", "staged:2")]);
}

#[test]
fn c_atomics_hold_on_1_to_4_and_8_pes() {
    for n in [1, 2, 3, 4, 8] {
        run_ok("amo", n, &[]);
    }
    run_ok("amo", 3, &[("VKSHMEM_TRANSPORT", "staged:2")]);
}

/// `shmem_align` to 8 KiB, 64 KiB, 2 MiB and every power of two to 8 MiB
/// gives aligned addresses on every PE (lavapipe's heaps are mapped at a
/// multiple of their size), and 2 GiB gives NULL with a message naming the
/// largest alignment available (at least 2 MiB).
#[test]
fn c_align_up_to_2_mib_on_1_2_and_4_pes() {
    let exe = compile("align");
    let runs: [(u32, &[(&str, &str)]); 4] = [
        (1, &[]),
        (2, &[]),
        (4, &[]),
        (3, &[("VKSHMEM_TRANSPORT", "staged:2")]),
    ];
    for (n, env) in runs {
        let np = n.to_string();
        let r = run_vkshmrun_env(
            &["-n", &np, &exe],
            env,
            TIMEOUT,
            Leftovers::Forbidden,
            |_| {},
        );
        let oks = r.stdout.lines().filter(|l| *l == "align: ok").count();
        let refusals: Vec<u64> = r
            .stderr
            .lines()
            .filter_map(|l| {
                l.strip_prefix(
                    "vkshmem: shmem_align: alignment 2147483648 is more than the heap mappings \
                     share (the largest alignment available is ",
                )?
                .strip_suffix("): NULL")?
                .parse()
                .ok()
            })
            .collect();
        assert!(
            r.code == Some(0)
                && oks == n as usize
                && refusals.len() == n as usize
                && refusals.iter().all(|&a| a >= 2 << 20 && a.is_power_of_two()),
            "align on {n} PEs {env:?}: exit {:?}, {oks} ok lines, refusals {refusals:?}\nstdout:\n{}\nstderr:\n{}",
            r.code,
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn c_waits_signals_locks_and_barriers_hold_on_1_to_4_and_8_pes() {
    for n in [1, 2, 3, 4, 8] {
        run_ok("sync", n, &[]);
    }
}

#[test]
fn c_collectives_and_teams_hold_on_1_to_4_and_8_pes() {
    for n in [1, 2, 3, 4, 8] {
        run_ok("coll", n, &[]);
    }
    run_ok("coll", 4, &[("VKSHMEM_TRANSPORT", "staged:2")]);
}

/// Active-set collectives on overlapping sets called one after another, on a
/// strided set while the other PEs work, and on more sets than the sync
/// plane has slots for (8 PEs), against a reference (tests/c/active_sets.c).
#[test]
fn c_active_set_collectives_hold_on_1_to_4_and_8_pes() {
    for n in [1, 2, 3, 4, 8] {
        run_ok("active_sets", n, &[]);
    }
    run_ok("active_sets", 3, &[("VKSHMEM_TRANSPORT", "staged:2")]);
}

/// Put and get on global variables at every start and length around the
/// 8-byte words the library copies whole, and at 1 MiB; the bytes around
/// each copy stay as they were.
#[test]
fn c_global_copies_hold_at_every_alignment() {
    for n in [1, 2, 3, 4] {
        run_ok("global_copy", n, &[]);
    }
}

/// The two commands of `docs/c-programs.md`: `oshcc -o hello hello.c && oshrun -n 4 ./hello`
/// (and the mpirun spelling `-np`).
#[test]
fn c_hello_through_oshcc_and_oshrun() {
    let exe = compile("hello");
    for flag in ["-n", "-np"] {
        let out = Command::new(bin_dir().join("oshrun"))
            .args([flag, "4", &exe])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let got: BTreeSet<&str> = text.lines().collect();
        let want: BTreeSet<String> = (0..4).map(|p| format!("Hello from {p} of 4")).collect();
        assert!(
            out.status.success() && got == want.iter().map(String::as_str).collect(),
            "oshrun {flag} 4 hello: {:?}\n{text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every function the header declares is exported by libvkshmem_c, and
/// every `shmem_` symbol it exports is declared (the header and the library
/// come from one description; this catches a generator that splits them).
#[test]
fn c_header_matches_the_library() {
    let header = std::fs::read_to_string(bin_dir().join("include/shmem.h")).unwrap();
    let mut declared = BTreeSet::new();
    let mut inline = BTreeSet::new();
    for line in header.lines() {
        let Some(open) = line.find('(') else { continue };
        if line.starts_with('#') || line.starts_with(' ') || line.starts_with("typedef") {
            continue;
        }
        let name = line[..open].rsplit([' ', '*']).next().unwrap().to_string();
        if line.starts_with("static inline") {
            inline.insert(name);
        } else if line.ends_with(");") && !name.starts_with("vkshmem_") {
            declared.insert(name);
        }
    }
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(bin_dir().join("libvkshmem_c.so"))
        .output()
        .expect("nm (binutils) runs");
    let exported: BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .filter(|s| {
            s.starts_with("sh")
                || s.starts_with("vkshmemx_")
                || ["_my_pe", "_num_pes", "start_pes"].contains(&s.as_str())
        })
        .collect();
    assert!(
        declared.len() > 1500,
        "only {} functions declared",
        declared.len()
    );
    let missing: Vec<_> = declared.difference(&exported).collect();
    let undeclared: Vec<_> = exported.difference(&declared).collect();
    assert!(missing.is_empty(), "declared, not exported: {missing:?}");
    assert!(
        undeclared.is_empty(),
        "exported, not declared: {undeclared:?}"
    );
    assert!(
        // What passes or computes `long double` (x87) is inline C.
        inline
            .iter()
            .all(|f| f.contains("longdouble") || f.starts_with("vkshmem_ld_")),
        "inline: {inline:?}"
    );
}

/// The OSU-style latency loop (`benches/c/osu_latency.c`) runs and
/// prints a row per call and size (its figures are in benches/RESULTS.md;
/// here a short run, for it to keep building and working).
#[test]
fn c_latency_loop_runs() {
    let exe = compile_bench("osu_latency");
    let r = vkshmrun(&["-n", "3", &exe, "5", "1", "4096"], TIMEOUT);
    // header, barrier, broadcast and reduce at 8, 32, 128, 512, 2048 bytes.
    let header = "call,bytes,median_us,min_us,max_us";
    assert_loop_rows(&r, header, 11, 2..3);
}

/// A benchmark loop ran (exit 0) and printed `header`, then `n` rows of
/// five comma-separated fields whose fields `times` are positive numbers.
fn assert_loop_rows(r: &common::Run, header: &str, n: usize, times: std::ops::Range<usize>) {
    let rows: Vec<&str> = r.stdout.lines().collect();
    assert!(
        r.code == Some(0) && rows.len() == n + 1 && rows[0] == header,
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    for row in &rows[1..] {
        let f: Vec<&str> = row.split(',').collect();
        assert!(
            f.len() == 5
                && f[times.clone()]
                    .iter()
                    .all(|x| x.parse::<f64>().is_ok_and(|t| t > 0.0)),
            "row {row}"
        );
    }
}

/// benches/c/active_latency.c builds and prints a row per call and size,
/// active-set form against team form.
#[test]
fn c_active_latency_loop_runs() {
    let exe = compile_bench("active_latency");
    let r = vkshmrun(&["-n", "2", &exe, "2", "2", "4096"], TIMEOUT);
    // header, barrier, sync, then broadcast, fcollect and sum at 8 and 4096 bytes.
    assert_loop_rows(&r, "call,bytes,active_us,team_us,ratio", 8, 2..5);
}

/// benches/c/global_rma.c builds and prints one time per kind of 1 MiB
/// copy (globals, heap, a local memcpy), so the loop behind the globals'
/// figures keeps working.
#[test]
fn c_global_rma_loop_runs() {
    let exe = compile_bench("global_rma");
    let r = vkshmrun(&["-n", "2", &exe, "2"], TIMEOUT);
    let rows: Vec<&str> = r.stdout.lines().collect();
    assert!(
        r.code == Some(0) && rows.len() == 7,
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    for row in rows {
        let t = row
            .strip_suffix(" us")
            .and_then(|head| head.rsplit(' ').next())
            .and_then(|x| x.parse::<f64>().ok());
        assert!(t.is_some_and(|t| t > 0.0), "row {row}");
    }
}

/// The header compiles as C++ (`extern "C"`, no generic macros), where a
/// C++ compiler is installed (`c++`; a C compiler is all Rust needs).
#[test]
fn c_header_compiles_as_cxx() {
    let inc = bin_dir().join("include");
    let src = out_dir().join("hello.cpp");
    std::fs::write(
        &src,
        "#include <shmem.h>\nint main() { shmem_init(); long *p = (long *)shmem_malloc(8);\n\
         shmem_long_p(p, 1, 0); shmem_free(p); shmem_finalize(); return 0; }\n",
    )
    .unwrap();
    let out = match Command::new("c++")
        .args(["-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
        .arg(format!("-I{}", inc.display()))
        .arg(&src)
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("no c++ compiler: the header's C++ check is skipped");
            return;
        }
        Err(e) => panic!("c++: {e}"),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The header alone compiles as C99 (no C11 generic macros then) and as
/// C11 with every warning.
#[test]
fn c_header_compiles_as_c99_and_c11() {
    let inc = bin_dir().join("include");
    for std in ["-std=c99", "-std=c11"] {
        let out = Command::new("cc")
            .args([
                std,
                "-Wall",
                "-Wextra",
                "-Wpedantic",
                "-Werror",
                "-fsyntax-only",
                "-x",
                "c",
                "-",
            ])
            .arg(format!("-I{}", inc.display()))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(
                    b"#include <shmem.h>\nint main(void) { return SHMEM_MAJOR_VERSION - 1; }\n",
                )?;
                c.wait_with_output()
            })
            .unwrap();
        assert!(
            out.status.success(),
            "{std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `shmem_global_exit(status)` on one PE ends the whole job (the others
/// were waiting in a barrier) and vkshmrun exits with that status, 0
/// included.
#[test]
fn c_global_exit_ends_the_job() {
    let exe = compile("misuse");
    for status in ["7", "0"] {
        let r = vkshmrun(&["-n", "3", &exe, "global-exit", status], TIMEOUT);
        let code: i32 = status.parse().unwrap();
        assert!(
            r.code == Some(code)
                && r.stderr
                    .contains(&format!("PE 1 called shmem_global_exit({status})")),
            "global_exit({status}): exit {:?}\n{}",
            r.code,
            r.stderr
        );
    }
}

/// Runs `tests/c/<name>.c ARGS…` on `n` PEs with `env` added.
fn run_c(name: &str, n: u32, args: &[&str], env: &[(&str, &str)]) -> common::Run {
    let exe = compile(name);
    let np = n.to_string();
    let mut all = vec!["-n", &np, &exe];
    all.extend_from_slice(args);
    run_vkshmrun_env(&all, env, TIMEOUT, Leftovers::Forbidden, |_| {})
}

/// OpenSHMEM 1.5: a `start_pes` program needs no `shmem_finalize`; the
/// library finalizes it collectively at exit, and vkshmem does the same
/// after `shmem_init`. Returning from `main` or calling `exit(0)` after a
/// collective ends the job with status 0, every PE's last line (held in C's
/// buffer until the exit) printed, also when one PE leaves a second late.
#[test]
fn c_start_pes_and_init_finalize_implicitly_at_exit() {
    for n in [1, 2, 4] {
        let sum = n * (n + 1) / 2;
        for mode in ["start-pes", "init", "exit", "late"] {
            let r = run_c("implicit", n, &[mode], &[]);
            let mut got: Vec<&str> = r.stdout.lines().collect();
            got.sort_unstable();
            let want: Vec<String> = (0..n)
                .map(|p| format!("implicit: ok {p} of {n} ({mode}, sum {sum})"))
                .collect();
            assert!(
                r.code == Some(0) && got == want && !r.stderr.contains("finaliz"),
                "implicit {mode} on {n} PEs: exit {:?}\nstdout:\n{}\nstderr:\n{}",
                r.code,
                r.stdout,
                r.stderr
            );
        }
    }
}

/// A PE that returns a non-zero status without `shmem_finalize` failed: it
/// is not finalized at exit, and the job ends with its status, naming it,
/// as before implicit finalization.
#[test]
fn c_a_failing_exit_is_reported_not_finalized() {
    for n in [1, 2, 4] {
        let r = run_c("implicit", n, &["fail"], &[]);
        let pe = if n > 1 { 1 } else { 0 };
        assert!(
            r.code == Some(3) && r.stderr.contains(&format!("PE {pe} exited with code 3")),
            "implicit fail on {n} PEs: exit {:?}\n{}",
            r.code,
            r.stderr
        );
    }
}

/// `SHMEM_SYMMETRIC_SIZE=1280M`, as a program's instructions would say,
/// gives each PE a heap that a 1 GiB `shmem_malloc` fits in; the block is
/// written and read at its start, middle and end, locally and by puts and
/// gets between PEs. Without it the default heap is too small.
#[test]
fn c_shmem_symmetric_size_holds_a_1_gib_malloc() {
    for n in [1, 2, 4] {
        let r = run_c(
            "spec_env",
            n,
            &["big"],
            &[("SHMEM_SYMMETRIC_SIZE", "1280M")],
        );
        let oks = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("spec_env: ok"))
            .count();
        assert!(
            r.code == Some(0) && oks == n as usize,
            "spec_env big on {n} PEs: exit {:?}, {oks} ok lines\n{}\n{}",
            r.code,
            r.stdout,
            r.stderr
        );
    }
    let r = run_c("spec_env", 2, &["big"], &[]);
    assert!(
        r.code == Some(1) && r.stderr.contains("shmem_malloc of 1 GiB returned NULL"),
        "spec_env big without SHMEM_SYMMETRIC_SIZE: exit {:?}\n{}",
        r.code,
        r.stderr
    );
}

/// `SHMEM_VERSION`: PE 0 alone prints the library's version and the
/// OpenSHMEM version of `shmem.h` (its `SHMEM_MAJOR_VERSION` and
/// `SHMEM_MINOR_VERSION`, which the program prints), once per job.
#[test]
fn c_shmem_version_prints_the_version_once() {
    for n in [1, 2, 4] {
        let r = run_c("spec_env", n, &[], &[("SHMEM_VERSION", "1")]);
        let header = r
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("spec_env: header "))
            .unwrap_or_else(|| panic!("no header line:\n{}\n{}", r.stdout, r.stderr));
        let (vendor, spec) = header.split_once(' ').unwrap();
        let want = format!("{vendor} {} (OpenSHMEM {spec})", env!("CARGO_PKG_VERSION"));
        let printed: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with(vendor)).collect();
        assert!(
            r.code == Some(0) && printed == [want.as_str()],
            "SHMEM_VERSION on {n} PEs: exit {:?}, want one `{want}`\n{}\n{}",
            r.code,
            r.stdout,
            r.stderr
        );
    }
    let r = run_c("spec_env", 2, &[], &[("SHMEM_VERSION", "0")]);
    assert!(!r.stdout.contains("OpenSHMEM"), "{}", r.stdout);
}

/// `SHMEM_INFO`: PE 0 prints the version, then every user, OpenSHMEM and
/// tuning setting of the table, one line each, with its value; the heap's
/// variables show the size in effect, and where both spellings are set the
/// `VKSHMEM_` one wins with one warning on stderr.
#[test]
fn c_shmem_info_lists_every_setting_with_its_value() {
    use vkshmem_host::config::{Kind, SETTINGS};
    let value = |stdout: &str, name: &str| -> String {
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(name))
            .collect();
        assert_eq!(lines.len(), 1, "{name} in\n{stdout}");
        lines[0]
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let r = run_c(
        "spec_env",
        2,
        &[],
        &[
            ("SHMEM_INFO", "1"),
            ("SHMEM_SYMMETRIC_SIZE", "96M"),
            ("VKSHMEM_SYNC_ALGO", "flags"),
        ],
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let heads = r
        .stdout
        .lines()
        .filter(|l| l.ends_with("settings (SHMEM_INFO)"))
        .count();
    assert_eq!(heads, 1, "{}", r.stdout);
    for s in SETTINGS
        .iter()
        .filter(|s| matches!(s.kind, Kind::User | Kind::Spec | Kind::Tuning))
    {
        value(&r.stdout, s.name);
    }
    assert_eq!(
        value(&r.stdout, "SHMEM_SYMMETRIC_SIZE"),
        "100663296 bytes (set: 96M)"
    );
    assert_eq!(value(&r.stdout, "VKSHMEM_SYNC_ALGO"), "flags (set)");
    assert_eq!(value(&r.stdout, "SHMEM_INFO"), "1 (set)");
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);

    let r = run_c(
        "spec_env",
        2,
        &[],
        &[
            ("SHMEM_INFO", "yes"),
            ("SHMEM_SYMMETRIC_SIZE", "32M"),
            ("VKSHMEM_SYMMETRIC_SIZE", "64M"),
        ],
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        value(&r.stdout, "SHMEM_SYMMETRIC_SIZE"),
        "67108864 bytes (set: 32M, but VKSHMEM_SYMMETRIC_SIZE wins)"
    );
    assert_eq!(
        value(&r.stdout, "VKSHMEM_SYMMETRIC_SIZE"),
        "67108864 bytes (set: 64M)"
    );
    let warnings = r
        .stderr
        .lines()
        .filter(|l| {
            l.contains("warning: VKSHMEM_SYMMETRIC_SIZE=64M and SHMEM_SYMMETRIC_SIZE=32M disagree")
        })
        .count();
    assert_eq!(warnings, 1, "{}", r.stderr);
}

/// `SHMEM_DEBUG`: vkshmem's debug log on stderr where `RUST_LOG` is unset;
/// without it, none.
#[test]
fn c_shmem_debug_turns_the_log_on() {
    let r = run_c("spec_env", 2, &[], &[("SHMEM_DEBUG", "1")]);
    let debug = |err: &str| {
        err.lines()
            .filter(|l| l.contains("DEBUG") && l.contains("vkshmem_host"))
            .count()
    };
    assert!(r.code == Some(0) && debug(&r.stderr) > 0, "{}", r.stderr);
    let r = run_c("spec_env", 2, &[], &[]);
    assert!(r.code == Some(0) && debug(&r.stderr) == 0, "{}", r.stderr);
}

/// Misuse ends the job: exit status 1 and a message naming the C call.
#[test]
fn c_misuse_names_the_call() {
    let exe = compile("misuse");
    for (what, n, call, text) in [
        ("before-init", 1, "shmem_int_p", "called before shmem_init"),
        (
            "stack-dest",
            2,
            "shmem_int_put",
            "is not a symmetric object",
        ),
        ("bad-pe", 2, "shmem_int_p", "PE 2 is not in the job"),
        (
            "past-heap-block",
            1,
            "shmem_int_put",
            "not inside one live symmetric allocation",
        ),
        (
            "bad-cmp",
            1,
            "shmem_int_wait_until",
            "unknown comparison 42",
        ),
        (
            "free-twice",
            2,
            "shmem_free",
            "not a block from shmem_malloc",
        ),
        (
            "bad-root",
            3,
            "shmem_int_broadcast",
            "PE_root 3 is not a member number",
        ),
    ] {
        let np = n.to_string();
        let r = vkshmrun(&["-n", &np, &exe, what], TIMEOUT);
        let want = format!("vkshmem: {call}: ");
        assert!(
            r.code != Some(0) && r.stderr.contains(&want) && r.stderr.contains(text),
            "{what}: exit {:?}, want `{want}…{text}`:\n{}",
            r.code,
            r.stderr
        );
    }
}

/// Under mpirun as 2 nodes of 2 PEs: the collectives and teams (on the
/// heap across nodes, and on globals through the bootstrap) and a clean
/// MPI finalize from `shmem_finalize`.
#[cfg(feature = "mpi")]
#[test]
fn c_collectives_hold_under_mpirun_across_nodes() {
    let exe = compile("coll");
    let r = common::mpirun(4, &[&exe], &[("VKSHMEM_NODE_SIZE", "2")], TIMEOUT);
    let oks = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("coll: ok"))
        .count();
    assert!(
        r.code == Some(0) && oks == 4,
        "coll under mpirun 2x2: exit {:?}, {oks} ok lines\n{}\n{}",
        r.code,
        r.stdout,
        r.stderr
    );
}

/// Under mpirun as 2 nodes of 2 PEs: a `start_pes` program that returns
/// from `main` is finalized at exit, MPI included, and mpirun exits 0.
#[cfg(feature = "mpi")]
#[test]
fn c_implicit_finalize_under_mpirun() {
    let exe = compile("implicit");
    let r = common::mpirun(
        4,
        &[&exe, "start-pes"],
        &[("VKSHMEM_NODE_SIZE", "2")],
        TIMEOUT,
    );
    let oks = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("implicit: ok") && l.ends_with("(start-pes, sum 10)"))
        .count();
    assert!(
        r.code == Some(0) && oks == 4,
        "implicit start-pes under mpirun 2x2: exit {:?}, {oks} ok lines\n{}\n{}",
        r.code,
        r.stdout,
        r.stderr
    );
}

/// Under mpirun, `shmem_global_exit(5)` is `MPI_Abort` with 5: mpirun exits
/// with it.
#[cfg(feature = "mpi")]
#[test]
fn c_global_exit_under_mpirun() {
    let exe = compile("misuse");
    let r = common::mpirun(3, &[&exe, "global-exit", "5"], &[], TIMEOUT);
    assert!(
        r.code == Some(5) && r.stderr.contains("called shmem_global_exit(5)"),
        "exit {:?}\n{}",
        r.code,
        r.stderr
    );
}
