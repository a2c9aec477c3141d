//! `vkshmem-bench --rma`: one-sided latency and bandwidth between two PEs, in
//! the style of NVSHMEM's perftest and the OSU one-sided tests. PE 0 is the
//! initiator and `--peer` (default: the last PE, which is on another node
//! under mpirun with `VKSHMEM_NODE_SIZE`) the target; the other PEs only meet
//! at the barriers between rows.
//!
//! Rows (`op`, `scope`), each checked (`wrong`):
//! - `put`/`get` `host`: one blocking [`vkshmem::Context::put`] /
//!   [`vkshmem::Context::get`] of `bytes` from host memory, complete at the
//!   target when it returns; median over `--iters` calls, each timed alone.
//!   `wrong`: bytes of the last call that differ from what was sent.
//! - `put`/`get` `thread` and `work_group`: a kernel on PE 0 calls
//!   `shmem_putmem`/`shmem_getmem` (one invocation) or their `_work_group`
//!   forms (a workgroup of 64) `k` times in one dispatch, then `shmem_quiet`;
//!   the GPU time of the dispatch over `k`.
//! - `fetch_add` `host` / `thread`: a 64-bit (host) or 32-bit (device)
//!   fetch-and-add of 1 on the peer's word; `wrong`: the final total against
//!   the number of adds made.
//! - `put_signal_rtt` `host` / `thread`: a ping-pong. PE 0 puts `bytes` with a
//!   signal add of 1 and waits for its own signal; the peer waits for its
//!   signal and answers the same way. Time per round trip; `wrong`: the final
//!   signals and the bytes of the last message.
//!
//! Bandwidth (`bw_gbps`) is `bytes` over the median time (puts and gets).
//! Where the driver caps loop iterations (lavapipe) a dispatch makes fewer
//! calls, and sizes one call cannot fit are skipped.

use std::time::Instant;

use anyhow::{bail, ensure, Context as _};
use serde::Serialize;
use vkshmem::rma::{Cmp, SignalOp};
use vkshmem::{Context, DeviceKernel, ReduceOp, SymBuffer, Team};

use crate::metrics;

/// Kernel without waits on peers: launched by PE 0 alone.
const MOVES: &str = "struct P { mode: u32, dst: u32, src: u32, bytes: u32, peer: u32, iters: u32, word: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 0u: { if li == 0u { for (var k = 0u; k < p.iters; k++) { shmem_putmem(p.dst, p.src, p.bytes, p.peer); } } }
        case 1u: { for (var k = 0u; k < p.iters; k++) { shmemx_putmem_work_group(p.dst, p.src, p.bytes, p.peer, li, 64u); } }
        case 2u: { if li == 0u { for (var k = 0u; k < p.iters; k++) { shmem_getmem(p.dst, p.src, p.bytes, p.peer); } } }
        case 3u: { for (var k = 0u; k < p.iters; k++) { shmemx_getmem_work_group(p.dst, p.src, p.bytes, p.peer, li, 64u); } }
        default: { if li == 0u { for (var k = 0u; k < p.iters; k++) { shmem_uint32_atomic_fetch_add(p.word, 1u, p.peer); } } }
    }
    if li == 0u {
        shmem_quiet();
    }
}
";

