//! The per-PE context: what `shmem_init` sets up and `shmem_finalize` tears down.
//!
//! A [`Context`] owns the Vulkan device, the symmetric heap, the allocator and the
//! bootstrap connection. It is a cheap handle (`Arc` inside) and may be shared
//! between threads; collective calls must still be made in the same order on every
//! PE, from one thread at a time per PE.

use std::collections::HashMap;
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use vkshmem_device::collectives::WideUnit;
use vkshmem_device::layout;

use crate::alloc::Allocator;
use crate::bootstrap::Bootstrap;
use crate::config;
use crate::error::{Error, Result};
use crate::heap::SymmetricHeap;
use crate::kernels::DeviceKernel;
use crate::phases::{PhaseStat, PhaseTimes};
use crate::symbuf::SymBuffer;
use crate::sync::segment::Segment;
use crate::sync::{Plane, WaitPolicy};
use crate::team::{Team, TeamShape, TeamTable};
use crate::vk::host_import::HostImport;
use crate::vk::kernel::Kernel;
use crate::vk::memory::Staging;
use crate::vk::submit::{Submitter, Window};
use crate::vk::{DeviceCaps, DeviceInfo, Gpu};

/// Bytes of the staging buffer used for host access to heaps the host cannot map.
const STAGING_BYTES: u64 = 4 << 20;

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

/// A collective allocation request, compared across PEs before it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Request {
    op: u32,
    _pad: u32,
    a: u64,
    b: u64,
}

const OP_MALLOC: u32 = 1;
const OP_FREE: u32 = 2;

impl Request {
    /// The public call that made this request.
    fn call(&self) -> &'static str {
        match self.op {
            OP_MALLOC => "malloc",
            _ => "free",
        }
    }

    fn describe(&self) -> String {
        match self.op {
            OP_MALLOC => format!("allocate {} bytes aligned to {}", self.a, self.b),
            OP_FREE => format!("free the allocation at offset {}", self.a),
            op => format!("unknown request {op}"),
        }
    }
}

/// A user kernel's cache key: (source, entry point).
type KernelKey = (String, Option<String>);

pub(crate) struct Inner {
    pe: u32,
    npes: u32,
    pub(crate) wait_timeout: Option<Duration>,
    /// `VKSHMEM_HOST_MAPPED_MAX`: small collectives up to this many bytes per
    /// member run on the host (see `collective::host_path`).
    pub(crate) host_mapped_max: u64,
    /// `VKSHMEM_HOST_STREAM`: streaming stores on the direct host path
    /// (`None`: where the call overflows the cache; `collective::copy`).
    pub(crate) host_stream: Option<bool>,
    /// Whether this PE lets the team's first member submit every member's
    /// part of a host collective (`VKSHMEM_SUBMIT`, `collective::part`).
    pub(crate) leader_submit: bool,
    /// Invocations per workgroup of the wide copies and pushes
    /// ([`Context::wide_workgroup`]).
    pub(crate) wide_workgroup: u32,
    /// The element of the wide kernels ([`Context::wide_unit`]).
    pub(crate) wide_unit: WideUnit,
    /// Set when a launch of a kernel that waits on peers failed in a job of
    /// several PEs: see [`Error::Broken`].
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
    /// Queued collectives' state (`crate::queue`), made at the first one;
    /// before the kernels it records (it waits for outstanding ones at drop).
    pub(crate) queue: std::sync::OnceLock<crate::queue::QueueState>,
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
    /// the same; [`Context::set_phase_times`]).
    pub(crate) phases: Arc<PhaseTimes>,
    staging: Mutex<Option<Staging>>,
    pub(crate) heap: SymmetricHeap,
    alloc: Mutex<Allocator>,
    pub(crate) boot: Mutex<Option<Bootstrap>>,
    pub(crate) gpu: Arc<Gpu>,
    /// The MPI job this PE is a rank of (started by `mpirun`): last, so MPI
    /// is finalized after everything else (and the endpoint it may run
    /// stops after this PE's goodbye).
    #[cfg(feature = "mpi")]
    pub(crate) mpi: Mutex<Option<crate::bootstrap::mpi::MpiJob>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A submission seen done by its completion word (VKSHMEM_COMPLETION)
        // has its fence waited for before the fields go, kernels first (field
        // order): nothing they own is then in a pending submission. A
        // failure here is the device lost.
        let _ = lock(&self.submit).settle();
    }
}

/// One PE's handle on vkshmem (OpenSHMEM's implicit library state, made explicit).
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("pe", &self.inner.pe)
            .field("npes", &self.inner.npes)
            .field("device", &self.inner.gpu.info.name)
            .finish()
    }
}

// A context is shared between threads (the docs say so): keep it that way.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Context>();
};

/// The wide copies' and pushes' workgroup size on the device `info`
/// describes: `asked`
/// (`VKSHMEM_WIDE_WORKGROUP`), an error where the device cannot run it; by
/// default [`HOST_WORKGROUP`](vkshmem_device::collectives::HOST_WORKGROUP)
/// on llvmpipe and
/// [`WIDE_WORKGROUP_GPU`](vkshmem_device::collectives::WIDE_WORKGROUP_GPU)
/// elsewhere, halved until the device runs it.
fn wide_workgroup_for(info: &crate::vk::DeviceInfo, asked: Option<u32>) -> Result<u32> {
    use vkshmem_device::collectives::{HOST_WORKGROUP, WIDE_WORKGROUP_GPU};
    let limit = info
        .max_workgroup_invocations
        .min(info.max_workgroup_size[0]);
    match asked {
        Some(n) if n > limit => Err(Error::Config {
            var: config::ENV_WIDE_WORKGROUP,
            value: n.to_string(),
            why: format!(
                "{} runs at most {limit} invocations per workgroup",
                info.name
            ),
        }),
        Some(n) => Ok(n),
        None => {
            let mut n = if info.is_llvmpipe() {
                HOST_WORKGROUP
            } else {
                WIDE_WORKGROUP_GPU
            };
            while n > limit.max(1) {
                n /= 2;
            }
            Ok(n)
        }
    }
}

