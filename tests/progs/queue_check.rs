//! Queued, nonblocking and persistent collectives (`vkshmem::queue`): a PE
//! program run by tests/launcher.rs through vkshmrun on 1-4 PEs.
//!
//! 1. Conformance: the checking harness (patterns, poison, guards, host
//!    reference) in its `Queue` form (`Context::post` + `wait`), on WORLD, the
//!    even PEs and WORLD reversed, at sizes on both sides of the one-invocation
//!    / one-workgroup boundary (`THREAD_FORM_MAX_BYTES`).
//! 2. The host is free: the last PE posts 400 ms after the others; the others'
//!    `post` returns at once and `test` says "not done" until it arrives.
//! 3. Several in flight: eight collectives posted back to back, waited for in
//!    reverse order, every result checked.
//! 4. A batch of 40 reductions in one submission (fused dispatches).
//! 5. Persistent: one recorded allreduce started 20 times over fresh data.
//! 6. A request dropped unfinished is waited for (its result is there).
//! 7. UCC's queued calls: gather and scatter (roots other than 0),
//!    reduce_scatter, the sum scans (in place and not), on WORLD, on both
//!    sides of the one-invocation / one-workgroup boundary.
//!
//! Prints `queue_check: pe=P calls=N wrong=W` and, on PE 0, the timings of the
//! host-free check. Other modes (one each):
//! - `--peer-dies`: the last PE exits before posting; the others' `wait` must
//!   return `PeerFailed` naming it, within seconds (prints `queue_check:
//!   peer failure reported`).
//! - `--short`: the persistent allreduce (5, 6 above) and a large allreduce
//!   only (two kernels), for teams that span devices (`VKSHMEM_TRANSPORT`).
//! - `--bad-collect`: PE 0's collect dest is too small for the total; its
//!   `wait` must return `Error::Device` with `ERR_BAD_ARGUMENT`, the others'
//!   complete (prints `queue_check: bad collect reported`), and the job goes
//!   on (a correct collect, checked, then finalize).

use std::time::{Duration, Instant};

use vkshmem::{Collective, Error, ReduceOp, Team};

#[path = "common/combine.rs"]
mod combine;
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/harness.rs"]
mod harness;
#[path = "common/pes.rs"]
mod pes;
use harness::*;

fn conformance(h: &mut Harness, cases: &[TeamCase]) -> anyhow::Result<()> {
    let me = h.me();
    h.form = Form::Queue;
    // Byte sizes on both sides of the one-invocation / one-workgroup boundary.
    // Few element types and operations: each queue kernel costs llvmpipe
    // seconds to compile per PE (the device-initiated forms' tests cover the
    // reductions' type x operation table; the queue kernels call them).
    for (k, tc) in cases.iter().enumerate() {
        if ![0, 1, 3].contains(&k) {
            continue;
        }
        h.phantom = !tc.members.contains(&me);
        h.salt = 1_000_000 * (k as u32 + 1);
        let root = tc.members.len() as u32 - 1;
        for n in [0usize, 1, 7, 1000, 6000] {
            h.broadcast::<u8>(tc, n, root)?;
            h.reduce::<f32>(tc, ReduceOp::Sum, n / 4, false)?;
            h.collect::<u16>(tc, n / 2)?;
            if k != 0 {
                continue;
            }
            h.fcollect::<u32>(tc, n / 4)?;
            h.alltoall::<u8>(tc, n / tc.members.len())?;
            h.alltoalls::<u64>(tc, n / 64, 2, 3)?;
            h.reduce::<f32>(tc, ReduceOp::Max, n / 4, true)?;
        }
    }
    h.phantom = false;
    h.form = Form::Host;
    h.ctx.barrier_all()?;
    Ok(())
}

