//! Whole jobs of PEs as threads of one process (`vkshmem::run_threads`):
//! the check programs with `--threads N` (the same checks as under
//! vkshmrun), the example, a soak, and a PE that fails.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{every_pe_checked, program, run_child, Run};
use vkshmem::{Error, Team};

/// One job at a time: a job's PEs spin while they wait for each other, and
/// two jobs on a 2-core machine starve each other's PEs (a queued
/// collective's device wait runs out of lavapipe's loop budget).
static ONE_JOB: Mutex<()> = Mutex::new(());

fn one_job() -> std::sync::MutexGuard<'static, ()> {
    ONE_JOB
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `examples/<name> ARGS…` (no launcher: its PEs are its threads),
/// killing it and failing after `timeout`; it must exit 0.
fn run_ok(name: &str, args: &[&str], timeout: Duration) -> Run {
    let mut cmd = std::process::Command::new(program(name));
    cmd.args(args).env_remove("VKSHMEM_WAIT_TIMEOUT");
    let r = run_child(cmd, timeout, |_| {}, || {});
    assert_eq!(
        r.code,
        Some(0),
        "{name} {args:?}:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    r
}

/// The collectives' conformance harness with its PEs as threads: every
/// team, type, operation and size on 1 and 2 PEs with the device forms,
/// two device calls per form on 3, the quick set on 4 and 8.
#[test]
fn collectives_conform_with_pes_as_threads() {
    let _one = one_job();
    let limit = Duration::from_secs(600);
    for (n, flags) in [
        (1, &[][..]),
        (2, &[][..]),
        (3, &["--device-quick"][..]),
        (4, &["--quick"][..]),
        (8, &["--quick"][..]),
    ] {
        let nn = n.to_string();
        let args: Vec<&str> = ["--threads", &nn]
            .into_iter()
            .chain(flags.iter().copied())
            .collect();
        let r = run_ok("collectives_check", &args, limit);
        every_pe_checked(&r.stdout, "collectives_check", n, 20);
    }
}

/// UCC's calls, host RMA and atomics, and device RMA and atomics, with PEs
/// as threads.
#[test]
fn ucc_rma_and_atomics_hold_with_pes_as_threads() {
    let _one = one_job();
    let limit = Duration::from_secs(600);
    for (name, pes) in [
        ("ucc_check", &[1, 2, 3, 4, 8][..]),
        ("rma_check", &[1, 2, 3, 4, 8][..]),
        ("device_rma_check", &[2, 3][..]),
        ("device_amo_check", &[3][..]),
    ] {
        for &n in pes {
            let nn = n.to_string();
            let r = run_ok(name, &["--threads", &nn], limit);
            let ok = format!("{name}: ok npes={n}");
            assert!(r.stdout.contains(&ok), "{name} on {n}: {}", r.stdout);
        }
    }
}

/// Queue-ordered collectives with PEs as threads.
#[test]
fn queued_collectives_hold_with_pes_as_threads() {
    let _one = one_job();
    for n in [2, 3] {
        let nn = n.to_string();
        let r = run_ok("queue_check", &["--threads", &nn], Duration::from_secs(600));
        every_pe_checked(&r.stdout, "queue_check", n, 20);
    }
}

/// The example: every collective family on WORLD and a split team, host
/// and device forms.
#[test]
fn the_threads_example_checks_every_family() {
    let _one = one_job();
    let r = run_ok("threads", &["2"], Duration::from_secs(300));
    assert!(r.stdout.contains("threads: ok on 2 PEs"), "{}", r.stdout);
}

/// Thirty seconds of random collectives, host, device and queued, on 4
/// PEs as threads.
/// wgpu's training example (wgpu/examples/train.rs) with its PEs as
/// threads, each on its own wgpu device: the same checks as under vkshmrun
/// (parameters alike on every PE each step, within tolerance of one PE).
#[test]
fn training_on_wgpu_holds_with_pes_as_threads() {
    let _one = one_job();
    for n in ["2", "4"] {
        let r = run_ok(
            "train",
            &["--threads", n, "--steps", "30", "--timed-steps", "0"],
            Duration::from_secs(300),
        );
        assert!(r.stdout.contains("train: ok"), "{n} threads: {}", r.stdout);
    }
}

#[test]
fn thread_pes_soak_for_30_seconds() {
    let _one = one_job();
    let r = run_ok(
        "soak",
        &[
            "--threads",
            "4",
            "--seconds",
            "30",
            "--queued",
            "0.2",
            "--seed",
            "7",
        ],
        Duration::from_secs(600),
    );
    let soaks: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("SOAK "))
        .map(|j| serde_json::from_str(j).unwrap())
        .collect();
    assert_eq!(soaks.len(), 4, "{}", r.stdout);
    for s in &soaks {
        assert_eq!(s["wrong"], 0, "{s}");
        assert!(s["checked"].as_u64().unwrap() > 100, "{s}");
    }
}

