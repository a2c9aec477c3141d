//! A whole job of N PEs as threads of one process, no launcher.
//!
//! `target/release/examples/threads 4`
//!
//! Each thread is a PE with its own `Context` ([`vkshmem::run_threads`]). On
//! WORLD and on the team of the even PEs, every collective family runs from
//! the host (barrier, sync, broadcast, collect, fcollect, alltoall,
//! alltoalls, reductions, UCC's gather, scatter, reduce_scatter and scans)
//! and from a kernel (broadcast, fcollect, alltoall, sum and max reductions,
//! per workgroup), each checked against the values computed here. Prints
//! `threads: ok on N PEs` when every check holds.

use vkshmem::{Context, ReduceOp, SymBuffer, Team, TeamConfig};

/// Elements per member of each call: more than one workgroup's worth.
const N: usize = 100;
/// The device forms' workgroup size (small: lavapipe runs one invocation
/// at a time per thread).
const GROUP: u32 = 16;

/// The value PE `pe` contributes at index `i` (distinct per PE and index).
fn val(pe: u32, i: usize) -> i32 {
    (pe as i32 + 1) * 1000 + i as i32
}

/// A team to check: its handle and its members as WORLD PEs.
struct Case {
    name: &'static str,
    team: Team,
    members: Vec<u32>,
}

fn main() -> anyhow::Result<()> {
    let npes: u32 = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|_| anyhow::anyhow!("usage: threads [NPES]"))?,
        None => 4,
    };
    let calls = vkshmem::run_threads(npes, |ctx| Ok(pe(ctx)?))?;
    println!(
        "threads: ok on {npes} PEs ({} checked calls per PE)",
        calls[0]
    );
    Ok(())
}

/// One PE's run: every case, host forms then device forms; the count of
/// checked calls.
fn pe(ctx: &Context) -> anyhow::Result<usize> {
    let n = ctx.n_pes();
    let evens = ctx.team_split_strided(
        Team::WORLD,
        0,
        2,
        n.div_ceil(2) as i32,
        &TeamConfig::default(),
    )?;
    let mut cases = vec![Case {
        name: "WORLD",
        team: Team::WORLD,
        members: (0..n).collect(),
    }];
    cases.push(Case {
        name: "evens",
        team: evens.unwrap_or(Team::INVALID),
        members: (0..n).step_by(2).collect(),
    });
    let dst = ctx.malloc::<i32>(N * n as usize)?;
    let src = ctx.malloc::<i32>(N * n as usize)?;
    let mut checked = 0;
    for c in &cases {
        if c.members.contains(&ctx.my_pe()) {
            checked += host_forms(ctx, c, &dst, &src)?;
        }
        // Every PE launches the device forms (a launch of a kernel that
        // waits starts with a sync of every PE); non-members skip the call.
        checked += device_forms(ctx, c, &dst, &src)?;
    }
    if let Some(t) = evens {
        ctx.team_destroy(t)?;
    }
    Ok(checked)
}

/// This PE's position in `c`.
fn rank(ctx: &Context, c: &Case) -> usize {
    c.members
        .iter()
        .position(|&p| p == ctx.my_pe())
        .expect("a member")
}

/// Fills the source with this PE's values and poisons the destination.
fn fresh(ctx: &Context, dst: &SymBuffer<i32>, src: &SymBuffer<i32>) -> anyhow::Result<()> {
    let len = src.len();
    src.write(&(0..len).map(|i| val(ctx.my_pe(), i)).collect::<Vec<_>>())?;
    dst.write(&vec![i32::MIN; len])?;
    Ok(())
}

/// Compares the first `want.len()` elements of `dst` with `want`; a
/// difference panics, which fails the job at once (returning an error would
/// first drop this PE's buffers, and each free waits for the other PEs).
fn check(what: &str, c: &Case, dst: &SymBuffer<i32>, want: &[i32]) -> anyhow::Result<usize> {
    let got = &dst.to_vec()?[..want.len()];
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what} on {}: element {i} is {}, want {}",
            c.name, got[i], want[i]
        );
    }
    Ok(1)
}

