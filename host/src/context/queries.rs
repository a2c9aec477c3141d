//! The façade of what a PE can ask of its job and device, and the phase timer.

use crate::error::Result;
use crate::phases::PhaseStat;
use crate::vk::{DeviceCaps, DeviceInfo};
use vkshmem_device::collectives::WideUnit;

use super::Context;

impl Context {
    /// Waits until the builder thread has built the host kernels it was given
    /// for this context after `init` (see `VKSHMEM_PREBUILD`); returns at once
    /// when there were none. Benchmarks call it so that no background
    /// compilation shares the CPU with what they time.
    pub fn wait_background_builds(&self) {
        self.rt.wait_background_builds()
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
        self.rt.set_phase_times(on)
    }

    /// The phases timed since the last call (see
    /// [`Context::set_phase_times`](crate::Context::set_phase_times)), each with its count, median and mean;
    /// clears them.
    pub fn take_phase_times(&self) -> Vec<PhaseStat> {
        self.rt.take_phase_times()
    }

    /// Whether this PE left the job's collectives after a failed launch
    /// ([`Error::Broken`](crate::Error::Broken)).
    pub fn is_broken(&self) -> bool {
        self.rt.is_broken()
    }

    /// This PE's number in the world team (`shmem_my_pe`).
    pub fn my_pe(&self) -> u32 {
        self.rt.my_pe()
    }

    /// Number of PEs in the job (`shmem_n_pes`).
    pub fn n_pes(&self) -> u32 {
        self.rt.n_pes()
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
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `pe` is not a PE of the job.
    pub fn transport(&self, pe: u32) -> Result<crate::transport::Transport> {
        self.rt.transport(pe)
    }

    /// The largest size per member (bytes) for which host collectives may
    /// move their data on the host, through the heap's mapping, instead of a
    /// kernel (`VKSHMEM_HOST_MAPPED_MAX`; 0 where the heap is not mapped or
    /// there is no sync plane): what a benchmark compares such calls with.
    pub fn host_path_max(&self) -> u64 {
        self.rt.host_path_max()
    }

    /// Size of each PE's symmetric heap in bytes.
    pub fn heap_size(&self) -> u64 {
        self.rt.heap_size()
    }

    /// Facts about the Vulkan device this PE uses.
    pub fn device_info(&self) -> &DeviceInfo {
        self.rt.device_info()
    }

    /// Optional device capabilities found and enabled.
    pub fn device_caps(&self) -> &DeviceCaps {
        self.rt.device_caps()
    }

    /// Whether this PE can load and store PE `pe`'s symmetric heap directly
    /// (`shmem_addr_accessible` / `shmem_ptr` != NULL): same physical device.
    pub fn pe_accessible(&self, pe: u32) -> bool {
        self.rt.pe_accessible(pe)
    }

    /// The symmetric allocator's granule: every allocation's offset and size is a
    /// multiple of it.
    pub fn granule(&self) -> u64 {
        self.rt.granule()
    }

    /// Workgroups of one dispatch this device is known to run at once: the
    /// most a kernel calling a multi-workgroup device collective
    /// (`shmemx_*_work_groups`) may be launched over
    /// ([`crate::vk::DeviceInfo::resident_workgroups`]: llvmpipe's compute threads,
    /// NVIDIA's SMs, AMD's compute units, else 1, or
    /// `VKSHMEM_RESIDENT_WORKGROUPS`).
    pub fn resident_workgroups(&self) -> u32 {
        self.rt.resident_workgroups()
    }

    /// Whether this PE asks that the first member of a team on its device
    /// submit every member's part of a host collective in one submission (`VKSHMEM_SUBMIT`; `auto`: on drivers that time-slice
    /// processes, NVIDIA's, where each process's submission costs a context
    /// switch). A team takes it when every member asks for it.
    pub fn leader_submits(&self) -> bool {
        self.rt.leader_submits()
    }

    /// Invocations per workgroup of the host collectives' wide copies and
    /// pushes (the vec4 loops that move large messages; the reductions keep
    /// [`vkshmem_device::collectives::WIDE_REDUCE_WORKGROUP`]):
    /// `VKSHMEM_WIDE_WORKGROUP`, by
    /// default 64 on llvmpipe and
    /// [`vkshmem_device::collectives::WIDE_WORKGROUP_GPU`] elsewhere, within
    /// the device's limits.
    pub fn wide_workgroup(&self) -> u32 {
        self.rt.wide_workgroup()
    }

    /// The element the host collectives' wide kernels move:
    /// `VKSHMEM_WIDE_UNIT`, by default [`WideUnit::Vec2U64`] on llvmpipe
    /// (where the device has `shaderInt64`) and [`WideUnit::Vec4U32`]
    /// elsewhere. For benchmarks that build the library's wide kernels as
    /// its collectives do (the bench's roofline).
    pub fn wide_unit(&self) -> WideUnit {
        self.rt.wide_unit()
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
    /// [`Error::Unsupported`](crate::Error::Unsupported); the host-initiated collectives work.
    pub fn device_waits_across_processes(&self) -> bool {
        self.rt.device_waits_across_processes()
    }
}