/// How PE `culprit` fails, in [`a_failing_pe_ends_every_peer_call`].
#[derive(Clone, Copy, Debug)]
enum Failure {
    /// Panics while the others are in a host barrier.
    PanicsAtOnce,
    /// Returns an error while the others are in a host barrier.
    ReturnsAnError,
    /// Panics while the others wait in a device barrier (a kernel).
    PanicsDuringDeviceWait,
}

/// A device barrier over WORLD, one workgroup.
const DEVICE_BARRIER: &str = "
@compute @workgroup_size(1)
fn main() {
    shmem_barrier_all();
}
";

/// Runs a job of `n` thread-PEs in which PE `culprit` fails as `how`:
/// `run_threads` names it, and every other PE's call ended with
/// `PeerFailed` naming it, within seconds.
fn a_failing_pe_ends_every_peer_call(n: u32, culprit: u32, how: Failure) {
    let seen: Mutex<Vec<(u32, Error)>> = Mutex::new(Vec::new());
    let start = Instant::now();
    let r = vkshmem::run_threads(n, |ctx| {
        let me = ctx.my_pe();
        let device = matches!(how, Failure::PanicsDuringDeviceWait);
        let kernel = device
            .then(|| ctx.device_kernel(DEVICE_BARRIER, "barrier"))
            .transpose()?;
        ctx.barrier_all()?;
        if me == culprit {
            match how {
                Failure::ReturnsAnError => return Err("checks disagree".into()),
                Failure::PanicsAtOnce => panic!("check failed at once"),
                Failure::PanicsDuringDeviceWait => {
                    // The others are in their kernel's wait by now.
                    std::thread::sleep(Duration::from_millis(300));
                    panic!("check failed during a device wait")
                }
            }
        }
        let r = match &kernel {
            Some(k) => ctx.launch(k, [1, 1, 1], &[], &[]),
            None => ctx.team_barrier(Team::WORLD),
        };
        let e = r.expect_err("a call with a failed peer must fail");
        seen.lock().unwrap().push((me, e));
        Err::<(), _>("a peer failed".into())
    });
    let took = start.elapsed();
    match r {
        Err(Error::PeerFailed { pe, how: what }) => {
            assert_eq!(pe, culprit, "{what}");
            let want = match how {
                Failure::ReturnsAnError => "returned an error: checks disagree",
                Failure::PanicsAtOnce => "panicked: check failed at once",
                Failure::PanicsDuringDeviceWait => "panicked: check failed during a device wait",
            };
            assert!(what.contains(want), "{what}");
        }
        other => panic!("{how:?}: want PeerFailed naming PE {culprit}, got {other:?}"),
    }
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), n as usize - 1, "{seen:?}");
    for (pe, e) in &seen {
        assert!(
            matches!(e, Error::PeerFailed { pe: p, .. } if *p == culprit),
            "PE {pe}: {e:?}"
        );
    }
    // Kernel builds are in it too: generous, but far from a hang.
    assert!(took < Duration::from_secs(60), "{how:?} took {took:?}");
}

#[test]
fn a_thread_pe_that_panics_fails_every_peer_call() {
    let _one = one_job();
    a_failing_pe_ends_every_peer_call(3, 1, Failure::PanicsAtOnce);
    a_failing_pe_ends_every_peer_call(4, 0, Failure::PanicsAtOnce);
}

#[test]
fn a_thread_pe_that_returns_an_error_fails_every_peer_call() {
    let _one = one_job();
    a_failing_pe_ends_every_peer_call(3, 2, Failure::ReturnsAnError);
}

#[test]
fn a_thread_pe_that_panics_during_a_device_wait_fails_every_peer_call() {
    let _one = one_job();
    a_failing_pe_ends_every_peer_call(2, 1, Failure::PanicsDuringDeviceWait);
}

/// Bad sizes are refused with a typed error, before any thread starts.
#[test]
fn a_job_of_no_pes_is_refused() {
    let _one = one_job();
    let r = vkshmem::run_threads(0, |_| Ok(()));
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
}
