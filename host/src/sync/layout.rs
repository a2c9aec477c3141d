//! The node segment's layout: the one definition that the endpoint (which creates
//! and initialises the segment) and every PE (which maps it) agree on. Pure: byte
//! offsets only, unit-tested for alignment and overlap.
//!
//! ```text
//! header     magic, version, npes, data_bytes          line 0
//!            abort word                                 line 1
//!            pe_state[npes] (u32 each)                  lines 2..
//! teams      [plane slot][leader]: count (line), gen + sleepers (line)
//! members    [plane slot][pe]: arrival (line), desc[2], data[2]
//! staging    [slot + 1][pe]: stage[2]                   (page aligned)
//! inboxes    [pe]: tail (line), bell + sleepers (line),
//!                  cells[INBOX_CELLS] of CELL_BYTES      (page aligned)
//! recorder   [pe]: head + per-slot call counts, records[RECORDS] of
//!                  RECORD_BYTES (the flight recorder, `super::recorder`)
//! ```
//!
//! A team occupies one slot on every member (see [`crate::team`]), and a PE is in
//! at most one team per slot, but two disjoint teams may share a slot (a slot is
//! chosen free among the *parent's* members). So a team's counters are indexed by
//! (slot, leader), the leader being its lowest WORLD PE (two live teams of one
//! slot never share a member, so never a leader), and a member's words by
//! (slot, WORLD PE).
//!
//! The plane has [`PLANE_SLOTS`] slots: the team table's [`SLOTS`], then
//! [`ACTIVE_SLOTS`] for the deprecated active sets, which have no team slot
//! (`crate::team::active_slots` hands them out: the same rule, a PE in at
//! most one set per slot).
//!
//! Descriptors and data are double-buffered by the parity of the sync epoch:
//! slot `e & 1` written before arriving at epoch `e` is read by peers after epoch
//! `e` completes and rewritten at epoch `e + 2`, which no member reaches before
//! every member has arrived at `e + 1`, i.e. finished reading.
//!
//! The staging buffers carry the collectives of teams that span devices (the
//! staged transport, `crate::collective::staged`), [`STAGE_BYTES`] per round,
//! double-buffered by round parity. One set per team slot and one more for the
//! active sets ([`ACTIVE_SET_STAGING`]), so that collectives of different teams
//! never share one. The memfd is sparse: pages nobody stages through cost
//! nothing.

use vkshmem_device::layout::MAX_TEAMS;

/// "VKSP": a mapped segment starts with it.
pub const MAGIC: u32 = 0x5053_4b56;
/// Bumped when this layout changes.
pub const VERSION: u32 = 5;
/// A cache line: words written by different PEs never share one.
pub const LINE: usize = 64;
/// Team slots (the device team table's size).
pub const SLOTS: usize = MAX_TEAMS as usize;
/// Plane slots for the active sets, after the team slots (at most 64: a
/// PE's free ones travel as a `u64` mask).
pub const ACTIVE_SLOTS: usize = 16;
/// Every slot of the plane: the teams' and the active sets'.
pub const PLANE_SLOTS: usize = SLOTS + ACTIVE_SLOTS;
/// Bytes of a call descriptor slot.
pub const DESC_BYTES: usize = 128;
/// Bytes of a member's data slot: the largest contribution a small collective
/// stages through the segment.
pub const DATA_BYTES: usize = 16 << 10;

/// Bytes of one staging buffer: what one member moves per round of a staged
/// collective.
pub const STAGE_BYTES: usize = 1 << 20;
/// The staging "slot" of the deprecated active sets (they have no team slot).
pub const ACTIVE_SET_STAGING: u32 = SLOTS as u32;

/// The staging set of plane slot `slot` (`None`: an active set without
/// one): a team slot has its own, every active set shares
/// [`ACTIVE_SET_STAGING`].
pub fn staging_key(slot: Option<u32>) -> u32 {
    slot.filter(|&s| (s as usize) < SLOTS)
        .unwrap_or(ACTIVE_SET_STAGING)
}

