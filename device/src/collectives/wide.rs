//! The kernels of the host collectives' wide paths (`collective::wide` in the
//! host crate): copies, pushes and reductions that bind the members' objects
//! directly as storage windows and move 16 bytes per loop step, with no
//! per-access PE switch or bounds check. Generated here from the reduction
//! table ([`Kind`], [`ReduceOp`]); the host plans the windows and immediates
//! ([`WideArgs`], [`WideCopyArgs`]).

use std::fmt::Write as _;

use super::{is_half, swar_sum, Kind, ReduceOp, HALF_SOURCE};
use crate::library::ROW_LANES;

/// The largest team whose host reductions take the wide path (two storage
/// bindings per member, every kernel binding this many, see
/// [`wide_reduce_source`]).
pub const WIDE_REDUCE_MAX_MEMBERS: u32 = 8;

/// The bytes a wide-path window spans at least: Vulkan's least
/// `maxStorageBufferRange` (2^27). The host binds wider windows where the
/// device allows (its largest power of two up to 2 GiB; every member of a
/// call on the wide path shares the device, so all split the work alike).
pub const WIDE_WINDOW_MAX_BYTES: u64 = 1 << 27;

/// Window offsets of the wide path are multiples of this: Vulkan's largest
/// `minStorageBufferOffsetAlignment` (256), again the same on every device.
pub const WIDE_WINDOW_ALIGN: u64 = 256;

/// The element the wide kernels' loops load and store: 16 bytes either way,
/// indexed alike (index `i` of a window is its bytes `16 i .. 16 i + 16`), so
/// the host plans the same windows, shares and immediates for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WideUnit {
    /// `vec4<u32>`, on every device. The kernels also store the edge vec4s of
    /// an object that does not fill them, word by word (`wide_stores`).
    Vec4U32,
    /// `vec2<u64>` (the device must have `shaderInt64`): the loop over the
    /// whole vec4s only, without the edge stores, which a `vec2<u64>`
    /// binding cannot make word by word (other PEs may own the neighbouring
    /// words); the host launches the [`WideUnit::Vec4U32`] kernel over the
    /// edge vec4s beside it. llvmpipe moves memory faster through 64-bit
    /// components (benches/RESULTS.md, "64-bit loads on llvmpipe").
    Vec2U64,
}

impl WideUnit {
    /// The unit's WGSL type.
    pub fn wgsl(self) -> &'static str {
        match self {
            WideUnit::Vec4U32 => "vec4<u32>",
            WideUnit::Vec2U64 => "vec2<u64>",
        }
    }

    /// What the host appends to the names of the unit's kernels (none for
    /// [`WideUnit::Vec4U32`], whose names predate the unit).
    pub fn suffix(self) -> &'static str {
        match self {
            WideUnit::Vec4U32 => "",
            WideUnit::Vec2U64 => "_u64",
        }
    }

    /// Whether the unit's kernels store the objects' edge vec4s themselves.
    pub fn stores_edges(self) -> bool {
        self == WideUnit::Vec4U32
    }
}

