//! Joining the job (`init`, `init_as`, `init_on_device`) and leaving it
//! (`finalize`).

use super::{lock, Runtime};
use crate::alloc::Allocator;
use crate::bootstrap::Bootstrap;
use crate::config;
use crate::driver::{self, DriverSettings};
use crate::error::{Error, Result};
use crate::heap::SymmetricHeap;
use crate::kernels::library::FirstKernels;
use crate::phases::PhaseTimes;
use crate::sync::segment::Segment;
use crate::sync::{Plane, WaitPolicy};
use crate::team::{TeamShape, TeamTable};
use crate::transport::proxy::RemoteLink;
use crate::vk::submit::Submitter;
use crate::vk::Gpu;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vkshmem_device::collectives::WideUnit;
use vkshmem_device::layout;

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

impl Runtime {
    /// Joins the job with the device `open` gives, as `given` (a thread-PE's
    /// place in the job) or else as the launcher's hand-over says; every
    /// setting comes from the environment. Each step is a function below.
    pub(crate) fn init_with(
        open: impl FnOnce(u32, Option<PathBuf>) -> Result<Gpu>,
        given: Option<&config::JobEnv>,
        first: FirstKernels,
    ) -> Result<Arc<Runtime>> {
        let get = &config::env;
        let s = Settings::read(get)?;
        let mut j = join(get, &s, given)?;
        let (pe, npes) = (j.job.pe, j.job.npes);
        if let Some(conflict) = s.heap.conflict.as_deref().filter(|_| pe == 0) {
            config::warn_user(conflict);
        }
        let (mut gpu, driver_threads) = driver::open(|| open(pe, s.cache_dir.clone()))?;
        driver::apply(&mut gpu.info, &s.driver);
        let gpu = Arc::new(gpu);
        let t = tune(&gpu, &s)?;
        let (heap, alloc) = make_heap(&gpu, &s, &mut j, t.granule)?;
        let teams = team_table(&j, &heap)?;
        let node_size = teams.record(layout::TEAM_NODE).map_or(1, |r| r.shape.size);
        let (submit, phases) = make_submitter(&gpu, &s, node_size, j.plane.as_deref())?;
        let own_block = heap.block(pe)?.clone();
        let proxy = agree_on_proxy(&mut j, &heap, own_block.mapped().is_some())?;
        let link = remote_link(&j);
        let job = job_view_of(&heap, pe, npes);
        let library = library_config_for(
            &gpu,
            &job,
            proxy,
            // The device library's vec4 view in the host kernels' unit:
            // vec2<u64> made the device forms faster on llvmpipe and
            // compiled no slower (benches/RESULTS.md, "Wide unit on llvmpipe").
            t.wide_unit == WideUnit::Vec2U64,
        );
        let rt = Arc::new(Runtime {
            pe,
            npes,
            wait_timeout: s.wait_timeout,
            host_mapped_max: t.host_mapped_max,
            host_stream: s.host_stream,
            record: s.record,
            // A PE started alone merges its own part (nobody else will).
            tracer: s
                .trace
                .clone()
                .map(|p| crate::trace::Tracer::new(p, pe, npes == 1 && given.is_none())),
            leader_submit: t.leader_submit,
            wide_workgroup: t.wide_workgroup,
            wide_unit: t.wide_unit,
            broken: Mutex::new(None),
            teams: Mutex::new(teams),
            nodes: j.nodes,
            proxy: std::sync::OnceLock::new(),
            plane: j.plane,
            library,
            job,
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
            boot: Mutex::new(j.boot),
            #[cfg(feature = "mpi")]
            mpi: Mutex::new(j.mpi),
            driver_threads: Arc::new(driver_threads),
            gpu,
        });
        rt.start(proxy.then_some(own_block), link, first)?;
        if pe == 0 {
            report_at_init(config::init_report(get, &s.heap));
        }
        Ok(rt)
    }

    /// The last steps of `init`, on the made context: this PE's control
    /// region, its proxy (`own_block`: where one runs), the predefined
    /// teams' slots, a sync of every PE, the background kernel builds.
    fn start(
        &self,
        own_block: Option<Arc<crate::vk::memory::SharedMemory>>,
        link: Option<Box<dyn RemoteLink>>,
        first: FirstKernels,
    ) -> Result<()> {
        let (pe, npes) = (self.my_pe(), self.n_pes());
        let init = self.job.control_init(self.gpu.info.resident_workgroups);
        let words = layout::initial_control(&init);
        self.write_bytes(pe, 0, bytemuck::cast_slice(&words))?;
        if let Some(block) = own_block {
            let plane = self.plane.clone().expect("a proxy comes with a plane");
            let p = crate::transport::proxy::Proxy::start(
                plane,
                block,
                pe,
                npes,
                crate::combine::combine_for_kind,
                link,
            )?;
            let _ = self.proxy.set(p);
        }
        for slot in [layout::TEAM_SHARED, layout::TEAM_NODE] {
            let rec = self.teams().record(slot).expect("predefined");
            self.write_team_slot(slot, &rec)?;
        }
        // No PE's device code may touch a peer's control region before its owner
        // has initialised it.
        self.sync_all()?;
        self.prebuild_host_kernels(first);
        Ok(())
    }

