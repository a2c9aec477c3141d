//! `shmem_malloc`, `shmem_calloc`, `shmem_align`, `shmem_realloc`,
//! `shmem_free`: blocks of the symmetric heap, kept by offset.

use std::ffi::c_void;

use vkshmem_host::Error;

use crate::setup::{fatal, st, OrDie};

/// The alignment of `shmem_malloc` (any C type, and a cache line).
const MALLOC_ALIGN: usize = 64;

/// Allocates `size` bytes aligned to `align` (0: [`MALLOC_ALIGN`]) on every
/// PE; NULL for 0 bytes or when the heap is full (on every PE). A barrier
/// on exit, as OpenSHMEM requires.
pub fn alloc(call: &str, size: usize, align: usize, zero: bool) -> *mut c_void {
    let s = st(call);
    if size == 0 {
        return std::ptr::null_mut();
    }
    let align = if align == 0 { MALLOC_ALIGN } else { align };
    if align.is_power_of_two() && align > s.base_align {
        // Every PE computes the same bound, so all return NULL together.
        eprintln!(
            "vkshmem: {call}: alignment {align} is more than the heap mappings share (the largest alignment available is {}): NULL",
            s.base_align
        );
        return std::ptr::null_mut();
    }
    let buf = match s.ctx.align::<u8>(align as u64, size) {
        Ok(b) => b,
        Err(Error::HeapExhausted { .. }) => return std::ptr::null_mut(),
        Err(e) => fatal(call, e),
    };
    let off = buf.offset();
    let p = (s.base + off as usize) as *mut u8;
    if zero {
        // SAFETY: the block's `size` bytes lie in this PE's mapped heap.
        unsafe { std::ptr::write_bytes(p, 0, size) };
    }
    s.allocs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(off, buf);
    s.ctx.barrier_all().or_die(call);
    p.cast()
}

/// `shmem_calloc`.
pub fn calloc(count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        Some(n) => alloc("shmem_calloc", n, 0, true),
        None => std::ptr::null_mut(),
    }
}

/// The heap offset of a block from `shmem_malloc`, or the end of the PE.
fn block(call: &str, p: *mut c_void) -> u64 {
    let s = st(call);
    let a = p as usize;
    if a < s.base || a >= s.base + s.size {
        fatal(call, format!("{p:p} is not in the symmetric heap"));
    }
    let off = (a - s.base) as u64;
    if !s
        .allocs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(&off)
    {
        fatal(
            call,
            format!("{p:p} is not a block from shmem_malloc (or it was freed)"),
        );
    }
    off
}

/// `shmem_free`: a barrier on entry, then the block is freed on every PE.
pub fn free(p: *mut c_void) {
    let call = "shmem_free";
    if p.is_null() {
        return;
    }
    let s = st(call);
    let off = block(call, p);
    s.ctx.barrier_all().or_die(call);
    let buf = s
        .allocs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&off);
    if let Some(b) = buf {
        b.free().or_die(call);
    }
}

/// `shmem_realloc`: a new block holding the old one's first bytes, the old
/// one freed.
pub fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    let call = "shmem_realloc";
    if p.is_null() {
        return alloc(call, size, 0, false);
    }
    if size == 0 {
        free(p);
        return std::ptr::null_mut();
    }
    let s = st(call);
    let off = block(call, p);
    let old = s.allocs.lock().unwrap_or_else(|e| e.into_inner())[&off].bytes() as usize;
    let q = alloc(call, size, 0, false);
    if q.is_null() {
        return q;
    }
    // SAFETY: both blocks lie in this PE's mapped heap and do not overlap
    // (both live); min(old, size) bytes fit in each.
    unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), q.cast::<u8>(), old.min(size)) };
    free(p);
    q
}
