//! Host one-sided communication, checked against host references on fresh
//! data (run through vkshmrun or mpirun by tests/launcher.rs, any PE count):
//! put/get (contiguous, single-element, strided, across several proxy cells),
//! every atomic over its types with exact totals from every PE at once,
//! put_signal + signal_wait_until as a message-passing litmus, the
//! wait_until/test families with status masks and vectors, and typed errors
//! for bad input. Prints `rma_check: ok` on PE 0. On a heap the host does
//! not map (`VKSHMEM_HOST_MAPPED_MAX=0`) the atomics go through a kernel:
//! the same checks hold.

#[macro_use]
#[path = "common/fail_fast.rs"]
mod fail_fast;
#[path = "common/pes.rs"]
mod pes;

use anyhow::{Context as _, Result};
use vkshmem::rma::{Cmp, SignalOp};
use vkshmem::{Context, Error, SymSlice};

/// Elements per PE of the put/get buffers: several proxy cells, several pages.
const LEN: usize = 5000;
/// Atomic operations per PE per check.
const K: u64 = 64;

/// A value no two (seed, pe, i, round) share in practice.
fn pattern(seed: u64, pe: u32, i: usize, round: u64) -> u32 {
    let mut x = seed ^ (u64::from(pe) << 40) ^ ((i as u64) << 8) ^ round.wrapping_mul(0x9e37_79b9);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x as u32
}

fn main() -> Result<()> {
    pes::run(|ctx| {
        let r = check(ctx);
        if let Err(e) = &r {
            eprintln!("rma_check: PE {}: {e:#}", ctx.my_pe());
        }
        r
    })
}

