//! The soak's calls beyond SHMEM's collectives, host forms, on the harness's
//! regions and checks (poisoned dest with guards, host reference):
//! UCC's gatherv, scatterv, reduce_scatterv, alltoallv (uneven counts with
//! zeros, gaps between parts that must keep their poison), the scans, and
//! one-sided calls on the team (put and get around the ring, put_signal +
//! signal_wait_until, concurrent fetch_add with an exact total).

use vkshmem::rma::{Cmp, SignalOp};
use vkshmem::{ReduceOp, SymBuffer};

use super::harness::{Elem, Harness, TeamCase};

/// Member `j`'s count of a call of size `n`: `n >> (j % 3)`, so counts
/// differ and small calls have zeros.
fn count(n: usize, j: usize) -> usize {
    n >> (j % 3)
}

/// Displacements of `counts` with one element of gap after each part.
fn gapped(counts: &[usize]) -> (Vec<usize>, usize) {
    let mut d = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &c in counts {
        d.push(at);
        at += c + 1;
    }
    (d, at)
}

fn me_in(h: &Harness, tc: &TeamCase) -> usize {
    tc.members.iter().position(|&p| p == h.me()).unwrap_or(0)
}

/// `gatherv` to member `root`: member j's `count(n, j)` elements at gapped
/// displacements; every other member's dest stays poisoned.
pub fn gatherv<T: Elem>(h: &mut Harness, tc: &TeamCase, n: usize, root: u32) -> anyhow::Result<()> {
    h.salt += 1;
    let size = tc.members.len();
    let me = me_in(h, tc);
    let counts: Vec<usize> = (0..size).map(|j| count(n, j)).collect();
    let (displs, extent) = gapped(&counts);
    let src = h.write_src::<T>(counts[me], None)?;
    h.poison_dst(extent * std::mem::size_of::<T>())?;
    let (d, s) = (h.dst_slice::<T>(extent), h.src_slice::<T>(counts[me]));
    h.ctx
        .gatherv(tc.team, root, &d, &s, &counts, Some(&displs))?;
    let mut want = vec![None; extent];
    if me == root as usize {
        for (j, &p) in tc.members.iter().enumerate() {
            for i in 0..counts[j] {
                want[displs[j] + i] = Some(T::pat(p, i, h.salt, None));
            }
        }
    }
    let what = format!("gatherv<{}> team {} n={n} root={root}", T::NAME, tc.name);
    h.check_dst(&what, &want)?;
    h.check_src(&what, &src)
}

/// `scatterv` from member `root`: member j gets part j of the root's
/// source (gapped displacements).
pub fn scatterv<T: Elem>(
    h: &mut Harness,
    tc: &TeamCase,
    n: usize,
    root: u32,
) -> anyhow::Result<()> {
    h.salt += 1;
    let size = tc.members.len();
    let me = me_in(h, tc);
    let counts: Vec<usize> = (0..size).map(|j| count(n, j)).collect();
    let (displs, extent) = gapped(&counts);
    let src = h.write_src::<T>(extent, None)?;
    h.poison_dst(counts[me] * std::mem::size_of::<T>())?;
    let (d, s) = (h.dst_slice::<T>(counts[me]), h.src_slice::<T>(extent));
    h.ctx
        .scatterv(tc.team, root, &d, &s, &counts, Some(&displs))?;
    let r = tc.members[root as usize];
    let want: Vec<Option<T>> = (0..counts[me])
        .map(|i| Some(T::pat(r, displs[me] + i, h.salt, None)))
        .collect();
    let what = format!("scatterv<{}> team {} n={n} root={root}", T::NAME, tc.name);
    h.check_dst(&what, &want)?;
    h.check_src(&what, &src)
}

