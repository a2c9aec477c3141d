//! The flight recorder: every PE keeps its last [`RECORDS`](super::layout::RECORDS) calls in the node
//! segment, so that a stuck or failed job can say who is where.
//!
//! A record is one line of 16 words, written by its PE alone with relaxed
//! stores and published by its sequence word (release): no lock, no system
//! call (the clock is `CLOCK_MONOTONIC_COARSE`, read in the vDSO; a hang is
//! measured in seconds, so its few milliseconds of grain do not matter).
//! A call's phase moves on in place (entered, agreed, closing, done or
//! failed). The launcher, which maps the segment too, reads the
//! records of every PE and prints one table ([`report`]), with the cause
//! in one line where it can name one ([`cause`]).
//!
//! A call's number on its team (`#N`) is this PE's count of recorded calls
//! on the team's plane slot: members in step have the same count, so the
//! one that is not shows where the job went apart.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::layout::{
    self, Layout, PE_FAILED, PE_FINALIZED, PLANE_SLOTS, RECORDER_COUNTS_AT, RECORDER_HEAD_AT,
};
use super::segment::Segment;

/// A call's phase, as its record shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Phase {
    /// Called: checking its arguments, meeting the members.
    Entered = 1,
    /// The members agreed on the call; it moves its data (host copies, or
    /// kernels submitted and waited for).
    Agreed = 2,
    /// In the closing meeting.
    Closing = 4,
    /// Returned.
    Done = 5,
    /// Returned an error.
    Failed = 6,
}

impl Phase {
    fn from_word(w: u32) -> Option<Phase> {
        [
            Phase::Entered,
            Phase::Agreed,
            Phase::Closing,
            Phase::Done,
            Phase::Failed,
        ]
        .into_iter()
        .find(|p| *p as u32 == w)
    }

    fn name(self) -> &'static str {
        match self {
            Phase::Entered => "entered",
            Phase::Agreed => "agreed",
            Phase::Closing => "closing",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }
}

/// What a record says of a call when it starts.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    /// The call's name (one of [`NAMES`] shows by name, any other by hash).
    pub name: &'a str,
    /// The team's plane slot (`None`: not a team call).
    pub slot: Option<u32>,
    /// Bytes it moves per member.
    pub bytes: u64,
    /// Its root, where it has one.
    pub root: Option<u32>,
}

impl<'a> CallInfo<'a> {
    /// A call of no team, no size, no root.
    pub fn named(name: &'a str) -> CallInfo<'a> {
        CallInfo {
            name,
            slot: None,
            bytes: 0,
            root: None,
        }
    }
}

/// The record of a call in progress (its byte offset in the segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(usize);

// Word indices of a record.
const W_SEQ: usize = 0;
const W_CALL: usize = 1;
const W_SLOT: usize = 2;
const W_TEAM_SEQ: usize = 3;
const W_PHASE: usize = 4;
const W_ROOT: usize = 5;
const W_BYTES_LO: usize = 6;
const W_BYTES_HI: usize = 7;
const W_ENTERED_MS: usize = 8;
const W_PHASE_MS: usize = 9;

/// No slot, no root.
const NONE: u32 = u32::MAX;

/// The names the report shows by name; any other call shows as its hash.
pub const NAMES: &[&str] = &[
    "barrier_all",
    "sync_all",
    "team_sync",
    "team_split_strided",
    "team_split_2d",
    "team_destroy",
    "broadcast",
    "collect",
    "fcollect",
    "alltoall",
    "alltoalls",
    "reduce",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgatherv",
    "alltoallv",
    "reduce_scatter",
    "reduce_scatterv",
    "sum_inscan",
    "sum_exscan",
    "fanin",
    "fanout",
    "queue post",
    "launch",
    "wait_until",
];

/// A name's code in a record: its length, middle byte and first and last
/// four bytes mixed, a few instructions on every call (a test checks that no two of
/// [`NAMES`] share one).
fn code(name: &str) -> u32 {
    let b = name.as_bytes();
    let word = |s: &[u8]| s.iter().fold(0u32, |w, &x| w << 8 | u32::from(x));
    let head = word(&b[..b.len().min(4)]);
    let tail = word(&b[b.len().saturating_sub(4)..]);
    let mid = b.get(b.len() / 2).map_or(0, |&x| u32::from(x));
    (b.len() as u32 ^ mid << 8).wrapping_mul(0x9e37_79b9) ^ head ^ tail.rotate_left(13)
}

/// The name of code `c`.
fn name_of(c: u32) -> String {
    NAMES
        .iter()
        .find(|n| code(n) == c)
        .map_or_else(|| format!("call {c:#010x}"), |n| n.to_string())
}

/// Milliseconds of the coarse monotonic clock (system-wide, so the
/// launcher's reading compares with every PE's).
pub fn now_ms() -> u32 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC_COARSE).map_or(0, |t| {
        (t.tv_sec() as u64 * 1000 + t.tv_nsec() as u64 / 1_000_000) as u32
    })
}

