//! The soak: random sequences of collectives, each checked against the host
//! reference (`cargo xtask soak --minutes N [--pes P]` runs it through vkshmrun).
//!
//! Every PE draws the same sequence from one seeded generator (each call from
//! a generator of its own, seeded by one draw of the run's, so that bounds
//! that differ between PEs cannot make their sequences part): the call (half
//! SHMEM's collectives: broadcast with any root, collect with per-member
//! counts, fcollect, alltoall, alltoalls with strides, every reduction in place
//! or not; half, host form only, UCC's gatherv, scatterv, reduce_scatterv,
//! alltoallv, the sum scans, and one-sided calls on the team: put, get,
//! put_signal with signal_wait_until, concurrent fetch_add; see
//! common/extras.rs), the form (host, or
//! the per-thread or work_group device form), the element type, the operation,
//! the size (0 to `--max-elems`, log-uniform), the team (WORLD, evens, the first
//! three, WORLD reversed, the halves of a split_2d, a 1-PE team) and the
//! alignment. The checking is the conformance harness's (tests/progs/common/
//! harness.rs): poisoned dest, guard bytes, source unchanged, element-by-element
//! host reference.
//!
//! Device kernels cost llvmpipe seconds each to compile, so the device forms use
//! a pool of `--device-kernels` kernels drawn at the start; their arguments
//! (team, addresses, size, root, strides) vary call by call.
//!
//! Each PE prints one line `SOAK {json}` with its counts per collective and form
//! and its wrong elements, and exits non-zero when anything was wrong.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use vkshmem::{ReduceOp, SymBuffer, Team};

#[path = "common/combine.rs"]
mod combine;
#[path = "common/extras.rs"]
mod extras;
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/harness.rs"]
mod harness;
#[path = "common/pes.rs"]
mod pes;
use harness::*;

/// Random collectives, checked, for a while.
#[derive(Parser)]
struct Args {
    /// How long to run (the PEs agree when to stop).
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// The generator's seed: the same on every PE (the same seed replays a run).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many device kernels (collective x form) the device calls draw from;
    /// 0: host forms only. Default: one per 40 seconds of soak, at least one
    /// (each costs llvmpipe seconds per PE to compile).
    #[arg(long)]
    device_kernels: Option<usize>,
    /// Share of the host calls of the data-movement collectives made as queued
    /// collectives instead (`Context::post` + `wait`; reductions stay host
    /// calls, so that few queue kernels need compiling).
    #[arg(long, default_value_t = 0.0)]
    queued: f64,
    /// Largest element count of one call (per member for the gathering kinds).
    #[arg(long, default_value_t = 16384)]
    max_elems: usize,
    /// Run a whole job of this many PEs as threads of this process
    /// (`common/pes.rs`) instead of the one PE vkshmrun started.
    #[arg(long)]
    threads: Option<u32>,
}

/// The element types of the soak, with what the dispatch needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

const TYPES: [Ty; 10] = [
    Ty::I8,
    Ty::U8,
    Ty::I16,
    Ty::U16,
    Ty::I32,
    Ty::U32,
    Ty::I64,
    Ty::U64,
    Ty::F32,
    Ty::F64,
];

impl Ty {
    fn size(self) -> usize {
        match self {
            Ty::I8 | Ty::U8 => 1,
            Ty::I16 | Ty::U16 => 2,
            Ty::I32 | Ty::U32 | Ty::F32 => 4,
            Ty::I64 | Ty::U64 | Ty::F64 => 8,
        }
    }
    fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
    /// The harness's name of the type (`std::any::type_name`).
    fn rust(self) -> &'static str {
        match self {
            Ty::I8 => "i8",
            Ty::U8 => "u8",
            Ty::I16 => "i16",
            Ty::U16 => "u16",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::I64 => "i64",
            Ty::U64 => "u64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }
}

/// What a drawn call does: a SHMEM collective (any form), or one of UCC's
/// collectives or the one-sided calls (host form, `extras`).
#[derive(Debug, Clone, Copy)]
enum What {
    Shmem(Coll),
    Gatherv(u32),
    Scatterv(u32),
    ReduceScatterv(ReduceOp),
    Alltoallv,
    /// Inclusive (true) or exclusive sum scan.
    Scan(bool),
    Rma,
}

/// One drawn call.
#[derive(Debug, Clone, Copy)]
struct Call {
    what: What,
    ty: Ty,
    n: usize,
    in_place: bool,
}

impl Call {
    fn shmem(coll: Coll, ty: Ty, n: usize, in_place: bool) -> Call {
        Call {
            what: What::Shmem(coll),
            ty,
            n,
            in_place,
        }
    }

