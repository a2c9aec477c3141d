//! Reductions combined on the host: `out = slot_0 op slot_1 op …` over the
//! members' contributions, element for element as the device's kernels
//! combine them (integers wrap; `f16` and `bf16` are rounded to the type at
//! every step). The host path's data slots, its staged rounds, its direct
//! path, the proxy's share of a reduction across devices and the vectored
//! collectives all combine through [`ReduceFn`]s from here.
//!
//! Pure memory work, no Vulkan. The slots are combined a block at a time
//! (the block's accumulator staying in L1), so memory sees one read of every
//! slot and one write of `out`. The half-precision types go through `f32`
//! in AVX2 registers where the CPU has it ([`halves`]), but for max and min,
//! which compare their bits as integers ([`half_order`]).

mod half_order;
mod halves;

use crate::element::{Reduce, ReduceOp};

/// `out = slot_0 op slot_1 op …` over `n` elements of one type.
pub(crate) type ReduceFn = fn(ReduceOp, usize, &[*const u8], *mut u8);

/// [`ReduceFn`] for `T`. The slots must be aligned for `T`: the plane's data
/// slots and the staging buffers start on cache lines, and a round's part
/// starts at a multiple of the element size. `out` may be unaligned, and may
/// be one of the slots (a reduction in place), but may not overlap one
/// otherwise.
///
/// The operation is chosen once per call (not per element), so each arm is a
/// loop the compiler vectorises. `f16` and `bf16` go through
/// [`half_order::reduce`] for max and min, and [`halves::reduce`] for sum
/// and product where the CPU has AVX2 and F16C.
pub(crate) fn reduce_slots<T: Reduce>(op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    if let Some(kind) = halves::Half::of::<T>() {
        if matches!(op, ReduceOp::Max | ReduceOp::Min) {
            return half_order::reduce(kind, op, n, slots, out);
        }
        if halves::available() {
            return halves::reduce(kind, op, n, slots, out);
        }
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, for which `reduce_avx2` is compiled.
        return unsafe { reduce_avx2::<T>(op, n, slots, out) };
    }
    reduce_any::<T>(op, n, slots, out)
}

/// Whether the direct host path (`direct.rs`) combines `T` a small chunk at
/// a time into a buffer in L1 and moves each chunk to the dests from there
/// (`copy::copy_from_l1`): every type and operation but the sums and
/// products of f16 and bf16, whose combine through `f32` in AVX registers
/// ([`halves`]) is bound by its arithmetic, not by the dest's lines, and
/// lost in chunks in most cases (benches/RESULTS.md, "Half sums in L1 chunks").
/// Their max and min compare bits as integers ([`half_order`]), as fast as an
/// int16 max, and so gain from the chunks like the other types
/// (benches/RESULTS.md, "Half max and min as integers").
pub(crate) fn chunks_in_l1<T: Reduce>(op: ReduceOp) -> bool {
    halves::Half::of::<T>().is_none() || matches!(op, ReduceOp::Max | ReduceOp::Min)
}

/// [`reduce_slots`] with the operation fixed per arm: each arm passes a
/// closure, so that `host_combine`'s match folds away in the monomorphised
/// loop, which the compiler vectorises for the features of the function
/// it is inlined into.
macro_rules! per_op {
    ($op:expr, $n:expr, $slots:expr, $out:expr, $($o:ident)*) => {
        match $op {
            $(ReduceOp::$o => {
                combine_blocks::<T>($n, $slots, $out, |a, b| T::host_combine(ReduceOp::$o, a, b))
            })*
        }
    };
}

/// [`reduce_slots`] for the target's baseline (SSE2 on x86-64).
fn reduce_any<T: Reduce>(op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    per_op!(op, n, slots, out, Sum Prod Max Min And Or Xor)
}

/// [`reduce_slots`] vectorised for AVX2: 32-byte vectors, and the 64-bit
/// integer max and min that SSE2 has no compare for.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn reduce_avx2<T: Reduce>(op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    per_op!(op, n, slots, out, Sum Prod Max Min And Or Xor)
}

/// Bytes of accumulator per block of [`combine_blocks`]: well inside L1.
const COMBINE_BLOCK: usize = 8 << 10;

/// Checks `slots` for `T`'s alignment (a caller's bug otherwise).
fn assert_aligned<T>(slots: &[*const u8]) {
    for &s in slots {
        assert_eq!(s as usize % std::mem::align_of::<T>(), 0, "unaligned slot");
    }
}

