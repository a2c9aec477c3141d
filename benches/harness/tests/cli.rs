//! vkshmem-bench's command line, no Vulkan. Its runs on PEs are tested by the root
//! package's tests/launcher.rs; this test also makes `cargo test --workspace` build
//! target/<profile>/vkshmem-bench before those run.

use std::process::Command;

#[test]
fn help_names_the_sweep_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_vkshmem-bench"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--collective",
        "--scope",
        "--check",
        "--csv",
        "--json",
        "--no-roofline",
    ] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
}
