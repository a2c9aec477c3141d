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

/// A rooted move's layout (gatherv, scatterv): the root, every member's
/// count and displacement, the object that holds each member's `part`
/// and the root's `whole` (each with its name for errors), the member's
/// source, and what it tells of its own part.
struct Rooted<'a, 'b, T: Pod> {
    root: u32,
    counts: &'a [usize],
    displs: &'a [usize],
    part: (&'a str, &'a SymSlice<'b, T>),
    whole: (&'a str, &'a SymSlice<'b, T>),
    source: &'a SymSlice<'b, T>,
    mine: Mine,
}

/// A reduction in blocks (reduce_scatterv, the rooted reduce): member `i`
/// combines block `i` (`counts[i]` elements) of every member's `source`
/// with `op` into its `dest`; `whole`: the rooted reduce's count, whose
/// blocks all start at element 0; `pre`: a check the caller made.
struct Blocks<'a, 'b, T: Pod> {
    op: ReduceOp,
    dest: &'a SymSlice<'b, T>,
    source: &'a SymSlice<'b, T>,
    counts: &'a [usize],
    whole: Option<usize>,
    pre: Result<()>,
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
    /// Step 1: shares `common` (alike on every member) and `own`, with this
    /// member's verdict on its own arguments; every member gets the same
    /// answer. A meeting of the members ([`Runtime::meet`]: on the sync
    /// plane for a team on one node, else through the bootstrap socket or
    /// MPI) carries each member's fingerprints, verdict and the length of
    /// its `own` (the same on every member for a call), with `own` itself
    /// in the member's data slot; where the members do not meet on the
    /// plane ([`Runtime::plane_for`]) or `own` does not fit a slot, the
    /// descriptor and `own` go together in one allgather.
    fn agree_ucc(
        &self,
        m: &Members,
        what: &str,
        common: &[u64],
        mut own: Vec<u64>,
        part: Option<Mine>,
        local: Result<()>,
    ) -> Result<Shared> {
        // The dest and how this member's part may move (see Shared).
        let flags = match part {
            None => 0,
            Some(p) => {
                let may_host = p.bytes > 0
                    && p.bytes <= self.host_mapped_max
                    && self.own_mapped(p.dest, p.bytes).is_some();
                let leader = if self.leader_submit { MINE_LEADER } else { 0 };
                leader | if may_host { MINE_MAY_HOST } else { 0 }
            }
        };
        own.extend([part.map_or(0, |p| p.dest), flags]);
        let mine = [
            fingerprint(&[fingerprint_str(what)]),
            fingerprint(common),
            u64::from(local.is_err()),
            own.len() as u64,
        ];
        let own_bytes: &[u8] = bytemuck::cast_slice(&own);
        // On the plane where `own` fits a data slot; else one allgather of
        // the descriptor and `own` together. The same choice on every
        // member: `plane_for` is, and `own`'s length is the same for a call.
        let (descs, mut owns) = match self.plane_for(m) {
            Some((plane, _)) if own_bytes.len() <= DATA_BYTES => {
                let met = self
                    .meet(m, &mut |slot| {
                        if let Some(slot) = slot {
                            // SAFETY: `slot` is this PE's data slot for the
                            // coming meeting (DATA_BYTES bytes, which nobody
                            // reads before this PE arrives); `own` fits it
                            // (checked above) and is a local `Vec`, apart
                            // from the plane's segment.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    own_bytes.as_ptr(),
                                    slot,
                                    own_bytes.len(),
                                )
                            };
                        }
                        mine
                    })
                    .map_err(|e| e.during(what))?;
                let t = met.ticket.as_ref().ok_or_else(|| {
                    Error::Bootstrap(format!("{what}: a meeting on the sync plane had no ticket"))
                })?;
                // Each member's slot, as many bytes as this member's `own`
                // (whether the lengths agree is checked below, before any
                // of it is used).
                let owns = (0..m.shape.size)
                    .map(|i| {
                        let mut w = vec![0u64; own.len()];
                        // SAFETY: member i's data slot for this meeting is
                        // DATA_BYTES bytes (own_bytes.len() is no more),
                        // filled before it arrived and left as it is until
                        // this PE's next meeting on the team
                        // (double-buffered by parity: the member rewrites it
                        // two meetings on, after this PE's closing one);
                        // `w` is a local `Vec` of that length.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                plane.data(t, i),
                                w.as_mut_ptr().cast::<u8>(),
                                own_bytes.len(),
                            )
                        };
                        w
                    })
                    .collect();
                (met.descs, owns)
            }
            _ => {
                let words: Vec<u64> = mine.iter().copied().chain(own.iter().copied()).collect();
                let blobs = self
                    .gather_shape(m.shape, bytemuck::cast_slice(&words))
                    .map_err(|e| e.during(what))?;
                let mut descs = Vec::with_capacity(blobs.len());
                let mut owns = Vec::with_capacity(blobs.len());
                for b in &blobs {
                    if b.len() % 8 != 0 || b.len() < 32 {
                        return Err(Error::Bootstrap(format!(
                            "{what}: a member sent malformed arguments"
                        )));
                    }
                    let w: Vec<u64> = b
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                        .collect();
                    descs.push([w[0], w[1], w[2], w[3]]);
                    owns.push(w[4..].to_vec());
                }
                (descs, owns)
            }
        };
        local?;
        for (i, w) in descs.iter().enumerate() {
            let pe = m.shape.member(i as u32);
            if w[0] != mine[0] {
                return Err(Error::InvalidArgument(format!(
                    "collectives out of step on the team: this PE is in {what}, member {i} (PE {pe}) in another call"
                )));
            }
            if w[2] != 0 {
                return Err(Error::InvalidArgument(format!(
                    "{what}: member {i} (PE {pe}) passed invalid arguments (its own error says why)"
                )));
            }
            if w[1] != mine[1] || w[3] != mine[3] {
                return Err(Error::InvalidArgument(format!(
                    "{what}: member {i} (PE {pe}) passed another root, operation or counts; every member must pass the same"
                )));
            }
        }
        let mut dests = Vec::with_capacity(owns.len());
        let mut together = m.shape.size > 1;
        for w in &mut owns {
            let Some(at) = w.len().checked_sub(MINE_WORDS) else {
                return Err(Error::Bootstrap(format!(
                    "{what}: a member sent malformed arguments"
                )));
            };
            let f = w[at + 1];
            dests.push(w[at]);
            together &= f & MINE_LEADER != 0 && f & MINE_MAY_HOST == 0;
            w.truncate(at);
        }
        Ok(Shared {
            own: owns,
            dests,
            together,
        })
    }

    /// A data move through the engine: `args` agreed, then member `j`'s
    /// reads `pull_of(agreed, j)` into its dest at heap offset `dest`.
    fn run_pull(
        &self,
        m: &Members,
        args: UccArgs,
        dest: u64,
        pull_of: impl Fn(&Shared, u32) -> Pull,
    ) -> Result<()> {
        self.run_pull_checked(m, args, dest, |_| Ok(()), pull_of)
    }

    /// [`Runtime::run_pull`] with a check of what was agreed (the same
    /// verdict on every member) before anything moves.
    fn run_pull_checked(
        &self,
        m: &Members,
        args: UccArgs,
        dest: u64,
        check: impl Fn(&Shared) -> Result<()>,
        pull_of: impl Fn(&Shared, u32) -> Pull,
    ) -> Result<()> {
        let what = args.what;
        let moves = |rt: &Runtime, m: &Members, sh: &Shared| match check(sh) {
            Ok(()) => rt.pull_into(m, what, sh, &|j| pull_of(sh, j), dest),
            Err(e) => Ran::Complete(Err(e)),
        };
        self.run_call(m, Ucc { args, moves })
    }

    /// A reduction or scan through the engine: `args` agreed, then member
    /// `j`'s fold and count `fold_of(agreed, j)`.
    fn run_fold<T: Reduce>(
        &self,
        m: &Members,
        args: UccArgs,
        fold_of: impl Fn(&Shared, u32) -> (Fold, usize),
    ) -> Result<()> {
        let what = args.what;
        let moves = |rt: &Runtime, m: &Members, sh: &Shared| {
            rt.fold_and_close::<T>(m, sh, what, &|j| fold_of(sh, j))
        };
        self.run_call(m, Ucc { args, moves })
    }

    /// Steps 2 and 3 for data moves: where every read writes dest bytes
    /// apart from the exposed ones ([`writes_apart`], an in-place part left
    /// out), the reads straight into `dest` (through the mappings up to
    /// `VKSHMEM_HOST_MAPPED_MAX`, else by the device:
    /// [`Runtime::pull_launches`]), then the closing sync; else into
    /// `pull.bytes` of host memory (holding first what the dest held, where
    /// `pull.gaps`), the sync, then `dest` written from it.
    fn pull_into(
        &self,
        m: &Members,
        what: &str,
        sh: &Shared,
        pull_of: &dyn Fn(u32) -> Pull,
        dest: u64,
    ) -> Ran {
        // Every member's part by the team's first member, where agreed.
        let together = self.run_together(m, what, sh, |j| {
            let (pull, dest) = (pull_of(j), sh.dests[j as usize]);
            match writes_apart(&pull, j, dest) {
                Some(early) => self.pull_launches(m, m.shape.member(j), &early, dest),
                None => Ok(None),
            }
        });
        if let Some(ran) = together {
            return ran;
        }
        let pull = &pull_of(m.me);
        let bytes = pull.bytes;
        let live = || pull.reads.iter().filter(|r| r.bytes > 0);
        // The reads that write this member's dest before the sync, where
        // every one writes bytes apart from the exposed ones.
        let early = writes_apart(pull, m.me, dest);
        if early.as_ref().is_some_and(Vec::is_empty) {
            // Nothing to move (a non-root's gather, a part in place).
            return Ran::each(Ok(()));
        }
        let on_host = bytes <= self.host_mapped_max;
        let out = (on_host && self.proxied(self.my_pe()).is_none())
            .then(|| self.own_mapped(dest, bytes))
            .flatten();
        if let (Some(out), Some(early)) = (out, &early) {
            let from = early
                .iter()
                .map(|r| self.mapped_source(m.shape.member(r.from), r.src, r.bytes))
                .collect::<Option<Vec<_>>>();
            if let Some(from) = from {
                let n = u64::from(m.shape.size);
                let stream = copy::streams(
                    bytes.saturating_mul(n),
                    bytes.saturating_mul(n),
                    self.host_stream,
                );
                for (r, src) in early.iter().zip(from) {
                    // SAFETY: `src` is r.bytes mapped bytes of a member's
                    // source, which nobody writes before the closing sync
                    // (its owner writes its dest after the sync, unless the
                    // bytes it writes lie apart from what the others read:
                    // this check); `out + r.dst` is r.bytes of this member's
                    // dest (r.dst + r.bytes <= bytes, the dest's checked
                    // extent), which only this member writes and which
                    // overlap none of the bytes read from its heap
                    // (`writes_apart`), so none of `src`.
                    unsafe { copy::copy(src, out.add(r.dst as usize), r.bytes as usize, stream) };
                }
                copy::fence(stream);
                tracing::trace!("{what}: moved straight from the mappings");
                return Ran::each(Ok(()));
            }
        }
        if let Some(early) = &early {
            let planned = self.pull_launches(m, self.my_pe(), early, dest);
            if let Some(ran) = self.run_planned(what, planned, "moved by the device's copies") {
                return ran;
            }
        }
        tracing::trace!("{what}: moved through host memory");
        let mut got = vec![0u8; bytes as usize];
        let keep = Read {
            from: m.me,
            src: dest,
            dst: 0,
            bytes,
        };
        let read = pull
            .gaps
            .then_some(&keep)
            .into_iter()
            .chain(live())
            .filter(|r| r.bytes > 0)
            .try_for_each(|r| {
                let pe = m.shape.member(r.from);
                let out = &mut got[r.dst as usize..(r.dst + r.bytes) as usize];
                self.read_bytes(pe, r.src, out)
            });
        // The dest is written after the closing meeting: it may overlap
        // what the others read.
        Ran::Moved {
            moved: read,
            how: part::EACH,
            then: if bytes > 0 {
                Then::Write {
                    offset: dest,
                    bytes: got,
                }
            } else {
                Then::Nothing
            },
        }
    }

    /// Step 2 on the device: `reads` (a pull's, [`writes_apart`]) as wide
    /// copy kernels from the members' heaps into the dest of PE `to` (the
    /// member's) at heap offset `dest`, all in one batch of launches
    /// ([`Runtime::run_part`]), where every heap it touches is on this
    /// PE's device (bound as a window: [`Runtime::bound_here`]); `None`
    /// where that does not hold, or where a read is not in whole 32-bit
    /// words or passes the binding limits ([`Runtime::copy_wide`]): the
    /// caller takes the buffered steps. Each member chooses alone for its
    /// own part (it writes only its own dest); every member plans the same
    /// for every part where the first member submits them all
    /// ([`Runtime::run_together`]).
    fn pull_launches(
        &self,
        m: &Members,
        to: u32,
        reads: &[Read],
        dest: u64,
    ) -> Result<Option<Part>> {
        if !self.bound_here(to) {
            return Ok(None);
        }
        let mut launches = Vec::new();
        for r in reads {
            let pe = m.shape.member(r.from);
            if !self.bound_here(pe) {
                return Ok(None);
            }
            match self.copy_wide(to, &[pe], r.bytes, r.src, dest + r.dst)? {
                Some(l) => launches.extend(l),
                None => return Ok(None),
            }
        }
        Ok(Some(vec![Step::Wide(launches)]))
    }

    /// Step 2 of a fold on the device: `bytes` at byte `fold.at` of the
    /// sources of `fold.members` folded in team order into the dest of PE
    /// `to` (the member's) by the wide accumulate kernels
    /// ([`Runtime::fold_wide`]), in one batch of launches, where every heap
    /// is on this PE's device and the dest lies apart from `fold.exposed`;
    /// `None` where that does not hold or the kernels cannot take the
    /// objects (the caller folds on the host). Each member chooses alone
    /// for its own part; every member plans the same for every part where
    /// the first member submits them all ([`Runtime::run_together`]).
    fn fold_launches<T: Reduce>(
        &self,
        m: &Members,
        to: u32,
        sh: &Shared,
        fold: &Fold,
        bytes: u64,
    ) -> Result<Option<Part>> {
        let pes: Vec<u32> = fold
            .members
            .clone()
            .map(|i| m.shape.member(i as u32))
            .collect();
        if pes.is_empty()
            || !apart((fold.dest, bytes), fold.exposed)
            || !self.bound_here(to)
            || !pes.iter().all(|&pe| self.bound_here(pe))
        {
            return Ok(None);
        }
        let sources: Vec<u64> = fold
            .members
            .clone()
            .map(|i| sh.own[i][0].wrapping_add(fold.at))
            .collect();
        let kind =
            vkshmem_device::collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        self.fold_wide(&kind, fold.op, &pes, &sources, (to, fold.dest), bytes)
    }

    /// Step 2 for every member by the team's first member, then step 3,
    /// where the members agreed to it ([`Shared::together`]: on NVIDIA,
    /// processes that submit at once take turns on the GPU, so one
    /// submission for all beats one per member: benches/RESULTS.md, "H200 UCC
    /// on the device") and `plan(j)` gives member `j`'s part on the device for
    /// every member; `None` where it does not for some member (each member then
    /// takes its own steps). Every member plans every part from the same agreed
    /// values on the same device, so all reach the same answer; a planning
    /// error fails the call on every member (carried by the closing meeting),
    /// never leaving a part that nobody moved.
    fn run_together(
        &self,
        m: &Members,
        what: &str,
        sh: &Shared,
        plan: impl Fn(u32) -> Result<Option<Part>>,
    ) -> Option<Ran> {
        if !sh.together {
            return None;
        }
        let together = |moved| Ran::Moved {
            moved,
            how: part::LEADER,
            then: Then::Nothing,
        };
        let parts = match (0..m.shape.size)
            .map(&plan)
            .collect::<Result<Option<Vec<Part>>>>()
        {
            Ok(None) => return None,
            Ok(Some(parts)) => parts,
            Err(e) => return Some(together(Err(e))),
        };
        let (ran, _) = self.run_as_first(m, &parts, false)?;
        if m.me == 0 {
            tracing::trace!("{what}: every part submitted by the team's first member");
        }
        Some(together(ran))
    }

    /// Step 2 on the device where it was `planned` (`pull_launches`,
    /// `fold_launches`): the part run, for step 3 with its outcome (a
    /// planning error too, so that every member hears of it); `None` where
    /// the plan declined (the caller goes on to the host).
    fn run_planned(&self, what: &str, planned: Result<Option<Part>>, how: &str) -> Option<Ran> {
        let ran = match planned {
            Ok(None) => return None,
            Ok(Some(part)) => {
                tracing::trace!("{what}: {how}");
                self.run_part(part)
            }
            Err(e) => Err(e),
        };
        Some(Ran::each(ran))
    }

    /// This member's dest (`bytes` at heap offset `dest`) as a host pointer,
    /// where it may be written before the closing sync: mapped here, and
    /// apart from `exposed` (heap offset and length: the bytes of this
    /// member's heap that any member reads during the call). `None` for an
    /// empty dest.
    fn direct_dest(&self, dest: u64, bytes: u64, exposed: (u64, u64)) -> Option<*mut u8> {
        (bytes > 0 && apart((dest, bytes), exposed) && self.proxied(self.my_pe()).is_none())
            .then(|| self.own_mapped(dest, bytes))
            .flatten()
    }

    /// `bytes` at `offset` of PE `pe`'s heap as a host pointer, where this
    /// process maps it (not through the proxy).
    fn mapped_source(&self, pe: u32, offset: u64, bytes: u64) -> Option<*const u8> {
        if self.proxied(pe).is_some() {
            return None;
        }
        self.mapped_at(pe, offset, bytes).map(<*mut u8>::cast_const)
    }

    /// The arguments of the rooted move `r` (gatherv, scatterv): `r.part`
    /// must hold this member's count, and on the root `r.whole` the
    /// layout's extent; every member passes the same root, counts and
    /// displacements.
    fn rooted_args<'a, T: Pod>(&self, m: &Members, what: &'a str, r: Rooted<T>) -> UccArgs<'a> {
        let Rooted {
            root,
            counts,
            displs,
            part,
            whole,
            source,
            mine,
        } = r;
        let n = m.shape.size;
        let local = (|| {
            check_root(what, root, n)?;
            Self::check_counts(what, "counts", counts, n)?;
            Self::check_counts(what, "displs", displs, n)?;
            self.check_sym(part.0, part.1, counts[m.me as usize] as u64)?;
            if m.me == root {
                let e = extent(counts, displs).ok_or_else(|| overflow(what))?;
                self.check_sym(whole.0, whole.1, e)?;
            }
            Ok(())
        })();
        let es = std::mem::size_of::<T>() as u64;
        let common: Vec<u64> = [u64::from(root), es]
            .into_iter()
            .chain(counts.iter().chain(displs).map(|&c| c as u64))
            .collect();
        UccArgs {
            what,
            common,
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        }
    }

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

    pub(crate) fn gatherv<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        let what = "gatherv";
        let m = self.members(team)?;
        let n = m.shape.size;
        let es = std::mem::size_of::<T>() as u64;
        let displs = displs.map_or_else(|| packed(counts), <[usize]>::to_vec);
        let whole = extent(counts, &displs).unwrap_or(0).saturating_mul(es);
        let rooted = Rooted {
            root,
            counts,
            displs: &displs,
            part: ("gatherv source", source),
            whole: ("gatherv dest", dest),
            source,
            mine: Mine {
                dest: dest.offset(),
                bytes: if m.me == root { whole } else { 0 },
            },
        };
        let args = self.rooted_args(&m, what, rooted);
        let pull_of = |sh: &Shared, j: u32| {
            let mut pull = Pull {
                reads: Vec::new(),
                bytes: 0,
                // What the dest holds outside the parts stays as it was.
                gaps: true,
                exposed: (sh.own[j as usize][0], counts[j as usize] as u64 * es),
            };
            if j == root {
                pull.bytes = whole;
                pull.reads.extend((0..n).map(|i| Read {
                    from: i,
                    src: sh.own[i as usize][0],
                    dst: (displs[i as usize] as u64).wrapping_mul(es),
                    bytes: counts[i as usize] as u64 * es,
                }));
            }
            pull
        };
        self.run_pull(&m, args, dest.offset(), pull_of)
    }

    pub(crate) fn gather<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let n = self.team_n_pes(team)? as usize;
        self.gatherv(team, root, dest, source, &vec![nelems; n], None)
    }

    pub(crate) fn scatterv<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        let what = "scatterv";
        let m = self.members(team)?;
        let es = std::mem::size_of::<T>() as u64;
        let displs = displs.map_or_else(|| packed(counts), <[usize]>::to_vec);
        let rooted = Rooted {
            root,
            counts,
            displs: &displs,
            part: ("scatterv dest", dest),
            whole: ("scatterv source", source),
            source,
            mine: Mine {
                dest: dest.offset(),
                bytes: (counts.get(m.me as usize).copied().unwrap_or(0) as u64).saturating_mul(es),
            },
        };
        let args = self.rooted_args(&m, what, rooted);
        let pull_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            Pull {
                reads: vec![Read {
                    from: root,
                    src: sh.own[root as usize][0].wrapping_add((displs[j] as u64).wrapping_mul(es)),
                    dst: 0,
                    bytes: counts[j] as u64 * es,
                }],
                bytes: counts[j] as u64 * es,
                gaps: false,
                // Every member reads the root's source.
                exposed: if j == root as usize {
                    (sh.own[j][0], extent(counts, &displs).unwrap_or(0) * es)
                } else {
                    (0, 0)
                },
            }
        };
        self.run_pull(&m, args, dest.offset(), pull_of)
    }

    pub(crate) fn scatter<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let n = self.team_n_pes(team)? as usize;
        self.scatterv(team, root, dest, source, &vec![nelems; n], None)
    }

    pub(crate) fn allgatherv<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        let what = "allgatherv";
        let m = self.members(team)?;
        let n = m.shape.size;
        let es = std::mem::size_of::<T>() as u64;
        let displs = displs.map_or_else(|| packed(counts), <[usize]>::to_vec);
        let local = (|| {
            Self::check_counts(what, "counts", counts, n)?;
            Self::check_counts(what, "displs", &displs, n)?;
            self.check_sym("allgatherv source", source, counts[m.me as usize] as u64)?;
            let e = extent(counts, &displs).ok_or_else(|| overflow(what))?;
            self.check_sym("allgatherv dest", dest, e)
        })();
        let common: Vec<u64> = std::iter::once(es)
            .chain(counts.iter().chain(&displs).map(|&c| c as u64))
            .collect();
        let bytes = extent(counts, &displs).unwrap_or(0).saturating_mul(es);
        let mine = Mine {
            dest: dest.offset(),
            bytes,
        };
        let args = UccArgs {
            what,
            common,
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        };
        let pull_of = |sh: &Shared, j: u32| Pull {
            reads: (0..n)
                .map(|i| Read {
                    from: i,
                    src: sh.own[i as usize][0],
                    dst: (displs[i as usize] as u64).wrapping_mul(es),
                    bytes: counts[i as usize] as u64 * es,
                })
                .collect(),
            bytes,
            gaps: true,
            exposed: (sh.own[j as usize][0], counts[j as usize] as u64 * es),
        };
        self.run_pull(&m, args, dest.offset(), pull_of)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoallv<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        send_counts: &[usize],
        send_displs: &[usize],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let what = "alltoallv";
        let m = self.members(team)?;
        let n = m.shape.size;
        let es = std::mem::size_of::<T>() as u64;
        let local = (|| {
            for (name, v) in [
                ("send_counts", send_counts),
                ("send_displs", send_displs),
                ("recv_counts", recv_counts),
                ("recv_displs", recv_displs),
            ] {
                Self::check_counts(what, name, v, n)?;
            }
            let s = extent(send_counts, send_displs).ok_or_else(|| overflow(what))?;
            self.check_sym("alltoallv source", source, s)?;
            let r = extent(recv_counts, recv_displs).ok_or_else(|| overflow(what))?;
            self.check_sym("alltoallv dest", dest, r)
        })();
        // The same length on every member, whatever its verdict (the
        // allgather's size limit must fail all or none).
        let nn = n as usize;
        let mut own = vec![source.offset()];
        for v in [send_counts, send_displs, recv_counts, recv_displs] {
            own.extend((0..nn).map(|j| v.get(j).map_or(0, |&c| c as u64)));
        }
        let mine = Mine {
            dest: dest.offset(),
            bytes: extent(recv_counts, recv_displs)
                .unwrap_or(0)
                .saturating_mul(es),
        };
        let args = UccArgs {
            what,
            common: vec![es],
            own,
            part: Some(mine),
            local: Some(local),
        };
        // Member i's list k (send counts, send displs, recv counts, recv
        // displs), entry j.
        let field =
            |sh: &Shared, i: usize, k: usize, j: usize| sh.own[i].get(1 + k * nn + j).copied();
        let list = |sh: &Shared, i: usize, k: usize| -> Vec<usize> {
            (0..nn)
                .map(|j| field(sh, i, k, j).unwrap_or(0) as usize)
                .collect()
        };
        // Every pair, checked the same way on every member.
        let check = |sh: &Shared| {
            for i in 0..nn {
                for j in 0..nn {
                    let (send, recv) = (field(sh, i, 0, j), field(sh, j, 2, i));
                    if send.is_none() || send != recv {
                        return Err(Error::InvalidArgument(format!(
                            "alltoallv: member {i} sends {} elements to member {j}, which expects {}",
                            send.unwrap_or(0),
                            recv.unwrap_or(0)
                        )));
                    }
                }
            }
            Ok(())
        };
        let pull_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            let (recv_counts, recv_displs) = (list(sh, j, 2), list(sh, j, 3));
            Pull {
                reads: (0..nn)
                    .map(|i| Read {
                        from: i as u32,
                        src: sh.own[i][0]
                            .wrapping_add(field(sh, i, 1, j).unwrap_or(0).wrapping_mul(es)),
                        dst: (recv_displs[i] as u64).wrapping_mul(es),
                        bytes: recv_counts[i] as u64 * es,
                    })
                    .collect(),
                bytes: extent(&recv_counts, &recv_displs).unwrap_or(0) * es,
                gaps: true,
                exposed: (
                    sh.own[j][0],
                    extent(&list(sh, j, 0), &list(sh, j, 1)).unwrap_or(0) * es,
                ),
            }
        };
        self.run_pull_checked(&m, args, dest.offset(), check, pull_of)
    }

    pub(crate) fn reduce_scatterv<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
    ) -> Result<()> {
        let m = self.members(team)?;
        let blocks = Blocks {
            op,
            dest,
            source,
            counts,
            whole: None,
            pre: Ok(()),
        };
        self.reduce_blocks(&m, "reduce_scatterv", blocks)
    }

    pub(crate) fn reduce_scatter<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        count: usize,
    ) -> Result<()> {
        let n = self.team_n_pes(team)? as usize;
        self.reduce_scatterv(team, op, dest, source, &vec![count; n])
    }

    pub(crate) fn reduce_to_root<T: Reduce>(
        &self,
        team: Team,
        root: u32,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        let n = m.shape.size;
        let root_ok = check_root("reduce", root, n);
        let mut counts = vec![0; n as usize];
        if root_ok.is_ok() {
            counts[root as usize] = nreduce;
        }
        let blocks = Blocks {
            op,
            dest,
            source,
            counts: &counts,
            whole: Some(nreduce),
            pre: root_ok,
        };
        self.reduce_blocks(&m, "reduce", blocks)
    }

    pub(crate) fn allreduce<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(team, op, dest, source, nreduce)
    }

    /// Member `i` combines block `i` of every member's source (see
    /// [`Blocks`]).
    fn reduce_blocks<T: Reduce>(&self, m: &Members, what: &str, b: Blocks<T>) -> Result<()> {
        let Blocks {
            op,
            dest,
            source,
            counts,
            whole,
            pre,
        } = b;
        let n = m.shape.size;
        let me = m.me as usize;
        let es = std::mem::size_of::<T>() as u64;
        let displs = match whole {
            Some(_) => vec![0; counts.len()],
            None => packed(counts),
        };
        let kind =
            vkshmem_device::collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        let local = pre.and_then(|()| {
            self.check_kind(what, &kind, op)?;
            Self::check_counts(what, "counts", counts, n)?;
            let total = whole.map_or_else(
                || {
                    counts
                        .iter()
                        .try_fold(0u64, |a, &c| a.checked_add(c as u64))
                },
                |w| Some(w as u64),
            );
            let total = total.ok_or_else(|| overflow(what))?;
            self.check_sym(&format!("{what} source"), source, total)?;
            self.check_sym(&format!("{what} dest"), dest, counts[me] as u64)
        });
        let common: Vec<u64> = [op as u64, es, fingerprint_str(T::KIND)]
            .into_iter()
            .chain(counts.iter().map(|&c| c as u64))
            .collect();
        let mine = Mine {
            dest: dest.offset(),
            bytes: (counts.get(me).copied().unwrap_or(0) as u64).saturating_mul(es),
        };
        let args = UccArgs {
            what,
            common,
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        };
        // Every member reads its block of this member's source.
        let total = whole
            .unwrap_or_else(|| counts.iter().fold(0, |a: usize, &c| a.saturating_add(c)))
            as u64;
        let fold_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            let fold = Fold {
                at: displs[j] as u64 * es,
                op,
                members: 0..n as usize,
                dest: sh.dests[j],
                exposed: (sh.own[j][0], total.saturating_mul(es)),
            };
            (fold, counts[j])
        };
        self.run_fold::<T>(m, args, fold_of)
    }

    /// Step 2 and 3 of the reductions and scans, where `fold_of(j)` is
    /// member `j`'s fold and its count: by the team's first member for
    /// every member where agreed ([`Runtime::run_together`]); else this
    /// member's `count` elements at byte `fold.at` of the sources of
    /// `fold.members` folded in team order with `fold.op`, in one pass
    /// ([`reduce_slots`] over their mappings) straight into its dest where
    /// [`Runtime::direct_dest`] allows and every source is mapped here, else
    /// on the device ([`Runtime::fold_launches`]), else into host memory
    /// (one pass where the sources are mapped, part by part where not:
    /// [`Runtime::fold_members`]); the closing sync; then the dest written
    /// from host memory where it was not already. No members: zeros.
    fn fold_and_close<T: Reduce>(
        &self,
        m: &Members,
        sh: &Shared,
        what: &str,
        fold_of: &dyn Fn(u32) -> (Fold, usize),
    ) -> Ran {
        let es = std::mem::size_of::<T>() as u64;
        let (fold, count) = fold_of(m.me);
        let fold = &fold;
        let bytes = count as u64 * es;
        let together = self.run_together(m, what, sh, |j| {
            let (f, count) = fold_of(j);
            match (count, f.members.is_empty()) {
                // Nothing to fold on the device (the member writes its
                // zeros after the sync, below).
                (0, _) | (_, true) => Ok(Some(Vec::new())),
                _ => self.fold_launches::<T>(m, m.shape.member(j), sh, &f, count as u64 * es),
            }
        });
        let ran = match together {
            Some(ran) => Some(ran),
            // Nothing to fold (the first member of an exclusive scan).
            None if fold.members.is_empty() => Some(Ran::each(Ok(()))),
            None => None,
        };
        if let Some(ran) = ran {
            let Ran::Moved { moved, how, .. } = ran else {
                return ran;
            };
            if count > 0 && fold.members.is_empty() {
                // Zeros, after the closing meeting (an in-place dest is a
                // source the others read until then), through the mapping
                // or by the device.
                tracing::trace!("{what}: zeros written by the device or the mapping");
                let then = Then::Zero {
                    offset: fold.dest,
                    bytes,
                };
                return Ran::Moved { moved, how, then };
            }
            return Ran::Moved {
                moved,
                how,
                then: Then::Nothing,
            };
        }
        // Through the mappings up to VKSHMEM_HOST_MAPPED_MAX (as the data
        // moves, `pull_into`), else on the device where it can.
        let on_host = bytes <= self.host_mapped_max;
        let direct = on_host
            .then(|| self.direct_dest(fold.dest, bytes, fold.exposed))
            .flatten();
        let slots = fold
            .members
            .clone()
            .map(|i| {
                let src = sh.own[i][0].wrapping_add(fold.at);
                self.mapped_source(m.shape.member(i as u32), src, bytes)
                    .filter(|p| p.align_offset(std::mem::align_of::<T>()) == 0)
            })
            .collect::<Option<Vec<_>>>()
            .filter(|_| on_host && count > 0);
        if let (Some(slots), Some(out)) = (&slots, direct) {
            // The sources are mapped and aligned (above), nobody writes
            // them before the closing sync, and `out` (this member's dest,
            // `count` elements) overlaps none of them (`direct_dest`: apart
            // from every byte read from this member's heap, and the others'
            // heaps are apart from it).
            reduce_slots::<T>(fold.op, count, slots, out);
            tracing::trace!("{what}: folded straight from the mappings");
            return Ran::each(Ok(()));
        }
        if count > 0 {
            let planned = self.fold_launches::<T>(m, self.my_pe(), sh, fold, bytes);
            if let Some(ran) = self.run_planned(what, planned, "folded by the device") {
                return ran;
            }
        }
        if count > 0 {
            tracing::trace!("{what}: folded in host memory");
        }
        let mut acc = vec![T::zeroed(); count];
        let read = match &slots {
            // One pass from the mappings into `acc`, apart from them.
            Some(slots) => {
                reduce_slots::<T>(fold.op, count, slots, acc.as_mut_ptr().cast());
                Ok(())
            }
            None => self.fold_members(m, sh, fold.at, fold.op, fold.members.clone(), &mut acc),
        };
        // The dest is written after the closing meeting (an in-place dest
        // is a source the others read until then).
        Ran::Moved {
            moved: read,
            how: part::EACH,
            then: if count > 0 {
                Then::Write {
                    offset: fold.dest,
                    bytes: bytemuck::cast_slice(&acc).to_vec(),
                }
            } else {
                Then::Nothing
            },
        }
    }

    /// Folds `acc.len()` elements at byte `at` of the sources of `members`
    /// (team indices, in order; their offsets from the agreement) with `op`
    /// into `acc`, one part at a time (host memory stays three parts,
    /// whatever the team size). `acc` keeps its zeros when `members` is empty.
    fn fold_members<T: Reduce>(
        &self,
        m: &Members,
        sh: &Shared,
        at: u64,
        op: ReduceOp,
        members: std::ops::Range<usize>,
        acc: &mut Vec<T>,
    ) -> Result<()> {
        let count = acc.len();
        if count == 0 {
            return Ok(());
        }
        let mut part = vec![T::zeroed(); count];
        let mut next = vec![T::zeroed(); count];
        let first = members.start;
        for i in members {
            let pe = m.shape.member(i as u32);
            let into = if i == first { &mut *acc } else { &mut part };
            self.read_bytes(pe, sh.own[i][0] + at, bytemuck::cast_slice_mut(into))?;
            if i > first {
                let slots = [acc.as_ptr().cast::<u8>(), part.as_ptr().cast::<u8>()];
                reduce_slots::<T>(op, count, &slots, next.as_mut_ptr().cast());
                std::mem::swap(acc, &mut next);
            }
        }
        Ok(())
    }

    pub(crate) fn sum_inscan<T: Reduce>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.scan(team, "sum_inscan", dest, source, nelems, true)
    }

    pub(crate) fn sum_exscan<T: Reduce>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.scan(team, "sum_exscan", dest, source, nelems, false)
    }

    fn scan<T: Reduce>(
        &self,
        team: Team,
        what: &str,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        inclusive: bool,
    ) -> Result<()> {
        let m = self.members(team)?;
        let es = std::mem::size_of::<T>() as u64;
        let kind =
            vkshmem_device::collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        let local = (|| {
            self.check_kind(what, &kind, ReduceOp::Sum)?;
            self.check_sym(&format!("{what} source"), source, nelems as u64)?;
            self.check_sym(&format!("{what} dest"), dest, nelems as u64)
        })();
        let common = [es, fingerprint_str(T::KIND), nelems as u64];
        let mine = Mine {
            dest: dest.offset(),
            bytes: (nelems as u64).saturating_mul(es),
        };
        let args = UccArgs {
            what,
            common: common.to_vec(),
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        };
        let fold_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            let fold = Fold {
                at: 0,
                op: ReduceOp::Sum,
                members: 0..if inclusive { j + 1 } else { j },
                dest: sh.dests[j],
                // The members after this one read its source.
                exposed: (sh.own[j][0], nelems as u64 * es),
            };
            (fold, nelems)
        };
        self.run_fold::<T>(&m, args, fold_of)
    }

    pub(crate) fn fanin(&self, team: Team, root: u32) -> Result<()> {
        self.fan(team, "fanin", root)
    }

    pub(crate) fn fanout(&self, team: Team, root: u32) -> Result<()> {
        self.fan(team, "fanout", root)
    }

    fn fan(&self, team: Team, what: &str, root: u32) -> Result<()> {
        let m = self.members(team)?;
        let local = check_root(what, root, m.shape.size);
        let args = UccArgs {
            what,
            common: vec![u64::from(root)],
            own: Vec::new(),
            part: None,
            local: Some(local),
        };
        let moves = |rt: &Runtime, m: &Members, _: &Shared| {
            // Complete with the sync, no closing meeting.
            let synced = rt.quiet().and_then(|()| rt.sync_members(m, what));
            Ran::Complete(synced.map_err(|e| e.during(what)))
        };
        self.run_call(&m, Ucc { args, moves })
    }
}

