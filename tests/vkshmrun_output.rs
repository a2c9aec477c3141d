//! How `vkshmrun` forwards the PEs' output: whole lines whatever the PEs do at
//! once, bytes unchanged, error reports of several PEs folded into one, bad flags
//! named as flags.
//!
//! The PEs are `tests/progs/pe_output.rs` (an example built beside vkshmrun) or
//! `sh -c` scripts: vkshmrun does not need a PE to join the job. No test depends
//! on timing tighter than seconds: PEs that must all report before the job is
//! stopped ignore SIGTERM and first wait for each other (a file barrier or a
//! vkshmem barrier).

mod common;
use common::{program, run_vkshmrun, vkshmrun, vkshmrun_exe, vkshmrun_with, Leftovers};

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Waits until every PE of `npes` has written `dir/pe<N>`.
fn wait_for_marks(dir: &Path, npes: u32, within: Duration) {
    let deadline = Instant::now() + within;
    while (0..npes).any(|pe| !dir.join(format!("pe{pe}")).exists()) {
        assert!(Instant::now() < deadline, "the PEs never got ready");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The payload of line `i` of PE `pe` on `stream`, as `pe_output lines` writes it
/// (a copy of `payload` in tests/progs/pe_output.rs).
fn payload(pe: u32, stream: &str, i: u32) -> String {
    let len = 20 + ((pe * 7919 + i * 104_729) % 180) as usize;
    let c = (b'a' + ((pe + i) % 26) as u8) as char;
    format!("{stream}{}", c.to_string().repeat(len))
}

/// What `pe_output binary` writes (a copy of `binary_blob` there).
fn binary_blob() -> Vec<u8> {
    let mut blob: Vec<u8> = (0..4 * 256).map(|i| i as u8).collect();
    blob.extend((0..1u32 << 20).map(|i| 1 + (i % 251) as u8 + u8::from(i % 251 == 9)));
    blob
}

/// Checks that `text` is exactly `lines` lines of each of `npes` PEs on `stream`,
/// every one whole (`[pe] ` first when `label`) and in each PE's order.
fn assert_whole_lines(text: &str, npes: u32, lines: u32, stream: &str, label: bool) {
    let mut next = vec![0u32; npes as usize];
    for line in text.lines() {
        let (tag, rest) = match label {
            true => line
                .strip_prefix('[')
                .and_then(|l| l.split_once("] "))
                .map(|(tag, rest)| (tag.parse::<u32>().ok(), rest))
                .unwrap_or_else(|| panic!("unlabelled line on {stream}: {line:?}")),
            false => (None, line),
        };
        let fields: Vec<&str> = rest.splitn(5, ' ').collect();
        let (pe, i) = match fields[..] {
            ["pe", pe, s, i, _] if s == stream => (pe.parse::<u32>(), i.parse::<u32>()),
            _ => panic!("merged or foreign line on {stream}: {line:?}"),
        };
        let (Ok(pe), Ok(i)) = (pe, i) else {
            panic!("merged line on {stream}: {line:?}");
        };
        assert!(pe < npes, "{line:?}");
        if label {
            assert_eq!(tag, Some(pe), "label of {line:?}");
        }
        let want = format!("pe {pe} {stream} {i} {}", payload(pe, stream, i));
        assert_eq!(
            rest, want,
            "a line of PE {pe} on {stream} was cut or merged"
        );
        assert_eq!(
            i, next[pe as usize],
            "PE {pe}'s line {i} out of order on {stream}"
        );
        next[pe as usize] += 1;
    }
    assert_eq!(next, vec![lines; npes as usize], "lines lost on {stream}");
}

/// 8 PEs write thousands of lines to stdout and stderr at once, each line in three
/// write(2) calls: every line comes out whole, on its own stream, none lost, with
/// and without `--label`.
#[test]
fn lines_of_8_pes_writing_at_once_stay_whole() {
    let prog = program("pe_output");
    for (label, lines) in [(false, 3000u32), (true, 1000)] {
        let n = lines.to_string();
        let mut args = vec!["-n", "8"];
        if label {
            args.push("--label");
        }
        args.extend([prog.as_str(), "lines", &n]);
        let r = vkshmrun(&args, Duration::from_secs(240));
        assert_eq!(r.code, Some(0), "{}", r.stderr.clone());
        assert_whole_lines(&r.stdout.clone(), 8, lines, "out", label);
        assert_whole_lines(&r.stderr.clone(), 8, lines, "err", label);
    }
}

/// Every byte value and a 1 MiB line without a newline pass through stdout and
/// stderr byte for byte.
#[test]
fn binary_output_and_a_1_mib_line_pass_unchanged() {
    let r = vkshmrun(
        &["-n", "1", &program("pe_output"), "binary"],
        Duration::from_secs(120),
    );
    assert_eq!(
        r.code,
        Some(0),
        "{}",
        r.stderr.clone().chars().take(2000).collect::<String>()
    );
    let blob = binary_blob();
    assert!(
        r.stdout_raw == blob,
        "stdout changed: {} bytes for {}",
        r.stdout_raw.len(),
        blob.len()
    );
    assert!(
        r.stderr_raw == blob,
        "stderr changed: {} bytes for {}",
        r.stderr_raw.len(),
        blob.len()
    );
}

/// A last line without a newline still comes out, and one PE's unfinished line
/// never takes another PE's line; a process a PE left behind holding its pipes
/// does not keep vkshmrun waiting.
#[test]
fn unfinished_lines_and_pipes_left_open() {
    let script =
        r#"sleep 120 & echo "bg $!"; echo "err $VKSHMEM_PE" >&2; printf "tail $VKSHMEM_PE""#;
    let started = Instant::now();
    // The script leaves a `sleep` behind on purpose (killed below).
    let r = run_vkshmrun(
        &["-n", "3", "sh", "-c", script],
        Duration::from_secs(100),
        Leftovers::ProcessesAllowed,
        |_| {},
    );
    let took = started.elapsed();
    let out = r.stdout.clone();
    for line in out.lines().filter_map(|l| l.strip_prefix("bg ")) {
        let pid: i32 = line.trim().parse().unwrap();
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
    }
    assert_eq!(r.code, Some(0), "{}", r.stderr.clone());
    assert!(
        took < Duration::from_secs(60),
        "vkshmrun waited {took:?} for the pipes"
    );
    for pe in 0..3 {
        let tail = format!("tail {pe}");
        let tails: Vec<&str> = out.lines().filter(|l| l.contains(&tail)).collect();
        assert_eq!(tails, [tail.as_str()], "{out:?}");
        assert!(
            r.stderr.clone().lines().any(|l| l == format!("err {pe}")),
            "{}",
            r.stderr.clone()
        );
    }
}

/// The report lines of `stderr` that start with `[who] `, which must follow each
/// other (a report is printed as one block).
fn report(stderr: &str, who: &str) -> Vec<String> {
    let prefix = format!("[{who}] ");
    let lines: Vec<&str> = stderr.lines().collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(&prefix))
        .collect();
    assert!(!at.is_empty(), "no report of {who}:\n{stderr}");
    assert_eq!(
        at.last().unwrap() - at[0] + 1,
        at.len(),
        "report of {who} interleaved:\n{stderr}"
    );
    at.iter()
        .map(|&i| lines[i][prefix.len()..].to_string())
        .collect()
}

const SAME_REPORT: [&str; 4] = [
    "Error: writing checkpoint 7",
    "",
    "Caused by:",
    "    disk quota exceeded",
];

/// The PE that vkshmrun's blame line names, checking the line's form.
fn blamed(stderr: &str) -> u32 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("vkshmrun: PE ") && l.ends_with("; stopping the other PEs"))
        .unwrap_or_else(|| panic!("no blame line:\n{stderr}"));
    line["vkshmrun: PE ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The PEs of a compact list such as `0-2,4,6,7`.
fn expand(list: &str) -> Vec<u32> {
    let mut pes = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        pes.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap());
    }
    pes
}

