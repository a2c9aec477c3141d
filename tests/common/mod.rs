//! Shared by the integration tests that run jobs through vkshmrun
//! (`tests/launcher.rs`, `tests/vkshmrun_output.rs`): where the binaries are,
//! and one way to run a job and check that it left nothing behind.

#![allow(dead_code)] // each test binary uses its own part

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where cargo puts the workspace's binaries (vkshmrun, vkshmem-bench, examples/):
/// the test runs from `deps/` below it. They are other packages' binaries, built
/// by `cargo build --workspace --bins --examples` or `cargo test --workspace`
/// (`cargo xtask test` does both).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir: &Path = exe.parent().unwrap();
    if dir.ends_with("deps") {
        dir.parent().unwrap().to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// The vkshmrun binary.
pub fn vkshmrun_exe() -> PathBuf {
    let p = bin_dir().join("vkshmrun");
    assert!(
        p.exists(),
        "{} is missing: `cargo build --workspace --bins --examples` first",
        p.display()
    );
    p
}

/// An example program (a PE) built beside vkshmrun.
pub fn program(name: &str) -> String {
    let p = bin_dir().join("examples").join(name);
    assert!(
        p.exists(),
        "{} is missing: build the examples first (`cargo build --examples`, which `cargo xtask test` does)",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// What a vkshmrun run gave: exit code, output (raw and as text), wall time.
pub struct Run {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, as text (invalid UTF-8 replaced).
    pub stdout: String,
    /// Standard error, as text.
    pub stderr: String,
    /// Standard output, the bytes.
    pub stdout_raw: Vec<u8>,
    /// Standard error, the bytes.
    pub stderr_raw: Vec<u8>,
    /// From the start to the exit.
    pub elapsed: Duration,
    /// The wall clock at the exit (to compare with times the PEs print).
    pub ended: std::time::SystemTime,
}

/// Whether a run may leave processes of the job behind (a test of a PE that
/// leaves one on purpose), or must leave nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftovers {
    /// No process, bound socket or temp file of the job may outlive it.
    Forbidden,
    /// Processes may (the test kills them); sockets and temp files may not.
    ProcessesAllowed,
}

/// Processes whose environment names launcher `launcher_pid`'s bootstrap
/// endpoint.
pub fn job_processes(launcher_pid: u32) -> Vec<u32> {
    let needle = format!("VKSHMEM_BOOTSTRAP=@vkshmem-{launcher_pid}-");
    processes_with_env(|kv| kv.starts_with(needle.as_bytes()))
}

/// Processes with an environment entry (`NAME=value`) for which `matches` holds.
fn processes_with_env(matches: impl Fn(&[u8]) -> bool) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(&matches))
                .unwrap_or(false)
        })
        .collect()
}

/// Abstract sockets of launcher `launcher_pid` still bound.
pub fn job_sockets(launcher_pid: u32) -> usize {
    let needle = format!("@vkshmem-{launcher_pid}-");
    std::fs::read_to_string("/proc/net/unix")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

/// Runs `cmd` with its output piped, calls `during` with its process id,
/// and gathers what it printed; after `timeout` kills it and calls
/// `on_timeout` (which panics).
pub fn run_child(
    mut cmd: Command,
    timeout: Duration,
    during: impl FnOnce(u32),
    on_timeout: impl FnOnce(),
) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let reader = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = from.read_to_end(&mut v);
            v
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()));
    let err = reader(Box::new(child.stderr.take().unwrap()));
    during(child.id());
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(status) = status else {
        on_timeout();
        panic!("{cmd:?} did not finish within {timeout:?}");
    };
    let (elapsed, ended) = (start.elapsed(), std::time::SystemTime::now());
    let (stdout_raw, stderr_raw) = (out.join().unwrap(), err.join().unwrap());
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout_raw).into_owned(),
        stderr: String::from_utf8_lossy(&stderr_raw).into_owned(),
        stdout_raw,
        stderr_raw,
        elapsed,
        ended,
    }
}

/// Runs `vkshmrun ARGS…` with a fresh TMPDIR, without `VKSHMEM_WAIT_TIMEOUT`
/// from the test's environment, calls `during` with its process id while it
/// runs, kills it (and fails) after `timeout`, and checks what it left behind.
pub fn run_vkshmrun(
    args: &[&str],
    timeout: Duration,
    leftovers: Leftovers,
    during: impl FnOnce(u32),
) -> Run {
    run_vkshmrun_env(args, &[], timeout, leftovers, during)
}