/// `reduce_scatterv` with `op`: member j gets its block (packed counts) of
/// every member's source combined in team order.
pub fn reduce_scatterv<T: Elem>(
    h: &mut Harness,
    tc: &TeamCase,
    n: usize,
    op: ReduceOp,
) -> anyhow::Result<()> {
    h.salt += 1;
    let size = tc.members.len();
    let me = me_in(h, tc);
    let counts: Vec<usize> = (0..size).map(|j| count(n, j)).collect();
    let total: usize = counts.iter().sum();
    let first: usize = counts[..me].iter().sum();
    let src = h.write_src::<T>(total, Some(op))?;
    h.poison_dst(counts[me] * std::mem::size_of::<T>())?;
    let (d, s) = (h.dst_slice::<T>(counts[me]), h.src_slice::<T>(total));
    h.ctx.reduce_scatterv(tc.team, op, &d, &s, &counts)?;
    let want: Vec<Option<T>> = (0..counts[me])
        .map(|i| {
            let at = first + i;
            let mut acc = T::pat(tc.members[0], at, h.salt, Some(op));
            for &p in &tc.members[1..] {
                acc = T::combine(op, acc, T::pat(p, at, h.salt, Some(op)));
            }
            Some(acc)
        })
        .collect();
    let what = format!(
        "{}_reduce_scatterv<{}> team {} n={n}",
        op.name(),
        T::NAME,
        tc.name
    );
    h.check_dst(&what, &want)?;
    h.check_src(&what, &src)
}

/// `alltoallv`: member i sends `(n >> ((i + 2 j) % 3))` elements to member
/// j; send and receive parts at gapped displacements.
pub fn alltoallv<T: Elem>(h: &mut Harness, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
    h.salt += 1;
    let size = tc.members.len();
    let me = me_in(h, tc);
    let cnt = |i: usize, j: usize| n >> ((i + 2 * j) % 3);
    let sends = |i: usize| -> Vec<usize> { (0..size).map(|j| cnt(i, j)).collect() };
    let send_counts = sends(me);
    let (send_displs, send_extent) = gapped(&send_counts);
    let recv_counts: Vec<usize> = (0..size).map(|i| cnt(i, me)).collect();
    let (recv_displs, recv_extent) = gapped(&recv_counts);
    let src = h.write_src::<T>(send_extent, None)?;
    h.poison_dst(recv_extent * std::mem::size_of::<T>())?;
    let (d, s) = (h.dst_slice::<T>(recv_extent), h.src_slice::<T>(send_extent));
    h.ctx.alltoallv(
        tc.team,
        &d,
        &s,
        &send_counts,
        &send_displs,
        &recv_counts,
        &recv_displs,
    )?;
    let mut want = vec![None; recv_extent];
    for (i, &p) in tc.members.iter().enumerate() {
        // Where member i's part for this member starts in member i's source.
        let (their_displs, _) = gapped(&sends(i));
        for k in 0..recv_counts[i] {
            want[recv_displs[i] + k] = Some(T::pat(p, their_displs[me] + k, h.salt, None));
        }
    }
    let what = format!("alltoallv<{}> team {} n={n}", T::NAME, tc.name);
    h.check_dst(&what, &want)?;
    h.check_src(&what, &src)
}

/// `sum_inscan` (`inclusive`) or `sum_exscan`, in place or not.
pub fn scan<T: Elem>(
    h: &mut Harness,
    tc: &TeamCase,
    n: usize,
    inclusive: bool,
    in_place: bool,
) -> anyhow::Result<()> {
    h.salt += 1;
    let op = ReduceOp::Sum;
    let me = me_in(h, tc);
    let mine: Vec<T> = (0..n)
        .map(|i| T::pat(h.me(), i, h.salt, Some(op)))
        .collect();
    let d = h.dst_slice::<T>(n);
    let s = if in_place {
        h.poison_dst(n * std::mem::size_of::<T>())?;
        h.dst.write_at(
            h.me(),
            super::harness::GUARD + h.shift,
            bytemuck::cast_slice(&mine),
        )?;
        d
    } else {
        h.write_src::<T>(n, Some(op))?;
        h.poison_dst(n * std::mem::size_of::<T>())?;
        h.src_slice::<T>(n)
    };
    if inclusive {
        h.ctx.sum_inscan(tc.team, &d, &s, n)?;
    } else {
        h.ctx.sum_exscan(tc.team, &d, &s, n)?;
    }
    let upto = if inclusive { me + 1 } else { me };
    let want: Vec<Option<T>> = (0..n)
        .map(|i| {
            let terms = tc.members[..upto]
                .iter()
                .map(|&p| T::pat(p, i, h.salt, Some(op)));
            Some(
                terms
                    .reduce(|a, b| T::combine(op, a, b))
                    .unwrap_or_else(T::zeroed),
            )
        })
        .collect();
    let what = format!(
        "sum_{}<{}> team {} n={n}{}",
        if inclusive { "inscan" } else { "exscan" },
        T::NAME,
        tc.name,
        if in_place { " in place" } else { "" }
    );
    h.check_dst(&what, &want)?;
    if !in_place {
        h.check_src(&what, &mine)?;
    }
    Ok(())
}