/// 8 PEs failing with the same anyhow error: one report, naming all 8, after the
/// blame line; their ordinary output still streams, whole.
#[test]
fn identical_errors_of_8_pes_fold_into_one_report() {
    let marks = tempfile::tempdir().unwrap();
    let dir = marks.path().to_string_lossy().into_owned();
    let r = vkshmrun(
        &[
            "-n",
            "8",
            "--grace",
            "60",
            &program("pe_output"),
            "fail",
            &dir,
        ],
        Duration::from_secs(120),
    );
    let err = r.stderr.clone();
    assert_eq!(r.code, Some(1), "{err}");
    assert_eq!(report(&err, "PEs 0-7"), SAME_REPORT, "{err}");
    assert_eq!(err.matches("Error:").count(), 1, "{err}");
    let blame = blamed(&err);
    assert!(
        err.find("vkshmrun: PE ").unwrap() < err.find("[PEs 0-7]").unwrap(),
        "{err}"
    );
    let others: Vec<u32> = (0..8).filter(|&p| p != blame).collect();
    let summary = format!("vkshmrun: after PE {blame} failed: PEs ");
    let line = err
        .lines()
        .find_map(|l| {
            l.strip_prefix(&summary)?
                .strip_suffix(" exited with code 1")
        })
        .unwrap_or_else(|| panic!("no summary line:\n{err}"));
    assert_eq!(expand(line), others, "{line}");
    for pe in 0..8 {
        assert!(
            err.lines()
                .any(|l| l == format!("pe {pe}: a warning on stderr")),
            "{err}"
        );
        assert!(
            r.stdout
                .clone()
                .lines()
                .any(|l| l == format!("pe {pe} starting")),
            "{}",
            r.stdout.clone()
        );
    }
}