/// Elements `at..at + len` of the slot at `s`, as a slice.
///
/// # Safety
/// The slot holds at least `at + len` elements of `T` and is aligned for
/// `T`, and nothing writes them while the slice lives.
unsafe fn block<'a, T: Reduce>(s: *const u8, at: usize, len: usize) -> &'a [T] {
    // SAFETY: the caller's promise; any bytes are a valid T (Pod).
    unsafe { std::slice::from_raw_parts(s.cast::<T>().add(at), len) }
}

/// `out = slot_0 f slot_1 f …`, a block of elements at a time: the first two
/// slots combined into the block's accumulator in one pass, each further
/// slot folded into it, the block copied out. A call of at most one block
/// into an aligned `out` that is no slot (the direct path's L1 chunk,
/// `direct.rs`) folds into `out` itself, with no accumulator to allocate
/// and copy.
#[inline(always)]
fn combine_blocks<T: Reduce>(n: usize, slots: &[*const u8], out: *mut u8, f: impl Fn(T, T) -> T) {
    if slots.is_empty() {
        return;
    }
    let es = std::mem::size_of::<T>();
    assert_aligned::<T>(slots);
    let per_block = (COMBINE_BLOCK / es).max(1);
    if n <= per_block
        && out as usize % std::mem::align_of::<T>() == 0
        && !slots.contains(&out.cast_const())
    {
        // SAFETY: `out` points at n * es writable bytes that nothing else
        // reads or writes during the call, aligned for T (checked), and
        // overlapping no slot (the contract: a slot's or none; checked);
        // any bytes are a valid T (Pod).
        let acc = unsafe { std::slice::from_raw_parts_mut(out.cast::<T>(), n) };
        // SAFETY: as `fold_block`'s; `acc` is apart from every slot.
        unsafe { fold_block(acc, slots, 0, &f) };
        return;
    }
    let mut acc: Vec<T> = vec![T::zeroed(); per_block.min(n)];
    let mut at = 0;
    while at < n {
        let len = per_block.min(n - at);
        let acc = &mut acc[..len];
        // SAFETY: every slot holds at least n elements of T (the member
        // staged them) and is aligned for T (asserted); nobody writes them
        // during the call but this function, whose writes to `out` (which
        // may be a slot: in place) come below, once this block is read.
        unsafe { fold_block(acc, slots, at, &f) };
        // SAFETY: `out` points at n * es writable bytes that nothing else
        // reads or writes during the call (this PE's mapped dest, or a
        // buffer of the caller's) and that overlap no slot unless they are
        // one (in place), whose block here was read above into `acc` and is
        // not read again. A raw byte copy, so its alignment does not matter.
        unsafe {
            std::ptr::copy_nonoverlapping(acc.as_ptr().cast::<u8>(), out.add(at * es), len * es)
        };
        at += len;
    }
}

/// `acc = slot_0 f slot_1 f …` over elements `at..at + acc.len()` of the
/// (non-empty) slots: the first two in one pass, each further one folded in.
///
/// # Safety
/// Every slot holds at least `at + acc.len()` elements of T, aligned for T,
/// that nothing writes while this runs, and none overlaps `acc`.
#[inline(always)]
unsafe fn fold_block<T: Reduce>(
    acc: &mut [T],
    slots: &[*const u8],
    at: usize,
    f: &impl Fn(T, T) -> T,
) {
    let len = acc.len();
    let Some((&first, rest)) = slots.split_first() else {
        return;
    };
    // SAFETY (each `block`): the caller's promises.
    let a = unsafe { block::<T>(first, at, len) };
    match rest.split_first() {
        Some((&second, more)) => {
            // SAFETY: as for `a`.
            let b = unsafe { block::<T>(second, at, len) };
            for ((o, &x), &y) in acc.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
            for &s in more {
                // SAFETY: as for `a`.
                let x = unsafe { block::<T>(s, at, len) };
                for (o, &y) in acc.iter_mut().zip(x) {
                    *o = f(*o, y);
                }
            }
        }
        None => acc.copy_from_slice(a),
    }
}

