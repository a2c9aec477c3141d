//! The proxy thread's loop: serves the inboxes and the link to other nodes,
//! takes the ring's entries and the host's requests, and sends what it can.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vkshmem_device::layout::{
    self as dl, ProxyEntry, ERR_ABORTED, ERR_BAD_ADDRESS, ERR_BAD_PE, PROXY_SLOTS,
};

use crate::sync::layout::{INBOX_BELL_AT, INBOX_CELLS, INBOX_SLEEPERS_AT};
use crate::sync::segment::futex_wait;
use crate::sync::Plane;
use crate::transport::word::WordOp;

use super::heap::OwnHeap;
use super::inbox::{inbox_recv, inbox_send};
use super::jobs::{Done, HostOp, Job, ReplyTo};
use super::wire::*;
use super::{CombineFor, RemoteLink, Shared};

/// New ring entries are taken only while the outbox holds fewer messages.
pub(super) const OUTBOX_MAX: usize = 256;
/// Idle rounds spent yielding before the thread sleeps.
pub(super) const SPIN_ROUNDS: u32 = 200;
/// How long an idle proxy sleeps between looks at the ring (a launch that
/// uses the proxy wakes it at once).
pub(super) const IDLE_NAP: Duration = Duration::from_millis(2);
/// The nap while a launch runs.
pub(super) const BUSY_NAP: Duration = Duration::from_micros(20);

pub(super) struct Msg {
    pub(super) to: u32,
    pub(super) h: Header,
    pub(super) payload: Vec<u8>,
}

pub(super) struct Worker {
    pub(super) pe: u32,
    pub(super) npes: u32,
    pub(super) plane: Arc<Plane>,
    pub(super) heap: OwnHeap,
    /// Byte address of the ring in this PE's heap.
    pub(super) ring_at: u64,
    pub(super) shared: Arc<Shared>,
    pub(super) combine: CombineFor,
    /// The next ring ticket to serve.
    pub(super) tail: u32,
    pub(super) inbox_head: u32,
    pub(super) outbox: VecDeque<Msg>,
    pub(super) next_token: u32,
    pub(super) pending: HashMap<u32, (u64, ReplyTo)>,
    pub(super) jobs: HashMap<u64, Job>,
    pub(super) next_job: u64,
    pub(super) quiet_served: u64,
    /// Per PE: stores, puts and atomics sent there so far, and how many of
    /// them a ping has acknowledged.
    pub(super) sent_gen: Vec<u64>,
    pub(super) acked_gen: Vec<u64>,
    /// PEs of other nodes ([`RemoteLink`]).
    pub(super) link: Option<Box<dyn RemoteLink>>,
}

impl Worker {
    pub(super) fn run(&mut self) {
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

    pub(super) fn token(&mut self) -> u32 {
        let t = self.next_token;
        self.next_token = self.next_token.wrapping_add(1).max(1);
        t
    }

    pub(super) fn send(&mut self, to: u32, h: Header, payload: Vec<u8>) {
        if matches!(h.kind, M_STORE | M_PUT | M_AMO | M_HAMO) {
            self.sent_gen[to as usize] += 1;
            self.shared.all_landed.store(false, Ordering::SeqCst);
        }
        self.outbox.push_back(Msg { to, h, payload });
    }

    /// Sends what the inboxes take, in order; stops at the first full one.
    pub(super) fn flush(&mut self) -> bool {
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

    pub(super) fn try_send(&mut self, m: &Msg) -> bool {
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
    pub(super) fn serve_link(&mut self) -> bool {
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
    pub(super) fn serve_inbox(&mut self) -> bool {
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

    pub(super) fn answer(&mut self, h: &Header, kind: u32, value: u32, status: u32) {
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

    pub(super) fn handle(&mut self, h: Header, payload: &[u8]) {
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
                    crate::transport::word::apply(
                        self.heap.base.add(h.addr as usize),
                        width,
                        h.op,
                        value,
                        cmp,
                    )
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

    pub(super) fn on_answer(&mut self, h: Header, payload: &[u8]) {
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

    /// Sends `src` to PE `to` at byte `at` in pieces; the last one's answer
    /// counts for job `job`.
    pub(super) fn put(&mut self, job: u64, to: u32, at: u64, src: &[u8]) {
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

    /// Sends the atomic `w` to its PE (one `M_HAMO`), its answer for job
    /// `id` going to `to`.
    pub(super) fn send_hamo(&mut self, id: u64, to: ReplyTo, w: WordOp) {
        let WordOp {
            pe,
            at,
            width,
            op,
            value,
            cmp,
        } = w;
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

    /// Takes the host's gets and puts.
    pub(super) fn take_rma(&mut self) -> bool {
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
                HostOp::Amo(w) => (w.pe, w.at, u64::from(w.width)),
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
                HostOp::Amo(w) => {
                    self.send_hamo(id, ReplyTo::JobBuf, w);
                    self.jobs.get_mut(&id).expect("new").buf = vec![0; w.width as usize];
                }
            }
            self.jobs.get_mut(&id).expect("new").outstanding = 1;
        }
        any
    }

    pub(super) fn take_quiet(&mut self) -> bool {
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
    pub(super) fn take_ring(&mut self, aborting: bool) -> bool {
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
    pub(super) fn finish_entry(&mut self, e: &ProxyEntry, done: Done, status: u32) {
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

    /// The job is aborting: answer everything in flight with `ERR_ABORTED`.
    pub(super) fn fail_all(&mut self) {
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
