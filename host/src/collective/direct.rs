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
//!    heaps into its own dest (an alltoall); in a collect or fcollect each
//!    member pushes its own source into its block of every member's dest
//!    instead (`moves::push`), and in a broadcast its slice of the root's
//!    source into the same bytes of every dest, a chunk at a time, so that
//!    every source byte is read once; a reduction is a reduce-scatter whose
//!    slice owners push their results: member `i` combines its slice
//!    (`moves::push_slice`) of every member's source a small chunk at a
//!    time into a buffer in L1 and moves each chunk into the same bytes of
//!    every member's dest, its own too (`copy::copy_from_l1`: string moves,
//!    which do not read the dest's lines first), so every source byte is
//!    read once and every dest byte written once;
//! 3. a closing meeting: no member returns (and reuses its source, or reads
//!    its dest) while a peer may still read or write them. Each meeting
//!    carries every member's outcome, so a member whose copy failed stops
//!    them all.
//!
//! Pulled copies: a member writes only its own dest, and its peers read only
//! its source. Pushed gathers: member `i` alone reads its source and writes
//! block `i` of every dest; pushed broadcasts: member `i` alone reads slice
//! `i` of the root's source and writes it into every dest. Reductions: the
//! bytes of slice `i` of every source and every dest are read and written
//! by member `i` alone. Calls in which a member's dest overlaps its own
//! source are run here only where that is harmless (`moves::direct_safe`);
//! the rest take the rounds.

use super::copy;
use super::engine::{Ran, Then};
use super::moves::{self, Plan};
use super::reduce::ReduceOp;
use super::{Desc, Members};
use crate::combine::ReduceFn;
use crate::error::{Error, Result};
use crate::runtime::Runtime;

/// A reduction's agreed arguments: `dest = op` over the members' sources,
/// `bytes` of elements of `es` bytes, combined by `f`.
struct Reduction {
    dest: u64,
    bytes: u64,
    op: ReduceOp,
    es: u64,
    f: ReduceFn,
    /// Whether the pushes stream their stores (`copy::streams`).
    stream: bool,
    /// Whether the type is combined in L1 chunks (`combine::chunks_in_l1`).
    in_l1: bool,
}

/// How the members moved a direct call (carried by its meetings, see
/// `Runtime::close_members`).
const DIRECT: u32 = 3;

/// Bytes of a gather's source pushed to the dests at a time where the
/// pushes stream (and of a streaming reduction's slice out of place): well
/// inside L2, so that every push after the first reads the chunk from this
/// core's cache. Smaller chunks ran slower where the pushes stream
/// (benches/RESULTS.md, "Push chunk size").
const PUSH_CHUNK: u64 = 64 << 10;

/// [`PUSH_CHUNK`] where the pushes do not stream: inside L1, whence every
/// push after the first moves it (`copy::copy_from_l1`) without going out
/// to L2: faster than 64 KiB for collect and fcollect on 2 to 8 PEs
/// (benches/RESULTS.md, "Push chunk size").
const PUSH_L1_CHUNK: u64 = 8 << 10;

/// Bytes of a reduction's slice combined at a time: into a buffer that
/// stays in L1 ([`L1Chunk`]), whence `copy::copy_from_l1` moves it to every
/// dest without reading the dests' lines first. 4 KiB: at least as fast as
/// 8 in place and faster out of place (benches/RESULTS.md, "Reduction L1
/// chunks"). The combine folds a chunk of at most one of its blocks straight
/// into it.
const REDUCE_CHUNK: usize = 4 << 10;

/// A reduction's combined chunk, cache-line aligned, with a line to spare:
/// the chunk is combined at the dest's offset within its cache line
/// ([`L1Chunk::at_offset_of`]).
#[repr(C, align(64))]
struct L1Chunk([u8; REDUCE_CHUNK + 64]);

impl L1Chunk {
    /// Where to combine chunks bound for `dest`: at `dest`'s offset within
    /// its cache line, so that `rep movsb` moves between equally aligned
    /// ends: a line-aligned chunk moved to dests a few bytes past a line
    /// boundary ran the reduce-and-push far slower (benches/RESULTS.md,
    /// "Unaligned dest offset").
    fn at_offset_of(&mut self, dest: *const u8) -> *mut u8 {
        // The offset is below 64, inside the spare line.
        self.0[dest as usize % 64..].as_mut_ptr()
    }
}

