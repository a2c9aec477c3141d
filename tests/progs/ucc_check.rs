//! UCC's collectives beyond SHMEM (gather(v), scatter(v), allgatherv,
//! alltoallv, reduce_scatter(v), rooted reduce, allreduce, fan-in/out),
//! checked against host references on fresh data, on WORLD and on a strided
//! team of every other PE, with uneven counts (zeros included), roots other
//! than 0 and in-place calls; then bad input, which must fail on every
//! member with a typed error and leave the team usable. Run through vkshmrun
//! or mpirun by tests/launcher.rs, any PE count. Prints `ucc_check: ok`.

#[macro_use]
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/pes.rs"]
mod pes;

use anyhow::Result;
use vkshmem::{Context, Error, ReduceOp, Team};

fn value(seed: u64, pe: u32, i: usize, salt: u64) -> u32 {
    let mut x =
        seed ^ (u64::from(pe) << 40) ^ ((i as u64) << 8) ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 29;
    x as u32
}

fn main() -> Result<()> {
    pes::run(|ctx| {
        let r = check(ctx);
        if let Err(e) = &r {
            eprintln!("ucc_check: PE {}: {e:#}", ctx.my_pe());
        }
        r
    })
}

fn check(ctx: &Context) -> Result<()> {
    let seed_buf = ctx.calloc::<u64>(1)?;
    if ctx.my_pe() == 0 {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos() as u64
            | 1;
        seed_buf.write(&[seed])?;
    }
    let s = seed_buf.as_slice();
    ctx.broadcast(Team::WORLD, &s, &s, 1, 0)?;
    let seed = seed_buf.to_vec()?[0];
    let n = ctx.n_pes();
    // WORLD, and every other PE (PEs outside it get no team, but make the
    // same symmetric allocations).
    let mut teams = vec![(Some(Team::WORLD), n, "world")];
    let evens = if n > 2 {
        ctx.team_split_strided(Team::WORLD, 0, 2, n.div_ceil(2) as i32, &Default::default())?
    } else {
        None
    };
    if n > 2 {
        teams.push((evens, n.div_ceil(2), "evens"));
    }
    let mut calls = 0;
    for (round, &(team, tn, name)) in teams.iter().enumerate() {
        for salt in 0..3u64 {
            let salt = salt + 10 * round as u64;
            fail_fast::scope(format!("team {name}, salt {salt}"));
            calls += one_team(ctx, team, tn, seed, salt)
                .map_err(|e| anyhow::anyhow!("team {name}, salt {salt}: {e:#}"))?;
        }
    }
    fail_fast::scope("bad input".into());
    bad_input(ctx)?;
    if let Some(t) = evens {
        ctx.team_destroy(t)?;
    }
    ctx.barrier_all()?;
    if ctx.my_pe() == 0 {
        println!("ucc_check: ok npes={n} calls={calls}");
    }
    Ok(())
}

