//! The façade of teams: lookups, splits, destruction (`crate::runtime::teams`).

use crate::error::Result;
use crate::team::{Team, TeamConfig, TeamShape};

use super::Context;

impl Context {
    /// This PE's number in `team` (`shmem_team_my_pe`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team.
    pub fn team_my_pe(&self, team: Team) -> Result<u32> {
        self.rt.team_my_pe(team)
    }

    /// Number of PEs in `team` (`shmem_team_n_pes`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team.
    pub fn team_n_pes(&self, team: Team) -> Result<u32> {
        self.rt.team_n_pes(team)
    }

    /// The WORLD PEs of `team` as a strided set.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team.
    pub fn team_shape(&self, team: Team) -> Result<TeamShape> {
        self.rt.team_shape(team)
    }

    /// The configuration `team` was made with (`shmem_team_get_config`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team.
    pub fn team_get_config(&self, team: Team) -> Result<TeamConfig> {
        self.rt.team_get_config(team)
    }

    /// The number in `to` of PE `pe` of `from` (`shmem_team_translate_pe`), or
    /// `None` when `pe` is not in `from` or that PE is not in `to`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team.
    pub fn team_translate_pe(&self, from: Team, pe: i32, to: Team) -> Result<Option<u32>> {
        self.rt.team_translate_pe(from, pe, to)
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
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) (on every member) for an invalid parent, indices
    /// outside it, a size below 1, a zero stride, or members passing different
    /// arguments; [`Error::TeamLimit`](crate::Error::TeamLimit) when no table slot is free on every member
    /// of `parent`; [`Error::PeerFailed`](crate::Error::PeerFailed) when a member dies, [`Error::Broken`](crate::Error::Broken)
    /// after a failed launch.
    pub fn team_split_strided(
        &self,
        parent: Team,
        start: i32,
        stride: i32,
        size: i32,
        config: &TeamConfig,
    ) -> Result<Option<Team>> {
        self.rt
            .team_split_strided(parent, start, stride, size, config)
    }

    /// Splits `parent` into a grid of `xrange` columns (`shmem_team_split_2d`):
    /// returns this PE's x-axis team (its row of `xrange` consecutive members; the
    /// last row may be shorter) and its y-axis team (its column, every `xrange`-th
    /// member). Collective over `parent`. An `xrange` above the team's size means
    /// the whole team.
    ///
    /// # Errors
    /// As [`Context::team_split_strided`](crate::Context::team_split_strided); `xrange` must be at least 1.
    pub fn team_split_2d(
        &self,
        parent: Team,
        xrange: i32,
        xconfig: &TeamConfig,
        yconfig: &TeamConfig,
    ) -> Result<(Team, Team)> {
        self.rt.team_split_2d(parent, xrange, xconfig, yconfig)
    }

    /// Destroys `team` on this PE (`shmem_team_destroy`); collective over the team.
    /// WORLD, SHARED and NODE cannot be destroyed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or already destroyed team or a
    /// predefined one; [`Error::PeerFailed`](crate::Error::PeerFailed) and [`Error::Broken`](crate::Error::Broken) as
    /// [`Context::team_sync`](crate::Context::team_sync).
    pub fn team_destroy(&self, team: Team) -> Result<()> {
        self.rt.team_destroy(team)
    }

    /// Waits until every member of `team` has called it (`shmem_team_sync`, host).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when a member dies, [`Error::Broken`](crate::Error::Broken) after a failed
    /// launch.
    pub fn team_sync(&self, team: Team) -> Result<()> {
        self.rt.team_sync(team)
    }

    /// [`Context::quiet`](crate::Context::quiet), then [`Context::team_sync`](crate::Context::team_sync) (`shmem_team_barrier`, host).
    ///
    /// # Errors
    /// As [`Context::team_sync`](crate::Context::team_sync).
    pub fn team_barrier(&self, team: Team) -> Result<()> {
        self.rt.team_barrier(team)
    }
}
