//! How device code names the heaps: the bindings' declarations, `vks_my_pe`,
//! `vks_slot`, `vks_is_direct`, and the word functions over this PE's own heap.

use std::fmt::Write as _;

use super::{
    vec4_unit, LibraryConfig, LIBRARY_SET, PLAIN_VIEW_OFFSET, QUAD_VIEW_OFFSET, VEC4_VIEW_OFFSET,
};

/// The job's values, read at run time from this PE's control header (slot
/// 0, chunk 0: its own heap), so that the library's text never depends on
/// the job: `vks_my_pe()`, `vks_n_pes()`, `vks_heap_words()` (words of every
/// heap device code may address) and `vks_reaches_all()`. `VKS_SELF` (what
/// the library passes as the PE of an access to this PE's own heap: a
/// constant, so that the compiler folds that access's switch over the slots
/// to slot 0), `vks_user_pe(pe)` (a PE argument of the public API: VKS_SELF
/// from a user is a bad PE, raised with its own value, and handed on as
/// another bad one), `vks_pe_number(pe)` (the PE a library argument names)
/// and `vks_slot(pe)` (PE `pe`'s place in this PE's view over the slot span
/// of the control header, `VKS_NO_SLOT` outside it: `JobView::slot_of`).
pub(super) const MY_PE_SOURCE: &str = "fn vks_my_pe() -> u32 { return vks_w_0_0[VKS_CTRL_MY_PE]; }
fn vks_n_pes() -> u32 { return vks_w_0_0[VKS_CTRL_N_PES]; }
fn vks_heap_words() -> u32 { return vks_w_0_0[VKS_CTRL_HEAP_WORDS]; }
fn vks_reaches_all() -> bool { return vks_w_0_0[VKS_CTRL_REACHES_ALL] != 0u; }
const VKS_SELF: u32 = 0xffffffffu;
const VKS_NO_SLOT: u32 = 0xffffffffu;
fn vks_pe_number(pe: u32) -> u32 { return select(pe, vks_my_pe(), pe == VKS_SELF); }
fn vks_user_pe(pe: u32) -> u32 {
    if pe == VKS_SELF { vks_raise(VKS_ERR_BAD_PE, pe, 0u); return VKS_SELF - 1u; }
    return pe;
}
fn vks_slot(pe: u32) -> u32 {
    let first = vks_w_0_0[VKS_CTRL_SLOT_FIRST];
    let k = vks_w_0_0[VKS_CTRL_SLOT_SPAN];
    let m = vks_my_pe() - first;
    let r = pe - first;
    let s = select(select(r + k - m, r - m, r >= m), VKS_NO_SLOT, r >= k);
    return select(s, 0u, pe == VKS_SELF);
}
";

/// The heap bindings' declarations: every view of every (slot, chunk).
pub(super) fn bindings(s: &mut String, cfg: &LibraryConfig, quad: bool, vec4: bool) {
    let unit = vec4_unit(cfg);
    if vec4 && cfg.vec4_u64 && cfg.int64 {
        s.push_str(
            "fn vks_unpack4(v: vec2<u64>) -> vec4<u32> {
    return vec4<u32>(u32(v.x), u32(v.x >> 32u), u32(v.y), u32(v.y >> 32u));
}
fn vks_pack2(v: vec4<u32>) -> vec2<u64> {
    return vec2<u64>(u64(v.x) | (u64(v.y) << 32u), u64(v.z) | (u64(v.w) << 32u));
}
",
        );
    }
    for (binding, slot, c) in cfg.slot_bindings() {
        if vec4 {
            let _ = writeln!(
                s,
                "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_v_{slot}_{c}: array<{unit}>;",
                VEC4_VIEW_OFFSET + binding,
            );
        }
        if quad {
            let _ = writeln!(
                s,
                "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_q_{slot}_{c}: array<atomic<u64>>;",
                QUAD_VIEW_OFFSET + binding,
            );
        }
        let _ = writeln!(
            s,
            "@group({LIBRARY_SET}) @binding({binding}) @coherent var<storage, read_write> vks_a_{slot}_{c}: array<atomic<u32>>;",
        );
        let _ = writeln!(
            s,
            "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_w_{slot}_{c}: array<u32>;",
            PLAIN_VIEW_OFFSET + binding,
        );
    }
}

/// `vks_is_direct(pe)`: whether this PE's device reaches `pe`'s heap through
/// a binding (its slot's bit in the direct-slot mask; this PE's own heap
/// folds to true), and `vks_team_spans(t)`: whether some member of `t` is
/// reached through the proxy (false without one).
pub(super) fn is_direct(s: &mut String, cfg: &LibraryConfig) {
    s.push_str(
        "fn vks_is_direct(pe: u32) -> bool {
    let s = vks_slot(pe);
    let word = vks_w_0_0[VKS_DIRECT + (min(s, VKS_SLOTS - 1u) >> 5u)];
    return (pe == VKS_SELF) | ((s < VKS_SLOTS) & (((word >> (s & 31u)) & 1u) != 0u));
}
",
    );
    if cfg.proxy {
        s.push_str(
            "fn vks_team_spans(t: VksTeam) -> bool {
    var spans = false;
    for (var i = 0u; i < t.size; i++) {
        spans = spans || !vks_is_direct(vks_team_pe(t, i));
    }
    return spans;
}
",
        );
    } else {
        s.push_str("fn vks_team_spans(t: VksTeam) -> bool { return false; }\n");
    }
}

/// `vks_volatile_load_own(a)`: a volatile load of this PE's heap word `a` (in
/// range), switching over this PE's chunks only; the pass makes it volatile.
pub(super) fn own_volatile_load(s: &mut String, cfg: &LibraryConfig) {
    let me = 0;
    // Control words live in chunk 0.
    let _ = writeln!(
        s,
        "fn vks_volatile_store_own(a: u32, x: u32) {{ vks_w_{me}_0[a] = x; }}"
    );
    own_word_fn(s, cfg, "vks_volatile_load_own", |w| {
        format!("vks_w_{me}_{w}")
    });
}

/// `fn NAME(a: u32) -> u32` returning `access(word)` for this PE's heap word
/// `a`, where `word` is `C[i]` (chunk `C`, index `i`: the chunk switch of a
/// heap bound in several bindings).
pub(super) fn own_word_fn(
    s: &mut String,
    cfg: &LibraryConfig,
    name: &str,
    access: impl Fn(String) -> String,
) {
    let _ = writeln!(s, "fn {name}(a: u32) -> u32 {{");
    if cfg.chunks == 1 {
        let _ = writeln!(s, "    return {};", access("0[a]".into()));
    } else {
        let shift = cfg.chunk_word_shift();
        let mask = (1u64 << shift) - 1;
        let _ = writeln!(s, "    switch a >> {shift}u {{");
        for c in 0..cfg.chunks {
            let _ = writeln!(
                s,
                "        case {c}u: {{ return {}; }}",
                access(format!("{c}[a & {mask}u]"))
            );
        }
        let _ = writeln!(s, "        default: {{ return 0u; }}\n    }}");
    }
    let _ = writeln!(s, "}}");
}
