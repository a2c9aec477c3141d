//! Multi-process tests: real PEs started by `vkshmrun`, on the default Vulkan device
//! (lavapipe on a machine without a GPU).
//!
//! Every run goes through [`vkshmrun`], which also checks that the job left nothing
//! behind: no process still carries the job's bootstrap endpoint in its environment,
//! no socket of the job is still bound, and the job's private TMPDIR is empty.

mod common;
#[cfg(feature = "mpi")]
use common::mpirun;
use common::{
    bin_dir, every_pe_checked, program, run_vkshmrun_env, vkshmrun, vkshmrun_exe, vkshmrun_with,
    Leftovers, Run,
};

use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// An example or test program built beside vkshmrun (`cargo test` builds examples).
/// Jobs whose PEs spin on the device. Cargo runs tests on parallel threads; two
/// such jobs at once on a small CPU-only machine would share its cores, and
/// lavapipe bounds how long one dispatch may wait (ARCHITECTURE.md, "Lavapipe").
static SPINNING_JOBS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_spinning_job() -> SpinningJob {
    let guard = SPINNING_JOBS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    SpinningJob {
        _guard: guard,
        since: Instant::now(),
    }
}

/// The lock of [`one_spinning_job`], held for the rest of a test. With
/// `VKSHMEM_TEST_TIMES` set to a file, each test appends how long it held
/// the lock (its time alone among the spinning jobs: what it adds to the
/// run, since these jobs go one at a time; libtest's `--report-time` counts
/// the wait for the lock too).
struct SpinningJob {
    _guard: std::sync::MutexGuard<'static, ()>,
    since: Instant,
}

