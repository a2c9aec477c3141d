//! Data-parallel training on vkshmem-wgpu: a two-layer MLP (16 inputs, 64
//! ReLU units, 4 classes, softmax cross-entropy) learns a synthetic data set
//! that every PE generates alike. Each step, every PE runs the forward pass,
//! the backward pass and its shard's parameter gradients in WGSL, vkshmem
//! sums the gradients over every PE on the queue (no host round trip), and an
//! SGD pass updates the parameters.
//!
//! It checks itself: after every step the parameters are bitwise identical
//! on every PE; after the last they match a host reference that trains one
//! PE on the whole batch in f64, within a stated tolerance; the loss falls.
//! Then it times steps with no checks, and the allreduce alone.
//!
//! ```text
//! cargo build --release -p vkshmrun -p vkshmem-wgpu --bins --examples
//! target/release/vkshmrun -n 4 target/release/examples/train --plot loss.png
//! target/release/examples/train --threads 4    # PEs as threads of one process
//! ```

use std::time::Instant;

use clap::Parser;
use half::bf16;
use vkshmem_wgpu::{Collective, Shmem, SymBuffer, Team};

/// Inputs, hidden units, classes.
const D: usize = 16;
const H: usize = 64;
const C: usize = 4;
/// Where each parameter block starts in the flat parameter vector.
const W1: usize = 0;
const B1: usize = W1 + H * D;
const W2: usize = B1 + H;
const B2: usize = W2 + C * H;
/// Parameters: W1 (H x D), b1, W2 (C x H), b2.
const P: usize = B2 + C;
/// Samples in the data set.
const SAMPLES: usize = 4096;
/// Threads per workgroup of every pass.
const WG: u32 = 64;

#[derive(Parser)]
#[command(about = "Data-parallel MLP training with vkshmem on wgpu")]
struct Args {
    /// Steps of the checked run.
    #[arg(long, default_value_t = 60)]
    steps: u32,
    /// Samples per step over all PEs (each PE takes its share).
    #[arg(long, default_value_t = 256)]
    batch: u32,
    /// Learning rate.
    #[arg(long, default_value_t = 0.5)]
    lr: f32,
    /// Carry the gradients in bf16 (the parameters stay f32).
    #[arg(long)]
    bf16: bool,
    /// Steps of the timed run (0: none).
    #[arg(long, default_value_t = 20)]
    timed_steps: u32,
    /// Run the job as this many PEs, threads of this process (not under
    /// vkshmrun).
    #[arg(long)]
    threads: Option<u32>,
    /// Write the loss curve, this run's against the one-PE reference, as a PNG.
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.steps > 0 && args.batch > 0,
        "--steps and --batch must be positive"
    );
    if let Some(n) = args.threads {
        // A job of `n` thread-PEs in this process, each on its own device.
        let body = |shmem: &Shmem| Ok(train(shmem, &args)?);
        vkshmem_wgpu::run_threads(n, &Default::default(), body)?;
        return Ok(());
    }
    let shmem = Shmem::open(&vkshmem_wgpu::vulkan_adapter()?, &Default::default())?;
    train(&shmem, &args)?;
    shmem.finalize()?;
    Ok(())
}

