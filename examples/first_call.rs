//! first_call: how long the first call of each host collective takes, against the
//! second (the first one used to compile its kernel's pipeline).
//!
//! ```text
//! vkshmrun -n 2 target/release/examples/first_call [PAUSE_MS]
//! ```
//! Every PE times `init`, then, for each collective below, its first and second
//! call (each preceded by a `barrier_all`, so the PEs start it together), of 64
//! KiB per member (past the host path of small calls) on the generic and the
//! wide paths, and one of 8 bytes (the host path: no kernel); then a user
//! kernel that calls `shmemx_int32_sum_reduce_work_group` (its first call
//! links and builds it). `VKSHMEM_HOST_MAPPED_MAX=0` sends every host call
//! through a kernel. With
//! `PAUSE_MS`, the PEs sleep that long after `init` (a program doing its own set-up
//! while kernels may be built in the background). PE 0 prints one line per
//! collective: `first_call: <name> first <ms> second <ms>`, with the slowest PE's
//! time for each. `VKSHMEM_PREBUILD=0` turns the background builds off; set
//! `MESA_SHADER_CACHE_DISABLE=true` (and `VKSHMEM_PIPELINE_CACHE=0`) to measure
//! cold compiles.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use vkshmem::Team;

/// A user kernel: a work_group reduction of i32s over a team.
const KERNEL: &str = "
struct P { team: u32, dest: u32, source: u32, n: u32 }
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let r = shmemx_int32_sum_reduce_work_group(p.team, p.dest, p.source, p.n, li, 64u);
}
";

fn main() -> anyhow::Result<()> {
    let pause: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse().context("PAUSE_MS must be a number")?,
        None => 0,
    };
    let t = Instant::now();
    let ctx = vkshmem::init()?;
    let init = t.elapsed();
    std::thread::sleep(Duration::from_millis(pause));
    let n = ctx.n_pes() as usize;
    let w = Team::WORLD;
    // 64 KiB per member: past the host path of small calls
    // (VKSHMEM_HOST_MAPPED_MAX), so every call below but the first runs a kernel.
    // An odd number of u64s is not a multiple of 16 bytes: the generic path;
    // an even one takes the wide path.
    const ODD: usize = 8193;
    const EVEN: usize = 8192;
    let bufs = [ctx.calloc::<u64>(ODD * n)?, ctx.calloc::<u64>(ODD * n)?];
    let floats = [ctx.calloc::<f32>(2 * EVEN)?, ctx.calloc::<f32>(2 * EVEN)?];
    let (a, b) = (bufs[0].as_slice(), bufs[1].as_slice());
    let (f, g) = (floats[0].as_slice(), floats[1].as_slice());
    let ints = [ctx.calloc::<i32>(1024)?, ctx.calloc::<i32>(1024)?];
    let args = [
        Team::WORLD.device_handle(),
        ints[1].device_byte_addr()?,
        ints[0].device_byte_addr()?,
        1024,
    ];
    type Call<'a> = Box<dyn Fn() -> vkshmem::Result<()> + 'a>;
    let calls: Vec<(&str, Call)> = vec![
        ("broadcast 8 B", Box::new(|| ctx.broadcast(w, &b, &a, 1, 0))),
        ("broadcast", Box::new(|| ctx.broadcast(w, &b, &a, ODD, 0))),
        (
            "broadcast wide",
            Box::new(|| ctx.broadcast(w, &b, &a, EVEN, 0)),
        ),
        ("fcollect", Box::new(|| ctx.fcollect(w, &b, &a, ODD))),
        ("fcollect wide", Box::new(|| ctx.fcollect(w, &b, &a, EVEN))),
        ("alltoall", Box::new(|| ctx.alltoall(w, &b, &a, ODD))),
        ("collect", Box::new(|| ctx.collect(w, &b, &a, ODD))),
        (
            "alltoalls",
            Box::new(|| ctx.alltoalls(w, &b, &a, 1, 1, ODD)),
        ),
        (
            "sum_reduce f32 wide",
            Box::new(|| ctx.sum_reduce(w, &g, &f, 2 * EVEN)),
        ),
        (
            "max_reduce f32 wide",
            Box::new(|| ctx.max_reduce(w, &g, &f, 2 * EVEN)),
        ),
        (
            "sum_reduce u64",
            Box::new(|| ctx.sum_reduce(w, &b, &a, EVEN)),
        ),
        (
            "device sum_reduce",
            Box::new(|| {
                let k = ctx.device_kernel(KERNEL, "first_call_reduce")?;
                ctx.launch(&k, [1, 1, 1], &[], bytemuck::cast_slice(&args))
            }),
        ),
    ];
    let mut rows = Vec::new();
    for (name, call) in &calls {
        let mut took = [0f64; 2];
        for t in &mut took {
            ctx.barrier_all()?;
            let start = Instant::now();
            call().with_context(|| name.to_string())?;
            *t = start.elapsed().as_secs_f64() * 1e3;
        }
        rows.push((name, took));
    }
    // The slowest PE's times.
    let mine: Vec<f32> = std::iter::once(init.as_secs_f64() * 1e3)
        .chain(rows.iter().flat_map(|(_, t)| t.iter().copied()))
        .map(|x| x as f32)
        .collect();
    let len = mine.len();
    let src = ctx.malloc::<f32>(len)?;
    let dst = ctx.malloc::<f32>(len)?;
    src.write(&mine)?;
    ctx.max_reduce(w, &dst.as_slice(), &src.as_slice(), len)?;
    let worst = dst.to_vec()?;
    if ctx.my_pe() == 0 {
        println!("first_call: init {:.2} ms (pause {pause} ms)", worst[0]);
        for (i, (name, _)) in rows.iter().enumerate() {
            println!(
                "first_call: {name:<20} first {:7.2} ms second {:6.2} ms",
                worst[1 + 2 * i],
                worst[2 + 2 * i]
            );
        }
    }
    drop(calls);
    drop((src, dst, bufs, floats, ints));
    ctx.finalize()?;
    Ok(())
}