/// One PE's error differs from the other 7's: two reports, each naming its PEs.
#[test]
fn differing_errors_stay_separate_and_attributed() {
    let marks = tempfile::tempdir().unwrap();
    let dir = marks.path().to_string_lossy().into_owned();
    let r = vkshmrun(
        &[
            "-n",
            "8",
            "--grace",
            "60",
            &program("pe_output"),
            "fail",
            &dir,
            "5",
        ],
        Duration::from_secs(120),
    );
    let err = r.stderr.clone();
    assert_eq!(r.code, Some(1), "{err}");
    assert_eq!(report(&err, "PEs 0-4,6,7"), SAME_REPORT, "{err}");
    assert_eq!(
        report(&err, "PE 5"),
        ["Error: PE 5 found shard 5 corrupt"],
        "{err}"
    );
    assert_eq!(err.matches("Error:").count(), 2, "{err}");
}

/// Real PEs: PE 3 fails, the others' barrier fails because of it. vkshmrun names
/// PE 3, prints its report first, then the 7 others' as one.
#[test]
fn a_failing_pe_and_its_peers_give_two_reports() {
    let r = vkshmrun(
        &[
            "-n",
            "8",
            "--grace",
            "60",
            &program("pe_output"),
            "peer",
            "3",
        ],
        Duration::from_secs(240),
    );
    let err = r.stderr.clone();
    assert_eq!(r.code, Some(1), "{err}");
    assert_eq!(blamed(&err), 3, "{err}");
    assert_eq!(
        report(&err, "PE 3"),
        ["Error: PE 3 found a NaN in its gradients"],
        "{err}"
    );
    let peers = report(&err, "PEs 0-2,4-7");
    assert_eq!(
        peers[..3],
        ["Error: barrier after step 1", "", "Caused by:"],
        "{err}"
    );
    assert!(peers[3].starts_with("    PE 3 failed: "), "{err}");
    assert!(
        err.find("[PE 3]").unwrap() < err.find("[PEs 0-2,4-7]").unwrap(),
        "{err}"
    );
    assert_eq!(err.matches("Error:").count(), 2, "{err}");
    assert!(
        err.lines()
            .any(|l| l == "vkshmrun: after PE 3 failed: PEs 0-2,4-7 exited with code 1"),
        "{err}"
    );
}

/// SIGTERM to vkshmrun reaches the PEs, whose error reports, held back, are still
/// printed (folded) before vkshmrun exits.
#[test]
fn held_reports_are_printed_when_vkshmrun_is_interrupted() {
    let marks = tempfile::tempdir().unwrap();
    let dir = marks.path().to_path_buf();
    let script = format!(
        r#"trap 'echo "Error: stopped by SIGTERM" >&2; exit 1' TERM; : > "{}/pe$VKSHMEM_PE"; while :; do sleep 0.1; done"#,
        dir.display()
    );
    let r = vkshmrun_with(
        &["-n", "4", "--grace", "60", "sh", "-c", &script],
        Duration::from_secs(120),
        |pid| {
            wait_for_marks(&dir, 4, Duration::from_secs(60));
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::SIGTERM,
            )
            .unwrap();
        },
    );
    let err = r.stderr.clone();
    assert_eq!(r.code, Some(128 + 15), "{err}");
    assert!(
        err.contains("vkshmrun: got SIGTERM, passing it to every PE"),
        "{err}"
    );
    assert_eq!(
        report(&err, "PEs 0-3"),
        ["Error: stopped by SIGTERM"],
        "{err}"
    );
}

/// A bad `--wait-timeout` or `--grace` is refused by vkshmrun naming the flag,
/// before any PE starts; a good one reaches the PEs as a number the library reads.
#[test]
fn a_bad_wait_timeout_or_grace_is_reported_as_that_flag() {
    for (flag, value) in [
        ("--wait-timeout", "abc"),
        ("--wait-timeout", "-1"),
        ("--wait-timeout", "inf"),
        ("--wait-timeout", "NaN"),
        ("--wait-timeout", "1e10"),
        ("--grace", "abc"),
        ("--grace", "-2"),
        ("--grace", "NaN"),
        ("--grace", "4000"),
    ] {
        let arg = format!("{flag}={value}");
        let out = Command::new(vkshmrun_exe())
            .args([arg.as_str(), "-n", "2", "sh", "-c", "echo started"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{arg}: {err}");
        assert!(err.contains(&format!("'{flag} <SECS>'")), "{arg}: {err}");
        assert!(!err.contains("VKSHMEM_"), "{arg}: {err}");
        assert!(out.stdout.is_empty(), "{arg}: a PE started");
    }
    // The same with the value as a separate argument.
    let out = Command::new(vkshmrun_exe())
        .args(["--wait-timeout", "abc", "-n", "2", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--wait-timeout"));
    // Good values reach the PEs as numbers VKSHMEM_WAIT_TIMEOUT accepts.
    for (value, want) in [("0.5", "0.5"), ("1e-3", "0.001"), ("30", "30")] {
        let r = vkshmrun(
            &[
                "--wait-timeout",
                value,
                "--grace",
                "0",
                "-n",
                "2",
                "sh",
                "-c",
                "echo \"t=$VKSHMEM_WAIT_TIMEOUT\"",
            ],
            Duration::from_secs(60),
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr.clone());
        assert_eq!(r.stdout.clone(), format!("t={want}\nt={want}\n"));
    }
}