/// Bytes of one inbox cell: a message header and its payload.
pub const CELL_BYTES: usize = 4096;
/// Cells of a PE's inbox.
pub const INBOX_CELLS: u32 = 64;
/// Within an inbox: producers' position counter.
pub const INBOX_TAIL_AT: usize = 0;
/// Within an inbox: messages delivered so far (the futex word).
pub const INBOX_BELL_AT: usize = LINE;
/// Within an inbox: 1 while the owner sleeps on `bell`.
pub const INBOX_SLEEPERS_AT: usize = LINE + 4;
/// Within an inbox: the first cell.
pub const INBOX_CELLS_AT: usize = 2 * LINE;
/// Bytes of one PE's inbox (page aligned).
pub const INBOX_BYTES: usize =
    (INBOX_CELLS_AT + INBOX_CELLS as usize * CELL_BYTES).next_multiple_of(4096);

/// Records in a PE's flight recorder ring: its last calls.
pub const RECORDS: u32 = 64;
/// Bytes of one record (`super::recorder`).
pub const RECORD_BYTES: usize = LINE;
/// Within a PE's recorder: records written so far (the next one's number).
pub const RECORDER_HEAD_AT: usize = 0;
/// Within a PE's recorder: the PE's calls so far on each plane slot, a `u32`
/// each (a call's sequence number on its team).
pub const RECORDER_COUNTS_AT: usize = LINE;
/// Within a PE's recorder: the first record.
pub const RECORDER_RECORDS_AT: usize =
    (RECORDER_COUNTS_AT + 4 * PLANE_SLOTS).next_multiple_of(LINE);
/// Bytes of one PE's recorder.
pub const RECORDER_BYTES: usize = RECORDER_RECORDS_AT + RECORDS as usize * RECORD_BYTES;

/// `abort` word: nobody failed.
pub const ABORT_NONE: u32 = 0;
/// `abort` word kind bits: a PE failed (died, broke the protocol); low bits its PE.
pub const ABORT_FAILED: u32 = 1 << 30;
/// `abort` word kind bits: a wait timed out; low bits the first PE not arrived.
pub const ABORT_TIMEOUT: u32 = 2 << 30;
/// Mask of the PE number in the `abort` word.
pub const ABORT_PE_MASK: u32 = (1 << 30) - 1;

/// `pe_state` value: in the job.
pub const PE_RUNNING: u32 = 0;
/// `pe_state` value: said goodbye (finalized): enters no further collective.
pub const PE_FINALIZED: u32 = 1;
/// `pe_state` value: failed.
pub const PE_FAILED: u32 = 2;

/// Byte offsets of one job's segment (`npes` PEs on the node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// PEs of the job.
    pub npes: u32,
}

/// Header field offsets.
pub const MAGIC_AT: usize = 0;
/// Layout version.
pub const VERSION_AT: usize = 4;
/// PE count.
pub const NPES_AT: usize = 8;
/// [`DATA_BYTES`] as the creator saw it.
pub const DATA_BYTES_AT: usize = 12;
/// The job's abort word (its own line).
pub const ABORT_AT: usize = LINE;
/// First `pe_state` word.
pub const PE_STATE_AT: usize = 2 * LINE;

/// Bytes of a team's counters: `count` on one line, `gen` and `sleepers` on the
/// next (arrivers hit `count`, waiters poll `gen`).
pub const TEAM_BYTES: usize = 2 * LINE;
/// Within a team's counters: arrivals so far in this epoch.
pub const COUNT_AT: usize = 0;
/// Within a team's counters: the last completed epoch (the futex word).
pub const GEN_AT: usize = LINE;
/// Within a team's counters: PEs asleep on `gen`.
pub const SLEEPERS_AT: usize = LINE + 4;