impl Runtime {
    /// Runs an agreed call on the direct path (module docs). `reduce`
    /// combines the members' slices of a reduction, in L1 chunks where
    /// `in_l1` (`combine::chunks_in_l1`).
    pub(crate) fn direct_move(
        &self,
        m: &Members,
        all: &[Desc],
        name: &str,
        reduce: Option<ReduceFn>,
        in_l1: bool,
    ) -> Ran {
        let (contrib, plan) = match moves::plan(m, all) {
            Ok(p) => p,
            Err(e) => return Ran::Complete(Err(e)),
        };
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
            self.host_stream,
        );
        let push = match moves::push(m, all) {
            Ok(p) => p,
            Err(e) => return Ran::Complete(Err(e)),
        };
        let moved = match (&plan, push) {
            (Plan::Copies(_), Some(p)) => self.direct_push(m, name, &p, &source, stream),
            (Plan::Copies(moves), None) => self.direct_copies(m, all, moves, &source, &own, stream),
            (Plan::Reduce { dest, bytes, op }, _) => {
                let f = reduce.expect("reductions pass their combiner");
                let es = u64::from(all[m.me as usize].es);
                let r = Reduction {
                    dest: *dest,
                    bytes: *bytes,
                    op: *op,
                    es,
                    f,
                    stream,
                    in_l1,
                };
                self.direct_reduce(m, all, name, &r, &source, &own)
            }
        };
        // Closed (and timed) as the kernel path's run is, so `--phases`
        // tells this path from the rounds (neither) and the kernels
        // (submissions).
        Ran::Moved {
            moved,
            how: DIRECT,
            then: Then::Nothing,
        }
    }

    /// A reduction on the direct path: this member combines its slice
    /// (`moves::push_slice`) of every member's source [`REDUCE_CHUNK`] bytes
    /// at a time into an [`L1Chunk`] and moves each chunk into the same
    /// bytes of every member's dest, its own too; streaming out of place,
    /// into its own dest [`PUSH_CHUNK`] bytes at a time, each chunk copied
    /// on to every other member's dest while it is in this core's cache.
    /// A reduce-scatter whose slice owners push their results: every
    /// source byte read once and every dest byte written once, with no
    /// meeting between (the closing meeting completes the call).
    ///
    /// Slice `lo..hi` of every member's source is read, and of every
    /// member's dest written, by this member alone; in place (a dest that
    /// is its member's source, `moves::direct_safe`) each chunk is read
    /// before it is written.
    fn direct_reduce(
        &self,
        m: &Members,
        all: &[Desc],
        name: &str,
        r: &Reduction,
        source: &dyn Fn(u32) -> Result<*const u8>,
        own: &dyn Fn(u64, u64) -> Result<*mut u8>,
    ) -> Result<()> {
        let (lo, hi) = moves::push_slice(r.bytes, r.es, m.shape.size, m.me);
        if lo == hi {
            return Ok(());
        }
        let out = own(r.dest + lo, hi - lo)?;
        let slots = (0..m.shape.size)
            // SAFETY (the `add`): lo < bytes, within each member's
            // contribution (`source` checked the whole of it).
            .map(|i| source(i).map(|p| unsafe { p.add(lo as usize) }))
            .collect::<Result<Vec<_>>>()?;
        let peers = self.dests_at(
            m,
            name,
            (0..m.shape.size)
                .filter(|&j| j != m.me)
                .map(|j| (j, all[j as usize].dest + lo)),
            hi - lo,
        )?;
        // In place: this member's dest slice is its own source's.
        let in_place = slots[m.me as usize] == out.cast_const();
        let mut combined = L1Chunk([0; REDUCE_CHUNK + 64]);
        // Each chunk combined into `combined` (in L1) and moved from there
        // into every member's dest, this member's too; but for the half
        // types (`combine::chunks_in_l1`), and past the cache out of place,
        // combined into this member's dest a PUSH_CHUNK at a time and
        // copied on from there (out of place, streaming, the L1 chunks lose
        // to it, where in place they win: benches/RESULTS.md, "Reduction L1
        // chunks").
        let (l1, step, to) = if !r.in_l1 || r.stream && !in_place {
            (None, PUSH_CHUNK, peers)
        } else {
            let mut to = Vec::with_capacity(peers.len() + 1);
            to.push(out);
            to.extend(peers);
            // Every chunk starts at a multiple of 64 bytes past `out`
            // (`moves::push_slice`'s grain, REDUCE_CHUNK), so at `out`'s
            // offset in its line; the peers' dests are at the same symmetric
            // offset in heaps mapped at page boundaries.
            (Some(combined.at_offset_of(out)), REDUCE_CHUNK as u64, to)
        };
        let step = (step / r.es).max(1) * r.es;
        let mut chunk = Vec::with_capacity(slots.len());
        // SAFETY: `to` are hi - lo bytes of the peers' dests (mapped_at
        // checked them) and, with `l1`, this member's dest slice (own
        // checked it), which only this member writes and nobody reads before
        // the closing meeting (in place, this member reads them as the
        // members' sources before it writes them: `chunk` below reads them
        // first); the chunk returned is `l1`, a local buffer apart from all
        // of them, or bytes at..at + n of `out`, apart from the peers'.
        unsafe {
            push_chunks(hi - lo, step, &to, r.stream, l1.is_some(), |at, n| {
                chunk.clear();
                // SAFETY: at + n <= hi - lo, inside every member's slice of
                // its contribution (checked above).
                chunk.extend(slots.iter().map(|&p| p.add(at as usize)));
                // SAFETY (the `add`): inside this PE's dest slice (own
                // checked it).
                let into = l1.unwrap_or_else(|| out.add(at as usize));
                // The combine reads each slot's chunk, which nobody writes
                // during the call but this member (in place: after this
                // read), and writes n bytes of `into`: `l1` (n <=
                // REDUCE_CHUNK), which no slot overlaps, or `out`'s, which no
                // slot overlaps unless it is that slot (in place), as
                // `combine::reduce_slots` allows.
                (r.f)(r.op, (n / r.es) as usize, &chunk, into);
                into
            })
        };
        copy::fence(r.stream);
        Ok(())
    }

    /// This member's [`moves::Push`] of a collect, fcollect or broadcast:
    /// its own source (a broadcast: its slice of the root's), read once,
    /// [`PUSH_L1_CHUNK`] at a time (streaming, [`PUSH_CHUNK`]), copied into
    /// the same bytes of every member's dest while in this core's cache,
    /// instead of every member reading every source into its own dest.
    fn direct_push(
        &self,
        m: &Members,
        name: &str,
        p: &moves::Push,
        source: &dyn Fn(u32) -> Result<*const u8>,
        stream: bool,
    ) -> Result<()> {
        if p.bytes == 0 || p.to.is_empty() {
            return Ok(());
        }
        // SAFETY (the `add`): p.at + p.bytes lies inside the contribution
        // (`push` cuts it from the contribution that `source` checked).
        let from = unsafe { source(p.member)?.add(p.at as usize) };
        let to = self.dests_at(m, name, p.to.iter().copied(), p.bytes)?;
        let (step, l1) = if stream {
            (PUSH_CHUNK, false)
        } else {
            (PUSH_L1_CHUNK, true)
        };
        // SAFETY: `from` is p.bytes of a contribution that nobody writes
        // until the closing meeting; each of `to` is p.bytes of a dest
        // (mapped_at checked them) that only this member writes and nobody
        // reads before the closing meeting (`push` gives every dest byte to
        // one member), and that `direct_safe` keeps apart from every
        // contribution (moves onto themselves are not in `to`).
        unsafe {
            push_chunks(p.bytes, step, &to, stream, l1, |at, _| {
                from.add(at as usize)
            })
        };
        copy::fence(stream);
        Ok(())
    }

    /// `bytes` of each `(member, heap offset)` of `at` (members' dests) in
    /// this process's mappings of their heaps.
    fn dests_at(
        &self,
        m: &Members,
        name: &str,
        at: impl Iterator<Item = (u32, u64)>,
        bytes: u64,
    ) -> Result<Vec<*mut u8>> {
        at.map(|(j, at)| {
            let pe = m.shape.member(j);
            self.mapped_at(pe, at, bytes).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{name}: PE {pe}'s dest ({bytes} bytes at offset {at}) is not mapped here"
                ))
            })
        })
        .collect()
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

