//! The collectives' checking harness, shared by the conformance program
//! (collectives_check.rs) and the soak (soak.rs): per-PE pattern data that
//! encodes the PE, the index and a per-call salt; the destination poisoned
//! before the call so an element left unwritten shows; guard bytes before and
//! after it that must stay untouched; the source checked unchanged (unless in
//! place); the result compared element by element with a host reference
//! computed here from the patterns. Calls go through the host API or through
//! one device kernel per collective and form (`device_kernel_source`).
//!
//! The including program declares `mod combine` (common/combine.rs) beside it.

// Each program that includes this module uses a part of it.
#![allow(dead_code)]

use std::fmt::Debug;

use bytemuck::Pod;
use vkshmem::{Context, Reduce, ReduceOp, SymBuffer, SymSlice, Team, TeamConfig, TeamShape};

use crate::combine::Combine;

pub const GUARD: usize = 64;
pub const POISON: u8 = 0xa5;
pub const GUARD_BYTE: u8 = 0x5a;

/// An element type with a host reference for the reductions ([`Combine`]).
pub trait Elem: Reduce + Combine + PartialEq + Debug {
    const NAME: &'static str;
    const FLOAT: bool;
    /// The pattern value of element `i` on PE `pe` for call `salt`.
    fn pat(pe: u32, i: usize, salt: u32, op: Option<ReduceOp>) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = false;
            fn pat(pe: u32, i: usize, salt: u32, _op: Option<ReduceOp>) -> Self {
                let h = (pe as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ (i as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
                    ^ (salt as u64).wrapping_mul(0x1656_67b1_9e37_79f9);
                (h ^ (h >> 29)) as $t
            }
        }
    )*};
}
int_elem!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = true;
            // Small integers, so that sums and products are exact in any order.
            fn pat(pe: u32, i: usize, salt: u32, op: Option<ReduceOp>) -> Self {
                let k = pe as usize * 37 + i * 11 + salt as usize;
                match op {
                    Some(ReduceOp::Prod) => (1 + k % 2) as $t,
                    _ => (k % 201) as $t - 100.0,
                }
            }
        }
    )*};
}
float_elem!(f32, f64);

macro_rules! half_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = true;
            // Any finite bit pattern (subnormals, the largest values, ties of
            // rounding: the device's own f32-to-half rounding is under test),
            // never NaN or infinity (the NaN a device makes of inf - inf need
            // not be the host's), never zero for max and min (the sign of a
            // zero they pick is the implementation's) or prod (inf * 0).
            fn pat(pe: u32, i: usize, salt: u32, op: Option<ReduceOp>) -> Self {
                let h = (pe as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ (i as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
                    ^ (salt as u64).wrapping_mul(0x1656_67b1_9e37_79f9);
                let mut x = <$t>::from_bits((h ^ (h >> 29)) as u16);
                if !x.is_finite() {
                    x = <$t>::from_bits(x.to_bits() & 0x83ff);
                }
                if x.to_bits() & 0x7fff == 0 && !matches!(op, Some(ReduceOp::Sum) | None) {
                    x = <$t>::ONE;
                }
                x
            }
        }
    )*};
}
half_elem!(vkshmem::half::f16, vkshmem::half::bf16);

/// A team under test: its name, handle and WORLD members.
pub struct TeamCase {
    pub name: String,
    pub team: Team,
    pub members: Vec<u32>,
}

/// Which form of the collectives a pass checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `Context::broadcast` ...
    Host,
    /// `shmem_*` called by one invocation of a device kernel.
    Thread,
    /// `shmemx_*_work_group` called by a whole workgroup.
    WorkGroup,
    /// `shmemx_*_work_groups` called by every workgroup of a dispatch of
    /// [`work_groups`].
    WorkGroups,
    /// `Context::post` of a queued collective, then `Request::wait`.
    Queue,
}

/// The collective of one call.
#[derive(Debug, Clone, Copy)]
pub enum Coll {
    Broadcast(u32),
    Fcollect,
    Collect,
    Alltoall,
    Alltoalls(usize, usize),
    Reduce(ReduceOp),
}

