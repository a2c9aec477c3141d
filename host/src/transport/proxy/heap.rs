//! This PE's heap as the proxy thread reaches it: the host mapping.

use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use vkshmem_device::layout::ControlHeader;

use crate::vk::memory::SharedMemory;

/// This PE's heap as the proxy sees it: the host mapping.
pub(super) struct OwnHeap {
    pub(super) base: *mut u8,
    pub(super) len: u64,
    pub(super) _memory: Arc<SharedMemory>,
}

// SAFETY: `base` is the host mapping of `_memory`, which this struct keeps
// alive; the mapping may be used from any thread (vkMapMemory gives a plain
// host pointer). Device code and other host threads write the same memory:
// every shared word is accessed atomically, and bulk copies cover bytes the
// protocol hands to one writer at a time (the requester's dest or source).
unsafe impl Send for OwnHeap {}

impl OwnHeap {
    pub(super) fn range(&self, at: u64, n: u64) -> bool {
        at.checked_add(n).is_some_and(|end| end <= self.len)
    }

    /// The word at byte `at` (aligned, in range).
    pub(super) fn word(&self, at: u64) -> Option<&AtomicU32> {
        if at % 4 != 0 || !self.range(at, 4) {
            return None;
        }
        // SAFETY: in range and aligned (checked; the mapping is page aligned);
        // AtomicU32 has u32's layout, and every word both sides share is
        // accessed atomically by the device too.
        Some(unsafe { &*(self.base.add(at as usize) as *const AtomicU32) })
    }

    pub(super) fn read(&self, at: u64, out: &mut [u8]) {
        debug_assert!(self.range(at, out.len() as u64));
        // SAFETY: in range (callers check); see the Send impl for who writes.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(at as usize), out.as_mut_ptr(), out.len())
        }
    }

    pub(super) fn write(&self, at: u64, src: &[u8]) {
        debug_assert!(self.range(at, src.len() as u64));
        // SAFETY: as for read.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.add(at as usize), src.len())
        }
    }

    /// Raises device error `bits` in this PE's control header, as device code
    /// does (the first error names the PE and word).
    pub(super) fn raise(&self, bits: u32, pe: u32, word: u32) {
        let at = |offset: usize| self.word(offset as u64).expect("control header");
        if at(offset_of!(ControlHeader, error)).fetch_or(bits, Ordering::SeqCst) == 0 {
            at(offset_of!(ControlHeader, error_pe)).store(pe, Ordering::SeqCst);
            at(offset_of!(ControlHeader, error_addr)).store(word, Ordering::SeqCst);
        }
    }

    /// The control header's `proxy_head`: tickets device code claimed.
    pub(super) fn head(&self) -> &AtomicU32 {
        self.word(offset_of!(ControlHeader, proxy_head) as u64)
            .expect("control header")
    }
}
