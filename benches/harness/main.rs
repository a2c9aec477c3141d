//! `vkshmem-bench`: nccl-tests-style sweeps of the collectives in every form, run
//! under `vkshmrun -n N`.
//!
//! What each number includes:
//!
//! - **host** scope: the wall time of one call, from entering the collective
//!   to its return, on the PE where it took longest (each PE times its own
//!   calls; the times are combined call by call): the agreement allgather
//!   over the bootstrap, the dispatch and its completion, and the closing
//!   sync. Median, minimum and maximum over `--iters` calls after
//!   `--warmup` calls.
//! - **thread** and **work_group** scopes: a kernel calls the device collective
//!   (`shmem_*` from one invocation, `shmemx_*_work_group` from a workgroup of
//!   `--workgroup-size`) in a loop inside one dispatch; the dispatch is timed with
//!   GPU timestamps (from its start to the end of its last workgroup) and divided
//!   by the calls it made. Each call includes its two team syncs; the dispatch
//!   also includes the kernel's start and the wait for the peers' dispatches to
//!   start (every launch of a waiting kernel follows a host sync of every PE).
//!   A dispatch's time is the slowest PE's (as a host call's). Median, minimum
//!   and maximum over the dispatches. On drivers that cap loop
//!   iterations (lavapipe) a dispatch makes few calls, and sizes one call cannot
//!   fit are skipped and listed at the end.
//! - `bytes` is one PE's source (of a broadcast, collect, fcollect or
//!   reduction; one block of an alltoall); algbw = size / time with
//!   nccl-tests' size (`bytes`, but a PE's whole output for collect and
//!   fcollect and its whole send buffer, n blocks, for alltoall(s));
//!   busbw = algbw times nccl-tests' factor.
//! - `roofline_pct`: the time the least data movement of the call would take at
//!   the copy kernel's bandwidth (measured at start, `floors::copy_bandwidth`:
//!   every PE copies at once, read plus written bytes of all PEs over the
//!   span from the first PE's start to the last PE's end, the best over 1, 4 and 16 MiB and over workgroup
//!   counts up to the wide kernels' one vec4 per invocation), over the measured
//!   time. The least movement sums every PE's inputs read once and outputs
//!   written once, as all PEs of a job share one device on lavapipe (on several
//!   GPUs both sums run over devices that do not share memory). A row in
//!   place (`--in-place`) also meets copies onto their own source
//!   (`floors::Footing::InPlace`).
//! - Data: on a CPU device (llvmpipe) the sources and dests are written once
//!   before the sweep (`floors::touch`): rows on heap pages nobody had
//!   written read up to twice the roofline.
//! - `wrong` (with `--check`): one more call per size on pattern data; the number
//!   of destination elements, summed over the team, that differ from a host
//!   reference.
//! - Floors, measured in the same run: one empty submit-and-wait (what every host
//!   call pays at least) and a bare atomic counter barrier among the team's
//!   processes on the device (no library code), the floor of the device barriers.
//!
//! Output (on the team's first PE): a few lines on the run (the last counts
//! the sizes to measure), then the table on stdout, a row as soon as its
//! size is measured, with `--csv` and `--json` written row by row too (see
//! `report::Stream`); a failed sweep keeps the rows before the failure and exits
//! non-zero. At the end every row's roofline_pct is judged again against its
//! footprint's best copy over the whole run (`report::Stream::rejudge`; the
//! CSV and JSON rewritten): the roofline keeps each footprint's best so far,
//! so an early row had met a lower bar than a later one of the same
//! footprint. Then come what was skipped, the summary (`report::summary`: a
//! line per collective, the floors, the counts) and the `--plot` files.

mod compare;
mod device;
mod elem;
mod floors;
mod metrics;
mod report;
mod rma;
mod ucc;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::Parser;
use device::{DeviceArgs, Scope};

/// How a row's collective is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The blocking host call.
    Host,
    /// A device kernel in a scope.
    Device(Scope),
    /// Queued collectives: a chain of `--chain` in one submission
    /// (`Context::post_batch`), timed on the host from the post to the end.
    Queue,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Host => "host",
            Form::Device(s) => s.name(),
            Form::Queue => "queue",
        }
    }

    fn device(self) -> Option<Scope> {
        match self {
            Form::Device(s) => Some(s),
            _ => None,
        }
    }
}
use elem::Elem;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use report::{Floors, Row, Stream};
use vkshmem::{Context, DeviceKernel, ReduceOp, SymBuffer, SymSlice, Team, TeamConfig};

/// The most calls `--warmup-ms` adds to a row's warm-up (a host call takes
/// microseconds at least, so this caps the warm-up, not the time asked for).
const WARMUP_MAX_CALLS: u64 = 100_000;

/// How the line before the table that counts the sizes to measure begins
/// (`cargo xtask bench` sizes its progress bar from it).
const SWEEP_HEAD: &str = "sweep:";

const COLLECTIVES: [&str; 8] = [
    "barrier",
    "sync",
    "broadcast",
    "collect",
    "fcollect",
    "alltoall",
    "alltoalls",
    "reduce",
];

