//! Device atomics and device scans, checked against host references (run
//! through vkshmrun or mpirun by tests/launcher.rs, any PE count):
//!
//! - **Concurrent atomics with exact totals**: every invocation of every PE
//!   (2 workgroups of 64) hits the counters of PE `g % n` at once: 64-bit
//!   fetch_add of a value that carries into the high word (its old values
//!   must be exactly `0, v, 2v, …`), fetch_or of bits, size_t inc, 32-bit
//!   adds of negative values, xor, a compare_swap increment loop on a
//!   `long`, and double/float swaps whose old values and final value must
//!   be the multiset of every value swapped in.
//! - **One call of each remaining operation** with a known result: set,
//!   fetch, fetch_and, xor, swap, compare_swap (hit and miss) over the
//!   standard, extended and bitwise type lists.
//! - **Scans** (`shmemx_<T>_sum_inscan` / `_exscan`, per-thread and
//!   work_group) on WORLD and on a strided team: in place, at odd byte
//!   offsets (1- and 2-byte types), 64-bit and float types, zero elements;
//!   in jobs on one device (they have no form across devices).
//! - **Bad input**: a 64-bit atomic at an odd word address, a PE outside the
//!   job.
//!
//! Needs `shaderBufferInt64Atomics` for the 64-bit part (lavapipe and the
//! usual GPUs have it); prints `device_amo_check: ok` on PE 0.

#[macro_use]
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/pes.rs"]
mod pes;

use anyhow::{Context as _, Result};
use vkshmem::{Context, Error, Team};

/// Workgroups of the concurrent kernel (64 invocations each).
const GROUPS: u32 = 2;
/// Invocations per PE in the concurrent kernel (its first `inv` take part).
const INV: u32 = GROUPS * 64;
/// Invocations that take part when some PE is reached through the proxy:
/// each of their calls to such a PE waits for the proxy thread, which serves
/// one PE's requests in turn; on lavapipe, whose invocations may loop 65535
/// times in all, 128 invocations waiting on it at once outlast that budget.
const INV_PROXIED: u32 = 16;
/// The 64-bit fetch_add operand: carries into the high word.
const V64: u64 = 0x1_0000_0003;
/// compare_swap loops per PE run by invocations with local index below this.
const CAS_LANES: u32 = 8;