/// The ping-pong: every PE launches it (it waits on peers); PE 0 and the
/// peer play, the others return at once (`iters` 0).
const PING_PONG: &str =
    "struct P { dst: u32, src: u32, bytes: u32, peer: u32, iters: u32, sig: u32, base: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let me = u32(shmem_my_pe());
    if li == 0u {
        for (var k = 0u; k < p.iters; k++) {
            let r = p.base + k + 1u;
            if me == 0u {
                shmem_putmem_signal(p.dst, p.src, p.bytes, p.sig, 1u, SHMEM_SIGNAL_ADD, p.peer);
                shmem_signal_wait_until(p.sig, SHMEM_CMP_GE, r);
            } else {
                shmem_signal_wait_until(p.sig, SHMEM_CMP_GE, r);
                shmem_putmem_signal(p.dst, p.src, p.bytes, p.sig, 1u, SHMEM_SIGNAL_ADD, 0u);
            }
        }
    }
}
";

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct MoveArgs {
    mode: u32,
    dst: u32,
    src: u32,
    bytes: u32,
    peer: u32,
    iters: u32,
    word: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct PingArgs {
    dst: u32,
    src: u32,
    bytes: u32,
    peer: u32,
    iters: u32,
    sig: u32,
    base: u32,
}

/// One row of the RMA sweep (CSV columns in this order).
#[derive(Debug, Clone, Serialize)]
pub struct RmaRow {
    pub op: String,
    pub scope: String,
    pub npes: u32,
    pub peer: u32,
    pub bytes: u64,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub bw_gbps: Option<f64>,
    pub wrong: u64,
}

/// What the sweep needs from the command line.
pub struct RmaArgs {
    pub peer: Option<u32>,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub step_factor: u64,
    pub iters: u32,
    pub warmup: u32,
    pub scopes: Vec<&'static str>,
    pub csv: Option<std::path::PathBuf>,
}

/// Forms of the RMA sweep (`--scope`): host, thread, work_group.
pub fn parse_scopes(s: &str) -> anyhow::Result<Vec<&'static str>> {
    if s == "all" {
        return Ok(vec!["host", "thread", "work_group"]);
    }
    s.split(',')
        .map(|x| match x.trim() {
            "host" => Ok("host"),
            "thread" => Ok("thread"),
            "work_group" => Ok("work_group"),
            other => bail!("--scope {other:?} with --rma: host, thread, work_group or all"),
        })
        .collect()
}

struct Rma<'a> {
    ctx: &'a Context,
    args: &'a RmaArgs,
    me: u32,
    peer: u32,
    capped: bool,
    /// The peer is reached through the proxy (another device or node): each
    /// device call waits for its answer.
    proxied: bool,
    src: SymBuffer<u8>,
    dst: SymBuffer<u8>,
    word: SymBuffer<u64>,
    sig: SymBuffer<u64>,
    /// Wrong elements found on this PE, summed over WORLD per row.
    wrong: SymBuffer<u64>,
    moves: std::sync::Arc<DeviceKernel>,
    ping: std::sync::Arc<DeviceKernel>,
    /// Round trips made so far (the signals' expected value).
    rounds: u32,
    rows: Vec<RmaRow>,
    skipped: Vec<String>,
    csv: Option<csv::Writer<std::fs::File>>,
}

