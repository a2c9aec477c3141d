//! Typed handles on symmetric allocations.

use std::marker::PhantomData;

use bytemuck::Pod;

use crate::error::Result;
use crate::runtime::{HeapWindow, Runtime};

/// The highest byte address (exclusive) that kernels taking byte addresses
/// reach: device addresses are u32, and the end of the last word (`w * 4 +
/// 4`) must not wrap. It bounds the objects of device and queued
/// collectives and of host collectives that take a generic kernel: the heads
/// and tails of objects off 16-byte alignment or whole words, objects not
/// aligned alike, collect counts that are not whole vec4s, strided
/// alltoalls, element kinds the device cannot reduce wide. Host collectives
/// on the wide kernels bind any part of the heap (in pieces where an object
/// passes the device's largest binding).
pub const MAX_DEVICE_BYTE: u64 = (1 << 32) - 4;

/// Where a symmetric object lies in Vulkan terms ([`SymBuffer::vk_buffer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBuffer {
    /// The heap block's buffer.
    pub buffer: ash::vk::Buffer,
    /// The object's byte offset in it.
    pub offset: u64,
    /// The object's size in bytes.
    pub bytes: u64,
}

/// `len` elements of `T` at the same offset of every PE's symmetric heap.
///
/// Made by [`Context::malloc`](crate::Context::malloc), [`Context::calloc`](crate::Context::calloc) or [`Context::align`](crate::Context::align). Host
/// access copies (the memory is shared with the device and other processes, so no
/// Rust references into it are handed out). Freeing is collective: call
/// [`SymBuffer::free`] on every PE in the same order, or let the handle drop, which
/// does the same and logs an error it cannot return. While the thread is panicking,
/// a drop frees nothing (the job is going down and peers may not be freeing).
pub struct SymBuffer<T: Pod> {
    ctx: std::sync::Arc<Runtime>,
    offset: u64,
    len: usize,
    live: bool,
    _t: PhantomData<T>,
}

