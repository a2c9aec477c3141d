//! AVX-512: `f16` and `bf16` reductions 16 (`bf16` with AVX-512BW: 32)
//! elements at a time in 512-bit registers, with AVX512-BF16's rounding
//! where the CPU has it.

use crate::element::ReduceOp;
use std::arch::x86_64::*;

/// The fold's `match` over `op` in 512-bit registers, for
/// [`reduce16`] and [`reduce32`]: `$each!(x, y => step)` is the
/// caller's loop. Sums and products only (`super::super::reduce`
/// asserts it).
macro_rules! per_op512 {
    ($op:expr, $each:ident) => {
        match $op {
            ReduceOp::Sum => $each!(x, y => _mm512_add_ps(x, y)),
            ReduceOp::Prod => $each!(x, y => _mm512_mul_ps(x, y)),
            _ => unreachable!("checked: sums and products only"),
        }
    };
}

/// 16 `bf16`s at `p` as `f32`s (the top halves).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn widen(p: *const u16) -> __m512 {
    // SAFETY: the caller's: 16 readable u16s at `p` (unaligned).
    let h = unsafe { _mm256_loadu_si256(p.cast::<__m256i>()) };
    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
}

/// `v` rounded as `half` rounds an `f32` to `bf16` (to nearest,
/// ties to even; a NaN keeps its top bits, made quiet), in the top
/// halves of the lanes (the low halves not cleared).
///
/// The bias is 0x7fff, and one more where the kept part is odd (its
/// lowest bit, 0x1_0000, tested into a mask and added under it); a
/// NaN lane takes its own bits with the quiet bit set instead. Masks
/// in place of the shift, `and` and blend: fewer instructions per
/// lane, and faster with [`narrow2`]'s permute (benches/RESULTS.md,
/// "bf16 rounding under masks").
#[inline]
#[target_feature(enable = "avx512f")]
fn rounded(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x1_0000));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let up = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
    let up = _mm512_mask_add_epi32(up, odd, up, _mm512_set1_epi32(1));
    _mm512_mask_or_epi32(up, nan, x, _mm512_set1_epi32(0x0040_0000))
}

/// `v` rounded to `bf16` and stored: 16 at `p`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn narrow(v: __m512, p: *mut u16) {
    let h = _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(rounded(v)));
    // SAFETY: the caller's: 16 writable u16s at `p` (unaligned).
    unsafe { _mm256_storeu_si256(p.cast::<__m256i>(), h) }
}

/// `v` rounded to `bf16` and widened back.
#[inline]
#[target_feature(enable = "avx512f")]
fn round(v: __m512) -> __m512 {
    _mm512_castsi512_ps(_mm512_and_si512(rounded(v), _mm512_set1_epi32(-65536)))
}

/// 16 elements at `p` as `f32`s: `bf16` where `BF` ([`widen`]),
/// else `f16` (AVX-512F's `vcvtph2ps`).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn widen_any<const BF: bool>(p: *const u16) -> __m512 {
    if BF {
        // SAFETY: the caller's.
        return unsafe { widen(p) };
    }
    // SAFETY: the caller's: 16 readable u16s at `p` (unaligned).
    let h = unsafe { _mm256_loadu_si256(p.cast::<__m256i>()) };
    _mm512_cvtph_ps(h)
}

/// `v` rounded to the type (to nearest, ties to even) and widened
/// back: `bf16` where `BF` ([`round`]), else `f16`.
#[inline]
#[target_feature(enable = "avx512f")]
fn round_any<const BF: bool>(v: __m512) -> __m512 {
    if BF {
        return round(v);
    }
    _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
}

/// `v` rounded to the type and stored: 16 at `p`, `bf16` where `BF`
/// ([`narrow`]), else `f16`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn narrow_any<const BF: bool>(v: __m512, p: *mut u16) {
    if BF {
        // SAFETY: the caller's.
        return unsafe { narrow(v, p) };
    }
    let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
    // SAFETY: the caller's: 16 writable u16s at `p` (unaligned).
    unsafe { _mm256_storeu_si256(p.cast::<__m256i>(), h) }
}

/// [`super::reduce8`] 16 elements at a time (`whole` a multiple of
/// 16): `bf16` where `BF`, else `f16`.
///
/// # Safety
/// The CPU has AVX-512F; every slot holds `whole` u16s and `out` as
/// many writable ones, which are a slot's or overlap none.
#[target_feature(enable = "avx512f")]
pub(in crate::combine) unsafe fn reduce16<const BF: bool>(
    op: ReduceOp,
    slots: &[*const u16],
    out: *mut u16,
    whole: usize,
) {
    let Some((first, mid, last)) = super::ends(slots) else {
        // SAFETY: the caller's (a memmove).
        return unsafe { std::ptr::copy(slots[0], out, whole) };
    };
    macro_rules! each {
        ($x:ident, $y:ident => $e:expr) => {
            fold_each!(
                16, whole, first, mid, last, out,
                widen_any::<BF>, round_any::<BF>, narrow_any::<BF>,
                $x, $y => $e
            )
        };
    }
    per_op512!(op, each);
}

