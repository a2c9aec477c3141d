//! The floors and the roofline every row is judged against, measured in the same
//! run on the same device:
//!
//! - the copy roofline ([`Roofline`]): the best bandwidth (bytes read plus
//!   written per second) of the copy kernels and of the host collectives'
//!   wide copies and pushes, at each row's footprint, every PE copying at
//!   once as they share the device;
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

use vkshmem::{Context, ReduceOp, SymBuffer};
use vkshmem_device::collectives::{WideArgs, WideCopyArgs, WideUnit};
use vkshmem_device::library::ROW_LANES;

/// The roofline kernels' two buffers, of 16-byte `unit`s: the library's
/// wide kernels' (`Context::wide_unit`), so that the roofline copies move
/// memory as the collectives do (on llvmpipe `vec2<u64>` copies faster than
/// `vec4<u32>`, and a roofline in the slower unit would put rows above
/// 100).
fn copy_bindings(unit: WideUnit) -> String {
    let u = unit.wgsl();
    format!(
        "
@group(1) @binding(0) var<storage, read_write> src: array<{u}>;
@group(1) @binding(1) var<storage, read_write> dst: array<{u}>;
"
    )
}

/// The roofline's copy kernel: a plain vec4 copy between two user buffers, each
/// invocation striding over the vec4s (the wide reduction's access pattern).
fn copy_kernel(unit: WideUnit) -> String {
    format!(
        "{}@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let n = arrayLength(&src);
    for (var i = g.x; i < n; i += nw.x * 64u) {{
        dst[i] = src[i];
    }}
}}
",
        copy_bindings(unit)
    )
}

/// One vec4 of each of `k` parts of `q` vec4s at index `i`, copied.
fn parts_body(k: u32) -> String {
    (0..k)
        .map(|j| format!("        dst[{j}u * q + i] = src[{j}u * q + i];\n"))
        .collect()
}

/// The roofline's copy in `k` parts: each invocation copies one vec4 of each
/// of the buffer's `k` equal parts (the pattern of the wide pulls of `k`
/// blocks, fcollect's and alltoall's, which move one vec4 per block per
/// invocation), then strides over the grid.
fn parts_copy_kernel(k: u32, unit: WideUnit) -> String {
    let body = parts_body(k);
    let bindings = copy_bindings(unit);
    format!(
        "{bindings}@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let q = arrayLength(&src) / {k}u;
    for (var i = g.x; i < q; i += nw.x * 64u) {{
{body}    }}
}}
"
    )
}

/// The roofline's copy with a contiguous share per SIMD row, in `k` equal
/// parts, workgroups of `wg`: the row of invocations `8 r .. 8 r + 8` of the
/// grid copies vec4s `[r * per, (r + 1) * per)` of each part (`per` a
/// multiple of 8), its lanes interleaved in it (lane `l` on the vec4s `l`,
/// `l + 8`, ...). The pattern of the device forms' vec4 loops on llvmpipe
/// (`library::vec4_pieces` in the device crate) and of the host wide kernels
/// there (`wide_loop`: one workgroup per driver thread, a share per row, one
/// vec4 of each block per step), which beat the interleaved kernels above
/// with few workgroups (llvmpipe runs a workgroup's rows one after another).
fn share_copy_kernel(k: u32, wg: u32, unit: WideUnit) -> String {
    // Whole rows in every workgroup (`rows` below is never 0).
    let (l, m, sh) = (ROW_LANES, ROW_LANES - 1, ROW_LANES.trailing_zeros());
    assert!(
        wg % l == 0,
        "share copies take workgroups of whole rows of {l}, not {wg}"
    );
    let body = parts_body(k);
    let bindings = copy_bindings(unit);
    format!(
        "{bindings}@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let q = arrayLength(&src) / {k}u;
    let rows = (nw.x * {wg}u) >> {sh}u;
    let per = (((q + rows - 1u) / rows) + {m}u) & ~{m}u;
    let lo = min((g.x >> {sh}u) * per, q);
    let hi = min(lo + per, q);
    for (var r = 0u; r < {SHARE_REPS}u; r++) {{
        for (var i = lo + (g.x & {m}u); i < hi; i += {l}u) {{
    {body}        }}
    }}
}}
"
    )
}

/// Times the share kernels copy their buffer in one launch: a launch's fixed
/// costs (the driver waking its threads, a PE starting a little after the
/// others) are a fraction of the copy, as over a collective's many calls,
/// while every PE still copies at once.
const SHARE_REPS: u32 = 4;

/// A roofline copy kernel's access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Grid-wide stride, one vec4 of each of `parts` parts per step
    /// ([`copy_kernel`], [`parts_copy_kernel`]).
    Stride { parts: u32 },
    /// A contiguous share per invocation ([`share_copy_kernel`]).
    Share { parts: u32, wg: u32 },
    /// The host collectives' own wide copy (`wide_copy_source` in the device
    /// crate) of `parts` blocks, each bound as its own window, as the pull
    /// collectives launch it (a contiguous share per invocation where the
    /// library gives one: llvmpipe).
    Wide { parts: u32 },
    /// The host collectives' own wide push (`wide_push_source`): one source
    /// written to `dests` dests, as broadcast, collect and fcollect launch
    /// it. Each vec4 loaded is stored `dests` times, so where a loop
    /// iteration's work, not memory, bounds a copy (llvmpipe on a slow CPU),
    /// it moves more bytes per second than any copy, and the rows of those
    /// collectives read above 100 % against copies alone
    /// (benches/RESULTS.md, "Push among roofline shapes"). Only pushes to at
    /// most as many dests as the job has PEs are tried.
    Push { dests: u32 },
}

