//! The sync plane: host-side synchronization of the PEs of a node through shared
//! memory, with no socket on the path.
//!
//! - [`layout`]: the node segment's layout, the one definition (pure).
//! - [`segment`]: the memfd mapping and the futex calls.
//! - this module: [`Plane`], a PE's view: team syncs that carry a call
//!   descriptor (and, for small collectives, the data), and waits that spin,
//!   yield, then sleep on a futex, and give up on the abort word, a finalized
//!   peer or `VKSHMEM_WAIT_TIMEOUT`.
//!
//! The endpoint (`bootstrap::server`) creates the segment and hands it to every
//! PE at admission; it raises the abort word when a PE dies and records
//! goodbyes, so the plane needs no socket to hear of failures. Teams and the
//! deprecated active sets meet here (an active set in a slot of its own, agreed
//! on at its first use); everything else (init, fd exchange, allocation, team
//! and active-slot agreement, finalize, an active set when the slots run out)
//! stays on the bootstrap socket: `crate::runtime::rendezvous` picks one of the two.
//!
//! **The algorithm** (chosen by measurement: benches/RESULTS.md, "Sync
//! algorithm"): a central counter per team. Arriving at epoch `e` is: write the
//! descriptor (and data) into this member's slot of parity `e & 1`, store `e`
//! into its arrival word, add one to the team's `count`. The member that brings
//! `count` to the team's size resets it, stores `e` into `gen` and wakes
//! sleepers; the others wait until `gen` reaches `e`. One atomic add per member
//! and one line everyone polls: on an oversubscribed machine that beat
//! per-member flags, where each waiter polls every member
//! (`VKSHMEM_SYNC_ALGO=flags` keeps that variant for measurement).

pub mod layout;
pub mod recorder;
pub mod segment;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use self::layout::{Layout, DATA_BYTES, DESC_BYTES};
use self::segment::{futex_wait, futex_wake, Segment};
use crate::config;
use crate::error::Result;
use crate::team::shape::TeamShape;

/// How long a waiter sleeps on the futex before it looks at the clock and its
/// peers again (the endpoint also wakes it on any failure).
const NAP: Duration = Duration::from_millis(10);

/// `a` is at or past `b` in wrapping epoch order.
fn reached(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// How a wait on the plane spends its time before it sleeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Polls with a spin hint before yielding.
    pub spins: u32,
    /// `sched_yield` polls before sleeping on the futex.
    pub yields: u32,
    /// Per-member flags instead of the central counter.
    pub flags: bool,
}

impl WaitPolicy {
    /// The default for `pes` PEs on a node, or the environment's overrides
    /// (`VKSHMEM_SYNC_SPIN`, `VKSHMEM_SYNC_YIELDS`,
    /// `VKSHMEM_SYNC_ALGO=counter|flags`; for measurements).
    ///
    /// Spinning pays only while every PE has a core: with more PEs than cores a
    /// spinning waiter holds the core the PE it waits for needs, so then waits
    /// yield from the start (benches/RESULTS.md, "Sync algorithm").
    pub fn from_env(get: impl Fn(&str) -> Option<String>, pes: u32) -> Result<WaitPolicy> {
        let flags = config::sync_flags(&get)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spins = if pes as usize > cores { 0 } else { 200 };
        Ok(WaitPolicy {
            spins: config::sync_spin(&get)?.unwrap_or(spins),
            yields: config::sync_yields(&get)?.unwrap_or(200),
            flags,
        })
    }
}

/// A team as the plane sees it.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// Its slot in the team table.
    pub slot: u32,
    /// Its members.
    pub shape: TeamShape,
    /// This PE's index in it.
    pub me: u32,
}

impl Group {
    fn leader(&self) -> u32 {
        self.shape
            .member(0)
            .min(self.shape.member(self.shape.size - 1))
    }
}

/// One sync in progress on this PE: its epoch.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    group: Group,
    epoch: u32,
}

impl Ticket {
    /// The epoch (the sync's number on its team, for messages).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The team's slot.
    pub fn slot(&self) -> u32 {
        self.group.slot
    }
}