/// Sweeps of vkshmem's collectives (run it under `vkshmrun -n N`).
#[derive(Parser, Debug, Clone)]
#[command(name = "vkshmem-bench", version, args_override_self = true)]
struct Args {
    /// Collectives: a comma-separated list of barrier, sync, broadcast, collect,
    /// fcollect, alltoall, alltoalls, reduce, and UCC's (host form only)
    /// allreduce, reduce_to_root, gather, gatherv, scatter, scatterv,
    /// reduce_scatter, reduce_scatterv, allgatherv, alltoallv, inscan,
    /// exscan; or `all`.
    #[arg(long, default_value = "all")]
    collective: String,
    /// Forms: a comma-separated list of host, thread, work_group, work_groups
    /// (every workgroup the device runs at once), queue; or
    /// `all`.
    #[arg(long, default_value = "host")]
    scope: String,
    /// Queued collectives per submission in the queue scope (the per-call
    /// time is the chain's over its length).
    #[arg(long, default_value_t = 100)]
    chain: u32,
    /// Element type (ishmem's TYPENAMEs): float, double, int8, int16, int32,
    /// int64, uint8, uint16, uint32, uint64 (also int, long, uint, ulong, size);
    /// and the half-precision float16 and bfloat16 (reductions in f32, each
    /// step rounded to the type).
    #[arg(long = "type", default_value = "float")]
    ty: String,
    /// Reduction operation: and, or, xor (integer types), max, min, sum, prod.
    #[arg(long, default_value = "sum")]
    op: String,
    /// The team: `world`, or `START:STRIDE:SIZE` (a strided split of WORLD).
    #[arg(long, default_value = "world")]
    team: String,
    /// Broadcast root (a PE number in the team).
    #[arg(long, default_value_t = 0)]
    root: u32,
    /// Smallest size in bytes (K/M/G suffixes).
    #[arg(long, default_value = "8", value_parser = metrics::parse_bytes)]
    min_bytes: u64,
    /// Largest size in bytes.
    #[arg(long, default_value = "1M", value_parser = metrics::parse_bytes)]
    max_bytes: u64,
    /// Each size is this many times the last.
    #[arg(long, default_value_t = 4)]
    step_factor: u64,
    /// Timed calls per size.
    #[arg(long, default_value_t = 20)]
    iters: u32,
    /// Untimed calls per size first.
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Host forms of the SHMEM collectives: after the `--warmup` calls, more
    /// untimed calls until about
    /// this many milliseconds of warm-up (the count agreed by every PE from
    /// the slowest PE's warm-up calls). A GPU's driver lowers its clocks when
    /// it idles for half a second, as it does while a job sets up, and a few
    /// calls do not bring them back, so a job's first rows would run at a
    /// fraction of the clock (benches/RESULTS.md, "H200 clock at job start").
    /// 0: none.
    #[arg(long, default_value_t = 0)]
    warmup_ms: u32,
    /// Host forms: time each row's calls phase by phase
    /// (`Context::set_phase_times`) and print, after the row, PE 0's
    /// medians: the entry meeting, the run, each submission's recording,
    /// `vkQueueSubmit`, fence wait and GPU time (and, where the device has
    /// calibrated timestamps, the wait's launch before the GPU's first
    /// command and signal after its last), the closing meeting, the whole
    /// call. Every submission then also takes GPU timestamps (a little time
    /// of their own in the row).
    #[arg(long)]
    phases: bool,
    /// Invocations of each workgroup that calls the work_group(s) forms. 0:
    /// 256 on a GPU; on a CPU driver, for each collective, the smallest of 16,
    /// 32 and 64 whose loop budget its largest row fits
    /// (`device::cpu_workgroup_size`:
    /// llvmpipe runs a workgroup on one thread, 8 invocations per SIMD row,
    /// and every row runs the straight-line code of the library's waits,
    /// masked rows included, so each row adds to every call's time;
    /// benches/RESULTS.md, "Workgroup of 16").
    #[arg(long, default_value_t = 0)]
    workgroup_size: u32,
    /// Workgroups of the work_groups scope's dispatches (at most
    /// `Context::resident_workgroups`). 0: all of them on a GPU; on a CPU
    /// driver (llvmpipe) its threads over the PEs sharing the device, at
    /// least 1 (more workgroups than cores spin while others work).
    #[arg(long, default_value_t = 0)]
    groups: u32,
    /// Check every size against a host reference (the `wrong` column).
    #[arg(long)]
    check: bool,
    /// Write the rows as CSV, each appended as soon as it is measured.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Write the floors and rows as JSON, rewritten whole (atomically) after
    /// each row; `complete` is true once the sweep has finished.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Plot latency and bus bandwidth against size, a panel of each per
    /// form (PNG or SVG by extension; repeat the option for both).
    #[arg(long, action = clap::ArgAction::Append)]
    plot: Vec<std::path::PathBuf>,
    /// The one-sided sweep instead (put, get, fetch_add, put_signal round
    /// trip between PE 0 and `--peer`; scopes host, thread, work_group; see
    /// `rma.rs`). Takes the size, iteration, scope and CSV options.
    #[arg(long)]
    rma: bool,
    /// Place every source and dest this many bytes past a 64-byte boundary
    /// (a multiple of the element size, below 64): the collectives on
    /// objects that are not 16-byte aligned.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Skip the copy roofline (its kernels and its trials at every row's
    /// footprint): for runs that check results only, such as the tests;
    /// roofline_pct and roofline_GBps are then left empty.
    #[arg(long)]
    no_roofline: bool,
    /// In place: for reduce, the dest is the source; for allgatherv, each
    /// member's source is its own part of the dest (MPI_IN_PLACE). The
    /// other collectives are unchanged.
    #[arg(long)]
    in_place: bool,
    /// No sweep: the bus bandwidth table of a sweep's CSV (OURS) beside
    /// Open MPI's CSV of the same sweep (benches/mpi/mpi_bench.c), and with
    /// `--plot` one plot of both (`cargo xtask bench --compare-mpi` runs it).
    #[arg(long, num_args = 2, value_names = ["OURS", "MPI"])]
    compare: Option<Vec<std::path::PathBuf>>,
    /// The target PE of `--rma` (default: the last PE).
    #[arg(long)]
    peer: Option<u32>,
    /// Run a whole job of this many PEs as threads of this process
    /// (`vkshmem::run_threads`) instead of the one PE vkshmrun started.
    #[arg(long, value_name = "N")]
    threads: Option<u32>,
    /// Write a trace of every PE's calls to this file (Chrome trace-event
    /// JSON for Perfetto, as `VKSHMEM_TRACE`); PE 0 merges the PEs' parts.
    #[arg(long, value_name = "PATH")]
    trace: Option<std::path::PathBuf>,
}

/// Runs `body` on this program's PEs (the one vkshmrun started, or with
/// `--threads N` a job of N threads) and finalizes each. With `--trace`,
/// the job's trace is merged at the end (by `run_threads`, or by PE 0).
fn on_pes(
    threads: Option<u32>,
    body: impl Fn(&Context) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<()> {
    match threads {
        Some(n) => {
            vkshmem::run_threads(n, |ctx| Ok(body(ctx)?))?;
        }
        None => {
            let ctx = vkshmem::init()?;
            let (me, npes) = (ctx.my_pe(), ctx.n_pes());
            body(&ctx)?;
            // Finalize drops this PE's runtime: its part of the trace is written.
            ctx.finalize()?;
            if let (0, Some(path)) = (me, vkshmem::trace::path()) {
                let wait = std::time::Duration::from_secs(30);
                vkshmem::trace::merge_when_written(&path, npes, wait)?;
            }
        }
    }
    Ok(())
}

/// One PE's side of the run: its buffers, team and kernels, shared by every
/// sweep.
struct Bench<'a> {
    ctx: &'a Context,
    args: &'a Args,
    /// The copy kernel's bandwidth at each row's footprint (`None` with
    /// `--no-roofline`).
    roofline: Option<floors::Roofline>,
    src: SymBuffer<u8>,
    dst: SymBuffer<u8>,
    /// This PE's wrong count, then (after a sum over WORLD) everyone's.
    wrong: SymBuffer<u32>,
    /// A flag agreed over WORLD (a maximum): whether some PE's row beat its
    /// roofline.
    flag: SymBuffer<u32>,
    /// A host row's call times, combined over WORLD ([`Bench::slowest_per_call`]).
    times: SymBuffer<u32>,
    team: Team,
    /// Some member is on another device (staged transport): device rows go through the proxy.
    spans_devices: bool,
    /// The team's members, WORLD numbers in team order.
    members: Vec<u32>,
    /// This PE's index in the team.
    me: Option<usize>,
    /// The driver caps loop iterations (lavapipe).
    capped: bool,
    /// Invocations of one SIMD row where the driver caps loops (lavapipe's
    /// subgroup size; 0 elsewhere): a workgroup of at most this many is
    /// linked without barriers and its vec4 loops unroll
    /// (`LibraryConfig::row_lanes`).
    row: u32,
    /// More PEs than CPU cores.
    oversubscribed: bool,
    /// Workgroups of the work_groups scope's dispatches (`--groups`).
    groups: u32,
    /// Compiled device kernels by collective, type, op, scope and workgroup size.
    kernels: RefCell<HashMap<String, Arc<DeviceKernel>>>,
    /// The sizes skipped (one call does not fit the driver's loop cap), for the
    /// summary.
    skipped: RefCell<Vec<String>>,
    /// Whether device and queue forms may run: their waits cross processes
    /// on this device (`Context::device_waits_across_processes`).
    device_waits: bool,
    /// Sizes done out of all; drawn on the reporter's stderr only.
    progress: ProgressBar,
}

