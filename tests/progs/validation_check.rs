//! A PE program for the validation test (run through vkshmrun by tests/launcher.rs).
//!
//! Every public entry point checks its inputs with a typed error before they can
//! cause a panic, a hang, an out-of-bounds access or silent corruption. This
//! program makes, on every PE, the bad calls that the other PE programs
//! (collectives_check's bad input, user_kernel_check, alloc_check) and the unit
//! tests do not, and checks the exact error variant of each: allocation, host
//! access, teams, collectives (including arithmetic that overflowed and panicked
//! before), active sets, dispatch of SPIR-V kernels and launches of device-library
//! kernels. Then it checks that the job is still usable: a reduction over WORLD
//! gives the right sums and nothing is broken.
//!
//! `validation_check --foreign` (one PE, started without vkshmrun) checks that a
//! kernel built on one context cannot be dispatched or launched on the next.
//!
//! Prints `validation_check: checks=N failed=0` on every PE when all held.

use vkshmem::{ActiveSet, Context, Error, HeapWindow, ReduceOp, SymSlice, Team, TeamConfig};

/// A self-contained kernel: fills its binding with an immediate.
const FILL: &str = "struct P { v: u32 }
var<immediate> p: P;
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x < arrayLength(&a) { a[g.x] = p.v; }
}
";

/// A device-library kernel that waits on nobody: fills a user buffer.
const FILL_PE: &str = "struct P { v: u32 }
var<immediate> p: P;
@group(1) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x < arrayLength(&out) { out[g.x] = p.v + u32(shmem_my_pe()); }
}
";

/// Calls a multi-workgroup collective (every workgroup of its dispatch).
const GRID_FCOLLECT: &str = "struct P { n: u32 }
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    shmemx_fcollectmem_work_groups(SHMEM_TEAM_WORLD, 0u, 0u, p.n, li, 64u, wid.x, nw.x);
}
";

struct Checks {
    me: u32,
    count: usize,
    failed: Vec<String>,
}

impl Checks {
    fn check<T: std::fmt::Debug>(
        &mut self,
        what: &str,
        r: vkshmem::Result<T>,
        want: &str,
        ok: impl Fn(&vkshmem::Result<T>) -> bool,
    ) {
        self.count += 1;
        if !ok(&r) {
            self.failed
                .push(format!("PE {}: {what}: want {want}, got {r:?}", self.me));
        }
    }

    fn invalid<T: std::fmt::Debug>(&mut self, what: &str, r: vkshmem::Result<T>) {
        self.check(what, r, "InvalidArgument", |r| {
            matches!(r, Err(Error::InvalidArgument(_)))
        });
    }

    fn unreachable<T: std::fmt::Debug>(&mut self, what: &str, r: vkshmem::Result<T>) {
        let me = self.me;
        self.check(
            what,
            r,
            "Unreachable",
            |r| matches!(r, Err(Error::Unreachable { me: m, .. }) if *m == me),
        );
    }
}

fn allocation(c: &mut Checks, ctx: &Context) {
    c.invalid("malloc of a zero-sized type", ctx.malloc::<()>(4));
    c.invalid("align 3", ctx.align::<u32>(3, 4));
    c.invalid("align 0", ctx.align::<u32>(0, 4));
    c.invalid(
        "malloc whose byte count overflows",
        ctx.malloc::<u64>(usize::MAX),
    );
}

fn host_access(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let buf = ctx.calloc::<u32>(16)?;
    let mut eight = [0u32; 8];
    c.invalid("read_at past the buffer", buf.read_at(me, 10, &mut eight));
    c.invalid(
        "write_at whose end overflows",
        buf.write_at(me, usize::MAX, &[1]),
    );
    c.invalid("read of more than the buffer", buf.read(&mut [0u32; 17]));
    c.invalid("write of more than the buffer", buf.write(&[0u32; 17]));
    c.unreachable("read_pe of PE n_pes", buf.read_pe(n, &mut eight));
    c.unreachable("write_pe of PE u32::MAX", buf.write_pe(u32::MAX, &[1]));
    let (lo, hi) = (5, 3);
    c.invalid("reversed slice", buf.slice(lo..hi));
    c.invalid("slice past the buffer", buf.slice(10..17));
    c.invalid(
        "device_byte_addr beyond 4 GiB",
        SymSlice::<u32>::from_raw(1 << 40, 4).device_byte_addr(),
    );
    c.invalid(
        "device_byte_addr of a slice too long to have a size",
        SymSlice::<u64>::from_raw(buf.offset(), usize::MAX).device_byte_addr(),
    );
    // The buffer is untouched.
    c.check(
        "buffer after bad accesses",
        buf.to_vec(),
        "zeros",
        |r| matches!(r, Ok(v) if v.iter().all(|&x| x == 0)),
    );
    buf.free()?;
    Ok(())
}

