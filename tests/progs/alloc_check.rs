//! A PE program for the allocator tests (run through vkshmrun by tests/launcher.rs).
//!
//! Checks, on every PE, that symmetric allocations get the same offset everywhere,
//! that a mismatched request fails on every PE with `AllocMismatch`, that exhaustion
//! fails on every PE with `HeapExhausted` and leaves the heap usable, and that freed
//! space is reused. PE 0 prints `alloc_check: ok` when all held.

use vkshmem::Error;

fn main() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let offsets = ctx.calloc::<u64>(n as usize * 8)?;
    let mut fails = Vec::new();

    // Same offsets everywhere: each PE records its offsets in PE 0's table.
    let a = ctx.malloc::<u8>(1000)?;
    let b = ctx.align::<u32>(1 << 16, 77)?;
    let c = ctx.calloc::<f64>(12345)?;
    if c.to_vec()?.iter().any(|&x| x != 0.0) {
        fails.push("calloc memory is not zero".to_string());
    }
    if b.offset() % (1 << 16) != 0 {
        fails.push(format!("align(65536) gave offset {}", b.offset()));
    }
    offsets.write_at(0, me as usize * 8, &[a.offset(), b.offset(), c.offset()])?;
    let b_off = b.offset();
    b.free()?;
    // Freed space is reused by a request that fits it.
    let d = ctx.align::<u32>(1 << 16, 10)?;
    if d.offset() != b_off {
        fails.push(format!(
            "freed block at {b_off} not reused (got {})",
            d.offset()
        ));
    }
    offsets.write_at(0, me as usize * 8 + 3, &[d.offset()])?;
    huge_pages(&ctx, &mut fails)?;

    // Mismatch: the last PE asks for a different size; every PE must get the error.
    let size = if me == n - 1 && n > 1 { 2048 } else { 1024 };
    match ctx.malloc::<u8>(size) {
        Err(Error::AllocMismatch(why)) if n > 1 => {
            if !why.contains(&format!("PE {}", n - 1)) {
                fails.push(format!(
                    "mismatch message does not name PE {}: {why}",
                    n - 1
                ));
            }
        }
        Ok(buf) if n == 1 => buf.free()?,
        other => fails.push(format!("mismatched malloc gave {other:?}")),
    }

    // Exhaustion on every PE, then the heap still works.
    match ctx.malloc::<u8>(ctx.heap_size() as usize + 1) {
        Err(Error::HeapExhausted { .. }) => {}
        other => fails.push(format!("oversized malloc gave {other:?}")),
    }
    let e = ctx.malloc::<u32>(4096)?;
    e.write(&vec![me; 4096])?;

    ctx.barrier_all()?;
    if me == 0 {
        let mut table = vec![0u64; n as usize * 8];
        offsets.read(&mut table)?;
        for pe in 1..n as usize {
            if table[pe * 8..pe * 8 + 4] != table[..4] {
                fails.push(format!(
                    "PE {pe} offsets {:?} differ from PE 0's {:?}",
                    &table[pe * 8..pe * 8 + 4],
                    &table[..4]
                ));
            }
        }
    }
    for f in &fails {
        eprintln!("alloc_check: PE {me}: {f}");
    }
    drop((a, c, d, e)); // collective frees on drop, in the same order everywhere
    offsets.free()?;
    ctx.finalize()?;
    if me == 0 && fails.is_empty() {
        println!("alloc_check: ok npes={n}");
    }
    if !fails.is_empty() {
        anyhow::bail!("PE {me}: {} checks failed", fails.len());
    }
    Ok(())
}

/// A block aligned to 2 MiB is at a 2 MiB-aligned host address in every
/// mapping of the heap here, up to what the mappings share (on lavapipe, whose
/// memory is the file it exports, all of it); the host's stores reach the
/// device (an fcollect reads them) and the device's stores reach the host.
fn huge_pages(ctx: &vkshmem::Context, fails: &mut Vec<String>) -> anyhow::Result<()> {
    const HUGE: u64 = 2 << 20;
    const LEN: usize = 3001;
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as usize);
    let src = ctx.align::<u32>(HUGE, LEN)?;
    let dst = ctx.align::<u32>(HUGE, LEN * n)?;
    let shared = ctx.heap_mapping_align();
    let lavapipe = ctx.device_info().name.contains("llvmpipe");
    if lavapipe && shared.map_or(true, |a| a < HUGE) {
        fails.push(format!(
            "lavapipe's heap mappings share only {shared:?} bytes"
        ));
    }
    for buf in [src.offset(), dst.offset()] {
        if buf % HUGE != 0 {
            fails.push(format!("align({HUGE}) gave offset {buf}"));
        }
        for pe in 0..n as u32 {
            let (Some(base), Some(shared)) = (ctx.heap_base(pe), shared) else {
                continue;
            };
            let addr = base.as_ptr() as u64 + buf;
            if addr % HUGE.min(shared) != 0 {
                fails.push(format!(
                    "PE {pe}'s block at offset {buf} is at {addr:#x} here"
                ));
            }
        }
    }
    let value = |pe: usize, i: usize| (pe * 7919 + i * 31 + 17) as u32;
    src.write(&(0..LEN).map(|i| value(me as usize, i)).collect::<Vec<_>>())?;
    ctx.fcollect(vkshmem::Team::WORLD, &dst.as_slice(), &src.as_slice(), LEN)?;
    let got = dst.to_vec()?;
    let want: Vec<u32> = (0..n * LEN).map(|k| value(k / LEN, k % LEN)).collect();
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b);
        fails.push(format!(
            "fcollect into a 2 MiB-aligned block differs at {at:?}"
        ));
    }
    dst.free()?;
    src.free()?;
    Ok(())
}