/// Trains, checks and reports on this PE.
fn train(shmem: &Shmem, args: &Args) -> anyhow::Result<()> {
    let (me, npes) = (shmem.my_pe(), shmem.n_pes());
    let data = Data::new();
    let init = initial_params();
    let model = Model::new(shmem, args, &data, &init)?;

    // The checked run: every step's parameters compared across PEs.
    let mut losses = Vec::with_capacity(args.steps as usize);
    for _ in 0..args.steps {
        model.step(shmem)?.wait()?;
        shmem.wait_idle()?;
        let params = model.params.to_vec()?;
        let hash = fnv(bytemuck::cast_slice(&params));
        let all = shmem.context().allgather_bytes(&hash.to_le_bytes())?;
        if let Some(pe) = all.iter().position(|h| h[..] != hash.to_le_bytes()) {
            anyhow::bail!(
                "PE {me}: parameters differ from PE {pe}'s after step {}",
                losses.len()
            );
        }
        losses.push(model.gsum.to_vec()?[P]);
    }
    let params = model.params.to_vec()?;

    // The reference: one PE, the whole batch, f64.
    let (want, want_losses) = reference(&data, &init, args);
    let worst = params
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (f64::from(g) - w).abs())
        .fold(0.0, f64::max);
    let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
    // f32 sums in another order drift by ulps (2.7e-7 seen after 60 steps
    // on 1-4 PEs); bf16 gradients round each PE's share to 8 bits of
    // mantissa (1.8e-3 seen).
    let tol = if args.bf16 { 1e-2 } else { 1e-5 } * scale;
    anyhow::ensure!(
        worst <= tol,
        "PE {me}: after {} steps a parameter is {worst:.3e} off the one-PE reference (tolerance {tol:.1e})",
        args.steps
    );
    let (first, last) = (losses[0], *losses.last().unwrap());
    anyhow::ensure!(
        f64::from(last) < 0.6 * f64::from(first),
        "PE {me}: the loss did not fall enough: {first} -> {last}"
    );

    let timing = if args.timed_steps > 0 {
        Some(model.time(shmem, args.timed_steps)?)
    } else {
        None
    };
    if let (0, Some(path)) = (me, &args.plot) {
        plot(path, &losses, &want_losses, npes, args.bf16)?;
    }
    model.free()?;
    if me == 0 {
        if let Some((step, reduce)) = timing {
            println!(
                "train: {npes} PEs, {} gradients, step {:.0} us, allreduce {:.0} us ({:.0}% of a step)",
                if args.bf16 { "bf16" } else { "f32" },
                step * 1e6,
                reduce * 1e6,
                100.0 * reduce / step
            );
        }
        println!(
            "train: ok, loss {first:.4} -> {last:.4} in {} steps (reference {:.4}), parameters within {worst:.1e} of one PE",
            args.steps,
            want_losses.last().unwrap()
        );
    }
    Ok(())
}

/// The synthetic data set: inputs uniform in [-1, 1), each labeled with the
/// class a fixed random linear "teacher" scores highest.
struct Data {
    x: Vec<f32>,
    y: Vec<u32>,
}

impl Data {
    fn new() -> Data {
        let mut rng = SplitMix(0x5eed);
        let teacher: Vec<f64> = (0..C * D).map(|_| rng.uniform()).collect();
        let x: Vec<f32> = (0..SAMPLES * D).map(|_| rng.uniform() as f32).collect();
        let y = (0..SAMPLES)
            .map(|s| {
                let score = |c: usize| -> f64 {
                    (0..D)
                        .map(|k| teacher[c * D + k] * f64::from(x[s * D + k]))
                        .sum()
                };
                (0..C)
                    .max_by(|&a, &b| score(a).total_cmp(&score(b)))
                    .unwrap() as u32
            })
            .collect();
        Data { x, y }
    }

    /// The sample at row `r` of step `step`'s batch.
    fn sample(step: u32, batch: u32, r: u32) -> usize {
        ((u64::from(step) * u64::from(batch) + u64::from(r)) % SAMPLES as u64) as usize
    }
}

/// The same starting parameters on every PE: weights uniform in
/// ±1/sqrt(fan-in), biases zero.
fn initial_params() -> Vec<f32> {
    let mut rng = SplitMix(0x1417);
    let mut p = vec![0.0f32; P];
    for w in &mut p[W1..B1] {
        *w = (rng.uniform() / (D as f64).sqrt()) as f32;
    }
    for w in &mut p[W2..B2] {
        *w = (rng.uniform() / (H as f64).sqrt()) as f32;
    }
    p
}