/// (post took, tests that said "not done", waited) on this PE.
fn host_is_free(h: &mut Harness) -> anyhow::Result<(Duration, u32, Duration)> {
    let ctx = h.ctx.clone();
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let src = ctx.malloc::<f32>(64)?;
    let dst = ctx.malloc::<f32>(64)?;
    src.write(
        &(0..64)
            .map(|i| ((me + 1) * 1000 + i) as f32)
            .collect::<Vec<_>>(),
    )?;
    // Compile the kernel first (llvmpipe: seconds), so the timing is the post's.
    let warm = ctx.post(
        Team::WORLD,
        Collective::sum_reduce(&dst.as_slice(), &src.as_slice(), 64),
    )?;
    warm.wait()?;
    ctx.barrier_all()?;
    let late = me == n - 1 && n > 1;
    // Late by 2 s: the others must wait at least 1 s (a PE descheduled for a
    // while between the barrier and its post still sees most of it).
    if late {
        std::thread::sleep(Duration::from_secs(2));
    }
    let t0 = Instant::now();
    let mut req = ctx.post(
        Team::WORLD,
        Collective::sum_reduce(&dst.as_slice(), &src.as_slice(), 64),
    )?;
    let posted = t0.elapsed();
    let mut not_done = 0;
    while !req.test()? {
        not_done += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let waited = t0.elapsed();
    drop(req);
    let want: Vec<f32> = (0..64)
        .map(|i| (0..n).map(|p| ((p + 1) * 1000 + i) as f32).sum())
        .collect();
    if dst.to_vec()? != want {
        h.wrong += 1;
        h.fail(format!("PE {me}: host-free allreduce wrong"));
    }
    h.calls += 1;
    if !late && n > 1 && (not_done == 0 || waited < Duration::from_secs(1)) {
        h.wrong += 1;
        h.fail(format!(
            "PE {me}: the allreduce completed {waited:?} after its post, {not_done} tests said not done: it did not wait for the late PE"
        ));
    }
    if posted > Duration::from_secs(1) {
        h.wrong += 1;
        h.fail(format!("PE {me}: post took {posted:?}: it waited"));
    }
    ctx.barrier_all()?;
    src.free()?;
    dst.free()?;
    Ok((posted, not_done, waited))
}

fn in_flight(h: &mut Harness) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as u64);
    const K: usize = 8;
    const M: usize = 300;
    let src = ctx.malloc::<f32>(K * M)?;
    let dst = ctx.malloc::<f32>(K * M)?;
    // Small integers: exact sums in any order.
    let pat =
        |pe: u64, k: usize, i: usize| (((pe + 3) * 7919 + k as u64 * 131 + i as u64) % 1000) as f32;
    src.write(
        &(0..K * M)
            .map(|j| pat(me as u64, j / M, j % M))
            .collect::<Vec<_>>(),
    )?;
    let slices: Vec<_> = (0..K)
        .map(|k| -> anyhow::Result<_> {
            Ok((
                dst.slice(k * M..(k + 1) * M)?,
                src.slice(k * M..(k + 1) * M)?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut reqs = Vec::new();
    for (k, (d, s)) in slices.iter().enumerate() {
        // Alternate operations so that a result in the wrong place shows.
        let op = if k % 2 == 0 {
            ReduceOp::Sum
        } else {
            ReduceOp::Max
        };
        reqs.push(ctx.post(Team::WORLD, Collective::reduce(op, d, s, M))?);
    }
    while let Some(r) = reqs.pop() {
        r.wait()?;
    }
    let got = dst.to_vec()?;
    for k in 0..K {
        for i in 0..M {
            let vals = (0..n).map(|p| pat(p, k, i));
            let want = if k % 2 == 0 {
                vals.sum::<f32>()
            } else {
                vals.fold(f32::MIN, f32::max)
            };
            h.calls += u64::from(i == 0);
            if got[k * M + i] != want {
                h.wrong += 1;
                h.fail(format!(
                    "PE {me}: in-flight collective {k} element {i}: {} want {want}",
                    got[k * M + i]
                ));
                break;
            }
        }
    }
    ctx.barrier_all()?;
    drop(reqs);
    drop(slices);
    src.free()?;
    dst.free()?;
    Ok(())
}

/// A batch of 40 reductions in one submission (`post_batch`), for the fused
/// dispatches (consecutive calls of one kernel run in one dispatch of at most
/// `BATCH_CALLS`): runs of 20 and 17 sums split across dispatches, broken by
/// max reductions (another kernel), every call on its own slice with its own
/// size, on both sides of the one-sync size (`LL_BYTES`: 32 f32), some in
/// place. Every result checked against a host reference.
fn batch(h: &mut Harness) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as u64);
    const K: usize = 40;
    const M: usize = 48;
    let count = |k: usize| [1, 2, 7, 31, 32, 33, 48][k % 7];
    let is_max = |k: usize| (20..23).contains(&k);
    let in_place = |k: usize| k % 5 == 4;
    let src = ctx.malloc::<f32>(K * M)?;
    let dst = ctx.malloc::<f32>(K * M)?;
    let pat = |pe: u64, k: usize, i: usize| {
        (((pe + 5) * 6151 + k as u64 * 97 + i as u64 * 13) % 509) as f32
    };
    let mine: Vec<f32> = (0..K * M).map(|j| pat(me as u64, j / M, j % M)).collect();
    src.write(&mine)?;
    // Poison: an element past a call's count must keep it.
    dst.write(&vec![-1.0; K * M])?;
    let mut calls = Vec::new();
    for k in 0..K {
        let c = count(k);
        let d = if in_place(k) {
            src.slice(k * M..k * M + c)?
        } else {
            dst.slice(k * M..k * M + c)?
        };
        let s = src.slice(k * M..k * M + c)?;
        let op = if is_max(k) {
            ReduceOp::Max
        } else {
            ReduceOp::Sum
        };
        calls.push((Team::WORLD, Collective::reduce(op, &d, &s, c)));
    }
    ctx.post_batch(&calls)?.wait()?;
    drop(calls);
    let (got_dst, got_src) = (dst.to_vec()?, src.to_vec()?);
    for k in 0..K {
        let got = if in_place(k) { &got_src } else { &got_dst };
        h.calls += 1;
        for i in 0..M {
            let vals = (0..n).map(|p| pat(p, k, i));
            let want = if i >= count(k) {
                if in_place(k) {
                    pat(me as u64, k, i)
                } else {
                    -1.0
                }
            } else if is_max(k) {
                vals.fold(f32::MIN, f32::max)
            } else {
                vals.sum::<f32>()
            };
            if got[k * M + i] != want {
                h.wrong += 1;
                h.fail(format!(
                    "PE {me}: batched call {k} (count {}) element {i}: {} want {want}",
                    count(k),
                    got[k * M + i]
                ));
                break;
            }
        }
    }
    ctx.barrier_all()?;
    src.free()?;
    dst.free()?;
    Ok(())
}

fn persistent(h: &mut Harness) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as i64);
    let src = ctx.malloc::<f32>(100)?;
    let dst = ctx.malloc::<f32>(100)?;
    {
        let (d, s) = (dst.as_slice(), src.as_slice());
        let mut p = ctx.persistent(Team::WORLD, Collective::sum_reduce(&d, &s, 100))?;
        for round in 0..20i64 {
            src.write(
                &(0..100)
                    .map(|i| ((me as i64 + 1) * round - i) as f32)
                    .collect::<Vec<_>>(),
            )?;
            p.start()?;
            p.wait()?;
            let want: Vec<f32> = (0..100)
                .map(|i| (0..n).map(|pe| ((pe + 1) * round - i) as f32).sum())
                .collect();
            h.calls += 1;
            if dst.to_vec()? != want {
                h.wrong += 1;
                h.fail(format!("PE {me}: persistent allreduce run {round} wrong"));
            }
            // The next run overwrites the source: every member must be done
            // reading it (the closing sync of the run saw to that).
        }
    }
    // Dropped unfinished: the drop waits, the result is there.
    src.write(&vec![me as f32 + 1.0; 100])?;
    {
        let _dropped = ctx.post(
            Team::WORLD,
            Collective::sum_reduce(&dst.as_slice(), &src.as_slice(), 100),
        )?;
    }
    h.calls += 1;
    if dst.to_vec()? != vec![(n * (n + 1) / 2) as f32; 100] {
        h.wrong += 1;
        h.fail(format!("PE {me}: a dropped request did not complete"));
    }
    ctx.barrier_all()?;
    src.free()?;
    dst.free()?;
    Ok(())
}

