//! Small collectives on the host: no submission, one sync.
//!
//! When every member's heap is mapped by the host (lavapipe, resizable-BAR
//! GPUs) and a call moves at most `VKSHMEM_HOST_MAPPED_MAX` bytes per member
//! (and fits the sync plane's data slot), each member copies its contribution
//! into its data slot of the node segment *before* arriving at the entry sync
//! (copy-in), and after the sync writes its own dest from the members' slots
//! (copy-out), as Open MPI's shared-memory collectives do. A member's source is
//! free again as soon as its contribution is staged, and its dest is complete
//! when it returns, so the call needs no closing sync: the slot is rewritten
//! two syncs later, when every member has finished reading it.
//!
//! Every member chooses for itself whether it can stage (`Desc::staged`); the
//! host path runs only when all did, so the choice is the same on every
//! member, with the thresholds of all of them taken into account.
//!
//! A call within the threshold but too large for the data slot (a heap in
//! host memory that a CPU device computes on, where the threshold is every
//! size by default) moves on the host too, with no submission: where every
//! member maps every member's heap, straight from the members' sources into
//! each member's dest (`direct.rs`: one copy, a reduction as a
//! reduce-scatter and an allgather); else, or where a dest overlaps what
//! peers read, in rounds through the node segment's staging buffers, the
//! staged transport of teams that span devices (`staged.rs`: each member
//! copies its part in and its dest out with memcpy). Each member says which
//! it may (`Desc::hosted`); a way is taken when all may. On llvmpipe, whose
//! compute threads are the same cores, the rounds beat the kernels 1.2-22x
//! from 64 KiB to 4 MiB on 2, 3, 4 and 8 PEs
//! (`benches/results/host-staged-lavapipe-2026-11-28-nineteenth`).

use super::moves::{self, Plan};
use super::reduce::{Reduce, ReduceOp};
use super::{Desc, Members};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::sync::layout::DATA_BYTES;
use crate::sync::Ticket;

/// Members beyond which a reduction moves in host rounds only up to
/// [`HOST_REDUCE_WIDE`] bytes (see [`reduce_rounds_max`]).
const HOST_REDUCE_MEMBERS: u32 = 4;

/// See [`HOST_REDUCE_MEMBERS`].
const HOST_REDUCE_WIDE: u64 = 256 << 10;

/// The largest reduction (bytes per member) that `members` move on the
/// host in rounds ([`Small::rounds_max`]; the direct path, which reads every
/// part once, takes every size). A round combines every member's part on
/// every member (`members`² parts read per round): on 8 PEs on llvmpipe
/// that lost to the kernels from 1 MiB (5.7 against 2.4 ms) and won up to
/// 256 KiB, so past [`HOST_REDUCE_MEMBERS`] members only up to
/// [`HOST_REDUCE_WIDE`].
pub(crate) fn reduce_rounds_max(members: u32) -> u64 {
    if members > HOST_REDUCE_MEMBERS {
        HOST_REDUCE_WIDE
    } else {
        u64::MAX
    }
}

/// A member may move the call on the host in rounds through the staging
/// buffers (`staged.rs`): a bit of [`Desc`]'s `hosted`.
pub(crate) const HOSTED_ROUNDS: u32 = 1;
/// A member may move the call on the host's direct path (`direct.rs`): it
/// maps every member's heap. A bit of [`Desc`]'s `hosted`.
pub(crate) const HOSTED_DIRECT: u32 = 2;

/// What a member stages for the host path.
#[derive(Clone, Copy)]
pub(crate) struct Small {
    /// Heap offset of this member's contribution.
    pub src: u64,
    /// Its bytes (0: nothing, e.g. a broadcast's non-roots).
    pub bytes: u64,
    /// The call's size for the threshold (bytes per member).
    pub size: u64,
    /// Reductions: combines the members' slots into dest.
    pub reduce: Option<ReduceFn>,
    /// The largest `size` this call may move on the host in rounds, too
    /// large for the data slot (`u64::MAX` for the moves; reductions:
    /// [`reduce_rounds_max`]).
    pub rounds_max: u64,
}

