//! [`Collective`]: one queued collective, described once.

use std::marker::PhantomData;

use bytemuck::Pod;
use vkshmem_device::collectives::{self, Kind};
use vkshmem_device::queue::QueueCall;

use crate::collective::reduce::{BitwiseReduce, Reduce, ReduceOp};
use crate::collective::Span;
use crate::symbuf::SymSlice;

/// One collective on a team, described once and run by [`Context::record`](crate::Context::record),
/// [`Context::post`](crate::Context::post) or [`Context::persistent`](crate::Context::persistent). It borrows its buffers (`'a`),
/// so they outlive every run of it.
///
/// ```no_run
/// # fn main() -> vkshmem_host::Result<()> {
/// use vkshmem_host::{queue::Collective, Context, Team};
/// let ctx = Context::init()?;
/// let grads = ctx.malloc::<f32>(1 << 20)?;
/// let sum = ctx.malloc::<f32>(1 << 20)?;
/// grads.write(&vec![1.0; 1 << 20])?;
/// // A nonblocking allreduce: the host is free until `wait`.
/// let req = ctx.post(Team::WORLD, Collective::sum_reduce(&sum.as_slice(), &grads.as_slice(), 1 << 20))?;
/// // ... other host work ...
/// req.wait()?;
/// assert_eq!(sum.to_vec()?[0], ctx.n_pes() as f32);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Collective<'a> {
    pub(super) call: QueueCall,
    pub(super) dest: Option<Span>,
    pub(super) source: Option<Span>,
    /// Elements this member passes (per block for alltoall(s)).
    pub(super) nelems: u64,
    pub(super) root: u32,
    pub(super) dst: u64,
    pub(super) sst: u64,
    pub(super) op: Option<ReduceOp>,
    _buffers: PhantomData<&'a ()>,
}

impl<'a> Collective<'a> {
    fn new(call: QueueCall, dest: Option<Span>, source: Option<Span>, nelems: usize) -> Self {
        Collective {
            call,
            dest,
            source,
            nelems: nelems as u64,
            root: 0,
            dst: 1,
            sst: 1,
            op: None,
            _buffers: PhantomData,
        }
    }

    /// A data-moving call from member `root`, or to it.
    fn rooted<T: Pod>(
        call: QueueCall,
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
        root: u32,
    ) -> Self {
        let mut c = Self::new(call, Some(Span::of(dest)), Some(Span::of(source)), nelems);
        c.root = root;
        c
    }

    /// A call that combines with `op`, its kernel chosen by `T`'s kind.
    fn reducing<T: Reduce>(
        call: impl FnOnce(Kind) -> QueueCall,
        op: ReduceOp,
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
    ) -> Self {
        let kind = collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        let mut c = Self::new(
            call(kind),
            Some(Span::of(dest)),
            Some(Span::of(source)),
            nelems,
        );
        c.op = Some(op);
        c
    }

    /// A barrier over the team (`shmem_team_barrier`): every member's earlier
    /// queued work on the symmetric heap is complete and visible on return.
    pub fn barrier() -> Self {
        Self::new(QueueCall::Barrier, None, None, 0)
    }

    /// A sync over the team (`shmem_team_sync`).
    pub fn sync() -> Self {
        Self::new(QueueCall::Sync, None, None, 0)
    }

