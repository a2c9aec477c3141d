//! The proxy: one host thread per PE that carries device code's requests to
//! PEs on other devices, and serves the requests other PEs' proxies send to
//! this PE's heap.
//!
//! # Two queues
//! - **The ring** (device → this proxy): entries in this PE's control region
//!   (`vkshmem_device::layout::ProxyEntry`, the one definition of the layout and
//!   of its protocol). Device code claims a ticket, fills the entry and posts
//!   it; the proxy takes tickets in order and answers into the entry.
//! - **The inboxes** (proxy → proxy): one per PE in the node segment
//!   (`crate::sync::layout`, cells of [`CELL_BYTES`]). A request for PE `p`
//!   becomes messages in `p`'s inbox; `p`'s proxy applies them to its own heap
//!   (through the host mapping) and answers into the sender's inbox. Messages
//!   from one proxy to another arrive in the order sent, so a later request
//!   lands after an earlier one (what posted stores, fences and the device
//!   team sync rely on).
//!
//! # Never blocking
//! The thread never waits for a queue: a full inbox leaves the message in
//! this proxy's outbox (a FIFO, tried again each round), and new ring entries
//! are taken only while the outbox is short, which is the back-pressure on
//! device code (its entries stay unanswered). So two proxies sending to each
//! other always keep draining their own inboxes and cannot deadlock.
//!
//! # Failure
//! When the job's abort word is raised (a PE died or timed out), every request
//! in flight and every later one is answered with `ERR_ABORTED`, so no device
//! wait is left hanging on a dead peer; the device's own waits also end on the
//! heap's abort word, which the launching thread raises.
//!
//! # Memory
//! The proxy writes this PE's heap only through its host mapping; a PE whose
//! heap is not host-visible runs no proxy (device code then raises
//! `ERR_UNREACHABLE` for PEs on other devices; host collectives still work
//! through staging).
//!
//! [`CELL_BYTES`]: crate::sync::layout::CELL_BYTES

mod heap;
mod inbox;
mod jobs;
mod wire;
mod worker;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use vkshmem_device::collectives::ReduceOp;
use vkshmem_device::layout as dl;

use crate::error::{Error, Result};
use crate::sync::layout::{ABORT_PE_MASK, INBOX_BELL_AT};
use crate::sync::segment::futex_wake;
use crate::sync::Plane;
use crate::transport::word::WordOp;
use crate::vk::memory::SharedMemory;

use heap::OwnHeap;
use jobs::HostOp;
pub(crate) use jobs::RmaSlot;
use wire::le_u64;
use worker::Worker;

/// Combines `n` elements of each slot into `out` (`crate::combine::ReduceFn`).
pub(crate) type Combine = fn(ReduceOp, usize, &[*const u8], *mut u8);

/// The combiner for collectives kind `kind` (an index in `KINDS`).
pub(crate) type CombineFor = fn(u32) -> Option<Combine>;

/// A way to PEs of other nodes (a job of several nodes under mpirun: MPI,
/// `crate::bootstrap::mpi::ProxyLink`): a message for a PE it names goes
/// through it instead of that PE's inbox, and messages from those PEs come
/// back through it. It must keep each pair's messages in order.
pub(crate) trait RemoteLink: Send {
    /// Whether PE `pe` is reached through the link.
    fn remote(&self, pe: u32) -> bool;
    /// Sends one message (a header and its payload, as bytes) to `to`.
    fn send(&mut self, to: u32, bytes: Vec<u8>);
    /// Makes progress on the sends; the next message that arrived, if any.
    fn poll(&mut self) -> Option<Vec<u8>>;
    /// No send is in flight.
    fn idle(&self) -> bool;
}

/// What the owning context and the thread share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Launches in progress that may use the proxy.
    active: AtomicU32,
    quiet_asked: AtomicU64,
    quiet_done: AtomicU64,
    quiet_failed: AtomicBool,
    /// Ring tickets taken so far.
    taken: AtomicU32,
    /// Every store, put and atomic sent so far has been acknowledged by a
    /// quiet's ping (the host quiet's fast path).
    all_landed: AtomicBool,
    /// Host gets and puts not yet taken by the thread.
    rma: Mutex<VecDeque<(HostOp, Arc<RmaSlot>)>>,
    /// `proxy_head` when the last launch ended (no other kernel of this PE
    /// runs then): a ticket below it that is still not posted was abandoned
    /// (its kernel stopped while waiting for a free entry: loops cut or
    /// aborted), an answer below it that is still not collected too.
    settled: AtomicU32,
}

