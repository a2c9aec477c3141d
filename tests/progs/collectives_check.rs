//! The collectives' conformance harness: a PE program run by tests/launcher.rs
//! through vkshmrun on 1, 2, 3, 4 (and, with `--quick`, 8) PEs.
//!
//! Every call goes through the same check: per-PE pattern data that encodes the
//! PE, the index and a per-call salt; the destination poisoned before the call so
//! an element left unwritten shows; guard bytes before and after it that must stay
//! untouched; the source checked unchanged (unless in place); the result compared
//! element by element with a host reference computed here from the patterns.
//! Teams: WORLD, the even PEs (stride 2), the first three PEs (not a power of
//! two), WORLD reversed (stride -1), both halves of a split_2d, 1-PE teams, and an
//! active set for the deprecated forms. Then bad input, which must give typed
//! errors on every PE and leave the job usable.
//!
//! Prints `collectives_check: calls=N wrong=W` on every PE; exits non-zero when
//! anything was wrong. `--quick`: fewer teams and sizes; `--device-quick`: only
//! two device collectives per form (each costs llvmpipe seconds to compile);
//! `--host-only`: no device forms.
//! With a staged peer (`VKSHMEM_TRANSPORT=staged`) the host forms run through
//! the staging buffers and the device forms through the proxy.

use vkshmem::half::{bf16, f16};
use vkshmem::{ActiveSet, Error, ReduceOp, SymSlice, Team, TeamConfig, TeamShape};

#[path = "common/combine.rs"]
mod combine;
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/harness.rs"]
mod harness;
#[path = "common/pes.rs"]
mod pes;
use harness::*;

fn bad_input(h: &mut Harness) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let me = ctx.my_pe();
    let d = h.dst_slice::<u32>(16);
    let s = h.src_slice::<u32>(16);
    let overlap = h.dst_slice::<u32>(17);
    let fd = h.dst_slice::<f32>(4);
    let fs = h.src_slice::<f32>(4);
    let mut results = Vec::new();
    let mut expect = |what: &str, r: vkshmem::Result<()>| results.push((what.to_string(), r));
    expect("invalid team", ctx.broadcast(Team::INVALID, &d, &s, 4, 0));
    expect(
        "root outside the team",
        ctx.broadcast(Team::WORLD, &d, &s, 4, ctx.n_pes()),
    );
    let past = SymSlice::<u32>::from_raw(ctx.heap_size() - 8, 16);
    expect(
        "dest past the heap",
        ctx.fcollect(Team::WORLD, &past, &s, 4),
    );
    expect(
        "nelems above the object",
        ctx.alltoall(Team::WORLD, &d, &s, 17),
    );
    if ctx.n_pes() > 1 {
        let n = if me == 0 { 2 } else { 1 };
        expect(
            "fcollect nelems differ",
            ctx.fcollect(Team::WORLD, &d, &s, n),
        );
    }
    let shifted = SymSlice::<u32>::from_raw(overlap.offset() + 4, 16);
    expect(
        "overlapping reduce",
        ctx.reduce(Team::WORLD, ReduceOp::Sum, &overlap, &shifted, 16),
    );
    expect(
        "xor on f32",
        ctx.reduce(Team::WORLD, ReduceOp::Xor, &fd, &fs, 4),
    );
    for (what, r) in results {
        h.calls += 1;
        match r {
            Err(Error::InvalidArgument(_)) => {}
            other => {
                h.wrong += 1;
                h.fail(format!(
                    "PE {me}: {what}: want InvalidArgument, got {other:?}"
                ));
            }
        }
    }
    // Team handles: a destroyed team is invalid; the table has a limit that every
    // member of the parent reports alike; NODE is WORLD here (one node).
    let cfg = TeamConfig::default();
    let t = ctx
        .team_split_strided(Team::WORLD, 0, 1, ctx.n_pes() as i32, &cfg)?
        .expect("every PE is in it");
    ctx.team_destroy(t)?;
    for (what, r) in [
        ("destroyed team", ctx.team_sync(t)),
        ("destroying WORLD", ctx.team_destroy(Team::WORLD)),
    ] {
        h.calls += 1;
        if !matches!(r, Err(Error::InvalidArgument(_))) {
            h.wrong += 1;
            h.fail(format!("PE {me}: {what}: want InvalidArgument, got {r:?}"));
        }
    }
    let mut made = Vec::new();
    let limit = loop {
        match ctx.team_split_strided(Team::WORLD, 0, 1, 1, &cfg) {
            Ok(t) => made.push(t),
            Err(e) => break e,
        }
        anyhow::ensure!(made.len() < 100, "no team limit");
    };
    for t in made.into_iter().flatten() {
        ctx.team_destroy(t)?;
    }
    h.calls += 1;
    if !matches!(limit, Error::TeamLimit { max: 64 }) {
        h.wrong += 1;
        h.fail(format!("PE {me}: team limit: got {limit:?}"));
    }
    // SHARED is the PEs this PE reaches directly: WORLD on one device, this PE
    // alone when every peer is staged.
    let mut direct = Vec::new();
    for pe in 0..ctx.n_pes() {
        if ctx.transport(pe)? == vkshmem::Transport::Direct {
            direct.push(pe);
        }
    }
    let shared = TeamShape::from_members(&direct).expect("a strided set here");
    for (t, want) in [
        (Team::SHARED, shared),
        (Team::NODE, node_shape(me, ctx.n_pes())),
    ] {
        h.calls += 1;
        if ctx.team_shape(t)? != want {
            h.wrong += 1;
            h.fail(format!(
                "PE {me}: {t:?} is {:?}, want {want:?}",
                ctx.team_shape(t)?
            ));
        }
    }
    // The job is still usable.
    h.salt = 1 << 31;
    let tc = TeamCase {
        name: "WORLD after errors".into(),
        team: Team::WORLD,
        members: (0..ctx.n_pes()).collect(),
    };
    h.reduce::<i32>(&tc, ReduceOp::Sum, 5, false)
}