/// Within a member's block: the epoch it last arrived at.
pub const ARRIVE_AT: usize = 0;
/// Within a member's block: descriptor slots.
pub const DESC_AT: usize = LINE;
/// Within a member's block: data slots.
pub const DATA_AT: usize = LINE + 2 * DESC_BYTES;
/// Bytes of a member's block.
pub const MEMBER_BYTES: usize = DATA_AT + 2 * DATA_BYTES;

impl Layout {
    fn header_bytes(self) -> usize {
        (PE_STATE_AT + 4 * self.npes as usize).next_multiple_of(LINE)
    }

    /// `pe_state` word of `pe`.
    pub fn pe_state(self, pe: u32) -> usize {
        PE_STATE_AT + 4 * pe as usize
    }

    fn teams_at(self) -> usize {
        self.header_bytes()
    }

    /// The counters of the team in `slot` whose lowest WORLD PE is `leader`.
    pub fn team(self, slot: u32, leader: u32) -> usize {
        self.teams_at() + (slot as usize * self.npes as usize + leader as usize) * TEAM_BYTES
    }

    fn members_at(self) -> usize {
        (self.teams_at() + PLANE_SLOTS * self.npes as usize * TEAM_BYTES).next_multiple_of(4096)
    }

    /// WORLD PE `pe`'s block for the team in `slot`.
    pub fn member(self, slot: u32, pe: u32) -> usize {
        self.members_at() + (slot as usize * self.npes as usize + pe as usize) * MEMBER_BYTES
    }

    /// Descriptor slot `parity` of `member(slot, pe)`.
    pub fn desc(self, slot: u32, pe: u32, parity: u32) -> usize {
        self.member(slot, pe) + DESC_AT + (parity as usize & 1) * DESC_BYTES
    }

    /// Data slot `parity` of `member(slot, pe)`.
    pub fn data(self, slot: u32, pe: u32, parity: u32) -> usize {
        self.member(slot, pe) + DATA_AT + (parity as usize & 1) * DATA_BYTES
    }

    fn staging_at(self) -> usize {
        (self.members_at() + PLANE_SLOTS * self.npes as usize * MEMBER_BYTES).next_multiple_of(4096)
    }

    /// Staging buffer `parity` of WORLD PE `pe` for the team in `slot` (or
    /// [`ACTIVE_SET_STAGING`]).
    pub fn staging(self, slot: u32, pe: u32, parity: u32) -> usize {
        debug_assert!(slot <= ACTIVE_SET_STAGING);
        self.staging_at()
            + ((slot as usize * self.npes as usize + pe as usize) * 2 + (parity as usize & 1))
                * STAGE_BYTES
    }

    fn inboxes_at(self) -> usize {
        self.staging_at() + (SLOTS + 1) * self.npes as usize * 2 * STAGE_BYTES
    }

    /// PE `pe`'s inbox.
    pub fn inbox(self, pe: u32) -> usize {
        self.inboxes_at() + pe as usize * INBOX_BYTES
    }

    /// Cell `i` of `inbox(pe)`.
    pub fn cell(self, pe: u32, i: u32) -> usize {
        self.inbox(pe) + INBOX_CELLS_AT + (i % INBOX_CELLS) as usize * CELL_BYTES
    }

    fn recorders_at(self) -> usize {
        self.inboxes_at() + self.npes as usize * INBOX_BYTES
    }

    /// PE `pe`'s flight recorder.
    pub fn recorder(self, pe: u32) -> usize {
        self.recorders_at() + pe as usize * RECORDER_BYTES
    }

    /// Record `i` (taken modulo [`RECORDS`]) of `recorder(pe)`.
    pub fn record(self, pe: u32, i: u32) -> usize {
        self.recorder(pe) + RECORDER_RECORDS_AT + (i % RECORDS) as usize * RECORD_BYTES
    }

