//! Which copy kernel shape moves memory fastest on this device: the library's
//! wide copy (as the host collectives launch it) in workgroups of 64 to 512,
//! against plain copies over workgroup sizes, workgroup counts, vec4s per
//! invocation per step, and dispatches past 65535 workgroups
//! (two-dimensional grids), the plain copy's 16 bytes also as two 64-bit
//! components; and the library's wide pushes (one source to 2,
//! 4 or 8 dests: broadcast, collect and fcollect on 8 PEs push to 8) and
//! 2-member f32 sum, where their windows fit. Each is timed by
//! the GPU's timestamps, the best of several launches, in two rounds (the
//! second in reverse order), its GB/s counting every byte read and written.
//! A tool for choosing the wide kernels' launch shape on a new device (and
//! the bench roofline's), not a test, though each copy shape is checked at
//! the first size (the destination cleared before it and compared after).
//!
//! `vkshmrun -n 1 target/release/examples/copy_shapes [MiB ...]` (default 64
//! 256 1024; the heap needs twice the largest). Prints one line per shape and
//! size: GB/s of bytes read plus written, and the GPU microseconds.

use anyhow::{bail, Context as _, Result};
use vkshmem::{HeapWindow, ReduceOp};
use vkshmem_device::collectives::{
    wide_copy_source, wide_push_source, wide_reduce_source, WideArgs, WideCopyArgs, WideUnit,
    WIDE_REDUCE_MAX_MEMBERS,
};

/// Launches of each shape and size; the fastest counts.
const LAUNCHES: usize = 5;

/// A plain copy of `n` 16-byte elements (the immediate) of type `ty`
/// (`vec4<u32>`, or `vec2<u64>`: llvmpipe moves 64-bit components faster,
/// benches/RESULTS.md, "64-bit loads on llvmpipe"), `wg` invocations per
/// workgroup, each invocation moving `unroll` elements per step (all loads,
/// then all stores, `span` apart so that a warp's accesses stay consecutive),
/// over a grid-wide stride; the workgroup index is `x + y * nw.x` (grids past
/// 65535 workgroups are two-dimensional).
fn plain_copy(wg: u32, unroll: u32, ty: &str) -> String {
    let loads: String = (0..unroll)
        .map(|u| format!("        let v{u} = src[min(i + {u}u * span, last)];\n"))
        .collect();
    let stores: String = (0..unroll)
        .map(|u| format!("        if i + {u}u * span < n {{ dst[i + {u}u * span] = v{u}; }}\n"))
        .collect();
    format!(
        "struct A {{ n: u32 }}
var<immediate> a: A;
@group(1) @binding(0) var<storage, read_write> src: array<{ty}>;
@group(1) @binding(1) var<storage, read_write> dst: array<{ty}>;
@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let n = a.n;
    let last = n - 1u;
    let span = nw.x * nw.y * {wg}u;
    let step = span * {unroll}u;
    for (var i = (wid.x + wid.y * nw.x) * {wg}u + li; i < n; i += step) {{
{loads}{stores}    }}
}}
"
    )
}

/// What a shape's kernel does, which fixes its windows, immediates and
/// traffic.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A plain copy (the immediate: the vec4 count).
    Plain,
    /// The library's wide copy of one block (`WideCopyArgs`).
    WideCopy,
    /// The library's wide push of one source to this many dests
    /// (`WideArgs`): broadcast's and fcollect's kernel, one read to several
    /// writes.
    Push(u32),
    /// The library's wide f32 sum over this many members (`WideArgs`; each
    /// member's source read and each member's dest written).
    Reduce(u32),
}

impl Kind {
    /// Bytes read plus written for `bytes` of payload.
    fn traffic(self, bytes: u64) -> u64 {
        match self {
            Kind::Plain | Kind::WideCopy => 2 * bytes,
            Kind::Push(d) => (1 + d as u64) * bytes,
            Kind::Reduce(m) => 2 * m as u64 * bytes,
        }
    }
}

/// One shape: a kernel and how many workgroups it is launched over.
struct Shape {
    name: String,
    kernel: std::sync::Arc<vkshmem::DeviceKernel>,
    /// Workgroups for a copy of `n` vec4s.
    groups: Box<dyn Fn(u64) -> [u32; 3]>,
    kind: Kind,
}