/// The entry point and loop of every wide kernel over the vec4 range
/// `FIRST..END` (WGSL expressions of `a`, the immediates), with `i` the vec4
/// index in the body that follows (the caller closes the loop and the
/// function): a grid-wide stride, so that with one vec4 per invocation (what
/// the host launches up to the dispatch limit) every step of a workgroup
/// touches 64 consecutive vec4s. (A contiguous span per workgroup needs a
/// division per invocation, which llvmpipe scalarises, so the wide copies
/// and reductions ran slower with it.)
///
/// With `a.per` non-zero, each invocation takes `per` vec4s of every chunk
/// its SIMD row takes instead: a row of [`ROW_LANES`] invocations (fewer in
/// workgroups smaller than that) takes chunks of `lanes * per` vec4s, dealt
/// round-robin over the rows (row `r` takes the chunks `r`, `r + rows`,
/// ...), its lanes interleaved inside each (lane `l` on the vec4s `l`, `l +
/// lanes`, ...); `per = 0` is one vec4 per invocation, the grid-wide
/// stride. That is what the host launches on llvmpipe, over as many
/// workgroups as the driver has threads: a workgroup's SIMD rows run one
/// after another, and the grid-wide stride made each row sweep the whole
/// object (benches/RESULTS.md, "Contiguous shares on llvmpipe"). There the
/// chunk is the row's whole share (one chunk each), or for kernels that walk
/// many windows a shorter one (`LLVMPIPE_CHUNK` in the host crate). llvmpipe
/// loads and stores each lane's element apart, so a contiguous share per
/// invocation walked 8 places of every window at once per row, where a share
/// per row walks one, and runs faster for it (benches/RESULTS.md, "Row
/// shares").
///
/// The chunks are laid from `FIRST`, and indices below `LOW` are skipped
/// inside them (an object's vec4 0 that its edge stores write): the chunks
/// of an object that starts inside its vec4 0 stay where an aligned one's
/// are (on llvmpipe, chunks laid from vec4 1, a vec4 off the aligned
/// object's, ran an unaligned alltoall markedly slower: benches/RESULTS.md,
/// "Contiguous shares on llvmpipe").
fn wide_loop(first: &str, low: &str, end: &str, workgroup: u32) -> String {
    // A power of two that divides the workgroup, so that rows never straddle
    // a grid of any size.
    let lanes = ROW_LANES.min(1 << workgroup.trailing_zeros());
    format!(
        "@compute @workgroup_size({workgroup})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let a = w;
    let c = max(a.per, 1u);
    let span = nw.x * {workgroup}u * c;
    let low = {low};
    let end = {end};
    let lane = g.x & {m}u;
    for (var lo = {first} + (g.x - lane) * c; lo < end; lo += span) {{
        let hi = min(lo + {lanes}u * c, end);
        let s0 = lo + lane;
        for (var i = s0 + ((max(low, s0) - s0 + {m}u) & ~{m}u); i < hi; i += {lanes}u) {{
",
        m = lanes - 1
    )
}

/// Closes [`wide_loop`]'s loops (the caller then closes the function).
const WIDE_LOOP_END: &str = "        }\n    }\n";

/// The entry point and body of a wide kernel with [`WideArgs`] immediates:
/// `body` computes the vec4 `r` for index `i`, stored whole into every dest
/// of `dests` for each whole vec4 of the object in the share `first..end`
/// (see [`wide_stores`]), and its edges where `unit` stores them.
fn wide_body_and_tail(
    s: &mut String,
    body: &str,
    dests: &[String],
    workgroup: u32,
    unit: WideUnit,
    members: Members,
) {
    let dests: Vec<String> = dests.iter().map(|d| format!("{d}[a.d0 + i]")).collect();
    wide_stores(s, &[(body.to_string(), dests)], workgroup, unit, members);
}

/// Which dests of a wide kernel it writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Members {
    /// Every dest it binds.
    All,
    /// Dest `k` only below `a.members` (the first always): the reduction's
    /// padding bindings past its team are never written.
    Guarded,
}

impl Members {
    /// The WGSL that opens the store into dest `k` (and closes it).
    fn guard(self, k: usize) -> (String, &'static str) {
        match self {
            Members::Guarded if k > 0 => (format!("if {k}u < a.members {{ "), " }"),
            _ => (String::new(), ""),
        }
    }
}

/// The entry point and body of a wide kernel whose immediates name `first`,
/// `end`, `words`, `lead` and `per` as [`WideArgs`] does: for each
/// `(body, dests)` of `stores`, `body` computes the vec4 `r` for index `i`,
/// stored whole into every dest (a WGSL lvalue of index `i`, such as
/// `d_0[a.d0 + i]`) for each whole vec4 of the object in the share
/// `first..end`. The object's edges are then computed by one invocation and
/// stored word by word: vec4 0 where the object starts `lead` words into it
/// (its lanes from `lead` on), and the last vec4 where the object's `words`
/// (counted from vec4 0's start) end inside it (its lanes below `words %
/// 4`); one vec4 with both bounds where they are the same. (A branch inside
/// the loop made llvmpipe run every store of it masked, lane by lane, at
/// every step.) Several stores each go in their own block. Where `unit`
/// does not store edges ([`WideUnit::stores_edges`]), only the loop: the
/// host launches the edges apart.
fn wide_stores(
    s: &mut String,
    stores: &[(String, Vec<String>)],
    workgroup: u32,
    unit: WideUnit,
    members: Members,
) {
    let (open, close) = if stores.len() > 1 {
        ("        {\n", "        }\n")
    } else {
        ("", "")
    };
    s.push_str(&wide_loop(
        "a.first",
        "select(0u, 1u, a.lead != 0u)",
        "min(a.end, a.words / 4u)",
        workgroup,
    ));
    for (body, dests) in stores {
        s.push_str(open);
        s.push_str(body);
        for (k, d) in dests.iter().enumerate() {
            let (open, close) = members.guard(k);
            let _ = writeln!(s, "        {open}{d} = r;{close}");
        }
        s.push_str(close);
    }
    s.push_str(WIDE_LOOP_END);
    if !unit.stores_edges() {
        s.push_str("}\n");
        return;
    }
    let edges = [
        // The head: the object starts inside vec4 0.
        ("0u", "a.lead", "a.lead != 0u"),
        // The tail, unless the head's vec4 is it too.
        (
            "a.words / 4u",
            "0u",
            "a.words % 4u != 0u && (a.lead == 0u || a.words / 4u != 0u)",
        ),
    ];
    for (i, lo, cond) in edges {
        let _ = writeln!(
            s,
            "    {{
        let i = {i};
        let lo = {lo};
        let hi = select(4u, a.words % 4u, i == a.words / 4u);
        if g.x == 0u && {cond} && i >= a.first && i < a.end {{"
        );
        for (body, dests) in stores {
            s.push_str(open);
            s.push_str(body);
            for (k, d) in dests.iter().enumerate() {
                let (open, close) = members.guard(k);
                for (l, lane) in ["x", "y", "z", "w"].iter().enumerate() {
                    let _ = writeln!(
                        s,
                        "            {open}if lo <= {l}u && hi > {l}u {{ {d}.{lane} = r.{lane}; }}{close}"
                    );
                }
            }
            s.push_str(close);
        }
        s.push_str("        }\n    }\n");
    }
    s.push_str("}\n");
}

/// The immediates of the wide reduction kernel (`WideArgs` in its WGSL).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideArgs {
    /// First vec4 index of this PE's share.
    pub first: u32,
    /// End (exclusive) of this PE's share.
    pub end: u32,
    /// 32-bit words from the start of vec4 0 (of the source and dest
    /// windows, from `s0` and `d0`) to the object's end: `lead` plus the
    /// object's own (elements × bytes / 4).
    pub words: u32,
    /// vec4 index of the source in each source window.
    pub s0: u32,
    /// vec4 index of the dest in each dest window.
    pub d0: u32,
    /// vec4s of each chunk an invocation takes (chunks dealt round-robin:
    /// one chunk per invocation is a contiguous share), or 0 for the
    /// grid-wide stride (see `wide_loop`).
    pub per: u32,
    /// Words of vec4 0 before the object (0 to 3): an object as far off
    /// 16-byte alignment in its source and dest (whole words; whole
    /// elements for 8-byte kinds) starts inside it, and those words are
    /// neither the object's nor written.
    pub lead: u32,
    /// The wide reduction's members (its sources and dests bound first,
    /// the rest of its [`WIDE_REDUCE_MAX_MEMBERS`] bindings padding, read
    /// and written only below this): one kernel serves every team size.
    /// Other kernels leave it 0.
    pub members: u32,
}

/// The host reduction kernel's wide path for `kind` (1, 2, 4 or 8 bytes; the
/// object a whole number of 32-bit words) and `op`, for a team of up to
/// [`WIDE_REDUCE_MAX_MEMBERS`] (`WideArgs::members`, at run time: one
/// pipeline serves every team size): the members' sources are bindings
/// 0..8 and their dests bindings 8..16, those past the team padding, so
/// each vec4 of this PE's share is read from every source and written to
/// every dest with plain vector accesses (no per-access PE switch or bounds
/// check: the host bound exactly the objects).
/// The edge vec4s of an object that does not fill them (one as far off
/// 16-byte alignment in its sources and dests, `WideArgs::lead`, or a count
/// that is not a multiple of 4 words) are written word by word, where
/// `unit` stores edges. `None` for other kinds.
pub fn wide_reduce_source(
    kind: &Kind,
    op: ReduceOp,
    workgroup: u32,
    unit: WideUnit,
) -> Option<String> {
    if workgroup == 0 {
        return None;
    }
    let (mut s, step) = wide_step(kind, op, unit)?;
    let max = WIDE_REDUCE_MAX_MEMBERS;
    wide_sources(&mut s, max, unit);
    for j in 0..max {
        let _ = writeln!(
            s,
            "@group(1) @binding({}) var<storage, read_write> d_{j}: array<{}>;",
            max + j,
            unit.wgsl()
        );
    }
    let body = wide_combine("s_0[a.s0 + i]", 1..max, &step, Some(1));
    // Every member's dest; a branch the whole dispatch takes alike.
    let dests: Vec<String> = (0..max).map(|j| format!("d_{j}")).collect();
    wide_body_and_tail(&mut s, &body, &dests, workgroup, unit, Members::Guarded);
    Some(s)
}

/// The immediates of the wide kernels with [`WideArgs`], in WGSL.
const WIDE_ARGS_WGSL: &str = "struct WideArgs { first: u32, end: u32, words: u32, s0: u32, d0: u32, per: u32, lead: u32, members: u32 }\nvar<immediate> w: WideArgs;\n";

/// Bindings `0..n`: the sources `s_0..s_{n-1}` of a wide reduction.
fn wide_sources(s: &mut String, n: u32, unit: WideUnit) {
    for j in 0..n {
        let _ = writeln!(
            s,
            "@group(1) @binding({j}) var<storage, read_write> s_{j}: array<{}>;",
            unit.wgsl()
        );
    }
}

/// The body of a wide reduction's loop: `r`, the running result from
/// `first` (a WGSL expression of `i`) combined by `step` with the sources
/// `s_j` for `j` in `sources` (from `guarded_from` on, those below
/// `a.members` only: a branch the whole dispatch takes alike).
fn wide_combine(
    first: &str,
    sources: std::ops::Range<u32>,
    step: &WideStep,
    guarded_from: Option<u32>,
) -> String {
    let mut body = format!("        var acc = {};\n", step.load(first));
    for j in sources {
        let x = step.load(&format!("s_{j}[a.s0 + i]"));
        let guard = match guarded_from {
            Some(g) if j >= g => format!("if {j}u < a.members "),
            _ => String::new(),
        };
        let _ = writeln!(
            body,
            "        {guard}{{ let x = {x}; acc = {}; }}",
            step.step
        );
    }
    let _ = writeln!(body, "        let r = {};", step.store("acc"));
    body
}

/// How a wide reduction combines one 16-byte unit with another.
struct WideStep {
    /// A WGSL expression of `acc` and `x` (the running result and one
    /// member's source, in the step's type).
    step: String,
    /// Whether the step works on `vec4<u32>` though the unit is
    /// `vec2<u64>`: the loads are unpacked (`wide_unpack`) and the result
    /// packed again (`wide_pack`).
    unpacks: bool,
}

impl WideStep {
    /// The WGSL of a loaded unit (`v`) in the step's type.
    fn load(&self, v: &str) -> String {
        if self.unpacks {
            format!("wide_unpack({v})")
        } else {
            v.to_string()
        }
    }

    /// The WGSL of a result (`v`) in the unit's type.
    fn store(&self, v: &str) -> String {
        if self.unpacks {
            format!("wide_pack({v})")
        } else {
            v.to_string()
        }
    }
}

/// The words of a `vec2<u64>`, low first, and back.
const WIDE_PACKING: &str = "fn wide_unpack(v: vec2<u64>) -> vec4<u32> {
    return vec4<u32>(u32(v.x), u32(v.x >> 32u), u32(v.y), u32(v.y >> 32u));
}
fn wide_pack(v: vec4<u32>) -> vec2<u64> {
    return vec2<u64>(u64(v.x) | (u64(v.y) << 32u), u64(v.z) | (u64(v.w) << 32u));
}
";

/// One step of a host reduction over more than [`WIDE_REDUCE_MAX_MEMBERS`]
/// members (a team too large to bind every member at once), or of a UCC
/// fold: this PE's share of up to 8 members' sources (bindings 0..8, the
/// group's size `WideArgs::members` at run time, the bindings past it
/// padding) is combined into this PE's dest (binding 8), with the dest's
/// running result first when `accumulate` (the later groups), without it
/// for the first group. The caller then pushes the share to the other
/// members' dests ([`wide_push_source`]). Immediates and tail as
/// [`wide_reduce_source`]. `None` where that is.
pub fn wide_accumulate_source(
    kind: &Kind,
    op: ReduceOp,
    accumulate: bool,
    workgroup: u32,
    unit: WideUnit,
) -> Option<String> {
    if workgroup == 0 {
        return None;
    }
    let (mut s, step) = wide_step(kind, op, unit)?;
    let max = WIDE_REDUCE_MAX_MEMBERS;
    wide_sources(&mut s, max, unit);
    let _ = writeln!(
        s,
        "@group(1) @binding({max}) var<storage, read_write> d_0: array<{}>;",
        unit.wgsl()
    );
    // Source 0 always (a group has a member), the others below the count.
    let body = if accumulate {
        wide_combine("d_0[a.d0 + i]", 0..max, &step, Some(1))
    } else {
        wide_combine("s_0[a.s0 + i]", 1..max, &step, Some(1))
    };
    wide_body_and_tail(
        &mut s,
        &body,
        &["d_0".to_string()],
        workgroup,
        unit,
        Members::All,
    );
    Some(s)
}

/// The prelude (immediates, helper functions) and the combining step of the
/// wide reductions of `kind` with `op` in `unit`s; `None` for kinds without
/// a wide path or operations the kind does not have. In `vec2<u64>` units,
/// bitwise operations and 8-byte kinds combine the units as they are loaded;
/// other kinds unpack them into `vec4<u32>`s.
fn wide_step(kind: &Kind, op: ReduceOp, unit: WideUnit) -> Option<(String, WideStep)> {
    if !matches!(kind.bytes, 1 | 2 | 4 | 8) {
        return None;
    }
    if kind.float && matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor) {
        return None;
    }
    // `A op B`, with A and B to fill in.
    let tpl = match op {
        ReduceOp::And => "A & B",
        ReduceOp::Or => "A | B",
        ReduceOp::Xor => "A ^ B",
        ReduceOp::Max => "max(A, B)",
        ReduceOp::Min => "min(A, B)",
        ReduceOp::Sum => "A + B",
        ReduceOp::Prod => "A * B",
    };
    let combine = |a: &str, b: &str| tpl.replace('A', a).replace('B', b);
    let bitwise = matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor);
    let mut s = String::from(WIDE_ARGS_WGSL);
    let u64s = unit == WideUnit::Vec2U64;
    // How one unit of raw words combines with another (`acc`, `x`: the
    // running result and one member's source, as `vec2<u64>` where `u64s`
    // and the kind needs no unpacking, else as `vec4<u32>`).
    let unpacks = u64s && !bitwise && kind.bytes != 8;
    if unpacks {
        s.push_str(WIDE_PACKING);
    }
    let step = match kind.bytes {
        // Bitwise operations are lane-blind: whole words, any kind.
        _ if bitwise => combine("acc", "x"),
        4 => {
            let v = match (kind.float, kind.signed) {
                (true, _) => "vec4<f32>",
                (false, true) => "vec4<i32>",
                (false, false) => "vec4<u32>",
            };
            let c = combine(&format!("bitcast<{v}>(acc)"), &format!("bitcast<{v}>(x)"));
            format!("bitcast<vec4<u32>>({c})")
        }
        8 => {
            // Two elements per vec4, each in two words (low first).
            let (from, to) = match (kind.float, kind.signed) {
                (true, _) => ("bitcast<f64>(V)", "bitcast<u64>(R)"),
                (false, true) => ("bitcast<i64>(V)", "bitcast<u64>(R)"),
                (false, false) => ("V", "R"),
            };
            let c = combine("p", "q");
            let _ = writeln!(
                s,
                "fn comb8(a: u64, b: u64) -> u64 {{
    let p = {pa};
    let q = {pb};
    return {to_r};
}}",
                pa = from.replace('V', "a"),
                pb = from.replace('V', "b"),
                to_r = to.replace('R', &format!("({c})")),
            );
            if u64s {
                "vec2<u64>(comb8(acc.x, x.x), comb8(acc.y, x.y))".to_string()
            } else {
                s.push_str(
                    "fn comb2(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = comb8(u64(a.x) | (u64(a.y) << 32u), u64(b.x) | (u64(b.y) << 32u));
    return vec2<u32>(u32(r), u32(r >> 32u));
}
",
                );
                "vec4<u32>(comb2(acc.xy, x.xy), comb2(acc.zw, x.zw))".to_string()
            }
        }
        bytes => {
            // Sub-word lanes of each 32-bit word.
            let bits = bytes * 8;
            let mask = (1u32 << bits) - 1;
            let body = match op {
                _ if is_half(kind) => {
                    // Both lanes as a vec2<f32>, rounded back one by one
                    // (HALF_SOURCE, renamed: `vks_` names are the
                    // library's, refused in kernels built beside it).
                    s.push_str(&HALF_SOURCE.replace("vks_", "wide_"));
                    let n = kind.name;
                    let lanes = |v: &str| {
                        if n == "f16" {
                            format!("unpack2x16float({v})")
                        } else {
                            format!("bitcast<vec2<f32>>(vec2<u32>({v} << 16u, {v} & 0xffff0000u))")
                        }
                    };
                    format!(
                        "let x = {};\n    let y = {};\n    let c = {};\n    return wide_{n}_bits(c.x) | (wide_{n}_bits(c.y) << 16u);",
                        lanes("a"),
                        lanes("b"),
                        combine("x", "y")
                    )
                }
                ReduceOp::Sum => format!("return {};", swar_sum(bits)),
                _ => {
                    let lane = |v: &str, l: u32| {
                        if kind.signed {
                            format!(
                                "(bitcast<i32>({v} << {}u) >> {}u)",
                                32 - bits - l,
                                32 - bits
                            )
                        } else {
                            format!("(({v} >> {l}u) & {mask}u)")
                        }
                    };
                    let mut b = String::from("var r = 0u;\n");
                    for l in (0..32).step_by(bits as usize) {
                        let c = combine(&lane("a", l), &lane("b", l));
                        let _ = writeln!(b, "    r |= (bitcast<u32>({c}) & {mask}u) << {l}u;");
                    }
                    b.push_str("    return r;");
                    b
                }
            };
            let _ = writeln!(s, "fn comb1(a: u32, b: u32) -> u32 {{\n    {body}\n}}");
            "vec4<u32>(comb1(acc.x, x.x), comb1(acc.y, x.y), comb1(acc.z, x.z), comb1(acc.w, x.w))"
                .to_string()
        }
    };
    Some((s, WideStep { step, unpacks }))
}