impl Small {
    /// A call that copies (no reduction): `bytes` of this member's heap at
    /// `src`, a call of `size` bytes per member for the thresholds.
    pub(crate) fn copies(src: u64, bytes: u64, size: u64) -> Small {
        Small {
            src,
            bytes,
            size,
            reduce: None,
            rounds_max: u64::MAX,
        }
    }

    /// A reduction of `bytes` of `T` at `src` among `members`.
    pub(crate) fn reduction<T: Reduce>(src: u64, bytes: u64, members: u32) -> Small {
        Small {
            src,
            bytes,
            size: bytes,
            reduce: Some(reduce_slots::<T>),
            rounds_max: reduce_rounds_max(members),
        }
    }
}

/// `out = slot_0 op slot_1 op …` over `n` elements of one type.
pub(crate) type ReduceFn = fn(ReduceOp, usize, &[*const u8], *mut u8);

/// [`ReduceFn`] for `T`. The slots must be aligned for `T`: the plane's data
/// slots and the staging buffers start on cache lines, and a round's part
/// starts at a multiple of the element size.
///
/// The operation is chosen once per call (not per element), so each arm is a
/// loop the compiler vectorises; the slots are combined a block at a time,
/// the block's accumulator staying in L1, so memory sees one read of every
/// slot and one write of `out`. `f16` goes through [`reduce_f16`].
pub(crate) fn reduce_slots<T: Reduce>(op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<half::f16>() {
        return reduce_f16(op, n, slots, out);
    }
    // Each arm passes a closure with the operation fixed, so that
    // `host_combine`'s match folds away in the monomorphised loop.
    macro_rules! per_op {
        ($($o:ident)*) => {
            match op {
                $(ReduceOp::$o => {
                    combine_blocks::<T>(n, slots, out, |a, b| T::host_combine(ReduceOp::$o, a, b))
                })*
            }
        };
    }
    per_op!(Sum Prod Max Min And Or Xor)
}

/// Bytes of accumulator per block of [`combine_blocks`]: well inside L1.
const COMBINE_BLOCK: usize = 8 << 10;

/// `out = slot_0 f slot_1 f …`, a block of elements at a time.
#[inline(always)]
fn combine_blocks<T: Reduce>(n: usize, slots: &[*const u8], out: *mut u8, f: impl Fn(T, T) -> T) {
    let Some((&first, rest)) = slots.split_first() else {
        return;
    };
    let es = std::mem::size_of::<T>();
    for &s in slots {
        assert_eq!(s as usize % std::mem::align_of::<T>(), 0, "unaligned slot");
    }
    // SAFETY: each slot holds at least n elements of T (the member staged
    // them), is aligned for T (asserted) and nobody writes it until this PE's
    // next sync on the team; any bytes are a valid T (Pod). Shared, read-only
    // while these slices live.
    let first = unsafe { std::slice::from_raw_parts(first.cast::<T>(), n) };
    let rest: Vec<&[T]> = rest
        .iter()
        // SAFETY: as for `first`.
        .map(|&s| unsafe { std::slice::from_raw_parts(s.cast::<T>(), n) })
        .collect();
    let per_block = (COMBINE_BLOCK / es).max(1);
    let mut acc: Vec<T> = vec![T::zeroed(); per_block.min(n)];
    let mut at = 0;
    while at < n {
        let len = per_block.min(n - at);
        let acc = &mut acc[..len];
        acc.copy_from_slice(&first[at..at + len]);
        for x in &rest {
            for (a, b) in acc.iter_mut().zip(&x[at..at + len]) {
                *a = f(*a, *b);
            }
        }
        // SAFETY: `out` points at n * es writable bytes that nothing else
        // reads or writes during the call (this PE's mapped dest, or a buffer
        // of the caller's) and that overlap no slot; a raw byte copy, so its
        // alignment does not matter.
        unsafe {
            std::ptr::copy_nonoverlapping(acc.as_ptr().cast::<u8>(), out.add(at * es), len * es)
        };
        at += len;
    }
}

