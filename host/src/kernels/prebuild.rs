//! Building the host collectives' kernels before their first call.
//!
//! Without this, a host collective's first call links its kernel with the
//! device library and builds its pipeline, which costs tens to hundreds of
//! times a later call (benches/RESULTS.md, "Kernel prebuild"). At the end of
//! `init`, `Runtime::prebuild_host_kernels` hands the kernels this program is
//! likely to call to the process's builder thread, which builds them one at a
//! time, each exactly as its collective would (same source, name and library),
//! and publishes them in the context's [`Builds`]: a call whose kernel is built
//! takes it, a call whose kernel is being built waits for it, and a call whose
//! kernel the builder has not reached builds it itself (the builder then skips
//! it). Nothing is built twice.
//!
//! **Which kernels.** Each context notes the host kernels the program used and,
//! when it goes, adds them to the program's *profile*, a small text file beside
//! the pipeline cache (`prebuild-<program>-<hash>-<PEs>.txt` in the directory of
//! [`crate::vk::pipeline_cache::cache_dir`]), keyed by the executable's path and
//! the number of PEs. Later runs build the kernels of the profile, in the order
//! of their first use: work the program would do anyway, done while it sets up;
//! a program that uses few collectives costs little, one that uses none costs
//! nothing. Without a profile (a program's first run, or no cache directory)
//! the builder guesses the kernels a typical program calls first, as the
//! collectives declare them (`first_kernels` in `crate::collective`, each
//! family's in its own file; [`Plan::guesses`]), but only with CPUs to spare (more CPUs than the job's PEs plus the load
//! average): 8 PEs starting on 2 cores have none, and guessing there doubled
//! the time of a test running jobs of 1000 host barriers. The builder runs at
//! the PE's priority: a call waiting for a kernel it builds must not wait
//! longer than building it would have taken (a nice builder made such waits
//! twice as long on a loaded machine).
//!
//! **Lifetimes.** The builder holds only the device (an `Arc<Gpu>`), its own
//! submitter and a small storage buffer for the warm-up dispatch, never the
//! context or its heap, and drops them after each context's batch. A context's
//! [`Prebuild`] is owned by the context's submitter
//! ([`Submitter::set_companion`]): when the context goes, the submitter's drop
//! stops the batch between two steps of a build (link, pipeline, warm-up) and
//! waits until the builder has let go of the device, before the heap and the
//! device go. `finalize` waits for at most one such step.
//!
//! `VKSHMEM_PREBUILD` ([`crate::config::prebuild`]) chooses: `0` nothing is built (nor noted), `1` (the
//! default) as above, `all` the profile's kernels and every host kernel for the
//! world team's size, CPUs to spare or not.
//!
//! [`Submitter::set_companion`]: crate::vk::submit::Submitter::set_companion

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use vkshmem_device::collectives::WideUnit;
use vkshmem_device::LibraryConfig;

use super::builds::{Builds, KernelKey};
use super::library::{carries_unit, LibraryKernel};
use super::{link, DeviceKernel};
// What the background builder builds (`VKSHMEM_PREBUILD`).
use crate::config::Prebuild as Mode;
use crate::error::Result;
use crate::lock::lock;
use crate::vk::memory::Staging;
use crate::vk::pipeline_cache;
use crate::vk::submit::{Submitter, Window};
use crate::vk::Gpu;

/// Bytes of the buffer bound to every binding of a warm-up dispatch.
const WARM_UP_BYTES: u64 = 256;

/// The first line of a profile file.
const PROFILE_HEADER: &str = "vkshmem prebuild profile 1";

/// Larger profile files are ignored (a profile names at most every host
/// kernel: a few hundred short lines).
const PROFILE_MAX_BYTES: u64 = 64 << 10;

/// One kernel to build: its source (the cache key) and its name, both as the
/// collective that uses it makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Job {
    pub source: String,
    pub name: String,
}

impl Job {
    /// The job of kernel `k` in `unit`; `None` where it has no source.
    fn of(k: LibraryKernel, unit: WideUnit) -> Option<Job> {
        Some(Job {
            source: k.source(unit)?,
            name: k.name(unit),
        })
    }
}