fn active_sets(h: &mut Harness) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let n = ctx.n_pes() as i32;
    let psync = ctx.calloc::<i64>(vkshmem::active_set::BCAST_SYNC_SIZE.max(8))?;
    let pwrk = ctx.calloc::<i64>(64)?;
    let set = ActiveSet {
        pe_start: 0,
        log_pe_stride: 1,
        pe_size: (n + 1) / 2,
    };
    let me = ctx.my_pe();
    h.salt = 1 << 30;
    if me % 2 == 0 {
        let members: Vec<u32> = (0..set.pe_size as u32).map(|i| 2 * i).collect();
        let ps = psync.as_slice();
        for nelems in [0usize, 1, 7, 100] {
            // broadcast64: the root's dest is left alone.
            h.salt += 1;
            let src = h.write_src::<u64>(nelems, None)?;
            h.poison_dst(nelems * 8)?;
            let root = set.pe_size as u32 - 1;
            ctx.broadcast_active(
                &h.dst_slice::<u64>(nelems),
                &h.src_slice::<u64>(nelems),
                nelems,
                root,
                set,
                &ps,
            )?;
            let r = members[root as usize];
            let want: Vec<Option<u64>> = (0..nelems)
                .map(|i| (me != r).then(|| u64::pat(r, i, h.salt, None)))
                .collect();
            h.check_dst(&format!("broadcast64 active set n={nelems}"), &want)?;
            h.check_src("broadcast64 active set", &src)?;
            // fcollect32.
            h.salt += 1;
            h.write_src::<u32>(nelems, None)?;
            h.poison_dst(nelems * members.len() * 4)?;
            ctx.fcollect_active(
                &h.dst_slice::<u32>(nelems * members.len()),
                &h.src_slice::<u32>(nelems),
                nelems,
                set,
                &ps,
            )?;
            let want: Vec<Option<u32>> = members
                .iter()
                .flat_map(|&p| (0..nelems).map(move |i| (p, i)))
                .map(|(p, i)| Some(u32::pat(p, i, h.salt, None)))
                .collect();
            h.check_dst(&format!("fcollect32 active set n={nelems}"), &want)?;
            // int sum_to_all.
            h.salt += 1;
            let mine: Vec<i32> = (0..nelems)
                .map(|i| i32::pat(me, i, h.salt, Some(ReduceOp::Sum)))
                .collect();
            h.src.write(bytemuck::cast_slice(&mine))?;
            h.poison_dst(nelems * 4)?;
            let wrk = SymSlice::<i32>::from_raw(pwrk.offset(), 128);
            ctx.reduce_to_all(
                ReduceOp::Sum,
                &h.dst_slice::<i32>(nelems),
                &h.src_slice::<i32>(nelems),
                nelems,
                set,
                &wrk,
                &ps,
            )?;
            let want: Vec<Option<i32>> = (0..nelems)
                .map(|i| {
                    Some(members.iter().fold(0i32, |a, &p| {
                        a.wrapping_add(i32::pat(p, i, h.salt, Some(ReduceOp::Sum)))
                    }))
                })
                .collect();
            h.check_dst(&format!("int_sum_to_all active set n={nelems}"), &want)?;
            ctx.barrier_active(set, &ps)?;
        }
        // pSync holds SHMEM_SYNC_VALUE again.
        if psync
            .to_vec()?
            .iter()
            .any(|&x| x != vkshmem::active_set::SYNC_VALUE)
        {
            h.wrong += 1;
            h.fail(format!("PE {me}: pSync not restored"));
        }
    }
    ctx.barrier_all()?;
    Ok(())
}

