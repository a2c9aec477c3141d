//! How a check program runs its PEs: by default as the one PE of this
//! process that vkshmrun (or mpirun) started; with `--threads N` as a whole
//! job of N PEs as threads of this process (`vkshmem::run_threads`), with
//! no launcher. The checks are the same either way.
//!
//! The including program also declares `fail_fast` (a failed check then
//! panics its thread-PE, which fails the job naming it).

// Each program that includes this module uses a part of it.
#![allow(dead_code)]

use vkshmem::Context;

/// `--threads N`'s N, if given.
pub fn threads() -> Option<u32> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--threads")?;
    let n = args.get(at + 1).and_then(|n| n.parse().ok());
    Some(n.unwrap_or_else(|| panic!("--threads takes a number of PEs")))
}

/// Runs `body` on each of this program's PEs, and finalizes each.
pub fn run(body: impl Fn(&Context) -> anyhow::Result<()> + Sync) -> anyhow::Result<()> {
    match threads() {
        Some(n) => {
            crate::fail_fast::pes_are_threads();
            vkshmem::run_threads(n, |ctx| {
                crate::fail_fast::on_pe(ctx.my_pe());
                Ok(body(ctx)?)
            })?;
            Ok(())
        }
        None => {
            let ctx = vkshmem::init()?;
            crate::fail_fast::on_pe(ctx.my_pe());
            body(&ctx)?;
            ctx.finalize()?;
            Ok(())
        }
    }
}
