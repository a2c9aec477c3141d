//! AVX2 and F16C: `f16` and `bf16` reductions 8 (`bf16` 16) elements at a
//! time in 256-bit registers, and the macros and helpers that the AVX-512
//! folds (`avx512.rs`) share.

use crate::element::ReduceOp;
use std::arch::x86_64::*;

/// The fold's `match` over `op` in 256-bit registers, for [`reduce8`]
/// and [`reduce16_bf16`]: `$each!(x, y => step)` is the caller's loop.
/// Sums and products only (`reduce` asserts it).
macro_rules! per_op256 {
    ($op:expr, $each:ident) => {
        match $op {
            ReduceOp::Sum => $each!(x, y => _mm256_add_ps(x, y)),
            ReduceOp::Prod => $each!(x, y => _mm256_mul_ps(x, y)),
            _ => unreachable!("checked: sums and products only"),
        }
    };
}

/// The fold of [`reduce8`] and `avx512::reduce16`, `$step` elements at
/// a time (the register's lanes) for `i < $whole` (a multiple of
/// `$step`): `$first`'s elements widened into the accumulator `$x`,
/// each of `$mid`'s folded in as `$y` by `$e` and rounded to the type,
/// `$last`'s folded in and the result rounded by `$narrow` as it is
/// stored to `$out`. Expands to an `unsafe` loop: the caller's function
/// holds the safety contract (every slot and `$out` hold `$whole` u16s,
/// `$out` a slot's or overlapping none) and enables the features that
/// `$widen`, `$round` and `$narrow` need.
macro_rules! fold_each {
    ($step:expr, $whole:expr, $first:expr, $mid:expr, $last:expr, $out:expr,
     $widen:expr, $round:expr, $narrow:expr, $x:ident, $y:ident => $e:expr) => {
        for i in (0..$whole).step_by($step) {
            // SAFETY: i + $step <= $whole, inside every slot and `$out`
            // (the caller's); `$out` is written after every slot's
            // elements are read.
            unsafe {
                let mut $x = $widen($first.add(i));
                for &s in $mid {
                    let $y = $widen(s.add(i));
                    $x = $round($e);
                }
                let $y = $widen($last.add(i));
                $narrow($e, $out.add(i));
            }
        }
    };
}

/// [`fold_each`] for `bf16` in two vectors a step (`reduce16_bf16`,
/// `avx512::reduce32`): `$step` elements at a time, `$widen2` loading
/// them as two vectors of `f32`s (`lo`, `hi`), `$e` applied to each
/// half with the accumulator `$x` and the slot's `$y`, `$round`ed
/// between slots, and `$narrow2` storing both halves rounded. The same
/// safety contract, held by the caller's function.
macro_rules! fold_pairs {
    ($step:expr, $whole:expr, $first:expr, $mid:expr, $last:expr, $out:expr,
     $widen2:expr, $round:expr, $narrow2:expr, $x:ident, $y:ident => $e:expr) => {
        for i in (0..$whole).step_by($step) {
            // SAFETY: i + $step <= $whole, inside every slot and `$out`
            // (the caller's); `$out` is written after every slot's
            // elements are read.
            unsafe {
                let (mut al, mut ah) = $widen2($first.add(i));
                for &s in $mid {
                    let (bl, bh) = $widen2(s.add(i));
                    al = $round({
                        let ($x, $y) = (al, bl);
                        $e
                    });
                    ah = $round({
                        let ($x, $y) = (ah, bh);
                        $e
                    });
                }
                let (bl, bh) = $widen2($last.add(i));
                let lo = {
                    let ($x, $y) = (al, bl);
                    $e
                };
                let hi = {
                    let ($x, $y) = (ah, bh);
                    $e
                };
                $narrow2(lo, hi, $out.add(i));
            }
        }
    };
}

/// 8 elements at `p` as `f32`s: `bf16` where `BF`, else `f16`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn widen<const BF: bool>(p: *const u16) -> __m256 {
    // SAFETY: the caller's: 8 readable u16s at `p` (unaligned load).
    let h = unsafe { _mm_loadu_si128(p.cast::<__m128i>()) };
    if BF {
        // bf16 is an f32's top 16 bits: zero-extend, shift up.
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
    } else {
        _mm256_cvtph_ps(h)
    }
}