fn teams(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as i32);
    let cfg = TeamConfig::default();
    c.invalid("team_my_pe of INVALID", ctx.team_my_pe(Team::INVALID));
    c.invalid(
        "split with stride 0",
        ctx.team_split_strided(Team::WORLD, 0, 0, 2, &cfg),
    );
    c.invalid(
        "split of size 0",
        ctx.team_split_strided(Team::WORLD, 0, 1, 0, &cfg),
    );
    c.invalid(
        "split larger than the parent",
        ctx.team_split_strided(Team::WORLD, 0, 1, n + 1, &cfg),
    );
    c.invalid(
        "split starting outside the parent",
        ctx.team_split_strided(Team::WORLD, n, 1, 1, &cfg),
    );
    c.invalid(
        "split of INVALID",
        ctx.team_split_strided(Team::INVALID, 0, 1, 1, &cfg),
    );
    c.invalid(
        "split_2d with xrange 0",
        ctx.team_split_2d(Team::WORLD, 0, &cfg, &cfg),
    );
    if n > 1 {
        let size = if me == 0 { 1 } else { n };
        c.invalid(
            "split whose arguments differ between members",
            ctx.team_split_strided(Team::WORLD, 0, 1, size, &cfg),
        );
    }
    let t = ctx
        .team_split_strided(Team::WORLD, 0, 1, n, &cfg)?
        .expect("every PE is in it");
    ctx.team_destroy(t)?;
    c.invalid("team_n_pes of a destroyed team", ctx.team_n_pes(t));
    c.invalid("team_my_pe of a destroyed team", ctx.team_my_pe(t));
    c.invalid("team_shape of a destroyed team", ctx.team_shape(t));
    c.invalid(
        "team_get_config of a destroyed team",
        ctx.team_get_config(t),
    );
    c.invalid(
        "team_translate_pe from a destroyed team",
        ctx.team_translate_pe(t, 0, Team::WORLD),
    );
    c.invalid(
        "team_translate_pe into a destroyed team",
        ctx.team_translate_pe(Team::WORLD, 0, t),
    );
    c.invalid("team_barrier of a destroyed team", ctx.team_barrier(t));
    c.invalid("destroying a team twice", ctx.team_destroy(t));
    c.invalid(
        "a split of a destroyed team",
        ctx.team_split_2d(t, 1, &cfg, &cfg),
    );
    c.invalid("destroying SHARED", ctx.team_destroy(Team::SHARED));
    c.invalid("destroying NODE", ctx.team_destroy(Team::NODE));
    for pe in [-1, n, i32::MIN, i32::MAX] {
        c.check(
            &format!("translating PE {pe}"),
            ctx.team_translate_pe(Team::WORLD, pe, Team::WORLD),
            "Ok(None)",
            |r| matches!(r, Ok(None)),
        );
    }
    Ok(())
}

