//! A PE's runtime: the services its calls share, and no algorithm.
//!
//! [`Runtime`] owns the Vulkan device, the symmetric heap, the allocator, the
//! sync plane, the bootstrap connection, the teams, the submitter, the kernel
//! caches and the proxy. `init` builds it (`init.rs`, one function per step);
//! the rest of this module is what every algorithm needs of it: heap access
//! (`access.rs`), allocation (`alloc.rs`), syncs (`sync.rs`), kernel launches
//! (`dispatch.rs`), queries (`queries.rs`). The algorithms (`collective`,
//! `rma`, `queue`) add their own `impl Runtime` blocks; the public
//! [`crate::Context`] is a façade over an `Arc<Runtime>`.

use crate::alloc::Allocator;
use crate::bootstrap::Bootstrap;
use crate::heap::SymmetricHeap;
use crate::kernels::DeviceKernel;
use crate::phases::PhaseTimes;
use crate::sync::Plane;
use crate::team::TeamTable;
use crate::vk::host_import::HostImport;
use crate::vk::memory::Staging;
use crate::vk::submit::Submitter;
use crate::vk::Gpu;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vkshmem_device::collectives::WideUnit;

/// A window of some PE's symmetric heap, to bind to a kernel's storage binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapWindow {
    /// Whose heap.
    pub pe: u32,
    /// Byte offset in the heap (the symmetric address).
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
}

/// A user kernel's cache key: (source, entry point).
type KernelKey = (String, Option<String>);

/// One PE's services (see the module docs); shared by `Arc` between the
/// façade, its symmetric buffers, its requests and its proxy's users.
pub(crate) struct Runtime {
    pe: u32,
    npes: u32,
    pub(crate) wait_timeout: Option<Duration>,
    /// `VKSHMEM_HOST_MAPPED_MAX`: small collectives up to this many bytes per
    /// member run on the host (see `collective::host_path`).
    pub(crate) host_mapped_max: u64,
    /// `VKSHMEM_HOST_STREAM`: streaming stores on the direct host path
    /// (`None`: where the call overflows the cache; `collective::copy`).
    pub(crate) host_stream: Option<bool>,
    /// `VKSHMEM_RECORD`: whether calls go into the flight recorder
    /// (`recorder.rs`).
    record: bool,
    /// `VKSHMEM_TRACE`: this PE's spans (`crate::trace`), written when it goes.
    tracer: Option<crate::trace::Tracer>,
    /// Whether this PE lets the team's first member submit every member's
    /// part of a host collective (`VKSHMEM_SUBMIT`, `collective::part`).
    pub(crate) leader_submit: bool,
    /// Invocations per workgroup of the wide copies and pushes
    /// ([`Context::wide_workgroup`](crate::Context::wide_workgroup)).
    pub(crate) wide_workgroup: u32,
    /// The element of the wide kernels ([`Context::wide_unit`](crate::Context::wide_unit)).
    pub(crate) wide_unit: WideUnit,
    /// Set when a launch of a kernel that waits on peers failed in a job of
    /// several PEs: see [`Error::Broken`](crate::Error::Broken).
    pub(crate) broken: Mutex<Option<String>>,
    /// This PE's teams (see [`crate::team`]).
    pub(crate) teams: Mutex<TeamTable>,
    /// This PE's proxy thread, when device code reaches some peer through it
    /// (started once the control region is initialised; stopped first at drop).
    pub(crate) proxy: std::sync::OnceLock<crate::transport::proxy::Proxy>,
    /// The node segment's staging sets imported into this PE's device
    /// (`VK_EXT_external_memory_host`), by staging slot, made on first use
    /// where the heap is not host-mapped (`None`: the import failed; not
    /// retried). Before `plane`: an import must go before the mapping it
    /// covers.
    pub(crate) staging_imports: Mutex<HashMap<u32, Option<Arc<HostImport>>>>,
    /// The sync plane (node shared memory), in a job started by the launcher.
    pub(crate) plane: Option<Arc<Plane>>,
    /// Every PE's node (by PE), in a job of several nodes; `None` in a job
    /// of one node.
    pub(crate) nodes: Option<Vec<u32>>,
    /// The device library's shape for this PE (`Context::library_config`).
    pub(crate) library: vkshmem_device::LibraryConfig,
    /// The job as this PE's device library sees it: which heaps it reaches
    /// and how its slots bind them (read by its kernels at run time).
    pub(crate) job: vkshmem_device::JobView,
    /// Queued collectives' state (`crate::queue`), made at the first one;
    /// before the kernels it records (it waits for outstanding ones at drop).
    pub(crate) queue: std::sync::OnceLock<queued::QueueState>,
    /// Held while `queue` is made.
    pub(crate) queue_init: Mutex<()>,
    // Field order is drop order: everything holding Vulkan objects goes before `gpu`.
    pub(crate) kernels: Mutex<HashMap<KernelKey, Arc<DeviceKernel>>>,
    /// The kernel of host atomics on a heap the host does not map
    /// (`crate::rma::amo`), built at the first; its lock serialises them
    /// (one result slot in the control region).
    pub(crate) host_amo: Mutex<Option<Arc<DeviceKernel>>>,
    /// The library's own kernels (host collectives) by their unique name, so a
    /// call finds its kernel without generating and hashing its source.
    pub(crate) library_kernels: Mutex<HashMap<String, Arc<DeviceKernel>>>,
    pub(crate) submit: Mutex<Submitter>,
    /// Where host calls' phases are timed when asked (the submitter holds
    /// the same; [`Context::set_phase_times`](crate::Context::set_phase_times)).
    pub(crate) phases: Arc<PhaseTimes>,
    staging: Mutex<Option<Staging>>,
    pub(crate) heap: SymmetricHeap,
    alloc: Mutex<Allocator>,
    pub(crate) boot: Mutex<Option<Bootstrap>>,
    /// On CPU drivers that cap loops (llvmpipe): the threads the driver
    /// created when the device was opened, which run its kernels (see
    /// `crate::driver::throttle`).
    pub(crate) driver_threads: Arc<crate::driver::throttle::DriverThreads>,
    pub(crate) gpu: Arc<Gpu>,
    /// The MPI job this PE is a rank of (started by `mpirun`): last, so MPI
    /// is finalized after everything else (and the endpoint it may run
    /// stops after this PE's goodbye).
    #[cfg(feature = "mpi")]
    pub(crate) mpi: Mutex<Option<crate::bootstrap::mpi::MpiJob>>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // A submission seen done by its completion word (VKSHMEM_COMPLETION)
        // has its fence waited for before the fields go, kernels first (field
        // order): nothing they own is then in a pending submission. A
        // failure here is the device lost.
        let _ = lock(&self.submit).settle();
    }
}

pub(crate) use crate::lock::lock;

mod access;
mod alloc;
pub(crate) mod completion;
mod dispatch;
mod init;
mod prebuild;
pub(crate) mod progress;
mod queries;
pub(crate) mod queued;
pub(crate) mod recorder;
pub(crate) mod rendezvous;
pub mod symbuf;
mod sync;
mod teams;
