//! The runtime's side of teams: the table lookups every call makes, and
//! team creation and destruction (collective over the parent team, agreed
//! through [`super::rendezvous`]). The team types are in `crate::team`.

use std::sync::MutexGuard;

use vkshmem_device::layout::{self, TeamEntry, MAX_TEAMS};

use super::{lock, Runtime};
use crate::error::{Error, Result};
use crate::team::{entry, Team, TeamConfig, TeamRecord, TeamShape, TeamTable};

/// One PE's part of a team-creation allgather.
#[derive(Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct SplitRequest {
    args: [i32; 4],
    free: u64,
}

impl Runtime {
    pub(crate) fn teams(&self) -> MutexGuard<'_, TeamTable> {
        lock(&self.teams)
    }

    /// The members of `team`, as a sync or collective meets them
    /// ([`crate::runtime::rendezvous`]).
    pub(crate) fn members(&self, team: Team) -> Result<crate::runtime::rendezvous::Members> {
        let r = self.team_record(team)?;
        Ok(crate::runtime::rendezvous::Members {
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

    pub(crate) fn team_my_pe(&self, team: Team) -> Result<u32> {
        Ok(self.team_record(team)?.my_index)
    }

    pub(crate) fn team_n_pes(&self, team: Team) -> Result<u32> {
        Ok(self.team_record(team)?.shape.size)
    }

    pub(crate) fn team_shape(&self, team: Team) -> Result<TeamShape> {
        Ok(self.team_record(team)?.shape)
    }

    pub(crate) fn team_get_config(&self, team: Team) -> Result<TeamConfig> {
        Ok(self.team_record(team)?.config)
    }

    pub(crate) fn team_translate_pe(&self, from: Team, pe: i32, to: Team) -> Result<Option<u32>> {
        let (f, t) = (self.team_record(from)?, self.team_record(to)?);
        Ok(f.shape.translate(pe, &t.shape))
    }

    pub(crate) fn team_split_strided(
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
        self.sync_call(&self.members(parent)?, "team_split_strided")?;
        Ok(teams?[0])
    }

    pub(crate) fn team_split_2d(
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
        self.sync_call(&self.members(parent)?, "team_split_2d")?;
        let teams = teams?;
        Ok((
            teams[0].expect("a member of its row"),
            teams[1].expect("a member of its column"),
        ))
    }

    pub(crate) fn team_destroy(&self, team: Team) -> Result<()> {
        let r = self.team_record(team)?;
        if r.serial == 0 {
            return Err(Error::InvalidArgument(
                "WORLD, SHARED and NODE cannot be destroyed".into(),
            ));
        }
        // No member may still be using the team's flags when its slot is reused.
        self.sync_call(&self.members(team)?, "team_destroy")?;
        let at = layout::team_entry_word(team.slot) as u64 * 4;
        self.write_bytes(self.my_pe(), at, bytemuck::bytes_of(&TeamEntry::default()))?;
        self.teams().slots[team.slot as usize] = None;
        Ok(())
    }

    pub(crate) fn team_sync(&self, team: Team) -> Result<()> {
        let m = self.members(team)?;
        self.sync_call(&m, "team_sync")
            .map_err(|e| e.during("team_sync"))
    }

    pub(crate) fn team_barrier(&self, team: Team) -> Result<()> {
        self.quiet()?;
        self.team_sync(team)
    }

    /// Every member's `data` over the PEs of `shape`, in team order, through the
    /// bootstrap socket (WORLD uses the world collectives). Teams meet on the sync
    /// plane instead ([`crate::runtime::rendezvous`]); this serves active sets and the
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
            if let Some(p) = &self.plane {
                // A team that spans nodes uses the slot on each node's plane
                // for its members there.
                let m = crate::runtime::rendezvous::Members {
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