impl Bench<'_> {
    /// Runs `f` `--warmup` times untimed (`member`: whether this PE calls
    /// `f`; every PE of WORLD calls this).
    /// Then, with `--warmup-ms`, as many more as make about that many
    /// milliseconds at the slowest PE's pace: the count is agreed over WORLD
    /// (a u32 reduction of each PE's nanoseconds per call), so every member
    /// makes the same calls. Collective over WORLD.
    fn warm_up(
        &self,
        member: bool,
        mut f: impl FnMut() -> vkshmem::Result<()>,
    ) -> anyhow::Result<()> {
        let t = Instant::now();
        if member {
            for _ in 0..self.args.warmup {
                f()?;
            }
        }
        if self.args.warmup_ms == 0 {
            return Ok(());
        }
        let calls = self.args.warmup.max(1);
        if member && self.args.warmup == 0 {
            f()?;
        }
        let per_call_ns = if member {
            (t.elapsed().as_nanos() / calls as u128).clamp(1, u32::MAX as u128) as u32
        } else {
            0
        };
        let slowest = self.slowest_ns(per_call_ns)?.max(1);
        let want_ns = u64::from(self.args.warmup_ms) * 1_000_000;
        let more = (want_ns / u64::from(slowest)).saturating_sub(u64::from(calls));
        if member {
            for _ in 0..more.min(WARMUP_MAX_CALLS) {
                f()?;
            }
        }
        Ok(())
    }

    /// The largest of every PE's `mine` (collective over WORLD).
    fn slowest_ns(&self, mine: u32) -> anyhow::Result<u32> {
        self.times.write(&[mine])?;
        let s = self.times.slice(0..1)?;
        self.ctx.reduce(Team::WORLD, ReduceOp::Max, &s, &s, 1)?;
        Ok(self.times.to_vec()?[0])
    }

    /// Times `iters` calls of `f` on the host, in seconds per call (after
    /// [`Bench::warm_up`]).
    fn time_host(&self, mut f: impl FnMut() -> vkshmem::Result<()>) -> anyhow::Result<Vec<f64>> {
        let mut v = Vec::with_capacity(self.args.iters as usize);
        for _ in 0..self.args.iters {
            let t = Instant::now();
            f()?;
            v.push(t.elapsed().as_secs_f64());
        }
        Ok(v)
    }

    /// Each call's time on the slowest PE: `mine` (this PE's times, zeros
    /// on a PE outside the team) combined by an element-wise maximum over
    /// WORLD. A call is over for the job when its last member returns, and
    /// the roofline times every PE's copies over their common span: a row
    /// timed by one PE's clock read faster than that where the PEs' calls
    /// overlapped less than the roofline's copies, and rows read above 100 %
    /// (benches/RESULTS.md, "Slowest-PE times"). The times travel as the bits
    /// of f32s (non-negative f32s order as their bits do), so the reduction is
    /// a u32 one, which every device has (f64 needs `shaderFloat64`).
    /// Collective over WORLD.
    fn slowest_per_call(&self, mine: &[f64]) -> anyhow::Result<Vec<f64>> {
        let n = mine.len().min(self.times.len());
        if n == 0 {
            return Ok(mine.to_vec());
        }
        let bits: Vec<u32> = mine[..n]
            .iter()
            .map(|&t| (t.max(0.0) as f32).to_bits())
            .collect();
        self.times.write(&bits)?;
        let s = self.times.slice(0..n)?;
        self.ctx.reduce(Team::WORLD, ReduceOp::Max, &s, &s, n)?;
        let v = self.times.to_vec()?;
        Ok(v[..n]
            .iter()
            .map(|&b| f64::from(f32::from_bits(b)))
            .collect())
    }

    /// Invocations of the workgroups that call `coll`'s work_group(s) forms:
    /// `--workgroup-size`, else 256 on a GPU, or on a CPU driver the fewest
    /// with which the sweep's largest call of `coll` fits the loop budget
    /// (`device::cpu_workgroup_size`; its waits long where PEs share cores or
    /// go through a proxy, as `device::calls_per_dispatch` counts them at each
    /// row). Alike on every PE (agreed arguments and flags).
    fn workgroup_size(&self, coll: &str) -> u32 {
        if self.args.workgroup_size != 0 {
            return self.args.workgroup_size;
        }
        let long_waits = self.oversubscribed || self.spans_devices;
        let n = self.members.len() as u64;
        device::cpu_workgroup_size(coll, self.args.max_bytes, n, long_waits, self.row)
    }

    /// The device kernel of `coll` in `scope` (compiled once, then cached).
    fn kernel<T: Elem>(
        &self,
        coll: &str,
        op: ReduceOp,
        scope: Scope,
    ) -> anyhow::Result<Arc<DeviceKernel>> {
        let wg = self.workgroup_size(coll);
        let key = format!("{coll}_{}_{}_{}_{wg}", T::NAME, op.name(), scope.name());
        if let Some(k) = self.kernels.borrow().get(&key) {
            return Ok(k.clone());
        }
        let src = device::kernel_source::<T>(coll, op, scope, wg);
        let k = self
            .ctx
            .device_kernel(&src, &format!("bench_{key}"))
            .with_context(|| format!("compiling the {} kernel of {coll}", scope.name()))?;
        self.kernels.borrow_mut().insert(key, k.clone());
        Ok(k)
    }

    /// The sweep of one collective in one form with element type `T`: each
    /// size's row goes to `out` as soon as it is measured.
    fn run<T: Elem>(
        &self,
        coll: &str,
        op: ReduceOp,
        form: Form,
        out: &mut Stream,
    ) -> anyhow::Result<()> {
        let ctx = self.ctx;
        let scope = form.device();
        if (coll == "reduce" || ucc::takes_op(coll))
            && !T::BITWISE
            && matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
        {
            bail!(
                "--op {}: and, or and xor take integer types, not {}",
                op.name(),
                T::NAME
            );
        }
        if let Some(why) = no_rows(coll, form, self.spans_devices, self.device_waits) {
            // Listed once at the end; the progress bar's total left it out.
            self.skip(why, 0);
            return Ok(());
        }
        let n = self.members.len() as u32;
        let es = std::mem::size_of::<T>() as u64;
        let scope_name = form.name();
        let kernel = scope.map(|s| self.kernel::<T>(coll, op, s)).transpose()?;
        let groups = match scope {
            Some(Scope::WorkGroups) => self.groups,
            _ => 1,
        };
        let nth = match scope {
            Some(Scope::WorkGroup) => self.workgroup_size(coll) as u64,
            Some(Scope::WorkGroups) => self.workgroup_size(coll) as u64 * groups as u64,
            _ => 1,
        };
        // One size: measured, its row pushed; an error names the size.
        let mut one = |bytes: u64| -> anyhow::Result<()> {
            self.progress
                .set_message(format!("{coll} {scope_name} {bytes} B"));
            let count = (bytes / es) as usize;
            let off = self.args.offset;
            let s: SymSlice<T> = SymSlice::from_raw(self.src.offset() + off, count * n as usize);
            // In place (reductions): the dest is the source.
            let dst_at = if self.in_place(coll) && coll == "reduce" {
                self.src.offset()
            } else {
                self.dst.offset()
            };
            let d: SymSlice<T> = SymSlice::from_raw(dst_at + off, count * n as usize);
            // In place (allgatherv): the source is this member's part of the
            // dest.
            let s = match (self.in_place(coll) && coll == "allgatherv", self.me) {
                (true, Some(my)) => {
                    let (at, c) = ucc::part_of(count, n as usize, my);
                    SymSlice::from_raw(d.offset() + at as u64 * es, c)
                }
                _ => s,
            };
            // Objects past the first 4 GiB of the heap (large rows on GPUs
            // with big heaps) where the call's kernels take byte addresses
            // (device and queued forms, and host calls with a piece off
            // whole words, which take the generic kernel): skipped and
            // listed, not the sweep's end. Host calls on objects in whole
            // words, placed alike off 16-byte alignment, bind them anywhere
            // (the wide kernels).
            let end = self.src.offset().max(dst_at) + off + bytes * n as u64;
            let anywhere = form == Form::Host && off % 4 == 0 && bytes % 4 == 0;
            if end > vkshmem::MAX_DEVICE_BYTE && !anywhere {
                self.skip(format!(
                    "{coll} {scope_name} {bytes} B: its objects end at heap byte {end}, past the first 4 GiB that this form's kernels address"
                ), 1);
                return Ok(());
            }
            let per_dispatch = match form {
                Form::Host => self.args.iters,
                Form::Queue => self.args.chain.max(1),
                Form::Device(_) => {
                    // A team that spans devices: each wait lasts a proxy
                    // round trip, budgeted as long waits.
                    let vec4 = matches!(scope, Some(Scope::WorkGroup | Scope::WorkGroups));
                    let unroll = device::vec4_unroll(self.workgroup_size(coll), self.row);
                    let data = device::data_iters(coll, bytes, n as u64, nth, vec4, unroll);
                    match device::calls_per_dispatch(
                        self.capped,
                        self.oversubscribed || self.spans_devices,
                        data,
                        self.args.iters,
                    ) {
                        Some(k) => k,
                        None => {
                            self.skip(format!(
                                "{coll} {scope_name} {bytes} B: one call needs more loop iterations per invocation than this driver allows"
                            ), 1);
                            return Ok(());
                        }
                    }
                }
            };
            let member = self.me.is_some();
            let team = self.team;
            let root = self.args.root;
            // One call (host), or `k` calls in one dispatch (device): the GPU time.
            let call = |k: u32| -> vkshmem::Result<Option<f64>> {
                if let Some(kernel) = &kernel {
                    let a = DeviceArgs {
                        team: team.device_handle(),
                        dest: d.device_byte_addr()?,
                        source: s.device_byte_addr()?,
                        nelems: count as u32,
                        root,
                        iters: if member { k } else { 0 },
                    };
                    let t =
                        ctx.launch_timed(kernel, [groups, 1, 1], &[], bytemuck::bytes_of(&a))?;
                    return Ok(Some(t.as_secs_f64()));
                }
                if !member {
                    return Ok(None);
                }
                if ucc::is_ucc(coll) && form != Form::Queue {
                    let my = self.me.expect("a member");
                    let n = n as usize;
                    ucc::call(ctx, team, coll, op, root, my, n, &d, &s, count)?;
                    return Ok(None);
                }
                if form == Form::Queue {
                    use vkshmem::Collective as C;
                    let c = match coll {
                        "gather" => C::gather(&d, &s, count, root),
                        "scatter" => C::scatter(&d, &s, count, root),
                        "reduce_scatter" => C::reduce_scatter(op, &d, &s, count),
                        "inscan" => C::sum_inscan(&d, &s, count),
                        "exscan" => C::sum_exscan(&d, &s, count),
                        "barrier" => C::barrier(),
                        "sync" => C::sync(),
                        "broadcast" => C::broadcast(&d, &s, count, root),
                        "collect" => C::collect(&d, &s, count),
                        "fcollect" => C::fcollect(&d, &s, count),
                        "alltoall" => C::alltoall(&d, &s, count),
                        "alltoalls" => C::alltoalls(&d, &s, 1, 1, count),
                        _ => C::reduce(op, &d, &s, count),
                    };
                    let chain = vec![(team, c); k as usize];
                    let t = Instant::now();
                    ctx.post_batch(&chain)?.wait()?;
                    return Ok(Some(t.elapsed().as_secs_f64()));
                }
                match coll {
                    "barrier" => ctx.team_barrier(team)?,
                    "sync" => ctx.team_sync(team)?,
                    "broadcast" => ctx.broadcast(team, &d, &s, count, root)?,
                    "collect" => ctx.collect(team, &d, &s, count)?,
                    "fcollect" => ctx.fcollect(team, &d, &s, count)?,
                    "alltoall" => ctx.alltoall(team, &d, &s, count)?,
                    "alltoalls" => ctx.alltoalls(team, &d, &s, 1, 1, count)?,
                    _ => ctx.reduce(team, op, &d, &s, count)?,
                }
                Ok(None)
            };
            let wrong = if self.args.check && bytes > 0 {
                Some(self.check::<T>(coll, op, count, &|| call(1).map(|_| ()))?)
            } else {
                None
            };
            let mut phases = Vec::new();
            let samples = match form {
                Form::Host => {
                    self.warm_up(member, || call(1).map(|_| ()))?;
                    if self.args.phases {
                        ctx.take_phase_times();
                        ctx.set_phase_times(true);
                    }
                    let mine = if member {
                        self.time_host(|| call(1).map(|_| ()))?
                    } else {
                        vec![0.0; self.args.iters as usize]
                    };
                    if self.args.phases {
                        ctx.set_phase_times(false);
                        phases = ctx.take_phase_times();
                    }
                    let slowest = self.slowest_per_call(&mine)?;
                    if member {
                        slowest
                    } else {
                        Vec::new()
                    }
                }
                Form::Device(_) | Form::Queue => {
                    call(per_dispatch.min(self.args.warmup.max(1)))?;
                    let dispatches = self.args.iters.div_ceil(per_dispatch).max(3);
                    let mut v = Vec::new();
                    for _ in 0..dispatches {
                        if let Some(t) = call(per_dispatch)? {
                            v.push(t / per_dispatch as f64);
                        }
                    }
                    // A device dispatch's time is the slowest PE's, as a host
                    // call's: every PE launches one (the others with no
                    // calls). PE 0's own window missed what its peers had
                    // done before it started: with one call per dispatch (a
                    // loop budget, lavapipe) a peer that pushes before its one
                    // sync had filled PE 0's dest already, and rows read
                    // above 100 % of the roofline.
                    if matches!(form, Form::Device(_)) {
                        self.slowest_per_call(&v)?
                    } else {
                        v
                    }
                }
            };
            // Keeps the PEs outside the team in step.
            ctx.barrier_all()?;
            // The copy of the bytes the call must move, on every PE (collective).
            let judged = RowCopy::of(
                coll,
                bytes,
                n,
                form == Form::Host,
                ctx.host_path_max(),
                self.in_place(coll),
            );
            let least = judged.map(|j| j.least);
            let mut roof_bps = match &self.roofline {
                Some(roof) => judged
                    .map(|j| roof.of_row(ctx, j.per_pe, j.host_path, j.footing))
                    .transpose()?,
                None => None,
            };
            let (median_us, min_us, max_us) = metrics::stats_us(&samples);
            // A row faster than the roofline shows that the roofline's
            // trials met a busy moment (the machine is shared): measure it
            // again, up to three times, while some PE's row is above it
            // (agreed over WORLD: the roofline is collective). A row that
            // stays above is reported as it is.
            if let (Some(j), Some(mut r)) = (judged, roof_bps) {
                for _ in 0..3 {
                    let above = median_us > 0.0 && j.least as f64 / (median_us * 1e-6) > r;
                    if over_world(ctx, &self.flag, ReduceOp::Max, u32::from(above))? == 0 {
                        break;
                    }
                    let roof = self.roofline.as_ref().expect("a roofline measured");
                    r = roof.of_row(ctx, j.per_pe, j.host_path, j.footing)?;
                }
                roof_bps = Some(r);
            }
            let factor = metrics::bus_factor(coll, n);
            let algbw =
                factor.map(|_| metrics::algbw_gbps(metrics::nccl_bytes(coll, bytes, n), median_us));
            out.push(Row {
                collective: coll.into(),
                scope: scope_name.into(),
                ty: T::NAME.into(),
                op: if coll == "reduce" || ucc::takes_op(coll) {
                    op.name().into()
                } else if matches!(coll, "inscan" | "exscan") {
                    "sum".into()
                } else {
                    String::new()
                },
                root: if matches!(
                    coll,
                    "broadcast" | "reduce_to_root" | "gather" | "gatherv" | "scatter" | "scatterv"
                ) {
                    root.to_string()
                } else {
                    String::new()
                },
                npes: n,
                bytes,
                count: count as u64,
                median_us,
                min_us,
                max_us,
                algbw,
                busbw: algbw.zip(factor).map(|(a, f)| a * f),
                roofline_pct: least
                    .zip(roof_bps)
                    .filter(|_| median_us > 0.0)
                    .map(|(b, bps)| 100.0 * (b as f64 / bps) / (median_us * 1e-6)),
                roofline_gbps: roof_bps.map(|b| b / 1e9),
                wrong,
            })?;
            if !phases.is_empty() {
                out.println(&report::phases_line(coll, bytes, &phases));
            }
            self.progress.inc(1);
            Ok(())
        };
        for bytes in sweep(self.args, coll, es) {
            one(bytes).with_context(|| format!("{coll} {scope_name} at {bytes} B"))?;
        }
        Ok(())
    }

    /// [`Bench::run`] with the element type named by `--type`.
    fn run_typed(
        &self,
        coll: &str,
        op: ReduceOp,
        form: Form,
        out: &mut Stream,
    ) -> anyhow::Result<()> {
        match self.args.ty.as_str() {
            "float" => self.run::<f32>(coll, op, form, out),
            "double" => self.run::<f64>(coll, op, form, out),
            "int8" => self.run::<i8>(coll, op, form, out),
            "int16" => self.run::<i16>(coll, op, form, out),
            "int32" | "int" => self.run::<i32>(coll, op, form, out),
            "int64" | "long" => self.run::<i64>(coll, op, form, out),
            "uint8" | "uchar" => self.run::<u8>(coll, op, form, out),
            "uint16" | "ushort" => self.run::<u16>(coll, op, form, out),
            "uint32" | "uint" => self.run::<u32>(coll, op, form, out),
            "uint64" | "ulong" | "size" => self.run::<u64>(coll, op, form, out),
            "float16" => self.run::<vkshmem::half::f16>(coll, op, form, out),
            "bfloat16" => self.run::<vkshmem::half::bf16>(coll, op, form, out),
            t => {
                bail!("--type {t:?}: float, double, float16, bfloat16, int8..int64, uint8..uint64")
            }
        }
    }

    /// Every collective in every form, in order; stops at the first error.
    fn sweep_all(
        &self,
        colls: &[&str],
        op: ReduceOp,
        scopes: &[Form],
        out: &mut Stream,
    ) -> anyhow::Result<()> {
        for &coll in colls {
            for &scope in scopes {
                // Its errors name the collective, the form and the size.
                self.run_typed(coll, op, scope, out)?;
            }
        }
        Ok(())
    }

    /// Lists `why` among the skipped (printed at the end) and counts its
    /// `rows` as done in the progress bar.
    fn skip(&self, why: String, rows: usize) {
        self.skipped.borrow_mut().push(why);
        self.progress.inc(rows as u64);
    }

    /// Whether `coll`'s rows run in place (`--in-place`: reduce and
    /// allgatherv).
    fn in_place(&self, coll: &str) -> bool {
        self.args.in_place && matches!(coll, "reduce" | "allgatherv")
    }

    /// One call on pattern data; the number of dest elements, over the whole team,
    /// that differ from the host reference (the same sum on every PE).
    fn check<T: Elem>(
        &self,
        coll: &str,
        op: ReduceOp,
        count: usize,
        call: &dyn Fn() -> vkshmem::Result<()>,
    ) -> anyhow::Result<u64> {
        let ctx = self.ctx;
        let me = ctx.my_pe();
        let n = self.members.len();
        let src: Vec<T> = (0..count * n).map(|i| T::pat(me, i)).collect();
        let off = self.args.offset as usize;
        self.src.write_at(me, off, bytemuck::cast_slice(&src))?;
        let out_len = match coll {
            "broadcast" | "reduce" => count,
            _ => count * n,
        };
        // UCC rows: `None` where the dest keeps its poison.
        let poison: T = bytemuck::pod_read_unaligned(&vec![0xa5u8; std::mem::size_of::<T>()]);
        let es = std::mem::size_of::<T>();
        // In place the dest is the source just written: no poison; for
        // allgatherv, poison but in this member's part, which holds its
        // source.
        let out = if self.in_place(coll) && coll == "reduce" {
            &self.src
        } else {
            self.dst.write_at(me, off, &vec![0xa5u8; out_len * es])?;
            if let (true, Some(my)) = (self.in_place(coll), self.me) {
                let (at, c) = ucc::part_of(count, n, my);
                self.dst
                    .write_at(me, off + at * es, bytemuck::cast_slice(&src[..c]))?;
            }
            &self.dst
        };
        ctx.barrier_all()?;
        call()?;
        let mut wrong = 0u64;
        if let Some(my) = self.me {
            let m = &self.members;
            let root = m[self.args.root as usize];
            let ucc_want = ucc::is_ucc(coll).then(|| {
                ucc::expected::<T>(coll, op, self.args.root as usize, m, my, count)
                    .into_iter()
                    .map(|w| w.unwrap_or(poison))
                    .collect::<Vec<T>>()
            });
            let want: Vec<T> = ucc_want.unwrap_or_else(|| {
                (0..out_len)
                    .map(|k| match coll {
                        "broadcast" => T::pat(root, k),
                        "collect" | "fcollect" => T::pat(m[k / count], k % count),
                        "alltoall" | "alltoalls" => T::pat(m[k / count], my * count + k % count),
                        _ => m[1..]
                            .iter()
                            .fold(T::pat(m[0], k), |a, &p| T::combine(op, a, T::pat(p, k))),
                    })
                    .collect()
            });
            let mut got = vec![T::zeroed(); out_len];
            out.read_at(me, off, bytemuck::cast_slice_mut(&mut got))?;
            wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count() as u64;
        }
        // Every PE's count summed by the host-side reduction over WORLD (no
        // access to another PE's heap: that works on every transport).
        let mine = wrong.min(u32::MAX as u64) as u32;
        Ok(over_world(ctx, &self.wrong, ReduceOp::Sum, mine)? as u64)
    }
}

