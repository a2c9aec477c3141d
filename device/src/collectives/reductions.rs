//! The per-kind reduction code of every library: `vks_combine_<kind>`, the vec4
//! accumulations, and the drivers `vks_reduce_`, `vks_scan_`, `vks_ll_reduce_<kind>`.

use std::fmt::Write as _;

use super::{is_half, Kind};
use crate::LibraryConfig;

/// `vks_acc_vec4_<kind>(op, fresh, spe, d4, s4, n4, tid, nth)`: this PE's
/// dest vec4s become PE `spe`'s source vec4s (`fresh`) or their combination
/// with them; false (nothing done) without the vec4 view. The reductions'
/// bulk: every member's source is combined into this PE's dest, one
/// member at a time, each vec4 by the same invocation every time (see
/// `library::vec4_pieces`).
pub(super) fn vec4_accumulate(s: &mut String, cfg: &LibraryConfig, kind: &Kind, vec4: bool) {
    let n = kind.name;
    if vec4 && crate::library::vec4_unit(cfg) == "vec2<u64>" {
        // The view's elements as loaded: two 64-bit lanes, or four words
        // unpacked and packed again.
        let body = if kind.bytes == 8 {
            format!(
                "return vec2<u64>(vks_combine_{n}(op, a.x, b.x), vks_combine_{n}(op, a.y, b.y));"
            )
        } else {
            let c = word_combine(kind);
            format!(
                "let x = vks_unpack4(a);
    let y = vks_unpack4(b);
    return vks_pack2(vec4<u32>({c}(op, x.x, y.x), {c}(op, x.y, y.y), {c}(op, x.z, y.z), {c}(op, x.w, y.w)));"
            )
        };
        let _ = writeln!(
            s,
            "fn vks_comb4_{n}(op: u32, a: vec2<u64>, b: vec2<u64>) -> vec2<u64> {{
    {body}
}}"
        );
    } else if kind.bytes == 8 {
        // Two 64-bit lanes.
        let _ = writeln!(
            s,
            "fn vks_comb4_{n}(op: u32, a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {{
    let lo = vks_combine_{n}(op, u64(a.x) | (u64(a.y) << 32u), u64(b.x) | (u64(b.y) << 32u));
    let hi = vks_combine_{n}(op, u64(a.z) | (u64(a.w) << 32u), u64(b.z) | (u64(b.w) << 32u));
    return vec4<u32>(u32(lo), u32(lo >> 32u), u32(hi), u32(hi >> 32u));
}}"
        );
    } else {
        let c = word_combine(kind);
        let _ = writeln!(
            s,
            "fn vks_comb4_{n}(op: u32, a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {{
    return vec4<u32>({c}(op, a.x, b.x), {c}(op, a.y, b.y), {c}(op, a.z, b.z), {c}(op, a.w, b.w));
}}"
        );
    }
    // This PE's own heap is slot 0.
    let me = 0;
    crate::library::vec4_pieces(
        s,
        cfg,
        vec4,
        &format!("fn vks_acc_vec4_{n}(op: u32, fresh: bool, spe: u32, d4: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool"),
        "spe",
        &|p, sc, dc| {
            format!(
                "let b = vks_v_{p}_{sc}[si + i]; vks_v_{me}_{dc}[di + i] = select(vks_comb4_{n}(op, vks_v_{me}_{dc}[di + i], b), b, fresh);"
            )
        },
        crate::library::Chunk::Source,
    );
    // The first step of a reduction over two or more members, fused: this
    // PE's dest vec4s become the combination of this PE's and PE `spe`'s
    // source vec4s (the same symmetric offsets, so the same chunk), and with
    // `push` (a team of two, where `spe` is the only other member) are stored
    // into `spe`'s dest too. Two members then read each source once and write
    // each dest once (8 bytes moved per reduced byte of the share, where a
    // fresh copy, a read-modify-write pass and a push moved 14).
    crate::library::vec4_pieces(
        s,
        cfg,
        vec4,
        &format!("fn vks_pair_vec4_{n}(op: u32, push: bool, spe: u32, d4: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool"),
        "spe",
        &|p, sc, dc| {
            format!(
                "let r = vks_comb4_{n}(op, vks_v_{me}_{sc}[si + i], vks_v_{p}_{sc}[si + i]); vks_v_{me}_{dc}[di + i] = r; if push {{ vks_v_{p}_{dc}[di + i] = r; }}"
            )
        },
        crate::library::Chunk::Source,
    );
}