/// One-sided calls among the team: `put` to the next member and `get` from
/// it; `put_signal` (set to the call's salt) to the next member, then
/// `signal_wait_until` for the previous member's; `fetch_add` of `pe + 1`
/// eight times by every member on the first member's word, whose total
/// must be exact. `words` is a symmetric `[counter, signal]`.
pub fn rma<T: Elem>(
    h: &mut Harness,
    tc: &TeamCase,
    n: usize,
    words: &SymBuffer<u64>,
) -> anyhow::Result<()> {
    h.salt += 1;
    let size = tc.members.len();
    let me = me_in(h, tc);
    let (right, left) = (
        tc.members[(me + 1) % size],
        tc.members[(me + size - 1) % size],
    );
    let ctx = h.ctx.clone();
    let what = format!("rma<{}> team {} n={n}", T::NAME, tc.name);

    // put, then get back what the next member put to its next member.
    let src = h.write_src::<T>(n, None)?;
    h.poison_dst(n * std::mem::size_of::<T>())?;
    if me == 0 {
        words.write_at(h.me(), 0, &[0])?;
    }
    ctx.team_sync(tc.team)?;
    ctx.put(h.dst_slice::<T>(n), &src, right)?;
    let mut got = vec![T::zeroed(); n];
    ctx.get(&mut got, h.src_slice::<T>(n), right)?;
    if got
        .iter()
        .enumerate()
        .any(|(i, &v)| v != T::pat(right, i, h.salt, None))
    {
        h.wrong += 1;
        h.fail(format!(
            "PE {}: {what}: get from PE {right} read wrong data",
            h.me()
        ));
    }
    // Every member adds to the first member's counter at once.
    let k = 8u64;
    for _ in 0..k {
        ctx.atomic_fetch_add(words.slice(0..1)?, u64::from(h.me()) + 1, tc.members[0])?;
    }
    ctx.team_sync(tc.team)?;
    let want: Vec<Option<T>> = (0..n)
        .map(|i| Some(T::pat(left, i, h.salt, None)))
        .collect();
    h.check_dst(&format!("{what} put"), &want)?;
    if me == 0 {
        let total = words.to_vec()?[0];
        let want_total: u64 = tc.members.iter().map(|&p| k * (u64::from(p) + 1)).sum();
        h.calls += 1;
        if total != want_total {
            h.wrong += 1;
            h.fail(format!(
                "PE {}: {what}: fetch_add total {total}, want {want_total}",
                h.me()
            ));
        }
    }

    // put_signal: the data must be in place once the signal is seen.
    h.salt += 1;
    let src = h.write_src::<T>(n, None)?;
    h.poison_dst(n * std::mem::size_of::<T>())?;
    ctx.team_sync(tc.team)?;
    let sig = u64::from(h.salt);
    ctx.put_signal(
        h.dst_slice::<T>(n),
        &src,
        words.slice(1..2)?,
        sig,
        SignalOp::Set,
        right,
    )?;
    let seen = ctx.signal_wait_until(words.slice(1..2)?, Cmp::Eq, sig)?;
    let want: Vec<Option<T>> = (0..n)
        .map(|i| Some(T::pat(left, i, h.salt, None)))
        .collect();
    h.check_dst(&format!("{what} put_signal"), &want)?;
    if seen != sig {
        h.wrong += 1;
        h.fail(format!(
            "PE {}: {what}: signal_wait_until returned {seen}",
            h.me()
        ));
    }
    // Nobody writes this PE's dest or signal again before it has read them.
    ctx.team_sync(tc.team)?;
    Ok(())
}
