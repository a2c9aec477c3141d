//! Shared by the integration tests that run jobs through vkshmrun
//! (`tests/launcher.rs`, `tests/vkshmrun_output.rs`): where the binaries are.

use std::path::{Path, PathBuf};

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
