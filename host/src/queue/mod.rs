//! Queue-ordered, nonblocking and persistent collectives: collectives that run
//! in the device's queue, ordered with the user's own GPU work, with no host
//! wait (NCCL's stream semantics, ishmem's `*_on_queue`, NVSHMEM's
//! `*_on_stream`, UCC's post/test/wait).
//!
//! Three ways to run a [`Collective`] on a team:
//!
//! - [`Context::record`](crate::Context::record) (unsafe: it takes a raw command buffer) records it
//!   into a command buffer the user owns; the user submits that to the
//!   context's queue with their own fence or semaphores. The returned
//!   [`Queued`] reports completion and errors ([`Queued::test`],
//!   [`Queued::wait`]).
//! - [`Context::post`](crate::Context::post) records it into a command buffer of the context's own
//!   and submits it at once: a nonblocking collective ([`Request`]); several
//!   may be in flight.
//! - [`Context::persistent`](crate::Context::persistent) records it once into a command buffer of its own
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
//!    ([`Context::post_batch`](crate::Context::post_batch)) share one dispatch of at most `BATCH_CALLS`
//!    (`vkshmem_device::layout`; 16 on llvmpipe, whose loop budget per
//!    invocation the calls share):
//!    their arguments are written into the PE's batch area in its control
//!    region by a `vkCmdUpdateBuffer` recorded just before it (so a batch
//!    carries its arguments in the command buffer, and persistent and
//!    recorded batches need no memory of their own), and one invocation
//!    runs the calls in order. This is what NCCL's group calls do: a
//!    dispatch costs more than a small collective;
//! 3. a barrier, then a copy of the PE's device error words into the
//!    collective's completion slot (`runtime/completion.rs`), which are then cleared;
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
//!    [`Context::launch`](crate::Context::launch) of a kernel that waits on peers, or a
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
//! (`runtime/progress.rs`) watches for a failed peer (then every device wait of this
//! PE gives up) and, on llvmpipe, keeps the device's waits alive for seconds
//! (`crate::driver::throttle`).
//!
//! # Errors
//!
//! Checks on this PE's own arguments happen when the collective is recorded
//! or posted ([`Error::InvalidArgument`](crate::Error::InvalidArgument)). What happens on the device is
//! reported by `test`/`wait` with the blocking launches' errors:
//! [`Error::Device`](crate::Error::Device) (a device error, for example a collect whose counts
//! overflow a member's dest), [`Error::PeerFailed`](crate::Error::PeerFailed), [`Error::Timeout`](crate::Error::Timeout)
//! (`VKSHMEM_WAIT_TIMEOUT`, counted from the first `test`/`wait` of a
//! recorded collective, from the post of a nonblocking one). After a failed
//! peer, a timeout or a wait the driver cut short, the PEs are out of step
//! and the context is broken ([`Error::Broken`](crate::Error::Broken)); a device argument check
//! (`ERR_BAD_ARGUMENT`, `ERR_BAD_PE`, `ERR_BAD_ADDRESS`) fails between the
//! collective's syncs, which every member still completes, so the job stays
//! usable.

mod builder;
mod record;
mod request;
mod state;

use ash::vk;

use crate::runtime::Runtime;
pub use crate::vk::record::SemaphorePoint;
pub use builder::Collective;
pub use request::{Persistent, Queued, Request};

/// Calls that move at most this many bytes on a member run in one invocation
/// (the device's per-thread form, sync, move, sync in one dispatch). Larger
/// ones are three dispatches: a device sync, the host collective's pull
/// kernel over the whole device, a device sync; or, for a collect (whose
/// counts only the device learns) and teams that span devices, one
/// workgroup (the work_group form).
pub const THREAD_FORM_MAX_BYTES: u64 = 1024;

impl Runtime {
    pub(crate) fn vulkan_device(&self) -> crate::vk::UserDevice {
        let g = &self.gpu;
        use ash::vk::Handle;
        crate::vk::UserDevice {
            instance: vk::Instance::from_raw(g.instance.handle().as_raw()),
            physical_device: g.physical,
            device: vk::Device::from_raw(g.device.handle().as_raw()),
            queue_family: g.queue_family,
            queue_index: g.queue_index,
            enabled: g.caps.clone(),
            external_memory_host: g.host_import.is_some(),
            driver_threads: None,
        }
    }

    pub(crate) fn queue_family(&self) -> u32 {
        self.gpu.queue_family
    }

    pub(crate) fn queue(&self) -> vk::Queue {
        *self.gpu.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn with_queue<R>(&self, f: impl FnOnce(vk::Queue) -> R) -> R {
        let q = self.gpu.queue.lock().unwrap_or_else(|p| p.into_inner());
        f(*q)
    }

    pub(crate) fn heap_vk_buffer(&self) -> crate::symbuf::RawBuffer {
        crate::symbuf::RawBuffer {
            buffer: self
                .heap
                .block(self.my_pe())
                .expect("a PE always reaches its own heap")
                .buffer,
            offset: 0,
            bytes: self.heap_size(),
        }
    }
}
