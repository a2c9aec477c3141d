//! The deprecated active-set collectives of OpenSHMEM (before teams): the PEs
//! `PE_start + i * 2^logPE_stride`, `i < PE_size`, and a symmetric `pSync` work
//! array.
//!
//! They run on the same code as the team collectives: an active set is a strided
//! team without a team-table slot. At its first use on a node's sync plane its
//! members agree, in one allgather through the bootstrap among themselves, on a
//! plane slot of its own (`crate::team::active_slots`); every later call meets
//! on the plane in it, like a team's. A set the plane has no slot for (every
//! slot taken on some member), a set that spans nodes, and any set in a job
//! without a plane meet through the bootstrap on every call.
//!
//! `pSync` (and `pWrk`) are checked to be symmetric objects of the documented
//! size and are never written, so they hold their initial values
//! (`SHMEM_SYNC_VALUE`) on return, as the OpenSHMEM specification and Open
//! MPI's man pages require. A member's failed check travels in its call
//! descriptor, so every member reports it.

use bytemuck::Pod;

use super::reduce::{Reduce, ReduceOp};
use super::Members;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::sync::{layout, Group};
use crate::team::active_slots::{ActiveSlots, Lookup};
use crate::team::TeamShape;

/// The first word of an active-set sync's descriptor (`[tag, ok]`), so that
/// members in different calls notice.
const SYNC_TAG: u32 = 0x4153_594e;

/// `SHMEM_SYNC_VALUE`: what every element of a pSync array holds before a call.
pub const SYNC_VALUE: i64 = 0;
/// `SHMEM_BARRIER_SYNC_SIZE` (elements of pSync).
pub const BARRIER_SYNC_SIZE: usize = 1;
/// `SHMEM_BCAST_SYNC_SIZE`.
pub const BCAST_SYNC_SIZE: usize = 1;
/// `SHMEM_COLLECT_SYNC_SIZE`.
pub const COLLECT_SYNC_SIZE: usize = 1;
/// `SHMEM_ALLTOALL_SYNC_SIZE`.
pub const ALLTOALL_SYNC_SIZE: usize = 1;
/// `SHMEM_ALLTOALLS_SYNC_SIZE`.
pub const ALLTOALLS_SYNC_SIZE: usize = 1;
/// `SHMEM_REDUCE_SYNC_SIZE`.
pub const REDUCE_SYNC_SIZE: usize = 1;
/// `SHMEM_REDUCE_MIN_WRKDATA_SIZE` (elements of pWrk).
pub const REDUCE_MIN_WRKDATA_SIZE: usize = 1;

/// An OpenSHMEM active set: `pe_start + i * 2^log_pe_stride`, `i < pe_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveSet {
    /// `PE_start`: the lowest PE number of the set.
    pub pe_start: i32,
    /// `logPE_stride`: log2 of the stride between consecutive PEs.
    pub log_pe_stride: i32,
    /// `PE_size`: the number of PEs.
    pub pe_size: i32,
}