/// [`reduce_slots`] for `f16`: a block at a time through `f32`, converted
/// with the CPU's F16C instructions (8 elements each, [`f16c`]) where it has
/// them, else with `half`'s slice conversions. Every step is rounded to
/// `f16`, as `f16`'s own operators (`Reduce::host_combine`) and the device's
/// kernels round it, so the result is the same bit for bit. Element by
/// element (`combine_blocks`), each conversion was a call in software: on 2
/// PEs a 4 MiB reduction took 10.6 ms on the host against 2.8 on llvmpipe's
/// kernels.
fn reduce_f16(op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    if f16c::available() {
        return reduce_f16_with(op, n, slots, out, f16c::widen, f16c::narrow);
    }
    reduce_f16_with(op, n, slots, out, soft_widen, soft_narrow)
}

/// `f16` to `f32` with `half`'s slice conversion.
fn soft_widen(src: &[half::f16], dst: &mut [f32]) {
    use half::slice::HalfFloatSliceExt;
    src.convert_to_f32_slice(dst)
}

/// `f32` to `f16` (to nearest, ties to even) with `half`'s slice conversion.
fn soft_narrow(src: &[f32], dst: &mut [half::f16]) {
    use half::slice::HalfFloatSliceExt;
    dst.convert_from_f32_slice(src)
}

/// [`reduce_f16`] with the conversions `widen` and `narrow` (same lengths).
fn reduce_f16_with(
    op: ReduceOp,
    n: usize,
    slots: &[*const u8],
    out: *mut u8,
    widen: fn(&[half::f16], &mut [f32]),
    narrow: fn(&[f32], &mut [half::f16]),
) {
    use half::f16;
    let Some((&first, rest)) = slots.split_first() else {
        return;
    };
    for &s in slots {
        assert_eq!(
            s as usize % std::mem::align_of::<f16>(),
            0,
            "unaligned slot"
        );
    }
    // SAFETY: as in `combine_blocks`: each slot holds n aligned elements
    // that nobody writes while these shared slices live; any bits are an f16.
    let first = unsafe { std::slice::from_raw_parts(first.cast::<f16>(), n) };
    let rest: Vec<&[f16]> = rest
        .iter()
        // SAFETY: as for `first`.
        .map(|&s| unsafe { std::slice::from_raw_parts(s.cast::<f16>(), n) })
        .collect();
    // `f16::max` and `min`'s rule (NaN yields the other; ties keep `a`).
    let max = |a: f32, b: f32| if a.is_nan() || b > a { b } else { a };
    let min = |a: f32, b: f32| if a.is_nan() || b < a { b } else { a };
    let per_block = (COMBINE_BLOCK / 4).min(n);
    let (mut acc, mut x) = (vec![0f32; per_block], vec![0f32; per_block]);
    let mut rounded = vec![f16::ZERO; per_block];
    let mut at = 0;
    while at < n {
        let len = per_block.min(n - at);
        let (acc, x, rounded) = (&mut acc[..len], &mut x[..len], &mut rounded[..len]);
        rounded.copy_from_slice(&first[at..at + len]);
        for s in &rest {
            widen(rounded, acc);
            widen(&s[at..at + len], x);
            let pairs = acc.iter_mut().zip(x.iter());
            match op {
                ReduceOp::Sum => pairs.for_each(|(a, b)| *a += b),
                ReduceOp::Prod => pairs.for_each(|(a, b)| *a *= b),
                ReduceOp::Max => pairs.for_each(|(a, b)| *a = max(*a, *b)),
                ReduceOp::Min => pairs.for_each(|(a, b)| *a = min(*a, *b)),
                ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                    unreachable!("checked: no bitwise reductions of floats")
                }
            }
            narrow(acc, rounded);
        }
        // SAFETY: as in `combine_blocks`: `out` holds n * 2 writable bytes
        // that nothing else touches during the call and no slot overlaps;
        // a raw byte copy.
        unsafe {
            std::ptr::copy_nonoverlapping(rounded.as_ptr().cast::<u8>(), out.add(at * 2), len * 2)
        };
        at += len;
    }
}

