//! The façade of host collectives: barriers and syncs on teams, broadcast, collect, fcollect,
//! alltoall(s), the reductions, and UCC's calls (`crate::collective`).

use bytemuck::Pod;

use crate::collective::active::ActiveSet;
use crate::collective::reduce::{BitwiseReduce, Reduce, ReduceOp};
use crate::error::Result;
use crate::symbuf::SymSlice;
use crate::team::Team;

use super::Context;

impl Context {
    /// `shmem_barrier`: [`Context::quiet`](crate::Context::quiet), then a sync of the active set.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad active set, one without this PE, or a
    /// pSync outside the heap or shorter than [`BARRIER_SYNC_SIZE`](crate::collective::active::BARRIER_SYNC_SIZE).
    pub fn barrier_active(&self, set: ActiveSet, psync: &SymSlice<i64>) -> Result<()> {
        self.rt.barrier_active(set, psync)
    }

    /// `shmem_sync` over an active set.
    ///
    /// # Errors
    /// As [`Context::barrier_active`](crate::Context::barrier_active).
    pub fn sync_active(&self, set: ActiveSet, psync: &SymSlice<i64>) -> Result<()> {
        self.rt.sync_active(set, psync)
    }

    /// `shmem_broadcast32`/`64` (use `u32` or `u64` elements): `root` is a number in
    /// the active set; unlike [`Context::broadcast`](crate::Context::broadcast), the root's `dest` is not
    /// written.
    ///
    /// # Errors
    /// As [`Context::broadcast`](crate::Context::broadcast) and [`Context::barrier_active`](crate::Context::barrier_active).
    pub fn broadcast_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        root: u32,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt
            .broadcast_active(dest, source, nelems, root, set, psync)
    }

    /// `shmem_collect32`/`64` over an active set (counts may differ).
    ///
    /// # Errors
    /// As [`Context::collect`](crate::Context::collect) and [`Context::barrier_active`](crate::Context::barrier_active).
    pub fn collect_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt.collect_active(dest, source, nelems, set, psync)
    }

    /// `shmem_fcollect32`/`64` over an active set.
    ///
    /// # Errors
    /// As [`Context::fcollect`](crate::Context::fcollect) and [`Context::barrier_active`](crate::Context::barrier_active).
    pub fn fcollect_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt.fcollect_active(dest, source, nelems, set, psync)
    }

    /// `shmem_alltoall32`/`64` over an active set.
    ///
    /// # Errors
    /// As [`Context::alltoall`](crate::Context::alltoall) and [`Context::barrier_active`](crate::Context::barrier_active).
    pub fn alltoall_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt.alltoall_active(dest, source, nelems, set, psync)
    }

    /// `shmem_alltoalls32`/`64` over an active set.
    ///
    /// # Errors
    /// As [`Context::alltoalls`](crate::Context::alltoalls) and [`Context::barrier_active`](crate::Context::barrier_active).
    #[allow(clippy::too_many_arguments)]
    pub fn alltoalls_active<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt
            .alltoalls_active(dest, source, dst, sst, nelems, set, psync)
    }

    /// `shmem_<TYPE>_<op>_to_all`: the reduction over an active set. `pwrk` must
    /// hold `max(nreduce / 2 + 1, REDUCE_MIN_WRKDATA_SIZE)` elements (checked, not
    /// used).
    ///
    /// # Errors
    /// As [`Context::reduce`](crate::Context::reduce) and [`Context::barrier_active`](crate::Context::barrier_active).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_to_all<T: Reduce>(
        &self,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
        set: ActiveSet,
        pwrk: &SymSlice<T>,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt
            .reduce_to_all(op, dest, source, nreduce, set, pwrk, psync)
    }

    /// [`Context::reduce_to_all`](crate::Context::reduce_to_all) for a caller that checked its pWrk itself
    /// (a binding whose pWrk is not on the heap).
    ///
    /// # Errors
    /// As [`Context::reduce_to_all`](crate::Context::reduce_to_all).
    pub fn reduce_active<T: Reduce>(
        &self,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
        set: ActiveSet,
        psync: &SymSlice<i64>,
    ) -> Result<()> {
        self.rt.reduce_active(op, dest, source, nreduce, set, psync)
    }

    /// Block `j` (of `nelems` elements) of `dest` on every member gets block `me`
    /// of member `j`'s `source` (`shmem_alltoall`). Collective; both objects hold
    /// `nelems` times the team's size.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let n = ctx.n_pes() as usize;
    /// let out = ctx.malloc::<u64>(n)?; // one token for each PE (MoE dispatch)
    /// let inbox = ctx.malloc::<u64>(n)?;
    /// let me = ctx.my_pe() as u64;
    /// out.write(&(0..n as u64).map(|to| me * 100 + to).collect::<Vec<_>>())?;
    /// ctx.alltoall(Team::WORLD, &inbox.as_slice(), &out.as_slice(), 1)?;
    /// assert_eq!(inbox.to_vec()?[0], me); // from PE 0: 0 * 100 + me
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Context::fcollect`](crate::Context::fcollect).
    pub fn alltoall<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.alltoall(team, dest, source, nelems)
    }

    /// [`Context::alltoall`](crate::Context::alltoall) over bytes (`shmem_alltoallmem`).
    ///
    /// # Errors
    /// As [`Context::alltoall`](crate::Context::alltoall).
    pub fn alltoallmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
    ) -> Result<()> {
        self.rt.alltoallmem(team, dest, source, nbytes)
    }

    /// Strided [`Context::alltoall`](crate::Context::alltoall) (`shmem_alltoalls`): element `k` of block `j`
    /// is at `dest[(j * nelems + k) * dst]`, and comes from
    /// `source[(me * nelems + k) * sst]` of member `j`. Strides are in elements, at
    /// least 1. Collective.
    ///
    /// # Errors
    /// As [`Context::alltoall`](crate::Context::alltoall); [`Error::InvalidArgument`](crate::Error::InvalidArgument) (on every member) for a
    /// zero stride, strides whose span overflows, or elements that are not 1, 2, 4
    /// or 8 bytes.
    pub fn alltoalls<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Result<()> {
        self.rt.alltoalls(team, dest, source, dst, sst, nelems)
    }

    /// Copies `nelems` elements of `source` on the team's PE `root` into `dest` on
    /// every member of `team` (the root included): `shmem_broadcast`. Collective.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let src = ctx.malloc::<f32>(4)?;
    /// let dst = ctx.malloc::<f32>(4)?;
    /// src.write(&[ctx.my_pe() as f32; 4])?;
    /// ctx.broadcast(Team::WORLD, &dst.as_slice(), &src.as_slice(), 4, 0)?;
    /// assert_eq!(dst.to_vec()?, vec![0.0; 4]); // PE 0's data everywhere
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid or destroyed team (on this PE,
    /// before any communication) and, on every member, for a root outside the
    /// team, objects that do not hold `nelems` elements, lie outside the heap's
    /// allocatable part (or past its first 4 GiB, [`crate::MAX_DEVICE_BYTE`],
    /// where the call takes a generic kernel), are not aligned to the element size or
    /// have a zero-sized element type, or members passing different arguments;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when a member dies, [`Error::Broken`](crate::Error::Broken) after a failed
    /// launch, [`Error::Device`](crate::Error::Device) and Vulkan errors from the data movement.
    pub fn broadcast<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        root: u32,
    ) -> Result<()> {
        self.rt.broadcast(team, dest, source, nelems, root)
    }

    /// [`Context::broadcast`](crate::Context::broadcast) over bytes (`shmem_broadcastmem`): `nbytes` bytes.
    ///
    /// # Errors
    /// As [`Context::broadcast`](crate::Context::broadcast).
    pub fn broadcastmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
        root: u32,
    ) -> Result<()> {
        self.rt.broadcastmem(team, dest, source, nbytes, root)
    }

    /// Concatenates `nelems` elements of every member's `source`, in team order,
    /// into `dest` on every member (`shmem_fcollect`). Collective; `nelems` must be
    /// the same on every member.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let n = ctx.n_pes() as usize;
    /// let mine = ctx.malloc::<u32>(2)?;
    /// let all = ctx.malloc::<u32>(2 * n)?;
    /// mine.write(&[ctx.my_pe(), 7])?;
    /// ctx.fcollect(Team::WORLD, &all.as_slice(), &mine.as_slice(), 2)?;
    /// assert_eq!(all.to_vec()?[2], 1); // PE 1's first element, on every PE
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Context::broadcast`](crate::Context::broadcast) (without the root); members passing different
    /// `nelems`, or `nelems` times the team's size overflowing, is an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) on every member.
    pub fn fcollect<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.fcollect(team, dest, source, nelems)
    }

    /// [`Context::fcollect`](crate::Context::fcollect) over bytes (`shmem_fcollectmem`).
    ///
    /// # Errors
    /// As [`Context::fcollect`](crate::Context::fcollect).
    pub fn fcollectmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
    ) -> Result<()> {
        self.rt.fcollectmem(team, dest, source, nbytes)
    }

    /// Concatenates every member's `source` (this member gives `nelems` elements;
    /// the counts may differ), in team order, into `dest` on every member
    /// (`shmem_collect`). Collective. `dest` must hold the sum of the counts.
    ///
    /// # Errors
    /// As [`Context::broadcast`](crate::Context::broadcast) (without the root); a member whose `dest` does not
    /// hold the sum of the counts is an [`Error::InvalidArgument`](crate::Error::InvalidArgument) on every member.
    pub fn collect<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.collect(team, dest, source, nelems)
    }

    /// [`Context::collect`](crate::Context::collect) over bytes (`shmem_collectmem`).
    ///
    /// # Errors
    /// As [`Context::collect`](crate::Context::collect).
    pub fn collectmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
    ) -> Result<()> {
        self.rt.collectmem(team, dest, source, nbytes)
    }

    /// Reduces `nreduce` elements of every member's `source` with `op` into every
    /// member's `dest`; the typed forms ([`Context::sum_reduce`](crate::Context::sum_reduce) …) check the
    /// operation at compile time, this one at run time. Collective over `team`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) (on every member) for an invalid team, a bitwise
    /// operation on a floating type, objects that do not hold `nreduce` elements,
    /// lie outside the heap or overlap without being the same, or members passing
    /// different arguments; [`Error::Unsupported`](crate::Error::Unsupported) for 64-bit types on a device
    /// without 64-bit shader arithmetic; the rest as [`Context::broadcast`](crate::Context::broadcast)
    /// ([`Error::PeerFailed`](crate::Error::PeerFailed), [`Error::Broken`](crate::Error::Broken), [`Error::Device`](crate::Error::Device), Vulkan).
    pub fn reduce<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.rt.reduce(team, op, dest, source, nreduce)
    }

    /// Gathers `counts[i]` elements of member `i`'s `source` into `root`'s
    /// `dest` at element `displs[i]` (packed in team order when `displs` is
    /// `None`) (UCC gatherv). Collective over `team`; every member passes
    /// the same `root`, `counts` and `displs`; `dest` matters on the root
    /// only.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let n = ctx.n_pes() as usize;
    /// let counts: Vec<usize> = (1..=n).collect(); // member i gives i + 1 elements
    /// let src = ctx.malloc::<u32>(n)?;
    /// src.write(&vec![ctx.my_pe(); n])?;
    /// let dest = ctx.calloc::<u32>(n * (n + 1) / 2)?;
    /// ctx.gatherv(Team::WORLD, 0, &dest.as_slice(), &src.as_slice(), &counts, None)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) on every member when a member's source or
    /// the root's dest does not hold its part, the lists do not have one
    /// entry per member, or members pass different roots or lists;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) and [`Error::Timeout`](crate::Error::Timeout) as for the other
    /// collectives.
    pub fn gatherv<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        self.rt.gatherv(team, root, dest, source, counts, displs)
    }

    /// [`Context::gatherv`](crate::Context::gatherv) with `nelems` from every member, packed (UCC
    /// gather).
    ///
    /// # Errors
    /// As [`Context::gatherv`](crate::Context::gatherv).
    pub fn gather<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.gather(team, root, dest, source, nelems)
    }

    /// Scatters `counts[i]` elements of `root`'s `source` at element
    /// `displs[i]` (packed when `None`) into member `i`'s `dest` (UCC
    /// scatterv). Collective; `source` matters on the root only.
    ///
    /// # Errors
    /// As [`Context::gatherv`](crate::Context::gatherv).
    pub fn scatterv<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        self.rt.scatterv(team, root, dest, source, counts, displs)
    }

    /// [`Context::scatterv`](crate::Context::scatterv) with `nelems` to every member, packed (UCC
    /// scatter).
    ///
    /// # Errors
    /// As [`Context::gatherv`](crate::Context::gatherv).
    pub fn scatter<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.scatter(team, root, dest, source, nelems)
    }

    /// Every member's `counts[i]` elements of member `i`'s `source`, at
    /// element `displs[i]` (packed when `None`) of its `dest` (UCC
    /// allgatherv). Collective.
    ///
    /// # Errors
    /// As [`Context::gatherv`](crate::Context::gatherv).
    pub fn allgatherv<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        self.rt.allgatherv(team, dest, source, counts, displs)
    }

    /// Each member sends `send_counts[j]` elements of its `source`, at
    /// element `send_displs[j]`, to member `j`, which receives them at
    /// element `recv_displs[i]` of its `dest` (UCC alltoallv; MPI's
    /// `MPI_Alltoallv`). Each member passes its own lists; member `i`'s
    /// `send_counts[j]` must equal member `j`'s `recv_counts[i]`.
    /// Collective.
    ///
    /// # Errors
    /// As [`Context::gatherv`](crate::Context::gatherv); also send and receive counts that do not
    /// match (on every member).
    #[allow(clippy::too_many_arguments)]
    pub fn alltoallv<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        send_counts: &[usize],
        send_displs: &[usize],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        self.rt.alltoallv(
            team,
            dest,
            source,
            send_counts,
            send_displs,
            recv_counts,
            recv_displs,
        )
    }

    /// Reduces block `i` of every member's `source` (`counts[i]` elements,
    /// the blocks packed in team order) with `op` into member `i`'s `dest`
    /// (UCC reduce_scatterv). Collective; every member passes the same `op`
    /// and `counts`; in place allowed.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, ReduceOp, Team};
    /// let ctx = Context::init()?;
    /// let n = ctx.n_pes() as usize;
    /// let grads = ctx.malloc::<f32>(4 * n)?;
    /// grads.write(&vec![1.0; 4 * n])?;
    /// let mine = ctx.calloc::<f32>(4)?;
    /// ctx.reduce_scatter(Team::WORLD, ReduceOp::Sum, &mine.as_slice(), &grads.as_slice(), 4)?;
    /// assert_eq!(mine.to_vec()?, vec![n as f32; 4]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Context::gatherv`](crate::Context::gatherv); also a bitwise operation on a floating type.
    pub fn reduce_scatterv<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
    ) -> Result<()> {
        self.rt.reduce_scatterv(team, op, dest, source, counts)
    }

    /// [`Context::reduce_scatterv`](crate::Context::reduce_scatterv) with `count` elements per member (UCC
    /// reduce_scatter).
    ///
    /// # Errors
    /// As [`Context::reduce_scatterv`](crate::Context::reduce_scatterv).
    pub fn reduce_scatter<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        count: usize,
    ) -> Result<()> {
        self.rt.reduce_scatter(team, op, dest, source, count)
    }

    /// Reduces `nreduce` elements of every member's `source` with `op` into
    /// `root`'s `dest` only (UCC's rooted reduce, `MPI_Reduce`). Collective;
    /// `dest` matters on the root only.
    ///
    /// # Errors
    /// As [`Context::reduce_scatterv`](crate::Context::reduce_scatterv).
    pub fn reduce_to_root<T: Reduce>(
        &self,
        team: Team,
        root: u32,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.rt
            .reduce_to_root(team, root, op, dest, source, nreduce)
    }

    /// Reduces `nreduce` elements of every member's `source` into every
    /// member's `dest` (UCC allreduce): [`Context::reduce`](crate::Context::reduce) by its UCC name.
    ///
    /// # Errors
    /// As [`Context::reduce`](crate::Context::reduce).
    pub fn allreduce<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.rt.allreduce(team, op, dest, source, nreduce)
    }

    /// Inclusive prefix sum over the team (ishmem 1.5's `sum_inscan`, UCC's
    /// scan with `UCC_OP_SUM`): member `i`'s `dest` gets the element-wise sum
    /// of the `nelems` elements of members `0..=i`'s `source`. Collective;
    /// `dest` may be `source`. Integer sums wrap.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let x = ctx.malloc::<i64>(2)?;
    /// x.write(&[1, i64::from(ctx.my_pe())])?;
    /// let s = x.as_slice();
    /// ctx.sum_inscan(Team::WORLD, &s, &s, 2)?;
    /// let me = i64::from(ctx.my_pe());
    /// assert_eq!(x.to_vec()?, vec![me + 1, me * (me + 1) / 2]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) on every member when a member's source or
    /// dest does not hold `nelems` elements or members pass different
    /// counts or types; [`Error::PeerFailed`](crate::Error::PeerFailed) and [`Error::Timeout`](crate::Error::Timeout) as for
    /// the other collectives.
    pub fn sum_inscan<T: Reduce>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.sum_inscan(team, dest, source, nelems)
    }

    /// Exclusive prefix sum over the team (ishmem 1.5's `sum_exscan`):
    /// member `i`'s `dest` gets the sum over members `0..i`; the first
    /// member's gets zeros (the sum of nothing; `MPI_Exscan` leaves it
    /// undefined).
    ///
    /// # Errors
    /// As [`Context::sum_inscan`](crate::Context::sum_inscan).
    pub fn sum_exscan<T: Reduce>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.rt.sum_exscan(team, dest, source, nelems)
    }

    /// Returns on `root` once every member of `team` has called it; other
    /// members return once they have (UCC fan-in). This version is a team
    /// sync, so other members also wait for everyone.
    ///
    /// # Errors
    /// As [`Context::team_sync`](crate::Context::team_sync); also a root outside the team.
    pub fn fanin(&self, team: Team, root: u32) -> Result<()> {
        self.rt.fanin(team, root)
    }

    /// Members other than `root` return once `root` has called it (UCC
    /// fan-out). This version is a team sync.
    ///
    /// # Errors
    /// As [`Context::fanin`](crate::Context::fanin).
    pub fn fanout(&self, team: Team, root: u32) -> Result<()> {
        self.rt.fanout(team, root)
    }

    /// The launch of the host collectives' wide copies and pushes over `vecs`
    /// vec4s that read or write `windows` windows: the workgroups (of
    /// [`Context::wide_workgroup`](crate::Context::wide_workgroup)) and the kernels' `per` immediate
    /// (`WideArgs::per`, `WideCopyArgs::per`). For benchmarks that time the
    /// library's own kernels as its collectives launch them (the bench's
    /// roofline).
    pub fn wide_launch(&self, vecs: u64, windows: usize) -> (u32, u32) {
        self.rt.wide_launch(vecs, windows)
    }
}

