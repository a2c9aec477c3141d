//! Put, get, strided put/get, put-with-signal, fence and quiet.

use bytemuck::Pod;
use vkshmem_host::rma::SignalOp;
use vkshmem_host::SymSlice;

use crate::addr::Sym;
use crate::setup::{fatal, st, OrDie};
use crate::CtxH;

/// A local buffer of `n` elements from C (`p` may be NULL only when `n` is 0).
///
/// # Safety
/// `p` points at `n` readable elements.
unsafe fn local<'a, T>(call: &str, p: *const T, n: usize) -> &'a [T] {
    if n == 0 {
        return &[];
    }
    if p.is_null() {
        fatal(call, "a local buffer is NULL");
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }
}

/// As [`local`], writable.
///
/// # Safety
/// `p` points at `n` writable elements that nothing else uses meanwhile.
unsafe fn local_mut<'a, T>(call: &str, p: *mut T, n: usize) -> &'a mut [T] {
    if n == 0 {
        return &mut [];
    }
    if p.is_null() {
        fatal(call, "a local buffer is NULL");
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(p, n) }
}

/// Stores `v` at `p` in another process's memory: one atomic store when it
/// is an aligned word of 1, 2, 4 or 8 bytes (a peer may be waiting on it
/// with atomic loads), else a plain copy.
///
/// # Safety
/// `p` is valid for a `T`.
unsafe fn store_word<T: Pod>(p: *mut T, v: T) {
    use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Release};
    let aligned = (p as usize) % std::mem::size_of::<T>().max(1) == 0;
    // SAFETY: the caller's contract; the atomic types match the size, and
    // the address is aligned for them (checked).
    unsafe {
        match std::mem::size_of::<T>() {
            1 => {
                AtomicU8::from_ptr(p.cast()).store(bytemuck::cast_slice::<T, u8>(&[v])[0], Release)
            }
            2 if aligned => AtomicU16::from_ptr(p.cast())
                .store(bytemuck::cast_slice::<T, u16>(&[v])[0], Release),
            4 if aligned => AtomicU32::from_ptr(p.cast())
                .store(bytemuck::cast_slice::<T, u32>(&[v])[0], Release),
            8 if aligned => AtomicU64::from_ptr(p.cast())
                .store(bytemuck::cast_slice::<T, u64>(&[v])[0], Release),
            _ => p.write_unaligned(v),
        }
    }
}

/// The load that pairs with [`store_word`].
///
/// # Safety
/// `p` is valid for a `T`.
unsafe fn load_word<T: Pod>(p: *const T) -> T {
    use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Acquire};
    let aligned = (p as usize) % std::mem::size_of::<T>().max(1) == 0;
    // SAFETY: as in `store_word`.
    unsafe {
        match std::mem::size_of::<T>() {
            1 => bytemuck::cast_slice::<u8, T>(&[
                AtomicU8::from_ptr(p.cast_mut().cast()).load(Acquire)
            ])[0],
            2 if aligned => {
                bytemuck::cast_slice::<u16, T>(&[
                    AtomicU16::from_ptr(p.cast_mut().cast()).load(Acquire)
                ])[0]
            }
            4 if aligned => {
                bytemuck::cast_slice::<u32, T>(&[
                    AtomicU32::from_ptr(p.cast_mut().cast()).load(Acquire)
                ])[0]
            }
            8 if aligned => {
                bytemuck::cast_slice::<u64, T>(&[
                    AtomicU64::from_ptr(p.cast_mut().cast()).load(Acquire)
                ])[0]
            }
            _ => p.read_unaligned(),
        }
    }
}

/// The elements of `n` at `p` before the first 8-byte aligned one, and the
/// whole 8-byte words after them; `None` where `T` is not a word of 1, 2, 4
/// or 8 bytes aligned at `p` (a copy then promises no atomicity).
fn word_split<T>(p: *const T, n: usize) -> Option<(usize, usize)> {
    let size = std::mem::size_of::<T>();
    if !matches!(size, 1 | 2 | 4 | 8) || (p as usize) % size != 0 {
        return None;
    }
    let head = ((8 - (p as usize) % 8) % 8 / size).min(n);
    Some((head, (n - head) * size / 8))
}