fn collectives(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let nn = n as usize;
    let dbuf = ctx.calloc::<u32>(16 * nn)?;
    let sbuf = ctx.calloc::<u32>(16 * nn)?;
    let (d, s) = (dbuf.as_slice(), sbuf.as_slice());
    let w = Team::WORLD;
    c.invalid(
        "fcollect of usize::MAX elements",
        ctx.fcollect(w, &d, &s, usize::MAX),
    );
    c.invalid(
        "alltoall of usize::MAX elements",
        ctx.alltoall(w, &d, &s, usize::MAX),
    );
    c.invalid(
        "fcollectmem of usize::MAX bytes",
        ctx.fcollectmem(
            w,
            &SymSlice::from_raw(d.offset(), 64),
            &SymSlice::from_raw(s.offset(), 64),
            usize::MAX,
        ),
    );
    c.invalid("alltoalls dst stride 0", ctx.alltoalls(w, &d, &s, 0, 1, 1));
    c.invalid("alltoalls sst stride 0", ctx.alltoalls(w, &d, &s, 1, 0, 1));
    c.invalid(
        "alltoalls of usize::MAX elements",
        ctx.alltoalls(w, &d, &s, 1, 1, usize::MAX),
    );
    c.invalid(
        "alltoalls whose stride overflows",
        ctx.alltoalls(w, &d, &s, usize::MAX, 1, 2),
    );
    c.invalid(
        "alltoalls of 16-byte elements",
        ctx.alltoalls(
            w,
            &SymSlice::<u128>::from_raw(d.offset(), 4 * nn),
            &SymSlice::<u128>::from_raw(s.offset(), 4 * nn),
            1,
            1,
            1,
        ),
    );
    c.invalid(
        "broadcast of a zero-sized type",
        ctx.broadcast(
            w,
            &SymSlice::<()>::from_raw(d.offset(), 4),
            &SymSlice::<()>::from_raw(s.offset(), 4),
            4,
            0,
        ),
    );
    c.invalid(
        "broadcast from the control region",
        ctx.broadcast(w, &d, &SymSlice::from_raw(0, 16), 4, 0),
    );
    c.invalid(
        "broadcast into a misaligned dest",
        ctx.broadcast(w, &SymSlice::from_raw(d.offset() + 2, 4), &s, 4, 0),
    );
    c.invalid(
        "broadcastmem of more bytes than the source",
        ctx.broadcastmem(
            w,
            &SymSlice::from_raw(d.offset(), 64),
            &SymSlice::from_raw(s.offset(), 8),
            9,
            0,
        ),
    );
    c.invalid(
        "collect into a dest shorter than the counts' sum",
        ctx.collect(w, &SymSlice::from_raw(d.offset(), 4 * nn - 1), &s, 4),
    );
    c.invalid(
        "reduce of usize::MAX elements",
        ctx.sum_reduce(w, &d, &s, usize::MAX),
    );
    let end = SymSlice::<u32>::from_raw(ctx.heap_size() - 4, 4);
    c.invalid("reduce into the heap's end", ctx.max_reduce(w, &end, &s, 4));
    c.invalid(
        "collectmem from past the heap",
        ctx.collectmem(
            w,
            &SymSlice::from_raw(d.offset(), 64),
            &SymSlice::from_raw(u64::MAX - 8, 4),
            4,
        ),
    );
    if n > 1 {
        let root = if me == 0 { 0 } else { 1 };
        c.invalid(
            "broadcast roots that differ",
            ctx.broadcast(w, &d, &s, 4, root),
        );
        let op = if me == 0 {
            ReduceOp::Sum
        } else {
            ReduceOp::Max
        };
        c.invalid(
            "reduce operations that differ",
            ctx.reduce(w, op, &d, &s, 4),
        );
        let at = if me == n - 1 {
            d.offset() + 64
        } else {
            d.offset()
        };
        c.invalid(
            "dest addresses that differ",
            ctx.fcollect(w, &SymSlice::from_raw(at, 4 * nn), &s, 4),
        );
        // One member's own check fails: every member gets the error.
        let count = if me == 0 { 16 * nn + 1 } else { 4 };
        c.invalid(
            "one member's count above its objects",
            ctx.broadcast(w, &d, &s, count, 0),
        );
        let dst = if me == 0 { 2 } else { 1 };
        c.invalid(
            "alltoalls strides that differ",
            ctx.alltoalls(w, &d, &s, dst, 1, 1),
        );
    }
    drop((dbuf, sbuf));
    Ok(())
}

