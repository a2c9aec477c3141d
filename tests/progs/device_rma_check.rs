//! Device one-sided communication, checked against host references on fresh
//! data (run through vkshmrun or mpirun by tests/launcher.rs, any PE count):
//! putmem/getmem per-thread and work_group at odd byte offsets and lengths
//! (whole words and partial edge words), strided iput/iget, put_signal with
//! set and add (a carry into the signal's high word), the test/wait families
//! with status masks and vectors, and typed errors for bad input. The
//! message-passing litmus across processes is `examples/halo.rs`. Prints
//! `device_rma_check: ok` on PE 0.

#[macro_use]
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/pes.rs"]
mod pes;

use anyhow::Result;
use vkshmem::{Context, Error};

/// Bytes of the source and dest areas.
const AREA: usize = 4096;

const MOVES: &str = "struct P { mode: u32, src: u32, dst: u32, off: u32, len: u32, pe: u32, sig: u32, words: u32, out: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 0u: { if li == 0u { shmem_putmem(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 1u: { shmemx_putmem_work_group(p.dst + p.off, p.src + p.off, p.len, p.pe, li, 64u); }
        case 2u: { if li == 0u { shmem_getmem_nbi(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 3u: { shmemx_uchar_get_work_group(p.dst + p.off, p.src + p.off, p.len, p.pe, li, 64u); }
        // Every third u32 of dst from every second of src, p.len elements.
        case 4u: { if li == 0u { shmem_uint32_iput(p.dst, p.src, 3u, 2u, p.len, p.pe); } }
        case 5u: { if li == 0u { shmem_int_iget(p.dst, p.src, 3u, 2u, p.len, p.pe); } }
        // The signal set to p.off after p.len bytes.
        case 6u: { if li == 0u { shmem_putmem_signal(p.dst, p.src, p.len, p.sig, p.off, SHMEM_SIGNAL_SET, p.pe); } }
        case 7u: { shmemx_putmem_signal_work_group(p.dst, p.src, p.len, p.sig, p.off, SHMEM_SIGNAL_ADD, p.pe, li, 64u); }
        // Tests and waits on this PE's words[0..4] (status in words[4..8],
        // values in words[8..12]); results in out.
        case 8u: {
            if li == 0u {
                shmem_uint32_p(p.out, u32(shmem_int_test(p.words, SHMEM_CMP_EQ, 5)), VKS_MY_PE_PUBLIC);
                shmem_uint32_p(p.out + 1u, u32(shmem_uint_test_all(p.words, 4u, 0u, SHMEM_CMP_GE, 1u)), VKS_MY_PE_PUBLIC);
                shmem_uint32_p(p.out + 2u, shmem_uint32_test_any(p.words, 4u, p.words + 4u, SHMEM_CMP_GT, 6u), VKS_MY_PE_PUBLIC);
                shmem_uint32_p(p.out + 3u, shmem_int32_test_some_vector(p.words, 4u, p.out + 8u, p.words + 4u, SHMEM_CMP_LE, p.words + 8u), VKS_MY_PE_PUBLIC);
                shmem_uint32_wait_until_all(p.words, 4u, 0u, SHMEM_CMP_NE, 0u);
                shmem_int_wait_until_all_vector(p.words, 4u, p.words + 4u, SHMEM_CMP_GE, p.words + 8u);
                shmem_uint_wait_until(p.words + 1u, SHMEM_CMP_GT, 1u);
                shmem_uint32_p(p.out + 4u, shmem_signal_fetch(p.sig), VKS_MY_PE_PUBLIC);
                shmem_uint32_p(p.out + 5u, shmem_signal_wait_until(p.sig, SHMEM_CMP_GE, 1u), VKS_MY_PE_PUBLIC);
                shmem_uint32_p(p.out + 6u, shmem_uint_wait_until_any(p.words, 4u, p.words + 4u, SHMEM_CMP_GT, 6u), VKS_MY_PE_PUBLIC);
                shmem_uint32_p(p.out + 7u, shmem_int_wait_until_some_vector(p.words, 4u, p.out + 12u, p.words + 4u, SHMEM_CMP_LE, p.words + 8u), VKS_MY_PE_PUBLIC);
            }
        }
        default: {}
    }
}
";

/// Bad input, in a kernel of its own: a kernel without waits on peers
/// leaves the PEs in step after a device error.
const BAD: &str = "struct P { mode: u32, addr: u32, pe: u32 }
var<immediate> p: P;

@compute @workgroup_size(1)
fn main() {
    switch p.mode {
        case 0u: { shmem_putmem(p.addr, p.addr, 8u, p.pe); }
        case 1u: { shmem_getmem(p.addr, p.addr, 64u, p.pe); }
        case 2u: { shmem_putmem_signal(p.addr * 4u, p.addr * 4u, 4u, p.addr + 1u, 1u, SHMEM_SIGNAL_SET, p.pe); }
        default: { shmem_putmem_signal(p.addr * 4u, p.addr * 4u, 4u, p.addr, 1u, 7u, p.pe); }
    }
}
";

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Moves {
    mode: u32,
    src: u32,
    dst: u32,
    off: u32,
    len: u32,
    pe: u32,
    sig: u32,
    words: u32,
    out: u32,
}

fn random_bytes(seed: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 24) as u8
        })
        .collect()
}