/// Copies `src` to `p` in another process's memory at memory speed. A peer
/// may wait on any element with atomic loads, so none may tear: the aligned
/// middle goes in 8-byte atomic stores (each holds whole elements), the
/// ends element by element ([`store_word`]). OpenSHMEM orders nothing
/// within one put, so the stores are relaxed, and one release fence orders
/// them before whatever this PE stores next (a flag, a signal).
///
/// # Safety
/// `p` is valid for `src.len()` elements.
unsafe fn put_words<T: Pod>(p: *mut T, src: &[T]) {
    use std::sync::atomic::{fence, AtomicU64, Ordering};
    let Some((head, words)) = word_split(p, src.len()) else {
        // SAFETY: the caller's contract; `src` is this process's memory.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        fence(Ordering::Release);
        return;
    };
    let tail = head + words * 8 / std::mem::size_of::<T>();
    // SAFETY: every index is below `src.len()`; `p.add(head)` is 8-byte
    // aligned (`word_split`), so each word store is an aligned AtomicU64
    // inside the destination; the source words are read unaligned.
    unsafe {
        for i in (0..head).chain(tail..src.len()) {
            store_word(p.add(i), src[i]);
        }
        let to = p.add(head).cast::<u8>();
        let from = src.as_ptr().add(head).cast::<u8>();
        for w in 0..words {
            let v = from.add(w * 8).cast::<u64>().read_unaligned();
            AtomicU64::from_ptr(to.add(w * 8).cast()).store(v, Ordering::Relaxed);
        }
    }
    fence(Ordering::Release);
}

/// The copy that pairs with [`put_words`]: `dst` from `p` in another
/// process's memory, aligned words in 8-byte atomic loads.
///
/// # Safety
/// `p` is valid for `dst.len()` elements.
unsafe fn get_words<T: Pod>(dst: &mut [T], p: *const T) {
    use std::sync::atomic::{fence, AtomicU64, Ordering};
    let Some((head, words)) = word_split(p, dst.len()) else {
        // SAFETY: the caller's contract; `dst` is this process's memory.
        unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) };
        fence(Ordering::Acquire);
        return;
    };
    let tail = head + words * 8 / std::mem::size_of::<T>();
    // SAFETY: as in `put_words`, the other way.
    unsafe {
        for i in (0..head).chain(tail..dst.len()) {
            dst[i] = load_word(p.add(i));
        }
        let from = p.add(head).cast::<u8>();
        let to = dst.as_mut_ptr().add(head).cast::<u8>();
        for w in 0..words {
            let v = AtomicU64::from_ptr(from.add(w * 8).cast_mut().cast()).load(Ordering::Relaxed);
            to.add(w * 8).cast::<u64>().write_unaligned(v);
        }
    }
    fence(Ordering::Acquire);
}

/// `put` (and `p`, `_nbi`, sized and `mem` forms): `nelems` elements to
/// `dest` on `pe`, in place there on return.
pub fn put<T: Pod>(call: &str, ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, pe: i32) {
    let s = st(call);
    let pe = s.world_pe(call, ctx, pe);
    if nelems == 0 {
        return;
    }
    // SAFETY: C's contract for put: `source` holds `nelems` elements.
    let src = unsafe { local(call, source, nelems) };
    match s.sym(call, "dest", dest, nelems) {
        Sym::Heap(off) => s
            .ctx
            .put(SymSlice::from_raw(off, nelems), src, pe)
            .or_die(call),
        Sym::Global(off) => {
            let p = s.globals.peer_or_die(call, pe, off).cast::<T>();
            // SAFETY: the object (`nelems` elements) lies in PE pe's
            // segment as mapped here.
            unsafe { put_words(p, src) };
        }
    }
}

/// `get` (and `_nbi`, sized and `mem` forms).
pub fn get<T: Pod>(call: &str, ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, pe: i32) {
    let s = st(call);
    let pe = s.world_pe(call, ctx, pe);
    if nelems == 0 {
        return;
    }
    // SAFETY: C's contract for get: `dest` has room for `nelems` elements.
    let dst = unsafe { local_mut(call, dest, nelems) };
    match s.sym(call, "source", source, nelems) {
        Sym::Heap(off) => s
            .ctx
            .get(dst, SymSlice::from_raw(off, nelems), pe)
            .or_die(call),
        Sym::Global(off) => {
            let p = s.globals.peer_or_die(call, pe, off).cast::<T>();
            // SAFETY: as in `put`, the other way.
            unsafe { get_words(dst, p) };
        }
    }
}

/// `g`.
pub fn g<T: Pod>(call: &str, ctx: CtxH, source: *const T, pe: i32) -> T {
    let mut v = T::zeroed();
    get(call, ctx, &mut v, source, 1, pe);
    v
}

fn stride(call: &str, what: &str, s: isize) -> usize {
    if s <= 0 {
        fatal(call, format!("{what} stride {s} is not positive"));
    }
    s as usize
}