/// The sizes of one collective's sweep (one row of 0 bytes for barrier and sync).
fn sweep(args: &Args, coll: &str, es: u64) -> Vec<u64> {
    if matches!(coll, "barrier" | "sync") {
        vec![0]
    } else {
        metrics::sizes(args.min_bytes, args.max_bytes, args.step_factor, es)
    }
}

/// Why `coll` has no rows at all in `form`, where it has none: the form
/// does not exist, or this driver cannot run it. Alike on every PE (agreed
/// flags).
fn no_rows(coll: &str, form: Form, spans_devices: bool, device_waits: bool) -> Option<String> {
    if ucc::is_ucc(coll) && form != Form::Host {
        // Device and queue forms: gather, scatter, reduce_scatter, and the
        // scans (not on a team that spans devices).
        let scan = matches!(coll, "inscan" | "exscan");
        let device =
            matches!(coll, "gather" | "scatter" | "reduce_scatter") || (scan && !spans_devices);
        if !device {
            return Some(format!(
                "{coll} {}: no such form (host only{})",
                form.name(),
                if scan && spans_devices {
                    " on a team that spans devices"
                } else {
                    ""
                }
            ));
        }
    }
    if form == Form::Device(Scope::WorkGroups) && matches!(coll, "barrier" | "sync") {
        // No multi-workgroup form: several workgroups of one PE inside the
        // work_group barrier at once is a misuse the library reports.
        return Some(format!(
            "{coll} work_groups: no multi-workgroup form (the work_group row is its form)"
        ));
    }
    if form != Form::Host && !device_waits {
        return Some(format!(
            "{coll} {}: its device waits cross processes, which this driver cannot run (Context::device_waits_across_processes)",
            form.name()
        ));
    }
    None
}

