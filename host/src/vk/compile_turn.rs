//! One compile per machine for each pipeline: the PEs of a job build the same
//! kernels at about the same time (the device library reads alike on every PE
//! of every job of a device, see `vkshmem_device::JobView`), and a driver
//! with a disk cache (Mesa's, NVIDIA's) compiles a pipeline it has not seen
//! in every process that asks for it at once. So the first process to build
//! a pipeline takes its turn alone, and the others wait for it and then find
//! the driver's cache warm, where without turns an N-PE job's device kernels
//! cost N compiles each.
//!
//! The turn is an exclusive `flock` on a small file named by the pipeline's
//! key in `compiled/` beside the pipeline cache file
//! (`super::pipeline_cache::cache_dir`). The first builder writes the
//! kernel's name into it once its pipeline is built (so `compiled/` counts
//! and names the machine's pipelines); a builder that finds it written
//! lets go of the lock at once, so only a pipeline's first build on a machine
//! is ever serialised, and a driver without a disk cache costs at most one
//! compile's wait. The lock goes with its process (a PE that dies while
//! compiling frees it), and no cache directory (`VKSHMEM_PIPELINE_CACHE=0`)
//! means no turns.
//!
//! A turn never waits on other PEs. On llvmpipe the compile happens at the
//! pipeline's first dispatch, so the turn is held through a warm-up dispatch
//! on this PE's queue, and that queue may still be running this PE's earlier
//! work: a collective kernel waiting for a peer, which may itself be waiting
//! for this turn. So the warm-up notes when the queue reaches it, and a turn
//! whose warm-up has not been reached after [`QUEUE_PATIENCE`] is released
//! unmarked ([`CompileTurn::watch_warm_up`]): the others go on and compile
//! for themselves. A waiter therefore waits as long as the compile takes,
//! however slow the machine; [`MAX_WAIT`] is only a net for a holder stopped
//! from outside.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

/// The longest a builder waits for another's turn before it builds anyway: a
/// net for a holder that stopped (a process stopped by a signal), not a
/// bound on compiles. Long, since a cold compile of the largest kernels on a
/// slow CPU driver can take minutes, and waiters that give up too soon all
/// compile the same kernel at once, each slowing the others. The turn
/// never waits on peers (module docs), so a long wait is a compile's.
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// How long a turn held through a warm-up may wait for the queue to reach
/// that warm-up (this PE's earlier work still running) before it lets the
/// others go ([`CompileTurn::watch_warm_up`]).
pub const QUEUE_PATIENCE: Duration = Duration::from_secs(2);

/// The key of a pipeline: FNV-1a over what the driver compiles (the SPIR-V,
/// the entry point, the descriptor set sizes and push-constant bytes), so that
/// equal keys mean equal pipelines for the driver's cache. Stable across
/// processes and builds.
pub fn pipeline_key(spirv: &[u32], entry: &str, sets: &[u32], push_bytes: u32) -> u64 {
    let words = spirv.iter().chain(sets).chain(std::iter::once(&push_bytes));
    crate::fnv::fnv1a(
        words
            .flat_map(|w| w.to_le_bytes())
            .chain(entry.bytes())
            .chain(std::iter::once(0u8)),
    )
}

/// The file of the turn of pipeline `key` on the device whose cache file is
/// `cache_file` (`…/pipelines-<device>.bin`).
pub fn turn_file(cache_file: &Path, key: u64) -> Option<PathBuf> {
    let dir = cache_file.parent()?.join("compiled");
    let stem = cache_file.file_stem()?.to_string_lossy().into_owned();
    Some(dir.join(format!("{stem}-{key:016x}")))
}

/// A builder's turn at a pipeline (see the module docs): held while the first
/// build runs; [`CompileTurn::done`] marks the pipeline as built on this
/// machine and lets the others go (so does dropping the turn, unmarked).
pub struct CompileTurn {
    lock: Option<Flock<File>>,
    /// When the warm-up began to wait for its queue, until the queue reached
    /// it ([`CompileTurn::watch_warm_up`]).
    warm_up_since: Option<Instant>,
}

