//! The device atomics (OpenSHMEM's AMOs, `shmem_<TYPENAME>_atomic_*`) over
//! ishmem's standard and extended AMO type lists, generated from one table.
//!
//! | class | TYPENAMEs | operations |
//! |---|---|---|
//! | standard | `int`, `long`, `longlong`, `uint`, `ulong`, `ulonglong`, `int32`, `int64`, `uint32`, `uint64`, `size`, `ptrdiff` | fetch, set, swap, compare_swap, fetch_inc, inc, fetch_add, add |
//! | extended | `float`, `double` | fetch, set, swap |
//! | bitwise | `uint`, `ulong`, `ulonglong`, `int32`, `int64`, `uint32`, `uint64` | fetch_and, and, fetch_or, or, fetch_xor, xor |
//!
//! Addresses are *word* addresses (`SymSlice::device_addr`), like
//! `shmem_<T>_p`. A 4-byte type is one 32-bit atomic on the heap's
//! `atomic<u32>` view; an 8-byte type (C's `long` is 64-bit: LP64) is one
//! 64-bit atomic on the `atomic<u64>` view (`vks_*64`, see
//! `library::ACCESSORS_64`), at an even word address (else `ERR_BAD_ADDRESS`).
//! The 8-byte types exist only on devices with `shaderBufferInt64Atomics`
//! ([`crate::LibraryConfig::int64_atomics`]); elsewhere a kernel that calls
//! them fails to compile, naming the function. A PE behind the proxy gets
//! the same operation applied by its proxy thread (`layout::ProxyEntry`,
//! `bytes` = 8 for the 64-bit ones).
//!
//! Every call is relaxed, at device scope, and atomic with every other AMO
//! on the same word, from any PE, invocation or host thread (host atomics go
//! through the mapping's `std` atomics or the proxy, which are atomic with
//! the device's where the mapping is coherent).

use std::fmt::Write as _;

/// Which operations a TYPENAME has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// fetch, set, swap, compare_swap, inc, add.
    Standard,
    /// fetch, set, swap.
    Extended,
}

/// One AMO TYPENAME: (name, WGSL type, class, has the bitwise operations).
struct AmoType {
    name: &'static str,
    wgsl: &'static str,
    class: Class,
    bitwise: bool,
}

const fn a(name: &'static str, wgsl: &'static str, class: Class, bitwise: bool) -> AmoType {
    AmoType {
        name,
        wgsl,
        class,
        bitwise,
    }
}

/// OpenSHMEM 1.5's AMO type tables (standard, extended, bitwise), LP64.
const AMO_TYPES: [AmoType; 14] = [
    a("int", "i32", Class::Standard, false),
    a("long", "i64", Class::Standard, false),
    a("longlong", "i64", Class::Standard, false),
    a("uint", "u32", Class::Standard, true),
    a("ulong", "u64", Class::Standard, true),
    a("ulonglong", "u64", Class::Standard, true),
    a("int32", "i32", Class::Standard, true),
    a("int64", "i64", Class::Standard, true),
    a("uint32", "u32", Class::Standard, true),
    a("uint64", "u64", Class::Standard, true),
    a("size", "u64", Class::Standard, false),
    a("ptrdiff", "i64", Class::Standard, false),
    a("float", "f32", Class::Extended, false),
    a("double", "f64", Class::Extended, false),
];

impl AmoType {
    fn wide(&self) -> bool {
        self.wgsl.ends_with("64")
    }

    /// (bits → value, value → bits) wrappers, with `X` for the operand.
    fn casts(&self) -> (String, String) {
        match self.wgsl {
            "u32" | "u64" => ("X".into(), "X".into()),
            t => {
                let raw = if self.wide() { "u64" } else { "u32" };
                (format!("bitcast<{t}>(X)"), format!("bitcast<{raw}>(X)"))
            }
        }
    }
}