    /// `nelems` elements of member `root`'s `source` into every member's
    /// `dest` (`shmem_broadcast`; the root's dest too).
    pub fn broadcast<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
        root: u32,
    ) -> Self {
        Self::rooted(QueueCall::Broadcast, dest, source, nelems, root)
    }

    /// Every member's `nelems` (which may differ) into every member's
    /// `dest`, in team order (`shmem_collect`). `dest` must hold the sum of
    /// the counts (the device checks it: [`Error::Device`](crate::Error::Device) with
    /// `ERR_BAD_ARGUMENT`).
    pub fn collect<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
    ) -> Self {
        Self::new(
            QueueCall::Collect,
            Some(Span::of(dest)),
            Some(Span::of(source)),
            nelems,
        )
    }

    /// Every member's `nelems` into every member's `dest`, in team order
    /// (`shmem_fcollect`).
    pub fn fcollect<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
    ) -> Self {
        Self::new(
            QueueCall::Fcollect,
            Some(Span::of(dest)),
            Some(Span::of(source)),
            nelems,
        )
    }

    /// Block `j` of this member's `source` into block `me` of member `j`'s
    /// `dest`, blocks of `nelems` (`shmem_alltoall`).
    pub fn alltoall<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
    ) -> Self {
        Self::new(
            QueueCall::Alltoall,
            Some(Span::of(dest)),
            Some(Span::of(source)),
            nelems,
        )
    }

    /// [`Collective::alltoall`] with strides (in elements) between the
    /// elements of `dest` and of `source` (`shmem_alltoalls`).
    pub fn alltoalls<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Self {
        let mut c = Self::new(
            QueueCall::Alltoalls,
            Some(Span::of(dest)),
            Some(Span::of(source)),
            nelems,
        );
        c.dst = dst as u64;
        c.sst = sst as u64;
        c
    }

    /// `op` over every member's `source`, element by element, into every
    /// member's `dest` (an allreduce; `dest` is `source` or does not overlap
    /// it). The bitwise operations need a [`BitwiseReduce`] type: checked when
    /// the collective is recorded.
    pub fn reduce<T: Reduce>(
        op: ReduceOp,
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nreduce: usize,
    ) -> Self {
        Self::reducing(|k| QueueCall::Reduce(k, op), op, dest, source, nreduce)
    }

    /// `shmem_sum_reduce`: see [`Collective::reduce`].
    pub fn sum_reduce<T: Reduce>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        n: usize,
    ) -> Self {
        Self::reduce(ReduceOp::Sum, dest, source, n)
    }

    /// `shmem_max_reduce`: see [`Collective::reduce`].
    pub fn max_reduce<T: Reduce>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        n: usize,
    ) -> Self {
        Self::reduce(ReduceOp::Max, dest, source, n)
    }

    /// `shmem_and_reduce`: see [`Collective::reduce`].
    pub fn and_reduce<T: BitwiseReduce>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        n: usize,
    ) -> Self {
        Self::reduce(ReduceOp::And, dest, source, n)
    }

    /// UCC gather: every member's `nelems` elements into member `root`'s
    /// `dest`, in team order (`dest` holds `nelems * size`; the other
    /// members' dests are not touched). See [`Context::gather`](crate::Context::gather).
    pub fn gather<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
        root: u32,
    ) -> Self {
        Self::rooted(QueueCall::Gather, dest, source, nelems, root)
    }

    /// UCC scatter: block `j` (of `nelems`) of member `root`'s `source`
    /// into member `j`'s `dest`. See [`Context::scatter`](crate::Context::scatter).
    pub fn scatter<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
        root: u32,
    ) -> Self {
        Self::rooted(QueueCall::Scatter, dest, source, nelems, root)
    }

    /// UCC reduce_scatter: member `j`'s `dest` gets block `j` (of
    /// `nreduce`) of every member's `source` combined with `op`; `dest`
    /// does not overlap `source`. See [`Context::reduce_scatter`](crate::Context::reduce_scatter).
    pub fn reduce_scatter<T: Reduce>(
        op: ReduceOp,
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nreduce: usize,
    ) -> Self {
        Self::reducing(
            |k| QueueCall::ReduceScatter(k, op),
            op,
            dest,
            source,
            nreduce,
        )
    }

    /// Inclusive prefix sum over the team (`sum_inscan`; in place or not).
    /// Not on a team that spans devices ([`Error::Unreachable`](crate::Error::Unreachable) when
    /// recorded). See [`Context::sum_inscan`](crate::Context::sum_inscan).
    pub fn sum_inscan<T: Reduce>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
    ) -> Self {
        Self::scan(dest, source, nelems, true)
    }

    /// Exclusive prefix sum over the team (`sum_exscan`; the first
    /// member's dest gets zeros). As [`Collective::sum_inscan`].
    pub fn sum_exscan<T: Reduce>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
    ) -> Self {
        Self::scan(dest, source, nelems, false)
    }

    fn scan<T: Reduce>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
        inclusive: bool,
    ) -> Self {
        let call = |k| QueueCall::Scan(k, inclusive);
        Self::reducing(call, ReduceOp::Sum, dest, source, nelems)
    }

    /// Its name in errors.
    pub(super) fn name(&self) -> String {
        match self.call {
            QueueCall::Reduce(k, op) => format!("queued {}_reduce over {}", op.name(), k.name),
            QueueCall::ReduceScatter(k, op) => {
                format!("queued {}_reduce_scatter over {}", op.name(), k.name)
            }
            QueueCall::Scan(k, true) => format!("queued sum_inscan over {}", k.name),
            QueueCall::Scan(k, false) => format!("queued sum_exscan over {}", k.name),
            other => format!("queued {other:?}").to_lowercase(),
        }
    }
}
