//! `vkshmrun --status`: the flight recorder's table of every running job of
//! this user on this node, read from another terminal.
//!
//! A job is found by its node segment: every process of it (vkshmrun and
//! its PEs) holds the memfd `vkshmem-node-segment`, which `/proc/PID/fd`
//! shows and lets the same user open. Each segment is read once, however
//! many of its processes hold it.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use vkshmem_host::sync::layout::{NPES_AT, VERSION, VERSION_AT};
use vkshmem_host::sync::recorder;
use vkshmem_host::sync::segment::Segment;

/// How `/proc/PID/fd/N` names the node segment.
const SEGMENT_LINK: &str = "/memfd:vkshmem-node-segment";

/// A running job: the segment's path through one of its processes, and
/// the processes that hold it.
struct Job {
    path: PathBuf,
    pids: Vec<u32>,
}

/// Every node segment this user's processes hold, one per job.
fn jobs() -> Vec<Job> {
    let mut jobs: Vec<(u64, Job)> = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue; // another user's, or gone
        };
        for fd in fds.flatten() {
            let is_segment = std::fs::read_link(fd.path())
                .is_ok_and(|l| l.to_string_lossy().starts_with(SEGMENT_LINK));
            let Some(ino) = is_segment
                .then(|| std::fs::metadata(fd.path()).ok().map(|m| m.ino()))
                .flatten()
            else {
                continue;
            };
            match jobs.iter_mut().find(|(i, _)| *i == ino) {
                Some((_, j)) => j.pids.push(pid),
                None => jobs.push((
                    ino,
                    Job {
                        path: fd.path(),
                        pids: vec![pid],
                    },
                )),
            }
        }
    }
    jobs.into_iter().map(|(_, j)| j).collect()
}

/// The table of the job whose segment is at `path`.
fn read(path: &Path) -> Result<String> {
    let f = File::options()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut word = [0u8; 4];
    f.read_exact_at(&mut word, VERSION_AT as u64)
        .context("reading the segment's header")?;
    let version = u32::from_le_bytes(word);
    anyhow::ensure!(
        version == VERSION,
        "the job's node segment has layout version {version}, this vkshmrun reads {VERSION} (another vkshmem version)"
    );
    f.read_exact_at(&mut word, NPES_AT as u64)
        .context("reading the segment's header")?;
    let seg = Segment::open(f.into(), u32::from_le_bytes(word)).context("mapping the segment")?;
    Ok(recorder::report(&seg))
}

/// Prints every running job's table; the exit code: 0, or 1 where none runs.
pub fn print() -> i32 {
    let jobs = jobs();
    if jobs.is_empty() {
        eprintln!("vkshmrun: no running vkshmem job of this user on this node");
        return 1;
    }
    for j in &jobs {
        let pids: Vec<String> = j.pids.iter().map(u32::to_string).collect();
        println!("job of processes {}:", pids.join(", "));
        match read(&j.path) {
            Ok(table) => print!("{table}"),
            Err(e) => println!("  cannot read it: {e:#}"),
        }
    }
    0
}
