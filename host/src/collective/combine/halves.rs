//! `f16` and `bf16` reductions through `f32` in AVX2 registers, 8 elements
//! at a time: each element widened, combined and rounded back to the type,
//! every step, exactly as `half`'s operators (`Reduce::host_combine`) and
//! the device's kernels compute it. `f16` converts with F16C; `bf16` is the
//! top half of an `f32`, widened by a shift and rounded to nearest, ties to
//! even, with integer arithmetic (not AVX-512 BF16's `vcvtneps2bf16`, which
//! flushes subnormals to zero). Where the CPU has AVX-512F, both go 16
//! elements at a time in 512-bit registers, the same steps, and `bf16` 32
//! at a time where it has AVX-512BW too (`wide16`).
//!
//! Element by element, each conversion is a call in software, which left
//! the half types at a fraction of `f32`'s speed (benches/RESULTS.md,
//! "Vectorised host combine").

use super::assert_aligned;
use crate::collective::reduce::{Reduce, ReduceOp};

/// Which half-precision type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    F16,
    Bf16,
}

impl Half {
    /// `T`'s kind, if it is one of the half types.
    pub(crate) fn of<T: Reduce>() -> Option<Half> {
        use std::any::TypeId;
        let t = TypeId::of::<T>();
        if t == TypeId::of::<half::f16>() {
            Some(Half::F16)
        } else if t == TypeId::of::<half::bf16>() {
            Some(Half::Bf16)
        } else {
            None
        }
    }

    /// The largest magnitude (the bits below the sign) that is not NaN:
    /// the infinity's, all exponent bits set and no mantissa.
    pub(crate) const fn nan_above(self) -> u16 {
        match self {
            Half::F16 => 0x7c00,
            Half::Bf16 => 0x7f80,
        }
    }

    /// One element, widened, combined with `op` and rounded back by `half`:
    /// the tails shorter than a vector.
    fn combine(self, op: ReduceOp, a: u16, b: u16) -> u16 {
        match self {
            Half::F16 => {
                use half::f16;
                f16::host_combine(op, f16::from_bits(a), f16::from_bits(b)).to_bits()
            }
            Half::Bf16 => {
                use half::bf16;
                bf16::host_combine(op, bf16::from_bits(a), bf16::from_bits(b)).to_bits()
            }
        }
    }
}

/// Whether this CPU has what [`reduce`] needs (checked once, then cached by
/// the standard library).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out = slot_0 op slot_1 op …` over `n` elements of `kind`, `op` a sum or
/// a product (max and min compare bits: `super::half_order`), each step
/// rounded to the type (`super::reduce_slots`' contract). Call only where
/// [`available`].
///
/// Eight elements at a time, every slot's in turn folded into an
/// accumulator that stays in a register (rounded to the type after each
/// step, as `f32` bits), then stored: each slot read once, `out` written
/// once, no pass through a buffer.
pub(crate) fn reduce(kind: Half, op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    assert!(available(), "halves::reduce without AVX2 and F16C");
    assert!(
        matches!(op, ReduceOp::Sum | ReduceOp::Prod),
        "halves::reduce takes sums and products (max and min: half_order)"
    );
    let Some((&first, rest)) = slots.split_first() else {
        return;
    };
    assert_aligned::<u16>(slots);
    if rest.is_empty() {
        // SAFETY: the slot holds n u16s and `out` n writable ones, the same
        // bytes or none of them (`reduce_slots`' contract): a memmove.
        unsafe { std::ptr::copy(first, out, n * 2) };
        return;
    }
    let slots: Vec<*const u16> = slots.iter().map(|s| s.cast::<u16>()).collect();
    // 16 or 32 elements at a time in AVX-512 registers where the CPU has
    // them (and the compiler, `wide16`), the rest in AVX2 registers (bf16
    // 16 at a time, then 8) and the last few one by one.
    let done = wide16(kind, op, &slots, out.cast::<u16>(), n);
    let whole = n / 8 * 8;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX2 and F16C (asserted), for which `x86::reduce8` and
    // `x86::reduce16_bf16` are compiled; every slot holds n aligned u16s
    // that nobody writes during the call but this function, and `out` n
    // writable ones (unaligned stores), a slot's own or overlapping none;
    // `done <= sixteens <= whole <= n` (`done` a multiple of 16 or 32,
    // `sixteens` what `reduce16_bf16` covers past it), so the offsets stay
    // inside them.
    unsafe {
        let at = |from: usize| -> (Vec<*const u16>, *mut u16) {
            let s = slots.iter().map(|s| s.add(from)).collect();
            (s, out.cast::<u16>().add(from))
        };
        // bf16 16 at a time in AVX2 registers where AVX-512 left them.
        let sixteens = if kind == Half::Bf16 {
            done + (whole - done) / 16 * 16
        } else {
            done
        };
        if sixteens > done {
            let (slots, out) = at(done);
            x86::reduce16_bf16(op, &slots, out, sixteens - done);
        }
        let (slots, out) = at(sixteens);
        match kind {
            Half::F16 => x86::reduce8::<false>(op, &slots, out, whole - sixteens),
            Half::Bf16 => x86::reduce8::<true>(op, &slots, out, whole - sixteens),
        }
    };
    for i in whole..n {
        // SAFETY: i < n, inside every slot and `out` (above); `out` may be
        // unaligned, and is written after the slots' element is read.
        unsafe {
            let v = slots[1..]
                .iter()
                .fold(*slots[0].add(i), |acc, s| kind.combine(op, acc, *s.add(i)));
            out.cast::<u16>().add(i).write_unaligned(v);
        }
    }
}