/// Whether a kernel whose source is `uses` (`None`: any kernel) may need the
/// drivers of `kind`: every kind but the half-precision ones, which only a
/// kernel that names them (its TYPENAME or its kind, as the host and queue
/// kernels name their drivers) gets, so that the other kernels do not compile
/// their code (every compile is per PE and slow on llvmpipe).
pub(super) fn kind_used(kind: &Kind, uses: Option<&str>) -> bool {
    let Some(u) = uses.filter(|_| is_half(kind)) else {
        return true;
    };
    let typename = if kind.name == "f16" {
        "float16"
    } else {
        "bfloat16"
    };
    u.contains(&format!("_{}", kind.name)) || u.contains(typename)
}

/// `vks_combine_<kind>(op, a, b)`: `a op b` on raw bits (u32 lanes zero-extended,
/// or u64).
pub(super) fn combine(s: &mut String, kind: &Kind) {
    let n = kind.name;
    let bits = kind.bytes * 8;
    let raw = if kind.bytes == 8 { "u64" } else { "u32" };
    // (bits -> value, value -> bits)
    let (from, to): (String, &str) = match (kind.float, kind.signed, kind.bytes) {
        (true, _, 2) => (
            format!("vks_{n}_value(X)"),
            if n == "f16" {
                "vks_f16_bits(X)"
            } else {
                "vks_bf16_bits(X)"
            },
        ),
        (true, _, 4) => ("bitcast<f32>(X)".into(), "bitcast<u32>(X)"),
        (true, _, _) => ("bitcast<f64>(X)".into(), "bitcast<u64>(X)"),
        (false, true, 8) => ("bitcast<i64>(X)".into(), "bitcast<u64>(X)"),
        (false, true, 4) => ("bitcast<i32>(X)".into(), "bitcast<u32>(X)"),
        (false, true, _) => (
            format!("(bitcast<i32>(X << {0}u) >> {0}u)", 32 - bits),
            "bitcast<u32>(X)",
        ),
        (false, false, _) => ("X".into(), "X"),
    };
    let a = from.replace('X', "a");
    let b = from.replace('X', "b");
    let _ = writeln!(
        s,
        "fn vks_combine_{n}(op: u32, a: {raw}, b: {raw}) -> {raw} {{"
    );
    let _ = writeln!(s, "    let x = {a};\n    let y = {b};\n    var r = x;");
    let _ = writeln!(s, "    switch op {{");
    if !kind.float {
        let _ = writeln!(s, "        case 0u: {{ r = x & y; }}");
        let _ = writeln!(s, "        case 1u: {{ r = x | y; }}");
        let _ = writeln!(s, "        case 2u: {{ r = x ^ y; }}");
    }
    let _ = writeln!(s, "        case 3u: {{ r = max(x, y); }}");
    let _ = writeln!(s, "        case 4u: {{ r = min(x, y); }}");
    let _ = writeln!(s, "        case 5u: {{ r = x + y; }}");
    let _ = writeln!(s, "        case 6u: {{ r = x * y; }}");
    let _ = writeln!(s, "        default: {{ }}\n    }}");
    let _ = writeln!(s, "    return {};\n}}", to.replace('X', "r"));
    if kind.bytes < 4 {
        // Lane by lane over a packed word, unrolled (no loop iterations spent);
        // an integer sum lane-wise in one go (the op is a constant once the
        // typed call is inlined, so the branch folds).
        let mask = (1u32 << bits) - 1;
        let _ = writeln!(
            s,
            "fn vks_lanes_{n}(op: u32, a: u32, b: u32) -> u32 {{\n    var r = 0u;"
        );
        if !kind.float {
            let _ = writeln!(s, "    if op == 5u {{ return {}; }}", swar_sum(bits));
        }
        for l in (0..32).step_by(bits as usize) {
            let _ = writeln!(
                s,
                "    r |= (vks_combine_{n}(op, (a >> {l}u) & {mask}u, (b >> {l}u) & {mask}u) & {mask}u) << {l}u;"
            );
        }
        let _ = writeln!(s, "    return r;\n}}");
    }
}

