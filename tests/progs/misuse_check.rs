//! A PE program for the misuse tests (run through vkshmrun by tests/misuse.rs).
//!
//! Mistakes a user makes that must not pass silently, and calls that look odd but
//! are legal:
//! - members passing different element types to one collective (same size, so
//!   only the type tells them apart) fail on every member with the same error;
//! - a slice of a freed buffer (made with `SymSlice::from_raw`: slices of a
//!   `SymBuffer` borrow it, so the compiler refuses the rest) is refused with a
//!   typed error and nothing is written;
//! - zero-element calls of every collective, host and device (thread and
//!   work_group forms), with address 0, succeed and still synchronise.
//!
//! Prints `misuse_check: checks=N failed=0` on every PE when all held.

use anyhow::{bail, Result};
use vkshmem::{Context, Error, ReduceOp, SymSlice, Team};

struct Checks {
    me: u32,
    count: usize,
    failed: Vec<String>,
}

impl Checks {
    fn expect(&mut self, what: &str, ok: bool, got: impl std::fmt::Debug) {
        self.count += 1;
        if !ok {
            self.failed
                .push(format!("PE {}: {what}: got {got:?}", self.me));
        }
    }

    /// `r` must be an `InvalidArgument` whose message contains every word of `words`.
    fn invalid<T: std::fmt::Debug>(&mut self, what: &str, r: vkshmem::Result<T>, words: &[&str]) {
        let ok =
            matches!(&r, Err(Error::InvalidArgument(m)) if words.iter().all(|w| m.contains(w)));
        self.expect(what, ok, r);
    }
}

/// Members of WORLD pass f32 (PE 0) and i32 (the others) to the same calls.
fn type_mismatch(c: &mut Checks, ctx: &Context) -> Result<()> {
    let n = 8;
    let f = ctx.calloc::<f32>(n)?;
    let i = ctx.calloc::<i32>(n)?;
    let before = f.to_vec()?;
    let r = if ctx.my_pe() == 0 {
        ctx.reduce(Team::WORLD, ReduceOp::Sum, &f.as_slice(), &f.as_slice(), n)
    } else {
        ctx.reduce(Team::WORLD, ReduceOp::Sum, &i.as_slice(), &i.as_slice(), n)
    };
    if ctx.n_pes() > 1 {
        c.invalid("reduce f32 vs i32", r, &["type", "f32", "i32"]);
        c.expect("nothing reduced", f.to_vec()? == before, f.to_vec()?);
        let r = if ctx.my_pe() == 0 {
            ctx.broadcast(Team::WORLD, &f.as_slice(), &f.as_slice(), n, 0)
        } else {
            ctx.broadcast(Team::WORLD, &i.as_slice(), &i.as_slice(), n, 0)
        };
        c.invalid("broadcast f32 vs i32", r, &["broadcast", "type"]);
        // Different operations are named, not numbered.
        let r = ctx.reduce(
            Team::WORLD,
            if ctx.my_pe() == 0 {
                ReduceOp::Max
            } else {
                ReduceOp::Min
            },
            &i.as_slice(),
            &i.as_slice(),
            n,
        );
        c.invalid("reduce max vs min", r, &["max", "min"]);
    } else {
        c.expect("one PE agrees with itself", r.is_ok(), r);
    }
    // The job is still in step.
    ctx.barrier_all()?;
    f.free()?;
    i.free()?;
    Ok(())
}

/// A raw slice of a freed buffer is refused, and the buffer allocated after it
/// keeps its contents.
fn use_after_free(c: &mut Checks, ctx: &Context) -> Result<()> {
    let n = 64;
    let keep = ctx.calloc::<u32>(16)?;
    let gone = ctx.calloc::<u32>(n)?;
    let raw = SymSlice::<u32>::from_raw(gone.offset(), n);
    gone.free()?;
    let r = ctx.reduce(Team::WORLD, ReduceOp::Sum, &raw, &raw, n);
    c.invalid("reduce on a freed buffer", r, &["live"]);
    keep.write(&[7; 16])?;
    // Past the end of a live buffer is refused as well.
    let past = SymSlice::<u32>::from_raw(keep.offset(), 1 << 20);
    let r = ctx.broadcast(Team::WORLD, &past, &past, 1 << 20, 0);
    c.invalid("broadcast past a buffer's end", r, &["live"]);
    c.expect(
        "the live buffer is untouched",
        keep.to_vec()? == vec![7; 16],
        keep.to_vec()?,
    );
    keep.free()?;
    Ok(())
}