impl Shape {
    /// The equal parts the trial's buffer is cut into: blocks of a copy, or
    /// a push's dests (its source is as long as one).
    fn parts(self) -> u32 {
        match self {
            Shape::Stride { parts } | Shape::Share { parts, .. } | Shape::Wide { parts } => parts,
            Shape::Push { dests } => dests,
        }
    }

    /// Bytes read plus written per byte of the trial's buffer: a copy reads
    /// and writes each once; a push to `dests` dests fills the buffer with
    /// its dests and reads a source of one part.
    fn traffic_per_byte(self) -> f64 {
        match self {
            Shape::Push { dests } => (1.0 + dests as f64) / dests as f64,
            _ => 2.0,
        }
    }
}

/// The shapes the roofline searches: the stride kernels in 1, 4 and 8 parts;
/// the share kernels in 1, 2, 4 and 8 parts at 64 invocations (the host wide
/// kernels' and the bench's largest device workgroups on llvmpipe) and in 1 at
/// 32 and 16 (its smaller ones, `device::cpu_workgroup_size`); the
/// host wide copy itself in 1, 2, 4 and 8 blocks; the host wide push to 2, 4
/// and 8 dests.
const SHAPES: [Shape; 16] = [
    Shape::Wide { parts: 1 },
    Shape::Wide { parts: 2 },
    Shape::Wide { parts: 4 },
    Shape::Wide { parts: 8 },
    Shape::Stride { parts: 1 },
    Shape::Stride { parts: 4 },
    Shape::Stride { parts: 8 },
    Shape::Share { parts: 1, wg: 64 },
    Shape::Share { parts: 2, wg: 64 },
    Shape::Share { parts: 4, wg: 64 },
    Shape::Share { parts: 8, wg: 64 },
    Shape::Share { parts: 1, wg: 32 },
    Shape::Share { parts: 1, wg: 16 },
    Shape::Push { dests: 2 },
    Shape::Push { dests: 4 },
    Shape::Push { dests: 8 },
];

/// Loop iterations one invocation may run (lavapipe ends every loop of an
/// invocation after 65535 in all): the share and wide copies' trials stay
/// below.
const LOOP_BUDGET: u64 = 60_000;

/// The bare atomic barrier: `iters` rounds of one atomic add and a spin on the
/// counter, which lives in the leader's heap and is bound directly (no library
/// call), run by one invocation. The polls are atomic adds of 0: lavapipe
/// turns a WGSL atomicLoad into a load its optimiser may keep out of the loop.
/// Each spin iteration polls 64 times, branch-free, so that
/// lavapipe's cap on loop iterations (65535 per invocation) allows waits of
/// several milliseconds (the library's own waits space 4 polls by square
/// roots instead, which compiles faster; this one kernel keeps its bare
/// polls, so the floor stays comparable with earlier runs); a capped loop is still
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

/// The roofline: the device's copy bandwidth (bytes read plus written per
/// second, all PEs of the job together, as they share the device) at the
/// footprint of each row, measured in the same run.
///
/// Where the PEs share one device and its first PE submits every member's
/// part of a host collective ([`Roofline::gang`]: NVIDIA, where each
/// process's submission costs a context switch), PE 0 copies every PE's
/// bytes in each launch, as the collectives launch there, timed on a GPU by
/// its timestamps (the copy alone: host-timed launches there are
/// launch-bound up to tens of MiB) and on llvmpipe as below.
/// Elsewhere every PE copies the same number of bytes at the same time, from a barrier,
/// four launches back to back, and a trial takes the span from the first
/// PE's start to the last PE's end (on the clock the PEs of a machine share;
/// across nodes the slowest PE's own time), so that copies that did not
/// overlap cannot make every PE at once look faster than it was. A size's bandwidth is the best trial over workgroup counts from a
/// few per core to one vec4 per invocation (the wide kernels launch from one
/// to 16 vec4 loads and stores per invocation), two trials each, with the
/// wide kernels' vec4 loop, one vec4 per step or one from each of 4 or 8
/// parts of the buffer (as the wide pulls of several blocks move them), and
/// with a contiguous share per invocation in 1 to 8 parts over one or two
/// workgroups per core or fewer ([`share_copy_kernel`]: the host wide kernels'
/// and the device forms' pattern on llvmpipe). A row is
/// judged against a copy of the bytes it must move ([`Roofline::at`]), so a
/// collective whose data fits the caches meets a copy that fits them too: no
/// copy a collective makes can beat its roofline. Sizes past the buffers
/// (`cap`) take the bandwidth at `cap` (the copy is memory-bound there), and
/// no size's is below the largest copy's (16 MiB, or `cap` when smaller: a
/// sweep of small sizes makes its buffers small). Each size is measured again at every
/// row that asks for it and keeps its best, so one measurement taken while
/// the machine was busy cannot lower it.
/// Rows that move less than this per PE are judged against the large copy
/// (16 MiB or `cap`): a copy this small is mostly its launch.
const ROOFLINE_MIN_BYTES: u64 = 256 << 10;