/// The jobs of `kernels` (the collectives' declarations,
/// [`FirstKernels`](super::library::FirstKernels)) in `unit` where they have units, each source once, in
/// order; those the library has no source for are left out.
pub(crate) fn jobs(kernels: &[LibraryKernel], unit: WideUnit) -> Vec<Job> {
    let mut seen = std::collections::HashSet::new();
    kernels
        .iter()
        .filter_map(|&k| {
            Job::of(
                k,
                if k.has_units() {
                    unit
                } else {
                    WideUnit::Vec4U32
                },
            )
        })
        .filter(|j| seen.insert(j.source.clone()))
        .collect()
}

/// The job of the host kernel called `name`, for a library `cfg` whose
/// wide copies and pushes run in workgroups of `wg` (names:
/// [`LibraryKernel::parse`]); `None` for any other name.
pub(crate) fn job_named(name: &str, cfg: &LibraryConfig, wg: u32) -> Option<Job> {
    let (k, unit) = LibraryKernel::parse(name, cfg, wg)?;
    Job::of(k, unit)
}

/// The kernel names of a profile as a context whose wide kernels move `unit`s
/// calls them (in order, without repeats): a wide copy's, push's or
/// reduction's name in the other unit stands for its twin in `unit` (a run
/// with another `VKSHMEM_WIDE_UNIT` wrote it), except that under
/// `vec2<u64>` a `vec4<u32>` name whose `vec2<u64>` twin is in the profile
/// too stays beside it (the edge launches of `vec2<u64>` calls use it).
fn names_in_unit(names: &[String], unit: WideUnit) -> Vec<String> {
    let u64s = WideUnit::Vec2U64.suffix();
    let has_twins = carries_unit;
    let mut out: Vec<String> = Vec::new();
    let mut add = |n: String| {
        if !out.contains(&n) {
            out.push(n);
        }
    };
    for n in names {
        if !has_twins(n) {
            add(n.clone());
            continue;
        }
        match (unit, n.strip_suffix(u64s)) {
            (WideUnit::Vec4U32, Some(twin)) => add(twin.to_string()),
            (WideUnit::Vec2U64, None) => {
                let twin = format!("{n}{u64s}");
                if names.contains(&twin) {
                    add(n.clone());
                }
                add(twin);
            }
            _ => add(n.clone()),
        }
    }
    out
}

/// The host kernels a program used in earlier runs, in the order of first use.
struct Profile {
    file: PathBuf,
    /// What the file held (`None`: no file yet).
    names: Option<Vec<String>>,
}

/// The profile file of the program at `exe` in jobs of `npes` PEs.
fn profile_path(dir: &Path, exe: &Path, npes: u32) -> PathBuf {
    // FNV-1a of the path: a short, stable name.
    let h = crate::fnv::fnv1a(exe.as_os_str().as_encoded_bytes().iter().copied());
    let stem = exe
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(40)
        .collect::<String>();
    dir.join(format!("prebuild-{stem}-{h:016x}-{npes}.txt"))
}

