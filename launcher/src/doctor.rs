//! `vkshmrun --doctor`: whether this machine can run vkshmem, and what to
//! install where it cannot.
//!
//! It lists the Vulkan devices, with what vkshmem needs of each (Vulkan 1.3,
//! `VK_KHR_external_memory_fd`, a compute queue) and the optional features
//! it uses; says where `-n N` PEs would go and how each pair would reach
//! the other; then runs a job of 2 PEs as threads of this process: a
//! barrier, a host allreduce and a device allreduce, each checked. It
//! prints `ok`, or the first failure with its fix, and exits 0 or 1.

use anyhow::{bail, Context as _, Result};
use vkshmem_host::vk::select::{self, Candidate};
use vkshmem_host::vk::Gpu;
use vkshmem_host::{config, Context, Error, Team};

/// What to install where Vulkan or its driver is missing (Debian and
/// Ubuntu; lavapipe runs on any CPU).
const INSTALL: &str = "sudo apt-get install libvulkan1 mesa-vulkan-drivers";

/// Elements of the self-test's allreduces.
const N: usize = 1024;

/// Runs the checks for a job of `npes` PEs; the exit code.
pub fn run(npes: u32) -> i32 {
    match check(npes) {
        Ok(()) => {
            println!("ok");
            0
        }
        Err(e) => {
            println!("not ok: {e:#}");
            1
        }
    }
}

fn check(npes: u32) -> Result<()> {
    let cands = match Gpu::survey() {
        Ok(c) => c,
        Err(Error::Loader(why)) => {
            bail!("no Vulkan loader ({why}); install it and a driver: {INSTALL}")
        }
        Err(e) => bail!("Vulkan has no driver here ({e}); install one: {INSTALL}"),
    };
    if cands.is_empty() {
        bail!("Vulkan lists no device; install a driver: {INSTALL}");
    }
    for c in &cands {
        describe(c);
    }
    placement(&cands, npes)?;
    self_test()
}

/// One device: what vkshmem needs of it and what it would use.
fn describe(c: &Candidate) {
    println!("device [{}] {} ({:?})", c.index, c.name, c.kind);
    if let Err(why) = &c.usable {
        println!("  not usable: {why} (vkshmem needs Vulkan 1.3, VK_KHR_external_memory_fd and a compute queue)");
        return;
    }
    println!("  needs: Vulkan 1.3, VK_KHR_external_memory_fd, a compute queue: yes");
    match Gpu::open(Some(&c.index.to_string()), 0, None) {
        Ok(gpu) => {
            let (i, caps) = (&gpu.info, &gpu.caps);
            let yes = |b: bool| if b { "yes" } else { "no" };
            println!(
                "  optional: 64-bit integers {}, 64-bit atomics {}, f64 {}, 8/16-bit storage {}/{}, timeline semaphores {}",
                yes(caps.int64),
                yes(caps.int64_atomics),
                yes(caps.float64),
                yes(caps.storage8),
                yes(caps.storage16),
                yes(caps.timeline_semaphores),
            );
            println!(
                "  largest allocation {} MiB, largest binding {} MiB, driver {:?}",
                i.max_memory_allocation_size >> 20,
                i.max_storage_buffer_range >> 20,
                i.driver_id,
            );
        }
        Err(e) => println!("  cannot be opened: {e}"),
    }
}

/// Where `npes` PEs go (as `VKSHMEM_DEVICE` or round-robin says) and how
/// each pair reaches the other.
fn placement(cands: &[Candidate], npes: u32) -> Result<()> {
    let wanted = config::env(config::ENV_DEVICE);
    let at = (0..npes)
        .map(|pe| select::choose(cands, wanted.as_deref(), pe).map(|(i, _)| i))
        .collect::<std::result::Result<Vec<usize>, String>>()
        .map_err(|why| {
            anyhow::anyhow!("no device for the PEs: {why}; install a driver: {INSTALL}")
        })?;
    for (pe, i) in at.iter().enumerate() {
        println!("PE {pe} -> device [{i}]");
    }
    let devices: std::collections::BTreeSet<usize> = at.iter().copied().collect();
    println!(
        "transports: {}",
        if devices.len() == 1 {
            "direct between every pair (one device: heaps imported, loads and stores)".to_string()
        } else {
            format!(
                "direct within a device, staged between the {} devices (node memory, proxy thread)",
                devices.len()
            )
        }
    );
    Ok(())
}

/// The device allreduce: every invocation of one workgroup calls it.
const KERNEL: &str = "struct P { team: u32, dest: u32, source: u32, n: u32 }
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let a = p;
    let r = shmemx_float_sum_reduce_work_group(a.team, a.dest, a.source, a.n, li, 64u);
}
";

/// A job of 2 PEs as threads: a barrier, a host and a device allreduce.
fn self_test() -> Result<()> {
    let said = vkshmem_host::run_threads(2, |ctx| one_pe(ctx).map_err(Into::into))
        .context("the self-test of 2 PEs")?;
    for line in &said[0] {
        println!("self-test: {line}");
    }
    Ok(())
}

/// One PE's part of the self-test; what it found.
fn one_pe(ctx: &Context) -> Result<Vec<String>> {
    let mut said = Vec::new();
    ctx.barrier_all().context("barrier_all")?;
    said.push("barrier_all ok".into());
    let src = ctx.malloc::<f32>(N)?;
    let dst = ctx.malloc::<f32>(N)?;
    let mine: Vec<f32> = (0..N)
        .map(|i| (ctx.my_pe() + 1) as f32 * i as f32)
        .collect();
    // The sum over PEs 1 and 2 times i.
    let want: Vec<f32> = (0..N).map(|i| 3.0 * i as f32).collect();
    src.write(&mine)?;
    ctx.sum_reduce(Team::WORLD, &dst.as_slice(), &src.as_slice(), N)
        .context("host sum_reduce")?;
    let mut got = vec![0f32; N];
    dst.read(&mut got)?;
    if got != want {
        bail!("host sum_reduce gave wrong results");
    }
    said.push(format!("host sum_reduce of {N} f32 ok"));
    if !ctx.device_waits_across_processes() {
        said.push(
            "device forms: refused across processes on this driver (see docs/gpus.md)".into(),
        );
        return Ok(said);
    }
    let kernel = ctx
        .device_kernel(KERNEL, "doctor_allreduce")
        .context("building the device allreduce")?;
    dst.write(&vec![0.0; N])?;
    ctx.barrier_all()?;
    let args: Vec<u8> = [
        Team::WORLD.device_handle(),
        dst.device_byte_addr()?,
        src.device_byte_addr()?,
        N as u32,
    ]
    .iter()
    .flat_map(|w| w.to_le_bytes())
    .collect();
    ctx.launch(&kernel, [1, 1, 1], &[], &args)
        .context("device sum_reduce")?;
    ctx.barrier_all()?;
    dst.read(&mut got)?;
    if got != want {
        bail!("the device sum_reduce gave wrong results");
    }
    said.push(format!("device sum_reduce (work_group) of {N} f32 ok"));
    Ok(said)
}