/// Workgroups of the multi-workgroup form's dispatches: 2 where the device
/// runs 2 at once (every CI machine has 2 CPUs), so that the grid sync is
/// always crossed; 1 where it runs only 1.
pub fn work_groups(ctx: &Context) -> u32 {
    ctx.resident_workgroups().min(2)
}

/// The reductions the device pass checks: every kind and every operation once.
pub const DEVICE_REDUCTIONS: [(&str, &str, ReduceOp); 10] = [
    ("i32", "int32", ReduceOp::Sum),
    ("u8", "uint8", ReduceOp::Xor),
    ("f64", "double", ReduceOp::Max),
    ("i16", "int16", ReduceOp::Prod),
    ("u64", "uint64", ReduceOp::And),
    ("f32", "float", ReduceOp::Sum),
    ("i8", "int8", ReduceOp::Min),
    ("u16", "uint16", ReduceOp::Or),
    ("i64", "int64", ReduceOp::Sum),
    ("u32", "uint32", ReduceOp::Prod),
];

/// The device pass's kernel for call `only` (`which` picks the call, `form` the
/// form: 2 is none, for PEs outside the team, which must still launch: a launch
/// of a waiting kernel starts with a sync of every PE). One kernel per call:
/// llvmpipe inlines everything, and a kernel with every call in it took minutes
/// to compile there.
/// `group_size`: the work_group(s) forms' workgroup size (the per-thread form
/// keeps 64).
pub fn device_kernel_source(only: u32, form: Form, group_size: u32) -> String {
    let mut calls = vec![
        ("shmem_broadcastmem", "a.dest, a.source, a.n, a.root"),
        ("shmem_collectmem", "a.dest, a.source, a.n"),
        ("shmem_fcollectmem", "a.dest, a.source, a.n"),
        ("shmem_alltoallmem", "a.dest, a.source, a.n"),
        (
            "shmem_uint64_alltoalls",
            "a.dest, a.source, a.dst, a.sst, a.n",
        ),
        (
            "shmem_uint8_alltoalls",
            "a.dest, a.source, a.dst, a.sst, a.n",
        ),
        ("shmem_int32_broadcast", "a.dest, a.source, a.n, a.root"),
        ("shmem_int16_fcollect", "a.dest, a.source, a.n"),
    ]
    .into_iter()
    .map(|(f, args)| (f.to_string(), args))
    .collect::<Vec<_>>();
    for (_, tn, op) in DEVICE_REDUCTIONS {
        calls.push((
            format!("shmem_{tn}_{}_reduce", op.name()),
            "a.dest, a.source, a.n",
        ));
    }
    let mut thread = String::new();
    let mut group = String::new();
    for (i, (f, args)) in calls.iter().enumerate() {
        if i as u32 != only {
            continue;
        }
        // One form per kernel: each inlined wait costs llvmpipe seconds.
        let wg = format!("{}_work_group", f.replacen("shmem_", "shmemx_", 1));
        if form == Form::Thread {
            thread.push_str(&format!(
                "                case {i}u: {{ r = {f}(a.team, {args}); }}\n"
            ));
        } else if form == Form::WorkGroups {
            group.push_str(&format!(
                "            case {i}u: {{ r = {wg}s(a.team, {args}, li, {group_size}u, wid.x, nw.x); }}\n"
            ));
        } else {
            group.push_str(&format!(
                "            case {i}u: {{ r = {wg}(a.team, {args}, li, {group_size}u); }}\n"
            ));
        }
    }
    let size = if form == Form::Thread { 64 } else { group_size };
    format!(
        "struct P {{ which: u32, form: u32, team: u32, dest: u32, source: u32, n: u32, root: u32, dst: u32, sst: u32 }}
var<immediate> p: P;
@compute @workgroup_size({size})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let a = p;
    var r = 0;
    if a.form == 0u {{
        if li == 0u {{
            switch a.which {{
{thread}                default: {{ }}
            }}
        }}
    }} else if a.form == 1u {{
        switch a.which {{
{group}            default: {{ }}
        }}
    }}
}}
"
    )
}

/// The device kernel's immediates.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct DeviceArgs {
    pub which: u32,
    pub form: u32,
    pub team: u32,
    pub dest: u32,
    pub source: u32,
    pub n: u32,
    pub root: u32,
    pub dst: u32,
    pub sst: u32,
}

