//! The collectives' device code, generated from one table of element kinds and
//! reduction operations.
//!
//! - [`KINDS`]: the twelve machine element kinds (8-, 16-, 32-, 64-bit integers,
//!   signed and unsigned; f32; f64; the half-precision f16 and bf16). Sub-word
//!   kinds are packed in the heap's 32-bit words: a reduction combines the 4 or
//!   2 lanes of a word one by one. Half-precision lanes are combined in f32 and
//!   rounded to nearest even after every step ([`HALF_SOURCE`]), which gives
//!   exactly what native half arithmetic gives (f32 has more than twice their
//!   precision), so no device feature is needed.
//! - [`TYPES`]: ishmem's TYPENAMEs (`char` … `double`), each a kind plus whether
//!   the bitwise operations apply (ishmem's reduction table).
//! - [`ReduceOp`]: and, or, xor, max, min, sum, prod.
//!
//! From them: `vks_combine_<kind>(op, a, b)` and `vks_reduce_<kind>(team, op, dest,
//! source, nelems, tid, nth)` in every library, and the kernels of the
//! host-initiated collectives ([`HostCollective::source`], called as a
//! [`HostCall`]). The data movement that does not depend on the type is in
//! `shaders/collectives.wgsl`.

use std::fmt::Write as _;

use crate::LibraryConfig;

mod wide;
pub use wide::*;

/// The fixed part: data movement shared by every form.
pub const FIXED_SOURCE: &str = include_str!("../../shaders/collectives.wgsl");

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

/// The generated collectives code of a library: combine functions and reduction
/// drivers for every available kind, then the fixed movement code.
pub fn library_part(cfg: &LibraryConfig, uses: Option<&str>) -> String {
    let mut s = String::from("\n// ---- collectives (generated) ----\n");
    s.push_str(FIXED_SOURCE);
    if KINDS.iter().any(|k| is_half(k) && kind_used(k, uses)) {
        s.push_str(HALF_SOURCE);
    }
    if cfg.int64 {
        s.push_str(
            "fn vks_load_u64(pe: u32, w: u32) -> u64 {
    return u64(vks_d_plain_load(pe, w)) | (u64(vks_d_plain_load(pe, w + 1u)) << 32u);
}
",
        );
    }
    let vec4 = crate::library::uses_vec4(uses);
    for kind in KINDS
        .iter()
        .filter(|k| kind_available(cfg, k) && kind_used(k, uses))
    {
        combine(&mut s, kind);
        vec4_accumulate(&mut s, cfg, kind, vec4);
        reduce(&mut s, kind);
    }
    s
}

