//! Teams: handles, the per-PE team table, and the collective creation protocol.
//!
//! - [`shape`]: which WORLD PEs a team holds, splits and translation (pure).
//! - [`active_slots`]: the plane slots of the deprecated active sets (pure).
//! - this module: [`Team`] handles, [`Context`]'s team calls, and the device-visible
//!   team table in the control region (`vkshmem_device::layout::TeamEntry`).
//!
//! A team lives in one *slot* of the table, the same slot on every member (slots
//! are agreed on with an allgather over the parent when the team is made), so a
//! team's sync flags have the same symmetric address on every member and device
//! code names a team by its slot (`Team::device_handle`).

pub(crate) mod active_slots;
pub mod shape;

use std::sync::MutexGuard;

use vkshmem_device::layout::{self, TeamEntry, MAX_TEAMS, TEAM_NODE, TEAM_SHARED, TEAM_WORLD};

use crate::context::{lock, Context};
use crate::error::{Error, Result};
pub use shape::TeamShape;

/// A team handle (`shmem_team_t`). Copy it freely; it stays valid on this PE until
/// [`Context::team_destroy`]. Handles are per PE: pass them to calls on the PE that
/// got them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Team {
    slot: u32,
    serial: u32,
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
    slots: Vec<Option<TeamRecord>>,
    next_serial: u32,
    /// The active sets' slots on the sync plane (not team slots).
    pub active: active_slots::ActiveSlots,
}

