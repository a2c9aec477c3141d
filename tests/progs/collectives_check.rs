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
//! anything was wrong.

use std::fmt::Debug;

use bytemuck::Pod;
use vkshmem::{ActiveSet, Context, Error, Reduce, ReduceOp, SymBuffer, SymSlice, Team, TeamConfig};

const GUARD: usize = 64;
const POISON: u8 = 0xa5;
const GUARD_BYTE: u8 = 0x5a;

/// An element type with a host reference for the reductions.
trait Elem: Reduce + PartialEq + Debug {
    const NAME: &'static str;
    const FLOAT: bool;
    /// The pattern value of element `i` on PE `pe` for call `salt`.
    fn pat(pe: u32, i: usize, salt: u32, op: Option<ReduceOp>) -> Self;
    fn op(op: ReduceOp, a: Self, b: Self) -> Self;
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
            fn op(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                }
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
            fn op(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    _ => unreachable!("no bitwise float reductions"),
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

struct Harness {
    ctx: Context,
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
        self.ctx.broadcast(tc.team, &d, &s, n, root)?;
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
        self.ctx.fcollect(tc.team, &d, &s, n)?;
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
        let me = tc.members.iter().position(|&p| p == self.me()).unwrap();
        let total: usize = (0..tc.members.len()).map(count).sum();
        let src = self.write_src::<T>(count(me), None)?;
        self.poison_dst(total * std::mem::size_of::<T>())?;
        let (d, s) = (self.dst_slice::<T>(total), self.src_slice::<T>(count(me)));
        self.ctx.collect(tc.team, &d, &s, count(me))?;
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
        let me = tc.members.iter().position(|&p| p == self.me()).unwrap();
        let src = self.write_src::<T>(n * size, None)?;
        self.poison_dst(n * size * std::mem::size_of::<T>())?;
        let (d, s) = (self.dst_slice::<T>(n * size), self.src_slice::<T>(n * size));
        self.ctx.alltoall(tc.team, &d, &s, n)?;
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
        let me = tc.members.iter().position(|&p| p == self.me()).unwrap();
        let span = |st: usize| if n == 0 { 0 } else { (size * n - 1) * st + 1 };
        let src = self.write_src::<T>(span(sst), None)?;
        self.poison_dst(span(dst) * std::mem::size_of::<T>())?;
        let (d, s) = (
            self.dst_slice::<T>(span(dst)),
            self.src_slice::<T>(span(sst)),
        );
        self.ctx.alltoalls(tc.team, &d, &s, dst, sst, n)?;
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
        self.ctx.reduce(tc.team, op, &d, &s, n)?;
        let want: Vec<Option<T>> = (0..n)
            .map(|i| {
                let mut acc = T::pat(tc.members[0], i, self.salt, Some(op));
                for &p in &tc.members[1..] {
                    acc = T::op(op, acc, T::pat(p, i, self.salt, Some(op)));
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

/// Makes the teams under test (collective over WORLD).
fn teams(ctx: &Context) -> anyhow::Result<Vec<TeamCase>> {
    let n = ctx.n_pes() as i32;
    let cfg = TeamConfig::default();
    let mut out = vec![TeamCase {
        name: "WORLD".into(),
        team: Team::WORLD,
        members: (0..n as u32).collect(),
    }];
    let mut add = |name: &str, t: Option<Team>| -> anyhow::Result<()> {
        // Non-members keep a placeholder, so that every PE numbers the teams alike.
        let (team, members) = match t {
            Some(team) => (team, ctx.team_shape(team)?.members().collect()),
            None => (Team::INVALID, Vec::new()),
        };
        out.push(TeamCase {
            name: name.into(),
            team,
            members,
        });
        Ok(())
    };
    add(
        "evens",
        ctx.team_split_strided(Team::WORLD, 0, 2, (n + 1) / 2, &cfg)?,
    )?;
    add(
        "first3",
        ctx.team_split_strided(Team::WORLD, 0, 1, n.min(3), &cfg)?,
    )?;
    add(
        "reversed",
        ctx.team_split_strided(Team::WORLD, n - 1, -1, n, &cfg)?,
    )?;
    let (x, y) = ctx.team_split_2d(Team::WORLD, 2, &cfg, &cfg)?;
    add("2d-x", Some(x))?;
    add("2d-y", Some(y))?;
    let (single, _) = ctx.team_split_2d(Team::WORLD, 1, &cfg, &cfg)?;
    add("single", Some(single))?;
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
        ctx.fcollect(Team::WORLD, &past, &s, 1),
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

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let ctx = vkshmem::init()?;
    let cap = 4 << 20;
    let src = ctx.malloc::<u8>(cap)?;
    let dst = ctx.malloc::<u8>(cap + 2 * GUARD)?;
    let mut h = Harness {
        ctx: ctx.clone(),
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
