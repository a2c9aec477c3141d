//! `vkshmem-bench`: nccl-tests-style sweeps of the collectives, run under
//! `vkshmrun -n N`.
//!
//! What each number includes (host scope): the wall time of one call on PE 0,
//! from entering the collective to its return: the agreement allgather over the
//! bootstrap, the dispatch and its completion, and the closing sync. Median,
//! minimum and maximum over `--iters` calls after `--warmup` calls. `bytes` is one
//! PE's contribution (the source size); algbw = bytes / time; busbw = algbw times
//! nccl-tests' factor. `--check` runs one more call per size on pattern data and
//! counts the destination elements that differ from a host reference.
//!
//! `roofline_pct`: the time the least data movement of the call would take at
//! the copy kernel's bandwidth (measured at start on PE 0's device: a plain vec4
//! copy, bytes read plus written per second), over the measured time. The least
//! movement sums every PE's inputs read once and outputs written once, as all
//! PEs of a job share one device on lavapipe (on several GPUs this overstates).
//!
//! Not yet here (issue 5 continues): the thread and work_group scopes timed with
//! GPU timestamps, the atomic-barrier floor, plots, a progress bar and the Open
//! MPI comparison.

mod metrics;

use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::Parser;
use vkshmem::{Context, Reduce, ReduceOp, SymBuffer, SymSlice, Team};

const COLLECTIVES: [&str; 8] = [
    "barrier",
    "sync",
    "broadcast",
    "collect",
    "fcollect",
    "alltoall",
    "alltoalls",
    "reduce",
];

/// Sweeps of vkshmem's collectives (run it under `vkshmrun -n N`).
#[derive(Parser, Debug)]
#[command(name = "vkshmem-bench", version)]
struct Args {
    /// Collectives: a comma-separated list of barrier, sync, broadcast, collect,
    /// fcollect, alltoall, alltoalls, reduce; or `all`.
    #[arg(long, default_value = "all")]
    collective: String,
    /// host (thread and work_group are not measured yet).
    #[arg(long, default_value = "host")]
    scope: String,
    /// Element type: float, double, int8, int16, int32, int64, uint8, uint16,
    /// uint32, uint64.
    #[arg(long = "type", default_value = "float")]
    ty: String,
    /// Reduction operation: and, or, xor, max, min, sum, prod.
    #[arg(long, default_value = "sum")]
    op: String,
    /// Broadcast root.
    #[arg(long, default_value_t = 0)]
    root: u32,
    /// Smallest size in bytes (K/M/G suffixes).
    #[arg(long, default_value = "8", value_parser = metrics::parse_bytes)]
    min_bytes: u64,
    /// Largest size in bytes.
    #[arg(long, default_value = "1M", value_parser = metrics::parse_bytes)]
    max_bytes: u64,
    /// Each size is this many times the last.
    #[arg(long, default_value_t = 4)]
    step_factor: u64,
    /// Timed calls per size.
    #[arg(long, default_value_t = 20)]
    iters: u32,
    /// Untimed calls per size first.
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Check every size against a host reference (the `wrong` column).
    #[arg(long)]
    check: bool,
    /// Write the rows as CSV.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Write the rows as JSON.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// One result row; the CSV columns, in order.
#[derive(Debug, Clone, serde::Serialize)]
struct Row {
    collective: String,
    scope: String,
    #[serde(rename = "type")]
    ty: String,
    op: String,
    root: String,
    npes: u32,
    bytes: u64,
    count: u64,
    time_us: f64,
    min_us: f64,
    max_us: f64,
    #[serde(rename = "algbw_GBps")]
    algbw: Option<f64>,
    #[serde(rename = "busbw_GBps")]
    busbw: Option<f64>,
    roofline_pct: Option<f64>,
    wrong: Option<u64>,
}

/// An element type the bench sweeps, with pattern data for `--check`.
trait Elem: Reduce + PartialEq + std::fmt::Debug {
    /// Small values, so float sums and products are exact in any order.
    fn pat(pe: u32, i: usize) -> Self;
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn pat(pe: u32, i: usize) -> Self {
                ((pe as usize * 131 + i * 7 + 1) % 97) as $t
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
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
            fn pat(pe: u32, i: usize) -> Self {
                (1 + (pe as usize + i) % 2) as $t
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    _ => a,
                }
            }
        }
    )*};
}
float_elem!(f32, f64);