/// Whether kernel source `uses` calls a 64-bit AMO (so its library needs the
/// 64-bit view).
pub(crate) fn uses_64bit_atomics(uses: &str) -> bool {
    AMO_TYPES
        .iter()
        .filter(|t| t.wide())
        .any(|t| uses.contains(&format!("shmem_{}_atomic_", t.name)))
}

/// The AMO functions that `uses` mentions (`None`: all), for the 4-byte
/// types always and the 8-byte ones where `quad` (the 64-bit view exists).
pub(crate) fn device_amo(quad: bool, uses: Option<&str>) -> String {
    let mut s = String::from("\n// ---- atomics (generated: device/src/amo.rs) ----\n");
    let wanted = |f: &str| uses.map_or(true, |u| u.contains(f));
    for ty in AMO_TYPES.iter().filter(|t| quad || !t.wide()) {
        let (n, t) = (ty.name, ty.wgsl);
        let (from, to) = ty.casts();
        let from = |x: &str| from.replace('X', x);
        let to = |x: &str| to.replace('X', x);
        // The accessors and the literal one of this width.
        let (sfx, one) = if ty.wide() { ("64", "1lu") } else { ("", "1u") };
        let (load, store) = if ty.wide() {
            ("vks_load64", "vks_store64")
        } else {
            ("vks_relaxed_load", "vks_relaxed_store")
        };
        let mut f = |name: String, body: String| {
            if wanted(&name) {
                // The user's PE goes through vks_user_pe: VKS_SELF is the
                // library's own word for this PE, never a user's.
                let body = body
                    .replace("NAME", &name)
                    .replace("(pe, ", "(vks_user_pe(pe), ");
                let _ = writeln!(s, "{body}");
            }
        };
        f(
            format!("shmem_{n}_atomic_fetch"),
            format!(
                "fn NAME(source: u32, pe: u32) -> {t} {{ return {}; }}",
                from(&format!("{load}(pe, source)"))
            ),
        );
        f(
            format!("shmem_{n}_atomic_set"),
            format!(
                "fn NAME(dest: u32, value: {t}, pe: u32) {{ {store}(pe, dest, {}); }}",
                to("value")
            ),
        );
        f(
            format!("shmem_{n}_atomic_swap"),
            format!(
                "fn NAME(dest: u32, value: {t}, pe: u32) -> {t} {{ return {}; }}",
                from(&format!("vks_swap{sfx}(pe, dest, {})", to("value")))
            ),
        );
        if ty.class == Class::Standard {
            f(
                format!("shmem_{n}_atomic_compare_swap"),
                format!(
                    "fn NAME(dest: u32, cond: {t}, value: {t}, pe: u32) -> {t} {{ return {}; }}",
                    from(&format!(
                        "vks_compare_swap{sfx}(pe, dest, {}, {})",
                        to("cond"),
                        to("value")
                    ))
                ),
            );
            for (op, operand) in [("add", "value"), ("inc", "")] {
                let (param, x) = if operand.is_empty() {
                    (String::new(), one.to_string())
                } else {
                    (format!(", value: {t}"), to("value"))
                };
                f(
                    format!("shmem_{n}_atomic_fetch_{op}"),
                    format!(
                        "fn NAME(dest: u32{param}, pe: u32) -> {t} {{ return {}; }}",
                        from(&format!("vks_fetch_add{sfx}(pe, dest, {x})"))
                    ),
                );
                f(
                    format!("shmem_{n}_atomic_{op}"),
                    format!("fn NAME(dest: u32{param}, pe: u32) {{ vks_fetch_add{sfx}(pe, dest, {x}); }}"),
                );
            }
        }
        if ty.bitwise {
            for op in ["and", "or", "xor"] {
                f(
                    format!("shmem_{n}_atomic_fetch_{op}"),
                    format!(
                        "fn NAME(dest: u32, value: {t}, pe: u32) -> {t} {{ return {}; }}",
                        from(&format!("vks_fetch_{op}{sfx}(pe, dest, {})", to("value")))
                    ),
                );
                f(
                    format!("shmem_{n}_atomic_{op}"),
                    format!(
                        "fn NAME(dest: u32, value: {t}, pe: u32) {{ vks_fetch_{op}{sfx}(pe, dest, {}); }}",
                        to("value")
                    ),
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LibraryConfig;

    fn cfg(proxy: bool, int64_atomics: bool) -> LibraryConfig {
        LibraryConfig {
            slots: 8,
            chunks: 1,
            max_binding_bytes: 128 << 20,
            int64: true,
            float64: true,
            int64_atomics,
            divergent_fences: true,
            loop_cap: false,
            row_lanes: 0,
            proxy,
            vec4_u64: false,
        }
    }

    /// Every operation of every AMO type, direct and through the proxy,
    /// compiles (parses, validates, and passes the SPIR-V pass).
    #[test]
    fn every_amo_compiles_direct_and_proxied() {
        let mut calls = String::new();
        for ty in &AMO_TYPES {
            let (n, t) = (ty.name, ty.wgsl);
            let v = format!("{t}(1)");
            let _ = writeln!(calls, "    var x_{n} = shmem_{n}_atomic_fetch(2u, 1u);");
            let _ = writeln!(calls, "    shmem_{n}_atomic_set(2u, {v}, 1u);");
            let _ = writeln!(calls, "    x_{n} = shmem_{n}_atomic_swap(2u, {v}, 1u);");
            if ty.class == Class::Standard {
                let _ = writeln!(
                    calls,
                    "    x_{n} = shmem_{n}_atomic_compare_swap(2u, {v}, {v}, 1u);"
                );
                let _ = writeln!(
                    calls,
                    "    x_{n} = shmem_{n}_atomic_fetch_add(2u, {v}, 1u);"
                );
                let _ = writeln!(calls, "    x_{n} = shmem_{n}_atomic_fetch_inc(2u, 1u);");
                let _ = writeln!(calls, "    shmem_{n}_atomic_add(2u, {v}, 1u);");
                let _ = writeln!(calls, "    shmem_{n}_atomic_inc(2u, 1u);");
            }
            if ty.bitwise {
                for op in ["and", "or", "xor"] {
                    let _ = writeln!(
                        calls,
                        "    x_{n} = shmem_{n}_atomic_fetch_{op}(2u, {v}, 1u);"
                    );
                    let _ = writeln!(calls, "    shmem_{n}_atomic_{op}(2u, {v}, 1u);");
                }
            }
        }
        let src = format!("@compute @workgroup_size(1) fn main() {{\n{calls}}}\n");
        for proxy in [false, true] {
            let c = cfg(proxy, true);
            let k = crate::link_kernel(&src, "amo", None, &c).expect("links");
            assert!(!k.spirv.is_empty());
        }
    }

    /// Without 64-bit atomics the 4-byte types remain and the 8-byte ones
    /// are absent; with them, the 64-bit view is declared only for kernels
    /// that call an 8-byte AMO.
    #[test]
    fn the_64bit_view_follows_the_feature_and_the_kernel() {
        let narrow = cfg(false, false);
        let src = crate::library::library_source_for(&narrow, None);
        assert!(src.contains("fn shmem_int_atomic_fetch_add("));
        assert!(!src.contains("fn shmem_long_atomic_fetch_add("));
        assert!(!src.contains("vks_q_"));
        let wide = cfg(false, true);
        let user = "fn f() { shmem_int_atomic_inc(0u, 0u); }";
        let src = crate::library::library_source_for(&wide, Some(user));
        assert!(!src.contains("vks_q_"), "no 8-byte AMO called");
        let user = "fn f() { shmem_size_atomic_inc(0u, 0u); }";
        let src = crate::library::library_source_for(&wide, Some(user));
        assert!(src.contains("var<storage, read_write> vks_q_1_0: array<atomic<u64>>"));
        assert!(src.contains(
            "fn shmem_size_atomic_inc(dest: u32, pe: u32) { vks_fetch_add64(vks_user_pe(pe), dest, 1lu); }"
        ));
        assert!(
            !src.contains("fn shmem_long_atomic_inc("),
            "only what the kernel names"
        );
    }
}