fn peer_dies() -> anyhow::Result<()> {
    // The survivors must get out by themselves: the launcher's stop (SIGTERM
    // when the PE dies) must not do it for them (the test gives a long grace).
    // SAFETY: ignoring a signal installs no handler code.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGTERM,
            nix::sys::signal::SigHandler::SigIgn,
        )?;
    }
    let ctx = vkshmem::init()?;
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let x = ctx.calloc::<f32>(16)?;
    // Compile before anyone dies, so the wait is what is measured.
    ctx.post(
        Team::WORLD,
        Collective::sum_reduce(&x.as_slice(), &x.as_slice(), 16),
    )?
    .wait()?;
    ctx.barrier_all()?;
    if me == n - 1 {
        std::thread::sleep(Duration::from_millis(200));
        std::process::exit(3);
    }
    let t0 = Instant::now();
    // A post after the death may report it already.
    let r = ctx
        .post(
            Team::WORLD,
            Collective::sum_reduce(&x.as_slice(), &x.as_slice(), 16),
        )
        .and_then(|q| q.wait());
    match r {
        Err(Error::PeerFailed { pe, .. }) if pe == n - 1 => {
            println!(
                "queue_check: peer failure reported after {:?}",
                t0.elapsed()
            );
            Ok(())
        }
        other => anyhow::bail!(
            "PE {me}: expected PeerFailed naming PE {}, got {other:?}",
            n - 1
        ),
    }
}

