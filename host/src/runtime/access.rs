//! Host access to the heaps: through the mapping, or through staging copies where
//! the host cannot map them.

use super::{lock, Runtime};
use crate::error::{Error, Result};
use crate::vk::memory::Staging;
use crate::vk::submit::Submitter;
use std::sync::Arc;

/// Bytes of the staging buffer used for host access to heaps the host cannot map.
const STAGING_BYTES: u64 = 4 << 20;

/// The 4-byte words inside the byte range `start..end`, as `first..last`
/// (empty, at the range's end or its first word boundary, where no whole
/// word fits): what `vkCmdFillBuffer` may fill of it.
fn words_inside(start: u64, end: u64) -> (u64, u64) {
    let first = start.next_multiple_of(4).min(end);
    (first, (end & !3).max(first))
}

impl Runtime {
    /// Whether `[offset, offset + bytes)` lies inside one live symmetric
    /// allocation (a check for slices made with `SymSlice::from_raw`).
    pub(crate) fn is_live(&self, offset: u64, bytes: u64) -> bool {
        lock(&self.alloc).is_live(offset, bytes)
    }

    /// Checks that `[offset, offset+bytes)` lies in the heap.
    fn check_size(&self, offset: u64, bytes: u64) -> Result<()> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.heap.size() => Ok(()),
            _ => Err(Error::InvalidArgument(format!(
                "range of {bytes} bytes at offset {offset} runs past the symmetric heap ({} bytes)",
                self.heap.size()
            ))),
        }
    }

    /// Checks that `[offset, offset+bytes)` lies in PE `pe`'s reachable heap.
    pub(crate) fn check_range(
        &self,
        pe: u32,
        offset: u64,
        bytes: u64,
    ) -> Result<&Arc<crate::vk::memory::SharedMemory>> {
        let block = self.heap.block(pe)?;
        self.check_size(offset, bytes)?;
        Ok(block)
    }

    /// Copies bytes from PE `pe`'s heap at `offset` into `dst`.
    pub(crate) fn read_bytes(&self, pe: u32, offset: u64, dst: &mut [u8]) -> Result<()> {
        if let Some(proxy) = self.proxied(pe) {
            self.check_size(offset, dst.len() as u64)?;
            return proxy.get(pe, offset, dst);
        }
        let block = self.check_range(pe, offset, dst.len() as u64)?;
        if let Some(base) = block.mapped() {
            // SAFETY: the range lies inside the mapped block (check_range). Other PEs
            // and the device may write it concurrently; we copy raw bytes without
            // creating references to the shared memory, and Pod types accept any bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    base.as_ptr().add(offset as usize),
                    dst.as_mut_ptr(),
                    dst.len(),
                )
            };
            return Ok(());
        }
        self.staged(|sub, st| {
            for (i, chunk) in dst.chunks_mut(st.size() as usize).enumerate() {
                let at = offset + (i as u64) * st.size();
                sub.copy(block.buffer, at, st.buffer, 0, chunk.len() as u64)?;
                // SAFETY: the copy finished (submit waits) and made the bytes
                // host-visible; the staging mapping holds at least chunk.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        st.ptr().as_ptr(),
                        chunk.as_mut_ptr(),
                        chunk.len(),
                    )
                };
            }
            Ok(())
        })
    }

    /// Copies `src` into PE `pe`'s heap at `offset`.
    pub(crate) fn write_bytes(&self, pe: u32, offset: u64, src: &[u8]) -> Result<()> {
        if let Some(proxy) = self.proxied(pe) {
            self.check_size(offset, src.len() as u64)?;
            return proxy.put(pe, offset, src);
        }
        let block = self.check_range(pe, offset, src.len() as u64)?;
        if let Some(base) = block.mapped() {
            // SAFETY: as in read_bytes; the destination range is inside the mapping.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr(),
                    base.as_ptr().add(offset as usize),
                    src.len(),
                )
            };
            return Ok(());
        }
        self.staged(|sub, st| {
            for (i, chunk) in src.chunks(st.size() as usize).enumerate() {
                let at = offset + (i as u64) * st.size();
                // SAFETY: the staging mapping holds at least chunk.len() bytes and no
                // transfer is using it (the previous copy was waited for).
                unsafe {
                    std::ptr::copy_nonoverlapping(chunk.as_ptr(), st.ptr().as_ptr(), chunk.len())
                };
                sub.copy(st.buffer, 0, block.buffer, at, chunk.len() as u64)?;
            }
            Ok(())
        })
    }

    /// Zeros `bytes` bytes of this PE's heap at `offset`: through the host's
    /// mapping up to `VKSHMEM_HOST_MAPPED_MAX`, else by the device
    /// (`vkCmdFillBuffer` over the 4-byte words inside the range, the up to
    /// 3 bytes at either end written from the host), so that a large range of
    /// an unmapped heap costs no copy through host memory, which for a
    /// large scan on a GPU took far longer than the scan.
    pub(crate) fn zero_own(&self, offset: u64, bytes: u64) -> Result<()> {
        let pe = self.my_pe();
        let block = self.check_range(pe, offset, bytes)?;
        if let Some(base) = block.mapped().filter(|_| bytes <= self.host_mapped_max) {
            // SAFETY: the range lies inside the mapped block (check_range);
            // raw bytes are written without references to the shared memory.
            unsafe { std::ptr::write_bytes(base.as_ptr().add(offset as usize), 0, bytes as usize) };
            return Ok(());
        }
        let end = offset + bytes;
        let (first, last) = words_inside(offset, end);
        if last > first {
            lock(&self.submit).fill(block.buffer, first, last - first, 0)?;
        }
        for (at, n) in [(offset, first - offset), (last, end - last)] {
            if n > 0 {
                self.write_bytes(pe, at, &[0u8; 3][..n as usize])?;
            }
        }
        Ok(())
    }

    fn staged(&self, f: impl FnOnce(&mut Submitter, &Staging) -> Result<()>) -> Result<()> {
        let mut st = lock(&self.staging);
        if st.is_none() {
            *st = Some(Staging::new(&self.gpu, STAGING_BYTES)?);
        }
        let mut sub = lock(&self.submit);
        f(&mut sub, st.as_ref().expect("created above"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn words_inside_leave_at_most_3_bytes_at_each_end() {
        for start in 0..12u64 {
            for end in start..24 {
                let (first, last) = super::words_inside(start, end);
                assert!(start <= first && first <= last && last <= end);
                assert!(first % 4 == 0 || first == end, "{start}..{end}");
                assert!(last % 4 == 0 || last == first, "{start}..{end}");
                assert!(first - start < 4 && end - last < 4, "{start}..{end}");
                // Every whole word inside the range is filled.
                let words = (start..end).filter(|b| b % 4 == 0 && b + 4 <= end).count() as u64;
                assert_eq!(last - first, 4 * words, "{start}..{end}");
            }
        }
    }
}