    /// Leaves the job: a barrier, then the goodbye ([`crate::Context::finalize`]).
    pub(crate) fn finalize(&self) -> Result<()> {
        self.barrier_all()?;
        let r = match lock(&self.boot).take() {
            Some(b) => b.finalize(),
            None => Ok(()),
        };
        #[cfg(feature = "mpi")]
        if let Some(m) = lock(&self.mpi).as_mut() {
            if r.is_ok() {
                m.finish();
            }
        }
        r
    }
}

/// What `init` reads from the settings before it knows the job's device.
struct Settings {
    wait_timeout: Option<Duration>,
    fence_spin: Option<Duration>,
    yield_poll: Option<Duration>,
    heap: config::HeapSize,
    host_mapped_max: Option<u64>,
    submit: Option<bool>,
    host_stream: Option<bool>,
    reuse_recordings: bool,
    record: bool,
    trace: Option<PathBuf>,
    completion_words: bool,
    wide_workgroup: Option<u32>,
    wide_unit: Option<WideUnit>,
    transport: crate::transport::Mode,
    heap_mapping: bool,
    driver: DriverSettings,
    /// Where the pipeline cache, profiles and compile turns are kept.
    cache_dir: Option<PathBuf>,
}

impl Settings {
    /// Reads and checks every setting `init` needs, through `get`.
    fn read(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
        Ok(Settings {
            wait_timeout: config::wait_timeout(get)?,
            fence_spin: config::fence_spin(get)?,
            yield_poll: config::yield_poll(get)?,
            heap: config::heap_size_setting(get)?,
            host_mapped_max: config::host_mapped_max(get)?,
            submit: config::submit(get)?,
            host_stream: config::host_stream(get)?,
            reuse_recordings: config::reuse_recordings(get)?,
            record: config::record(get)?,
            trace: config::trace(get),
            completion_words: config::completion_words(get)?,
            wide_workgroup: config::wide_workgroup(get)?,
            wide_unit: config::wide_unit(get)?,
            transport: crate::transport::Mode::from_env(get)?,
            heap_mapping: config::heap_mapping(get)?,
            driver: DriverSettings {
                resident_workgroups: config::resident_workgroups(get),
                lp_num_threads: config::lp_num_threads(get),
                cross_process_waits: config::cross_process_waits(get),
            },
            cache_dir: config::pipeline_cache_dir(get),
        })
    }
}

/// The job this PE joined: its place, every PE's node (in a job of several
/// nodes), the endpoint and the node segment.
struct Joined {
    job: config::JobEnv,
    nodes: Option<Vec<u32>>,
    boot: Option<Bootstrap>,
    plane: Option<Arc<Plane>>,
    #[cfg(feature = "mpi")]
    mpi: Option<crate::bootstrap::mpi::MpiJob>,
}

/// Joins the job: as `given`, as an MPI rank, or from the launcher's
/// hand-over (a job of one PE without it); connects to the endpoint and
/// maps the node segment.
fn join(
    get: &dyn Fn(&str) -> Option<String>,
    s: &Settings,
    given: Option<&config::JobEnv>,
) -> Result<Joined> {
    #[cfg(feature = "mpi")]
    let (job, mpi) = match given {
        Some(job) => (job.clone(), None),
        None if config::mpi_launch(&get) => {
            let (job, m) = crate::bootstrap::mpi::join(get, s.wait_timeout)?;
            (job, Some(m))
        }
        None => (config::job_env(get)?, None),
    };
    #[cfg(feature = "mpi")]
    let nodes: Option<Vec<u32>> = mpi
        .as_ref()
        .filter(|m| m.several_nodes())
        .map(|m| m.nodes().to_vec());
    #[cfg(not(feature = "mpi"))]
    let (job, nodes) = match given {
        Some(job) => (job.clone(), None),
        None => (config::job_env(get)?, None),
    };
    let policy = WaitPolicy::from_env(get, job.npes)?;
    let mut boot = match &job.bootstrap {
        Some((endpoint, secret)) => Some(Bootstrap::connect(endpoint, secret, job.pe, job.npes)?),
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
            s.wait_timeout,
        ))),
        Some(None) => {
            return Err(Error::Bootstrap(
                "the endpoint sent no node segment (launcher from another version?)".into(),
            ))
        }
        None => None,
    };
    Ok(Joined {
        job,
        nodes,
        boot,
        plane,
        #[cfg(feature = "mpi")]
        mpi,
    })
}