/// The copy a row is judged against, the same during the sweep and in the
/// end-of-run rejudge (their measurements must share keys).
#[derive(Clone, Copy)]
struct RowCopy {
    /// The call's least traffic ([`least_traffic`]), never 0.
    least: u64,
    /// Bytes each PE copies for it (read, and as many written).
    per_pe: u64,
    /// Whether the call may have run on the host (a host call within
    /// `Context::host_path_max`, memcpy through the heap's mapping): its
    /// roofline counts the memcpy.
    host_path: bool,
    /// Where its dest lies: a call in place meets copies in place too.
    footing: floors::Footing,
}

impl RowCopy {
    /// For a call of `coll` with `bytes` per PE on `n` PEs, a host call
    /// where `host_call`, in place where `in_place`; `None` where it moves
    /// nothing measurable.
    fn of(
        coll: &str,
        bytes: u64,
        n: u32,
        host_call: bool,
        host_max: u64,
        in_place: bool,
    ) -> Option<RowCopy> {
        let n = u64::from(n);
        let least = least_traffic(coll, bytes, n).filter(|&b| b > 0)?;
        // The library's measure of a host-path call is each member's
        // source: an alltoall's is a block for every member.
        let source = match coll {
            "alltoall" | "alltoalls" => bytes.saturating_mul(n),
            _ => bytes,
        };
        Some(RowCopy {
            least,
            per_pe: least / (2 * n),
            host_path: host_call && source <= host_max,
            footing: if in_place {
                floors::Footing::InPlace
            } else {
                floors::Footing::Apart
            },
        })
    }
}

