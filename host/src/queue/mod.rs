//! Queue-ordered, nonblocking and persistent collectives: collectives that run
//! in the device's queue, ordered with the user's own GPU work, with no host
//! wait (NCCL's stream semantics, ishmem's `*_on_queue`, NVSHMEM's
//! `*_on_stream`, UCC's post/test/wait).
//!
//! Three ways to run a [`Collective`] on a team:
//!
//! - [`Context::record`] (unsafe: it takes a raw command buffer) records it
//!   into a command buffer the user owns; the user submits that to the
//!   context's queue with their own fence or semaphores. The returned
//!   [`Queued`] reports completion and errors ([`Queued::test`],
//!   [`Queued::wait`]).
//! - [`Context::post`] records it into a command buffer of the context's own
//!   and submits it at once: a nonblocking collective ([`Request`]); several
//!   may be in flight.
//! - [`Context::persistent`] records it once into a command buffer of its own
//!   ([`Persistent`]), which [`Persistent::start`] submits again and again
//!   with no recording and no checks: the lowest per-call cost.
//!
//! The calls ([`Collective`]): barrier, sync, broadcast, collect, fcollect,
//! alltoall(s), the reductions, and UCC's gather, scatter, reduce_scatter
//! and the sum scans (fixed counts: their device forms; the scans not on a
//! team that spans devices). UCC's v-forms are host calls only.
//!
//! # How it works
//!
//! A queued collective cannot meet its peers on the host (nothing of ours
//! runs between the user's commands), so it synchronizes on the device: its
//! kernel (`vkshmem_device::queue`) runs the device-initiated form of the
//! collective, a team sync on the device, the move, a team sync, in one
//! invocation for small calls or one workgroup for larger ones (a small
//! reduction takes one sync only: its one-sync form, see
//! `vkshmem_device::layout::LL_BYTES`). The commands recorded for one
//! collective are:
//!
//! 1. a memory barrier: every compute and transfer write submitted before
//!    (the user's kernels that produced the source) is visible;
//! 2. the dispatch. Consecutive small calls of one kernel in one recording
//!    ([`Context::post_batch`]) share one dispatch of at most `BATCH_CALLS`
//!    (`vkshmem_device::layout`; 16 on llvmpipe, whose loop budget per
//!    invocation the calls share):
//!    their arguments are written into the PE's batch area in its control
//!    region by a `vkCmdUpdateBuffer` recorded just before it (so a batch
//!    carries its arguments in the command buffer, and persistent and
//!    recorded batches need no memory of their own), and one invocation
//!    runs the calls in order. This is what NCCL's group calls do: a
//!    dispatch costs more than a small collective;
//! 3. a barrier, then a copy of the PE's device error words into the
//!    collective's completion slot (`completion.rs`), which are then cleared;
//! 4. a barrier, then the slot's `done` word is set; a last barrier makes
//!    the results visible to the user's later compute and transfer work and to
//!    the host.
//!
//! So the host learns that a queued collective finished, and how, by reading
//! host memory: [`Queued::test`] never blocks and never submits.
//!
//! # Forward-progress rules
//!
//! 1. **Every member submits.** A queued collective on a team waits on the
//!    device for every member's matching collective. Each member must record
//!    (or post) the same collectives on the team in the same order, with the
//!    same arguments (nothing compares them: a mismatch is undefined, as for
//!    the device-initiated forms), and submit them. A member may submit late
//!    (its peers' queues wait for it, and their hosts stay free), but must
//!    not wait on the host for a peer's queued collective before submitting
//!    its own.
//! 2. **One queue, in order.** Queued collectives of a context run on its one
//!    queue, in the order they were recorded or posted; submit command
//!    buffers in the order you recorded them. The queue runs nothing else
//!    while a collective's kernel waits for peers, so submit work that a peer
//!    needs before its collective (on your queue or any other of the device)
//!    first.
//! 3. **Host calls are collective calls too.** A blocking host collective, a
//!    [`Context::launch`] of a kernel that waits on peers, or a
//!    `malloc`/`free` on a member is ordered with its queued collectives by
//!    program order on the host: every member must make them in the same
//!    order relative to submitting its queued ones. A blocking call made
//!    while queued collectives of this PE are outstanding waits behind them
//!    in the queue (kernel path) or runs beside them (host path).
//! 4. **Device-initiated syncs share the team's epoch.** A user kernel that
//!    syncs on a team and a queued collective on the same team are ordered by
//!    the queue; they must be in the same order on every member.
//! 5. **Keep the buffers.** The symmetric buffers of a queued collective stay
//!    allocated until it completes: its handle borrows them.
//!
//! While queued collectives are outstanding, a thread of the context
//! (`progress.rs`) watches for a failed peer (then every device wait of this
//! PE gives up) and, on llvmpipe, keeps the device's waits alive for seconds
//! (`crate::throttle`).
//!
//! # Errors
//!
//! Checks on this PE's own arguments happen when the collective is recorded
//! or posted ([`Error::InvalidArgument`]). What happens on the device is
//! reported by `test`/`wait` with the blocking launches' errors:
//! [`Error::Device`] (a device error, for example a collect whose counts
//! overflow a member's dest), [`Error::PeerFailed`], [`Error::Timeout`]
//! (`VKSHMEM_WAIT_TIMEOUT`, counted from the first `test`/`wait` of a
//! recorded collective, from the post of a nonblocking one). After a failed
//! peer, a timeout or a wait the driver cut short, the PEs are out of step
//! and the context is broken ([`Error::Broken`]); a device argument check
//! (`ERR_BAD_ARGUMENT`, `ERR_BAD_PE`, `ERR_BAD_ADDRESS`) fails between the
//! collective's syncs, which every member still completes, so the job stays
//! usable.

