//! Host collectives that read the members' heaps directly: one copy, where
//! every member maps every member's heap (a CPU device, whose heap is host
//! memory, and a call too large for the plane's data slot; see
//! `host_path.rs`).
//!
//! The rounds through staging (`staged.rs`) copy every byte twice (into a
//! staging buffer, out into dest) and meet once per MiB. Here each member
//! copies its dest's bytes straight from the members' sources, as Open MPI's
//! single-copy shared-memory collectives do (CMA, XPMEM), and the members
//! meet twice per call whatever its size:
//!
//! 1. the agreement (`run_collective`) is the entry sync: every member's
//!    source is ready and every dest free;
//! 2. each member copies its plan (`moves.rs`) from the members' mapped
//!    heaps into its own dest; a reduction is a reduce-scatter and an
//!    allgather: member `i` combines its slice (`moves::reduce_slice`) of
//!    every member's source into the same slice of its own dest, the members
//!    meet, then each copies the other slices from their owners' dests, so
//!    every source byte is read once, not once per member;
//! 3. a closing meeting: no member returns (and reuses its source) while a
//!    peer may still read it. Each meeting carries every member's outcome, so
//!    a member whose copy failed stops them all.
//!
//! A member writes only its own dest, and its peers read only its source
//! (and, after the reduce-scatter's meeting, its dest's slice). Calls in
//! which a member's dest overlaps its own source are run here only where
//! that is harmless (`moves::direct_safe`); the rest take the rounds.

use super::combine::ReduceFn;
use super::copy;
use super::moves::{self, Plan};
use super::reduce::ReduceOp;
use super::{Desc, Members};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::phases::Phase;

/// A reduction's agreed arguments: `dest = op` over the members' sources,
/// `bytes` of elements of `es` bytes, combined by `f`.
struct Reduction {
    dest: u64,
    bytes: u64,
    op: ReduceOp,
    es: u64,
    f: ReduceFn,
    /// Whether the allgather streams its stores (`copy::streams`).
    stream: bool,
}

/// How the members moved a direct call (carried by its meetings, see
/// `Context::close_members`).
const DIRECT: u32 = 3;

