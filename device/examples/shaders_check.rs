//! `shaders_check ROOT`: every shipped kernel through naga (parse + validate)
//! and `spirv-val --target-env vulkan1.3`; `cargo xtask shaders` and `cargo
//! xtask test` build and run it (an example of this crate, so that it comes
//! with the workspace build: as xtask's own dependency, naga and this crate
//! were built a second time, with other features of their dependencies).
//!
//! - Plain kernels, `ROOT/shaders/*.wgsl` but the device library's own parts
//!   (`vkshmem.wgsl`, `collectives.wgsl`): compiled alone.
//! - User kernels, `ROOT/shaders/examples/*.wgsl`: linked with the device
//!   library.
//! - The generated device library for every shape that changes the generated
//!   code (8 or 16 slots, one or two heap chunks, 64-bit types or not, GPU or
//!   lavapipe workarounds, a proxy or not): its whole text through naga (a link parses only
//!   the items a kernel reaches), and linked with an empty kernel.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use vkshmem_device::LibraryConfig;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const EMPTY: &str = "@compute @workgroup_size(1) fn main() {}";

fn shapes() -> Vec<LibraryConfig> {
    let mut v = Vec::new();
    for slots in [8, 16] {
        for chunks in [1, 2] {
            for wide in [false, true] {
                for gpu in [true, false] {
                    v.push(LibraryConfig {
                        slots,
                        chunks,
                        max_binding_bytes: 128 << 20,
                        int64: wide,
                        float64: wide,
                        int64_atomics: wide,
                        divergent_fences: gpu,
                        loop_cap: !gpu,
                        row_lanes: 0,
                        proxy: false,
                        vec4_u64: !gpu && wide,
                    });
                    if chunks == 1 {
                        // Peers on another device: reached through the proxy.
                        v.push(LibraryConfig {
                            proxy: true,
                            ..*v.last().expect("just pushed")
                        });
                    }
                }
            }
        }
    }
    v
}

fn wgsl_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wgsl"))
        .collect();
    files.sort();
    Ok(files)
}

/// Runs spirv-val on `words` (through its standard input).
fn spirv_val(label: &str, words: &[u32]) -> Result<()> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut child = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.3", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running spirv-val (Debian package spirv-tools): {e}"))?;
    child
        .stdin
        .take()
        .ok_or("spirv-val's standard input")?
        .write_all(&bytes)?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!(
            "spirv-val rejects {label}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

fn main() -> Result<()> {
    let root = std::env::args_os()
        .nth(1)
        .ok_or("usage: shaders_check ROOT (the workspace root)")?;
    let root = Path::new(&root);
    let mut checked = 0;
    for path in wgsl_files(&root.join("shaders"))? {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name == "vkshmem.wgsl" || name == "collectives.wgsl" {
            continue;
        }
        let src = std::fs::read_to_string(&path)?;
        let words = vkshmem_device::compile_wgsl(&src, &name)?;
        spirv_val(&name, &words)?;
        checked += 1;
    }
    let shapes = shapes();
    for cfg in &shapes {
        let label = format!("the device library for {cfg:?}");
        let whole = format!("{EMPTY}\n{}", vkshmem_device::library::library_source(cfg));
        vkshmem_device::compile_wgsl(&whole, "library.wgsl")
            .map_err(|e| format!("{label}: {e}"))?;
        let k = vkshmem_device::link_kernel(EMPTY, "empty.wgsl", None, cfg)
            .map_err(|e| format!("{label}: {e}"))?;
        spirv_val(&label, &k.spirv)?;
        checked += 1;
    }
    for path in wgsl_files(&root.join("shaders/examples"))? {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let src = std::fs::read_to_string(&path)?;
        // Every workaround combination, on a heap in two chunks.
        for cfg in shapes.iter().filter(|c| c.slots == 8 && c.chunks == 2) {
            let label = format!("{name} for {cfg:?}");
            let k = vkshmem_device::link_kernel(&src, &name, None, cfg)
                .map_err(|e| format!("{label}: {e}"))?;
            spirv_val(&label, &k.spirv)?;
            checked += 1;
        }
    }
    println!(
        "shaders_check: ok, {checked} modules valid (naga + spirv-val --target-env vulkan1.3)"
    );
    Ok(())
}