pub struct Roofline {
    a: SymBuffer<u8>,
    b: SymBuffer<u8>,
    took: SymBuffer<f64>,
    /// A trial's latest end and negated earliest start over the copiers
    /// ([`Roofline::copiers_span`]).
    span: SymBuffer<f64>,
    /// Whether every PE is on this machine (one node): they share
    /// CLOCK_MONOTONIC, and a trial is timed over their span.
    one_machine: bool,
    /// PEs that copy at once in the memcpy trials ([`Roofline::memcpy_at`]):
    /// the machine's cores where every PE is on it and they are fewer than
    /// the PEs, else every PE.
    copiers: u32,
    /// The copy kernels by shape ([`SHAPES`]).
    kernels: Vec<(Shape, std::sync::Arc<vkshmem::DeviceKernel>)>,
    cap: u64,
    /// Whether the driver caps loop iterations (llvmpipe: the library's wide
    /// kernels take a contiguous share per invocation there).
    capped: bool,
    /// PEs whose copies one launch makes: every PE of the job where they
    /// share one device and its first PE submits every member's part of a
    /// host collective (`Context::leader_submits`, NVIDIA: each process's
    /// submission costs a context switch), so the roofline's copy of all
    /// their bytes is one launch by PE 0 as the collectives' is; else 1
    /// (each PE launches its own copy).
    gang: u64,
    /// Bandwidth by bytes copied per PE and [`Footing`].
    measured: std::cell::RefCell<std::collections::HashMap<(u64, Footing), f64>>,
    /// Host memcpy bandwidth (or the in-place pass's) by bytes copied per
    /// PE and [`Footing`].
    memcpy: std::cell::RefCell<std::collections::HashMap<(u64, Footing), f64>>,
}

impl Roofline {
    /// Buffers for copies of up to `cap` bytes per PE (`cap` times the PEs
    /// on PE 0 where one launch copies for all of them: [`Roofline::gang`]),
    /// within an eighth of the heap each and one binding, in whole vec4s.
    /// Collective.
    pub fn new(ctx: &Context, cap: u64) -> anyhow::Result<Roofline> {
        let took = ctx.calloc(1)?;
        let n = ctx.n_pes();
        let one_machine = ctx.team_n_pes(vkshmem::Team::NODE)? == n;
        let one_device = ctx.team_n_pes(vkshmem::Team::SHARED)? == n;
        let leader = crate::over_world(
            ctx,
            &took,
            ReduceOp::Min,
            f64::from(u8::from(ctx.leader_submits())),
        )? > 0.0;
        let gang = if one_device && leader && n > 1 {
            u64::from(n)
        } else {
            1
        };
        // The buffers take what one PE's did (a quarter of the heap at
        // most), each within one binding.
        let cap = cap
            .min(ctx.heap_size() / (8 * gang))
            .min(ctx.device_info().max_storage_buffer_range / gang)
            .max(16)
            / 16
            * 16;
        let (a, b) = (
            ctx.malloc::<u8>((cap * gang) as usize)?,
            ctx.malloc::<u8>((cap * gang) as usize)?,
        );
        touch(ctx, &a)?;
        touch(ctx, &b)?;
        Ok(Roofline {
            a,
            b,
            took,
            gang,
            span: ctx.calloc(2)?,
            one_machine,
            copiers: if one_machine {
                std::thread::available_parallelism().map_or(n, |c| (c.get() as u32).min(n))
            } else {
                n
            },
            kernels: SHAPES
                .into_iter()
                // Pushes to as many dests as this job's collectives push to
                // at most (a push to 8 in a job of 4 PEs is no copy any of
                // its collectives does).
                .filter(|shape| match shape {
                    Shape::Push { dests } => *dests <= n,
                    _ => true,
                })
                .map(|shape| {
                    let unit = ctx.wide_unit();
                    let (src, name) = match shape {
                        Shape::Stride { parts: 1 } => {
                            (copy_kernel(unit), "roofline_copy_1".to_string())
                        }
                        Shape::Stride { parts } => (
                            parts_copy_kernel(parts, unit),
                            format!("roofline_copy_{parts}"),
                        ),
                        Shape::Share { parts, wg } => (
                            share_copy_kernel(parts, wg, unit),
                            format!("roofline_share_{parts}_{wg}"),
                        ),
                        Shape::Wide { parts } => (
                            vkshmem_device::collectives::wide_copy_source(
                                parts,
                                ctx.wide_workgroup(),
                                unit,
                            )
                            .expect("1 to 8 blocks"),
                            format!("roofline_wide_{parts}"),
                        ),
                        Shape::Push { dests } => (
                            vkshmem_device::collectives::wide_push_source(
                                dests,
                                ctx.wide_workgroup(),
                                unit,
                            )
                            .expect("2 to 8 dests"),
                            format!("roofline_push_{dests}"),
                        ),
                    };
                    let name = format!("{name}{}", unit.suffix());
                    ctx.device_kernel(&src, &name).map(|kernel| (shape, kernel))
                })
                .collect::<Result<_, _>>()?,
            cap,
            capped: ctx.device_info().is_llvmpipe(),
            measured: Default::default(),
            memcpy: Default::default(),
        })
    }

    /// PEs whose copies one launch makes ([`Roofline::gang`]'s field).
    pub fn gang(&self) -> u64 {
        self.gang
    }

    /// The largest copy it measures per PE.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// The roofline of a row that copies `bytes` per PE (read, and as many
    /// written): the copy kernel's bandwidth at that size ([`Roofline::at`]),
    /// and where the row may have run on the host (`host_path`: a host call
    /// within [`Context::host_path_max`]) the host memcpy's too, whichever is
    /// faster. Collective over WORLD, as `at`.
    ///
    /// A row whose dest is its source (`footing` [`Footing::InPlace`]: a
    /// reduction in place) is judged against the best of both footings: its
    /// copies in place too ([`Roofline::at_footing`]), whose written lines
    /// are those just read, and the copies apart. On a CPU an in-place pass
    /// writes to lines already in its cache, where a copy apart first reads
    /// each dest line it writes (read for ownership), so an in-place row
    /// judged against copies apart alone reads far above 100 %
    /// (benches/RESULTS.md, "In-place footing").
    pub fn of_row(
        &self,
        ctx: &Context,
        bytes: u64,
        host_path: bool,
        footing: Footing,
    ) -> anyhow::Result<f64> {
        let mut best = 0.0f64;
        for &f in footing.judged_by() {
            best = best.max(self.at_footing(ctx, bytes, f)?);
            if host_path {
                best = best.max(self.memcpy_at(ctx, bytes, f)?);
            }
        }
        Ok(best)
    }