/// `vks_acc_vec4_<kind>(op, fresh, spe, d4, s4, n4, tid, nth)`: this PE's
/// dest vec4s become PE `spe`'s source vec4s (`fresh`) or their combination
/// with them; false (nothing done) without the vec4 view. The reductions'
/// bulk: every member's source is combined into this PE's dest, one
/// member at a time, each vec4 by the same invocation every time (see
/// `library::vec4_pieces`).
fn vec4_accumulate(s: &mut String, cfg: &LibraryConfig, kind: &Kind, vec4: bool) {
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
fn kind_used(kind: &Kind, uses: Option<&str>) -> bool {
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
fn combine(s: &mut String, kind: &Kind) {
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
fn swar_sum(bits: u32) -> String {
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
fn reduce(s: &mut String, kind: &Kind) {
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
fn scan_fn(s: &mut String, kind: &Kind) {
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

/// `vks_ll_reduce_<kind>`: the one-sync form's combine (see [`OneSync`]):
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

/// One device-initiated mem collective: (name, extra params after `team`, the
/// move given team `team`, `t` = its VksTeam, and `tid`/`nth`, a check run before
/// the move (all members run it alike), a statement run before the opening sync,
/// and whether its move only pushes this PE's own data where every member is
/// reached directly, so that it may skip the opening sync: see [`both_forms`]).
struct MemCollective {
    name: &'static str,
    params: &'static str,
    pre: &'static str,
    check: &'static str,
    body: &'static str,
    early: bool,
}

const MEM_COLLECTIVES: [MemCollective; 4] = [
    MemCollective {
        name: "broadcastmem",
        params: "dest: u32, source: u32, nelems: u32, root: u32",
        pre: "",
        check: "vks_root_ok(team, root)",
        body: "vks_broadcast_move(t, dest, source, nelems, root, false, true, tid, nth);",
        early: false,
    },
    MemCollective {
        name: "collectmem",
        params: "dest: u32, source: u32, nelems: u32",
        pre: "if team < VKS_MAX_TEAMS { vks_relaxed_store(VKS_SELF, vks_team_base(team) + VKS_TEAM_COUNT, nelems); }",
        check: "true",
        body: "vks_collect_move_team(t, team, dest, source, true, tid, nth);",
        early: false,
    },
    MemCollective {
        name: "fcollectmem",
        params: "dest: u32, source: u32, nelems: u32",
        pre: "",
        check: "true",
        body: "vks_fcollect_move(t, dest, source, nelems, true, tid, nth);",
        early: true,
    },
    MemCollective {
        name: "alltoallmem",
        params: "dest: u32, source: u32, nelems: u32",
        pre: "",
        check: "true",
        body: "vks_alltoall_move(t, dest, source, nelems, true, tid, nth);",
        early: true,
    },
];

/// UCC's fixed-count gather and scatter (`shmemx_`: no OpenSHMEM name).
const UCC_MEM_COLLECTIVES: [MemCollective; 2] = [
    MemCollective {
        name: "gathermem",
        params: "dest: u32, source: u32, nelems: u32, root: u32",
        pre: "",
        check: "vks_root_ok(team, root)",
        body: "vks_gather_move(t, dest, source, nelems, root, tid, nth);",
        early: false,
    },
    MemCollective {
        name: "scattermem",
        params: "dest: u32, source: u32, nelems: u32, root: u32",
        pre: "",
        check: "vks_root_ok(team, root)",
        body: "vks_scatter_move(t, dest, source, nelems, root, tid, nth);",
        early: false,
    },
];

/// The one-sync form of a per-thread function (small reductions on teams
/// that do not span devices; see `layout::LL_BYTES`): WGSL expressions of the
/// bytes it sends, the source's byte address, and the statement that combines
/// the landing slots into dest after the sync.
struct OneSync {
    bytes: String,
    source: &'static str,
    combine: String,
}

/// A per-thread function and its `_work_group` twin around `body` (which sees
/// `team`, `t`, `tid`, `nth` and the parameters), and with `multi` the
/// multi-workgroup `_work_groups` form too (`wg_name` + `s`).
///
/// With `early` (a move that, where every member is reached directly, only
/// reads this PE's own source and writes members' dests: fcollect, alltoall,
/// alltoalls), the per-thread and work_group forms move before the one
/// closing sync (the work_group form after a workgroup barrier, which orders
/// its invocations' writes of the source), as ishmem's and NVSHMEM's device
/// collectives do: OpenSHMEM leaves the dests' readiness to the caller. The
/// multi-workgroup form keeps both syncs (see below). The functions then take a last parameter `entry_sync` (true
/// keeps the opening sync: the queue's collectives, whose stream order
/// promises more) under `vks_` names, and the public names call them with
/// false (a `name` that is already `vks_` gets no wrappers).
#[allow(clippy::too_many_arguments)]
fn both_forms(
    s: &mut String,
    name: &str,
    wg_name: &str,
    params: &str,
    pre: &str,
    check: &str,
    body: &str,
    one_sync: Option<&OneSync>,
    multi: bool,
    early: bool,
) {
    // One sync call site per function, in a three-step loop (sync; move;
    // sync), entered at the move where `early`: llvmpipe inlines every call,
    // and each inlined wait costs compile time. A `loop` rather than a `for`
    // whose move step `continue`s, which ran small calls slower on llvmpipe
    // (benches/RESULTS.md, "One-sync device forms"). A failed argument check
    // skips the move but not the closing sync (every member passes the same
    // arguments, so all skip alike) and returns -1. The one-sync form (small
    // reductions) pushes before the first sync and leaves after its own
    // combine. The price of the loop on llvmpipe, which compiles a shader with
    // barriers into coroutines: a move inside a loop that holds a barrier runs
    // slower than one outside, but with the grid syncs written out the kernel
    // compiled slower and the 2-PE forms, bound by one thread per PE there,
    // were no faster (benches/RESULTS.md, "One-sync device forms").
    let (decide, push, finish) = match one_sync {
        Some(o) => (
            format!("let ll = ok && vks_ll_ok(team, {});", o.bytes),
            format!("if ll {{ vks_ll_push(team, {}, {}); }}", o.source, o.bytes),
            format!("if ll {{ {} break; }}", o.combine),
        ),
        None => Default::default(),
    };
    let wrapped = early && !name.starts_with("vks_");
    let internal = |n: &str| {
        if wrapped {
            n.replacen("shmemx_", "vks_", 1)
                .replacen("shmem_", "vks_", 1)
        } else {
            n.to_string()
        }
    };
    let (iname, iwg) = (internal(name), internal(wg_name));
    let (entry, early) = if early {
        (
            ", entry_sync: bool",
            "!entry_sync && vks_team_ok(team) && vks_pushes_only(team)",
        )
    } else {
        ("", "false")
    };
    let _ = write!(
        s,
        "fn {iname}(team: u32, {params}{entry}) -> i32 {{
    {pre}
    var ok = vks_team_ok(team);
    var bad = false;
    {decide}
    var step = select(0u, 1u, {early});
    loop {{
        if step >= 3u || !ok {{
            break;
        }}
        if step == 1u {{
            if {check} {{
                let t = vks_team_of(team);
                let tid = 0u;
                let nth = 1u;
                {body}
            }} else {{
                bad = true;
            }}
        }} else {{
            {push}
            ok = vks_team_sync(team);
            if ok && step == 0u {{
                {finish}
            }}
        }}
        step++;
    }}
    return select(-1, 0, ok && !bad);
}}
fn {iwg}(team: u32, {params}, local_index: u32, group_size: u32{entry}) -> i32 {{
    {pre}
    var r = 0;
    var bad = false;
    let early = {early};
    if early {{
        // What the opening sync's barrier did: every invocation's writes of
        // the source before any invocation pushes them (ishmem's group
        // barrier).
        vks_fence_acq_rel();
        storageBarrier();
    }}
    var step = select(0u, 1u, early);
    loop {{
        if step == 1u {{
            if {check} {{
                let t = vks_team_of(team);
                let tid = local_index;
                let nth = group_size;
                {body}
            }} else {{
                bad = true;
            }}
        }} else {{
            vks_fence_acq_rel();
            r = shmemx_team_sync_work_group(team, local_index);
        }}
        step++;
        if step >= 3u || r != 0 {{
            break;
        }}
    }}
    return select(r, -1, bad);
}}
"
    );
    let args: Vec<&str> = params
        .split(',')
        .filter_map(|p| p.split(':').next())
        .map(str::trim)
        .collect();
    let args = args.join(", ");
    if wrapped {
        let _ = write!(
            s,
            "fn {name}(team: u32, {params}) -> i32 {{ return {iname}(team, {args}, false); }}
fn {wg_name}(team: u32, {params}, local_index: u32, group_size: u32) -> i32 {{ return {iwg}(team, {args}, local_index, group_size, false); }}
"
        );
    }
    if !multi {
        return;
    }
    // Every invocation of `groups` workgroups (numbered 0..groups) calls,
    // in uniform control flow, with the same arguments; the move is spread
    // over all of them. Always two syncs (`entry_sync` unused): an
    // invocation pushes source bytes that other workgroups of the dispatch
    // may have written just before, and only the opening grid sync orders
    // those writes (WGSL has no grid barrier for the caller to use). The grid sync (vks_grid_sync) gathers them around
    // one team sync, made by the last workgroup to arrive. A group count
    // the device cannot run at once fails before any wait, alike in every
    // group (vks_grid_ok).
    let _ = write!(
        s,
        "fn {iwg}s(team: u32, {params}, local_index: u32, group_size: u32, group: u32, groups: u32{entry}) -> i32 {{
    {pre}
    if !vks_grid_ok(group, groups, local_index) {{
        return -1;
    }}
    var r = 0;
    var bad = false;
    var step = 0u;
    loop {{
        if step == 1u {{
            if {check} {{
                let t = vks_team_of(team);
                let tid = group * group_size + local_index;
                let nth = groups * group_size;
                {body}
            }} else {{
                bad = true;
            }}
        }} else {{
            r = vks_grid_sync(team, local_index, groups);
        }}
        step++;
        if step >= 3u || r != 0 {{
            break;
        }}
    }}
    return select(r, -1, bad);
}}
"
    );
    if wrapped {
        let _ = writeln!(
            s,
            "fn {wg_name}s(team: u32, {params}, local_index: u32, group_size: u32, group: u32, groups: u32) -> i32 {{ return {iwg}s(team, {args}, local_index, group_size, group, groups, false); }}"
        );
    }
}

/// The device-initiated collectives: per-thread `shmem_*` and work_group
/// `shmemx_*_work_group` forms of every mem collective, and the typed forms of
/// ishmem's TYPENAMEs (broadcast, collect, fcollect, alltoall, alltoalls, every
/// reduction the type table allows, UCC's gather, scatter and reduce_scatter,
/// and the scans `shmemx_<T>_sum_inscan`/`_exscan`). Typed forms are generated
/// only when `uses` mentions them (a kernel's own source), to keep kernels
/// small; `None` generates all.
pub fn device_api(cfg: &LibraryConfig, uses: Option<&str>) -> String {
    let mut s = String::from("\n// ---- device-initiated collectives (generated) ----\n");
    // The multi-workgroup forms only in kernels that name one.
    let multi = uses.map_or(true, |u| u.contains("_work_groups"));
    let prefixed = MEM_COLLECTIVES
        .iter()
        .map(|c| ("shmem", c))
        .chain(UCC_MEM_COLLECTIVES.iter().map(|c| ("shmemx", c)));
    for (prefix, c) in prefixed {
        let wg = format!("shmemx_{}_work_group", c.name);
        both_forms(
            &mut s,
            &format!("{prefix}_{}", c.name),
            &wg,
            c.params,
            c.pre,
            c.check,
            c.body,
            None,
            multi,
            c.early,
        );
    }
    both_forms(
        &mut s,
        "vks_alltoalls",
        "vks_alltoalls_work_group",
        "dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, es: u32",
        "",
        "vks_arg_ok(dst > 0u && sst > 0u)",
        "vks_alltoalls_move(t, dest, source, nelems, es, dst, sst, true, tid, nth);",
        None,
        multi,
        true,
    );
    let wanted = |name: &str| uses.map_or(true, |u| u.contains(name));
    // The kinds whose scan driver is already in `s`.
    let mut scans = std::collections::HashSet::new();
    for ty in TYPES {
        let kind = kind(ty.kind).expect("table");
        if !kind_available(cfg, &kind) {
            continue;
        }
        let (n, es) = (ty.name, kind.bytes);
        for c in [
            "broadcast",
            "collect",
            "fcollect",
            "alltoall",
            "gather",
            "scatter",
        ] {
            // UCC's have no OpenSHMEM name: shmemx_ in both forms.
            let p = if matches!(c, "gather" | "scatter") {
                "shmemx"
            } else {
                "shmem"
            };
            let (pt, wg) = (format!("{p}_{n}_{c}"), format!("shmemx_{n}_{c}_work_group"));
            let rooted = matches!(c, "broadcast" | "gather" | "scatter");
            let root = if rooted { ", root: u32" } else { "" };
            let root_arg = if rooted { ", root" } else { "" };
            if wanted(&pt) {
                let _ = writeln!(
                    s,
                    "fn {pt}(team: u32, dest: u32, source: u32, nelems: u32{root}) -> i32 {{ return {p}_{c}mem(team, dest, source, nelems * {es}u{root_arg}); }}"
                );
            }
            if wanted(&wg) {
                let _ = writeln!(
                    s,
                    "fn {wg}(team: u32, dest: u32, source: u32, nelems: u32{root}, local_index: u32, group_size: u32) -> i32 {{ return shmemx_{c}mem_work_group(team, dest, source, nelems * {es}u{root_arg}, local_index, group_size); }}"
                );
            }
            if wanted(&format!("{wg}s")) {
                let _ = writeln!(
                    s,
                    "fn {wg}s(team: u32, dest: u32, source: u32, nelems: u32{root}, local_index: u32, group_size: u32, group: u32, groups: u32) -> i32 {{ return shmemx_{c}mem_work_groups(team, dest, source, nelems * {es}u{root_arg}, local_index, group_size, group, groups); }}"
                );
            }
        }
        let (pt, wg) = (
            format!("shmem_{n}_alltoalls"),
            format!("shmemx_{n}_alltoalls_work_group"),
        );
        if wanted(&pt) {
            let _ = writeln!(
                s,
                "fn {pt}(team: u32, dest: u32, source: u32, dst: u32, sst: u32, nelems: u32) -> i32 {{ return vks_alltoalls(team, dest, source, dst, sst, nelems, {es}u, false); }}"
            );
        }
        if wanted(&wg) {
            let _ = writeln!(
                s,
                "fn {wg}(team: u32, dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, local_index: u32, group_size: u32) -> i32 {{ return vks_alltoalls_work_group(team, dest, source, dst, sst, nelems, {es}u, local_index, group_size, false); }}"
            );
        }
        if wanted(&format!("{wg}s")) {
            let _ = writeln!(
                s,
                "fn {wg}s(team: u32, dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, local_index: u32, group_size: u32, group: u32, groups: u32) -> i32 {{ return vks_alltoalls_work_groups(team, dest, source, dst, sst, nelems, {es}u, local_index, group_size, group, groups, false); }}"
            );
        }
        // Scans (ishmem 1.5's sum_inscan / sum_exscan): not on a team that
        // spans devices (ERR_UNREACHABLE; the host form serves every transport).
        for (scan, excl) in [("inscan", false), ("exscan", true)] {
            let (pt, wg) = (
                format!("shmemx_{n}_sum_{scan}"),
                format!("shmemx_{n}_sum_{scan}_work_group"),
            );
            if !wanted(&pt) && !wanted(&wg) {
                continue;
            }
            if scans.insert(kind.name) {
                scan_fn(&mut s, &kind);
            }
            let body = format!(
                "if vks_team_spans(t) {{ if tid == 0u {{ vks_raise(VKS_ERR_UNREACHABLE, vks_my_pe(), dest >> 2u); }} }} else {{ vks_scan_{k}(t, {excl}, dest, source, nelems, tid, nth); }}",
                k = kind.name,
            );
            both_forms(
                &mut s,
                &pt,
                &wg,
                "dest: u32, source: u32, nelems: u32",
                "",
                "true",
                &body,
                None,
                multi,
                false,
            );
        }
        for op in ReduceOp::ALL {
            if op.bitwise() && !ty.bitwise {
                continue;
            }
            let o = op.name();
            // UCC reduce_scatter: `nreduce` elements per member; member i
            // combines block i of every member's source into its own dest
            // (on a team that spans devices, through the proxy: one
            // request, PX_REDUCE's own form).
            let (pt, wg) = (
                format!("shmemx_{n}_{o}_reduce_scatter"),
                format!("shmemx_{n}_{o}_reduce_scatter_work_group"),
            );
            if wanted(&pt) || wanted(&wg) {
                let body = format!(
                    "let own = source + t.me * nreduce * {es}u; if vks_team_spans(t) {{ if tid == 0u {{ vks_px_reduce_own(team, dest, own, nreduce, {ki}u, {c}u); }} }} else {{ vks_reduce_own_{k}(t, {c}u, dest, own, nreduce, tid, nth); }}",
                    k = kind.name,
                    ki = kind_index(kind.name).expect("a kind of KINDS"),
                    c = op.code()
                );
                both_forms(
                    &mut s,
                    &pt,
                    &wg,
                    "dest: u32, source: u32, nreduce: u32",
                    "",
                    "true",
                    &body,
                    None,
                    multi,
                    false,
                );
            }
            let (pt, wg) = (
                format!("shmem_{n}_{o}_reduce"),
                format!("shmemx_{n}_{o}_reduce_work_group"),
            );
            if !wanted(&pt) && !wanted(&wg) {
                continue;
            }
            // A team that spans devices: this PE's share through the proxy
            // (one request; see layout::PX_REDUCE).
            let body = format!(
                "if vks_team_spans(t) {{ if tid == 0u {{ vks_px_reduce(team, dest, source, nreduce, {k}u, {c}u); }} }} else {{ vks_reduce_{n}(t, {c}u, dest, source, nreduce, tid, nth); }}",
                k = kind_index(kind.name).expect("a kind of KINDS"),
                n = kind.name,
                c = op.code()
            );
            let one_sync = OneSync {
                bytes: format!("nreduce * {es}u"),
                source: "source",
                combine: format!(
                    "vks_ll_reduce_{}(team, {}u, dest, source, nreduce);",
                    kind.name,
                    op.code()
                ),
            };
            both_forms(
                &mut s,
                &pt,
                &wg,
                "dest: u32, source: u32, nreduce: u32",
                "",
                "true",
                &body,
                Some(&one_sync),
                multi,
                false,
            );
        }
    }
    s
}

/// What a host-initiated collective's kernel does (its identity: one kernel
/// each). A call of it, with its own arguments, is a [`HostCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCollective {
    /// broadcastmem.
    Broadcast,
    /// fcollectmem.
    Fcollect,
    /// collectmem.
    Collect,
    /// alltoallmem.
    Alltoall,
    /// alltoalls.
    Alltoalls,
    /// A reduction over elements of `kind`.
    Reduce(Kind),
}

/// One call of a host collective's kernel: the kernel and the arguments only
/// it takes, typed. [`HostCall::words`] lays them into [`HostArgs::params`],
/// in the order its kernel names them ([`HostCollective::params`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCall {
    /// broadcastmem from member `root`; the root's own dest is left alone
    /// when `skip_root` (the active-set form, whose root keeps its dest).
    Broadcast {
        /// The root's index in the team.
        root: u32,
        /// Leave the root's dest alone.
        skip_root: bool,
    },
    /// fcollectmem.
    Fcollect,
    /// collectmem; every member's byte count is in the control region.
    Collect {
        /// Word address of the members' byte counts.
        counts_at: u32,
    },
    /// alltoallmem.
    Alltoall,
    /// alltoalls.
    Alltoalls {
        /// Bytes per element.
        elem_bytes: u32,
        /// Stride between dest elements, in elements.
        dst: u32,
        /// Stride between source elements, in elements.
        sst: u32,
    },
    /// A reduction.
    Reduce {
        /// The element kind.
        kind: Kind,
        /// The operation.
        op: ReduceOp,
    },
}