/// The per-thread and work_group forms, through one device kernel. On lavapipe a
/// per-thread call moves everything through one invocation, whose loops the
/// driver caps (65535 iterations), so its sizes stay small there.
fn device_forms(h: &mut Harness, cases: &[TeamCase], quick: bool) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let me = ctx.my_pe();
    let llvmpipe = ctx.device_info().is_llvmpipe();
    let picked: &[usize] = if quick { &[0, 2] } else { &[0, 1, 2, 3, 5, 6] };
    // The multi-workgroup form in the full pass only (1 and 2 PEs in the
    // suite; the soak draws it on 3, 4 and 8): every device kernel is
    // compiled per PE, for seconds on llvmpipe.
    let forms: &[Form] = if quick {
        &[Form::Thread, Form::WorkGroup]
    } else {
        &[Form::Thread, Form::WorkGroup, Form::WorkGroups]
    };
    for &form in forms {
        h.form = form;
        // On lavapipe the multi-workgroup form in workgroups of one SIMD row
        // (the bench's choice there), linked without barriers
        // (`LibraryConfig::row_lanes`); the work_group form in 64, several
        // rows with barriers. The soak draws both sizes for both forms.
        let row = ctx.device_info().subgroup_size;
        h.group = if form == Form::WorkGroups && llvmpipe && row > 0 {
            row
        } else {
            64
        };
        let sizes: &[usize] = match (form, quick) {
            (Form::Thread, true) => &[1, 7],
            (Form::Thread, false) => &[0, 1, 7, 100],
            // Past 64 bytes pulls move vec4s between word-wise heads and
            // tails (the harness's shift misaligns them).
            (Form::WorkGroups, _) => &[0, 7, 1000, 4096, 20_000],
            (_, true) => &[1, 100],
            (_, false) => &[0, 1, 7, 100, 1000, 4096],
        };
        for &k in picked {
            let Some(tc) = cases.get(k) else { continue };
            h.phantom = !tc.members.contains(&me);
            h.salt = 10_000_000
                + 100_000 * k as u32
                + match form {
                    Form::Thread => 0,
                    Form::WorkGroup => 50_000,
                    _ => 70_000,
                };
            for &n in sizes {
                let root = tc.members.len() as u32 - 1;
                // llvmpipe compiles each device kernel for seconds (every wait
                // inlined): there, a subset that still crosses every code path
                // (sub-word and 64-bit kinds, in place, unaligned byte counts).
                h.broadcast::<u8>(tc, n, root)?;
                h.reduce::<u8>(tc, ReduceOp::Xor, n, true)?;
                if quick {
                    continue;
                }
                if form == Form::WorkGroups {
                    // The multi-workgroup form's own paths (the grid sync;
                    // pulls, 1- and 8-byte reductions through the vec4
                    // bulk); the rest is the work_group form's code.
                    h.alltoalls::<u64>(tc, n, 1, 1)?;
                    h.reduce::<f64>(tc, ReduceOp::Max, n, false)?;
                    // Broadcast, fcollect and collect push where the team is
                    // every PE (their vec4s, then the ends word by word);
                    // fcollect and alltoall push on every all-direct team,
                    // before their one sync. Blocks that end off a vec4
                    // (n + 3): pushed tails, and every other block off
                    // alignment (u64) or word by word (u32).
                    h.fcollect::<u32>(tc, n)?;
                    if n > 8 {
                        h.fcollect::<u32>(tc, n + 3)?;
                        h.alltoalls::<u64>(tc, n + 3, 1, 1)?;
                    }
                    continue;
                }
                h.collect::<u8>(tc, n)?;
                h.alltoalls::<u64>(tc, n, 2, 3)?;
                h.reduce::<i32>(tc, ReduceOp::Sum, n, false)?;
                h.reduce::<f64>(tc, ReduceOp::Max, n, false)?;
                if llvmpipe {
                    continue;
                }
                h.broadcast::<i32>(tc, n, 0)?;
                h.fcollect::<u32>(tc, n)?;
                h.fcollect::<i16>(tc, n)?;
                h.alltoall::<u16>(tc, n)?;
                h.alltoalls::<u8>(tc, n, 3, 1)?;
                h.reduce::<i16>(tc, ReduceOp::Prod, n, true)?;
                h.reduce::<u64>(tc, ReduceOp::And, n, false)?;
                h.reduce::<f32>(tc, ReduceOp::Sum, n, true)?;
                h.reduce::<i8>(tc, ReduceOp::Min, n, false)?;
                h.reduce::<u16>(tc, ReduceOp::Or, n, false)?;
                h.reduce::<i64>(tc, ReduceOp::Sum, n, false)?;
                h.reduce::<u32>(tc, ReduceOp::Prod, n, false)?;
            }
        }
    }
    if !quick {
        straddle_chunks(h, &cases[0])?;
    }
    h.phantom = false;
    h.form = Form::Host;
    ctx.barrier_all()?;
    Ok(())
}