fn put(seg: &Segment, rec: usize, w: usize, v: u32) {
    seg.word(rec + 4 * w).store(v, Ordering::Relaxed);
}

fn get(seg: &Segment, rec: usize, w: usize) -> u32 {
    seg.word(rec + 4 * w).load(Ordering::Relaxed)
}

/// Records that PE `pe` starts call `c`; its phase then moves with [`phase`].
pub fn enter(seg: &Segment, pe: u32, c: &CallInfo) -> Mark {
    let l = seg.layout();
    let base = l.recorder(pe);
    // Plain loads and stores, no read-modify-write: a PE's calls come one
    // at a time (a program's calls from several threads at once may at
    // worst share a record, which only the report reads).
    let bump = |at: usize| {
        let w = seg.word(at);
        let n = w.load(Ordering::Relaxed).wrapping_add(1);
        w.store(n, Ordering::Relaxed);
        n
    };
    let n = bump(base + RECORDER_HEAD_AT) - 1;
    let rec = l.record(pe, n);
    let team_seq = match c.slot.filter(|&s| (s as usize) < PLANE_SLOTS) {
        Some(s) => bump(base + RECORDER_COUNTS_AT + 4 * s as usize),
        None => 0,
    };
    let now = now_ms();
    // The sequence word goes first as 0 (the record is being rewritten),
    // last as the record's number: a reader that sees the number sees the
    // words before it (release/acquire).
    seg.word(rec + 4 * W_SEQ).store(0, Ordering::Relaxed);
    put(seg, rec, W_CALL, code(c.name));
    put(seg, rec, W_SLOT, c.slot.unwrap_or(NONE));
    put(seg, rec, W_TEAM_SEQ, team_seq);
    put(seg, rec, W_PHASE, Phase::Entered as u32);
    put(seg, rec, W_ROOT, c.root.unwrap_or(NONE));
    put(seg, rec, W_BYTES_LO, c.bytes as u32);
    put(seg, rec, W_BYTES_HI, (c.bytes >> 32) as u32);
    put(seg, rec, W_ENTERED_MS, now);
    put(seg, rec, W_PHASE_MS, now);
    seg.word(rec + 4 * W_SEQ)
        .store(n.wrapping_add(1), Ordering::Release);
    Mark(rec)
}

/// Moves the call of `m` to phase `p`; the clock is read only when it ends
/// (the report counts a call's time from its entry, an idle PE's from its
/// last call's end).
pub fn phase(seg: &Segment, m: Mark, p: Phase) {
    if matches!(p, Phase::Done | Phase::Failed) {
        put(seg, m.0, W_PHASE_MS, now_ms());
    }
    seg.word(m.0 + 4 * W_PHASE)
        .store(p as u32, Ordering::Release);
}

/// One call as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The call's name (or `call 0x…`, its code, for a name not in [`NAMES`]).
    pub name: String,
    /// Its team's plane slot.
    pub slot: Option<u32>,
    /// Its number among this PE's calls on that slot (from 1).
    pub team_seq: u32,
    /// How far it got.
    pub phase: Phase,
    /// Its root, where it has one.
    pub root: Option<u32>,
    /// Bytes it moves per member.
    pub bytes: u64,
    /// When it was entered ([`now_ms`]).
    pub entered_ms: u32,
    /// When it reached its phase.
    pub phase_ms: u32,
}

/// What the recorder shows of one PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeView {
    /// The PE.
    pub pe: u32,
    /// Its `pe_state` word (running, finalized, failed).
    pub state: u32,
    /// Its newest call, if it made any.
    pub last: Option<Record>,
}

fn read_record(seg: &Segment, rec: usize) -> Option<Record> {
    let seq = seg.word(rec + 4 * W_SEQ).load(Ordering::Acquire);
    if seq == 0 {
        return None;
    }
    let opt = |w| Some(get(seg, rec, w)).filter(|&v| v != NONE);
    Some(Record {
        name: name_of(get(seg, rec, W_CALL)),
        slot: opt(W_SLOT),
        team_seq: get(seg, rec, W_TEAM_SEQ),
        phase: Phase::from_word(get(seg, rec, W_PHASE))?,
        root: opt(W_ROOT),
        bytes: u64::from(get(seg, rec, W_BYTES_LO)) | u64::from(get(seg, rec, W_BYTES_HI)) << 32,
        entered_ms: get(seg, rec, W_ENTERED_MS),
        phase_ms: get(seg, rec, W_PHASE_MS),
    })
}

