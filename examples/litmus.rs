//! Message passing across processes: each PE stores a block with plain stores into
//! the next PE's heap, synchronizes with the device barrier, and checks the block
//! its predecessor stored into its own heap, round after round inside a dispatch
//! (see shaders/examples/litmus.wgsl). Prints `litmus: stale=N rounds=M` where N
//! counts every wrong word read (stale or torn) over all PEs, and
//! `previous_round=` how many of those held the buffer's previous contents.
//!
//! `vkshmrun -n 4 target/release/examples/litmus [ROUNDS] [--sync S] [--words W]
//! [--per-dispatch P]`: ROUNDS defaults to 100000, W (block size in words) to 256.
//! `--sync weak` replaces the library barrier with one made of relaxed atomics and
//! no fences, to show what the fences are for on a given driver; `--sync none`
//! leaves synchronization out (the PEs race; how many wrong words that shows
//! depends on how the driver interleaves them, and can be none). `--sync turns`
//! is the deterministic control: no synchronization and the PEs run their
//! dispatches one after another, PE 0 first, so PE 0 reads blocks nobody wrote
//! yet and every other PE reads its predecessor's last rounds: the check must
//! count at least `ROUNDS * W` wrong words on PE 0 and `(ROUNDS - 2) * W` on each
//! other PE (fewer only where a hash value is 0). P defaults to all
//! rounds in one dispatch; on lavapipe to 20, or 2 when PEs outnumber CPU cores
//! (that driver caps the loop iterations of a dispatch).

use anyhow::{bail, Context as _, Result};
use clap::Parser;

const KERNEL: &str = include_str!("../shaders/examples/litmus.wgsl");

#[derive(Parser)]
#[command(about = "Message-passing litmus test over the device barrier")]
struct Args {
    /// Rounds in all.
    #[arg(default_value_t = 100_000)]
    rounds: u32,
    /// How the PEs synchronize between writing and reading a block.
    #[arg(long, value_enum, default_value_t = Sync::Barrier)]
    sync: Sync,
    /// Words per block.
    #[arg(long, default_value_t = 256)]
    words: u32,
    /// Rounds per dispatch (default: all; on lavapipe 20, or 2 with more PEs than cores).
    #[arg(long)]
    per_dispatch: Option<u32>,
    /// Invocations of the workgroup (1 to 256). On lavapipe 8 or fewer make one
    /// SIMD row, which the library links without barriers
    /// (`LibraryConfig::row_lanes`): the ordering is then the CPU's alone.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=256))]
    workgroup_size: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Sync {
    /// The library's `shmemx_barrier_all_work_group`.
    Barrier,
    /// Relaxed atomic flags, no fences.
    Weak,
    /// None: the PEs race.
    None,
    /// None, and the PEs take turns (the deterministic control).
    Turns,
}

impl Sync {
    /// The kernel's `mode`.
    fn mode(self) -> u32 {
        match self {
            Sync::Barrier => 0,
            Sync::Weak => 1,
            Sync::None | Sync::Turns => 2,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    data: u32,
    flags: u32,
    errors: u32,
    rounds: u32,
    base: u32,
    words: u32,
    mode: u32,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.rounds == 0 || args.words == 0 {
        bail!("ROUNDS and --words must be at least 1");
    }
    let ctx = vkshmem::init()?;
    let n = ctx.n_pes();
    let lavapipe = ctx.device_info().is_llvmpipe();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as u32;
    let per_dispatch = args
        .per_dispatch
        .unwrap_or(match (lavapipe, n <= cores) {
            (false, _) => args.rounds,
            (true, true) => 20,
            // Oversubscribed: every barrier waits for the scheduler, out of
            // about 130 ms of loop budget per dispatch.
            (true, false) => 2,
        })
        .clamp(1, args.rounds);
    let data = ctx.calloc::<u32>(2 * args.words as usize)?;
    let flags = ctx.calloc::<u32>(n as usize)?;
    let errors = ctx.calloc::<u32>(4)?;
    // Without synchronization the kernel must not call the library barrier even
    // where its mode skips it: a kernel that can wait on peers is launched after
    // a sync of all PEs (`Context::launch`), which would start every PE's
    // dispatch together and, in turns, pair one PE's launch with another's turn.
    let (size, wg) = ("@workgroup_size(64)", "const WG: u32 = 64u;");
    if !KERNEL.contains(size) || !KERNEL.contains(wg) {
        bail!("litmus.wgsl no longer says {size} and {wg}");
    }
    let w = args.workgroup_size;
    let kernel_src = KERNEL
        .replace(size, &format!("@workgroup_size({w})"))
        .replace(wg, &format!("const WG: u32 = {w}u;"));
    let source = match args.sync {
        Sync::Barrier | Sync::Weak => kernel_src,
        Sync::None | Sync::Turns => {
            let call = "shmemx_barrier_all_work_group(li);";
            if !kernel_src.contains(call) {
                bail!("litmus.wgsl no longer calls {call}");
            }
            kernel_src.replace(call, "")
        }
    };
    let kernel = ctx
        .device_kernel(&source, "litmus.wgsl")
        .context("compiling the litmus kernel")?;
    let mut params = Params {
        data: data.device_addr()?,
        flags: flags.device_addr()?,
        errors: errors.device_addr()?,
        rounds: 0,
        // Round 2 first: "round - 2" (the stale value) never wraps.
        base: 2,
        words: args.words,
        mode: args.sync.mode(),
    };
    let mut gpu = std::time::Duration::ZERO;
    // In turns, PE t runs every dispatch in turn t; otherwise all run in turn 0.
    let turns = if args.sync == Sync::Turns { n } else { 1 };
    for turn in 0..turns {
        if turns == 1 || turn == ctx.my_pe() {
            let mut left = args.rounds;
            while left > 0 {
                params.rounds = left.min(per_dispatch);
                gpu += ctx.launch_timed(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(&params))?;
                params.base += params.rounds;
                left -= params.rounds;
            }
        }
        ctx.barrier_all()?;
    }
    // PE 0 sums every PE's counts.
    let mut wrong = 0u64;
    let mut stale = 0u64;
    let mut first = None;
    if ctx.my_pe() == 0 {
        for pe in 0..n {
            let mut e = [0u32; 4];
            errors.read_pe(pe, &mut e)?;
            wrong += u64::from(e[0]);
            stale += u64::from(e[1]);
            if e[0] != 0 && first.is_none() {
                first = Some((pe, e[2], e[3]));
            }
        }
    }
    ctx.barrier_all()?;
    if ctx.my_pe() == 0 {
        let first = first
            .map(|(pe, r, w)| format!(" first_wrong=pe{pe}:round{r}:word{w}"))
            .unwrap_or_default();
        println!(
            "litmus: stale={wrong} rounds={} npes={n} words={} workgroup_size={} mode={} previous_round={stale} per_dispatch={per_dispatch} us_per_round={:.2}{first} device={:?}",
            args.rounds,
            args.words,
            args.workgroup_size,
            format!("{:?}", args.sync).to_lowercase(),
            gpu.as_secs_f64() * 1e6 / f64::from(args.rounds),
            ctx.device_info().name
        );
    }
    drop((data, flags, errors));
    ctx.finalize()?;
    Ok(())
}