/// Bytes that every PE on the device together must at least read and write for
/// one call: each PE reads its inputs once and writes its outputs once.
fn least_traffic(coll: &str, bytes: u64, n: u64) -> Option<u64> {
    match coll {
        // The root reads the source; every PE writes its dest.
        "broadcast" => Some(bytes + n * bytes),
        // Each PE reads its own part and writes the whole result.
        "collect" | "fcollect" => Some(n * (bytes + n * bytes)),
        // Each PE reads its n blocks and writes n blocks.
        "alltoall" | "alltoalls" => Some(n * 2 * n * bytes),
        // Each PE reads its source and writes its dest.
        "reduce" => Some(n * 2 * bytes),
        _ => None,
    }
}

/// `mine` combined with `op` over every PE of WORLD through the one-element
/// buffer `buf` (host-side: works on every transport); the same on every PE.
/// Collective over WORLD.
pub(crate) fn over_world<T: vkshmem::Reduce + Copy>(
    ctx: &Context,
    buf: &SymBuffer<T>,
    op: ReduceOp,
    mine: T,
) -> anyhow::Result<T> {
    buf.write(&[mine])?;
    let s = buf.as_slice();
    ctx.reduce(Team::WORLD, op, &s, &s, 1)?;
    Ok(buf.to_vec()?[0])
}

fn parse_op(s: &str) -> anyhow::Result<ReduceOp> {
    ReduceOp::ALL
        .into_iter()
        .find(|o| o.name() == s)
        .with_context(|| format!("--op {s:?}: one of and, or, xor, max, min, sum, prod"))
}

fn parse_scopes(s: &str) -> anyhow::Result<Vec<Form>> {
    if s == "all" {
        return Ok(vec![
            Form::Host,
            Form::Device(Scope::Thread),
            Form::Device(Scope::WorkGroup),
            Form::Device(Scope::WorkGroups),
            Form::Queue,
        ]);
    }
    s.split(',')
        .map(|x| match x.trim() {
            "host" => Ok(Form::Host),
            "thread" => Ok(Form::Device(Scope::Thread)),
            "work_group" => Ok(Form::Device(Scope::WorkGroup)),
            "work_groups" => Ok(Form::Device(Scope::WorkGroups)),
            "queue" => Ok(Form::Queue),
            other => {
                bail!("--scope {other:?}: host, thread, work_group, work_groups, queue or all")
            }
        })
        .collect()
}

