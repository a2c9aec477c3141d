//! The collectives' tables: reduction operations, machine element kinds (with
//! the half kinds' f32 conversions) and ishmem's TYPENAMEs.

use crate::LibraryConfig;

/// A reduction operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
}

impl ReduceOp {
    /// Every operation, in code order.
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Sum,
        ReduceOp::Prod,
    ];

    /// The operation's code in device code.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Its name in function names (`sum` in `shmem_int_sum_reduce`).
    pub fn name(self) -> &'static str {
        ["and", "or", "xor", "max", "min", "sum", "prod"][self as usize]
    }

    /// Whether it is one of the bitwise operations.
    pub fn bitwise(self) -> bool {
        matches!(self, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
    }
}

/// A machine element kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind {
    /// Name in generated code (`i8`, `u64`, `f32`).
    pub name: &'static str,
    /// Bytes per element: 1, 2, 4 or 8.
    pub bytes: u32,
    /// Signed integer.
    pub signed: bool,
    /// Floating point.
    pub float: bool,
}

impl Kind {
    /// Whether device code for it needs `shaderInt64` (and `shaderFloat64` for f64).
    pub fn needs_int64(&self) -> bool {
        self.bytes == 8
    }
}

const fn k(name: &'static str, bytes: u32, signed: bool, float: bool) -> Kind {
    Kind {
        name,
        bytes,
        signed,
        float,
    }
}

/// The machine element kinds (their index is how the proxy ring names them:
/// new kinds go at the end).
pub const KINDS: [Kind; 12] = [
    k("i8", 1, true, false),
    k("u8", 1, false, false),
    k("i16", 2, true, false),
    k("u16", 2, false, false),
    k("i32", 4, true, false),
    k("u32", 4, false, false),
    k("i64", 8, true, false),
    k("u64", 8, false, false),
    k("f32", 4, false, true),
    k("f64", 8, false, true),
    k("f16", 2, false, true),
    k("bf16", 2, false, true),
];

/// Conversions between f32 and the half-precision kinds' bits (in the low 16
/// bits of a u32). f32 to half is spelled out so that every driver rounds
/// alike: it rounds to nearest even, overflows to infinity and keeps NaN a
/// (quiet) NaN (WGSL's `pack2x16float` leaves overflow and rounding to the
/// implementation). Half to f32 is exact (every half value is a normal or
/// zero f32, subnormal halves included), so the device's own
/// `unpack2x16float` does it: one instruction where the CPU has one (x86's
/// F16C under llvmpipe), both lanes of a word at once in the wide kernels.
/// (It replaced a spelled-out form of about ten operations; the checks'
/// half data are any finite bit patterns, subnormals included, so a driver
/// that flushed subnormal halves would fail them.) Without branches (each
/// case computed, one selected): on llvmpipe, whose invocations run as SIMD
/// lanes, a branch costs both its sides and its masks besides. Few
/// operations per case, since there the f16 reductions are compute-bound
/// (benches/RESULTS.md, "f16 conversions"):
/// - f32 to half: the normal case rounds to nearest even in integers (the
///   `+ 0xfff + odd` step), with the magnitude clamped first so that
///   overflow and infinity round to infinity; subnormal halves are
///   `round(|x| * 2^24)` (the multiply is exact; WGSL's `round` is
///   round-half-to-even, SPIR-V's RoundEven); NaN keeps its top payload bits
///   and becomes quiet.
///
/// No result depends on the device's rounding mode, and an f32 subnormal a
/// device flushes to zero rounds to a zero half anyway. The f32-to-half
/// spelling was checked on the CPU, bit for bit, against the previous one
/// (itself checked against `_Float16`) for all 2^32 f32 inputs; half to f32
/// reads only a word's low 16 bits (the wide kernels pass a whole word for
/// its low lane).
pub const HALF_SOURCE: &str = "
fn vks_f16_value(h: u32) -> f32 {
    return unpack2x16float(h).x;
}
fn vks_f16_bits(x: f32) -> u32 {
    let u = bitcast<u32>(x);
    let a = u & 0x7fffffffu;
    let k = min(a, 0x47800000u);
    let normal = (k - 0x37fff001u + ((k >> 13u) & 1u)) >> 13u;
    let sub = u32(i32(round(bitcast<f32>(a) * 16777216.0)));
    var o = select(normal, sub, a < 0x38800000u);
    o = select(o, 0x7e00u | ((a >> 13u) & 0x3ffu), a > 0x7f800000u);
    return ((u >> 16u) & 0x8000u) | o;
}
fn vks_bf16_value(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}
fn vks_bf16_bits(x: f32) -> u32 {
    let u = bitcast<u32>(x);
    if (u & 0x7fffffffu) > 0x7f800000u {
        return (u >> 16u) | 0x40u;
    }
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}
";