/// The immediates of the wide copy kernels (`WideCopy` in their WGSL). Counts
/// and indices are in vec4s ([`wide_copy_source`]) or 32-bit words
/// ([`wide_copy_words_source`], whose blocks fill their words: `first` 0,
/// `end` and `words` the block's words, `lead` 0).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideCopyArgs {
    /// First vec4 index of each block to copy (0: the whole block).
    pub first: u32,
    /// End (exclusive) of the vec4s to copy of each block.
    pub end: u32,
    /// 32-bit words from the start of each block's vec4 0 to its end:
    /// `lead` plus the block's own.
    pub words: u32,
    /// vec4 index of each block's source in its window.
    pub s0: u32,
    /// vec4 index of the dest of block 0 in the dest window.
    pub d0: u32,
    /// vec4s of each chunk an invocation takes (chunks dealt round-robin:
    /// one chunk per invocation is a contiguous share), or 0 for the
    /// grid-wide stride (see `wide_loop`).
    pub per: u32,
    /// Words of each block's vec4 0 before the block (0 to 3): blocks as far
    /// off 16-byte alignment in their sources and dests (whole words) start
    /// inside it, and those words are neither the block's nor written.
    pub lead: u32,
    /// vec4s from one block's dest to the next's: the block's size where
    /// blocks are whole vec4s (blocks off whole vec4s go one per launch, or
    /// word by word).
    pub stride: u32,
}

