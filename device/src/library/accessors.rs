//! The heap accessors (`vks_plain_load`, `vks_fetch_add`, ...): their table, and
//! the emitter that instantiates each per (PE slot, chunk), with the proxy's path.

use std::fmt::Write as _;

use super::LibraryConfig;

/// The accessors instantiated per (PE, chunk): (name, view, extra params, return
/// type, body with `{v}` for the element, the same through the proxy for a PE
/// outside `direct`).
/// (name, view, extra params, return type, body, proxied body).
pub(super) type Accessor = (
    &'static str,
    char,
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
);

pub(super) const ACCESSORS: &[Accessor] = &[
    (
        "vks_plain_load",
        'w',
        "",
        Some("u32"),
        "return {v};",
        "return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u);",
    ),
    (
        "vks_plain_store",
        'w',
        ", x: u32",
        None,
        "{v} = x;",
        "vks_px_post(VKS_PX_STORE, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_relaxed_load",
        'a',
        "",
        Some("u32"),
        "return atomicLoad(&{v});",
        "return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u);",
    ),
    (
        "vks_relaxed_store",
        'a',
        ", x: u32",
        None,
        "atomicStore(&{v}, x);",
        "vks_px_post(VKS_PX_STORE, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_acquire_load",
        'a',
        "",
        Some("u32"),
        "return atomicLoad(&{v});",
        "return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u);",
    ),
    (
        "vks_fetch_add",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicAdd(&{v}, x);",
        "return vks_px_call(VKS_PX_ADD, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_fetch_and",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicAnd(&{v}, x);",
        "return vks_px_call(VKS_PX_AND, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_fetch_or",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicOr(&{v}, x);",
        "return vks_px_call(VKS_PX_OR, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_fetch_xor",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicXor(&{v}, x);",
        "return vks_px_call(VKS_PX_XOR, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_swap",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicExchange(&{v}, x);",
        "return vks_px_call(VKS_PX_SWAP, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_compare_swap",
        'a',
        ", c: u32, x: u32",
        Some("u32"),
        "return atomicCompareExchangeWeak(&{v}, c, x).old_value;",
        "return vks_px_call(VKS_PX_CAS, pe, a, 0u, 0u, x, c);",
    ),
];

/// The 64-bit atomics (view `q`, word addresses that must be even), only
/// with [`LibraryConfig::int64_atomics`]. Through the proxy they are one
/// request with `bytes` = 8 (see `layout::ProxyEntry`). A 64-bit store is an
/// exchange there, so that it is ordered like the other atomics.
pub(super) const ACCESSORS_64: &[Accessor] = &[
    (
        "vks_load64",
        'q',
        "",
        Some("u64"),
        "return atomicLoad(&{v});",
        "return vks_px_call64(VKS_PX_LOAD, pe, a, 0lu, 0lu);",
    ),
    (
        "vks_store64",
        'q',
        ", x: u64",
        None,
        "atomicStore(&{v}, x);",
        "vks_px_call64(VKS_PX_SWAP, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_add64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicAdd(&{v}, x);",
        "return vks_px_call64(VKS_PX_ADD, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_and64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicAnd(&{v}, x);",
        "return vks_px_call64(VKS_PX_AND, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_or64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicOr(&{v}, x);",
        "return vks_px_call64(VKS_PX_OR, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_xor64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicXor(&{v}, x);",
        "return vks_px_call64(VKS_PX_XOR, pe, a, x, 0lu);",
    ),
    (
        "vks_swap64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicExchange(&{v}, x);",
        "return vks_px_call64(VKS_PX_SWAP, pe, a, x, 0lu);",
    ),
    (
        "vks_compare_swap64",
        'q',
        ", c: u64, x: u64",
        Some("u64"),
        "return atomicCompareExchangeWeak(&{v}, c, x).old_value;",
        "return vks_px_call64(VKS_PX_CAS, pe, a, x, c);",
    ),
];
pub(super) fn accessor(
    s: &mut String,
    cfg: &LibraryConfig,
    (name, view, params, ret, body, proxied): &Accessor,
    with_proxy: bool,
) {
    let name = if with_proxy {
        name.to_string()
    } else {
        name.replacen("vks_", "vks_d_", 1)
    };
    let chunks = cfg.chunks;
    let arrow = ret.map(|r| format!(" -> {r}")).unwrap_or_default();
    let fallback = ret.map_or("return;".to_string(), |r| format!("return {r}();"));
    let _ = writeln!(s, "fn {name}(pe: u32, a: u32{params}){arrow} {{");
    // Every check in one test and one `vks_raise`: a PE out of the job
    // (named as given), an address out of the heap or, in the 64-bit view,
    // odd (named with the PE's number), a PE not reached directly where no
    // proxy carries the access (as given). Each raise is three atomics,
    // which llvmpipe expands per lane into branches, so a raise per check
    // makes kernels that call many accessors far slower to compile. `&` and `|`
    // on bools do not branch (WGSL wants their comparisons in parentheses).
    let (odd, element) = if *view == 'q' {
        (" | ((a & 1u) != 0u)", "i >> 1u")
    } else {
        ("", "i")
    };
    let unreachable = if cfg.proxy && with_proxy {
        "0u"
    } else {
        "select(0u, VKS_ERR_UNREACHABLE, !vks_is_direct(pe))"
    };
    let _ = writeln!(
        s,
        "    let bad_pe = (pe >= vks_n_pes()) & (pe != VKS_SELF);
    let bad_addr = (a >= vks_heap_words()){odd};
    let err = select(select({unreachable}, VKS_ERR_BAD_ADDRESS, bad_addr), VKS_ERR_BAD_PE, bad_pe);
    if err != 0u {{ vks_raise(err, select(pe, vks_pe_number(pe), err == VKS_ERR_BAD_ADDRESS), a); {fallback} }}"
    );
    // Two levels: the PE's slot, then the chunk of `a`. `vks_slot(VKS_SELF)`
    // folds to 0, so an access to this PE's own heap (most of the library's)
    // compiles to its chunk switch alone, without the other PEs' cases or
    // the proxy's path (one switch over (slot, chunk) pairs kept them all
    // in every such access of a heap in several chunks: the selector was
    // not a constant). `a` is below vks_heap_words() here, so the last chunk
    // is the chunk switch's default.
    let (index, chunk) = if chunks == 1 {
        ("a".to_string(), String::new())
    } else {
        let shift = cfg.chunk_word_shift();
        (
            format!("a & {}u", (1u64 << shift) - 1),
            format!("a >> {shift}u"),
        )
    };
    let _ = writeln!(s, "    let i = {index};");
    // A case per slot. A PE not reached directly was raised above, or here
    // goes to the proxy (the default): its slot, if it has one, is padding
    // bound to this PE's own heap.
    let selector = if cfg.proxy && with_proxy {
        "select(VKS_NO_SLOT, vks_slot(pe), vks_is_direct(pe))"
    } else {
        "vks_slot(pe)"
    };
    let _ = writeln!(s, "    switch {selector} {{");
    for slot in 0..cfg.slots {
        let access = |c: u32| body.replace("{v}", &format!("vks_{view}_{slot}_{c}[{element}]"));
        if chunks == 1 {
            let _ = writeln!(s, "        case {slot}u: {{ {} }}", access(0));
            continue;
        }
        let _ = writeln!(s, "        case {slot}u: {{\n            switch {chunk} {{");
        for c in 0..chunks {
            let label = if c + 1 == chunks {
                "default".to_string()
            } else {
                format!("case {c}u")
            };
            let _ = writeln!(s, "                {label}: {{ {} }}", access(c));
        }
        let _ = writeln!(s, "            }}\n        }}");
    }
    if cfg.proxy && with_proxy {
        let _ = writeln!(s, "        default: {{ {proxied} }}");
    } else {
        // Raised above.
        let _ = writeln!(s, "        default: {{}}");
    }
    let _ = writeln!(s, "    }}");
    if let Some(r) = ret {
        let _ = writeln!(s, "    return {r}();");
    }
    let _ = writeln!(s, "}}");
}