/// splitmix64: a small deterministic generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1), on a 2^-23 grid (exact in f32).
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 41) as f64) * 2f64.powi(-23) * 2.0 - 1.0
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The host reference: one PE trains on the whole batch, in f64. Returns
/// the parameters after `args.steps` steps and each step's loss.
fn reference(data: &Data, init: &[f32], args: &Args) -> (Vec<f64>, Vec<f32>) {
    let mut p: Vec<f64> = init.iter().map(|&v| f64::from(v)).collect();
    let mut losses = Vec::new();
    let bg = f64::from(args.batch);
    for step in 0..args.steps {
        let mut g = vec![0.0f64; P];
        let mut loss = 0.0;
        for r in 0..args.batch {
            let s = Data::sample(step, args.batch, r);
            let x = |k: usize| f64::from(data.x[s * D + k]);
            let z: Vec<f64> = (0..H)
                .map(|j| p[B1 + j] + (0..D).map(|k| p[W1 + j * D + k] * x(k)).sum::<f64>())
                .collect();
            let h: Vec<f64> = z.iter().map(|&v| v.max(0.0)).collect();
            let logits: Vec<f64> = (0..C)
                .map(|c| p[B2 + c] + (0..H).map(|j| p[W2 + c * H + j] * h[j]).sum::<f64>())
                .collect();
            let m = logits.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
            let sum: f64 = e.iter().sum();
            let y = data.y[s] as usize;
            loss += -(e[y] / sum).ln() / bg;
            let dl: Vec<f64> = (0..C)
                .map(|c| (e[c] / sum - if c == y { 1.0 } else { 0.0 }) / bg)
                .collect();
            for c in 0..C {
                g[B2 + c] += dl[c];
                for j in 0..H {
                    g[W2 + c * H + j] += dl[c] * h[j];
                }
            }
            for j in 0..H {
                if z[j] <= 0.0 {
                    continue;
                }
                let dz: f64 = (0..C).map(|c| p[W2 + c * H + j] * dl[c]).sum();
                g[B1 + j] += dz;
                for k in 0..D {
                    g[W1 + j * D + k] += dz * x(k);
                }
            }
        }
        for (w, d) in p.iter_mut().zip(&g) {
            *w -= f64::from(args.lr) * d;
        }
        losses.push(loss as f32);
    }
    (p, losses)
}

/// The model on the device: its buffers and the five passes of a step.
struct Model {
    params: SymBuffer<f32>,
    grads: SymBuffer<f32>,
    gsum: SymBuffer<f32>,
    /// bf16 gradients and their sum (`--bf16`).
    half: Option<(SymBuffer<bf16>, SymBuffer<bf16>)>,
    passes: Vec<Pass>,
    update: Pass,
    _buffers: Vec<wgpu::Buffer>,
}

/// One compute pass: a pipeline, its bind group, its workgroups.
struct Pass {
    pipeline: wgpu::ComputePipeline,
    bind: wgpu::BindGroup,
    groups: u32,
}