    fn name(&self) -> &'static str {
        match self.what {
            What::Shmem(Coll::Broadcast(_)) => "broadcast",
            What::Shmem(Coll::Fcollect) => "fcollect",
            What::Shmem(Coll::Collect) => "collect",
            What::Shmem(Coll::Alltoall) => "alltoall",
            What::Shmem(Coll::Alltoalls(..)) => "alltoalls",
            What::Shmem(Coll::Reduce(_)) => "reduce",
            What::Gatherv(_) => "gatherv",
            What::Scatterv(_) => "scatterv",
            What::ReduceScatterv(_) => "reduce_scatterv",
            What::Alltoallv => "alltoallv",
            What::Scan(true) => "sum_inscan",
            What::Scan(false) => "sum_exscan",
            What::Rma => "rma",
        }
    }
}

/// Runs `call` through the harness with the element type chosen at run time.
fn run_typed<T: Elem>(
    h: &mut Harness,
    tc: &TeamCase,
    c: Call,
    words: &SymBuffer<u64>,
) -> anyhow::Result<()> {
    match c.what {
        What::Shmem(Coll::Broadcast(root)) => h.broadcast::<T>(tc, c.n, root),
        What::Shmem(Coll::Fcollect) => h.fcollect::<T>(tc, c.n),
        What::Shmem(Coll::Collect) => h.collect::<T>(tc, c.n),
        What::Shmem(Coll::Alltoall) => h.alltoall::<T>(tc, c.n),
        What::Shmem(Coll::Alltoalls(dst, sst)) => h.alltoalls::<T>(tc, c.n, dst, sst),
        What::Shmem(Coll::Reduce(op)) => h.reduce::<T>(tc, op, c.n, c.in_place),
        What::Gatherv(root) => extras::gatherv::<T>(h, tc, c.n, root),
        What::Scatterv(root) => extras::scatterv::<T>(h, tc, c.n, root),
        What::ReduceScatterv(op) => extras::reduce_scatterv::<T>(h, tc, c.n, op),
        What::Alltoallv => extras::alltoallv::<T>(h, tc, c.n),
        What::Scan(inclusive) => extras::scan::<T>(h, tc, c.n, inclusive, c.in_place),
        What::Rma => extras::rma::<T>(h, tc, c.n, words),
    }
}

fn run(h: &mut Harness, tc: &TeamCase, c: Call, words: &SymBuffer<u64>) -> anyhow::Result<()> {
    match c.ty {
        Ty::I8 => run_typed::<i8>(h, tc, c, words),
        Ty::U8 => run_typed::<u8>(h, tc, c, words),
        Ty::I16 => run_typed::<i16>(h, tc, c, words),
        Ty::U16 => run_typed::<u16>(h, tc, c, words),
        Ty::I32 => run_typed::<i32>(h, tc, c, words),
        Ty::U32 => run_typed::<u32>(h, tc, c, words),
        Ty::I64 => run_typed::<i64>(h, tc, c, words),
        Ty::U64 => run_typed::<u64>(h, tc, c, words),
        Ty::F32 => run_typed::<f32>(h, tc, c, words),
        Ty::F64 => run_typed::<f64>(h, tc, c, words),
    }
}

/// A size from 0 to `max`, log-uniform, so that small sizes (and 0, 1) come up
/// as often as large ones.
fn size(rng: &mut StdRng, max: usize) -> usize {
    if max == 0 {
        return 0;
    }
    let bits = usize::BITS - max.leading_zeros();
    let top = 1usize << rng.random_range(0..=bits);
    rng.random_range(0..=top.min(max))
}