impl Context {
    /// Runs an agreed call on the direct path (module docs). `reduce`
    /// combines the members' slices of a reduction.
    pub(crate) fn direct_move(
        &self,
        m: &Members,
        all: &[Desc],
        name: &str,
        reduce: Option<ReduceFn>,
    ) -> Result<()> {
        let (contrib, plan) = moves::plan(m, all)?;
        let phases = &self.inner.phases;
        let running = phases.start();
        // Member `i`'s contribution in this process's mapping of its heap.
        let source = |i: u32| -> Result<*const u8> {
            let (pe, at, n) = (
                m.shape.member(i),
                all[i as usize].source,
                contrib[i as usize],
            );
            self.mapped_at(pe, at, n)
                .map(<*mut u8>::cast_const)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{name}: {n} bytes at offset {at} of PE {pe}'s heap are not mapped here"
                    ))
                })
        };
        let own = |dest: u64, n: u64| {
            self.own_mapped(dest, n).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{name}: dest ({n} bytes at offset {dest}) is not in the mapped heap"
                ))
            })
        };
        // Streaming stores past the last-level cache (`copy.rs`): the
        // members' contributions, and their dests (this member's size on
        // each: the team's calls are symmetric but for a root's skip).
        let dests = match &plan {
            Plan::Copies(moves) => moves.iter().map(moves::Move::dest_span).sum(),
            Plan::Reduce { bytes, .. } => *bytes,
        };
        let stream = copy::streams(
            contrib.iter().sum(),
            u64::from(m.shape.size).saturating_mul(dests),
            self.inner.host_stream,
        );
        let moved = match &plan {
            Plan::Copies(moves) => self.direct_copies(m, all, moves, &source, &own, stream),
            Plan::Reduce { dest, bytes, op } => {
                let f = reduce.expect("reductions pass their combiner");
                let es = u64::from(all[m.me as usize].es);
                let r = Reduction {
                    dest: *dest,
                    bytes: *bytes,
                    op: *op,
                    es,
                    f,
                    stream,
                };
                // A failure before the middle meeting stops every member
                // there (all saw it); one after it goes to the closing one.
                self.direct_reduce(m, name, &r, &source, &own)?
            }
        };
        // Timed as the kernel path's run and closing meeting are (a
        // reduction's run includes its middle meeting), so `--phases` tells
        // this path from the rounds (neither) and the kernels (submissions).
        let closing = phases.end(Phase::Run, running);
        let verdict = self
            .close_members(m, name, moved.is_ok(), DIRECT)
            .map_err(|e| e.during(name));
        phases.end(Phase::Close, closing);
        // A failure of this PE's own is the more precise error.
        moved.and(verdict)
    }

    /// A reduction on the direct path: this member's slice of every source
    /// combined into its dest (reduce-scatter), a meeting, then the other
    /// members' slices from their dests (allgather). The outer error: the
    /// reduce-scatter failed on some member, and every member stops at the
    /// meeting; the inner result: this member's allgather, for the closing
    /// meeting.
    fn direct_reduce(
        &self,
        m: &Members,
        name: &str,
        r: &Reduction,
        source: &dyn Fn(u32) -> Result<*const u8>,
        own: &dyn Fn(u64, u64) -> Result<*mut u8>,
    ) -> Result<Result<()>> {
        let slice = |i: u32| moves::reduce_slice(r.bytes, r.es, m.shape.size, i);
        let (lo, hi) = slice(m.me);
        let scattered = own(r.dest + lo, hi - lo).and_then(|out| {
            let slots = (0..m.shape.size)
                // SAFETY (the `add`): lo <= bytes, within each member's
                // contribution (`source` checked the whole of it).
                .map(|i| source(i).map(|p| unsafe { p.add(lo as usize) }))
                .collect::<Result<Vec<_>>>()?;
            // Every member's source bytes lo..hi stay as they are until the
            // meeting below (a member in place writes only its own slice,
            // this one); `out` is this PE's dest, which only this PE writes.
            (r.f)(r.op, ((hi - lo) / r.es) as usize, &slots, out);
            Ok(())
        });
        let verdict = self
            .close_members(m, name, scattered.is_ok(), DIRECT)
            .map_err(|e| e.during(name));
        scattered.and(verdict)?;
        // The other members' slices, complete since the meeting; nobody
        // writes them again before the closing meeting.
        Ok(own(r.dest, r.bytes).and_then(|to| {
            for i in (0..m.shape.size).filter(|&i| i != m.me) {
                let (lo, hi) = slice(i);
                if lo == hi {
                    continue;
                }
                let pe = m.shape.member(i);
                let from = self.mapped_at(pe, r.dest + lo, hi - lo).ok_or_else(|| {
                    Error::InvalidArgument(format!("{name}: PE {pe}'s dest is not mapped here"))
                })?;
                // SAFETY: `from` is hi - lo bytes of PE `pe`'s mapped heap
                // (mapped_at checked the range), written by it before the
                // meeting above and not again before the closing one; `to +
                // lo` the same bytes of this PE's dest (own checked all of
                // it), a different allocation's mapping (i != me), so they
                // do not overlap. Raw bytes, no references.
                unsafe {
                    copy::copy(
                        from.cast_const(),
                        to.add(lo as usize),
                        (hi - lo) as usize,
                        r.stream,
                    )
                };
            }
            copy::fence(r.stream);
            Ok(())
        }))
    }

    /// The copies of `moves` into this PE's dest, from the members' mapped
    /// contributions (`source`), skipping moves onto themselves.
    fn direct_copies(
        &self,
        m: &Members,
        all: &[Desc],
        moves: &[moves::Move],
        source: &dyn Fn(u32) -> Result<*const u8>,
        own: &dyn Fn(u64, u64) -> Result<*mut u8>,
        stream: bool,
    ) -> Result<()> {
        let mine = all[m.me as usize].source;
        for mv in moves
            .iter()
            .filter(|mv| !moves::onto_itself(mv, m.me, mine))
        {
            let span = mv.dest_span();
            if span == 0 {
                continue;
            }
            let to = own(mv.dest, span)?;
            let from = source(mv.member)?;
            for (at, dest, n) in mv.within(0, u64::MAX) {
                // SAFETY: `from + at` is n bytes of the member's contribution
                // (`within` stays inside the move's blocks, which `plan` keeps
                // inside the contribution that `source` checked), unchanged
                // until the closing meeting; `to + (dest - mv.dest)` is n
                // bytes of this PE's dest span (own checked it), which only
                // this PE writes. `direct_safe` let the call here only if no
                // move but those onto themselves (skipped) writes bytes a
                // member reads, so the two do not overlap and nobody else
                // writes them; raw bytes, no references.
                unsafe {
                    copy::copy(
                        from.add(at as usize),
                        to.add((dest - mv.dest) as usize),
                        n as usize,
                        stream,
                    )
                };
            }
        }
        copy::fence(stream);
        Ok(())
    }
}