/// 32 `bf16`s at `p` as two vectors of `f32`s (the top halves),
/// interleaved with zeros within each 128-bit lane: the first holds
/// each lane's low four elements, the second its high four, the
/// order [`narrow2`] packs back. One load and two shuffles within
/// lanes, where [`widen`]'s zero-extension crosses lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen2(p: *const u16) -> (__m512, __m512) {
    // SAFETY: the caller's: 32 readable u16s at `p` (unaligned).
    let h = unsafe { _mm512_loadu_si512(p.cast()) };
    let z = _mm512_setzero_si512();
    (
        _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, h)),
        _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, h)),
    )
}

/// [`widen2`]'s two vectors rounded to `bf16` and stored in the
/// original order: 32 at `p`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn narrow2(lo: __m512, hi: __m512, p: *mut u16) {
    // The rounded lanes' high halves (odd u16s), each 128-bit lane's
    // four of `lo` then its four of `hi` (indices 32 and up: `hi`'s),
    // undo `widen2`'s unpacks in one permute (where shifts and a
    // pack took three). One row of indices per 128-bit lane, the
    // highest lane first (`set`'s order).
    #[rustfmt::skip]
    let take = _mm512_set_epi16(
        63, 61, 59, 57, 31, 29, 27, 25,
        55, 53, 51, 49, 23, 21, 19, 17,
        47, 45, 43, 41, 15, 13, 11, 9,
        39, 37, 35, 33, 7, 5, 3, 1,
    );
    let h = _mm512_permutex2var_epi16(rounded(lo), take, rounded(hi));
    // SAFETY: the caller's: 32 writable u16s at `p` (unaligned).
    unsafe { _mm512_storeu_si512(p.cast(), h) }
}

/// [`reduce32`]'s body, `$narrow2` storing each 32 results: one
/// fold for the two functions, which differ in the features they are
/// compiled for. Expands to `unsafe` code: the caller's function
/// holds `reduce32`'s safety contract.
macro_rules! reduce32_with {
    ($op:expr, $slots:expr, $out:expr, $whole:expr, $narrow2:ident) => {{
        let (op, slots, out, whole) = ($op, $slots, $out, $whole);
        let Some((first, mid, last)) = super::ends(slots) else {
            // SAFETY: the caller's (a memmove).
            return unsafe { std::ptr::copy(slots[0], out, whole) };
        };
        // `$e` over both halves of 32 elements: the accumulator `$x`
        // and the slot's `$y`.
        macro_rules! each {
                                                        ($x:ident, $y:ident => $e:expr) => {
                                                            fold_pairs!(
                                                                32, whole, first, mid, last, out,
                                                                widen2, round, $narrow2,
                                                                $x, $y => $e
                                                            )
                                                        };
                                                    }
        per_op512!(op, each);
    }};
}

/// [`reduce16`], 32 elements at a time (`whole` a multiple of 32)
/// through [`widen2`] and [`narrow2`], where the CPU has AVX-512BW:
/// fewer instructions per element, for a fold that the integer
/// rounding, not memory, bounds.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512BW; every slot holds `whole` u16s
/// and `out` as many writable ones, which are a slot's or overlap
/// none.
#[target_feature(enable = "avx512f,avx512bw")]
pub(in crate::combine) unsafe fn reduce32(
    op: ReduceOp,
    slots: &[*const u16],
    out: *mut u16,
    whole: usize,
) {
    reduce32_with!(op, slots, out, whole, narrow2)
}

/// Whether the CPU has what [`reduce32_native`] needs: AVX-512F,
/// BW, BF16 and DQ (Cooper Lake, Sapphire Rapids and later, Zen 4
/// and later).
pub(in crate::combine) fn native_bf16() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512bf16")
        && is_x86_feature_detected!("avx512dq")
}

/// [`reduce32`] storing through [`narrow2_native`]: the last
/// step's rounding in one instruction where the CPU has AVX512-BF16
/// (the middle slots' stays [`round`]: the instruction and a widening
/// back ran no faster there). It brings a 2-slot bf16 sum to an
/// int16 add's speed (benches/RESULTS.md, "bf16 native rounding").
///
/// # Safety
/// [`native_bf16`]; and `reduce32`'s.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
pub(in crate::combine) unsafe fn reduce32_native(
    op: ReduceOp,
    slots: &[*const u16],
    out: *mut u16,
    whole: usize,
) {
    reduce32_with!(op, slots, out, whole, narrow2_native)
}