fn active_sets(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes() as i32);
    let psync_buf = ctx.calloc::<i64>(8)?;
    let buf = ctx.calloc::<u64>(16 * n as usize)?;
    let (psync, b) = (psync_buf.as_slice(), buf.as_slice());
    let all = ActiveSet {
        pe_start: 0,
        log_pe_stride: 0,
        pe_size: n,
    };
    let bad = |pe_start, log_pe_stride, pe_size| ActiveSet {
        pe_start,
        log_pe_stride,
        pe_size,
    };
    c.invalid("logPE_stride 31", ctx.barrier_active(bad(0, 31, 1), &psync));
    c.invalid(
        "negative logPE_stride",
        ctx.sync_active(bad(0, -1, n), &psync),
    );
    c.invalid("negative PE_start", ctx.sync_active(bad(-1, 0, 1), &psync));
    c.invalid("PE_size 0", ctx.sync_active(bad(0, 0, 0), &psync));
    c.invalid(
        "an active set past the job",
        ctx.barrier_active(bad(0, 0, n + 1), &psync),
    );
    if n > 1 {
        // A set without this PE fails on this PE alone, before any communication.
        let other = bad((me as i32 + 1) % n, 0, 1);
        c.invalid(
            "an active set without this PE",
            ctx.sync_active(other, &psync),
        );
    }
    c.invalid(
        "a pSync too short",
        ctx.sync_active(all, &SymSlice::from_raw(psync.offset(), 0)),
    );
    c.invalid(
        "a pSync in the control region",
        ctx.broadcast_active(&b, &b, 0, 0, all, &SymSlice::from_raw(0, 1)),
    );
    c.invalid(
        "a broadcast root outside the active set",
        ctx.broadcast_active(
            &SymSlice::<u32>::from_raw(b.offset(), 4),
            &SymSlice::from_raw(b.offset() + 64, 4),
            4,
            n as u32,
            all,
            &psync,
        ),
    );
    c.invalid(
        "a pWrk too short",
        ctx.reduce_to_all(
            ReduceOp::Sum,
            &SymSlice::<u32>::from_raw(b.offset(), 8),
            &SymSlice::from_raw(b.offset() + 64, 8),
            8,
            all,
            &SymSlice::from_raw(b.offset() + 128, 4),
            &psync,
        ),
    );
    c.invalid(
        "alltoalls_active with stride 0",
        ctx.alltoalls_active(&b, &b, 0, 0, 1, all, &psync),
    );
    c.check(
        "pSync after bad calls",
        psync_buf.to_vec(),
        "SHMEM_SYNC_VALUE",
        |r| matches!(r, Ok(v) if v.iter().all(|&x| x == vkshmem::active_set::SYNC_VALUE)),
    );
    drop((psync_buf, buf));
    Ok(())
}