/// The wide kernels' element on a device with `info` and, where `int64`,
/// `shaderInt64`: `asked` (`VKSHMEM_WIDE_UNIT`) or by default `vec2<u64>`
/// on llvmpipe and `vec4<u32>` elsewhere ([`config::ENV_WIDE_UNIT`]). Each
/// PE chooses alone: the unit changes neither the split of a call's work
/// nor its windows.
fn wide_unit_for(
    info: &crate::vk::DeviceInfo,
    int64: bool,
    asked: Option<WideUnit>,
) -> Result<WideUnit> {
    match asked {
        Some(WideUnit::Vec2U64) if !int64 => Err(Error::Config {
            var: config::ENV_WIDE_UNIT,
            value: "u64".into(),
            why: format!("{} has no shaderInt64", info.name),
        }),
        Some(u) => Ok(u),
        None if int64 && info.is_llvmpipe() => Ok(WideUnit::Vec2U64),
        None => Ok(WideUnit::Vec4U32),
    }
}

/// Prints what `SHMEM_VERSION` or `SHMEM_INFO` asked for on stdout, at
/// once: a C program's own output goes through C's buffers, so it comes
/// after this however it is buffered.
fn report_at_init(text: Option<String>) {
    use std::io::Write;
    if let Some(text) = text {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned mutex means a panic elsewhere in this PE; the guarded state is
    // still usable for tearing down.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

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
        Self::init_with(
            |pe| Gpu::open(config::env(config::ENV_DEVICE).as_deref(), pe),
            &config::env,
        )
    }

    /// Joins the job as PE `pe` of a job whose endpoint and secret are given
    /// (a PE of [`crate::threads::run_threads`]); every other setting comes
    /// from the environment, as for [`Context::init`].
    pub(crate) fn init_as(job: &config::JobEnv) -> Result<Context> {
        let (endpoint, secret) = job.bootstrap.clone().unzip();
        let (pe, npes) = (job.pe.to_string(), job.npes.to_string());
        let secret = secret.map(|s| config::encode_hex(&s));
        let get = |name: &str| match name {
            config::ENV_PE => Some(pe.clone()),
            config::ENV_NPES => Some(npes.clone()),
            config::ENV_BOOTSTRAP => endpoint.clone(),
            config::ENV_SECRET => secret.clone(),
            _ => config::env(name),
        };
        Self::init_with(|pe| Gpu::open(get(config::ENV_DEVICE).as_deref(), pe), &get)
    }

    /// Joins the job as [`Context::init`] does, on a Vulkan device the
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
    /// lock that [`Context::with_queue`] takes: submit to that queue from
    /// other threads only under it too.
    ///
    /// # Safety
    /// The handles are valid, of one instance, and outlive the context (drop
    /// every handle of it, or [`Context::finalize`], first); the device was
    /// created with what `dev` says is enabled and a queue at
    /// (`queue_family`, `queue_index`).
    ///
    /// # Errors
    /// As [`Context::init`]; [`Error::NoDevice`] when the device is not
    /// usable (below Vulkan 1.3), [`Error::InvalidArgument`] when it lacks
    /// `VK_KHR_external_memory_fd` or the family has no compute.
    pub unsafe fn init_on_device(dev: crate::vk::UserDevice) -> Result<Context> {
        // SAFETY: the caller's guarantee.
        Self::init_with(|_| unsafe { Gpu::adopt(&dev) }, &config::env)
    }

    /// Joins the job with the device `open` gives, reading the launcher's
    /// hand-over and every setting through `get` (the environment, or a
    /// thread-PE's own place in the job).
    fn init_with(
        open: impl FnOnce(u32) -> Result<Gpu>,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Context> {
        let wait_timeout = config::wait_timeout(get)?;
        let fence_spin = config::fence_spin(get)?;
        let yield_poll = config::yield_poll(get)?;
        #[cfg(feature = "mpi")]
        let (job, mpi) = if config::mpi_launch(&get) {
            let (job, m) = crate::bootstrap::mpi::join(get, wait_timeout)?;
            (job, Some(m))
        } else {
            (config::job_env(get)?, None)
        };
        // Every PE's node, in a job of several nodes (else `None`).
        #[cfg(feature = "mpi")]
        let nodes: Option<Vec<u32>> = mpi
            .as_ref()
            .filter(|m| m.several_nodes())
            .map(|m| m.nodes().to_vec());
        #[cfg(not(feature = "mpi"))]
        let nodes: Option<Vec<u32>> = None;
        #[cfg(not(feature = "mpi"))]
        let job = config::job_env(get)?;
        let heap_setting = config::heap_size_setting(get)?;
        let heap_size = heap_setting.bytes;
        if let Some(conflict) = heap_setting.conflict.as_deref().filter(|_| job.pe == 0) {
            config::warn_user(conflict);
        }
        let policy = WaitPolicy::from_env(get, job.npes)?;
        let host_mapped_max = config::host_mapped_max(get)?;
        let submit = config::submit(get)?;
        let host_stream = config::host_stream(get)?;
        let reuse_recordings = config::reuse_recordings(get)?;
        let completion_words = config::completion_words(get)?;
        let wide_workgroup = config::wide_workgroup(get)?;
        let wide_unit_asked = config::wide_unit(get)?;
        let transport = crate::transport::Mode::from_env(get)?;
        let heap_mapping = config::heap_mapping(get)?;
        let mut boot = match &job.bootstrap {
            Some((endpoint, secret)) => {
                Some(Bootstrap::connect(endpoint, secret, job.pe, job.npes)?)
            }
            None => None,
        };
        #[cfg(feature = "mpi")]
        if let (Some(m), Some(b)) = (mpi.as_ref().filter(|_| nodes.is_some()), boot.as_mut()) {
            // The endpoint serves this node: the job's collectives go over MPI.
            b.set_job(m.job_wide());
        }
        let plane = match boot.as_mut().map(Bootstrap::take_segment) {
            Some(Some(fd)) => Some(Arc::new(Plane::new(
                Segment::open(fd, job.npes)?,
                job.pe,
                policy,
                wait_timeout,
            ))),
            Some(None) => {
                return Err(Error::Bootstrap(
                    "the endpoint sent no node segment (launcher from another version?)".into(),
                ))
            }
            None => None,
        };
        let gpu = Arc::new(open(job.pe)?);
        let host_mapped_max = host_mapped_max.unwrap_or(match gpu.info.kind {
            crate::vk::select::Kind::Discrete => config::HOST_MAPPED_MAX_BAR,
            crate::vk::select::Kind::Cpu => config::HOST_MAPPED_MAX_CPU,
            _ => config::HOST_MAPPED_MAX_HOST_MEMORY,
        });
        let leader_submit = submit.unwrap_or(gpu.info.time_sliced);
        let wide_workgroup = wide_workgroup_for(&gpu.info, wide_workgroup)?;
        let wide_unit = wide_unit_for(&gpu.info, gpu.caps.int64, wide_unit_asked)?;
        let granule = gpu
            .info
            .min_storage_offset_alignment
            .max(256)
            .next_power_of_two();
        let (heap_var, heap_text) = heap_setting
            .from
            .clone()
            .unwrap_or((config::ENV_HEAP_SIZE, "(default)".into()));
        // The control region plus one allocation (every PE computes the same).
        let minimum = layout::control_bytes(job.npes).next_multiple_of(granule) + granule;
        let size_error = |why: String| Error::Config {
            var: heap_var,
            value: heap_text.clone(),
            why,
        };
        if heap_size < minimum {
            return Err(size_error(format!(
                "{heap_size} bytes is below the minimum of {minimum} bytes for {} PEs (the control region and one allocation)",
                job.npes
            )));
        }
        let heap = SymmetricHeap::create(&gpu, heap_size, job.pe, boot.as_mut(), transport, heap_mapping, nodes.as_deref()).map_err(|e| {
            match e {
                Error::Vulkan { call, result }
                    if matches!(
                        result,
                        ash::vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
                            | ash::vk::Result::ERROR_OUT_OF_HOST_MEMORY
                    ) =>
                {
                    size_error(format!(
                        "the device cannot allocate a heap of {heap_size} bytes ({call}: {result:?}); this device's maxMemoryAllocationSize is {} bytes and the minimum is {minimum} bytes",
                        gpu.info.max_memory_allocation_size
                    ))
                }
                e => e,
            }
        })?;
        let mut alloc = Allocator::new(heap.size(), granule)?;
        // The control region sits at offset 0 of every heap (same size everywhere,
        // so the first allocation lands there on every PE).
        let control = layout::control_bytes(job.npes);
        if alloc.alloc(control, granule)? != 0 {
            return Err(Error::InvalidArgument(
                "the control region must be the heap's first allocation".into(),
            ));
        }
        let mut submit = Submitter::new(&gpu)?;
        let phases = Arc::new(PhaseTimes::new());
        submit.set_phase_times(phases.clone());
        let world = TeamShape::world(job.npes);
        // SHARED: the PEs on this device (reachability is an equivalence, so every
        // member computes the same set).
        let near: Vec<u32> = (0..job.npes).filter(|&p| heap.reachable(p)).collect();
        let shared = TeamShape::from_members(&near).unwrap_or_else(|| {
            tracing::warn!(
                "the PEs on this device ({near:?}) are not a strided set: SHARED is this PE alone"
            );
            TeamShape::single(job.pe)
        });
        // NODE: the PEs of this node (every PE of a job of one node).
        let node = match &nodes {
            None => world,
            Some(n) => {
                let mine: Vec<u32> = (0..job.npes)
                    .filter(|&p| n[p as usize] == n[job.pe as usize])
                    .collect();
                TeamShape::from_members(&mine).ok_or_else(|| {
                    Error::Mpi(format!(
                        "the ranks of this node ({mine:?}) are not a strided set: place the ranks of a node consecutively (mpirun --map-by slot, the default) or set VKSHMEM_NODE_SIZE"
                    ))
                })?
            }
        };
        // The PEs of this node share its cores (a poll takes one while it runs).
        let fence_spin = config::fence_spin_or_auto(
            fence_spin,
            gpu.info.time_sliced,
            node.size,
            std::thread::available_parallelism().map_or(1, |c| c.get()),
        );
        let yield_poll = config::yield_poll_or_auto(yield_poll, fence_spin);
        submit.set_fence_spin(fence_spin, yield_poll);
        submit.set_reuse(reuse_recordings);
        if completion_words {
            submit.set_completion(true)?;
        }
        if let Some(p) = &plane {
            p.set_yield_for(yield_poll);
        }
        // The proxy's way to other nodes (collective: made on every PE).
        #[cfg(feature = "mpi")]
        let mut link: Option<Box<dyn crate::transport::proxy::RemoteLink>> = mpi
            .as_ref()
            .filter(|_| nodes.is_some())
            .map(|m| Box::new(m.proxy_link()) as Box<dyn crate::transport::proxy::RemoteLink>);
        #[cfg(not(feature = "mpi"))]
        let mut link: Option<Box<dyn crate::transport::proxy::RemoteLink>> = None;
        // A proxy carries device code's requests to PEs on other devices: it
        // needs the node segment and a host-mapped heap (it writes the heap
        // through the mapping).
        let own_block = heap.block(job.pe)?.clone();
        let mut proxy = plane.is_some() && (0..job.npes).any(|p| !heap.reachable(p));
        if proxy {
            // Every PE runs one or none (a PE without one would never answer
            // the others' messages): agreed with an allgather.
            let mine = [u8::from(own_block.mapped().is_some())];
            let all = boot
                .as_mut()
                .expect("a plane comes with a bootstrap")
                .allgather(&mine)?;
            proxy = all.iter().all(|v| v.first() == Some(&1));
            if !proxy {
                tracing::warn!(
                    "PE {}: some PE's heap is not host-mapped: no proxy, so device code cannot reach PEs on other devices (host collectives go through staging)",
                    job.pe
                );
            }
        }
        let library = crate::user_kernel::library_config_for(
            &gpu,
            &heap,
            job.pe,
            job.npes,
            proxy,
            // The device library's vec4 view in the host kernels' unit:
            // vec2<u64> made the device forms faster on llvmpipe and
            // compiled no slower (benches/RESULTS.md, "Wide unit on llvmpipe").
            wide_unit == WideUnit::Vec2U64,
        );
        let ctx = Context {
            inner: Arc::new(Inner {
                pe: job.pe,
                npes: job.npes,
                wait_timeout,
                host_mapped_max,
                host_stream,
                leader_submit,
                wide_workgroup,
                wide_unit,
                broken: Mutex::new(None),
                teams: Mutex::new(TeamTable::new(job.pe, world, shared, node)),
                nodes,
                proxy: std::sync::OnceLock::new(),
                plane,
                library,
                queue: std::sync::OnceLock::new(),
                queue_init: Mutex::new(()),
                kernels: Mutex::new(HashMap::new()),
                host_amo: Mutex::new(None),
                library_kernels: Mutex::new(HashMap::new()),
                submit: Mutex::new(submit),
                phases,
                staging: Mutex::new(None),
                staging_imports: Mutex::new(HashMap::new()),
                heap,
                alloc: Mutex::new(alloc),
                boot: Mutex::new(boot),
                #[cfg(feature = "mpi")]
                mpi: Mutex::new(mpi),
                gpu,
            }),
        };
        let words =
            layout::initial_control(job.pe, job.npes, ctx.inner.gpu.info.resident_workgroups);
        ctx.write_bytes(job.pe, 0, bytemuck::cast_slice(&words))?;
        if proxy {
            let plane = ctx.inner.plane.clone().expect("checked above");
            let p = crate::transport::proxy::Proxy::start(
                plane,
                own_block,
                job.pe,
                job.npes,
                crate::collective::combine_for_kind,
                link.take(),
            )?;
            let _ = ctx.inner.proxy.set(p);
        }
        for slot in [layout::TEAM_SHARED, layout::TEAM_NODE] {
            let rec = ctx.teams().record(slot).expect("predefined");
            ctx.write_team_slot(slot, &rec)?;
        }
        // No PE's device code may touch a peer's control region before its owner
        // has initialised it.
        ctx.sync_all()?;
        ctx.prebuild_host_kernels();
        if job.pe == 0 {
            report_at_init(config::init_report(get, &heap_setting));
        }
        Ok(ctx)
    }

    /// Leaves the job (collective): a barrier, then a clean goodbye to the
    /// endpoint. Dropping the last handle without calling this says goodbye too
    /// (without the barrier). Symmetric buffers still alive keep their memory but can
    /// no longer be freed collectively.
    ///
    /// # Errors
    /// As [`Context::barrier_all`] (a clone of a context that has already
    /// finalized gets [`Error::InvalidArgument`]); [`Error::Bootstrap`] when the
    /// goodbye cannot be sent.
    pub fn finalize(self) -> Result<()> {
        self.barrier_all()?;
        let r = match lock(&self.inner.boot).take() {
            Some(b) => b.finalize(),
            None => Ok(()),
        };
        #[cfg(feature = "mpi")]
        if let Some(m) = lock(&self.inner.mpi).as_mut() {
            if r.is_ok() {
                m.finish();
            }
        }
        r
    }

    /// Starts (`true`) or stops timing where this PE's host collectives
    /// spend their time, phase by phase ([`crate::phases`]: the entry
    /// meeting, the run, each submission's recording, `vkQueueSubmit`, fence
    /// wait and GPU time, the closing meeting, the whole call). Off by
    /// default; while on, every submission also takes GPU timestamps.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let src = ctx.calloc::<f32>(1 << 20)?;
    /// let dst = ctx.calloc::<f32>(1 << 20)?;
    /// ctx.set_phase_times(true);
    /// ctx.broadcast(Team::WORLD, &dst.as_slice(), &src.as_slice(), 1 << 20, 0)?;
    /// for p in ctx.take_phase_times() {
    ///     println!("{}: {} x, median {:.1} us", p.phase.name(), p.count, p.median_us);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn set_phase_times(&self, on: bool) {
        self.inner.phases.set(on);
    }

    /// The phases timed since the last call (see
    /// [`Context::set_phase_times`]), each with its count, median and mean;
    /// clears them.
    pub fn take_phase_times(&self) -> Vec<PhaseStat> {
        self.inner.phases.take()
    }

    /// Whether this PE left the job's collectives after a failed launch
    /// ([`Error::Broken`]).
    pub fn is_broken(&self) -> bool {
        lock(&self.inner.broken).is_some()
    }

    /// This PE's number in the world team (`shmem_my_pe`).
    pub fn my_pe(&self) -> u32 {
        self.inner.pe
    }

    /// Number of PEs in the job (`shmem_n_pes`).
    pub fn n_pes(&self) -> u32 {
        self.inner.npes
    }

    /// Whether `[offset, offset + bytes)` lies inside one live symmetric
    /// allocation (a check for slices made with `SymSlice::from_raw`).
    pub(crate) fn is_live(&self, offset: u64, bytes: u64) -> bool {
        lock(&self.inner.alloc).is_live(offset, bytes)
    }

    /// How this PE reaches PE `pe` ([`crate::transport`]): directly through its
    /// heap, or through staging because it is on another device.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = vkshmem_host::Context::init()?;
    /// for pe in 0..ctx.n_pes() {
    ///     println!("PE {pe}: {}", ctx.transport(pe)?.name());
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `pe` is not a PE of the job.
    pub fn transport(&self, pe: u32) -> Result<crate::transport::Transport> {
        self.inner.heap.transport(pe).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "transport: PE {pe} is not a PE of the job ({} PEs)",
                self.n_pes()
            ))
        })
    }

    /// The largest size per member (bytes) for which host collectives may
    /// move their data on the host, through the heap's mapping, instead of a
    /// kernel (`VKSHMEM_HOST_MAPPED_MAX`; 0 where the heap is not mapped or
    /// there is no sync plane): what a benchmark compares such calls with.
    pub fn host_path_max(&self) -> u64 {
        if self.inner.plane.is_none()
            || self
                .own_mapped(vkshmem_device::layout::control_bytes(self.n_pes()), 1)
                .is_none()
        {
            return 0;
        }
        self.inner.host_mapped_max
    }

    /// Size of each PE's symmetric heap in bytes.
    pub fn heap_size(&self) -> u64 {
        self.inner.heap.size()
    }

    /// Facts about the Vulkan device this PE uses.
    pub fn device_info(&self) -> &DeviceInfo {
        &self.inner.gpu.info
    }

    /// Optional device capabilities found and enabled.
    pub fn device_caps(&self) -> &DeviceCaps {
        &self.inner.gpu.caps
    }

    /// Whether this PE can load and store PE `pe`'s symmetric heap directly
    /// (`shmem_addr_accessible` / `shmem_ptr` != NULL): same physical device.
    pub fn pe_accessible(&self, pe: u32) -> bool {
        self.inner.heap.reachable(pe)
    }

    /// The symmetric allocator's granule: every allocation's offset and size is a
    /// multiple of it.
    pub fn granule(&self) -> u64 {
        lock(&self.inner.alloc).granule()
    }

    /// Runs a bootstrap collective, or nothing in a job of one PE without a launcher.
    pub(crate) fn with_boot<T>(
        &self,
        solo: T,
        f: impl FnOnce(&mut Bootstrap) -> Result<T>,
    ) -> Result<T> {
        if let Some(why) = lock(&self.inner.broken).clone() {
            return Err(Error::Broken(why));
        }
        let mut boot = lock(&self.inner.boot);
        match boot.as_mut() {
            Some(b) => f(b),
            None if self.inner.npes == 1 => Ok(solo),
            None => Err(Error::InvalidArgument("this PE has finalized".into())),
        }
    }

    /// Compares `req` across PEs; a difference is [`Error::AllocMismatch`] on all
    /// (every PE compares against PE 0's request, so all report the same words).
    fn agree(&self, req: Request) -> Result<()> {
        let blobs = self
            .with_boot(Vec::new(), |b| b.allgather(bytemuck::bytes_of(&req)))
            .map_err(|e| e.during(req.call()))?;
        let all: Vec<Request> = blobs
            .iter()
            .map(|b| bytemuck::try_pod_read_unaligned(b))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Bootstrap("a PE sent a malformed allocation request".into()))?;
        if let Some((pe, odd)) = all.iter().enumerate().find(|(_, r)| **r != all[0]) {
            return Err(Error::AllocMismatch(format!(
                "PE 0 asked to {}, PE {pe} asked to {}; every PE must make the same symmetric allocation calls",
                all[0].describe(),
                odd.describe()
            )));
        }
        Ok(())
    }

    /// Allocates `len` elements of `T` at the same offset on every PE
    /// (`shmem_malloc`). Collective; contents are undefined.
    ///
    /// # Errors
    /// [`Error::AllocMismatch`] when the PEs asked for different things (on every
    /// PE), [`Error::HeapExhausted`] when there is no room (on every PE),
    /// [`Error::InvalidArgument`] when `len` elements of `T` overflow 64 bits or `T`
    /// is zero-sized; [`Error::PeerFailed`] when a PE dies during the agreement,
    /// [`Error::Broken`] after a failed launch (see [`Context::launch`]).
    pub fn malloc<T: bytemuck::Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        self.align(std::mem::align_of::<T>() as u64, len)
    }

    /// Like [`Context::malloc`] with the offset a multiple of `align`
    /// (`shmem_align`; a power of two). Its host address in a mapped heap
    /// ([`Context::heap_base`] plus the offset) is aligned as much, up to
    /// [`Context::heap_mapping_align`].
    ///
    /// # Errors
    /// As [`Context::malloc`]; [`Error::InvalidArgument`] when `align` is not a power
    /// of two (on every PE that passed it, before any communication).
    pub fn align<T: bytemuck::Pod>(&self, align: u64, len: usize) -> Result<SymBuffer<T>> {
        if std::mem::size_of::<T>() == 0 {
            return Err(Error::InvalidArgument(format!(
                "symmetric buffers of the zero-sized type {} hold no bytes",
                std::any::type_name::<T>()
            )));
        }
        let bytes = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{len} elements overflow the address space"))
            })?;
        if !align.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "alignment {align} is not a power of two"
            )));
        }
        self.agree(Request {
            op: OP_MALLOC,
            _pad: 0,
            a: bytes,
            b: align,
        })?;
        let offset = lock(&self.inner.alloc).alloc(bytes, align)?;
        Ok(SymBuffer::new(self.clone(), offset, len))
    }

    /// Like [`Context::malloc`], with every element zero on every PE on return
    /// (`shmem_calloc`).
    ///
    /// # Errors
    /// As [`Context::malloc`]; Vulkan errors from zeroing the block.
    pub fn calloc<T: bytemuck::Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        let buf = self.malloc::<T>(len)?;
        let rounded = lock(&self.inner.alloc)
            .allocation_len(buf.offset())
            .expect("just allocated");
        let own = self.inner.heap.block(self.inner.pe)?;
        lock(&self.inner.submit).fill(own.buffer, buf.offset(), rounded, 0)?;
        // No PE may write into the new block before its owner has zeroed it.
        self.sync_all()?;
        Ok(buf)
    }

    /// Frees the allocation at `offset` on every PE (collective, `shmem_free`).
    pub(crate) fn free_offset(&self, offset: u64) -> Result<()> {
        self.agree(Request {
            op: OP_FREE,
            _pad: 0,
            a: offset,
            b: 0,
        })?;
        lock(&self.inner.alloc).free(offset)
    }

    /// Completes this PE's outstanding memory updates (`shmem_quiet`). Host-initiated
    /// operations of this version wait for their device work before returning, so
    /// this is a full memory fence for the host's own stores through the mapping.
    /// It cannot fail (the `Result` leaves room for outstanding operations).
    pub fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(p) = self.inner.proxy.get() {
            // Device code's posted stores to PEs on other devices.
            p.quiet()?;
        }
        Ok(())
    }

    /// Waits until every PE has called it, after completing this PE's outstanding
    /// memory updates (`shmem_barrier_all`): stores made before it, by the host or by
    /// finished dispatches, are visible to every PE after it.
    ///
    /// # Errors
    /// [`Error::PeerFailed`] when another PE dies or leaves first,
    /// [`Error::Broken`] after a failed launch (see [`Context::launch`]),
    /// [`Error::InvalidArgument`] on a clone of a context that has finalized,
    /// [`Error::Bootstrap`] when the job's endpoint cannot be reached.
    pub fn barrier_all(&self) -> Result<()> {
        self.quiet()?;
        let m = self.members(Team::WORLD)?;
        self.sync_members(&m, "barrier_all")
            .map_err(|e| e.during("barrier_all"))?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// Waits until every PE has called it (`shmem_sync_all`). Unlike
    /// [`Context::barrier_all`] it does not promise completion of outstanding
    /// remote updates; host stores through the mapping are still ordered.
    ///
    /// # Errors
    /// As [`Context::barrier_all`].
    pub fn sync_all(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        let m = self.members(Team::WORLD)?;
        self.sync_members(&m, "sync_all")
            .map_err(|e| e.during("sync_all"))?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// The proxy, when PE `pe` is on another device and this PE runs one
    /// (host access to `pe`'s heap then goes through it).
    pub(crate) fn proxied(&self, pe: u32) -> Option<&crate::transport::proxy::Proxy> {
        if matches!(
            self.inner.heap.transport(pe),
            Some(crate::transport::Transport::Staged | crate::transport::Transport::Remote)
        ) {
            self.inner.proxy.get()
        } else {
            None
        }
    }

    /// Checks that `[offset, offset+bytes)` lies in the heap.
    fn check_size(&self, offset: u64, bytes: u64) -> Result<()> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.inner.heap.size() => Ok(()),
            _ => Err(Error::InvalidArgument(format!(
                "range of {bytes} bytes at offset {offset} runs past the symmetric heap ({} bytes)",
                self.inner.heap.size()
            ))),
        }
    }

    /// Checks that `[offset, offset+bytes)` lies in PE `pe`'s reachable heap.
    pub(crate) fn check_range(
        &self,
        pe: u32,
        offset: u64,
        bytes: u64,
    ) -> Result<&Arc<crate::vk::memory::SharedMemory>> {
        let block = self.inner.heap.block(pe)?;
        self.check_size(offset, bytes)?;
        Ok(block)
    }

    /// Copies bytes from PE `pe`'s heap at `offset` into `dst`.
    pub(crate) fn read_bytes(&self, pe: u32, offset: u64, dst: &mut [u8]) -> Result<()> {
        if let Some(proxy) = self.proxied(pe) {
            self.check_size(offset, dst.len() as u64)?;
            return proxy.get(pe, offset, dst);
        }
        let block = self.check_range(pe, offset, dst.len() as u64)?;
        if let Some(base) = block.mapped() {
            // SAFETY: the range lies inside the mapped block (check_range). Other PEs
            // and the device may write it concurrently; we copy raw bytes without
            // creating references to the shared memory, and Pod types accept any bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    base.as_ptr().add(offset as usize),
                    dst.as_mut_ptr(),
                    dst.len(),
                )
            };
            return Ok(());
        }
        self.staged(|sub, st| {
            for (i, chunk) in dst.chunks_mut(st.size() as usize).enumerate() {
                let at = offset + (i as u64) * st.size();
                sub.copy(block.buffer, at, st.buffer, 0, chunk.len() as u64)?;
                // SAFETY: the copy finished (submit waits) and made the bytes
                // host-visible; the staging mapping holds at least chunk.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        st.ptr().as_ptr(),
                        chunk.as_mut_ptr(),
                        chunk.len(),
                    )
                };
            }
            Ok(())
        })
    }

    /// Copies `src` into PE `pe`'s heap at `offset`.
    pub(crate) fn write_bytes(&self, pe: u32, offset: u64, src: &[u8]) -> Result<()> {
        if let Some(proxy) = self.proxied(pe) {
            self.check_size(offset, src.len() as u64)?;
            return proxy.put(pe, offset, src);
        }
        let block = self.check_range(pe, offset, src.len() as u64)?;
        if let Some(base) = block.mapped() {
            // SAFETY: as in read_bytes; the destination range is inside the mapping.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr(),
                    base.as_ptr().add(offset as usize),
                    src.len(),
                )
            };
            return Ok(());
        }
        self.staged(|sub, st| {
            for (i, chunk) in src.chunks(st.size() as usize).enumerate() {
                let at = offset + (i as u64) * st.size();
                // SAFETY: the staging mapping holds at least chunk.len() bytes and no
                // transfer is using it (the previous copy was waited for).
                unsafe {
                    std::ptr::copy_nonoverlapping(chunk.as_ptr(), st.ptr().as_ptr(), chunk.len())
                };
                sub.copy(st.buffer, 0, block.buffer, at, chunk.len() as u64)?;
            }
            Ok(())
        })
    }

    /// Zeros `bytes` bytes of this PE's heap at `offset`: through the host's
    /// mapping up to `VKSHMEM_HOST_MAPPED_MAX`, else by the device
    /// (`vkCmdFillBuffer` over the 4-byte words inside the range, the up to
    /// 3 bytes at either end written from the host), so that a large range of
    /// an unmapped heap costs no copy through host memory, which for a
    /// large scan on a GPU took far longer than the scan.
    pub(crate) fn zero_own(&self, offset: u64, bytes: u64) -> Result<()> {
        let pe = self.my_pe();
        let block = self.check_range(pe, offset, bytes)?;
        if let Some(base) = block
            .mapped()
            .filter(|_| bytes <= self.inner.host_mapped_max)
        {
            // SAFETY: the range lies inside the mapped block (check_range);
            // raw bytes are written without references to the shared memory.
            unsafe { std::ptr::write_bytes(base.as_ptr().add(offset as usize), 0, bytes as usize) };
            return Ok(());
        }
        let end = offset + bytes;
        let (first, last) = words_inside(offset, end);
        if last > first {
            lock(&self.inner.submit).fill(block.buffer, first, last - first, 0)?;
        }
        for (at, n) in [(offset, first - offset), (last, end - last)] {
            if n > 0 {
                self.write_bytes(pe, at, &[0u8; 3][..n as usize])?;
            }
        }
        Ok(())
    }

    fn staged(&self, f: impl FnOnce(&mut Submitter, &Staging) -> Result<()>) -> Result<()> {
        let mut st = lock(&self.inner.staging);
        if st.is_none() {
            *st = Some(Staging::new(&self.inner.gpu, STAGING_BYTES)?);
        }
        let mut sub = lock(&self.inner.submit);
        f(&mut sub, st.as_ref().expect("created above"))
    }

    /// Builds a compute kernel from SPIR-V with `bindings` storage buffers in set 0
    /// and `push_bytes` of push constants.
    ///
    /// The module is parsed and checked for what would otherwise be undefined
    /// behaviour in the driver: a SPIR-V header, a `GLCompute` entry point named
    /// `entry`, every resource in set 0 at a binding below `bindings`, and no push
    /// constants unless `push_bytes` > 0. It is not otherwise validated: pass
    /// modules from a validating compiler (as [`crate::Kernel`]s from WGSL are).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a module that fails those checks, more
    /// bindings than the device's `maxPerStageDescriptorStorageBuffers`, or
    /// `push_bytes` that is not a multiple of 4 or exceeds
    /// `maxPushConstantsSize`; Vulkan errors.
    pub fn kernel_from_spirv(
        &self,
        spirv: &[u32],
        entry: &str,
        bindings: u32,
        push_bytes: u32,
    ) -> Result<Kernel> {
        check_spirv(spirv, entry, bindings, push_bytes)?;
        Kernel::new(&self.inner.gpu, spirv, entry, &[bindings], push_bytes)
    }

    /// Runs `kernel` on this PE's device over `groups` workgroups, with heap
    /// `windows` bound to its bindings 0..n (any reachable PE's heap) and `push` as
    /// push constants, and waits for it to finish.
    ///
    /// # Errors
    /// [`Error::Unreachable`] for a window on a PE this PE cannot reach,
    /// [`Error::InvalidArgument`] for a window outside the heap, empty, misaligned
    /// (offsets must be multiples of the device's `minStorageBufferOffsetAlignment`;
    /// [`Context::granule`] always is) or larger than the device's
    /// `maxStorageBufferRange`, a binding/push-constant count mismatch, a
    /// workgroup count of 0 or over the device's `maxComputeWorkGroupCount`, or a
    /// kernel built on another context's device; Vulkan errors.
    pub fn dispatch(
        &self,
        kernel: &Kernel,
        groups: [u32; 3],
        windows: &[HeapWindow],
        push: &[u8],
    ) -> Result<()> {
        let bound = self.bind_windows(windows)?;
        self.check_groups(groups)?;
        lock(&self.inner.submit)
            .dispatch(kernel, groups, &[&bound], push, false, &mut |_| None)
            .map(|_| ())
    }

    /// Checks heap windows for binding and resolves them to buffers.
    pub(crate) fn bind_windows(&self, windows: &[HeapWindow]) -> Result<Vec<Window>> {
        let info = &self.inner.gpu.info;
        let mut bound = Vec::with_capacity(windows.len());
        for w in windows {
            let block = self.check_range(w.pe, w.offset, w.bytes)?;
            if w.offset % info.min_storage_offset_alignment != 0 {
                return Err(Error::InvalidArgument(format!(
                    "window offset {} is not a multiple of the device's storage offset alignment {}",
                    w.offset, info.min_storage_offset_alignment
                )));
            }
            if w.bytes == 0 || w.bytes > info.max_storage_buffer_range {
                return Err(Error::InvalidArgument(format!(
                    "window of {} bytes: must be 1 to {} bytes (maxStorageBufferRange)",
                    w.bytes, info.max_storage_buffer_range
                )));
            }
            bound.push(Window {
                buffer: block.buffer,
                offset: w.offset,
                range: w.bytes,
            });
        }
        Ok(bound)
    }

    /// Workgroups of one dispatch this device is known to run at once: the
    /// most a kernel calling a multi-workgroup device collective
    /// (`shmemx_*_work_groups`) may be launched over
    /// ([`crate::vk::DeviceInfo::resident_workgroups`]: llvmpipe's compute threads,
    /// NVIDIA's SMs, AMD's compute units, else 1, or
    /// `VKSHMEM_RESIDENT_WORKGROUPS`).
    pub fn resident_workgroups(&self) -> u32 {
        self.inner.gpu.info.resident_workgroups
    }

    /// Whether this PE asks that the first member of a team on its device
    /// submit every member's part of a host collective in one submission (`VKSHMEM_SUBMIT`; `auto`: on drivers that time-slice
    /// processes, NVIDIA's, where each process's submission costs a context
    /// switch). A team takes it when every member asks for it.
    pub fn leader_submits(&self) -> bool {
        self.inner.leader_submit
    }

    /// Invocations per workgroup of the host collectives' wide copies and
    /// pushes (the vec4 loops that move large messages; the reductions keep
    /// [`vkshmem_device::collectives::WIDE_REDUCE_WORKGROUP`]):
    /// `VKSHMEM_WIDE_WORKGROUP`, by
    /// default 64 on llvmpipe and
    /// [`vkshmem_device::collectives::WIDE_WORKGROUP_GPU`] elsewhere, within
    /// the device's limits.
    pub fn wide_workgroup(&self) -> u32 {
        self.inner.wide_workgroup
    }

    /// The element the host collectives' wide kernels move:
    /// `VKSHMEM_WIDE_UNIT`, by default [`WideUnit::Vec2U64`] on llvmpipe
    /// (where the device has `shaderInt64`) and [`WideUnit::Vec4U32`]
    /// elsewhere. For benchmarks that build the library's wide kernels as
    /// its collectives do (the bench's roofline).
    pub fn wide_unit(&self) -> WideUnit {
        self.inner.wide_unit
    }

    /// Whether device code may wait for other PEs: false when two PEs of
    /// one node share a device whose driver cannot keep several processes'
    /// kernels moving while one spins
    /// ([`crate::vk::DeviceInfo::cross_process_waits`]; NVIDIA's proprietary
    /// driver), whatever the transport mode. The same answer on every PE of
    /// the job (agreed when the heap was created), so the PEs refuse alike.
    /// Where false, kernels that wait on peers (device-initiated
    /// collectives, `shmem_wait_until` on a peer's signal) and queue-ordered
    /// collectives of more than one member are refused with
    /// [`Error::Unsupported`]; the host-initiated collectives work.
    pub fn device_waits_across_processes(&self) -> bool {
        !self.inner.heap.device_waits_blocked()
    }

    /// The error of a device wait on a process that shares this device,
    /// where [`Context::device_waits_across_processes`] is false.
    pub(crate) fn no_cross_process_waits(&self, what: &str) -> Error {
        Error::Unsupported {
            device: self.inner.gpu.info.name.clone(),
            what: format!(
                "{what}: device code that waits for PEs of other processes on this device (the driver cannot switch away from a kernel that spins on another process: Xid 109, CTX SWITCH TIMEOUT, and the context is lost). Use the host-initiated collectives, one PE per device, or VKSHMEM_CROSS_PROCESS_WAITS=1 to try anyway"
            ),
        }
    }

    pub(crate) fn check_groups(&self, groups: [u32; 3]) -> Result<()> {
        let max = self.inner.gpu.info.max_workgroups;
        if groups.contains(&0) || groups.iter().zip(max).any(|(&g, m)| g > m) {
            return Err(Error::InvalidArgument(format!(
                "workgroup count {groups:?}: each must be at least 1 and at most {max:?} (maxComputeWorkGroupCount)"
            )));
        }
        Ok(())
    }

    /// Submits an empty command buffer and waits for it: the floor of every
    /// host-initiated device operation, for benchmarks.
    ///
    /// # Errors
    /// Vulkan errors.
    pub fn empty_submit(&self) -> Result<()> {
        lock(&self.inner.submit).empty()
    }
}