/// The first elements of a reduction ([`reduce`]'s arguments) in AVX-512
/// registers, 16 at a time where the CPU has AVX-512F, and `bf16` 32 at a
/// time where it has AVX-512BW too (`avx512::reduce32`): how many (a
/// multiple of 16; 0 elsewhere). Rust has AVX-512's intrinsics from 1.89
/// (`rustversion`: older compilers, within the crate's MSRV, build without).
///
/// `f16` converts with AVX-512F's 16-lane forms of F16C's instructions, the
/// same rounding, twice the lanes per instruction (benches/RESULTS.md, "f16 in
/// AVX-512").
///
/// `bf16`: in AVX2 registers the rounding's integer steps, not memory,
/// bound it, so wider registers pay even where the CPU runs 512-bit
/// operations in two halves (benches/RESULTS.md, "bf16 in AVX-512"), and 32 at
/// a time with AVX-512BW more again. Where the CPU has AVX512-BF16 too, the
/// stored step rounds in one instruction (`avx512::reduce32_native`;
/// benches/RESULTS.md, "bf16 native rounding").
#[rustversion::since(1.89)]
fn wide16(kind: Half, op: ReduceOp, slots: &[*const u16], out: *mut u16, n: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if kind == Half::Bf16
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
    {
        let whole = n / 32 * 32;
        if x86::avx512::native_bf16() {
            // SAFETY: AVX-512F, BW, BF16 and DQ (detected), for which
            // `x86::avx512::reduce32_native` is compiled; the slots and
            // `out` as `reduce`'s (whole <= n).
            unsafe { x86::avx512::reduce32_native(op, slots, out, whole) };
        } else {
            // SAFETY: AVX-512F and BW (detected), for which
            // `x86::avx512::reduce32` is compiled; the slots and `out` as
            // `reduce`'s (whole <= n).
            unsafe { x86::avx512::reduce32(op, slots, out, whole) };
        }
        return whole;
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        let whole = n / 16 * 16;
        // SAFETY: AVX-512F (detected), for which `x86::avx512::reduce16`
        // is compiled; the slots and `out` as `reduce`'s (whole <= n).
        unsafe {
            match kind {
                Half::F16 => x86::avx512::reduce16::<false>(op, slots, out, whole),
                Half::Bf16 => x86::avx512::reduce16::<true>(op, slots, out, whole),
            }
        };
        return whole;
    }
    let _ = (kind, op, slots, out, n);
    0
}