/// The roofline's copy kernel: a plain vec4 copy between two user buffers, one
/// vec4 per invocation (many workgroups, as lavapipe copies fastest).
const COPY_KERNEL: &str = "
@group(1) @binding(0) var<storage, read_write> src: array<vec4<u32>>;
@group(1) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = g.x + g.y * nw.x * 64u;
    if i < arrayLength(&src) {
        dst[i] = src[i];
    }
}
";

/// The device's copy bandwidth (bytes read plus written per second): the best of
/// five timed copies of `bytes` on this PE alone.
fn copy_bandwidth(ctx: &Context, bytes: u64) -> anyhow::Result<f64> {
    let a = ctx.malloc::<u8>(bytes as usize)?;
    let b = ctx.malloc::<u8>(bytes as usize)?;
    let k = ctx.device_kernel(COPY_KERNEL, "roofline_copy")?;
    let vecs = bytes / 16;
    let groups = vecs.div_ceil(64);
    let (gx, gy) = (groups.min(65535) as u32, groups.div_ceil(65535) as u32);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = ctx.launch_timed(
            &k,
            [gx, gy, 1],
            &[a.window(ctx.my_pe()), b.window(ctx.my_pe())],
            &[],
        )?;
        best = best.min(t.as_secs_f64());
    }
    Ok(2.0 * bytes as f64 / best)
}

/// Bytes that every PE on the device together must at least read and write for
/// one call: each PE reads its inputs once and writes its outputs once.
fn least_traffic(coll: &str, bytes: u64, n: u64) -> Option<u64> {
    match coll {
        // The root reads the source; every PE writes its dest.
        "broadcast" => Some(bytes + n * bytes),
        // Each PE reads its own part and writes the whole result.
        "collect" | "fcollect" => Some(n * (bytes + n * bytes)),
        // Each PE reads its n blocks and writes n blocks.
        "alltoall" | "alltoalls" => Some(n * 2 * n * bytes),
        // Each PE reads its source and writes its dest.
        "reduce" => Some(n * 2 * bytes),
        _ => None,
    }
}

struct Bench<'a> {
    ctx: &'a Context,
    args: &'a Args,
    /// The copy kernel's bandwidth, bytes/s (all PEs share one device here).
    copy_bw: f64,
    src: SymBuffer<u8>,
    dst: SymBuffer<u8>,
}