    /// What [`Roofline::of_row`] would return for `bytes` now, from the
    /// measurements made so far (none made here; `None` where that size was
    /// never measured): at the end of a run, each footprint's best over the
    /// whole run, against which every row is judged again
    /// (`report::Stream::rejudge`).
    pub fn best_of_row(&self, bytes: u64, host_path: bool, footing: Footing) -> Option<f64> {
        let mut best = 0.0f64;
        for &f in footing.judged_by() {
            best = best.max(self.measured.borrow().get(&(self.key(bytes), f)).copied()?);
            if host_path {
                best = best.max(self.memcpy.borrow().get(&(bytes.max(1), f)).copied()?);
            }
        }
        Some(best)
    }

    /// The size whose measurement judges a copy of `bytes` per PE: whole
    /// vec4s up to `cap`, and the large copy's (16 MiB or `cap`) for a copy
    /// so small that it is mostly its launch ([`ROOFLINE_MIN_BYTES`]).
    fn key(&self, bytes: u64) -> u64 {
        let (size, large) = (self.rounded(bytes), self.large());
        if size < ROOFLINE_MIN_BYTES && size < large {
            large
        } else {
            size
        }
    }

    /// `bytes` as the copy kernels move them: whole vec4s, at most `cap`.
    fn rounded(&self, bytes: u64) -> u64 {
        bytes.div_ceil(16).max(1).saturating_mul(16).min(self.cap)
    }

    /// The largest copy every size's roofline is at least (16 MiB, or `cap`).
    fn large(&self) -> u64 {
        self.cap.min(16 << 20)
    }

    /// Host memcpy between two buffers of each PE's, `bytes` at a time, on
    /// every PE at once (or every core, below): in each of [`MEMCPY_TRIALS`]
    /// trials every copier copies back to back for [`MEMCPY_WINDOW`] from a
    /// barrier, and the trial's bandwidth is all their copies (bytes read
    /// plus written) over their common span (on the clock the PEs of a
    /// machine share, [`Roofline::copiers_span`]; across nodes the slowest
    /// PE's own time), as [`Roofline::at`] times the kernels;
    /// the best trial, and the best of every measurement of that size so far
    /// (measured again at each call). Each PE's own best copy, summed over
    /// the PEs as if they had all run at that rate at once, would count a
    /// shared core's rate once per PE, hence the common span. Between two
    /// fresh buffers whose addresses agree in their low 12 bits (4K
    /// aliasing) a small copy runs far slower than a host-path call, which
    /// put rows far above 100 % (benches/RESULTS.md, "Host memcpy bar and 4K
    /// aliasing"): hence [`CopyPair`]. The trials copy with plain and with
    /// streaming stores in turn, as the host collectives' direct path does by
    /// the call's size (`vkshmem::host_copy`).
    ///
    /// Where the PEs outnumber the machine's cores, only the first
    /// [`Roofline::copiers`] PEs copy (the others wait at the trial's
    /// closing reduction), so that the bar is the machine's copy rate with
    /// every core copying: all at once they only took turns on the cores and
    /// evicted each other's data, a loss the PEs of a collective, asleep in
    /// its meetings while others copy, need not take, so rows read above
    /// 100 % of an all-at-once bar (benches/RESULTS.md, "Memcpy bar groups and
    /// live set").
    ///
    /// The copiers stand in for the whole job, as the copy kernel's trial
    /// has every PE copy at once ([`Roofline::at`]): each cycles through
    /// [`Roofline::pairs`] pairs, its own and those of the PEs that rest,
    /// so that a trial keeps every PE's source and dest live, and no more,
    /// as a call of the collective does. With only the copiers' pairs live,
    /// the bar would run from the cache where the collective, with every
    /// PE's data live, cannot; with more than the job's data live (groups
    /// of copiers each with pairs of its own) it would fall below the
    /// collective's own copies (benches/RESULTS.md, "Memcpy bar groups and live
    /// set"). Collective over WORLD.
    ///
    /// [`Footing::InPlace`]: each copier passes over its pairs' sources in
    /// place instead ([`CopyPair::pass`]), reading and writing each byte.
    fn memcpy_at(&self, ctx: &Context, bytes: u64, footing: Footing) -> anyhow::Result<f64> {
        let size = bytes.max(1);
        let mut best = self
            .memcpy
            .borrow()
            .get(&(size, footing))
            .copied()
            .unwrap_or(0.0);
        let copier = ctx.my_pe() < self.copiers;
        let mut pairs: Vec<CopyPair> = if copier {
            (0..self.pairs(ctx, size))
                .map(|_| CopyPair::new(size as usize))
                .collect()
        } else {
            Vec::new()
        };
        // Copies, then pushes of each chunk to as many dests as the job has
        // PEs (up to 8), as the direct path's collects and fcollects push
        // theirs: with streaming stores such a collect reads above 100 %
        // against copies alone (benches/RESULTS.md, "Memcpy bar groups and live
        // set"). None in place.
        let dests = ctx.n_pes().min(8) as usize;
        let pushes = if footing == Footing::Apart && dests > 1 {
            MEMCPY_PUSH_TRIALS
        } else {
            0
        };
        for trial in 0..MEMCPY_TRIALS + pushes {
            // Plain and streaming stores in turn: the direct path streams
            // where a call overflows the cache, and beats the plain bar there
            // (benches/RESULTS.md, "Memcpy bar groups and live set"). In place,
            // 256- and 512-bit passes in turn.
            let stream = trial % 2 == 1;
            let push = trial >= MEMCPY_TRIALS;
            // Bytes read plus written by one copy.
            let moved = if push {
                (size as usize / dests * (1 + dests)) as f64
            } else {
                2.0 * size as f64
            };
            let copy = |pair: &mut CopyPair| match footing {
                Footing::Apart if push => pair.push(dests, stream),
                Footing::Apart => pair.copy(stream),
                Footing::InPlace => pair.pass(stream),
            };
            // One untimed pass over the pairs with this trial's stores
            // first (trial 0's also touches every page): the rows are the
            // steady state of many calls, and a window that began cold, after
            // a streaming trial had sent the dests out of the cache, reads
            // well below them.
            pairs.iter_mut().for_each(copy);
            ctx.barrier_all()?;
            let t = Instant::now();
            let mut copies = 0u64;
            let mut window = None;
            if copier {
                let (start, from) = (shared_clock(), Instant::now());
                while copies == 0 || from.elapsed() < MEMCPY_WINDOW {
                    let k = copies as usize % pairs.len();
                    copy(&mut pairs[k]);
                    copies += 1;
                }
                window = Some((start, shared_clock()));
            } else {
                // The PEs that rest sleep through the window, so that their
                // wait at the closing reduction (yields before it sleeps,
                // where PEs outnumber cores) takes no turns on the
                // copiers' cores.
                std::thread::sleep(MEMCPY_WINDOW);
            }
            let took = t.elapsed().as_secs_f64();
            let span = self.copiers_span(ctx, window, took)?;
            let all = crate::over_world(ctx, &self.took, ReduceOp::Sum, copies as f64)?;
            let bps = all * moved / span.max(1e-9);
            tracing::debug!(
                "memcpy {size} B/PE {footing:?} trial {trial} (push {push}): {all} copies by {} PEs in {:.2} ms: {:.3} GB/s",
                self.copiers,
                span * 1e3,
                bps / 1e9
            );
            best = best.max(bps);
        }
        self.memcpy.borrow_mut().insert((size, footing), best);
        Ok(best)
    }