    /// The segment's size in bytes (a multiple of the page size; untouched pages
    /// cost nothing).
    pub fn bytes(self) -> usize {
        (self.recorders_at() + self.npes as usize * RECORDER_BYTES).next_multiple_of(4096)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_aligned_and_disjoint() {
        for npes in [1, 2, 3, 8, 17, 64] {
            let l = Layout { npes };
            assert!(l.pe_state(npes - 1) + 4 <= l.team(0, 0));
            let last_team = l.team(PLANE_SLOTS as u32 - 1, npes - 1) + TEAM_BYTES;
            assert!(last_team <= l.member(0, 0));
            assert_eq!(l.member(0, 0) % 4096, 0);
            for slot in [0, 1, SLOTS as u32 - 1, SLOTS as u32, PLANE_SLOTS as u32 - 1] {
                for pe in [0, npes / 2, npes - 1] {
                    assert_eq!(l.team(slot, pe) % LINE, 0);
                    assert_eq!(l.member(slot, pe) % LINE, 0);
                    assert_eq!(l.desc(slot, pe, 1), l.desc(slot, pe, 0) + DESC_BYTES);
                    assert!(l.desc(slot, pe, 1) + DESC_BYTES <= l.data(slot, pe, 0));
                    assert!(l.data(slot, pe, 1) + DATA_BYTES <= l.member(slot, pe) + MEMBER_BYTES);
                }
            }
            assert!(
                l.member(PLANE_SLOTS as u32 - 1, npes - 1) + MEMBER_BYTES <= l.staging(0, 0, 0)
            );
            assert_eq!(l.staging(0, 0, 0) % 4096, 0);
            assert_eq!(l.staging(0, 0, 1), l.staging(0, 0, 0) + STAGE_BYTES);
            assert_eq!(
                l.staging(0, 1 % npes, 0),
                l.staging(0, 0, 0) + (npes.min(2) as usize - 1) * 2 * STAGE_BYTES
            );
            assert_eq!(
                l.staging(ACTIVE_SET_STAGING, npes - 1, 1) + STAGE_BYTES,
                l.inbox(0)
            );
            // A slot's set is one range, PE-major (`Plane::staging_set`,
            // `Plane::staging_offset`), page-aligned for a host import.
            for slot in [0, SLOTS as u32 - 1, ACTIVE_SET_STAGING] {
                for pe in 0..npes {
                    for parity in 0..2 {
                        assert_eq!(
                            (l.staging(slot, pe, parity) - l.staging(slot, 0, 0)) as u64,
                            crate::sync::Plane::staging_offset(pe, parity)
                        );
                    }
                }
                assert_eq!(l.staging(slot, 0, 0) % 4096, 0);
            }
            assert_eq!(l.inbox(npes - 1) + INBOX_BYTES, l.recorder(0));
            assert_eq!(l.recorder(0) % LINE, 0);
            assert!(l.record(npes - 1, RECORDS - 1) + RECORD_BYTES <= l.bytes());
            assert_eq!(l.record(0, RECORDS), l.record(0, 0));
            assert_eq!(l.inbox(1 % npes) % 4096, 0);
            assert!(l.cell(npes - 1, INBOX_CELLS - 1) + CELL_BYTES <= l.bytes());
            assert_eq!(l.cell(0, INBOX_CELLS), l.cell(0, 0));
            assert_eq!(l.bytes() % 4096, 0);
        }
        const { assert!(MEMBER_BYTES % LINE == 0) };
        const { assert!(ACTIVE_SLOTS <= 64) };
        assert_eq!(staging_key(Some(3)), 3);
        assert_eq!(staging_key(Some(SLOTS as u32 + 2)), ACTIVE_SET_STAGING);
        assert_eq!(staging_key(None), ACTIVE_SET_STAGING);
        const { assert!(SLEEPERS_AT + 4 <= TEAM_BYTES && GEN_AT % LINE == 0) };
    }
}
