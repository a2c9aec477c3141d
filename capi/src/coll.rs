//! Barriers and collectives on teams and active sets.
//!
//! When every object is on the symmetric heap a call is the host library's
//! collective. When one is a global variable, the call moves the data
//! through the bootstrap instead ([`exchange`]): every member's
//! contribution in chunks of the bootstrap's blob size, each member
//! taking what it needs. That works on every transport, at the speed of a
//! socket: fine for pSync-sized globals, slow for megabytes.

use bytemuck::Pod;
use vkshmem_host::collective::reduce::Reduce;
use vkshmem_host::{ActiveSet, Context, ReduceOp, Result, SymSlice, Team, TeamShape};

use crate::addr::Sym;
use crate::setup::{fatal, st, OrDie, State};
use crate::{Complex, TeamH};

/// What a collective runs on.
#[derive(Debug, Clone, Copy)]
pub enum On {
    /// A team (1.5 calls).
    Team(TeamH),
    /// An active set and its pSync (deprecated calls).
    Set(i32, i32, i32, *mut i64),
}

/// The members, resolved.
pub enum Group<'a> {
    /// A team.
    Team(Team),
    /// An active set and the pSync passed on to the host library.
    Set(ActiveSet, SymSlice<'a, i64>),
}

/// Bytes moved per round of [`exchange`] (the bootstrap's blob limit).
const CHUNK: usize = 4096;

impl State {
    fn group(&self, call: &str, on: On) -> Option<(Group<'_>, TeamShape)> {
        match on {
            On::Team(h) => {
                let t = crate::team::team(h);
                let shape = self.ctx.team_shape(t).ok()?;
                Some((Group::Team(t), shape))
            }
            On::Set(start, log, size, psync) => {
                let set = ActiveSet {
                    pe_start: start,
                    log_pe_stride: log,
                    pe_size: size,
                };
                let shape = TeamShape::active_set(start, log, size, self.npes).or_die(call);
                let ps = match self.sym(call, "pSync", psync, 1) {
                    Sym::Heap(off) => SymSlice::from_raw(off, 1),
                    Sym::Global(_) => self.psync.as_slice(),
                };
                Some((Group::Set(set, ps), shape))
            }
        }
    }

    /// Elements of `T` from heap offset `off` to the end of its block.
    fn heap_len<T>(&self, off: u64) -> usize {
        let a = self.allocs.lock().unwrap_or_else(|e| e.into_inner());
        a.iter()
            .find(|(o, b)| **o <= off && off < **o + b.bytes())
            .map_or(0, |(o, b)| {
                ((o + b.bytes() - off) as usize) / std::mem::size_of::<T>()
            })
    }
}

/// Every member's `mine`, in member order, through the bootstrap.
fn exchange(call: &str, ctx: &Context, shape: TeamShape, mine: &[u8]) -> Vec<Vec<u8>> {
    let lens = ctx
        .gather_members(shape, &(mine.len() as u64).to_le_bytes())
        .or_die(call);
    let lens: Vec<usize> = lens
        .iter()
        .map(|b| u64::from_le_bytes(b.as_slice().try_into().unwrap_or([0; 8])) as usize)
        .collect();
    let max = lens.iter().copied().max().unwrap_or(0);
    let mut out: Vec<Vec<u8>> = lens.iter().map(|&l| Vec::with_capacity(l)).collect();
    let mut at = 0;
    // Every contribution starts with one byte: an empty one would make the
    // bootstrap's allgather a barrier on some members and not on others.
    let mut part = Vec::with_capacity(CHUNK);
    while at < max {
        part.clear();
        part.push(0);
        part.extend_from_slice(&mine[at.min(mine.len())..(at + CHUNK - 1).min(mine.len())]);
        let got = ctx.gather_members(shape, &part).or_die(call);
        for (o, g) in out.iter_mut().zip(got) {
            o.extend_from_slice(g.get(1..).unwrap_or_default());
        }
        at += CHUNK - 1;
    }
    out
}

/// `n` elements at `p` as bytes (a local read).
///
/// # Safety
/// `p` points at `n` readable elements.
unsafe fn bytes_at<'a, T: Pod>(p: *const T, n: usize) -> &'a [u8] {
    if n == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n * std::mem::size_of::<T>()) }
}

/// Writes `b` at `p` (memmove: `p` may be a source of the same call).
///
/// # Safety
/// `p` has room for `b.len()` bytes.
unsafe fn write_at<T>(p: *mut T, b: &[u8]) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy(b.as_ptr(), p.cast::<u8>(), b.len()) };
}

fn member_index(call: &str, s: &State, shape: TeamShape) -> usize {
    shape
        .index_of(s.me)
        .unwrap_or_else(|| fatal(call, "this PE is not a member of the team or active set"))
        as usize
}