impl<T: Pod> std::fmt::Debug for SymBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymBuffer")
            .field("offset", &self.offset)
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: Pod> SymBuffer<T> {
    pub(crate) fn new(ctx: std::sync::Arc<Runtime>, offset: u64, len: usize) -> Self {
        SymBuffer {
            ctx,
            offset,
            len,
            live: true,
            _t: PhantomData,
        }
    }

    /// The symmetric address: the byte offset in every PE's heap.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The symmetric address device code uses for this object: its offset in
    /// 32-bit words. Element `i` of a `T` is at `device_addr() + i * size_of::<T>() / 4`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when the object starts beyond the first
    /// 16 GiB of the heap (device addresses are 32-bit word indices).
    pub fn device_addr(&self) -> crate::Result<u32> {
        u32::try_from(self.offset / 4).map_err(|_| {
            crate::Error::InvalidArgument(format!(
                "offset {} is beyond what device code can address (16 GiB)",
                self.offset
            ))
        })
    }

    /// The byte address device collectives take (`shmem_broadcastmem(team, dest,
    /// source, ...)` and the other collectives of the device library address
    /// bytes, so that 8- and 16-bit elements can start anywhere).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when the object ends beyond the first
    /// 4 GiB of the heap.
    pub fn device_byte_addr(&self) -> crate::Result<u32> {
        self.as_slice().device_byte_addr()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// The Vulkan buffer and byte range that hold this object on PE `pe`
    /// (this PE, or a peer on the same device: its imported block), to bind
    /// in the program's own descriptor sets, copy from or to, or use in
    /// barriers. The buffer is vkshmem's (one per heap block, with storage
    /// and transfer usage); it lives as long as the context.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// # let ctx = vkshmem_host::Context::init()?;
    /// let x = ctx.malloc::<f32>(1024)?;
    /// let raw = x.vk_buffer(ctx.my_pe())?;
    /// let info = ash::vk::DescriptorBufferInfo::default()
    ///     .buffer(raw.buffer)
    ///     .offset(raw.offset)
    ///     .range(raw.bytes);
    /// # let _ = info; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::Unreachable`] for a PE outside the job or on another
    /// device (its heap is not imported here).
    pub fn vk_buffer(&self, pe: u32) -> Result<RawBuffer> {
        Ok(RawBuffer {
            buffer: self.ctx.heap.block(pe)?.buffer,
            offset: self.offset,
            bytes: self.bytes(),
        })
    }

    /// The whole buffer on PE `pe`, to bind to a kernel.
    pub fn window(&self, pe: u32) -> HeapWindow {
        HeapWindow {
            pe,
            offset: self.offset,
            bytes: self.bytes(),
        }
    }

    /// Copies elements `start..start + dst.len()` of PE `pe`'s copy into `dst`.
    ///
    /// # Errors
    /// [`crate::Error::Unreachable`] when `pe` is outside the job, or on
    /// another device while this PE runs no proxy (its heap is not
    /// host-mapped; otherwise the proxy carries the copy);
    /// [`crate::Error::InvalidArgument`] when the range runs past the buffer;
    /// Vulkan errors on a heap the host cannot map.
    pub fn read_at(&self, pe: u32, start: usize, dst: &mut [T]) -> Result<()> {
        let at = self.check_range(start, dst.len())?;
        self.ctx.read_bytes(pe, at, bytemuck::cast_slice_mut(dst))
    }

    /// Copies `src` into elements `start..start + src.len()` of PE `pe`'s copy.
    ///
    /// # Errors
    /// As [`SymBuffer::read_at`].
    pub fn write_at(&self, pe: u32, start: usize, src: &[T]) -> Result<()> {
        let at = self.check_range(start, src.len())?;
        self.ctx.write_bytes(pe, at, bytemuck::cast_slice(src))
    }

    /// Copies the first `dst.len()` elements of PE `pe`'s copy into `dst`.
    ///
    /// # Errors
    /// As [`SymBuffer::read_at`].
    pub fn read_pe(&self, pe: u32, dst: &mut [T]) -> Result<()> {
        self.read_at(pe, 0, dst)
    }

    /// Copies `src` into the first `src.len()` elements of PE `pe`'s copy.
    ///
    /// # Errors
    /// As [`SymBuffer::read_at`].
    pub fn write_pe(&self, pe: u32, src: &[T]) -> Result<()> {
        self.write_at(pe, 0, src)
    }

    /// Copies this PE's own copy into `dst`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when `dst` is longer than the buffer;
    /// Vulkan errors on a heap the host cannot map.
    pub fn read(&self, dst: &mut [T]) -> Result<()> {
        self.read_pe(self.ctx.my_pe(), dst)
    }

    /// Copies `src` into this PE's own copy.
    ///
    /// # Errors
    /// As [`SymBuffer::read`].
    pub fn write(&self, src: &[T]) -> Result<()> {
        self.write_pe(self.ctx.my_pe(), src)
    }

    /// This PE's own copy as a vector.
    ///
    /// # Errors
    /// Vulkan errors on a heap the host cannot map.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.read(&mut v)?;
        Ok(v)
    }

    /// The byte offset of element `start`, when `start..start + n` lies in the buffer.
    fn check_range(&self, start: usize, n: usize) -> Result<u64> {
        match start.checked_add(n) {
            Some(end) if end <= self.len => {
                Ok(self.offset + (start * std::mem::size_of::<T>()) as u64)
            }
            _ => Err(crate::Error::InvalidArgument(format!(
                "elements {start}..{start}+{n} run past a symmetric buffer of {}",
                self.len
            ))),
        }
    }

    /// Frees the buffer on every PE (collective, `shmem_free`).
    ///
    /// # Errors
    /// [`crate::Error::AllocMismatch`] (on every PE) when the PEs free different
    /// buffers; [`crate::Error::PeerFailed`], [`crate::Error::Broken`] and
    /// [`crate::Error::InvalidArgument`] as [`Context::barrier_all`](crate::Context::barrier_all). The handle
    /// is consumed either way; after an error the memory stays allocated.
    pub fn free(mut self) -> Result<()> {
        self.live = false;
        self.ctx.free_offset(self.offset)
    }
}

impl<T: Pod> Drop for SymBuffer<T> {
    fn drop(&mut self) {
        if self.live && !std::thread::panicking() && !self.ctx.is_broken() {
            if let Err(e) = self.ctx.free_offset(self.offset) {
                tracing::error!(
                    "freeing symmetric buffer at offset {} on drop: {e}",
                    self.offset
                );
            }
        }
    }
}

