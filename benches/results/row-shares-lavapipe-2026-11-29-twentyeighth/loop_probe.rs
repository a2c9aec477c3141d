//! scratch: the device library's vec4 push loop against the same loop on user bindings.
fn main() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let mib: u64 = std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(8);
    let wg: u32 = std::env::args().nth(2).map(|a| a.parse().unwrap()).unwrap_or(16);
    let bytes = mib << 20;
    let a = ctx.malloc::<u8>(bytes as usize)?;
    let b = ctx.malloc::<u8>(bytes as usize)?;
    let n4 = (bytes / 16) as u32;
    let lib = format!(
        "// _work_group
struct A {{ d4: u32, s4: u32, n4: u32 }}
var<immediate> a: A;
@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let x = a;
    vks_push_vec4(vks_my_pe(), x.d4, x.s4, x.n4, li, {wg}u);
}}
"
    );
    let user = format!(
        "@group(1) @binding(0) var<storage, read_write> src: array<vec2<u64>>;
@group(1) @binding(1) var<storage, read_write> dst: array<vec2<u64>>;
struct A {{ d4: u32, s4: u32, n4: u32 }}
var<immediate> a: A;
@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) li: u32) {{
    let q = a.n4;
    let rows = ({wg}u + 7u) >> 3u;
    let width = min(8u, {wg}u - (li & ~7u));
    let per = (((q + rows - 1u) / rows) + 7u) & ~7u;
    let lo = min((li >> 3u) * per, q);
    let hi = min(lo + per, q);
    for (var r = 0u; r < REPSu; r++) {{
    for (var i = lo + (li & 7u); i < hi; i += width) {{
        dst[i] = src[i];
    }}
    }}
}}
"
    );
    let reps: u32 = std::env::args().nth(3).map(|a| a.parse().unwrap()).unwrap_or(1);
    let user = user.replace("REPS", &reps.to_string());
    let kl = ctx.device_kernel(&lib, "probe_lib")?;
    let ku = ctx.device_kernel(&user, "probe_user")?;
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct A {
        d4: u32,
        s4: u32,
        n4: u32,
    }
    let args = A {
        d4: (b.offset() / 16) as u32,
        s4: (a.offset() / 16) as u32,
        n4,
    };
    let uargs = A { d4: 0, s4: 0, n4 };
    let wins = [a.window(ctx.my_pe()), b.window(ctx.my_pe())];
    for round in 0..3 {
        for (name, k, w, imm) in [
            ("lib", &kl, &[][..], args),
            ("user", &ku, &wins[..], uargs),
        ] {
            let mut t = Vec::new();
            let div = if name == "user" { reps as f64 } else { 1.0 };
            for _ in 0..7 {
                t.push(ctx.launch_timed(k, [1, 1, 1], w, bytemuck::bytes_of(&imm))?.as_secs_f64() / div);
            }
            t.sort_by(f64::total_cmp);
            println!(
                "probe round {round} {name} wg {wg} {mib} MiB: best {:.0} us median {:.0} us = {:.2} GB/s (r+w)",
                t[0] * 1e6,
                t[3] * 1e6,
                2.0 * bytes as f64 / t[3] / 1e9
            );
        }
    }
    Ok(())
}
