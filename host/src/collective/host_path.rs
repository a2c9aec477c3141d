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

use super::moves::{self, Plan};
use super::reduce::{Reduce, ReduceOp};
use super::{Desc, Members};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::sync::layout::DATA_BYTES;
use crate::sync::Ticket;

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
}

/// `out = slot_0 op slot_1 op …` over `n` elements of one type.
pub(crate) type ReduceFn = fn(ReduceOp, usize, &[*const u8], *mut u8);

/// [`ReduceFn`] for `T`. The slots must be aligned for `T`: the plane's data
/// slots and the staging buffers start on cache lines, and a round's part
/// starts at a multiple of the element size.
pub(crate) fn reduce_slots<T: Reduce>(op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    let bytes = n * std::mem::size_of::<T>();
    let Some((&first, rest)) = slots.split_first() else {
        return;
    };
    let mut own = Vec::new();
    let acc: &mut [T] = if out as usize % std::mem::align_of::<T>() == 0 {
        // SAFETY: `out` points at `bytes` writable bytes that nothing else
        // reads or writes during the call (this PE's mapped dest, or a buffer
        // of the caller's), aligned for T (checked); any bytes are a valid T.
        unsafe { std::slice::from_raw_parts_mut(out.cast::<T>(), n) }
    } else {
        own.resize(n, T::zeroed());
        &mut own
    };
    // SAFETY: each slot holds at least `bytes` bytes (the member staged n
    // elements of T) and nobody writes it until this PE's next sync on the
    // team; acc holds n elements and does not overlap a slot.
    unsafe { std::ptr::copy_nonoverlapping(first, acc.as_mut_ptr().cast::<u8>(), bytes) };
    for &s in rest {
        assert_eq!(s as usize % std::mem::align_of::<T>(), 0, "unaligned slot");
        // SAFETY: as above, and aligned for T (asserted); any bytes are a valid
        // T (Pod); shared, read-only while this slice lives.
        let x = unsafe { std::slice::from_raw_parts(s.cast::<T>(), n) };
        for (a, b) in acc.iter_mut().zip(x) {
            *a = T::host_combine(op, *a, *b);
        }
    }
    if !own.is_empty() {
        // SAFETY: as above; `own` holds exactly `bytes` bytes.
        unsafe { std::ptr::copy_nonoverlapping(own.as_ptr().cast::<u8>(), out, bytes) };
    }
}

impl Context {
    /// This PE's own heap at `offset` as a host pointer, when mapped.
    pub(crate) fn own_mapped(&self, offset: u64, bytes: u64) -> Option<*mut u8> {
        let block = self.check_range(self.my_pe(), offset, bytes).ok()?;
        // SAFETY: in bounds of the mapping (check_range).
        block
            .mapped()
            .map(|b| unsafe { b.as_ptr().add(offset as usize) })
    }

    /// Whether this PE would stage `s` (the members then agree on the path).
    pub(crate) fn may_stage(&self, s: &Small) -> bool {
        self.stage_source(s).is_some()
    }

    /// This PE's contribution in the mapped heap when it may take the host
    /// path for `s` (a plane, within the threshold and the data slot).
    fn stage_source(&self, s: &Small) -> Option<*mut u8> {
        if self.inner.plane.is_none()
            || s.size > self.inner.host_mapped_max
            || s.bytes > DATA_BYTES as u64
        {
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
            .inner
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