/// The lane-wise wrapping sum of the words `a` and `b` in lanes of `bits` (8
/// or 16) bits, with no carry across lanes (a WGSL expression): the lanes'
/// low bits added with the top bits masked out, the top bits by xor.
pub(super) fn swar_sum(bits: u32) -> String {
    let hi: u32 = if bits == 8 { 0x8080_8080 } else { 0x8000_8000 };
    format!("((a & {lo}u) + (b & {lo}u)) ^ ((a ^ b) & {hi}u)", lo = !hi)
}

/// `vks_reduce_<kind>`: this PE's share of a reduction over team `t`, written to
/// every member's `dest` (a reduce-scatter and an allgather in one pass: each
/// member combines one slice of the elements from every member's source and
/// stores the result into every member's dest, so every element is read once from
/// each source and written once to each dest). In place is fine: an element is
/// read and written by the same invocation only.
///
/// `vks_reduce_own_<kind>`: the same loop for a reduce-scatter (UCC): this PE
/// combines all `nelems` elements at `s` of every member into its own `dest`
/// only (the caller points `s` at this member's block).
pub(super) fn reduce(s: &mut String, kind: &Kind) {
    ll_reduce(s, kind);
    reduce_fn(s, kind, true);
    reduce_fn(s, kind, false);
}

