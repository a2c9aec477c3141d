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
use crate::element::{Reduce, ReduceOp};

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
#[path = "avx2.rs"]
mod x86;

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