/// `world` or `START:STRIDE:SIZE`: the team and its members in team order.
fn make_team(ctx: &Context, spec: &str) -> anyhow::Result<(Team, Vec<u32>)> {
    if spec == "world" {
        return Ok((Team::WORLD, (0..ctx.n_pes()).collect()));
    }
    let v: Vec<i32> = spec
        .split(':')
        .map(|x| x.trim().parse::<i32>())
        .collect::<Result<_, _>>()
        .ok()
        .filter(|v: &Vec<i32>| v.len() == 3)
        .with_context(|| format!("--team {spec:?}: `world` or START:STRIDE:SIZE"))?;
    let (start, stride, size) = (v[0], v[1], v[2]);
    let team = ctx
        .team_split_strided(Team::WORLD, start, stride, size, &TeamConfig::default())
        .with_context(|| format!("--team {spec}"))?;
    let members = (0..size).map(|i| (start + i * stride) as u32).collect();
    Ok((team.unwrap_or(Team::INVALID), members))
}

/// The element size of a `--type`.
fn elem_size(ty: &str) -> anyhow::Result<u64> {
    Ok(match ty {
        "int8" | "uint8" | "uchar" => 1,
        "int16" | "uint16" | "ushort" | "float16" | "bfloat16" => 2,
        "float" | "int32" | "int" | "uint32" | "uint" => 4,
        "double" | "int64" | "long" | "uint64" | "ulong" | "size" => 8,
        t => bail!("--type {t:?}: float, double, float16, bfloat16, int8..int64, uint8..uint64"),
    })
}

/// The end of the run on the reporter, whether the sweep finished or failed
/// (`error`): the JSON marked complete or failed, the list of what was
/// skipped, the summary of the rows measured ([`report::summary`]) and the
/// plots.
fn finish_report(
    args: &Args,
    out: &Stream,
    floors: &Floors,
    skipped: &[String],
    title: &str,
    error: Option<&str>,
) -> anyhow::Result<()> {
    out.finish(error)?;
    for s in skipped {
        println!("# skipped: {s}");
    }
    let lines = report::summary(out.rows(), floors, skipped.len());
    for (i, line) in lines.iter().enumerate() {
        println!("# {line}");
        if i == 0 && error.is_some() {
            println!("# the sweep failed: the summary covers the rows measured before the error");
        }
    }
    for p in args.plot.iter().filter(|_| !out.rows().is_empty()) {
        report::plot(p, out.rows(), title, report::Layout::ByForm)?;
    }
    Ok(())
}

/// On an error, the PE exits at once, as `main` returning it would, but
/// without running the destructors of its symmetric buffers: each is a
/// collective free, and the other PEs are in some other call (a barrier, a
/// collective), so the free would wait for them forever. The launcher sees
/// the exit and stops the job.
fn main() {
    if let Err(e) = run() {
        eprintln!("Error: {e:?}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.trace {
        // Before any PE starts: each reads it at init.
        std::env::set_var(vkshmem::trace::ENV_TRACE, path);
    }
    if let Some(files) = &args.compare {
        return compare::run(&files[0], &files[1], &args.plot);
    }
    if args.rma {
        let a = rma::RmaArgs {
            peer: args.peer,
            min_bytes: args.min_bytes,
            max_bytes: args.max_bytes,
            step_factor: args.step_factor,
            iters: args.iters,
            warmup: args.warmup,
            scopes: rma::parse_scopes(&args.scope)?,
            csv: args.csv.clone(),
        };
        return on_pes(args.threads, |ctx| rma::run(ctx, &a));
    }
    let op = parse_op(&args.op)?;
    let scopes = parse_scopes(&args.scope)?;
    let known: Vec<&str> = COLLECTIVES.iter().chain(&ucc::UCC).copied().collect();
    let colls: Vec<&str> = if args.collective == "all" {
        known.clone()
    } else {
        args.collective.split(',').map(str::trim).collect()
    };
    if let Some(bad) = colls.iter().find(|c| !known.contains(c)) {
        bail!("--collective {bad:?}: one of {} or all", known.join(", "));
    }
    if args.workgroup_size > 1024 {
        bail!(
            "--workgroup-size {}: 1 to 1024, or 0 for the device's own",
            args.workgroup_size
        );
    }
    let es = elem_size(&args.ty)?;
    if args.offset >= 64 || args.offset % es != 0 {
        bail!(
            "--offset {}: a multiple of the element size ({es} B) below 64",
            args.offset
        );
    }
    // Outputs are checked before the sweep, not found wrong at its end.
    for p in &args.plot {
        report::plot_ready(p)?;
    }
    for p in [&args.csv, &args.json]
        .into_iter()
        .flatten()
        .chain(&args.plot)
    {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) {
            bail!("{}: no such directory", p.display());
        }
    }
    on_pes(args.threads, |ctx| {
        sweep_pe(ctx, &args, &colls, op, &scopes, es)
    })
}