impl Model {
    fn new(shmem: &Shmem, args: &Args, data: &Data, init: &[f32]) -> anyhow::Result<Model> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        // This PE's rows of every batch: an even share, the rest to the first.
        let lo = args.batch * me / n;
        let rows = args.batch * (me + 1) / n - lo;
        let device = shmem.device();
        let storage = |label: &str, bytes: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(4),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let x = storage("x", (SAMPLES * D * 4) as u64);
        let y = storage("y", (SAMPLES * 4) as u64);
        shmem.write_buffer(&x, 0, bytemuck::cast_slice(&data.x));
        shmem.write_buffer(&y, 0, bytemuck::cast_slice(&data.y));
        let r = rows.max(1) as u64;
        let z1 = storage("z1", r * H as u64 * 4);
        let dz = storage("dz", r * H as u64 * 4);
        let dl = storage("dlogits", r * C as u64 * 4);
        let lossb = storage("loss", r * 4);
        let state = storage("state", 4);
        let params = shmem.calloc::<f32>(P)?;
        params.write(init)?;
        let grads = shmem.calloc::<f32>(P + 1)?;
        let gsum = shmem.calloc::<f32>(P + 1)?;
        let half = if args.bf16 {
            Some((shmem.calloc::<bf16>(P)?, shmem.calloc::<bf16>(P)?))
        } else {
            None
        };
        let consts = format!(
            "const D: u32 = {D}u; const H: u32 = {H}u; const C: u32 = {C}u;
const W1: u32 = {W1}u; const B1: u32 = {B1}u; const W2: u32 = {W2}u; const B2: u32 = {B2}u;
const P: u32 = {P}u; const SAMPLES: u32 = {SAMPLES}u;
const BATCH: u32 = {}u; const LO: u32 = {lo}u; const ROWS: u32 = {rows}u; const LR: f32 = {:?};
fn sample(r: u32, step: u32) -> u32 {{ return (step * BATCH + LO + r) % SAMPLES; }}
",
            args.batch, args.lr
        );
        let buf = wgpu::Buffer::as_entire_binding;
        let (xs, ys, st) = (
            ("x", "f32", buf(&x)),
            ("y", "u32", buf(&y)),
            ("state", "u32", buf(&state)),
        );
        let (z, d, h) = (
            ("z1", "f32", buf(&z1)),
            ("dl", "f32", buf(&dl)),
            ("dz", "f32", buf(&dz)),
        );
        let (loss, p) = (
            ("lossb", "f32", buf(&lossb)),
            ("p", "f32", params.binding()),
        );
        let g = ("g", "f32", grads.binding());
        let mut passes = vec![
            pass(
                shmem,
                &consts,
                FORWARD,
                &[
                    xs.clone(),
                    ys,
                    p.clone(),
                    z.clone(),
                    d.clone(),
                    st.clone(),
                    loss.clone(),
                ],
                rows,
            ),
            pass(
                shmem,
                &consts,
                HIDDEN,
                &[p.clone(), z.clone(), d.clone(), h.clone()],
                rows * H as u32,
            ),
            pass(
                shmem,
                &consts,
                GRADS,
                &[xs, st.clone(), z, d, h, loss, g.clone()],
                P as u32 + 1,
            ),
        ];
        let sum: Bind<'_> = match &half {
            None => ("g", "f32", gsum.binding()),
            Some((g16, s16)) => {
                let packed = ("h", "u32", g16.binding());
                passes.push(pass(shmem, &consts, PACK, &[g, packed], P as u32 / 2));
                ("g", "u32", s16.binding())
            }
        };
        let update = format!(
            "{}{UPDATE}",
            if half.is_some() { GRAD_BF16 } else { GRAD_F32 }
        );
        let update = pass(shmem, &consts, &update, &[p, sum, st], P as u32);
        Ok(Model {
            params,
            grads,
            gsum,
            half,
            passes,
            update,
            _buffers: vec![x, y, z1, dz, dl, lossb, state],
        })
    }

    /// One training step, queued: the forward, backward and gradient passes,
    /// the allreduce of the gradients (and the loss) posted after them, the
    /// update after it. Returns the allreduce's request.
    fn step<'a>(&'a self, shmem: &'a Shmem) -> anyhow::Result<Vec<vkshmem_wgpu::Request<'a>>> {
        shmem.submit([encode(shmem, &self.passes)]);
        let mut reqs = Vec::with_capacity(2);
        let (grads, gsum) = (shmem.slice(&self.grads)?, shmem.slice(&self.gsum)?);
        match &self.half {
            None => {
                reqs.push(shmem.post(Team::WORLD, Collective::sum_reduce(&gsum, &grads, P + 1))?)
            }
            Some((g16, s16)) => {
                let (g, s) = (shmem.slice(g16)?, shmem.slice(s16)?);
                reqs.push(shmem.post(Team::WORLD, Collective::sum_reduce(&s, &g, P))?);
                let gl = shmem.slice_range(&self.grads, P..P + 1)?;
                let sl = shmem.slice_range(&self.gsum, P..P + 1)?;
                reqs.push(shmem.post(Team::WORLD, Collective::sum_reduce(&sl, &gl, 1))?);
            }
        }
        shmem.submit([encode(shmem, std::slice::from_ref(&self.update))]);
        Ok(reqs)
    }

    /// Seconds per step over `steps` steps queued back to back (one wait at
    /// the end), and per allreduce of the gradients alone.
    fn time(&self, shmem: &Shmem, steps: u32) -> anyhow::Result<(f64, f64)> {
        // Warm: every pipeline and the collective's kernels built.
        self.step(shmem)?.wait()?;
        shmem.wait_idle()?;
        let t = Instant::now();
        let mut all = Vec::new();
        for _ in 0..steps {
            all.push(self.step(shmem)?);
        }
        for r in all {
            r.wait()?;
        }
        shmem.wait_idle()?;
        let step = t.elapsed().as_secs_f64() / f64::from(steps);
        shmem.context().barrier_all()?;
        let t = Instant::now();
        let mut all = Vec::new();
        for _ in 0..steps {
            let (grads, gsum) = (shmem.slice(&self.grads)?, shmem.slice(&self.gsum)?);
            all.push(shmem.post(Team::WORLD, Collective::sum_reduce(&gsum, &grads, P + 1))?);
        }
        for r in all {
            r.wait()?;
        }
        let reduce = t.elapsed().as_secs_f64() / f64::from(steps);
        Ok((step, reduce))
    }

    fn free(self) -> anyhow::Result<()> {
        if let Some((a, b)) = self.half {
            a.free()?;
            b.free()?;
        }
        for b in [self.params, self.grads, self.gsum] {
            b.free()?;
        }
        Ok(())
    }
}