fn bad_collect() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let me = ctx.my_pe();
    let n = ctx.n_pes() as usize;
    let src = ctx.calloc::<u32>(10)?;
    let dst = ctx.calloc::<u32>(10 * n)?;
    src.write(&[me + 1; 10])?;
    {
        // PE 0 says its dest holds 10 elements; the total is 10 * n.
        let d = if me == 0 {
            dst.slice(0..10)?
        } else {
            dst.as_slice()
        };
        let r = ctx
            .post(Team::WORLD, Collective::collect(&d, &src.as_slice(), 10))?
            .wait();
        match (me, r) {
            (0, Err(Error::Device { bits, .. })) if bits & vkshmem::ERR_BAD_ARGUMENT != 0 => {
                println!("queue_check: bad collect reported");
            }
            (0, other) => anyhow::bail!("PE 0: expected a device error, got {other:?}"),
            (_, Ok(())) => {}
            (_, Err(e)) => anyhow::bail!("PE {me}: {e}"),
        }
    }
    // Every member completed the collective's syncs: the job goes on.
    ctx.post(
        Team::WORLD,
        Collective::collect(&dst.as_slice(), &src.as_slice(), 10),
    )?
    .wait()?;
    let want: Vec<u32> = (0..n as u32).flat_map(|p| [p + 1; 10]).collect();
    anyhow::ensure!(
        dst.to_vec()? == want,
        "PE {me}: the collect after the error is wrong"
    );
    src.free()?;
    dst.free()?;
    ctx.finalize()?;
    Ok(())
}

