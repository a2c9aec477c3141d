//! Teams: handles and the per-PE team table, pure; the runtime's side
//! (lookups, the collective creation protocol) is `runtime/teams.rs`.
//!
//! - [`shape`]: which WORLD PEs a team holds, splits and translation (pure).
//! - `active_slots`: the plane slots of the deprecated active sets (pure).
//! - this module: [`Team`] handles, and the team table whose entries the
//!   control region holds for device code (`vkshmem_device::layout::TeamEntry`).
//!
//! A team lives in one *slot* of the table, the same slot on every member (slots
//! are agreed on with an allgather over the parent when the team is made), so a
//! team's sync flags have the same symmetric address on every member and device
//! code names a team by its slot (`Team::device_handle`).

pub(crate) mod active_slots;
pub mod shape;

use vkshmem_device::layout::{self, TeamEntry, MAX_TEAMS, TEAM_NODE, TEAM_SHARED, TEAM_WORLD};

use crate::error::{Error, Result};
pub use shape::TeamShape;

/// A team handle (`shmem_team_t`). Copy it freely; it stays valid on this PE until
/// [`Context::team_destroy`](crate::Context::team_destroy). Handles are per PE: pass them to calls on the PE that
/// got them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Team {
    pub(crate) slot: u32,
    pub(crate) serial: u32,
}

impl Team {
    /// Every PE of the job (`SHMEM_TEAM_WORLD`).
    pub const WORLD: Team = Team {
        slot: TEAM_WORLD,
        serial: 0,
    };
    /// The PEs whose heaps this PE can load and store directly, i.e. the PEs on
    /// the same device (`SHMEM_TEAM_SHARED`). When they do not form a strided set
    /// it is this PE alone.
    pub const SHARED: Team = Team {
        slot: TEAM_SHARED,
        serial: 0,
    };
    /// The PEs on this node (`SHMEMX_TEAM_NODE`): every PE of the job, but
    /// in a job of several nodes under mpirun.
    pub const NODE: Team = Team {
        slot: TEAM_NODE,
        serial: 0,
    };
    /// No team (`SHMEM_TEAM_INVALID`): every call given it fails.
    pub const INVALID: Team = Team {
        slot: layout::TEAM_INVALID,
        serial: 0,
    };

    /// The team's handle in device code (its slot in the device team table): pass
    /// it to the device library's `shmem_team_*` and collective functions.
    pub fn device_handle(&self) -> u32 {
        self.slot
    }

    /// The handle as one number (slot and serial), for bindings that keep
    /// teams in integer handles; [`Team::from_raw`] gives it back.
    pub fn to_raw(self) -> u64 {
        (u64::from(self.serial) << 32) | u64::from(self.slot)
    }

    /// The team of a number from [`Team::to_raw`]. A number that names no
    /// live team gives a handle every call rejects with a clear error.
    pub fn from_raw(raw: u64) -> Team {
        Team {
            slot: raw as u32,
            serial: (raw >> 32) as u32,
        }
    }
}

/// A team's configuration (`shmem_team_config_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TeamConfig {
    /// Communication contexts the team may create (recorded; contexts are not
    /// implemented yet).
    pub num_contexts: i32,
}

/// What this PE knows of one live team.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TeamRecord {
    pub shape: TeamShape,
    pub my_index: u32,
    pub serial: u32,
    pub config: TeamConfig,
}

/// This PE's teams, by slot.
#[derive(Debug)]
pub(crate) struct TeamTable {
    pub(crate) slots: Vec<Option<TeamRecord>>,
    pub(crate) next_serial: u32,
    /// The active sets' slots on the sync plane (not team slots).
    pub active: active_slots::ActiveSlots,
}

impl TeamTable {
    /// A table with WORLD, SHARED and NODE, and `active_slots` slots on the
    /// sync plane for active sets.
    pub fn new(
        me: u32,
        world: TeamShape,
        shared: TeamShape,
        node: TeamShape,
        active_slots: u32,
    ) -> TeamTable {
        let mut slots = vec![None; MAX_TEAMS as usize];
        for (slot, shape) in [
            (TEAM_WORLD, world),
            (TEAM_SHARED, shared),
            (TEAM_NODE, node),
        ] {
            slots[slot as usize] = Some(TeamRecord {
                shape,
                my_index: shape.index_of(me).expect("predefined teams hold this PE"),
                serial: 0,
                config: TeamConfig::default(),
            });
        }
        TeamTable {
            slots,
            next_serial: 1,
            active: active_slots::ActiveSlots::new(active_slots),
        }
    }

    /// The record in `slot`, if live.
    pub fn record(&self, slot: u32) -> Option<TeamRecord> {
        self.slots.get(slot as usize).copied().flatten()
    }

    /// Bit `s` set: slot `s` is free here.
    pub(crate) fn free_mask(&self) -> u64 {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    pub(crate) fn get(&self, team: Team) -> Result<TeamRecord> {
        match self.slots.get(team.slot as usize) {
            Some(Some(r)) if r.serial == team.serial => Ok(*r),
            _ if team == Team::INVALID => Err(Error::InvalidArgument(
                "the team is SHMEM_TEAM_INVALID (this PE is not in it)".into(),
            )),
            _ => Err(Error::InvalidArgument(format!(
                "team handle {team:?} names no live team of this PE (destroyed, or from another PE)"
            ))),
        }
    }
}

/// The device table entry of a team in `slot`.
pub(crate) fn entry(slot: u32, r: &TeamRecord, n_pes: u32) -> TeamEntry {
    TeamEntry {
        valid: 1,
        start: r.shape.start,
        stride: r.shape.stride as u32,
        size: r.shape.size,
        my_index: r.my_index,
        flags: layout::team_flags_word(slot, n_pes),
        ..Default::default()
    }
}
