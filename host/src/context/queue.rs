//! The façade of queued collectives and the program's own submissions on vkshmem's queue
//! (`crate::queue`).

use crate::error::Result;
use crate::queue::{Collective, Persistent, Queued, Request};
use crate::symbuf::RawBuffer;
use crate::team::Team;
use crate::vk::record::SemaphorePoint;
use ash::vk;

use super::Context;

impl Context {
    /// The Vulkan handles of this context's device (its own from
    /// [`Context::init`](crate::Context::init), or the program's from [`Context::init_on_device`](crate::Context::init_on_device)),
    /// for recording the program's own work next to queued collectives: load
    /// them with the program's Vulkan binding (`ash::Device::load`). The
    /// handles stay valid while the context lives; the program must not
    /// destroy them.
    pub fn vulkan_device(&self) -> crate::vk::UserDevice {
        self.rt.vulkan_device()
    }

    /// The queue family of this context's queue: command buffers given to
    /// [`Context::record`](crate::Context::record) come from a pool of this family.
    pub fn queue_family(&self) -> u32 {
        self.rt.queue_family()
    }

    /// This context's queue. Submit command buffers with queued collectives
    /// here, under [`Context::with_queue`](crate::Context::with_queue) (the context submits to it too).
    pub fn queue(&self) -> vk::Queue {
        self.rt.queue()
    }

    /// This PE's whole symmetric heap on this device as one Vulkan buffer
    /// (its block: the control region first, then the allocations, each at
    /// its [`SymBuffer::offset`](crate::SymBuffer::offset)): what a program
    /// that binds many allocations wraps once, as a wgpu buffer for
    /// example. It lives as long as the context.
    pub fn heap_vk_buffer(&self) -> RawBuffer {
        self.rt.heap_vk_buffer()
    }

    /// Runs `f` with this context's queue, holding the lock under which the
    /// context submits to it (`vkQueueSubmit` needs the queue externally
    /// synchronized).
    pub fn with_queue<R>(&self, f: impl FnOnce(vk::Queue) -> R) -> R {
        self.rt.with_queue(f)
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
    /// from a pool of [`Context::queue_family`](crate::Context::queue_family), in the recording state,
    /// outside a render pass, recorded by no other thread now; it is
    /// submitted once, to [`Context::queue`](crate::Context::queue), after the command buffers
    /// holding queued collectives recorded earlier (rule 2).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an invalid team, objects that do not
    /// hold the elements or lie outside the heap, a bad root or stride, a
    /// bitwise reduction of floats, or too many outstanding queued
    /// collectives; [`Error::Unsupported`](crate::Error::Unsupported) for 64-bit types the device cannot
    /// do; [`Error::Broken`](crate::Error::Broken); Vulkan errors.
    pub unsafe fn record<'a>(
        &'a self,
        cmd: vk::CommandBuffer,
        team: Team,
        coll: Collective<'a>,
    ) -> Result<Queued<'a>> {
        unsafe { self.rt.record(cmd, team, coll) }
    }

    /// Starts `coll` over `team` on this context's queue and returns at once
    /// (a nonblocking collective, `shmem_*_nbi`-like, UCC's post): the
    /// [`Request`] tests and waits for it. Several may be in flight; they run
    /// in the order posted.
    ///
    /// # Errors
    /// As [`Context::record`](crate::Context::record).
    pub fn post<'a>(&'a self, team: Team, coll: Collective<'a>) -> Result<Request<'a>> {
        self.rt.post(team, coll)
    }

    /// [`Context::post`](crate::Context::post) after `waits` and signaling `signals` when done:
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
    /// As [`Context::record`](crate::Context::record).
    pub unsafe fn post_with<'a>(
        &'a self,
        team: Team,
        coll: Collective<'a>,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<Request<'a>> {
        unsafe { self.rt.post_with(team, coll, waits, signals) }
    }

    /// Starts `colls` (each on its team), in order, in one submission: a
    /// chain of collectives that the queue runs back to back, with one
    /// [`Request`] for all (the first error of any).
    ///
    /// # Errors
    /// As [`Context::record`](crate::Context::record); [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an empty chain.
    pub fn post_batch<'a>(&'a self, colls: &[(Team, Collective<'a>)]) -> Result<Request<'a>> {
        self.rt.post_batch(colls)
    }

    /// Records `coll` over `team` once, for [`Persistent::start`] to run
    /// again and again (UCC's persistent collectives): the arguments are
    /// checked here, and each start is one queue submission.
    ///
    /// # Errors
    /// As [`Context::record`](crate::Context::record).
    pub fn persistent<'a>(&'a self, team: Team, coll: Collective<'a>) -> Result<Persistent<'a>> {
        self.rt.persistent(team, coll)
    }
}