impl Bench<'_> {
    /// Times `f` (warmup, then iters calls), in seconds per call.
    fn time(&self, mut f: impl FnMut() -> vkshmem::Result<()>) -> anyhow::Result<Vec<f64>> {
        for _ in 0..self.args.warmup {
            f()?;
        }
        let mut v = Vec::with_capacity(self.args.iters as usize);
        for _ in 0..self.args.iters {
            let t = Instant::now();
            f()?;
            v.push(t.elapsed().as_secs_f64());
        }
        Ok(v)
    }

    fn run<T: Elem>(&self, coll: &str, op: ReduceOp) -> anyhow::Result<Vec<Row>> {
        let ctx = self.ctx;
        let n = ctx.n_pes();
        let es = std::mem::size_of::<T>() as u64;
        let sizes = if matches!(coll, "barrier" | "sync") {
            vec![0]
        } else {
            metrics::sizes(
                self.args.min_bytes,
                self.args.max_bytes,
                self.args.step_factor,
                es,
            )
        };
        let mut rows = Vec::new();
        for bytes in sizes {
            let count = (bytes / es) as usize;
            let s: SymSlice<T> = SymSlice::from_raw(self.src.offset(), count * n as usize);
            let d: SymSlice<T> = SymSlice::from_raw(self.dst.offset(), count * n as usize);
            let call = |c: usize| -> vkshmem::Result<()> {
                match coll {
                    "barrier" => ctx.barrier_all(),
                    "sync" => ctx.sync_all(),
                    "broadcast" => ctx.broadcast(Team::WORLD, &d, &s, c, self.args.root),
                    "collect" => ctx.collect(Team::WORLD, &d, &s, c),
                    "fcollect" => ctx.fcollect(Team::WORLD, &d, &s, c),
                    "alltoall" => ctx.alltoall(Team::WORLD, &d, &s, c),
                    "alltoalls" => ctx.alltoalls(Team::WORLD, &d, &s, 1, 1, c),
                    _ => ctx.reduce(Team::WORLD, op, &d, &s, c),
                }
            };
            let wrong = if self.args.check && bytes > 0 {
                Some(self.check::<T>(coll, op, count, &call)?)
            } else {
                None
            };
            let samples = self.time(|| call(count))?;
            let (time_us, min_us, max_us) = metrics::stats_us(&samples);
            let factor = metrics::bus_factor(coll, n);
            let algbw = factor.map(|_| metrics::algbw_gbps(bytes, time_us));
            rows.push(Row {
                collective: coll.into(),
                scope: "host".into(),
                ty: self.args.ty.clone(),
                op: if coll == "reduce" {
                    op.name().into()
                } else {
                    String::new()
                },
                root: if coll == "broadcast" {
                    self.args.root.to_string()
                } else {
                    String::new()
                },
                npes: n,
                bytes,
                count: count as u64,
                time_us,
                min_us,
                max_us,
                algbw,
                busbw: algbw.zip(factor).map(|(a, f)| a * f),
                roofline_pct: least_traffic(coll, bytes, n as u64)
                    .filter(|_| time_us > 0.0)
                    .map(|b| 100.0 * (b as f64 / self.copy_bw) / (time_us * 1e-6)),
                wrong,
            });
        }
        Ok(rows)
    }

    /// One call on pattern data; the number of dest elements that differ from the
    /// host reference.
    fn check<T: Elem>(
        &self,
        coll: &str,
        op: ReduceOp,
        count: usize,
        call: &dyn Fn(usize) -> vkshmem::Result<()>,
    ) -> anyhow::Result<u64> {
        let ctx = self.ctx;
        let (me, n) = (ctx.my_pe(), ctx.n_pes() as usize);
        let src: Vec<T> = (0..count * n).map(|i| T::pat(me, i)).collect();
        self.src.write_at(me, 0, bytemuck::cast_slice(&src))?;
        let out_len = match coll {
            "broadcast" | "reduce" => count,
            _ => count * n,
        };
        self.dst
            .write_at(me, 0, &vec![0xa5u8; out_len * std::mem::size_of::<T>()])?;
        ctx.barrier_all()?;
        call(count)?;
        let want: Vec<T> = (0..out_len)
            .map(|k| match coll {
                "broadcast" => T::pat(self.args.root, k),
                "collect" | "fcollect" => T::pat((k / count) as u32, k % count),
                "alltoall" | "alltoalls" => {
                    T::pat((k / count) as u32, me as usize * count + k % count)
                }
                _ => (1..n as u32).fold(T::pat(0, k), |a, p| T::combine(op, a, T::pat(p, k))),
            })
            .collect();
        let mut got = vec![T::zeroed(); out_len];
        self.dst
            .read_at(me, 0, bytemuck::cast_slice_mut(&mut got))?;
        ctx.barrier_all()?;
        Ok(got.iter().zip(&want).filter(|(g, w)| g != w).count() as u64)
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:>10} {:>6} {:>7} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
        "collective",
        "scope",
        "type",
        "op",
        "npes",
        "bytes",
        "time_us",
        "min_us",
        "max_us",
        "roofline%",
        "algbw",
        "busbw",
        "wrong"
    );
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
    for r in rows {
        println!(
            "{:>10} {:>6} {:>7} {:>5} {:>5} {:>10} {:>10.1} {:>10.1} {:>10.1} {:>10} {:>9} {:>9} {:>6}",
            r.collective,
            r.scope,
            r.ty,
            if r.op.is_empty() { "-" } else { &r.op },
            r.npes,
            r.bytes,
            r.time_us,
            r.min_us,
            r.max_us,
            opt(r.roofline_pct),
            opt(r.algbw),
            opt(r.busbw),
            r.wrong.map(|w| w.to_string()).unwrap_or_else(|| "-".into())
        );
    }
}