const AMO: &str = "struct P { c64: u32, c32: u32, olds: u32, swaps: u32, mode: u32, right: u32, out: u32, inv: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let me = u32(shmem_my_pe());
    let n = u32(shmem_n_pes());
    let g = gid.x;
    if MODE == 0u && g < p.inv {
        let t = g % n;
        let old = shmem_uint64_atomic_fetch_add(p.c64, 0x100000003lu, t);
        shmem_uint64_p(p.olds + 2u * g, old, me);
        shmem_ulong_atomic_or(p.c64 + 2u, 1lu << (g % 64u), t);
        shmem_size_atomic_inc(p.c64 + 4u, t);
        shmem_int_atomic_add(p.c32, -i32(g + 1u), t);
        shmem_uint32_atomic_xor(p.c32 + 1u, (g * 2654435761u) ^ (me << 24u), t);
        shmem_int_atomic_fetch_inc(p.c32 + 2u, t);
        if li < 8u {
            var done = false;
            for (var k = 0u; k < 100000u && !done; k++) {
                let o = shmem_long_atomic_fetch(p.c64 + 6u, t);
                done = shmem_long_atomic_compare_swap(p.c64 + 6u, o, o + 3li, t) == o;
            }
        }
        if li == 0u {
            // One swapper per workgroup: invocations 0 and 64.
            let dv = f64(me) * 1000.0 + f64(wg.x) + 0.5;
            let dold = shmem_double_atomic_swap(p.swaps, dv, 0u);
            shmem_double_p(p.olds + 2u * (INV + wg.x), dold, me);
            let fv = f32(me) * 100.0 + f32(wg.x) + 0.25;
            let fold = shmem_float_atomic_swap(p.swaps + 2u, fv, n - 1u);
            shmem_float_p(p.olds + 2u * (INV + GROUPS) + wg.x, fold, me);
        }
    } else if MODE == 1u && g == 0u {
        let r = p.right;
        shmem_int64_p(p.out, shmem_int64_atomic_fetch_and(p.c64, 0x0f0f0f0f0f0f0f0fli, r), me);
        shmem_ulonglong_atomic_xor(p.c64 + 2u, 0xffff0000ffff0000lu, r);
        shmem_int64_p(p.out + 2u, shmem_ptrdiff_atomic_swap(p.c64 + 4u, -5li, r), me);
        shmem_long_atomic_set(p.c64 + 6u, -i64(me + 1u) * 1099511627776li, r);
        shmem_double_p(p.out + 4u, shmem_double_atomic_fetch(p.c64 + 8u, r), me);
        shmem_uint64_p(p.out + 6u, shmem_ulong_atomic_compare_swap(p.c64 + 10u, 77lu, 88lu, r), me);
        shmem_uint64_p(p.out + 8u, shmem_uint64_atomic_compare_swap(p.c64 + 12u, 1lu, 2lu, r), me);
        shmem_int64_p(p.out + 10u, shmem_longlong_atomic_fetch_inc(p.c64 + 14u, r), me);
        shmem_float_atomic_set(p.c32, f32(me) + 0.5, r);
        shmem_uint32_p(p.out + 12u, shmem_uint_atomic_compare_swap(p.c32 + 1u, 5u, 6u, r), me);
        shmem_int32_p(p.out + 13u, shmem_int32_atomic_fetch_or(p.c32 + 2u, 0x70, r), me);
        shmem_float_p(p.out + 14u, shmem_float_atomic_fetch(p.c32 + 3u, r), me);
        shmem_uint64_p(p.out + 16u, shmem_uint64_atomic_fetch(p.c64 + 16u, r), me);
    }
}
";

/// The scan kernels, one per mode (llvmpipe compiles a kernel with all
/// six syncing calls inlined for minutes through the proxy; one call each
/// takes seconds): CALL is replaced by the mode's call.
const SCAN: &str = "struct P { mode: u32, team: u32, d: u32, s: u32, n: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    if p.mode != NOTHING { CALL; }
}
";

/// Each scan mode's call: per-thread forms from invocation 0.
const SCAN_CALLS: [&str; 6] = [
    "if li == 0u { shmemx_int_sum_inscan(p.team, p.d, p.s, p.n); }",
    "shmemx_double_sum_exscan_work_group(p.team, p.d, p.s, p.n, li, 64u)",
    "shmemx_uchar_sum_inscan_work_group(p.team, p.d, p.s, p.n, li, 64u)",
    "if li == 0u { shmemx_short_sum_exscan(p.team, p.d, p.s, p.n); }",
    "shmemx_uint64_sum_inscan_work_group(p.team, p.d, p.s, p.n, li, 64u)",
    "if li == 0u { shmemx_float_sum_exscan(p.team, p.d, p.s, p.n); }",
];

const BAD: &str = "struct P { mode: u32, addr: u32, pe: u32 }
var<immediate> p: P;

@compute @workgroup_size(1)
fn main() {
    switch p.mode {
        case 0u: { shmem_long_atomic_add(p.addr, 1li, p.pe); }
        default: { shmem_uint64_atomic_fetch_inc(p.addr, p.pe); }
    }
}
";

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct AmoArgs {
    c64: u32,
    c32: u32,
    olds: u32,
    swaps: u32,
    mode: u32,
    right: u32,
    out: u32,
    inv: u32,
}

/// The scan kernel's mode that does nothing.
const NOTHING: u32 = 99;

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ScanArgs {
    mode: u32,
    team: u32,
    d: u32,
    s: u32,
    n: u32,
}

/// xorshift64: the same stream on every PE for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| (self.next() >> 24) as u8).collect()
    }
}