/// The host combiner of the device collectives' element kind `kind` (its
/// index in `vkshmem_device::collectives::KINDS`): what the proxy uses for a
/// device reduction's share on a team that spans devices.
pub(crate) fn combine_for_kind(kind: u32) -> Option<ReduceFn> {
    let name = vkshmem_device::collectives::KINDS.get(kind as usize)?.name;
    Some(match name {
        "i8" => reduce_slots::<i8>,
        "u8" => reduce_slots::<u8>,
        "i16" => reduce_slots::<i16>,
        "u16" => reduce_slots::<u16>,
        "i32" => reduce_slots::<i32>,
        "u32" => reduce_slots::<u32>,
        "i64" => reduce_slots::<i64>,
        "u64" => reduce_slots::<u64>,
        "f32" => reduce_slots::<f32>,
        "f64" => reduce_slots::<f64>,
        "f16" => reduce_slots::<half::f16>,
        "bf16" => reduce_slots::<half::bf16>,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so the test needs no crate.
    pub(super) fn pattern(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect()
    }

    /// Whether two results agree: the same bits, or both NaN (a NaN's
    /// payload is not part of the contract).
    fn same<T: Reduce + PartialEq>(a: T, b: T) -> bool {
        // Only a NaN is not equal to itself.
        #[allow(clippy::eq_op)]
        let nan = |x: T| x != x;
        bytemuck::bytes_of(&a) == bytemuck::bytes_of(&b) || nan(a) && nan(b)
    }

    fn check<T: Reduce + PartialEq + std::fmt::Debug>(ops: &[ReduceOp], from: impl Fn(u64) -> T) {
        // Sizes around the block boundary and the 8-element vectors,
        // 1..=5 slots, `out` aligned and not, and in place.
        let per_block = COMBINE_BLOCK / std::mem::size_of::<T>();
        for n in [
            0,
            1,
            7,
            9,
            per_block - 1,
            per_block,
            per_block + 1,
            3 * per_block + 5,
        ] {
            for members in 1..=5usize {
                let data: Vec<Vec<T>> = (0..members)
                    .map(|m| {
                        pattern(n as u64 * 31 + m as u64, n)
                            .into_iter()
                            .map(&from)
                            .collect()
                    })
                    .collect();
                let slots: Vec<*const u8> = data.iter().map(|d| d.as_ptr().cast()).collect();
                for &op in ops {
                    let want: Vec<T> = (0..n)
                        .map(|i| {
                            (1..members).fold(data[0][i], |a, m| T::host_combine(op, a, data[m][i]))
                        })
                        .collect();
                    let agree = |got: &[T], how: &str| {
                        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                            assert!(
                                same(*g, *w),
                                "{op:?} n={n} members={members} {how}: [{i}] {g:?} != {w:?}"
                            );
                        }
                    };
                    for skew in [0, 1] {
                        let es = std::mem::size_of::<T>();
                        let mut out = vec![0u8; n * es + skew];
                        reduce_slots::<T>(op, n, &slots, out[skew..].as_mut_ptr());
                        let got: Vec<T> = out[skew..]
                            .chunks_exact(es)
                            .map(bytemuck::pod_read_unaligned)
                            .collect();
                        agree(&got, &format!("skew={skew}"));
                    }
                    // The baseline build too (the CPUs without AVX2, and
                    // the half types' fallback), which `reduce_slots`
                    // passes over here where the CPU has AVX2.
                    let mut base = vec![T::zeroed(); n];
                    reduce_any::<T>(op, n, &slots, base.as_mut_ptr().cast());
                    agree(&base, "baseline");
                    // In place: the last member's dest is its source.
                    let mut own = data[members - 1].clone();
                    let mut slots = slots.clone();
                    slots[members - 1] = own.as_ptr().cast();
                    reduce_slots::<T>(op, n, &slots, own.as_mut_ptr().cast());
                    agree(&own, "in place");
                }
            }
        }
    }

    /// Values whose f16 and bf16 sums and products round, with infinities,
    /// NaNs, zeros of both signs and subnormals among them.
    fn halfish(x: u64) -> f32 {
        match x % 97 {
            0 => f32::INFINITY,
            1 => f32::NEG_INFINITY,
            2 => f32::NAN,
            3 => -0.0,
            4 => 0.0,
            5 => 3e-6 * ((x >> 8) % 5) as f32,
            6 => 6e4,
            _ => ((x % 2001) as f32 - 1000.0) / 250.0,
        }
    }

    #[test]
    fn reduce_slots_matches_an_element_by_element_fold() {
        use ReduceOp::*;
        let all = [Sum, Prod, Max, Min, And, Or, Xor];
        check::<i8>(&all, |x| x as i8);
        check::<u16>(&all, |x| x as u16);
        check::<i32>(&all, |x| x as i32);
        check::<u64>(&all, |x| x);
        // Small integers as floats: sums and products stay exact.
        check::<f32>(&[Sum, Prod, Max, Min], |x| (x % 7) as f32 - 3.0);
        check::<f64>(&[Sum, Prod, Max, Min], |x| (x % 5) as f64 - 2.0);
        // The half types through f32 (`halves` where the CPU has AVX2,
        // `half`'s operators elsewhere), rounded every step.
        check::<half::f16>(&[Sum, Prod, Max, Min], |x| half::f16::from_f32(halfish(x)));
        check::<half::bf16>(&[Sum, Prod, Max, Min], |x| half::bf16::from_f32(halfish(x)));
    }
}