fn main() -> Result<()> {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().with_context(|| format!("{a:?}: MiB")))
        .collect::<Result<_>>()?;
    let sizes = if sizes.is_empty() {
        vec![64, 256, 1024]
    } else {
        sizes
    };
    let ctx = vkshmem::init()?;
    if ctx.n_pes() != 1 {
        bail!("one PE only");
    }
    let info = ctx.device_info();
    let max_bytes = sizes.iter().max().copied().unwrap_or(64) << 20;
    if max_bytes > info.max_storage_buffer_range {
        bail!(
            "{max_bytes} bytes pass the device's binding range ({})",
            info.max_storage_buffer_range
        );
    }
    let a = ctx.malloc::<u8>(max_bytes as usize)?;
    let b = ctx.malloc::<u8>(max_bytes as usize)?;
    let pattern: Vec<u8> = (0..max_bytes)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    a.write(&pattern)?;
    // Checked at the first size: its bytes cleared before each shape.
    let first = sizes[0] << 20;
    let zeros = vec![0u8; first as usize];
    let mut got = vec![0u8; first as usize];
    let resident = ctx.resident_workgroups().max(1);
    println!(
        "# {} resident_workgroups={resident} max_range={} max_groups={:?}",
        info.name, info.max_storage_buffer_range, info.max_workgroups
    );
    let cap = |g: u64| g.clamp(1, 65535) as u32;
    // Groups covering `n` vec4s at `per` vec4s per invocation, in a 2D grid.
    let grid = |n: u64, wg: u64, per: u64| -> [u32; 3] {
        let g = n.div_ceil(wg * per).max(1);
        if g <= 65535 {
            [g as u32, 1, 1]
        } else {
            [65535, g.div_ceil(65535) as u32, 1]
        }
    };
    let mut shapes: Vec<Shape> = Vec::new();
    // The library's wide copy as the host collectives launch it on a GPU (one
    // vec4 per invocation, at most 65535 workgroups, striding over the rest),
    // in workgroups of each size and in each unit the device has; the
    // library's own choice is marked.
    let mut units = vec![WideUnit::Vec4U32];
    if ctx.library_config()?.int64 {
        units.push(WideUnit::Vec2U64);
    }
    for &unit in &units {
        for wg in [64u32, 128, 256, 512] {
            let src = wide_copy_source(1, wg, unit).expect("1 block");
            let mark = if wg == ctx.wide_workgroup() && unit == ctx.wide_unit() {
                " (library)"
            } else {
                ""
            };
            let w = wg as u64;
            let u = unit.wgsl();
            shapes.push(Shape {
                name: format!("wide_copy_1 {u} wg={wg}{mark}"),
                kernel: ctx.device_kernel(&src, &format!("wide_copy_1_{wg}{}", unit.suffix()))?,
                groups: Box::new(move |n| [cap(n.div_ceil(w)), 1, 1]),
                kind: Kind::WideCopy,
            });
        }
    }
    // The pushes and reductions as the host collectives launch them on a
    // GPU: against the copy, what a mix of one read to several writes (or
    // several reads) costs.
    let f32k = vkshmem_device::collectives::kind("f32").expect("f32 is a kind");
    for (wg, &unit) in [64u32, 256]
        .into_iter()
        .flat_map(|wg| units.iter().map(move |u| (wg, u)))
    {
        let w = wg as u64;
        let (u, sfx) = (unit.wgsl(), unit.suffix());
        for d in [2u32, 4, 8] {
            let src = wide_push_source(d, wg, unit).expect("2 to 8 dests");
            shapes.push(Shape {
                name: format!("wide_push_{d} {u} wg={wg}"),
                kernel: ctx.device_kernel(&src, &format!("wide_push_{d}_{wg}{sfx}"))?,
                groups: Box::new(move |n| [cap(n.div_ceil(w)), 1, 1]),
                kind: Kind::Push(d),
            });
        }
        let src = wide_reduce_source(&f32k, ReduceOp::Sum, wg, unit).expect("f32 sum");
        shapes.push(Shape {
            name: format!("wide_reduce_f32_sum_2 {u} wg={wg}"),
            kernel: ctx.device_kernel(&src, &format!("wide_reduce_2_{wg}{sfx}"))?,
            groups: Box::new(move |n| [cap(n.div_ceil(w)), 1, 1]),
            kind: Kind::Reduce(2),
        });
    }
    for wg in [64u32, 256, 1024] {
        for unroll in [1u32, 2, 4] {
            let kernel = ctx.device_kernel(
                &plain_copy(wg, unroll, "vec4<u32>"),
                &format!("copy_{wg}_{unroll}"),
            )?;
            let (w, u) = (wg as u64, unroll as u64);
            shapes.push(Shape {
                name: format!("plain wg={wg} unroll={unroll} <=65535 groups"),
                kernel: kernel.clone(),
                groups: Box::new(move |n| [cap(n.div_ceil(w * u)), 1, 1]),
                kind: Kind::Plain,
            });
            if unroll == 1 {
                shapes.push(Shape {
                    name: format!("plain wg={wg} unroll=1 one step each (2D grid)"),
                    kernel: kernel.clone(),
                    groups: Box::new(move |n| grid(n, w, 1)),
                    kind: Kind::Plain,
                });
                let r = resident as u64 * 16;
                shapes.push(Shape {
                    name: format!("plain wg={wg} unroll=1 resident*16"),
                    kernel,
                    groups: Box::new(move |n| [cap(r.min(n.div_ceil(w))), 1, 1]),
                    kind: Kind::Plain,
                });
            }
        }
    }
    // The same 16 bytes as two 64-bit components, where the device has them.
    if ctx.library_config()?.int64 {
        for wg in [64u32, 256] {
            let kernel =
                ctx.device_kernel(&plain_copy(wg, 1, "vec2<u64>"), &format!("copy64_{wg}"))?;
            let w = wg as u64;
            shapes.push(Shape {
                name: format!("plain vec2<u64> wg={wg} <=65535 groups"),
                kernel,
                groups: Box::new(move |n| [cap(n.div_ceil(w)), 1, 1]),
                kind: Kind::Plain,
            });
        }
    }
    println!(
        "{:<52} {:>2} {:>6} {:>10} {:>10} {:>22}",
        "shape", "rd", "MiB", "GB/s", "us", "groups"
    );
    // Two rounds, the second in reverse order: the GPU's clocks drift over a
    // run (its bandwidth may drop for a second at a time), so a shape is
    // compared with its neighbours in time in both rounds.
    let rounds: Vec<(usize, u64, usize)> = (0..2)
        .flat_map(|round| {
            sizes
                .iter()
                .enumerate()
                .map(move |(at, &mib)| (round, mib, at))
        })
        .collect();
    for (round, mib, at) in rounds {
        let bytes = mib << 20;
        let n = bytes / 16;
        // Slot `i` (of `bytes` each) of a buffer, if it fits.
        let win = |buf: &vkshmem::SymBuffer<u8>, i: u64| {
            let w = buf.window(0);
            ((i + 1) * bytes <= w.bytes).then(|| HeapWindow {
                offset: w.offset + i * bytes,
                bytes,
                ..w
            })
        };
        let mut best_all = (0.0f64, String::new());
        let order: Vec<&Shape> = if round == 0 {
            shapes.iter().collect()
        } else {
            shapes.iter().rev().collect()
        };
        for s in order {
            let groups = (s.groups)(n);
            // Sources from `a`, dests from `b`, each its own slot.
            let windows: Option<Vec<HeapWindow>> = match s.kind {
                Kind::Plain | Kind::WideCopy => [win(&a, 0), win(&b, 0)].into_iter().collect(),
                Kind::Push(d) => std::iter::once(win(&a, 0))
                    .chain((0..d as u64).map(|i| win(&b, i)))
                    .collect(),
                // The kernel binds 8 members; those past `m` are padding.
                Kind::Reduce(m) => {
                    let last = m as u64 - 1;
                    let max = WIDE_REDUCE_MAX_MEMBERS as u64;
                    (0..max)
                        .map(|i| win(&a, i.min(last)))
                        .chain((0..max).map(|i| win(&b, i.min(last))))
                        .collect()
                }
            };
            let Some(windows) = windows else {
                continue;
            };
            let wide_args = WideArgs {
                first: 0,
                end: n as u32,
                words: (n * 4) as u32,
                s0: 0,
                d0: 0,
                per: 0,
                lead: 0,
                members: match s.kind {
                    Kind::Reduce(m) => m,
                    _ => 0,
                },
            };
            let imm: Vec<u8> = match s.kind {
                Kind::Push(_) | Kind::Reduce(_) => bytemuck::bytes_of(&wide_args).to_vec(),
                Kind::WideCopy => bytemuck::bytes_of(&WideCopyArgs {
                    first: 0,
                    end: n as u32,
                    words: (n * 4) as u32,
                    s0: 0,
                    d0: 0,
                    per: 0,
                    lead: 0,
                    stride: n as u32,
                })
                .to_vec(),
                Kind::Plain => (n as u32).to_le_bytes().to_vec(),
            };
            let check = at == 0 && round == 0 && matches!(s.kind, Kind::Plain | Kind::WideCopy);
            if check {
                b.write(&zeros)?;
            }
            let mut best = f64::MAX;
            for _ in 0..LAUNCHES {
                let t = ctx.launch_timed(&s.kernel, groups, &windows, &imm)?;
                best = best.min(t.as_secs_f64());
            }
            if check {
                b.read(&mut got)?;
                if got[..] != pattern[..bytes as usize] {
                    bail!("{}: the copy of {mib} MiB differs from its source", s.name);
                }
            }
            let gbs = s.kind.traffic(bytes) as f64 / best / 1e9;
            if gbs > best_all.0 {
                best_all = (gbs, s.name.clone());
            }
            println!(
                "{:<52} r{round} {mib:>6} {gbs:>10.0} {:>10.1} {:>22}",
                s.name,
                best * 1e6,
                format!("{groups:?}")
            );
        }
        println!(
            "# best at {mib} MiB, round {round}: {:.0} GB/s {}",
            best_all.0, best_all.1
        );
    }
    ctx.finalize()?;
    Ok(())
}