/// One of the two functions of [`reduce`]: `to_all`, the shared form.
fn reduce_fn(s: &mut String, kind: &Kind, to_all: bool) {
    let n = kind.name;
    let name = if to_all {
        format!("vks_reduce_{n}")
    } else {
        format!("vks_reduce_own_{n}")
    };
    let share = |items: &str| {
        if to_all {
            format!("vks_share({items}, t.size, t.me)")
        } else {
            format!("vec2<u32>(0u, {items})")
        }
    };
    // The stores of one result, to every member or to this PE.
    let (store_open, store_close) = if to_all {
        (
            "for (var j = 0u; j < t.size; j++) {\n            let pe = vks_team_pe(t, j);",
            "}",
        )
    } else {
        ("{\n            let pe = VKS_SELF;", "}")
    };
    // Source and dest equally placed in their 16 bytes: the middle as vec4s
    // (accumulated in this PE's dest, this PE's source first, so in place
    // is safe: nobody else reads this PE's share of its own source; then
    // pushed to the other members' dests), head and tail word by word.
    let share4 = if to_all {
        "vks_share(mid >> 4u, t.size, t.me)"
    } else {
        "vec2<u32>(0u, mid >> 4u)"
    };
    let push = if to_all {
        "for (var j = 0u; j < t.size; j++) {
                let pe = vks_team_pe(t, j);
                if pe != vks_my_pe() { vks_push_vec4(pe, d4, d4, n4, tid, nth); }
            }"
    } else {
        ""
    };
    let _ = write!(
        s,
        "fn {name}(t: VksTeam, op: u32, d: u32, s: u32, nelems: u32, tid: u32, nth: u32) {{
    let n = nelems * {es}u;
    if (d & 15u) == (s & 15u) && n >= 64u {{
        let head = (16u - (d & 15u)) & 15u;
        let mid = (n - head) & ~15u;
        let v = {share4};
        let d4 = ((d + head) >> 4u) + v.x;
        let s4 = ((s + head) >> 4u) + v.x;
        let n4 = v.y - v.x;
        // This PE's source first, then the others' in team order: with a
        // second member, the first pass combines the two sources (and, in a
        // team of two, pushes the result too).
        let j0 = select(0u, 1u, t.me == 0u);
        let fused = t.size > 1u && vks_pair_vec4_{n}(op, {pair_push}, vks_team_pe(t, j0), d4, s4, n4, tid, nth);
        if fused || vks_acc_vec4_{n}(op, true, VKS_SELF, d4, s4, n4, tid, nth) {{
            for (var j = select(0u, j0 + 1u, fused); j < t.size; j++) {{
                let pe = vks_team_pe(t, j);
                if pe != vks_my_pe() {{ vks_acc_vec4_{n}(op, false, pe, d4, s4, n4, tid, nth); }}
            }}
            if !(fused && {pair_push}) {{
                {push}
            }}
            {name}_words(t, op, d, s, head / {es}u, tid, nth);
            let done = head + mid;
            {name}_words(t, op, d + done, s + done, (n - done) / {es}u, tid, nth);
            return;
        }}
    }}
    {name}_words(t, op, d, s, nelems, tid, nth);
}}
",
        es = kind.bytes,
        pair_push = if to_all { "t.size == 2u" } else { "false" },
    );
    if kind.bytes == 8 {
        let _ = write!(
            s,
            "fn {name}_words(t: VksTeam, op: u32, d: u32, s: u32, nelems: u32, tid: u32, nth: u32) {{
    let share = {share};
    for (var k = share.x + tid; k < share.y; k += nth) {{
        let sw = (s >> 2u) + 2u * k;
        var acc = vks_load_u64(vks_team_pe(t, 0u), sw);
        for (var j = 1u; j < t.size; j++) {{
            acc = vks_combine_{n}(op, acc, vks_load_u64(vks_team_pe(t, j), sw));
        }}
        let dw = (d >> 2u) + 2u * k;
        {store_open}
            vks_d_plain_store(pe, dw, u32(acc));
            vks_d_plain_store(pe, dw + 1u, u32(acc >> 32u));
        {store_close}
    }}
}}
",
            share = share("nelems")
        );
        return;
    }
    let combine = word_combine(kind);
    let _ = write!(
        s,
        "fn {name}_words(t: VksTeam, op: u32, d: u32, s: u32, nelems: u32, tid: u32, nth: u32) {{
    let n = nelems * {es}u;
    if n == 0u {{
        return;
    }}
    let w0 = d >> 2u;
    let share = {share};
    for (var i = share.x + tid; i < share.y; i += nth) {{
        let w = w0 + i;
        let lo = max(d, w * 4u);
        let hi = min(d + n, w * 4u + 4u);
        let sb = lo - d + s;
        var acc = vks_load_bytes(vks_team_pe(t, 0u), sb, hi - lo);
        for (var j = 1u; j < t.size; j++) {{
            acc = {combine}(op, acc, vks_load_bytes(vks_team_pe(t, j), sb, hi - lo));
        }}
        let v = acc << ((lo & 3u) * 8u);
        let mask = vks_byte_mask(lo & 3u, hi - w * 4u);
        {store_open}
            vks_store_masked(pe, w, v, mask);
        {store_close}
    }}
}}
",
        es = kind.bytes,
        share = share("((d + n - 1u) >> 2u) - w0 + 1u")
    );
}

/// The combine of one 32-bit word of `kind` (< 8 bytes): the element's own
/// for 4-byte kinds, lane by lane for 1- and 2-byte ones.
fn word_combine(kind: &Kind) -> String {
    if kind.bytes == 4 {
        format!("vks_combine_{}", kind.name)
    } else {
        format!("vks_lanes_{}", kind.name)
    }
}