fn parse_op(s: &str) -> anyhow::Result<ReduceOp> {
    ReduceOp::ALL
        .into_iter()
        .find(|o| o.name() == s)
        .with_context(|| format!("--op {s:?}: one of and, or, xor, max, min, sum, prod"))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.scope != "host" {
        bail!("--scope {}: only host is measured so far", args.scope);
    }
    let op = parse_op(&args.op)?;
    let colls: Vec<&str> = if args.collective == "all" {
        COLLECTIVES.to_vec()
    } else {
        args.collective.split(',').map(str::trim).collect()
    };
    if let Some(bad) = colls.iter().find(|c| !COLLECTIVES.contains(c)) {
        bail!(
            "--collective {bad:?}: one of {} or all",
            COLLECTIVES.join(", ")
        );
    }
    let ctx = vkshmem::init()?;
    let n = ctx.n_pes() as u64;
    let room = args.max_bytes.max(64) * n + 64;
    let copy_bw = copy_bandwidth(&ctx, 16 << 20)?;
    let bench = Bench {
        ctx: &ctx,
        args: &args,
        copy_bw,
        src: ctx.malloc::<u8>(room as usize)?,
        dst: ctx.malloc::<u8>(room as usize)?,
    };
    let mut rows = Vec::new();
    for coll in colls {
        let r = match args.ty.as_str() {
            "float" => bench.run::<f32>(coll, op),
            "double" => bench.run::<f64>(coll, op),
            "int8" => bench.run::<i8>(coll, op),
            "int16" => bench.run::<i16>(coll, op),
            "int32" | "int" => bench.run::<i32>(coll, op),
            "int64" | "long" => bench.run::<i64>(coll, op),
            "uint8" | "uchar" => bench.run::<u8>(coll, op),
            "uint16" | "ushort" => bench.run::<u16>(coll, op),
            "uint32" | "uint" => bench.run::<u32>(coll, op),
            "uint64" | "ulong" | "size" => bench.run::<u64>(coll, op),
            t => bail!("--type {t:?}: float, double, int8..int64, uint8..uint64"),
        };
        rows.extend(r.with_context(|| coll.to_string())?);
    }
    if ctx.my_pe() == 0 {
        println!("# vkshmem-bench: {} PEs on {}", n, ctx.device_info().name);
        println!(
            "# roofline: copy kernel {:.2} GB/s (read + write, 16 MiB, one PE alone)",
            copy_bw / 1e9
        );
        print_table(&rows);
        if let Some(p) = &args.csv {
            let mut w = csv::Writer::from_path(p).with_context(|| format!("{}", p.display()))?;
            for r in &rows {
                w.serialize(r)?;
            }
            w.flush()?;
        }
        if let Some(p) = &args.json {
            std::fs::write(p, serde_json::to_string_pretty(&rows)?)
                .with_context(|| format!("{}", p.display()))?;
        }
        let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
        println!("# rows={} wrong={wrong}", rows.len());
    }
    drop(bench);
    ctx.finalize()?;
    Ok(())
}
