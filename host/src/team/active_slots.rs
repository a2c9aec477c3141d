//! Which plane slots this PE's active sets meet in (pure bookkeeping; the
//! agreement itself is `crate::collective::active`'s).
//!
//! An active set (the deprecated collectives' `PE_start`, `logPE_stride`,
//! `PE_size`) is not a team, so it has no team slot. At its first use its
//! members agree, in one allgather among themselves, on the lowest of the
//! plane's active slots that is free on every one of them; every later call
//! meets on the plane in that slot, like a team.
//!
//! - A PE is in at most one set per slot, the plane's rule for teams: sets
//!   that share a member never share a slot, so consecutive calls on
//!   overlapping sets never meet in one another's counters. Disjoint sets may
//!   share a slot (their counters are indexed by their lowest PE).
//! - Only the set's members take part, since only they call.
//! - A set keeps its slot for the life of the context: nothing tells its
//!   members together that it will not be used again. So a slot's counters
//!   and a member's words in it serve one set only, and start from zero.
//! - When no slot is free on every member the set is recorded as slot-less
//!   on all of them alike (they saw the same masks) and meets through the
//!   bootstrap socket, as before: slower, still correct.
//! - A first use offers only slots that no other first use in flight (another
//!   thread) has offered, so two agreements never both take one slot.

use std::collections::HashMap;

use super::shape::TeamShape;

/// This PE's active sets and their slots (indices `0..slots` of the active
/// part of the plane).
#[derive(Debug)]
pub(crate) struct ActiveSlots {
    slots: u32,
    /// Every set met so far: its slot, or `None` (it meets on the socket).
    sets: HashMap<TeamShape, Option<u32>>,
    /// Slots taken by a set (bit `s`).
    used: u64,
    /// Slots offered by a first use still in flight.
    offered: u64,
}

/// What a call on an active set does first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The set was agreed on: its slot, or `None` for the socket.
    Known(Option<u32>),
    /// First use: agree with the set's members, offering these slots.
    Offer(u64),
}

impl ActiveSlots {
    /// An empty table of `slots` active slots (at most 64).
    pub fn new(slots: u32) -> ActiveSlots {
        assert!(slots <= 64, "{slots} active slots: a mask holds 64");
        ActiveSlots {
            slots,
            sets: HashMap::new(),
            used: 0,
            offered: 0,
        }
    }

    fn all(&self) -> u64 {
        if self.slots == 64 {
            u64::MAX
        } else {
            (1u64 << self.slots) - 1
        }
    }

    /// What a call on `set` does first; a returned offer is reserved until
    /// [`ActiveSlots::settle`].
    pub fn lookup(&mut self, set: TeamShape) -> Lookup {
        if let Some(&slot) = self.sets.get(&set) {
            return Lookup::Known(slot);
        }
        let offer = self.all() & !self.used & !self.offered;
        self.offered |= offer;
        Lookup::Offer(offer)
    }

    /// The slot every member's offer holds (the lowest), or `None`. Pure:
    /// every member computes it from the same masks.
    pub fn choose(offers: &[u64]) -> Option<u32> {
        let common = offers.iter().fold(u64::MAX, |m, o| m & o);
        (common != 0).then(|| common.trailing_zeros())
    }

    /// Ends a first use of `set` that offered `offer`: records its slot
    /// (`chosen`, `None`: the socket) when the agreement `done`; else (it
    /// failed) only returns the offer, so that the next call agrees again.
    pub fn settle(&mut self, set: TeamShape, offer: u64, chosen: Option<u32>, done: bool) {
        self.offered &= !offer;
        if !done {
            return;
        }
        if let Some(s) = chosen {
            debug_assert!(offer & (1 << s) != 0, "slot {s} was not offered");
            self.used |= 1 << s;
        }
        self.sets.insert(set, chosen);
    }
}

#[cfg(test)]
mod tests {
    use super::{ActiveSlots, Lookup};
    use crate::team::shape::TeamShape;

    fn set(start: i32, log: i32, size: i32) -> TeamShape {
        TeamShape::active_set(start, log, size, 8).unwrap()
    }

    /// Runs a first use of `s` on every member table in `tables`.
    fn agree(tables: &mut [&mut ActiveSlots], s: TeamShape) -> Option<u32> {
        let offers: Vec<u64> = tables
            .iter_mut()
            .map(|t| match t.lookup(s) {
                Lookup::Offer(o) => o,
                Lookup::Known(k) => panic!("{s:?} known already: {k:?}"),
            })
            .collect();
        let chosen = ActiveSlots::choose(&offers);
        for (t, o) in tables.iter_mut().zip(offers) {
            t.settle(s, o, chosen, true);
        }
        chosen
    }

    #[test]
    fn overlapping_sets_get_different_slots_and_keep_them() {
        let (mut a, mut b, mut c) = (
            ActiveSlots::new(4),
            ActiveSlots::new(4),
            ActiveSlots::new(4),
        );
        // {0,1} on PEs 0 and 1, then {0,1,2} on all three.
        assert_eq!(agree(&mut [&mut a, &mut b], set(0, 0, 2)), Some(0));
        assert_eq!(agree(&mut [&mut a, &mut b, &mut c], set(0, 0, 3)), Some(1));
        // {2} alone is no concern here; {1,2} overlaps both on PE 1.
        assert_eq!(agree(&mut [&mut b, &mut c], set(1, 0, 2)), Some(2));
        assert_eq!(a.lookup(set(0, 0, 2)), Lookup::Known(Some(0)));
        assert_eq!(c.lookup(set(0, 0, 3)), Lookup::Known(Some(1)));
        // A set disjoint from {1,2} on PE 0 alone would reuse a free slot.
        assert_eq!(ActiveSlots::choose(&[0b1100, 0b0110]), Some(2));
    }

    #[test]
    fn exhausted_slots_send_every_member_to_the_socket() {
        let (mut a, mut b) = (ActiveSlots::new(2), ActiveSlots::new(2));
        assert_eq!(agree(&mut [&mut a], set(0, 0, 3)), Some(0));
        assert_eq!(agree(&mut [&mut b], set(1, 0, 3)), Some(0));
        assert_eq!(agree(&mut [&mut a, &mut b], set(0, 0, 2)), Some(1));
        // Both hold slots 0 and 1 now: the next set is slot-less on both.
        assert_eq!(agree(&mut [&mut a, &mut b], set(0, 0, 4)), None);
        assert_eq!(a.lookup(set(0, 0, 4)), Lookup::Known(None));
        assert_eq!(b.lookup(set(0, 0, 4)), Lookup::Known(None));
        assert_eq!(ActiveSlots::choose(&[0b01, 0b10]), None);
        let mut full = ActiveSlots::new(64);
        assert_eq!(full.lookup(set(0, 0, 2)), Lookup::Offer(u64::MAX));
    }

    #[test]
    fn first_uses_in_flight_offer_disjoint_slots_and_a_failed_one_retries() {
        let mut a = ActiveSlots::new(3);
        let Lookup::Offer(first) = a.lookup(set(0, 0, 2)) else {
            panic!()
        };
        let Lookup::Offer(second) = a.lookup(set(0, 0, 3)) else {
            panic!()
        };
        assert_eq!((first, second), (0b111, 0));
        a.settle(set(0, 0, 2), first, None, false);
        assert_eq!(a.lookup(set(0, 0, 2)), Lookup::Offer(0b111));
        a.settle(set(0, 0, 2), 0b111, Some(1), true);
        a.settle(set(0, 0, 3), second, None, true);
        assert_eq!(a.lookup(set(0, 0, 4)), Lookup::Offer(0b101));
    }
}
