//! scratch: where a device form's call loses against a bare library push (1 PE).
fn user(wg: u32, iters: u32, u: u32, bar: bool) -> String {
    let body: String = (0..u)
        .map(|j| format!("dst[i + {j}u * 8u] = src[i + {j}u * 8u]; "))
        .collect();
    let b = if bar { "workgroupBarrier();" } else { "" };
    format!(
        "// _work_group
@group(1) @binding(0) var<storage, read_write> src: array<vec2<u64>>;
@group(1) @binding(1) var<storage, read_write> dst: array<vec2<u64>>;
struct A {{ d4: u32, s4: u32, n4: u32, d: u32, s: u32, n: u32 }}
var<immediate> a: A;
@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let q = a.n4;
    let rows = ({wg}u + 7u) >> 3u;
    let per = (((q + rows - 1u) / rows) + 7u) & ~7u;
    let lo = min((li >> 3u) * per, q);
    let hi = min(lo + per, q);
    for (var k = 0u; k < {iters}u; k++) {{
    for (var i = lo + (li & 7u); i < hi; i += {st}u) {{
        {body}
    }}
    {b}
    }}
}}
",
        st = 8 * u
    )
}
fn user_in(wg: u32, iters: u32) -> String {
    format!(
        "// _work_group
@group(1) @binding(0) var<storage, read_write> src: array<vec2<u64>>;
@group(1) @binding(1) var<storage, read_write> dst: array<vec2<u64>>;
struct A {{ d4: u32, s4: u32, n4: u32, d: u32, s: u32, n: u32 }}
var<immediate> a: A;
@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    for (var k = 0u; k < {iters}u; k++) {{
    let q = a.n4;
    let rows = ({wg}u + 7u) >> 3u;
    let per = (((q + rows - 1u) / rows) + 7u) & ~7u;
    let lo = min((li >> 3u) * per, q);
    let hi = min(lo + per, q);
    for (var i = lo + (li & 7u); i < hi; i += 8u) {{
        dst[i] = src[i];
    }}
    workgroupBarrier();
    }}
}}
"
    )
}
fn main() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let mib: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(4);
    let wg: u32 = std::env::args()
        .nth(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or(16);
    let iters: u32 = std::env::args()
        .nth(3)
        .map(|a| a.parse().unwrap())
        .unwrap_or(4);
    let bytes = mib << 20;
    let a = ctx.malloc::<u8>(bytes as usize)?;
    let b = ctx.malloc::<u8>(bytes as usize)?;
    let n4 = (bytes / 16) as u32;
    let head = "// _work_group
struct A { d4: u32, s4: u32, n4: u32, d: u32, s: u32, n: u32 }
var<immediate> a: A;
";
    let variants: Vec<(&str, String)> = vec![
        ("push1", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let x = a;
    for (var k = 0u; k < {iters}u; k++) {{ vks_push_vec4(vks_my_pe(), x.d4, x.s4, x.n4, li, {wg}u); }}
}}
")),
        ("push_bar", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let x = a;
    for (var k = 0u; k < {iters}u; k++) {{ vks_push_vec4(vks_my_pe(), x.d4, x.s4, x.n4, li, {wg}u); workgroupBarrier(); }}
}}
")),
        ("push_fence", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let x = a;
    for (var k = 0u; k < {iters}u; k++) {{ vks_push_vec4(vks_my_pe(), x.d4, x.s4, x.n4, li, {wg}u); vks_fence_acq_rel(); }}
}}
")),
        ("push_rt", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let x = a;
    for (var k = 0u; k < {iters}u; k++) {{ vks_push_vec4(vks_my_pe(), x.d4, x.s4, x.n4, wid.x * {wg}u + li, nw.x * {wg}u); }}
}}
")),
        ("pushall_bar", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let x = a;
    for (var k = 0u; k < {iters}u; k++) {{ vks_push_all_vec4(VKS_SELF, x.d4, x.s4, x.n4, li, {wg}u); workgroupBarrier(); }}
}}
")),
        ("bcast_wg", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let x = a;
    var f = 0u;
    for (var k = 0u; k < {iters}u; k++) {{ f += u32(shmemx_broadcastmem_work_group(0u, x.d, x.s, x.n, 0u, li, {wg}u) != 0); }}
}}
")),
        ("bcast_wgs", format!("{head}@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let x = a;
    var f = 0u;
    for (var k = 0u; k < {iters}u; k++) {{ f += u32(shmemx_broadcastmem_work_groups(0u, x.d, x.s, x.n, 0u, li, {wg}u, wid.x, nw.x) != 0); }}
}}
")),
        ("user_bar", user(wg, iters, 1, true)),
        ("user_nobar", user(wg, iters, 1, false)),
        ("user_bar_in", user_in(wg, iters)),
        ("user2_bar", user(wg, iters, 2, true)),
        ("user4_bar", user(wg, iters, 4, true)),
        ("user4_nobar", user(wg, iters, 4, false)),
    ];
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct A {
        d4: u32,
        s4: u32,
        n4: u32,
        d: u32,
        s: u32,
        n: u32,
    }
    let args = A {
        d4: (b.offset() / 16) as u32,
        s4: (a.offset() / 16) as u32,
        n4,
        d: b.offset() as u32,
        s: a.offset() as u32,
        n: bytes as u32,
    };
    let ks: Vec<_> = variants
        .iter()
        .map(|(n, src)| ctx.device_kernel(src, n).map(|k| (*n, k)))
        .collect::<Result<_, _>>()?;
    let wins = [a.window(ctx.my_pe()), b.window(ctx.my_pe())];
    for round in 0..3 {
        for (name, k) in &ks {
            let mut t = Vec::new();
            for _ in 0..7 {
                t.push(
                    ctx.launch_timed(
                        k,
                        [1, 1, 1],
                        if name.starts_with("user") {
                            &wins[..]
                        } else {
                            &[][..]
                        },
                        bytemuck::bytes_of(&args),
                    )?
                    .as_secs_f64()
                        / iters as f64,
                );
            }
            t.sort_by(f64::total_cmp);
            println!(
                "probe2 round {round} {name:12} wg {wg} {mib} MiB: best {:.0} us median {:.0} us = {:.2} GB/s (r+w)",
                t[0] * 1e6, t[3] * 1e6, 2.0 * bytes as f64 / t[3] / 1e9
            );
        }
    }
    Ok(())
}
