//! The vec4 bulk moves over the heaps' vec4 view: the loop generator
//! ([`vec4_pieces`]) and the library's copies and pushes built on it.

use std::fmt::Write as _;

use super::{LibraryConfig, ROW_LANES};

/// `vks_copy_vec4(d4, spe, s4, n4, tid, nth)`: copies `n4` vec4s from vec4
/// index `s4` of PE `spe` to vec4 index `d4` of this PE (the bulk of every
/// pull of the work_group(s) forms, `vks_copy_bytes`), and
/// `vks_push_vec4(dpe, d4, s4, n4, tid, nth)` the other way (the
/// reductions' results); both [`vec4_pieces`] loops, false (nothing copied)
/// without the vec4 view or for a PE not reached directly.
pub(super) fn vec4_copy(s: &mut String, cfg: &LibraryConfig, vec4: bool) {
    // This PE's own heap is slot 0.
    let me = 0;
    // Pull: this PE's dest, any direct PE's source.
    vec4_pieces(
        s,
        cfg,
        vec4,
        "fn vks_copy_vec4(d4: u32, spe: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool",
        "spe",
        &|p, sc, dc| format!("vks_v_{me}_{dc}[di + i] = vks_v_{p}_{sc}[si + i];"),
        Chunk::Source,
    );
    // Push: this PE's source, any direct PE's dest (the reductions' results).
    vec4_pieces(
        s,
        cfg,
        vec4,
        "fn vks_push_vec4(dpe: u32, d4: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool",
        "dpe",
        &|p, dc, sc| format!("vks_v_{p}_{dc}[di + i] = vks_v_{me}_{sc}[si + i];"),
        Chunk::Dest,
    );
}

/// The most PEs a job may have for `vec4_push_all`'s loop, which stores
/// into every PE's heap (a store per PE in every case of its switch).
pub const PUSH_ALL_MAX_PES: u32 = 8;

/// `vks_push_all_ok()`: whether `vks_push_all_vec4` can run in this kernel
/// (the vec4 view, and at run time every PE of the job reached directly, at
/// most [`PUSH_ALL_MAX_PES`] of them): alike on every PE of the job, so the
/// collectives may choose a push with it. `vks_push_all_vec4(spe, d4, s4,
/// n4, tid, nth)`: copies `n4` vec4s from vec4 index `s4` of PE `spe` to vec4
/// index `d4` of every PE of the job, each vec4 read once (a [`vec4_pieces`]
/// loop whose body stores into the slots of every PE: slot 0, this PE, and
/// each further slot below the PE count, a branch the whole workgroup takes
/// alike): the device forms' pushes, which move a broadcast's or fcollect's
/// least traffic (a pull reads the source once per member).
pub(super) fn vec4_push_all(s: &mut String, cfg: &LibraryConfig, vec4: bool) {
    let most = cfg.slots.min(PUSH_ALL_MAX_PES);
    if vec4 {
        let _ = writeln!(
            s,
            "fn vks_push_all_ok() -> bool {{ return vks_reaches_all() && vks_n_pes() <= {most}u; }}"
        );
    } else {
        s.push_str("fn vks_push_all_ok() -> bool { return false; }\n");
    }
    let mut f = String::new();
    vec4_pieces(
        &mut f,
        cfg,
        vec4,
        "fn vks_push_all_vec4(spe: u32, d4: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool",
        "spe",
        &|p, sc, dc| {
            let mut b = format!("let r = vks_v_{p}_{sc}[si + i]; vks_v_0_{dc}[di + i] = r;");
            for slot in 1..most {
                let _ = write!(b, " if {slot}u < n {{ vks_v_{slot}_{dc}[di + i] = r; }}");
            }
            b
        },
        Chunk::Source,
    );
    // The PE count, read once before the loop that its stores test.
    let (sig, rest) = f.split_once('\n').unwrap_or((&f, ""));
    let _ = write!(s, "{sig}\n    let n = vks_n_pes();\n{rest}");
}

/// vec4s a lane of the library's vec4 loops (`vec4_pieces`) moves per loop
/// iteration in a kernel of one SIMD row ([`LibraryConfig::row_lanes`])
/// where the driver caps loop iterations (llvmpipe: 65535 per invocation),
/// so that its row of 8 invocations moves two 4 MiB blocks in a call (a 2-PE
/// alltoall: 65536 vec4s per lane of one row, 32768 iterations). Each vec4
/// more per iteration is another copy of every vec4 loop's body for
/// llvmpipe to compile, so 2 is the least that moves the two blocks
/// (benches/RESULTS.md, "Device unroll").
pub const UNROLL: u32 = 2;

/// Whether a workgroup of `[x, y, z]` invocations is one SIMD row of
/// `row_lanes` invocations (never where `row_lanes` is 0): the kernels the
/// link builds without barriers (`LibraryConfig::row_lanes`).
pub fn is_one_row(row_lanes: u32, [x, y, z]: [u32; 3]) -> bool {
    row_lanes > 0 && x <= row_lanes && y == 1 && z == 1
}

/// Which side's chunk a binding of [`vec4_pieces`]'s cases stands for (the
/// other side is this PE's own heap, every chunk of it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunk {
    Source,
    Dest,
}

