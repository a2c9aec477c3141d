//! `vkshmrun -n N [--label] [--] PROGRAM ARGS…`: starts a vkshmem job of N PEs.
//!
//! It runs the job's bootstrap endpoint (an abstract Unix socket with a random name
//! and secret: nothing on the filesystem), starts the PEs with their place in the job
//! in the environment, forwards their output a whole line at a time (stdout to
//! stdout, stderr to stderr; identical `Error: …` reports of several PEs are
//! printed once at the end, naming the PEs: see [`output`]), and supervises them:
//! when a PE dies or exits non-zero, it says which and how, tells the others to
//! abort, stops them (SIGTERM, then SIGKILL after the grace period) and exits
//! non-zero. SIGINT, SIGTERM and SIGHUP are forwarded to every PE. PEs get SIGKILL
//! if vkshmrun itself dies (PR_SET_PDEATHSIG), so nothing outlives it.
//!
//! When a PE fails, and on SIGQUIT, it prints the flight recorder's table:
//! each PE's current call, its phase and how long it has been in it, and the
//! PE that keeps the others waiting where one shows. `vkshmrun --status`
//! prints it for every running job of the user, from another terminal
//! ([`status`]).
//!
//! Flags are checked here, so that a bad value is reported as that flag:
//! `--wait-timeout` is passed on to the job as `VKSHMEM_WAIT_TIMEOUT` only once it
//! is a number that variable accepts.

mod doctor;
mod output;
mod status;
mod supervise;

use std::ffi::OsString;
use std::time::Duration;

use clap::Parser;

/// Launch a vkshmem job of N processing elements (PEs) on this node.
#[derive(Debug, Parser)]
#[command(name = "vkshmrun", version, trailing_var_arg = true)]
struct Args {
    /// Number of PEs to start.
    #[arg(short = 'n', long = "npes", value_parser = clap::value_parser!(u32).range(1..=4096), required_unless_present_any = ["status", "doctor"])]
    npes: Option<u32>,
    /// Print the calls every PE of each running job of this user is in (the
    /// flight recorder's table) and exit; SIGQUIT to a job's vkshmrun
    /// prints the same on the job's own output.
    #[arg(long, exclusive = true)]
    status: bool,
    /// Check this machine: its Vulkan devices, what vkshmem needs of them,
    /// where `-n` PEs (default 4) would go, then a self-test of 2 PEs; print
    /// `ok` or the first failure with its fix.
    #[arg(long, conflicts_with_all = ["command", "status"])]
    doctor: bool,
    /// Prefix every output line with the PE number (`[3] …`).
    #[arg(long)]
    label: bool,
    /// Seconds (0 to 3600) the other PEs get to exit after a failure or a signal
    /// before SIGKILL.
    #[arg(long, value_name = "SECS", default_value = "3", value_parser = parse_grace)]
    grace: Duration,
    /// Seconds any wait (a host collective, a device wait in a kernel launch) may
    /// take before it fails with a timeout naming the PEs that did not arrive; sets
    /// VKSHMEM_WAIT_TIMEOUT for the job (default: that variable, else no timeout;
    /// 0: no timeout).
    #[arg(long, value_name = "SECS", value_parser = parse_wait_timeout)]
    wait_timeout: Option<f64>,
    /// The program each PE runs, and its arguments.
    #[arg(required_unless_present_any = ["status", "doctor"], num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM [ARGS]...")]
    command: Vec<OsString>,
}

/// Most seconds `--grace` accepts.
const MAX_GRACE: f64 = 3600.0;
/// `--wait-timeout` must be below this, as `VKSHMEM_WAIT_TIMEOUT` must.
const MAX_WAIT_TIMEOUT: f64 = 1e9;

/// A finite, non-negative number of seconds; the message says what is wrong,
/// and clap adds the flag.
fn parse_seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("expected a number of seconds such as 30 or 0.5, got {text:?}"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!(
            "expected a finite, non-negative number of seconds, got {text:?}"
        ));
    }
    Ok(secs)
}

/// `--grace SECS`: 0 to 3600 seconds.
fn parse_grace(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        s if s > MAX_GRACE => Err(format!("at most {MAX_GRACE} seconds, got {text:?}")),
        s => Ok(Duration::from_secs_f64(s)),
    }
}

/// `--wait-timeout SECS`: what `VKSHMEM_WAIT_TIMEOUT` accepts (0: no timeout).
fn parse_wait_timeout(text: &str) -> Result<f64, String> {
    match parse_seconds(text)? {
        s if s >= MAX_WAIT_TIMEOUT => Err(format!(
            "must be below {MAX_WAIT_TIMEOUT} seconds, got {text:?}"
        )),
        s => Ok(s),
    }
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
    if args.status {
        std::process::exit(status::print());
    }
    if args.doctor {
        std::process::exit(doctor::run(args.npes.unwrap_or(4)));
    }
    let npes = args.npes.expect("clap requires -n without --status");
    if let Some(secs) = args.wait_timeout {
        // Before any thread starts: the endpoint and every PE read it. Display of
        // an f64 round-trips and never uses an exponent.
        std::env::set_var(vkshmem_host::config::ENV_WAIT_TIMEOUT, secs.to_string());
    }
    let code = match supervise::run(npes, args.label, args.grace, &args.command) {
        Ok(code) => code,
        Err(e) => {
            output::note(format_args!("{e:#}"));
            1
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkshmem_host::config;

    #[test]
    fn seconds_are_checked() {
        assert_eq!(parse_grace("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_grace("3600").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_grace("1.5").unwrap(), Duration::from_millis(1500));
        for bad in ["", "abc", "-1", "inf", "NaN", "3600.5", "1e300"] {
            assert!(parse_grace(bad).is_err(), "{bad:?}");
            assert!(
                parse_wait_timeout(bad).is_err() || bad == "3600.5",
                "{bad:?}"
            );
        }
    }

    /// What `--wait-timeout` passes on, the job's `VKSHMEM_WAIT_TIMEOUT` reads as
    /// the same time.
    #[test]
    fn wait_timeouts_reach_the_job_unchanged() {
        for text in ["0.5", "30", "1e-3", "2.25", "999999999", "0.000001"] {
            let secs = parse_wait_timeout(text).unwrap();
            let passed = secs.to_string();
            let got = config::wait_timeout(|_| Some(passed.clone())).unwrap();
            assert_eq!(
                got,
                Some(Duration::from_secs_f64(secs)),
                "{text} as {passed}"
            );
        }
        let zero = parse_wait_timeout("0").unwrap().to_string();
        assert_eq!(config::wait_timeout(|_| Some(zero.clone())).unwrap(), None);
        assert!(parse_wait_timeout("1e9").is_err());
    }
}