/// Every PE's newest call and state.
pub fn snapshot(seg: &Segment) -> Vec<PeView> {
    let l: Layout = seg.layout();
    (0..l.npes)
        .map(|pe| {
            let head = seg
                .word(l.recorder(pe) + RECORDER_HEAD_AT)
                .load(Ordering::Acquire);
            let last = head
                .checked_sub(1)
                .and_then(|n| read_record(seg, l.record(pe, n)));
            PeView {
                pe,
                state: seg.word(l.pe_state(pe)).load(Ordering::Acquire),
                last,
            }
        })
        .collect()
}

/// The name of plane slot `s` for people.
fn team_name(s: Option<u32>) -> String {
    match s {
        Some(vkshmem_device::layout::TEAM_WORLD) => "WORLD".into(),
        Some(vkshmem_device::layout::TEAM_SHARED) => "SHARED".into(),
        Some(vkshmem_device::layout::TEAM_NODE) => "NODE".into(),
        Some(s) if (s as usize) < layout::SLOTS => format!("team {s}"),
        Some(s) => format!("active set {s}"),
        None => "-".into(),
    }
}

fn seconds(ms: u32) -> String {
    format!("{:.1} s", f64::from(ms) / 1000.0)
}

/// A call as the cause line names it: `reduce #418 on WORLD`.
fn call(r: &Record) -> String {
    match r.slot {
        Some(_) => format!("{} #{} on {}", r.name, r.team_seq, team_name(r.slot)),
        None => r.name.clone(),
    }
}

/// The job's state in one table, a row per PE, then the cause where
/// [`cause`] finds one; `now` from [`now_ms`].
pub fn format(views: &[PeView], now: u32) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4}  {:<9}  {:<20}  {:<10}  {:>6}  {:<8}  {:>8}",
        "PE", "state", "call", "team", "#", "phase", "for"
    );
    for v in views {
        let state = match v.state {
            PE_FAILED => "failed",
            PE_FINALIZED => "finalized",
            _ => "running",
        };
        match &v.last {
            Some(r) => {
                // A call's time in it; a returned one's time since.
                let since = if r.phase == Phase::Done {
                    r.phase_ms
                } else {
                    r.entered_ms
                };
                let _ = writeln!(
                    out,
                    "{:>4}  {:<9}  {:<20}  {:<10}  {:>6}  {:<8}  {:>8}",
                    v.pe,
                    state,
                    r.name,
                    team_name(r.slot),
                    if r.slot.is_some() {
                        r.team_seq.to_string()
                    } else {
                        "-".into()
                    },
                    r.phase.name(),
                    seconds(now.wrapping_sub(since)),
                );
            }
            None => {
                let _ = writeln!(out, "{:>4}  {:<9}  {:<20}", v.pe, state, "(no call yet)");
            }
        }
    }
    for line in cause(views, now) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// A call as members in step share it: name, team slot, number on the team.
type CallKey = (String, Option<u32>, u32);

/// What keeps the job from going on, in one line each: a PE that failed,
/// and PEs that are not in the call most of the others are in (in another
/// call, on another team, or in their own code). A call that failed still
/// counts as the one its PE was in: a timeout ends every PE's wait.
pub fn cause(views: &[PeView], now: u32) -> Vec<String> {
    let mut out = Vec::new();
    for v in views.iter().filter(|v| v.state == PE_FAILED) {
        let at = v.last.as_ref().map_or_else(String::new, |r| {
            format!(" in {} ({})", call(r), r.phase.name())
        });
        out.push(format!("PE {} failed{at}", v.pe));
    }
    // The call most busy PEs are in: (name, team, number).
    let busy: Vec<&Record> = views
        .iter()
        .filter(|v| v.state != PE_FAILED)
        .filter_map(|v| v.last.as_ref().filter(|r| r.phase != Phase::Done))
        .collect();
    let key = |r: &Record| -> CallKey { (r.name.clone(), r.slot, r.team_seq) };
    let mut counts: Vec<(CallKey, usize)> = Vec::new();
    for r in &busy {
        match counts.iter_mut().find(|(k, _)| *k == key(r)) {
            Some((_, n)) => *n += 1,
            None => counts.push((key(r), 1)),
        }
    }
    let Some((main, _)) = counts.iter().max_by_key(|(_, n)| *n).cloned() else {
        return out;
    };
    let waited = busy
        .iter()
        .find(|r| key(r) == main)
        .map(|r| call(r))
        .unwrap_or_default();
    for v in views.iter().filter(|v| v.state == layout::PE_RUNNING) {
        let elsewhere = match &v.last {
            Some(r) if key(r) == main => continue,
            Some(r) if r.phase != Phase::Done => format!(
                "it is in {} ({}) since {}",
                call(r),
                r.phase.name(),
                seconds(now.wrapping_sub(r.entered_ms))
            ),
            Some(r) => format!(
                "its last call, {}, returned {} ago",
                call(r),
                seconds(now.wrapping_sub(r.phase_ms))
            ),
            None => "it has made no call".into(),
        };
        out.push(format!("PE {} has not entered {waited}: {elsewhere}", v.pe));
    }
    out
}

