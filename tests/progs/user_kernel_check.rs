//! A PE program for the user-kernel tests (run through vkshmrun by tests/launcher.rs).
//!
//! 1. A user kernel adds its PE number into a symmetric array bound as one of the
//!    user's own buffers (fresh random data), calls the work_group barrier, then
//!    reads the next PE's array through the device library into a second user
//!    buffer. The host checks every element against the peer's initial data
//!    (kept in a third symmetric array and read from the host) plus the peer's
//!    number.
//! 2. WGSL with an error on a known line gives `Error::Kernel` pointing at it.
//! 3. A device access outside the heap gives `Error::Device` with ERR_BAD_ADDRESS.
//! 4. On lavapipe, a kernel whose loops run past the driver's cap gives
//!    `Error::Device` with ERR_LOOPS_CUT instead of silently wrong results.
//!
//! Prints `user_kernel_check: ok pe=P` on every PE when all held.

#[macro_use]
#[path = "common/fail_fast.rs"]
mod fail_fast;

use anyhow::Result;
use vkshmem::Error;

const ADD_AND_READ: &str = "struct P { sym: u32, len: u32, peer: u32 }
var<immediate> p: P;
@group(1) @binding(0) var<storage, read_write> acc: array<u32>;
@group(1) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let me = u32(shmem_my_pe());
    for (var j = li; j < p.len; j += 64u) {
        acc[j] += me;
    }
    shmemx_barrier_all_work_group(li);
    for (var j = li; j < p.len; j += 64u) {
        out[j] = shmem_uint32_g(p.sym + j, p.peer);
    }
}
";

/// Line 4 adds a bool to a u32.
const BAD: &str = "@group(1) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1)
fn main() {
    o[0] = 1u + true;
}
";

const OUT_OF_HEAP: &str = "struct P { addr: u32 }
var<immediate> p: P;
@compute @workgroup_size(1)
fn main() {
    shmem_uint32_p(p.addr, 7u, u32(shmem_my_pe()));
}
";

const LONG_LOOPS: &str = "struct P { out: u32, n: u32 }
var<immediate> p: P;
@compute @workgroup_size(1)
fn main() {
    var s = 0u;
    for (var i = 0u; i < p.n; i++) { s += i; }
    shmem_uint32_p(p.out, s, u32(shmem_my_pe()));
}
";

/// xorshift64*: pattern data that differs per PE and per run.
fn random_words(seed: u64, len: usize) -> Vec<u32> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
        })
        .collect()
}

fn main() -> Result<()> {
    let ctx = vkshmem::init()?;
    fail_fast::on_pe(ctx.my_pe());
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let peer = (me + 1) % n;

    // 1. Add, work_group barrier, read the peer.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    // 1000 elements: 15 full passes of 64 invocations and a partial one.
    let len = 1000;
    let data = random_words(nanos ^ (u64::from(me) << 40), len);
    let acc = ctx.malloc::<u32>(len)?;
    let init = ctx.malloc::<u32>(len)?;
    let out = ctx.malloc::<u32>(len)?;
    acc.write(&data)?;
    init.write(&data)?;
    out.write(&vec![0xdead_beef; len])?;
    let k = ctx.device_kernel(ADD_AND_READ, "add_and_read.wgsl")?;
    ensure!(k.waits_on_peers(), "the kernel calls a barrier");
    let params = [acc.device_addr()?, len as u32, peer];
    ctx.launch(
        &k,
        [1, 1, 1],
        &[acc.window(me), out.window(me)],
        bytemuck::cast_slice(&params),
    )?;
    ctx.barrier_all()?;
    let mut peer_init = vec![0u32; len];
    init.read_pe(peer, &mut peer_init)?;
    let got = out.to_vec()?;
    let wrong: Vec<usize> = (0..len)
        .filter(|&j| got[j] != peer_init[j].wrapping_add(peer))
        .collect();
    if let Some(&j) = wrong.first() {
        bail!(
            "PE {me}: {} of {len} elements read from PE {peer} are wrong; first [{j}] = {:#x}, want {:#x}",
            wrong.len(),
            got[j],
            peer_init[j].wrapping_add(peer)
        );
    }
    let mine = acc.to_vec()?;
    ensure!(
        (0..len).all(|j| mine[j] == data[j].wrapping_add(me)),
        "PE {me}: the kernel's own additions are wrong"
    );

    // 2. Bad WGSL points at the user's line.
    match ctx.device_kernel(BAD, "bad.wgsl") {
        Err(Error::Kernel(e)) => {
            ensure!(
                e.location().map(|(line, _)| line) == Some(4),
                "bad WGSL: error at {:?}, want line 4: {e}",
                e.location()
            );
            ensure!(e.to_string().contains("bad.wgsl:4:"), "{e}");
        }
        other => bail!("bad WGSL gave {other:?}"),
    }

    // 3. An access past the end of the heap is a typed device error.
    let k = ctx.device_kernel(OUT_OF_HEAP, "out_of_heap.wgsl")?;
    let past = (ctx.heap_size() / 4) as u32 + 5;
    match ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&past)) {
        Err(Error::Device { bits, arg_addr, .. })
            if bits & vkshmem::ERR_BAD_ADDRESS != 0 && arg_addr == past => {}
        other => bail!("store past the heap gave {other:?}"),
    }

    // 4. Loops past lavapipe's cap are reported, not silently cut; short ones pass.
    let k = ctx.device_kernel(LONG_LOOPS, "long_loops.wgsl")?;
    let sink = ctx.calloc::<u32>(1)?;
    for iters in [1000u32, 100_000] {
        let r = ctx.launch(
            &k,
            [1, 1, 1],
            &[],
            bytemuck::cast_slice(&[sink.device_addr()?, iters]),
        );
        let want = (0..iters).fold(0u32, |a, i| a.wrapping_add(i));
        let capped = ctx.device_info().is_llvmpipe() && iters > 65535;
        match r {
            Ok(()) if !capped => {
                ensure!(sink.to_vec()?[0] == want, "sum of {iters} is wrong")
            }
            Err(Error::Device { bits, .. }) if capped && bits & vkshmem::ERR_LOOPS_CUT != 0 => {}
            other => bail!("{iters} loop iterations gave {other:?}"),
        }
    }
    ensure!(
        !ctx.is_broken(),
        "kernels that do not wait leave the PE usable"
    );

    drop((acc, init, out, sink));
    ctx.finalize()?;
    println!("user_kernel_check: ok pe={me}");
    Ok(())
}