fn pick<T: Copy>(rng: &mut StdRng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// A host-form call on a team of `members` PEs.
fn host_call(rng: &mut StdRng, members: usize, max: usize) -> Call {
    let ty = pick(rng, &TYPES);
    let per_member = (max / members).max(1);
    let ops: Vec<ReduceOp> = ReduceOp::ALL
        .into_iter()
        .filter(|op| !(op.bitwise() && ty.float()))
        .collect();
    let root = rng.random_range(0..members as u32);
    // Half SHMEM's collectives, half UCC's and the one-sided calls.
    if rng.random_bool(0.5) {
        let what = match rng.random_range(0..7) {
            0 => What::Gatherv(root),
            1 => What::Scatterv(root),
            2 => What::ReduceScatterv(pick(rng, &ops)),
            3 => What::Alltoallv,
            4 => What::Scan(true),
            5 => What::Scan(false),
            _ => What::Rma,
        };
        return Call {
            what,
            ty,
            n: size(rng, per_member),
            in_place: rng.random_bool(0.5),
        };
    }
    let (coll, n) = match rng.random_range(0..6) {
        0 => (
            Coll::Broadcast(rng.random_range(0..members as u32)),
            size(rng, max),
        ),
        1 => (Coll::Collect, size(rng, per_member)),
        2 => (Coll::Fcollect, size(rng, per_member)),
        3 => (Coll::Alltoall, size(rng, per_member)),
        4 => (
            Coll::Alltoalls(rng.random_range(1..=3), rng.random_range(1..=3)),
            size(rng, (per_member / 3).min(4096)),
        ),
        _ => (Coll::Reduce(pick(rng, &ops)), size(rng, max)),
    };
    Call::shmem(coll, ty, n, rng.random_bool(0.5))
}

/// A device-form call of the kernel `which` (see `device_kernel_source`): the
/// collective and type that the harness maps to that kernel.
fn device_call(rng: &mut StdRng, which: u32, members: usize, max: usize) -> Call {
    let per_member = (max / members).max(1);
    let any_but = |rng: &mut StdRng, not: Ty| loop {
        let t = pick(rng, &TYPES);
        if t != not {
            break t;
        }
    };
    let root = rng.random_range(0..members as u32);
    let strides = Coll::Alltoalls(rng.random_range(1..=3), rng.random_range(1..=3));
    let (coll, ty, n) = match which {
        0 => (Coll::Broadcast(root), any_but(rng, Ty::I32), size(rng, max)),
        1 => (Coll::Collect, pick(rng, &TYPES), size(rng, per_member)),
        2 => (Coll::Fcollect, any_but(rng, Ty::I16), size(rng, per_member)),
        3 => (Coll::Alltoall, pick(rng, &TYPES), size(rng, per_member)),
        4 => (strides, Ty::U64, size(rng, per_member / 3)),
        5 => (strides, Ty::U8, size(rng, per_member / 3)),
        6 => (Coll::Broadcast(root), Ty::I32, size(rng, max)),
        7 => (Coll::Fcollect, Ty::I16, size(rng, per_member)),
        r => {
            let (rust, _, op) = DEVICE_REDUCTIONS[r as usize - 8];
            let ty = TYPES
                .into_iter()
                .find(|t| t.rust() == rust)
                .expect("a soak type");
            (Coll::Reduce(op), ty, size(rng, max))
        }
    };
    Call::shmem(coll, ty, n, rng.random_bool(0.5))
}

/// How many device kernels `device_kernel_source` knows.
const DEVICE_KERNELS: u32 = 8 + DEVICE_REDUCTIONS.len() as u32;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    pes::run(|ctx| soak(ctx, &args))
}

