//! `max` and `min` of `f16` and `bf16` on their bits, with no conversion:
//! both are sign and magnitude, so a non-NaN value's order is its
//! magnitude's, negated where the sign bit is set, as a 16-bit integer
//! ([`key`]; both zeros map to 0, equal as in IEEE). NaNs are the
//! magnitudes above the infinity's ([`Half::nan_above`]). [`pick`] is
//! `half`'s `max` (`min`) exactly: the new value where the accumulator is
//! NaN or the new value is greater (less) and not NaN, else the
//! accumulator, bits and all. The result is always one of the inputs, so
//! nothing is rounded.
//!
//! Through `f32` ([`super::halves`]) each step widened both operands,
//! compared and blended two vectors, and rounded the result back, far
//! slower than an int16 max. On the bits the compiler vectorises the fold
//! (`combine_blocks`) as it does the integers', close to the int16 max's
//! speed (benches/RESULTS.md, "Half max and min as integers").

use super::halves::Half;
use super::{combine_blocks, ReduceOp};

/// The bits below the sign.
const MAGNITUDE: u16 = 0x7fff;

/// The order of a non-NaN value as a signed integer: its magnitude, negated
/// where the sign bit is set (so -0 and +0 are both 0).
#[inline(always)]
fn key(x: u16) -> i16 {
    // The magnitude fits in 15 bits: positive as an i16, and so is its
    // negation (no overflow).
    let m = (x & MAGNITUDE) as i16;
    if x & !MAGNITUDE != 0 {
        -m
    } else {
        m
    }
}

/// `half`'s `a.max(b)` (`MAX`) or `a.min(b)` on the bits of a type whose
/// NaNs are the magnitudes above `NAN`: `b` where `a` is NaN, or `b` is not
/// NaN and orders after (before) `a`; else `a`.
#[inline(always)]
fn pick<const NAN: u16, const MAX: bool>(a: u16, b: u16) -> u16 {
    let a_nan = a & MAGNITUDE > NAN;
    let b_nan = b & MAGNITUDE > NAN;
    let beyond = if MAX {
        key(b) > key(a)
    } else {
        key(b) < key(a)
    };
    if a_nan || !b_nan && beyond {
        b
    } else {
        a
    }
}

/// [`reduce`] with the type and the operation fixed: a closure the compiler
/// vectorises for the features of the function it is inlined into.
macro_rules! per_kind {
    ($kind:expr, $op:expr, $n:expr, $slots:expr, $out:expr) => {{
        const F16: u16 = Half::F16.nan_above();
        const BF16: u16 = Half::Bf16.nan_above();
        match ($kind, $op) {
            (Half::F16, ReduceOp::Max) => {
                combine_blocks::<u16>($n, $slots, $out, pick::<F16, true>)
            }
            (Half::F16, _) => combine_blocks::<u16>($n, $slots, $out, pick::<F16, false>),
            (Half::Bf16, ReduceOp::Max) => {
                combine_blocks::<u16>($n, $slots, $out, pick::<BF16, true>)
            }
            (Half::Bf16, _) => combine_blocks::<u16>($n, $slots, $out, pick::<BF16, false>),
        }
    }};
}

/// `out = slot_0 op slot_1 op …` over `n` elements of `kind`, `op` being
/// [`ReduceOp::Max`] or [`ReduceOp::Min`] (`super::reduce_slots`'
/// contract), in the widest vectors the CPU has.
pub(super) fn reduce(kind: Half, op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    assert!(
        matches!(op, ReduceOp::Max | ReduceOp::Min),
        "half_order takes max and min only"
    );
    #[cfg(target_arch = "x86_64")]
    if wide512(kind, op, n, slots, out) {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, for which `reduce_avx2` is compiled.
        return unsafe { reduce_avx2(kind, op, n, slots, out) };
    }
    baseline(kind, op, n, slots, out)
}

/// [`reduce`] for the target's baseline (SSE2 on x86-64).
fn baseline(kind: Half, op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    per_kind!(kind, op, n, slots, out)
}

/// [`reduce`] in 256-bit registers.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn reduce_avx2(kind: Half, op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
    per_kind!(kind, op, n, slots, out)
}

/// [`reduce`] in 512-bit registers where the CPU has AVX-512BW (32 lanes
/// of 16 bits, compares into mask registers): whether it ran. Rust
/// enables AVX-512 features from 1.89 (`rustversion`: older compilers,
/// within the crate's MSRV, build without).
#[cfg(target_arch = "x86_64")]
#[rustversion::since(1.89)]
fn wide512(kind: Half, op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) -> bool {
    /// # Safety
    /// The CPU has AVX-512F and AVX-512BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn run(kind: Half, op: ReduceOp, n: usize, slots: &[*const u8], out: *mut u8) {
        per_kind!(kind, op, n, slots, out)
    }
    if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")) {
        return false;
    }
    // SAFETY: AVX-512F and BW (detected), for which `run` is compiled.
    unsafe { run(kind, op, n, slots, out) };
    true
}