/// The checks [`Context::kernel_from_spirv`] makes before handing a module to the
/// driver (pure).
fn check_spirv(spirv: &[u32], entry: &str, bindings: u32, push_bytes: u32) -> Result<()> {
    use rspirv::dr::Operand;
    use rspirv::spirv::{Decoration, ExecutionModel, Op, StorageClass};
    let bad = |why: String| Err(Error::InvalidArgument(format!("SPIR-V module: {why}")));
    if spirv.len() < 5 || spirv[0] != rspirv::spirv::MAGIC_NUMBER {
        return bad(format!(
            "no SPIR-V header ({} words, first {:#x?})",
            spirv.len(),
            spirv.first()
        ));
    }
    let m = match rspirv::dr::load_words(spirv) {
        Ok(m) => m,
        Err(e) => return bad(format!("malformed: {e}")),
    };
    let computes: Vec<&str> = m
        .entry_points
        .iter()
        .filter_map(|e| match e.operands.as_slice() {
            [Operand::ExecutionModel(ExecutionModel::GLCompute), _, Operand::LiteralString(n), ..] => {
                Some(n.as_str())
            }
            _ => None,
        })
        .collect();
    if !computes.contains(&entry) {
        return bad(format!(
            "no compute entry point {entry:?} (it has {computes:?})"
        ));
    }
    for d in m
        .annotations
        .iter()
        .filter(|i| i.class.opcode == Op::Decorate)
    {
        match d.operands.as_slice() {
            [Operand::IdRef(id), Operand::Decoration(Decoration::DescriptorSet), Operand::LiteralBit32(set)]
                if *set != 0 =>
            {
                return bad(format!(
                    "resource %{id} is in descriptor set {set}; kernels bind set 0 only"
                ));
            }
            [Operand::IdRef(id), Operand::Decoration(Decoration::Binding), Operand::LiteralBit32(b)]
                if *b >= bindings =>
            {
                return bad(format!(
                    "resource %{id} is at binding {b}; the kernel was given {bindings} bindings"
                ));
            }
            _ => {}
        }
    }
    let pushes = m.types_global_values.iter().any(|i| {
        i.class.opcode == Op::Variable
            && i.operands.first() == Some(&Operand::StorageClass(StorageClass::PushConstant))
    });
    if pushes && push_bytes == 0 {
        return bad("it declares push constants; the kernel was given 0 bytes of them".into());
    }
    Ok(())
}

