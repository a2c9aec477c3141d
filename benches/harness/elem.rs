//! The element types the bench sweeps: ishmem's TYPENAME for device code, pattern
//! data for `--check` and the host reference of a reduction.

use vkshmem::Reduce;

#[path = "../../tests/progs/common/combine.rs"]
mod combine;
pub use combine::Combine;

/// An element type of the sweep (its host reference step is [`Combine`]).
pub trait Elem: Reduce + Combine + PartialEq + std::fmt::Debug {
    /// ishmem's TYPENAME (`shmem_<NAME>_sum_reduce` on the device).
    const NAME: &'static str;
    /// Whether and, or and xor are defined (ishmem: integer types only).
    const BITWISE: bool;
    /// Small values, so float sums and products are exact in any order.
    fn pat(pe: u32, i: usize) -> Self;
}

macro_rules! int_elem {
    ($($t:ty => $name:literal),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = $name;
            const BITWISE: bool = true;
            fn pat(pe: u32, i: usize) -> Self {
                ((pe as usize * 131 + i * 7 + 1) % 97) as $t
            }
        }
    )*};
}
int_elem!(i8 => "int8", u8 => "uint8", i16 => "int16", u16 => "uint16",
    i32 => "int32", u32 => "uint32", i64 => "int64", u64 => "uint64");

macro_rules! float_elem {
    ($($t:ty => $name:literal),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = $name;
            const BITWISE: bool = false;
            fn pat(pe: u32, i: usize) -> Self {
                (1 + (pe as usize + i) % 2) as $t
            }
        }
    )*};
}
float_elem!(f32 => "float", f64 => "double");

macro_rules! half_elem {
    ($($t:ty => $name:literal),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = $name;
            const BITWISE: bool = false;
            fn pat(pe: u32, i: usize) -> Self {
                <$t>::from_f32((1 + (pe as usize + i) % 2) as f32)
            }
        }
    )*};
}
half_elem!(vkshmem::half::f16 => "float16", vkshmem::half::bf16 => "bfloat16");