/// `shmem_barrier_all`.
pub fn barrier_all(call: &str) {
    st(call).ctx.barrier_all().or_die(call);
}

/// `shmem_sync_all`.
pub fn sync_all(call: &str) {
    st(call).ctx.sync_all().or_die(call);
}

/// `shmem_barrier` / `shmem_sync` over an active set.
pub fn barrier_active(call: &str, start: i32, log: i32, size: i32, psync: *mut i64, barrier: bool) {
    let s = st(call);
    let Some((Group::Set(set, ps), _)) = s.group(call, On::Set(start, log, size, psync)) else {
        unreachable!("an active set");
    };
    if barrier {
        s.ctx.barrier_active(set, &ps).or_die(call);
    } else {
        s.ctx.sync_active(set, &ps).or_die(call);
    }
}

/// Runs `f`, or -1 for SHMEM_TEAM_INVALID / a destroyed team.
fn with_group<'a>(call: &str, s: &'a State, on: On) -> Option<(Group<'a>, TeamShape)> {
    let g = s.group(call, on);
    if g.is_none() {
        if let On::Team(h) = on {
            if h != 0 {
                eprintln!("vkshmem: {call}: team handle {h:#x} names no live team");
            }
        }
    }
    g
}

/// `broadcast`: root's `source` into every member's `dest` (on a team the
/// root's too; on an active set the root's `dest` is left alone).
pub fn broadcast<T: Pod>(
    call: &str,
    on: On,
    dest: *mut T,
    source: *const T,
    nelems: usize,
    root: i32,
) -> i32 {
    let s = st(call);
    let Some((g, shape)) = with_group(call, s, on) else {
        return -1;
    };
    if root < 0 || root as u32 >= shape.size {
        fatal(
            call,
            format!(
                "PE_root {root} is not a member number (the team has {} members)",
                shape.size
            ),
        );
    }
    let n = nelems;
    let (d, src) = (
        s.sym(call, "dest", dest, n),
        s.sym(call, "source", source, n),
    );
    if let (Sym::Heap(d), Sym::Heap(o)) = (d, src) {
        let (d, o) = (SymSlice::<T>::from_raw(d, n), SymSlice::<T>::from_raw(o, n));
        match g {
            Group::Team(t) => s.ctx.broadcast(t, &d, &o, n, root as u32),
            Group::Set(set, ps) => s.ctx.broadcast_active(&d, &o, n, root as u32, set, &ps),
        }
        .or_die(call);
        return 0;
    }
    let me = member_index(call, s, shape);
    let is_root = me == root as usize;
    // SAFETY: C's contract: `source` holds nelems elements.
    let mine = if is_root {
        unsafe { bytes_at(source, n) }
    } else {
        &[]
    };
    let all = exchange(call, &s.ctx, shape, mine);
    if !is_root || matches!(g, Group::Team(_)) {
        // SAFETY: C's contract: `dest` has room for nelems elements.
        unsafe { write_at(dest, &all[root as usize]) };
    }
    0
}

/// `collect` (`fixed`: `fcollect`): every member's `source` in member order.
pub fn collect<T: Pod>(
    call: &str,
    on: On,
    dest: *mut T,
    source: *const T,
    nelems: usize,
    fixed: bool,
) -> i32 {
    let s = st(call);
    let Some((g, shape)) = with_group(call, s, on) else {
        return -1;
    };
    let n = nelems;
    let (d, src) = (
        s.sym(call, "dest", dest, n),
        s.sym(call, "source", source, n),
    );
    if let (Sym::Heap(d), Sym::Heap(o)) = (d, src) {
        let len = if fixed {
            n * shape.size as usize
        } else {
            s.heap_len::<T>(d)
        };
        let (d, o) = (
            SymSlice::<T>::from_raw(d, len),
            SymSlice::<T>::from_raw(o, n),
        );
        match (g, fixed) {
            (Group::Team(t), true) => s.ctx.fcollect(t, &d, &o, n),
            (Group::Team(t), false) => s.ctx.collect(t, &d, &o, n),
            (Group::Set(set, ps), true) => s.ctx.fcollect_active(&d, &o, n, set, &ps),
            (Group::Set(set, ps), false) => s.ctx.collect_active(&d, &o, n, set, &ps),
        }
        .or_die(call);
        return 0;
    }
    // SAFETY: C's contract: `source` holds nelems elements.
    let all = exchange(call, &s.ctx, shape, unsafe { bytes_at(source, n) });
    if fixed && all.iter().any(|b| b.len() != n * std::mem::size_of::<T>()) {
        fatal(call, "the members passed different nelems to fcollect");
    }
    let joined: Vec<u8> = all.concat();
    // SAFETY: C's contract: `dest` has room for every member's elements.
    unsafe { write_at(dest, &joined) };
    0
}

