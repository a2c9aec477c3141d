//! Device-initiated barriers: every PE runs dispatches that execute the work_group
//! barrier K times, then the per-thread barrier K times, checking after each
//! barrier that every PE has arrived; then times each form alone (GPU timestamps)
//! and prints the mean time per barrier.
//!
//! `vkshmrun -n 4 target/release/examples/device_barrier [K] [P]`: K barriers of
//! each form (default 1000), at most P per dispatch (default: all K in one
//! dispatch). On lavapipe the default is 20, or 2 when there are more PEs than CPU
//! cores: that driver ends a kernel's loops after 65535 iterations in total (the
//! library reports it), and PEs that share cores wait for the scheduler at every
//! barrier. The wait throttle (ARCHITECTURE.md, "Lavapipe") makes one wait last
//! seconds, but each barrier's waits spin flat out for their first milliseconds.

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

fn arg(i: usize) -> Result<Option<u32>> {
    std::env::args()
        .nth(i)
        .map(|a| {
            a.parse()
                .with_context(|| format!("argument {i} ({a:?}) must be a count"))
        })
        .transpose()
}

fn main() -> Result<()> {
    let iters = arg(1)?.unwrap_or(1000);
    if iters == 0 {
        bail!("K must be at least 1");
    }
    let ctx = vkshmem::init()?;
    let r = barriers(&ctx, iters);
    if let Err(e) = &r {
        // Said here, while the context lives: the caller's report comes only
        // after the context dropped, which a peer's end of the job may cut short.
        eprintln!("device_barrier: PE {}: {e:#}", ctx.my_pe());
    }
    r?;
    ctx.finalize()?;
    Ok(())
}

fn barriers(ctx: &vkshmem::Context, iters: u32) -> Result<()> {
    let lavapipe = ctx.device_info().is_llvmpipe();
    let n = ctx.n_pes();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as u32;
    let per_dispatch = arg(2)?
        .unwrap_or(match (lavapipe, n <= cores) {
            (false, _) => iters,
            (true, true) => 20,
            // Oversubscribed: every barrier waits for the scheduler,
            // spinning flat out for its first 2 ms.
            (true, false) => 2,
        })
        .clamp(1, iters);
    let counters = ctx.calloc::<u32>(n as usize)?;
    let errors = ctx.calloc::<u32>(4)?;
    let kernel = ctx.device_kernel(KERNEL, "device_barrier.wgsl")?;
    let mut params = Params {
        counters: counters.device_addr()?,
        errors: errors.device_addr()?,
        iters: 0,
        base: 0,
        mode: 0,
    };
    // Runs K barriers of the forms in `mode`, P per dispatch; returns the GPU time.
    let run = |mode: u32, params: &mut Params| -> Result<std::time::Duration> {
        let forms = mode.count_ones();
        let mut total = std::time::Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            params.iters = left.min(per_dispatch);
            params.mode = mode;
            total += ctx.launch_timed(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(params))?;
            params.base += forms * params.iters;
            left -= params.iters;
        }
        Ok(total)
    };
    // Both forms in one dispatch: the behaviour the example exists to show.
    run(3, &mut params)?;
    // Then each form alone, timed.
    let wg = run(1, &mut params)?;
    let thread = run(2, &mut params)?;
    ctx.barrier_all()?;
    let errv = errors.to_vec()?;
    let last = counters.to_vec()?;
    if errv[0] != 0 || last.iter().any(|&v| v != params.base) {
        bail!(
            "device_barrier: FAILED on PE {}: {} early reads (first: barrier {} read {} in slot {}), final counters {last:?} (want {})",
            ctx.my_pe(),
            errv[0],
            errv[1],
            errv[2],
            errv[3],
            params.base
        );
    }
    if ctx.my_pe() == 0 {
        let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 / iters as f64;
        println!(
            "device_barrier: ok npes={n} iters={iters} per_dispatch={per_dispatch} work_group_us={:.2} thread_us={:.2} device={:?}",
            us(wg),
            us(thread),
            ctx.device_info().name
        );
    }
    drop((counters, errors));
    Ok(())
}
