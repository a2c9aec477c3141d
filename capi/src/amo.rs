//! Atomic memory operations (`shmem_<T>_atomic_*`). On the heap they are
//! the host library's atomics; on a global variable they are CPU atomics on
//! the peer's segment as mapped here (see [`crate::globals`]).

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use bytemuck::Pod;
use vkshmem_host::rma::{AmoBitwise, AmoInteger, AmoValue};
use vkshmem_host::SymSlice;

use crate::addr::Sym;
use crate::setup::{fatal, st, OrDie};
use crate::CtxH;

/// A value of 2, 4 or 8 bytes moved as its bit pattern (zero-extended).
pub trait Word: Pod + PartialOrd {
    /// The bits, zero-extended.
    fn bits(self) -> u64 {
        match std::mem::size_of::<Self>() {
            2 => u64::from(bytemuck::cast::<Self, u16>(self)),
            4 => u64::from(bytemuck::cast::<Self, u32>(self)),
            _ => bytemuck::cast::<Self, u64>(self),
        }
    }
    /// The value of the low bits.
    fn from_bits(b: u64) -> Self {
        match std::mem::size_of::<Self>() {
            2 => bytemuck::cast(b as u16),
            4 => bytemuck::cast(b as u32),
            _ => bytemuck::cast(b),
        }
    }
    /// One (the increment of fetch_inc).
    fn one() -> Self;
}

macro_rules! words {
    ($($t:ty => $one:expr;)*) => {$(impl Word for $t { fn one() -> Self { $one } })*};
}
words! {
    i16 => 1; u16 => 1; i32 => 1; u32 => 1; i64 => 1; u64 => 1; isize => 1; usize => 1;
    f32 => 1.0; f64 => 1.0;
}

/// One of `T` (used by the generated fetch_inc/inc).
pub fn one<T: Word>() -> T {
    T::one()
}

/// Loads the word of `T` at `p` atomically.
///
/// # Safety
/// `p` is valid and aligned for `T`, and written only atomically.
pub unsafe fn load<T: Word>(p: *const u8) -> T {
    // SAFETY: the caller's contract; the atomic types have the size and
    // alignment of the integers of their width.
    T::from_bits(unsafe {
        match std::mem::size_of::<T>() {
            2 => u64::from(AtomicU16::from_ptr(p.cast_mut().cast()).load(Ordering::SeqCst)),
            4 => u64::from(AtomicU32::from_ptr(p.cast_mut().cast()).load(Ordering::SeqCst)),
            _ => AtomicU64::from_ptr(p.cast_mut().cast()).load(Ordering::SeqCst),
        }
    })
}

/// Applies `f` to the word of `T` at `p` atomically; returns the old value.
///
/// # Safety
/// As [`load`]; `T` is 4 or 8 bytes.
unsafe fn rmw<T: Word>(p: *mut u8, f: impl Fn(u64) -> Option<u64>) -> T {
    // SAFETY: the caller's contract.
    T::from_bits(unsafe {
        match std::mem::size_of::<T>() {
            4 => {
                let a = AtomicU32::from_ptr(p.cast());
                let r = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                    f(u64::from(v)).map(|n| n as u32)
                });
                u64::from(r.unwrap_or_else(|v| v))
            }
            _ => {
                let a = AtomicU64::from_ptr(p.cast());
                let r = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, f);
                r.unwrap_or_else(|v| v)
            }
        }
    })
}

/// The peer address of a global's word, checked for alignment.
fn global_word<T>(call: &str, pe: u32, off: usize) -> *mut u8 {
    let p = st(call).globals.peer_or_die(call, pe, off);
    if (p as usize) % std::mem::align_of::<T>() != 0 {
        fatal(call, "the atomic's address is not aligned to its type");
    }
    p
}

fn target<T>(call: &str, ctx: CtxH, dest: *const T, pe: i32) -> (Sym, u32) {
    let s = st(call);
    (s.sym(call, "dest", dest, 1), s.world_pe(call, ctx, pe))
}

fn mask<T>() -> u64 {
    if std::mem::size_of::<T>() >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * std::mem::size_of::<T>())) - 1
    }
}

/// `atomic_fetch`.
pub fn fetch<T: AmoValue + Word>(call: &str, ctx: CtxH, source: *const T, pe: i32) -> T {
    match target(call, ctx, source, pe) {
        (Sym::Heap(off), pe) => st(call)
            .ctx
            .atomic_fetch(SymSlice::from_raw(off, 1), pe)
            .or_die(call),
        // SAFETY: a word of PE pe's mapped segment, aligned (checked).
        (Sym::Global(off), pe) => unsafe { load(global_word::<T>(call, pe, off)) },
    }
}