/// One PE's soak.
fn soak(ctx: &vkshmem::Context, args: &Args) -> anyhow::Result<()> {
    let me = ctx.my_pe();
    let llvmpipe = ctx.device_info().is_llvmpipe();
    let max = args.max_elems.max(1);
    // Room for the largest call: a gathering kind's n * members elements of 8
    // bytes, alltoalls' strided span, plus the alignment shift.
    let mut h = Harness::new(ctx, max * 8 * 3 + 64)?;
    let cases = teams(ctx)?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    // The device pool: distinct (kernel, form, workgroup size) triples. On
    // lavapipe the work_group(s) forms take one SIMD row (linked without
    // barriers, `LibraryConfig::row_lanes`) or 64 invocations (with them).
    let row = ctx.device_info().subgroup_size;
    let sizes: &[u32] = if llvmpipe && row > 0 {
        &[row, 64]
    } else {
        &[64]
    };
    let mut pool: Vec<(u32, Form, u32)> = Vec::new();
    let want = args
        .device_kernels
        .unwrap_or((args.seconds / 40.0).ceil().max(1.0) as usize)
        .min(3 * DEVICE_KERNELS as usize);
    while pool.len() < want {
        let form = pick(&mut rng, &[Form::Thread, Form::WorkGroup, Form::WorkGroups]);
        let group = if form == Form::Thread {
            64
        } else {
            pick(&mut rng, sizes)
        };
        let k = (rng.random_range(0..DEVICE_KERNELS), form, group);
        if !pool.contains(&k) {
            pool.push(k);
        }
    }
    let (go_src, go) = (ctx.calloc::<u32>(1)?, ctx.calloc::<u32>(1)?);
    // The one-sided calls' counter and signal.
    let words = ctx.calloc::<u64>(2)?;
    let started = Instant::now();
    let limit = Duration::from_secs_f64(args.seconds.max(0.0));
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0u32.. {
        // Every 4 calls, PE 0 says whether to go on (the PEs' clocks differ; the
        // sequence of calls must not).
        if i % 4 == 0 {
            if me == 0 {
                go_src.write(&[u32::from(started.elapsed() < limit)])?;
            }
            ctx.broadcast(Team::WORLD, &go.as_slice(), &go_src.as_slice(), 1, 0)?;
            if go.to_vec()?[0] == 0 {
                break;
            }
        }
        // Each call draws from a generator of its own, seeded by one draw of
        // the run's: a call's bounds depend on the PE (a half of the
        // split_2d has 2 members on one PE and 1 on another), and a uniform
        // draw rejects and draws again at rates that depend on its bound, so
        // drawing them from the run's generator let the PEs' sequences part
        // (seed 1795789735025275063 on 3 PEs: at call 10710 a collect's size,
        // drawn under 8192 on PE 0 and under 16384 on PE 2, took different
        // numbers of draws; from the next call on the PEs made different
        // calls, and PE 2's queued fcollect waited for a peer that never came
        // until the driver's loop cap failed it, minutes later).
        let mut rng = StdRng::seed_from_u64(rng.random());
        let tc = &cases[rng.random_range(0..cases.len())];
        let members = tc.members.len();
        let device = !pool.is_empty() && rng.random_bool(0.25);
        let (form, mut call) = if device {
            let (which, form, group) = pick(&mut rng, &pool);
            h.group = group;
            (form, device_call(&mut rng, which, members, max))
        } else {
            let call = host_call(&mut rng, members, max);
            let data = matches!(call.what, What::Shmem(c) if !matches!(c, Coll::Reduce(_)));
            let queued = data && rng.random_bool(args.queued);
            (if queued { Form::Queue } else { Form::Host }, call)
        };
        if form == Form::Thread {
            // One invocation moves everything: lavapipe caps its loops.
            call.n = call.n.min(if llvmpipe { 100 } else { 4096 });
        } else if matches!(form, Form::WorkGroup | Form::WorkGroups) && llvmpipe {
            call.n = call.n.min(4096);
        }
        let es = call.ty.size();
        h.shift = rng.random_range(0..4usize) * es;
        h.form = form;
        h.phantom = !tc.members.contains(&me);
        h.salt = i.wrapping_mul(8);
        // The work_group(s) forms with their workgroup size.
        let label = format!(
            "{}/{}",
            call.name(),
            match form {
                Form::Host => "host".to_string(),
                Form::Thread => "thread".to_string(),
                Form::WorkGroup => format!("work_group{}", h.group),
                Form::WorkGroups => format!("work_groups{}", h.group),
                Form::Queue => "queue".to_string(),
            }
        );
        *counts.entry(label).or_default() += 1;
        if h.phantom && matches!(form, Form::Host | Form::Queue) {
            continue;
        }
        run(&mut h, tc, call, &words).with_context(|| {
            format!(
                "soak call #{i} (seed {}): {call:?} {form:?} on team {} (shift {})",
                args.seed, tc.name, h.shift
            )
        })?;
    }
    for c in cases.iter().skip(1).filter(|c| c.team != Team::INVALID) {
        ctx.team_destroy(c.team)?;
    }
    for f in &h.fails {
        eprintln!("{f}");
    }
    let total: u64 = counts.values().sum();
    println!(
        "SOAK {}",
        serde_json::json!({
            "pe": me,
            "calls": total,
            "checked": h.calls,
            "wrong": h.wrong,
            "seconds": started.elapsed().as_secs_f64(),
            "counts": counts,
        })
    );
    let ok = h.wrong == 0;
    drop(h);
    drop((go, go_src, words));
    // Every PE has printed its line before one ends the job.
    ctx.barrier_all()?;
    if !ok {
        fail_fast::fail(format_args!("wrong results"));
    }
    Ok(())
}