    /// Pairs each copier of [`Roofline::memcpy_at`] cycles through for
    /// copies of `size` bytes: the job's PEs over [`Roofline::copiers`],
    /// rounded up (so that the copiers' pairs together are one per PE), but no more than
    /// [`MEMCPY_LIVE_MAX`] of them together, past which the live set is far
    /// beyond any cache already; at least one.
    fn pairs(&self, ctx: &Context, size: u64) -> usize {
        let per_copier = ctx.n_pes().div_ceil(self.copiers.max(1)) as u64;
        let most = MEMCPY_LIVE_MAX / size.saturating_mul(2).max(1);
        per_copier.min(most).max(1) as usize
    }

    /// Seconds the copiers of a trial copied ([`Roofline::memcpy_at`]'s and
    /// [`Roofline::at`]'s): from the first copier's start to the last
    /// copier's end (this PE's `window`, `None` where it did not copy, on
    /// the clock the PEs of a machine share); across nodes, where every PE
    /// copies, the slowest PE's own time (`took`). Collective over WORLD.
    fn copiers_span(
        &self,
        ctx: &Context,
        window: Option<(f64, f64)>,
        took: f64,
    ) -> anyhow::Result<f64> {
        if !self.one_machine {
            return crate::over_world(ctx, &self.took, ReduceOp::Max, took);
        }
        // The latest end and the negation of the earliest start (the latest
        // of the negations), in one reduction; the least f64 from a PE that
        // did not copy.
        let v = match window {
            Some((start, end)) => [end, -start],
            None => [f64::MIN; 2],
        };
        self.span.write(&v)?;
        let s = self.span.slice(0..v.len())?;
        ctx.reduce(vkshmem::Team::WORLD, ReduceOp::Max, &s, &s, v.len())?;
        let v = self.span.to_vec()?;
        Ok(v[0] + v[1])
    }

    /// The copy kernel's bandwidth with `bytes` read and as many written on
    /// every PE (rounded up to whole vec4s, at most `cap`): measured at each
    /// call, the best of every measurement of that size so far. Collective
    /// over WORLD: every PE must ask for the same sizes in the same order.
    pub fn at(&self, ctx: &Context, bytes: u64) -> anyhow::Result<f64> {
        self.at_footing(ctx, bytes, Footing::Apart)
    }