/// `atomic_set`.
pub fn set<T: AmoValue + Word>(call: &str, ctx: CtxH, dest: *mut T, value: T, pe: i32) {
    match target(call, ctx, dest, pe) {
        (Sym::Heap(off), pe) => st(call)
            .ctx
            .atomic_set(SymSlice::from_raw(off, 1), value, pe)
            .or_die(call),
        // SAFETY: as in `fetch`.
        (Sym::Global(off), pe) => {
            let _: T = unsafe { rmw(global_word::<T>(call, pe, off), |_| Some(value.bits())) };
        }
    }
}

/// `atomic_swap`.
pub fn swap<T: AmoValue + Word>(call: &str, ctx: CtxH, dest: *mut T, value: T, pe: i32) -> T {
    match target(call, ctx, dest, pe) {
        (Sym::Heap(off), pe) => st(call)
            .ctx
            .atomic_swap(SymSlice::from_raw(off, 1), value, pe)
            .or_die(call),
        // SAFETY: as in `fetch`.
        (Sym::Global(off), pe) => unsafe {
            rmw(global_word::<T>(call, pe, off), |_| Some(value.bits()))
        },
    }
}

/// `atomic_compare_swap`.
pub fn compare_swap<T: AmoInteger + Word>(
    call: &str,
    ctx: CtxH,
    dest: *mut T,
    cond: T,
    value: T,
    pe: i32,
) -> T {
    match target(call, ctx, dest, pe) {
        (Sym::Heap(off), pe) => st(call)
            .ctx
            .atomic_compare_swap(SymSlice::from_raw(off, 1), cond, value, pe)
            .or_die(call),
        // SAFETY: as in `fetch`.
        (Sym::Global(off), pe) => unsafe {
            rmw(global_word::<T>(call, pe, off), |v| {
                (v == cond.bits()).then_some(value.bits())
            })
        },
    }
}

/// `atomic_fetch_add` (and inc, add).
pub fn fetch_add<T: AmoInteger + Word>(
    call: &str,
    ctx: CtxH,
    dest: *mut T,
    value: T,
    pe: i32,
) -> T {
    match target(call, ctx, dest, pe) {
        (Sym::Heap(off), pe) => st(call)
            .ctx
            .atomic_fetch_add(SymSlice::from_raw(off, 1), value, pe)
            .or_die(call),
        // SAFETY: as in `fetch`.
        (Sym::Global(off), pe) => unsafe {
            rmw::<T>(global_word::<T>(call, pe, off), |v| {
                Some(v.wrapping_add(value.bits()) & mask::<T>())
            })
        },
    }
}

/// A bitwise AMO.
#[derive(Debug, Clone, Copy)]
pub enum Bit {
    /// `fetch_and`.
    And,
    /// `fetch_or`.
    Or,
    /// `fetch_xor`.
    Xor,
}

/// `atomic_fetch_and` / `or` / `xor` (and their plain forms).
pub fn bitwise<T: AmoBitwise + Word>(
    call: &str,
    ctx: CtxH,
    dest: *mut T,
    value: T,
    pe: i32,
    op: Bit,
) -> T {
    match target(call, ctx, dest, pe) {
        (Sym::Heap(off), pe) => {
            let c = &st(call).ctx;
            let d = SymSlice::from_raw(off, 1);
            match op {
                Bit::And => c.atomic_fetch_and(d, value, pe),
                Bit::Or => c.atomic_fetch_or(d, value, pe),
                Bit::Xor => c.atomic_fetch_xor(d, value, pe),
            }
            .or_die(call)
        }
        // SAFETY: as in `fetch`.
        (Sym::Global(off), pe) => unsafe {
            let b = value.bits();
            rmw(global_word::<T>(call, pe, off), |v| {
                Some(match op {
                    Bit::And => v & b,
                    Bit::Or => v | b,
                    Bit::Xor => v ^ b,
                })
            })
        },
    }
}

/// The `_nbi` fetching forms: the value lands in `*fetch` (they complete
/// before returning).
pub fn nbi<T: Pod>(fetch: *mut T, v: T) {
    if fetch.is_null() {
        fatal("atomic _nbi", "fetch is NULL");
    }
    // SAFETY: the caller's local, non-null result object.
    unsafe { fetch.write_unaligned(v) };
}
