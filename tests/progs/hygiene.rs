//! A PE program for the hygiene test: `hygiene CYCLES` runs CYCLES rounds of
//! init, allocate, a host collective and a device kernel, free, finalize in one
//! process (a job of one PE, started without vkshmrun), then compares its open
//! file descriptors with those after the first rounds, and its resident memory
//! at half time with that at the end (a leak grows linearly; the allocator's
//! arenas level off). Prints `hygiene: cycles=N fds=A->B rss_kib=C->H->D`
//! (after two rounds, at half, at the end), then `hygiene: ok`, or fails.

use anyhow::{bail, Context as _, Result};

fn fds() -> Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

fn rss_kib() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .context("no VmRSS in /proc/self/status")
}

fn round() -> Result<()> {
    let ctx = vkshmem::init()?;
    let a = ctx.calloc::<f32>(1024)?;
    let b = ctx.malloc::<f32>(1024)?;
    a.write(&[1.5; 1024])?;
    ctx.sum_reduce(vkshmem::Team::WORLD, &b.as_slice(), &a.as_slice(), 1024)?;
    if b.to_vec()? != vec![1.5; 1024] {
        bail!("the reduction gave a wrong result");
    }
    ctx.barrier_all()?;
    drop((a, b));
    ctx.finalize()?;
    Ok(())
}

fn main() -> Result<()> {
    let cycles: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100);
    // The first round loads the driver and its caches, the first rounds also
    // start the process's kernel builder thread (its malloc arena, about
    // 3.5 MiB, is kept for the process: 100 and 200 rounds grow alike): the
    // baseline is after two rounds.
    round()?;
    round()?;
    let (fd0, rss0) = (fds()?, rss_kib()?);
    let half = cycles / 2;
    for _ in 1..half {
        round()?;
    }
    let rss_half = rss_kib()?;
    for _ in half.max(1)..cycles {
        round()?;
    }
    let (fd1, rss1) = (fds()?, rss_kib()?);
    println!("hygiene: cycles={cycles} fds={fd0}->{fd1} rss_kib={rss0}->{rss_half}->{rss1}");
    if fd1 != fd0 {
        bail!("file descriptors leaked: {fd0} after the first round, {fd1} at the end");
    }
    // The allocator's arenas and the driver's caches grow for a while and
    // level off (7-13 MiB over 100 to 250 rounds, nearly all of it in the
    // first half); a leak grows linearly: a heap or a Vulkan device per round is
    // megabytes, and 80 KiB per round is 4 MiB over the second half.
    let second = rss1.saturating_sub(rss_half);
    if second > 4 * 1024 {
        bail!(
            "resident memory grew by {second} KiB over the last {} rounds ({rss0} KiB after two rounds, {rss_half} KiB at half, {rss1} KiB at the end)",
            cycles - half
        );
    }
    println!("hygiene: ok");
    Ok(())
}