/// Every PE marks round `k` in its own heap, then calls `call` (a zero-element
/// collective), then reads every peer's mark: the call synchronises, so every
/// peer has entered it (and marked) before any returns.
fn zero_and_synchronised(
    c: &mut Checks,
    ctx: &Context,
    marks: &vkshmem::SymBuffer<u32>,
    k: u32,
    what: &str,
    call: impl FnOnce() -> vkshmem::Result<()>,
) -> Result<()> {
    if ctx.my_pe() == 0 {
        // Be late: peers that did not wait would read the old mark.
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    marks.write(&[k])?;
    let r = call();
    c.expect(
        &format!("{what} with 0 elements at address 0"),
        r.is_ok(),
        &r,
    );
    for pe in 0..ctx.n_pes() {
        let mut v = [0u32];
        marks.read_pe(pe, &mut v)?;
        c.expect(&format!("{what}: PE {pe} had entered"), v[0] >= k, v[0]);
    }
    Ok(())
}

fn zero_length_host(c: &mut Checks, ctx: &Context) -> Result<()> {
    let marks = ctx.calloc::<u32>(1)?;
    let z8 = SymSlice::<u8>::from_raw(0, 0);
    let z32 = SymSlice::<u32>::from_raw(0, 0);
    let zf = SymSlice::<f64>::from_raw(0, 0);
    let w = Team::WORLD;
    let mut k = 0;
    let mut next = || {
        k += 1;
        k
    };
    zero_and_synchronised(c, ctx, &marks, next(), "broadcast", || {
        ctx.broadcast(w, &z32, &z32, 0, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "broadcastmem", || {
        ctx.broadcastmem(w, &z8, &z8, 0, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "collect", || {
        ctx.collect(w, &z32, &z32, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "collectmem", || {
        ctx.collectmem(w, &z8, &z8, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "fcollect", || {
        ctx.fcollect(w, &z32, &z32, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "fcollectmem", || {
        ctx.fcollectmem(w, &z8, &z8, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "alltoall", || {
        ctx.alltoall(w, &z32, &z32, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "alltoallmem", || {
        ctx.alltoallmem(w, &z8, &z8, 0)
    })?;
    zero_and_synchronised(c, ctx, &marks, next(), "alltoalls", || {
        ctx.alltoalls(w, &z32, &z32, 3, 2, 0)
    })?;
    for op in ReduceOp::ALL {
        if !op.bitwise() {
            zero_and_synchronised(
                c,
                ctx,
                &marks,
                next(),
                &format!("{} reduce f64", op.name()),
                || ctx.reduce(w, op, &zf, &zf, 0),
            )?;
        }
        zero_and_synchronised(
            c,
            ctx,
            &marks,
            next(),
            &format!("{} reduce u32", op.name()),
            || ctx.reduce(w, op, &z32, &z32, 0),
        )?;
    }
    // An unaligned address is fine too when nothing is touched.
    let odd = SymSlice::<u32>::from_raw(3, 0);
    zero_and_synchronised(c, ctx, &marks, next(), "fcollect at address 3", || {
        ctx.fcollect(w, &odd, &odd, 0)
    })?;
    marks.free()?;
    Ok(())
}

/// Every device collective, called with 0 elements at address 0.
const DEVICE_CALLS: [(&str, &str); 7] = [
    ("shmem_broadcastmem", "0u, 0u, 0u, 0u"),
    ("shmem_collectmem", "0u, 0u, 0u"),
    ("shmem_fcollectmem", "0u, 0u, 0u"),
    ("shmem_alltoallmem", "0u, 0u, 0u"),
    ("shmem_uint8_alltoalls", "0u, 0u, 1u, 1u, 0u"),
    ("shmem_int32_sum_reduce", "0u, 0u, 0u"),
    ("shmem_float_max_reduce", "0u, 0u, 0u"),
];

/// A kernel that makes call `i` of [`DEVICE_CALLS`] in one form and writes its
/// result plus one into `out[0]`. One call per kernel: llvmpipe compiles every
/// inlined wait for seconds, and big kernels superlinearly longer.
fn zero_length_kernel(i: usize, work_group: bool) -> String {
    let (f, args) = DEVICE_CALLS[i];
    let (call, guard) = if work_group {
        let wg = format!("{}_work_group", f.replacen("shmem_", "shmemx_", 1));
        (format!("{wg}(SHMEM_TEAM_WORLD, {args}, li, 64u)"), "true")
    } else {
        (format!("{f}(SHMEM_TEAM_WORLD, {args})"), "li == 0u")
    };
    format!(
        "@group(1) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {{
    if {guard} {{
        let r = {call};
        if li == 0u {{ out[0] = u32(r + 1); }}
    }}
}}
"
    )
}

fn zero_length_device(c: &mut Checks, ctx: &Context) -> Result<()> {
    let out = ctx.calloc::<u32>(1)?;
    for (form, wg) in [("thread", false), ("work_group", true)] {
        for (i, (f, _)) in DEVICE_CALLS.iter().enumerate() {
            let what = format!("device {f} ({form}) with 0 elements at address 0");
            let k = ctx.device_kernel(&zero_length_kernel(i, wg), &format!("zero_{f}_{form}"))?;
            out.write(&[9])?;
            let r = ctx.launch(&k, [1, 1, 1], &[out.window(ctx.my_pe())], &[]);
            c.expect(&what, r.is_ok(), &r);
            // It returned 0 (written as 1).
            c.expect(
                &format!("{what} returned 0"),
                out.to_vec()? == [1],
                out.to_vec()?,
            );
        }
    }
    out.free()?;
    Ok(())
}

fn main() -> Result<()> {
    let ctx = vkshmem::init()?;
    let mut c = Checks {
        me: ctx.my_pe(),
        count: 0,
        failed: Vec::new(),
    };
    type_mismatch(&mut c, &ctx)?;
    use_after_free(&mut c, &ctx)?;
    zero_length_host(&mut c, &ctx)?;
    if std::env::args().all(|a| a != "--host-only") {
        zero_length_device(&mut c, &ctx)?;
    }
    println!("misuse_check: checks={} failed={}", c.count, c.failed.len());
    if !c.failed.is_empty() {
        bail!("misuse_check failed:\n{}", c.failed.join("\n"));
    }
    ctx.finalize()?;
    Ok(())
}