/// [`snapshot`] and [`format()`] of a segment, now.
pub fn report(seg: &Segment) -> String {
    report_of(seg, &|_| true)
}

/// [`report`] of the PEs `on` says (a node's, under mpirun: the segment
/// has a ring for every PE of the job, and only the node's write theirs).
pub fn report_of(seg: &Segment, on: &dyn Fn(u32) -> bool) -> String {
    let views: Vec<PeView> = snapshot(seg).into_iter().filter(|v| on(v.pe)).collect();
    format(&views, now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::layout::{PE_RUNNING, RECORDS};

    fn rec(name: &str, slot: u32, n: u32, phase: Phase, at: u32) -> Option<Record> {
        Some(Record {
            name: name.into(),
            slot: Some(slot),
            team_seq: n,
            phase,
            root: None,
            bytes: 8,
            entered_ms: at,
            phase_ms: at,
        })
    }

    fn view(pe: u32, state: u32, last: Option<Record>) -> PeView {
        PeView { pe, state, last }
    }

    /// Two PEs in WORLD's reduce, the third in a collective of a team of
    /// its own: the cause names the third, where it is and since when.
    #[test]
    fn names_the_pe_in_another_call() {
        let views = [
            view(0, PE_RUNNING, rec("reduce", 0, 418, Phase::Entered, 1000)),
            view(1, PE_RUNNING, rec("reduce", 0, 418, Phase::Entered, 1100)),
            view(2, PE_RUNNING, rec("barrier_all", 5, 1, Phase::Entered, 200)),
        ];
        let c = cause(&views, 12_500);
        assert_eq!(
            c,
            ["PE 2 has not entered reduce #418 on WORLD: it is in barrier_all #1 on team 5 (entered) since 12.3 s"]
        );
        let t = format(&views, 12_500);
        assert!(t.lines().count() == 5, "{t}");
        assert!(t.contains("   2  running    barrier_all"), "{t}");
    }

    /// A PE in its own code (its last call returned), a failed PE.
    #[test]
    fn names_idle_and_failed_pes() {
        let views = [
            view(0, PE_RUNNING, rec("fcollect", 0, 7, Phase::Agreed, 100)),
            view(1, PE_FAILED, rec("fcollect", 0, 7, Phase::Agreed, 90)),
            view(2, PE_RUNNING, rec("fcollect", 0, 6, Phase::Done, 50)),
            view(3, PE_RUNNING, None),
        ];
        let c = cause(&views, 3050);
        assert_eq!(c[0], "PE 1 failed in fcollect #7 on WORLD (agreed)");
        assert_eq!(
            c[1],
            "PE 2 has not entered fcollect #7 on WORLD: its last call, fcollect #6 on WORLD, returned 3.0 s ago"
        );
        assert_eq!(
            c[2],
            "PE 3 has not entered fcollect #7 on WORLD: it has made no call"
        );
        // Nobody busy: nothing to blame.
        let idle = [view(0, PE_RUNNING, rec("reduce", 0, 1, Phase::Done, 5))];
        assert!(cause(&idle, 10).is_empty());
    }

    #[test]
    fn records_round_trip_through_the_segment() {
        let (seg, _fd) = Segment::create(2).expect("segment");
        let info = |name, bytes| CallInfo {
            name,
            slot: Some(0),
            bytes,
            root: None,
        };
        let m = enter(&seg, 1, &info("reduce", 4096));
        phase(&seg, m, Phase::Agreed);
        let v = snapshot(&seg);
        assert!(v[0].last.is_none());
        let r = v[1].last.clone().expect("a record");
        assert_eq!(
            (r.name.as_str(), r.slot, r.team_seq, r.phase, r.bytes),
            ("reduce", Some(0), 1, Phase::Agreed, 4096)
        );
        // Past the ring's length: the newest call, numbered on its team.
        for _ in 0..RECORDS + 6 {
            enter(&seg, 1, &info("barrier_all", 0));
        }
        let r = snapshot(&seg)[1].last.clone().expect("a record");
        assert_eq!((r.name.as_str(), r.team_seq), ("barrier_all", RECORDS + 7));
    }

    #[test]
    fn names_round_trip_through_their_codes() {
        for n in NAMES {
            assert_eq!(name_of(code(n)), *n);
        }
        let mut codes: Vec<u32> = NAMES.iter().map(|n| code(n)).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), NAMES.len(), "two names share a code");
        assert!(name_of(code("my_kernel")).starts_with("call 0x"));
    }
}