fn check(ctx: &Context) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;

    // A fresh seed from PE 0 to every PE (through p, which the checks below
    // test in detail).
    let seed_buf = ctx.calloc::<u64>(1)?;
    if me == 0 {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos() as u64;
        for pe in 0..n {
            ctx.p(seed_buf.as_slice(), seed, pe)?;
        }
    }
    ctx.barrier_all()?;
    let seed = seed_buf.to_vec()?[0];
    ensure!(seed != 0, "the seed did not arrive");

    // put / get: the whole buffer to the right, then back from the left.
    let buf = ctx.calloc::<u32>(LEN)?;
    let mine: Vec<u32> = (0..LEN).map(|i| pattern(seed, me, i, 0)).collect();
    ctx.put(buf.as_slice(), &mine, right)?;
    ctx.barrier_all()?;
    let want: Vec<u32> = (0..LEN).map(|i| pattern(seed, left, i, 0)).collect();
    ensure!(
        buf.to_vec()? == want,
        "put: PE {me} does not hold PE {left}'s data"
    );
    let mut got = vec![0u32; LEN - 3];
    ctx.get(&mut got, buf.slice(3..LEN)?, right)?;
    ensure!(
        got == mine[3..],
        "get: PE {me} read wrong data from PE {right}"
    );
    ctx.get_nbi(&mut got[..0], buf.as_slice(), right)?; // zero elements: nothing
    ctx.put_nbi(buf.slice(0..1)?, &[7], me)?;
    ctx.quiet()?;
    ensure!(
        buf.to_vec()?[0] == 7,
        "put_nbi to itself did not land by quiet"
    );
    ctx.barrier_all()?;

    // p / g: element `me` of every PE's array.
    let arr = ctx.calloc::<u64>(n as usize)?;
    for pe in 0..n {
        ctx.p(
            arr.slice(me as usize..n as usize)?,
            u64::from(pattern(seed, me, pe as usize, 1)),
            pe,
        )?;
    }
    ctx.barrier_all()?;
    let v = arr.to_vec()?;
    for j in 0..n {
        ensure!(
            v[j as usize] == u64::from(pattern(seed, j, me as usize, 1)),
            "p: element {j} on PE {me}"
        );
    }
    let far = (me + 2) % n;
    let g = ctx.g(arr.slice(me as usize..n as usize)?, far)?;
    ensure!(
        g == u64::from(pattern(seed, me, far as usize, 1)),
        "g from PE {far}"
    );

    // iput / iget: every third element of the destination, from every
    // second of the source; the gaps stay untouched.
    let (ne, dst, sst) = (300usize, 3usize, 2usize);
    let strided = ctx.calloc::<i64>(ne * dst)?;
    let src: Vec<i64> = (0..ne * sst)
        .map(|i| i64::from(pattern(seed, me, i, 2)) - (1 << 31))
        .collect();
    ctx.barrier_all()?;
    ctx.iput(strided.as_slice(), &src, dst, sst, ne, right)?;
    ctx.barrier_all()?;
    let held = strided.to_vec()?;
    for (k, &h) in held.iter().enumerate() {
        let want = if k % dst == 0 {
            i64::from(pattern(seed, left, k / dst * sst, 2)) - (1 << 31)
        } else {
            0
        };
        ensure!(
            h == want,
            "iput: element {k} on PE {me} is {h}, want {want}"
        );
    }
    let mut back = vec![-1i64; ne * 2];
    ctx.iget(&mut back, strided.as_slice(), 2, dst, ne, right)?;
    for i in 0..ne {
        ensure!(
            back[2 * i] == src[i * sst] && back[2 * i + 1] == -1,
            "iget: element {i}"
        );
    }
    ensure!(
        matches!(
            ctx.iput(strided.as_slice(), &src, 0, 1, 2, right),
            Err(Error::InvalidArgument(_))
        ),
        "iput with a zero stride must fail"
    );

    check_atomics(ctx, seed)?;
    check_signals(ctx, seed)?;
    check_waits(ctx)?;

    // Bad input: typed errors, nothing touched.
    ensure!(
        matches!(
            ctx.put(buf.as_slice(), &mine, n),
            Err(Error::InvalidArgument(_))
        ),
        "put to PE n"
    );
    ensure!(
        matches!(
            ctx.put(buf.slice(0..2)?, &mine[..3], right),
            Err(Error::InvalidArgument(_))
        ),
        "put past the object"
    );
    let outside = SymSlice::<u32>::from_raw(ctx.heap_size() - 4, 4);
    ensure!(
        matches!(
            ctx.get(&mut [0u32; 4], outside, right),
            Err(Error::InvalidArgument(_))
        ),
        "get outside the heap"
    );
    ensure!(
        matches!(
            ctx.atomic_fetch(SymSlice::<u64>::from_raw(0, 1), right),
            Err(Error::InvalidArgument(_))
        ),
        "an atomic in the control region"
    );
    let one_too_many = vec![1u64; n as usize + 1];
    ensure!(
        matches!(
            ctx.wait_until_all_vector(arr.as_slice(), None, Cmp::Eq, &one_too_many),
            Err(Error::InvalidArgument(_))
        ),
        "a vector of the wrong length"
    );
    ctx.barrier_all()?;
    if me == 0 {
        println!("rma_check: ok npes={n}");
    }
    Ok(())
}

