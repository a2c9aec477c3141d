//! What each collective moves, as copies out of the members' *contributions*
//! (the bytes each member stages: the root's source for a broadcast, every
//! member's source otherwise): one description for the two paths that stage,
//! the host path for small calls (`host_path.rs`, one staging in the sync
//! plane's data slots) and the staged transport (`staged.rs`, rounds through
//! the node segment's staging buffers). Pure: offsets and lengths only.

use super::reduce::ReduceOp;
use super::{collect_total, Desc, Members, Which};
use crate::error::Result;

/// `count` blocks of `bytes`: block `k` from byte `at + k * src_stride` of
/// member `member`'s contribution to byte `dest + k * dst_stride` of this PE's
/// heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    /// The member (team index) whose contribution is read.
    pub member: u32,
    /// Byte offset of block 0 in the contribution.
    pub at: u64,
    /// Heap byte offset of block 0 in this PE's dest.
    pub dest: u64,
    /// Bytes per block.
    pub bytes: u64,
    /// Blocks.
    pub count: u64,
    /// Bytes between blocks in the contribution.
    pub src_stride: u64,
    /// Bytes between blocks in dest.
    pub dst_stride: u64,
}

impl Move {
    /// One contiguous block.
    fn one(member: u32, at: u64, dest: u64, bytes: u64) -> Move {
        Move {
            member,
            at,
            dest,
            bytes,
            count: 1,
            src_stride: bytes,
            dst_stride: bytes,
        }
    }

    /// The same move as one block when its blocks follow each other on both
    /// sides (unit strides), so that it is copied at once, not a block at a
    /// time.
    fn coalesced(self) -> Move {
        if self.count > 1 && self.src_stride == self.bytes && self.dst_stride == self.bytes {
            Move::one(self.member, self.at, self.dest, self.bytes * self.count)
        } else {
            self
        }
    }

    /// The heap bytes of dest it writes, from first to last (0 when empty).
    pub fn dest_span(&self) -> u64 {
        if self.count == 0 || self.bytes == 0 {
            0
        } else {
            (self.count - 1) * self.dst_stride + self.bytes
        }
    }

    /// The parts of this move that read contribution bytes `lo..hi`, as
    /// (contribution offset, dest offset, bytes), in block order.
    pub fn within(&self, lo: u64, hi: u64) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        // Block k reads [at + k ss, at + k ss + bytes): it meets [lo, hi) when
        // at + k ss < hi and at + k ss + bytes > lo.
        let ss = self.src_stride.max(1);
        let first = if lo < self.at + self.bytes {
            0
        } else {
            (lo - self.at - self.bytes) / ss + 1
        };
        let end = if hi <= self.at {
            0
        } else {
            (hi - self.at).div_ceil(ss).min(self.count)
        };
        (first..end).filter_map(move |k| {
            let start = self.at + k * ss;
            let (a, b) = (start.max(lo), (start + self.bytes).min(hi));
            (a < b).then(|| (a, self.dest + k * self.dst_stride + (a - start), b - a))
        })
    }
}

/// What this PE does with the members' contributions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Copies into this PE's dest.
    Copies(Vec<Move>),
    /// `dest = contribution_0 op contribution_1 op …`, element by element
    /// (every member contributes `bytes`).
    Reduce {
        /// Heap byte offset of this PE's dest.
        dest: u64,
        /// Bytes of every contribution (and of dest).
        bytes: u64,
        /// The operation.
        op: ReduceOp,
    },
}

/// Every member's contribution (bytes, in team order) and this PE's plan for a
/// call whose descriptors (agreed) are `all`.
///
/// # Errors
/// A collect whose counts add up to more than some member's dest holds.
pub(crate) fn plan(m: &Members, all: &[Desc]) -> Result<(Vec<u64>, Plan)> {
    plan_of(m.shape.size, m.me, all)
}