fn dispatches(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let info = ctx.device_info().clone();
    let k = |entry: &str, bindings, push| {
        vkshmem::compile_kernel(ctx, FILL, entry, "fill.wgsl", bindings, push)
    };
    c.invalid("push_bytes not a multiple of 4", k("main", 1, 3));
    c.invalid(
        "push_bytes over the device's limit",
        k("main", 1, info.max_push_constants + 4),
    );
    c.invalid(
        "bindings over the device's limit",
        k("main", info.max_storage_buffers_per_stage + 1, 4),
    );
    c.invalid("a missing entry point", k("nope", 1, 4));
    c.invalid("a binding the kernel was not given", k("main", 0, 4));
    c.invalid("immediates without push_bytes", k("main", 1, 0));
    c.invalid(
        "words that are not SPIR-V",
        ctx.kernel_from_spirv(&[1, 2, 3, 4, 5, 6], "main", 1, 4),
    );
    let spirv = vkshmem_device::compile_wgsl(FILL, "fill.wgsl")?;
    c.invalid(
        "truncated SPIR-V",
        ctx.kernel_from_spirv(&spirv[..spirv.len() / 2], "main", 1, 4),
    );
    let fill = k("main", 1, 4)?;
    let buf = ctx.calloc::<u32>(256)?;
    let win = buf.window(me);
    let v = 7u32.to_le_bytes();
    c.invalid("no window", ctx.dispatch(&fill, [1, 1, 1], &[], &v));
    c.invalid(
        "two windows",
        ctx.dispatch(&fill, [1, 1, 1], &[win, win], &v),
    );
    c.invalid(
        "wrong push size",
        ctx.dispatch(&fill, [1, 1, 1], &[win], &[0; 8]),
    );
    c.invalid("0 workgroups", ctx.dispatch(&fill, [4, 0, 1], &[win], &v));
    for axis in 0..3 {
        let max = info.max_workgroups[axis];
        if max < u32::MAX {
            let mut g = [1; 3];
            g[axis] = max + 1;
            c.invalid(
                &format!("workgroups over the limit on axis {axis}"),
                ctx.dispatch(&fill, g, &[win], &v),
            );
        }
    }
    let at = |offset: u64, bytes: u64| HeapWindow {
        pe: me,
        offset,
        bytes,
    };
    if info.min_storage_offset_alignment > 1 {
        c.invalid(
            "a misaligned window",
            ctx.dispatch(&fill, [1, 1, 1], &[at(win.offset + 1, 64)], &v),
        );
    }
    c.invalid(
        "an empty window",
        ctx.dispatch(&fill, [1, 1, 1], &[at(win.offset, 0)], &v),
    );
    c.invalid(
        "a window past the heap",
        ctx.dispatch(&fill, [1, 1, 1], &[at(win.offset, ctx.heap_size())], &v),
    );
    c.invalid(
        "a window whose end overflows",
        ctx.dispatch(&fill, [1, 1, 1], &[at(win.offset, u64::MAX)], &v),
    );
    if ctx.heap_size() > info.max_storage_buffer_range {
        c.invalid(
            "a window over maxStorageBufferRange",
            ctx.dispatch(
                &fill,
                [1, 1, 1],
                &[at(0, info.max_storage_buffer_range + 256)],
                &v,
            ),
        );
    }
    c.unreachable(
        "a window on PE n_pes",
        ctx.dispatch(&fill, [1, 1, 1], &[buf.window(n)], &v),
    );
    c.check(
        "buffer after bad dispatches",
        buf.to_vec(),
        "zeros",
        |r| matches!(r, Ok(v) if v.iter().all(|&x| x == 0)),
    );
    c.check(
        "a good dispatch",
        ctx.dispatch(&fill, [4, 1, 1], &[win], &v)
            .and_then(|_| buf.to_vec()),
        "all 7",
        |r| matches!(r, Ok(v) if v.iter().all(|&x| x == 7)),
    );
    buf.free()?;
    Ok(())
}

fn launches(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let info = ctx.device_info().clone();
    c.check(
        "device_kernel_entry of a missing entry point",
        ctx.device_kernel_entry(FILL_PE, "nope", "fill_pe.wgsl"),
        "Kernel",
        |r| matches!(r, Err(Error::Kernel(_))),
    );
    let k = ctx.device_kernel(FILL_PE, "fill_pe.wgsl")?;
    let buf = ctx.calloc::<u32>(256)?;
    let win = buf.window(me);
    let v = 5u32.to_le_bytes();
    c.invalid("launch with no buffer", ctx.launch(&k, [1, 1, 1], &[], &v));
    c.invalid(
        "launch with two buffers",
        ctx.launch(&k, [1, 1, 1], &[win, win], &v),
    );
    c.invalid(
        "launch without immediates",
        ctx.launch(&k, [1, 1, 1], &[win], &[]),
    );
    c.invalid(
        "launch_timed with 0 workgroups",
        ctx.launch_timed(&k, [1, 1, 0], &[win], &v),
    );
    for axis in 0..3 {
        let max = info.max_workgroups[axis];
        if max < u32::MAX {
            let mut g = [1; 3];
            g[axis] = max + 1;
            c.invalid(
                &format!("launch over the workgroup limit on axis {axis}"),
                ctx.launch(&k, g, &[win], &v),
            );
        }
    }
    c.unreachable(
        "launch with a buffer on PE n_pes",
        ctx.launch(&k, [1, 1, 1], &[buf.window(n)], &v),
    );
    c.invalid(
        "launch with a buffer past the heap",
        ctx.launch(
            &k,
            [1, 1, 1],
            &[HeapWindow {
                pe: me,
                offset: ctx.heap_size() - 256,
                bytes: 512,
            }],
            &v,
        ),
    );
    // A multi-workgroup collective over more workgroups than the device
    // runs at once would wait for ones that cannot start: refused before
    // any PE launches (the kernel never runs, so its arguments are moot).
    let grid = ctx.device_kernel(GRID_FCOLLECT, "grid_fcollect.wgsl")?;
    let too_many = ctx.resident_workgroups() + 1;
    c.check(
        "a _work_groups kernel over more workgroups than run at once",
        ctx.launch(&grid, [too_many, 1, 1], &[], &v),
        "InvalidArgument naming the resident workgroups",
        |r| matches!(r, Err(Error::InvalidArgument(m)) if m.contains("at most") && m.contains("_work_groups")),
    );
    c.check(
        "a good launch",
        ctx.launch(&k, [4, 1, 1], &[win], &v)
            .and_then(|_| buf.to_vec()),
        "all 5 + PE",
        |r| matches!(r, Ok(x) if x.iter().all(|&x| x == 5 + me)),
    );
    c.check("not broken", Ok(ctx.is_broken()), "false", |r| {
        matches!(r, Ok(false))
    });
    buf.free()?;
    Ok(())
}