impl HostCall {
    /// Its kernel.
    pub fn kernel(&self) -> HostCollective {
        match *self {
            HostCall::Broadcast { .. } => HostCollective::Broadcast,
            HostCall::Fcollect => HostCollective::Fcollect,
            HostCall::Collect { .. } => HostCollective::Collect,
            HostCall::Alltoall => HostCollective::Alltoall,
            HostCall::Alltoalls { .. } => HostCollective::Alltoalls,
            HostCall::Reduce { kind, .. } => HostCollective::Reduce(kind),
        }
    }

    /// Its own arguments as [`HostArgs::params`] words, in the order of
    /// [`HostCollective::params`] (unused words 0).
    pub fn words(&self) -> [u32; 3] {
        match *self {
            HostCall::Broadcast { root, skip_root } => [root, u32::from(skip_root), 0],
            HostCall::Collect { counts_at } => [counts_at, 0, 0],
            HostCall::Alltoalls {
                elem_bytes,
                dst,
                sst,
            } => [elem_bytes, dst, sst],
            HostCall::Reduce { op, .. } => [op.code(), 0, 0],
            HostCall::Fcollect | HostCall::Alltoall => [0; 3],
        }
    }
}

/// Workgroup size of the host collectives' generic kernels, and of the wide
/// kernels on llvmpipe ([`WIDE_WORKGROUP_GPU`] elsewhere: the host chooses
/// each wide kernel's by device, `Context::wide_workgroup`).
pub const HOST_WORKGROUP: u32 = 64;