/// `f16` slices to `f32` and back with x86's F16C instructions, 8 elements
/// at a time (`half` converts a slice through a call per 8 elements, which
/// cost as much as the reduction).
#[cfg(target_arch = "x86_64")]
mod f16c {
    use half::f16;
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_storeu_ps,
        _mm_loadu_si128, _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };

    /// Whether this CPU has the instructions (checked once, then cached by
    /// the standard library).
    pub fn available() -> bool {
        is_x86_feature_detected!("f16c") && is_x86_feature_detected!("avx")
    }

    /// `dst = src` as `f32` (equal lengths). Call only where [`available`].
    pub fn widen(src: &[f16], dst: &mut [f32]) {
        assert!(available() && src.len() == dst.len());
        // SAFETY: the CPU has AVX and F16C (asserted), which the function
        // is compiled for.
        unsafe { widen_f16c(src, dst) }
    }

    /// `dst = src` rounded to `f16`, to nearest with ties to even (equal
    /// lengths). Call only where [`available`].
    pub fn narrow(src: &[f32], dst: &mut [f16]) {
        assert!(available() && src.len() == dst.len());
        // SAFETY: as in `widen`.
        unsafe { narrow_f16c(src, dst) }
    }

    #[target_feature(enable = "avx,f16c")]
    unsafe fn widen_f16c(src: &[f16], dst: &mut [f32]) {
        let whole = src.len() / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: i + 8 <= len on both sides; unaligned loads and
            // stores; f16 is 2 bytes (8 make the 128 bits loaded).
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        for i in whole..src.len() {
            dst[i] = src[i].to_f32();
        }
    }

    #[target_feature(enable = "avx,f16c")]
    unsafe fn narrow_f16c(src: &[f32], dst: &mut [f16]) {
        let whole = src.len() / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: as in `widen_f16c`.
            unsafe {
                let v = _mm256_loadu_ps(src.as_ptr().add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), h);
            }
        }
        for i in whole..src.len() {
            dst[i] = f16::from_f32(src[i]);
        }
    }
}

impl Context {
    /// This PE's own heap at `offset` as a host pointer, when mapped.
    pub(crate) fn own_mapped(&self, offset: u64, bytes: u64) -> Option<*mut u8> {
        self.mapped_at(self.my_pe(), offset, bytes)
    }

    /// PE `pe`'s heap at `offset` as a host pointer, when this process maps
    /// it and `bytes` from there lie inside it.
    pub(crate) fn mapped_at(&self, pe: u32, offset: u64, bytes: u64) -> Option<*mut u8> {
        let block = self.check_range(pe, offset, bytes).ok()?;
        // SAFETY: in bounds of the mapping (check_range).
        block
            .mapped()
            .map(|b| unsafe { b.as_ptr().add(offset as usize) })
    }

    /// Whether this PE would move `s` on the host, in one sync or past the
    /// data slot (the members then agree on the path): where it may not, its
    /// kernels are built before the agreement.
    pub(crate) fn may_stage(&self, m: &Members, s: &Small) -> bool {
        self.stage_source(s).is_some() || self.host_ways(m, s) != 0
    }