/// A range of elements of a symmetric buffer (`&buf[start..end]` in SHMEM terms):
/// what collectives take as `dest` and `source`. Made by [`SymBuffer::slice`] or
/// [`SymBuffer::as_slice`], it borrows its buffer, so it cannot outlive it or
/// survive its [`SymBuffer::free`]:
///
/// ```compile_fail
/// # fn main() -> vkshmem_host::Result<()> {
/// let ctx = vkshmem_host::Context::init()?;
/// let buf = ctx.calloc::<f32>(16)?;
/// let s = buf.as_slice();
/// buf.free()?; // error[E0505]: cannot move out of `buf` because it is borrowed
/// ctx.reduce(vkshmem_host::Team::WORLD, vkshmem_host::ReduceOp::Sum, &s, &s, 16)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymSlice<'a, T: Pod> {
    offset: u64,
    len: usize,
    _t: PhantomData<(&'a (), T)>,
}

impl<T: Pod> SymSlice<'static, T> {
    /// A slice at byte `offset` of every PE's heap: for code that manages
    /// symmetric addresses itself, with no buffer to borrow. Nothing is checked
    /// here; collectives check that the elements they touch lie inside one live
    /// allocation (so a slice of a freed buffer fails with a typed error unless
    /// the memory was allocated again), past the control region, and are aligned
    /// to the element size.
    pub fn from_raw(offset: u64, len: usize) -> Self {
        SymSlice {
            offset,
            len,
            _t: PhantomData,
        }
    }
}

impl<'a, T: Pod> SymSlice<'a, T> {
    /// Byte offset in every PE's heap (the symmetric address).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The byte address device collectives take (see
    /// [`SymBuffer::device_byte_addr`]).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when the slice ends beyond the first 4 GiB.
    pub fn device_byte_addr(&self) -> crate::Result<u32> {
        match self.offset.checked_add(self.bytes()) {
            Some(end) if end <= MAX_DEVICE_BYTE => Ok(self.offset as u32),
            _ => Err(crate::Error::InvalidArgument(format!(
                "object at offset {} ends beyond the 4 GiB device collectives address",
                self.offset
            ))),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its first `n` elements (all of them when it holds fewer).
    pub fn prefix(&self, n: usize) -> SymSlice<'a, T> {
        SymSlice {
            offset: self.offset,
            len: self.len.min(n),
            _t: PhantomData,
        }
    }

    /// Size in bytes (`u64::MAX` when a [`SymSlice::from_raw`] length is too
    /// large to have a size; collectives reject such a slice).
    pub fn bytes(&self) -> u64 {
        (self.len as u64).saturating_mul(std::mem::size_of::<T>() as u64)
    }
}

impl<T: Pod> SymBuffer<T> {
    /// Elements `range` of the buffer, for collectives.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when the range runs past the buffer.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Result<SymSlice<'_, T>> {
        let n = range
            .end
            .checked_sub(range.start)
            .ok_or_else(|| crate::Error::InvalidArgument(format!("range {range:?} is reversed")))?;
        let at = self.check_range(range.start, n)?;
        Ok(SymSlice::borrowing(at, n))
    }

    /// The whole buffer as a slice.
    pub fn as_slice(&self) -> SymSlice<'_, T> {
        SymSlice::borrowing(self.offset, self.len)
    }
}

impl<'a, T: Pod> SymSlice<'a, T> {
    /// A slice that borrows for `'a` (the buffer it was cut from).
    fn borrowing(offset: u64, len: usize) -> Self {
        SymSlice {
            offset,
            len,
            _t: PhantomData,
        }
    }
}

impl<'a, T: Pod> From<&'a SymBuffer<T>> for SymSlice<'a, T> {
    fn from(b: &'a SymBuffer<T>) -> Self {
        b.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::SymSlice;

    #[test]
    fn raw_slices_too_large_to_have_a_size_do_not_panic() {
        let s = SymSlice::<u64>::from_raw(1 << 20, usize::MAX);
        assert_eq!(s.bytes(), u64::MAX);
        assert!(matches!(
            s.device_byte_addr(),
            Err(crate::Error::InvalidArgument(_))
        ));
        let past = SymSlice::<u32>::from_raw(u64::MAX - 2, 1);
        assert!(past.device_byte_addr().is_err());
        assert_eq!(
            SymSlice::<u32>::from_raw(256, 4).device_byte_addr().ok(),
            Some(256)
        );
    }
}
