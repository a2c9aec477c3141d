//! The typed device API: `shmem_<TYPE>_g`/`_p`, and the 32-bit integers'
//! acquire/release and `wait_until`, instantiated from the table of element types.

use std::fmt::Write as _;

/// The element types of the typed API: (TYPENAME, WGSL type, words, needs).
#[derive(Clone, Copy)]
pub(super) struct Ty {
    name: &'static str,
    wgsl: &'static str,
    /// 1 or 2 words.
    words: u32,
    /// Integer type with atomics (32-bit only).
    atomic: bool,
    signed: bool,
    pub(super) needs_int64: bool,
    pub(super) needs_float64: bool,
}

pub(super) const TYPES: &[Ty] = &[
    Ty {
        name: "int32",
        wgsl: "i32",
        words: 1,
        atomic: true,
        signed: true,
        needs_int64: false,
        needs_float64: false,
    },
    Ty {
        name: "uint32",
        wgsl: "u32",
        words: 1,
        atomic: true,
        signed: false,
        needs_int64: false,
        needs_float64: false,
    },
    Ty {
        name: "float",
        wgsl: "f32",
        words: 1,
        atomic: false,
        signed: false,
        needs_int64: false,
        needs_float64: false,
    },
    Ty {
        name: "int64",
        wgsl: "i64",
        words: 2,
        atomic: false,
        signed: true,
        needs_int64: true,
        needs_float64: false,
    },
    Ty {
        name: "uint64",
        wgsl: "u64",
        words: 2,
        atomic: false,
        signed: false,
        needs_int64: true,
        needs_float64: false,
    },
    Ty {
        name: "double",
        wgsl: "f64",
        words: 2,
        atomic: false,
        signed: false,
        needs_int64: true,
        needs_float64: true,
    },
];

/// The typed API for one element type: `shmem_T_g/p` for every type, the
/// atomics, acquire/release and `wait_until` for 32-bit integers.
pub(super) fn typed(s: &mut String, ty: &Ty) {
    let (n, t) = (ty.name, ty.wgsl);
    if ty.words == 1 {
        let from = if t == "u32" {
            "w".to_string()
        } else {
            format!("bitcast<{t}>(w)")
        };
        let to = if t == "u32" {
            "value".to_string()
        } else {
            "bitcast<u32>(value)".to_string()
        };
        let _ = write!(
            s,
            "fn shmem_{n}_g(source: u32, pe: u32) -> {t} {{ let w = vks_plain_load(vks_user_pe(pe), source); return {from}; }}
fn shmem_{n}_p(dest: u32, value: {t}, pe: u32) {{ vks_plain_store(vks_user_pe(pe), dest, {to}); }}
"
        );
    } else {
        let (from, to) = match t {
            "u64" => ("bits", "value"),
            "i64" => ("bitcast<i64>(bits)", "bitcast<u64>(value)"),
            _ => ("bitcast<f64>(bits)", "bitcast<u64>(value)"),
        };
        let _ = write!(
            s,
            "fn shmem_{n}_g(source: u32, pe: u32) -> {t} {{
    let bits = u64(vks_plain_load(vks_user_pe(pe), source)) | (u64(vks_plain_load(vks_user_pe(pe), source + 1u)) << 32u);
    return {from};
}}
fn shmem_{n}_p(dest: u32, value: {t}, pe: u32) {{
    let bits = {to};
    vks_plain_store(vks_user_pe(pe), dest, u32(bits));
    vks_plain_store(vks_user_pe(pe), dest + 1u, u32(bits >> 32u));
}}
"
        );
    }
    if !ty.atomic {
        return;
    }
    let (from, to) = if ty.signed {
        ("bitcast<i32>", "bitcast<u32>")
    } else {
        ("", "")
    };
    let cmp = if ty.signed { "true" } else { "false" };
    let _ = write!(
        s,
        "fn shmemx_{n}_load_acquire(source: u32, pe: u32) -> {t} {{ return {from}(vks_acquire_load(vks_user_pe(pe), source)); }}
fn shmemx_{n}_store_release(dest: u32, value: {t}, pe: u32) {{ vks_store_release(vks_user_pe(pe), dest, {to}(value)); }}
fn shmem_{n}_wait_until(ivar: u32, cmp: u32, value: {t}) -> bool {{ return vks_wait_cmp(ivar, cmp, {to}(value), {cmp}); }}
"
    );
}