fn main() -> Result<()> {
    pes::run(|ctx| {
        let r = check(ctx);
        if let Err(e) = &r {
            eprintln!("device_amo_check: PE {}: {e:#}", ctx.my_pe());
        }
        r
    })
}

fn check(ctx: &Context) -> Result<()> {
    let n = ctx.n_pes();
    concurrent(ctx).context("concurrent atomics")?;
    one_each(ctx).context("one call of each")?;
    let seed = {
        let s = ctx.calloc::<u64>(1)?;
        if ctx.my_pe() == 0 {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
            s.write(&[t.as_nanos() as u64 | 1])?;
        }
        ctx.broadcast(Team::WORLD, &s.as_slice(), &s.as_slice(), 1, 0)?;
        s.to_vec()?[0]
    };
    let evens = if n > 2 {
        ctx.team_split_strided(Team::WORLD, 1, 2, (n / 2) as i32, &Default::default())?
    } else {
        None
    };
    // The device scans have no form across devices (the host's serve every
    // transport), so they are checked in jobs on one device only: with a
    // proxy, llvmpipe takes minutes to compile each scan kernel, even for a
    // team within one device.
    let world: Vec<u32> = (0..n).collect();
    if !spans_devices(ctx, &world)? {
        scans(ctx, Some(Team::WORLD), world, seed).context("scans on WORLD")?;
        let odd: Vec<u32> = (1..n).step_by(2).collect();
        if n > 2 {
            scans(ctx, evens, odd, seed ^ 0x5555).context("scans on the odd PEs")?;
        }
    }
    if let Some(t) = evens {
        ctx.team_destroy(t)?;
    }
    bad_input(ctx)?;
    ctx.barrier_all()?;
    if ctx.my_pe() == 0 {
        println!("device_amo_check: ok npes={n}");
    }
    Ok(())
}

/// Whether some member of `members` reaches another one only through the
/// proxy (agreed by every PE: each knows its own transports).
fn spans_devices(ctx: &Context, members: &[u32]) -> Result<bool> {
    let mut mine = false;
    if members.contains(&ctx.my_pe()) {
        for &q in members {
            mine |= ctx.transport(q)? != vkshmem::Transport::Direct;
        }
    }
    let flag = ctx.calloc::<u32>(1)?;
    flag.write(&[u32::from(mine)])?;
    let f = flag.as_slice();
    ctx.reduce(Team::WORLD, vkshmem::ReduceOp::Max, &f, &f, 1)?;
    let any = flag.to_vec()?[0] != 0;
    flag.free()?;
    Ok(any)
}

/// Runs `body` (which borrows buffers allocated outside it); on an error,
/// prints it and ends this PE at once: dropping the buffers would wait in a
/// collective free for peers that are elsewhere, and the launcher ends the
/// job when a PE exits without finalize.
fn fail_fast(ctx: &Context, body: impl FnOnce() -> Result<()>) -> Result<()> {
    if let Err(e) = body() {
        eprintln!("device_amo_check: PE {}: {e:#}", ctx.my_pe());
        std::process::exit(1);
    }
    Ok(())
}

/// The atomics kernel of `mode` (0: concurrent, 1: one of each), compiled
/// apart: llvmpipe compiles one kernel with both for minutes through the
/// proxy.
fn amo_kernel(ctx: &Context, mode: u32) -> Result<std::sync::Arc<vkshmem::DeviceKernel>> {
    let src = AMO
        .replace("MODE", &format!("{mode}u"))
        .replace("INV", &format!("{INV}u"))
        .replace("GROUPS", &format!("{GROUPS}u"))
        .replace("li < 8u", &format!("li < {CAS_LANES}u"));
    Ok(ctx.device_kernel(&src, &format!("device_amo_{mode}.wgsl"))?)
}