/// `v` rounded to 8 elements (to nearest, ties to even) at `p`: `bf16`
/// where `BF`, else `f16`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn narrow<const BF: bool>(v: __m256, p: *mut u16) {
    let h = if !BF {
        _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)
    } else {
        let r = _mm256_srli_epi32::<16>(rounded(v));
        // Every lane is at most 0xffff: pack the 8 u32s to u16s.
        _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r))
    };
    // SAFETY: the caller's: 8 writable u16s at `p` (unaligned store).
    unsafe { _mm_storeu_si128(p.cast::<__m128i>(), h) }
}

/// `v` rounded to the type (to nearest, ties to even) and widened back
/// to `f32`: `bf16` where `BF`, else `f16`.
///
/// # Safety
/// The CPU has AVX2 and F16C.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn round<const BF: bool>(v: __m256) -> __m256 {
    if !BF {
        return _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v));
    }
    _mm256_castsi256_ps(_mm256_and_si256(rounded(v), _mm256_set1_epi32(-65536)))
}

/// `v` rounded as `half` rounds an `f32` to `bf16`, in the top halves
/// of the lanes (the low halves not cleared): a NaN keeps its top bits
/// and is made quiet; else add 0x7fff plus the kept part's lowest bit
/// (ties to even; overflow reaches infinity).
#[inline]
#[target_feature(enable = "avx2")]
fn rounded(v: __m256) -> __m256i {
    let x = _mm256_castps_si256(v);
    let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
    let bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb);
    let quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x0040_0000));
    let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    _mm256_blendv_epi8(_mm256_add_epi32(x, bias), quiet, nan)
}

/// The slots as the folds take them: the first (widened into the
/// accumulator), the middle ones (folded in and rounded) and the last
/// (folded in as the result is stored); `None` for a single slot (a
/// copy). Panics without one.
fn ends(slots: &[*const u16]) -> Option<(*const u16, &[*const u16], *const u16)> {
    let (&first, rest) = slots.split_first().expect("at least one slot");
    let (&last, mid) = rest.split_last()?;
    Some((first, mid, last))
}

/// `out[i] = slot_0[i] op slot_1[i] op …` for `i < whole` (a multiple
/// of 8), each step rounded to the type (`bf16` where `BF`, else
/// `f16`), `op` a sum or a product.
///
/// # Safety
/// The CPU has AVX2 and F16C; every slot holds `whole` u16s and `out`
/// as many writable ones, which are a slot's or overlap none.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn reduce8<const BF: bool>(
    op: ReduceOp,
    slots: &[*const u16],
    out: *mut u16,
    whole: usize,
) {
    // The last step is rounded by `narrow` as it stores.
    let Some((first, mid, last)) = ends(slots) else {
        // SAFETY: the caller's: `whole` u16s in the slot and `out`, the
        // same or apart (a memmove).
        return unsafe { std::ptr::copy(slots[0], out, whole) };
    };
    macro_rules! each {
        ($x:ident, $y:ident => $e:expr) => {
            fold_each!(
                8, whole, first, mid, last, out,
                widen::<BF>, round::<BF>, narrow::<BF>,
                $x, $y => $e
            )
        };
    }
    per_op256!(op, each);
}

/// 16 `bf16`s at `p` as two vectors of `f32`s (the top halves),
/// interleaved with zeros within each 128-bit lane: the first holds
/// each lane's low four elements, the second its high four, the order
/// [`narrow2`] packs back. One load and two shuffles within lanes,
/// where [`widen`]'s zero-extension crosses lanes.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn widen2(p: *const u16) -> (__m256, __m256) {
    // SAFETY: the caller's: 16 readable u16s at `p` (unaligned).
    let h = unsafe { _mm256_loadu_si256(p.cast::<__m256i>()) };
    let z = _mm256_setzero_si256();
    (
        _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, h)),
        _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, h)),
    )
}

