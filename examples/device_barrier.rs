//! Device-initiated barriers: every PE runs one dispatch that executes the
//! work_group barrier K times, then the per-thread barrier K times, checking after
//! each that every PE has arrived; then times each form in a dispatch of its own
//! (GPU timestamps) and prints the mean time per barrier.
//!
//! `vkshmrun -n 4 target/release/examples/device_barrier [K]` (K defaults to 1000).

use anyhow::{bail, Context as _, Result};

const KERNEL: &str = include_str!("../shaders/examples/device_barrier.wgsl");

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    counters: u32,
    errors: u32,
    iters: u32,
    base: u32,
    mode: u32,
}

fn main() -> Result<()> {
    let iters: u32 = match std::env::args().nth(1) {
        Some(a) => a.parse().context("K must be a number of iterations")?,
        None => 1000,
    };
    if iters == 0 {
        bail!("K must be at least 1");
    }
    let ctx = vkshmem::init()?;
    let n = ctx.n_pes();
    let counters = ctx.calloc::<u32>(n as usize)?;
    let errors = ctx.calloc::<u32>(4)?;
    let kernel = ctx.device_kernel(KERNEL, "device_barrier.wgsl")?;
    let mut params = Params {
        counters: counters.device_addr()?,
        errors: errors.device_addr()?,
        iters,
        base: 0,
        mode: std::env::var("DB_MODE").ok().and_then(|m| m.parse().ok()).unwrap_or(3),
    };
    // One dispatch with both forms: the behaviour the example exists to show.
    ctx.launch(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(&params))?;
    params.base += 2 * iters;
    // Then each form alone, timed.
    let mut per_barrier_us = [0.0f64; 2];
    for (i, mode) in [1u32, 2].into_iter().enumerate() {
        params.mode = mode;
        ctx.barrier_all()?;
        let t = ctx.launch_timed(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(&params))?;
        per_barrier_us[i] = t.as_secs_f64() * 1e6 / iters as f64;
        params.base += iters;
    }
    ctx.barrier_all()?;
    let errv = errors.to_vec()?;
    let wrong = errv[0];
    if wrong != 0 { eprintln!("PE {} first early read: k={} value={} slot={}", ctx.my_pe(), errv[1], errv[2], errv[3]); }
    let last = counters.to_vec()?;
    if wrong != 0 || last.iter().any(|&v| v != params.base) {
        bail!(
            "device_barrier: FAILED on PE {}: {wrong} early reads, final counters {last:?} (want {})",
            ctx.my_pe(),
            params.base
        );
    }
    if ctx.my_pe() == 0 {
        println!(
            "device_barrier: ok npes={n} iters={iters} work_group_us={:.2} thread_us={:.2} device={:?}",
            per_barrier_us[0],
            per_barrier_us[1],
            ctx.device_info().name
        );
    }
    drop((counters, errors));
    ctx.finalize()?;
    Ok(())
}
