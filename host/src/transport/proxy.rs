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

use std::collections::{HashMap, VecDeque};
use std::mem::offset_of;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vkshmem_device::collectives::{ReduceOp, KINDS};
use vkshmem_device::layout::{
    self as dl, ControlHeader, ProxyEntry, TeamEntry, ERR_ABORTED, ERR_BAD_ADDRESS, ERR_BAD_PE,
    ERR_BAD_TEAM, PROXY_SLOTS,
};

use crate::error::{Error, Result};
use crate::sync::layout::{
    ABORT_PE_MASK, CELL_BYTES, INBOX_BELL_AT, INBOX_CELLS, INBOX_SLEEPERS_AT, INBOX_TAIL_AT,
};
use crate::sync::segment::{futex_wait, futex_wake, Segment};
use crate::sync::Plane;
use crate::vk::memory::SharedMemory;

/// Combines `n` elements of each slot into `out` (`collective::combine::ReduceFn`).
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

/// The little-endian value of the first (up to 8) bytes of `b`.
fn le_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(w)
}

/// Message kinds.
const M_STORE: u32 = 1;
const M_AMO: u32 = 2;
const M_LOAD: u32 = 3;
const M_GET: u32 = 4;
const M_PUT: u32 = 5;
const M_PING: u32 = 6;
const M_VALUE: u32 = 7;
const M_DATA: u32 = 8;
const M_ACK: u32 = 9;
/// A host atomic of `len` (4 or 8) bytes at `addr`, op `op` (`PX_*`); the
/// payload holds the operand and the compare value (two u64); answered with
/// `M_DATA` holding the old value.
const M_HAMO: u32 = 10;

/// A message's header, at the start of its cell (the sequence word first).
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Header {
    seq: u32,
    kind: u32,
    from: u32,
    token: u32,
    /// Byte address in the receiver's heap (requests), or unused.
    addr: u64,
    /// Payload bytes in this cell (PUT, DATA); bytes asked (GET).
    len: u32,
    value: u32,
    cmp: u32,
    /// `PX_*` of an atomic.
    op: u32,
    /// Where this cell's payload goes in the whole transfer.
    offset: u32,
    /// 1 on a transfer's last cell.
    last: u32,
    /// 0 or `ERR_*` bits (answers).
    status: u32,
    /// GET: elements of `len` bytes (0 counts as 1).
    count: u32,
    /// GET: bytes between elements in the receiver's heap.
    stride: u32,
    _pad: u32,
}

const HEADER_BYTES: usize = std::mem::size_of::<Header>();
/// Payload bytes per cell.
const PAYLOAD: usize = CELL_BYTES - HEADER_BYTES;
/// New ring entries are taken only while the outbox holds fewer messages.
const OUTBOX_MAX: usize = 256;
/// Idle rounds spent yielding before the thread sleeps.
const SPIN_ROUNDS: u32 = 200;
/// How long an idle proxy sleeps between looks at the ring (a launch that
/// uses the proxy wakes it at once).
const IDLE_NAP: Duration = Duration::from_millis(2);
/// The nap while a launch runs.
const BUSY_NAP: Duration = Duration::from_micros(20);

struct Msg {
    to: u32,
    h: Header,
    payload: Vec<u8>,
}

/// This PE's heap as the proxy sees it: the host mapping.
struct OwnHeap {
    base: *mut u8,
    len: u64,
    _memory: Arc<SharedMemory>,
}

// SAFETY: `base` is the host mapping of `_memory`, which this struct keeps
// alive; the mapping may be used from any thread (vkMapMemory gives a plain
// host pointer). Device code and other host threads write the same memory:
// every shared word is accessed atomically, and bulk copies cover bytes the
// protocol hands to one writer at a time (the requester's dest or source).
unsafe impl Send for OwnHeap {}

impl OwnHeap {
    fn range(&self, at: u64, n: u64) -> bool {
        at.checked_add(n).is_some_and(|end| end <= self.len)
    }

    /// The word at byte `at` (aligned, in range).
    fn word(&self, at: u64) -> Option<&AtomicU32> {
        if at % 4 != 0 || !self.range(at, 4) {
            return None;
        }
        // SAFETY: in range and aligned (checked; the mapping is page aligned);
        // AtomicU32 has u32's layout, and every word both sides share is
        // accessed atomically by the device too.
        Some(unsafe { &*(self.base.add(at as usize) as *const AtomicU32) })
    }

    fn read(&self, at: u64, out: &mut [u8]) {
        debug_assert!(self.range(at, out.len() as u64));
        // SAFETY: in range (callers check); see the Send impl for who writes.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(at as usize), out.as_mut_ptr(), out.len())
        }
    }

    fn write(&self, at: u64, src: &[u8]) {
        debug_assert!(self.range(at, src.len() as u64));
        // SAFETY: as for read.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.add(at as usize), src.len())
        }
    }

    /// Raises device error `bits` in this PE's control header, as device code
    /// does (the first error names the PE and word).
    fn raise(&self, bits: u32, pe: u32, word: u32) {
        let at = |offset: usize| self.word(offset as u64).expect("control header");
        if at(offset_of!(ControlHeader, error)).fetch_or(bits, Ordering::SeqCst) == 0 {
            at(offset_of!(ControlHeader, error_pe)).store(pe, Ordering::SeqCst);
            at(offset_of!(ControlHeader, error_addr)).store(word, Ordering::SeqCst);
        }
    }

    /// The control header's `proxy_head`: tickets device code claimed.
    fn head(&self) -> &AtomicU32 {
        self.word(offset_of!(ControlHeader, proxy_head) as u64)
            .expect("control header")
    }
}

/// Where the answer to a message goes.
#[derive(Debug, Clone, Copy)]
enum ReplyTo {
    /// The job's result word.
    Word,
    /// This PE's heap at `dst`: elements of `es` bytes, `stride` apart (a
    /// get; a plain one is one element).
    Heap { dst: u64, es: u64, stride: u64 },
    /// Member `member`'s buffer of a reduction.
    Buf { member: usize },
    /// The job's own buffer (a host get).
    JobBuf,
    /// An acknowledgement.
    Ack,
    /// A quiet's ping to `pe`: everything sent there up to `gen` landed.
    Ping { pe: u32, gen: u64 },
}

