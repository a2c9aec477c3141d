//! What a context tells about its PE, job and device.

use super::{lock, Runtime};
use crate::error::{Error, Result};
use crate::phases::PhaseStat;
use crate::vk::{DeviceCaps, DeviceInfo};
use vkshmem_device::collectives::WideUnit;

impl Runtime {
    pub(crate) fn set_phase_times(&self, on: bool) {
        self.phases.set(on);
    }

    pub(crate) fn take_phase_times(&self) -> Vec<PhaseStat> {
        self.phases.take()
    }

    pub(crate) fn is_broken(&self) -> bool {
        lock(&self.broken).is_some()
    }

    pub(crate) fn my_pe(&self) -> u32 {
        self.pe
    }

    pub(crate) fn n_pes(&self) -> u32 {
        self.npes
    }

    pub(crate) fn transport(&self, pe: u32) -> Result<crate::transport::Transport> {
        self.heap.transport(pe).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "transport: PE {pe} is not a PE of the job ({} PEs)",
                self.n_pes()
            ))
        })
    }

    pub(crate) fn host_path_max(&self) -> u64 {
        if self.plane.is_none()
            || self
                .own_mapped(vkshmem_device::layout::control_bytes(self.n_pes()), 1)
                .is_none()
        {
            return 0;
        }
        self.host_mapped_max
    }

    pub(crate) fn heap_size(&self) -> u64 {
        self.heap.size()
    }

    pub(crate) fn device_info(&self) -> &DeviceInfo {
        &self.gpu.info
    }

    pub(crate) fn device_caps(&self) -> &DeviceCaps {
        &self.gpu.caps
    }

    pub(crate) fn pe_accessible(&self, pe: u32) -> bool {
        self.heap.reachable(pe)
    }

    pub(crate) fn granule(&self) -> u64 {
        lock(&self.alloc).granule()
    }

    pub(crate) fn resident_workgroups(&self) -> u32 {
        self.gpu.info.resident_workgroups
    }

    pub(crate) fn leader_submits(&self) -> bool {
        self.leader_submit
    }

    pub(crate) fn wide_workgroup(&self) -> u32 {
        self.wide_workgroup
    }

    pub(crate) fn wide_unit(&self) -> WideUnit {
        self.wide_unit
    }

    pub(crate) fn device_waits_across_processes(&self) -> bool {
        !self.heap.device_waits_blocked()
    }

    /// The error of a device wait on a process that shares this device,
    /// where [`Context::device_waits_across_processes`](crate::Context::device_waits_across_processes) is false.
    pub(crate) fn no_cross_process_waits(&self, what: &str) -> Error {
        Error::Unsupported {
            device: self.gpu.info.name.clone(),
            what: format!(
                "{what}: device code that waits for PEs of other processes on this device (the driver cannot switch away from a kernel that spins on another process: Xid 109, CTX SWITCH TIMEOUT, and the context is lost). Use the host-initiated collectives, one PE per device, or VKSHMEM_CROSS_PROCESS_WAITS=1 to try anyway"
            ),
        }
    }
}