pub mod completion;
mod progress;

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ash::vk;
use bytemuck::Pod;
use vkshmem_device::collectives::{self, HostArgs, HostCall, Kind};
use vkshmem_device::layout;
use vkshmem_device::queue::{QueueArgs, QueueCall, QueueForm};

use crate::collective::reduce::{BitwiseReduce, Reduce, ReduceOp};
use crate::collective::Span;
use crate::context::{lock, Context};
use crate::error::{Error, Result};
use crate::kernels::DeviceKernel;
use crate::symbuf::SymSlice;
use crate::team::Team;
pub use crate::vk::record::SemaphorePoint;
use crate::vk::record::{OwnedCommands, Recorder};
use completion::{Completions, SlotWords};

/// Calls that move at most this many bytes on a member run in one invocation
/// (the device's per-thread form, sync, move, sync in one dispatch). Larger
/// ones are three dispatches: a device sync, the host collective's pull
/// kernel over the whole device, a device sync; or, for a collect (whose
/// counts only the device learns) and teams that span devices, one
/// workgroup (the work_group form).
pub const THREAD_FORM_MAX_BYTES: u64 = 1024;

/// How long a wait for a queued collective whose peers failed, or whose
/// commands may never have been submitted, keeps looking before it reports
/// the failure without the device's word on it.
const NEVER_RAN_GRACE: Duration = Duration::from_millis(1500);

/// One collective on a team, described once and run by [`Context::record`],
/// [`Context::post`] or [`Context::persistent`]. It borrows its buffers (`'a`),
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
    call: QueueCall,
    dest: Option<Span>,
    source: Option<Span>,
    /// Elements this member passes (per block for alltoall(s)).
    nelems: u64,
    root: u32,
    dst: u64,
    sst: u64,
    op: Option<ReduceOp>,
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
    /// the counts (the device checks it: [`Error::Device`] with
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
    /// members' dests are not touched). See [`Context::gather`].
    pub fn gather<T: Pod>(
        dest: &SymSlice<'a, T>,
        source: &SymSlice<'a, T>,
        nelems: usize,
        root: u32,
    ) -> Self {
        Self::rooted(QueueCall::Gather, dest, source, nelems, root)
    }

    /// UCC scatter: block `j` (of `nelems`) of member `root`'s `source`
    /// into member `j`'s `dest`. See [`Context::scatter`].
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
    /// does not overlap `source`. See [`Context::reduce_scatter`].
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
    /// Not on a team that spans devices ([`Error::Unreachable`] when
    /// recorded). See [`Context::sum_inscan`].
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
    fn name(&self) -> String {
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

/// One dispatch of a queued collective.
struct Step {
    kernel: Arc<DeviceKernel>,
    sets: Vec<vk::DescriptorSet>,
    push: Vec<u8>,
    groups: u32,
    /// The call's arguments, where its kernel runs batches
    /// ([`QueueCall::batches`]): consecutive steps of one such kernel are
    /// recorded as one dispatch.
    batch: Option<QueueArgs>,
}

/// A queued collective ready to record: its dispatches, in order.
struct Prepared {
    steps: Vec<Step>,
    name: String,
}

/// What the context keeps for queued collectives (made at the first one).
pub(crate) struct QueueState {
    completions: Completions,
    /// Command buffers of completed posts, for the next.
    spare: Mutex<Vec<OwnedCommands>>,
    /// Slots of recorded collectives whose handle was dropped before they
    /// were seen complete: given back once they are.
    abandoned: Mutex<Vec<u32>>,
    progress: progress::Progress,
    gpu: Arc<crate::vk::Gpu>,
}

impl QueueState {
    /// Queued collectives recorded or posted and not yet seen complete.
    pub(crate) fn outstanding(&self) -> usize {
        self.progress
            .shared
            .outstanding
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::fmt::Debug for QueueState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueState")
            .field("progress", &self.progress)
            .finish()
    }
}

impl QueueState {
    /// Gives back the slots of abandoned collectives that completed.
    fn reap_abandoned(&self) {
        let mut ab = lock(&self.abandoned);
        ab.retain(|&slot| {
            if self.completions.read(slot).is_some() {
                self.completions.give(slot);
                self.progress.shared.retire();
                false
            } else {
                true
            }
        });
    }
}

impl Drop for QueueState {
    fn drop(&mut self) {
        self.reap_abandoned();
        if self.completions.taken() > 0 {
            tracing::error!(
                "the context closes with {} queued collectives not seen complete: waiting for the queue to go idle",
                self.completions.taken()
            );
            let q = self.gpu.queue.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the queue lock gives vkQueueWaitIdle's external
            // synchronization; the progress thread still runs (it drops after
            // this), so waits for failed peers end.
            let _ = unsafe { self.gpu.device.queue_wait_idle(*q) };
        }
    }
}

/// Where a collective's completion is reported, and how a wait for it goes.
struct Pending<'a> {
    ctx: &'a Context,
    slot: u32,
    name: String,
    /// When the host started waiting (the timeout counts from there).
    since: Option<Instant>,
    /// Seen complete (the slot is given back, or kept by a persistent one).
    finished: bool,
}