/// A vec4 loop between this PE's heap and PE `pe` (the signature's PE
/// parameter, reached directly) over `n4` vec4s from vec4 indices `d4` and
/// `s4`, generated with the switch outside the loop: one loop per (PE,
/// source chunk, dest chunk), whose body `body(slot, chunk, own chunk)` sees
/// `di + i` and `si + i` (indices in the chunks' arrays). Returns
/// false (nothing done) where the kernel has no vec4 view or `pe` is not
/// reached directly.
///
/// Which invocation handles vec4 `g` depends only on `g`, `tid` and `nth`,
/// never on where the chunk boundaries cut (the reductions accumulate one
/// vec4 over several calls, which must fall to the same invocation): on a
/// GPU `g % nth == tid` (consecutive invocations on consecutive vec4s:
/// coalesced); on a CPU driver (llvmpipe, where loops are capped), a
/// contiguous share per SIMD row of 8 invocations (`tid / 8`), its lanes
/// interleaved in it (lane `tid % 8` on every 8th vec4, `width` where the
/// grid's last row is narrower). llvmpipe runs a workgroup's rows one after
/// another, so the GPU pattern swept the whole object once per row, 128
/// bytes in every 4 KiB; and it moves each lane's element apart, so a share
/// per invocation walked 8 places at once per row, where a share per row
/// walks one (benches/RESULTS.md, "Row shares").
#[allow(clippy::too_many_arguments)]
pub(crate) fn vec4_pieces(
    s: &mut String,
    cfg: &LibraryConfig,
    vec4: bool,
    sig: &str,
    pe: &str,
    body: &dyn Fn(u32, u32, u32) -> String,
    side: Chunk,
) {
    let _ = writeln!(s, "{sig} {{");
    if !vec4 {
        s.push_str("    return false;\n}\n");
        return;
    }
    let chunks = cfg.chunks;
    let _ = writeln!(s, "    if !vks_is_direct({pe}) {{ return false; }}");
    // In range: whole vec4s inside the heap (its size is a multiple of 16).
    s.push_str("    let end = vks_heap_words() >> 2u;\n");
    s.push_str(
        "    if d4 >= end || s4 >= end || n4 > end - d4 || n4 > end - s4 { return false; }\n",
    );
    let shift = if chunks == 1 {
        31
    } else {
        cfg.chunk_word_shift() - 2
    };
    let (from, to, first, step) = if cfg.loop_cap {
        // Rows of 8 (the grid's last may be narrower); `per` a multiple of
        // 8, so that every row's share starts on a row boundary of vec4s.
        let (l, m, sh) = (ROW_LANES, ROW_LANES - 1, ROW_LANES.trailing_zeros());
        let _ = write!(
            s,
            "    let rows = (nth + {m}u) >> {sh}u;
    let width = min({l}u, nth - (tid & ~{m}u));
    let lane = tid & {m}u;
    let per = (((n4 + rows - 1u) / rows) + {m}u) & ~{m}u;
    let lo = min((tid >> {sh}u) * per, n4);
    let hi = min(lo + per, n4);
"
        );
        (
            "lo",
            "hi",
            "(lane + width - (done - lo) % width) % width",
            "width",
        )
    } else {
        ("0u", "n4", "(tid + nth - done % nth) % nth", "nth")
    };
    let _ = writeln!(
        s,
        "    var done = {from};
    loop {{
        if done >= {to} {{ break; }}
        let dv = d4 + done;
        let sv = s4 + done;
        let dc = dv >> {shift}u;
        let sc = sv >> {shift}u;
        let k = min({to} - done, min(((dc + 1u) << {shift}u) - dv, ((sc + 1u) << {shift}u) - sv));
        let di = dv - (dc << {shift}u);
        let si = sv - (sc << {shift}u);
        let first = {first};
        switch (vks_slot({pe}) * {chunks}u + {c}) * {chunks}u + {own} {{",
        c = if side == Chunk::Source { "sc" } else { "dc" },
        own = if side == Chunk::Source { "dc" } else { "sc" },
    );
    for (_, slot, c) in cfg.slot_bindings() {
        for own in 0..chunks {
            // The selector above: (slot, its chunk, this PE's chunk).
            let case = (slot * chunks + c) * chunks + own;
            let body = body(slot, c, own);
            if cfg.loop_cap && cfg.row_lanes > 0 {
                // UNROLL vec4s of the lane per iteration, each past the first
                // where it is below `k`: the driver caps loop iterations,
                // not work, so a lane moves UNROLL times more per call
                // within the cap (the same vec4s, in the same order). Each
                // body costs llvmpipe compile time (every case of every vec4
                // loop of a kernel).
                let more: String = (1..UNROLL)
                    .map(|j| format!(" {{ let i = i0 + {j}u * {step}; if i < k {{ {body} }} }}"))
                    .collect();
                let _ = writeln!(
                    s,
                    "            case {case}u: {{ for (var i0 = first; i0 < k; i0 += {UNROLL}u * {step}) {{ {{ let i = i0; {body} }}{more} }} }}",
                );
            } else {
                let _ = writeln!(
                    s,
                    "            case {case}u: {{ for (var i = first; i < k; i += {step}) {{ {body} }} }}"
                );
            }
        }
    }
    s.push_str(
        "            default: { }\n        }\n        done += k;\n    }\n    return true;\n}\n",
    );
}