/// Waits for every request of a step.
trait WaitAll {
    fn wait(self) -> vkshmem_wgpu::Result<()>;
}

impl WaitAll for Vec<vkshmem_wgpu::Request<'_>> {
    fn wait(self) -> vkshmem_wgpu::Result<()> {
        for r in self {
            r.wait()?;
        }
        Ok(())
    }
}

/// A pass of `body` (WGSL after the constants) over `threads` threads, with
/// `binds` declared as its bindings 0, 1, ... in that order.
fn pass(shmem: &Shmem, consts: &str, body: &str, binds: &[Bind<'_>], threads: u32) -> Pass {
    let device = shmem.device();
    let decls: String = binds
        .iter()
        .enumerate()
        .map(|(i, (name, ty, _))| {
            format!("@group(0) @binding({i}) var<storage, read_write> {name}: array<{ty}>;\n")
        })
        .collect();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(format!("{consts}{decls}{body}").into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let entries: Vec<wgpu::BindGroupEntry<'_>> = binds
        .iter()
        .enumerate()
        .map(|(i, (_, _, r))| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: r.clone(),
        })
        .collect();
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    Pass {
        pipeline,
        bind,
        groups: threads.div_ceil(WG).max(1),
    }
}

/// A pass's binding: its WGSL name, element type and resource.
type Bind<'a> = (&'static str, &'static str, wgpu::BindingResource<'a>);

/// `passes` in one command buffer, one compute pass each (wgpu orders them).
fn encode(shmem: &Shmem, passes: &[Pass]) -> wgpu::CommandBuffer {
    let mut enc = shmem.device().create_command_encoder(&Default::default());
    for p in passes {
        let mut cp = enc.begin_compute_pass(&Default::default());
        cp.set_pipeline(&p.pipeline);
        cp.set_bind_group(0, &p.bind, &[]);
        cp.dispatch_workgroups(p.groups, 1, 1);
    }
    enc.finish()
}

/// Per local row: the hidden pre-activations, the logits' gradient of the
/// mean loss (softmax minus the label, over the global batch) and the loss.
const FORWARD: &str = "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let r = id.x;
    if r >= ROWS { return; }
    let s = sample(r, state[0]);
    for (var j = 0u; j < H; j++) {
        var z = p[B1 + j];
        for (var k = 0u; k < D; k++) { z += p[W1 + j * D + k] * x[s * D + k]; }
        z1[r * H + j] = z;
    }
    var l: array<f32, 4>;
    var m = -3.0e38;
    for (var c = 0u; c < C; c++) {
        var v = p[B2 + c];
        for (var j = 0u; j < H; j++) { v += p[W2 + c * H + j] * max(z1[r * H + j], 0.0); }
        l[c] = v;
        m = max(m, v);
    }
    var sum = 0.0;
    for (var c = 0u; c < C; c++) { l[c] = exp(l[c] - m); sum += l[c]; }
    let label = y[s];
    for (var c = 0u; c < C; c++) {
        let hit = select(0.0, 1.0, c == label);
        dl[r * C + c] = (l[c] / sum - hit) / f32(BATCH);
    }
    lossb[r] = -log(l[label] / sum) / f32(BATCH);
}
";