/// Every call once on `team` of `tn` members (`None`: this PE is not a
/// member, and only makes the symmetric allocations); returns the calls made.
fn one_team(ctx: &Context, team: Option<Team>, tn: u32, seed: u64, salt: u64) -> Result<u32> {
    let t = tn as usize;
    // Uneven counts with zeros: member i gives (i * 7 + salt) % 5 * 3 elements,
    // plus a large one crossing several pages on member t - 1.
    let counts: Vec<usize> = (0..t)
        .map(|i| {
            if i == t - 1 {
                3000 + salt as usize
            } else {
                (i * 7 + salt as usize) % 5 * 3
            }
        })
        .collect();
    let total: usize = counts.iter().sum();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |a, &c| {
            let d = *a;
            *a += c + 1; // a gap of one element between parts
            Some(d)
        })
        .collect();
    let span = displs[t - 1] + counts[t - 1];
    let root = (salt as u32 + 1) % tn;
    let src_of =
        |m: u32, k: usize| -> Vec<u32> { (0..k).map(|i| value(seed, m, i, salt)).collect() };
    let k = |i: usize, j: usize| (i + j + salt as usize) % 4 + usize::from(i == j);
    let most_sent = (0..t)
        .map(|i| (0..t).map(|j| k(i, j)).sum::<usize>())
        .max()
        .unwrap_or(0);
    let most_received = (0..t)
        .map(|j| (0..t).map(|i| k(i, j)).sum::<usize>())
        .max()
        .unwrap_or(0);
    let largest = counts.iter().copied().max().unwrap_or(0).max(1);
    let per = 37;
    // Every symmetric allocation first, the same on every PE.
    let source = ctx.malloc::<u32>(total.max(1))?;
    let dest = ctx.malloc::<u32>(span.max(total).max(1))?;
    let g = ctx.malloc::<u32>(5 * t)?;
    let big = ctx.malloc::<u32>(span.max(1))?;
    let part = ctx.malloc::<u32>(largest)?;
    let a_src = ctx.malloc::<u32>(most_sent.max(1))?;
    // Room for a gap after each block received.
    let a_dst = ctx.malloc::<u32>(most_received + t)?;
    let rs_src = ctx.malloc::<i32>(total.max(1))?;
    let rs_dst = ctx.malloc::<i32>(largest)?;
    let f_src = ctx.malloc::<f64>(per * t)?;
    let f_dst = ctx.malloc::<f64>(per)?;
    let u_src = ctx.malloc::<u64>(500)?;
    let u_dst = ctx.malloc::<u64>(500)?;
    let h_src = ctx.malloc::<i16>(64)?;
    let h_dst = ctx.malloc::<i16>(64)?;
    let c_src = ctx.malloc::<i8>(67)?;
    let c_dst = ctx.malloc::<i8>(67)?;
    let o_src = ctx.malloc::<i32>(total.max(1) + 64)?;
    let scan_n = 700 + salt as usize;
    let i_scan = ctx.malloc::<i32>(scan_n)?;
    let d_src = ctx.malloc::<f64>(scan_n)?;
    let d_dst = ctx.malloc::<f64>(scan_n)?;
    // Bytes at odd counts and offsets (no whole 32-bit words: not the
    // device's wide copies).
    let b_src = ctx.malloc::<u8>(3 * t + 1)?;
    let b_dst = ctx.malloc::<u8>(4 * t * t + 1)?;
    // A member's source and dest side by side in one allocation.
    let touch = ctx.malloc::<u32>(largest + span.max(1))?;
    let Some(team) = team else {
        return Ok(0);
    };
    let me = ctx.team_my_pe(team)?;
    let mine = src_of(me, total);
    source.write(&mine[..total.max(1).min(mine.len())])?;
    const POISON: u32 = 0xdead_beef;
    // The dest after a gather of every member's part at `displs`: poison in
    // the gaps.
    let gathered = {
        let mut want = vec![POISON; dest.len()];
        for i in 0..t {
            want[displs[i]..displs[i] + counts[i]].copy_from_slice(&src_of(i as u32, counts[i]));
        }
        want
    };
    let mut calls = 0;

    // gatherv with gaps: the root's gaps keep the poison.
    dest.write(&vec![POISON; dest.len()])?;
    ctx.gatherv(
        team,
        root,
        &dest.as_slice(),
        &source.as_slice(),
        &counts,
        Some(&displs),
    )?;
    calls += 1;
    if me == root {
        ensure!(dest.to_vec()? == gathered, "gatherv at root {root}");
    } else {
        ensure!(
            dest.to_vec()?.iter().all(|&v| v == POISON),
            "gatherv wrote a non-root's dest"
        );
    }

    // gather, packed, 5 each (a non-root's dest keeps the poison).
    g.write(&vec![POISON; g.len()])?;
    ctx.gather(team, root, &g.as_slice(), &source.as_slice(), 5)?;
    calls += 1;
    let got = g.to_vec()?;
    if me == root {
        let want: Vec<u32> = (0..t).flat_map(|i| src_of(i as u32, 5)).collect();
        ensure!(got == want, "gather");
    } else {
        ensure!(
            got.iter().all(|&v| v == POISON),
            "gather wrote a non-root's dest"
        );
    }

    // scatterv from the root's source (its own values, in parts with gaps).
    big.write(&src_of(1000 + me, span.max(1)))?;
    part.write(&vec![POISON; part.len()])?;
    ctx.scatterv(
        team,
        root,
        &part.as_slice(),
        &big.as_slice(),
        &counts,
        Some(&displs),
    )?;
    calls += 1;
    let want_root = src_of(1000 + root, span.max(1));
    let got = part.to_vec()?;
    let c = counts[me as usize];
    ensure!(
        got[..c] == want_root[displs[me as usize]..displs[me as usize] + c],
        "scatterv part"
    );
    ensure!(
        got[c..].iter().all(|&v| v == POISON),
        "scatterv wrote past its part"
    );

    // allgatherv, packed, in place of nothing (fresh dest).
    dest.write(&vec![POISON; dest.len()])?;
    ctx.allgatherv(team, &dest.as_slice(), &source.as_slice(), &counts, None)?;
    calls += 1;
    let want: Vec<u32> = (0..t).flat_map(|i| src_of(i as u32, counts[i])).collect();
    ensure!(dest.to_vec()?[..total] == want[..], "allgatherv");

    // allgatherv with gaps: every gap keeps the poison.
    dest.write(&vec![POISON; dest.len()])?;
    ctx.allgatherv(
        team,
        &dest.as_slice(),
        &source.as_slice(),
        &counts,
        Some(&displs),
    )?;
    calls += 1;
    ensure!(dest.to_vec()? == gathered, "allgatherv with gaps");

    // allgatherv in place: each member's source is its own part of the dest
    // (MPI_IN_PLACE), so the others read the very dest it fills.
    let mut mine_in_dest = vec![POISON; dest.len()];
    let part_at = displs[me as usize]..displs[me as usize] + counts[me as usize];
    mine_in_dest[part_at.clone()].copy_from_slice(&src_of(me, counts[me as usize]));
    dest.write(&mine_in_dest)?;
    let own_part = dest.slice(part_at)?;
    ctx.allgatherv(team, &dest.as_slice(), &own_part, &counts, Some(&displs))?;
    calls += 1;
    ensure!(dest.to_vec()? == gathered, "allgatherv in place");

    // gatherv in place at the root: its source is its own part of its dest
    // (MPI_IN_PLACE), read by nobody else but in the bytes it gathers into.
    let mut root_dest = vec![POISON; dest.len()];
    if me == root {
        root_dest[displs[me as usize]..displs[me as usize] + counts[me as usize]]
            .copy_from_slice(&src_of(me, counts[me as usize]));
    }
    dest.write(&root_dest)?;
    let root_part =
        dest.slice(displs[root as usize]..displs[root as usize] + counts[root as usize])?;
    let gv_source = if me == root {
        root_part
    } else {
        source.as_slice()
    };
    ctx.gatherv(
        team,
        root,
        &dest.as_slice(),
        &gv_source,
        &counts,
        Some(&displs),
    )?;
    calls += 1;
    if me == root {
        ensure!(
            dest.to_vec()? == gathered,
            "gatherv in place at root {root}"
        );
    } else {
        ensure!(
            dest.to_vec()? == root_dest,
            "gatherv in place wrote a non-root's dest"
        );
    }

    // scatterv in place at the root: its dest is its own part of the source
    // every member reads; the source stays as it was.
    big.write(&src_of(1100 + me, span.max(1)))?;
    part.write(&vec![POISON; part.len()])?;
    let root_part =
        big.slice(displs[root as usize]..displs[root as usize] + counts[root as usize])?;
    let sv_dest = if me == root {
        root_part
    } else {
        part.as_slice()
    };
    ctx.scatterv(
        team,
        root,
        &sv_dest,
        &big.as_slice(),
        &counts,
        Some(&displs),
    )?;
    calls += 1;
    let want_root = src_of(1100 + root, span.max(1));
    if me == root {
        ensure!(
            big.to_vec()? == want_root,
            "scatterv in place changed the root's source"
        );
    } else {
        let got = part.to_vec()?;
        let c = counts[me as usize];
        ensure!(
            got[..c] == want_root[displs[me as usize]..displs[me as usize] + c]
                && got[c..].iter().all(|&v| v == POISON),
            "scatterv (root in place) part"
        );
    }

    // allgatherv into a dest that touches the member's source: right after
    // it, then right before it (apart, so straight into the dest where the
    // heap is mapped; nothing written a byte past the dest).
    let c = counts[me as usize];
    let mine_part = src_of(me, c);
    for (src_at, dst_at) in [(0, c), (span, 0)] {
        let mut before = vec![POISON; touch.len()];
        before[src_at..src_at + c].copy_from_slice(&mine_part);
        touch.write(&before)?;
        let src_part = touch.slice(src_at..src_at + c)?;
        let d = touch.slice(dst_at..dst_at + span)?;
        ctx.allgatherv(team, &d, &src_part, &counts, Some(&displs))?;
        calls += 1;
        let mut want = vec![POISON; touch.len()];
        want[dst_at..dst_at + span].copy_from_slice(&gathered[..span]);
        want[src_at..src_at + c].copy_from_slice(&mine_part);
        ensure!(
            touch.to_vec()? == want,
            "allgatherv with the dest touching the source (source at {src_at}, dest at {dst_at})"
        );
    }

    // allgatherv of bytes: member i gives 2 * i + 1 bytes, placed at odd
    // offsets with gaps.
    let bc: Vec<usize> = (0..t).map(|i| 2 * i + 1).collect();
    let bd: Vec<usize> = bc
        .iter()
        .enumerate()
        .map(|(i, _)| 1 + i * (2 * t + 1))
        .collect();
    let bytes_of = |m: u32| -> Vec<u8> {
        src_of(7000 + m, 3 * t + 1)
            .iter()
            .map(|&v| v as u8)
            .collect()
    };
    b_src.write(&bytes_of(me))?;
    b_dst.write(&vec![0xa5; b_dst.len()])?;
    ctx.allgatherv(team, &b_dst.as_slice(), &b_src.as_slice(), &bc, Some(&bd))?;
    calls += 1;
    let mut want = vec![0xa5u8; b_dst.len()];
    for i in 0..t {
        want[bd[i]..bd[i] + bc[i]].copy_from_slice(&bytes_of(i as u32)[..bc[i]]);
    }
    ensure!(b_dst.to_vec()? == want, "allgatherv of bytes");

    // alltoallv: member i sends (i + j + salt) % 4 elements to member j, from
    // its source packed by destination, received packed by sender.
    // Received with a gap of one element after each block, which keeps
    // the poison.
    let sc: Vec<usize> = (0..t).map(|j| k(me as usize, j)).collect();
    let sd = packed(&sc);
    let rc: Vec<usize> = (0..t).map(|i| k(i, me as usize)).collect();
    let rd: Vec<usize> = packed(&rc).iter().enumerate().map(|(i, d)| d + i).collect();
    a_dst.write(&vec![POISON; a_dst.len()])?;
    a_src.write(&src_of(2000 + me, a_src.len()))?;
    ctx.alltoallv(
        team,
        &a_dst.as_slice(),
        &a_src.as_slice(),
        &sc,
        &sd,
        &rc,
        &rd,
    )?;
    calls += 1;
    let got = a_dst.to_vec()?;
    let mut want = vec![POISON; a_dst.len()];
    for i in 0..t {
        let their_sc: Vec<usize> = (0..t).map(|j| k(i, j)).collect();
        let their_sd = packed(&their_sc);
        let theirs = src_of(2000 + i as u32, most_sent.max(1));
        let from = &theirs[their_sd[me as usize]..their_sd[me as usize] + rc[i]];
        want[rd[i]..rd[i] + rc[i]].copy_from_slice(from);
    }
    ensure!(got == want, "alltoallv (blocks and gaps)");

    // alltoallv in place: dest and source the same buffer with the same
    // layout (k is symmetric, so what member i sends to j fills the block
    // j's sends to i came from).
    ensure!(sc == rc, "k is symmetric");
    a_src.write(&src_of(2500 + me, a_src.len()))?;
    let a = a_src.as_slice();
    ctx.alltoallv(team, &a, &a, &sc, &sd, &sc, &sd)?;
    calls += 1;
    let mut want = src_of(2500 + me, a_src.len());
    for j in 0..t {
        let their_sd = packed(&(0..t).map(|x| k(j, x)).collect::<Vec<_>>());
        let theirs = src_of(2500 + j as u32, most_sent.max(1));
        want[sd[j]..sd[j] + sc[j]]
            .copy_from_slice(&theirs[their_sd[me as usize]..their_sd[me as usize] + sc[j]]);
    }
    ensure!(a_src.to_vec()? == want, "alltoallv in place");

    // reduce_scatterv (sum of i32, wrapping) and in place; reduce_scatter
    // (max of f64); rooted reduce (xor of u64); allreduce (min of i16).
    let vals = |m: u32| -> Vec<i32> {
        src_of(3000 + m, total.max(1))
            .iter()
            .map(|&v| v as i32)
            .collect()
    };
    rs_src.write(&vals(me))?;
    ctx.reduce_scatterv(
        team,
        ReduceOp::Sum,
        &rs_dst.as_slice(),
        &rs_src.as_slice(),
        &counts,
    )?;
    calls += 1;
    let all: Vec<Vec<i32>> = (0..tn).map(vals).collect();
    let at = packed(&counts)[me as usize];
    let want: Vec<i32> = (0..counts[me as usize])
        .map(|e| all.iter().fold(0i32, |a, v| a.wrapping_add(v[at + e])))
        .collect();
    ensure!(
        rs_dst.to_vec()?[..counts[me as usize]] == want[..],
        "reduce_scatterv sum"
    );
    let want_rs = want.clone();
    // In place: dest is the start of the source.
    let rs_in = rs_src.slice(0..counts[me as usize])?;
    ctx.reduce_scatterv(team, ReduceOp::Sum, &rs_in, &rs_src.as_slice(), &counts)?;
    calls += 1;
    ensure!(
        rs_src.to_vec()?[..counts[me as usize]] == want[..],
        "reduce_scatterv in place"
    );

    let fv = |m: u32| -> Vec<f64> {
        src_of(4000 + m, per * t)
            .iter()
            .map(|&v| f64::from(v) / 7.0 - 1e8)
            .collect()
    };
    f_src.write(&fv(me))?;
    ctx.reduce_scatter(
        team,
        ReduceOp::Max,
        &f_dst.as_slice(),
        &f_src.as_slice(),
        per,
    )?;
    calls += 1;
    let fall: Vec<Vec<f64>> = (0..tn).map(fv).collect();
    let want: Vec<f64> = (0..per)
        .map(|e| {
            fall.iter()
                .map(|v| v[me as usize * per + e])
                .fold(f64::MIN, f64::max)
        })
        .collect();
    ensure!(f_dst.to_vec()? == want, "reduce_scatter max");

    let uv = |m: u32| -> Vec<u64> {
        (0..500)
            .map(|i| u64::from(value(seed, m, i, 5000 + salt)) << 17 | i as u64)
            .collect()
    };
    u_src.write(&uv(me))?;
    u_dst.write(&vec![7; 500])?;
    ctx.reduce_to_root(
        team,
        root,
        ReduceOp::Xor,
        &u_dst.as_slice(),
        &u_src.as_slice(),
        500,
    )?;
    calls += 1;
    if me == root {
        let want: Vec<u64> = (0..500)
            .map(|e| (0..tn).fold(0u64, |a, m| a ^ uv(m)[e]))
            .collect();
        ensure!(u_dst.to_vec()? == want, "rooted reduce xor");
    } else {
        ensure!(
            u_dst.to_vec()? == vec![7; 500],
            "rooted reduce wrote a non-root's dest"
        );
    }

    let hv = |m: u32| -> Vec<i16> { src_of(6000 + m, 64).iter().map(|&v| v as i16).collect() };
    h_src.write(&hv(me))?;
    let hs = h_src.as_slice();
    ctx.allreduce(team, ReduceOp::Min, &hs, &hs, 64)?;
    calls += 1;
    let want: Vec<i16> = (0..64)
        .map(|e| (0..tn).map(|m| hv(m)[e]).min().unwrap())
        .collect();
    ensure!(h_src.to_vec()? == want, "allreduce min in place");
    // Rooted reduce out of place: i16 sums of whole words (the device's
    // fold where the host does not map), i8 sums of 67 bytes (not whole
    // words: the host's); a non-root's dest keeps the poison.
    h_src.write(&hv(me))?;
    h_dst.write(&[-7; 64])?;
    ctx.reduce_to_root(team, root, ReduceOp::Sum, &h_dst.as_slice(), &hs, 64)?;
    calls += 1;
    let want: Vec<i16> = if me == root {
        (0..64)
            .map(|e| (0..tn).fold(0i16, |a, m| a.wrapping_add(hv(m)[e])))
            .collect()
    } else {
        vec![-7; 64]
    };
    ensure!(h_dst.to_vec()? == want, "rooted reduce sum i16");
    let cv = |m: u32| -> Vec<i8> { src_of(6500 + m, 67).iter().map(|&v| v as i8).collect() };
    c_src.write(&cv(me))?;
    c_dst.write(&[-7; 67])?;
    ctx.reduce_to_root(
        team,
        root,
        ReduceOp::Sum,
        &c_dst.as_slice(),
        &c_src.as_slice(),
        67,
    )?;
    calls += 1;
    let want: Vec<i8> = if me == root {
        (0..67)
            .map(|e| (0..tn).fold(0i8, |a, m| a.wrapping_add(cv(m)[e])))
            .collect()
    } else {
        vec![-7; 67]
    };
    ensure!(c_dst.to_vec()? == want, "rooted reduce sum i8 of 67");

    // reduce_scatterv from sources at each member's own offset: 256 bytes
    // further on odd members (a multiple of every device's storage-offset
    // alignment: the device's fold binds each source at its own offset),
    // then 4 bytes further (sources off the dest's 16-byte phase: the
    // host's fold).
    for (shift, name) in [(64, "256 bytes"), (1, "4 bytes")] {
        let at = if me % 2 == 1 { shift } else { 0 };
        let mut v = vec![0i32; o_src.len()];
        v[at..at + total.max(1)].copy_from_slice(&vals(me));
        o_src.write(&v)?;
        rs_dst.write(&vec![0; rs_dst.len()])?;
        let src = o_src.slice(at..at + total.max(1))?;
        ctx.reduce_scatterv(team, ReduceOp::Sum, &rs_dst.as_slice(), &src, &counts)?;
        calls += 1;
        ensure!(
            rs_dst.to_vec()?[..counts[me as usize]] == want_rs[..],
            "reduce_scatterv from sources {name} apart"
        );
    }

    // Prefix sums: i32 inclusive in place (wrapping), f64 exclusive (the
    // first member gets zeros).
    let iv = |m: u32| -> Vec<i32> { src_of(8000 + m, scan_n).iter().map(|&v| v as i32).collect() };
    i_scan.write(&iv(me))?;
    let is = i_scan.as_slice();
    ctx.sum_inscan(team, &is, &is, scan_n)?;
    calls += 1;
    let want: Vec<i32> = (0..scan_n)
        .map(|e| (0..=me).fold(0i32, |a, m| a.wrapping_add(iv(m)[e])))
        .collect();
    ensure!(i_scan.to_vec()? == want, "sum_inscan i32 in place");
    let dv = |m: u32| -> Vec<f64> {
        src_of(9000 + m, scan_n)
            .iter()
            .map(|&v| f64::from(v % 1000))
            .collect()
    };
    d_src.write(&dv(me))?;
    d_dst.write(&vec![-1.0; scan_n])?;
    ctx.sum_exscan(team, &d_dst.as_slice(), &d_src.as_slice(), scan_n)?;
    calls += 1;
    let want: Vec<f64> = (0..scan_n)
        .map(|e| (0..me).fold(0.0, |a, m| a + dv(m)[e]))
        .collect();
    ensure!(d_dst.to_vec()? == want, "sum_exscan f64");
    // And the other way round: f64 inclusive out of place (straight into
    // the dest where the heap is mapped), i32 exclusive in place (through
    // host memory; the first member gets zeros).
    d_dst.write(&vec![-1.0; scan_n])?;
    ctx.sum_inscan(team, &d_dst.as_slice(), &d_src.as_slice(), scan_n)?;
    calls += 1;
    let want: Vec<f64> = (0..scan_n)
        .map(|e| (0..=me).fold(0.0, |a, m| a + dv(m)[e]))
        .collect();
    ensure!(d_dst.to_vec()? == want, "sum_inscan f64 out of place");
    i_scan.write(&iv(me))?;
    ctx.sum_exscan(team, &is, &is, scan_n)?;
    calls += 1;
    let want: Vec<i32> = (0..scan_n)
        .map(|e| (0..me).fold(0i32, |a, m| a.wrapping_add(iv(m)[e])))
        .collect();
    ensure!(i_scan.to_vec()? == want, "sum_exscan i32 in place");

    ctx.fanin(team, root)?;
    ctx.fanout(team, root)?;
    calls += 2;
    Ok(calls)
}

