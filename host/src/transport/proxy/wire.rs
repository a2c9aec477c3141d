//! The proxies' message format: the kinds, the header at the start of a
//! cell, and what a message carries.

use crate::sync::layout::CELL_BYTES;

/// The little-endian value of the first (up to 8) bytes of `b`.
pub(super) fn le_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(w)
}

/// Message kinds.
pub(super) const M_STORE: u32 = 1;
pub(super) const M_AMO: u32 = 2;
pub(super) const M_LOAD: u32 = 3;
pub(super) const M_GET: u32 = 4;
pub(super) const M_PUT: u32 = 5;
pub(super) const M_PING: u32 = 6;
pub(super) const M_VALUE: u32 = 7;
pub(super) const M_DATA: u32 = 8;
pub(super) const M_ACK: u32 = 9;
/// A host atomic of `len` (4 or 8) bytes at `addr`, op `op` (`PX_*`); the
/// payload holds the operand and the compare value (two u64); answered with
/// `M_DATA` holding the old value.
pub(super) const M_HAMO: u32 = 10;

/// A message's header, at the start of its cell (the sequence word first).
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(super) struct Header {
    pub(super) seq: u32,
    pub(super) kind: u32,
    pub(super) from: u32,
    pub(super) token: u32,
    /// Byte address in the receiver's heap (requests), or unused.
    pub(super) addr: u64,
    /// Payload bytes in this cell (PUT, DATA); bytes asked (GET).
    pub(super) len: u32,
    pub(super) value: u32,
    pub(super) cmp: u32,
    /// `PX_*` of an atomic.
    pub(super) op: u32,
    /// Where this cell's payload goes in the whole transfer.
    pub(super) offset: u32,
    /// 1 on a transfer's last cell.
    pub(super) last: u32,
    /// 0 or `ERR_*` bits (answers).
    pub(super) status: u32,
    /// GET: elements of `len` bytes (0 counts as 1).
    pub(super) count: u32,
    /// GET: bytes between elements in the receiver's heap.
    pub(super) stride: u32,
    pub(super) _pad: u32,
}

pub(super) const HEADER_BYTES: usize = std::mem::size_of::<Header>();
/// Payload bytes per cell.
pub(super) const PAYLOAD: usize = CELL_BYTES - HEADER_BYTES;

/// `h` as sent from `from` with `payload` (into an inbox cell or over the
/// remote link): sequence word cleared, sender, and the payload's length for
/// the kinds that carry one.
pub(super) fn stamped(mut h: Header, from: u32, payload: &[u8]) -> Header {
    h.seq = 0;
    h.from = from;
    if matches!(h.kind, M_PUT | M_DATA) {
        h.len = payload.len() as u32;
    }
    h
}

/// Payload bytes a message of `h`'s kind carries (its length is in `len`
/// for data, fixed for a host atomic's two operands).
pub(super) fn payload_len(h: &Header) -> usize {
    match h.kind {
        M_PUT | M_DATA => h.len as usize,
        M_HAMO => 16,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_fills_its_part_of_a_cell() {
        const { assert!(HEADER_BYTES == 64 && PAYLOAD + HEADER_BYTES == CELL_BYTES) };
    }
}