/// The reads of `pull` that move bytes, for member `me` whose dest is at
/// heap offset `dest`, where each writes dest bytes apart from
/// `pull.exposed` (the bytes others read from this member's heap during
/// the call), so that they may be written before the closing sync; a read
/// of this member's own bytes onto themselves (an in-place part, as in
/// allgatherv with MPI_IN_PLACE) is left out: its bytes are there already.
/// `None` where some read writes exposed bytes (the buffered steps then
/// write the dest after the sync). The dest's gaps are no read's, so they
/// keep what they held.
fn writes_apart(pull: &Pull, me: u32, dest: u64) -> Option<Vec<Read>> {
    let mut early = Vec::new();
    for r in pull.reads.iter().filter(|r| r.bytes > 0) {
        let at = dest.wrapping_add(r.dst);
        if r.from == me && r.src == at {
            continue;
        }
        if !apart((at, r.bytes), pull.exposed) {
            return None;
        }
        early.push(*r);
    }
    Some(early)
}

/// Whether two byte ranges of a heap (offset and length) share no byte: an
/// empty range is apart from any, and ranges that touch are apart.
fn apart(a: (u64, u64), b: (u64, u64)) -> bool {
    a.1 == 0 || b.1 == 0 || a.0.saturating_add(a.1) <= b.0 || b.0.saturating_add(b.1) <= a.0
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