/// [`wide16`] where the compiler lacks AVX-512's intrinsics: nothing.
#[rustversion::before(1.89)]
fn wide16(_: Half, _: ReduceOp, _: &[*const u16], _: *mut u16, _: usize) -> usize {
    0
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::collective::reduce::ReduceOp;
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

    /// `f16` and `bf16` reductions 16 (`bf16` with AVX-512BW: 32) elements
    /// at a time: [`reduce8`]'s, in AVX-512 registers (Rust 1.89 or later).
    #[rustversion::since(1.89)]
    pub(super) mod avx512 {
        use crate::collective::reduce::ReduceOp;
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
        pub(in crate::collective::combine) unsafe fn reduce16<const BF: bool>(
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
        pub(in crate::collective::combine) unsafe fn reduce32(
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
        pub(in crate::collective::combine) fn native_bf16() -> bool {
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
        pub(in crate::collective::combine) unsafe fn reduce32_native(
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
            let tiny =
                _mm512_fpclass_ps_mask::<SUBNORMAL>(lo) | _mm512_fpclass_ps_mask::<SUBNORMAL>(hi);
            if tiny != 0 {
                // SAFETY: the caller's.
                return unsafe { narrow2(lo, hi, p) };
            }
            // SAFETY: both are 64 bytes of plain vector lanes, for which
            // every bit pattern is a value.
            let packed =
                unsafe { std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo)) };
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
        pub(in crate::collective::combine) fn narrow_all(
            from: &[f32],
            back: &mut [u16],
        ) -> Option<()> {
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
        pub(in crate::collective::combine) fn narrow2_all(
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
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// A bf16 fold over `whole` elements: `x86::reduce8`'s signature.
    type Fold = unsafe fn(ReduceOp, &[*const u16], *mut u16, usize);

    /// bf16 folds 8 at a time (`x86::reduce8`), 16 at a time in AVX2
    /// registers (`x86::reduce16_bf16`, which `reduce` runs only past what
    /// AVX-512 covers) and 32 at a time in AVX-512 registers (both
    /// narrowings, [`avx512_folds`]) against `half`'s element by element,
    /// over 1 to 5 slots, sums and products, in place too; values that
    /// round, overflow, infinities, NaNs, zeros of both signs and
    /// subnormals (in about a third of the 32-element runs, which the
    /// native narrowing hands to the integer one).
    #[test]
    fn bf16_folds_match_half() {
        if !available() {
            eprintln!("no AVX2 and F16C here: nothing to check");
            return;
        }
        let mut folds: Vec<(&str, Fold)> = vec![
            ("eight", x86::reduce8::<true>),
            ("sixteen", x86::reduce16_bf16),
        ];
        folds.extend(avx512_folds());
        let n = 32 * 67;
        let value = |x: u64| {
            let v = match x % 89 {
                0 => f32::INFINITY,
                1 => f32::NEG_INFINITY,
                2 => f32::NAN,
                3 => -0.0,
                4 => 1e-39 * (x % 7) as f32,
                5 => 3e38,
                _ => ((x >> 8) % 40_001) as f32 / 37.0 - 540.0,
            };
            half::bf16::from_f32(v).to_bits()
        };
        use ReduceOp::*;
        for members in 1..=5usize {
            let data: Vec<Vec<u16>> = (0..members)
                .map(|m| {
                    let seed = 0x9e37_79b9 + members as u64 * 8 + m as u64;
                    super::super::tests::pattern(seed, n)
                        .into_iter()
                        .map(value)
                        .collect()
                })
                .collect();
            for op in [Sum, Prod] {
                let want: Vec<u16> = (0..n)
                    .map(|i| {
                        (1..members).fold(data[0][i], |a, m| Half::Bf16.combine(op, a, data[m][i]))
                    })
                    .collect();
                let nan = |b: u16| half::bf16::from_bits(b).is_nan();
                let agree = |got: &[u16], how: &str| {
                    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            g == w || nan(g) && nan(w),
                            "{op:?} members={members} {how}: [{i}] {g:#06x} != {w:#06x}"
                        );
                    }
                };
                for in_place in [false, true] {
                    for &(name, fold) in &folds {
                        let mut own = data[members - 1].clone();
                        let mut slots: Vec<*const u16> = data.iter().map(|d| d.as_ptr()).collect();
                        let mut out = vec![0u16; n];
                        let dest = if in_place {
                            slots[members - 1] = own.as_ptr();
                            own.as_mut_ptr()
                        } else {
                            out.as_mut_ptr()
                        };
                        // SAFETY: the CPU has what `fold` needs (AVX2 and
                        // F16C checked, `avx512_folds` its own); every slot
                        // and the dest hold n u16s (a multiple of 32), the
                        // dest a slot's own (in place) or apart from all of
                        // them.
                        unsafe { fold(op, &slots, dest, n) };
                        let how = format!("in_place={in_place} {name}");
                        agree(if in_place { &own } else { &out }, &how);
                    }
                }
            }
        }
    }

    /// The vector conversions agree with `half`'s element conversions on
    /// every f16 and bf16 bit pattern, and narrowing on the f32s between
    /// neighbours (ties), past the largest finite values, and NaNs with
    /// payloads.
    #[test]
    fn conversions_match_half() {
        if !available() {
            eprintln!("no AVX2 and F16C here: nothing to check");
            return;
        }
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        for kind in [Half::F16, Half::Bf16] {
            let to_f32 = |b: u16| match kind {
                Half::F16 => half::f16::from_bits(b).to_f32(),
                Half::Bf16 => half::bf16::from_bits(b).to_f32(),
            };
            let from_f32 = |x: f32| match kind {
                Half::F16 => half::f16::from_f32(x).to_bits(),
                Half::Bf16 => half::bf16::from_f32(x).to_bits(),
            };
            let (mut wide, mut back) = (vec![0f32; bits.len()], vec![0u16; bits.len()]);
            match kind {
                Half::F16 => x86::convert::<false>(&bits, &mut wide, &mut back),
                Half::Bf16 => x86::convert::<true>(&bits, &mut wide, &mut back),
            }
            for (&b, x) in bits.iter().zip(&wide) {
                let want = to_f32(b);
                assert!(
                    want.to_bits() == x.to_bits() || want.is_nan() && x.is_nan(),
                    "{kind:?} widen {b:#06x}"
                );
            }
            let mut fs: Vec<f32> = bits
                .windows(2)
                .map(|w| (to_f32(w[0]) + to_f32(w[1])) / 2.0)
                .collect();
            fs.extend(bits.iter().map(|&b| to_f32(b)));
            fs.extend([
                65520.0,
                65519.0,
                1e6,
                -1e6,
                1e-9,
                f32::MAX,
                f32::MIN_POSITIVE / 3.0,
            ]);
            fs.extend([0x7f80_0001u32, 0xffc1_2345, 0x7fff_ffff].map(f32::from_bits));
            fs.extend((0..4096u32).map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9))));
            fs.resize(fs.len().div_ceil(32) * 32, 1.0);
            let mut back = vec![0u16; fs.len()];
            match kind {
                Half::F16 => x86::narrow_all::<false>(&fs, &mut back),
                Half::Bf16 => x86::narrow_all::<true>(&fs, &mut back),
            }
            let mut narrowed = vec![back];
            if kind == Half::Bf16 {
                narrowed.extend(wide_narrow(&fs));
            }
            for (x, &h) in narrowed.iter().flat_map(|b| fs.iter().zip(b)) {
                let want = from_f32(*x);
                let nan = |b: u16| to_f32(b).is_nan();
                assert!(
                    want == h || nan(want) && nan(h),
                    "{kind:?} narrow {x} ({:#010x}): {h:#06x} != {want:#06x}",
                    x.to_bits()
                );
            }
        }
    }

    /// AVX-512's bf16 folds 32 at a time that this CPU can run: with the
    /// integer narrowing (AVX-512F and BW) and with AVX512-BF16's.
    #[rustversion::since(1.89)]
    fn avx512_folds() -> Vec<(&'static str, Fold)> {
        let mut folds: Vec<(&str, Fold)> = Vec::new();
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
            folds.push(("avx512", x86::avx512::reduce32));
        }
        if x86::avx512::native_bf16() {
            folds.push(("avx512_native", x86::avx512::reduce32_native));
        }
        folds
    }

    #[rustversion::before(1.89)]
    fn avx512_folds() -> Vec<(&'static str, Fold)> {
        Vec::new()
    }

    /// AVX-512's bf16 narrowings over `fs` (16 lanes, 32 from two vectors,
    /// and 32 through AVX512-BF16's instruction), where the compiler and the
    /// CPU have them.
    #[rustversion::since(1.89)]
    fn wide_narrow(fs: &[f32]) -> Vec<Vec<u16>> {
        let mut back = vec![0u16; fs.len()];
        let mut all = Vec::new();
        if x86::avx512::narrow_all(fs, &mut back).is_some() {
            all.push(back.clone());
        }
        for native in [false, true] {
            if x86::avx512::narrow2_all(fs, &mut back, native).is_some() {
                all.push(back.clone());
            }
        }
        all
    }

    #[rustversion::before(1.89)]
    fn wide_narrow(_: &[f32]) -> Vec<Vec<u16>> {
        Vec::new()
    }
}