impl Drop for SpinningJob {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("VKSHMEM_TEST_TIMES") else {
            return;
        };
        let name = std::thread::current().name().unwrap_or("?").to_string();
        let line = format!("{:8.1} {name}\n", self.since.elapsed().as_secs_f64());
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Runs a PE program without the launcher (a job of one PE), asserts that it
/// succeeded and returns its stdout and stderr.
fn run_solo(prog: &str, args: &[&str]) -> (String, String) {
    let out = Command::new(prog)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

const PE_COUNTS: [u32; 5] = [1, 2, 3, 4, 8];

#[test]
fn heap_ring_on_1_2_3_4_8_pes() {
    let prog = program("heap_ring");
    for n in PE_COUNTS {
        let ns = n.to_string();
        let r = vkshmrun(&["-n", &ns, &prog], Duration::from_secs(120));
        assert_eq!(
            r.code,
            Some(0),
            "heap_ring on {n} PEs:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        assert_eq!(r.stdout.matches("heap_ring: ok").count(), 1, "{}", r.stdout);
        assert!(r.stdout.contains(&format!("npes={n} ")), "{}", r.stdout);
    }
}

#[test]
fn heap_ring_with_odd_sizes_and_labels() {
    // One element, and a size that needs a 2-D dispatch (more than 65535 groups).
    let prog = program("heap_ring");
    for elems in ["1", "4194311"] {
        let r = vkshmrun(
            &["-n", "3", "--label", &prog, elems],
            Duration::from_secs(120),
        );
        assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("[0] heap_ring: ok"), "{}", r.stdout);
    }
}

#[test]
fn heap_ring_without_launcher_is_one_pe() {
    let out = Command::new(program("heap_ring"))
        .arg("1000")
        .env_remove("VKSHMEM_PE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("heap_ring: ok npes=1"));
}

#[test]
fn host_barrier_1000_iterations_on_1_2_3_4_8_pes() {
    let prog = program("host_barrier");
    for n in PE_COUNTS {
        let ns = n.to_string();
        let r = vkshmrun(&["-n", &ns, &prog, "1000"], Duration::from_secs(180));
        assert_eq!(
            r.code,
            Some(0),
            "host_barrier on {n} PEs:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        assert!(r.stdout.contains("host_barrier: ok"), "{}", r.stdout);
    }
}

#[test]
fn allocator_is_symmetric_and_detects_mismatch_and_exhaustion() {
    let prog = program("alloc_check");
    for n in [1u32, 2, 3, 4] {
        let ns = n.to_string();
        let r = vkshmrun(&["-n", &ns, &prog], Duration::from_secs(120));
        assert_eq!(
            r.code,
            Some(0),
            "alloc_check on {n} PEs:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        assert!(r.stdout.contains("alloc_check: ok"), "{}", r.stdout);
    }
}

fn pids_in(stdout: &str) -> Vec<u32> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid ")?.split(' ').next()?.parse().ok())
        .collect()
}

fn assert_gone(pids: &[u32]) {
    // A PE killed by PR_SET_PDEATHSIG dies when it next runs: on a loaded
    // machine that can be a moment after the launcher is gone.
    let until = Instant::now() + Duration::from_secs(5);
    for pid in pids {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or at worst a zombie awaiting init's reaping.
            if stat.is_empty() || stat.contains(") Z ") {
                break;
            }
            assert!(
                Instant::now() < until,
                "PE process {pid} still runs: {stat}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// From the failing PE's `PE <n>: fails at <ms>` line (tests/progs/pe_fault.rs)
/// to the job's exit: how long the launcher took to end the job, without the
/// start-up of its PEs (seconds on a busy machine).
fn since_failure(r: &Run) -> Duration {
    let ms: u64 = r
        .stderr
        .lines()
        .find_map(|l| l.split(": fails at ").nth(1))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no \"fails at\" line:\n{}", r.stderr));
    let failed = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    r.ended.duration_since(failed).unwrap_or_default()
}

#[test]
fn a_failing_pe_is_named_and_the_others_stopped() {
    let prog = program("pe_fault");
    for (mode, want, code) in [
        ("panic", "PE 1 exited with code 101", 101),
        ("exit3", "PE 1 exited with code 3", 3),
        ("sigkill", "PE 1 was killed by signal 9", 137),
    ] {
        for n in ["2", "4", "8"] {
            let r = vkshmrun(&["-n", n, &prog, mode, "1", "20"], Duration::from_secs(60));
            assert_eq!(r.code, Some(code), "{mode} on {n} PEs:\n{}", r.stderr);
            assert!(
                r.stderr.contains(want),
                "{mode} on {n} PEs: stderr lacks {want:?}:\n{}",
                r.stderr
            );
            // The flight recorder's table names it, in the call it was in.
            assert!(
                r.stderr.contains("PE 1 failed in barrier_all #"),
                "{mode} on {n} PEs: no table naming PE 1:\n{}",
                r.stderr
            );
            let t = since_failure(&r);
            assert!(
                t < Duration::from_secs(10),
                "{mode} on {n} PEs: the job ended {t:?} after the failure"
            );
            let pids = pids_in(&r.stdout);
            assert_eq!(pids.len(), n.parse::<usize>().unwrap(), "{}", r.stdout);
            assert_gone(&pids);
        }
    }
}

#[test]
fn a_panic_is_reported_within_seconds_on_4_pes() {
    // Timed from the panic: the set-up of 4 PEs on a busy machine is not the
    // launcher's reaction.
    let r = vkshmrun(
        &["-n", "4", &program("pe_fault"), "panic", "3", "5"],
        Duration::from_secs(60),
    );
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("vkshmrun: PE 3 exited with code 101"),
        "{}",
        r.stderr
    );
    // The panicking PE's own exit (the launcher waits up to 5 s for it, to
    // name it by its status) and the others' stop.
    let t = since_failure(&r);
    assert!(
        t < Duration::from_secs(10),
        "the job ended {t:?} after the panic"
    );
}

#[test]
fn a_pe_killed_inside_a_device_loop_fails_the_job_within_seconds() {
    pe_killed_inside_a_device_loop(&[]);
}

/// Every peer on "another device": the device barriers go through the proxy
/// threads (posted flag stores, quiets), and the survivors wait on them.
#[test]
fn a_pe_killed_in_a_device_loop_waiting_on_the_proxy_fails_the_job_within_seconds() {
    pe_killed_inside_a_device_loop(&[("VKSHMEM_TRANSPORT", "staged")]);
}

fn pe_killed_inside_a_device_loop(env: &[(&str, &str)]) {
    let _one = one_spinning_job();
    let marks = tempfile::tempdir().unwrap();
    let mark_dir = marks.path().to_string_lossy().into_owned();
    let killed_at = std::sync::Arc::new(std::sync::Mutex::new(None));
    let at = killed_at.clone();
    let dir = marks.path().to_path_buf();
    // Once every PE has finished a dispatch of device-side barriers (its kernel
    // built, the job in its loop), SIGKILL PE 2 while the others wait for it in
    // device code or in the launch's sync.
    let r = run_vkshmrun_env(
        &[
            "-n",
            "4",
            &program("pe_fault"),
            "device",
            "-",
            "100000",
            &mark_dir,
        ],
        env,
        Duration::from_secs(180),
        Leftovers::Forbidden,
        move |_| {
            let deadline = Instant::now() + Duration::from_secs(150);
            while (0..4).any(|pe| !dir.join(format!("pe{pe}")).exists()) {
                assert!(
                    Instant::now() < deadline,
                    "the PEs never reached their loops"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(300));
            let pid: i32 = std::fs::read_to_string(dir.join("pe2"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            *at.lock().unwrap() = Some(std::time::SystemTime::now());
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL).unwrap();
        },
    );
    let killed = killed_at.lock().unwrap().expect("the PE was killed");
    // The exit, not the return (after the leftover checks).
    let after = r.ended.duration_since(killed).unwrap_or_default();
    assert_eq!(r.code, Some(137), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("vkshmrun: PE 2 was killed by signal 9"),
        "{}",
        r.stderr
    );
    // vkshmrun_with has checked that no process, socket or temp file remains.
    assert!(
        after < Duration::from_secs(5),
        "the job ended {after:?} after the kill"
    );
    assert_gone(&pids_in(&r.stdout));
}

#[test]
fn init_and_finalize_100_times_leak_no_fds_or_memory() {
    // A job of one PE: no launcher. Fails on a leaked fd or per-round growth.
    let (stdout, _) = run_solo(&program("hygiene"), &["100"]);
    assert!(stdout.contains("hygiene: ok"), "{stdout}");
}

/// Sends `sig` to the launcher once its PEs have had 3 seconds to start.
fn signal_after(sig: Signal) -> impl FnOnce(u32) {
    move |pid| {
        std::thread::sleep(Duration::from_secs(3));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
    }
}

/// `vkshmrun --doctor` passes on this machine (its devices, where 2 PEs
/// go, a self-test of 2 PEs), and where Vulkan finds no driver it fails
/// naming the package to install.
#[test]
fn the_doctor_checks_the_machine() {
    let out = Command::new(vkshmrun_exe())
        .args(["--doctor", "-n", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "device [0] ",
        "PE 1 -> device [",
        "self-test: barrier_all ok",
        "self-test: host sum_reduce of 1024 f32 ok",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
    assert!(text.ends_with("ok\n"), "{text}");
    let out = Command::new(vkshmrun_exe())
        .arg("--doctor")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("apt-get install libvulkan1 mesa-vulkan-drivers"),
        "{text}"
    );
}

/// `VKSHMEM_TRACE` writes one trace of a 4-PE job: valid JSON, a lane per
/// PE, a span per call the program made (init's sync, the split, 6
/// reductions, finalize's barrier), phases inside their call.
#[test]
fn a_trace_has_a_lane_per_pe_and_a_span_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.json");
    let r = run_vkshmrun_env(
        &["-n", "4", &program("pe_fault"), "elsewhere", "99", "5"],
        &[("VKSHMEM_TRACE", path.to_str().unwrap())],
        Duration::from_secs(120),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    for pe in 0..4u64 {
        let mine: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["tid"].as_u64() == Some(pe))
            .collect();
        assert!(
            mine.iter()
                .any(|e| e["ph"] == "M" && e["args"]["name"] == format!("PE {pe}")),
            "no lane for PE {pe}"
        );
        let calls: Vec<&serde_json::Value> = mine
            .iter()
            .copied()
            .filter(|e| e["cat"] == "call")
            .collect();
        let mut names: Vec<String> = calls
            .iter()
            .map(|e| {
                e["name"]
                    .as_str()
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        names.sort();
        let mut want = vec!["barrier_all", "sync_all", "team_split_strided"];
        want.extend(["reduce"; 6]);
        want.sort();
        assert_eq!(names, want, "PE {pe}'s calls");
        // Every phase lies inside one of its PE's calls.
        for ph in mine.iter().filter(|e| e["cat"] == "phase") {
            let (ts, dur) = (ph["ts"].as_f64().unwrap(), ph["dur"].as_f64().unwrap());
            assert!(
                calls.iter().any(|c| {
                    let (cs, cd) = (c["ts"].as_f64().unwrap(), c["dur"].as_f64().unwrap());
                    cs - 0.01 <= ts && ts + dur <= cs + cd + 0.01
                }),
                "phase {ph} outside every call of PE {pe}"
            );
        }
        assert!(
            mine.iter().any(|e| e["cat"] == "phase"),
            "PE {pe}: no phases"
        );
    }
    assert!(
        r.stderr.contains("trace of 4 PEs written to"),
        "{}",
        r.stderr
    );
}

/// The table `vkshmrun --status` printed for the job whose processes
/// include `pid`.
fn job_table(status: &str, pid: u32) -> String {
    let mut out = String::new();
    let mut ours = false;
    for line in status.lines() {
        if let Some(pids) = line.strip_prefix("job of processes ") {
            ours = pids
                .trim_end_matches(':')
                .split(", ")
                .any(|p| p == pid.to_string());
        } else if ours {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A hung job is explained: PE 2 syncs a team of its own while the others
/// wait for it in WORLD's `sum_reduce` (`pe_fault elsewhere`). With a wait
/// timeout, the launcher's table names PE 2, where it is, and the others'
/// call.
#[test]
fn a_hung_job_is_explained_when_its_wait_times_out() {
    let r = vkshmrun(
        &[
            "-n",
            "3",
            "--wait-timeout",
            "3",
            &program("pe_fault"),
            "elsewhere",
            "2",
            "3",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let cause = r
        .stderr
        .lines()
        .find(|l| l.starts_with("PE 2 has not entered"))
        .unwrap_or_else(|| panic!("no cause line:\n{}", r.stderr));
    assert!(
        cause.starts_with("PE 2 has not entered reduce #")
            && cause.contains(" on WORLD: it is in team_sync #1 on team "),
        "{cause}"
    );
    // One row per PE, the others in the reduction.
    for pe in 0..2 {
        let row = format!("{pe:>4}  running    reduce");
        assert!(r.stderr.contains(&row), "no row {row:?}:\n{}", r.stderr);
    }
}

/// The same job with no timeout hangs; `vkshmrun --status` from elsewhere
/// and SIGQUIT to the launcher print the table, and the job goes on.
#[test]
fn status_and_sigquit_show_a_hung_job_that_goes_on() {
    let prog = program("pe_fault");
    let status_seen = std::sync::Mutex::new(String::new());
    let r = vkshmrun_with(
        &["-n", "3", &prog, "elsewhere", "2", "3"],
        Duration::from_secs(180),
        |pid| {
            let launcher = nix::unistd::Pid::from_raw(pid as i32);
            // Until the hang shows (set-up on a busy machine takes a while).
            let start = std::time::Instant::now();
            let out = loop {
                let o = Command::new(vkshmrun_exe())
                    .arg("--status")
                    .output()
                    .unwrap();
                let all = String::from_utf8_lossy(&o.stdout).into_owned();
                // This job's table (other tests' jobs may run beside it).
                let text = job_table(&all, pid);
                if text.contains("PE 2 has not entered reduce #") {
                    break text;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(120),
                    "no hang shown by --status:\n{text}"
                );
                std::thread::sleep(Duration::from_millis(500));
            };
            *status_seen.lock().unwrap() = out;
            nix::sys::signal::kill(launcher, Signal::SIGQUIT).unwrap();
            std::thread::sleep(Duration::from_secs(2));
            // Still running: SIGQUIT only asked.
            assert!(nix::sys::signal::kill(launcher, None).is_ok());
            nix::sys::signal::kill(launcher, Signal::SIGTERM).unwrap();
        },
    );
    let status = status_seen.into_inner().unwrap();
    assert!(status.contains("team_sync"), "{status}");
    assert!(
        r.stderr.contains("the job's calls now (SIGQUIT)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("PE 2 has not entered reduce #"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("SIGTERM"), "{}", r.stderr);
}

#[test]
fn sigint_reaches_every_pe() {
    let prog = program("pe_fault");
    let r = vkshmrun_with(
        &["-n", "4", &prog, "none", "0", "1000000000"],
        Duration::from_secs(30),
        signal_after(Signal::SIGINT),
    );
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(r.stderr.contains("SIGINT"), "{}", r.stderr);
    assert_gone(&pids_in(&r.stdout));
}

#[test]
fn pes_die_with_a_killed_launcher() {
    // SIGKILL cannot be forwarded: PR_SET_PDEATHSIG must take the PEs down.
    let prog = program("pe_fault");
    let r = vkshmrun_with(
        &["-n", "3", &prog, "none", "0", "1000000000"],
        Duration::from_secs(30),
        signal_after(Signal::SIGKILL),
    );
    assert_eq!(r.code, None, "killed by a signal");
    // vkshmrun_with has checked that no process of the job remains.
    assert_gone(&pids_in(&r.stdout));
}

#[test]
fn clean_runs_exit_zero() {
    let r = vkshmrun(
        &["-n", "3", &program("pe_fault"), "none", "0", "50"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(pids_in(&r.stdout).len(), 3);
}

#[test]
fn a_pe_that_finalizes_early_fails_the_job_instead_of_hanging() {
    // PE 0 leaves after 5 barriers, PE 1 wants 50: PE 1 must get an error, not hang.
    let prog = program("pe_fault");
    let script = format!(
        "if [ \"$VKSHMEM_PE\" = 0 ]; then exec {prog} none 0 5; else exec {prog} none 0 50; fi"
    );
    let r = vkshmrun(&["-n", "2", "sh", "-c", &script], Duration::from_secs(30));
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("PE 1: barrier_all failed: PE 0 failed: finalized"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_hung_pe_times_the_others_out_naming_the_collective_and_the_pe() {
    // PE 2 of 4 stops arriving at iteration 3 (alive, asleep). With
    // VKSHMEM_WAIT_TIMEOUT=5 the others' barrier_all fails with a timeout that
    // names the barrier and PE 2, and vkshmrun names PE 2 and stops it. (The
    // timeout holds for every wait, init's included: 1 s had been too short
    // for 4 PEs opening lavapipe on a busy machine.)
    let prog = program("pe_fault");
    let started = Instant::now();
    let r = vkshmrun(
        &[
            "-n",
            "4",
            "--label",
            "--wait-timeout",
            "5",
            &prog,
            "hang",
            "2",
            "3",
        ],
        Duration::from_secs(120),
    );
    let took = started.elapsed();
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    for pe in [0, 1, 3] {
        let want = format!("PE {pe}: barrier_all failed: barrier_all (barrier #");
        let line = r
            .stderr
            .lines()
            .find(|l| l.contains(&want))
            .unwrap_or_else(|| panic!("no timeout from PE {pe}:\n{}", r.stderr));
        assert!(
            line.contains("VKSHMEM_WAIT_TIMEOUT), waiting for PE 2"),
            "{line}"
        );
    }
    assert!(
        r.stderr
            .contains("vkshmrun: PE 2 did not arrive at barrier #"),
        "{}",
        r.stderr
    );
    // Timeout (5 s), blame (at most 5 s), grace (3 s) and start-up; far from the
    // PE's 10-minute sleep.
    let t = since_failure(&r);
    assert!(
        t < Duration::from_secs(40),
        "the job ended {t:?} after PE 2 hung"
    );
    assert!(took < Duration::from_secs(110), "took {took:?}");
}

#[test]
fn a_missing_program_is_reported() {
    let r = vkshmrun(
        &["-n", "2", "/nonexistent/program"],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(127));
    assert!(r.stderr.contains("cannot start PE 0"), "{}", r.stderr);
}

#[test]
fn bad_arguments_are_refused() {
    for args in [&["-n", "0", "true"][..], &["true"][..], &["-n", "2"][..]] {
        let out = Command::new(vkshmrun_exe()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// Device-initiated barriers (work_group and per-thread) through a user kernel,
/// checked after every barrier, on 1, 2, 3, 4 and 8 PEs (8 share this machine's
/// cores: lavapipe then waits for the scheduler at every barrier).
#[test]
fn device_barrier_on_1_to_8_pes() {
    let _one = one_spinning_job();
    let prog = program("device_barrier");
    // More PEs than cores on CI: every barrier waits for the scheduler, and the
    // wait throttle keeps lavapipe's loop budget from running out.
    for (n, k) in [
        ("1", "200"),
        ("2", "200"),
        ("3", "100"),
        ("4", "100"),
        ("8", "100"),
    ] {
        let r = vkshmrun(&["-n", n, &prog, k], Duration::from_secs(180));
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        assert_eq!(
            r.stdout.matches("device_barrier: ok").count(),
            1,
            "{}",
            r.stdout
        );
    }
}

/// A driver that cannot switch between processes while a kernel spins
/// (NVIDIA's: Xid 109, the context lost), forced here with
/// `VKSHMEM_CROSS_PROCESS_WAITS=0`: kernels that wait on PEs of other
/// processes and queue-ordered collectives are refused with a typed error on
/// every PE, at once, before anything spins; host collectives still run and
/// check; one PE alone keeps its device forms; the bench skips what cannot run.
#[test]
fn device_waits_across_processes_refused_where_the_driver_cannot() {
    let _one = one_spinning_job();
    let off = [("VKSHMEM_CROSS_PROCESS_WAITS", "0")];
    let refused = "device code that waits for PEs of other processes on this device";
    let t = Instant::now();
    let r = run_vkshmrun_env(
        &["-n", "2", &program("device_barrier"), "20"],
        &off,
        Duration::from_secs(120),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.matches(refused).count() >= 2, "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    // The staged transport on one device is still one device: refused too.
    let r = run_vkshmrun_env(
        &["-n", "2", &program("device_barrier"), "20"],
        &[off[0], ("VKSHMEM_TRANSPORT", "staged")],
        Duration::from_secs(120),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.matches(refused).count() >= 2, "{}", r.stderr);
    // Queue-ordered collectives too, before anything is submitted.
    let r = run_vkshmrun_env(
        &["-n", "2", &program("queue_check")],
        &off,
        Duration::from_secs(120),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!("queued broadcast: {refused}")),
        "{}",
        r.stderr
    );
    let (out, _) = run_solo(&program("device_barrier"), &["20"]);
    assert!(out.contains("device_barrier: ok"), "{out}");
    let bench = bin_dir()
        .join("vkshmem-bench")
        .to_string_lossy()
        .into_owned();
    // The bench on `n` PEs with the refusal forced, checked to succeed.
    let run = |n: &str| {
        let args = [
            "-n",
            n,
            &bench,
            "--no-roofline",
            "--collective",
            "barrier,broadcast,reduce",
            "--scope",
            "host,work_group,queue",
            "--check",
            "--max-bytes",
            "256",
            "--step-factor",
            "16",
            "--iters",
            "2",
        ];
        let r = run_vkshmrun_env(
            &args,
            &off,
            Duration::from_secs(300),
            Leftovers::Forbidden,
            |_| {},
        );
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains(" wrong=0 "), "{}", r.stdout);
        r
    };
    let r = run("3");
    let host_rows = r
        .stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("host"))
        .count();
    assert_eq!(host_rows, 5, "{}", r.stdout);
    for row in ["barrier work_group", "broadcast queue", "reduce work_group"] {
        assert!(
            r.stdout.contains(&format!(
                "# skipped: {row}: its device waits cross processes"
            )),
            "{row}: {}",
            r.stdout
        );
    }
    assert!(r.stdout.contains("atomic barrier -"), "{}", r.stdout);
    // One PE: nothing to wait for across processes; every form runs.
    let r = run("1");
    assert!(!r.stdout.contains("# skipped"), "{}", r.stdout);
}

/// User kernels: user-bound buffers + work_group barrier + reading a peer
/// (directly and through the proxy), bad WGSL pointing at the user's line,
/// out-of-heap and loop-cap device errors.
#[test]
fn user_kernels_on_1_to_4_pes() {
    let _one = one_spinning_job();
    let prog = program("user_kernel_check");
    // Direct, then with every peer on "another device": the kernel's peer
    // loads and its barrier go through the proxy.
    let staged = [("VKSHMEM_TRANSPORT", "staged")];
    let runs = [
        (1u32, &[][..]),
        (2, &[]),
        (3, &[]),
        (4, &[]),
        (3, &staged[..]),
    ];
    for (n, env) in runs {
        let r = run_vkshmrun_env(
            &["-n", &n.to_string(), &prog],
            env,
            Duration::from_secs(180),
            Leftovers::Forbidden,
            |_| {},
        );
        assert_eq!(
            r.code,
            Some(0),
            "{n} PEs {env:?}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        assert_eq!(
            r.stdout.matches("user_kernel_check: ok").count(),
            n as usize,
            "{}",
            r.stdout
        );
    }
}

/// The benchmark's host check of every collective on `n` PEs with `env`, at
/// 1 to 4 MiB: several 1 MiB staged rounds per member on the staged
/// transport; on one CPU device, the direct host path at those sizes.
fn staged_rounds_check(n: u32, env: &[(&str, &str)]) {
    let bench = bin_dir().join("vkshmem-bench");
    let bench = bench.to_str().unwrap();
    let n = n.to_string();
    let argv: Vec<&str> = ["-n", &n, bench].into_iter().chain(ROUNDS_CHECK).collect();
    let r = run_vkshmrun_env(
        &argv,
        env,
        Duration::from_secs(300),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("wrong=0"), "{}", r.stdout);
}

/// vkshmem-bench's arguments for a host check of every SHMEM collective
/// across several 1 MiB rounds of the staged transport per member (UCC's
/// calls move their data through host memory, not through the rounds; the
/// bench check covers them at smaller sizes). Without the roofline: results
/// only (its trials at every row's footprint cost more than the rows).
const ROUNDS_CHECK: [&str; 12] = [
    "--no-roofline",
    "--collective",
    "barrier,sync,broadcast,collect,fcollect,alltoall,alltoalls,reduce",
    "--scope",
    "host",
    "--check",
    "--min-bytes",
    "1M",
    "--max-bytes",
    "4M",
    "--iters",
    "2",
];

/// Runs the conformance harness (tests/progs/collectives_check.rs) on each
/// (PEs, flag) of `runs` with `env`: every PE must report over 100 checked
/// calls and nothing wrong.
fn conformance(runs: &[(u32, Option<&str>)], env: &[(&str, &str)]) -> Vec<Run> {
    let prog = program("collectives_check");
    let mut out = Vec::new();
    for &(n, flag) in runs {
        let mut argv = vec!["-n".to_string(), n.to_string(), prog.clone()];
        argv.extend(flag.map(String::from));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let r = run_vkshmrun_env(
            &argv,
            env,
            Duration::from_secs(600),
            Leftovers::Forbidden,
            |_| {},
        );
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        every_pe_checked(&r.stdout, "collectives_check", n, 100);
        out.push(r);
    }
    out
}

/// Host RMA, atomics, signals and waits (`rma_check`) on every transport:
/// direct on 1, 2, 3, 4 and 8 PEs; through the proxy (`staged`) on 2 and 3;
/// through device copies on a heap the host does not map (atomics by a
/// kernel); and, with the feature `mpi`, across nodes
/// under mpirun (3 PEs as nodes {0, 1} {2}, and 2 nodes of 2).
#[test]
fn host_rma_and_atomics_hold_on_every_transport() {
    let _one = one_spinning_job();
    let staged = [("VKSHMEM_TRANSPORT", "staged")];
    let pairs = [("VKSHMEM_TRANSPORT", "staged:2")];
    let unmapped = [("VKSHMEM_HEAP_MAPPING", "off")];
    let runs: [CheckRun; 8] = [
        (1, &[], &[]),
        (2, &[], &[]),
        (3, &[], &[]),
        (4, &[], &[]),
        (8, &[], &[]),
        (2, &staged, &[]),
        (3, &pairs, &[]),
        (3, &unmapped, &[]),
    ];
    checks_pass("rma_check", &runs, &[3, 4]);
}

/// UCC's collectives beyond SHMEM (`ucc_check`): on WORLD and a strided
/// team, uneven counts with zeros, roots other than 0, in place, bad input on
/// every member; on 1, 2, 3, 4 and 8 PEs, through the staged transport on 3,
/// with the host's mappings off for calls past 0 bytes on 9 and on a heap
/// the host does not map on 3, with each call's path traced (both: the
/// device's copies and folds, 9 for a fold over more members than one
/// launch binds; the unmapped run again with the first member submitting
/// every part), and across nodes under mpirun.
#[test]
fn ucc_collectives_conform_on_every_transport() {
    let _one = one_spinning_job();
    let pairs = [("VKSHMEM_TRANSPORT", "staged:2")];
    let unmapped = [("VKSHMEM_HEAP_MAPPING", "off")];
    let kernels = [("VKSHMEM_HOST_MAPPED_MAX", "0")];
    let runs: [CheckRun; 7] = [
        (1, &[], &[]),
        (2, &[], &[]),
        (3, &[], &[]),
        (4, &[], &[]),
        (8, &[], &[]),
        (3, &pairs, &[]),
        (9, &kernels, &[]),
    ];
    checks_pass("ucc_check", &runs, &[3]);
    // On a heap the host does not map, with the path each call took traced:
    // the device's copies and folds do run (a silent fallback to host
    // memory would pass the checks), the cases they cannot take (bytes
    // off whole words, writes over the exposed bytes) still go through host
    // memory, and the first member's exclusive scans zero the dest on the
    // device.
    let r = run_vkshmrun_env(
        &["-n", "3", &program("ucc_check")],
        &[
            unmapped[0],
            // Each member its own (NVIDIA's default is the first member).
            ("VKSHMEM_SUBMIT", "each"),
            ("RUST_LOG", "vkshmem_host::collective::ucc=trace"),
        ],
        Duration::from_secs(600),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("ucc_check: ok npes=3"), "{}", r.stdout);
    for (path, least) in [
        ("moved by the device's copies", 30),
        ("folded by the device", 20),
        ("moved through host memory", 5),
        ("folded in host memory", 5),
        // The first member's exclusive scans (in place and not).
        ("zeros written by the device or the mapping", 2),
    ] {
        let seen = r.stderr.matches(path).count();
        assert!(seen >= least, "{path}: {seen} times\n{}", r.stderr);
    }
    // The same with the team's first member submitting every member's part
    // (NVIDIA's default): the checks hold, and the calls the device takes
    // whole go that way; on 3 PEs with the heap unmapped, and on 9 with the
    // mappings off for every size (folds over more members than one launch
    // binds: chained steps, phase after phase).
    for (n, off) in [(3, unmapped[0]), (9, kernels[0])] {
        let r = run_vkshmrun_env(
            &["-n", &n.to_string(), &program("ucc_check")],
            &[
                off,
                ("VKSHMEM_SUBMIT", "leader"),
                ("RUST_LOG", "vkshmem_host::collective::ucc=trace"),
            ],
            Duration::from_secs(600),
            Leftovers::Forbidden,
            |_| {},
        );
        assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains(&format!("ucc_check: ok npes={n}")),
            "{}",
            r.stdout
        );
        let seen = r
            .stderr
            .matches("every part submitted by the team's first member")
            .count();
        assert!(
            seen >= 20,
            "{n} PEs: {seen} calls submitted together\n{}",
            r.stderr
        );
    }
}

/// Device one-sided communication: `device_rma_check` (putmem/getmem at odd
/// offsets in both forms, strided, put_signal set and add, the tests and
/// waits, bad input) and the `halo` example (put_signal and
/// signal_wait_until from a kernel, round after round, checked against the
/// host); on 1, 2, 3 and 8 PEs (4 across nodes), through the staged transport on 2 and 3,
/// on a heap the host does not map, and across nodes under mpirun.
#[test]
fn device_rma_and_halo_hold_on_every_transport() {
    let _one = one_spinning_job();
    let staged = [("VKSHMEM_TRANSPORT", "staged")];
    let pairs = [("VKSHMEM_TRANSPORT", "staged:2")];
    let unmapped = [("VKSHMEM_HEAP_MAPPING", "off")];
    // Its kernel is large (every call, inlined, each with a switch over the
    // PEs), and every PE compiles its own, cold on llvmpipe, in a time that
    // grows with the PEs sharing the cores. RMA has no power-of-two paths, so 1, 2 and
    // 3 PEs on one device (4 across nodes under mpirun), and 8 run the halo
    // only.
    let runs: [CheckRun; 5] = [
        (1, &[], &[]),
        (2, &[], &[]),
        (3, &[], &[]),
        (3, &pairs, &[]),
        (3, &unmapped, &[]),
    ];
    checks_pass("device_rma_check", &runs, &[4]);
    // Every step waits on both neighbours: 64 steps on 1, 3 and 8 PEs, and
    // through the proxy (staged, and across nodes).
    let runs: [CheckRun; 4] = [
        (1, &[], &[]),
        (3, &[], &[]),
        (8, &[], &[]),
        (2, &staged, &[]),
    ];
    checks_pass("halo", &runs, &[3]);
}

/// Device atomics and scans (`device_amo_check`): every invocation of every
/// PE on the counters of one PE at once, with exact totals (32- and 64-bit,
/// a compare_swap loop, swaps whose old values must be a permutation), one
/// call of each other operation over the AMO type lists, the sum scans on
/// WORLD and a strided team (in place, odd offsets, 1- to 8-byte types; in
/// jobs on one device), bad input; on 1, 2, 3 and 4 PEs, through the proxy
/// (staged:2 on 3: the 64-bit atomics as one request), on a heap the host
/// does not map, and across nodes under mpirun.
#[test]
fn device_atomics_and_scans_hold_on_every_transport() {
    let _one = one_spinning_job();
    let pairs = [("VKSHMEM_TRANSPORT", "staged:2")];
    let unmapped = [("VKSHMEM_HEAP_MAPPING", "off")];
    let runs: [CheckRun; 6] = [
        (1, &[], &[]),
        (2, &[], &[]),
        (3, &[], &[]),
        (4, &[], &[]),
        (3, &pairs, &[]),
        (3, &unmapped, &[]),
    ];
    checks_pass("device_amo_check", &runs, &[3]);
}

/// A check program's run: PEs, environment, arguments.
type CheckRun<'a> = (u32, &'a [(&'a str, &'a str)], &'a [&'a str]);

/// Runs the check program `name` through vkshmrun for each of `runs`, and
/// (feature `mpi`) under mpirun on each of `mpi_pes` PEs as nodes of 2;
/// each must exit 0 with `<name>: ok npes=<n>` and leave nothing behind.
fn checks_pass(name: &str, runs: &[CheckRun], mpi_pes: &[u32]) {
    let prog = program(name);
    for &(n, env, args) in runs {
        let nn = n.to_string();
        let argv: Vec<&str> = ["-n", &nn, &prog]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        // Generous: a check program's first run compiles its kernels for
        // every PE (minutes on llvmpipe with few cores); a hang still ends.
        let r = run_vkshmrun_env(
            &argv,
            env,
            Duration::from_secs(600),
            Leftovers::Forbidden,
            |_| {},
        );
        assert_eq!(
            r.code,
            Some(0),
            "{n} PEs {env:?}:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        let ok = format!("{name}: ok npes={n}");
        assert!(r.stdout.contains(&ok), "{}", r.stdout);
    }
    #[cfg(feature = "mpi")]
    for &n in mpi_pes {
        let r = mpirun(
            n,
            &[&prog],
            &[("VKSHMEM_NODE_SIZE", "2")],
            Duration::from_secs(600),
        );
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        let ok = format!("{name}: ok npes={n}");
        assert!(r.stdout.contains(&ok), "{}", r.stdout);
    }
    #[cfg(not(feature = "mpi"))]
    let _ = mpi_pes;
}

/// The staged transport (`VKSHMEM_TRANSPORT=staged`: every peer as if on
/// another device; `staged:2`: PEs in pairs as if each pair shared a device,
/// so that teams mix direct and staged members): the conformance harness on
/// 1, 2, 3, 4, 5 and 8 PEs, host forms through the staging buffers and
/// device forms through the proxy, and the benchmark's host check across
/// rounds (4 MiB: several 1 MiB rounds per member) on 3 PEs, every
/// collective.
#[test]
fn collectives_conform_through_the_staged_transport() {
    let _one = one_spinning_job();
    let staged = [("VKSHMEM_TRANSPORT", "staged")];
    let pairs = [("VKSHMEM_TRANSPORT", "staged:2")];
    // The device forms go through the proxy: --device-quick keeps their
    // kernels (tens of seconds each to compile on llvmpipe with proxied
    // paths) to two per form, on 3 PEs in pairs ({0, 1} direct, {2} apart:
    // PEs 0 and 1 reach one peer directly and one through the proxy in the
    // same kernel, PE 2 every peer through it); the other counts check the
    // host forms (CI time).
    conformance(&[(3, Some("--device-quick"))], &pairs);
    conformance(&[(5, Some("--quick"))], &pairs);
    // One PE has no peer to stage for: its host forms only (its device
    // forms are the plain one-PE run's, 7.6 s of CI time again).
    let runs = [
        (1, Some("--host-only")),
        (2, Some("--host-only")),
        (4, Some("--host-only")),
        (8, Some("--quick")),
    ];
    conformance(&runs, &staged);
    staged_rounds_check(3, &staged);
}

/// A heap the host does not map (`VKSHMEM_HEAP_MAPPING=off`, what a GPU
/// without a host-visible device-local heap gives): host access goes through
/// device copies, the small host path steps aside, and the staged transport
/// copies between the heap and the staging buffers imported into the device
/// (`VK_EXT_external_memory_host`). The conformance harness's host forms on 3
/// PEs, direct and staged, and the benchmark's host check across staged
/// rounds.
#[test]
fn collectives_conform_without_a_host_mapping() {
    let _one = one_spinning_job();
    let unmapped = [("VKSHMEM_HEAP_MAPPING", "off")];
    conformance(&[(3, Some("--host-only"))], &unmapped);
    let staged = [
        ("VKSHMEM_HEAP_MAPPING", "off"),
        ("VKSHMEM_TRANSPORT", "staged"),
    ];
    conformance(&[(3, Some("--host-only"))], &staged);
    staged_rounds_check(3, &staged);
}

/// One submitter per device (`VKSHMEM_SUBMIT=leader`, the default on
/// NVIDIA): the team's first member submits every member's launches
/// (`collective/part.rs`), the generic kernels' run as each member (set 0
/// bound as that member's: every PE of these jobs reaches every heap). Every
/// host collective on every team shape on the kernels
/// (`VKSHMEM_HOST_MAPPED_MAX=0`) on 2 and 3 PEs, fewer shapes and sizes on 8
/// (`--quick`, to keep the test short), checked against the host
/// reference; calls of both kinds must have run (wide only, and with generic
/// kernels run as the members), and none by each member alone, as the trace
/// says. Then reductions beyond 8 members in place (chained steps: phases
/// with barriers between them) and UCC's allgatherv in place on 10 PEs, and
/// the default (each its own on lavapipe) seen in the trace.
#[test]
fn collectives_conform_with_one_submitter_per_device() {
    let _one = one_spinning_job();
    let env = [
        ("VKSHMEM_SUBMIT", "leader"),
        ("VKSHMEM_HOST_MAPPED_MAX", "0"),
        ("RUST_LOG", "vkshmem_host::collective=trace"),
    ];
    for r in conformance(
        &[
            (2, Some("--host-only")),
            (3, Some("--host-only")),
            (8, Some("--quick")),
        ],
        &env,
    ) {
        let led = r
            .stderr
            .matches("every part submitted by the team's first member")
            .count();
        let as_members = r
            .stderr
            .matches("generic kernels run as each member")
            .count();
        let own = r
            .stderr
            .matches("each member submitted its own part")
            .count();
        assert!(
            led - as_members > 100 && as_members > 100 && own == 0,
            "led {led} ({as_members} with generic kernels), own {own}:\n{}",
            r.stdout
        );
    }
    for mode in ["leader", "auto"] {
        let (r, rows) = bench_rows(
            10,
            "--collective reduce,fcollect,allgatherv --scope host --check --min-bytes 16 --max-bytes 1M --step-factor 64 --iters 1 --warmup 0 --type int16 --op max --in-place",
            &[
                ("VKSHMEM_SUBMIT", mode),
                ("VKSHMEM_HOST_MAPPED_MAX", "0"),
                ("RUST_LOG", "vkshmem_host::collective=trace"),
            ],
        );
        // 3 collectives at 16 B, 1 KiB, 64 KiB (allgatherv in place: each
        // member's own part of the dest is its source; int16 parts of odd
        // counts are no whole words, so the buffered steps: ucc_check runs
        // the device's copies).
        assert_eq!(rows.len(), 3 * 3, "{rows:?}");
        for row in rows {
            assert!(row.contains(",10,") && row.ends_with(",0"), "{row}");
        }
        let led = r
            .stderr
            .contains("every part submitted by the team's first member");
        assert_eq!(led, mode == "leader", "{mode}");
    }
}

/// A submission recorded once runs again while the calls' dispatches are
/// the same (`VKSHMEM_REUSE_RECORDINGS`, `host/src/vk/submit.rs`): every
/// collective, the UCC set too, on 3 PEs on the kernels with one submitter,
/// each row's checked call (fresh pattern data, after the timed calls)
/// submitting the timed calls' recording again; sizes from 16 B to 1 MiB
/// move through different kernels, so the 16 slots are recorded over.
/// With the reuse off, nothing is submitted again, and the results hold the
/// same. (That a key holds every input of a recording, the push constants
/// too, is what the conformance runs with one submitter show: a key without
/// them failed collectives_check on 3 PEs with 16218 wrong elements.)
#[test]
fn recorded_submissions_run_again_on_fresh_data() {
    let _one = one_spinning_job();
    for reuse in ["on", "off"] {
        let (r, rows) = bench_rows(
            3,
            "--collective all --scope host --check --min-bytes 16 --max-bytes 1M --step-factor 256 --iters 2 --warmup 1 --type int32 --op xor",
            &[
                ("VKSHMEM_SUBMIT", "leader"),
                ("VKSHMEM_HOST_MAPPED_MAX", "0"),
                ("VKSHMEM_REUSE_RECORDINGS", reuse),
                ("RUST_LOG", "vkshmem_host::vk::submit=trace"),
            ],
        );
        // 18 collectives that move data (6 SHMEM, 12 UCC) at 16 B, 4 KiB
        // and 1 MiB (barrier and sync: one row each, nothing to check).
        let rows: Vec<_> = rows
            .into_iter()
            .filter(|r| !r.starts_with("barrier,") && !r.starts_with("sync,"))
            .collect();
        assert_eq!(rows.len(), 18 * 3, "{rows:?}");
        for row in &rows {
            assert!(row.contains(",3,") && row.ends_with(",0"), "{row}");
        }
        let again = r
            .stderr
            .matches("a recorded submission submitted again")
            .count();
        if reuse == "on" {
            // Every PE's checked call of every row ran a recording again
            // (the first member's: the team's submissions).
            assert!(again >= rows.len(), "{again} for {} rows", rows.len());
        } else {
            assert_eq!(again, 0);
        }
    }
}

/// Submissions seen done by a word in host memory that their last command
/// sets (`VKSHMEM_COMPLETION=word`, for measuring on GPUs), their fences
/// waited for at the next submission: host collectives on the kernels with
/// one submitter (checked, recordings run again, phases timed) and the
/// device forms' launches on 2 PEs. The fence poll is on (a microsecond
/// of spin, then the yielding polls; lavapipe's default is to block at
/// once), so that the word is polled.
#[test]
fn submissions_seen_done_by_their_word_keep_results_right() {
    let _one = one_spinning_job();
    let (r, rows) = bench_rows(
        2,
        "--collective broadcast,fcollect,alltoall,reduce,allreduce --scope host,work_group --check --min-bytes 16 --max-bytes 64K --step-factor 64 --iters 3 --warmup 1 --phases",
        &[
            ("VKSHMEM_SUBMIT", "leader"),
            ("VKSHMEM_HEAP_MAPPING", "off"),
            ("VKSHMEM_COMPLETION", "word"),
            ("VKSHMEM_FENCE_SPIN_US", "1"),
            ("RUST_LOG", "vkshmem_host::vk::submit=trace"),
        ],
    );
    // 5 collectives at 16 B, 1 KiB and 64 KiB on the host, 4 of them on
    // the device too (allreduce is UCC's: host only).
    assert_eq!(rows.len(), 5 * 3 + 4 * 3, "{rows:?}");
    for row in &rows {
        assert!(row.contains(",2,") && row.ends_with(",0"), "{row}");
    }
    let by_word = r
        .stderr
        .matches("a submission seen done by its word")
        .count();
    assert!(by_word >= rows.len(), "{by_word} for {} rows", rows.len());
}

/// Objects past the wide kernels' piece size (64 MiB) stay on the wide
/// kernels, in pieces: a reduction in place of 72 MiB (two pieces) and an
/// alltoall of 72 MiB blocks (each block alone, in two pieces: two blocks
/// pass lavapipe's largest binding, 128 MiB) on 2 PEs, checked, submitted by
/// the first member (which the trace shows only when every part of every
/// member is wide).
#[test]
fn wide_paths_cut_objects_past_the_largest_binding() {
    let _one = one_spinning_job();
    let (r, rows) = bench_rows(
        2,
        "--collective reduce,alltoall --in-place --min-bytes 72M --max-bytes 72M --scope host --check --iters 1 --warmup 0",
        &[
            ("VKSHMEM_SUBMIT", "leader"),
            ("VKSHMEM_HOST_MAPPED_MAX", "0"),
            ("VKSHMEM_SYMMETRIC_SIZE", "1G"),
            ("RUST_LOG", "vkshmem_host::collective=trace"),
        ],
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        assert!(row.ends_with(",0"), "{row}");
    }
    // Both rows' calls on the wide kernels (the bench's own reductions of
    // a few words run on the host path, untraced).
    for c in ["reduce", "alltoall"] {
        let led = format!("{c}: every part submitted by the team's first member");
        assert!(r.stderr.contains(&led), "{c}: not on the wide kernels");
    }
}

/// Objects off 16-byte alignment stay on the wide kernels where their
/// pieces are whole words: 4 bytes past alignment, every movement
/// collective and a reduction at 8 B a member (word by word, or from inside
/// the first vec4) and at 128 KiB a member (a pulled block's middle in
/// vec4s, its ends word by word; pushes and the reduction from inside the
/// first vec4), on 3 PEs, checked against the host reference, all submitted
/// by the first member with no generic kernel (the trace).
#[test]
fn misaligned_objects_of_whole_words_stay_wide() {
    let _one = one_spinning_job();
    let (r, rows) = bench_rows(
        3,
        "--collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --offset 4 --min-bytes 8 --max-bytes 128K --step-factor 16384 --scope host --check --iters 1 --warmup 0",
        &[
            ("VKSHMEM_SUBMIT", "leader"),
            ("VKSHMEM_HOST_MAPPED_MAX", "0"),
            ("RUST_LOG", "vkshmem_host::collective=trace"),
        ],
    );
    assert_eq!(rows.len(), 6 * 2, "{rows:?}");
    for row in &rows {
        assert!(row.ends_with(",0"), "{row}");
    }
    // The reduction's own line proves nothing here (the bench's reductions
    // over WORLD print it too): the two assertions after the loop hold it.
    for c in ["broadcast", "collect", "fcollect", "alltoall", "alltoalls"] {
        // ": collect:" is no part of ": fcollect:".
        let led = format!(": {c}: every part submitted by the team's first member\n");
        assert!(r.stderr.contains(&led), "{c}: not all on the wide kernels");
    }
    assert!(!r.stderr.contains("generic kernels run as each member"));
    assert!(!r.stderr.contains("each member submitted its own part"));
}

/// The `# phases` lines of a `bench_rows` run with `--phases --check`,
/// after asserting that every row found nothing wrong and has its line.
fn phase_lines<'a>(r: &'a Run, rows: &[String]) -> Vec<&'a str> {
    for row in rows {
        assert!(row.ends_with(",0"), "{row}");
    }
    let lines: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("# phases "))
        .collect();
    assert_eq!(lines.len(), rows.len(), "{}", r.stdout);
    lines
}

/// Runs the bench on `n` PEs with `args` (split at spaces) and `env`, its
/// CSV in a temporary file, without the roofline; the job must succeed.
/// Returns the run and the CSV's rows (no header).
fn bench_rows(n: u32, args: &str, env: &[(&str, &str)]) -> (Run, Vec<String>) {
    let bench = bin_dir()
        .join("vkshmem-bench")
        .to_string_lossy()
        .into_owned();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv").to_string_lossy().into_owned();
    let n = n.to_string();
    // Results only: no roofline (its copy kernels and trials at 72 MiB would
    // take most of the wide-paths test's time).
    let mut argv = vec!["-n", &n, &bench, "--no-roofline"];
    argv.extend(args.split_whitespace());
    argv.extend_from_slice(&["--csv", &csv]);
    let r = run_vkshmrun_env(
        &argv,
        env,
        Duration::from_secs(600),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = text.lines().skip(1).map(String::from).collect();
    (r, rows)
}

/// The conformance harness (tests/progs/collectives_check.rs): every host-initiated
/// collective on every team shape against a host reference, then bad input;
/// on 3 PEs in `vec4<u32>` units (`VKSHMEM_WIDE_UNIT=u32`, GPUs' default).
/// On 1, 2 and 8 PEs llvmpipe's default moves the host forms past the plane's
/// data slot on the host, straight from the members' mapped heaps
/// (`collective/direct.rs`; the staged rounds where a dest overlaps what
/// peers read); on 3
/// and 4 PEs on the kernels past it (`VKSHMEM_HOST_MAPPED_MAX=16K`, what a
/// GPU whose heap is host memory takes).
#[test]
fn collectives_conform_on_1_to_4_and_8_pes() {
    let _one = one_spinning_job();
    let prog = program("collectives_check");
    // Device forms compile one kernel per call and form, seconds each on llvmpipe:
    // the full device subset on 1 and 2 PEs, two calls per form beyond.
    conformance(&[(1, None), (2, None), (8, Some("--quick"))], &[]);
    let kernels = ("VKSHMEM_HOST_MAPPED_MAX", "16K");
    conformance(&[(4, Some("--device-quick"))], &[kernels]);
    // 3 PEs in the unit GPUs move (llvmpipe's default is vec2<u64>): the
    // host wide kernels' vec4<u32> loops and the device library's vec4<u32>
    // view.
    conformance(
        &[(3, Some("--device-quick"))],
        &[("VKSHMEM_WIDE_UNIT", "u32"), kernels],
    );
    // The example program (host allreduce, team broadcast, device reduction).
    let r = vkshmrun(
        &["-n", "3", &program("collectives")],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("collectives: ok on 3 PEs"),
        "{}",
        r.stdout
    );
    // Device-side misuse (a root outside the team) is reported by every PE.
    let r = vkshmrun(
        &["-n", "2", &prog, "--device-misuse"],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout.matches("device misuse reported").count(),
        2,
        "{}",
        r.stdout
    );
}

/// Under `mpirun` (cargo feature `mpi`), PE = rank: the conformance harness
/// on 2 and 3 ranks of one node, whose first rank runs the endpoint.
#[cfg(feature = "mpi")]
#[test]
fn collectives_conform_under_mpirun() {
    let _one = one_spinning_job();
    let prog = program("collectives_check");
    for n in [2u32, 3] {
        let r = mpirun(n, &[&prog, "--quick"], &[], Duration::from_secs(600));
        assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
        every_pe_checked(&r.stdout, "collectives_check", n, 50);
    }
    // The example program too (host allreduce, team broadcast, device reduction).
    let r = mpirun(3, &[&program("collectives")], &[], Duration::from_secs(300));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("collectives: ok on 3 PEs"),
        "{}",
        r.stdout
    );
}

/// Under `mpirun`, a rank killed in the middle of host barriers ends the job
/// within seconds and is named, whether it is a node's first rank (which runs
/// the endpoint: mpirun stops the others) or not (the endpoint tells the
/// others, which fail with `PeerFailed` naming it); nothing is left behind.
#[cfg(feature = "mpi")]
#[test]
fn a_rank_killed_under_mpirun_ends_the_job_within_seconds() {
    let _one = one_spinning_job();
    for bad in ["1", "0"] {
        kill_a_rank_under_mpirun(3, bad, &[]);
    }
}

/// Jobs of several nodes under mpirun (`VKSHMEM_NODE_SIZE` splits the ranks
/// of this machine into nodes): the conformance harness with teams that span
/// nodes (host collectives through each node's staging buffers and MPI among
/// the nodes' first members; device collectives through the proxies, over
/// MPI between nodes) on 3 PEs as nodes {0, 1} {2} (host and two device
/// kernels per form: the device library of PE 0 and 1 is that of the
/// staged:2 test's, which shares its compiled kernels), 4 PEs as 2 nodes of
/// 2 and 5 PEs as nodes of 2, 2 and 1 (host forms); the benchmark's host
/// check across several 1 MiB rounds per member on 4 PEs as 2 nodes of 2;
/// the example.
#[cfg(feature = "mpi")]
#[test]
fn collectives_conform_across_nodes_under_mpirun() {
    let _one = one_spinning_job();
    let prog = program("collectives_check");
    for (n, k, flag, min_calls) in [
        (3u32, "2", "--device-quick", 100),
        (4, "2", "--quick", 50),
        (5, "2", "--quick", 50),
    ] {
        let r = mpirun(
            n,
            &[&prog, flag],
            &[("VKSHMEM_NODE_SIZE", k)],
            Duration::from_secs(900),
        );
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        every_pe_checked(&r.stdout, "collectives_check", n, min_calls);
    }
    let bench = bin_dir().join("vkshmem-bench");
    let argv: Vec<&str> = std::iter::once(bench.to_str().unwrap())
        .chain(ROUNDS_CHECK)
        .collect();
    let r = mpirun(
        4,
        &argv,
        &[("VKSHMEM_NODE_SIZE", "2")],
        Duration::from_secs(600),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("wrong=0"), "{}", r.stdout);
    // The example (host allreduce, team broadcast, device reduction). Not
    // device_barrier: on llvmpipe its barriers across nodes (flags carried
    // over MPI by the proxies, milliseconds each) can outrun the driver's
    // loop budget despite the wait throttle (runs of 200 barriers failed
    // so); the conformance run above covers device forms across nodes.
    let r = mpirun(
        3,
        &[&program("collectives")],
        &[("VKSHMEM_NODE_SIZE", "2")],
        Duration::from_secs(600),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("collectives: ok on 3 PEs"),
        "{}",
        r.stdout
    );
}

/// In a job of several nodes, a rank killed in the middle of host barriers
/// ends the whole job within seconds, its node's endpoint naming it
/// (`MPI_Abort`: the other nodes do not hear that endpoint), or mpirun
/// naming it when it ran the endpoint; nothing is left behind.
#[cfg(feature = "mpi")]
#[test]
fn a_rank_killed_in_a_job_of_several_nodes_ends_it_within_seconds() {
    let _one = one_spinning_job();
    for bad in ["1", "2"] {
        kill_a_rank_under_mpirun(4, bad, &[("VKSHMEM_NODE_SIZE", "2")]);
    }
    // A rank that drops its context without finalize (an error returned
    // from main) ends the job as fast, saying so.
    for bad in ["1", "2"] {
        let r = mpirun(
            4,
            &[&program("pe_fault"), "drop", bad, "20"],
            &[("VKSHMEM_NODE_SIZE", "2")],
            Duration::from_secs(120),
        );
        let all = format!("{}{}", r.stdout, r.stderr);
        assert_ne!(r.code, Some(0), "{all}");
        assert!(
            r.elapsed < Duration::from_secs(60),
            "took {:?}: {all}",
            r.elapsed
        );
        assert!(
            all.contains(&format!("PE {bad} leaves the MPI job without finalize")),
            "{all}"
        );
    }
}

/// Runs pe_fault on `n` ranks with rank `bad` killed in the middle of host
/// barriers: the job must end within a minute, non-zero, naming it.
#[cfg(feature = "mpi")]
fn kill_a_rank_under_mpirun(n: u32, bad: &str, env: &[(&str, &str)]) {
    let r = mpirun(
        n,
        &[&program("pe_fault"), "sigkill", bad, "20"],
        env,
        Duration::from_secs(120),
    );
    let all = format!("{}{}", r.stdout, r.stderr);
    assert_ne!(r.code, Some(0), "{all}");
    assert!(
        r.elapsed < Duration::from_secs(60),
        "took {:?}: {all}",
        r.elapsed
    );
    assert!(
        all.contains(&format!("PE {bad} exited"))
            || all.contains(&format!("PE {bad} failed"))
            || all.contains(&format!("rank {bad} ")),
        "PE {bad} is not named: {all}"
    );
}

/// `vkshmem-bench --check` over every collective reports no wrong element and
/// writes the CSV columns of the issue.
/// The wide copies beyond 8 members (a launch per group of 8): on 9 PEs,
/// every pull collective and collect from one vec4 to 64 KiB per member,
/// checked (the 16-byte sizes and up take the wide path); then reductions on
/// 10 PEs (steps over groups of 8 sources).
#[test]
fn wide_copies_hold_beyond_8_members() {
    let _one = one_spinning_job();
    let (_, rows) = bench_rows(
        9,
        "--collective broadcast,fcollect,alltoall,collect,alltoalls,reduce --scope host --check --min-bytes 16 --max-bytes 64K --step-factor 8 --iters 1 --warmup 0 --type int16",
        &[],
    );
    // 6 collectives at 16, 128, 1024, 8192 and 65536 bytes.
    assert_eq!(rows.len(), 6 * 5, "{rows:?}");
    for row in rows {
        assert!(row.contains(",9,") && row.ends_with(",0"), "{row}");
    }
    // Reductions beyond 8 members on the kernels (no host path): in steps
    // over groups of 8 sources, then pushes. 10 PEs (groups of 8 and 2), in
    // place at a 4-byte offset (the objects start inside the kernels' first
    // vec4), sizes from one vec4 to 256 KiB, checked.
    let (_, rows) = bench_rows(
        10,
        "--collective reduce --scope host --check --min-bytes 16 --max-bytes 256K --step-factor 16 --iters 1 --warmup 0 --type float --op max --in-place --offset 4",
        &[("VKSHMEM_HOST_MAPPED_MAX", "0")],
    );
    // 16 B, 256 B, 4 KiB, 64 KiB.
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in rows {
        assert!(row.contains(",10,") && row.ends_with(",0"), "{row}");
    }
}

/// On a CPU device (llvmpipe) a host collective too large for the sync
/// plane's data slot moves on the host, straight from the members' mapped
/// heaps, with no submission (`collective/direct.rs`): every collective on 3
/// PEs, checked, from 24 B to 3.7 MiB a member, 16-bit elements 2 bytes off
/// alignment. `--phases` shows the path: no row records or submits anything;
/// within the data slot (16 KiB a member; the bench's sizes here are each
/// member's part) a row is only the meeting and the call, past it the direct
/// path's run and closing meeting once a call. Then 8 PEs, where reductions
/// past 256 KiB had gone to the kernels (the rounds read every member's
/// part on every member), and f16 reductions at every size (the host had
/// converted f16 in software): in place, 1 and 4 MiB, direct too. Then
/// every collective across 1-4 MiB on 4 PEs.
#[test]
fn host_collectives_move_on_the_host_on_a_cpu_device() {
    let _one = one_spinning_job();
    let direct = |r: &Run, rows: &[String]| {
        for l in phase_lines(r, rows) {
            assert!(l.contains(": meet ") && l.contains(", call "), "{l}");
            for kernel in ["record", "submit", "wait", "gpu"] {
                assert!(!l.contains(kernel), "a submission ({kernel}): {l}");
            }
            assert!(!l.contains(" x"), "a phase more than once a call: {l}");
            let bytes: u64 = l.split(' ').nth(3).unwrap().parse().unwrap();
            let past_slot = l.contains(", run ") && l.contains(", close ");
            assert_eq!(past_slot, bytes > 16 << 10, "{l}");
        }
    };
    let (r, rows) = bench_rows(
        3,
        "--collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --scope host --check --min-bytes 24 --max-bytes 4M --step-factor 11 --iters 2 --warmup 1 --type int16 --offset 2 --phases",
        &[],
    );
    // 6 collectives at 24 B, 264 B, 2904 B, 31944 B, 351384 B, 3865224 B.
    assert_eq!(rows.len(), 6 * 6, "{rows:?}");
    direct(&r, &rows);
    // The same with streaming stores (`collective::copy`), which the
    // default takes only past the cache: dests at 2 bytes past 64.
    let (r, rows) = bench_rows(
        3,
        "--collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --scope host --check --min-bytes 100K --max-bytes 1100K --step-factor 11 --iters 2 --warmup 1 --type int16 --offset 2 --phases",
        &[("VKSHMEM_HOST_STREAM", "on")],
    );
    assert_eq!(rows.len(), 6 * 2, "{rows:?}");
    direct(&r, &rows);
    // Streaming in place: a reduction's chunks combined in L1 (the
    // direct path streams out of place from the dest instead).
    let (r, rows) = bench_rows(
        3,
        "--collective reduce --scope host --check --min-bytes 100K --max-bytes 1100K --step-factor 11 --iters 2 --warmup 1 --type int16 --in-place --phases",
        &[("VKSHMEM_HOST_STREAM", "on")],
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    direct(&r, &rows);
    let (r, rows) = bench_rows(
        8,
        "--collective reduce --scope host --check --min-bytes 1M --max-bytes 4M --iters 2 --warmup 1 --type int8 --op max --in-place --phases",
        &[],
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    direct(&r, &rows);
    let (r, rows) = bench_rows(
        8,
        "--collective reduce --scope host --check --min-bytes 64K --max-bytes 4M --step-factor 64 --iters 2 --warmup 1 --type float16 --op sum --in-place --offset 2 --phases",
        &[],
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    direct(&r, &rows);
    staged_rounds_check(4, &[]);
}

/// Where the host does not map the heap (`VKSHMEM_HEAP_MAPPING=off`, as on
/// NVIDIA), a host collective on the kernels is one submission: its
/// launches and the copy of the device error words that they leave
/// (`Submitter::dispatch_many_reading`): a second submission for the error
/// words every call cost a large share of a small call on a GPU
/// (benches/RESULTS.md, "H200 phases of a host call"). The bench's
/// `--phases` counts them: every row's line has one recording, submit,
/// wait and GPU time per call (no `xN` multiplier), one submitter for both
/// PEs (NVIDIA's default), every collective checked from 16 B to 1 MiB.
/// The wait splits into its launch and signal (lavapipe has calibrated
/// timestamps).
#[test]
fn a_host_collective_is_one_submission_where_the_heap_is_not_mapped() {
    let _one = one_spinning_job();
    let (r, rows) = bench_rows(
        2,
        "--collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --scope host --check --min-bytes 16 --max-bytes 1M --step-factor 256 --iters 5 --warmup 1 --phases",
        &[("VKSHMEM_SUBMIT", "leader"), ("VKSHMEM_HEAP_MAPPING", "off")],
    );
    // 6 collectives at 16 B, 4 KiB and 1 MiB, checked.
    assert_eq!(rows.len(), 6 * 3, "{rows:?}");
    for l in phase_lines(&r, &rows) {
        let (_, phases) = l.split_once(": ").expect("a phases line names its row");
        let phases = phases.split(" (").next().unwrap();
        for want in [
            "meet", "run", "record", "submit", "launch", "wait", "gpu", "signal", "close", "call",
        ] {
            let p = phases
                .split(", ")
                .find(|p| p.split(' ').next() == Some(want))
                .unwrap_or_else(|| panic!("no {want} in {l}"));
            let us: f64 = p.split(' ').nth(1).unwrap().parse().unwrap();
            assert!(us >= 0.0, "{l}");
            assert!(!p.contains(" x"), "{want} ran other than once a call: {l}");
        }
    }
}

#[test]
fn bench_check_reports_no_wrong_elements() {
    let _one = one_spinning_job();
    let bench = bin_dir()
        .join("vkshmem-bench")
        .to_string_lossy()
        .into_owned();
    let dir = tempfile::tempdir().unwrap();
    let out = |f: &str| dir.path().join(f).to_string_lossy().into_owned();
    let (csv, plot) = (out("out.csv"), out("out.svg"));
    // Every collective in every form on 3 PEs, checked; sizes cross the
    // sub-word, single-word and many-word paths of the device code.
    let r = vkshmrun(
        &[
            "-n",
            "3",
            &bench,
            "--collective",
            "all",
            "--scope",
            "host,thread,work_group",
            "--check",
            "--min-bytes",
            "1",
            "--max-bytes",
            "4K",
            "--step-factor",
            "8",
            "--iters",
            "2",
            "--warmup",
            "1",
            "--type",
            "int16",
            "--op",
            "xor",
            "--workgroup-size",
            "32",
            "--csv",
            &csv,
            "--plot",
            &plot,
        ],
        Duration::from_secs(600),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(" wrong=0 "), "{}", r.stdout);
    assert!(r.stdout.contains("# floors: empty submit"), "{}", r.stdout);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("collective,scope,type,op,root,npes,bytes,count,median_us,min_us,max_us,algbw_GBps,busbw_GBps,roofline_pct,roofline_GBps,wrong")
    );
    let rows: Vec<&str> = lines.collect();
    for scope in ["host", "thread", "work_group"] {
        let n = rows
            .iter()
            .filter(|r| r.contains(&format!(",{scope},")))
            .count();
        // barrier, sync and 6 collectives at 2, 16, 128 and 1024 bytes;
        // in the host scope also UCC's 12 (uneven counts with zero parts
        // at the small sizes), in the device scopes UCC's gather, scatter,
        // reduce_scatter and the two scans.
        let ucc = if scope == "host" { 12 * 4 } else { 5 * 4 };
        assert_eq!(n, 2 + 6 * 4 + ucc, "{scope}: {text}");
    }
    for row in rows
        .iter()
        .filter(|r| !r.starts_with("barrier") && !r.starts_with("sync"))
    {
        assert!(row.ends_with(",0"), "{row}");
    }
    // The device reduce_scatter on a team that spans devices (PE 2 on
    // another device: through the proxy, PX_REDUCE's own form).
    let r = run_vkshmrun_env(
        &[
            "-n",
            "3",
            &bench,
            "--collective",
            "reduce_scatter",
            "--scope",
            "thread,work_group",
            "--check",
            "--min-bytes",
            "2",
            "--max-bytes",
            "1K",
            "--step-factor",
            "8",
            "--iters",
            "2",
            "--type",
            "int16",
            "--op",
            "xor",
            "--workgroup-size",
            "32",
            "--csv",
            &csv,
        ],
        &[("VKSHMEM_TRANSPORT", "staged:2")],
        Duration::from_secs(600),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2 * 4, "{text}");
    for row in rows {
        assert!(
            row.starts_with("reduce_scatter,") && row.ends_with(",0"),
            "{row}"
        );
    }
    // A latency and a busbw panel per form, one legend line per collective.
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.contains("<svg")
            && svg.contains("\nwork_group: latency\n")
            && svg.contains("\nwork_group: bus bandwidth\n")
            && svg.contains("\nreduce\n"),
        "{svg}"
    );
    // The queue scope: chains of queued collectives, checked, on both sides
    // of the one-invocation / pull-kernel boundary. The types and operation
    // are queue_check's, so the two tests share their kernels (each costs
    // llvmpipe seconds per PE to compile), and chains of 4 keep it short.
    let r = vkshmrun(
        &[
            "-n",
            "3",
            &bench,
            "--collective",
            "broadcast,collect,fcollect,reduce",
            "--scope",
            "queue",
            "--check",
            "--type",
            "float",
            "--op",
            "sum",
            "--min-bytes",
            "4",
            "--max-bytes",
            "4K",
            "--step-factor",
            "32",
            "--iters",
            "2",
            "--chain",
            "4",
            "--csv",
            &csv,
        ],
        Duration::from_secs(600),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    // 4 collectives at 4, 128 and 4096 bytes, every one checked.
    assert_eq!(rows.len(), 4 * 3, "{text}");
    for row in rows {
        assert!(row.contains(",queue,") && row.ends_with(",0"), "{row}");
    }
}

/// `vkshmem-bench --rma`: every row (put, get, fetch_add, the put_signal
/// round trip; host, thread, work_group) checked, on one device and through
/// the staged transport's proxy (PE 2 on another device of the node).
#[test]
fn bench_rma_sweep_checks_every_row() {
    let _one = one_spinning_job();
    let bench = bin_dir()
        .join("vkshmem-bench")
        .to_string_lossy()
        .into_owned();
    let pairs = [("VKSHMEM_TRANSPORT", "staged:2")];
    let plain: [(&str, &str); 0] = [];
    for env in [&plain[..], &pairs[..]] {
        let r = run_vkshmrun_env(
            &[
                "-n",
                "3",
                &bench,
                "--rma",
                "--scope",
                "all",
                "--min-bytes",
                "3",
                "--max-bytes",
                "4K",
                "--step-factor",
                "16",
                "--iters",
                "2",
                "--warmup",
                "1",
            ],
            env,
            Duration::from_secs(600),
            Leftovers::Forbidden,
            |_| {},
        );
        assert_eq!(r.code, Some(0), "{env:?}:\n{}\n{}", r.stdout, r.stderr);
        // put and get at 3, 48 and 768 bytes in 3 scopes, fetch_add in 2,
        // the round trip at 3 sizes in 2.
        assert!(
            r.stdout.contains("# 26 rows, wrong = 0"),
            "{env:?}: {}",
            r.stdout
        );
    }
}

#[test]
fn bench_on_a_team_checks_its_members_only() {
    let _one = one_spinning_job();
    let bench = bin_dir()
        .join("vkshmem-bench")
        .to_string_lossy()
        .into_owned();
    // PEs 2 and 0 (stride -2) of 3: PE 1 only keeps step.
    let r = vkshmrun(
        &[
            "-n",
            "3",
            &bench,
            "--no-roofline",
            "--team",
            "2:-2:2",
            "--root",
            "1",
            "--collective",
            "broadcast,alltoall,reduce,gatherv,reduce_to_root,exscan",
            "--check",
            "--max-bytes",
            "1K",
            "--iters",
            "2",
            // The warm-up's count agreed with PE 1 outside the team (a
            // disagreement would leave a member waiting for a call).
            "--warmup-ms",
            "5",
            "--type",
            "double",
            "--op",
            "max",
        ],
        Duration::from_secs(300),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("team 2:-2:2 (2 PEs)"), "{}", r.stdout);
    assert!(r.stdout.contains(" wrong=0 "), "{}", r.stdout);
    // Without the roofline, said so, and no row has a roofline_pct.
    assert!(
        r.stdout
            .contains("# roofline: not measured (--no-roofline)"),
        "{}",
        r.stdout
    );
    // Table rows: the scope is the second column, roofline% the tenth.
    let rows: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("host"))
        .collect();
    assert_eq!(rows.len(), 6 * 4, "{}", r.stdout);
    for row in rows {
        assert_eq!(row.split_whitespace().nth(9), Some("-"), "{row}");
    }
}

/// `litmus: stale=N rounds=M` from a litmus run.
fn litmus(n: &str, args: &[&str]) -> (u64, String) {
    let prog = program("litmus");
    let mut argv = vec!["-n", n, prog.as_str()];
    argv.extend_from_slice(args);
    let r = vkshmrun(&argv, Duration::from_secs(180));
    assert_eq!(
        r.code,
        Some(0),
        "{n} PEs {args:?}:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("litmus: "))
        .unwrap_or_else(|| panic!("no litmus line:\n{}", r.stdout))
        .to_string();
    let stale = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("stale="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no stale= in {line}"));
    (stale, line)
}

/// Message passing over the device barrier: no stale or torn word on 2 and 4
/// PEs, in workgroups of 64 and 8.
/// The control: the same check without synchronization, the PEs taking turns
/// (PE 0 first), must count every word PE 0 reads (nobody wrote them yet) and
/// every word of all but the last two rounds on the others (they read their
/// predecessor's last rounds). Racing PEs without synchronization are no
/// control: how the driver interleaves them decides the count, and CI once saw 0
/// in 200 rounds on lavapipe.
#[test]
fn litmus_message_passing() {
    let _one = one_spinning_job();
    // Workgroups of 64 and of 8: on lavapipe one SIMD row, linked without
    // barriers or fences (`LibraryConfig::row_lanes`), so that the CPU's
    // own ordering carries the messages.
    for (n, rounds) in [("2", "1000"), ("4", "100")] {
        for wg in ["64", "8"] {
            let (stale, line) = litmus(n, &[rounds, "--workgroup-size", wg]);
            assert_eq!(stale, 0, "{line}");
            assert!(line.contains(&format!("rounds={rounds}")), "{line}");
            assert!(line.contains(&format!("workgroup_size={wg} ")), "{line}");
        }
    }
    for (n, rounds) in [(2u64, 50u64), (3, 20)] {
        let (stale, line) = litmus(
            &n.to_string(),
            &[&rounds.to_string(), "--sync", "turns", "--words", "256"],
        );
        // A word whose expected value hashes to 0 would read right; allow a few.
        let floor = (rounds + (n - 1) * (rounds - 2)) * 256 - 8;
        assert!(
            stale >= floor,
            "without synchronization the check must see wrong words ({floor} at least): {line}"
        );
    }
}

/// Input validation (tests/progs/validation_check.rs): bad calls to every public
/// entry point give the exact typed error on every PE and leave the job usable;
/// then, in a job of one PE without the launcher, kernels built on one context
/// are refused by the next.
#[test]
fn bad_input_gives_typed_errors_and_the_job_stays_usable() {
    let prog = program("validation_check");
    for n in [1usize, 3] {
        let r = vkshmrun(&["-n", &n.to_string(), &prog], Duration::from_secs(180));
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        let lines: Vec<&str> = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("validation_check:"))
            .collect();
        assert_eq!(lines.len(), n, "{}", r.stdout);
        for l in lines {
            assert!(l.ends_with("failed=0"), "{l}\n{}", r.stderr);
            let checks: usize = l
                .split("checks=")
                .nth(1)
                .and_then(|x| x.split(' ').next())
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            assert!(checks >= 80, "too few checks: {l}");
        }
    }
    let (stdout, _) = run_solo(&prog, &["--foreign"]);
    assert!(
        stdout.contains("validation_check: checks=3 failed=0"),
        "{stdout}"
    );
}

/// The `checks=N` of every `prog: checks=N failed=0` line; asserts there are `n`
/// such lines and none failed.
fn all_checks_passed(prog: &str, n: usize, r: &Run) -> Vec<usize> {
    let lines: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with(&format!("{prog}:")))
        .collect();
    assert_eq!(lines.len(), n, "{}\n{}", r.stdout, r.stderr);
    lines
        .iter()
        .map(|l| {
            assert!(l.ends_with("failed=0"), "{l}\n{}", r.stderr);
            l.split("checks=")
                .nth(1)
                .and_then(|x| x.split(' ').next())
                .and_then(|x| x.parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

#[test]
fn misuse_is_refused_and_zero_length_calls_work_host_and_device() {
    let prog = program("misuse_check");
    // Device forms (a kernel per collective and form: llvmpipe compiles each
    // for seconds) on 2 PEs; the host part on 1, 3 and 4.
    let _spin = one_spinning_job();
    let r = vkshmrun(&["-n", "2", &prog], Duration::from_secs(300));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(all_checks_passed("misuse_check", 2, &r)
        .iter()
        .all(|&c| c >= 90));
    drop(_spin);
    for n in [1usize, 3, 4] {
        let r = vkshmrun(
            &["-n", &n.to_string(), &prog, "--host-only"],
            Duration::from_secs(120),
        );
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        all_checks_passed("misuse_check", n, &r);
    }
}

/// Without the cargo feature `mpi`, ranks of another launcher fail at init
/// with an error naming the launcher and vkshmrun; with it, ranks of an MPI
/// launcher are the PEs (and a rank whose environment names more ranks than
/// MPI sees fails saying so).
#[test]
fn ranks_of_another_launcher_do_not_run_as_separate_jobs() {
    let prog = program("heap_ring");
    // What mpirun, mpiexec and srun set in every rank's environment.
    for (var, who) in [
        ("OMPI_COMM_WORLD_SIZE", "Open MPI"),
        ("PMI_SIZE", "MPI launcher"),
        ("SLURM_STEP_NUM_TASKS", "srun"),
    ] {
        let out = Command::new(&prog)
            .env(var, "2")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{var}: ran as a job of its own:\n{err}"
        );
        if cfg!(feature = "mpi") && var != "SLURM_STEP_NUM_TASKS" {
            // MPI initialises as a singleton: 1 rank, not the 2 named.
            assert!(err.contains("MPI sees 1 rank"), "{var}: {err}");
        } else {
            assert!(
                err.contains(who) && err.contains("vkshmrun -n 2"),
                "{var}: {err}"
            );
        }
    }
    #[cfg(feature = "mpi")]
    {
        let r = mpirun(2, &[&prog], &[], Duration::from_secs(120));
        assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("heap_ring: ok"), "{}", r.stdout);
    }
    // The real thing, where Open MPI is installed (`cargo xtask bench
    // --compare-mpi` installs it): every rank fails, none reports success.
    #[cfg(not(feature = "mpi"))]
    if let Ok(out) = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2", &prog])
        .env("RUST_BACKTRACE", "0")
        .output()
    {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{all}");
        assert!(!all.contains("heap_ring: ok"), "{all}");
        assert!(all.contains("vkshmrun -n 2"), "{all}");
    }
}

#[test]
fn heap_sizes_the_device_cannot_take_name_the_variable_and_the_limits() {
    let prog = program("heap_ring");
    for (size, words) in [
        ("1K", &["VKSHMEM_SYMMETRIC_SIZE", "below the minimum"][..]),
        (
            "1T",
            &[
                "VKSHMEM_SYMMETRIC_SIZE",
                "maxMemoryAllocationSize",
                "minimum",
            ][..],
        ),
    ] {
        let out = Command::new(&prog)
            .env("VKSHMEM_SYMMETRIC_SIZE", size)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{size}: {err}");
        for w in words {
            assert!(err.contains(w), "{size}: no {w:?} in {err}");
        }
    }
}

/// Transports are symmetric: PEs that ask for different transport modes
/// (`VKSHMEM_TRANSPORT`) all fail at init, naming the variable.
#[test]
fn pes_asking_for_different_transport_modes_fail_alike() {
    let prog = program("heap_ring");
    let script = format!(
        "if [ \"$VKSHMEM_PE\" = 1 ]; then export VKSHMEM_TRANSPORT=staged; fi; exec {prog}"
    );
    let r = vkshmrun(&["-n", "2", "sh", "-c", &script], Duration::from_secs(120));
    assert_ne!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("VKSHMEM_TRANSPORT")
            && r.stderr.contains("every PE must ask for the same"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_pe_killed_in_a_shared_memory_barrier_gets_every_peer_out_with_an_error() {
    // Host barriers run on the sync plane (node shared memory), not through the
    // endpoint: the survivors, asleep on a futex, must hear of the death (the
    // endpoint raises the segment's abort word) and return PeerFailed naming
    // PE 1 by themselves. They ignore SIGTERM, so the launcher's stop cannot do
    // it for them (its SIGKILL comes only after a 30 s grace).
    let prog = program("pe_fault");
    let script = format!("PE_FAULT_IGNORE_TERM=1 exec {prog} sigkill 1 200");
    for n in ["2", "4", "8"] {
        let r = vkshmrun(
            &["-n", n, "--grace", "30", "sh", "-c", &script],
            Duration::from_secs(90),
        );
        assert_eq!(r.code, Some(137), "{n} PEs:\n{}", r.stderr);
        let npes: u32 = n.parse().unwrap();
        for pe in (0..npes).filter(|&p| p != 1) {
            let want = format!("PE {pe}: barrier_all failed: PE 1 failed");
            assert!(
                r.stderr.contains(&want),
                "{n} PEs: no {want:?}:\n{}",
                r.stderr
            );
            let out = format!("PE {pe}: out after ");
            let ms: u64 = r
                .stderr
                .lines()
                .find_map(|l| l.split(&out).nth(1))
                .and_then(|t| t.trim_end_matches(" ms").parse().ok())
                .unwrap_or_else(|| panic!("no {out:?}:\n{}", r.stderr));
            assert!(ms < 5000, "{n} PEs: PE {pe} left after {ms} ms");
        }
        // Before the launcher's SIGKILL (30 s after its stop): they left by
        // themselves.
        let t = since_failure(&r);
        assert!(
            t < Duration::from_secs(25),
            "{n} PEs: ended {t:?} after the kill"
        );
        let pids = pids_in(&r.stdout);
        assert_eq!(pids.len(), npes as usize, "{}", r.stdout);
        assert_gone(&pids);
    }
}

/// Queued collectives (tests/progs/queue_check.rs: the checking harness in
/// the queue form, the host left free while a peer posts late, several in
/// flight, persistent runs, a dropped request) on 2 and 3 PEs, and the
/// queue_pipeline example (the program's own device and command buffer) on
/// 1 to 4 PEs. (Each queue kernel costs llvmpipe seconds per PE to compile:
/// the harness runs at the PE counts where the pipeline's kernels then come
/// from the cache.)
#[test]
fn queued_collectives_conform_and_leave_the_host_free() {
    let _one = one_spinning_job();
    let prog = program("queue_check");
    for n in [2u32, 3] {
        let r = vkshmrun(&["-n", &n.to_string(), &prog], Duration::from_secs(600));
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        every_pe_checked(&r.stdout, "queue_check", n, 50);
        assert!(
            r.stdout.contains("queue_check: host free: post"),
            "{}",
            r.stdout
        );
    }
    let pipeline = program("queue_pipeline");
    for n in ["2", "3", "4"] {
        let r = vkshmrun(&["-n", n, &pipeline, "3000"], Duration::from_secs(300));
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("queue_pipeline: ok"), "{}", r.stdout);
    }
}

/// Queued collectives on a team that spans devices (`staged:2`: PEs 0 and 1
/// share a device, PE 2 is apart): their kernels reach the other device's
/// PEs through the proxies, which the queue's progress thread keeps polling.
/// Two kernels only (`--short`): with proxied paths each costs llvmpipe tens
/// of seconds per PE to compile.
#[test]
fn queued_collectives_span_devices_through_the_proxy() {
    let _one = one_spinning_job();
    let prog = program("queue_check");
    let r = run_vkshmrun_env(
        &["-n", "3", &prog, "--short"],
        &[("VKSHMEM_TRANSPORT", "staged:2")],
        Duration::from_secs(600),
        Leftovers::Forbidden,
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    // 20 persistent runs, a dropped request, 3 large reductions: 24 checked
    // (more than 23).
    every_pe_checked(&r.stdout, "queue_check", 3, 23);
}

/// A PE that dies while its peers wait in a queued collective: their `wait`
/// returns `PeerFailed` naming it within seconds (they ignore the launcher's
/// SIGTERM, so they must get out by themselves), and nothing is left behind.
#[test]
fn a_peer_that_dies_fails_queued_collectives_within_seconds() {
    let _one = one_spinning_job();
    let prog = program("queue_check");
    let r = vkshmrun(
        &["-n", "3", "--grace", "30", &prog, "--peer-dies"],
        Duration::from_secs(300),
    );
    assert_eq!(r.code, Some(3), "{}\n{}", r.stdout, r.stderr);
    let after: Vec<f64> = r
        .stdout
        .lines()
        .filter_map(|l| l.split("peer failure reported after ").nth(1))
        .map(|t| {
            let secs = |u: &str, k: f64| {
                t.strip_suffix(u)
                    .and_then(|v| v.parse::<f64>().ok())
                    .map(|v| v * k)
            };
            secs("ms", 1e-3)
                .or_else(|| secs("µs", 1e-6))
                .or_else(|| secs("s", 1.0))
                .unwrap_or(f64::MAX)
        })
        .collect();
    assert_eq!(after.len(), 2, "{}\n{}", r.stdout, r.stderr);
    // vkshmrun() has checked that no process, socket or temp file remains.
    assert!(after.iter().all(|&s| s < 5.0), "{after:?}");
}

/// A device-side failure in a queued collective (a collect whose total
/// overflows PE 0's dest) is reported by that PE's `wait` as `Error::Device`
/// with `ERR_BAD_ARGUMENT`; its peers complete.
#[test]
fn a_device_error_in_a_queued_collective_is_reported_at_wait() {
    let _one = one_spinning_job();
    let r = vkshmrun(
        &["-n", "2", &program("queue_check"), "--bad-collect"],
        Duration::from_secs(300),
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout.matches("bad collect reported").count(),
        1,
        "{}",
        r.stdout
    );
}

/// Data-parallel training on vkshmem-wgpu (wgpu/examples/train.rs): the
/// gradients summed on the queue every step, the parameters bitwise alike
/// on every PE after each step and within tolerance of a one-PE host
/// reference, the loss falling; on 1 to 4 PEs with f32 gradients, and on 3
/// with bf16 ones.
#[test]
fn training_on_wgpu_matches_one_pe_on_every_pe_count() {
    let _one = one_spinning_job();
    let prog = program("train");
    let runs: [&[&str]; 5] = [
        &["-n", "1"],
        &["-n", "2"],
        &["-n", "3"],
        &["-n", "4"],
        &["-n", "3"],
    ];
    for (i, run) in runs.iter().enumerate() {
        let mut argv: Vec<&str> = run.to_vec();
        argv.extend([prog.as_str(), "--steps", "40", "--timed-steps", "5"]);
        if i == 4 {
            argv.push("--bf16");
        }
        let r = vkshmrun(&argv, Duration::from_secs(300));
        assert_eq!(r.code, Some(0), "{argv:?}:\n{}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("train: ok"), "{argv:?}: {}", r.stdout);
    }
}

/// A wgpu program on vkshmem-wgpu (wgpu/examples: a wgpu compute pass writes
/// the gradients into a symmetric buffer, vkshmem sums them on wgpu's own
/// Vulkan device, posted after the pass) on 1 to 4 PEs.
#[test]
fn a_wgpu_program_reduces_what_its_compute_pass_wrote() {
    let _one = one_spinning_job();
    let prog = program("wgpu_allreduce");
    for n in ["1", "2", "3", "4"] {
        let r = vkshmrun(&["-n", n, &prog], Duration::from_secs(300));
        assert_eq!(r.code, Some(0), "{n} PEs:\n{}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("wgpu_allreduce: ok"), "{}", r.stdout);
    }
}
