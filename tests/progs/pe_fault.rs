//! A PE program for the fault tests (run through vkshmrun by tests/launcher.rs).
//!
//! `pe_fault MODE PE ITER`: every PE prints its process id, then loops over host
//! barriers; PE `PE` misbehaves at iteration `ITER` as MODE says: `panic`, `exit3`
//! (exits with code 3 without finalizing), `sigkill` (kills itself with SIGKILL) or
//! `none`. Surviving PEs report the error they got and exit with code 2.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("none");
    let bad_pe: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let at: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let ctx = vkshmem::init().expect("init");
    let me = ctx.my_pe();
    println!("pid {} pe {me}", std::process::id());
    std::io::stdout().flush().unwrap();
    for i in 0..at + 1_000_000 {
        if me == bad_pe && i == at {
            match mode {
                "panic" => panic!("PE {me} panics on purpose at iteration {i}"),
                "exit3" => std::process::exit(3),
                "sigkill" => {
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                }
                _ => {}
            }
        }
        if mode == "none" && i == at {
            break;
        }
        if let Err(e) = ctx.barrier_all() {
            eprintln!("PE {me}: barrier_all failed: {e}");
            std::process::exit(2);
        }
    }
    ctx.finalize().expect("finalize");
}
