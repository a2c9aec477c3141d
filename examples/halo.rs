//! A 1-D halo exchange from a user kernel: every PE holds a piece of a rod
//! with ghost cells on each side, and each step the kernel sends its edge
//! cells to its neighbours with `put_signal` and waits for theirs with
//! `signal_wait_until`, then applies a stencil (`shaders/examples/halo.wgsl`).
//! The result is checked against the same steps computed on the host over
//! the whole rod; PE 0 prints `halo: ok`.
//!
//! `vkshmrun -n 4 target/release/examples/halo [STEPS] [CELLS] [GHOSTS]`:
//! STEPS steps (default 64) of CELLS cells per PE (default 1000) with a
//! stencil reaching GHOSTS cells (default 37). Works on every transport (one
//! device, staged, nodes under mpirun). On lavapipe a dispatch makes at most 4
//! steps (2 with more PEs than cores): that driver cuts a kernel's loops
//! after 65535 iterations in all.

use anyhow::{bail, ensure, Context as _, Result};

const KERNEL: &str = include_str!("../shaders/examples/halo.wgsl");

/// The kernel's immediates (`Params` in halo.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    u: u32,
    sig: u32,
    m: u32,
    h: u32,
    base: u32,
    steps: u32,
}

fn arg(i: usize, default: u32) -> Result<u32> {
    std::env::args().nth(i).map_or(Ok(default), |a| {
        a.parse()
            .with_context(|| format!("argument {i} ({a:?}) must be a count"))
    })
}

/// Cell `i` of the rod at the start (the same on every PE: any PE can
/// compute any other's piece).
fn initial(seed: u64, i: usize) -> u32 {
    let mut x = seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 29;
    (x as u32) >> 4 // below 2^28: a + 2b + c never overflows
}

/// `steps` steps of the stencil over the whole periodic rod, on the host.
fn reference(mut rod: Vec<u32>, h: usize, steps: u32) -> Vec<u32> {
    let len = rod.len();
    for _ in 0..steps {
        rod = (0..len)
            .map(|i| {
                let a = rod[(i + len - h % len) % len];
                let c = rod[(i + h) % len];
                (a + 2 * rod[i] + c) / 4
            })
            .collect();
    }
    rod
}

fn main() -> Result<()> {
    let steps = arg(1, 64)?;
    let m = arg(2, 1000)?;
    let h = arg(3, 37)?;
    if h == 0 || m < h {
        bail!("need 1 <= GHOSTS <= CELLS (got {h} ghosts, {m} cells)");
    }
    let ctx = vkshmem::init()?;
    let r = halo(&ctx, steps, m, h);
    if let Err(e) = &r {
        // Said while the context lives (a peer's end of the job may cut the
        // caller's report short).
        eprintln!("halo: PE {}: {e:#}", ctx.my_pe());
    }
    r?;
    ctx.finalize()?;
    Ok(())
}

fn halo(ctx: &vkshmem::Context, steps: u32, m: u32, h: u32) -> Result<()> {
    let (me, n) = (ctx.my_pe() as usize, ctx.n_pes() as usize);
    let (mu, hu) = (m as usize, h as usize);
    let row = mu + 2 * hu;
    // A fresh rod each run, the seed from PE 0.
    let seed_buf = ctx.calloc::<u64>(1)?;
    if me == 0 {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos() as u64
            | 1;
        seed_buf.write(&[seed])?;
    }
    let sb = seed_buf.as_slice();
    ctx.broadcast(vkshmem::Team::WORLD, &sb, &sb, 1, 0)?;
    let seed = seed_buf.to_vec()?[0];
    let rod: Vec<u32> = (0..n * mu).map(|i| initial(seed, i)).collect();

    let u = ctx.calloc::<u32>(2 * row)?;
    let sig = ctx.calloc::<u64>(2)?;
    let mut mine = vec![0u32; row];
    mine[hu..hu + mu].copy_from_slice(&rod[me * mu..(me + 1) * mu]);
    u.write_at(me as u32, 0, &mine)?;
    ctx.barrier_all()?;

    let kernel = ctx.device_kernel(KERNEL, "halo.wgsl")?;
    // Lavapipe cuts a kernel's loops after 65535 iterations in all; with more
    // PEs than cores every wait also waits for the scheduler.
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let per_dispatch = match (ctx.device_info().is_llvmpipe(), n <= cores) {
        (false, _) => steps.max(1),
        (true, true) => 4,
        (true, false) => 2,
    };
    let mut p = Params {
        u: u.device_byte_addr()?,
        sig: sig.device_addr()?,
        m,
        h,
        base: 0,
        steps: 0,
    };
    let mut gpu = std::time::Duration::ZERO;
    while p.base < steps {
        p.steps = per_dispatch.min(steps - p.base);
        gpu += ctx.launch_timed(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(&p))?;
        p.base += p.steps;
    }
    ctx.barrier_all()?;

    let all = u.to_vec()?;
    let last = (steps & 1) as usize;
    let got = &all[last * row + hu..last * row + hu + mu];
    let want = reference(rod, hu, steps);
    let want = &want[me * mu..(me + 1) * mu];
    let wrong = got.iter().zip(want).filter(|(g, w)| g != w).count();
    let signals = sig.to_vec()?;
    ensure!(
        wrong == 0,
        "halo: FAILED on PE {me}: {wrong} of {mu} cells differ from the host after {steps} steps (first: cell {:?})",
        got.iter().zip(want).position(|(g, w)| g != w)
    );
    ensure!(
        signals == [u64::from(steps); 2],
        "halo: FAILED on PE {me}: signals {signals:?}, want {steps} each"
    );
    ctx.barrier_all()?;
    if me == 0 {
        println!(
            "halo: ok npes={n} steps={steps} cells={m} ghosts={h} per_dispatch={per_dispatch} us_per_step={:.1} device={:?}",
            gpu.as_secs_f64() * 1e6 / f64::from(steps.max(1)),
            ctx.device_info().name
        );
    }
    drop((u, sig, seed_buf));
    Ok(())
}