impl<'a> Pending<'a> {
    fn state(&self) -> &'a QueueState {
        self.ctx
            .inner
            .queue
            .get()
            .expect("made before any pending collective")
    }

    /// The slot's words once done; else starts the timeout clock.
    fn poll(&mut self) -> Option<SlotWords> {
        let w = self.state().completions.read(self.slot);
        if w.is_none() && self.since.is_none() {
            self.since = Some(Instant::now());
        }
        w
    }

    /// Whether it completed: `Ok(true)` once, with its errors, then `Ok(true)`.
    fn test(&mut self, fence_done: Option<bool>) -> Result<bool> {
        if self.finished {
            return Ok(true);
        }
        match self.poll() {
            Some(w) => {
                self.finished = true;
                self.ctx
                    .queued_result(&self.name, &w, fence_done.is_some())
                    .map(|()| true)
            }
            None => {
                self.check_stuck(false)?;
                Ok(false)
            }
        }
    }

    /// Gives up on a collective that is not done when the job aborted or its
    /// timeout expired: raises this PE's device abort word (its device waits
    /// end, so its commands complete) and, when they never complete (never
    /// submitted), reports the failure after a grace period. `final_`: no
    /// more polls follow (a drop).
    fn check_stuck(&mut self, final_: bool) -> Result<()> {
        let since = self.since.unwrap_or_else(Instant::now);
        let ctx = self.ctx;
        let timeout = ctx.inner.wait_timeout;
        let timed_out = timeout.is_some_and(|t| since.elapsed() >= t);
        let aborted = ctx
            .inner
            .plane
            .as_ref()
            .is_some_and(|p| p.abort_word() != 0);
        if !(timed_out || aborted) {
            return Ok(());
        }
        ctx.raise_device_abort();
        let grace = timeout.unwrap_or_default() + NEVER_RAN_GRACE;
        if final_ || since.elapsed() >= grace {
            let e = if aborted {
                ctx.peer_failure().unwrap_or_else(|| Error::PeerFailed {
                    pe: ctx.my_pe(),
                    how: "the job aborted".into(),
                })
            } else {
                Error::Timeout {
                    what: self.name.clone(),
                    pe: ctx.my_pe(),
                    seconds: timeout.unwrap_or_default().as_secs_f64(),
                    missing: String::new(),
                }
            };
            ctx.set_broken(&e);
            return Err(e);
        }
        Ok(())
    }
}

impl Context {
    /// The queue state, made at the first queued collective.
    fn queue_state(&self) -> Result<&QueueState> {
        if let Some(q) = self.inner.queue.get() {
            return Ok(q);
        }
        let _g = lock(&self.inner.queue_init);
        if let Some(q) = self.inner.queue.get() {
            return Ok(q);
        }
        let gpu = self.inner.gpu.clone();
        let progress = progress::Progress::start(progress::Watched {
            gpu: gpu.clone(),
            own: self.inner.heap.block(self.my_pe())?.clone(),
            plane: self.inner.plane.clone(),
            peers: self.n_pes() > 1,
            proxy: self.inner.proxy.get().map(|p| p.activity()),
        })
        .map_err(|e| Error::Io {
            what: "starting the queued collectives' progress thread".into(),
            source: e,
        })?;
        let q = QueueState {
            completions: Completions::new(&gpu)?,
            spare: Mutex::new(Vec::new()),
            abandoned: Mutex::new(Vec::new()),
            progress,
            gpu,
        };
        let _ = self.inner.queue.set(q);
        Ok(self.inner.queue.get().expect("just set"))
    }