#[cfg(test)]
mod tests {
    use crate::library::library_source;
    use crate::library::tests::shape;

    /// One check and one raise, then a case per slot (padding included: the
    /// mask, not the text, says which PEs are reached), then the chunk;
    /// with a proxy, a PE not reached directly goes to the ring.
    #[test]
    fn accessors_check_once_then_switch_over_every_slot() {
        let (c, _) = shape(3, 0, &[0, 2], 256 << 20, 128 << 20);
        let c = crate::LibraryConfig { proxy: false, ..c };
        let src = library_source(&c);
        let load = src
            .split("fn vks_plain_load(pe: u32, a: u32) -> u32 {\n")
            .nth(1)
            .and_then(|f| f.split("\n}\n").next())
            .expect("vks_plain_load");
        let head = "    let bad_pe = (pe >= vks_n_pes()) & (pe != VKS_SELF);
    let bad_addr = (a >= vks_heap_words());
    let err = select(select(select(0u, VKS_ERR_UNREACHABLE, !vks_is_direct(pe)), VKS_ERR_BAD_ADDRESS, bad_addr), VKS_ERR_BAD_PE, bad_pe);
    if err != 0u { vks_raise(err, select(pe, vks_pe_number(pe), err == VKS_ERR_BAD_ADDRESS), a); return u32(); }
    let i = a & 33554431u;
    switch vks_slot(pe) {
        case 0u: {
            switch a >> 25u {
                case 0u: { return vks_w_0_0[i]; }
                default: { return vks_w_0_1[i]; }
            }
        }
";
        assert!(load.starts_with(head), "{load}");
        assert!(load.contains("                default: { return vks_w_3_1[i]; }"));
        assert!(load.ends_with("        default: {}\n    }\n    return u32();"));
        assert!(!src.contains("vks_a_4_0"));
        // With a proxy the same access becomes a ring request; the direct-only
        // accessors (vks_d_*) keep raising.
        let c = crate::LibraryConfig { proxy: true, ..c };
        let src = library_source(&c);
        assert!(
            src.contains("default: { return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u); }")
        );
        assert!(src.contains("switch select(VKS_NO_SLOT, vks_slot(pe), vks_is_direct(pe)) {"));
        assert!(src.contains("fn vks_d_plain_load(pe: u32, a: u32) -> u32 {"));
    }
}
