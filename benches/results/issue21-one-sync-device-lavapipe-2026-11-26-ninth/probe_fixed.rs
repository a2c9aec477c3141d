//! The ninth session's throwaway probe of the device work_group forms' fixed
//! cost (not built by the workspace: copy it to examples/probe_fixed.rs, then
//! `cargo build --release --example probe_fixed` and
//! `PROBE_N=30 vkshmrun -n 2 target/release/examples/probe_fixed sync1 mvsync loop1 a2aC a2aold a2a`).
//! Each variant is one kernel of one workgroup of 64 calling its body 8 times
//! per dispatch; it prints the compile + first launch time and the median and
//! least GPU time per call over PROBE_N dispatches (PE 0's timestamps).
//! `a2a`, `fcol`, `bcast` call the library's forms on 4 bytes (alltoall and
//! fcollect: one sync after this session's change); the others spell the
//! structures out: a sync straight, two syncs straight, one sync site in a
//! loop, the move and sync straight, or in a `for` (`loop1`) or a `loop`
//! (`a2aC`), and the previous two-sync shape (`a2aold`).
use anyhow::Result;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct P {
    dest: u32,
    source: u32,
    iters: u32,
    pad: u32,
}

const MOVE: &str = "vks_alltoall_move(vks_team_of(0u), p.dest, p.source, 4u, true, li, 64u);";
const SYNC: &str = "vks_fence_acq_rel(); r += shmemx_team_sync_work_group(0u, li);";

fn body(w: &str) -> Option<String> {
    Some(match w {
        "sync1" => "r += shmemx_team_sync_work_group(0u, li);".into(),
        "sync2" => "r += shmemx_team_sync_work_group(0u, li); r += shmemx_team_sync_work_group(0u, li);".into(),
        "sync2loop" => format!("for (var ph = 0u; ph < 2u; ph++) {{ {SYNC} }}"),
        "mvsync" => format!("{MOVE} {SYNC}"),
        "loop1" => format!("for (var step = 1u; step < 3u && r == 0; step++) {{ if step == 1u {{ {MOVE} continue; }} {SYNC} }}"),
        "a2aC" => format!("var step = 1u; loop {{ if step == 1u {{ {MOVE} }} else {{ {SYNC} }} step++; if step >= 3u || r != 0 {{ break; }} }}"),
        "a2aold" => format!("for (var step = 0u; step < 2u && r == 0; step++) {{ {SYNC} if step == 0u && r == 0 {{ {} }} }}", MOVE.replace("true", "false")),
        "move" => MOVE.into(),
        "a2a" => "r += shmemx_alltoallmem_work_group(0u, p.dest, p.source, 4u, li, 64u);".into(),
        "fcol" => "r += shmemx_fcollectmem_work_group(0u, p.dest, p.source, 4u, li, 64u);".into(),
        "bcast" => "r += shmemx_broadcastmem_work_group(0u, p.dest, p.source, 4u, 0u, li, 64u);".into(),
        _ => return None,
    })
}

fn main() -> Result<()> {
    let which: Vec<String> = std::env::args().skip(1).collect();
    let reps: usize = std::env::var("PROBE_N").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let ctx = vkshmem::init()?;
    let src = ctx.calloc::<u32>(1024)?;
    let dst = ctx.calloc::<u32>(1024)?;
    let p = P { dest: dst.device_addr()? * 4, source: src.device_addr()? * 4, iters: 8, pad: 0 };
    for w in &which {
        let Some(b) = body(w) else { anyhow::bail!("unknown variant {w}") };
        let text = format!(
            "struct P {{ dest: u32, source: u32, iters: u32, pad: u32 }}
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {{
    var r = 0;
    for (var k = 0u; k < p.iters; k++) {{ {b} }}
}}
"
        );
        let t0 = std::time::Instant::now();
        let k = ctx.device_kernel(&text, w)?;
        ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&p))?;
        let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut gpu = Vec::new();
        for _ in 0..reps {
            let t = ctx.launch_timed(&k, [1, 1, 1], &[], bytemuck::bytes_of(&p))?;
            gpu.push(t.as_secs_f64() * 1e6 / p.iters as f64);
        }
        gpu.sort_by(f64::total_cmp);
        if ctx.my_pe() == 0 {
            println!("{w:10} compile+first {compile_ms:.0} ms; per call: gpu median {:.1} min {:.1} us", gpu[reps / 2], gpu[0]);
        }
    }
    ctx.finalize()?;
    Ok(())
}
