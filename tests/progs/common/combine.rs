//! The host reference of one reduction step (`a op b`), written independently of
//! the library's device code. Shared by the conformance harness
//! (tests/progs/collectives_check.rs) and vkshmem-bench (benches/harness).

use vkshmem::ReduceOp;

/// `a op b` on the host: integers wrap; and, or and xor are integer-only (callers
/// never ask a float for them).
pub trait Combine: Copy {
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! int_combine {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                }
            }
        }
    )*};
}
int_combine!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_combine {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                        unreachable!("no bitwise float reductions")
                    }
                }
            }
        }
    )*};
}
float_combine!(f32, f64);

/// Half-precision: the step in f32, rounded to nearest even by the `half`
/// crate (an implementation of its own, not the device's conversions).
macro_rules! half_combine {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                let (x, y) = (a.to_f32(), b.to_f32());
                <$t>::from_f32(match op {
                    ReduceOp::Max => x.max(y),
                    ReduceOp::Min => x.min(y),
                    ReduceOp::Sum => x + y,
                    ReduceOp::Prod => x * y,
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                        unreachable!("no bitwise float reductions")
                    }
                })
            }
        }
    )*};
}
half_combine!(vkshmem::half::f16, vkshmem::half::bf16);
