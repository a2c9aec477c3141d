//! UCC's collectives beyond SHMEM, from the host, on teams: gather(v),
//! scatter(v), allgatherv, alltoallv (data moves with a count per member),
//! reduce_scatter(v), the rooted reduce and the named allreduce (reductions
//! that leave each member a part), the prefix sums (`sum_inscan`,
//! `sum_exscan`), and fan-in / fan-out.
//!
//! # How
//! Every call is the engine's three steps (`engine.rs`, as SHMEM's calls:
//! a [`Ucc`] call of [`UccArgs`] and its moves), on every transport:
//! 1. **Agree.** Each member shares its arguments with the team (a meeting
//!    of the members, [`Runtime::meet`]: on the sync plane for a team on one
//!    node, its own words in its data slot; else the bootstrap's allgather,
//!    the socket or MPI across nodes):
//!    the ones every member must pass alike (root, counts, operation) and
//!    its own (where its source and dest are, and, for alltoallv, its send
//!    and receive layouts), plus whether its own checks passed. Every member
//!    then checks everyone's arguments the same way, so an error is every
//!    member's ([`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the member), never a hang.
//! 2. **Pull.** Each member reads what it receives from the others' sources
//!    ([`Context::get`](crate::Context::get)'s path: the host mapping, copies, or the proxy) into
//!    host memory, and combines it for the reductions (the host combiner of
//!    the small-collective path, in team order).
//! 3. **Close.** The engine's closing meeting, SHMEM's (no member's source
//!    changes before everyone has read it); then each member writes its
//!    own dest where it did not before ([`Then`]). Writing after the
//!    sync makes every in-place use safe (dest overlapping source).
//!
//! **On the host mapping.** Where every heap a member reads is mapped into
//! its process (one device on a CPU driver, lavapipe) and the bytes it
//! writes lie apart from the bytes the others read from its heap during the
//! call (for a data move: every read's bytes of the dest, its own part of
//! an in-place allgatherv or gatherv left where it is, [`writes_apart`];
//! for a fold: the whole dest), step 2 reads straight from the others'
//! mappings into the dest (the data moves) or folds every member's part in
//! one pass into it
//! ([`reduce_slots`] over the mapped parts: the reductions and scans),
//! before the sync: no host buffer, no second copy. That path is taken up
//! to `VKSHMEM_HOST_MAPPED_MAX` bytes per member (every size on lavapipe,
//! 256 bytes where a GPU's heap is mapped through the PCIe BAR, whose host
//! reads are uncached), as for the SHMEM collectives.
//!
//! **On the device.** Past that, or where the host does not map the heap,
//! a data move whose writes lie apart from its exposed bytes runs as the
//! device's wide copy kernels ([`Runtime::copy_wide`]), from the members'
//! heaps straight into the dest, in one batch of the member's own launches
//! before the sync ([`Runtime::pull_launches`]), where every heap it reads
//! is on its device and the reads are in whole 32-bit words; the
//! reductions and scans fold there too, with the wide accumulate kernels
//! (up to 8 sources a launch, chained past that: [`Runtime::fold_wide`]),
//! where the sources are as far off 16-byte alignment as the dest and
//! the kind has wide kernels. Where every member submits as a team
//! (`VKSHMEM_SUBMIT=leader`, the default on NVIDIA, whose processes take
//! turns on the GPU when several submit) and no member may use the
//! mappings, the team's first member plans and submits every member's
//! launches in one batch ([`Runtime::run_together`]). Elsewhere (writes over the member's own
//! exposed bytes, as an in-place alltoallv's, a peer behind the proxy,
//! bytes off whole words) the steps stay as above. Either straight path
//! copies every byte once where the buffer copies it twice, and runs
//! several times faster at a few MiB (benches/RESULTS.md, "UCC direct host
//! path").
//!
//! A call that fails at its closing meeting (another member's read
//! failed) may have written this member's dest already on that path: the
//! dest's contents are then undefined, as after any failed collective.
//!
//! The meetings go through the sync plane, not the bootstrap socket: a
//! socket's allgather costs a round trip through the kernel each, far more
//! than a small call's copies (benches/RESULTS.md, "UCC direct host path").
//!
//! # Where
//! This file: what the steps share (the arguments, what was agreed, a
//! pull's reads, a fold's part) and the engine's `Call` for UCC's calls.
//! The steps: `agree.rs`, `pull.rs` (data moves), `fold.rs` (reductions
//! and scans). The calls, a file per family: `gather.rs` (gather(v),
//! scatter(v), allgatherv), `alltoallv.rs`, `reduce.rs` (reduce_scatter(v),
//! the rooted reduce, allreduce, the scans), `fan.rs`. A new call adds its
//! arguments (`UccArgs`) and its reads (`Pull`) or folds (`Fold`) in its
//! family's file, and its public form in `crate::context::collectives`.