/// [`plan`] for team member `me` of a team of `size`: what any member would
/// plan for it (the descriptors are the same on every member).
fn plan_of(size: u32, me: u32, all: &[Desc]) -> Result<(Vec<u64>, Plan)> {
    let d = &all[me as usize];
    let es = d.es as u64;
    let b = d.nelems * es;
    let uniform = |bytes: u64| vec![bytes; size as usize];
    let which = Which::from_code(d.which).expect("agreed descriptors name a collective");
    Ok(match which {
        Which::Broadcast => {
            let mut c = vec![0; size as usize];
            c[d.root as usize] = b;
            let moves = if d.skip_root == 1 && me == d.root {
                vec![]
            } else {
                vec![Move::one(d.root, 0, d.dest, b)]
            };
            (c, Plan::Copies(moves))
        }
        Which::Fcollect => (
            uniform(b),
            Plan::Copies(
                (0..size)
                    .map(|i| Move::one(i, 0, d.dest + i as u64 * b, b))
                    .collect(),
            ),
        ),
        Which::Alltoall => (
            uniform(size as u64 * b),
            Plan::Copies(
                (0..size)
                    .map(|i| Move::one(i, me as u64 * b, d.dest + i as u64 * b, b))
                    .collect(),
            ),
        ),
        Which::Collect => {
            let total = collect_total(all)?;
            let mut at = d.dest;
            let mut moves = Vec::new();
            for (i, di) in all.iter().enumerate() {
                let bi = di.nelems * es;
                moves.push(Move::one(i as u32, 0, at, bi));
                at += bi;
            }
            debug_assert_eq!(at, d.dest + total * es);
            (
                all.iter().map(|di| di.nelems * es).collect(),
                Plan::Copies(moves),
            )
        }
        Which::Alltoalls => {
            // Element k of block j: dest[(j n + k) dst] from member j's
            // source[(me n + k) sst] (strides in elements). A member stages
            // its source's whole strided span.
            let (n, dst, sst) = (d.nelems, d.dst, d.sst);
            let span = if n == 0 {
                0
            } else {
                ((size as u64 * n - 1) * sst + 1) * es
            };
            let moves = (0..size)
                .map(|j| {
                    Move {
                        member: j,
                        at: me as u64 * n * sst * es,
                        dest: d.dest + j as u64 * n * dst * es,
                        bytes: es,
                        count: n,
                        src_stride: sst * es,
                        dst_stride: dst * es,
                    }
                    .coalesced()
                })
                .collect();
            (uniform(span), Plan::Copies(moves))
        }
        Which::Reduce => (
            uniform(b),
            Plan::Reduce {
                dest: d.dest,
                bytes: b,
                op: ReduceOp::ALL[d.op as usize],
            },
        ),
    })
}

/// Whether `mv`, a move of member `me` whose contribution starts at heap
/// byte `source`, reads exactly the bytes it would write (a member's own
/// block of an fcollect in place, a root's broadcast onto its source): a
/// copy the host's direct path skips.
pub(crate) fn onto_itself(mv: &Move, me: u32, source: u64) -> bool {
    mv.member == me
        && mv.dest == source + mv.at
        && (mv.count <= 1 || mv.src_stride == mv.dst_stride)
}