/// The 4-byte words inside the byte range `start..end`, as `first..last`
/// (empty, at the range's end or its first word boundary, where no whole
/// word fits): what `vkCmdFillBuffer` may fill of it.
fn words_inside(start: u64, end: u64) -> (u64, u64) {
    let first = start.next_multiple_of(4).min(end);
    (first, (end & !3).max(first))
}

#[cfg(test)]
mod tests {
    #[test]
    fn words_inside_leave_at_most_3_bytes_at_each_end() {
        for start in 0..12u64 {
            for end in start..24 {
                let (first, last) = super::words_inside(start, end);
                assert!(start <= first && first <= last && last <= end);
                assert!(first % 4 == 0 || first == end, "{start}..{end}");
                assert!(last % 4 == 0 || last == first, "{start}..{end}");
                assert!(first - start < 4 && end - last < 4, "{start}..{end}");
                // Every whole word inside the range is filled.
                let words = (start..end).filter(|b| b % 4 == 0 && b + 4 <= end).count() as u64;
                assert_eq!(last - first, 4 * words, "{start}..{end}");
            }
        }
    }

    use super::check_spirv;
    use crate::error::Error;

    fn wgsl(src: &str) -> Vec<u32> {
        vkshmem_device::compile_wgsl(src, "t.wgsl").expect("valid WGSL")
    }