/// Every invocation of every PE at once on PE `g % n`'s counters.
fn concurrent(ctx: &Context) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let k = amo_kernel(ctx, 0)?;
    let c64 = ctx.calloc::<u64>(4)?;
    let c32 = ctx.calloc::<u32>(4)?;
    // Old values: INV u64 of fetch_add, GROUPS f64 swaps, GROUPS f32 swaps.
    let olds = ctx.calloc::<u64>((INV + 2 * GROUPS) as usize)?;
    let swaps = ctx.calloc::<u64>(2)?;
    let flag = ctx.calloc::<u32>(1)?;
    fail_fast(ctx, || {
        // Fewer invocations when any PE reaches another through the proxy
        // (agreed: the totals count every PE's).
        let mut proxied = false;
        for p in 0..n {
            proxied |= ctx.transport(p)? != vkshmem::Transport::Direct;
        }
        flag.write(&[u32::from(proxied)])?;
        let f = flag.as_slice();
        ctx.reduce(Team::WORLD, vkshmem::ReduceOp::Max, &f, &f, 1)?;
        let inv = if flag.to_vec()?[0] != 0 {
            INV_PROXIED
        } else {
            INV
        };
        // Workgroups whose invocation 0 swaps.
        let swappers = inv.div_ceil(64);
        // Initial values of the swap words (PE 0's double, PE n-1's float).
        let (d0, f0) = (-1.25f64, -2.5f32);
        swaps.write(&[d0.to_bits(), u64::from(f0.to_bits())])?;
        ctx.barrier_all()?;
        let a = AmoArgs {
            c64: c64.device_addr()?,
            c32: c32.device_addr()?,
            olds: olds.device_addr()?,
            swaps: swaps.device_addr()?,
            mode: 0,
            inv,
            ..Default::default()
        };
        ctx.launch(&k, [GROUPS, 1, 1], &[], bytemuck::bytes_of(&a))?;
        ctx.barrier_all()?;

        // Who hit PE t: invocation g of every PE with g % n == t.
        let hits = |t: u32| (0..inv).filter(move |g| g % n == t);
        let kt = hits(me).count() as u64 * u64::from(n);
        let got64 = c64.to_vec()?;
        let want_or = hits(me).fold(0u64, |b, g| b | 1 << (g % 64));
        let want_cas = 3 * u64::from(n) * hits(me).filter(|g| g % 64 < CAS_LANES).count() as u64;
        let want64 = [kt.wrapping_mul(V64), want_or, kt, want_cas];
        ensure!(
        got64 == want64,
        "PE {me}'s 64-bit counters are {got64:#x?}, want {want64:#x?} (fetch_add, or, inc, CAS loop)"
    );
        let got32 = c32.to_vec()?;
        let sum: u32 = hits(me).fold(0u32, |s, g| s.wrapping_add(g + 1));
        let add = sum.wrapping_mul(n).wrapping_neg();
        let xor = (0..n).fold(0u32, |x, p| {
            hits(me).fold(x, |x, g| x ^ (g.wrapping_mul(2654435761) ^ (p << 24)))
        });
        let want32 = [add, xor, kt as u32, 0];
        ensure!(
            got32 == want32,
            "PE {me}'s 32-bit counters are {got32:#x?}, want {want32:#x?} (add, xor, inc)"
        );

        // Every PE's old values of the 64-bit fetch_add on PE t are exactly
        // 0, v, …, (K_t - 1) v: gather them all through host gets.
        let mut all = Vec::new();
        for p in 0..n {
            let mut v = vec![0u64; (INV + 2 * GROUPS) as usize];
            ctx.get(&mut v, olds.as_slice(), p)?;
            all.push(v);
        }
        for t in 0..n {
            let mut seen: Vec<u64> = all
                .iter()
                .flat_map(|v| hits(t).map(|g| v[g as usize]))
                .collect();
            seen.sort_unstable();
            let want: Vec<u64> = (0..seen.len() as u64)
                .map(|i| i.wrapping_mul(V64))
                .collect();
            ensure!(
                seen == want,
                "the fetch_add old values for PE {t} are not 0, v, 2v, …: {:x?}…",
                &seen[..seen.len().min(8)]
            );
        }
        // Swaps: old values plus the final value = initial plus every value.
        let mut dgot: Vec<f64> = all
            .iter()
            .flat_map(|v| (0..swappers).map(|w| f64::from_bits(v[(INV + w) as usize])))
            .collect();
        let mut fgot: Vec<f32> = all
            .iter()
            .flat_map(|v| {
                let f: &[f32] = bytemuck::cast_slice(&v[(INV + GROUPS) as usize..]);
                f[..swappers as usize].to_vec()
            })
            .collect();
        let mut fin = [0u64; 2];
        ctx.get(&mut fin[..1], swaps.as_slice(), 0)?;
        ctx.get(&mut fin[1..], swaps.slice(1..2)?, n - 1)?;
        dgot.push(f64::from_bits(fin[0]));
        fgot.push(f32::from_bits(fin[1] as u32));
        let mut dwant = vec![d0];
        let mut fwant = vec![f0];
        for p in 0..n {
            for w in 0..swappers {
                dwant.push(f64::from(p) * 1000.0 + f64::from(w) + 0.5);
                fwant.push(p as f32 * 100.0 + w as f32 + 0.25);
            }
        }
        for v in [&mut dgot, &mut dwant] {
            v.sort_by(f64::total_cmp);
        }
        for v in [&mut fgot, &mut fwant] {
            v.sort_by(f32::total_cmp);
        }
        ensure!(dgot == dwant, "double swaps: {dgot:?}, want {dwant:?}");
        ensure!(fgot == fwant, "float swaps: {fgot:?}, want {fwant:?}");
        ctx.barrier_all()?;
        Ok(())
    })
}