/// Whether the members of a team of `size` may run the call whose agreed
/// descriptors are `all` on the host's direct path (`direct.rs`): each reads
/// the others' contributions straight from their heaps while writing its own
/// dest, so no member may write bytes of its own contribution, which its
/// peers may still be reading. Moves onto themselves ([`onto_itself`]) are
/// skipped, so they write nothing; a reduction in place (dest = source) is
/// safe too, as the direct path reduces it (slice `i` of every source and
/// dest is read and written by member `i` alone, each chunk read before it
/// is written).
/// Anything else that overlaps takes the rounds through staging, which stage
/// every part before any dest is written.
///
/// # Errors
/// As [`plan`].
pub(crate) fn direct_safe(size: u32, all: &[Desc]) -> Result<bool> {
    let apart = |a: (u64, u64), b: (u64, u64)| a.0 >= a.1 || b.0 >= b.1 || a.1 <= b.0 || b.1 <= a.0;
    for i in 0..size {
        let (contrib, plan) = plan_of(size, i, all)?;
        let source = all[i as usize].source;
        let read = (source, source + contrib[i as usize]);
        let ok = match plan {
            Plan::Reduce { dest, bytes, .. } => dest == source || apart((dest, dest + bytes), read),
            Plan::Copies(moves) => moves
                .iter()
                .filter(|mv| !onto_itself(mv, i, source))
                .all(|mv| apart((mv.dest, mv.dest + mv.dest_span()), read)),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What one member pushes on the host's direct path (`direct.rs`) in a
/// collect or fcollect: `bytes` from byte `at` of member `member`'s
/// contribution, copied to every `(member, heap offset)` of `to` (their
/// dests), so that the contribution is read once, not once per member as
/// [`plan`]'s copies (every member pulling into its own dest) read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Push {
    /// The member (team index) whose contribution is read.
    pub member: u32,
    /// Byte offset in the contribution.
    pub at: u64,
    /// Bytes.
    pub bytes: u64,
    /// Where they go: (team index, heap byte offset in its dest), moves onto
    /// themselves left out ([`onto_itself`]).
    pub to: Vec<(u32, u64)>,
}

/// This PE's [`Push`] for a call whose descriptors (agreed) are `all`:
/// the same bytes, from the same contribution bytes, as every member's
/// [`plan`] together (less the moves onto themselves). A collect's or
/// fcollect's member pushes its own source; a broadcast's member `i` slice
/// `i` of the root's source ([`push_slice`]), so that the root's source is
/// read once, not once per member. `None` for the other collectives: an
/// alltoall's blocks are each read once already, and a reduction pushes
/// its slices itself (`direct.rs`).
///
/// The broadcast's push beats every member pulling the whole source only
/// where it goes a few KiB at a time from L1 (`direct.rs`); 64 KiB at a
/// time it lost (benches/RESULTS.md, "Broadcast push from L1").
///
/// # Errors
/// As [`plan`].
pub(crate) fn push(m: &Members, all: &[Desc]) -> Result<Option<Push>> {
    push_of(m.shape.size, m.me, all)
}

/// [`push`] for team member `me` of a team of `size`.
fn push_of(size: u32, me: u32, all: &[Desc]) -> Result<Option<Push>> {
    let d = &all[me as usize];
    let es = d.es as u64;
    let b = d.nelems * es;
    // Where this member's block starts in every dest.
    let block = match Which::from_code(d.which).expect("agreed descriptors name a collective") {
        Which::Fcollect => u64::from(me) * b,
        Which::Collect => {
            collect_total(all)?;
            all[..me as usize].iter().map(|x| x.nelems * es).sum()
        }
        Which::Broadcast => {
            // Member `me` pushes slice `me` of the root's source to the
            // same bytes of every dest but the root's where it skips
            // itself or is in place.
            let root = d.root;
            let r = &all[root as usize];
            let (lo, hi) = push_slice(b, es, size, me);
            let to = (0..size)
                .filter(|&j| !(j == root && (r.skip_root == 1 || r.dest == r.source)))
                .map(|j| (j, all[j as usize].dest + lo))
                .collect();
            return Ok(Some(Push {
                member: root,
                at: lo,
                bytes: hi - lo,
                to,
            }));
        }
        Which::Alltoall | Which::Alltoalls | Which::Reduce => return Ok(None),
    };
    let to = (0..size)
        .map(|j| (j, all[j as usize].dest + block))
        // A member's own block onto its source (in place).
        .filter(|&(j, to)| !(j == me && to == d.source))
        .collect();
    Ok(Some(Push {
        member: me,
        at: 0,
        bytes: b,
        to,
    }))
}

/// Member `i`'s slice of a reduction of `bytes` (elements of `es` bytes)
/// among `size` members on the host's direct path, which member `i`
/// combines from every member and pushes into every dest: bytes `lo..hi`.
/// In member order the slices cover every byte once; each starts on a whole
/// element and, where `es` divides 64, on a cache line.
pub(crate) fn push_slice(bytes: u64, es: u64, size: u32, i: u32) -> (u64, u64) {
    let grain = if 64 % es.max(1) == 0 { 64 } else { es.max(1) };
    let per = bytes.div_ceil(grain).div_ceil(u64::from(size.max(1))) * grain;
    let lo = (u64::from(i) * per).min(bytes);
    (lo, (lo + per).min(bytes))
}

/// How the staged transport cuts the members' contributions into rounds of
/// at most `stage` bytes each.
///
/// A contribution made of blocks that go to different members (an
/// alltoall's: block `j` is member `j`'s) is cut across its blocks: round `r`
/// stages bytes `r q .. (r + 1) q` of every block, block `k`'s at `k q` in
/// the staging buffer, so that every member has something to read in every
/// round. Cut along its length instead, the rounds of block `j` would keep
/// member `j` busy and the others idle, one member at a time. Any other
/// contribution is one block, staged `stage` bytes a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Bytes per block (the last block of a contribution may be shorter);
    /// 0: the contribution is one block.
    block: u64,
    /// Bytes of each block per round.
    q: u64,
}

impl Cut {
    /// The cut for a call whose descriptors (agreed) are `all`, with `stage`
    /// bytes of staging buffer per member and round.
    pub fn new(m: &Members, all: &[Desc], stage: u64) -> Cut {
        let d = &all[m.me as usize];
        let es = d.es as u64;
        let block = match Which::from_code(d.which) {
            Some(Which::Alltoall) => d.nelems * es,
            Some(Which::Alltoalls) => d.nelems * d.sst * es,
            _ => 0,
        };
        let size = m.shape.size as u64;
        if block == 0 || size <= 1 {
            return Cut { block: 0, q: stage };
        }
        // At most `size` blocks share a buffer; a multiple of a cache line
        // per block where that fits.
        let q = stage / size;
        let q = if q >= 64 { q & !63 } else { q.max(1) };
        Cut { block, q }
    }

    /// Rounds a contribution of `bytes` takes.
    pub fn rounds(&self, bytes: u64) -> u64 {
        let longest = if self.block == 0 {
            bytes
        } else {
            self.block.min(bytes)
        };
        longest.div_ceil(self.q)
    }

    /// The block of a contribution that only its owner reads, when its
    /// blocks go one to each member (an alltoall's block `me` is this PE's
    /// own): `me`, else `None`.
    pub fn private_block(&self, me: u32) -> Option<u64> {
        (self.block != 0).then_some(u64::from(me))
    }

    /// Round `r`'s windows of a contribution of `bytes`, in contribution
    /// order. Over all rounds the windows cover every byte once.
    pub fn windows(&self, bytes: u64, r: u64) -> impl Iterator<Item = Window> + '_ {
        let (block, blocks) = if self.block == 0 {
            (bytes, u64::from(bytes > 0))
        } else {
            (self.block, bytes.div_ceil(self.block))
        };
        (0..blocks).filter_map(move |k| {
            let start = k * block;
            let end = (start + block).min(bytes);
            let lo = start + r * self.q;
            let hi = (lo + self.q).min(end);
            (lo < hi).then_some(Window {
                block: k,
                lo,
                hi,
                at: k * self.q,
            })
        })
    }
}