/// The kernel names of profile text (`None`: not a profile).
fn parse_profile(text: &str) -> Option<Vec<String>> {
    let mut lines = text.lines();
    if lines.next()? != PROFILE_HEADER {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for l in lines.map(str::trim).filter(|l| !l.is_empty()) {
        if !names.iter().any(|n| n == l) {
            names.push(l.to_string());
        }
    }
    Some(names)
}

/// Profile text naming `names`.
fn format_profile(names: &[String]) -> String {
    let mut s = format!("{PROFILE_HEADER}\n");
    for n in names {
        s.push_str(n);
        s.push('\n');
    }
    s
}

impl Profile {
    /// The profile of this program for `npes` PEs, when there is a cache
    /// directory (a file that cannot be read is logged and counts as none).
    fn load(npes: u32) -> Option<Profile> {
        let dir = crate::config::pipeline_cache_dir(crate::config::env)?;
        let exe = std::env::current_exe().ok()?;
        let file = profile_path(&dir, &exe, npes);
        let read = || -> std::io::Result<String> {
            if std::fs::metadata(&file)?.len() > PROFILE_MAX_BYTES {
                return Err(std::io::Error::other("too large"));
            }
            std::fs::read_to_string(&file)
        };
        let names = match read() {
            Ok(text) => parse_profile(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::debug!("cannot read the prebuild profile {file:?}: {e}");
                None
            }
        };
        Some(Profile { file, names })
    }

    /// Adds the kernels `used` (in order) to the profile's file, unless it
    /// names them all already. Errors are logged and ignored.
    fn save(&self, used: &[String]) {
        let mut names = self.names.clone().unwrap_or_default();
        let before = names.len();
        for u in used {
            if !names.contains(u) {
                names.push(u.clone());
            }
        }
        if self.names.is_some() && names.len() == before {
            return;
        }
        match pipeline_cache::write_atomic(&self.file, format_profile(&names).as_bytes()) {
            Ok(()) => tracing::debug!(kernels = names.len(), "saved {:?}", self.file),
            Err(e) => tracing::debug!("cannot save the prebuild profile {:?}: {e}", self.file),
        }
    }
}

/// Notes, for the profile, that the program used the kernel `name` built from
/// `source` (kernels other than the host collectives' are not noted).
pub(crate) fn note_use(builds: &Builds, source: &str, name: &str) {
    if job_named(name, &builds.cfg, builds.wide_workgroup).is_some_and(|j| j.source == source) {
        builds.note(name);
    }
}

/// One context's kernels to build, queued for the builder thread.
struct Batch {
    builds: Arc<Builds>,
    gpu: Arc<Gpu>,
    jobs: Vec<Job>,
    ended: Arc<Ended>,
}

/// Whether the builder thread is done with a batch (built it, gave up, or
/// dropped it unstarted).
#[derive(Default)]
struct Ended {
    done: Mutex<bool>,
    changed: Condvar,
}

impl Ended {
    fn set(&self) {
        *lock(&self.done) = true;
        self.changed.notify_all();
    }

    fn wait(&self) {
        let mut done = lock(&self.done);
        while !*done {
            done = self.changed.wait(done).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// The batches waiting for the builder thread.
static QUEUE: Mutex<VecDeque<Batch>> = Mutex::new(VecDeque::new());
/// Signalled when a batch is queued.
static QUEUED: Condvar = Condvar::new();
/// Whether the builder thread runs (started at the first batch).
static BUILDER: OnceLock<bool> = OnceLock::new();

/// One context's background builds: owned by the context's submitter; dropping
/// it stops them, waits until the builder thread no longer uses the device for
/// this context, and saves the profile.
pub(crate) struct Prebuild {
    pub(crate) builds: Arc<Builds>,
    ended: Arc<Ended>,
    profile: Option<Profile>,
}

impl Drop for Prebuild {
    fn drop(&mut self) {
        self.builds.cancel.store(true, Ordering::Relaxed);
        // Not started yet: take it off the queue (its Arcs drop here).
        let unstarted = {
            let mut q = lock(&QUEUE);
            let at = q.iter().position(|b| Arc::ptr_eq(&b.ended, &self.ended));
            at.and_then(|i| q.remove(i))
        };
        match unstarted {
            Some(batch) => drop(batch),
            None => self.ended.wait(),
        }
        if let Some(p) = &self.profile {
            p.save(&self.builds.used());
        }
    }
}

/// A context's facts that the background builds are planned from.
pub(crate) struct Plan {
    /// The job's PEs.
    pub npes: u32,
    /// The context's device library shape.
    pub cfg: LibraryConfig,
    /// Its wide kernels' workgroup size and element.
    pub wide_workgroup: u32,
    pub wide_unit: WideUnit,
    /// Whether some PE is on another device (WORLD's host collectives then
    /// go through staging and launch no kernel: nothing to guess).
    pub world_staged: bool,
    /// The collectives' kernels, the likeliest first ([`FirstKernels`](super::library::FirstKernels)),
    /// for the mode: built where no profile says better.
    pub guesses: Vec<LibraryKernel>,
}

/// Starts building, on the process's builder thread, the host collectives'
/// kernels that a context of `plan` on `gpu` is likely to call (see the
/// module docs and `VKSHMEM_PREBUILD`, `mode`), and puts their [`Prebuild`]
/// companion in the context's submitter `submit`. Returns at once.
pub(crate) fn start(plan: Plan, mode: Mode, gpu: Arc<Gpu>, submit: &Mutex<Submitter>) {
    let Plan {
        npes,
        cfg,
        wide_workgroup,
        wide_unit,
        world_staged,
        guesses,
    } = plan;
    let profile = Profile::load(npes);
    // Kernels no profile asks for are a guess: built only with CPUs to
    // spare (the PEs of a job all run on this node).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let spare = cpus_to_spare(npes, cpus, load);
    let mut todo = match (mode, profile.as_ref().and_then(|p| p.names.as_ref())) {
        (Mode::Typical, Some(_)) => Vec::new(),
        (Mode::Typical, None) if !spare || world_staged => Vec::new(),
        (Mode::Off, _) => Vec::new(),
        _ => jobs(&guesses, wide_unit),
    };
    if let Some(names) = profile.as_ref().and_then(|p| p.names.as_ref()) {
        // The profile's kernels first (in the order of their first use),
        // in this context's wide unit.
        let known: Vec<Job> = names_in_unit(names, wide_unit)
            .iter()
            .filter_map(|n| job_named(n, &cfg, wide_workgroup))
            .collect();
        todo.retain(|j| !known.contains(j));
        todo.splice(0..0, known);
    }
    let builds = Arc::new(Builds::new(cfg, wide_workgroup));
    let ended = Arc::new(Ended::default());
    let queued = !todo.is_empty() && builder_runs();
    if !queued {
        ended.set();
    }
    // The companion is in place before the builder can publish anything.
    lock(submit).set_companion(Box::new(Prebuild {
        builds: builds.clone(),
        ended: ended.clone(),
        profile,
    }));
    if queued {
        tracing::debug!(
            kernels = todo.len(),
            "building host kernels in the background"
        );
        lock(&QUEUE).push_back(Batch {
            builds,
            gpu,
            jobs: todo,
            ended,
        });
        QUEUED.notify_one();
    }
}

/// Waits until the builder thread has built the kernels it was given for
/// the context whose submitter is `submit`; at once where there were none.
pub(crate) fn wait_ended(submit: &Mutex<Submitter>) {
    let ended = lock(submit)
        .companion::<Prebuild>()
        .map(|p| p.ended.clone());
    if let Some(e) = ended {
        e.wait();
    }
}

/// Whether a node of `cpus` CPUs with a 1-minute load average of `load` has
/// CPUs to spare for a job of `npes` PEs: more CPUs than both together.
fn cpus_to_spare(npes: u32, cpus: usize, load: f64) -> bool {
    npes as f64 + load < cpus as f64
}

/// Starts the builder thread if it is not running; whether it runs.
fn builder_runs() -> bool {
    *BUILDER.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("vkshmem-prebuild".into())
            .spawn(builder);
        if let Err(e) = &spawned {
            tracing::debug!("cannot start the kernel builder thread: {e}");
        }
        spawned.is_ok()
    })
}

/// The builder thread: one per process, idle between batches and holding
/// nothing of a context then. One thread, not one per context: no thread is
/// started per `init`, and the memory its malloc arena keeps for reuse after a
/// link (glibc; about 3.5 MiB here) is paid once.
fn builder() {
    loop {
        let batch = {
            let mut q = lock(&QUEUE);
            loop {
                match q.pop_front() {
                    Some(b) => break b,
                    None => q = QUEUED.wait(q).unwrap_or_else(|p| p.into_inner()),
                }
            }
        };
        let Batch {
            builds,
            gpu,
            jobs,
            ended,
        } = batch;
        // A panic is a failed build (its claim is given up as it unwinds):
        // the thread goes on serving other contexts.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if !builds.cancelled() {
                run(&builds, &gpu, &jobs);
            }
        }));
        if ran.is_err() {
            tracing::debug!("a background kernel build panicked");
        }
        // The device and the kernels go before the context may go on: the
        // context's thread, not this one, must drop the last of them.
        drop((builds, gpu, jobs));
        ended.set();
    }
}