/// Copies `len` bytes, `step` at a time, into every one of `to`: `chunk(at,
/// n)` yields bytes `at..at + n` (reading or computing them, which brings
/// them into this core's cache), then they are copied to byte `at` of each
/// of `to`, streaming where `stream` (the caller fences), and where
/// `from_l1` (the chunk is small enough to stay in this core's L1 once
/// written or first read) by `copy::copy_from_l1`.
///
/// # Safety
/// Each of `to` is valid for `len` bytes of writes that no other thread or
/// process reads or writes meanwhile; each pointer that `chunk` returns is
/// valid for `n` bytes of reads that overlap none of `to`'s bytes
/// `at..at + n`. (`chunk` itself may read those bytes: it runs before they
/// are written.)
unsafe fn push_chunks(
    len: u64,
    step: u64,
    to: &[*mut u8],
    stream: bool,
    from_l1: bool,
    mut chunk: impl FnMut(u64, u64) -> *const u8,
) {
    let mut at = 0;
    while at < len {
        let n = step.min(len - at);
        let from = chunk(at, n);
        for &p in to {
            // SAFETY: the function's contract, for bytes at..at + n.
            unsafe {
                let (to, n) = (p.add(at as usize), n as usize);
                if from_l1 {
                    copy::copy_from_l1(from, to, n, stream);
                } else {
                    copy::copy(from, to, n, stream);
                }
            }
        }
        at += n;
    }
}