/// The choices that depend on the device.
struct Tuned {
    host_mapped_max: u64,
    leader_submit: bool,
    wide_workgroup: u32,
    wide_unit: WideUnit,
    /// The heap's allocation granule: the device's storage offset
    /// alignment, at least 256 bytes, a power of two.
    granule: u64,
}

/// The settings' defaults on `gpu`, and what it cannot run refused.
fn tune(gpu: &Gpu, s: &Settings) -> Result<Tuned> {
    Ok(Tuned {
        host_mapped_max: s.host_mapped_max.unwrap_or(match gpu.info.kind {
            crate::vk::select::Kind::Discrete => config::HOST_MAPPED_MAX_BAR,
            crate::vk::select::Kind::Cpu => config::HOST_MAPPED_MAX_CPU,
            _ => config::HOST_MAPPED_MAX_HOST_MEMORY,
        }),
        leader_submit: s.submit.unwrap_or(gpu.info.time_sliced),
        wide_workgroup: wide_workgroup_for(&gpu.info, s.wide_workgroup)?,
        wide_unit: wide_unit_for(&gpu.info, gpu.caps.int64, s.wide_unit)?,
        granule: gpu
            .info
            .min_storage_offset_alignment
            .max(256)
            .next_power_of_two(),
    })
}

/// Creates and exchanges the symmetric heap, and its allocator with the
/// control region as the first allocation; a heap too small or too large
/// for the device is a [`Error::Config`](crate::Error::Config) naming the setting.
fn make_heap(
    gpu: &Arc<Gpu>,
    s: &Settings,
    j: &mut Joined,
    granule: u64,
) -> Result<(SymmetricHeap, Allocator)> {
    let (pe, npes) = (j.job.pe, j.job.npes);
    let heap_size = s.heap.bytes;
    let (heap_var, heap_text) = s
        .heap
        .from
        .clone()
        .unwrap_or((config::ENV_HEAP_SIZE, "(default)".into()));
    // The control region plus one allocation (every PE computes the same).
    let minimum = layout::control_bytes(npes).next_multiple_of(granule) + granule;
    let size_error = |why: String| Error::Config {
        var: heap_var,
        value: heap_text.clone(),
        why,
    };
    if heap_size < minimum {
        return Err(size_error(format!(
            "{heap_size} bytes is below the minimum of {minimum} bytes for {npes} PEs (the control region and one allocation)"
        )));
    }
    let heap = SymmetricHeap::create(
        gpu,
        heap_size,
        pe,
        j.boot.as_mut(),
        s.transport,
        s.heap_mapping,
        j.nodes.as_deref(),
    )
    .map_err(|e| match e {
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
    })?;
    let mut alloc = Allocator::new(heap.size(), granule)?;
    // The control region sits at offset 0 of every heap (same size everywhere,
    // so the first allocation lands there on every PE).
    if alloc.alloc(layout::control_bytes(npes), granule)? != 0 {
        return Err(Error::InvalidArgument(
            "the control region must be the heap's first allocation".into(),
        ));
    }
    Ok((heap, alloc))
}

/// The predefined teams: WORLD, SHARED (the PEs on this device) and NODE
/// (the PEs of this node).
fn team_table(j: &Joined, heap: &SymmetricHeap) -> Result<TeamTable> {
    let (pe, npes) = (j.job.pe, j.job.npes);
    let world = TeamShape::world(npes);
    // Reachability is an equivalence, so every member computes the same set.
    let near: Vec<u32> = (0..npes).filter(|&p| heap.reachable(p)).collect();
    let shared = TeamShape::from_members(&near).unwrap_or_else(|| {
        tracing::warn!(
            "the PEs on this device ({near:?}) are not a strided set: SHARED is this PE alone"
        );
        TeamShape::single(pe)
    });
    let node = match &j.nodes {
        None => world,
        Some(n) => {
            let mine: Vec<u32> = (0..npes)
                .filter(|&p| n[p as usize] == n[pe as usize])
                .collect();
            TeamShape::from_members(&mine).ok_or_else(|| {
                Error::Mpi(format!(
                    "the ranks of this node ({mine:?}) are not a strided set: place the ranks of a node consecutively (mpirun --map-by slot, the default) or set VKSHMEM_NODE_SIZE"
                ))
            })?
        }
    };
    Ok(TeamTable::new(
        pe,
        world,
        shared,
        node,
        crate::sync::layout::ACTIVE_SLOTS as u32,
    ))
}