/// Who waits for a job.
#[derive(Clone)]
enum Done {
    /// Device code, at ring entry byte `at`, ticket lap `lap`.
    Entry { at: u64, lap: u32 },
    /// The host (`Proxy::quiet`), its request number.
    Host { ticket: u64 },
    /// A host get or put (`Proxy::get`, `Proxy::put`).
    Rma(Arc<RmaSlot>),
}

/// Where a host get or put waits for its answer: the status and, for a get,
/// the bytes.
#[derive(Default)]
pub(crate) struct RmaSlot {
    answer: Mutex<Option<(u32, Vec<u8>)>>,
    cv: Condvar,
}

/// A host get or put for the proxy thread.
enum HostOp {
    Get {
        pe: u32,
        at: u64,
        n: u64,
    },
    Put {
        pe: u32,
        at: u64,
        data: Vec<u8>,
    },
    /// An atomic on a word of `width` bytes (`super::word::apply`).
    Amo {
        pe: u32,
        at: u64,
        width: u32,
        op: u32,
        value: u64,
        cmp: u64,
    },
}

/// A reduction's share in progress.
struct Reduction {
    members: Vec<u32>,
    me: usize,
    /// Byte offset of this PE's share in the arrays, and its length.
    lo: u64,
    n: u64,
    dest: u64,
    kind: u32,
    op: ReduceOp,
    /// Each member's share of its source (u64 backing: aligned for any kind).
    bufs: Vec<Vec<u64>>,
    putting: bool,
    /// The reduce-scatter form: the result goes to this PE's dest only.
    own: bool,
}

/// The elements of a bulk request ([`dl::PX_GET`], [`dl::PX_PUT`]): `count`
/// of `es` bytes, `ss` bytes apart at the source and `ds` at the dest; a
/// count of 0 is one contiguous block.
#[derive(Clone, Copy)]
struct Strided {
    es: u64,
    count: u64,
    ss: u64,
    ds: u64,
}

impl Strided {
    fn of(e: &ProxyEntry) -> Strided {
        let es = e.bytes as u64;
        let (ss, ds) = if e.count == 0 {
            (es, es)
        } else {
            (e.sstride as u64, e.dstride as u64)
        };
        Strided {
            es,
            count: e.count.max(1) as u64,
            ss,
            ds,
        }
    }
}

struct Job {
    done: Done,
    outstanding: u32,
    /// A word op's old value (64 bits for a 64-bit one).
    result: u64,
    status: u32,
    reduce: Option<Reduction>,
    /// A host get's bytes.
    buf: Vec<u8>,
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
    /// [`Error::Unreachable`]-free: [`Error::InvalidArgument`] when the heap has
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
            ring_at: dl::proxy_ring_word(npes) as u64 * 4,
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
    /// [`Error::PeerFailed`]-style errors when the job aborts first.
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
    /// [`Error::InvalidArgument`] for a range outside the heap;
    /// [`Error::PeerFailed`] when the job aborts first.
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

    /// Applies the atomic `op` (`PX_*`) to the word of `width` (4 or 8)
    /// bytes at byte `at` of PE `pe`'s heap, on that PE's proxy; returns the
    /// old value. Ordered after this PE's earlier host puts to `pe`.
    ///
    /// # Errors
    /// As [`Proxy::get`].
    pub(crate) fn amo(
        &self,
        pe: u32,
        at: u64,
        width: u32,
        op: u32,
        value: u64,
        cmp: u64,
    ) -> Result<u64> {
        let b = self.rma(HostOp::Amo {
            pe,
            at,
            width,
            op,
            value,
            cmp,
        })?;
        Ok(le_u64(&b))
    }