/// The immediates of the wide copy kernels, in WGSL.
const WIDE_COPY_ARGS_WGSL: &str = "struct WideCopy { first: u32, end: u32, words: u32, s0: u32, d0: u32, per: u32, lead: u32, stride: u32 }\nvar<immediate> w: WideCopy;\n";

/// The wide path of the pull collectives (broadcast, fcollect, alltoall): `blocks`
/// source windows (bindings 0..blocks, one per member pulled from) copied, block
/// after block, into this PE's dest window (binding `blocks`), in vec4s. Blocks
/// start `lead` words into the vec4 0 of their windows and end `words` words
/// from it: blocks and objects equally off 16-byte alignment in whole words
/// are copied whole, their edge vec4s word by word (`wide_stores`) where
/// `unit` stores edges. `None` for more than [`WIDE_REDUCE_MAX_MEMBERS`]
/// blocks.
pub fn wide_copy_source(blocks: u32, workgroup: u32, unit: WideUnit) -> Option<String> {
    let mut s = wide_copy_bindings(blocks, unit.wgsl(), workgroup)?;
    let stores: Vec<(String, Vec<String>)> = (0..blocks)
        .map(|j| {
            (
                format!("        let r = s_{j}[a.s0 + i];\n"),
                vec![format!("d[a.d0 + {j}u * a.stride + i]")],
            )
        })
        .collect();
    wide_stores(&mut s, &stores, workgroup, unit, Members::All);
    Some(s)
}

