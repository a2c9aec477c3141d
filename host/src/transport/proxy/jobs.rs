//! What a request becomes on the proxy thread: a job, the messages it
//! waits for and where their answers go, and how it completes.

use std::mem::offset_of;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use vkshmem_device::collectives::{ReduceOp, KINDS};
use vkshmem_device::layout::{
    self as dl, ProxyEntry, TeamEntry, ERR_BAD_ADDRESS, ERR_BAD_PE, ERR_BAD_TEAM,
};

use super::wire::{Header, M_AMO, M_GET, M_LOAD, M_PING, M_STORE};
use super::Worker;
use crate::transport::word::WordOp;

/// Where the answer to a message goes.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReplyTo {
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
pub(super) enum Done {
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
    pub(super) answer: Mutex<Option<(u32, Vec<u8>)>>,
    pub(super) cv: Condvar,
}

/// A host get or put for the proxy thread.
pub(super) enum HostOp {
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
    /// An atomic on a word (`crate::transport::word::apply`).
    Amo(WordOp),
}

/// A reduction's share in progress.
pub(super) struct Reduction {
    pub(super) members: Vec<u32>,
    pub(super) me: usize,
    /// Byte offset of this PE's share in the arrays, and its length.
    pub(super) lo: u64,
    pub(super) n: u64,
    pub(super) dest: u64,
    pub(super) kind: u32,
    pub(super) op: ReduceOp,
    /// Each member's share of its source (u64 backing: aligned for any kind).
    pub(super) bufs: Vec<Vec<u64>>,
    pub(super) putting: bool,
    /// The reduce-scatter form: the result goes to this PE's dest only.
    pub(super) own: bool,
}

/// The elements of a bulk request ([`dl::PX_GET`], [`dl::PX_PUT`]): `count`
/// of `es` bytes, `ss` bytes apart at the source and `ds` at the dest; a
/// count of 0 is one contiguous block.
#[derive(Clone, Copy)]
pub(super) struct Strided {
    pub(super) es: u64,
    pub(super) count: u64,
    pub(super) ss: u64,
    pub(super) ds: u64,
}

impl Strided {
    pub(super) fn of(e: &ProxyEntry) -> Strided {
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

pub(super) struct Job {
    pub(super) done: Done,
    pub(super) outstanding: u32,
    /// A word op's old value (64 bits for a 64-bit one).
    pub(super) result: u64,
    pub(super) status: u32,
    pub(super) reduce: Option<Reduction>,
    /// A host get's bytes.
    pub(super) buf: Vec<u8>,
}

impl Worker {
    /// A job whose messages are all answered: the next step of a reduction,
    /// or its answer.
    pub(super) fn advance(&mut self, id: u64) {
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

    pub(super) fn complete_job(&mut self, j: Job) {
        match j.done {
            Done::Rma(slot) => Self::answer_rma(&slot, j.status, j.buf),
            done => self.complete(done, j.result, j.status),
        }
    }

    pub(super) fn answer_rma(slot: &RmaSlot, status: u32, bytes: Vec<u8>) {
        *slot.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some((status, bytes));
        slot.cv.notify_all();
    }

    pub(super) fn combine_share(&self, r: &Reduction) -> Option<Vec<u8>> {
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

    pub(super) fn complete(&mut self, done: Done, result: u64, status: u32) {
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

    pub(super) fn new_job(&mut self, done: Done) -> u64 {
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
    pub(super) fn quiet(&mut self, done: Done) {
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

    pub(super) fn start(&mut self, e: ProxyEntry, done: Done) {
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
                let w = WordOp {
                    pe: e.pe,
                    at,
                    width: 8,
                    op,
                    value,
                    cmp,
                };
                self.send_hamo(id, ReplyTo::Word, w);
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
    pub(super) fn strided_fits(&self, st: &Strided, src: u64, dst: u64) -> bool {
        let span = |stride: u64| (st.count - 1) * stride + st.es;
        !(st.count > 1 && (st.ss < st.es || st.ds < st.es))
            && self.heap.range(dst, span(st.ds))
            && self.heap.range(src, span(st.ss))
    }

    /// This PE's share of a reduction (see `layout::PX_REDUCE`): the same
    /// share as device code takes (`vks_share` over elements), every member's
    /// source for it fetched, combined in team order, written to this PE's
    /// dest and put to every other member's.
    pub(super) fn start_reduce(&mut self, e: ProxyEntry, done: Done) {
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
}