/// Builds `jobs` in order for one context, skipping those a call claimed,
/// until done or cancelled.
fn run(builds: &Builds, gpu: &Arc<Gpu>, jobs: &[Job]) {
    let started = std::time::Instant::now();
    let setup = Submitter::new(gpu).and_then(|s| Ok((s, Staging::storage(gpu, WARM_UP_BYTES)?)));
    let (mut submit, scratch) = match setup {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!("the kernel builder cannot start: {e}");
            return;
        }
    };
    let window = Window {
        buffer: scratch.buffer,
        offset: 0,
        range: WARM_UP_BYTES,
    };
    let mut built = 0;
    for job in jobs {
        if builds.cancelled() {
            break;
        }
        let key: KernelKey = (job.source.clone(), None);
        let Some(claim) = builds.claim_new(&key) else {
            continue;
        };
        let mut step = || -> Result<Option<DeviceKernel>> {
            let linked = link(gpu, &builds.cfg, &job.source, None, &job.name)?;
            if builds.cancelled() {
                return Ok(None);
            }
            let k = DeviceKernel::build_in_turn(gpu, &builds.cfg, linked, &job.name, |k, turn| {
                if builds.cancelled() {
                    return Ok(false);
                }
                k.warm_up_with(&mut submit, window, turn).map(|()| true)
            })?;
            if builds.cancelled() {
                return Ok(None);
            }
            Ok(Some(k))
        };
        match step() {
            Ok(Some(k)) => {
                claim.done(Arc::new(k));
                built += 1;
            }
            Ok(None) => break,
            // The call that needs it builds it again and reports the error.
            Err(e) => tracing::debug!(kernel = job.name, "background build failed: {e}"),
        }
    }
    tracing::debug!(
        built,
        of = jobs.len(),
        ms = started.elapsed().as_millis() as u64,
        "background kernel builds"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const U32: WideUnit = WideUnit::Vec4U32;

    #[test]
    fn profiles_are_read_in_the_context_s_unit() {
        let names: Vec<String> = [
            "vkshmem_broadcast",
            "vkshmem_wide_push_2",
            "vkshmem_wide_copy_words_2",
            "vkshmem_wide_reduce_u64_sum",
            "vkshmem_reduce_u64",
            "vkshmem_wide_copy_1_u64",
            "vkshmem_wide_copy_1",
        ]
        .map(String::from)
        .to_vec();
        // vec2<u64>: the vec4<u32> names stand for their twins, but the
        // copy's stays (its twin was used too: an edge kernel).
        assert_eq!(
            names_in_unit(&names, WideUnit::Vec2U64),
            [
                "vkshmem_broadcast",
                "vkshmem_wide_push_2_u64",
                "vkshmem_wide_copy_words_2",
                "vkshmem_wide_reduce_u64_sum_u64",
                "vkshmem_reduce_u64",
                "vkshmem_wide_copy_1_u64",
                "vkshmem_wide_copy_1",
            ]
        );
        // vec4<u32>: the vec2<u64> names stand for theirs.
        assert_eq!(
            names_in_unit(&names, U32),
            [
                "vkshmem_broadcast",
                "vkshmem_wide_push_2",
                "vkshmem_wide_copy_words_2",
                "vkshmem_wide_reduce_u64_sum",
                "vkshmem_reduce_u64",
                "vkshmem_wide_copy_1",
            ]
        );
    }

    #[test]
    fn guesses_need_cpus_to_spare() {
        assert!(cpus_to_spare(1, 2, 0.2));
        assert!(!cpus_to_spare(2, 2, 0.0));
        assert!(!cpus_to_spare(1, 2, 1.5));
        assert!(cpus_to_spare(8, 64, 20.0));
        assert!(!cpus_to_spare(8, 2, 0.0));
    }

    #[test]
    fn profiles_round_trip() {
        let names = vec!["vkshmem_broadcast".to_string(), "x".to_string()];
        let text = format_profile(&names);
        assert_eq!(parse_profile(&text), Some(names));
        assert_eq!(parse_profile(""), None);
        assert_eq!(parse_profile("something else\nvkshmem_broadcast\n"), None);
        let dup = format!("{PROFILE_HEADER}\na\n\n b \na\n");
        assert_eq!(parse_profile(&dup), Some(vec!["a".into(), "b".into()]));
        let p = profile_path(Path::new("/c"), Path::new("/bin/my prog!"), 8);
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("prebuild-myprog-") && name.ends_with("-8.txt"),
            "{name}"
        );
        assert_ne!(
            p,
            profile_path(Path::new("/c"), Path::new("/usr/bin/my prog!"), 8)
        );
        assert_ne!(
            p,
            profile_path(Path::new("/c"), Path::new("/bin/my prog!"), 4)
        );
    }

    #[test]
    fn saving_a_profile_adds_the_kernels_used() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.txt");
        let p = Profile {
            file: file.clone(),
            names: None,
        };
        // No file yet: saved even when nothing was used.
        p.save(&[]);
        assert_eq!(
            parse_profile(&std::fs::read_to_string(&file).unwrap()),
            Some(vec![])
        );
        let p = Profile {
            file: file.clone(),
            names: Some(vec!["a".into()]),
        };
        p.save(&["b".into(), "a".into()]);
        assert_eq!(
            parse_profile(&std::fs::read_to_string(&file).unwrap()),
            Some(vec!["a".into(), "b".into()])
        );
        // Nothing new: the file is left alone.
        std::fs::write(&file, "changed").unwrap();
        p.save(&["a".into()]);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed");
    }
}
