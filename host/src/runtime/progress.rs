//! The progress thread of queued collectives: while any is outstanding, it
//! does for them what a blocking launch does while it waits for its fence
//! (`crate::user_kernel`), since nobody of ours waits for a fence the user
//! owns:
//!
//! - it watches the job's abort word in the node segment (a peer failed, or
//!   another PE's wait timed out) and then raises this PE's device abort word,
//!   so that every device wait of a queued collective gives up and its
//!   commands run to the end (the host then reports `PeerFailed`);
//! - on drivers that cap loops (llvmpipe), it ticks the wait throttle
//!   (`crate::driver::throttle`), so that a queued collective that waits for a peer
//!   which has not submitted yet waits seconds, not 100 ms;
//! - where this PE runs a proxy (peers on other devices), it keeps the proxy
//!   thread polling its ring closely, as a launch does
//!   (`crate::transport::proxy::Activity`).
//!
//! It holds no `Context` (which would keep the context alive): only the
//! device, the own heap block and the plane. It parks when nothing is
//! outstanding and ends when the context's queue state drops.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use vkshmem_device::layout::ControlHeader;

use crate::sync::Plane;
use crate::vk::memory::SharedMemory;

/// How often the thread looks when it has nothing to throttle.
const WATCH_EVERY: Duration = Duration::from_millis(5);

/// What the thread and the queue calls share.
#[derive(Debug, Default)]
pub struct Shared {
    /// Queued collectives recorded or posted and not yet seen complete.
    pub outstanding: AtomicUsize,
    /// Set when the thread raised the device abort word (a peer failed).
    pub aborted: AtomicBool,
    stop: AtomicBool,
    wake: Mutex<()>,
    cv: Condvar,
}

impl Shared {
    /// One more outstanding collective: wakes the thread.
    pub fn add(&self) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let _g = crate::lock::lock(&self.wake);
        self.cv.notify_all();
    }

    /// One fewer.
    pub fn retire(&self) {
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The thread; stopped and joined on drop.
pub struct Progress {
    pub shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("outstanding", &self.shared.outstanding)
            .finish()
    }
}

/// What the thread watches.
pub struct Watched {
    /// The driver's threads to throttle where it caps loops (llvmpipe).
    pub driver_threads: Arc<crate::driver::throttle::DriverThreads>,
    /// This PE's heap block (its control header; mapped or not).
    pub own: Arc<SharedMemory>,
    pub plane: Option<Arc<Plane>>,
    /// Whether device waits of this job wait for peers at all (n_pes > 1).
    pub peers: bool,
    /// This PE's proxy, when it runs one.
    pub proxy: Option<crate::transport::proxy::Activity>,
}

impl Progress {
    /// Starts the thread.
    pub fn start(w: Watched) -> std::io::Result<Progress> {
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("vkshmem-queue".into())
            .spawn(move || run(&w, &s))?;
        Ok(Progress {
            shared,
            thread: Some(thread),
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _g = crate::lock::lock(&self.shared.wake);
            self.shared.cv.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(w: &Watched, s: &Shared) {
    let base = w.own.mapped().map(|p| p.as_ptr().cast::<u32>());
    let words = usize::try_from(w.own.size() / 4).unwrap_or(usize::MAX);
    while !s.stop.load(Ordering::SeqCst) {
        if s.outstanding.load(Ordering::SeqCst) == 0 {
            let g = crate::lock::lock(&s.wake);
            if s.outstanding.load(Ordering::SeqCst) == 0 && !s.stop.load(Ordering::SeqCst) {
                // Woken by `add` or `drop`; the timeout only bounds a lost wake-up.
                let _ = s.cv.wait_timeout(g, Duration::from_millis(500));
            }
            continue;
        }
        // Active: throttle where the driver caps loops (one session for the
        // whole busy period; none when a blocking launch holds the throttle).
        let threads = &w.driver_threads;
        let mut session = match base {
            Some(b) if w.peers && !threads.tids().is_empty() => {
                // SAFETY: the own block stays mapped while the queue state (and
                // this thread, joined in its drop) lives; `words` is its size.
                unsafe { crate::driver::throttle::Session::join(threads, b, words) }
            }
            _ => None,
        };
        let _proxy_busy = w.proxy.as_ref().map(|p| p.busy());
        while s.outstanding.load(Ordering::SeqCst) > 0 && !s.stop.load(Ordering::SeqCst) {
            watch_abort(w, s, base);
            let next = session.as_mut().map_or(WATCH_EVERY, |t| t.tick());
            std::thread::sleep(next);
        }
        drop(session);
    }
}

/// Raises the device abort word once the job's abort word is up.
fn watch_abort(w: &Watched, s: &Shared, base: Option<*mut u32>) {
    if s.aborted.load(Ordering::SeqCst) {
        return;
    }
    let Some(plane) = &w.plane else {
        return;
    };
    if plane.abort_word() == 0 {
        return;
    }
    match base {
        Some(b) => {
            let at = std::mem::offset_of!(ControlHeader, abort) / 4;
            // SAFETY: the header is mapped (above) and its words are aligned;
            // the device reads the abort word with atomics.
            unsafe { std::sync::atomic::AtomicU32::from_ptr(b.add(at)) }.store(1, Ordering::SeqCst);
            s.aborted.store(true, Ordering::SeqCst);
        }
        None => {
            tracing::warn!(
                "cannot interrupt queued device waits: this PE's heap is not host-mapped"
            );
            s.aborted.store(true, Ordering::SeqCst);
        }
    }
}