    /// [`Roofline::at`] with the dest where `footing` puts it: apart from
    /// the source, or the source itself ([`Footing::InPlace`]: every
    /// trial's dest window is its source's, the push's shapes left out, as
    /// a push to several dests cannot be in place).
    pub fn at_footing(&self, ctx: &Context, bytes: u64, footing: Footing) -> anyhow::Result<f64> {
        // A copy that costs about one launch is no roofline: small rows take
        // the large copy's bandwidth.
        let (size, large) = (self.rounded(bytes), self.large());
        if self.key(bytes) != size {
            if let Some(&bps) = self.measured.borrow().get(&(large, footing)) {
                return Ok(bps);
            }
            return self.at_footing(ctx, large, footing);
        }
        // Measured again at every row (its best so far kept): a machine
        // that was busy while one measurement ran must not lower the roofline.
        let before = self
            .measured
            .borrow()
            .get(&(size, footing))
            .copied()
            .unwrap_or(0.0);
        // The trials' dest buffer.
        let dest = match footing {
            Footing::Apart => &self.b,
            Footing::InPlace => &self.a,
        };
        let me = ctx.my_pe();
        // The bytes each launch copies: every PE's on PE 0 where one launch
        // copies for all ([`Roofline::gang`]; the others launch nothing and
        // only take part in the timing), else this PE's own.
        let launches = self.gang == 1 || me == 0;
        let size_1 = size;
        let size = size * self.gang;
        let window = |buf: &SymBuffer<u8>| {
            let mut w = buf.window(me);
            w.bytes = size;
            w
        };
        let mut best = 0.0f64;
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as u32;
        // The wide kernels' workgroup (the library's own launch shape).
        let wg = ctx.wide_workgroup() as u64;
        let mut trials = Vec::new();
        for (shape, kernel) in &self.kernels {
            let p = shape.parts() as u64;
            if size % (16 * p) != 0 {
                continue;
            }
            // A contiguous share per invocation over a few workgroups is
            // llvmpipe's pattern; on a GPU the library never copies so (a
            // few thousand invocations, each a long dependent walk: trials
            // of seconds at hundreds of MiB).
            if matches!(shape, Shape::Share { .. }) && !self.capped {
                continue;
            }
            if matches!(shape, Shape::Push { .. }) && footing == Footing::InPlace {
                continue;
            }
            // vec4s of each part.
            let q = size / 16 / p;
            let mut groups: Vec<u32> = match *shape {
                // The library's launch on llvmpipe (one workgroup per driver
                // thread) and one or two per core, each invocation's share
                // within the loop budget; elsewhere one vec4 per invocation
                // (per = 0: the grid-wide stride).
                Shape::Wide { .. } if self.capped => {
                    [ctx.resident_workgroups(), 1, 2, cores, 2 * cores]
                        .into_iter()
                        .filter(|&g| g > 0 && q.div_ceil(wg * g as u64) <= LOOP_BUDGET)
                        .collect()
                }
                Shape::Wide { .. } => vec![q.div_ceil(wg).clamp(1, 65535) as u32],
                // The library's own launch only (a trial per shape: the
                // search stays short).
                Shape::Push { dests } => vec![ctx.wide_launch(q, 1 + dests as usize).0],
                // One, two, one per core and two per core, each invocation's
                // share (every pass of it) within the loop budget.
                Shape::Share { wg, .. } => [1u32, 2, cores, 2 * cores]
                    .into_iter()
                    .filter(|&g| {
                        q.div_ceil(wg as u64 * g as u64) * SHARE_REPS as u64 <= LOOP_BUDGET
                    })
                    .collect(),
                // A few workgroups per core, a thousand, and each invocation
                // copying 1 to 16 vec4s of each part (the wide kernels take 1
                // to 16 vec4 loads and stores per invocation); some twenty
                // shapes in all, so that the bench's own load stays small
                // beside the collectives it measures (tests run several jobs
                // at once).
                Shape::Stride { .. } => {
                    let per_invocation = |k: u64| q.div_ceil(64 * k).clamp(1, 65535) as u32;
                    let one_each = per_invocation(1);
                    [64, 1024]
                        .into_iter()
                        .chain([1, 2, 4, 8, 16].map(per_invocation))
                        .map(|g| g.min(one_each))
                        .collect()
                }
            };
            groups.sort_unstable();
            groups.dedup();
            trials.extend(groups.into_iter().map(|g| (kernel, g, *shape)));
        }
        // One trial (in gang mode PE 0 alone copies, every PE's bytes, and
        // on a GPU its copies' device time is the trial's; otherwise as
        // follows): every PE copies at once (from a barrier),
        // [`TRIAL_LAUNCHES`] launches back to back as a collective's calls
        // follow each other (the PEs' skew at the start spread over them),
        // timed by the host without the barrier after it (which the
        // collectives do not pay either): all PEs' bytes over the span from
        // the first PE's start to the last PE's end, on the clock the PEs of
        // a machine share (CLOCK_MONOTONIC). Not each PE's own time (the slowest
        // PE's): a PE whose copy runs before another's has started copies
        // alone, with every core, so the sum over PEs of bytes over the
        // slowest single copy counted that overlap twice (the roofline then
        // swung up to twice the one-PE copy from run to run). Across nodes
        // (no shared clock) the slowest PE's time. Not the device's
        // timestamps (tried: they swung from run to run for the same
        // reason).
        // Where PE 0 copies for all on a GPU, the copy's own time from the
        // device's timestamps: the host-timed launches there are
        // launch-bound up to tens of MiB (a submission and its wait cost
        // more than such a copy), so rows that pay one launch per call beat
        // them.
        let device_timed =
            self.gang > 1 && !self.capped && ctx.device_info().timestamp_valid_bits > 0;
        // One launch; its GPU seconds where `device_timed`.
        let launch = |k: &vkshmem::DeviceKernel, g: u32, shape: Shape| -> anyhow::Result<f64> {
            let go = |w: &[vkshmem::HeapWindow], imm: &[u8]| -> vkshmem::Result<f64> {
                if device_timed {
                    Ok(ctx.launch_timed(k, [g, 1, 1], w, imm)?.as_secs_f64())
                } else {
                    ctx.launch(k, [g, 1, 1], w, imm).map(|()| 0.0)
                }
            };
            let r = if let Shape::Wide { parts } = shape {
                // Each block of `a` its own window, into `b`.
                let bvecs = size / 16 / parts as u64;
                let mut windows: Vec<vkshmem::HeapWindow> = (0..parts as u64)
                    .map(|j| part_window(&self.a, me, j, bvecs))
                    .collect();
                windows.push(window(dest));
                let per = if self.capped {
                    bvecs.div_ceil(wg * g as u64) as u32
                } else {
                    0
                };
                let args = WideCopyArgs {
                    first: 0,
                    end: bvecs as u32,
                    words: bvecs as u32 * 4,
                    s0: 0,
                    d0: 0,
                    per,
                    lead: 0,
                    stride: bvecs as u32,
                };
                go(&windows, bytemuck::bytes_of(&args))
            } else if let Shape::Push { dests } = shape {
                // A source of one part of `a`, each dest a part of `b`.
                let q = size / 16 / dests as u64;
                let windows: Vec<vkshmem::HeapWindow> =
                    std::iter::once(part_window(&self.a, me, 0, q))
                        .chain((0..dests as u64).map(|j| part_window(&self.b, me, j, q)))
                        .collect();
                let (_, per) = ctx.wide_launch(q, 1 + dests as usize);
                let args = WideArgs {
                    first: 0,
                    end: q as u32,
                    words: q as u32 * 4,
                    s0: 0,
                    d0: 0,
                    per,
                    lead: 0,
                    members: 0,
                };
                go(&windows, bytemuck::bytes_of(&args))
            } else {
                go(&[window(&self.a), window(dest)], &[])
            };
            Ok(r?)
        };
        let trial = |k: &vkshmem::DeviceKernel, g: u32, shape: Shape| -> anyhow::Result<f64> {
            let reps = match shape {
                Shape::Share { .. } => SHARE_REPS,
                _ => 1,
            };
            ctx.barrier_all()?;
            let (start, t) = (shared_clock(), Instant::now());
            let mut gpu = 0.0;
            for _ in 0..TRIAL_LAUNCHES {
                if launches {
                    gpu += launch(k, g, shape)?;
                }
            }
            let (end, took) = (shared_clock(), t.elapsed().as_secs_f64());
            let span = if device_timed {
                // PE 0's copies (the others launched none).
                crate::over_world(ctx, &self.took, ReduceOp::Max, gpu)?
            } else {
                // Every PE at once: one group.
                self.copiers_span(ctx, Some((start, end)), took)?
            };
            let one = span / (reps * TRIAL_LAUNCHES) as f64;
            Ok(ctx.n_pes() as f64 * shape.traffic_per_byte() * size_1 as f64 / one)
        };
        let mut ranked = Vec::new();
        let search = Instant::now();
        for (k, g, shape) in trials {
            let mut b = 0.0f64;
            for _ in 0..2 {
                b = b.max(trial(k, g, shape)?);
            }
            tracing::debug!(
                "roofline {size_1} B/PE: {shape:?} x{g} groups {:.3} GB/s",
                b / 1e9
            );
            best = best.max(b);
            ranked.push((b, k, g, shape));
        }
        // The three best shapes twice more, so that a busy moment (the
        // machine is shared: PEs, driver threads, other jobs) does not leave
        // the roofline below the collectives' own copies. Every PE ranks the
        // same values (each trial's is the maximum over the PEs).
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, k, g, shape) in ranked.iter().take(3) {
            for _ in 0..2 {
                best = best.max(trial(k, g, shape)?);
            }
        }
        tracing::debug!(
            "roofline {size_1} B/PE: best {:.3} GB/s (before {:.3}) after {} trials in {:.1} s",
            best / 1e9,
            before / 1e9,
            ranked.len(),
            search.elapsed().as_secs_f64()
        );
        best = best.max(before);
        // Never below the large copy's (a smaller copy pays its launch).
        if size_1 != large {
            best = best.max(
                self.measured
                    .borrow()
                    .get(&(large, footing))
                    .copied()
                    .unwrap_or(0.0),
            );
        }
        self.measured.borrow_mut().insert((size_1, footing), best);
        Ok(best)
    }
}