impl Runtime {
    /// The members of an active set, checked to hold this PE, and a checked pSync.
    fn active(&self, set: ActiveSet, psync: &SymSlice<i64>, need: usize) -> Result<Members> {
        let shape =
            TeamShape::active_set(set.pe_start, set.log_pe_stride, set.pe_size, self.n_pes())?;
        let me = shape.index_of(self.my_pe()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "PE {} is not in the active set {set:?}: only its members may call",
                self.my_pe()
            ))
        })?;
        let deferred = self
            .check_sym("pSync", psync, need as u64)
            .err()
            .map(|e| e.to_string());
        Ok(Members {
            shape,
            me,
            slot: self.active_slot(shape, me)?,
            deferred,
        })
    }

    /// The plane slot the active set `shape` (this PE is member `me`) meets
    /// in: agreed on among its members at its first use, then remembered
    /// (see the module docs). `None`: it meets through the bootstrap.
    fn active_slot(&self, shape: TeamShape, me: u32) -> Result<Option<u32>> {
        let Some(plane) = &self.plane else {
            return Ok(None);
        };
        let probe = Members {
            shape,
            me,
            slot: None,
            deferred: None,
        };
        if shape.size == 1 || self.node_part(&probe).is_some() {
            return Ok(None);
        }
        let offer = match self.teams().active.lookup(shape) {
            Lookup::Known(slot) => return Ok(slot.map(|s| layout::SLOTS as u32 + s)),
            Lookup::Offer(offer) => offer,
        };
        let chosen = self
            .gather_shape(shape, &offer.to_le_bytes())
            .and_then(|all| {
                let offers = all
                    .iter()
                    .map(|b| b.as_slice().try_into().map(u64::from_le_bytes))
                    .collect::<std::result::Result<Vec<u64>, _>>()
                    .map_err(|_| Error::Bootstrap("a PE sent a malformed slot offer".into()))?;
                Ok(ActiveSlots::choose(&offers))
            });
        let done = chosen.is_ok();
        let slot = chosen.as_ref().ok().copied().flatten();
        self.teams().active.settle(shape, offer, slot, done);
        let Some(s) = chosen? else {
            tracing::debug!(
                "PE {}: no plane slot free on every member of the active set {shape:?}: it meets through the bootstrap",
                self.my_pe()
            );
            return Ok(None);
        };
        let slot = layout::SLOTS as u32 + s;
        // The slot served no set of these members before (a set keeps its
        // slot): its counters are where install finds them on every member.
        plane.install(&Group { slot, shape, me });
        Ok(Some(slot))
    }

    pub(crate) fn barrier_active(&self, set: ActiveSet, psync: &SymSlice<i64>) -> Result<()> {
        self.quiet()?;
        self.sync_active(set, psync)
    }

    pub(crate) fn sync_active(&self, set: ActiveSet, psync: &SymSlice<i64>) -> Result<()> {
        let m = self.active(set, psync, BARRIER_SYNC_SIZE)?;
        // Every member learns whether any member's pSync was bad.
        let ok = u32::from(m.deferred.is_none());
        let met = self.meet(&m, &mut |_| [SYNC_TAG, ok])?;
        if let Some(why) = m.deferred {
            return Err(Error::InvalidArgument(why));
        }
        if let Some(i) = met.descs.iter().position(|d| d[0] != SYNC_TAG) {
            return Err(Error::InvalidArgument(format!(
                "collectives out of step on the active set: this PE is in a sync, member {i} (PE {}) in another call",
                m.shape.member(i as u32)
            )));
        }
        match met.descs.iter().position(|d| d[1] != 1) {
            Some(i) => Err(Error::InvalidArgument(format!(
                "sync: member {i} of the active set passed a bad pSync"
            ))),
            None => Ok(()),
        }
    }

    pub(crate) fn broadcast_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        root: u32,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        let m = self.active(set, psync, BCAST_SYNC_SIZE)?;
        self.broadcast_inner(m, dest, source, nelems, root, true)
    }

    pub(crate) fn collect_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        let m = self.active(set, psync, COLLECT_SYNC_SIZE)?;
        self.collect_inner(m, dest, source, nelems)
    }

    pub(crate) fn fcollect_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        let m = self.active(set, psync, COLLECT_SYNC_SIZE)?;
        self.fcollect_inner(m, dest, source, nelems)
    }

    pub(crate) fn alltoall_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        let m = self.active(set, psync, ALLTOALL_SYNC_SIZE)?;
        self.alltoall_inner(m, dest, source, nelems)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoalls_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        let m = self.active(set, psync, ALLTOALLS_SYNC_SIZE)?;
        self.alltoalls_inner(m, dest, source, dst, sst, nelems)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_to_all<T: Reduce>(
        &self,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
        set: ActiveSet,
        pwrk: &SymSlice<T>,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        let pwrk = self
            .check_sym(
                "pWrk",
                pwrk,
                (nreduce / 2 + 1).max(REDUCE_MIN_WRKDATA_SIZE) as u64,
            )
            .err()
            .map(|e| e.to_string());
        self.reduce_set(op, dest, source, nreduce, set, psync, pwrk)
    }

    pub(crate) fn reduce_active<T: Reduce>(
        &self,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.reduce_set(op, dest, source, nreduce, set, psync, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_set<T: Reduce>(
        &self,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
        bad_pwrk: Option<String>,
    ) -> Result<()> {
        let mut m = self.active(set, psync, REDUCE_SYNC_SIZE)?;
        if m.deferred.is_none() {
            m.deferred = bad_pwrk;
        }
        self.reduce_inner(m, op, dest, source, nreduce)
    }
}