/// [`narrow2`] through AVX512-BF16's `vcvtne2ps2bf16`, which rounds
/// as `half` does (to nearest, ties to even; a NaN keeps its top
/// bits, made quiet) but takes subnormal inputs as zeros: 32 lanes
/// holding any subnormal (`vfpclassps`) take [`narrow2`] instead.
/// The instruction packs `lo`'s 16 then `hi`'s; one permute puts
/// them back in [`widen2`]'s order.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
unsafe fn narrow2_native(lo: __m512, hi: __m512, p: *mut u16) {
    const SUBNORMAL: i32 = 0x20;
    let tiny = _mm512_fpclass_ps_mask::<SUBNORMAL>(lo) | _mm512_fpclass_ps_mask::<SUBNORMAL>(hi);
    if tiny != 0 {
        // SAFETY: the caller's.
        return unsafe { narrow2(lo, hi, p) };
    }
    // SAFETY: both are 64 bytes of plain vector lanes, for which
    // every bit pattern is a value.
    let packed = unsafe { std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo)) };
    // The pack holds `lo`'s 16 lanes, then `hi`'s. The output's
    // 128-bit lane `l` takes `lo`'s four of that lane (elements
    // 4l..4l+4 of the pack), then `hi`'s (16+4l..16+4l+4). One row
    // per output lane, the highest first (`set`'s order).
    #[rustfmt::skip]
    let take = _mm512_set_epi16(
        31, 30, 29, 28, 15, 14, 13, 12,
        27, 26, 25, 24, 11, 10, 9, 8,
        23, 22, 21, 20, 7, 6, 5, 4,
        19, 18, 17, 16, 3, 2, 1, 0,
    );
    let h = _mm512_permutexvar_epi16(take, packed);
    // SAFETY: the caller's: 32 writable u16s at `p` (unaligned).
    unsafe { _mm512_storeu_si512(p.cast(), h) }
}

/// Only [`narrow`] over a slice (length a multiple of 16), for the
/// conversion tests; `None` without AVX-512F.
#[cfg(test)]
pub(in crate::combine) fn narrow_all(from: &[f32], back: &mut [u16]) -> Option<()> {
    if !is_x86_feature_detected!("avx512f") {
        return None;
    }
    assert!(from.len() % 16 == 0 && back.len() == from.len());
    for i in (0..from.len()).step_by(16) {
        // SAFETY: AVX-512F (detected); i + 16 <= len of both.
        unsafe {
            let v = _mm512_loadu_ps(from.as_ptr().add(i));
            narrow(v, back.as_mut_ptr().add(i));
        }
    }
    Some(())
}

/// Only [`narrow2`] (where `native`, [`narrow2_native`]) over a
/// slice (length a multiple of 32), each 32 laid out in two vectors
/// as [`widen2`] lays them out, for the conversion tests; `None`
/// where the CPU lacks what it needs.
#[cfg(test)]
pub(in crate::combine) fn narrow2_all(
    from: &[f32],
    back: &mut [u16],
    native: bool,
) -> Option<()> {
    if !is_x86_feature_detected!("avx512f")
        || !is_x86_feature_detected!("avx512bw")
        || native && !native_bf16()
    {
        return None;
    }
    assert!(from.len() % 32 == 0 && back.len() == from.len());
    for (f, b) in from.chunks_exact(32).zip(back.chunks_exact_mut(32)) {
        // Each 128-bit lane's first four elements in `lo`, its last
        // four in `hi`.
        let (mut lo, mut hi) = ([0f32; 16], [0f32; 16]);
        for l in 0..4 {
            lo[4 * l..4 * l + 4].copy_from_slice(&f[8 * l..8 * l + 4]);
            hi[4 * l..4 * l + 4].copy_from_slice(&f[8 * l + 4..8 * l + 8]);
        }
        // SAFETY: AVX-512F and BW, and where `native` BF16 and DQ
        // (detected); 32 u16s in `b`.
        unsafe {
            let (lo, hi) = (_mm512_loadu_ps(lo.as_ptr()), _mm512_loadu_ps(hi.as_ptr()));
            if native {
                narrow2_native(lo, hi, b.as_mut_ptr());
            } else {
                narrow2(lo, hi, b.as_mut_ptr());
            }
        }
    }
    Some(())
}