/// `alltoalls` (and `alltoall`, strides 1): block `j` of each member's
/// `source` to member `j`'s `dest`, as block `i` (the sender's number).
pub fn alltoalls<T: Pod>(
    call: &str,
    on: On,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    nelems: usize,
) -> i32 {
    let s = st(call);
    let Some((g, shape)) = with_group(call, s, on) else {
        return -1;
    };
    if dst <= 0 || sst <= 0 {
        fatal(
            call,
            format!("strides must be positive (dst {dst}, sst {sst})"),
        );
    }
    let (ds, ss) = (dst as usize, sst as usize);
    let npes = shape.size as usize;
    let total = npes
        .checked_mul(nelems)
        .unwrap_or_else(|| fatal(call, format!("{nelems} elements per member overflow")));
    let (dlen, slen) = (
        crate::addr::span(call, total, ds),
        crate::addr::span(call, total, ss),
    );
    let (d, src) = (
        s.sym(call, "dest", dest, dlen),
        s.sym(call, "source", source, slen),
    );
    if let (Sym::Heap(d), Sym::Heap(o)) = (d, src) {
        let (d, o) = (
            SymSlice::<T>::from_raw(d, dlen),
            SymSlice::<T>::from_raw(o, slen),
        );
        match (g, ds == 1 && ss == 1) {
            (Group::Team(t), true) => s.ctx.alltoall(t, &d, &o, nelems),
            (Group::Team(t), false) => s.ctx.alltoalls(t, &d, &o, ds, ss, nelems),
            (Group::Set(set, ps), true) => s.ctx.alltoall_active(&d, &o, nelems, set, &ps),
            (Group::Set(set, ps), false) => {
                s.ctx.alltoalls_active(&d, &o, ds, ss, nelems, set, &ps)
            }
        }
        .or_die(call);
        return 0;
    }
    let me = member_index(call, s, shape);
    // SAFETY: C's contract: `source` spans the strided elements.
    let all = exchange(call, &s.ctx, shape, unsafe { bytes_at(source, slen) });
    let sz = std::mem::size_of::<T>();
    for (j, b) in all.iter().enumerate() {
        if b.len() != slen * sz {
            fatal(call, "the members passed different nelems or strides");
        }
        for k in 0..nelems {
            let from = (me * nelems + k) * ss * sz;
            // SAFETY: C's contract: `dest` spans the strided elements.
            unsafe { write_at(dest.add((j * nelems + k) * ds), &b[from..from + sz]) };
        }
    }
    0
}

/// A type the C reductions take: the host library's [`Reduce`] types and
/// the complex types (reduced on the host through [`exchange`]).
pub trait CReduce: Pod {
    /// `a op b`.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    /// The host library's reduction on heap objects, when it has this type.
    #[allow(clippy::too_many_arguments)]
    fn heap(
        ctx: &Context,
        g: &Group<'_>,
        op: ReduceOp,
        d: u64,
        o: u64,
        n: usize,
    ) -> Option<Result<()>>;
}

impl<T: Reduce> CReduce for T {
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
        T::host_combine(op, a, b)
    }
    fn heap(
        ctx: &Context,
        g: &Group<'_>,
        op: ReduceOp,
        d: u64,
        o: u64,
        n: usize,
    ) -> Option<Result<()>> {
        let (d, o) = (SymSlice::<T>::from_raw(d, n), SymSlice::<T>::from_raw(o, n));
        Some(match g {
            Group::Team(t) => ctx.reduce(*t, op, &d, &o, n),
            Group::Set(set, ps) => ctx.reduce_active(op, &d, &o, n, *set, ps),
        })
    }
}

macro_rules! complex_reduce {
    ($($f:ty),*) => {$(
        impl CReduce for Complex<$f> {
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => Complex { re: a.re + b.re, im: a.im + b.im },
                    ReduceOp::Prod => Complex { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re },
                    _ => unreachable!("the header has only sum and product of complex types"),
                }
            }
            fn heap(_: &Context, _: &Group<'_>, _: ReduceOp, _: u64, _: u64, _: usize) -> Option<Result<()>> {
                None
            }
        }
    )*};
}
complex_reduce!(f32, f64);

