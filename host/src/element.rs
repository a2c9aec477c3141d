//! The element and operation types of reductions: which Rust types reduce,
//! with which operations, and how the host combines two of them.

use bytemuck::Pod;

pub use vkshmem_device::collectives::ReduceOp;

mod sealed {
    pub trait Sealed {}
}

/// An element type the reductions support: max, min, sum and prod (integer sums
/// and products wrap). Implemented for the fixed-width integers, `isize`/`usize`
/// (64-bit), `f32`, `f64` and the half-precision [`half::f16`] and
/// [`half::bf16`]; 64-bit types need a device with `shaderInt64` (`f64`:
/// `shaderFloat64`). Half-precision elements are combined in f32 and rounded
/// to nearest even after every step (exactly what native half arithmetic
/// gives), on every device.
pub trait Reduce: Pod + sealed::Sealed {
    /// The device's machine kind for it (`i8`, `u64`, `f32`, ...).
    const KIND: &'static str;
    /// `a op b` on the host, as the device computes it (the host path of small
    /// reductions; integers wrap; bitwise ops are never asked of floats).
    #[doc(hidden)]
    fn host_combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

/// A [`Reduce`] type that also supports the bitwise reductions (and, or, xor).
pub trait BitwiseReduce: Reduce {}

macro_rules! reduce_types {
    ($($t:ty => $k:literal, $bitwise:tt;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Reduce for $t {
            const KIND: &'static str = $k;
            #[inline(always)]
            fn host_combine(op: ReduceOp, a: Self, b: Self) -> Self {
                reduce_types!(@combine $bitwise, op, a, b)
            }
        }
        reduce_types!(@bitwise $t, $bitwise);
    )*};
    (@bitwise $t:ty, yes) => { impl BitwiseReduce for $t {} };
    (@bitwise $t:ty, no) => {};
    (@combine yes, $op:ident, $a:ident, $b:ident) => {
        match $op {
            ReduceOp::And => $a & $b,
            ReduceOp::Or => $a | $b,
            ReduceOp::Xor => $a ^ $b,
            ReduceOp::Max => $a.max($b),
            ReduceOp::Min => $a.min($b),
            ReduceOp::Sum => $a.wrapping_add($b),
            ReduceOp::Prod => $a.wrapping_mul($b),
        }
    };
    (@combine no, $op:ident, $a:ident, $b:ident) => {
        match $op {
            ReduceOp::Max => $a.max($b),
            ReduceOp::Min => $a.min($b),
            ReduceOp::Sum => $a + $b,
            ReduceOp::Prod => $a * $b,
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                unreachable!("checked: no bitwise reductions of floats")
            }
        }
    };
}

reduce_types! {
    i8 => "i8", yes;
    u8 => "u8", yes;
    i16 => "i16", yes;
    u16 => "u16", yes;
    i32 => "i32", yes;
    u32 => "u32", yes;
    i64 => "i64", yes;
    u64 => "u64", yes;
    isize => "i64", yes;
    usize => "u64", yes;
    f32 => "f32", no;
    f64 => "f64", no;
    half::f16 => "f16", no;
    half::bf16 => "bf16", no;
}