/// Where a copy's dest lies: what a row's roofline copies are like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Footing {
    /// Apart from the source (every collective out of place).
    Apart,
    /// The source itself (a reduction in place).
    InPlace,
}

impl Footing {
    /// The footings whose copies judge a row of this one: a row in place
    /// meets the best of both.
    fn judged_by(self) -> &'static [Footing] {
        match self {
            Footing::Apart => &[Footing::Apart],
            Footing::InPlace => &[Footing::Apart, Footing::InPlace],
        }
    }
}

/// Part `j` of `vecs` vec4s of PE `pe`'s copy of `buf`, as its own window.
fn part_window(buf: &SymBuffer<u8>, pe: u32, j: u64, vecs: u64) -> vkshmem::HeapWindow {
    let mut w = buf.window(pe);
    w.offset += j * vecs * 16;
    w.bytes = vecs * 16;
    w
}

/// Bytes of a copier's pairs in [`Roofline::memcpy_at`] at most
/// ([`Roofline::pairs`]): eight times a 32 MiB last-level cache.
const MEMCPY_LIVE_MAX: u64 = 256 << 20;

/// How long each PE copies in a trial of [`Roofline::memcpy_at`]: a few of
/// the scheduler's time slices on a machine whose cores the PEs share.
const MEMCPY_WINDOW: std::time::Duration = std::time::Duration::from_millis(25);

/// Trials of [`Roofline::memcpy_at`] per call (its best kept), plain and
/// streaming stores in turn.
const MEMCPY_TRIALS: u32 = 4;

/// Trials of [`Roofline::memcpy_at`]'s pushes ([`CopyPair::push`]) after
/// its copies, plain and streaming stores in turn.
const MEMCPY_PUSH_TRIALS: u32 = 2;

/// Bytes of the source a push moves to every dest at a time: the direct
/// path's chunks (`PUSH_L1_CHUNK` and `PUSH_CHUNK` in the host crate's
/// `collective::direct`), in L1 with plain stores, in L2 with streaming
/// ones.
const PUSH_CHUNK: [usize; 2] = [8 << 10, 64 << 10];