/// One PE's sweep of `colls` in `scopes` (the arguments checked).
fn sweep_pe(
    ctx: &Context,
    args: &Args,
    colls: &[&str],
    op: ReduceOp,
    scopes: &[Form],
    es: u64,
) -> anyhow::Result<()> {
    let mut args = args.clone();
    let (args, colls, scopes) = (&mut args, colls.to_vec(), scopes.to_vec());
    // Kernels still being built in the background would share the CPU with
    // the timed calls.
    ctx.wait_background_builds();
    let (team, members) = make_team(ctx, &args.team)?;
    if args.root as usize >= members.len() {
        bail!("--root {}: the team has {} PEs", args.root, members.len());
    }
    let me = members.iter().position(|&p| p == ctx.my_pe());
    let n = ctx.n_pes() as u64;
    let room = args.max_bytes.max(64) * n + 64;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as u64;
    let capped = ctx.device_info().is_llvmpipe();
    let reporter = members[0] == ctx.my_pe();
    // Launch counts depend on it: every PE takes the first PE's view.
    let flags = ctx.calloc::<u64>(1)?;
    if ctx.my_pe() == 0 {
        flags.write(&[u64::from(n > cores)])?;
    }
    let f = flags.as_slice();
    ctx.broadcast(Team::WORLD, &f, &f, 1, 0)?;
    let oversubscribed = flags.to_vec()?[0] != 0;
    // A team that spans devices: device-scope rows go through the proxy, and
    // the atomic barrier floor (device atomics on the peers' heaps) is left
    // out (the same answer on every PE: some member is elsewhere exactly when
    // the team spans devices).
    let spans_devices = members.iter().any(|&p| {
        ctx.transport(p)
            .map_or(true, |t| t != vkshmem::Transport::Direct)
    });
    if args.workgroup_size == 0 && !capped {
        args.workgroup_size = 256;
    }

    // Copies up to what the largest row must move per PE (read plus write).
    let most = colls
        .iter()
        .filter_map(|c| least_traffic(c, args.max_bytes, n))
        .max()
        .unwrap_or(0)
        / (2 * n);
    // At least 1 MiB (a smaller copy is mostly its launch), at most 16 MiB
    // unless a row needs more: a sweep of small sizes measures small copies.
    let roofline = if args.no_roofline {
        None
    } else {
        Some(floors::Roofline::new(ctx, most.max(1 << 20))?)
    };
    let copy_at = (16 << 20).min(roofline.as_ref().map_or(0, |r| r.cap()));
    let copy_bps = roofline.as_ref().map(|r| r.at(ctx, copy_at)).transpose()?;
    let per_dispatch =
        device::calls_per_dispatch(capped, oversubscribed, 0, args.iters).unwrap_or(1);
    // Device code that waits on the other processes of this device: refused
    // where the driver cannot switch between them while one spins (NVIDIA).
    let device_waits = ctx.device_waits_across_processes();
    let atomic_barrier_us = if spans_devices || !device_waits {
        None
    } else {
        floors::atomic_barrier_us(ctx, &members, args.iters, per_dispatch)?
    };
    // The reporter alone, while the others wait in a barrier (idle, not compiling).
    let empty_submit_us = if reporter {
        floors::empty_submit_us(ctx, args.iters.max(20))?
    } else {
        0.0
    };
    ctx.barrier_all()?;
    // Every PE at once, as the kernel path of a host collective submits.
    let empty_submit_all_us = floors::empty_submit_us(ctx, args.iters.max(20))?;
    ctx.barrier_all()?;
    let one_dispatch_all_us = floors::one_dispatch_us(ctx, args.iters.max(20))?;
    ctx.barrier_all()?;
    // The reporter alone, while the others wait.
    let host_memcpy_bps = if reporter {
        floors::host_memcpy_bps(32 << 20)
    } else {
        0.0
    };
    ctx.barrier_all()?;
    let floors = Floors {
        copy_bps,
        host_memcpy_bps,
        empty_submit_us,
        empty_submit_all_us,
        one_dispatch_all_us,
        atomic_barrier_us,
    };

    // The sizes to measure: every collective's sweep in every form it has
    // here (a size one call cannot fit is found at its turn).
    let total: u64 = colls
        .iter()
        .flat_map(|&c| scopes.iter().map(move |&f| (c, f)))
        .filter(|&(c, f)| no_rows(c, f, spans_devices, device_waits).is_none())
        .map(|(c, _)| sweep(args, c, es).len() as u64)
        .sum();
    if reporter {
        // Printed before the sweep and the progress bar; the table follows, row by
        // row.
        println!(
            "# vkshmem-bench: {} PEs on {}; team {} ({} PEs){}",
            n,
            ctx.device_info().name,
            args.team,
            members.len(),
            if args.offset > 0 {
                format!(
                    "; objects at offset {} B from 64-byte alignment",
                    args.offset
                )
            } else {
                String::new()
            }
        );
        match copy_bps {
            Some(bps) => println!(
                "# roofline: copy kernel {:.2} GB/s at {} KiB per PE (read + write, {}); each row's roofline_pct is against the copy of its own footprint (roofline_GBps in the CSV)",
                bps / 1e9,
                copy_at >> 10,
                if roofline.as_ref().is_some_and(|r| r.gang() > 1) {
                    "every PE's in one launch by PE 0, as the host collectives' one submitter launches; on a GPU, the copy's own time from its timestamps"
                } else {
                    "every PE at once, over their common span"
                }
            ),
            None => println!("# roofline: not measured (--no-roofline)"),
        }
        println!(
            "# {SWEEP_HEAD} {total} sizes to measure ({} collective{}, {} form{})",
            colls.len(),
            if colls.len() == 1 { "" } else { "s" },
            scopes.len(),
            if scopes.len() == 1 { "" } else { "s" },
        );
    }
    let progress = if reporter {
        ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    progress.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    let resident = ctx.resident_workgroups();
    if args.groups > resident {
        bail!(
            "--groups {}: this device runs at most {resident} workgroups of one dispatch at once",
            args.groups
        );
    }
    let groups = match args.groups {
        0 if ctx.device_info().is_llvmpipe() => {
            let sharing = ctx.team_n_pes(Team::SHARED)?.max(1);
            (resident / sharing).max(1)
        }
        0 => resident,
        g => g,
    };
    let bench = Bench {
        device_waits,
        groups,
        ctx,
        args,
        roofline,
        // The small buffers first: collectives address the heap's first
        // 4 GiB (MAX_DEVICE_BYTE), and the bench's own reductions on them
        // must stay there when the large ones reach past it.
        wrong: ctx.calloc::<u32>(1)?,
        flag: ctx.calloc::<u32>(1)?,
        times: ctx.calloc::<u32>(args.iters.max(1) as usize)?,
        src: ctx.malloc::<u8>(room as usize)?,
        dst: ctx.malloc::<u8>(room as usize)?,
        team,
        spans_devices,
        members,
        me,
        capped,
        row: ctx.library_config()?.row_lanes,
        oversubscribed,
        kernels: RefCell::default(),
        skipped: RefCell::default(),
        progress,
    };
    // Every row reads sources that hold data, as a user's call does
    // (`floors::touch`); the check's pattern data (`--check`) overwrites
    // what it uses.
    floors::touch(ctx, &bench.src)?;
    floors::touch(ctx, &bench.dst)?;
    let mut out = Stream::new(
        bench.progress.clone(),
        reporter,
        args.csv.as_deref().filter(|_| reporter),
        args.json
            .as_deref()
            .filter(|_| reporter)
            .map(|p| (p, floors)),
    )?;
    let swept = bench.sweep_all(&colls, op, &scopes, &mut out);
    bench.progress.finish_and_clear();
    if let (Some(roof), true) = (&bench.roofline, reporter) {
        let host_max = ctx.host_path_max();
        let changed = out.rejudge(|r| {
            let j = RowCopy::of(
                &r.collective,
                r.bytes,
                r.npes,
                r.scope == "host",
                host_max,
                bench.in_place(&r.collective),
            )?;
            roof.best_of_row(j.per_pe, j.host_path, j.footing)
        })?;
        if changed > 0 {
            println!("# roofline_pct of {changed} rows judged again against their footprint's best copy over the whole run (the table above printed each against the best so far; the CSV, JSON and summary carry the final values)");
        }
    }
    let reported = if reporter {
        let title = format!("vkshmem-bench: {} PEs on {}", n, ctx.device_info().name);
        let error = swept.as_ref().err().map(|e| format!("{e:#}"));
        let skipped = bench.skipped.borrow();
        finish_report(args, &out, &floors, &skipped, &title, error.as_deref())
    } else {
        Ok(())
    };
    // The sweep's error is the one to report; a failure to write after it too.
    if let (Err(_), Err(e)) = (&swept, &reported) {
        eprintln!("vkshmem-bench: finishing the results: {e:#}");
    }
    swept?;
    reported?;
    // Every symmetric buffer is freed (a collective) before finalize; the
    // rest of `bench` would drop after it.
    let Bench {
        src,
        dst,
        wrong,
        flag,
        times,
        roofline,
        ..
    } = bench;
    drop((src, dst, wrong, flag, times, roofline, flags));
    if team != Team::WORLD && team != Team::INVALID {
        ctx.team_destroy(team)?;
    }
    Ok(())
}