/// Every atomic, from every PE at once, with exact totals.
fn check_atomics(ctx: &Context, seed: u64) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let last = n - 1;
    let c64 = ctx.calloc::<u64>(1)?;
    let olds = ctx.calloc::<u64>((n as u64 * K) as usize)?;
    let c32 = ctx.calloc::<i32>(1)?;
    let cas = ctx.calloc::<u32>(1)?;
    let size = ctx.calloc::<usize>(1)?;
    let bits = ctx.calloc::<u64>(1)?;
    let floats = ctx.calloc::<f64>(n as usize)?;
    let f32s = ctx.calloc::<f32>(1)?;
    ctx.barrier_all()?;
    // fetch_add on PE 0: the old values are 0..n*K, each once.
    let mut mine = Vec::new();
    for _ in 0..K {
        mine.push(ctx.atomic_fetch_add(c64.as_slice(), 1, 0)?);
    }
    ctx.put(
        olds.slice((me as u64 * K) as usize..(n as u64 * K) as usize)?,
        &mine,
        0,
    )?;
    // Negative adds on the last PE's i32 (wrapping arithmetic is the type's).
    for _ in 0..K {
        ctx.atomic_add(c32.as_slice(), -(me as i32 + 1), last)?;
    }
    // compare_swap increments on PE 1 % n.
    for _ in 0..K / 4 {
        let mut seen = ctx.atomic_fetch(cas.as_slice(), 1 % n)?;
        loop {
            let was = ctx.atomic_compare_swap(cas.as_slice(), seen, seen + 1, 1 % n)?;
            if was == seen {
                break;
            }
            seen = was;
        }
    }
    // inc / fetch_inc on size_t.
    for k in 0..K {
        if k % 2 == 0 {
            ctx.atomic_inc(size.as_slice(), last)?;
        } else {
            ctx.atomic_fetch_inc(size.as_slice(), last)?;
        }
    }
    // Bits: or sets this PE's bits (two per PE, wrapping past 64), xor
    // toggles a seed-chosen one twice, and clears nothing.
    let mask = (1u64 << (me % 64)) | (1u64 << ((me + 32) % 64));
    ctx.atomic_or(bits.as_slice(), mask, 0)?;
    let t = 1u64 << (seed % 64);
    ctx.atomic_fetch_xor(bits.as_slice(), t, 0)?;
    ctx.atomic_xor(bits.as_slice(), t, 0)?;
    // Extended types: set / swap / fetch of doubles and floats.
    let fv = me as f64 + 0.5;
    ctx.atomic_set(floats.slice(me as usize..n as usize)?, fv, (me + 1) % n)?;
    ctx.atomic_swap(f32s.as_slice(), me as f32, 0)?;
    ctx.barrier_all()?;

    if me == 0 {
        let mut all = olds.to_vec()?;
        all.sort_unstable();
        ensure!(
            all == (0..n as u64 * K).collect::<Vec<_>>(),
            "fetch_add's old values are not 0..{}",
            n as u64 * K
        );
        ensure!(
            ctx.atomic_fetch(c64.as_slice(), 0)? == n as u64 * K,
            "fetch_add total"
        );
        let b = ctx.atomic_fetch(bits.as_slice(), 0)?;
        let want = (0..n).fold(0u64, |a, p| {
            a | (1u64 << (p % 64)) | (1u64 << ((p + 32) % 64))
        });
        ensure!(b == want, "or/xor: {b:#x}, want {want:#x}");
        let f = ctx.atomic_fetch(f32s.as_slice(), 0)?;
        ensure!(f.fract() == 0.0 && f < n as f32, "swap left {f}");
    }
    if me == last {
        let want = -(K as i64 * (n as i64 * (n as i64 + 1) / 2)) as i32;
        ensure!(
            c32.to_vec()?[0] == want,
            "i32 add total {} want {want}",
            c32.to_vec()?[0]
        );
        ensure!(size.to_vec()?[0] == (n as u64 * K) as usize, "inc total");
    }
    if me == 1 % n {
        ensure!(
            cas.to_vec()?[0] == (n as u64 * (K / 4)) as u32,
            "compare_swap total {}",
            cas.to_vec()?[0]
        );
    }
    let left = (me + n - 1) % n;
    ensure!(
        floats.to_vec()?[left as usize] == left as f64 + 0.5,
        "double set from PE {left}"
    );
    ctx.barrier_all()?;
    Ok(())
}