/// One call of each remaining operation, from every PE to its right
/// neighbour, on preset words.
fn one_each(ctx: &Context) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let k = amo_kernel(ctx, 1)?;
    let c64 = ctx.calloc::<u64>(9)?;
    let c32 = ctx.calloc::<u32>(4)?;
    let out = ctx.calloc::<u64>(9)?;
    fail_fast(ctx, || {
        let tag = |p: u32| 0x1234_5678_9abc_def0u64 ^ (u64::from(p) << 8);
        // Preset by each PE on its own words (read by its left neighbour).
        let pre64 = [
            tag(me),
            tag(me),
            u64::from(me) + 40,
            0,
            (f64::from(me) + 0.125).to_bits(),
            77,
            9,
            u64::MAX,
            tag(me) ^ 0xff,
        ];
        let pre32 = [0, 5, 0x0f, (me as f32 * 3.0).to_bits()];
        c64.write(&pre64)?;
        c32.write(&pre32)?;
        ctx.barrier_all()?;
        let a = AmoArgs {
            c64: c64.device_addr()?,
            c32: c32.device_addr()?,
            out: out.device_addr()?,
            mode: 1,
            right,
            ..Default::default()
        };
        ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
        ctx.barrier_all()?;
        // What this PE's words became (written by its left neighbour).
        let got = c64.to_vec()?;
        let want = [
            tag(me) & 0x0f0f_0f0f_0f0f_0f0f,
            tag(me) ^ 0xffff_0000_ffff_0000,
            (-5i64) as u64,
            (-(i64::from(left) + 1) << 40) as u64,
            (f64::from(me) + 0.125).to_bits(),
            88,
            9,
            0,
            tag(me) ^ 0xff,
        ];
        ensure!(
            got == want,
            "PE {me}'s words are {got:#x?}, want {want:#x?}"
        );
        let got32 = c32.to_vec()?;
        let want32 = [
            (left as f32 + 0.5).to_bits(),
            6,
            0x7f,
            (me as f32 * 3.0).to_bits(),
        ];
        ensure!(
            got32 == want32,
            "PE {me}'s 32-bit words are {got32:#x?}, want {want32:#x?}"
        );
        // What this PE fetched from its right neighbour's presets.
        let o = out.to_vec()?;
        let o32: &[u32] = bytemuck::cast_slice(&o);
        let r = u64::from(right);
        let want_out = [
            tag(right),
            r + 40,
            (f64::from(right) + 0.125).to_bits(),
            77,
            9,
            u64::MAX,
        ];
        let got_out = [o[0], o[1], o[2], o[3], o[4], o[5]];
        ensure!(
        got_out == want_out,
        "PE {me} fetched {got_out:#x?}, want {want_out:#x?} (fetch_and, swap, fetch, CAS hit, CAS miss, fetch_inc)"
    );
        let want_o32 = [5, 0x0f, (right as f32 * 3.0).to_bits()];
        ensure!(
            o32[12..15] == want_o32,
            "PE {me} fetched {:#x?}, want {want_o32:#x?} (CAS, fetch_or, float fetch)",
            &o32[12..15]
        );
        ensure!(o[8] == tag(right) ^ 0xff, "uint64 fetch: {:#x}", o[8]);
        ctx.barrier_all()?;
        Ok(())
    })
}

