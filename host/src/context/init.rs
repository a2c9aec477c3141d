//! Joining and leaving the job.

#[allow(unused_imports)] // rustdoc links
use crate::error::Error;
use crate::error::Result;
use crate::runtime::Runtime;
use crate::vk::Gpu;
use crate::vk::UserDevice;

use super::Context;

impl Context {
    /// Joins the job (collective over all PEs): reads the launcher's hand-over from
    /// the environment, opens the Vulkan device, creates and exchanges the symmetric
    /// heaps. A process started without `vkshmrun` is a job of one PE.
    ///
    /// # Errors
    /// [`Error::Config`] for bad environment values, [`Error::Loader`] or
    /// [`Error::NoDevice`] when Vulkan is missing, [`Error::Refused`] when the
    /// endpoint does not admit this PE, [`Error::PeerFailed`] when another PE dies
    /// during set-up, Vulkan errors as [`Error::Vulkan`].
    pub fn init() -> Result<Context> {
        join(own_device, None)
    }

    /// Joins the job as PE `pe` of a job whose endpoint and secret are given
    /// (a PE of [`crate::threads::run_threads`]); every other setting comes
    /// from the environment, as for [`Context::init`](crate::Context::init).
    pub(crate) fn init_as(job: &crate::config::JobEnv) -> Result<Context> {
        join(own_device, Some(job))
    }

    /// Joins the job as [`Context::init`](crate::Context::init) does, on a Vulkan device the
    /// program created (ash, wgpu-hal, vulkano: raw handles), instead of one
    /// of vkshmem's own. The symmetric heap, kernels and submissions are
    /// vkshmem's objects on that device; the device, its queue and the
    /// instance stay the program's, and are not destroyed at finalize.
    ///
    /// What the device must have: Vulkan 1.3 (instance `apiVersion` too),
    /// `VK_KHR_external_memory_fd` enabled (the heap is shared between
    /// processes by fd), a queue family with compute; optionally the
    /// features listed in [`UserDevice::enabled`](crate::vk::UserDevice)
    /// and `VK_EXT_external_memory_host`. Every PE of a node that shares the
    /// physical device must reach the same one (`deviceUUID`).
    ///
    /// vkshmem submits to the queue (host collectives, copies) under the
    /// lock that [`Context::with_queue`](crate::Context::with_queue) takes: submit to that queue from
    /// other threads only under it too.
    ///
    /// # Safety
    /// The handles are valid, of one instance, and outlive the context (drop
    /// every handle of it, or [`Context::finalize`](crate::Context::finalize), first); the device was
    /// created with what `dev` says is enabled and a queue at
    /// (`queue_family`, `queue_index`).
    ///
    /// # Errors
    /// As [`Context::init`]; [`Error::NoDevice`] when the device is not
    /// usable (below Vulkan 1.3), [`Error::InvalidArgument`] when it lacks
    /// `VK_KHR_external_memory_fd` or the family has no compute.
    pub unsafe fn init_on_device(dev: UserDevice) -> Result<Context> {
        // SAFETY: the caller's guarantee.
        join(|_, cache| unsafe { Gpu::adopt(&dev, cache) }, None)
    }

    /// [`Context::init_on_device`] as PE `job.pe` of a job of threads
    /// ([`crate::threads::Member::join_on_device`]).
    ///
    /// # Safety
    /// As [`Context::init_on_device`].
    pub(crate) unsafe fn init_on_device_as(
        dev: UserDevice,
        job: &crate::config::JobEnv,
    ) -> Result<Context> {
        // SAFETY: the caller's guarantee.
        join(|_, cache| unsafe { Gpu::adopt(&dev, cache) }, Some(job))
    }

    /// Leaves the job (collective): a barrier, then a clean goodbye to the
    /// endpoint. Dropping the last handle without calling this says goodbye too
    /// (without the barrier). Symmetric buffers still alive keep their memory but can
    /// no longer be freed collectively.
    ///
    /// # Errors
    /// As [`Context::barrier_all`](crate::Context::barrier_all) (a clone of a context that has already
    /// finalized gets [`Error::InvalidArgument`]); [`Error::Bootstrap`] when the
    /// goodbye cannot be sent.
    pub fn finalize(self) -> Result<()> {
        self.rt.finalize()
    }
}

/// The device `VKSHMEM_DEVICE` names (or the best one) for PE `pe`.
fn own_device(pe: u32, cache: Option<std::path::PathBuf>) -> Result<Gpu> {
    Gpu::open(
        crate::config::env(crate::config::ENV_DEVICE).as_deref(),
        pe,
        cache,
    )
}

/// Builds the runtime with the device `open` gives, as `given` or the
/// launcher's hand-over says; the background builder is told which kernels
/// the collectives declare (they sit above the runtime).
fn join(
    open: impl FnOnce(u32, Option<std::path::PathBuf>) -> Result<Gpu>,
    given: Option<&crate::config::JobEnv>,
) -> Result<Context> {
    Runtime::init_with(open, given, crate::collective::first_kernels).map(|rt| Context { rt })
}