/// Launches of the copy per roofline trial, back to back.
const TRIAL_LAUNCHES: u32 = 4;

/// Writes the whole of this PE's part of `buf` (a byte pattern, 16 MiB at a
/// time) where the device is a CPU (llvmpipe), so that the trials and rows
/// read memory that holds data. There the heap is host memory that the
/// kernel backs on first touch, and a collective that reads pages nobody
/// has written moves far faster than one that reads data, up to twice the
/// roofline (benches/RESULTS.md, "Untouched pages on llvmpipe"). A GPU's memory
/// holds whatever it holds from its allocation on: nothing to do there (and its
/// writes would go through staging copies).
pub fn touch(ctx: &Context, buf: &SymBuffer<u8>) -> anyhow::Result<()> {
    if !ctx.device_info().is_llvmpipe() {
        return Ok(());
    }
    let chunk = vec![0x5au8; (16usize << 20).min(buf.len())];
    let me = ctx.my_pe();
    let mut at = 0;
    while at < buf.len() {
        let n = chunk.len().min(buf.len() - at);
        buf.write_at(me, at, &chunk[..n])?;
        at += n;
    }
    Ok(())
}

/// Seconds on CLOCK_MONOTONIC, which every process of a machine shares.
fn shared_clock() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always there on Linux");
    t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9
}

/// This PE's host memcpy bandwidth (bytes read plus written per second): the
/// best of five copies of `bytes` between two buffers it owns (touched first).
pub fn host_memcpy_bps(bytes: usize) -> f64 {
    2.0 * bytes as f64 / best_copy_secs(bytes)
}

/// Two buffers of this process for host copies of `bytes` (both written
/// first). The dest lies 2 KiB off the source modulo 4 KiB: between
/// addresses whose low 12 bits agree (as the allocator may place two
/// buffers) x86 CPUs copy small sizes many times slower (4K aliasing:
/// benches/RESULTS.md, "Host memcpy bar and 4K aliasing"), which no copy of a
/// call is bound to.
struct CopyPair {
    src: Vec<u8>,
    room: Vec<u8>,
    at: usize,
}

impl CopyPair {
    fn new(bytes: usize) -> CopyPair {
        let src = vec![0x5au8; bytes];
        let room = vec![0x33u8; bytes + 4096];
        let at = (src.as_ptr() as usize + 2048).wrapping_sub(room.as_ptr() as usize) % 4096;
        CopyPair { src, room, at }
    }

    /// One pass over the source in place: each byte read and written back
    /// (xor with a zero the compiler cannot see), as an in-place reduction
    /// on the host reads and writes its dest ([`Footing::InPlace`]). In
    /// 512-bit vectors where `wide` and the CPU has them, else in 256-bit
    /// ones where it has AVX2 (the host reductions' own width for most
    /// kinds), so that trials in turn try both.
    fn pass(&mut self, wide: bool) {
        let key = std::hint::black_box(0u8);
        #[cfg(target_arch = "x86_64")]
        if wide && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512F and BW, for which `xor_avx512` is
            // compiled (a target feature is the only precondition).
            unsafe { xor_avx512(&mut self.src, key) };
        } else if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, for which `xor_avx2` is compiled.
            unsafe { xor_avx2(&mut self.src, key) };
        } else {
            xor_pass(&mut self.src, key);
        }
        #[cfg(not(target_arch = "x86_64"))]
        xor_pass(&mut self.src, key);
        std::hint::black_box(&mut self.src);
    }

    /// One push: the first `1 / dests` of the source into each of `dests`
    /// parts of the dest, a chunk ([`PUSH_CHUNK`]) to every part before the
    /// next, as the direct path's gathers push (each chunk read once,
    /// written `dests` times); streaming stores where `stream`.
    fn push(&mut self, dests: usize, stream: bool) {
        let part = self.src.len() / dests.max(1);
        if part == 0 {
            // Fewer bytes than dests: counted as none moved.
            return;
        }
        let chunk = PUSH_CHUNK[usize::from(stream)];
        let src = std::hint::black_box(&self.src[..part]);
        let room = &mut self.room[self.at..self.at + part * dests];
        let mut at = 0;
        while at < part {
            let n = chunk.min(part - at);
            for d in room.chunks_exact_mut(part) {
                vkshmem::host_copy(&src[at..at + n], &mut d[at..at + n], stream);
            }
            at += n;
        }
        std::hint::black_box(room);
    }

    /// One copy of the source into the dest: `copy_from_slice`, or with
    /// streaming stores (`stream`) as the host collectives' direct path
    /// makes them past the cache (`vkshmem::host_copy`).
    fn copy(&mut self, stream: bool) {
        let n = self.src.len();
        let dst = &mut self.room[self.at..self.at + n];
        vkshmem::host_copy(std::hint::black_box(&self.src), dst, stream);
        std::hint::black_box(&mut *dst);
    }
}

/// Each byte of `buf` xor `key`: an in-place pass that the compiler
/// vectorises in the features of its caller.
#[inline(always)]
fn xor_pass(buf: &mut [u8], key: u8) {
    for b in buf {
        *b ^= key;
    }
}

/// [`xor_pass`] in AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn xor_avx2(buf: &mut [u8], key: u8) {
    xor_pass(buf, key)
}

/// [`xor_pass`] in AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn xor_avx512(buf: &mut [u8], key: u8) {
    xor_pass(buf, key)
}

/// The least seconds of five copies of `bytes` ([`CopyPair`]) each way,
/// plain and streaming.
fn best_copy_secs(bytes: usize) -> f64 {
    let mut pair = CopyPair::new(bytes);
    (0..10)
        .map(|i| {
            let t = Instant::now();
            pair.copy(i % 2 == 1);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
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