/// The scans on `team` (this PE's view: `None` outside it), whose members
/// are the WORLD PEs `members`; every PE makes the same allocations.
fn scans(ctx: &Context, team: Option<Team>, members: Vec<u32>, seed: u64) -> Result<()> {
    let me = ctx.my_pe();
    const AREA: usize = 8192;
    let src = ctx.calloc::<u8>(AREA)?;
    let dst = ctx.calloc::<u8>(AREA)?;
    fail_fast(ctx, || {
        // (mode, element bytes, dest offset, source offset, elements, in place)
        let cases: [(u32, usize, usize, usize, usize, bool); 8] = [
            (0, 4, 0, 0, 1000, true),
            (1, 8, 8, 16, 700, false),
            (2, 1, 1, 3, 1001, false),
            (2, 1, 0, 0, 4096, true),
            (3, 2, 2, 2, 333, true),
            (4, 8, 0, 0, 1, false),
            (5, 4, 0, 4, 500, false),
            (5, 4, 0, 4, 0, false),
        ];
        for (case, &(mode, es, doff, soff, ne, in_place)) in cases.iter().enumerate() {
            // Every member's source from the shared seed: all can compute all.
            let source_of = |p: u32| {
                let mut r = Rng(seed ^ (u64::from(p) << 32) ^ ((case as u64 + 1) * 0x9e37_79b9));
                let mut b = r.bytes(ne * es);
                if mode == 1 || mode == 5 {
                    // Finite floats (random bits would give NaNs).
                    for (i, c) in b.chunks_mut(es).enumerate() {
                        let v = (r.next() % 2001) as f64 / 8.0 - 125.0 + i as f64;
                        if es == 8 {
                            c.copy_from_slice(&v.to_le_bytes());
                        } else {
                            c.copy_from_slice(&(v as f32).to_le_bytes());
                        }
                    }
                }
                b
            };
            let (d, s) = if in_place { (doff, doff) } else { (doff, soff) };
            let poison = vec![0xa5u8; AREA];
            src.write(&poison)?;
            dst.write(&poison)?;
            let area = if in_place { &dst } else { &src };
            let mine = source_of(me);
            if team.is_some() {
                let mut v = poison.clone();
                v[s..s + mine.len()].copy_from_slice(&mine);
                area.write(&v)?;
            }
            ctx.barrier_all()?;
            // A kernel that syncs is launched by every PE (its launch meets all
            // of WORLD first); a PE outside the team runs the empty mode.
            let src = SCAN
                .replace("NOTHING", &format!("{NOTHING}u"))
                .replace("CALL", SCAN_CALLS[mode as usize]);
            let k = ctx.device_kernel(&src, &format!("device_scan_{mode}.wgsl"))?;
            let a = ScanArgs {
                mode: if team.is_some() { mode } else { NOTHING },
                team: team.map_or(u32::MAX, |t| t.device_handle()),
                d: dst.device_byte_addr()? + d as u32,
                s: area.device_byte_addr()? + s as u32,
                n: ne as u32,
            };
            ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
            ctx.barrier_all()?;
            let Some(pos) = members.iter().position(|&p| p == me) else {
                continue;
            };
            let exclusive = mode % 2 == 1;
            let upto = if exclusive { pos } else { pos + 1 };
            let want = prefix(&members[..upto], &source_of, mode, es, ne);
            let got = dst.to_vec()?;
            for (i, &b) in got.iter().enumerate() {
                let w = if (d..d + ne * es).contains(&i) {
                    want[i - d]
                } else {
                    0xa5
                };
                if b != w {
                    bail!(
                    "case {case} (mode {mode}, {ne} x {es} B, dest +{d}, source +{s}{}): member {pos} byte {i} is {b:#x}, want {w:#x}",
                    if in_place { ", in place" } else { "" }
                );
                }
            }
        }
        ctx.barrier_all()?;
        Ok(())
    })
}

