//! Symmetric allocation: every PE asks for the same, checked before it is applied.

use std::sync::Arc;

use super::{lock, Runtime};
use crate::error::{Error, Result};
use crate::symbuf::SymBuffer;

/// A collective allocation request, compared across PEs before it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Request {
    op: u32,
    _pad: u32,
    a: u64,
    b: u64,
}

const OP_MALLOC: u32 = 1;
const OP_FREE: u32 = 2;

impl Request {
    /// The public call that made this request.
    fn call(&self) -> &'static str {
        match self.op {
            OP_MALLOC => "malloc",
            _ => "free",
        }
    }

    fn describe(&self) -> String {
        match self.op {
            OP_MALLOC => format!("allocate {} bytes aligned to {}", self.a, self.b),
            OP_FREE => format!("free the allocation at offset {}", self.a),
            op => format!("unknown request {op}"),
        }
    }
}

impl Runtime {
    /// Compares `req` across PEs; a difference is [`Error::AllocMismatch`](crate::Error::AllocMismatch) on all
    /// (every PE compares against PE 0's request, so all report the same words).
    fn agree(&self, req: Request) -> Result<()> {
        let blobs = self
            .with_boot(Vec::new(), |b| b.allgather(bytemuck::bytes_of(&req)))
            .map_err(|e| e.during(req.call()))?;
        let all: Vec<Request> = blobs
            .iter()
            .map(|b| bytemuck::try_pod_read_unaligned(b))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Bootstrap("a PE sent a malformed allocation request".into()))?;
        if let Some((pe, odd)) = all.iter().enumerate().find(|(_, r)| **r != all[0]) {
            return Err(Error::AllocMismatch(format!(
                "PE 0 asked to {}, PE {pe} asked to {}; every PE must make the same symmetric allocation calls",
                all[0].describe(),
                odd.describe()
            )));
        }
        Ok(())
    }

    pub(crate) fn malloc<T: bytemuck::Pod>(self: &Arc<Self>, len: usize) -> Result<SymBuffer<T>> {
        self.align(std::mem::align_of::<T>() as u64, len)
    }

    pub(crate) fn align<T: bytemuck::Pod>(
        self: &Arc<Self>,
        align: u64,
        len: usize,
    ) -> Result<SymBuffer<T>> {
        if std::mem::size_of::<T>() == 0 {
            return Err(Error::InvalidArgument(format!(
                "symmetric buffers of the zero-sized type {} hold no bytes",
                std::any::type_name::<T>()
            )));
        }
        let bytes = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{len} elements overflow the address space"))
            })?;
        if !align.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "alignment {align} is not a power of two"
            )));
        }
        self.agree(Request {
            op: OP_MALLOC,
            _pad: 0,
            a: bytes,
            b: align,
        })?;
        let offset = lock(&self.alloc).alloc(bytes, align)?;
        Ok(SymBuffer::new(self.clone(), offset, len))
    }

    pub(crate) fn calloc<T: bytemuck::Pod>(self: &Arc<Self>, len: usize) -> Result<SymBuffer<T>> {
        self.align_zeroed(std::mem::align_of::<T>() as u64, len)
    }

    pub(crate) fn align_zeroed<T: bytemuck::Pod>(
        self: &Arc<Self>,
        align: u64,
        len: usize,
    ) -> Result<SymBuffer<T>> {
        let buf = self.align::<T>(align, len)?;
        let rounded = lock(&self.alloc)
            .allocation_len(buf.offset())
            .expect("just allocated");
        let own = self.heap.block(self.pe)?;
        lock(&self.submit).fill(own.buffer, buf.offset(), rounded, 0)?;
        // No PE may write into the new block before its owner has zeroed it.
        self.sync_all()?;
        Ok(buf)
    }

    /// Frees the allocation at `offset` on every PE (collective, `shmem_free`).
    pub(crate) fn free_offset(&self, offset: u64) -> Result<()> {
        self.agree(Request {
            op: OP_FREE,
            _pad: 0,
            a: offset,
            b: 0,
        })?;
        lock(&self.alloc).free(offset)
    }
}
