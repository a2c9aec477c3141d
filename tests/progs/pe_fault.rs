//! A PE program for the fault tests (run through vkshmrun by tests/launcher.rs).
//!
//! `pe_fault MODE PE ITER`: every PE prints its process id, then loops over host
//! barriers; PE `PE` misbehaves at iteration `ITER` as MODE says: `panic`, `exit3`
//! (exits with code 3 without finalizing), `drop` (drops its context without
//! finalizing, as `main` returning an error does, then exits with code 4), `sigkill` (kills itself with SIGKILL),
//! `hang` (sleeps for 10 minutes: alive but never arriving) or `none`. Just
//! before, it prints `PE <me>: fails at <ms>` (milliseconds since the Unix
//! epoch), so that a test can time the job's end from the failure rather than
//! from a start-up that a busy machine makes slow. Surviving PEs report the error they got and exit with code 2,
//! after a line `PE <me>: out after <ms> ms` (how long the failing barrier took).
//! With `PE_FAULT_IGNORE_TERM` set, PEs ignore SIGTERM (so the launcher's stop
//! cannot end them: they must leave the failing barrier by themselves).
//!
//! `pe_fault elsewhere PE ITER`: every PE loops over `sum_reduce` on WORLD;
//! at iteration ITER, PE `PE` calls `team_sync` on a team of its own (itself
//! and PE 0, made before the loop) instead, so the job hangs: the others wait
//! for it in the reduction, it waits for PE 0 in its team. The flight
//! recorder's table (on a wait timeout, SIGQUIT or `vkshmrun --status`)
//! names it. With PE past the job's PEs nobody misbehaves: the calls of
//! every PE are then those of a trace test (a split, ITER + 1 reductions).
//!
//! `pe_fault device - ITER MARKDIR`: every PE runs ITER dispatches of a kernel
//! that loops over work_group barriers on the device; after its first dispatch
//! each PE writes its process id into `MARKDIR/pe<N>`, so that a test can kill
//! one PE while the others wait for it inside device code.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("none");
    let bad_pe: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let at: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    if std::env::var_os("PE_FAULT_IGNORE_TERM").is_some() {
        // SAFETY: SIG_IGN installs no handler code; nothing else in this
        // program relies on SIGTERM's disposition.
        unsafe {
            nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGTERM,
                nix::sys::signal::SigHandler::SigIgn,
            )
        }
        .expect("ignoring SIGTERM");
    }
    let ctx = vkshmem::init().expect("init");
    let me = ctx.my_pe();
    println!("pid {} pe {me}", std::process::id());
    std::io::stdout().flush().unwrap();
    if mode == "device" {
        device_loop(&ctx, at, args.get(4).map(String::as_str).unwrap_or("."));
        ctx.finalize().expect("finalize");
        return;
    }
    if mode == "elsewhere" {
        elsewhere(&ctx, bad_pe, at);
        ctx.finalize().expect("finalize");
        return;
    }
    for i in 0..at + 1_000_000 {
        if me == bad_pe && i == at && mode != "none" {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("a clock after 1970");
            eprintln!("PE {me}: fails at {}", now.as_millis());
        }
        if me == bad_pe && i == at {
            match mode {
                "panic" => panic!("PE {me} panics on purpose at iteration {i}"),
                "exit3" => std::process::exit(3),
                "drop" => {
                    drop(ctx);
                    eprintln!("PE {me}: dropped its context without finalize");
                    std::process::exit(4);
                }
                "sigkill" => {
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                }
                "hang" => std::thread::sleep(std::time::Duration::from_secs(600)),
                _ => {}
            }
        }
        if mode == "none" && i == at {
            break;
        }
        let entered = std::time::Instant::now();
        if let Err(e) = ctx.barrier_all() {
            eprintln!("PE {me}: out after {} ms", entered.elapsed().as_millis());
            eprintln!("PE {me}: barrier_all failed: {e}");
            std::process::exit(2);
        }
    }
    ctx.finalize().expect("finalize");
}

/// Device-side barrier loops, dispatch after dispatch (see the module docs).
fn device_loop(ctx: &vkshmem::Context, dispatches: u64, marks: &str) {
    let kernel = ctx
        .device_kernel(
            "var<immediate> iters: u32;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    for (var k = 0u; k < iters; k++) {
        shmemx_barrier_all_work_group(li);
    }
}",
            "fault_device_loop",
        )
        .expect("compile");
    // lavapipe caps loop iterations per invocation: few barriers per dispatch,
    // fewer when PEs share cores (each wait then spins through time slices).
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as u32;
    let iters: u32 = match (ctx.device_info().is_llvmpipe(), ctx.n_pes() <= cores) {
        (false, _) => 1000,
        (true, true) => 20,
        (true, false) => 2,
    };
    let me = ctx.my_pe();
    for d in 0..dispatches {
        if let Err(e) = ctx.launch(&kernel, [1, 1, 1], &[], bytemuck::bytes_of(&iters)) {
            eprintln!("PE {me}: device loop failed: {e}");
            std::process::exit(2);
        }
        if d == 0 {
            std::fs::write(format!("{marks}/pe{me}"), std::process::id().to_string())
                .expect("mark");
        }
    }
}

/// The `elsewhere` mode (see the module docs).
fn elsewhere(ctx: &vkshmem::Context, bad_pe: u32, at: u64) {
    use vkshmem::Team;
    let me = ctx.my_pe();
    // PE 0 and the misbehaving PE: a team of the latter's own (PEs 0 and
    // 1 where `bad_pe` is no PE: then nobody misbehaves).
    let stride = if bad_pe < ctx.n_pes() {
        bad_pe.max(1)
    } else {
        1
    } as i32;
    let pair = ctx
        .team_split_strided(Team::WORLD, 0, stride, 2, &Default::default())
        .expect("split");
    let x = ctx.malloc::<f32>(1).expect("malloc");
    x.write(&[1.0]).expect("write");
    let s = x.as_slice();
    for i in 0..at + 1 {
        let r = if me == bad_pe && i == at {
            eprintln!("PE {me}: syncs its own team instead of reducing");
            ctx.team_sync(pair.expect("in its own team"))
        } else {
            ctx.sum_reduce(Team::WORLD, &s, &s, 1)
        };
        if let Err(e) = r {
            eprintln!("PE {me}: call {i} failed: {e}");
            std::process::exit(2);
        }
    }
}