pub struct Harness {
    pub ctx: Context,
    pub form: Form,
    /// This PE is not in the team of the current calls: device forms still launch
    /// (with nothing to do) and nothing is checked.
    pub phantom: bool,
    /// Invocations of the work_group(s) forms' workgroup (64 unless set):
    /// on lavapipe, one SIMD row (`DeviceInfo::subgroup_size`, 8) is linked
    /// without barriers (`LibraryConfig::row_lanes`), more rows with them.
    pub group: u32,
    pub kernels: std::collections::HashMap<(u32, u32, u32), std::sync::Arc<vkshmem::DeviceKernel>>,
    pub src: SymBuffer<u8>,
    pub dst: SymBuffer<u8>,
    pub cap: usize,
    pub salt: u32,
    /// Bytes by which every call's source and dest are moved from the start of
    /// their regions (a multiple of the element size): other alignments, other
    /// code paths.
    pub shift: usize,
    pub calls: u64,
    pub wrong: u64,
    pub fails: Vec<String>,
}

impl Harness {
    /// Prints the failures and the `PROG: pe=P calls=N wrong=W` line that the
    /// launcher tests read, finalizes the context, and exits 1 when anything
    /// was wrong.
    pub fn finish(self, prog: &str) -> anyhow::Result<()> {
        for f in &self.fails {
            eprintln!("{f}");
        }
        let ctx = self.ctx.clone();
        println!(
            "{prog}: pe={} calls={} wrong={}",
            ctx.my_pe(),
            self.calls,
            self.wrong
        );
        let ok = self.wrong == 0;
        drop(self);
        // Every PE has printed its line before one ends the job (the
        // caller finalizes: `common/pes.rs`).
        ctx.barrier_all()?;
        if !ok {
            crate::fail_fast::fail(format_args!("{prog}: wrong results"));
        }
        Ok(())
    }

    /// A harness in the host form with source and dest regions of `cap` bytes
    /// (dest with its guards), allocated collectively.
    pub fn new(ctx: &Context, cap: usize) -> anyhow::Result<Harness> {
        Ok(Harness {
            ctx: ctx.clone(),
            form: Form::Host,
            phantom: false,
            group: 64,
            kernels: Default::default(),
            src: ctx.malloc::<u8>(cap)?,
            dst: ctx.malloc::<u8>(cap + 2 * GUARD)?,
            cap,
            salt: 0,
            shift: 0,
            calls: 0,
            wrong: 0,
            fails: Vec::new(),
        })
    }

    pub fn me(&self) -> u32 {
        self.ctx.my_pe()
    }