/// This PE's submitter, with its fence waits tuned to the `node_size` PEs
/// that share this node's cores (a poll takes one while it runs), and the
/// phase timer it shares.
fn make_submitter(
    gpu: &Arc<Gpu>,
    s: &Settings,
    node_size: u32,
    plane: Option<&Plane>,
) -> Result<(Submitter, Arc<PhaseTimes>)> {
    let mut submit = Submitter::new(gpu)?;
    let phases = Arc::new(PhaseTimes::new());
    submit.set_phase_times(phases.clone());
    let fence_spin = config::fence_spin_or_auto(
        s.fence_spin,
        gpu.info.time_sliced,
        node_size,
        std::thread::available_parallelism().map_or(1, |c| c.get()),
    );
    let yield_poll = config::yield_poll_or_auto(s.yield_poll, fence_spin);
    submit.set_fence_spin(fence_spin, yield_poll);
    submit.set_reuse(s.reuse_recordings);
    if s.completion_words {
        submit.set_completion(true)?;
    }
    if let Some(p) = plane {
        p.set_yield_for(yield_poll);
    }
    Ok((submit, phases))
}

/// Whether this PE runs a proxy thread, which carries device code's
/// requests to PEs on other devices: where some PE is on another device, a
/// node segment exists, and every PE's heap is host-mapped (`mapped`: this
/// one's), since the proxy writes the heap through the mapping. Every PE
/// runs one or none (a PE without one would never answer the others'
/// messages), agreed with an allgather.
fn agree_on_proxy(j: &mut Joined, heap: &SymmetricHeap, mapped: bool) -> Result<bool> {
    let (pe, npes) = (j.job.pe, j.job.npes);
    if j.plane.is_none() || (0..npes).all(|p| heap.reachable(p)) {
        return Ok(false);
    }
    let all = j
        .boot
        .as_mut()
        .expect("a plane comes with a bootstrap")
        .allgather(&[u8::from(mapped)])?;
    let proxy = all.iter().all(|v| v.first() == Some(&1));
    if !proxy {
        tracing::warn!(
            "PE {pe}: some PE's heap is not host-mapped: no proxy, so device code cannot reach PEs on other devices (host collectives go through staging)"
        );
    }
    Ok(proxy)
}

/// The proxy's way to other nodes, in a job of several nodes under MPI.
fn remote_link(j: &Joined) -> Option<Box<dyn RemoteLink>> {
    #[cfg(feature = "mpi")]
    if let Some(m) = j.mpi.as_ref().filter(|_| j.nodes.is_some()) {
        return Some(Box::new(m.proxy_link()));
    }
    let _ = j;
    None
}

/// What PE `pe` of `npes` reaches of `heap`: the job's side of the device
/// library, which its kernels read at run time.
fn job_view_of(heap: &SymmetricHeap, pe: u32, npes: u32) -> vkshmem_device::JobView {
    vkshmem_device::JobView {
        my_pe: pe,
        n_pes: npes,
        direct: vkshmem_device::PeSet::from_pes((0..npes).filter(|&p| heap.reachable(p))),
        heap_bytes: heap.size(),
    }
}

/// The device library's shape on `gpu` for a PE that reaches `job` (see
/// [`Context::library_config`](crate::Context::library_config)): the same
/// on every job whose slot span rounds to one power of two, with heaps in
/// one binding, so their kernels share pipelines.
fn library_config_for(
    gpu: &Gpu,
    job: &vkshmem_device::JobView,
    proxy: bool,
    vec4_u64: bool,
) -> vkshmem_device::LibraryConfig {
    let llvmpipe = gpu.info.is_llvmpipe();
    let chunks = job.chunks(gpu.info.max_storage_buffer_range);
    vkshmem_device::LibraryConfig {
        slots: job.slots(gpu.info.max_storage_buffers_per_stage, chunks),
        chunks,
        max_binding_bytes: gpu.info.max_storage_buffer_range,
        int64: gpu.caps.int64,
        float64: gpu.caps.float64 && gpu.caps.int64,
        int64_atomics: gpu.caps.int64_atomics && gpu.caps.int64,
        divergent_fences: !llvmpipe,
        loop_cap: llvmpipe,
        row_lanes: if llvmpipe { gpu.info.subgroup_size } else { 0 },
        proxy,
        vec4_u64: vec4_u64 && gpu.caps.int64,
    }
}