/// put_signal + signal_wait_until around a ring, round after round, with
/// an acknowledgement before the next round overwrites the data.
fn check_signals(ctx: &Context, seed: u64) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let len = 700;
    let data = ctx.calloc::<u32>(len)?;
    let sig = ctx.calloc::<u64>(1)?;
    let ack = ctx.calloc::<u64>(1)?;
    ctx.barrier_all()?;
    for round in 0..40u64 {
        let payload: Vec<u32> = (0..len)
            .map(|i| pattern(seed, me, i, 100 + round))
            .collect();
        let op = if round % 2 == 0 {
            SignalOp::Add
        } else {
            SignalOp::Set
        };
        ctx.put_signal(
            data.as_slice(),
            &payload,
            sig.as_slice(),
            if op == SignalOp::Add { 1 } else { round + 1 },
            op,
            right,
        )?;
        let s = ctx.signal_wait_until(sig.as_slice(), Cmp::Ge, round + 1)?;
        ensure!(s == round + 1, "signal {s} in round {round}");
        let got = data.to_vec()?;
        for (i, &g) in got.iter().enumerate() {
            if g != pattern(seed, left, i, 100 + round) {
                bail!("put_signal: PE {me} saw the signal of round {round} before element {i} of the data");
            }
        }
        // Tell the left PE its data was read; wait until the right PE read ours.
        ctx.atomic_set(ack.as_slice(), round + 1, left)?;
        ctx.wait_until(ack.as_slice(), Cmp::Ge, round + 1)?;
    }
    ensure!(ctx.signal_fetch(sig.as_slice())? == 40, "final signal");
    ctx.barrier_all()?;
    Ok(())
}

/// The wait_until / test families over one word per PE.
fn check_waits(ctx: &Context) -> Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let flags = ctx.calloc::<i32>(n as usize)?;
    ctx.barrier_all()?;
    let fs = flags.as_slice();
    ensure!(
        !ctx.test_all(fs, None, Cmp::Ne, 0)?,
        "test_all before any put"
    );
    ensure!(
        ctx.test_any(fs, None, Cmp::Gt, 0)?.is_none(),
        "test_any before any put"
    );
    for pe in 0..n {
        ctx.p(flags.slice(me as usize..n as usize)?, -(me as i32) - 1, pe)?;
    }
    let want: Vec<i32> = (0..n as i32).map(|j| -j - 1).collect();
    ctx.wait_until_all_vector(fs, None, Cmp::Eq, &want)?;
    ensure!(
        ctx.test_all(fs, None, Cmp::Lt, 0)?,
        "test_all after every put"
    );
    ensure!(
        ctx.test_all_vector(fs, None, Cmp::Le, &want)?,
        "test_all_vector"
    );
    let mut status = vec![1i32; n as usize];
    status[n as usize - 1] = 0;
    ensure!(
        ctx.wait_until_any(fs, Some(&status), Cmp::Ne, 0)? == Some(n as usize - 1),
        "wait_until_any with a status"
    );
    ensure!(
        ctx.wait_until_some(fs, None, Cmp::Lt, 0)? == (0..n as usize).collect::<Vec<_>>(),
        "wait_until_some"
    );
    ensure!(
        ctx.wait_until_some_vector(fs, Some(&vec![1; n as usize]), Cmp::Eq, &want)?
            .is_empty(),
        "every index excluded"
    );
    ensure!(
        ctx.wait_until_any_vector(fs, Some(&vec![1; n as usize]), Cmp::Eq, &want)?
            .is_none(),
        "every index excluded (any)"
    );
    ensure!(
        ctx.test_some(fs, None, Cmp::Eq, -1)? == vec![0],
        "test_some: only PE 0's word is -1"
    );
    ensure!(
        ctx.test_some_vector(fs, None, Cmp::Ne, &want)?.is_empty(),
        "test_some_vector"
    );
    ensure!(
        ctx.test_any_vector(fs, None, Cmp::Eq, &want)? == Some(0),
        "test_any_vector"
    );
    ensure!(ctx.test(flags.slice(0..1)?, Cmp::Eq, -1)?, "test");
    ctx.wait_until(fs, Cmp::Ge, -1)?;
    ctx.barrier_all().context("the last barrier")?;
    Ok(())
}