impl CompileTurn {
    /// Waits for the turn of the pipeline whose file is `file`: returns at
    /// once when it was built before (or nothing can be locked), else once
    /// this builder holds the lock.
    pub fn take(file: &Path) -> CompileTurn {
        let none = CompileTurn::none();
        if let Some(dir) = file.parent() {
            if let Err(e) = std::fs::create_dir_all(dir) {
                tracing::debug!("compile turn: cannot create {dir:?}: {e}");
                return none;
            }
        }
        let open = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(file)
        };
        let mut f = match open() {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!("compile turn: cannot open {file:?}: {e}");
                return none;
            }
        };
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        let lock = loop {
            match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
                Ok(l) => break l,
                Err((back, e)) if e == nix::errno::Errno::EWOULDBLOCK => {
                    if started.elapsed() >= MAX_WAIT {
                        tracing::debug!(
                            "compile turn: {file:?} held for {MAX_WAIT:?}; building anyway"
                        );
                        return none;
                    }
                    f = back;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err((_, e)) => {
                    tracing::debug!("compile turn: cannot lock {file:?}: {e}");
                    return none;
                }
            }
        };
        let waited = started.elapsed();
        let mut mark = [0u8; 1];
        let built = (&*lock).read(&mut mark).map(|n| n == 1).unwrap_or(false);
        tracing::trace!(?file, ?waited, built, "compile turn");
        if built {
            // Built before: every builder may go at once (a cache hit).
            return none;
        }
        CompileTurn {
            lock: Some(lock),
            warm_up_since: None,
        }
    }

    /// No turn: where there is no cache directory, or the pipeline was built
    /// before.
    pub fn none() -> CompileTurn {
        CompileTurn {
            lock: None,
            warm_up_since: None,
        }
    }

    /// Whether this builder holds the turn (it builds first, alone).
    pub fn held(&self) -> bool {
        self.lock.is_some()
    }

    /// Called while the warm-up that compiles the pipeline waits, `started`
    /// telling whether the queue has reached it. The first call starts the
    /// clock; once [`QUEUE_PATIENCE`] has passed and the queue has still not
    /// reached the warm-up, the turn is released unmarked: this PE's earlier
    /// work is still running (perhaps waiting for a peer that waits for this
    /// turn), so the other builders go on and compile for themselves. Once
    /// started, the compile is under way and the turn is kept.
    pub fn watch_warm_up(&mut self, started: bool) {
        if self.lock.is_none() {
            return;
        }
        if started {
            if let Some(since) = self.warm_up_since.take() {
                tracing::trace!(waited = ?since.elapsed(), "compile turn: the queue reached the warm-up");
            }
            return;
        }
        let since = *self.warm_up_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= QUEUE_PATIENCE {
            tracing::debug!(
                "compile turn: the warm-up waited {:?} for this PE's queue; letting the other builders go",
                since.elapsed()
            );
            self.lock = None;
        }
    }

    /// Marks the pipeline as built on this machine and ends the turn (call
    /// after a build that succeeded; a turn dropped without it lets the next
    /// builder compile alone in its turn). The turn is then none: a second
    /// call does nothing. The mark is `what` (the kernel's name) and a
    /// newline, so that `compiled/` tells which pipelines a machine has
    /// built: one file per pipeline (`cat compiled/*` names them).
    pub fn done(&mut self, what: &str) {
        if let Some(l) = self.lock.take() {
            if let Err(e) = (&*l).write_all(format!("{what}\n").as_bytes()) {
                tracing::debug!("compile turn: cannot mark a pipeline built: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn keys_tell_pipelines_apart() {
        let k = pipeline_key(&[1, 2, 3], "main", &[2, 1], 0);
        assert_eq!(k, pipeline_key(&[1, 2, 3], "main", &[2, 1], 0));
        assert_ne!(k, pipeline_key(&[1, 2, 4], "main", &[2, 1], 0));
        assert_ne!(k, pipeline_key(&[1, 2, 3], "mainx", &[2, 1], 0));
        assert_ne!(k, pipeline_key(&[1, 2, 3], "main", &[1, 2], 0));
        assert_ne!(k, pipeline_key(&[1, 2, 3], "main", &[2, 1], 4));
        let f = turn_file(Path::new("/c/pipelines-10005-0000-ab.bin"), 0xfe).unwrap();
        assert_eq!(
            f,
            Path::new("/c/compiled/pipelines-10005-0000-ab-00000000000000fe")
        );
    }

    /// Of builders that arrive together, one builds first, alone; the others
    /// go after it without the lock (side by side); a later builder does not
    /// wait.
    #[test]
    fn the_first_build_goes_alone_and_later_ones_together() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("compiled").join("k");
        let n = 4;
        let start = Arc::new(Barrier::new(n));
        let inside = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let firsts = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let threads: Vec<_> = (0..n)
            .map(|_| {
                let (file, start, inside, firsts) =
                    (file.clone(), start.clone(), inside.clone(), firsts.clone());
                std::thread::spawn(move || {
                    use std::sync::atomic::Ordering::SeqCst;
                    start.wait();
                    let mut turn = CompileTurn::take(&file);
                    let alone = turn.lock.is_some();
                    let now = inside.fetch_add(1, SeqCst) + 1;
                    if alone {
                        assert_eq!(now, 1, "the first build runs alone");
                        firsts.fetch_add(1, SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    inside.fetch_sub(1, SeqCst);
                    turn.done("k");
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        use std::sync::atomic::Ordering::SeqCst;
        assert_eq!(firsts.load(SeqCst), 1);
        let t = Instant::now();
        assert!(CompileTurn::take(&file).lock.is_none());
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    /// A turn whose warm-up the queue has not reached lets a waiting builder
    /// go after `QUEUE_PATIENCE`, unmarked (the waiter then holds the turn
    /// and compiles); a turn whose warm-up has started keeps the waiter
    /// until it is done, however long that takes.
    #[test]
    fn a_warm_up_stuck_behind_the_queue_lets_the_others_go() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let dir = tempfile::tempdir().unwrap();
        for started in [false, true] {
            let file = dir.path().join(format!("k-{started}"));
            let mut turn = CompileTurn::take(&file);
            assert!(turn.held());
            let holder_done = Arc::new(AtomicBool::new(false));
            let waiter = {
                let (file, holder_done) = (file.clone(), holder_done.clone());
                std::thread::spawn(move || {
                    let t = Instant::now();
                    let theirs = CompileTurn::take(&file);
                    (t.elapsed(), theirs.held(), holder_done.load(SeqCst))
                })
            };
            let t = Instant::now();
            // The holder's warm-up waits: not reached, it lets go at the
            // patience; reached, it goes on past it and keeps the turn.
            while t.elapsed() < QUEUE_PATIENCE * 2 && (started || turn.held()) {
                turn.watch_warm_up(started);
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(turn.held(), started);
            if started {
                holder_done.store(true, SeqCst);
                turn.done("k");
            }
            let (waited, held, after_holder) = waiter.join().unwrap();
            holder_done.store(true, SeqCst);
            if started {
                assert!(waited > QUEUE_PATIENCE, "{waited:?}");
                assert!(!held && after_holder, "the waiter found it built");
            } else {
                // (The waiter's clock starts beside the holder's, not after it.)
                assert!(waited >= QUEUE_PATIENCE / 2, "{waited:?}");
                assert!(waited < MAX_WAIT / 10, "{waited:?}");
                assert!(held && !after_holder, "the waiter compiles in its turn");
            }
        }
    }
}