    const ONE_BINDING: &str = "@group(0) @binding(0) var<storage, read_write> a: array<u32>;
        @compute @workgroup_size(1) fn main() { a[0] = 1u; }";

    #[test]
    fn spirv_checks_reject_what_the_driver_cannot_take() {
        let words = wgsl(ONE_BINDING);
        assert!(check_spirv(&words, "main", 1, 0).is_ok());
        let invalid = |r: crate::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
        assert!(invalid(check_spirv(&[], "main", 1, 0)));
        assert!(invalid(check_spirv(&[0xdead_beef; 16], "main", 1, 0)));
        assert!(invalid(check_spirv(
            &words[..words.len() / 2],
            "main",
            1,
            0
        )));
        assert!(invalid(check_spirv(&words, "other", 1, 0)));
        assert!(invalid(check_spirv(&words, "main", 0, 0)));
        let set1 = wgsl(&ONE_BINDING.replace("@group(0)", "@group(1)"));
        assert!(invalid(check_spirv(&set1, "main", 1, 0)));
        let push = wgsl(
            "struct P { x: u32 } var<immediate> p: P;
             @group(0) @binding(0) var<storage, read_write> a: array<u32>;
             @compute @workgroup_size(1) fn main() { a[0] = p.x; }",
        );
        assert!(invalid(check_spirv(&push, "main", 1, 0)));
        assert!(check_spirv(&push, "main", 1, 4).is_ok());
    }
}