/// Whether `kind` is a half-precision float (stored as 16 bits, combined in
/// f32 through [`HALF_SOURCE`]).
pub fn is_half(kind: &Kind) -> bool {
    kind.float && kind.bytes == 2
}

/// The index in [`KINDS`] of the kind called `name` (how the proxy ring
/// names it).
pub fn kind_index(name: &str) -> Option<u32> {
    KINDS.iter().position(|k| k.name == name).map(|i| i as u32)
}

/// The kind called `name`.
pub fn kind(name: &str) -> Option<Kind> {
    KINDS.iter().copied().find(|k| k.name == name)
}

/// One of ishmem's TYPENAMEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeName {
    /// The TYPENAME (`int`, `uint64`, `double`).
    pub name: &'static str,
    /// Its machine kind (C's `char` is signed, `long` is 64-bit: LP64).
    pub kind: &'static str,
    /// Whether and/or/xor reductions apply (ishmem's table).
    pub bitwise: bool,
}

const fn t(name: &'static str, kind: &'static str, bitwise: bool) -> TypeName {
    TypeName {
        name,
        kind,
        bitwise,
    }
}

/// ishmem's reduction types (its standard RMA types, as far as reductions go).
pub const TYPES: [TypeName; 25] = [
    t("char", "i8", false),
    t("schar", "i8", false),
    t("short", "i16", false),
    t("int", "i32", false),
    t("long", "i64", false),
    t("longlong", "i64", false),
    t("ptrdiff", "i64", false),
    t("uchar", "u8", true),
    t("ushort", "u16", true),
    t("uint", "u32", true),
    t("ulong", "u64", true),
    t("ulonglong", "u64", true),
    t("int8", "i8", true),
    t("int16", "i16", true),
    t("int32", "i32", true),
    t("int64", "i64", true),
    t("uint8", "u8", true),
    t("uint16", "u16", true),
    t("uint32", "u32", true),
    t("uint64", "u64", true),
    t("size", "u64", true),
    t("float", "f32", false),
    t("double", "f64", false),
    // Beyond ishmem's table: the half-precision types of ML gradients
    // (NCCL's ncclFloat16 and ncclBfloat16).
    t("float16", "f16", false),
    t("bfloat16", "bf16", false),
];

/// Whether a library for `cfg` has device code for `kind`.
pub fn kind_available(cfg: &LibraryConfig, kind: &Kind) -> bool {
    match (kind.bytes, kind.float) {
        (8, true) => cfg.float64,
        (8, false) => cfg.int64,
        _ => true,
    }
}

/// Whether the wide reduction of `kind` can be built with library `cfg`: the
/// kind's own needs, and 64-bit integers for every 8-byte kind (the kernel
/// packs its words into u64s).
pub fn wide_kind_available(cfg: &LibraryConfig, kind: &Kind) -> bool {
    kind_available(cfg, kind) && (kind.bytes != 8 || cfg.int64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_typename_has_a_kind() {
        for t in TYPES {
            assert!(kind(t.kind).is_some(), "{}", t.name);
        }
        // Floating types have no bitwise reductions; unsigned ones all do.
        assert!(TYPES
            .iter()
            .filter(|t| t.kind.starts_with('f'))
            .all(|t| !t.bitwise));
        assert!(TYPES
            .iter()
            .filter(|t| t.kind.starts_with('u'))
            .all(|t| t.bitwise));
    }
}