/// Contribution bytes `lo..hi` (of block `block`), staged at byte `at` of the
/// staging buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub block: u64,
    pub lo: u64,
    pub hi: u64,
    pub at: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Which;

    /// A cut's windows cover every byte of a contribution once, within the
    /// staging buffer and without two windows of a round overlapping there,
    /// for one-block and many-block cuts and blocks that do not fill a round.
    #[test]
    fn cuts_cover_every_contribution_byte_once() {
        for (block, q) in [
            (0u64, 1000u64),
            (0, 7),
            (96, 64),
            (100, 64),
            (5, 3),
            (64, 64),
            (1, 1),
        ] {
            let cut = Cut { block, q };
            let stage = if block == 0 { q } else { q * 8 };
            for bytes in [
                0u64,
                1,
                5,
                63,
                64,
                100,
                333,
                8 * block.max(1),
                8 * block.max(1) - 3,
            ] {
                if block > 0 && bytes.div_ceil(block) > 8 {
                    continue;
                }
                let mut seen = vec![0u32; bytes as usize];
                for r in 0..cut.rounds(bytes) {
                    let mut used = vec![false; stage as usize];
                    for Window {
                        block: k,
                        lo,
                        hi,
                        at,
                    } in cut.windows(bytes, r)
                    {
                        assert!(lo < hi && hi <= bytes, "{cut:?} {bytes} r{r}");
                        if block > 0 {
                            assert!(lo >= k * block && hi <= (k + 1) * block);
                        }
                        for x in 0..hi - lo {
                            seen[(lo + x) as usize] += 1;
                            let b = (at + x) as usize;
                            assert!(b < stage as usize && !used[b], "{cut:?} {bytes} r{r}");
                            used[b] = true;
                        }
                    }
                }
                assert_eq!(cut.windows(bytes, cut.rounds(bytes)).count(), 0);
                assert!(seen.iter().all(|&c| c == 1), "{cut:?} {bytes}: {seen:?}");
            }
        }
    }

    /// `within` over consecutive windows gives every byte of the move once,
    /// at the right dest, whatever the windows' size.
    #[test]
    fn windows_cover_every_block_once() {
        let moves = [
            Move::one(0, 0, 1000, 37),
            Move::one(1, 5, 2000, 0),
            Move {
                member: 2,
                at: 12,
                dest: 100,
                bytes: 4,
                count: 9,
                src_stride: 12,
                dst_stride: 8,
            },
            Move {
                member: 3,
                at: 3,
                dest: 0,
                bytes: 5,
                count: 4,
                src_stride: 5,
                dst_stride: 5,
            },
        ];
        for mv in moves {
            let mut want = Vec::new();
            for k in 0..mv.count {
                for x in 0..mv.bytes {
                    want.push((
                        mv.at + k * mv.src_stride + x,
                        mv.dest + k * mv.dst_stride + x,
                    ));
                }
            }
            for window in [1u64, 2, 3, 7, 16, 1000] {
                let mut got = Vec::new();
                let end = mv.at + mv.count * mv.src_stride.max(mv.bytes) + window;
                let mut lo = 0;
                while lo < end {
                    for (a, dest, n) in mv.within(lo, lo + window) {
                        assert!(a >= lo && a + n <= lo + window);
                        got.extend((0..n).map(|x| (a + x, dest + x)));
                    }
                    lo += window;
                }
                assert_eq!(got, want, "{mv:?} window {window}");
            }
        }
    }

    /// The direct path's slices cover every byte once, in member order,
    /// each on whole elements (and cache lines where the element size
    /// divides 64), whatever the size and member count.
    #[test]
    fn push_slices_cover_every_byte_once() {
        for es in [1u64, 2, 4, 8, 3] {
            for elems in [0u64, 1, 5, 15, 16, 17, 100, 1023, 4096 + 7] {
                let bytes = elems * es;
                for size in 1..=9u32 {
                    let mut next = 0;
                    for i in 0..size {
                        let (lo, hi) = push_slice(bytes, es, size, i);
                        assert_eq!(lo, next, "es {es} bytes {bytes} size {size} member {i}");
                        assert!(lo <= hi && hi <= bytes);
                        assert_eq!(lo % es, 0);
                        if 64 % es == 0 && hi < bytes {
                            assert_eq!(hi % 64, 0);
                        }
                        next = hi;
                    }
                    assert_eq!(next, bytes, "es {es} bytes {bytes} size {size}");
                }
            }
        }
    }

    /// Every member's [`push`] together moves the same contribution bytes to
    /// the same dest bytes as every member's [`plan`] (less the moves onto
    /// themselves, which the direct path skips), each dest byte once: for
    /// fcollects, collects of uneven counts and broadcasts (roots that skip
    /// themselves and roots that do not), in place and not, 1 to 9 members,
    /// 1- to 8-byte elements. The other collectives push nothing.
    #[test]
    fn pushes_move_what_the_copies_move() {
        use std::collections::BTreeMap;
        let mut seen = 0;
        for size in 1..=9u32 {
            for es in [1u32, 2, 4, 8] {
                for elems in [0u64, 1, 7, 33, 100] {
                    for which in [Which::Fcollect, Which::Collect, Which::Broadcast] {
                        for in_place in [false, true] {
                            let s = u64::from(size);
                            let count = |i: u64| match which {
                                Which::Collect => elems + 3 * i,
                                _ => elems,
                            };
                            // A broadcast's root, which skips itself in
                            // some cases (in place it is its own move).
                            let root = (elems as u32 + es) % size;
                            let skip = !in_place && elems % 2 == 1;
                            let before = |i: u64| (0..i).map(count).sum::<u64>() * u64::from(es);
                            let all: Vec<Desc> = (0..s)
                                .map(|i| {
                                    let mut d = Desc::new::<u32>(which, 4096, 1 << 20, count(i));
                                    d.es = es;
                                    d.cap = (0..s).map(count).sum();
                                    if which == Which::Broadcast {
                                        d.root = root;
                                        d.skip_root = u32::from(skip);
                                        d.cap = elems;
                                        if in_place {
                                            d.source = d.dest;
                                        }
                                    } else if in_place {
                                        // The source is the member's own block.
                                        d.source = d.dest + before(i);
                                    }
                                    d
                                })
                                .collect();
                            let mut pulled = BTreeMap::new();
                            for j in 0..size {
                                let (_, Plan::Copies(moves)) = plan_of(size, j, &all).unwrap()
                                else {
                                    panic!("copies")
                                };
                                let source = all[j as usize].source;
                                for mv in moves.iter().filter(|mv| !onto_itself(mv, j, source)) {
                                    for (a, dest, n) in mv.within(0, u64::MAX) {
                                        for x in 0..n {
                                            pulled.insert((j, dest + x), (mv.member, a + x));
                                        }
                                    }
                                }
                            }
                            let mut pushed = BTreeMap::new();
                            let mut writes = 0;
                            for i in 0..size {
                                let p = push_of(size, i, &all).unwrap().expect("a push");
                                for &(j, to) in &p.to {
                                    for x in 0..p.bytes {
                                        pushed.insert((j, to + x), (p.member, p.at + x));
                                        writes += 1;
                                    }
                                }
                            }
                            let case = format!(
                                "{which:?} size {size} es {es} elems {elems} in place {in_place}"
                            );
                            assert_eq!(writes, pushed.len(), "a dest byte written twice: {case}");
                            assert_eq!(pushed, pulled, "{case}");
                            seen += pushed.len();
                        }
                    }
                }
            }
        }
        assert!(seen > 0);
        for which in [Which::Alltoall, Which::Alltoalls, Which::Reduce] {
            let all = descs(which, 3, 10, |_| 0, |_| 1 << 20);
            assert_eq!(push_of(3, 1, &all).unwrap(), None, "{which:?}");
        }
    }

    /// Descriptors of `size` members of `which` over `n` 4-byte elements,
    /// member `i`'s dest and source at `dest(i)` and `source(i)`.
    fn descs(
        which: Which,
        size: u32,
        n: u64,
        dest: impl Fn(u64) -> u64,
        source: impl Fn(u64) -> u64,
    ) -> Vec<Desc> {
        (0..u64::from(size))
            .map(|i| {
                let mut d = Desc::new::<u32>(which, dest(i), source(i), n);
                d.cap = n * u64::from(size);
                d
            })
            .collect()
    }

    /// The direct path takes calls whose dests miss what peers read, and
    /// those in place where that is harmless (an fcollect's own block, a
    /// root's broadcast onto its source, a reduction onto its source); it
    /// leaves the rest (an alltoall in place, a dest across another
    /// member's block of the source, a reduction half over its source) to
    /// the rounds.
    #[test]
    fn direct_path_only_where_no_dest_meets_what_peers_read() {
        let (n, b) = (100u64, 400u64);
        for size in [1u32, 2, 3, 8] {
            let s = u64::from(size);
            let safe = |which, dest: &dyn Fn(u64) -> u64, source: &dyn Fn(u64) -> u64| {
                direct_safe(size, &descs(which, size, n, dest, source)).unwrap()
            };
            for which in [
                Which::Fcollect,
                Which::Collect,
                Which::Alltoall,
                Which::Alltoalls,
                Which::Broadcast,
                Which::Reduce,
            ] {
                // Apart.
                assert!(safe(which, &|_| 0, &|_| 1 << 20), "{which:?} apart, {size}");
            }
            // fcollect and collect in place: the source is the member's block.
            for which in [Which::Fcollect, Which::Collect] {
                assert!(
                    safe(which, &|_| 0, &|i| i * b),
                    "{which:?} in place, {size}"
                );
                // The source another member's block of dest: it is written
                // while peers read it (unless alone).
                assert_eq!(
                    safe(which, &|_| 0, &|i| ((i + 1) % s) * b),
                    size == 1,
                    "{which:?} shifted, {size}"
                );
            }
            // A broadcast onto the root's source: the root skips it; the
            // others read nothing of their own.
            assert!(
                safe(Which::Broadcast, &|_| 0, &|_| 0),
                "broadcast in place, {size}"
            );
            // An alltoall in place: every block but its own is written while
            // its owner reads it.
            assert_eq!(
                safe(Which::Alltoall, &|_| 0, &|_| 0),
                size == 1,
                "alltoall in place, {size}"
            );
            // Reductions: in place yes, half over the source no.
            assert!(
                safe(Which::Reduce, &|_| 0, &|_| 0),
                "reduce in place, {size}"
            );
            assert!(
                !safe(Which::Reduce, &|_| 0, &|_| b / 2),
                "reduce overlapping, {size}"
            );
        }
    }
}