    /// How this PE may move `s`, too large for the data slot, on the host
    /// ([`HOSTED_ROUNDS`], [`HOSTED_DIRECT`]; 0: not at all). Either needs a
    /// plane, a heap the host maps, and a call within
    /// `VKSHMEM_HOST_MAPPED_MAX` (by default every size where the heap is
    /// host memory that a CPU device computes on, see
    /// [`crate::config::HOST_MAPPED_MAX_CPU`]); rounds through the staging
    /// buffers (`staged.rs`) within [`Small::rounds_max`]; the direct path
    /// (`direct.rs`) where this PE maps every member's heap.
    pub(crate) fn host_ways(&self, m: &Members, s: &Small) -> u32 {
        let max = self.inner.host_mapped_max;
        if self.inner.plane.is_none()
            || s.size > max
            || self.own_mapped(s.src, s.bytes.max(1)).is_none()
        {
            return 0;
        }
        let mut ways = 0;
        if s.size <= s.rounds_max {
            ways |= HOSTED_ROUNDS;
        }
        if m.shape.members().all(|pe| self.maps_heap_of(pe)) {
            ways |= HOSTED_DIRECT;
        }
        ways
    }

    /// Whether this process maps PE `pe`'s heap (its own, or a peer's on the
    /// same device in host-visible memory).
    pub(crate) fn maps_heap_of(&self, pe: u32) -> bool {
        self.inner
            .heap
            .block(pe)
            .is_ok_and(|b| b.mapped().is_some())
    }

    /// This PE's contribution in the mapped heap when it may take the host
    /// path for `s` (a plane, within the threshold and the data slot).
    fn stage_source(&self, s: &Small) -> Option<*mut u8> {
        if self.inner.plane.is_none()
            || s.size > self.inner.host_mapped_max
            || s.bytes > DATA_BYTES as u64
        {
            return None;
        }
        // The source in the mapped heap (so is the dest: one mapping).
        self.own_mapped(s.src, s.bytes)
    }

    /// Stages `s` into `slot` when this PE can take the host path for it;
    /// returns whether it did.
    pub(crate) fn stage_small(&self, s: &Small, slot: *mut u8) -> bool {
        let Some(src) = self.stage_source(s) else {
            return false;
        };
        // SAFETY: src is `bytes` bytes of this PE's mapped heap (stage_source
        // checked the range); slot is this PE's data slot for the coming sync
        // (DATA_BYTES, nobody reads it before this PE arrives). Raw copies, no
        // references.
        unsafe { std::ptr::copy_nonoverlapping(src, slot, s.bytes as usize) };
        true
    }