fn main() -> Result<()> {
    pes::run(|ctx| {
        let r = check(ctx);
        if let Err(e) = &r {
            eprintln!("device_rma_check: PE {}: {e:#}", ctx.my_pe());
        }
        r
    })
}

fn check(ctx: &Context) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    // `VKS_MY_PE_PUBLIC` is not a library name: the kernel writes its results
    // to its own PE, given here as a constant.
    let moves = ctx.device_kernel(
        &MOVES.replace("VKS_MY_PE_PUBLIC", "u32(shmem_my_pe())"),
        "device_rma_moves.wgsl",
    )?;
    let bad = ctx.device_kernel(BAD, "device_rma_bad.wgsl")?;
    let src = ctx.calloc::<u8>(AREA)?;
    let dst = ctx.calloc::<u8>(AREA)?;
    let sig = ctx.calloc::<u64>(1)?;
    let words = ctx.calloc::<u32>(12)?;
    let out = ctx.calloc::<u32>(16)?;
    let mut a = Moves {
        src: src.device_byte_addr()?,
        dst: dst.device_byte_addr()?,
        sig: sig.device_addr()?,
        words: words.device_addr()?,
        out: out.device_addr()?,
        ..Moves::default()
    };
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64
        ^ (u64::from(me) << 48)
        | 1;

    // putmem / getmem at odd offsets and lengths: bytes [off, off + len) of
    // the dest change, the bytes around keep their poison.
    let cases = [
        (0usize, 4usize),
        (1, 1),
        (3, 6),
        (5, 1000),
        (2, 3001),
        (0, 4096),
    ];
    for mode in 0..4u32 {
        for &(off, len) in &cases {
            let mine = random_bytes(&mut seed, AREA);
            src.write(&mine)?;
            dst.write(&vec![0xa5; AREA])?;
            ctx.barrier_all()?;
            // Puts go to the right neighbour, gets read from it.
            let put = mode < 2;
            a.mode = mode;
            a.off = off as u32;
            a.len = len as u32;
            a.pe = right;
            ctx.launch(&moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
            ctx.barrier_all()?;
            // What the dest must hold: the sender's bytes in the range.
            let held = dst.to_vec()?;
            let from = if put { left } else { right };
            let theirs = {
                // The sender's source, read by the host (independent of the
                // device path under test).
                let mut v = vec![0u8; AREA];
                ctx.get(&mut v, src.as_slice(), from)?;
                v
            };
            for (i, &b) in held.iter().enumerate() {
                let want = if (off..off + len).contains(&i) {
                    theirs[i]
                } else {
                    0xa5
                };
                if b != want {
                    bail!(
                        "mode {mode} ({}, {}): PE {me} byte {i} is {b:#x}, want {want:#x} (offset {off}, {len} bytes, from PE {from})",
                        if put { "put" } else { "get" },
                        if mode % 2 == 0 { "per-thread" } else { "work_group" }
                    );
                }
            }
            ctx.barrier_all()?;
        }
    }

    // iput / iget: 300 u32, dest stride 3, source stride 2.
    let ne = 300usize;
    for mode in [4u32, 5] {
        let mine = random_bytes(&mut seed, AREA);
        src.write(&mine)?;
        dst.write(&vec![0xa5; AREA])?;
        ctx.barrier_all()?;
        a.mode = mode;
        a.len = ne as u32;
        a.pe = right;
        ctx.launch(&moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
        ctx.barrier_all()?;
        let from = if mode == 4 { left } else { right };
        let mut theirs = vec![0u8; AREA];
        ctx.get(&mut theirs, src.as_slice(), from)?;
        let theirs: &[u32] = bytemuck::cast_slice(&theirs);
        let got = dst.to_vec()?;
        let got: &[u32] = bytemuck::cast_slice(&got);
        for (k, &g) in got.iter().enumerate() {
            let want = if k % 3 == 0 && k / 3 < ne {
                theirs[k / 3 * 2]
            } else {
                0xa5a5_a5a5
            };
            ensure!(
                g == want,
                "mode {mode} (strided): PE {me} word {k} is {g:#x}, want {want:#x}"
            );
        }
        ctx.barrier_all()?;
    }

    // put_signal: set (per-thread), then add (work_group) from every PE to
    // its right neighbour; the add carries into the high word.
    let mine = random_bytes(&mut seed, AREA);
    src.write(&mine)?;
    sig.write(&[0])?;
    ctx.barrier_all()?;
    a.mode = 6;
    a.len = 777;
    a.off = 0xffff_fffe;
    a.pe = right;
    ctx.launch(&moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
    ctx.barrier_all()?;
    ensure!(
        sig.to_vec()?[0] == 0xffff_fffe,
        "put_signal set: PE {me}'s signal is {:#x}",
        sig.to_vec()?[0]
    );
    let mut theirs = vec![0u8; AREA];
    ctx.get(&mut theirs, src.as_slice(), left)?;
    ensure!(
        dst.to_vec()?[..777] == theirs[..777],
        "put_signal: PE {me}'s data"
    );
    ctx.barrier_all()?;
    a.mode = 7;
    a.len = 0;
    a.off = 5;
    ctx.launch(&moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
    ctx.barrier_all()?;
    ensure!(
        sig.to_vec()?[0] == 0x1_0000_0003,
        "put_signal add with carry: PE {me}'s signal is {:#x}",
        sig.to_vec()?[0]
    );
    ctx.barrier_all()?;

    // Tests and waits on this PE's words: values, status, per-ivar values.
    let vals: [u32; 12] = [5, 7, 9, 2, 0, 0, 1, 0, 5, 7, 9, 1];
    words.write(&vals)?;
    out.write(&[0xdead; 16])?;
    sig.write(&[3])?;
    a.mode = 8;
    ctx.launch(&moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
    let o = out.to_vec()?;
    // test(words[0] == 5) = 1; test_all(>= 1) = 1; test_any(> 6, ivar 2
    // masked) = 1; test_some_vector(<= values, ivar 2 masked): ivars 0 (5 <=
    // 5), 1 (7 <= 7) and 3 (2 > 1: no) → 2, indices 0, 1; the signal 3
    // twice; wait_until_any(> 6, masked) = 1; wait_until_some_vector as
    // test_some_vector, its indices at 12.
    let want = [1, 1, 1, 2, 3, 3, 1, 2];
    ensure!(
        o[..8] == want && o[8..11] == [0, 1, 0xdead] && o[12..15] == [0, 1, 0xdead],
        "tests and waits on PE {me}: {:?} (indices {:?} and {:?}), want {want:?} (indices [0, 1] twice)",
        &o[..8],
        &o[8..11],
        &o[12..15]
    );
    ctx.barrier_all()?;

    // Bad input: typed errors.
    let heap_words = (ctx.heap_size() / 4) as u32;
    let cases: [(u32, u32, u32, u32, &str); 4] = [
        (
            0,
            src.device_byte_addr()?,
            n,
            vkshmem::ERR_BAD_PE,
            "putmem to PE n",
        ),
        (
            1,
            (heap_words - 4) * 4,
            right,
            vkshmem::ERR_BAD_ADDRESS,
            "getmem past the heap",
        ),
        (
            2,
            sig.device_addr()?,
            right,
            vkshmem::ERR_BAD_ADDRESS,
            "an odd signal address",
        ),
        (
            3,
            sig.device_addr()?,
            right,
            vkshmem::ERR_BAD_ARGUMENT,
            "signal op 7",
        ),
    ];
    for (mode, addr, pe, bit, what) in cases {
        match ctx.launch(
            &bad,
            [1, 1, 1],
            &[],
            bytemuck::cast_slice(&[mode, addr, pe]),
        ) {
            Err(Error::Device { bits, .. }) if bits & bit != 0 => {}
            other => bail!("{what} gave {other:?}"),
        }
    }
    ctx.barrier_all()?;
    if me == 0 {
        println!("device_rma_check: ok npes={n}");
    }
    drop((src, dst, sig, words, out));
    Ok(())
}