/// The host forms on `c`, each checked; the number of checks.
fn host_forms(
    ctx: &Context,
    c: &Case,
    dst: &SymBuffer<i32>,
    src: &SymBuffer<i32>,
) -> anyhow::Result<usize> {
    let (t, m) = (c.team, &c.members);
    let k = m.len();
    let me = rank(ctx, c);
    let (d, s) = (dst.as_slice(), src.as_slice());
    let mut ok = 0;
    ctx.team_barrier(t)?;
    ctx.team_sync(t)?;

    let root = k - 1;
    fresh(ctx, dst, src)?;
    ctx.broadcast(t, &d, &s, N, root as u32)?;
    let want: Vec<i32> = (0..N).map(|i| val(m[root], i)).collect();
    ok += check("broadcast", c, dst, &want)?;

    // collect: member r contributes r + 1 elements.
    fresh(ctx, dst, src)?;
    ctx.collect(t, &d, &s, me + 1)?;
    let want: Vec<i32> = (0..k)
        .flat_map(|r| (0..=r).map(move |i| val(m[r], i)))
        .collect();
    ok += check("collect", c, dst, &want)?;

    fresh(ctx, dst, src)?;
    ctx.fcollect(t, &d, &s, N)?;
    let want: Vec<i32> = (0..k)
        .flat_map(|r| (0..N).map(move |i| val(m[r], i)))
        .collect();
    ok += check("fcollect", c, dst, &want)?;

    fresh(ctx, dst, src)?;
    ctx.alltoall(t, &d, &s, N)?;
    let want: Vec<i32> = (0..k)
        .flat_map(|r| (0..N).map(move |i| val(m[r], me * N + i)))
        .collect();
    ok += check("alltoall", c, dst, &want)?;

    // alltoalls with strides: element i of block r sits at (r * n + i) * 2.
    let n = N / 4;
    fresh(ctx, dst, src)?;
    ctx.alltoalls(t, &d, &s, 1, 2, n)?;
    let want: Vec<i32> = (0..k)
        .flat_map(|r| (0..n).map(move |i| val(m[r], (me * n + i) * 2)))
        .collect();
    ok += check("alltoalls", c, dst, &want)?;

    for op in [ReduceOp::Sum, ReduceOp::Max] {
        fresh(ctx, dst, src)?;
        ctx.reduce(t, op, &d, &s, N)?;
        ok += check(op.name(), c, dst, &reduced(m, op))?;
    }

    fresh(ctx, dst, src)?;
    ctx.gather(t, 0, &d, &s, N)?;
    if me == 0 {
        let want: Vec<i32> = (0..k)
            .flat_map(|r| (0..N).map(move |i| val(m[r], i)))
            .collect();
        ok += check("gather", c, dst, &want)?;
    }

    fresh(ctx, dst, src)?;
    ctx.scatter(t, root as u32, &d, &s, N)?;
    let want: Vec<i32> = (0..N).map(|i| val(m[root], me * N + i)).collect();
    ok += check("scatter", c, dst, &want)?;

    fresh(ctx, dst, src)?;
    ctx.reduce_scatter(t, ReduceOp::Sum, &d, &s, N)?;
    let want: Vec<i32> = (0..N)
        .map(|i| m.iter().map(|&p| val(p, me * N + i)).sum())
        .collect();
    ok += check("reduce_scatter", c, dst, &want)?;

    fresh(ctx, dst, src)?;
    ctx.sum_inscan(t, &d, &s, N)?;
    let want: Vec<i32> = (0..N)
        .map(|i| m[..=me].iter().map(|&p| val(p, i)).sum())
        .collect();
    ok += check("sum_inscan", c, dst, &want)?;
    Ok(ok)
}

/// Every member's `N` elements reduced with `op`.
fn reduced(m: &[u32], op: ReduceOp) -> Vec<i32> {
    (0..N)
        .map(|i| {
            let vals = m.iter().map(|&p| val(p, i));
            match op {
                ReduceOp::Max => vals.max().unwrap(),
                _ => vals.sum(),
            }
        })
        .collect()
}

/// The device calls checked, by the kernel's `which`.
const DEVICE_CALLS: [&str; 5] = [
    "shmemx_int32_broadcast_work_group(a.team, a.dest, a.source, a.n, a.root, li, GROUPu)",
    "shmemx_int32_fcollect_work_group(a.team, a.dest, a.source, a.n, li, GROUPu)",
    "shmemx_int32_alltoall_work_group(a.team, a.dest, a.source, a.n, li, GROUPu)",
    "shmemx_int32_sum_reduce_work_group(a.team, a.dest, a.source, a.n, li, GROUPu)",
    "shmemx_int32_max_reduce_work_group(a.team, a.dest, a.source, a.n, li, GROUPu)",
];

/// The kernel of one device call: one call per kernel, since llvmpipe
/// inlines every wait and a kernel of all of them compiles for minutes.
fn kernel_source(call: &str) -> String {
    let call = call.replace("GROUP", &GROUP.to_string());
    format!(
        "struct P {{ member: u32, team: u32, dest: u32, source: u32, n: u32, root: u32 }}
var<immediate> p: P;
@compute @workgroup_size({GROUP})
fn main(@builtin(local_invocation_index) li: u32) {{
    let a = p;
    if a.member == 1u {{
        let r = {call};
    }}
}}
"
    )
}

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Args {
    member: u32,
    team: u32,
    dest: u32,
    source: u32,
    n: u32,
    root: u32,
}

/// The device forms on `c` (every PE launches; members call), each checked
/// on the members; the number of checks.
fn device_forms(
    ctx: &Context,
    c: &Case,
    dst: &SymBuffer<i32>,
    src: &SymBuffer<i32>,
) -> anyhow::Result<usize> {
    let member = c.members.contains(&ctx.my_pe());
    let (m, k) = (&c.members, c.members.len());
    let mut ok = 0;
    for (which, call) in DEVICE_CALLS.iter().enumerate() {
        let kernel = ctx.device_kernel(&kernel_source(call), &format!("threads_{which}"))?;
        fresh(ctx, dst, src)?;
        // Every member's dest is ready before any member writes into it.
        ctx.barrier_all()?;
        let args = Args {
            member: u32::from(member),
            team: c.team.device_handle(),
            dest: dst.device_byte_addr()?,
            source: src.device_byte_addr()?,
            n: N as u32,
            root: k as u32 - 1,
        };
        ctx.launch(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(&args))?;
        ctx.barrier_all()?;
        if !member {
            continue;
        }
        let me = rank(ctx, c);
        let want: Vec<i32> = match which {
            0 => (0..N).map(|i| val(m[k - 1], i)).collect(),
            1 => (0..k)
                .flat_map(|r| (0..N).map(move |i| val(m[r], i)))
                .collect(),
            2 => (0..k)
                .flat_map(|r| (0..N).map(move |i| val(m[r], me * N + i)))
                .collect(),
            3 => reduced(m, ReduceOp::Sum),
            _ => reduced(m, ReduceOp::Max),
        };
        ok += check(&format!("device {call}"), c, dst, &want)?;
    }
    Ok(ok)
}
