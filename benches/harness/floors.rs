//! The floors and the roofline every row is judged against, measured in the same
//! run on the same device:
//!
//! - the copy roofline: a plain vec4 copy kernel's bandwidth (bytes read plus
//!   written per second), every PE copying at once as they share the device;
//! - the empty submit: one empty command buffer submitted and waited for, the
//!   least any host-initiated device operation costs;
//! - one dispatch: the smallest compute dispatch (one workgroup storing one
//!   word into the PE's heap) launched and waited for, every PE at once: the
//!   least a host collective that runs a kernel costs, before its syncs;
//! - host memcpy: one PE's `copy_from_slice` of 32 MiB between two of its own
//!   buffers (bytes read plus written per second), the ceiling of the paths
//!   that move data through host memory (the host path, the staged transport);
//! - the atomic barrier: a bare counter barrier between the team's processes on
//!   the device (no library code in the loop: one atomic add per PE on a counter
//!   in the team leader's heap, then a spin until the counter reaches the round's
//!   target), timed with GPU timestamps like the device-scope rows.

use std::time::Instant;

use vkshmem::{Context, SymBuffer};

/// The roofline's copy kernel: a plain vec4 copy between two user buffers, each
/// invocation striding over the vec4s (the wide reduction's access pattern).
const COPY_KERNEL: &str = "
@group(1) @binding(0) var<storage, read_write> src: array<vec4<u32>>;
@group(1) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let n = arrayLength(&src);
    for (var i = g.x; i < n; i += nw.x * 64u) {
        dst[i] = src[i];
    }
}
";

/// The bare atomic barrier: `iters` rounds of one atomic add and a spin on the
/// counter, which lives in the leader's heap and is bound directly (no library
/// call), run by one invocation. The polls are atomic adds of 0: lavapipe
/// turns a WGSL atomicLoad into a load its optimiser may keep out of the loop.
/// Each spin iteration polls 64 times, branch-free, so that
/// lavapipe's cap on loop iterations (65535 per invocation) allows waits of
/// several milliseconds, as the library's own waits do; a capped loop is still
/// reported by the check the library appends to every entry point.
fn atomic_barrier_kernel() -> String {
    const POLLS: usize = 64;
    let poll = "            seen = max(seen, atomicAdd(&counter[a.slot], 0u));\n";
    format!(
        "@group(1) @binding(0) var<storage, read_write> counter: array<atomic<u32>>;
struct F {{ npes: u32, iters: u32, slot: u32 }}
var<immediate> f: F;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {{
    let a = f;
    // One invocation spins; a workgroup of one would do, but lavapipe (Mesa
    // 22.3) cuts every loop after the first short in one-invocation workgroups.
    for (var k = 0u; k < a.iters && li == 0u; k++) {{
        let goal = (k + 1u) * a.npes;
        atomicAdd(&counter[a.slot], 1u);
        loop {{
            var seen = 0u;
{}            if seen >= goal {{ break; }}
        }}
    }}
}}
",
        poll.repeat(POLLS)
    )
}