/// The sum of the sources of `members`, in order, as `mode`'s type (bytes).
fn prefix(
    members: &[u32],
    source_of: &dyn Fn(u32) -> Vec<u8>,
    mode: u32,
    es: usize,
    ne: usize,
) -> Vec<u8> {
    let srcs: Vec<Vec<u8>> = members.iter().map(|&p| source_of(p)).collect();
    let mut out = Vec::with_capacity(ne * es);
    for i in 0..ne {
        let el = |s: &Vec<u8>| s[i * es..(i + 1) * es].to_vec();
        let bytes: Vec<u8> = match mode {
            0 => srcs
                .iter()
                .fold(0i32, |a, s| {
                    a.wrapping_add(i32::from_le_bytes(el(s).try_into().unwrap()))
                })
                .to_le_bytes()
                .to_vec(),
            1 => srcs
                .iter()
                .fold(0.0f64, |a, s| {
                    a + f64::from_le_bytes(el(s).try_into().unwrap())
                })
                .to_le_bytes()
                .to_vec(),
            2 => vec![srcs.iter().fold(0u8, |a, s| a.wrapping_add(el(s)[0]))],
            3 => srcs
                .iter()
                .fold(0i16, |a, s| {
                    a.wrapping_add(i16::from_le_bytes(el(s).try_into().unwrap()))
                })
                .to_le_bytes()
                .to_vec(),
            4 => srcs
                .iter()
                .fold(0u64, |a, s| {
                    a.wrapping_add(u64::from_le_bytes(el(s).try_into().unwrap()))
                })
                .to_le_bytes()
                .to_vec(),
            _ => srcs
                .iter()
                .fold(0.0f32, |a, s| {
                    a + f32::from_le_bytes(el(s).try_into().unwrap())
                })
                .to_le_bytes()
                .to_vec(),
        };
        out.extend_from_slice(&bytes);
    }
    out
}

/// Typed errors: a 64-bit atomic at an odd word address, a PE outside the job
/// (n, and u32::MAX).
fn bad_input(ctx: &Context) -> Result<()> {
    let n = ctx.n_pes();
    let k = ctx.device_kernel(BAD, "device_amo_bad.wgsl")?;
    let w = ctx.calloc::<u64>(2)?;
    let cases = [
        (
            0u32,
            w.device_addr()? + 1,
            (ctx.my_pe() + 1) % n,
            vkshmem::ERR_BAD_ADDRESS,
            "a long at an odd word",
        ),
        (
            1,
            w.device_addr()?,
            n,
            vkshmem::ERR_BAD_PE,
            "a uint64 on PE n",
        ),
        // u32(-1): the library's own word for "this PE" (VKS_SELF) is a
        // bad PE from a user, not this PE's heap.
        (
            1,
            w.device_addr()?,
            u32::MAX,
            vkshmem::ERR_BAD_PE,
            "a uint64 on PE -1",
        ),
    ];
    for (mode, addr, pe, bit, what) in cases {
        match ctx.launch(&k, [1, 1, 1], &[], bytemuck::cast_slice(&[mode, addr, pe])) {
            Err(Error::Device { bits, .. }) if bits & bit != 0 => {}
            other => bail!("{what} gave {other:?}"),
        }
    }
    ensure!(w.to_vec()? == [0, 0], "a refused atomic changed memory");
    ctx.barrier_all()?;
    Ok(())
}