/// The byte pattern of size `bytes` in round `r` from PE `pe`.
fn pattern(pe: u32, r: u64, bytes: usize) -> Vec<u8> {
    (0..bytes)
        .map(|i| {
            let x =
                (i as u64 ^ (u64::from(pe) << 40) ^ (r << 20)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (x >> 56) as u8
        })
        .collect()
}

impl Rma<'_> {
    fn reporter(&self) -> bool {
        self.me == 0
    }

    /// Every PE's `wrong` summed over WORLD (the same on every PE).
    fn total_wrong(&self, mine: u64) -> anyhow::Result<u64> {
        crate::over_world(self.ctx, &self.wrong, ReduceOp::Sum, mine)
    }

    fn push(
        &mut self,
        op: &str,
        scope: &str,
        bytes: u64,
        samples: &[f64],
        wrong: u64,
    ) -> anyhow::Result<()> {
        let (median_us, min_us, max_us) = metrics::stats_us(samples);
        let row = RmaRow {
            op: op.into(),
            scope: scope.into(),
            npes: self.ctx.n_pes(),
            peer: self.peer,
            bytes,
            median_us,
            min_us,
            max_us,
            bw_gbps: (op == "put" || op == "get").then(|| metrics::algbw_gbps(bytes, median_us)),
            wrong,
        };
        if self.reporter() {
            println!("{}", table_row(&row));
            if let Some(c) = &mut self.csv {
                c.serialize(&row)?;
                c.flush()?;
            }
        }
        self.rows.push(row);
        Ok(())
    }

    /// Host put and get of `bytes`: timed on PE 0, checked on the target.
    fn host_moves(&mut self, bytes: usize) -> anyhow::Result<()> {
        let ctx = self.ctx;
        let (peer, iters) = (self.peer, self.args.iters);
        for op in ["put", "get"] {
            let data = pattern(if op == "put" { 0 } else { peer }, bytes as u64, bytes);
            // The get's source is the peer's src: written by the peer.
            if op == "get" && self.me == peer {
                self.src.write_at(peer, 0, &data)?;
            }
            ctx.barrier_all()?;
            let mut samples = Vec::new();
            let mut mine = 0u64;
            if self.me == 0 {
                let dest = self.dst.as_slice().prefix(bytes);
                let source = self.src.as_slice().prefix(bytes);
                let mut got = vec![0u8; bytes];
                for i in 0..self.args.warmup + iters {
                    let t = Instant::now();
                    if op == "put" {
                        ctx.put(dest, &data, peer)?;
                    } else {
                        ctx.get(&mut got, source, peer)?;
                    }
                    if i >= self.args.warmup {
                        samples.push(t.elapsed().as_secs_f64());
                    }
                }
                if op == "get" {
                    mine = got.iter().zip(&data).filter(|(a, b)| a != b).count() as u64;
                }
            }
            ctx.barrier_all()?;
            if op == "put" && self.me == peer {
                let held = self.dst.to_vec()?;
                mine = held[..bytes]
                    .iter()
                    .zip(&data)
                    .filter(|(a, b)| a != b)
                    .count() as u64;
            }
            let wrong = self.total_wrong(mine)?;
            self.push(op, "host", bytes as u64, &samples, wrong)?;
        }
        Ok(())
    }

    /// Calls per dispatch of a device call that runs `loops` loop iterations
    /// (None: one call does not fit the driver's cap).
    fn per_dispatch(&self, loops: u64) -> Option<u32> {
        if !self.capped {
            return Some(self.args.iters.max(1));
        }
        let k = 50_000 / (loops + 64);
        (k > 0).then(|| (k as u32).min(self.args.iters.max(1)))
    }

    /// Device put and get of `bytes` in `scope`, PE 0's kernel alone.
    fn device_moves(&mut self, bytes: usize, scope: &'static str) -> anyhow::Result<()> {
        let ctx = self.ctx;
        let peer = self.peer;
        let nth = if scope == "work_group" { 64 } else { 1 };
        let loops = if self.proxied {
            2_000
        } else {
            (bytes as u64 / 4 + 2).div_ceil(nth)
        };
        for (op, mode) in [("put", 0u32), ("get", 2)] {
            let mode = mode + u32::from(scope == "work_group");
            let Some(k) = self.per_dispatch(loops) else {
                self.skipped.push(format!("{op} {scope} {bytes} B: one call needs more loop iterations than this driver allows"));
                continue;
            };
            let data = pattern(if op == "put" { 0 } else { peer }, bytes as u64 + 1, bytes);
            if self.me == if op == "put" { 0 } else { peer } {
                self.src.write_at(self.me, 0, &data)?;
            }
            ctx.barrier_all()?;
            let mut samples = Vec::new();
            if self.me == 0 {
                let a = MoveArgs {
                    mode,
                    dst: self.dst.device_byte_addr()?,
                    src: self.src.device_byte_addr()?,
                    bytes: bytes as u32,
                    peer,
                    iters: k,
                    word: 0,
                };
                ctx.launch(&self.moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
                let dispatches = self.args.iters.div_ceil(k).max(3);
                for _ in 0..dispatches {
                    let t =
                        ctx.launch_timed(&self.moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
                    samples.push(t.as_secs_f64() / f64::from(k));
                }
            }
            ctx.barrier_all()?;
            let checker = if op == "put" { peer } else { 0 };
            let mine = if self.me == checker {
                let held = self.dst.to_vec()?;
                held[..bytes]
                    .iter()
                    .zip(&data)
                    .filter(|(a, b)| a != b)
                    .count() as u64
            } else {
                0
            };
            let wrong = self.total_wrong(mine)?;
            self.push(op, scope, bytes as u64, &samples, wrong)?;
        }
        Ok(())
    }

    /// fetch_add latency, host (u64) and device (u32, one invocation).
    fn fetch_add(&mut self, scopes: &[&str]) -> anyhow::Result<()> {
        let ctx = self.ctx;
        let peer = self.peer;
        for &scope in scopes.iter().filter(|s| **s != "work_group") {
            self.word.write(&[0])?;
            ctx.barrier_all()?;
            let mut samples = Vec::new();
            let mut adds = 0u64;
            if self.me == 0 {
                if scope == "host" {
                    let w = self.word.as_slice();
                    for i in 0..self.args.warmup + self.args.iters {
                        let t = Instant::now();
                        ctx.atomic_fetch_add(w, 1u64, peer)?;
                        if i >= self.args.warmup {
                            samples.push(t.elapsed().as_secs_f64());
                        }
                    }
                    adds = u64::from(self.args.warmup + self.args.iters);
                } else {
                    let Some(k) = self.per_dispatch(if self.proxied { 2_000 } else { 4 }) else {
                        continue;
                    };
                    let a = MoveArgs {
                        mode: 4,
                        peer,
                        iters: k,
                        word: self.word.device_addr()?,
                        ..MoveArgs::default()
                    };
                    let dispatches = self.args.iters.div_ceil(k).max(3);
                    for _ in 0..dispatches {
                        let t =
                            ctx.launch_timed(&self.moves, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
                        samples.push(t.as_secs_f64() / f64::from(k));
                    }
                    adds = u64::from(dispatches * k);
                }
            }
            // The initiator's count to the peer, which checks its word.
            self.wrong.write(&[adds])?;
            let w = self.wrong.as_slice();
            ctx.broadcast(Team::WORLD, &w, &w, 1, 0)?;
            let adds = self.wrong.to_vec()?[0];
            ctx.barrier_all()?;
            let mine = if self.me == peer {
                let v = self.word.to_vec()?[0];
                // Device adds are 32-bit, on the low word.
                let low = if scope == "host" {
                    u64::MAX
                } else {
                    0xffff_ffff
                };
                u64::from((v & low) != adds)
            } else {
                0
            };
            let wrong = self.total_wrong(mine)?;
            self.push("fetch_add", scope, 8, &samples, wrong)?;
        }
        Ok(())
    }

    /// The put_signal ping-pong of `bytes`, host and device (thread).
    fn ping_pong(&mut self, bytes: usize, scopes: &[&str]) -> anyhow::Result<()> {
        let ctx = self.ctx;
        let peer = self.peer;
        let playing = self.me == 0 || self.me == peer;
        for &scope in scopes.iter().filter(|s| **s != "work_group") {
            let data = pattern(self.me, bytes as u64 + 7, bytes);
            self.src.write_at(self.me, 0, &data)?;
            ctx.barrier_all()?;
            let mut samples = Vec::new();
            let other = if self.me == 0 { peer } else { 0 };
            let dest = self.dst.as_slice().prefix(bytes);
            let sig = self.sig.as_slice();
            if scope == "host" {
                if playing {
                    for i in 0..self.args.warmup + self.args.iters {
                        self.rounds += 1;
                        let r = u64::from(self.rounds);
                        let t = Instant::now();
                        if self.me == 0 {
                            ctx.put_signal(dest, &data, sig, 1, SignalOp::Add, peer)?;
                            ctx.signal_wait_until(sig, Cmp::Ge, r)?;
                        } else {
                            ctx.signal_wait_until(sig, Cmp::Ge, r)?;
                            ctx.put_signal(dest, &data, sig, 1, SignalOp::Add, 0)?;
                        }
                        if i >= self.args.warmup {
                            samples.push(t.elapsed().as_secs_f64());
                        }
                    }
                } else {
                    self.rounds += self.args.warmup + self.args.iters;
                }
            } else {
                let loops = if self.proxied {
                    20_000
                } else {
                    6_000 + bytes as u64 / 4
                };
                let Some(k) = self.per_dispatch(loops) else {
                    self.skipped.push(format!("put_signal_rtt {scope} {bytes} B: one round trip needs more loop iterations than this driver allows"));
                    continue;
                };
                let dispatches = self.args.iters.div_ceil(k).max(3);
                for _ in 0..dispatches {
                    let a = PingArgs {
                        dst: self.dst.device_byte_addr()?,
                        src: self.src.device_byte_addr()?,
                        bytes: bytes as u32,
                        peer,
                        iters: if playing { k } else { 0 },
                        sig: self.sig.device_addr()?,
                        base: self.rounds,
                    };
                    let t = ctx.launch_timed(&self.ping, [1, 1, 1], &[], bytemuck::bytes_of(&a))?;
                    if self.me == 0 {
                        samples.push(t.as_secs_f64() / f64::from(k));
                    }
                    self.rounds += k;
                }
            }
            ctx.barrier_all()?;
            let mine = if playing {
                let s = self.sig.to_vec()?[0];
                let held = self.dst.to_vec()?;
                let want = pattern(other, bytes as u64 + 7, bytes);
                let bad = held[..bytes]
                    .iter()
                    .zip(&want)
                    .filter(|(a, b)| a != b)
                    .count() as u64;
                bad + u64::from(s != u64::from(self.rounds))
            } else {
                0
            };
            let wrong = self.total_wrong(mine)?;
            self.push("put_signal_rtt", scope, bytes as u64, &samples, wrong)?;
        }
        Ok(())
    }
}

const HEADER: [&str; 9] = [
    "op",
    "scope",
    "npes",
    "peer",
    "bytes",
    "median_us",
    "min_us",
    "max_us",
    "bw_GB/s",
];

fn table_row(r: &RmaRow) -> String {
    format!(
        "{:>15} {:>10} {:>5} {:>5} {:>10} {:>10.2} {:>10.2} {:>10.2} {:>9} {:>6}",
        r.op,
        r.scope,
        r.npes,
        r.peer,
        r.bytes,
        r.median_us,
        r.min_us,
        r.max_us,
        r.bw_gbps.map_or("-".into(), |b| format!("{b:.3}")),
        r.wrong
    )
}

/// The RMA sweep on this PE (every PE of the job calls it).
pub fn run(ctx: &Context, args: &RmaArgs) -> anyhow::Result<()> {
    let n = ctx.n_pes();
    let me = ctx.my_pe();
    let peer = args.peer.unwrap_or(n - 1);
    if peer >= n {
        bail!("--peer {peer}: the job has {n} PEs");
    }
    if args.max_bytes > u64::from(u32::MAX) / 2 {
        bail!(
            "--max-bytes {}: device addresses are 32-bit",
            args.max_bytes
        );
    }
    let room = args.max_bytes.max(64) as usize;
    let moves = ctx
        .device_kernel(MOVES, "bench_rma_moves.wgsl")
        .context("compiling the RMA kernel")?;
    let ping = ctx
        .device_kernel(PING_PONG, "bench_rma_ping_pong.wgsl")
        .context("compiling the ping-pong kernel")?;
    ctx.wait_background_builds();
    let csv = match (&args.csv, me == 0) {
        (Some(p), true) => {
            Some(csv::Writer::from_path(p).with_context(|| p.display().to_string())?)
        }
        _ => None,
    };
    let mut b = Rma {
        ctx,
        args,
        me,
        peer,
        capped: ctx.device_info().is_llvmpipe(),
        proxied: ctx.transport(peer)? != vkshmem::Transport::Direct,
        src: ctx.calloc::<u8>(room)?,
        dst: ctx.calloc::<u8>(room)?,
        word: ctx.calloc::<u64>(1)?,
        sig: ctx.calloc::<u64>(1)?,
        wrong: ctx.calloc::<u64>(1)?,
        moves,
        ping,
        rounds: 0,
        rows: Vec::new(),
        skipped: Vec::new(),
        csv,
    };
    if me == 0 {
        println!(
            "# vkshmem-bench --rma: {n} PEs on {}; PE 0 to PE {peer} ({:?})",
            ctx.device_info().name,
            ctx.transport(peer)?
        );
        let h: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
        println!(
            "{:>15} {:>10} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>9} {:>6}",
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], "wrong"
        );
    }
    let sizes = metrics::sizes(args.min_bytes, args.max_bytes, args.step_factor, 1);
    for &scope in &args.scopes {
        for &bytes in &sizes {
            let r = if scope == "host" {
                b.host_moves(bytes as usize)
            } else {
                b.device_moves(bytes as usize, scope)
            };
            r.with_context(|| format!("put/get {scope} at {bytes} B"))?;
        }
    }
    b.fetch_add(&args.scopes).context("fetch_add")?;
    for &bytes in sizes.iter().filter(|&&s| s <= 64 << 10) {
        b.ping_pong(bytes as usize, &args.scopes)
            .with_context(|| format!("put_signal_rtt at {bytes} B"))?;
    }
    ctx.barrier_all()?;
    let wrong: u64 = b.rows.iter().map(|r| r.wrong).sum();
    if me == 0 {
        for s in &b.skipped {
            println!("# skipped: {s}");
        }
        println!("# {} rows, wrong = {wrong}", b.rows.len());
    }
    ensure!(wrong == 0, "{wrong} wrong elements in the RMA sweep");
    let Rma {
        src,
        dst,
        word,
        sig,
        wrong,
        ..
    } = b;
    drop((src, dst, word, sig, wrong));
    Ok(())
}