/// A running proxy thread; stopped and joined on drop.
pub struct Proxy {
    shared: Arc<Shared>,
    plane: Arc<Plane>,
    pe: u32,
    /// The control header's `proxy_head` (tickets device code claimed).
    head: *const AtomicU32,
    /// Keeps `head` mapped.
    _memory: Arc<SharedMemory>,
    /// Taken by [`Proxy::stop`].
    thread: Mutex<Option<JoinHandle<()>>>,
}

// SAFETY: `head` points into the host mapping of `_memory`, kept alive by the
// struct; it is only read atomically.
unsafe impl Send for Proxy {}
// SAFETY: as for Send; every other field is Sync.
unsafe impl Sync for Proxy {}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("pe", &self.pe).finish()
    }
}

impl Proxy {
    /// Starts PE `pe`'s proxy over its heap `heap` (which must be host-mapped)
    /// and the node segment under `plane`.
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable)-free: [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the heap has
    /// no host mapping; an I/O error when the thread cannot be spawned.
    pub(crate) fn start(
        plane: Arc<Plane>,
        heap: Arc<SharedMemory>,
        pe: u32,
        npes: u32,
        combine: CombineFor,
        link: Option<Box<dyn RemoteLink>>,
    ) -> Result<Proxy> {
        let base = heap
            .mapped()
            .ok_or_else(|| Error::InvalidArgument("the proxy needs a host-mapped heap".into()))?;
        let own = OwnHeap {
            base: base.as_ptr(),
            len: heap.size(),
            _memory: heap.clone(),
        };
        let head = own.head() as *const AtomicU32;
        let shared = Arc::new(Shared::default());
        shared.all_landed.store(true, Ordering::SeqCst);
        let mut w = Worker {
            pe,
            npes,
            plane: plane.clone(),
            heap: own,
            ring_at: dl::PROXY_RING_WORD as u64 * 4,
            shared: shared.clone(),
            combine,
            tail: 0,
            inbox_head: 0,
            outbox: VecDeque::new(),
            next_token: 1,
            pending: HashMap::new(),
            jobs: HashMap::new(),
            next_job: 0,
            quiet_served: 0,
            sent_gen: vec![0; npes as usize],
            acked_gen: vec![0; npes as usize],
            link,
        };
        let thread = std::thread::Builder::new()
            .name(format!("vkshmem-proxy-{pe}"))
            .spawn(move || w.run())
            .map_err(|e| Error::io("starting the proxy thread", e))?;
        tracing::info!(
            "PE {pe}: proxy thread started (device code reaches PEs on other devices through it)"
        );
        Ok(Proxy {
            shared,
            plane,
            pe,
            head,
            _memory: heap,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Wakes the thread now (it naps while idle).
    fn wake(&self) {
        ring_bell(&self.plane, self.pe);
    }

    /// Marks a launch that may post requests: the thread polls the ring
    /// closely until the guard drops.
    pub(crate) fn busy(&self) -> BusyGuard<'_> {
        self.shared.active.fetch_add(1, Ordering::SeqCst);
        self.wake();
        BusyGuard(self)
    }

    /// A handle that marks device work in flight without a launch of ours
    /// (queued collectives, whose kernels run from command buffers: the
    /// queue's progress thread holds it while any is outstanding). Without
    /// it the thread naps [`IDLE_NAP`] between looks at the ring, and every
    /// proxied request of a queued kernel waited that long on both sides.
    ///
    /// [`IDLE_NAP`]: worker::IDLE_NAP
    pub(crate) fn activity(&self) -> Activity {
        Activity {
            shared: self.shared.clone(),
            plane: self.plane.clone(),
            pe: self.pe,
        }
    }

    /// Waits until every request device code posted so far has landed at its
    /// target (`shmem_quiet` for the host: posted stores included).
    ///
    /// # Errors
    /// [`Error::PeerFailed`](crate::Error::PeerFailed)-style errors when the job aborts first.
    pub(crate) fn quiet(&self) -> Result<()> {
        // SAFETY: see the Send impl.
        let head = unsafe { &*self.head }.load(Ordering::SeqCst);
        if head == self.shared.taken.load(Ordering::SeqCst)
            && self.shared.all_landed.load(Ordering::SeqCst)
        {
            // Every ticket is taken, and everything sent has been
            // acknowledged by a ping.
            return Ok(());
        }
        let ticket = self.shared.quiet_asked.fetch_add(1, Ordering::SeqCst) + 1;
        self.wake();
        let mut nap = Duration::from_micros(5);
        while self.shared.quiet_done.load(Ordering::SeqCst) < ticket {
            let word = self.plane.abort_word();
            if word != 0 || self.shared.quiet_failed.load(Ordering::SeqCst) {
                return Err(Error::PeerFailed {
                    pe: word & ABORT_PE_MASK,
                    how:
                        "the job aborted while this PE's proxy still had requests in flight (quiet)"
                            .into(),
                });
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(1));
        }
        Ok(())
    }
}

impl Proxy {
    /// Copies `dst.len()` bytes of PE `pe`'s heap at byte `at` into `dst`
    /// (host RMA to a PE on another device).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a range outside the heap;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when the job aborts first.
    pub(crate) fn get(&self, pe: u32, at: u64, dst: &mut [u8]) -> Result<()> {
        let bytes = self.rma(HostOp::Get {
            pe,
            at,
            n: dst.len() as u64,
        })?;
        dst.copy_from_slice(&bytes);
        Ok(())
    }

    /// Copies `src` into PE `pe`'s heap at byte `at`; returns once it landed.
    ///
    /// # Errors
    /// As [`Proxy::get`].
    pub(crate) fn put(&self, pe: u32, at: u64, src: &[u8]) -> Result<()> {
        self.rma(HostOp::Put {
            pe,
            at,
            data: src.to_vec(),
        })
        .map(drop)
    }

    /// Applies the atomic `w` to its word, on the word's PE's proxy;
    /// returns the old value. Ordered after this PE's earlier host puts to
    /// that PE.
    ///
    /// # Errors
    /// As [`Proxy::get`].
    pub(crate) fn amo(&self, w: WordOp) -> Result<u64> {
        let b = self.rma(HostOp::Amo(w))?;
        Ok(le_u64(&b))
    }

    fn rma(&self, op: HostOp) -> Result<Vec<u8>> {
        let n = match &op {
            HostOp::Get { n, .. } => *n,
            HostOp::Put { data, .. } => data.len() as u64,
            HostOp::Amo(w) => u64::from(w.width),
        };
        if n > u32::MAX as u64 {
            return Err(Error::InvalidArgument(format!(
                "a host access of {n} bytes to a PE on another device: at most {} bytes at once",
                u32::MAX
            )));
        }
        let slot = Arc::new(RmaSlot::default());
        self.shared
            .rma
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back((op, slot.clone()));
        self.wake();
        let mut answer = slot.answer.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some((status, bytes)) = answer.take() {
                if status == 0 {
                    return Ok(bytes);
                }
                return Err(Error::InvalidArgument(format!(
                    "the proxy could not carry the access: {}",
                    dl::describe_errors(status).join("; ")
                )));
            }
            let word = self.plane.abort_word();
            if word != 0 {
                return Err(Error::PeerFailed {
                    pe: word & ABORT_PE_MASK,
                    how: "the job aborted while this PE waited for the proxy (host access to a PE on another device)".into(),
                });
            }
            answer = slot
                .cv
                .wait_timeout(answer, Duration::from_millis(10))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Rings PE `pe`'s inbox bell, waking its proxy thread from its nap.
fn ring_bell(plane: &Plane, pe: u32) {
    let seg = plane.segment();
    let bell = seg.word(seg.layout().inbox(pe) + INBOX_BELL_AT);
    bell.fetch_add(1, Ordering::SeqCst);
    futex_wake(bell);
}

/// See [`Proxy::activity`]: owns what it needs, so a thread that must not
/// hold the context can keep it.
pub(crate) struct Activity {
    shared: Arc<Shared>,
    plane: Arc<Plane>,
    pe: u32,
}

impl Activity {
    /// As [`Proxy::busy`], until the guard drops.
    pub(crate) fn busy(&self) -> ActiveGuard<'_> {
        self.shared.active.fetch_add(1, Ordering::SeqCst);
        ring_bell(&self.plane, self.pe);
        ActiveGuard(self)
    }
}

/// See [`Activity::busy`].
pub(crate) struct ActiveGuard<'a>(&'a Activity);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.shared.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// See [`Proxy::busy`].
pub(crate) struct BusyGuard<'a>(&'a Proxy);

impl BusyGuard<'_> {
    /// The launch's kernel has ended (its fence signalled), and no other
    /// kernel of this PE runs (the caller holds the submit lock and has no
    /// queued collective outstanding): every ticket claimed so far belongs to
    /// an ended kernel. The ring's reader loads `settled` before an entry's
    /// sequence word (see `Worker::take_ring`).
    pub(crate) fn settle(&self) {
        // SAFETY: see Proxy's Send impl.
        let head = unsafe { &*self.0.head }.load(Ordering::SeqCst);
        self.0.shared.settled.store(head, Ordering::SeqCst);
    }
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.shared.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Proxy {
    /// Stops the thread and waits for it (its link to other nodes goes
    /// with it). Later calls, and the drop, do nothing.
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.wake();
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            if t.join().is_err() {
                tracing::warn!("PE {}: the proxy thread panicked", self.pe);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}