/// `iput`: element `i` of `source` (stride `sst`) to element `i` of `dest`
/// (stride `dst`) on `pe`.
#[allow(clippy::too_many_arguments)]
pub fn iput<T: Pod>(
    call: &str,
    ctx: CtxH,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    nelems: usize,
    pe: i32,
) {
    let s = st(call);
    let pe = s.world_pe(call, ctx, pe);
    let (ds, ss) = (stride(call, "target", dst), stride(call, "source", sst));
    if nelems == 0 {
        return;
    }
    // SAFETY: C's contract: `source` spans the strided elements.
    let src = unsafe { local(call, source, crate::addr::span(call, nelems, ss)) };
    match s.sym(call, "dest", dest, crate::addr::span(call, nelems, ds)) {
        Sym::Heap(off) => s
            .ctx
            .iput(
                SymSlice::from_raw(off, crate::addr::span(call, nelems, ds)),
                src,
                ds,
                ss,
                nelems,
                pe,
            )
            .or_die(call),
        Sym::Global(off) => {
            let p = s.globals.peer_or_die(call, pe, off).cast::<T>();
            for i in 0..nelems {
                // SAFETY: element i*ds lies in the object (checked span).
                unsafe { store_word(p.add(i * ds), src[i * ss]) };
            }
        }
    }
}

/// `iget`.
#[allow(clippy::too_many_arguments)]
pub fn iget<T: Pod>(
    call: &str,
    ctx: CtxH,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    nelems: usize,
    pe: i32,
) {
    let s = st(call);
    let pe = s.world_pe(call, ctx, pe);
    let (ds, ss) = (stride(call, "target", dst), stride(call, "source", sst));
    if nelems == 0 {
        return;
    }
    // SAFETY: C's contract: `dest` spans the strided elements.
    let d = unsafe { local_mut(call, dest, crate::addr::span(call, nelems, ds)) };
    match s.sym(call, "source", source, crate::addr::span(call, nelems, ss)) {
        Sym::Heap(off) => s
            .ctx
            .iget(
                d,
                SymSlice::from_raw(off, crate::addr::span(call, nelems, ss)),
                ds,
                ss,
                nelems,
                pe,
            )
            .or_die(call),
        Sym::Global(off) => {
            let p = s.globals.peer_or_die(call, pe, off).cast::<T>();
            for i in 0..nelems {
                // SAFETY: as in `iput`.
                d[i * ds] = unsafe { load_word(p.add(i * ss)) };
            }
        }
    }
}

/// `put_signal`: the data, then the signal, in that order at `pe`.
#[allow(clippy::too_many_arguments)]
pub fn put_signal<T: Pod>(
    call: &str,
    ctx: CtxH,
    dest: *mut T,
    source: *const T,
    nelems: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: i32,
    pe: i32,
) {
    let s = st(call);
    let op = match sig_op {
        0 => SignalOp::Set,
        1 => SignalOp::Add,
        o => fatal(
            call,
            format!("unknown signal operation {o} (SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD)"),
        ),
    };
    let wpe = s.world_pe(call, ctx, pe);
    let sig = s.sym(call, "sig_addr", sig_addr, 1);
    if nelems > 0 {
        if let (Sym::Heap(d), Sym::Heap(g)) = (s.sym(call, "dest", dest, nelems), sig) {
            // SAFETY: C's contract: `source` holds `nelems` elements.
            let src = unsafe { local(call, source, nelems) };
            s.ctx
                .put_signal(
                    SymSlice::from_raw(d, nelems),
                    src,
                    SymSlice::from_raw(g, 1),
                    signal,
                    op,
                    wpe,
                )
                .or_die(call);
            return;
        }
    }
    put(call, ctx, dest, source, nelems, pe);
    fence(call, ctx);
    match op {
        SignalOp::Set => crate::amo::set::<u64>(call, ctx, sig_addr, signal, pe),
        SignalOp::Add => {
            crate::amo::fetch_add::<u64>(call, ctx, sig_addr, signal, pe);
        }
    }
}

/// `fence`: this version completes every put before returning, so a fence
/// is [`quiet`].
pub fn fence(call: &str, ctx: CtxH) {
    quiet(call, ctx);
}

/// `quiet`: every outstanding update of this PE is complete.
pub fn quiet(call: &str, ctx: CtxH) {
    let s = st(call);
    if ctx == 0 {
        // SHMEM_CTX_INVALID (a PE outside the context's team): no effect.
        return;
    }
    let _ = s.ctx_team(call, ctx);
    s.ctx.quiet().or_die(call);
}
