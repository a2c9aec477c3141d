//! The façade of symmetric allocation (`crate::runtime::alloc`).

use crate::error::Result;
use crate::symbuf::SymBuffer;

use super::Context;

impl Context {
    /// Allocates `len` elements of `T` at the same offset on every PE
    /// (`shmem_malloc`). Collective; contents are undefined.
    ///
    /// # Errors
    /// [`Error::AllocMismatch`](crate::Error::AllocMismatch) when the PEs asked for different things (on every
    /// PE), [`Error::HeapExhausted`](crate::Error::HeapExhausted) when there is no room (on every PE),
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `len` elements of `T` overflow 64 bits or `T`
    /// is zero-sized; [`Error::PeerFailed`](crate::Error::PeerFailed) when a PE dies during the agreement,
    /// [`Error::Broken`](crate::Error::Broken) after a failed launch (see [`Context::launch`](crate::Context::launch)).
    pub fn malloc<T: bytemuck::Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        self.rt.malloc(len)
    }

    /// Like [`Context::malloc`](crate::Context::malloc) with the offset a multiple of `align`
    /// (`shmem_align`; a power of two). Its host address in a mapped heap
    /// ([`Context::heap_base`](crate::Context::heap_base) plus the offset) is aligned as much, up to
    /// [`Context::heap_mapping_align`](crate::Context::heap_mapping_align).
    ///
    /// # Errors
    /// As [`Context::malloc`](crate::Context::malloc); [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `align` is not a power
    /// of two (on every PE that passed it, before any communication).
    pub fn align<T: bytemuck::Pod>(&self, align: u64, len: usize) -> Result<SymBuffer<T>> {
        self.rt.align(align, len)
    }

    /// Like [`Context::malloc`](crate::Context::malloc), with every element zero on every PE on return
    /// (`shmem_calloc`).
    ///
    /// # Errors
    /// As [`Context::malloc`](crate::Context::malloc); Vulkan errors from zeroing the block.
    pub fn calloc<T: bytemuck::Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        self.rt.calloc(len)
    }

    /// [`Context::align`](crate::Context::align) with every element zero on
    /// every PE on return, as [`Context::calloc`](crate::Context::calloc).
    ///
    /// # Errors
    /// As [`Context::align`](crate::Context::align); Vulkan errors from zeroing the block.
    pub fn align_zeroed<T: bytemuck::Pod>(&self, align: u64, len: usize) -> Result<SymBuffer<T>> {
        self.rt.align_zeroed(align, len)
    }
}
