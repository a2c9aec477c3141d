//! One atomic operation on a word of 4 or 8 bytes of a mapped heap, shared by
//! the host's atomics through the mapping (`crate::rma::amo`) and the proxy,
//! which applies other PEs' host atomics to its own heap.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use vkshmem_device::layout as dl;

/// One atomic on a word of a PE's heap: which word (PE `pe`, byte `at`,
/// `width` 4 or 8 bytes), the operation (`PX_*` of
/// `vkshmem_device::layout`) and its operands (`cmp` for compare-and-swap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WordOp {
    pub pe: u32,
    pub at: u64,
    pub width: u32,
    pub op: u32,
    pub value: u64,
    pub cmp: u64,
}

/// Applies the word operation `op` (`PX_LOAD`, `PX_STORE`, `PX_ADD`,
/// `PX_AND`, `PX_OR`, `PX_XOR`, `PX_SWAP`, `PX_CAS` of
/// `vkshmem_device::layout`) with operand `value` (and `cmp` for CAS) to the
/// `width`-byte word at `p`; returns its old value. An unknown op loads.
///
/// # Safety
/// `p` is valid for atomic access to `width` (4 or 8) bytes, aligned to
/// `width`, for the call: other threads, processes and the device may access
/// the word at the same time, always atomically.
pub(crate) unsafe fn apply(p: *mut u8, width: u32, op: u32, value: u64, cmp: u64) -> u64 {
    macro_rules! on {
        ($a:expr, $v:expr, $c:expr) => {{
            let a = $a;
            match op {
                dl::PX_STORE | dl::PX_SWAP => a.swap($v, Ordering::SeqCst),
                dl::PX_ADD => a.fetch_add($v, Ordering::SeqCst),
                dl::PX_AND => a.fetch_and($v, Ordering::SeqCst),
                dl::PX_OR => a.fetch_or($v, Ordering::SeqCst),
                dl::PX_XOR => a.fetch_xor($v, Ordering::SeqCst),
                dl::PX_CAS => {
                    match a.compare_exchange($c, $v, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(v) | Err(v) => v,
                    }
                }
                _ => a.load(Ordering::SeqCst),
            }
        }};
    }
    if width == 8 {
        // SAFETY: the caller's contract: valid, aligned to 8, accessed
        // atomically by everyone.
        let a = unsafe { AtomicU64::from_ptr(p.cast()) };
        on!(a, value, cmp)
    } else {
        // SAFETY: as above, aligned to 4.
        let a = unsafe { AtomicU32::from_ptr(p.cast()) };
        u64::from(on!(a, value as u32, cmp as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_operations_return_the_old_value() {
        let mut w = [0u64; 2];
        let p = w.as_mut_ptr().cast::<u8>();
        // SAFETY: a local, aligned array no one else touches.
        unsafe {
            assert_eq!(apply(p, 8, dl::PX_ADD, 5, 0), 0);
            assert_eq!(apply(p, 8, dl::PX_CAS, 9, 4), 5); // no swap: 5 != 4
            assert_eq!(apply(p, 8, dl::PX_CAS, 9, 5), 5);
            assert_eq!(apply(p, 8, dl::PX_XOR, 0b11, 0), 9);
            assert_eq!(apply(p, 8, dl::PX_LOAD, 0, 0), 10);
            assert_eq!(apply(p, 4, dl::PX_ADD, u64::from(u32::MAX), 0), 10);
            assert_eq!(apply(p, 4, dl::PX_LOAD, 0, 0), 9); // wrapped in 32 bits
            assert_eq!(apply(p, 8, dl::PX_STORE, 7, 0) & 0xffff_ffff, 9);
        }
        assert_eq!(w[0], 7);
    }
}