/// The multi-workgroup form's vec4 copies on objects that cross a boundary
/// between two storage bindings of the heap (a heap over 128 MiB on
/// lavapipe is bound in chunks of 128 MiB; each piece of a copy lies in one
/// chunk of the source and one of the dest): the source region, then the
/// dest region, placed across the boundary with a pad allocation before
/// it, at two alignments. Skipped on heaps of one chunk.
fn straddle_chunks(h: &mut Harness, world: &TeamCase) -> anyhow::Result<()> {
    let ctx = h.ctx.clone();
    let boundary: u64 = 128 << 20;
    let chunk = ctx.device_info().max_storage_buffer_range;
    if chunk != boundary || ctx.heap_size() < 2 * boundary {
        return Ok(());
    }
    let n = ctx.n_pes() as usize;
    let cap = 64 * 1024 * (n + 1);
    h.form = Form::WorkGroups;
    h.phantom = false;
    for src_straddles in [true, false] {
        let probe = ctx.malloc::<u8>(256)?;
        let top = probe.offset();
        probe.free()?;
        // The straddling region starts 32 KiB before the boundary.
        let first_bytes = if src_straddles { 0 } else { cap as u64 };
        let at = boundary - 32 * 1024 - first_bytes;
        anyhow::ensure!(top < at, "the heap is already used past {at}");
        let pad = ctx.malloc::<u8>((at - top) as usize)?;
        // First fit: the source right after the pad, the dest after it.
        let src = ctx.malloc::<u8>(cap)?;
        let dst = ctx.malloc::<u8>(cap + 2 * GUARD)?;
        let straddler = if src_straddles {
            src.offset()
        } else {
            dst.offset()
        };
        anyhow::ensure!(
            straddler < boundary && straddler + cap as u64 > boundary,
            "region at {straddler} does not cross {boundary}"
        );
        let old_src = std::mem::replace(&mut h.src, src);
        let old_dst = std::mem::replace(&mut h.dst, dst);
        let old_cap = std::mem::replace(&mut h.cap, cap);
        for shift in [0usize, 4] {
            h.shift = shift;
            h.salt = 20_000_000 + shift as u32 + u32::from(src_straddles);
            // 60 KiB: the source (or dest) crosses at 32 KiB; the
            // alltoall's blocks (unit strides: the alltoall's pulls) at
            // their own offsets. Kernels the pass above built already.
            h.alltoalls::<u64>(world, 7 * 1024 / n, 1, 1)?;
            h.broadcast::<u8>(world, 60 * 1024 + 3, n as u32 - 1)?;
        }
        h.shift = 0;
        let src = std::mem::replace(&mut h.src, old_src);
        let dst = std::mem::replace(&mut h.dst, old_dst);
        h.cap = old_cap;
        dst.free()?;
        src.free()?;
        pad.free()?;
    }
    Ok(())
}