/// A team or active-set reduction: every member's `source` combined element
/// by element into every member's `dest` (in place allowed).
pub fn reduce<T: CReduce>(
    call: &str,
    on: On,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
) -> i32 {
    let s = st(call);
    let Some((g, shape)) = with_group(call, s, on) else {
        return -1;
    };
    let n = nreduce;
    let (d, src) = (
        s.sym(call, "dest", dest, n),
        s.sym(call, "source", source, n),
    );
    if let (Sym::Heap(d), Sym::Heap(o)) = (d, src) {
        if let Some(r) = T::heap(&s.ctx, &g, op, d, o, n) {
            r.or_die(call);
            return 0;
        }
    }
    // SAFETY: C's contract: `source` holds nreduce elements.
    let all = exchange(call, &s.ctx, shape, unsafe { bytes_at(source, n) });
    let sz = std::mem::size_of::<T>();
    if all.iter().any(|b| b.len() != n * sz) {
        fatal(call, "the members passed different nreduce");
    }
    let elems = |b: &[u8]| -> Vec<T> {
        b.chunks_exact(sz)
            .map(bytemuck::pod_read_unaligned)
            .collect()
    };
    let mut acc = elems(&all[0]);
    for b in &all[1..] {
        for (a, x) in acc.iter_mut().zip(elems(b)) {
            *a = T::combine(op, *a, x);
        }
    }
    // SAFETY: C's contract: `dest` has room for nreduce elements.
    unsafe { write_at(dest, bytemuck::cast_slice(&acc)) };
    0
}

/// `shmem_<T>_<op>_to_all`: a reduction over an active set; `pWrk` must
/// be a symmetric object of `max(nreduce/2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE)`
/// elements (checked, not used).
#[allow(clippy::too_many_arguments)]
pub fn to_all<T: CReduce>(
    call: &str,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: i32,
    start: i32,
    log: i32,
    size: i32,
    pwrk: *mut T,
    psync: *mut i64,
) {
    let s = st(call);
    if nreduce < 0 {
        fatal(call, format!("nreduce {nreduce} is negative"));
    }
    let n = nreduce as usize;
    let _ = s.sym(call, "pWrk", pwrk, (n / 2 + 1).max(1));
    reduce(call, On::Set(start, log, size, psync), op, dest, source, n);
}

/// `vkshmemx_reduce_bytes`: a reduction of `nreduce` elements of
/// `elem_size` bytes whose arithmetic is C's (`combine`, from the header):
/// the `long double` reductions. On a team, or on an active set when
/// `psync` is not NULL. Through [`exchange`], whatever the objects.
#[allow(clippy::too_many_arguments)]
pub fn reduce_bytes(
    team: TeamH,
    start: i32,
    log: i32,
    size: i32,
    psync: *mut i64,
    dest: *mut std::ffi::c_void,
    source: *const std::ffi::c_void,
    nreduce: usize,
    elem: usize,
    combine: crate::CombineFn,
) -> i32 {
    let call = "shmem_longdouble reduction";
    let s = st(call);
    let Some(combine) = combine else {
        fatal(call, "no combine function")
    };
    let on = if psync.is_null() {
        On::Team(team)
    } else {
        On::Set(start, log, size, psync)
    };
    let Some((_, shape)) = with_group(call, s, on) else {
        return -1;
    };
    let bytes = nreduce.checked_mul(elem).unwrap_or_else(|| {
        fatal(
            call,
            format!("{nreduce} elements overflow the address space"),
        )
    });
    let _ = s.sym(call, "dest", dest.cast::<u8>(), bytes);
    let _ = s.sym(call, "source", source.cast::<u8>(), bytes);
    // SAFETY: C's contract: `source` holds nreduce elements.
    let all = exchange(call, &s.ctx, shape, unsafe {
        bytes_at(source.cast::<u8>(), bytes)
    });
    if all.iter().any(|b| b.len() != bytes) {
        fatal(call, "the members passed different nreduce");
    }
    // 16-byte aligned buffers: C's combine loads `long double`s from them.
    let words = bytes.div_ceil(16);
    let mut acc = vec![crate::LongDouble([0; 16]); words];
    let mut tmp = acc.clone();
    bytemuck::cast_slice_mut::<_, u8>(&mut acc)[..bytes].copy_from_slice(&all[0]);
    for b in &all[1..] {
        bytemuck::cast_slice_mut::<_, u8>(&mut tmp)[..bytes].copy_from_slice(b);
        // SAFETY: both buffers hold nreduce aligned elements of elem_size
        // bytes, as the combine function (the header's) expects.
        unsafe { combine(acc.as_mut_ptr().cast(), tmp.as_ptr().cast(), nreduce) };
    }
    // SAFETY: C's contract: `dest` has room for nreduce elements.
    unsafe {
        write_at(
            dest.cast::<u8>(),
            &bytemuck::cast_slice::<_, u8>(&acc)[..bytes],
        )
    };
    0
}
