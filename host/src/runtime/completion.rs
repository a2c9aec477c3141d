//! Where queued collectives report completion: a ring of slots in one private
//! host-visible, coherent buffer. Each queued collective owns one slot from
//! recording until the host has seen it complete. Its recorded commands end
//! by copying the PE's device error words into the slot and then setting the
//! slot's `done` word, so the host learns that it finished, and how, from host
//! memory alone: no submission, no fence, and never behind a kernel that
//! still waits on the queue.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use vkshmem_device::layout::ControlHeader;

use crate::error::{Error, Result};
use crate::vk::memory::Staging;
use crate::vk::Gpu;

/// Slots in the ring: queued collectives that may be outstanding at once.
pub const SLOTS: u32 = 4096;

/// One slot, as the device writes it. `done` is written last (after a barrier).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct SlotWords {
    /// 1 once the collective's commands ran to the end.
    pub done: u32,
    /// The PE's device error bits after the collective (`ControlHeader::error`).
    pub error: u32,
    /// `ControlHeader::error_pe`.
    pub error_pe: u32,
    /// `ControlHeader::error_addr`.
    pub error_addr: u32,
    /// `ControlHeader::abort`.
    pub abort: u32,
    /// Zero.
    pub pad: [u32; 3],
}

/// Bytes of one slot.
pub const SLOT_BYTES: u64 = std::mem::size_of::<SlotWords>() as u64;

/// Byte offset in a slot of the device error words copied from the control
/// header, and how many bytes (`error` .. `abort`, contiguous in both).
pub const ERRORS_AT: u64 = std::mem::offset_of!(SlotWords, error) as u64;
/// See [`ERRORS_AT`].
pub const ERRORS_BYTES: u64 = 16;
/// Byte offset of the header's `error` word (the copy's source).
pub const HEADER_ERRORS_AT: u64 = std::mem::offset_of!(ControlHeader, error) as u64;

const _: () = {
    // The copy takes error, error_pe, error_addr, abort in this order.
    assert!(
        std::mem::offset_of!(ControlHeader, abort) - std::mem::offset_of!(ControlHeader, error)
            == 12
    );
    assert!(std::mem::offset_of!(SlotWords, abort) - std::mem::offset_of!(SlotWords, error) == 12);
};

/// Which slots are free (pure: the ring's bookkeeping).
#[derive(Debug)]
pub struct FreeSlots {
    free: Vec<u32>,
}

impl FreeSlots {
    /// All `n` slots free; the lowest are handed out first.
    pub fn new(n: u32) -> FreeSlots {
        FreeSlots {
            free: (0..n).rev().collect(),
        }
    }

    /// A free slot, or `None` when every slot is taken.
    pub fn take(&mut self) -> Option<u32> {
        self.free.pop()
    }

    /// Gives `slot` back.
    pub fn give(&mut self, slot: u32) {
        debug_assert!(!self.free.contains(&slot), "slot {slot} given back twice");
        self.free.push(slot);
    }

    /// Slots taken now.
    pub fn taken(&self, n: u32) -> u32 {
        n - self.free.len() as u32
    }
}

/// The ring's buffer and bookkeeping.
pub struct Completions {
    buffer: Staging,
    free: std::sync::Mutex<FreeSlots>,
}

// SAFETY: the mapping is reached only through `word` (atomics) and the buffer
// handle is never changed; the free list is behind its mutex.
unsafe impl Sync for Completions {}

impl std::fmt::Debug for Completions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Completions")
    }
}

impl Completions {
    /// Allocates the ring on `gpu`.
    pub fn new(gpu: &Arc<Gpu>) -> Result<Completions> {
        let buffer = Staging::new(gpu, u64::from(SLOTS) * SLOT_BYTES)?;
        // SAFETY: the mapping is SLOTS * SLOT_BYTES bytes, and nothing else uses it yet.
        unsafe { std::ptr::write_bytes(buffer.ptr().as_ptr(), 0, buffer.size() as usize) };
        Ok(Completions {
            buffer,
            free: std::sync::Mutex::new(FreeSlots::new(SLOTS)),
        })
    }

    /// The buffer (for the recorded copy and fill).
    pub fn buffer(&self) -> ash::vk::Buffer {
        self.buffer.buffer
    }

    /// Byte offset of `slot` in the buffer.
    pub fn offset(slot: u32) -> u64 {
        u64::from(slot) * SLOT_BYTES
    }

    /// A free slot, cleared.
    pub fn take(&self) -> Result<u32> {
        let slot = crate::lock::lock(&self.free).take().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{SLOTS} queued collectives are outstanding already: wait for some first"
            ))
        })?;
        self.clear(slot);
        Ok(slot)
    }

    /// Clears `slot` for its next run (the device does not write it now: it is
    /// free, or its last run was seen done).
    pub fn clear(&self, slot: u32) {
        for w in 0..(SLOT_BYTES / 4) as usize {
            self.word(slot, w).store(0, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
    }

    /// Gives `slot` back (its last run was seen done, or never submitted and
    /// the commands that would write it are gone).
    pub fn give(&self, slot: u32) {
        crate::lock::lock(&self.free).give(slot);
    }

    /// Slots taken now.
    pub fn taken(&self) -> u32 {
        crate::lock::lock(&self.free).taken(SLOTS)
    }

    fn word(&self, slot: u32, w: usize) -> &AtomicU32 {
        assert!(slot < SLOTS && w < (SLOT_BYTES / 4) as usize);
        // SAFETY: inside the mapping (asserted), 4-byte aligned (the mapping is
        // page-aligned and slots are 32 bytes); the memory is host-coherent, and
        // the device writes it only through the recorded transfer commands,
        // which the host reads with atomics (no torn or cached reads).
        unsafe {
            AtomicU32::from_ptr(
                self.buffer
                    .ptr()
                    .as_ptr()
                    .add(Self::offset(slot) as usize + 4 * w)
                    .cast::<u32>(),
            )
        }
    }

    /// `slot` as the device left it: `None` while not done.
    pub fn read(&self, slot: u32) -> Option<SlotWords> {
        if self.word(slot, 0).load(Ordering::Acquire) == 0 {
            return None;
        }
        let w = |i| self.word(slot, i).load(Ordering::Acquire);
        Some(SlotWords {
            done: 1,
            error: w(1),
            error_pe: w(2),
            error_addr: w(3),
            abort: w(4),
            pad: [0; 3],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_handed_out_once_until_given_back() {
        let mut f = FreeSlots::new(3);
        let (a, b, c) = (f.take().unwrap(), f.take().unwrap(), f.take().unwrap());
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(f.take(), None);
        assert_eq!(f.taken(3), 3);
        f.give(b);
        assert_eq!(f.take(), Some(b));
        f.give(a);
        f.give(c);
        assert_eq!(f.taken(3), 1);
    }

    #[test]
    fn the_slot_mirrors_the_header_error_words() {
        assert_eq!(SLOT_BYTES, 32);
        assert_eq!(ERRORS_AT, 4);
        assert_eq!(HEADER_ERRORS_AT % 4, 0);
    }
}