/// Workgroup size of the wide copies and pushes on GPUs. They move one vec4
/// per invocation per step, so a copy of 64 MiB (then the launch of a large
/// message's piece, [`WIDE_WINDOW_MAX_BYTES`] / 2) in workgroups of 64 is
/// 65535 of them, and starting that many workgroups, not memory, bounded it
/// on a GPU; 256 brings the copy close to torch's (benches/RESULTS.md, "Wide
/// workgroups on H200").
pub const WIDE_WORKGROUP_GPU: u32 = 256;

/// Workgroup size of the wide reductions on every device. Each of their
/// invocations reads every member's vec4, so starting workgroups costs less
/// per byte, and on a GPU 256 ran the half sums markedly slower than 64 and
/// the other sums no faster (benches/RESULTS.md, "Wide workgroups on H200").
pub const WIDE_REDUCE_WORKGROUP: u32 = HOST_WORKGROUP;

/// The immediates of a host collective's kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct HostArgs {
    /// The team: WORLD number of member 0.
    pub start: u32,
    /// The team's stride (i32 bits).
    pub stride: u32,
    /// The team's size.
    pub size: u32,
    /// This PE's number in the team.
    pub me: u32,
    /// Byte address of dest.
    pub dest: u32,
    /// Byte address of source.
    pub source: u32,
    /// Bytes (movement) or elements (reductions, alltoalls).
    pub n: u32,
    /// The call's own arguments ([`HostCall::words`]; WGSL fields `x`, `y`,
    /// `z`, which the kernel names after [`HostCollective::params`]).
    pub params: [u32; 3],
}

