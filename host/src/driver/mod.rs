//! What differs by Vulkan driver, kept out of the thin `vk` layer: the
//! policies vkshmem applies per driver ([`apply`]: workgroups that run at
//! once, whether kernels of several processes make progress, time slicing)
//! and its workarounds (lavapipe's wait throttle, [`throttle`]).

pub mod throttle;

use std::sync::Mutex;

use ash::vk;

use crate::error::Result;
use crate::vk::{DeviceInfo, Gpu};
use throttle::DriverThreads;

/// The settings that change a driver policy (read with the others by `init`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DriverSettings {
    /// `VKSHMEM_RESIDENT_WORKGROUPS`: the user's promise.
    pub resident_workgroups: Option<u32>,
    /// llvmpipe's own `LP_NUM_THREADS`, where it is a number.
    pub lp_num_threads: Option<u32>,
    /// `VKSHMEM_CROSS_PROCESS_WAITS`.
    pub cross_process_waits: Option<bool>,
}

/// Opens a device with `open`, one device at a time in a process (several
/// PEs as threads open one each), so that on llvmpipe the threads that
/// appear meanwhile are this device's driver's: the ones its wait throttle
/// naps. A device the program made before (not [`Gpu::owned`]) started its
/// threads earlier: those the program names
/// ([`Gpu::given_driver_threads`]), else every thread but vkshmem's.
pub fn open(open: impl FnOnce() -> Result<Gpu>) -> Result<(Gpu, DriverThreads)> {
    let (gpu, since) = opening(open);
    let gpu = gpu?;
    let threads = match (gpu.info.is_llvmpipe(), gpu.owned()) {
        (false, _) => DriverThreads::default(),
        (true, true) => DriverThreads::new(since),
        (true, false) => DriverThreads::new(match gpu.given_driver_threads() {
            Some(t) => t.to_vec(),
            None => throttle::driver_threads_by_name(),
        }),
    };
    if gpu.info.is_llvmpipe() {
        tracing::debug!(?threads, "llvmpipe's threads");
    }
    Ok((gpu, threads))
}

/// Runs `open` (vkshmem's, or the program's for a thread-PE:
/// `Member::open_device`) while no other device of the process opens, and
/// returns its value with the threads that appeared meanwhile: the
/// driver's (`throttle::driver_threads_since`).
pub fn opening<R>(open: impl FnOnce() -> R) -> (R, Vec<i32>) {
    static OPENING: Mutex<()> = Mutex::new(());
    let _one = crate::lock::lock(&OPENING);
    // Threads that exist before the driver is loaded: the rest are its own.
    let before = throttle::thread_ids();
    let value = open();
    (value, throttle::driver_threads_since(&before))
}

/// Sets the per-driver facts of `info` ([`DeviceInfo::resident_workgroups`],
/// [`DeviceInfo::cross_process_waits`], [`DeviceInfo::time_sliced`]) from
/// its driver, its counts and the settings `s`.
pub fn apply(info: &mut DeviceInfo, s: &DriverSettings) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let known = resident_workgroups(
        &info.name,
        cpus,
        s.lp_num_threads,
        info.sm_count,
        info.compute_units,
    );
    info.resident_workgroups = s.resident_workgroups.unwrap_or(known);
    info.cross_process_waits = cross_process_waits(info.driver_id, s.cross_process_waits);
    info.time_sliced = info.driver_id == vk::DriverId::NVIDIA_PROPRIETARY;
}

/// Workgroups of one dispatch known to run at once (see
/// [`DeviceInfo::resident_workgroups`]) on the device named `name`, with
/// `cpus` CPUs available to this process, `LP_NUM_THREADS` where it is a
/// number ([`crate::config::lp_num_threads`]), and
/// the SM or compute-unit count where the device tells it.
///
/// llvmpipe (Mesa 22.3) makes `min(CPUs, 16)` compute threads (none on one
/// CPU: the submitting thread runs every workgroup) or `LP_NUM_THREADS`; a
/// dispatch of `k` workgroups is cut into one chunk per thread, each run in
/// order by the thread that took it, so up to one workgroup per thread run
/// at once. Counting the CPUs available to this process (affinity, quota)
/// errs low, which is safe.
pub fn resident_workgroups(
    name: &str,
    cpus: u32,
    lp_num_threads: Option<u32>,
    sms: Option<u32>,
    compute_units: Option<u32>,
) -> u32 {
    if name.contains("llvmpipe") {
        let threads = lp_num_threads
            .unwrap_or(if cpus > 1 { cpus } else { 0 })
            .min(16);
        return threads.max(1);
    }
    sms.or(compute_units).filter(|&n| n > 0).unwrap_or(1)
}

/// Whether kernels of different processes on a device of driver `driver`
/// make progress while one of them spins waiting for another
/// ([`DeviceInfo::cross_process_waits`]); `over` is
/// `VKSHMEM_CROSS_PROCESS_WAITS` where it is `1` or `0`
/// ([`crate::config::cross_process_waits`]).
pub fn cross_process_waits(driver: vk::DriverId, over: Option<bool>) -> bool {
    over.unwrap_or(driver != vk::DriverId::NVIDIA_PROPRIETARY)
}

#[cfg(test)]
mod tests {
    use super::{cross_process_waits, resident_workgroups};

    #[test]
    fn cross_process_waits_by_driver() {
        use ash::vk::DriverId;
        assert!(!cross_process_waits(DriverId::NVIDIA_PROPRIETARY, None));
        assert!(cross_process_waits(
            DriverId::NVIDIA_PROPRIETARY,
            Some(true)
        ));
        assert!(cross_process_waits(DriverId::MESA_LLVMPIPE, None));
        assert!(!cross_process_waits(DriverId::MESA_LLVMPIPE, Some(false)));
        assert!(cross_process_waits(DriverId::MESA_RADV, None));
    }

    #[test]
    fn resident_workgroups_by_device() {
        let lp = "llvmpipe (LLVM 15.0.6, 256 bits)";
        assert_eq!(resident_workgroups(lp, 2, None, None, None), 2);
        assert_eq!(resident_workgroups(lp, 1, None, None, None), 1);
        assert_eq!(resident_workgroups(lp, 64, None, None, None), 16);
        assert_eq!(resident_workgroups(lp, 8, Some(3), None, None), 3);
        assert_eq!(resident_workgroups(lp, 8, Some(0), None, None), 1);
        assert_eq!(resident_workgroups(lp, 64, Some(40), None, None), 16);
        assert_eq!(
            resident_workgroups("NVIDIA H100", 16, None, Some(132), None),
            132
        );
        assert_eq!(resident_workgroups("AMD", 16, None, None, Some(96)), 96);
        assert_eq!(resident_workgroups("Intel", 16, None, None, None), 1);
    }
}