/// [`wide512`] where the compiler lacks AVX-512: never runs.
#[cfg(target_arch = "x86_64")]
#[rustversion::before(1.89)]
fn wide512(_: Half, _: ReduceOp, _: usize, _: &[*const u8], _: *mut u8) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// Bit patterns at every edge of the order: zeros, the smallest and
    /// largest subnormals and normals, infinities, quiet and signalling
    /// NaNs with small and large payloads, of both signs.
    fn edges(kind: Half) -> Vec<u16> {
        let inf = kind.nan_above();
        let normal = match kind {
            Half::F16 => 0x0400,
            Half::Bf16 => 0x0080,
        };
        let mut v = Vec::new();
        for m in [
            0,
            1,
            2,
            normal - 1,
            normal,
            normal + 1,
            0x3c00,
            0x3f80,
            inf - 1,
            inf,
            inf + 1,
            inf + 0x40,
            MAGNITUDE - 1,
            MAGNITUDE,
        ] {
            v.extend([m, m | !MAGNITUDE]);
        }
        v
    }

    /// [`reduce`]'s every build this CPU runs: the baseline, AVX2, and
    /// AVX-512BW where it has them.
    fn ways() -> Vec<(&'static str, ReduceFnOf)> {
        let mut v: Vec<(&'static str, ReduceFnOf)> = vec![("baseline", baseline)];
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            // SAFETY (the closure's call): AVX2 detected just above.
            v.push(("avx2", |k, o, n, s, out| unsafe {
                reduce_avx2(k, o, n, s, out)
            }));
        }
        v.push(("widest", reduce));
        v
    }

    type ReduceFnOf = fn(Half, ReduceOp, usize, &[*const u8], *mut u8);

    /// `half`'s own operator on the bits.
    fn want(kind: Half, op: ReduceOp, a: u16, b: u16) -> u16 {
        match (kind, op) {
            (Half::F16, ReduceOp::Max) => f16::from_bits(a).max(f16::from_bits(b)).to_bits(),
            (Half::F16, _) => f16::from_bits(a).min(f16::from_bits(b)).to_bits(),
            (Half::Bf16, ReduceOp::Max) => bf16::from_bits(a).max(bf16::from_bits(b)).to_bits(),
            (Half::Bf16, _) => bf16::from_bits(a).min(bf16::from_bits(b)).to_bits(),
        }
    }

    /// Every value of each type against every edge, both ways round, in the
    /// vectorised fold (`reduce`, two slots) and element by element
    /// (`pick`): the same bits as `half`'s `max` and `min`, NaN payloads
    /// included.
    #[test]
    fn every_value_against_the_edges_matches_half() {
        for kind in [Half::F16, Half::Bf16] {
            let all: Vec<u16> = (0..=u16::MAX).collect();
            for &e in &edges(kind) {
                let other = vec![e; all.len()];
                for op in [ReduceOp::Max, ReduceOp::Min] {
                    for (a, b) in [(&all, &other), (&other, &all)] {
                        let slots = [a.as_ptr().cast::<u8>(), b.as_ptr().cast()];
                        for (way, f) in ways() {
                            let mut out = vec![0u16; a.len()];
                            f(kind, op, a.len(), &slots, out.as_mut_ptr().cast());
                            for i in 0..a.len() {
                                let w = want(kind, op, a[i], b[i]);
                                assert_eq!(
                                    out[i], w,
                                    "{way} {kind:?} {op:?} {:#06x} {:#06x}: {:#06x} != {w:#06x}",
                                    a[i], b[i], out[i]
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Random pairs of every sign and magnitude, 1-5 slots folded in
    /// order, against `half`'s operators folded the same way.
    #[test]
    fn random_folds_match_half() {
        let n = 4099;
        for kind in [Half::F16, Half::Bf16] {
            for members in 1..=5u64 {
                let data: Vec<Vec<u16>> = (0..members)
                    .map(|m| {
                        super::super::tests::pattern(977 * m + 5, n)
                            .into_iter()
                            .map(|x| x as u16)
                            .collect()
                    })
                    .collect();
                let slots: Vec<*const u8> = data.iter().map(|d| d.as_ptr().cast()).collect();
                for (op, (way, f)) in [ReduceOp::Max, ReduceOp::Min]
                    .into_iter()
                    .flat_map(|op| ways().into_iter().map(move |w| (op, w)))
                {
                    let mut out = vec![0u16; n];
                    f(kind, op, n, &slots, out.as_mut_ptr().cast());
                    for i in 0..n {
                        let w = data[1..]
                            .iter()
                            .fold(data[0][i], |a, d| want(kind, op, a, d[i]));
                        assert_eq!(out[i], w, "{way} {kind:?} {op:?} members={members} [{i}]");
                    }
                }
            }
        }
    }
}