/// The device's copy bandwidth (bytes read plus written per second, all PEs of
/// the job together, as they share the device): every PE copies `bytes` at the
/// same time, timed on the wall clock from a barrier before the launches to a
/// barrier after them (so the time covers the slowest PE; the barriers add a
/// bootstrap round, small next to the copy); the best of three at each of
/// several workgroup counts (from a few per core to one vec4 per invocation).
/// Collective; the result is this PE's measurement.
pub fn copy_bandwidth(ctx: &Context, bytes: u64) -> anyhow::Result<f64> {
    let a = ctx.malloc::<u8>(bytes as usize)?;
    let b = ctx.malloc::<u8>(bytes as usize)?;
    let k = ctx.device_kernel(COPY_KERNEL, "roofline_copy")?;
    let one_each = (bytes / 16).div_ceil(64).clamp(1, 65535) as u32;
    let mut best = f64::MAX;
    for groups in [16, 64, 256, 1024, 4096, one_each] {
        for _ in 0..3 {
            ctx.barrier_all()?;
            let t = Instant::now();
            ctx.launch(
                &k,
                [groups.min(one_each), 1, 1],
                &[a.window(ctx.my_pe()), b.window(ctx.my_pe())],
                &[],
            )?;
            ctx.barrier_all()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    Ok(ctx.n_pes() as f64 * 2.0 * bytes as f64 / best)
}

/// This PE's host memcpy bandwidth (bytes read plus written per second): the
/// best of five copies of `bytes` between two buffers it owns (touched first).
pub fn host_memcpy_bps(bytes: usize) -> f64 {
    let src = vec![0x5au8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        best = best.min(t.elapsed().as_secs_f64());
    }
    2.0 * bytes as f64 / best
}

/// One empty submit-and-wait on this PE's queue: the median over `iters`, in µs.
pub fn empty_submit_us(ctx: &Context, iters: u32) -> anyhow::Result<f64> {
    let mut v = Vec::new();
    for _ in 0..iters.max(5) {
        let t = Instant::now();
        ctx.empty_submit()?;
        v.push(t.elapsed().as_secs_f64());
    }
    Ok(crate::metrics::stats_us(&v).0)
}

/// The smallest dispatch's kernel: one workgroup, one store.
const ONE_STORE_KERNEL: &str = "
@group(1) @binding(0) var<storage, read_write> word: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    if li == 0u { word[0] = word[0] + 1u; }
}
";

/// One launch of the smallest dispatch, waited for: the median over `iters`,
/// in µs (after a warm-up launch that builds the pipeline).
pub fn one_dispatch_us(ctx: &Context, iters: u32) -> anyhow::Result<f64> {
    let word = ctx.calloc::<u32>(1)?;
    let k = ctx.device_kernel(ONE_STORE_KERNEL, "one_store")?;
    let me = ctx.my_pe();
    ctx.launch(&k, [1, 1, 1], &[word.window(me)], &[])?;
    let mut v = Vec::new();
    for _ in 0..iters.max(5) {
        let t = Instant::now();
        ctx.launch(&k, [1, 1, 1], &[word.window(me)], &[])?;
        v.push(t.elapsed().as_secs_f64());
    }
    let launches = word.to_vec()?[0];
    anyhow::ensure!(
        launches == iters.max(5) + 1,
        "the one-store kernel ran {launches} times, not {}",
        iters.max(5) + 1
    );
    word.free()?;
    Ok(crate::metrics::stats_us(&v).0)
}

/// The bare atomic barrier among `members` (WORLD numbers; the counters are on
/// `members[0]`): the median time per round in µs over the dispatches, each of
/// `per_dispatch` rounds, `iters` rounds in all. Every PE of the job must call it
/// (non-members launch nothing but take part in the host barriers around each
/// dispatch); `Some` on the leader only, and only when some dispatch completed.
///
/// Each dispatch counts on a fresh counter, so one that a capped driver cut
/// short (a PE waited longer than lavapipe's loop cap allows, which happens when
/// PEs share cores and one is descheduled) leaves the next ones intact; such a
/// dispatch is left out on every PE.
pub fn atomic_barrier_us(
    ctx: &Context,
    members: &[u32],
    iters: u32,
    per_dispatch: u32,
) -> anyhow::Result<Option<f64>> {
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct F {
        npes: u32,
        iters: u32,
        slot: u32,
    }
    let per_dispatch = per_dispatch.max(1);
    // The first dispatch (one round) is a warmup.
    let dispatches = 1 + iters.max(1).div_ceil(per_dispatch);
    let counters: SymBuffer<u32> = ctx.calloc(dispatches as usize)?;
    // Slot p of the leader's copy: whether PE p's dispatch was cut short.
    let cut: SymBuffer<u32> = ctx.calloc(ctx.n_pes() as usize)?;
    let k = ctx.device_kernel(&atomic_barrier_kernel(), "atomic_floor")?;
    let me = ctx.my_pe();
    let member = members.contains(&me);
    let mut samples = Vec::new();
    let mut left = iters.max(1);
    for slot in 0..dispatches {
        let rounds = if slot == 0 { 1 } else { left.min(per_dispatch) };
        let f = F {
            npes: members.len() as u32,
            iters: rounds,
            slot,
        };
        // Every member launches at about the same time, as the library's own
        // launches do (they start with a sync of every PE).
        ctx.barrier_all()?;
        let mut took = None;
        if member {
            match ctx.launch_timed(
                &k,
                [1, 1, 1],
                &[counters.window(members[0])],
                bytemuck::bytes_of(&f),
            ) {
                Ok(t) => took = Some(t.as_secs_f64() / rounds as f64),
                Err(vkshmem::Error::Device { bits, .. }) if bits == vkshmem::ERR_LOOPS_CUT => {}
                Err(e) => return Err(e.into()),
            }
        }
        cut.write_at(
            members[0],
            me as usize,
            &[u32::from(member && took.is_none())],
        )?;
        ctx.barrier_all()?;
        if me == members[0] {
            let mut all = vec![0u32; ctx.n_pes() as usize];
            cut.read_at(me, 0, &mut all)?;
            if slot > 0 && all.iter().all(|&c| c == 0) {
                samples.extend(took);
            }
        }
        if slot > 0 {
            left -= rounds;
        }
    }
    ctx.barrier_all()?;
    Ok((member && !samples.is_empty()).then(|| crate::metrics::stats_us(&samples).0))
}