impl HostCollective {
    /// A name for caches and errors.
    pub fn name(&self) -> String {
        match self {
            HostCollective::Reduce(k) => format!("vkshmem_reduce_{}", k.name),
            other => format!("vkshmem_{other:?}").to_lowercase(),
        }
    }

    /// The names its kernel gives [`HostArgs::params`], in order: one table
    /// with [`HostCall::words`] (a test checks that every call's words fill
    /// exactly these).
    pub fn params(&self) -> &'static [&'static str] {
        match self {
            HostCollective::Broadcast => &["root", "skip_root"],
            HostCollective::Collect => &["counts_at"],
            HostCollective::Alltoalls => &["elem_bytes", "dst", "sst"],
            HostCollective::Reduce(_) => &["op"],
            HostCollective::Fcollect | HostCollective::Alltoall => &[],
        }
    }

    /// The WGSL of its kernel (to be linked with the library).
    pub fn source(&self) -> String {
        let call = match self {
            HostCollective::Broadcast => {
                "vks_broadcast_move(t, a.dest, a.source, a.n, root, skip_root == 1u, false, tid, nth);"
                    .to_string()
            }
            HostCollective::Fcollect => {
                "vks_fcollect_move(t, a.dest, a.source, a.n, false, tid, nth);".into()
            }
            HostCollective::Collect => {
                "vks_collect_move(t, a.dest, a.source, counts_at, tid, nth);".into()
            }
            HostCollective::Alltoall => {
                "vks_alltoall_move(t, a.dest, a.source, a.n, false, tid, nth);".into()
            }
            HostCollective::Alltoalls => {
                "vks_alltoalls_move(t, a.dest, a.source, a.n, elem_bytes, dst, sst, false, tid, nth);"
                    .into()
            }
            HostCollective::Reduce(k) => format!(
                "vks_reduce_{}(t, op, a.dest, a.source, a.n, tid, nth);",
                k.name
            ),
        };
        let fields: String = HOST_ARGS_FIELDS
            .iter()
            .map(|f| format!("    {f}: u32,\n"))
            .collect();
        let params: String = self
            .params()
            .iter()
            .zip(["x", "y", "z"])
            .map(|(name, word)| format!("    let {name} = a.{word};\n"))
            .collect();
        format!(
            "struct HostArgs {{\n{fields}}}
var<immediate> args: HostArgs;
@compute @workgroup_size({HOST_WORKGROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let a = args;
    let t = VksTeam(a.start, a.stride, a.size, a.me);
    let tid = g.x;
    let nth = nw.x * {HOST_WORKGROUP}u;
{params}    {call}
}}
"
        )
    }
}