/// `vks_scan_<kind>`: this PE's share of a prefix sum over team `t` (`excl`:
/// exclusive, member 0 gets zeros). Each member takes a slice of the
/// elements; for each, it walks the members in team order, reading member
/// j's source and writing member j's dest with the running sum, so every
/// element is read once from each source and written once to each dest, by
/// one invocation: in place (dest = source) is safe.
pub(super) fn scan_fn(s: &mut String, kind: &Kind) {
    let n = kind.name;
    if kind.bytes == 8 {
        let _ = write!(
            s,
            "fn vks_scan_{n}(t: VksTeam, excl: bool, d: u32, s: u32, nelems: u32, tid: u32, nth: u32) {{
    let share = vks_share(nelems, t.size, t.me);
    for (var k = share.x + tid; k < share.y; k += nth) {{
        let sw = (s >> 2u) + 2u * k;
        let dw = (d >> 2u) + 2u * k;
        var acc = 0lu;
        for (var j = 0u; j < t.size; j++) {{
            let pe = vks_team_pe(t, j);
            let sum = vks_combine_{n}(5u, acc, vks_load_u64(pe, sw));
            let out = select(sum, acc, excl);
            vks_d_plain_store(pe, dw, u32(out));
            vks_d_plain_store(pe, dw + 1u, u32(out >> 32u));
            acc = sum;
        }}
    }}
}}
"
        );
        return;
    }
    let combine = word_combine(kind);
    let _ = write!(
        s,
        "fn vks_scan_{n}(t: VksTeam, excl: bool, d: u32, s: u32, nelems: u32, tid: u32, nth: u32) {{
    let n = nelems * {es}u;
    if n == 0u {{
        return;
    }}
    let w0 = d >> 2u;
    let share = vks_share(((d + n - 1u) >> 2u) - w0 + 1u, t.size, t.me);
    for (var i = share.x + tid; i < share.y; i += nth) {{
        let w = w0 + i;
        let lo = max(d, w * 4u);
        let hi = min(d + n, w * 4u + 4u);
        let sb = lo - d + s;
        let mask = vks_byte_mask(lo & 3u, hi - w * 4u);
        var acc = 0u;
        for (var j = 0u; j < t.size; j++) {{
            let pe = vks_team_pe(t, j);
            let sum = {combine}(5u, acc, vks_load_bytes(pe, sb, hi - lo));
            vks_store_masked(pe, w, select(sum, acc, excl) << ((lo & 3u) * 8u), mask);
            acc = sum;
        }}
    }}
}}
",
        es = kind.bytes,
    );
}

/// `vks_ll_reduce_<kind>`: the one-sync form's combine (see `device_api::OneSync`):
/// after the sync, this PE's dest gets the members' landing slots combined in
/// team order. Only this PE's memory is touched: its slots (for the epoch the
/// sync announced) and its dest.
fn ll_reduce(s: &mut String, kind: &Kind) {
    let n = kind.name;
    let head = format!(
        "fn vks_ll_reduce_{n}(team: u32, op: u32, d: u32, s: u32, nelems: u32) {{
    let t = vks_team_of(team);
    let ll = vks_ll_slot(team, vks_team_field(team, VKS_TEAM_EPOCH) & 1u, 0u);
"
    );
    s.push_str(&head);
    if kind.bytes == 8 {
        // Elements are 8-aligned, so the slot's data starts at its first word.
        let _ = write!(
            s,
            "    for (var k = 0u; k < nelems; k++) {{
        var acc = vks_load_u64(VKS_SELF, ll + 2u * k);
        for (var j = 1u; j < t.size; j++) {{
            acc = vks_combine_{n}(op, acc, vks_load_u64(VKS_SELF, ll + j * VKS_LL_SLOT_WORDS + 2u * k));
        }}
        let dw = (d >> 2u) + 2u * k;
        vks_d_plain_store(VKS_SELF, dw, u32(acc));
        vks_d_plain_store(VKS_SELF, dw + 1u, u32(acc >> 32u));
    }}
}}
"
        );
        return;
    }
    let combine = word_combine(kind);
    // Source byte s + x lies at byte (s & 3) + x of a slot.
    let _ = write!(
        s,
        "    let n = nelems * {es}u;
    if n == 0u {{
        return;
    }}
    let base = ll * 4u + (s & 3u);
    let w0 = d >> 2u;
    let words = ((d + n - 1u) >> 2u) - w0 + 1u;
    for (var i = 0u; i < words; i++) {{
        let w = w0 + i;
        let lo = max(d, w * 4u);
        let hi = min(d + n, w * 4u + 4u);
        let sb = base + lo - d;
        var acc = vks_load_bytes(VKS_SELF, sb, hi - lo);
        for (var j = 1u; j < t.size; j++) {{
            acc = {combine}(op, acc, vks_load_bytes(VKS_SELF, sb + j * VKS_LL_SLOT_WORDS * 4u, hi - lo));
        }}
        vks_store_masked(VKS_SELF, w, acc << ((lo & 3u) * 8u), vks_byte_mask(lo & 3u, hi - w * 4u));
    }}
}}
",
        es = kind.bytes
    );
}
