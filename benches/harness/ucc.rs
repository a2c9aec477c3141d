//! UCC's collectives beyond SHMEM in the sweep (host scope): how each is
//! called at a sweep size, and the host reference of its result.
//!
//! `bytes` (so `count` elements) is, as for the SHMEM rows, one member's
//! contribution: each member's block of a gather or scatter, one member's
//! part of a reduce_scatter, the whole vector of the reductions and scans.
//! The `v` forms use uneven counts (some zero at small sizes): member `i`
//! gives (or receives) `count * (1 + i % 3) / 3` elements, packed; alltoallv
//! sends `count * (1 + (i + j) % 2) / 2` elements from member `j` to `i`.

use vkshmem::{Context, ReduceOp, SymSlice, Team};

use crate::elem::Elem;

/// The UCC rows, after the SHMEM ones.
pub const UCC: [&str; 12] = [
    "allreduce",
    "reduce_to_root",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "reduce_scatter",
    "reduce_scatterv",
    "allgatherv",
    "alltoallv",
    "inscan",
    "exscan",
];

/// Whether `coll` is one of [`UCC`].
pub fn is_ucc(coll: &str) -> bool {
    UCC.contains(&coll)
}

/// Whether the row's reduction operation applies (the scans are sums).
pub fn takes_op(coll: &str) -> bool {
    matches!(
        coll,
        "allreduce" | "reduce_to_root" | "reduce_scatter" | "reduce_scatterv"
    )
}

/// The `v` forms' counts: member `i`'s part.
pub fn vcounts(count: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| count * (1 + i % 3) / 3).collect()
}

/// Elements alltoallv sends from member `j` to member `i`.
fn a2av(count: usize, j: usize, i: usize) -> usize {
    count * (1 + (i + j) % 2) / 2
}

/// Member `my`'s part of a v-collective of `count` elements a member on
/// `n` members: its element offset among the packed parts and its count.
pub fn part_of(count: usize, n: usize, my: usize) -> (usize, usize) {
    let vc = vcounts(count, n);
    (packed(&vc)[my], vc[my])
}

/// Prefix sums of `c` (packed displacements).
fn packed(c: &[usize]) -> Vec<usize> {
    c.iter()
        .scan(0, |a, &x| {
            let d = *a;
            *a += x;
            Some(d)
        })
        .collect()
}

/// One call of `coll` by this member (`my`, of `n`).
#[allow(clippy::too_many_arguments)]
pub fn call<T: Elem>(
    ctx: &Context,
    team: Team,
    coll: &str,
    op: ReduceOp,
    root: u32,
    my: usize,
    n: usize,
    d: &SymSlice<T>,
    s: &SymSlice<T>,
    count: usize,
) -> vkshmem::Result<()> {
    let vc = vcounts(count, n);
    match coll {
        "allreduce" => ctx.allreduce(team, op, d, s, count),
        "reduce_to_root" => ctx.reduce_to_root(team, root, op, d, s, count),
        "gather" => ctx.gather(team, root, d, s, count),
        "gatherv" => ctx.gatherv(team, root, d, s, &vc, None),
        "scatter" => ctx.scatter(team, root, d, s, count),
        "scatterv" => ctx.scatterv(team, root, d, s, &vc, None),
        "reduce_scatter" => ctx.reduce_scatter(team, op, d, s, count),
        "reduce_scatterv" => ctx.reduce_scatterv(team, op, d, s, &vc),
        "allgatherv" => ctx.allgatherv(team, d, s, &vc, None),
        "alltoallv" => {
            let sc: Vec<usize> = (0..n).map(|i| a2av(count, my, i)).collect();
            let rc: Vec<usize> = (0..n).map(|j| a2av(count, j, my)).collect();
            ctx.alltoallv(team, d, s, &sc, &packed(&sc), &rc, &packed(&rc))
        }
        "inscan" => ctx.sum_inscan(team, d, s, count),
        _ => ctx.sum_exscan(team, d, s, count),
    }
}