macro_rules! typed_reductions {
    ($($(#[$m:meta])* $name:ident: $bound:ident => $op:ident;)*) => {
        impl Context {$(
            $(#[$m])*
            ///
            /// # Errors
            /// As [`Context::reduce`](crate::Context::reduce).
            pub fn $name<T: $bound>(
                &self,
                team: Team,
                dest: &SymSlice<T>,
                source: &SymSlice<T>,
                nreduce: usize,
            ) -> Result<()> {
                self.reduce(team, ReduceOp::$op, dest, source, nreduce)
            }
        )*}
    };
}

typed_reductions! {
    /// Bitwise and of every member's `source`, element by element, into every
    /// member's `dest` (`shmem_and_reduce`).
    and_reduce: BitwiseReduce => And;
    /// Bitwise or (`shmem_or_reduce`); see [`Context::and_reduce`](crate::Context::and_reduce).
    or_reduce: BitwiseReduce => Or;
    /// Bitwise exclusive or (`shmem_xor_reduce`); see [`Context::and_reduce`](crate::Context::and_reduce).
    xor_reduce: BitwiseReduce => Xor;
    /// Maximum (`shmem_max_reduce`); see [`Context::sum_reduce`](crate::Context::sum_reduce).
    max_reduce: Reduce => Max;
    /// Minimum (`shmem_min_reduce`); see [`Context::sum_reduce`](crate::Context::sum_reduce).
    min_reduce: Reduce => Min;
    /// Sum of every member's `source`, element by element, into every member's
    /// `dest` (`shmem_sum_reduce`, an allreduce). `dest` and `source` are the same
    /// object (in place) or do not overlap.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let grads = ctx.malloc::<f32>(1024)?;
    /// grads.write(&vec![1.0; 1024])?;
    /// let g = grads.as_slice();
    /// ctx.sum_reduce(Team::WORLD, &g, &g, 1024)?; // in place
    /// assert_eq!(grads.to_vec()?[0], ctx.n_pes() as f32);
    /// # Ok(()) }
    /// ```
    sum_reduce: Reduce => Sum;
    /// Product (`shmem_prod_reduce`); see [`Context::sum_reduce`](crate::Context::sum_reduce).
    prod_reduce: Reduce => Prod;
}
