//! vkshmrun on its own, no Vulkan: `--help`, and a job whose PEs never join it.
//! The job tests proper are the root package's tests/launcher.rs and
//! tests/vkshmrun_output.rs (they need its examples as PEs). This test also makes
//! `cargo test --workspace` build target/<profile>/vkshmrun before those run.

use std::process::Command;

#[test]
fn help_names_the_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_vkshmrun"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in ["--npes", "--label", "--grace", "--wait-timeout", "--status"] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
}

/// `--status` needs no job: it reports the running ones (another test's job
/// may run beside this one), or says that none runs and exits 1.
#[test]
fn status_says_what_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_vkshmrun"))
        .arg("--status")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    match out.status.code() {
        Some(1) => assert!(stderr.contains("no running vkshmem job"), "{stderr}"),
        Some(0) => assert!(stdout.starts_with("job of processes "), "{stdout}"),
        c => panic!("--status exited with {c:?}: {stderr}"),
    }
    // It takes no job to start.
    let out = Command::new(env!("CARGO_BIN_EXE_vkshmrun"))
        .args(["--status", "-n", "2", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn a_job_of_plain_programs_runs_and_forwards_their_output() {
    let out = Command::new(env!("CARGO_BIN_EXE_vkshmrun"))
        .args(["-n", "2", "--label", "sh", "-c", "echo pe $VKSHMEM_PE"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["[0] pe 0", "[1] pe 1"]);
}