/// A reduction too large for the one-invocation form (so, across devices,
/// the work_group form through the proxy), posted three times over fresh
/// data, each checked.
fn large_reduce(h: &mut Harness) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as i64);
    const N: usize = 3000;
    let src = ctx.malloc::<f32>(N)?;
    let dst = ctx.malloc::<f32>(N)?;
    for round in 0..3i64 {
        let value = |pe: i64, i: usize| ((pe + 2) * (round + 1) + (i % 97) as i64) as f32;
        src.write(&(0..N).map(|i| value(me as i64, i)).collect::<Vec<_>>())?;
        ctx.post(
            Team::WORLD,
            Collective::sum_reduce(&dst.as_slice(), &src.as_slice(), N),
        )?
        .wait()?;
        let want: Vec<f32> = (0..N)
            .map(|i| (0..n).map(|pe| value(pe, i)).sum())
            .collect();
        h.calls += 1;
        if dst.to_vec()? != want {
            h.wrong += 1;
            h.fail(format!("PE {me}: large allreduce round {round} wrong"));
        }
    }
    ctx.barrier_all()?;
    src.free()?;
    dst.free()?;
    Ok(())
}

/// UCC's queued calls on WORLD, each checked against a host reference:
/// gather (u16, root the last PE), scatter (u8, root 1 % n), i32 sum
/// reduce_scatter, f64 inclusive scan in place, u64 exclusive scan.
fn ucc(h: &mut Harness) -> anyhow::Result<()> {
    use vkshmem::Collective as C;
    let ctx = h.ctx.clone();
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let nu = n as usize;
    let pat = |pe: u32, i: usize, salt: u32| -> u64 {
        let x = (u64::from(pe) << 40) ^ ((i as u64) << 8) ^ u64::from(salt);
        x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20
    };
    let spans = (0..n).any(|p| {
        ctx.transport(p)
            .is_ok_and(|t| t != vkshmem::Transport::Direct)
    });
    for (k, m) in [0usize, 1, 700, 3000].into_iter().enumerate() {
        let salt = 7000 + k as u32;
        let mut wrong = Vec::new();
        // gather: every member's m u16 into the last PE's dest.
        let root = n - 1;
        let src = ctx.malloc::<u16>(m.max(1))?;
        let dst = ctx.malloc::<u16>((m * nu).max(1))?;
        src.write(&(0..m).map(|i| pat(me, i, salt) as u16).collect::<Vec<_>>())?;
        dst.write(&vec![0xdead; m * nu])?;
        ctx.post(
            Team::WORLD,
            C::gather(&dst.as_slice(), &src.as_slice(), m, root),
        )?
        .wait()?;
        let want: Vec<u16> = if me == root {
            (0..n)
                .flat_map(|p| (0..m).map(move |i| pat(p, i, salt) as u16))
                .collect()
        } else {
            vec![0xdead; m * nu]
        };
        if dst.to_vec()?[..m * nu] != want[..] {
            wrong.push("gather");
        }
        drop((src, dst));
        // scatter: block j of PE (1 % n)'s source to member j.
        let root = 1 % n;
        let src = ctx.malloc::<u8>((m * nu).max(1))?;
        let dst = ctx.malloc::<u8>(m.max(1))?;
        src.write(
            &(0..m * nu)
                .map(|i| pat(me, i, salt) as u8)
                .collect::<Vec<_>>(),
        )?;
        dst.write(&vec![0xa5; m])?;
        ctx.post(
            Team::WORLD,
            C::scatter(&dst.as_slice(), &src.as_slice(), m, root),
        )?
        .wait()?;
        let want: Vec<u8> = (0..m)
            .map(|i| pat(root, me as usize * m + i, salt) as u8)
            .collect();
        if dst.to_vec()?[..m] != want[..] {
            wrong.push("scatter");
        }
        drop((src, dst));
        // reduce_scatter: i32 sum, m per member.
        let src = ctx.malloc::<i32>((m * nu).max(1))?;
        let dst = ctx.malloc::<i32>(m.max(1))?;
        src.write(
            &(0..m * nu)
                .map(|i| pat(me, i, salt) as i32)
                .collect::<Vec<_>>(),
        )?;
        dst.write(&vec![-1; m])?;
        ctx.post(
            Team::WORLD,
            C::reduce_scatter(ReduceOp::Sum, &dst.as_slice(), &src.as_slice(), m),
        )?
        .wait()?;
        let want: Vec<i32> = (0..m)
            .map(|i| {
                (0..n).fold(0i32, |a, p| {
                    a.wrapping_add(pat(p, me as usize * m + i, salt) as i32)
                })
            })
            .collect();
        if dst.to_vec()?[..m] != want[..] {
            wrong.push("reduce_scatter");
        }
        drop((src, dst));
        // Scans: not across devices (the recorded call says so).
        let x = ctx.malloc::<f64>(m.max(1))?;
        let y = ctx.malloc::<u64>(m.max(1))?;
        let val = |p: u32, i: usize| (pat(p, i, salt) % 1024) as f64 - 300.0;
        x.write(&(0..m).map(|i| val(me, i)).collect::<Vec<_>>())?;
        y.write(&vec![u64::MAX; m])?;
        let (xs, ys) = (x.as_slice(), y.as_slice());
        let r = ctx.post(Team::WORLD, C::sum_inscan(&xs, &xs, m));
        if spans {
            if !matches!(r, Err(Error::Unreachable { .. })) {
                wrong.push("a scan across devices was not refused");
            }
            drop(r);
        } else {
            r?.wait()?;
            // The u64 exclusive scan of the inclusive one's pattern bits.
            let src = ctx.malloc::<u64>(m.max(1))?;
            src.write(&(0..m).map(|i| pat(me, i, salt)).collect::<Vec<_>>())?;
            ctx.post(Team::WORLD, C::sum_exscan(&ys, &src.as_slice(), m))?
                .wait()?;
            let wx: Vec<f64> = (0..m)
                .map(|i| (1..=me).fold(val(0, i), |a, p| a + val(p, i)))
                .collect();
            let wy: Vec<u64> = (0..m)
                .map(|i| (0..me).fold(0u64, |a, p| a.wrapping_add(pat(p, i, salt))))
                .collect();
            if x.to_vec()?[..m] != wx[..] {
                wrong.push("sum_inscan in place");
            }
            if y.to_vec()?[..m] != wy[..] {
                wrong.push("sum_exscan");
            }
            drop(src);
        }
        drop((x, y));
        h.calls += 5;
        if !wrong.is_empty() {
            h.wrong += wrong.len() as u64;
            h.fail(format!(
                "PE {me}: queued UCC calls of {m} elements: {wrong:?} wrong"
            ));
        }
    }
    ctx.barrier_all()?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    if std::env::args().any(|a| a == "--peer-dies") {
        return peer_dies();
    }
    if std::env::args().any(|a| a == "--bad-collect") {
        return bad_collect();
    }
    pes::run(check)
}

/// One PE's checks.
fn check(ctx: &vkshmem::Context) -> anyhow::Result<()> {
    let mut h = Harness::new(ctx, 1 << 16)?;
    if std::env::args().any(|a| a == "--short") {
        // Two kernels only (each costs llvmpipe tens of seconds per PE to
        // compile where the library has proxied paths): for teams that span
        // devices.
        persistent(&mut h)?;
        large_reduce(&mut h)?;
        return h.finish("queue_check");
    }
    let cases = teams(ctx)?;
    conformance(&mut h, &cases)?;
    let (posted, not_done, waited) = host_is_free(&mut h)?;
    in_flight(&mut h)?;
    batch(&mut h)?;
    persistent(&mut h)?;
    ucc(&mut h)?;
    for c in cases.iter().skip(1).filter(|c| c.team != Team::INVALID) {
        ctx.team_destroy(c.team)?;
    }
    if ctx.my_pe() == 0 {
        println!(
            "queue_check: host free: post {posted:?}, {not_done} tests said not done, complete after {waited:?}"
        );
    }
    h.finish("queue_check")
}
