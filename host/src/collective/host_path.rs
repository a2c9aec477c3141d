//! Small collectives on the host: no submission, one sync.
//!
//! When every member's heap is mapped by the host (lavapipe, resizable-BAR
//! GPUs) and a call moves at most `VKSHMEM_HOST_MAPPED_MAX` bytes per member
//! (and fits the sync plane's data slot), each member copies its contribution
//! into its data slot of the node segment *before* arriving at the entry sync
//! (copy-in), and after the sync writes its own dest from the members' slots
//! (copy-out), as Open MPI's shared-memory collectives do. A member's source is
//! free again as soon as its contribution is staged, and its dest is complete
//! when it returns, so the call needs no closing sync: the slot is rewritten
//! two syncs later, when every member has finished reading it.
//!
//! Every member chooses for itself whether it can stage (`Desc::staged`); the
//! host path runs only when all did, so the choice is the same on every
//! member, with the thresholds of all of them taken into account.
//!
//! A call within the threshold but too large for the data slot (a heap in
//! host memory that a CPU device computes on, where the threshold is every
//! size by default) moves on the host too, with no submission: where every
//! member maps every member's heap, straight from the members' sources into
//! each member's dest (`direct.rs`: one copy, a reduction as a
//! reduce-scatter whose slice owners push into every dest); else, or where
//! a dest overlaps what peers read, in rounds through the node segment's
//! staging buffers, the staged transport of teams that span devices
//! (`staged.rs`: each member copies its part in and its dest out with
//! memcpy). Each member says which it may (`Desc::hosted`); a way is taken
//! when all may. On llvmpipe, whose compute threads are the same cores, the
//! rounds beat the kernels at every size: a submission and the kernels'
//! loads cost more than the copies (benches/RESULTS.md, "Host path against
//! kernels").

use super::moves::{self, Plan};
use super::reduce::{Reduce, ReduceOp};
use super::{Desc, Members};
use crate::combine::{chunks_in_l1, reduce_slots, ReduceFn};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::sync::layout::DATA_BYTES;
use crate::sync::Ticket;

/// Members beyond which a reduction moves in host rounds only up to
/// [`HOST_REDUCE_WIDE`] bytes (see [`reduce_rounds_max`]).
const HOST_REDUCE_MEMBERS: u32 = 4;

/// See [`HOST_REDUCE_MEMBERS`].
const HOST_REDUCE_WIDE: u64 = 256 << 10;

/// The largest reduction (bytes per member) that `members` move on the
/// host in rounds ([`Small::rounds_max`]; the direct path, which reads every
/// part once, takes every size). A round combines every member's part on
/// every member (`members`² parts read per round): on 8 PEs on llvmpipe
/// that lost to the kernels from 1 MiB and won up to 256 KiB
/// (benches/RESULTS.md, "Host path against kernels"), so past
/// [`HOST_REDUCE_MEMBERS`] members only up to [`HOST_REDUCE_WIDE`].
pub(crate) fn reduce_rounds_max(members: u32) -> u64 {
    if members > HOST_REDUCE_MEMBERS {
        HOST_REDUCE_WIDE
    } else {
        u64::MAX
    }
}

/// A member may move the call on the host in rounds through the staging
/// buffers (`staged.rs`): a bit of [`Desc`]'s `hosted`.
pub(crate) const HOSTED_ROUNDS: u32 = 1;
/// A member may move the call on the host's direct path (`direct.rs`): it
/// maps every member's heap. A bit of [`Desc`]'s `hosted`.
pub(crate) const HOSTED_DIRECT: u32 = 2;

/// What a member stages for the host path.
#[derive(Clone, Copy)]
pub(crate) struct Small {
    /// Heap offset of this member's contribution.
    pub src: u64,
    /// Its bytes (0: nothing, e.g. a broadcast's non-roots).
    pub bytes: u64,
    /// The call's size for the threshold (bytes per member).
    pub size: u64,
    /// Reductions: combines the members' slots into dest.
    pub reduce: Option<ReduceFn>,
    /// Reductions: whether the direct path combines the type in L1 chunks
    /// ([`crate::combine::chunks_in_l1`]).
    pub in_l1: bool,
    /// The largest `size` this call may move on the host in rounds, too
    /// large for the data slot (`u64::MAX` for the moves; reductions:
    /// [`reduce_rounds_max`]).
    pub rounds_max: u64,
}

impl Small {
    /// A call that copies (no reduction): `bytes` of this member's heap at
    /// `src`, a call of `size` bytes per member for the thresholds.
    pub(crate) fn copies(src: u64, bytes: u64, size: u64) -> Small {
        Small {
            src,
            bytes,
            size,
            reduce: None,
            in_l1: false,
            rounds_max: u64::MAX,
        }
    }

    /// A reduction of `bytes` of `T` at `src` among `members`.
    pub(crate) fn reduction<T: Reduce>(src: u64, bytes: u64, members: u32, op: ReduceOp) -> Small {
        Small {
            src,
            bytes,
            size: bytes,
            reduce: Some(reduce_slots::<T>),
            in_l1: chunks_in_l1::<T>(op),
            rounds_max: reduce_rounds_max(members),
        }
    }
}

impl Runtime {
    /// This PE's own heap at `offset` as a host pointer, when mapped.
    pub(crate) fn own_mapped(&self, offset: u64, bytes: u64) -> Option<*mut u8> {
        self.mapped_at(self.my_pe(), offset, bytes)
    }