/// [`run_vkshmrun`] where nothing of the job may remain, calling `during`.
pub fn vkshmrun_with(args: &[&str], timeout: Duration, during: impl FnOnce(u32)) -> Run {
    run_vkshmrun(args, timeout, Leftovers::Forbidden, during)
}

/// [`run_vkshmrun`] where nothing of the job may remain.
pub fn vkshmrun(args: &[&str], timeout: Duration) -> Run {
    vkshmrun_with(args, timeout, |_| {})
}

/// [`run_vkshmrun`] with `env` added to the job's environment.
pub fn run_vkshmrun_env(
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
    leftovers: Leftovers,
    during: impl FnOnce(u32),
) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(vkshmrun_exe());
    cmd.args(args)
        .envs(env.iter().copied())
        .env("TMPDIR", tmp.path())
        .env("RUST_BACKTRACE", "0")
        .env_remove("VKSHMEM_WAIT_TIMEOUT");
    let mut pid = 0;
    let run = run_child(
        cmd,
        timeout,
        |p| {
            pid = p;
            during(p)
        },
        || panic!("vkshmrun {args:?} did not finish within {timeout:?}"),
    );
    if leftovers == Leftovers::Forbidden {
        // Processes get a moment to be reaped by init.
        let t = Instant::now();
        while !job_processes(pid).is_empty() && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            job_processes(pid),
            Vec::<u32>::new(),
            "PE processes outlived vkshmrun {args:?}\n{}",
            run.stderr
        );
    }
    assert_eq!(
        job_sockets(pid),
        0,
        "bootstrap socket left bound after {args:?}"
    );
    assert_empty(tmp.path(), &format!("vkshmrun {args:?}"));
    run
}

/// Fails unless directory `dir` (a job's TMPDIR) is empty.
fn assert_empty(dir: &Path, what: &str) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        left.is_empty(),
        "temp files left behind by {what}: {left:?}"
    );
}

/// Processes whose environment holds `VKSHMEM_TEST_JOB=<mark>`.
pub fn marked_processes(mark: &str) -> Vec<u32> {
    let needle = format!("VKSHMEM_TEST_JOB={mark}");
    processes_with_env(|kv| kv == needle.as_bytes())
}

/// Runs `mpirun -n N ARGS…` (Open MPI, as root where need be, oversubscribed)
/// with `env` exported to the ranks, a fresh TMPDIR and a mark in the
/// environment; kills it (and fails) after `timeout`; checks that no process
/// of the job, no bootstrap socket and no temp file outlived it.
#[cfg(feature = "mpi")]
pub fn mpirun(n: u32, args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let mark = format!("{}-{}", std::process::id(), tmp.path().display());
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
        &n.to_string(),
    ]);
    for (k, _) in env {
        cmd.args(["-x", k]);
    }
    cmd.args(args)
        .envs(env.iter().copied())
        .env("VKSHMEM_TEST_JOB", &mark)
        .env("TMPDIR", tmp.path())
        .env("RUST_BACKTRACE", "0")
        .env_remove("VKSHMEM_WAIT_TIMEOUT");
    let run = run_child(
        cmd,
        timeout,
        |_| {},
        || {
            for pid in marked_processes(&mark) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            panic!("mpirun {args:?} did not finish within {timeout:?}");
        },
    );
    let t = Instant::now();
    while !marked_processes(&mark).is_empty() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        marked_processes(&mark),
        Vec::<u32>::new(),
        "ranks outlived mpirun {args:?}\n{}",
        run.stderr
    );
    // An abstract socket lives as long as its process: none is left once the
    // ranks are gone. Open MPI's session directory must be gone too.
    assert_empty(tmp.path(), &format!("mpirun {args:?}"));
    run
}

/// Asserts that each of `n` PEs printed `PROG: pe=P calls=C wrong=0` with
/// more than `min_calls` checked calls.
pub fn every_pe_checked(stdout: &str, prog: &str, n: u32, min_calls: u64) {
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with(&format!("{prog}: pe=")))
        .collect();
    assert_eq!(lines.len(), n as usize, "{stdout}");
    for l in lines {
        assert!(l.ends_with("wrong=0"), "{l}");
        let calls: u64 = l
            .split("calls=")
            .nth(1)
            .and_then(|x| x.split(' ').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        assert!(calls > min_calls, "too few checked calls: {l}");
    }
}
