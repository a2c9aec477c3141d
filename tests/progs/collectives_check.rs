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
//! two device collectives per form (each costs llvmpipe seconds to compile).

use std::fmt::Debug;

use bytemuck::Pod;
use vkshmem::{
    ActiveSet, Context, Error, Reduce, ReduceOp, SymBuffer, SymSlice, Team, TeamConfig, TeamShape,
};

const GUARD: usize = 64;
const POISON: u8 = 0xa5;
const GUARD_BYTE: u8 = 0x5a;

#[path = "common/combine.rs"]
mod combine;
use combine::Combine;

/// An element type with a host reference for the reductions ([`Combine`]).
trait Elem: Reduce + Combine + PartialEq + Debug {
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

/// A team under test: its name, handle and WORLD members.
struct TeamCase {
    name: String,
    team: Team,
    members: Vec<u32>,
}

/// Which form of the collectives a pass checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `Context::broadcast` ...
    Host,
    /// `shmem_*` called by one invocation of a device kernel.
    Thread,
    /// `shmemx_*_work_group` called by a whole workgroup.
    WorkGroup,
}

/// The collective of one call.
#[derive(Debug, Clone, Copy)]
enum Coll {
    Broadcast(u32),
    Fcollect,
    Collect,
    Alltoall,
    Alltoalls(usize, usize),
    Reduce(ReduceOp),
}