mod agree;
mod alltoallv;
mod fan;
mod fold;
mod gather;
mod pull;
mod reduce;

use pull::apart;

use bytemuck::Pod;

use super::copy;
use super::engine::{Call, Ran, Then};
use super::part;
use super::part::{Part, Step};
use super::reduce::Reduce;
use crate::combine::reduce_slots;
use crate::error::{Error, Result};
use crate::runtime::rendezvous::Members;
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::sync::layout::DATA_BYTES;
use crate::team::Team;
use vkshmem_device::collectives::ReduceOp;

/// One read of a pull: `bytes` at byte `src` of member `from`'s heap into
/// byte `dst` of this member's received data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Read {
    from: u32,
    src: u64,
    dst: u64,
    bytes: u64,
}

/// A member's part of a data move ([`Runtime::pull_into`]).
struct Pull {
    /// What it reads: `dst` relative to its dest.
    reads: Vec<Read>,
    /// Its dest's extent in bytes (every read's `dst + bytes` within it).
    bytes: u64,
    /// Whether the dest has bytes between the reads that must keep what
    /// they held (the buffered path reads the dest's extent first).
    gaps: bool,
    /// The bytes of its heap that members read during the call: heap offset
    /// and length (its source's span; 0 where nobody reads its heap).
    exposed: (u64, u64),
}

/// A member's part of a reduction or scan ([`Runtime::fold_and_close`]).
struct Fold {
    /// Byte offset of its part within every member's source.
    at: u64,
    op: ReduceOp,
    /// The members whose parts it folds (team indices, in order).
    members: std::ops::Range<usize>,
    /// Its dest's heap offset.
    dest: u64,
    /// The bytes of its heap that members read during the call: heap offset
    /// and length.
    exposed: (u64, u64),
}

/// What every member shared in step 1.
struct Shared {
    /// Per member: its own words (offsets, layouts).
    own: Vec<Vec<u64>>,
    /// Per member: its dest's heap offset.
    dests: Vec<u64>,
    /// Whether the team's first member may submit every member's part
    /// (every member submits that way, `VKSHMEM_SUBMIT`, and none may take
    /// the host's mappings instead: [`Runtime::run_together`]).
    together: bool,
}

/// The words of step 1 that every call adds to a member's own: its dest
/// and its flags ([`MINE_LEADER`], [`MINE_MAY_HOST`]).
const MINE_WORDS: usize = 2;

/// A member's flag: it asks the team's first member to submit its part
/// (`VKSHMEM_SUBMIT=leader`, the default on NVIDIA).
const MINE_LEADER: u64 = 1;

/// A member's flag: its part may move through the host's mappings (a
/// mapped dest within `VKSHMEM_HOST_MAPPED_MAX`), so that no other member
/// may move it.
const MINE_MAY_HOST: u64 = 2;

/// What a member adds to step 1 about its own part: its dest's heap offset
/// and the bytes it writes there (none for a call without a dest).
#[derive(Debug, Clone, Copy)]
struct Mine {
    dest: u64,
    bytes: u64,
}

/// The element displacements of `counts` packed in order (prefix sums).
/// (Saturating: a total past `usize::MAX` fails the object checks.)
fn packed(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0usize, |at, &c| {
            let d = *at;
            *at = at.saturating_add(c);
            Some(d)
        })
        .collect()
}

/// The elements a layout spans: the largest `displs[i] + counts[i]`.
fn extent(counts: &[usize], displs: &[usize]) -> Option<u64> {
    counts.iter().zip(displs).try_fold(0u64, |m, (&c, &d)| {
        (c as u64)
            .checked_add(d as u64)
            .map(|e| if c == 0 { m } else { m.max(e) })
    })
}

/// FNV-1a over words: the fingerprint of the arguments members must pass alike.
fn fingerprint(words: &[u64]) -> u64 {
    crate::fnv::fnv1a(words.iter().flat_map(|w| w.to_le_bytes()))
}

/// A UCC call's arguments, as step 1 shares them.
struct UccArgs<'a> {
    what: &'a str,
    /// Alike on every member (root, counts, operation).
    common: Vec<u64>,
    /// This member's own words (where its source is, its layouts).
    own: Vec<u64>,
    /// Its dest and the bytes it receives (`None`: nothing moves).
    part: Option<Mine>,
    /// This member's own checks, taken by the agreement.
    local: Option<Result<()>>,
}

/// A UCC call as the engine runs it: its arguments, and what moves once
/// every member agreed on them (a pull, a fold or a sync).
struct Ucc<'a, M> {
    args: UccArgs<'a>,
    moves: M,
}

