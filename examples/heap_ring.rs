//! heap_ring: every PE, from a compute dispatch on its own device, writes a pattern
//! derived from its PE number into the symmetric object of the next PE (wrapping);
//! after a barrier every PE checks on the host what it received.
//!
//! ```text
//! vkshmrun -n 4 target/debug/examples/heap_ring [ELEMS]
//! ```
//! PE 0 prints one line with `heap_ring: ok` when every PE received the right data;
//! any PE that did not exits non-zero.

use anyhow::{bail, Context as _};

/// Must match `pattern` in shaders/heap_ring.wgsl.
fn pattern(pe: u32, i: u32) -> u32 {
    (pe.wrapping_add(1).wrapping_mul(0x1000_0001)) ^ i.wrapping_mul(2_654_435_761)
}

const POISON: u32 = 0xDEAD_BEEF;

fn main() -> anyhow::Result<()> {
    let elems: u32 = match std::env::args().nth(1) {
        Some(s) => s.parse().context("ELEMS must be a number")?,
        // Crosses many workgroups and ends in a partial one.
        None => (1 << 20) + 37,
    };
    let ctx = vkshmem::init()?;
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;

    let data = ctx.malloc::<u32>(elems as usize)?;
    let status = ctx.calloc::<u32>(n as usize)?; // per-PE mismatch counts, on PE 0
    data.write(&vec![POISON; elems as usize])?;
    ctx.barrier_all()?;

    let kernel = vkshmem::compile_kernel(
        &ctx,
        include_str!("../shaders/heap_ring.wgsl"),
        "main",
        "heap_ring.wgsl",
        1,
        8,
    )?;
    let groups = elems.div_ceil(64).max(1);
    let (gx, gy) = if groups <= 65_535 {
        (groups, 1)
    } else {
        (65_535, groups.div_ceil(65_535))
    };
    let push: Vec<u8> = [me, elems].iter().flat_map(|v| v.to_le_bytes()).collect();
    ctx.dispatch(&kernel, [gx, gy, 1], &[data.window(next)], &push)?;
    ctx.barrier_all()?;

    let got = data.to_vec()?;
    let wrong: Vec<usize> = (0..elems as usize)
        .filter(|&i| got[i] != pattern(prev, i as u32))
        .collect();
    if let Some(&i) = wrong.first() {
        eprintln!(
            "heap_ring: PE {me}: {} of {elems} elements wrong; first at {i}: got {:#010x}, want {:#010x}",
            wrong.len(),
            got[i],
            pattern(prev, i as u32)
        );
    }
    // Report to PE 0: slot `me` of PE 0's status array.
    status.write_at(0, me as usize, &[wrong.len() as u32])?;
    ctx.barrier_all()?;
    if me == 0 {
        let all = status.to_vec()?;
        let bad: Vec<String> = all
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0)
            .map(|(pe, w)| format!("PE {pe}: {w} wrong"))
            .collect();
        if bad.is_empty() {
            println!(
                "heap_ring: ok npes={n} elems={elems} device={:?}",
                ctx.device_info().name
            );
        } else {
            println!("heap_ring: FAILED {}", bad.join(", "));
        }
    }
    data.free()?;
    status.free()?;
    ctx.finalize()?;
    if !wrong.is_empty() {
        bail!("PE {me} received wrong data");
    }
    Ok(())
}