/// [`wide_copy_source`] word by word: blocks, sizes and addresses in whole
/// 32-bit words, the [`WideCopyArgs`] counting words. It takes the pulls whose
/// blocks are off whole vec4s or whose sources and dests are not as far off
/// 16-byte alignment as each other (an fcollect of 8 bytes a member, an
/// alltoall from offset 4 into offset 0), which would otherwise take the
/// generic kernel: it walks the heaps through the library with a PE switch on
/// every access, over an order of magnitude slower on llvmpipe
/// (benches/RESULTS.md, "Wide word kernels").
pub fn wide_copy_words_source(blocks: u32, workgroup: u32) -> Option<String> {
    let mut s = wide_copy_bindings(blocks, "u32", workgroup)?;
    // Every block's same span in one loop: each workgroup streams its span of
    // every block.
    s.push_str(&wide_loop("a.first", "0u", "a.end", workgroup));
    for j in 0..blocks {
        let _ = writeln!(
            s,
            "        d[a.d0 + {j}u * a.stride + i] = s_{j}[a.s0 + i];"
        );
    }
    s.push_str(WIDE_LOOP_END);
    s.push_str("}\n");
    Some(s)
}

/// The immediates and bindings of a wide copy of `blocks` blocks in `unit`s
/// (`None` for no blocks, too many, or no invocations per workgroup).
fn wide_copy_bindings(blocks: u32, unit: &str, workgroup: u32) -> Option<String> {
    if blocks == 0 || blocks > WIDE_REDUCE_MAX_MEMBERS || workgroup == 0 {
        return None;
    }
    let mut s = String::from(WIDE_COPY_ARGS_WGSL);
    for j in 0..blocks {
        let _ = writeln!(
            s,
            "@group(1) @binding({j}) var<storage, read_write> s_{j}: array<{unit}>;"
        );
    }
    let _ = writeln!(
        s,
        "@group(1) @binding({blocks}) var<storage, read_write> d: array<{unit}>;"
    );
    Some(s)
}