/// What member `my` of `members` must hold in its first `count * n` dest
/// elements after `coll`, with every member's source element `k` being
/// `T::pat(pe, k)`: `None` where the dest must keep its poison.
pub fn expected<T: Elem>(
    coll: &str,
    op: ReduceOp,
    root: usize,
    members: &[u32],
    my: usize,
    count: usize,
) -> Vec<Option<T>> {
    let n = members.len();
    let mut want = vec![None; count * n];
    let fold = |range: std::ops::Range<usize>, k: usize, op: ReduceOp| -> T {
        let mut it = range.map(|j| T::pat(members[j], k));
        match it.next() {
            Some(first) => it.fold(first, |a, b| T::combine(op, a, b)),
            None => T::zeroed(),
        }
    };
    let vc = vcounts(count, n);
    let vd = packed(&vc);
    match coll {
        "allreduce" => (0..count).for_each(|k| want[k] = Some(fold(0..n, k, op))),
        "reduce_to_root" if my == root => {
            (0..count).for_each(|k| want[k] = Some(fold(0..n, k, op)));
        }
        "gather" if my == root => {
            (0..count * n).for_each(|k| want[k] = Some(T::pat(members[k / count], k % count)));
        }
        "gatherv" | "allgatherv" if coll == "allgatherv" || my == root => {
            for j in 0..n {
                for t in 0..vc[j] {
                    want[vd[j] + t] = Some(T::pat(members[j], t));
                }
            }
        }
        "scatter" => {
            (0..count).for_each(|k| want[k] = Some(T::pat(members[root], my * count + k)));
        }
        "scatterv" => {
            (0..vc[my]).for_each(|k| want[k] = Some(T::pat(members[root], vd[my] + k)));
        }
        "reduce_scatter" => {
            (0..count).for_each(|k| want[k] = Some(fold(0..n, my * count + k, op)));
        }
        "reduce_scatterv" => {
            (0..vc[my]).for_each(|k| want[k] = Some(fold(0..n, vd[my] + k, op)));
        }
        "alltoallv" => {
            let rc: Vec<usize> = (0..n).map(|j| a2av(count, j, my)).collect();
            let rd = packed(&rc);
            for j in 0..n {
                let sc: Vec<usize> = (0..n).map(|i| a2av(count, j, i)).collect();
                let sd = packed(&sc);
                for t in 0..rc[j] {
                    want[rd[j] + t] = Some(T::pat(members[j], sd[my] + t));
                }
            }
        }
        "inscan" => (0..count).for_each(|k| want[k] = Some(fold(0..my + 1, k, ReduceOp::Sum))),
        "exscan" => (0..count).for_each(|k| want[k] = Some(fold(0..my, k, ReduceOp::Sum))),
        _ => {}
    }
    want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_layouts() {
        assert_eq!(vcounts(6, 4), vec![2, 4, 6, 2]);
        assert_eq!(vcounts(1, 3), vec![0, 0, 1]);
        assert_eq!(packed(&[2, 0, 3]), vec![0, 2, 2]);
        // From j to i: half or all of count, alternating with i + j.
        assert_eq!(a2av(6, 1, 2), 6);
        assert_eq!(a2av(6, 2, 2), 3);
        assert_eq!(a2av(6, 2, 1), a2av(6, 1, 2));
    }

    #[test]
    fn references() {
        let members = [0u32, 1, 2];
        // Exclusive scan: the first member gets zeros.
        let w = expected::<i32>("exscan", ReduceOp::Sum, 0, &members, 0, 2);
        assert_eq!(&w[..2], &[Some(0), Some(0)]);
        let w = expected::<i32>("inscan", ReduceOp::Sum, 0, &members, 2, 1);
        let sum: i32 = members.iter().map(|&p| i32::pat(p, 0)).sum();
        assert_eq!(w[0], Some(sum));
        // A rooted call leaves the other members' dest alone.
        let w = expected::<i32>("gather", ReduceOp::Sum, 1, &members, 0, 2);
        assert!(w.iter().all(Option::is_none));
    }
}