    /// PE `pe`'s heap at `offset` as a host pointer, when this process maps
    /// it and `bytes` from there lie inside it.
    pub(crate) fn mapped_at(&self, pe: u32, offset: u64, bytes: u64) -> Option<*mut u8> {
        let block = self.check_range(pe, offset, bytes).ok()?;
        // SAFETY: in bounds of the mapping (check_range).
        block
            .mapped()
            .map(|b| unsafe { b.as_ptr().add(offset as usize) })
    }

    /// Whether this PE would move `s` on the host, in one sync or past the
    /// data slot (the members then agree on the path): where it may not, its
    /// kernels are built before the agreement.
    pub(crate) fn may_stage(&self, m: &Members, s: &Small) -> bool {
        self.stage_source(s).is_some() || self.host_ways(m, s) != 0
    }

    /// How this PE may move `s`, too large for the data slot, on the host
    /// ([`HOSTED_ROUNDS`], [`HOSTED_DIRECT`]; 0: not at all). Either needs a
    /// plane, a heap the host maps, and a call within
    /// `VKSHMEM_HOST_MAPPED_MAX` (by default every size where the heap is
    /// host memory that a CPU device computes on, see
    /// [`crate::config::HOST_MAPPED_MAX_CPU`]); rounds through the staging
    /// buffers (`staged.rs`) within [`Small::rounds_max`]; the direct path
    /// (`direct.rs`) where this PE maps every member's heap.
    pub(crate) fn host_ways(&self, m: &Members, s: &Small) -> u32 {
        let max = self.host_mapped_max;
        if self.plane.is_none() || s.size > max || self.own_mapped(s.src, s.bytes.max(1)).is_none()
        {
            return 0;
        }
        let mut ways = 0;
        if s.size <= s.rounds_max {
            ways |= HOSTED_ROUNDS;
        }
        if m.shape.members().all(|pe| self.maps_heap_of(pe)) {
            ways |= HOSTED_DIRECT;
        }
        ways
    }

    /// Whether this process maps PE `pe`'s heap (its own, or a peer's on the
    /// same device in host-visible memory).
    pub(crate) fn maps_heap_of(&self, pe: u32) -> bool {
        self.heap.block(pe).is_ok_and(|b| b.mapped().is_some())
    }

    /// This PE's contribution in the mapped heap when it may take the host
    /// path for `s` (a plane, within the threshold and the data slot).
    fn stage_source(&self, s: &Small) -> Option<*mut u8> {
        if self.plane.is_none() || s.size > self.host_mapped_max || s.bytes > DATA_BYTES as u64 {
            return None;
        }
        // The source in the mapped heap (so is the dest: one mapping).
        self.own_mapped(s.src, s.bytes)
    }

    /// Stages `s` into `slot` when this PE can take the host path for it;
    /// returns whether it did.
    pub(crate) fn stage_small(&self, s: &Small, slot: *mut u8) -> bool {
        let Some(src) = self.stage_source(s) else {
            return false;
        };
        // SAFETY: src is `bytes` bytes of this PE's mapped heap (stage_source
        // checked the range); slot is this PE's data slot for the coming sync
        // (DATA_BYTES, nobody reads it before this PE arrives). Raw copies, no
        // references.
        unsafe { std::ptr::copy_nonoverlapping(src, slot, s.bytes as usize) };
        true
    }

    /// Writes this PE's dest from the members' staged contributions (after the
    /// entry sync; see the module docs), as `moves::plan` describes.
    pub(crate) fn host_move(
        &self,
        m: &Members,
        all: &[Desc],
        t: &Ticket,
        small: &Small,
    ) -> Result<()> {
        let plane = self
            .plane
            .as_ref()
            .expect("the host path runs on the plane");
        let slot = |i: u32| plane.data(t, i);
        let (_, plan) = moves::plan(m, all)?;
        match plan {
            Plan::Copies(moves) => {
                for mv in moves {
                    for (at, dest, bytes) in mv.within(0, DATA_BYTES as u64) {
                        let dst = self.own_mapped(dest, bytes).ok_or_else(|| {
                            Error::InvalidArgument(format!(
                                "dest at offset {dest} is not in the mapped heap"
                            ))
                        })?;
                        // SAFETY: dst is `bytes` bytes of this PE's mapped heap
                        // (own_mapped checked the range); the source is inside
                        // the member's data slot (`within` keeps it below
                        // DATA_BYTES), which that member filled before the sync
                        // and rewrites only two syncs later.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                slot(mv.member).add(at as usize),
                                dst,
                                bytes as usize,
                            )
                        };
                    }
                }
            }
            Plan::Reduce { dest, bytes, op } => {
                let out = self.own_mapped(dest, bytes).ok_or_else(|| {
                    Error::InvalidArgument("reduce dest is not in the mapped heap".into())
                })?;
                let slots: Vec<*const u8> = (0..m.shape.size).map(slot).collect();
                let f = small.reduce.expect("reductions pass their combiner");
                let es = all[m.me as usize].es as u64;
                if bytes > 0 {
                    f(op, (bytes / es) as usize, &slots, out);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reductions in host rounds: every size on up to 4 members, 256 KiB
    /// beyond.
    #[test]
    fn reduce_rounds_by_members() {
        for members in [1, 2, 4] {
            assert_eq!(reduce_rounds_max(members), u64::MAX, "{members}");
        }
        for members in [5, 8, 64] {
            assert_eq!(reduce_rounds_max(members), 256 << 10, "{members}");
        }
    }
}