    /// `n` elements of `T` at the start of the source region.
    pub fn src_slice<T: Pod>(&self, n: usize) -> SymSlice<'static, T> {
        SymSlice::from_raw(self.src.offset() + self.shift as u64, n)
    }

    /// `n` elements of `T` after the dest region's front guard.
    pub fn dst_slice<T: Pod>(&self, n: usize) -> SymSlice<'static, T> {
        SymSlice::from_raw(self.dst.offset() + (GUARD + self.shift) as u64, n)
    }

    /// Runs one collective in the harness's form.
    pub fn call<T: Elem>(
        &mut self,
        tc: &TeamCase,
        c: Coll,
        d: &SymSlice<T>,
        s: &SymSlice<T>,
        n: usize,
    ) -> anyhow::Result<()> {
        let ctx = &self.ctx;
        if self.form == Form::Host {
            match c {
                Coll::Broadcast(root) => ctx.broadcast(tc.team, d, s, n, root)?,
                Coll::Fcollect => ctx.fcollect(tc.team, d, s, n)?,
                Coll::Collect => ctx.collect(tc.team, d, s, n)?,
                Coll::Alltoall => ctx.alltoall(tc.team, d, s, n)?,
                Coll::Alltoalls(dst, sst) => ctx.alltoalls(tc.team, d, s, dst, sst, n)?,
                Coll::Reduce(op) => ctx.reduce(tc.team, op, d, s, n)?,
            }
            return Ok(());
        }
        if self.form == Form::Queue {
            // Only members call a queued collective (its syncs are on the
            // device, among the team).
            if self.phantom {
                return Ok(());
            }
            use vkshmem::Collective as C;
            let coll = match c {
                Coll::Broadcast(root) => C::broadcast(d, s, n, root),
                Coll::Fcollect => C::fcollect(d, s, n),
                Coll::Collect => C::collect(d, s, n),
                Coll::Alltoall => C::alltoall(d, s, n),
                Coll::Alltoalls(dst, sst) => C::alltoalls(d, s, dst, sst, n),
                Coll::Reduce(op) => C::reduce(op, d, s, n),
            };
            ctx.post(tc.team, coll)?.wait()?;
            return Ok(());
        }
        let es = std::mem::size_of::<T>() as u32;
        let kind = std::any::type_name::<T>();
        let (which, count, root, dst, sst) = match c {
            Coll::Broadcast(root) if kind == "i32" => (6, n as u32, root, 0, 0),
            Coll::Broadcast(root) => (0, n as u32 * es, root, 0, 0),
            Coll::Collect => (1, n as u32 * es, 0, 0, 0),
            Coll::Fcollect if kind == "i16" => (7, n as u32, 0, 0, 0),
            Coll::Fcollect => (2, n as u32 * es, 0, 0, 0),
            Coll::Alltoall => (3, n as u32 * es, 0, 0, 0),
            Coll::Alltoalls(dst, sst) if es == 8 => (4, n as u32, 0, dst as u32, sst as u32),
            Coll::Alltoalls(dst, sst) if es == 1 => (5, n as u32, 0, dst as u32, sst as u32),
            Coll::Reduce(op) => {
                let i = DEVICE_REDUCTIONS
                    .iter()
                    .position(|(k, _, o)| *k == kind && *o == op)
                    .ok_or_else(|| {
                        anyhow::anyhow!("no device reduction {kind} {op:?} in the harness")
                    })?;
                (8 + i as u32, n as u32, 0, 0, 0)
            }
            other => anyhow::bail!("no device form of {other:?} for {kind} in the harness"),
        };
        let args = DeviceArgs {
            which,
            form: if self.phantom {
                2
            } else if self.form == Form::Thread {
                0
            } else {
                1
            },
            team: tc.team.device_handle(),
            dest: d.offset() as u32,
            source: s.offset() as u32,
            n: count,
            root,
            dst,
            sst,
        };
        let group = if self.form == Form::Thread {
            64
        } else {
            self.group
        };
        let key = (which, self.form as u32, group);
        if !self.kernels.contains_key(&key) {
            let name = format!("collectives_check_{which}_{:?}_{group}", self.form);
            let k = ctx.device_kernel(&device_kernel_source(which, self.form, group), &name)?;
            self.kernels.insert(key, k);
        }
        let groups = if self.form == Form::WorkGroups {
            work_groups(ctx)
        } else {
            1
        };
        ctx.launch(
            &self.kernels[&key],
            [groups, 1, 1],
            &[],
            bytemuck::bytes_of(&args),
        )?;
        Ok(())
    }

    pub fn fail(&mut self, what: String) {
        if self.fails.len() < 20 {
            self.fails.push(what);
        }
    }

    /// Writes this PE's source: `pat(me, i)` for `i < n`.
    pub fn write_src<T: Elem>(&self, n: usize, op: Option<ReduceOp>) -> anyhow::Result<Vec<T>> {
        let v: Vec<T> = (0..n)
            .map(|i| T::pat(self.me(), i, self.salt, op))
            .collect();
        self.src
            .write_at(self.me(), self.shift, bytemuck::cast_slice(&v))?;
        Ok(v)
    }

    /// Poisons `bytes` of dest and puts guards around them.
    pub fn poison_dst(&self, bytes: usize) -> anyhow::Result<()> {
        let mut v = vec![POISON; GUARD * 2 + bytes];
        v[..GUARD].fill(GUARD_BYTE);
        v[GUARD + bytes..].fill(GUARD_BYTE);
        self.dst.write_at(self.me(), self.shift, &v)?;
        Ok(())
    }

    /// Compares dest with `want` (None: must still be poison) and the guards.
    pub fn check_dst<T: Elem>(&mut self, what: &str, want: &[Option<T>]) -> anyhow::Result<()> {
        if self.phantom {
            return Ok(());
        }
        let es = std::mem::size_of::<T>();
        let bytes = want.len() * es;
        let mut got = vec![0u8; GUARD * 2 + bytes];
        self.dst.read_at(self.me(), self.shift, &mut got)?;
        let mut wrong = 0u64;
        let mut first = None;
        for (i, w) in want.iter().enumerate() {
            let b = &got[GUARD + i * es..GUARD + (i + 1) * es];
            let ok = match w {
                Some(w) => b == bytemuck::bytes_of(w),
                None => b.iter().all(|&x| x == POISON),
            };
            if !ok {
                wrong += 1;
                first.get_or_insert_with(|| {
                    format!(
                        "element {i}: got {:?}, want {w:?}",
                        bytemuck::pod_read_unaligned::<T>(b)
                    )
                });
            }
        }
        let guards = got[..GUARD]
            .iter()
            .chain(&got[GUARD + bytes..])
            .filter(|&&x| x != GUARD_BYTE)
            .count() as u64;
        self.calls += 1;
        if wrong + guards > 0 {
            self.wrong += wrong + guards;
            self.fail(format!(
                "PE {}: {what}: {wrong} wrong elements, {guards} guard bytes overwritten; {}",
                self.me(),
                first.unwrap_or_default()
            ));
        }
        Ok(())
    }

    /// The source must be unchanged by a collective that only reads it.
    pub fn check_src<T: Elem>(&mut self, what: &str, src: &[T]) -> anyhow::Result<()> {
        if self.phantom {
            return Ok(());
        }
        let mut got = vec![0u8; std::mem::size_of_val(src)];
        self.src.read_at(self.me(), self.shift, &mut got)?;
        if got != bytemuck::cast_slice::<T, u8>(src) {
            self.wrong += 1;
            self.fail(format!("PE {}: {what}: the source was modified", self.me()));
        }
        Ok(())
    }

    pub fn broadcast<T: Elem>(&mut self, tc: &TeamCase, n: usize, root: u32) -> anyhow::Result<()> {
        self.salt += 1;
        let src = self.write_src::<T>(n, None)?;
        self.poison_dst(n * std::mem::size_of::<T>())?;
        let (d, s) = (self.dst_slice::<T>(n), self.src_slice::<T>(n));
        self.call(tc, Coll::Broadcast(root), &d, &s, n)?;
        let r = tc.members[root as usize];
        let want: Vec<Option<T>> = (0..n)
            .map(|i| Some(T::pat(r, i, self.salt, None)))
            .collect();
        let what = format!("broadcast<{}> team {} n={n} root={root}", T::NAME, tc.name);
        self.check_dst(&what, &want)?;
        self.check_src(&what, &src)
    }

    pub fn fcollect<T: Elem>(&mut self, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
        self.salt += 1;
        let size = tc.members.len();
        let src = self.write_src::<T>(n, None)?;
        self.poison_dst(n * size * std::mem::size_of::<T>())?;
        let (d, s) = (self.dst_slice::<T>(n * size), self.src_slice::<T>(n));
        self.call(tc, Coll::Fcollect, &d, &s, n)?;
        let want: Vec<Option<T>> = tc
            .members
            .iter()
            .flat_map(|&p| (0..n).map(move |i| (p, i)))
            .map(|(p, i)| Some(T::pat(p, i, self.salt, None)))
            .collect();
        let what = format!("fcollect<{}> team {} n={n}", T::NAME, tc.name);
        self.check_dst(&what, &want)?;
        self.check_src(&what, &src)
    }

    pub fn collect<T: Elem>(&mut self, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
        self.salt += 1;
        // Member j gives n >> (j % 3) elements: the counts differ, some are zero.
        let count = |j: usize| n >> (j % 3);
        let me = tc.members.iter().position(|&p| p == self.me()).unwrap_or(0);
        let total: usize = (0..tc.members.len()).map(count).sum();
        let src = self.write_src::<T>(count(me), None)?;
        self.poison_dst(total * std::mem::size_of::<T>())?;
        let (d, s) = (self.dst_slice::<T>(total), self.src_slice::<T>(count(me)));
        self.call(tc, Coll::Collect, &d, &s, count(me))?;
        let want: Vec<Option<T>> = tc
            .members
            .iter()
            .enumerate()
            .flat_map(|(j, &p)| (0..count(j)).map(move |i| (p, i)))
            .map(|(p, i)| Some(T::pat(p, i, self.salt, None)))
            .collect();
        let what = format!("collect<{}> team {} n={n}", T::NAME, tc.name);
        self.check_dst(&what, &want)?;
        self.check_src(&what, &src)
    }

    pub fn alltoall<T: Elem>(&mut self, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
        self.salt += 1;
        let size = tc.members.len();
        let me = tc.members.iter().position(|&p| p == self.me()).unwrap_or(0);
        let src = self.write_src::<T>(n * size, None)?;
        self.poison_dst(n * size * std::mem::size_of::<T>())?;
        let (d, s) = (self.dst_slice::<T>(n * size), self.src_slice::<T>(n * size));
        self.call(tc, Coll::Alltoall, &d, &s, n)?;
        let want: Vec<Option<T>> = tc
            .members
            .iter()
            .flat_map(|&p| (0..n).map(move |i| (p, i)))
            .map(|(p, i)| Some(T::pat(p, me * n + i, self.salt, None)))
            .collect();
        let what = format!("alltoall<{}> team {} n={n}", T::NAME, tc.name);
        self.check_dst(&what, &want)?;
        self.check_src(&what, &src)
    }

    pub fn alltoalls<T: Elem>(
        &mut self,
        tc: &TeamCase,
        n: usize,
        dst: usize,
        sst: usize,
    ) -> anyhow::Result<()> {
        self.salt += 1;
        let size = tc.members.len();
        let me = tc.members.iter().position(|&p| p == self.me()).unwrap_or(0);
        let span = |st: usize| if n == 0 { 0 } else { (size * n - 1) * st + 1 };
        let src = self.write_src::<T>(span(sst), None)?;
        self.poison_dst(span(dst) * std::mem::size_of::<T>())?;
        let (d, s) = (
            self.dst_slice::<T>(span(dst)),
            self.src_slice::<T>(span(sst)),
        );
        self.call(tc, Coll::Alltoalls(dst, sst), &d, &s, n)?;
        let mut want: Vec<Option<T>> = vec![None; span(dst)];
        for (j, &p) in tc.members.iter().enumerate() {
            for i in 0..n {
                want[(j * n + i) * dst] = Some(T::pat(p, (me * n + i) * sst, self.salt, None));
            }
        }
        let what = format!(
            "alltoalls<{}> team {} n={n} dst={dst} sst={sst}",
            T::NAME,
            tc.name
        );
        self.check_dst(&what, &want)?;
        self.check_src(&what, &src)
    }

    pub fn reduce<T: Elem>(
        &mut self,
        tc: &TeamCase,
        op: ReduceOp,
        n: usize,
        in_place: bool,
    ) -> anyhow::Result<()> {
        self.salt += 1;
        let mine: Vec<T> = (0..n)
            .map(|i| T::pat(self.me(), i, self.salt, Some(op)))
            .collect();
        let d = self.dst_slice::<T>(n);
        let s = if in_place {
            self.poison_dst(n * std::mem::size_of::<T>())?;
            self.dst
                .write_at(self.me(), GUARD + self.shift, bytemuck::cast_slice(&mine))?;
            d
        } else {
            self.src
                .write_at(self.me(), self.shift, bytemuck::cast_slice(&mine))?;
            self.poison_dst(n * std::mem::size_of::<T>())?;
            self.src_slice::<T>(n)
        };
        self.call(tc, Coll::Reduce(op), &d, &s, n)?;
        let want: Vec<Option<T>> = (0..n)
            .map(|i| {
                let mut acc = T::pat(tc.members[0], i, self.salt, Some(op));
                for &p in &tc.members[1..] {
                    acc = T::combine(op, acc, T::pat(p, i, self.salt, Some(op)));
                }
                Some(acc)
            })
            .collect();
        let what = format!(
            "{}_reduce<{}> team {} n={n}{}",
            op.name(),
            T::NAME,
            tc.name,
            if in_place { " in place" } else { "" }
        );
        self.check_dst(&what, &want)?;
        if !in_place {
            self.check_src(&what, &mine)?;
        }
        Ok(())
    }

    /// Every operation the type supports at every size in `sizes`.
    pub fn reduce_all_ops<T: Elem>(
        &mut self,
        tc: &TeamCase,
        sizes: &[usize],
    ) -> anyhow::Result<()> {
        for op in ReduceOp::ALL {
            if op.bitwise() && T::FLOAT {
                continue;
            }
            for &n in sizes {
                self.reduce::<T>(tc, op, n, false)?;
            }
        }
        Ok(())
    }

    pub fn movement<T: Elem>(
        &mut self,
        tc: &TeamCase,
        sizes: &[usize],
        all_roots_upto: usize,
    ) -> anyhow::Result<()> {
        let size = tc.members.len() as u32;
        for &n in sizes {
            let roots: Vec<u32> = if n <= all_roots_upto {
                (0..size).collect()
            } else {
                vec![size - 1]
            };
            for root in roots {
                self.broadcast::<T>(tc, n, root)?;
            }
            self.fcollect::<T>(tc, n)?;
            self.collect::<T>(tc, n)?;
            self.alltoall::<T>(tc, n)?;
            if n <= 4096 {
                self.alltoalls::<T>(tc, n, 2, 3)?;
            }
        }
        Ok(())
    }
}