/// The job after every bad call: a reduction over WORLD still gives the sums.
fn still_usable(c: &mut Checks, ctx: &Context) -> anyhow::Result<()> {
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    let a = ctx.malloc::<u32>(1000)?;
    a.write(&(0..1000).map(|i| i * n + me).collect::<Vec<_>>())?;
    let s = a.as_slice();
    ctx.sum_reduce(Team::WORLD, &s, &s, 1000)?;
    let base = n * (n - 1) / 2;
    c.check(
        "a reduction after the errors",
        a.to_vec(),
        "sums",
        |r| matches!(r, Ok(v) if v.iter().enumerate().all(|(i, &x)| x == i as u32 * n * n + base)),
    );
    a.free()?;
    Ok(())
}

/// Kernels built on one context are refused by the next (one PE, no launcher).
fn foreign(c: &mut Checks) -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let fill = vkshmem::compile_kernel(&ctx, FILL, "main", "fill.wgsl", 1, 4)?;
    let k = ctx.device_kernel(FILL_PE, "fill_pe.wgsl")?;
    ctx.finalize()?;
    let ctx = vkshmem::init()?;
    c.me = ctx.my_pe();
    let buf = ctx.calloc::<u32>(64)?;
    let win = buf.window(ctx.my_pe());
    let v = 1u32.to_le_bytes();
    c.invalid(
        "dispatch of another context's kernel",
        ctx.dispatch(&fill, [1, 1, 1], &[win], &v),
    );
    c.invalid(
        "launch of another context's device kernel",
        ctx.launch(&k, [1, 1, 1], &[win], &v),
    );
    let fresh = ctx.device_kernel(FILL_PE, "fill_pe.wgsl")?;
    c.check(
        "launch of this context's device kernel",
        ctx.launch(&fresh, [1, 1, 1], &[win], &v)
            .and_then(|_| buf.to_vec()),
        "all 1",
        |r| matches!(r, Ok(x) if x.iter().all(|&x| x == 1)),
    );
    drop((fill, k));
    buf.free()?;
    ctx.finalize()?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut c = Checks {
        me: 0,
        count: 0,
        failed: Vec::new(),
    };
    if std::env::args().nth(1).as_deref() == Some("--foreign") {
        foreign(&mut c)?;
    } else {
        let ctx = vkshmem::init()?;
        c.me = ctx.my_pe();
        allocation(&mut c, &ctx);
        host_access(&mut c, &ctx)?;
        teams(&mut c, &ctx)?;
        collectives(&mut c, &ctx)?;
        active_sets(&mut c, &ctx)?;
        dispatches(&mut c, &ctx)?;
        launches(&mut c, &ctx)?;
        still_usable(&mut c, &ctx)?;
        ctx.finalize()?;
    }
    for f in &c.failed {
        eprintln!("validation_check: {f}");
    }
    println!(
        "validation_check: checks={} failed={}",
        c.count,
        c.failed.len()
    );
    anyhow::ensure!(c.failed.is_empty(), "PE {}: checks failed", c.me);
    Ok(())
}