    fn rma(&self, op: HostOp) -> Result<Vec<u8>> {
        let n = match &op {
            HostOp::Get { n, .. } => *n,
            HostOp::Put { data, .. } => data.len() as u64,
            HostOp::Amo { width, .. } => u64::from(*width),
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

/// `h` as sent from `from` with `payload` (into an inbox cell or over the
/// remote link): sequence word cleared, sender, and the payload's length for
/// the kinds that carry one.
fn stamped(mut h: Header, from: u32, payload: &[u8]) -> Header {
    h.seq = 0;
    h.from = from;
    if matches!(h.kind, M_PUT | M_DATA) {
        h.len = payload.len() as u32;
    }
    h
}

/// Payload bytes a message of `h`'s kind carries (its length is in `len`
/// for data, fixed for a host atomic's two operands).
fn payload_len(h: &Header) -> usize {
    match h.kind {
        M_PUT | M_DATA => h.len as usize,
        M_HAMO => 16,
        _ => 0,
    }
}

/// Puts a message from `from` into PE `to`'s inbox (see `sync::layout`);
/// false when the inbox is full. Many producers may call it at once.
fn inbox_send(seg: &Segment, from: u32, to: u32, h: Header, payload: &[u8]) -> bool {
    debug_assert!(payload.len() <= PAYLOAD);
    let l = seg.layout();
    let inbox = l.inbox(to);
    let tail = seg.word(inbox + INBOX_TAIL_AT);
    let mut pos = tail.load(Ordering::Relaxed);
    loop {
        let i = pos % INBOX_CELLS;
        let cell = l.cell(to, i);
        let seq = seg.word(cell).load(Ordering::Acquire).wrapping_add(i);
        let dif = seq.wrapping_sub(pos) as i32;
        if dif < 0 {
            return false; // the cell still holds the message of a lap ago
        }
        if dif > 0 {
            pos = tail.load(Ordering::Relaxed); // another producer took pos
            continue;
        }
        if let Err(now) = tail.compare_exchange_weak(
            pos,
            pos.wrapping_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            pos = now;
            continue;
        }
        let h = stamped(h, from, payload);
        // The header after the sequence word, then the payload; the sequence
        // word last (release) publishes them.
        seg.write(cell + 4, &bytemuck::bytes_of(&h)[4..]);
        seg.write(cell + HEADER_BYTES, payload);
        seg.word(cell)
            .store(pos.wrapping_add(1).wrapping_sub(i), Ordering::Release);
        let bell = seg.word(inbox + INBOX_BELL_AT);
        bell.fetch_add(1, Ordering::SeqCst);
        if seg.word(inbox + INBOX_SLEEPERS_AT).load(Ordering::SeqCst) != 0 {
            futex_wake(bell);
        }
        return true;
    }
}

/// The message at position `pos` of PE `pe`'s inbox, if it has arrived; its
/// cell is freed for position `pos + INBOX_CELLS`. Only `pe`'s proxy calls
/// it, with consecutive positions.
fn inbox_recv(seg: &Segment, pe: u32, pos: u32) -> Option<(Header, Vec<u8>)> {
    let i = pos % INBOX_CELLS;
    let cell = seg.layout().cell(pe, i);
    if seg.word(cell).load(Ordering::Acquire).wrapping_add(i) != pos.wrapping_add(1) {
        return None;
    }
    let mut h = Header::default();
    seg.read(cell, bytemuck::bytes_of_mut(&mut h));
    let mut payload = vec![0u8; payload_len(&h).min(PAYLOAD)];
    if !payload.is_empty() {
        seg.read(cell + HEADER_BYTES, &mut payload);
    }
    seg.word(cell).store(
        pos.wrapping_add(INBOX_CELLS).wrapping_sub(i),
        Ordering::Release,
    );
    Some((h, payload))
}

struct Worker {
    pe: u32,
    npes: u32,
    plane: Arc<Plane>,
    heap: OwnHeap,
    /// Byte address of the ring in this PE's heap.
    ring_at: u64,
    shared: Arc<Shared>,
    combine: CombineFor,
    /// The next ring ticket to serve.
    tail: u32,
    inbox_head: u32,
    outbox: VecDeque<Msg>,
    next_token: u32,
    pending: HashMap<u32, (u64, ReplyTo)>,
    jobs: HashMap<u64, Job>,
    next_job: u64,
    quiet_served: u64,
    /// Per PE: stores, puts and atomics sent there so far, and how many of
    /// them a ping has acknowledged.
    sent_gen: Vec<u64>,
    acked_gen: Vec<u64>,
    /// PEs of other nodes ([`RemoteLink`]).
    link: Option<Box<dyn RemoteLink>>,
}

impl Worker {
    fn run(&mut self) {
        let mut idle = 0u32;
        let mut stopping: Option<Instant> = None;
        loop {
            let seg = self.plane.segment();
            let bell_at = seg.layout().inbox(self.pe) + INBOX_BELL_AT;
            let seen = seg.word(bell_at).load(Ordering::SeqCst);
            let aborting = self.plane.abort_word() != 0;
            if aborting {
                self.fail_all();
            }
            let mut did = self.serve_inbox();
            did |= self.serve_link();
            did |= self.take_ring(aborting);
            did |= self.take_quiet();
            did |= self.take_rma();
            did |= self.flush();
            if self.shared.stop.load(Ordering::SeqCst) {
                let since = *stopping.get_or_insert_with(Instant::now);
                let idle_now = self.jobs.is_empty() && self.outbox.is_empty();
                if idle_now || aborting || since.elapsed() > Duration::from_millis(200) {
                    return;
                }
            }
            if did {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle < SPIN_ROUNDS {
                std::thread::yield_now();
            } else if self.shared.active.load(Ordering::SeqCst) > 0
                || !self.jobs.is_empty()
                || !self.outbox.is_empty()
                || self.link.as_ref().is_some_and(|l| !l.idle())
            {
                std::thread::sleep(BUSY_NAP);
            } else {
                let seg = self.plane.segment();
                let inbox = seg.layout().inbox(self.pe);
                seg.word(inbox + INBOX_SLEEPERS_AT)
                    .store(1, Ordering::SeqCst);
                futex_wait(seg.word(bell_at), seen, IDLE_NAP);
                seg.word(inbox + INBOX_SLEEPERS_AT)
                    .store(0, Ordering::SeqCst);
            }
        }
    }

    fn token(&mut self) -> u32 {
        let t = self.next_token;
        self.next_token = self.next_token.wrapping_add(1).max(1);
        t
    }

    fn send(&mut self, to: u32, h: Header, payload: Vec<u8>) {
        if matches!(h.kind, M_STORE | M_PUT | M_AMO | M_HAMO) {
            self.sent_gen[to as usize] += 1;
            self.shared.all_landed.store(false, Ordering::SeqCst);
        }
        self.outbox.push_back(Msg { to, h, payload });
    }

    /// Sends what the inboxes take, in order; stops at the first full one.
    fn flush(&mut self) -> bool {
        let mut any = false;
        while let Some(m) = self.outbox.pop_front() {
            if !self.try_send(&m) {
                self.outbox.push_front(m);
                break;
            }
            any = true;
        }
        any
    }

    fn try_send(&mut self, m: &Msg) -> bool {
        if let Some(link) = self.link.as_mut().filter(|l| l.remote(m.to)) {
            let h = stamped(m.h, self.pe, &m.payload);
            let mut bytes = bytemuck::bytes_of(&h).to_vec();
            bytes.extend_from_slice(&m.payload);
            link.send(m.to, bytes);
            return true;
        }
        inbox_send(self.plane.segment(), self.pe, m.to, m.h, &m.payload)
    }

    /// Applies and answers the messages that came from other nodes.
    fn serve_link(&mut self) -> bool {
        let mut any = false;
        for _ in 0..INBOX_CELLS {
            let Some(bytes) = self.link.as_mut().and_then(|l| l.poll()) else {
                break;
            };
            any = true;
            if bytes.len() < HEADER_BYTES {
                tracing::warn!(
                    "PE {}: proxy: a short message from another node ({} bytes)",
                    self.pe,
                    bytes.len()
                );
                continue;
            }
            let h: Header = bytemuck::pod_read_unaligned(&bytes[..HEADER_BYTES]);
            let payload = &bytes[HEADER_BYTES..];
            let n = payload_len(&h).min(payload.len());
            self.handle(h, &payload[..n]);
        }
        any
    }

    /// Applies and answers the messages in this PE's inbox.
    fn serve_inbox(&mut self) -> bool {
        let mut any = false;
        for _ in 0..INBOX_CELLS {
            let Some((h, payload)) = inbox_recv(self.plane.segment(), self.pe, self.inbox_head)
            else {
                break;
            };
            self.inbox_head = self.inbox_head.wrapping_add(1);
            self.handle(h, &payload);
            any = true;
        }
        any
    }

    fn answer(&mut self, h: &Header, kind: u32, value: u32, status: u32) {
        let a = Header {
            kind,
            token: h.token,
            value,
            status,
            last: 1,
            ..Default::default()
        };
        self.send(h.from, a, Vec::new());
    }

    fn handle(&mut self, h: Header, payload: &[u8]) {
        match h.kind {
            M_STORE => match self.heap.word(h.addr) {
                Some(w) => w.store(h.value, Ordering::SeqCst),
                None => self
                    .heap
                    .raise(ERR_BAD_ADDRESS, h.from, (h.addr / 4) as u32),
            },
            M_LOAD | M_AMO => {
                let (v, st) = match self.heap.word(h.addr) {
                    None => (0, ERR_BAD_ADDRESS),
                    Some(w) => (
                        match (h.kind, h.op) {
                            (M_LOAD, _) => w.load(Ordering::SeqCst),
                            (_, dl::PX_ADD) => w.fetch_add(h.value, Ordering::SeqCst),
                            (_, dl::PX_AND) => w.fetch_and(h.value, Ordering::SeqCst),
                            (_, dl::PX_OR) => w.fetch_or(h.value, Ordering::SeqCst),
                            (_, dl::PX_XOR) => w.fetch_xor(h.value, Ordering::SeqCst),
                            (_, dl::PX_SWAP) => w.swap(h.value, Ordering::SeqCst),
                            _ => match w.compare_exchange(
                                h.cmp,
                                h.value,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            ) {
                                Ok(v) | Err(v) => v,
                            },
                        },
                        0,
                    ),
                };
                self.answer(&h, M_VALUE, v, st);
            }
            M_GET => {
                let (es, count, stride) = (h.len as u64, h.count.max(1) as u64, h.stride as u64);
                let ok = count == 1 && self.heap.range(h.addr, es)
                    || es <= stride && self.heap.range(h.addr, (count - 1) * stride + es);
                if !ok {
                    self.answer(&h, M_DATA, 0, ERR_BAD_ADDRESS);
                    return;
                }
                // The elements packed, in cells of PAYLOAD bytes.
                let total = es * count;
                let mut off = 0u64;
                loop {
                    let n = (total - off).min(PAYLOAD as u64);
                    let mut p = vec![0u8; n as usize];
                    let mut at = 0u64;
                    while at < n {
                        let (i, b) = ((off + at) / es, (off + at) % es);
                        let piece = (es - b).min(n - at);
                        self.heap.read(
                            h.addr + i * stride + b,
                            &mut p[at as usize..(at + piece) as usize],
                        );
                        at += piece;
                    }
                    let last = off + n >= total;
                    let a = Header {
                        kind: M_DATA,
                        token: h.token,
                        offset: off as u32,
                        last: u32::from(last),
                        ..Default::default()
                    };
                    self.send(h.from, a, p);
                    off += n;
                    if last {
                        break;
                    }
                }
            }
            M_PUT => {
                let ok = self.heap.range(h.addr, payload.len() as u64);
                if ok {
                    self.heap.write(h.addr, payload);
                }
                if h.last == 1 || !ok {
                    // An out-of-range piece answers at once (the sender's job
                    // then fails; the rest of its pieces are dropped the same way).
                    self.answer(&h, M_ACK, 0, if ok { 0 } else { ERR_BAD_ADDRESS });
                }
            }
            M_HAMO => {
                let width = h.len;
                let ok = matches!(width, 4 | 8)
                    && h.addr % u64::from(width) == 0
                    && self.heap.range(h.addr, u64::from(width))
                    && payload.len() >= 16;
                if !ok {
                    self.answer(&h, M_DATA, 0, ERR_BAD_ADDRESS);
                    return;
                }
                let value = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
                let cmp = u64::from_le_bytes(payload[8..16].try_into().expect("8 bytes"));
                // SAFETY: in range and aligned to its width (checked above);
                // the mapping lives as long as `self.heap`.
                let old = unsafe {
                    super::word::apply(self.heap.base.add(h.addr as usize), width, h.op, value, cmp)
                };
                let a = Header {
                    kind: M_DATA,
                    token: h.token,
                    last: 1,
                    ..Default::default()
                };
                self.send(h.from, a, old.to_le_bytes()[..width as usize].to_vec());
            }
            M_PING => self.answer(&h, M_ACK, 0, 0),
            M_VALUE | M_DATA | M_ACK => self.on_answer(h, payload),
            _ => tracing::warn!(
                "PE {}: proxy message of unknown kind {} from PE {}",
                self.pe,
                h.kind,
                h.from
            ),
        }
    }

    fn on_answer(&mut self, h: Header, payload: &[u8]) {
        let Some(&(job, to)) = self.pending.get(&h.token) else {
            return; // failed and forgotten (abort), or a duplicate error answer
        };
        let last = h.kind != M_DATA || h.last == 1 || h.status != 0;
        if last {
            self.pending.remove(&h.token);
        }
        let Some(j) = self.jobs.get_mut(&job) else {
            return;
        };
        j.status |= h.status;
        match (to, h.kind) {
            (ReplyTo::Word, M_VALUE) => j.result = u64::from(h.value),
            (ReplyTo::Word, M_DATA) if h.status == 0 => {
                j.result = le_u64(payload);
            }
            (ReplyTo::Heap { dst, es, stride }, M_DATA) if h.status == 0 => {
                let off = h.offset as u64;
                let mut at = 0u64;
                while at < payload.len() as u64 {
                    let (i, b) = ((off + at) / es, (off + at) % es);
                    let piece = (es - b).min(payload.len() as u64 - at);
                    self.heap.write(
                        dst + i * stride + b,
                        &payload[at as usize..(at + piece) as usize],
                    );
                    at += piece;
                }
            }
            (ReplyTo::Ping { pe, gen }, M_ACK) => {
                let acked = &mut self.acked_gen[pe as usize];
                *acked = (*acked).max(gen);
                let landed = self
                    .sent_gen
                    .iter()
                    .zip(&self.acked_gen)
                    .all(|(s, a)| s == a);
                self.shared.all_landed.store(landed, Ordering::SeqCst);
            }
            (ReplyTo::JobBuf, M_DATA) if h.status == 0 => {
                let at = h.offset as usize;
                j.buf[at..at + payload.len()].copy_from_slice(payload);
            }
            (ReplyTo::Buf { member }, M_DATA) if h.status == 0 => {
                if let Some(r) = j.reduce.as_mut() {
                    let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut r.bufs[member]);
                    let at = h.offset as usize;
                    buf[at..at + payload.len()].copy_from_slice(payload);
                }
            }
            _ => {}
        }
        if last {
            j.outstanding -= 1;
            if j.outstanding == 0 {
                self.advance(job);
            }
        }
    }

    /// A job whose messages are all answered: the next step of a reduction,
    /// or its answer.
    fn advance(&mut self, id: u64) {
        let Some(mut j) = self.jobs.remove(&id) else {
            return;
        };
        if j.status == 0 {
            if let Some(r) = j.reduce.as_mut().filter(|r| !r.putting) {
                r.putting = true;
                let out = self.combine_share(r);
                match out {
                    Some(out) => {
                        self.heap.write(r.dest + r.lo, &out);
                        let (dest, lo) = (r.dest, r.lo);
                        let others: Vec<u32> = r
                            .members
                            .iter()
                            .enumerate()
                            .filter(|&(i, _)| i != r.me && !r.own)
                            .map(|(_, &p)| p)
                            .collect();
                        j.outstanding = others.len() as u32;
                        for p in others {
                            self.put(id, p, dest + lo, &out);
                        }
                    }
                    None => j.status |= ERR_BAD_ADDRESS,
                }
                if j.outstanding > 0 && j.status == 0 {
                    self.jobs.insert(id, j);
                    return;
                }
            }
        }
        self.complete_job(j);
    }

    fn complete_job(&mut self, j: Job) {
        match j.done {
            Done::Rma(slot) => Self::answer_rma(&slot, j.status, j.buf),
            done => self.complete(done, j.result, j.status),
        }
    }

    fn answer_rma(slot: &RmaSlot, status: u32, bytes: Vec<u8>) {
        *slot.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some((status, bytes));
        slot.cv.notify_all();
    }

    fn combine_share(&self, r: &Reduction) -> Option<Vec<u8>> {
        let f = (self.combine)(r.kind)?;
        let es = KINDS[r.kind as usize].bytes as u64;
        let mut out = vec![0u64; (r.n as usize).div_ceil(8)];
        let slots: Vec<*const u8> = r.bufs.iter().map(|b| b.as_ptr().cast::<u8>()).collect();
        f(
            r.op,
            (r.n / es) as usize,
            &slots,
            out.as_mut_ptr().cast::<u8>(),
        );
        let mut bytes: Vec<u8> = bytemuck::cast_slice(&out).to_vec();
        bytes.truncate(r.n as usize);
        Some(bytes)
    }

    /// Sends `src` to PE `to` at byte `at` in pieces; the last one's answer
    /// counts for job `job`.
    fn put(&mut self, job: u64, to: u32, at: u64, src: &[u8]) {
        let token = self.token();
        self.pending.insert(token, (job, ReplyTo::Ack));
        let mut off = 0usize;
        loop {
            let n = (src.len() - off).min(PAYLOAD);
            let last = off + n >= src.len();
            let h = Header {
                kind: M_PUT,
                token,
                addr: at + off as u64,
                last: u32::from(last),
                ..Default::default()
            };
            self.send(to, h, src[off..off + n].to_vec());
            off += n;
            if last {
                break;
            }
        }
    }

    /// Sends the atomic `op` on the `width`-byte word at byte `at` of PE
    /// `pe` (one `M_HAMO`), its answer for job `id` going to `to`.
    #[allow(clippy::too_many_arguments)]
    fn send_hamo(
        &mut self,
        id: u64,
        to: ReplyTo,
        pe: u32,
        at: u64,
        width: u32,
        op: u32,
        value: u64,
        cmp: u64,
    ) {
        let token = self.token();
        self.pending.insert(token, (id, to));
        let h = Header {
            kind: M_HAMO,
            token,
            addr: at,
            len: width,
            op,
            ..Default::default()
        };
        let mut payload = value.to_le_bytes().to_vec();
        payload.extend_from_slice(&cmp.to_le_bytes());
        self.send(pe, h, payload);
    }

    fn complete(&mut self, done: Done, result: u64, status: u32) {
        match done {
            Done::Entry { at, lap } => {
                let word = |offset: usize| {
                    self.heap
                        .word(at + offset as u64)
                        .expect("the ring is in the control region")
                };
                if word(offset_of!(ProxyEntry, seq)).load(Ordering::SeqCst) != lap.wrapping_add(1) {
                    // Freed meanwhile (its kernel ended without waiting for
                    // this answer) and perhaps claimed again: not ours.
                    return;
                }
                word(offset_of!(ProxyEntry, value)).store(result as u32, Ordering::SeqCst);
                word(offset_of!(ProxyEntry, dstride))
                    .store((result >> 32) as u32, Ordering::SeqCst);
                word(offset_of!(ProxyEntry, cmp)).store(status, Ordering::SeqCst);
                word(offset_of!(ProxyEntry, seq)).store(lap.wrapping_add(2), Ordering::SeqCst);
            }
            Done::Host { ticket } => {
                if status != 0 {
                    self.shared.quiet_failed.store(true, Ordering::SeqCst);
                }
                self.shared.quiet_done.fetch_max(ticket, Ordering::SeqCst);
            }
            Done::Rma(slot) => Self::answer_rma(&slot, status, Vec::new()),
        }
    }

    fn new_job(&mut self, done: Done) -> u64 {
        let id = self.next_job;
        self.next_job += 1;
        self.jobs.insert(
            id,
            Job {
                done,
                outstanding: 0,
                result: 0,
                status: 0,
                reduce: None,
                buf: Vec::new(),
            },
        );
        id
    }

    /// Starts a quiet: a ping to every PE with stores, puts or atomics not
    /// yet acknowledged, answered after every earlier message from this
    /// proxy (inboxes keep order).
    fn quiet(&mut self, done: Done) {
        let id = self.new_job(done);
        let targets: Vec<(u32, u64)> = (0..self.npes)
            .filter(|&p| self.sent_gen[p as usize] > self.acked_gen[p as usize])
            .map(|p| (p, self.sent_gen[p as usize]))
            .collect();
        for &(pe, gen) in &targets {
            let token = self.token();
            self.pending.insert(token, (id, ReplyTo::Ping { pe, gen }));
            self.send(
                pe,
                Header {
                    kind: M_PING,
                    token,
                    ..Default::default()
                },
                Vec::new(),
            );
        }
        self.jobs.get_mut(&id).expect("new").outstanding = targets.len() as u32;
        if targets.is_empty() {
            self.advance(id);
        }
    }

    /// Takes the host's gets and puts.
    fn take_rma(&mut self) -> bool {
        let mut any = false;
        while self.outbox.len() <= OUTBOX_MAX {
            let Some((op, slot)) = self
                .shared
                .rma
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
            else {
                break;
            };
            any = true;
            let (pe, at, n) = match &op {
                HostOp::Get { pe, at, n } => (*pe, *at, *n),
                HostOp::Put { pe, at, data } => (*pe, *at, data.len() as u64),
                HostOp::Amo { pe, at, width, .. } => (*pe, *at, u64::from(*width)),
            };
            if pe >= self.npes || pe == self.pe {
                Self::answer_rma(&slot, ERR_BAD_PE, Vec::new());
                continue;
            }
            if !self.heap.range(at, n) {
                Self::answer_rma(&slot, ERR_BAD_ADDRESS, Vec::new());
                continue;
            }
            if n == 0 {
                Self::answer_rma(&slot, 0, Vec::new());
                continue;
            }
            let id = self.new_job(Done::Rma(slot));
            match op {
                HostOp::Get { .. } => {
                    let token = self.token();
                    self.pending.insert(token, (id, ReplyTo::JobBuf));
                    let h = Header {
                        kind: M_GET,
                        token,
                        addr: at,
                        len: n as u32,
                        ..Default::default()
                    };
                    self.send(pe, h, Vec::new());
                    self.jobs.get_mut(&id).expect("new").buf = vec![0; n as usize];
                }
                HostOp::Put { data, .. } => self.put(id, pe, at, &data),
                HostOp::Amo {
                    width,
                    op,
                    value,
                    cmp,
                    ..
                } => {
                    self.send_hamo(id, ReplyTo::JobBuf, pe, at, width, op, value, cmp);
                    self.jobs.get_mut(&id).expect("new").buf = vec![0; width as usize];
                }
            }
            self.jobs.get_mut(&id).expect("new").outstanding = 1;
        }
        any
    }

    fn take_quiet(&mut self) -> bool {
        let asked = self.shared.quiet_asked.load(Ordering::SeqCst);
        if asked == self.quiet_served || self.outbox.len() > OUTBOX_MAX {
            return false;
        }
        // Every ticket device code claimed before the host asked is taken
        // first (its messages then go out before the pings).
        let head = self.heap.head().load(Ordering::SeqCst);
        if head != self.tail && self.plane.abort_word() == 0 {
            return false;
        }
        self.quiet_served = asked;
        if self.plane.abort_word() != 0 {
            self.complete(Done::Host { ticket: asked }, 0, ERR_ABORTED);
        } else {
            self.quiet(Done::Host { ticket: asked });
        }
        true
    }

    /// Takes the ring's posted entries, in ticket order.
    fn take_ring(&mut self, aborting: bool) -> bool {
        let mut any = false;
        while self.outbox.len() <= OUTBOX_MAX {
            let t = self.tail;
            let at = self.ring_at + (t % PROXY_SLOTS) as u64 * ProxyEntry::WORDS as u64 * 4;
            let lap = t & !(PROXY_SLOTS - 1);
            let mut e = [0u32; ProxyEntry::WORDS as usize];
            // Tickets below `settled` belong to kernels that have ended. Read
            // before the entry: a kernel that ended before this load posted
            // its entries before it too, so the load of `seq` below sees them.
            // (Read after it, a kernel could post the entry and end in
            // between, and a posted store would be dropped as never posted:
            // a peer then waited forever for the flag it carried.)
            let settled = self.shared.settled.load(Ordering::SeqCst);
            let seq = self.heap.word(at).expect("ring").load(Ordering::SeqCst);
            if seq != lap.wrapping_add(1) {
                let ended = |ticket: u32| (settled.wrapping_sub(ticket) as i32) > 0;
                let word = self.heap.word(at).expect("ring");
                if seq == lap.wrapping_sub(PROXY_SLOTS).wrapping_add(2)
                    && ended(t.wrapping_sub(PROXY_SLOTS))
                {
                    // The previous lap's answer was never collected (its
                    // waiter gave up): free the entry for this ticket.
                    word.store(lap, Ordering::SeqCst);
                    any = true;
                    continue;
                }
                if !ended(t) {
                    break;
                }
                // Claimed by a kernel that ended without posting it: free the
                // entry for its next lap and go on.
                word.store(lap.wrapping_add(PROXY_SLOTS), Ordering::SeqCst);
                self.tail = t.wrapping_add(1);
                self.shared.taken.store(self.tail, Ordering::SeqCst);
                any = true;
                continue;
            }
            fence(Ordering::SeqCst);
            for (i, w) in e.iter_mut().enumerate() {
                *w = self
                    .heap
                    .word(at + 4 * i as u64)
                    .expect("ring")
                    .load(Ordering::SeqCst);
            }
            let entry: ProxyEntry = bytemuck::cast(e);
            self.tail = t.wrapping_add(1);
            any = true;
            let done = Done::Entry { at, lap };
            if aborting {
                self.finish_entry(&entry, done, ERR_ABORTED);
            } else {
                self.start(entry, done);
            }
            // After its messages are in the outbox (`all_landed` cleared): a host
            // quiet that sees this ticket taken also sees them.
            self.shared.taken.store(self.tail, Ordering::SeqCst);
        }
        any
    }

    /// Answers (or frees, for a posted store) an entry with `status` at once.
    fn finish_entry(&mut self, e: &ProxyEntry, done: Done, status: u32) {
        if e.op == dl::PX_STORE {
            if let Done::Entry { at, lap } = done {
                self.heap
                    .word(at)
                    .expect("ring")
                    .store(lap.wrapping_add(PROXY_SLOTS), Ordering::SeqCst);
            }
            if status != 0 {
                self.heap.raise(status, e.pe, e.addr);
            }
        } else {
            self.complete(done, 0, status);
        }
    }

    fn start(&mut self, e: ProxyEntry, done: Done) {
        let word_op = matches!(
            e.op,
            dl::PX_LOAD
                | dl::PX_STORE
                | dl::PX_ADD
                | dl::PX_AND
                | dl::PX_OR
                | dl::PX_XOR
                | dl::PX_SWAP
                | dl::PX_CAS
        );
        if (word_op || matches!(e.op, dl::PX_GET | dl::PX_PUT))
            && (e.pe >= self.npes || e.pe == self.pe)
        {
            return self.finish_entry(&e, done, ERR_BAD_PE);
        }
        let heap_len = self.heap.len;
        match e.op {
            dl::PX_STORE => {
                if (e.addr as u64 + 1) * 4 > heap_len {
                    return self.finish_entry(&e, done, ERR_BAD_ADDRESS);
                }
                let h = Header {
                    kind: M_STORE,
                    addr: e.addr as u64 * 4,
                    value: e.value,
                    ..Default::default()
                };
                self.send(e.pe, h, Vec::new());
                self.finish_entry(&e, done, 0);
            }
            op if word_op && e.bytes == 8 => {
                // A 64-bit word op: the host atomic message, applied by the
                // target's proxy like a host's (layout::ProxyEntry).
                let at = e.addr as u64 * 4;
                if e.addr % 2 != 0 || at + 8 > heap_len {
                    return self.finish_entry(&e, done, ERR_BAD_ADDRESS);
                }
                let id = self.new_job(done);
                let value = u64::from(e.value) | u64::from(e.count) << 32;
                let cmp = u64::from(e.cmp) | u64::from(e.sstride) << 32;
                self.send_hamo(id, ReplyTo::Word, e.pe, at, 8, op, value, cmp);
                self.jobs.get_mut(&id).expect("new").outstanding = 1;
            }
            op if word_op => {
                let id = self.new_job(done);
                let token = self.token();
                self.pending.insert(token, (id, ReplyTo::Word));
                let kind = if op == dl::PX_LOAD { M_LOAD } else { M_AMO };
                let h = Header {
                    kind,
                    token,
                    addr: e.addr as u64 * 4,
                    value: e.value,
                    cmp: e.cmp,
                    op,
                    ..Default::default()
                };
                self.send(e.pe, h, Vec::new());
                self.jobs.get_mut(&id).expect("new").outstanding = 1;
            }
            dl::PX_GET => {
                let (src, dst) = (e.addr as u64, e.src as u64);
                let st = Strided::of(&e);
                let Strided { es, count, ss, ds } = st;
                if es == 0 {
                    return self.finish_entry(&e, done, 0);
                }
                if !self.strided_fits(&st, src, dst) {
                    return self.finish_entry(&e, done, ERR_BAD_ADDRESS);
                }
                let id = self.new_job(done);
                let token = self.token();
                self.pending.insert(
                    token,
                    (
                        id,
                        ReplyTo::Heap {
                            dst,
                            es,
                            stride: ds,
                        },
                    ),
                );
                let h = Header {
                    kind: M_GET,
                    token,
                    addr: src,
                    len: es as u32,
                    count: count as u32,
                    stride: ss as u32,
                    ..Default::default()
                };
                self.send(e.pe, h, Vec::new());
                self.jobs.get_mut(&id).expect("new").outstanding = 1;
            }
            dl::PX_PUT => {
                // `count` elements of `bytes` bytes, strided as PX_GET's
                // (count 0: one contiguous block): one put each.
                let (dst, src) = (e.addr as u64, e.src as u64);
                let st = Strided::of(&e);
                let Strided { es, count, ss, ds } = st;
                if !self.strided_fits(&st, src, dst) {
                    return self.finish_entry(&e, done, ERR_BAD_ADDRESS);
                }
                if es == 0 {
                    return self.finish_entry(&e, done, 0);
                }
                let id = self.new_job(done);
                let mut bytes = vec![0u8; es as usize];
                for i in 0..count {
                    self.heap.read(src + i * ss, &mut bytes);
                    self.put(id, e.pe, dst + i * ds, &bytes);
                }
                self.jobs.get_mut(&id).expect("new").outstanding = count as u32;
            }
            dl::PX_QUIET => self.quiet(done),
            dl::PX_REDUCE => self.start_reduce(e, done),
            _ => self.finish_entry(&e, done, dl::ERR_BAD_ARGUMENT),
        }
    }

    /// Whether a strided request's elements stay apart (strides of at least
    /// an element) and lie in the heap, from `src` and to `dst`.
    fn strided_fits(&self, st: &Strided, src: u64, dst: u64) -> bool {
        let span = |stride: u64| (st.count - 1) * stride + st.es;
        !(st.count > 1 && (st.ss < st.es || st.ds < st.es))
            && self.heap.range(dst, span(st.ds))
            && self.heap.range(src, span(st.ss))
    }

    /// This PE's share of a reduction (see `layout::PX_REDUCE`): the same
    /// share as device code takes (`vks_share` over elements), every member's
    /// source for it fetched, combined in team order, written to this PE's
    /// dest and put to every other member's.
    fn start_reduce(&mut self, e: ProxyEntry, done: Done) {
        let slot = e.pe;
        let entry = |offset: usize| {
            self.heap
                .word(dl::team_entry_word(slot) as u64 * 4 + offset as u64)
                .map(|w| w.load(Ordering::SeqCst))
                .unwrap_or(0)
        };
        if slot >= dl::MAX_TEAMS || entry(offset_of!(TeamEntry, valid)) != 1 {
            return self.complete(done, 0, ERR_BAD_TEAM);
        }
        let (start, stride, size, me) = (
            entry(offset_of!(TeamEntry, start)) as i32,
            entry(offset_of!(TeamEntry, stride)) as i32,
            entry(offset_of!(TeamEntry, size)),
            entry(offset_of!(TeamEntry, my_index)),
        );
        let (kind, op) = (e.value & 0xff, e.value >> 8);
        let Some(op) = ReduceOp::ALL.get(op as usize).copied() else {
            return self.complete(done, 0, dl::ERR_BAD_ARGUMENT);
        };
        let Some(k) = KINDS.get(kind as usize) else {
            return self.complete(done, 0, dl::ERR_BAD_ARGUMENT);
        };
        let es = k.bytes as u64;
        let nelems = e.bytes as u64;
        let own = e.count == 1;
        let per = nelems.div_ceil(size.max(1) as u64);
        let (first, end) = if own {
            (0, nelems)
        } else {
            let first = (me as u64 * per).min(nelems);
            (first, (first + per).min(nelems))
        };
        let (lo, n) = (first * es, (end - first) * es);
        let (dest, src) = (e.addr as u64, e.src as u64);
        if !self.heap.range(dest, nelems * es) || !self.heap.range(src, nelems * es) {
            return self.complete(done, 0, ERR_BAD_ADDRESS);
        }
        if n == 0 {
            return self.complete(done, 0, 0);
        }
        let members: Vec<u32> = (0..size)
            .map(|i| (start + i as i32 * stride) as u32)
            .collect();
        let mut bufs: Vec<Vec<u64>> = vec![vec![0u64; (n as usize).div_ceil(8)]; size as usize];
        self.heap.read(
            src + lo,
            &mut bytemuck::cast_slice_mut(&mut bufs[me as usize])[..n as usize],
        );
        let id = self.new_job(done);
        let mut outstanding = 0;
        for (i, &p) in members.iter().enumerate() {
            if i == me as usize {
                continue;
            }
            let token = self.token();
            self.pending.insert(token, (id, ReplyTo::Buf { member: i }));
            let h = Header {
                kind: M_GET,
                token,
                addr: src + lo,
                len: n as u32,
                ..Default::default()
            };
            self.send(p, h, Vec::new());
            outstanding += 1;
        }
        let j = self.jobs.get_mut(&id).expect("new");
        j.outstanding = outstanding;
        j.reduce = Some(Reduction {
            members,
            me: me as usize,
            lo,
            n,
            dest,
            kind,
            op,
            bufs,
            putting: false,
            own,
        });
        if outstanding == 0 {
            self.advance(id);
        }
    }

    /// The job is aborting: answer everything in flight with `ERR_ABORTED`.
    fn fail_all(&mut self) {
        self.outbox.clear();
        self.pending.clear();
        let jobs: Vec<Job> = self.jobs.drain().map(|(_, j)| j).collect();
        for mut j in jobs {
            j.status |= ERR_ABORTED;
            self.complete_job(j);
        }
        let waiting: Vec<_> = self
            .shared
            .rma
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for (_, slot) in waiting {
            Self::answer_rma(&slot, ERR_ABORTED, Vec::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Producers on threads fill PE 0's inbox past its capacity while it
    /// drains: every message arrives once, each producer's in order, payloads
    /// intact (lengths from 0 to a full cell).
    #[test]
    fn the_inbox_keeps_every_message_and_each_senders_order() {
        let (seg, _fd) = Segment::create(3).expect("segment");
        let seg = Arc::new(seg);
        const EACH: u32 = 3000;
        let payload = |from: u32, k: u32| -> Vec<u8> {
            let n = ((k as usize * 977) + from as usize * 131) % (PAYLOAD + 1);
            (0..n).map(|b| (b as u32 ^ k ^ (from << 7)) as u8).collect()
        };
        let producers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|from| {
                let seg = seg.clone();
                std::thread::spawn(move || {
                    for k in 0..EACH {
                        let h = Header {
                            kind: M_PUT,
                            token: k,
                            ..Default::default()
                        };
                        let p = payload(from, k);
                        while !inbox_send(&seg, from, 0, h, &p) {
                            std::thread::yield_now(); // full: the consumer is behind
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u32; 3];
        let mut pos = 0u32;
        while next[1] < EACH || next[2] < EACH {
            let Some((h, p)) = inbox_recv(&seg, 0, pos) else {
                std::thread::yield_now();
                continue;
            };
            pos += 1;
            let from = h.from as usize;
            assert!(from == 1 || from == 2, "sender {from}");
            assert_eq!(h.token, next[from], "PE {from}'s messages in order");
            assert_eq!(
                p,
                payload(h.from, h.token),
                "payload {} from PE {from}",
                h.token
            );
            next[from] += 1;
        }
        for t in producers {
            t.join().unwrap();
        }
        assert!(inbox_recv(&seg, 0, pos).is_none(), "nothing more");
        assert_eq!(pos, 2 * EACH);
    }

    #[test]
    fn a_header_fills_its_part_of_a_cell() {
        const { assert!(HEADER_BYTES == 64 && PAYLOAD + HEADER_BYTES == CELL_BYTES) };
    }
}