    /// Writes this PE's dest from the members' staged contributions (after the
    /// entry sync; see the module docs), as `moves::plan` describes.
    pub(crate) fn host_move(
        &self,
        m: &Members,
        all: &[Desc],
        t: &Ticket,
        small: &Small,
    ) -> Result<()> {
        let plane = self
            .inner
            .plane
            .as_ref()
            .expect("the host path runs on the plane");
        let slot = |i: u32| plane.data(t, i);
        let (_, plan) = moves::plan(m, all)?;
        match plan {
            Plan::Copies(moves) => {
                for mv in moves {
                    for (at, dest, bytes) in mv.within(0, DATA_BYTES as u64) {
                        let dst = self.own_mapped(dest, bytes).ok_or_else(|| {
                            Error::InvalidArgument(format!(
                                "dest at offset {dest} is not in the mapped heap"
                            ))
                        })?;
                        // SAFETY: dst is `bytes` bytes of this PE's mapped heap
                        // (own_mapped checked the range); the source is inside
                        // the member's data slot (`within` keeps it below
                        // DATA_BYTES), which that member filled before the sync
                        // and rewrites only two syncs later.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                slot(mv.member).add(at as usize),
                                dst,
                                bytes as usize,
                            )
                        };
                    }
                }
            }
            Plan::Reduce { dest, bytes, op } => {
                let out = self.own_mapped(dest, bytes).ok_or_else(|| {
                    Error::InvalidArgument("reduce dest is not in the mapped heap".into())
                })?;
                let slots: Vec<*const u8> = (0..m.shape.size).map(slot).collect();
                let f = small.reduce.expect("reductions pass their combiner");
                let es = all[m.me as usize].es as u64;
                if bytes > 0 {
                    f(op, (bytes / es) as usize, &slots, out);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reductions in host rounds: every size on up to 4 members, 256 KiB
    /// beyond.
    #[test]
    fn reduce_rounds_by_members() {
        for members in [1, 2, 4] {
            assert_eq!(reduce_rounds_max(members), u64::MAX, "{members}");
        }
        for members in [5, 8, 64] {
            assert_eq!(reduce_rounds_max(members), 256 << 10, "{members}");
        }
    }

    /// A small deterministic generator (xorshift), so the test needs no crate.
    fn pattern(seed: u64, n: usize) -> Vec<u64> {
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

    fn check<T: Reduce + PartialEq + std::fmt::Debug>(ops: &[ReduceOp], from: impl Fn(u64) -> T) {
        // Sizes around the block boundary, 1..=5 slots, `out` aligned and not.
        let per_block = COMBINE_BLOCK / std::mem::size_of::<T>();
        for n in [
            0,
            1,
            7,
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
                    for skew in [0, 1] {
                        let es = std::mem::size_of::<T>();
                        let mut out = vec![0u8; n * es + skew];
                        reduce_slots::<T>(op, n, &slots, out[skew..].as_mut_ptr());
                        let got: Vec<T> = out[skew..]
                            .chunks_exact(es)
                            .map(bytemuck::pod_read_unaligned)
                            .collect();
                        assert_eq!(got, want, "{op:?} n={n} members={members} skew={skew}");
                    }
                }
            }
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
        // f16 through f32 (`reduce_f16`), rounded every step: fractions in
        // [-4, 4] whose sums and products round (none overflows to a NaN,
        // which would not compare equal).
        check::<half::f16>(&[Sum, Prod, Max, Min], |x| {
            half::f16::from_f32(((x % 2001) as f32 - 1000.0) / 250.0)
        });
        check::<half::bf16>(&[Sum, Prod, Max, Min], |x| {
            half::bf16::from_f32(((x % 2001) as f32 - 1000.0) / 250.0)
        });
    }

    /// `reduce_f16`'s conversions, F16C's and `half`'s, agree with `half`'s
    /// element conversions on every f16 and on f32s between them, ties and
    /// overflow included.
    #[test]
    fn f16_conversions_match_half() {
        let all: Vec<half::f16> = (0..=u16::MAX).map(half::f16::from_bits).collect();
        type Widen = fn(&[half::f16], &mut [f32]);
        type Narrow = fn(&[f32], &mut [half::f16]);
        let mut convs: Vec<(&str, Widen, Narrow)> = vec![("half", soft_widen, soft_narrow)];
        #[cfg(target_arch = "x86_64")]
        if f16c::available() {
            convs.push(("f16c", f16c::widen, f16c::narrow));
        }
        // Exact values, halfway points (ties), beyond the largest f16.
        let mut wide: Vec<f32> = all.iter().map(|h| h.to_f32()).collect();
        wide.extend(
            all.windows(2)
                .map(|w| (w[0].to_f32() + w[1].to_f32()) / 2.0),
        );
        wide.extend([65520.0, 65519.0, 1e6, -1e6, 1e-9, f32::INFINITY]);
        for (name, widen, narrow) in convs {
            let mut f = vec![0f32; all.len()];
            widen(&all, &mut f);
            for (h, x) in all.iter().zip(&f) {
                assert!(
                    h.to_f32().to_bits() == x.to_bits() || h.is_nan() && x.is_nan(),
                    "{name} {h:?}"
                );
            }
            let mut h = vec![half::f16::ZERO; wide.len()];
            narrow(&wide, &mut h);
            for (x, h) in wide.iter().zip(&h) {
                let want = half::f16::from_f32(*x);
                assert!(
                    want.to_bits() == h.to_bits() || want.is_nan() && h.is_nan(),
                    "{name} {x}"
                );
            }
        }
    }
}