/// `--device-misuse`: every PE calls the device broadcast with a root outside the
/// team; every PE must get `Error::Device` with `ERR_BAD_PE` (then the context is
/// broken by design, so the program ends without finalize).
fn device_misuse() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let buf = ctx.malloc::<u8>(64)?;
    let k = ctx.device_kernel(&device_kernel_source(0, Form::Thread, 64), "misuse")?;
    let args = DeviceArgs {
        which: 0,
        form: 0,
        team: Team::WORLD.device_handle(),
        dest: buf.device_byte_addr()? + 32,
        source: buf.device_byte_addr()?,
        n: 8,
        root: ctx.n_pes(),
        dst: 0,
        sst: 0,
    };
    match ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&args)) {
        Err(Error::Device { bits, .. }) if bits & vkshmem::ERR_BAD_PE != 0 => {
            println!(
                "collectives_check: device misuse reported on PE {}",
                ctx.my_pe()
            );
            Ok(())
        }
        other => anyhow::bail!("device broadcast with a bad root: got {other:?}"),
    }
}

/// The PEs of this PE's node: every PE, but under mpirun with
/// `VKSHMEM_NODE_SIZE=K`, the K consecutive ranks around `me`.
fn node_shape(me: u32, n: u32) -> TeamShape {
    match std::env::var("VKSHMEM_NODE_SIZE")
        .ok()
        .and_then(|k| k.parse::<u32>().ok())
    {
        Some(k) if std::env::var("OMPI_COMM_WORLD_SIZE").is_ok() => {
            let first = me / k * k;
            let pes: Vec<u32> = (first..(first + k).min(n)).collect();
            TeamShape::from_members(&pes).expect("consecutive")
        }
        _ => TeamShape::world(n),
    }
}

fn main() -> anyhow::Result<()> {
    if std::env::args().any(|a| a == "--device-misuse") {
        return device_misuse();
    }
    pes::run(check)
}

