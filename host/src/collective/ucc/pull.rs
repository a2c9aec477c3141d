//! Steps 2 and 3 of the data moves (gather(v), scatter(v), allgatherv,
//! alltoallv): the reads, straight into the dest through the mappings or
//! by the device's wide copies, else through host memory.

use super::*;

/// The reads of `pull` that move bytes, for member `me` whose dest is at
/// heap offset `dest`, where each writes dest bytes apart from
/// `pull.exposed` (the bytes others read from this member's heap during
/// the call), so that they may be written before the closing sync; a read
/// of this member's own bytes onto themselves (an in-place part, as in
/// allgatherv with MPI_IN_PLACE) is left out: its bytes are there already.
/// `None` where some read writes exposed bytes (the buffered steps then
/// write the dest after the sync). The dest's gaps are no read's, so they
/// keep what they held.
pub(super) fn writes_apart(pull: &Pull, me: u32, dest: u64) -> Option<Vec<Read>> {
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
pub(super) fn apart(a: (u64, u64), b: (u64, u64)) -> bool {
    a.1 == 0 || b.1 == 0 || a.0.saturating_add(a.1) <= b.0 || b.0.saturating_add(b.1) <= a.0
}

impl Runtime {
    /// A data move through the engine: `args` agreed, then member `j`'s
    /// reads `pull_of(agreed, j)` into its dest at heap offset `dest`.
    pub(super) fn run_pull(
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
    pub(super) fn run_pull_checked(
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

    /// Steps 2 and 3 for data moves: where every read writes dest bytes
    /// apart from the exposed ones ([`writes_apart`], an in-place part left
    /// out), the reads straight into `dest` (through the mappings up to
    /// `VKSHMEM_HOST_MAPPED_MAX`, else by the device:
    /// [`Runtime::pull_launches`]), then the closing sync; else into
    /// `pull.bytes` of host memory (holding first what the dest held, where
    /// `pull.gaps`), the sync, then `dest` written from it.
    pub(super) fn pull_into(
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
    pub(super) fn pull_launches(
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
    pub(super) fn run_together(
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
    pub(super) fn run_planned(
        &self,
        what: &str,
        planned: Result<Option<Part>>,
        how: &str,
    ) -> Option<Ran> {
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
    pub(super) fn direct_dest(
        &self,
        dest: u64,
        bytes: u64,
        exposed: (u64, u64),
    ) -> Option<*mut u8> {
        (bytes > 0 && apart((dest, bytes), exposed) && self.proxied(self.my_pe()).is_none())
            .then(|| self.own_mapped(dest, bytes))
            .flatten()
    }

    /// `bytes` at `offset` of PE `pe`'s heap as a host pointer, where this
    /// process maps it (not through the proxy).
    pub(super) fn mapped_source(&self, pe: u32, offset: u64, bytes: u64) -> Option<*const u8> {
        if self.proxied(pe).is_some() {
            return None;
        }
        self.mapped_at(pe, offset, bytes).map(<*mut u8>::cast_const)
    }
}
