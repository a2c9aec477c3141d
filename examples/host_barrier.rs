//! host_barrier: K host-initiated `barrier_all` calls, checked and timed.
//!
//! ```text
//! vkshmrun -n 4 target/release/examples/host_barrier [K]
//! ```
//! Before barrier k every PE stores k into its own copy of a symmetric counter; after
//! it, every PE reads every peer's counter, which must be k (or k+1, when that peer
//! has already left the barrier and stored the next value). A barrier that let a PE
//! through early shows up as a smaller value. PE 0 prints one line with
//! `host_barrier: ok` and the mean time per `barrier_all` and `sync_all`.

use std::time::Instant;

use anyhow::{bail, Context as _};

fn main() -> anyhow::Result<()> {
    let iters: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse().context("K must be a number")?,
        None => 1000,
    };
    let ctx = vkshmem::init()?;
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let counter = ctx.calloc::<u64>(1)?;
    let mut seen = vec![0u64; 1];
    let mut errors = 0u64;
    let start = Instant::now();
    for k in 1..=iters {
        counter.write(&[k])?;
        ctx.barrier_all()?;
        for pe in 0..n {
            counter.read_pe(pe, &mut seen)?;
            if seen[0] != k && seen[0] != k + 1 {
                errors += 1;
                if errors <= 5 {
                    eprintln!(
                        "host_barrier: PE {me} after barrier {k}: PE {pe} holds {}",
                        seen[0]
                    );
                }
            }
        }
    }
    let checked = start.elapsed();
    // Timing without the checks: barrier_all alone, then sync_all alone.
    ctx.barrier_all()?;
    let t = Instant::now();
    for _ in 0..iters {
        ctx.barrier_all()?;
    }
    let barrier_us = t.elapsed().as_secs_f64() * 1e6 / iters.max(1) as f64;
    let t = Instant::now();
    for _ in 0..iters {
        ctx.sync_all()?;
    }
    let sync_us = t.elapsed().as_secs_f64() * 1e6 / iters.max(1) as f64;
    if me == 0 && errors == 0 {
        println!(
            "host_barrier: ok npes={n} iters={iters} barrier_all_us={barrier_us:.2} sync_all_us={sync_us:.2} checked_loop_s={:.3}",
            checked.as_secs_f64()
        );
    }
    counter.free()?;
    ctx.finalize()?;
    if errors != 0 {
        bail!("PE {me}: {errors} early exits from barrier_all");
    }
    Ok(())
}