/// Per (local row, hidden unit): the pre-activation's gradient.
const HIDDEN: &str = "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= ROWS * H { return; }
    let r = i / H;
    let j = i % H;
    var g = 0.0;
    if z1[i] > 0.0 {
        for (var c = 0u; c < C; c++) { g += p[W2 + c * H + j] * dl[r * C + c]; }
    }
    dz[i] = g;
}
";

/// Per parameter: its gradient summed over this PE's rows; slot P holds
/// this PE's share of the mean loss (the allreduce sums it too).
const GRADS: &str = "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i > P { return; }
    let step = state[0];
    var sum = 0.0;
    for (var r = 0u; r < ROWS; r++) {
        if i < B1 {
            sum += dz[r * H + i / D] * x[sample(r, step) * D + i % D];
        } else if i < W2 {
            sum += dz[r * H + i - B1];
        } else if i < B2 {
            let c = (i - W2) / H;
            let j = (i - W2) % H;
            sum += dl[r * C + c] * max(z1[r * H + j], 0.0);
        } else if i < P {
            sum += dl[r * C + i - B2];
        } else {
            sum += lossb[r];
        }
    }
    g[i] = sum;
}
";

/// Per pair of parameters: the f32 gradients rounded to bf16 (to nearest,
/// ties to even), two to a word.
const PACK: &str = "
fn bf16(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= P / 2u { return; }
    h[i] = bf16(g[2u * i]) | (bf16(g[2u * i + 1u]) << 16u);
}
";

/// Per parameter: one SGD step on the summed gradient (`grad(i)`, which
/// the gradient's form defines); thread 0 counts the step.
const UPDATE: &str = "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i == 0u { state[0] += 1u; }
    if i >= P { return; }
    p[i] -= LR * grad(i);
}
";

/// `grad(i)` of f32 sums.
const GRAD_F32: &str = "fn grad(i: u32) -> f32 { return g[i]; }";

/// `grad(i)` of bf16 sums, two to a word.
const GRAD_BF16: &str = "
fn grad(i: u32) -> f32 {
    let w = g[i / 2u];
    return bitcast<f32>(select(w & 0xffffu, w >> 16u, (i & 1u) == 1u) << 16u);
}";

/// The loss per step, this run's against the one-PE reference's.
fn plot(
    path: &std::path::Path,
    got: &[f32],
    want: &[f32],
    npes: u32,
    bf16: bool,
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    register_font()?;
    let root = BitMapBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = got.iter().chain(want).cloned().fold(0.0f32, f32::max) * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption("vkshmem-wgpu train: loss per step", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0..got.len() as u32, 0f32..top)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("mean cross-entropy")
        .draw()?;
    let label = format!(
        "{npes} PEs ({} gradients)",
        if bf16 { "bf16" } else { "f32" }
    );
    chart
        .draw_series(LineSeries::new(
            (0..).zip(got.iter().cloned()),
            RED.stroke_width(2),
        ))?
        .label(label)
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], RED.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            (0..).zip(want.iter().cloned()),
            BLUE.stroke_width(1),
        ))?
        .label("1 PE, whole batch (host, f64)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLUE.stroke_width(1)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Text needs a TrueType font: the first of the usual system ones.
fn register_font() -> anyhow::Result<()> {
    const FONTS: [&str; 3] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ];
    let Some(bytes) = FONTS.iter().find_map(|p| std::fs::read(p).ok()) else {
        anyhow::bail!(
            "--plot needs a TrueType font; install one with: apt-get install fonts-dejavu-core"
        );
    };
    // plotters keeps a 'static reference: the font lives as long as the process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, bytes)
        .map_err(|_| anyhow::anyhow!("the system font could not be read"))
}