/// Why a wait on the plane gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The job's abort word was raised (its value), before this PE arrived.
    AbortedBefore(u32),
    /// The abort word was raised while this PE waited; `missing` had not arrived.
    Aborted {
        /// The word.
        word: u32,
        /// WORLD PEs of the team not arrived.
        missing: Vec<u32>,
        /// How long this PE waited.
        waited: Duration,
    },
    /// A member this PE waits for has finalized (it will never arrive).
    Finalized(u32),
    /// This PE's wait outlasted the timeout.
    TimedOut {
        /// WORLD PEs of the team not arrived.
        missing: Vec<u32>,
        /// How long it waited.
        waited: Duration,
    },
}

/// A PE's view of the node segment.
pub struct Plane {
    seg: Segment,
    pe: u32,
    policy: WaitPolicy,
    /// How long a wait yield-polls before it sleeps (nanoseconds; 0: only
    /// the policy's count of yields).
    yield_for: AtomicU64,
    timeout: Option<Duration>,
    /// This PE's last epoch per team slot.
    epochs: Vec<AtomicU32>,
}

impl std::fmt::Debug for Plane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plane")
            .field("pe", &self.pe)
            .field("policy", &self.policy)
            .finish()
    }
}

impl Plane {
    /// PE `pe`'s plane over a mapped segment.
    pub fn new(seg: Segment, pe: u32, policy: WaitPolicy, timeout: Option<Duration>) -> Plane {
        Plane {
            seg,
            pe,
            policy,
            yield_for: AtomicU64::new(0),
            timeout,
            epochs: (0..layout::PLANE_SLOTS)
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }

    /// Makes each wait yield-poll for `d` after its spins before it sleeps
    /// on the futex (as well as the policy's count of yields). Where every PE
    /// of the node has a core, a sleeping waiter wakes tens of microseconds
    /// after the sync completes (the futex wake-up), and on a GPU, where
    /// members wait out the leader's submission, that made them late for the
    /// next call (benches/RESULTS.md, "H200 one-submission call"). The context
    /// sets this where the fence poll pays
    /// ([`crate::config::yield_poll_or_auto`]).
    pub fn set_yield_for(&self, d: Duration) {
        self.yield_for
            .store(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    fn layout(&self) -> Layout {
        self.seg.layout()
    }

    fn team_word(&self, g: &Group, at: usize) -> &AtomicU32 {
        self.seg.word(self.layout().team(g.slot, g.leader()) + at)
    }

    fn arrival(&self, slot: u32, pe: u32) -> &AtomicU32 {
        self.seg
            .word(self.layout().member(slot, pe) + layout::ARRIVE_AT)
    }

    /// The node segment under the plane (the proxies' inboxes live there).
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    /// The job's abort word (`layout::ABORT_*`).
    pub fn abort_word(&self) -> u32 {
        self.seg.word(layout::ABORT_AT).load(Ordering::Acquire)
    }

    /// Raises the abort word (the first failure wins); returns the word in place.
    pub fn raise_abort(&self, word: u32) -> u32 {
        self.seg.raise_abort(word)
    }

    /// Takes over `slot` for a new team `g` (every member, before the parent's
    /// sync that makes the team usable): the team's epochs continue from the
    /// slot's counters, which no one touches between teams.
    pub fn install(&self, g: &Group) {
        let gen = self.team_word(g, layout::GEN_AT).load(Ordering::Acquire);
        self.epochs[g.slot as usize].store(gen, Ordering::Relaxed);
        self.arrival(g.slot, self.pe).store(gen, Ordering::Release);
    }

    /// Starts a sync on `g`: the epoch to publish into.
    pub fn ticket(&self, g: &Group) -> Ticket {
        let e = self.epochs[g.slot as usize]
            .load(Ordering::Relaxed)
            .wrapping_add(1);
        Ticket {
            group: *g,
            epoch: e,
        }
    }

    /// Writes this PE's descriptor for `t` (at most [`DESC_BYTES`]).
    pub fn put_desc(&self, t: &Ticket, desc: &[u8]) {
        assert!(
            desc.len() <= DESC_BYTES,
            "descriptor of {} bytes",
            desc.len()
        );
        self.seg
            .write(self.layout().desc(t.group.slot, self.pe, t.epoch), desc);
    }

    /// Member `index`'s descriptor for `t` (after [`Plane::arrive`] succeeded).
    pub fn desc(&self, t: &Ticket, index: u32, out: &mut [u8]) {
        let pe = t.group.shape.member(index);
        self.seg
            .read(self.layout().desc(t.group.slot, pe, t.epoch), out);
    }

    /// This PE's data slot for `t` ([`DATA_BYTES`]), to fill before arriving.
    pub fn my_data(&self, t: &Ticket) -> *mut u8 {
        self.seg.ptr(
            self.layout().data(t.group.slot, self.pe, t.epoch),
            DATA_BYTES,
        )
    }

    /// Member `index`'s data slot for `t` (read after [`Plane::arrive`]).
    pub fn data(&self, t: &Ticket, index: u32) -> *const u8 {
        let pe = t.group.shape.member(index);
        self.seg
            .ptr(self.layout().data(t.group.slot, pe, t.epoch), DATA_BYTES)
    }

    /// The staging buffers of every WORLD PE for the team in `slot` (`None`
    /// or an active set's slot: the active sets', [`layout::staging_key`]): one range, PE-major, both parities each (see
    /// [`Plane::staging_offset`]). Who writes and reads them when is
    /// `crate::collective::staged`'s protocol.
    pub fn staging_set(&self, slot: Option<u32>) -> (*mut u8, usize) {
        let slot = layout::staging_key(slot);
        let l = self.layout();
        let len = l.npes as usize * 2 * layout::STAGE_BYTES;
        (self.seg.ptr(l.staging(slot, 0, 0), len), len)
    }

    /// Byte offset of PE `pe`'s staging buffer of `parity` in its slot's set
    /// ([`Plane::staging_set`]).
    pub fn staging_offset(pe: u32, parity: u32) -> u64 {
        (u64::from(pe) * 2 + u64::from(parity & 1)) * layout::STAGE_BYTES as u64
    }

    /// PE `pe`'s staging buffer of `parity` in `slot`'s set (`None` or an
    /// active set's slot: the active sets'), STAGE_BYTES long.
    pub fn staging(&self, slot: Option<u32>, pe: u32, parity: u32) -> *mut u8 {
        let slot = layout::staging_key(slot);
        self.seg
            .ptr(self.layout().staging(slot, pe, parity), layout::STAGE_BYTES)
    }

    /// Arrives at `t`'s epoch and waits for every member. On `Ok`, every member's
    /// descriptor and data for this epoch can be read until this PE's next sync
    /// on the team.
    pub fn arrive(&self, t: &Ticket) -> std::result::Result<(), Stop> {
        let g = &t.group;
        let e = t.epoch;
        let word = self.abort_word();
        if word != layout::ABORT_NONE {
            return Err(Stop::AbortedBefore(word));
        }
        self.epochs[g.slot as usize].store(e, Ordering::Relaxed);
        if g.shape.size == 1 {
            return Ok(());
        }
        let gen = self.team_word(g, layout::GEN_AT);
        // Release: the descriptor and data written before are visible to whoever
        // sees the arrival (or the count it then adds to).
        self.arrival(g.slot, self.pe).store(e, Ordering::SeqCst);
        if self.policy.flags {
            return self.wait(t, || {
                if reached(gen.load(Ordering::Acquire), e) {
                    return true;
                }
                let all = g
                    .shape
                    .members()
                    .all(|m| reached(self.arrival(g.slot, m).load(Ordering::Acquire), e));
                if all {
                    self.publish(g, e);
                }
                all
            });
        }
        let count = self.team_word(g, layout::COUNT_AT);
        if count.fetch_add(1, Ordering::AcqRel) + 1 == g.shape.size {
            // Last: nobody adds to `count` before seeing `gen` reach `e`.
            count.store(0, Ordering::Relaxed);
            self.publish(g, e);
            return Ok(());
        }
        self.wait(t, || reached(gen.load(Ordering::Acquire), e))
    }

    /// Moves `g`'s `gen` to `e` (never back) and wakes sleepers.
    fn publish(&self, g: &Group, e: u32) {
        let gen = self.team_word(g, layout::GEN_AT);
        let mut cur = gen.load(Ordering::Relaxed);
        while !reached(cur, e) {
            match gen.compare_exchange_weak(cur, e, Ordering::SeqCst, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        // SeqCst on both sides (here and the sleeper's increment then re-check)
        // means a sleeper either sees `gen` or is counted here.
        if self
            .team_word(g, layout::SLEEPERS_AT)
            .load(Ordering::SeqCst)
            > 0
        {
            futex_wake(gen);
        }
    }

    /// Members of `t`'s team that have not arrived at its epoch.
    fn missing(&self, t: &Ticket) -> Vec<u32> {
        t.group
            .shape
            .members()
            .filter(|&m| {
                !reached(
                    self.arrival(t.group.slot, m).load(Ordering::Acquire),
                    t.epoch,
                )
            })
            .collect()
    }

    fn wait(&self, t: &Ticket, done: impl Fn() -> bool) -> std::result::Result<(), Stop> {
        let p = self.policy;
        for _ in 0..p.spins {
            if done() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        let start = Instant::now();
        let gen = self.team_word(&t.group, layout::GEN_AT);
        let sleepers = self.team_word(&t.group, layout::SLEEPERS_AT);
        let mut polls: u32 = 0;
        let yield_for = Duration::from_nanos(self.yield_for.load(Ordering::Relaxed));
        loop {
            if done() {
                return Ok(());
            }
            let word = self.abort_word();
            if word != layout::ABORT_NONE {
                return Err(Stop::Aborted {
                    word,
                    missing: self.missing(t),
                    waited: start.elapsed(),
                });
            }
            let missing = self.missing(t);
            if let Some(&gone) = missing.iter().find(|&&m| {
                // A failed PE raises the abort word (checked above). A member
                // may have arrived, seen the sync complete and finalized since
                // `missing` was read: its state (read with acquire) comes after
                // its arrival, so read the arrival again.
                self.seg
                    .word(self.layout().pe_state(m))
                    .load(Ordering::Acquire)
                    == layout::PE_FINALIZED
                    && !reached(
                        self.arrival(t.group.slot, m).load(Ordering::Acquire),
                        t.epoch,
                    )
            }) {
                return Err(Stop::Finalized(gone));
            }
            if let Some(limit) = self.timeout {
                let waited = start.elapsed();
                if waited >= limit {
                    return Err(Stop::TimedOut { missing, waited });
                }
            }
            polls = polls.saturating_add(1);
            if polls <= p.yields || start.elapsed() < yield_for {
                std::thread::yield_now();
                continue;
            }
            let seen = gen.load(Ordering::SeqCst);
            sleepers.fetch_add(1, Ordering::SeqCst);
            if !done() {
                futex_wait(gen, seen, NAP);
            }
            sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planes(npes: u32, policy: WaitPolicy, timeout: Option<Duration>) -> Vec<Plane> {
        let (seg, fd) = Segment::create(npes).unwrap();
        drop(seg);
        (0..npes)
            .map(|pe| {
                let fd = fd.try_clone().unwrap();
                Plane::new(Segment::open(fd, npes).unwrap(), pe, policy, timeout)
            })
            .collect()
    }

    fn world(n: u32, me: u32) -> Group {
        Group {
            slot: 0,
            shape: TeamShape::world(n),
            me,
        }
    }

    /// Threads as PEs: every sync's descriptors are what each member wrote for
    /// that epoch, and no member leaves a sync before all arrived.
    fn run_syncs(npes: u32, policy: WaitPolicy, yield_for: Duration) {
        let planes = planes(npes, policy, Some(Duration::from_secs(60)));
        for p in &planes {
            p.set_yield_for(yield_for);
        }
        let planes = std::sync::Arc::new(planes);
        let arrived = std::sync::Arc::new(AtomicU32::new(0));
        let rounds = 2000u32;
        let hs: Vec<_> = (0..npes)
            .map(|pe| {
                let (planes, arrived) = (planes.clone(), arrived.clone());
                std::thread::spawn(move || {
                    let p = &planes[pe as usize];
                    let g = world(npes, pe);
                    for r in 0..rounds {
                        let t = p.ticket(&g);
                        p.put_desc(&t, &[pe as u8, r as u8, (r >> 8) as u8]);
                        arrived.fetch_add(1, Ordering::SeqCst);
                        p.arrive(&t).unwrap();
                        assert!(arrived.load(Ordering::SeqCst) >= (r + 1) * npes);
                        for i in 0..npes {
                            let mut d = [0u8; 3];
                            p.desc(&t, i, &mut d);
                            assert_eq!(d, [i as u8, r as u8, (r >> 8) as u8], "round {r}");
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }

    #[test]
    fn counter_and_flags_syncs_complete_with_every_descriptor() {
        for flags in [false, true] {
            for npes in [1, 2, 3, 5] {
                run_syncs(
                    npes,
                    WaitPolicy {
                        spins: 10,
                        yields: 3,
                        flags,
                    },
                    Duration::ZERO,
                );
            }
        }
    }

    #[test]
    fn syncs_complete_with_a_yield_window() {
        // Waits yield-poll for up to 20 ms (the GPU default) before sleeping.
        for npes in [2, 3] {
            run_syncs(
                npes,
                WaitPolicy {
                    spins: 10,
                    yields: 3,
                    flags: false,
                },
                Duration::from_millis(20),
            );
        }
    }

    #[test]
    fn a_wait_yielding_past_its_timeout_still_times_out() {
        let planes = planes(
            2,
            WaitPolicy {
                spins: 1,
                yields: 1,
                flags: false,
            },
            Some(Duration::from_millis(200)),
        );
        // A window far longer than the timeout: the yielding polls look at
        // the clock too. The bound sits far from both ends, so a machine
        // busy enough to hold this thread off the CPU for seconds still
        // tells a wait that ends at the timeout from one that ends with the
        // window.
        planes[0].set_yield_for(Duration::from_secs(60));
        let t0 = planes[0].ticket(&world(2, 0));
        match planes[0].arrive(&t0) {
            Err(Stop::TimedOut { missing, waited }) => {
                assert_eq!(missing, vec![1]);
                assert!(waited < Duration::from_secs(30), "{waited:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_member_times_out_and_is_named() {
        let planes = planes(
            3,
            WaitPolicy {
                spins: 1,
                yields: 1,
                flags: false,
            },
            // Long enough for the spawned thread to arrive on a busy machine.
            Some(Duration::from_secs(2)),
        );
        let g = world(3, 0);
        let t0 = planes[0].ticket(&g);
        let t1 = planes[1].ticket(&Group { me: 1, ..g });
        let h = std::thread::scope(|s| {
            let a = s.spawn(|| planes[1].arrive(&t1));
            let r = planes[0].arrive(&t0);
            (r, a.join().unwrap())
        });
        for r in [h.0, h.1] {
            match r {
                Err(Stop::TimedOut { missing, .. }) => assert_eq!(missing, vec![2]),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_peer_that_arrived_then_finalized_is_not_blamed() {
        // PE 1 arrived at the epoch and then finalized (as it may once the
        // sync completed); PE 2 never comes. PE 0 must time out waiting for PE 2,
        // not blame PE 1.
        let planes = planes(
            3,
            WaitPolicy {
                spins: 1,
                yields: 1,
                flags: false,
            },
            Some(Duration::from_millis(200)),
        );
        let g = world(3, 0);
        let t = planes[0].ticket(&g);
        planes[1].arrival(0, 1).store(t.epoch(), Ordering::SeqCst);
        planes[1].seg.set_pe_state(1, layout::PE_FINALIZED);
        match planes[0].arrive(&t) {
            Err(Stop::TimedOut { missing, .. }) => assert_eq!(missing, vec![2]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_abort_word_and_a_finalized_peer_end_waits() {
        let planes = planes(
            2,
            WaitPolicy {
                spins: 1,
                yields: 1,
                flags: false,
            },
            None,
        );
        let g = world(2, 0);
        let t = planes[0].ticket(&g);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                planes[1].raise_abort(layout::ABORT_FAILED | 1);
            });
            match planes[0].arrive(&t) {
                Err(Stop::Aborted { word, missing, .. }) => {
                    assert_eq!(word, layout::ABORT_FAILED | 1);
                    assert_eq!(missing, vec![1]);
                }
                other => panic!("{other:?}"),
            }
        });
        assert!(matches!(
            planes[0].arrive(&planes[0].ticket(&g)),
            Err(Stop::AbortedBefore(_))
        ));
        let planes2 = self::planes(
            2,
            WaitPolicy {
                spins: 1,
                yields: 1,
                flags: false,
            },
            None,
        );
        let t = planes2[0].ticket(&g);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                planes2[1].seg.set_pe_state(1, layout::PE_FINALIZED);
            });
            assert_eq!(planes2[0].arrive(&t), Err(Stop::Finalized(1)));
        });
    }
}