/// The wide push (broadcast, fcollect, collect): one source window (binding 0)
/// read once and written to `dests` dest windows (bindings 1..=dests), in vec4s.
/// The kernel's immediates are a [`WideArgs`]: this PE's share `first..end` of
/// the block's vec4s, the block's 32-bit `words` counted from vec4 0 and its
/// `lead` (the edge vec4s of a block that does not fill them are written
/// word by word, where `unit` stores edges), the source's vec4 index `s0` and the dest's `d0` (the same
/// in every dest window: the dests are one symmetric object). Each byte is read once and written `dests` times,
/// the least traffic of a broadcast on a device its PEs share (a pull reads the
/// source once per member). `None` for no dests or more than
/// [`WIDE_REDUCE_MAX_MEMBERS`].
pub fn wide_push_source(dests: u32, workgroup: u32, unit: WideUnit) -> Option<String> {
    if dests == 0 || dests > WIDE_REDUCE_MAX_MEMBERS || workgroup == 0 {
        return None;
    }
    let u = unit.wgsl();
    let mut s =
        format!("{WIDE_ARGS_WGSL}@group(1) @binding(0) var<storage, read_write> s: array<{u}>;\n");
    for j in 0..dests {
        let _ = writeln!(
            s,
            "@group(1) @binding({}) var<storage, read_write> d_{j}: array<{u}>;",
            j + 1
        );
    }
    let dests: Vec<String> = (0..dests).map(|j| format!("d_{j}")).collect();
    let body = "        let r = s[a.s0 + i];\n";
    wide_body_and_tail(&mut s, body, &dests, workgroup, unit, Members::All);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::super::{kind, HOST_WORKGROUP, KINDS, WIDE_WORKGROUP_GPU};
    use super::*;
    use WideUnit::{Vec2U64 as U64, Vec4U32 as U32};

    #[test]
    fn wide_push_kernels() {
        assert!(wide_push_source(0, HOST_WORKGROUP, U32).is_none());
        assert!(wide_push_source(WIDE_REDUCE_MAX_MEMBERS + 1, HOST_WORKGROUP, U32).is_none());
        for dests in 1..=WIDE_REDUCE_MAX_MEMBERS {
            let src = wide_push_source(dests, HOST_WORKGROUP, U32).unwrap();
            assert!(src.contains(&format!(
                "@binding({dests}) var<storage, read_write> d_{}",
                dests - 1
            )));
            crate::compile_wgsl(&src, "push").unwrap_or_else(|e| panic!("{dests}: {e}\n{src}"));
        }
    }

    #[test]
    fn wide_reduce_kernels_for_every_kind() {
        let f32k = kind("f32").unwrap();
        let s = wide_reduce_source(&f32k, ReduceOp::Sum, HOST_WORKGROUP, U32).unwrap();
        // Eight members' bindings; sources and dests past the first only
        // below the run-time member count.
        assert!(s.contains("@binding(10) var<storage, read_write> d_2"));
        assert!(s.contains("@binding(15) var<storage, read_write> d_7"));
        assert!(s.contains("if 2u < a.members { let x = s_2[a.s0 + i]; acc = bitcast<vec4<u32>>(bitcast<vec4<f32>>(acc) + bitcast<vec4<f32>>(x)); }"));
        assert!(s.contains(
            "        d_0[a.d0 + i] = r;\n        if 1u < a.members { d_1[a.d0 + i] = r; }"
        ));
        assert!(
            s.contains("if 7u < a.members { if lo <= 3u && hi > 3u { d_7[a.d0 + i].w = r.w; } }")
        );
        assert!(wide_reduce_source(&f32k, ReduceOp::Xor, HOST_WORKGROUP, U32).is_none());
        // 8-byte kinds: two elements per vec4; sub-word kinds: lanes.
        let s =
            wide_reduce_source(&kind("f64").unwrap(), ReduceOp::Max, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("fn comb2") && s.contains("bitcast<f64>"));
        let s =
            wide_reduce_source(&kind("i8").unwrap(), ReduceOp::Sum, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("0x7f7f7f7f") || s.contains("2139062143u"));
        let s =
            wide_reduce_source(&kind("i16").unwrap(), ReduceOp::Min, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("bitcast<i32>(a << 16u) >> 16u"));
        let s =
            wide_reduce_source(&kind("u8").unwrap(), ReduceOp::And, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("acc = acc & x;") && !s.contains("comb1"));
        // Half-precision lanes go through f32, with no SWAR sum.
        let s =
            wide_reduce_source(&kind("bf16").unwrap(), ReduceOp::Sum, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("let c = x + y;") && s.contains("wide_bf16_bits(c.y) << 16u"));
        assert!(!s.contains("vks_"));
        assert!(
            wide_reduce_source(&kind("f16").unwrap(), ReduceOp::Xor, HOST_WORKGROUP, U32).is_none()
        );
        // Every kind and op compiles (naga validates the WGSL).
        for k in KINDS.iter() {
            for op in ReduceOp::ALL {
                if let Some(src) = wide_reduce_source(k, op, HOST_WORKGROUP, U32) {
                    crate::compile_wgsl(&src, "wide")
                        .unwrap_or_else(|e| panic!("{} {op:?}: {e}\n{src}", k.name));
                }
            }
        }
        // The steps of a team too large for one launch: the first group
        // without the dest, the later ones from it; every kind compiles.
        // Eight sources bound, those past the first below the group's size.
        let s = wide_accumulate_source(&f32k, ReduceOp::Sum, false, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("@binding(8) var<storage, read_write> d_0"));
        assert!(s.contains("var acc = s_0[a.s0 + i];") && !s.contains("d_1"));
        assert!(s.contains("if 1u < a.members { let x = s_1[a.s0 + i];"));
        assert!(s.contains("d_0[a.d0 + i] = r;"));
        let s = wide_accumulate_source(&f32k, ReduceOp::Sum, true, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("var acc = d_0[a.d0 + i];"));
        assert!(s.contains("        { let x = s_0[a.s0 + i];"));
        assert!(s.contains("if 7u < a.members { let x = s_7[a.s0 + i];"));
        for k in KINDS.iter() {
            for op in ReduceOp::ALL {
                if let Some(src) = wide_accumulate_source(k, op, true, HOST_WORKGROUP, U32) {
                    crate::compile_wgsl(&src, "wide_acc")
                        .unwrap_or_else(|e| panic!("{} {op:?}: {e}\n{src}", k.name));
                }
            }
        }
        let s =
            wide_reduce_source(&kind("bf16").unwrap(), ReduceOp::Sum, HOST_WORKGROUP, U32).unwrap();
        // The immediates match WideArgs.
        assert_eq!(std::mem::size_of::<WideArgs>(), 32);
        assert!(s.contains(
            "struct WideArgs { first: u32, end: u32, words: u32, s0: u32, d0: u32, per: u32, lead: u32, members: u32 }"
        ));
    }

    #[test]
    fn wide_copy_kernels() {
        let s = wide_copy_source(3, HOST_WORKGROUP, U32).unwrap();
        assert!(s.contains("@binding(3) var<storage, read_write> d:"));
        assert!(s.contains("let r = s_2[a.s0 + i];"));
        assert!(s.contains("d[a.d0 + 2u * a.stride + i] = r;"));
        // Every block's edges, lane by lane.
        assert!(s.contains("if lo <= 3u && hi > 3u { d[a.d0 + 2u * a.stride + i].w = r.w; }"));
        crate::compile_wgsl(&s, "copy").unwrap();
        assert!(
            wide_copy_source(0, HOST_WORKGROUP, U32).is_none()
                && wide_copy_source(9, HOST_WORKGROUP, U32).is_none()
        );
        // The immediates match WideCopyArgs.
        assert_eq!(std::mem::size_of::<WideCopyArgs>(), 32);
        assert!(s.contains(
            "struct WideCopy { first: u32, end: u32, words: u32, s0: u32, d0: u32, per: u32, lead: u32, stride: u32 }"
        ));
        // Word by word: the same loop over u32s.
        for blocks in 1..=WIDE_REDUCE_MAX_MEMBERS {
            let w = wide_copy_words_source(blocks, HOST_WORKGROUP).unwrap();
            assert!(w.contains(&format!(
                "@binding({blocks}) var<storage, read_write> d: array<u32>;"
            )));
            assert!(!w.contains("vec4"));
            crate::compile_wgsl(&w, "copy_words").unwrap_or_else(|e| panic!("{blocks}: {e}\n{w}"));
            let v = wide_copy_source(blocks, HOST_WORKGROUP, U32).unwrap();
            crate::compile_wgsl(&v, "copy").unwrap_or_else(|e| panic!("{blocks}: {e}\n{v}"));
        }
        assert!(
            wide_copy_words_source(0, HOST_WORKGROUP).is_none()
                && wide_copy_words_source(9, HOST_WORKGROUP).is_none()
        );
    }

    #[test]
    fn vec2_u64_kernels_move_whole_units_and_leave_the_edges() {
        let wg = HOST_WORKGROUP;
        let no_edges = |src: &str| {
            assert!(src.contains("array<vec2<u64>>") && !src.contains("array<vec4<u32>>"));
            // No word-by-word stores: the loop only.
            assert!(!src.contains("if lo <= ") && !src.contains("a.words % 4u != 0u"));
        };
        for k in KINDS.iter() {
            for op in ReduceOp::ALL {
                let wide = wide_reduce_source(k, op, wg, U32);
                let u64s = wide_reduce_source(k, op, wg, U64);
                // The same kinds and operations in either unit.
                assert_eq!(wide.is_some(), u64s.is_some(), "{} {op:?}", k.name);
                let acc = wide_accumulate_source(k, op, true, wg, U64);
                for src in u64s.into_iter().chain(acc) {
                    no_edges(&src);
                    crate::compile_wgsl(&src, "wide_u64")
                        .unwrap_or_else(|e| panic!("{} {op:?}: {e}\n{src}", k.name));
                }
            }
        }
        // 4-byte kinds unpack each unit into words and pack the result.
        let s = wide_reduce_source(&kind("f32").unwrap(), ReduceOp::Sum, wg, U64).unwrap();
        assert!(s.contains("let x = wide_unpack(s_2[a.s0 + i]); acc = bitcast<vec4<u32>>("));
        assert!(s.contains("var acc = wide_unpack(s_0[a.s0 + i]);"));
        assert!(s.contains("let r = wide_pack(acc);") && s.contains("d_2[a.d0 + i] = r;"));
        // 8-byte kinds and bitwise operations combine the units as loaded.
        let s = wide_reduce_source(&kind("f64").unwrap(), ReduceOp::Max, wg, U64).unwrap();
        assert!(s.contains("vec2<u64>(comb8(acc.x, x.x), comb8(acc.y, x.y))"));
        assert!(!s.contains("wide_unpack") && !s.contains("fn comb2"));
        let s = wide_reduce_source(&kind("u8").unwrap(), ReduceOp::Xor, wg, U64).unwrap();
        assert!(s.contains("acc = acc ^ x;") && !s.contains("wide_unpack"));
        let s =
            wide_accumulate_source(&kind("i16").unwrap(), ReduceOp::Sum, true, wg, U64).unwrap();
        assert!(s.contains("var acc = wide_unpack(d_0[a.d0 + i]);"));
        // Copies and pushes: the same loop and indices as in vec4<u32>.
        for n in 1..=WIDE_REDUCE_MAX_MEMBERS {
            let c = wide_copy_source(n, wg, U64).unwrap();
            let p = wide_push_source(n, wg, U64).unwrap();
            for src in [&c, &p] {
                no_edges(src);
                crate::compile_wgsl(src, "wide_u64").unwrap_or_else(|e| panic!("{e}\n{src}"));
            }
            let j = n - 1;
            assert!(c.contains(&format!("d[a.d0 + {j}u * a.stride + i] = r;")));
            assert!(p.contains(&format!("d_{j}[a.d0 + i] = r;")));
        }
        assert_eq!(U64.suffix(), "_u64");
        assert_eq!(U32.suffix(), "");
    }

    #[test]
    fn wide_kernels_take_the_workgroup_size_they_are_given() {
        let f32k = kind("f32").unwrap();
        let sources = |wg| {
            [
                wide_copy_source(2, wg, U32),
                wide_copy_words_source(2, wg),
                wide_push_source(2, wg, U32),
                wide_reduce_source(&f32k, ReduceOp::Sum, wg, U32),
                wide_accumulate_source(&f32k, ReduceOp::Sum, true, wg, U32),
            ]
        };
        for src in sources(WIDE_WORKGROUP_GPU) {
            let src = src.unwrap();
            // The declared size and the grid's stride agree.
            assert!(src.contains(&format!("@workgroup_size({WIDE_WORKGROUP_GPU})")));
            assert!(src.contains(&format!("let span = nw.x * {WIDE_WORKGROUP_GPU}u * c;")));
            assert!(!src.contains("@workgroup_size(64)"));
            crate::compile_wgsl(&src, "wide").unwrap_or_else(|e| panic!("{e}\n{src}"));
        }
        assert!(sources(0).iter().all(Option::is_none));
    }
}
