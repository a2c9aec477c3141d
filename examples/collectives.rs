//! Collectives from the host and from a shader, on WORLD and on a split team.
//!
//! `vkshmrun -n 4 target/release/examples/collectives`
//!
//! 1. A host-initiated allreduce (sum of f32 "gradients", in place).
//! 2. The even PEs form a team and broadcast from their last member.
//! 3. A user kernel sums an i32 array over WORLD with the work_group form of the
//!    device library's reduction, then checks it against the host's arithmetic.
//! 4. The same with the multi-workgroup form: every workgroup of the dispatch
//!    (as many as the device runs at once) takes a share of a 1 MiB fcollect.

use vkshmem::{Team, TeamConfig};

const KERNEL: &str = "
struct P { team: u32, dest: u32, source: u32, n: u32 }
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let r = shmemx_int32_sum_reduce_work_group(p.team, p.dest, p.source, p.n, li, 64u);
}
";

/// Every workgroup of the dispatch calls the `_work_groups` form with its
/// number and the dispatch's count; the library syncs them around one team
/// sync per PE.
const GRID_KERNEL: &str = "
struct P { team: u32, dest: u32, source: u32, n: u32 }
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
    let r = shmemx_uint32_fcollect_work_groups(p.team, p.dest, p.source, p.n, li, 64u, wid.x, nw.x);
}
";

fn main() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let (me, n) = (ctx.my_pe(), ctx.n_pes());

    // 1. Allreduce from the host.
    let grads = ctx.malloc::<f32>(1 << 16)?;
    grads.write(&vec![me as f32 + 1.0; 1 << 16])?;
    let g = grads.as_slice();
    ctx.sum_reduce(Team::WORLD, &g, &g, 1 << 16)?;
    let want = (n * (n + 1) / 2) as f32;
    anyhow::ensure!(grads.to_vec()?.iter().all(|&x| x == want), "allreduce");

    // 2. A team of the even PEs; broadcast from its last member.
    let evens = ctx.team_split_strided(
        Team::WORLD,
        0,
        2,
        n.div_ceil(2) as i32,
        &TeamConfig::default(),
    )?;
    let msg = ctx.malloc::<u8>(13)?;
    let got = ctx.malloc::<u8>(13)?;
    msg.write(format!("hello from {:2}", me).as_bytes())?;
    if let Some(t) = evens {
        let root = ctx.team_n_pes(t)? - 1;
        ctx.broadcast(t, &got.as_slice(), &msg.as_slice(), 13, root)?;
        let from = ctx
            .team_translate_pe(t, root as i32, Team::WORLD)?
            .unwrap_or(0);
        anyhow::ensure!(
            got.to_vec()? == format!("hello from {:2}", from).as_bytes(),
            "broadcast"
        );
        ctx.team_destroy(t)?;
    }

    // 3. A device-initiated reduction, one workgroup per PE.
    let len = 1000u32;
    let src = ctx.malloc::<i32>(len as usize)?;
    let dst = ctx.malloc::<i32>(len as usize)?;
    src.write(
        &(0..len as i32)
            .map(|i| i * (me as i32 + 1))
            .collect::<Vec<_>>(),
    )?;
    let k = ctx.device_kernel(KERNEL, "sum_reduce_kernel")?;
    let args = [
        Team::WORLD.device_handle(),
        dst.device_byte_addr()?,
        src.device_byte_addr()?,
        len,
    ];
    ctx.launch(&k, [1, 1, 1], &[], bytemuck::cast_slice(&args))?;
    let factor = (n * (n + 1) / 2) as i32;
    anyhow::ensure!(
        dst.to_vec()?
            .iter()
            .enumerate()
            .all(|(i, &x)| x == i as i32 * factor),
        "device reduction"
    );

    // 4. A multi-workgroup fcollect of 1 MiB per PE, over every workgroup
    // the device runs at once (llvmpipe: its threads; a GPU: its SMs or CUs).
    let per = (1u32 << 20) / 4;
    let mine = ctx.malloc::<u32>(per as usize)?;
    let all = ctx.malloc::<u32>((per * n) as usize)?;
    mine.write(&(0..per).map(|i| i ^ (me << 24)).collect::<Vec<_>>())?;
    let k = ctx.device_kernel(GRID_KERNEL, "fcollect_work_groups")?;
    let args = [
        Team::WORLD.device_handle(),
        all.device_byte_addr()?,
        mine.device_byte_addr()?,
        per,
    ];
    let groups = ctx.resident_workgroups().min(8);
    ctx.launch(&k, [groups, 1, 1], &[], bytemuck::cast_slice(&args))?;
    anyhow::ensure!(
        all.to_vec()?
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u32 % per) ^ ((i as u32 / per) << 24)),
        "multi-workgroup fcollect"
    );

    if me == 0 {
        println!("collectives: ok on {n} PEs (allreduce, team broadcast, device reduction, multi-workgroup fcollect over {groups} workgroups)");
    }
    ctx.finalize()?;
    Ok(())
}