/// [`widen2`]'s two vectors rounded to `bf16` ([`rounded`]) and stored
/// in the original order: 16 at `p`. The pack within each 128-bit lane
/// (`lo`'s four, then `hi`'s four) undoes `widen2`'s unpacks.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn narrow2(lo: __m256, hi: __m256, p: *mut u16) {
    let lo = _mm256_srli_epi32::<16>(rounded(lo));
    let hi = _mm256_srli_epi32::<16>(rounded(hi));
    // Every lane is at most 0xffff.
    let h = _mm256_packus_epi32(lo, hi);
    // SAFETY: the caller's: 16 writable u16s at `p` (unaligned).
    unsafe { _mm256_storeu_si256(p.cast::<__m256i>(), h) }
}

/// [`reduce8`] for `bf16`, 16 elements at a time (`whole` a multiple of
/// 16) through [`widen2`] and [`narrow2`]: no shuffle across lanes, so
/// faster than eight at a time (benches/RESULTS.md, "bf16 in AVX2").
///
/// # Safety
/// The CPU has AVX2 and F16C; every slot holds `whole` u16s and `out`
/// as many writable ones, which are a slot's or overlap none.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn reduce16_bf16(
    op: ReduceOp,
    slots: &[*const u16],
    out: *mut u16,
    whole: usize,
) {
    let Some((first, mid, last)) = ends(slots) else {
        // SAFETY: the caller's (a memmove).
        return unsafe { std::ptr::copy(slots[0], out, whole) };
    };
    // `$e` over both halves of 16 elements: the accumulator `$x` and
    // the slot's `$y`.
    macro_rules! each {
        ($x:ident, $y:ident => $e:expr) => {
            fold_pairs!(
                16, whole, first, mid, last, out,
                widen2, round::<true>, narrow2,
                $x, $y => $e
            )
        };
    }
    per_op256!(op, each);
}

/// Its items where the compiler has AVX-512's intrinsics (Rust 1.89 or
/// later), nothing before: `rustversion`'s attribute cannot take a module
/// in its own file (file modules in proc macro input are unstable).
#[rustversion::since(1.89)]
macro_rules! since_1_89 {
    ($($item:item)*) => { $($item)* };
}

/// [`since_1_89`] where the compiler lacks AVX-512's intrinsics: nothing.
#[rustversion::before(1.89)]
macro_rules! since_1_89 {
    ($($item:item)*) => {};
}

since_1_89! {
    /// `f16` and `bf16` reductions 16 (`bf16` with AVX-512BW: 32) elements
    /// at a time: [`reduce8`]'s, in AVX-512 registers (Rust 1.89 or later).
    // Built from 1.89 only (`since_1_89`), so AVX-512's intrinsics, stable
    // from 1.89, are within its reach (under `rustversion`'s attribute, a
    // proc macro, clippy did not look).
    #[allow(clippy::incompatible_msrv)]
    #[path = "avx512.rs"]
    pub(super) mod avx512;
}

/// [`widen`] and [`narrow`] over slices (lengths multiples of 8), for
/// the conversion tests.
#[cfg(test)]
pub(super) fn convert<const BF: bool>(from: &[u16], to: &mut [f32], back: &mut [u16]) {
    assert!(super::available() && from.len() % 8 == 0);
    assert!(to.len() == from.len() && back.len() == from.len());
    for i in (0..from.len()).step_by(8) {
        // SAFETY: AVX2 and F16C (asserted); i + 8 <= len of all three.
        unsafe {
            let v = widen::<BF>(from.as_ptr().add(i));
            _mm256_storeu_ps(to.as_mut_ptr().add(i), v);
        }
    }
    for i in (0..from.len()).step_by(8) {
        // SAFETY: as above.
        unsafe {
            let v = _mm256_loadu_ps(to.as_ptr().add(i));
            narrow::<BF>(v, back.as_mut_ptr().add(i));
        }
    }
}

/// Only [`narrow`], for f32s that are not widened halves (ties,
/// overflow).
#[cfg(test)]
pub(super) fn narrow_all<const BF: bool>(from: &[f32], back: &mut [u16]) {
    assert!(super::available() && from.len() % 8 == 0 && back.len() == from.len());
    for i in (0..from.len()).step_by(8) {
        // SAFETY: AVX2 and F16C (asserted); i + 8 <= len of both.
        unsafe {
            let v = _mm256_loadu_ps(from.as_ptr().add(i));
            narrow::<BF>(v, back.as_mut_ptr().add(i));
        }
    }
}
