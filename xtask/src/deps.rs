//! System packages the project needs: the Vulkan loader, a Vulkan driver (Mesa's
//! lavapipe when the machine has no GPU) and SPIRV-Tools (`spirv-val`, for
//! `cargo xtask shaders`). Installed with apt-get when we may (root, or sudo
//! without a password); otherwise we say what to run.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Result};

fn loader_present() -> bool {
    let ldconfig = Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| Command::new("/sbin/ldconfig").arg("-p").output());
    match ldconfig {
        Ok(out) => String::from_utf8_lossy(&out.stdout).contains("libvulkan.so.1"),
        Err(_) => [
            "/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
            "/usr/lib/aarch64-linux-gnu/libvulkan.so.1",
            "/usr/lib/libvulkan.so.1",
        ]
        .iter()
        .any(|p| Path::new(p).exists()),
    }
}

fn driver_present() -> bool {
    if std::env::var_os("VK_DRIVER_FILES").is_some()
        || std::env::var_os("VK_ICD_FILENAMES").is_some()
    {
        return true;
    }
    [
        "/usr/share/vulkan/icd.d",
        "/etc/vulkan/icd.d",
        "/usr/local/share/vulkan/icd.d",
    ]
    .iter()
    .any(|d| {
        std::fs::read_dir(d)
            .map(|mut r| {
                r.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
            })
            .unwrap_or(false)
    })
}

fn quiet_ok(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn spirv_val_present() -> bool {
    quiet_ok(Command::new("spirv-val").arg("--version"))
}

/// The Debian packages that are missing.
fn missing() -> Vec<&'static str> {
    let mut m = Vec::new();
    if !loader_present() {
        m.push("libvulkan1");
    }
    if !driver_present() {
        m.push("mesa-vulkan-drivers");
    }
    if !spirv_val_present() {
        m.push("spirv-tools");
    }
    m
}

/// Makes sure the loader, a driver and spirv-val are installed.
pub fn ensure() -> Result<()> {
    install(&missing(), &|| missing().is_empty())
}

/// Makes sure Open MPI's launcher and compiler wrapper are installed (for
/// `cargo xtask bench --compare-mpi`).
pub fn ensure_mpi() -> Result<()> {
    let have = || {
        quiet_ok(Command::new("mpicc").arg("--version"))
            && quiet_ok(Command::new("mpirun").arg("--version"))
    };
    if have() {
        return Ok(());
    }
    install(&["openmpi-bin", "libopenmpi-dev"], &have)
}

/// Makes sure what building with the cargo feature `mpi` needs is installed:
/// Open MPI (library, headers, mpicc, mpirun) and libclang (rsmpi's bindgen).
pub fn ensure_mpi_build() -> Result<()> {
    ensure_mpi()?;
    // libclang itself (libclang1-N), not libclang-cpp, which LLVM brings.
    let have = || {
        Command::new("ldconfig").arg("-p").output().is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("libclang.so")
                    || l.strip_prefix("libclang-")
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
        })
    };
    if have() {
        return Ok(());
    }
    install(&["libclang-dev"], &have)
}

/// Installs `packages` with apt-get (as root, or through sudo without a
/// password); otherwise says what to run. `done` says whether it worked.
fn install(packages: &[&str], done: &dyn Fn() -> bool) -> Result<()> {
    if packages.is_empty() {
        return Ok(());
    }
    let root = is_root();
    let sudo = !root && quiet_ok(Command::new("sudo").args(["-n", "true"]));
    let install = format!(
        "apt-get update && apt-get install -y {}",
        packages.join(" ")
    );
    if !root && !sudo {
        bail!(
            "{} missing and this user cannot install packages; run:\n    sudo sh -c '{install}'",
            packages.join(", ")
        );
    }
    eprintln!("xtask: installing {} with apt-get", packages.join(" "));
    let mut cmd = if sudo {
        let mut c = Command::new("sudo");
        c.args(["-n", "sh", "-c"]);
        c
    } else {
        let mut c = Command::new("sh");
        c.arg("-c");
        c
    };
    cmd.arg(&install).env("DEBIAN_FRONTEND", "noninteractive");
    let st = cmd.status()?;
    if !st.success() || !done() {
        bail!(
            "installing {} failed ({st}); try: sudo sh -c '{install}'",
            packages.join(" ")
        );
    }
    Ok(())
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