impl<M: FnMut(&Runtime, &Members, &Shared) -> Ran> Call for Ucc<'_, M> {
    type Agreed = Shared;

    fn name(&self) -> &str {
        self.args.what
    }

    fn size(&self) -> (u64, Option<u32>) {
        (self.args.part.map_or(0, |p| p.bytes), None)
    }

    fn agree(&mut self, rt: &Runtime, m: &Members) -> Result<Shared> {
        let a = &mut self.args;
        let local = a.local.take().expect("agreed once");
        let own = std::mem::take(&mut a.own);
        rt.agree_ucc(m, a.what, &a.common, own, a.part, local)
    }

    fn run(&mut self, rt: &Runtime, m: &Members, sh: Shared) -> Ran {
        let what = self.args.what;
        match (self.moves)(rt, m, &sh) {
            Ran::Moved { moved, how, then } => Ran::Moved {
                moved: moved.map_err(|e| e.during(what)),
                how,
                then,
            },
            complete => complete,
        }
    }
}

impl Runtime {
    /// Checks a count list for a team of `n` members.
    fn check_counts(what: &str, name: &str, v: &[usize], n: u32) -> Result<()> {
        if v.len() != n as usize {
            return Err(Error::InvalidArgument(format!(
                "{what}: {name} has {} entries, the team {n} members",
                v.len()
            )));
        }
        Ok(())
    }
}

fn check_root(what: &str, root: u32, n: u32) -> Result<()> {
    if root >= n {
        return Err(Error::InvalidArgument(format!(
            "{what}: root {root} is not a member of the team ({n} members)"
        )));
    }
    Ok(())
}

fn overflow(what: &str) -> Error {
    Error::InvalidArgument(format!("{what}: the counts and displacements overflow"))
}

fn fingerprint_str(s: &str) -> u64 {
    fingerprint(&s.bytes().map(u64::from).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::pull::writes_apart;
    use super::*;

    #[test]
    fn layouts() {
        assert_eq!(packed(&[2, 0, 3]), vec![0, 2, 2]);
        assert_eq!(extent(&[2, 0, 3], &[0, 100, 2]), Some(5));
        assert_eq!(extent(&[0, 0], &[7, 9]), Some(0));
        assert_eq!(extent(&[1], &[usize::MAX]), None);
        assert_ne!(fingerprint(&[1, 2]), fingerprint(&[2, 1]));
    }

    /// Which reads of a pull may write the dest before the sync: an
    /// in-place part (this member's own bytes onto themselves) is left out,
    /// the others kept where they write apart from the exposed bytes.
    #[test]
    fn writes_before_the_sync() {
        let read = |from, src, dst, bytes| Read {
            from,
            src,
            dst,
            bytes,
        };
        // allgatherv in place on member 1: dest at 1000, its part (40 bytes
        // at 1040) is its source, read by the others.
        let mut pull = Pull {
            reads: vec![
                read(0, 1000, 0, 40),
                read(1, 1040, 40, 40),
                read(2, 1080, 80, 40),
                read(3, 5000, 120, 0),
            ],
            bytes: 120,
            gaps: true,
            exposed: (1040, 40),
        };
        // Member 2's part sits at the same offset of member 2's heap as it
        // lands in this dest (1080): not this member's own bytes, so kept.
        let kept = writes_apart(&pull, 1, 1000).expect("apart");
        assert_eq!(kept, vec![pull.reads[0], pull.reads[2]]);
        // The same reads into a dest one byte further: its own part would
        // land one byte into the exposed bytes.
        assert_eq!(writes_apart(&pull, 1, 1001), None);
        // Its own bytes moved elsewhere in its heap, apart: kept.
        pull.reads[1].src = 2000;
        pull.exposed = (2000, 40);
        assert_eq!(writes_apart(&pull, 1, 1000).map(|k| k.len()), Some(3));
    }

    /// The direct path's test of a dest against the exposed bytes: touching
    /// on either side is apart, one shared byte is not, and nothing wraps.
    #[test]
    fn apart_ranges() {
        let exposed = (100, 50);
        for (dest, want) in [
            ((0, 100), true),   // ends where the exposed bytes start
            ((150, 10), true),  // starts where they end
            ((0, 101), false),  // one byte into them
            ((149, 10), false), // their last byte
            ((120, 5), false),  // inside
            ((50, 200), false), // around
            ((100, 0), true),   // empty
            ((u64::MAX - 4, 4), true),
        ] {
            assert_eq!(apart(dest, exposed), want, "{dest:?}");
            assert_eq!(apart(exposed, dest), want, "{dest:?} swapped");
        }
        assert!(apart((0, 10), (5, 0)), "nothing exposed");
        assert!(!apart((u64::MAX - 10, 20), (u64::MAX - 1, 1)), "saturating");
    }
}