/// One PE's checks.
fn check(ctx: &vkshmem::Context) -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let mut h = Harness::new(ctx, 4 << 20)?;
    let cases = teams(ctx)?;
    let (big, small): (&[usize], &[usize]) = if quick {
        (&[0, 1, 7, 1024], &[1, 33])
    } else {
        (
            &[0, 1, 2, 7, 16, 33, 256, 1000, 4096, 65536],
            &[0, 1, 7, 33, 1000],
        )
    };
    for (k, tc) in cases.iter().enumerate() {
        if !tc.members.contains(&ctx.my_pe()) {
            continue;
        }
        if quick && k > 2 {
            continue;
        }
        // Members run the same calls on a team, so the salts agree.
        h.salt = 100_000 * k as u32;
        if k == 0 {
            // WORLD: every size and several element sizes for the movement, the
            // whole type x operation table for the reductions.
            h.movement::<u8>(tc, big, 33)?;
            h.movement::<u32>(tc, big, 7)?;
            h.movement::<u64>(tc, small, 1)?;
            h.movement::<i16>(tc, small, 1)?;
            h.reduce_all_ops::<i8>(tc, small)?;
            h.reduce_all_ops::<u8>(tc, small)?;
            h.reduce_all_ops::<i16>(tc, small)?;
            h.reduce_all_ops::<u16>(tc, small)?;
            h.reduce_all_ops::<i32>(tc, small)?;
            h.reduce_all_ops::<u32>(tc, small)?;
            h.reduce_all_ops::<i64>(tc, small)?;
            h.reduce_all_ops::<u64>(tc, small)?;
            h.reduce_all_ops::<f32>(tc, small)?;
            h.reduce_all_ops::<f64>(tc, small)?;
            h.reduce_all_ops::<f16>(tc, small)?;
            h.reduce_all_ops::<bf16>(tc, small)?;
            for &n in big {
                h.reduce::<f32>(tc, ReduceOp::Sum, n, false)?;
                h.reduce::<u8>(tc, ReduceOp::Xor, n, true)?;
                h.reduce::<i64>(tc, ReduceOp::Max, n, true)?;
                h.reduce::<f16>(tc, ReduceOp::Sum, n, true)?;
                h.reduce::<bf16>(tc, ReduceOp::Prod, n, false)?;
                // Max and min compare the half types' bits as integers
                // (`combine::half_order`), past the data slot in L1 chunks.
                h.reduce::<bf16>(tc, ReduceOp::Max, n, true)?;
                h.reduce::<f16>(tc, ReduceOp::Min, n, false)?;
            }
            // Sources and dests off 16-byte alignment by the same amount, in
            // whole words: the wide kernels start the objects inside their
            // first vec4 (reductions; broadcast, fcollect and collect
            // pushes; alltoall and alltoalls pulls of blocks of whole vec4s
            // at once, of blocks off them one at a time or word by word; the
            // guards check the words before and after them).
            let root = tc.members.len() as u32 - 1;
            for (shift, sizes) in [(4usize, &[5usize, 100, 5000, 70_000][..]), (12, &[70_001])] {
                h.shift = shift;
                for &n in sizes {
                    h.reduce::<f32>(tc, ReduceOp::Sum, n, false)?;
                    h.reduce::<u8>(tc, ReduceOp::Xor, n, true)?;
                    h.broadcast::<u32>(tc, n, root)?;
                    h.fcollect::<u32>(tc, n)?;
                    h.collect::<u32>(tc, n)?;
                    h.alltoall::<u32>(tc, n)?;
                    h.alltoalls::<u32>(tc, n, 1, 1)?;
                }
            }
            // 8-byte elements 8 bytes off: wide from inside the first vec4.
            h.shift = 8;
            for n in [7usize, 70_001] {
                h.reduce::<f64>(tc, ReduceOp::Max, n, false)?;
                h.reduce::<i64>(tc, ReduceOp::Sum, n, true)?;
            }
            h.shift = 2;
            h.reduce::<f16>(tc, ReduceOp::Sum, 70_001, false)?;
            h.broadcast::<u8>(tc, 70_001, root)?;
            h.shift = 0;
        } else {
            let sizes: &[usize] = if quick {
                &[1, 7]
            } else {
                &[0, 1, 7, 256, 4096]
            };
            h.movement::<u8>(tc, sizes, 7)?;
            h.movement::<u64>(tc, sizes, 1)?;
            for &n in sizes {
                h.reduce::<i32>(tc, ReduceOp::Sum, n, false)?;
                h.reduce::<u8>(tc, ReduceOp::Xor, n, true)?;
                h.reduce::<f64>(tc, ReduceOp::Max, n, false)?;
                h.reduce::<i16>(tc, ReduceOp::Prod, n, true)?;
                h.reduce::<u64>(tc, ReduceOp::And, n, false)?;
            }
        }
        ctx.team_sync(tc.team)?;
    }
    ctx.barrier_all()?;
    active_sets(&mut h)?;
    bad_input(&mut h)?;
    let device_quick = quick || std::env::args().any(|a| a == "--device-quick");
    // With a staged peer (another device, VKSHMEM_TRANSPORT=staged) device
    // code reaches it through the proxy.
    let host_only = std::env::args().any(|a| a == "--host-only");
    if !(host_only || quick && ctx.device_info().is_llvmpipe()) {
        // With --quick on llvmpipe (more PEs than cores) the device pass
        // would mostly measure kernel compilation: skipped there.
        device_forms(&mut h, &cases, device_quick)?;
    }
    for c in cases.iter().skip(1).filter(|c| c.team != Team::INVALID) {
        ctx.team_destroy(c.team)?;
    }
    h.finish("collectives_check")
}