/// The reductions the device pass checks: every kind and every operation once.
const DEVICE_REDUCTIONS: [(&str, &str, ReduceOp); 10] = [
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
fn device_kernel_source(only: u32, form: Form) -> String {
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
        } else {
            group.push_str(&format!(
                "            case {i}u: {{ r = {wg}(a.team, {args}, li, 64u); }}\n"
            ));
        }
    }
    format!(
        "struct P {{ which: u32, form: u32, team: u32, dest: u32, source: u32, n: u32, root: u32, dst: u32, sst: u32 }}
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {{
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
struct DeviceArgs {
    which: u32,
    form: u32,
    team: u32,
    dest: u32,
    source: u32,
    n: u32,
    root: u32,
    dst: u32,
    sst: u32,
}

struct Harness {
    ctx: Context,
    form: Form,
    /// This PE is not in the team of the current calls: device forms still launch
    /// (with nothing to do) and nothing is checked.
    phantom: bool,
    kernels: std::collections::HashMap<(u32, u32), std::sync::Arc<vkshmem::DeviceKernel>>,
    src: SymBuffer<u8>,
    dst: SymBuffer<u8>,
    cap: usize,
    salt: u32,
    calls: u64,
    wrong: u64,
    fails: Vec<String>,
}

impl Harness {
    fn me(&self) -> u32 {
        self.ctx.my_pe()
    }

    /// `n` elements of `T` at the start of the source region.
    fn src_slice<T: Pod>(&self, n: usize) -> SymSlice<T> {
        SymSlice::from_raw(self.src.offset(), n)
    }

    /// `n` elements of `T` after the dest region's front guard.
    fn dst_slice<T: Pod>(&self, n: usize) -> SymSlice<T> {
        SymSlice::from_raw(self.dst.offset() + GUARD as u64, n)
    }

    /// Runs one collective in the harness's form.
    fn call<T: Elem>(
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
        let key = (which, self.form as u32);
        if !self.kernels.contains_key(&key) {
            let name = format!("collectives_check_{which}_{:?}", self.form);
            let k = ctx.device_kernel(&device_kernel_source(which, self.form), &name)?;
            self.kernels.insert(key, k);
        }
        ctx.launch(
            &self.kernels[&key],
            [1, 1, 1],
            &[],
            bytemuck::bytes_of(&args),
        )?;
        Ok(())
    }

    fn fail(&mut self, what: String) {
        if self.fails.len() < 20 {
            self.fails.push(what);
        }
    }

    /// Writes this PE's source: `pat(me, i)` for `i < n`.
    fn write_src<T: Elem>(&self, n: usize, op: Option<ReduceOp>) -> anyhow::Result<Vec<T>> {
        let v: Vec<T> = (0..n)
            .map(|i| T::pat(self.me(), i, self.salt, op))
            .collect();
        self.src.write(bytemuck::cast_slice(&v))?;
        Ok(v)
    }

    /// Poisons `bytes` of dest and puts guards around them.
    fn poison_dst(&self, bytes: usize) -> anyhow::Result<()> {
        let mut v = vec![POISON; GUARD * 2 + bytes];
        v[..GUARD].fill(GUARD_BYTE);
        v[GUARD + bytes..].fill(GUARD_BYTE);
        self.dst.write(&v)?;
        Ok(())
    }

    /// Compares dest with `want` (None: must still be poison) and the guards.
    fn check_dst<T: Elem>(&mut self, what: &str, want: &[Option<T>]) -> anyhow::Result<()> {
        if self.phantom {
            return Ok(());
        }
        let es = std::mem::size_of::<T>();
        let bytes = want.len() * es;
        let mut got = vec![0u8; GUARD * 2 + bytes];
        self.dst.read(&mut got)?;
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
    fn check_src<T: Elem>(&mut self, what: &str, src: &[T]) -> anyhow::Result<()> {
        if self.phantom {
            return Ok(());
        }
        let mut got = vec![0u8; std::mem::size_of_val(src)];
        self.src.read(&mut got)?;
        if got != bytemuck::cast_slice::<T, u8>(src) {
            self.wrong += 1;
            self.fail(format!("PE {}: {what}: the source was modified", self.me()));
        }
        Ok(())
    }

    fn broadcast<T: Elem>(&mut self, tc: &TeamCase, n: usize, root: u32) -> anyhow::Result<()> {
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

    fn fcollect<T: Elem>(&mut self, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
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

    fn collect<T: Elem>(&mut self, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
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

    fn alltoall<T: Elem>(&mut self, tc: &TeamCase, n: usize) -> anyhow::Result<()> {
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

    fn alltoalls<T: Elem>(
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

    fn reduce<T: Elem>(
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
                .write_at(self.me(), GUARD, bytemuck::cast_slice(&mine))?;
            d
        } else {
            self.src.write(bytemuck::cast_slice(&mine))?;
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
    fn reduce_all_ops<T: Elem>(&mut self, tc: &TeamCase, sizes: &[usize]) -> anyhow::Result<()> {
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

    fn movement<T: Elem>(
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
fn teams(ctx: &Context) -> anyhow::Result<Vec<TeamCase>> {
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
    // member of the parent reports alike; SHARED and NODE are WORLD here (one
    // device, one node).
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
    for t in [Team::SHARED, Team::NODE] {
        h.calls += 1;
        if ctx.team_shape(t)? != TeamShape::world(ctx.n_pes()) {
            h.wrong += 1;
            h.fail(format!("PE {me}: {t:?} is {:?}", ctx.team_shape(t)?));
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
    for form in [Form::Thread, Form::WorkGroup] {
        h.form = form;
        let sizes: &[usize] = match (form, quick) {
            (Form::Thread, true) => &[1, 7],
            (Form::Thread, false) => &[0, 1, 7, 100],
            (_, true) => &[1, 100],
            (_, false) => &[0, 1, 7, 100, 1000, 4096],
        };
        for &k in picked {
            let Some(tc) = cases.get(k) else { continue };
            h.phantom = !tc.members.contains(&me);
            h.salt =
                10_000_000 + 100_000 * k as u32 + if form == Form::Thread { 0 } else { 50_000 };
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
    h.phantom = false;
    h.form = Form::Host;
    ctx.barrier_all()?;
    Ok(())
}

/// `--device-misuse`: every PE calls the device broadcast with a root outside the
/// team; every PE must get `Error::Device` with `ERR_BAD_PE` (then the context is
/// broken by design, so the program ends without finalize).
fn device_misuse() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    let buf = ctx.malloc::<u8>(64)?;
    let k = ctx.device_kernel(&device_kernel_source(0, Form::Thread), "misuse")?;
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

fn main() -> anyhow::Result<()> {
    if std::env::args().any(|a| a == "--device-misuse") {
        return device_misuse();
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let ctx = vkshmem::init()?;
    let cap = 4 << 20;
    let src = ctx.malloc::<u8>(cap)?;
    let dst = ctx.malloc::<u8>(cap + 2 * GUARD)?;
    let mut h = Harness {
        ctx: ctx.clone(),
        form: Form::Host,
        phantom: false,
        kernels: Default::default(),
        src,
        dst,
        cap,
        salt: 0,
        calls: 0,
        wrong: 0,
        fails: Vec::new(),
    };
    let _ = h.cap;
    let cases = teams(&ctx)?;
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
            for &n in big {
                h.reduce::<f32>(tc, ReduceOp::Sum, n, false)?;
                h.reduce::<u8>(tc, ReduceOp::Xor, n, true)?;
                h.reduce::<i64>(tc, ReduceOp::Max, n, true)?;
            }
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
    if !(quick && ctx.device_info().is_llvmpipe()) {
        // With --quick on llvmpipe (8 PEs on a 2-core machine) the device pass
        // would mostly measure kernel compilation: skipped there.
        device_forms(&mut h, &cases, device_quick)?;
    }
    for c in cases.iter().skip(1).filter(|c| c.team != Team::INVALID) {
        ctx.team_destroy(c.team)?;
    }
    for f in &h.fails {
        eprintln!("{f}");
    }
    println!(
        "collectives_check: pe={} calls={} wrong={}",
        ctx.my_pe(),
        h.calls,
        h.wrong
    );
    let ok = h.wrong == 0;
    drop(h);
    ctx.finalize()?;
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