/// Makes the teams under test (collective over WORLD) and checks each handle
/// against the team arithmetic: members, `team_my_pe`, `team_n_pes`,
/// `team_translate_pe` to WORLD and back.
pub fn teams(ctx: &Context) -> anyhow::Result<Vec<TeamCase>> {
    let n = ctx.n_pes() as i32;
    let me = ctx.my_pe();
    let world = TeamShape::world(n as u32);
    let cfg = TeamConfig::default();
    let mut out = vec![TeamCase {
        name: "WORLD".into(),
        team: Team::WORLD,
        members: (0..n as u32).collect(),
    }];
    let mut add = |name: &str, t: Option<Team>, want: TeamShape| -> anyhow::Result<()> {
        let members: Vec<u32> = want.members().collect();
        anyhow::ensure!(
            t.is_some() == members.contains(&me),
            "team {name}: PE {me} got {t:?}, members are {members:?}"
        );
        if let Some(team) = t {
            let got: Vec<u32> = ctx.team_shape(team)?.members().collect();
            anyhow::ensure!(
                got == members,
                "team {name}: members {got:?}, want {members:?}"
            );
            let idx = ctx.team_my_pe(team)?;
            anyhow::ensure!(members[idx as usize] == me && ctx.team_n_pes(team)? == want.size);
            for (i, &w) in members.iter().enumerate() {
                anyhow::ensure!(ctx.team_translate_pe(team, i as i32, Team::WORLD)? == Some(w));
                anyhow::ensure!(
                    ctx.team_translate_pe(Team::WORLD, w as i32, team)? == Some(i as u32)
                );
            }
            anyhow::ensure!(ctx
                .team_translate_pe(team, want.size as i32, Team::WORLD)?
                .is_none());
        }
        // Non-members keep a placeholder, so that every PE numbers the teams alike.
        out.push(TeamCase {
            name: name.into(),
            team: t.unwrap_or(Team::INVALID),
            members,
        });
        Ok(())
    };
    let half = (n + 1) / 2;
    add(
        "evens",
        ctx.team_split_strided(Team::WORLD, 0, 2, half, &cfg)?,
        world.split_strided(0, 2, half)?,
    )?;
    add(
        "first3",
        ctx.team_split_strided(Team::WORLD, 0, 1, n.min(3), &cfg)?,
        world.split_strided(0, 1, n.min(3))?,
    )?;
    add(
        "reversed",
        ctx.team_split_strided(Team::WORLD, n - 1, -1, n, &cfg)?,
        world.split_strided(n - 1, -1, n)?,
    )?;
    let (x, y) = ctx.team_split_2d(Team::WORLD, 2, &cfg, &cfg)?;
    let (wx, wy) = world.split_2d(2, me)?;
    add("2d-x", Some(x), wx)?;
    add("2d-y", Some(y), wy)?;
    let (single, _) = ctx.team_split_2d(Team::WORLD, 1, &cfg, &cfg)?;
    add("single", Some(single), TeamShape::single(me))?;
    Ok(out)
}