    /// Checks `c` on this PE and picks its kernel.
    fn prepare(&self, team: Team, c: &Collective) -> Result<Prepared> {
        if let Some(why) = lock(&self.inner.broken).clone() {
            return Err(Error::Broken(why));
        }
        let name = c.name();
        let m = self.members(team).map_err(|e| e.during(&name))?;
        let size = u64::from(m.shape.size);
        if size > 1 && !self.device_waits_across_processes() {
            return Err(self.no_cross_process_waits(&name));
        }
        let es = c.dest.map_or(1, |d| d.es);
        let n = c.nelems;
        let span_check = |what: &str, s: &Option<Span>, count: u64| match s {
            Some(s) => self.check_span(&format!("{name} {what}"), s, count),
            None => Ok(()),
        };
        if let (Some(d), Some(s)) = (&c.dest, &c.source) {
            if d.es != s.es || d.ty != s.ty {
                return Err(Error::InvalidArgument(format!(
                    "{name}: dest holds {}, source {}",
                    d.ty, s.ty
                )));
            }
        }
        // (dest elements, source elements, bytes this member moves)
        let (dn, sn, moved) = match c.call {
            QueueCall::Barrier | QueueCall::Sync => (0, 0, 0),
            QueueCall::Broadcast | QueueCall::Gather | QueueCall::Scatter
                if c.root >= m.shape.size =>
            {
                return Err(Error::InvalidArgument(format!(
                    "{name}: root {} is not a member of a team of {size}",
                    c.root
                )));
            }
            QueueCall::Gather => (n * size, n, n * es * size),
            QueueCall::Scatter => (n, n * size, n * es * size),
            QueueCall::ReduceScatter(kind, op) => {
                self.check_kind(&name, &kind, op)?;
                (n, n * size, n * es * size)
            }
            QueueCall::Scan(kind, _) => {
                self.check_kind(&name, &kind, ReduceOp::Sum)?;
                if self.spans_devices(&m) {
                    return Err(Error::Unreachable {
                        pe: m.shape.start,
                        me: self.my_pe(),
                        why: format!(
                            "{name}: the device scans have no form across devices (the host's sum_inscan/sum_exscan serve every transport)"
                        ),
                    });
                }
                (n, n, n * es)
            }
            QueueCall::Broadcast => {
                if c.root >= m.shape.size {
                    return Err(Error::InvalidArgument(format!(
                        "{name}: root {} is not a member of a team of {size}",
                        c.root
                    )));
                }
                (n, n, n * es)
            }
            QueueCall::Collect => (n, n, n * es * size),
            QueueCall::Fcollect => (n * size, n, n * es * size),
            QueueCall::Alltoall => (n * size, n * size, n * es * size),
            QueueCall::Alltoalls => {
                if c.dst == 0 || c.sst == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{name}: strides must be at least 1 (dst {}, sst {})",
                        c.dst, c.sst
                    )));
                }
                let span = |st: u64| if n == 0 { 0 } else { (size * n - 1) * st + 1 };
                (span(c.dst), span(c.sst), n * es * size)
            }
            QueueCall::Reduce(kind, op) => {
                self.check_kind(&name, &kind, op)?;
                (n, n, n * es)
            }
        };
        span_check("dest", &c.dest, dn)?;
        span_check("source", &c.source, sn)?;
        if let (QueueCall::ReduceScatter(..), Some(d), Some(s)) = (c.call, &c.dest, &c.source) {
            let (db, sb) = (n * es, n * es * size);
            if d.offset < s.offset + sb && s.offset < d.offset + db {
                return Err(Error::InvalidArgument(format!(
                    "{name}: dest (offset {}) overlaps source (offset {})",
                    d.offset, s.offset
                )));
            }
        }
        if let (QueueCall::Reduce(..) | QueueCall::Scan(..), Some(d), Some(s)) =
            (c.call, &c.dest, &c.source)
        {
            let bytes = n * es;
            if d.offset != s.offset && d.offset < s.offset + bytes && s.offset < d.offset + bytes {
                return Err(Error::InvalidArgument(format!(
                    "{name}: dest (offset {}) and source (offset {}) overlap without being the same object",
                    d.offset, s.offset
                )));
            }
        }
        let u32_of = |v: u64, what: &str| {
            u32::try_from(v).map_err(|_| {
                Error::InvalidArgument(format!(
                    "{name}: {what} {v} does not fit the device's 32 bits"
                ))
            })
        };
        let mem_bytes = u32_of(n * es, "byte count")?;
        let args = QueueArgs {
            team: team.device_handle(),
            dest: c.dest.map_or(0, |d| d.offset as u32),
            source: c.source.map_or(0, |s| s.offset as u32),
            n: match c.call {
                QueueCall::Reduce(..)
                | QueueCall::ReduceScatter(..)
                | QueueCall::Scan(..)
                | QueueCall::Alltoalls => u32_of(n, "element count")?,
                _ => mem_bytes,
            },
            x: match c.call {
                QueueCall::Broadcast | QueueCall::Gather | QueueCall::Scatter => c.root,
                QueueCall::Alltoalls => u32_of(c.dst, "dst")?,
                // collect: what dest holds, in bytes (the device checks the total).
                QueueCall::Collect => u32_of(c.dest.map_or(0, |d| d.len * d.es), "dest size")?,
                _ => 0,
            },
            y: if c.call == QueueCall::Alltoalls {
                u32_of(c.sst, "sst")?
            } else {
                0
            },
            z: if c.call == QueueCall::Alltoalls {
                es as u32
            } else {
                0
            },
            batch: 0,
        };
        let windows = self.library_windows()?;
        let queue_step = |call: QueueCall, form: QueueForm, args: &QueueArgs| -> Result<Step> {
            let kernel = self
                .library_kernel(&call.name(form), || call.source(form))?
                .ok_or_else(|| Error::InvalidArgument(format!("{name}: no such reduction")))?;
            Ok(Step {
                sets: kernel.kernel.fixed_sets(&windows)?,
                kernel,
                push: bytemuck::bytes_of(args).to_vec(),
                groups: 1,
                batch: call.batches(form).then_some(*args),
            })
        };
        let pull = if moved <= THREAD_FORM_MAX_BYTES || self.spans_devices(&m) {
            None
        } else {
            pull_call(c, &m, &args)
        };
        let steps = match pull {
            None if moved <= THREAD_FORM_MAX_BYTES => {
                vec![queue_step(c.call, QueueForm::Thread, &args)?]
            }
            // A collect (whose counts only the device learns) or a team that
            // spans devices (the proxy carries the device forms): one workgroup.
            None => vec![queue_step(c.call, QueueForm::WorkGroup, &args)?],
            // Larger calls: a device sync, the host collective's pull kernel
            // over the whole device, a device sync.
            Some((call, hargs, items)) => {
                let sync = queue_step(QueueCall::Sync, QueueForm::Thread, &args)?;
                let (kernel, hargs, groups) = self.host_kernel_call(call, hargs, items)?;
                let sync2 = queue_step(QueueCall::Sync, QueueForm::Thread, &args)?;
                vec![
                    sync,
                    Step {
                        sets: kernel.kernel.fixed_sets(&windows)?,
                        kernel,
                        push: bytemuck::bytes_of(&hargs).to_vec(),
                        groups,
                        batch: None,
                    },
                    sync2,
                ]
            }
        };
        Ok(Prepared { steps, name })
    }

    /// Records `ps`, in order, with completion slot `slot` (see the module
    /// docs): the slot gets the device error words after the last.
    fn record_prepared(&self, r: &Recorder, ps: &[Prepared], slot: u32) -> Result<()> {
        let q = self.queue_state()?;
        let own = self.inner.heap.block(self.my_pe())?.buffer;
        let ring = q.completions.buffer();
        let at = Completions::offset(slot);
        let steps: Vec<&Step> = ps.iter().flat_map(|p| &p.steps).collect();
        let mut rest = &steps[..];
        while let Some(step) = rest.first() {
            // Consecutive calls of one batching kernel: one dispatch, their
            // arguments written into the batch area just before it (the
            // barriers order that write after the previous batch's reads and
            // before this one's).
            // On llvmpipe a batch shares one invocation's loop budget; waits
            // on peers reached through the proxy (other devices, other
            // nodes) take milliseconds each there, so those calls go one to
            // a dispatch, as the kernel forms do.
            let cap = match (self.inner.gpu.info.is_llvmpipe(), self.inner.proxy.get()) {
                (true, Some(_)) => 1,
                (true, None) => layout::CAPPED_BATCH_CALLS,
                (false, _) => layout::BATCH_CALLS,
            };
            let run = match step.batch {
                Some(_) => rest
                    .iter()
                    .take(cap as usize)
                    .take_while(|s| s.batch.is_some() && Arc::ptr_eq(&s.kernel, &step.kernel))
                    .count(),
                None => 1,
            };
            r.barrier(false);
            if run > 1 {
                let args: Vec<QueueArgs> = rest[..run].iter().filter_map(|s| s.batch).collect();
                r.update(
                    own,
                    u64::from(layout::batch_word(self.n_pes())) * 4,
                    bytemuck::cast_slice(&args),
                );
                r.barrier(false);
                let push = QueueArgs {
                    batch: run as u32,
                    ..Default::default()
                };
                r.dispatch(
                    &step.kernel.kernel,
                    &step.sets,
                    bytemuck::bytes_of(&push),
                    [1, 1, 1],
                );
            } else {
                r.dispatch(
                    &step.kernel.kernel,
                    &step.sets,
                    &step.push,
                    [step.groups, 1, 1],
                );
            }
            rest = &rest[run..];
        }
        r.barrier(false);
        r.copy(
            own,
            completion::HEADER_ERRORS_AT,
            ring,
            at + completion::ERRORS_AT,
            completion::ERRORS_BYTES,
        );
        r.barrier(false);
        // Clear error, error_pe and error_addr (the abort word stays: the host
        // owns it), then say done.
        r.fill(own, completion::HEADER_ERRORS_AT, 12, 0);
        r.fill(ring, at, 4, 1);
        r.barrier(true);
        Ok(())
    }

    /// Records `coll` over `team` into the user's command buffer `cmd`,
    /// ordered with the commands recorded before and after it, and returns its
    /// handle. Nothing waits: the collective runs when the command buffer is
    /// submitted, and completes when its peers' do (see the module's
    /// forward-progress rules).
    ///
    /// ```no_run
    /// # fn demo(ctx: &vkshmem_host::Context, cmd: ash::vk::CommandBuffer) -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{queue::Collective, Team};
    /// let x = ctx.malloc::<f32>(256)?;
    /// // ... record a kernel that writes x into `cmd` ...
    /// // SAFETY: cmd is recording, from a pool of ctx.queue_family(), and goes to ctx's queue.
    /// let q = unsafe { ctx.record(cmd, Team::WORLD, Collective::sum_reduce(&x.as_slice(), &x.as_slice(), 256))? };
    /// // ... record a kernel that reads x, end cmd, submit it with a fence ...
    /// q.wait()?; // or wait for the fence, then q.test()
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// `cmd` is a primary command buffer of this context's device, allocated
    /// from a pool of [`Context::queue_family`], in the recording state,
    /// outside a render pass, recorded by no other thread now; it is
    /// submitted once, to [`Context::queue`], after the command buffers
    /// holding queued collectives recorded earlier (rule 2).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid team, objects that do not
    /// hold the elements or lie outside the heap, a bad root or stride, a
    /// bitwise reduction of floats, or too many outstanding queued
    /// collectives; [`Error::Unsupported`] for 64-bit types the device cannot
    /// do; [`Error::Broken`]; Vulkan errors.
    pub unsafe fn record<'a>(
        &'a self,
        cmd: vk::CommandBuffer,
        team: Team,
        coll: Collective<'a>,
    ) -> Result<Queued<'a>> {
        let p = self.prepare(team, &coll)?;
        let q = self.queue_state()?;
        let slot = q.completions.take()?;
        // SAFETY: the caller's guarantee on `cmd`.
        let r = unsafe { Recorder::new(&self.inner.gpu, cmd) };
        if let Err(e) = self.record_prepared(&r, std::slice::from_ref(&p), slot) {
            q.completions.give(slot);
            return Err(e);
        }
        q.progress.shared.add();
        Ok(Queued {
            p: Pending {
                ctx: self,
                slot,
                name: p.name,
                since: None,
                finished: false,
            },
        })
    }

    /// Starts `coll` over `team` on this context's queue and returns at once
    /// (a nonblocking collective, `shmem_*_nbi`-like, UCC's post): the
    /// [`Request`] tests and waits for it. Several may be in flight; they run
    /// in the order posted.
    ///
    /// # Errors
    /// As [`Context::record`].
    pub fn post<'a>(&'a self, team: Team, coll: Collective<'a>) -> Result<Request<'a>> {
        // SAFETY: no semaphores.
        unsafe { self.post_with(team, coll, &[], &[]) }
    }

    /// [`Context::post`] after `waits` and signaling `signals` when done:
    /// chains the collective with the user's GPU work without the host (the
    /// semaphore of a user's submission that produced the source, one that
    /// the consumer of dest waits for).
    ///
    /// # Safety
    /// The semaphores are of this context's device; timeline values only
    /// where the device has timeline semaphores ([`crate::DeviceCaps`]), and
    /// every wait has a signal submitted before it or with it (no wait before
    /// signal across queues that could deadlock).
    ///
    /// # Errors
    /// As [`Context::record`].
    pub unsafe fn post_with<'a>(
        &'a self,
        team: Team,
        coll: Collective<'a>,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<Request<'a>> {
        // SAFETY: the caller's guarantee on the semaphores.
        unsafe { self.post_prepared(vec![self.prepare(team, &coll)?], waits, signals) }
    }

    /// Starts `colls` (each on its team), in order, in one submission: a
    /// chain of collectives that the queue runs back to back, with one
    /// [`Request`] for all (the first error of any).
    ///
    /// # Errors
    /// As [`Context::record`]; [`Error::InvalidArgument`] for an empty chain.
    pub fn post_batch<'a>(&'a self, colls: &[(Team, Collective<'a>)]) -> Result<Request<'a>> {
        if colls.is_empty() {
            return Err(Error::InvalidArgument("post_batch: no collectives".into()));
        }
        let ps = colls
            .iter()
            .map(|(t, c)| self.prepare(*t, c))
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: no semaphores.
        unsafe { self.post_prepared(ps, &[], &[]) }
    }

    /// Records `ps` into a command buffer of the context's, submits it.
    ///
    /// # Safety
    /// As [`Context::post_with`] for the semaphores.
    unsafe fn post_prepared<'a>(
        &'a self,
        ps: Vec<Prepared>,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<Request<'a>> {
        let q = self.queue_state()?;
        q.reap_abandoned();
        let mut cmds = match lock(&q.spare).pop() {
            Some(c) => c,
            None => OwnedCommands::new(&self.inner.gpu)?,
        };
        let slot = q.completions.take()?;
        let name = if ps.len() == 1 {
            ps[0].name.clone()
        } else {
            format!("chain of {} queued collectives", ps.len())
        };
        let recorded = cmds
            .begin(false)
            .and_then(|r| self.record_prepared(&r, &ps, slot));
        let submitted = recorded
            .and_then(|_| cmds.end())
            .and_then(|_| cmds.submit(waits, signals));
        if let Err(e) = submitted {
            q.completions.give(slot);
            return Err(e);
        }
        q.progress.shared.add();
        Ok(Request {
            p: Pending {
                ctx: self,
                slot,
                name,
                since: Some(Instant::now()),
                finished: false,
            },
            cmds: Some(cmds),
        })
    }

    /// Records `coll` over `team` once, for [`Persistent::start`] to run
    /// again and again (UCC's persistent collectives): the arguments are
    /// checked here, and each start is one queue submission.
    ///
    /// # Errors
    /// As [`Context::record`].
    pub fn persistent<'a>(&'a self, team: Team, coll: Collective<'a>) -> Result<Persistent<'a>> {
        let p = self.prepare(team, &coll)?;
        let q = self.queue_state()?;
        let mut cmds = OwnedCommands::new(&self.inner.gpu)?;
        let slot = q.completions.take()?;
        let recorded = cmds
            .begin(true)
            .and_then(|r| self.record_prepared(&r, std::slice::from_ref(&p), slot));
        if let Err(e) = recorded.and_then(|_| cmds.end()) {
            q.completions.give(slot);
            return Err(e);
        }
        Ok(Persistent {
            p: Pending {
                ctx: self,
                slot,
                name: p.name,
                since: None,
                finished: true,
            },
            cmds,
            running: false,
        })
    }

    /// The Vulkan handles of this context's device (its own from
    /// [`Context::init`], or the program's from [`Context::init_on_device`]),
    /// for recording the program's own work next to queued collectives: load
    /// them with the program's Vulkan binding (`ash::Device::load`). The
    /// handles stay valid while the context lives; the program must not
    /// destroy them.
    pub fn vulkan_device(&self) -> crate::vk::UserDevice {
        let g = &self.inner.gpu;
        use ash::vk::Handle;
        crate::vk::UserDevice {
            instance: vk::Instance::from_raw(g.instance.handle().as_raw()),
            physical_device: g.physical,
            device: vk::Device::from_raw(g.device.handle().as_raw()),
            queue_family: g.queue_family,
            queue_index: g.queue_index,
            enabled: g.caps.clone(),
            external_memory_host: g.host_import.is_some(),
        }
    }

    /// The queue family of this context's queue: command buffers given to
    /// [`Context::record`] come from a pool of this family.
    pub fn queue_family(&self) -> u32 {
        self.inner.gpu.queue_family
    }

    /// This context's queue. Submit command buffers with queued collectives
    /// here, under [`Context::with_queue`] (the context submits to it too).
    pub fn queue(&self) -> vk::Queue {
        *self
            .inner
            .gpu
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` with this context's queue, holding the lock under which the
    /// context submits to it (`vkQueueSubmit` needs the queue externally
    /// synchronized).
    pub fn with_queue<R>(&self, f: impl FnOnce(vk::Queue) -> R) -> R {
        let q = self
            .inner
            .gpu
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        f(*q)
    }

    /// The error of a completed queued collective, from its slot's words.
    fn queued_result(&self, name: &str, w: &SlotWords, _posted: bool) -> Result<()> {
        if w.error == 0 && w.abort == 0 {
            return Ok(());
        }
        let aborted = w.abort != 0 || w.error & layout::ERR_ABORTED != 0;
        let e = if aborted || w.error & layout::ERR_LOOPS_CUT != 0 {
            // A failed peer or a timeout ended the device's waits (or the
            // driver cut them, possibly because a peer died).
            let word = self.inner.plane.as_ref().map_or(0, |p| p.abort_word());
            if word & !crate::sync::layout::ABORT_PE_MASK == crate::sync::layout::ABORT_TIMEOUT {
                Some(Error::Timeout {
                    what: name.to_string(),
                    pe: self.my_pe(),
                    seconds: self.inner.wait_timeout.unwrap_or_default().as_secs_f64(),
                    missing: String::new(),
                })
            } else if word != 0 || aborted {
                self.peer_failure()
            } else {
                None
            }
        } else {
            None
        };
        // Argument and address checks fail alike on every member, or on one
        // member between the syncs, which it still takes part in: the PEs stay
        // in step. Anything else (a wait cut short or aborted, a sync skipped
        // on a bad team, two syncs at once) leaves them out of step.
        let in_step = w.abort == 0
            && w.error & !(layout::ERR_BAD_ARGUMENT | layout::ERR_BAD_PE | layout::ERR_BAD_ADDRESS)
                == 0;
        let e = e.unwrap_or_else(|| Error::Device {
            kernel: name.to_string(),
            pe: self.my_pe(),
            what: layout::describe_errors(w.error).join("; "),
            bits: w.error,
            arg_pe: w.error_pe,
            arg_addr: w.error_addr,
        });
        if !in_step {
            self.set_broken(&e);
        }
        Err(e)
    }

    /// The failed peer the bootstrap or the plane names, if any.
    fn peer_failure(&self) -> Option<Error> {
        let word = self.inner.plane.as_ref().map_or(0, |p| p.abort_word());
        let told = lock(&self.inner.boot).as_mut().and_then(|b| b.poll_abort());
        match told {
            Some((pe, how)) => Some(Error::PeerFailed { pe, how }),
            None if word != 0 => Some(Error::PeerFailed {
                pe: word & crate::sync::layout::ABORT_PE_MASK,
                how: "failed (the job's abort word is raised)".into(),
            }),
            None => None,
        }
    }

    /// Sets this PE's device abort word, so that its device waits give up.
    fn raise_device_abort(&self) {
        let abort = std::mem::offset_of!(layout::ControlHeader, abort) as u64;
        if let Ok(Some(_)) = self.inner.heap.block(self.my_pe()).map(|b| b.mapped()) {
            let _ = self.write_bytes(self.my_pe(), abort, &1u32.to_le_bytes());
        }
    }

    /// Marks the context broken after a queued collective failed (the PEs are
    /// out of step, see [`Error::Broken`]).
    fn set_broken(&self, e: &Error) {
        if self.n_pes() > 1 {
            let mut b = lock(&self.inner.broken);
            if b.is_none() {
                *b = Some(e.to_string());
            }
        }
    }
}

/// The host collective's pull kernel call for `c` on `m` (`None`: none fits:
/// collect), with its arguments and work items (as the blocking forms
/// compute them, `crate::collective`).
fn pull_call(
    c: &Collective,
    m: &crate::rendezvous::Members,
    q: &QueueArgs,
) -> Option<(HostCall, HostArgs, u64)> {
    let size = u64::from(m.shape.size);
    let es = c.dest.map_or(1, |d| d.es);
    let n = c.nelems;
    let bytes = n * es;
    let mut a = HostArgs {
        start: m.shape.start,
        stride: m.shape.stride as u32,
        size: m.shape.size,
        me: m.me,
        dest: q.dest,
        source: q.source,
        ..Default::default()
    };
    let nonzero = |items: u64| if bytes == 0 { 0 } else { items };
    Some(match c.call {
        QueueCall::Broadcast => {
            a.n = bytes as u32;
            (
                HostCall::Broadcast {
                    root: c.root,
                    skip_root: false,
                },
                a,
                nonzero(bytes.div_ceil(4) + 1),
            )
        }
        QueueCall::Fcollect | QueueCall::Alltoall => {
            a.n = bytes as u32;
            let call = if c.call == QueueCall::Fcollect {
                HostCall::Fcollect
            } else {
                HostCall::Alltoall
            };
            (call, a, nonzero((bytes * size).div_ceil(4) + size))
        }
        QueueCall::Alltoalls => {
            a.n = n as u32;
            let call = HostCall::Alltoalls {
                elem_bytes: es as u32,
                dst: c.dst as u32,
                sst: c.sst as u32,
            };
            (call, a, n * size)
        }
        QueueCall::Reduce(kind, op) => {
            a.n = n as u32;
            let items = if kind.bytes == 8 {
                n.div_ceil(size)
            } else {
                bytes.div_ceil(4).div_ceil(size) + 1
            };
            (HostCall::Reduce { kind, op }, a, nonzero(items))
        }
        // UCC's calls: their device forms, in one workgroup at most.
        QueueCall::Barrier
        | QueueCall::Sync
        | QueueCall::Collect
        | QueueCall::Gather
        | QueueCall::Scatter
        | QueueCall::ReduceScatter(..)
        | QueueCall::Scan(..) => return None,
    })
}

/// Polls until `done()` or `test` says complete, sleeping in growing steps
/// (a host that spins takes the CPU a CPU driver's queue needs).
fn poll_until(mut test: impl FnMut() -> Result<bool>) -> Result<()> {
    let mut nap = Duration::from_micros(20);
    loop {
        if test()? {
            return Ok(());
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}

/// A collective recorded into the user's command buffer ([`Context::record`]).
/// Dropping it before it was seen complete logs an error; its completion slot
/// is given back when the device has run it.
#[must_use = "a queued collective reports its errors through test or wait"]
pub struct Queued<'a> {
    p: Pending<'a>,
}

impl std::fmt::Debug for Queued<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued")
            .field("name", &self.p.name)
            .field("finished", &self.p.finished)
            .finish()
    }
}

impl Queued<'_> {
    /// Whether it has completed on this PE (never blocks). The first `true`
    /// comes with its result: an error on the device, a failed peer or the
    /// timeout (counted from the first `test` or `wait`).
    ///
    /// # Errors
    /// See the module docs.
    pub fn test(&mut self) -> Result<bool> {
        let r = self.p.test(None);
        if self.p.finished {
            self.retire();
        }
        r
    }

    /// Waits until it completed on this PE (its command buffer must have been
    /// submitted, or be about to be by another thread).
    ///
    /// # Errors
    /// As [`Queued::test`].
    pub fn wait(mut self) -> Result<()> {
        poll_until(|| self.test())
    }

    fn retire(&mut self) {
        let q = self.p.state();
        if self.p.slot != u32::MAX {
            q.completions.give(self.p.slot);
            q.progress.shared.retire();
            self.p.slot = u32::MAX;
        }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.p.slot == u32::MAX {
            return;
        }
        if self.p.state().completions.read(self.p.slot).is_some() {
            let _ = self.test();
            return;
        }
        tracing::error!(
            "PE {}: a {} was dropped before it was seen complete; its errors are lost",
            self.p.ctx.my_pe(),
            self.p.name
        );
        lock(&self.p.state().abandoned).push(self.p.slot);
        self.p.slot = u32::MAX;
    }
}

/// A nonblocking collective ([`Context::post`]). Dropping it unfinished waits
/// for it (and logs its error).
#[must_use = "a nonblocking collective reports its errors through test or wait"]
pub struct Request<'a> {
    p: Pending<'a>,
    cmds: Option<OwnedCommands>,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("name", &self.p.name)
            .field("finished", &self.p.finished)
            .finish()
    }
}

impl Request<'_> {
    /// Whether it has completed on this PE (never blocks); the first `true`
    /// comes with its result.
    ///
    /// # Errors
    /// See the module docs.
    pub fn test(&mut self) -> Result<bool> {
        if self.p.finished {
            return Ok(true);
        }
        let fence = match &mut self.cmds {
            Some(c) => c.done()?,
            None => true,
        };
        if !fence {
            // The fence says no: the slot would too.
            self.p.check_stuck(false)?;
            return Ok(false);
        }
        let r = self.p.test(Some(true));
        if self.p.finished {
            self.retire();
        }
        r
    }

    /// Waits until it completed on this PE.
    ///
    /// # Errors
    /// As [`Request::test`].
    pub fn wait(mut self) -> Result<()> {
        self.wait_inner()
    }

    fn wait_inner(&mut self) -> Result<()> {
        loop {
            if let Some(c) = &mut self.cmds {
                // Block on the fence in slices (it wakes us as soon as the
                // queue is done); look for failures in between.
                c.wait(Duration::from_millis(20))?;
            }
            if self.test()? {
                return Ok(());
            }
        }
    }

    fn retire(&mut self) {
        let q = self.p.state();
        q.completions.give(self.p.slot);
        q.progress.shared.retire();
        if let Some(c) = self.cmds.take() {
            lock(&q.spare).push(c);
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.p.finished {
            return;
        }
        if let Err(e) = self.wait_inner() {
            tracing::error!(
                "PE {}: a {} dropped before completion failed: {e}",
                self.p.ctx.my_pe(),
                self.p.name
            );
        }
    }
}

/// A collective recorded once and started many times ([`Context::persistent`]).
/// One run at a time; dropping it waits for a run in progress.
pub struct Persistent<'a> {
    p: Pending<'a>,
    cmds: OwnedCommands,
    running: bool,
}

impl std::fmt::Debug for Persistent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persistent")
            .field("name", &self.p.name)
            .field("running", &self.running)
            .finish()
    }
}

impl Persistent<'_> {
    /// Starts a run (one queue submission).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] while the previous run is not complete
    /// (wait for it first); [`Error::Broken`]; Vulkan errors.
    pub fn start(&mut self) -> Result<()> {
        // SAFETY: no semaphores.
        unsafe { self.start_with(&[], &[]) }
    }

    /// [`Persistent::start`] after `waits`, signaling `signals`.
    ///
    /// # Safety
    /// As [`Context::post_with`].
    ///
    /// # Errors
    /// As [`Persistent::start`].
    pub unsafe fn start_with(
        &mut self,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<()> {
        if self.running {
            return Err(Error::InvalidArgument(format!(
                "{}: started while its previous run is not complete",
                self.p.name
            )));
        }
        if let Some(why) = lock(&self.p.ctx.inner.broken).clone() {
            return Err(Error::Broken(why));
        }
        let q = self.p.state();
        q.completions.clear(self.p.slot);
        self.cmds.submit(waits, signals)?;
        q.progress.shared.add();
        self.running = true;
        self.p.finished = false;
        self.p.since = Some(Instant::now());
        Ok(())
    }

    /// Whether the current run completed (never blocks; `true` when none runs);
    /// the first `true` after a start comes with the run's result.
    ///
    /// # Errors
    /// See the module docs.
    pub fn test(&mut self) -> Result<bool> {
        if !self.running {
            return Ok(true);
        }
        if !self.cmds.done()? {
            self.p.check_stuck(false)?;
            return Ok(false);
        }
        self.running = false;
        self.p.state().progress.shared.retire();
        self.p.test(Some(true)).map(|_| true)
    }

    /// Waits for the current run.
    ///
    /// # Errors
    /// As [`Persistent::test`].
    pub fn wait(&mut self) -> Result<()> {
        loop {
            if self.running {
                self.cmds.wait(Duration::from_millis(20))?;
            }
            if self.test()? {
                return Ok(());
            }
        }
    }
}

impl Drop for Persistent<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.wait() {
            tracing::error!(
                "PE {}: the last run of a persistent {} failed: {e}",
                self.p.ctx.my_pe(),
                self.p.name
            );
        }
        self.p.state().completions.give(self.p.slot);
    }
}