impl TeamTable {
    /// A table with WORLD, SHARED and NODE.
    pub fn new(me: u32, world: TeamShape, shared: TeamShape, node: TeamShape) -> TeamTable {
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
            active: active_slots::ActiveSlots::new(crate::sync::layout::ACTIVE_SLOTS as u32),
        }
    }

    /// The record in `slot`, if live.
    pub fn record(&self, slot: u32) -> Option<TeamRecord> {
        self.slots.get(slot as usize).copied().flatten()
    }

    /// Bit `s` set: slot `s` is free here.
    fn free_mask(&self) -> u64 {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    fn get(&self, team: Team) -> Result<TeamRecord> {
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
fn entry(slot: u32, r: &TeamRecord, n_pes: u32) -> TeamEntry {
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

/// One PE's part of a team-creation allgather.
#[derive(Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct SplitRequest {
    args: [i32; 4],
    free: u64,
}

impl Context {
    pub(crate) fn teams(&self) -> MutexGuard<'_, TeamTable> {
        lock(&self.inner.teams)
    }

    /// The members of `team`, as a sync or collective meets them
    /// ([`crate::rendezvous`]).
    pub(crate) fn members(&self, team: Team) -> Result<crate::rendezvous::Members> {
        let r = self.team_record(team)?;
        Ok(crate::rendezvous::Members {
            shape: r.shape,
            me: r.my_index,
            slot: Some(team.slot),
            deferred: None,
        })
    }

    /// What this PE knows of `team`, or a clear error for an invalid handle.
    pub(crate) fn team_record(&self, team: Team) -> Result<TeamRecord> {
        self.teams().get(team)
    }

    /// This PE's number in `team` (`shmem_team_my_pe`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or destroyed team.
    pub fn team_my_pe(&self, team: Team) -> Result<u32> {
        Ok(self.team_record(team)?.my_index)
    }

    /// Number of PEs in `team` (`shmem_team_n_pes`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or destroyed team.
    pub fn team_n_pes(&self, team: Team) -> Result<u32> {
        Ok(self.team_record(team)?.shape.size)
    }

    /// The WORLD PEs of `team` as a strided set.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or destroyed team.
    pub fn team_shape(&self, team: Team) -> Result<TeamShape> {
        Ok(self.team_record(team)?.shape)
    }

    /// The configuration `team` was made with (`shmem_team_get_config`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or destroyed team.
    pub fn team_get_config(&self, team: Team) -> Result<TeamConfig> {
        Ok(self.team_record(team)?.config)
    }

    /// The number in `to` of PE `pe` of `from` (`shmem_team_translate_pe`), or
    /// `None` when `pe` is not in `from` or that PE is not in `to`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or destroyed team.
    pub fn team_translate_pe(&self, from: Team, pe: i32, to: Team) -> Result<Option<u32>> {
        let (f, t) = (self.team_record(from)?, self.team_record(to)?);
        Ok(f.shape.translate(pe, &t.shape))
    }

    /// Makes a team of the members `start + j * stride`, `j < size`, of `parent`
    /// (numbers in `parent`; the stride may be negative): `shmem_team_split_strided`.
    /// Collective over `parent`: every member calls it with the same arguments.
    /// Returns the new team on its members and `None` on the other PEs of `parent`.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team, TeamConfig};
    /// let ctx = Context::init()?;
    /// // The even PEs of WORLD.
    /// let n = ctx.n_pes() as i32;
    /// let evens = ctx.team_split_strided(Team::WORLD, 0, 2, (n + 1) / 2, &TeamConfig::default())?;
    /// if let Some(t) = evens {
    ///     assert_eq!(ctx.team_my_pe(t)?, ctx.my_pe() / 2);
    ///     ctx.team_destroy(t)?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (on every member) for an invalid parent, indices
    /// outside it, a size below 1, a zero stride, or members passing different
    /// arguments; [`Error::TeamLimit`] when no table slot is free on every member
    /// of `parent`; [`Error::PeerFailed`] when a member dies, [`Error::Broken`]
    /// after a failed launch.
    pub fn team_split_strided(
        &self,
        parent: Team,
        start: i32,
        stride: i32,
        size: i32,
        config: &TeamConfig,
    ) -> Result<Option<Team>> {
        let p = self.team_record(parent)?;
        let slots = self.agree_split(&p, [1, start, stride, size], 1)?;
        // Every member checked the same arguments: all fail alike here.
        let shape = p.shape.split_strided(start, stride, size)?;
        // The parent sync happens even when this PE's install failed, so no
        // member waits for it forever.
        let teams = self.install(&[(slots[0], shape, *config)]);
        self.sync_members(&self.members(parent)?, "team_split_strided")?;
        Ok(teams?[0])
    }

    /// Splits `parent` into a grid of `xrange` columns (`shmem_team_split_2d`):
    /// returns this PE's x-axis team (its row of `xrange` consecutive members; the
    /// last row may be shorter) and its y-axis team (its column, every `xrange`-th
    /// member). Collective over `parent`. An `xrange` above the team's size means
    /// the whole team.
    ///
    /// # Errors
    /// As [`Context::team_split_strided`]; `xrange` must be at least 1.
    pub fn team_split_2d(
        &self,
        parent: Team,
        xrange: i32,
        xconfig: &TeamConfig,
        yconfig: &TeamConfig,
    ) -> Result<(Team, Team)> {
        let p = self.team_record(parent)?;
        let slots = self.agree_split(&p, [2, xrange, 0, 0], 2)?;
        let (x, y) = p.shape.split_2d(xrange, p.my_index)?;
        let teams = self.install(&[(slots[0], x, *xconfig), (slots[1], y, *yconfig)]);
        self.sync_members(&self.members(parent)?, "team_split_2d")?;
        let teams = teams?;
        Ok((
            teams[0].expect("a member of its row"),
            teams[1].expect("a member of its column"),
        ))
    }

    /// Destroys `team` on this PE (`shmem_team_destroy`); collective over the team.
    /// WORLD, SHARED and NODE cannot be destroyed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or already destroyed team or a
    /// predefined one; [`Error::PeerFailed`] and [`Error::Broken`] as
    /// [`Context::team_sync`].
    pub fn team_destroy(&self, team: Team) -> Result<()> {
        let r = self.team_record(team)?;
        if r.serial == 0 {
            return Err(Error::InvalidArgument(
                "WORLD, SHARED and NODE cannot be destroyed".into(),
            ));
        }
        // No member may still be using the team's flags when its slot is reused.
        self.sync_members(&self.members(team)?, "team_destroy")?;
        let at = layout::team_entry_word(team.slot) as u64 * 4;
        self.write_bytes(self.my_pe(), at, bytemuck::bytes_of(&TeamEntry::default()))?;
        self.teams().slots[team.slot as usize] = None;
        Ok(())
    }

    /// Waits until every member of `team` has called it (`shmem_team_sync`, host).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid or destroyed team;
    /// [`Error::PeerFailed`] when a member dies, [`Error::Broken`] after a failed
    /// launch.
    pub fn team_sync(&self, team: Team) -> Result<()> {
        let m = self.members(team)?;
        self.sync_members(&m, "team_sync")
            .map_err(|e| e.during("team_sync"))
    }

    /// [`Context::quiet`], then [`Context::team_sync`] (`shmem_team_barrier`, host).
    ///
    /// # Errors
    /// As [`Context::team_sync`].
    pub fn team_barrier(&self, team: Team) -> Result<()> {
        self.quiet()?;
        self.team_sync(team)
    }

    /// Every member's `data` over the PEs of `shape`, in team order, through the
    /// bootstrap socket (WORLD uses the world collectives). Teams meet on the sync
    /// plane instead ([`crate::rendezvous`]); this serves active sets and the
    /// team-creation agreement.
    pub(crate) fn gather_shape(&self, shape: TeamShape, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let r = if shape.size == 1 {
            Ok(vec![data.to_vec()])
        } else if shape == TeamShape::world(self.n_pes()) {
            self.with_boot(vec![data.to_vec()], |b| {
                if data.is_empty() {
                    b.barrier().map(|_| vec![Vec::new(); shape.size as usize])
                } else {
                    b.allgather(data)
                }
            })
        } else {
            self.with_boot(vec![data.to_vec()], |b| {
                b.team_allgather(shape.start, shape.stride, shape.size, data)
            })
        };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        r
    }

    /// The first step of a split: every member of `parent` shares its arguments
    /// and free slots; all must agree, and `want` slots free on every member are
    /// chosen.
    fn agree_split(&self, parent: &TeamRecord, args: [i32; 4], want: usize) -> Result<Vec<u32>> {
        let req = SplitRequest {
            args,
            free: self.teams().free_mask(),
        };
        let blobs = self.gather_shape(parent.shape, bytemuck::bytes_of(&req))?;
        let all: Vec<SplitRequest> = blobs
            .iter()
            .map(|b| bytemuck::try_pod_read_unaligned(b))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Bootstrap("a PE sent a malformed team request".into()))?;
        if let Some(i) = all.iter().position(|r| r.args != args) {
            return Err(Error::InvalidArgument(format!(
                "team split: member {i} of the parent passed {:?}, this PE {:?}; every member must pass the same arguments",
                &all[i].args[1..],
                &args[1..]
            )));
        }
        let free = all.iter().fold(u64::MAX, |m, r| m & r.free);
        let slots: Vec<u32> = (0..MAX_TEAMS)
            .filter(|s| free & 1 << s != 0)
            .take(want)
            .collect();
        if slots.len() < want {
            return Err(Error::TeamLimit { max: MAX_TEAMS });
        }
        Ok(slots)
    }

    /// Records the new teams this PE belongs to and writes their device table
    /// entries and zeroed flags. The caller then syncs the parent, so no member
    /// announces into a peer's flags before the peer has zeroed them.
    fn install(&self, new: &[(u32, TeamShape, TeamConfig)]) -> Result<Vec<Option<Team>>> {
        let me = self.my_pe();
        let mut out = Vec::new();
        for &(slot, shape, config) in new {
            let Some(my_index) = shape.index_of(me) else {
                out.push(None);
                continue;
            };
            let serial = {
                let mut t = self.teams();
                t.next_serial = t.next_serial.wrapping_add(1).max(1);
                t.next_serial
            };
            let rec = TeamRecord {
                shape,
                my_index,
                serial,
                config,
            };
            self.write_team_slot(slot, &rec)?;
            if let Some(p) = &self.inner.plane {
                // A team that spans nodes uses the slot on each node's plane
                // for its members there.
                let m = crate::rendezvous::Members {
                    shape,
                    me: my_index,
                    slot: Some(slot),
                    deferred: None,
                };
                let local = self.node_part(&m).map_or(m, |n| n.members);
                p.install(&crate::sync::Group {
                    slot,
                    shape: local.shape,
                    me: local.me,
                });
            }
            self.teams().slots[slot as usize] = Some(rec);
            out.push(Some(Team { slot, serial }));
        }
        Ok(out)
    }

    /// Writes slot `slot`'s device table entry and zeroes its flags.
    pub(crate) fn write_team_slot(&self, slot: u32, rec: &TeamRecord) -> Result<()> {
        let n = self.n_pes();
        let flags = vec![0u8; n as usize * 4];
        self.write_bytes(
            self.my_pe(),
            layout::team_flags_word(slot, n) as u64 * 4,
            &flags,
        )?;
        let e = entry(slot, rec, n);
        self.write_bytes(
            self.my_pe(),
            layout::team_entry_word(slot) as u64 * 4,
            bytemuck::bytes_of(&e),
        )
    }
}