fn packed(c: &[usize]) -> Vec<usize> {
    c.iter()
        .scan(0, |a, &x| {
            let d = *a;
            *a += x;
            Some(d)
        })
        .collect()
}

/// Bad input fails on every member, typed, and the team stays usable.
fn bad_input(ctx: &Context) -> Result<()> {
    let n = ctx.n_pes() as usize;
    let me = ctx.my_pe() as usize;
    let src = ctx.malloc::<u32>(4)?;
    let dst = ctx.malloc::<u32>(4 * n)?;
    let invalid = |r: vkshmem::Result<()>, what: &str| -> Result<()> {
        ensure!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
        Ok(())
    };
    // A list of the wrong length (on every member).
    invalid(
        ctx.gatherv(
            Team::WORLD,
            0,
            &dst.as_slice(),
            &src.as_slice(),
            &vec![1; n + 1],
            None,
        ),
        "counts too long",
    )?;
    // Only the last PE asks for more than its source holds: everyone fails.
    let counts = vec![2; n];
    let mut big = counts.clone();
    big[n - 1] = 5;
    let mine = if me == n - 1 { &big } else { &counts };
    invalid(
        ctx.allgatherv(Team::WORLD, &dst.as_slice(), &src.as_slice(), mine, None),
        "a source too short on one member",
    )?;
    // Different counts on one member (n > 1): everyone fails.
    if n > 1 {
        let mut other = vec![1; n];
        if me == 0 {
            other[0] = 2;
        }
        invalid(
            ctx.gatherv(
                Team::WORLD,
                0,
                &dst.as_slice(),
                &src.as_slice(),
                &other,
                None,
            ),
            "counts that differ",
        )?;
        // alltoallv whose send and receive counts disagree.
        let sc = vec![1; n];
        let mut rc = vec![1; n];
        if me == 0 {
            rc[n - 1] = 2;
        }
        let d = packed(&rc);
        invalid(
            ctx.alltoallv(
                Team::WORLD,
                &dst.as_slice(),
                &src.as_slice(),
                &sc,
                &packed(&sc),
                &rc,
                &d,
            ),
            "alltoallv counts that disagree",
        )?;
    }
    invalid(
        ctx.reduce_to_root(
            Team::WORLD,
            n as u32,
            ReduceOp::Sum,
            &dst.as_slice(),
            &src.as_slice(),
            1,
        ),
        "a root outside the team",
    )?;
    let f = ctx.malloc::<f32>(n)?;
    invalid(
        ctx.reduce_scatterv(
            Team::WORLD,
            ReduceOp::Xor,
            &f.as_slice(),
            &f.as_slice(),
            &vec![1; n],
        ),
        "xor of floats",
    )?;
    invalid(ctx.fanin(Team::WORLD, n as u32), "fanin root outside")?;
    // Still usable.
    src.write(&[me as u32; 4])?;
    ctx.allgatherv(
        Team::WORLD,
        &dst.as_slice(),
        &src.as_slice(),
        &vec![1; n],
        None,
    )?;
    ensure!(
        dst.to_vec()?[..n] == (0..n as u32).collect::<Vec<_>>()[..],
        "after bad input"
    );
    Ok(())
}