/// The WGSL fields of [`HostArgs`], in order (`params` is `x`, `y`, `z`).
const HOST_ARGS_FIELDS: [&str; 10] = [
    "start", "stride", "size", "me", "dest", "source", "n", "x", "y", "z",
];

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

    #[test]
    fn every_host_kernel_links() {
        let cfg = LibraryConfig {
            my_pe: 1,
            n_pes: 3,
            heap_bytes: 1 << 20,
            max_binding_bytes: 1 << 27,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: true,
            row_lanes: 0,
            direct: crate::PeSet::all(3),
            proxy: false,
            vec4_u64: false,
        };
        let mut all = vec![
            HostCollective::Broadcast,
            HostCollective::Fcollect,
            HostCollective::Collect,
            HostCollective::Alltoall,
            HostCollective::Alltoalls,
        ];
        all.extend(KINDS.iter().map(|k| HostCollective::Reduce(*k)));
        for c in all {
            let linked = crate::link_kernel(&c.source(), &c.name(), None, &cfg)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name()));
            assert_eq!(
                linked.immediate_bytes as usize,
                std::mem::size_of::<HostArgs>()
            );
            assert!(!linked.waits_on_peers, "{}", c.name());
        }
    }

    #[test]
    fn host_args_match_the_wgsl_struct() {
        let src = HostCollective::Fcollect.source();
        let fields = src.matches(": u32,").count();
        assert_eq!(fields * 4, std::mem::size_of::<HostArgs>());
        assert_eq!(fields, HOST_ARGS_FIELDS.len());
        assert_eq!(
            std::mem::offset_of!(HostArgs, params),
            4 * HOST_ARGS_FIELDS.iter().position(|f| *f == "x").unwrap()
        );
    }

    /// Every call's words fill exactly the parameters its kernel names, and
    /// the kernel reads each of them.
    #[test]
    fn host_calls_fill_the_params_their_kernel_names() {
        let k = KINDS[0];
        let calls = [
            HostCall::Broadcast {
                root: 3,
                skip_root: true,
            },
            HostCall::Fcollect,
            HostCall::Collect { counts_at: 7 },
            HostCall::Alltoall,
            HostCall::Alltoalls {
                elem_bytes: 4,
                dst: 2,
                sst: 5,
            },
            HostCall::Reduce {
                kind: k,
                op: ReduceOp::Max,
            },
        ];
        for c in calls {
            let names = c.kernel().params();
            let words = c.words();
            for (i, w) in words.iter().enumerate() {
                assert_eq!(*w != 0, i < names.len(), "{c:?}: word {i}");
            }
            let src = c.kernel().source();
            for n in names {
                assert!(src.contains(&format!(", {n}")), "{c:?} does not read {n}");
            }
        }
    }
}
