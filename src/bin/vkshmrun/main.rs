//! `vkshmrun -n N [--label] [--] PROGRAM ARGS…`: starts a vkshmem job of N PEs.
//!
//! It runs the job's bootstrap endpoint (an abstract Unix socket with a random name
//! and secret: nothing on the filesystem), starts the PEs with their place in the job
//! in the environment, passes their output through, and supervises them: when a PE
//! dies or exits non-zero, it says which and how, tells the others to abort, stops
//! them (SIGTERM, then SIGKILL after the grace period) and exits non-zero. SIGINT,
//! SIGTERM and SIGHUP are forwarded to every PE. PEs get SIGKILL if vkshmrun itself
//! dies (PR_SET_PDEATHSIG), so nothing outlives it.

mod output;
mod supervise;

use std::ffi::OsString;
use std::time::Duration;

use clap::Parser;

/// Launch a vkshmem job of N processing elements (PEs) on this node.
#[derive(Debug, Parser)]
#[command(name = "vkshmrun", version, trailing_var_arg = true)]
struct Args {
    /// Number of PEs to start.
    #[arg(short = 'n', long = "npes", value_parser = clap::value_parser!(u32).range(1..=4096))]
    npes: u32,
    /// Prefix every output line with the PE number (`[3] …`).
    #[arg(long)]
    label: bool,
    /// Seconds the other PEs get to exit after a failure or a signal before SIGKILL.
    #[arg(long, default_value_t = 3.0)]
    grace: f64,
    /// Seconds any wait (a host collective, a device wait in a kernel launch) may
    /// take before it fails with a timeout naming the PEs that did not arrive; sets
    /// VKSHMEM_WAIT_TIMEOUT for the job (default: that variable, else no timeout).
    #[arg(long, value_name = "SECS")]
    wait_timeout: Option<String>,
    /// The program each PE runs, and its arguments.
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM [ARGS]...")]
    command: Vec<OsString>,
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let grace = Duration::from_secs_f64(args.grace.clamp(0.0, 3600.0));
    if let Some(t) = &args.wait_timeout {
        // Before any thread starts: the endpoint and every PE read it.
        std::env::set_var(vkshmem_host::config::ENV_WAIT_TIMEOUT, t);
    }
    let code = match supervise::run(args.npes, args.label, grace, &args.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("vkshmrun: {e:#}");
            1
        }
    };
    std::process::exit(code);
}
