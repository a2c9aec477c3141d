//! Steps 2 and 3 of the reductions and scans: every member's part folded
//! in team order, from the mappings, by the device's wide accumulate kernels,
//! or in host memory.

use super::*;

impl Runtime {
    /// A reduction or scan through the engine: `args` agreed, then member
    /// `j`'s fold and count `fold_of(agreed, j)`.
    pub(super) fn run_fold<T: Reduce>(
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

    /// Step 2 of a fold on the device: `bytes` at byte `fold.at` of the
    /// sources of `fold.members` folded in team order into the dest of PE
    /// `to` (the member's) by the wide accumulate kernels
    /// ([`Runtime::fold_wide`]), in one batch of launches, where every heap
    /// is on this PE's device and the dest lies apart from `fold.exposed`;
    /// `None` where that does not hold or the kernels cannot take the
    /// objects (the caller folds on the host). Each member chooses alone
    /// for its own part; every member plans the same for every part where
    /// the first member submits them all ([`Runtime::run_together`]).
    pub(super) fn fold_launches<T: Reduce>(
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
    pub(super) fn fold_and_close<T: Reduce>(
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
    pub(super) fn fold_members<T: Reduce>(
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
}
