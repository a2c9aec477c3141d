//! The thin Vulkan layer: instance and device ([`Gpu`]), exportable memory
//! ([`memory`]), one-shot command submission ([`submit`]) and compute kernels
//! ([`kernel`]). Everything above this module speaks in heaps, offsets and PEs.

pub mod aligned_map;
pub mod compile_turn;
pub mod host_import;
pub mod kernel;
pub mod memory;
pub mod pipeline_cache;
pub mod record;
pub mod select;
pub mod submit;

use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::Mutex;

use ash::vk;

use crate::error::{Error, Result, VkContext};

/// What the chosen device can do, as far as vkshmem cares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceCaps {
    /// 64-bit integers in shaders.
    pub int64: bool,
    /// 64-bit atomics on storage buffers.
    pub int64_atomics: bool,
    /// 64-bit floats in shaders.
    pub float64: bool,
    /// 16-bit integers in shaders.
    pub int16: bool,
    /// 8-bit integers in shaders.
    pub int8: bool,
    /// 8-bit storage buffer access.
    pub storage8: bool,
    /// 16-bit storage buffer access.
    pub storage16: bool,
    /// The Vulkan memory model (with device scope).
    pub memory_model: bool,
    /// Timeline semaphores.
    pub timeline_semaphores: bool,
}

/// Facts about the chosen device.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Index in `vkEnumeratePhysicalDevices` order.
    pub index: usize,
    /// `deviceName`.
    pub name: String,
    /// Device type.
    pub kind: select::Kind,
    /// `deviceUUID`: PEs whose device and driver UUIDs match share one physical device.
    pub device_uuid: [u8; 16],
    /// `driverUUID`.
    pub driver_uuid: [u8; 16],
    /// `maxStorageBufferRange`: the largest window one storage binding may cover.
    pub max_storage_buffer_range: u64,
    /// `minStorageBufferOffsetAlignment`.
    pub min_storage_offset_alignment: u64,
    /// `maxPushConstantsSize`.
    pub max_push_constants: u32,
    /// `maxComputeWorkGroupCount[0]`.
    pub max_workgroups_x: u32,
    /// `maxComputeWorkGroupCount`: the most workgroups of a dispatch in x, y and z.
    pub max_workgroups: [u32; 3],
    /// `timestampPeriod` in nanoseconds per tick.
    pub timestamp_period_ns: f32,
    /// `timestampValidBits` of the compute queue family (0: no timestamps).
    pub timestamp_valid_bits: u32,
    /// `maxPerStageDescriptorStorageBuffers`: storage bindings one kernel may use.
    pub max_storage_buffers_per_stage: u32,
    /// `maxComputeWorkGroupInvocations`.
    pub max_workgroup_invocations: u32,
    /// `maxComputeWorkGroupSize`: the most invocations of a workgroup in x, y and z.
    pub max_workgroup_size: [u32; 3],
    /// `maxMemoryAllocationSize`: the largest allocation the device promises
    /// (some drivers allocate more, others fail below it when memory is short).
    pub max_memory_allocation_size: u64,
    /// `subgroupSize` (Vulkan 1.1; 0 where the device says nothing). On
    /// llvmpipe, the invocations of one SIMD row: its native vector width in
    /// 32-bit lanes (8 with AVX2), the invocations it runs in lockstep on one
    /// thread.
    pub subgroup_size: u32,
    /// Workgroups of one dispatch this device is known to run at once, so
    /// that they may wait for each other (the multi-workgroup device
    /// collectives, `shmemx_*_work_groups`): llvmpipe's compute threads
    /// (each runs its own workgroups, one after another), NVIDIA's SM count
    /// (`VK_NV_shader_sm_builtins`: every SM can hold a workgroup of any
    /// kernel it runs), AMD's compute units (`VK_AMD_shader_core_properties`);
    /// 1 on devices that say nothing. `VKSHMEM_RESIDENT_WORKGROUPS` overrides
    /// it (the user's promise). Set by `crate::driver::apply` at init (1
    /// until then).
    pub resident_workgroups: u32,
    /// Whether a kernel may spin until a kernel of another process on this
    /// device makes progress: true where the driver runs the processes'
    /// kernels at once or switches between them while one spins. False on
    /// NVIDIA's proprietary driver: it time-slices processes (Vulkan has no
    /// MPS), and a kernel spinning on another process's work cannot be
    /// switched away from; the driver kills its context (Xid 109, CTX SWITCH
    /// TIMEOUT) and the launch fails with `ERROR_DEVICE_LOST` (seen on an H200
    /// with driver 580). `VKSHMEM_CROSS_PROCESS_WAITS=1` (or `0`)
    /// overrides it. Set by `crate::driver::apply` at init.
    pub cross_process_waits: bool,
    /// Whether the driver time-slices the processes that share this device,
    /// so that each process's submission costs a context switch when several
    /// submit (NVIDIA's proprietary driver: several times an empty
    /// submission's cost; benches/RESULTS.md, "H200 first run"). Host
    /// collectives then let one member submit for all (`VKSHMEM_SUBMIT=auto`).
    /// Set by `crate::driver::apply` at init.
    pub time_sliced: bool,
    /// `driverID` (Vulkan 1.2; `MAX_ENUM` where the device says nothing).
    pub driver_id: vk::DriverId,
    /// Streaming multiprocessors (`VK_NV_shader_sm_builtins`).
    pub sm_count: Option<u32>,
    /// Compute units (`VK_AMD_shader_core_properties`).
    pub compute_units: Option<u32>,
}

impl DeviceInfo {
    /// Whether this is Mesa's llvmpipe (lavapipe), whose compute quirks the device
    /// library works around (see ARCHITECTURE.md, "Lavapipe"): among them, at most
    /// 65535 loop iterations per invocation and dispatch.
    pub fn is_llvmpipe(&self) -> bool {
        self.name.contains("llvmpipe")
    }
}

/// A Vulkan instance and logical device with one compute queue.
///
/// Other Vulkan objects (heaps, kernels) hold an `Arc<Gpu>` and are destroyed
/// before it. The queue is behind a mutex: Vulkan requires external
/// synchronization of `vkQueueSubmit` (VUID-vkQueueSubmit-queue-00893 "host access
/// to queue must be externally synchronized").
pub struct Gpu {
    _entry: ash::Entry,
    pub(crate) instance: ash::Instance,
    pub(crate) physical: vk::PhysicalDevice,
    pub(crate) device: ash::Device,
    pub(crate) external_fd: ash::khr::external_memory_fd::Device,
    /// `VK_EXT_external_memory_host`, where the device has it (enabled then).
    pub(crate) host_import: Option<HostImportFns>,
    /// `VK_EXT_calibrated_timestamps`, where the device has it with the
    /// device and `CLOCK_MONOTONIC` domains (enabled then; not on a device
    /// the program gave): the GPU's timestamps placed on the host's clock,
    /// for the launch and signal phases ([`crate::phases`]).
    pub(crate) calibrated: Option<ash::ext::calibrated_timestamps::Device>,
    pub(crate) queue: Mutex<vk::Queue>,
    pub(crate) queue_family: u32,
    /// The queue's index in its family.
    pub(crate) queue_index: u32,
    pub(crate) memory_properties: vk::PhysicalDeviceMemoryProperties,
    /// The pipeline cache every kernel is built with, saved when the device closes.
    pub(crate) pipeline_cache: pipeline_cache::PipelineCache,
    /// Private allocations (staging and bounce buffers: memory that is not
    /// exported; the heap's exportable blocks are allocated by hand, which
    /// gpu-allocator cannot do). `None` once the device closes.
    pub(crate) allocator: Mutex<Option<gpu_allocator::vulkan::Allocator>>,
    /// Facts about the device.
    pub info: DeviceInfo,
    /// Optional capabilities that were found and enabled.
    pub caps: DeviceCaps,
    /// Whether vkshmem created the device and instance (and destroys them):
    /// false for a device the user gave ([`Gpu::adopt`]).
    owned: bool,
    /// The driver's threads, where the program that gave the device named
    /// them ([`UserDevice::driver_threads`]).
    given_driver_threads: Option<Vec<i32>>,
}

/// A Vulkan device that the program created, for vkshmem to use
/// (`Context::init_on_device`). Raw handles, so that any Vulkan binding (ash
/// of any version, wgpu-hal, vulkano) can give them.
#[derive(Debug, Clone)]
pub struct UserDevice {
    /// The instance, created with `apiVersion` 1.3 or later.
    pub instance: vk::Instance,
    /// The physical device: Vulkan 1.3, with a compute queue family.
    pub physical_device: vk::PhysicalDevice,
    /// The logical device, created with `VK_KHR_external_memory_fd` enabled.
    pub device: vk::Device,
    /// A queue family with compute.
    pub queue_family: u32,
    /// The queue's index in the family. vkshmem submits to it (under its
    /// lock, see `Context::with_queue`) and records commands for it.
    pub queue_index: u32,
    /// The optional features enabled at device creation (vkshmem uses these
    /// only; the ones the device lacks are ignored): `shaderInt64`,
    /// `shaderFloat64`, `shaderInt16`, `shaderInt8`, the 8- and 16-bit
    /// storage-buffer access, `vulkanMemoryModel` with device scope,
    /// `timelineSemaphore`.
    pub enabled: DeviceCaps,
    /// Whether `VK_EXT_external_memory_host` was enabled (optional: heaps the
    /// host cannot map then import staging memory instead of copying).
    pub external_memory_host: bool,
    /// The threads (kernel thread ids) the device's driver started, where
    /// the program knows them: on lavapipe, the ones vkshmem's wait
    /// throttle naps while a device wait lasts. `None`: every thread of the
    /// process but the caller and vkshmem's own, which is wrong where other
    /// threads must run meanwhile (PEs as threads).
    pub driver_threads: Option<Vec<i32>>,
}

/// `VK_EXT_external_memory_host`'s entry points and the alignment it needs
/// of an imported pointer and size.
pub(crate) struct HostImportFns {
    pub fns: ash::ext::external_memory_host::Device,
    pub alignment: u64,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.info)
            .field("caps", &self.caps)
            .finish()
    }
}

fn kind_of(t: vk::PhysicalDeviceType) -> select::Kind {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => select::Kind::Discrete,
        vk::PhysicalDeviceType::INTEGRATED_GPU => select::Kind::Integrated,
        vk::PhysicalDeviceType::VIRTUAL_GPU => select::Kind::Virtual,
        vk::PhysicalDeviceType::CPU => select::Kind::Cpu,
        _ => select::Kind::Other,
    }
}

fn cstr_name(raw: &[std::ffi::c_char]) -> String {
    // SAFETY: Vulkan guarantees deviceName/extensionName are NUL-terminated within
    // their fixed-size arrays (VK_MAX_*_NAME_SIZE).
    unsafe { CStr::from_ptr(raw.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The names of the device extensions `pd` has, or the driver's error
/// where it cannot list them.
fn extension_names(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> std::result::Result<Vec<String>, vk::Result> {
    // SAFETY: `pd` is a valid physical device of `instance`.
    let exts = unsafe { instance.enumerate_device_extension_properties(pd) }?;
    Ok(exts.iter().map(|e| cstr_name(&e.extension_name)).collect())
}

/// Whether `exts` ([`extension_names`]) holds `name`.
fn has_extension(exts: &[String], name: &std::ffi::CStr) -> bool {
    let want = name.to_string_lossy();
    exts.iter().any(|e| *e == want)
}

impl Gpu {
    /// Whether vkshmem created this device (false for one the program gave,
    /// [`Gpu::adopt`]).
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// The driver's threads the program named for a device it gave.
    pub fn given_driver_threads(&self) -> Option<&[i32]> {
        self.given_driver_threads.as_deref()
    }

    /// Opens the device for the PE with node-local number `local_pe`, chosen as
    /// [`select::choose`] says (`wanted` is `VKSHMEM_DEVICE`).
    /// `cache_dir`: where the pipeline cache file is kept (`None`: no file).
    pub fn open(wanted: Option<&str>, local_pe: u32, cache_dir: Option<PathBuf>) -> Result<Gpu> {
        // SAFETY: loading the Vulkan loader runs its initialisers; libvulkan is a
        // well-behaved shared library and we keep `entry` alive as long as the Gpu.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| Error::Loader(e.to_string()))?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"vkshmem")
            .engine_name(c"vkshmem")
            .api_version(vk::API_VERSION_1_3);
        let create = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: the create info and what it points to live across the call.
        let instance = unsafe { entry.create_instance(&create, None) }.vk("vkCreateInstance")?;
        Self::open_device(entry.clone(), &instance, wanted, local_pe, cache_dir).inspect_err(|_| {
            // SAFETY: no child objects of the instance exist on this path.
            unsafe { instance.destroy_instance(None) };
        })
    }

    /// Every Vulkan device of the machine as the selector sees it (what
    /// `vkshmrun --doctor` lists), without opening any.
    ///
    /// # Errors
    /// [`Error::Loader`] without a Vulkan loader, Vulkan errors as
    /// [`Error::Vulkan`] (no driver: `vkCreateInstance` fails).
    pub fn survey() -> Result<Vec<select::Candidate>> {
        // SAFETY: as in `open`.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| Error::Loader(e.to_string()))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let create = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: the create info and what it points to live across the call.
        let instance = unsafe { entry.create_instance(&create, None) }.vk("vkCreateInstance")?;
        let cands = Self::candidates(&instance).map(|(c, _)| c);
        // SAFETY: no child objects of the instance exist.
        unsafe { instance.destroy_instance(None) };
        cands
    }

    /// The instance's devices as candidates, with their handles.
    fn candidates(
        instance: &ash::Instance,
    ) -> Result<(Vec<select::Candidate>, Vec<vk::PhysicalDevice>)> {
        // SAFETY: `instance` is a valid instance.
        let physicals =
            unsafe { instance.enumerate_physical_devices() }.vk("vkEnumeratePhysicalDevices")?;
        let cands = physicals
            .iter()
            .enumerate()
            .map(|(index, &pd)| {
                // SAFETY: `pd` came from this instance.
                let props = unsafe { instance.get_physical_device_properties(pd) };
                select::Candidate {
                    index,
                    name: cstr_name(&props.device_name),
                    kind: kind_of(props.device_type),
                    usable: usable(instance, pd, &props),
                }
            })
            .collect();
        Ok((cands, physicals))
    }

    fn open_device(
        entry: ash::Entry,
        instance: &ash::Instance,
        wanted: Option<&str>,
        local_pe: u32,
        cache_dir: Option<PathBuf>,
    ) -> Result<Gpu> {
        let (cands, physicals) = Self::candidates(instance)?;
        let (index, why) = select::choose(&cands, wanted, local_pe).map_err(Error::NoDevice)?;
        let physical = physicals[index];
        let queue_family = compute_queue_family(instance, physical).expect("checked by usable()");

        // usable() listed them already (a device it could not list is
        // never chosen); should a second listing fail, none of the optional
        // extensions is enabled.
        let exts = extension_names(instance, physical).unwrap_or_default();
        let (info, host_import_alignment, p) =
            describe(instance, physical, &exts, index, queue_family);
        let has_host_import = host_import_alignment.is_some();

        let (caps, sync2) = supported_caps(instance, physical);
        let want_base = vk::PhysicalDeviceFeatures::default()
            .shader_int64(caps.int64)
            .shader_float64(caps.float64)
            .shader_int16(caps.int16);
        let mut want11 = vk::PhysicalDeviceVulkan11Features::default()
            .storage_buffer16_bit_access(caps.storage16);
        let mut want12 = vk::PhysicalDeviceVulkan12Features::default()
            .shader_buffer_int64_atomics(caps.int64_atomics)
            .shader_int8(caps.int8)
            .storage_buffer8_bit_access(caps.storage8)
            .vulkan_memory_model(caps.memory_model)
            .vulkan_memory_model_device_scope(caps.memory_model)
            .timeline_semaphore(caps.timeline_semaphores);
        let mut want13 = vk::PhysicalDeviceVulkan13Features::default().synchronization2(sync2);
        let mut want2 = vk::PhysicalDeviceFeatures2::default()
            .features(want_base)
            .push_next(&mut want11)
            .push_next(&mut want12)
            .push_next(&mut want13);

        let priorities = [1.0f32];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let mut extensions = vec![ash::khr::external_memory_fd::NAME.as_ptr()];
        if has_host_import {
            extensions.push(ash::ext::external_memory_host::NAME.as_ptr());
        }
        let calibrated = calibrates_to_monotonic(&entry, instance, physical, &exts);
        if calibrated {
            extensions.push(ash::ext::calibrated_timestamps::NAME.as_ptr());
        }
        let create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_info)
            .enabled_extension_names(&extensions)
            .push_next(&mut want2);
        // SAFETY: every feature enabled was reported supported above, the
        // extensions were checked (external memory fd by usable(), the host
        // import by describe(), the calibrated timestamps by
        // calibrates_to_monotonic()), and the create info outlives the call.
        let device =
            unsafe { instance.create_device(physical, &create, None) }.vk("vkCreateDevice")?;
        // SAFETY: family and index 0 were requested in `create`.
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        tracing::info!(
            "local PE {local_pe} uses Vulkan device [{index}] {:?} ({:?}) because {why}; caps {:?}",
            info.name,
            info.kind,
            caps
        );
        finish(Parts {
            entry,
            instance: instance.clone(),
            physical,
            device,
            queue,
            queue_family,
            queue_index: 0,
            info,
            caps,
            host_import_alignment,
            calibrated,
            properties: p,
            owned: true,
            given_driver_threads: None,
            cache_dir,
        })
    }
}

impl Gpu {
    /// Wraps a device the program created (see [`UserDevice`]): vkshmem
    /// queries it, checks the one extension it needs, and never destroys it.
    ///
    /// # Safety
    /// The handles are valid, of one instance, and outlive the returned Gpu;
    /// the device was created with the extension and features `user` names
    /// and a queue at (`queue_family`, `queue_index`).
    pub unsafe fn adopt(user: &UserDevice, cache_dir: Option<PathBuf>) -> Result<Gpu> {
        use ash::vk::Handle;
        // SAFETY: the loader is a well-behaved shared library; kept with the Gpu.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| Error::Loader(e.to_string()))?;
        // SAFETY: the caller's instance handle, valid for this loader (one
        // loader per process).
        let instance = unsafe { ash::Instance::load(entry.static_fn(), user.instance) };
        let physical = user.physical_device;
        // SAFETY: a physical device of this instance (caller).
        let props = unsafe { instance.get_physical_device_properties(physical) };
        usable(&instance, physical, &props).map_err(|why| {
            Error::NoDevice(format!("the device given is not usable by vkshmem: {why}"))
        })?;
        // SAFETY: as above.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let has_compute = families
            .get(user.queue_family as usize)
            .is_some_and(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE));
        if !has_compute {
            return Err(Error::InvalidArgument(format!(
                "queue family {} of the device given has no compute",
                user.queue_family
            )));
        }
        // SAFETY: the caller's device handle of this instance.
        let device = unsafe { ash::Device::load(instance.fp_v1_0(), user.device) };
        // A device-level function of an extension that is not enabled has no
        // address (vkGetDeviceProcAddr returns NULL).
        // SAFETY: valid device; the name is NUL-terminated.
        let fd_fn = unsafe {
            (instance.fp_v1_0().get_device_proc_addr)(device.handle(), c"vkGetMemoryFdKHR".as_ptr())
        };
        if fd_fn.is_none() {
            return Err(Error::InvalidArgument(
                "the device given was created without VK_KHR_external_memory_fd, which vkshmem needs to share its heap between processes".into(),
            ));
        }
        let index = {
            // SAFETY: valid instance.
            let all = unsafe { instance.enumerate_physical_devices() }
                .vk("vkEnumeratePhysicalDevices")?;
            all.iter()
                .position(|p| p.as_raw() == physical.as_raw())
                .unwrap_or(0)
        };
        let (info, host_import_alignment, p) = describe(
            &instance,
            physical,
            &extension_names(&instance, physical).unwrap_or_default(),
            index,
            user.queue_family,
        );
        let (supported, _) = supported_caps(&instance, physical);
        let e = &user.enabled;
        let caps = DeviceCaps {
            int64: e.int64 && supported.int64,
            int64_atomics: e.int64_atomics && supported.int64_atomics,
            float64: e.float64 && supported.float64,
            int16: e.int16 && supported.int16,
            int8: e.int8 && supported.int8,
            storage8: e.storage8 && supported.storage8,
            storage16: e.storage16 && supported.storage16,
            memory_model: e.memory_model && supported.memory_model,
            timeline_semaphores: e.timeline_semaphores && supported.timeline_semaphores,
        };
        // SAFETY: the caller created this queue.
        let queue = unsafe { device.get_device_queue(user.queue_family, user.queue_index) };
        tracing::info!(
            "vkshmem uses the program's Vulkan device [{index}] {:?} ({:?}), queue family {} index {}; caps {:?}",
            info.name,
            info.kind,
            user.queue_family,
            user.queue_index,
            caps
        );
        let gpu = finish(Parts {
            entry,
            instance,
            physical,
            device,
            queue,
            queue_family: user.queue_family,
            queue_index: user.queue_index,
            info,
            caps,
            host_import_alignment: host_import_alignment.filter(|_| user.external_memory_host),
            calibrated: false,
            properties: p,
            owned: false,
            given_driver_threads: user.driver_threads.clone(),
            cache_dir,
        })?;
        Ok(gpu)
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // Every kernel holds an Arc<Gpu>: no pipeline is being built with the cache.
        self.pipeline_cache.close(&self.device);
        // Every private allocation holds an Arc<Gpu> too, so all are freed:
        // the allocator's own memory blocks go before the device.
        drop(
            self.allocator
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
        if !self.owned {
            // The program's device: wait for our queue's work (the objects we
            // created are gone), destroy nothing of the program's.
            let q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the queue lock gives vkQueueWaitIdle's external synchronization.
            let _ = unsafe { self.device.queue_wait_idle(*q) };
            return;
        }
        // SAFETY: every child object holds an Arc<Gpu>, so none is alive any more
        // (the pipeline cache was destroyed above); waiting idle first satisfies
        // VUID-vkDestroyDevice-device-00378.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// The facts of `physical` (its extensions `exts`, queue family
/// `queue_family`), whether it has `VK_EXT_external_memory_host` (with the
/// import alignment), and its properties.
fn describe(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    exts: &[String],
    index: usize,
    queue_family: u32,
) -> (DeviceInfo, Option<u64>, vk::PhysicalDeviceProperties) {
    // Properties: limits and UUIDs.
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut m3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut host_props = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
    let has = |name: &std::ffi::CStr| has_extension(exts, name);
    let has_host_import = has(ash::ext::external_memory_host::NAME);
    let mut sm = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
    let mut cores = vk::PhysicalDeviceShaderCorePropertiesAMD::default();
    let (has_sm, has_cores) = (
        has(ash::nv::shader_sm_builtins::NAME),
        has(ash::amd::shader_core_properties::NAME),
    );
    // VUID-VkPhysicalDeviceProperties2-pNext-pNext: each chained struct's
    // extension is supported by the device (checked above).
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    // SAFETY: valid physical device of `instance`.
    let api = unsafe { instance.get_physical_device_properties(physical) }.api_version;
    let mut props2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut id)
        .push_next(&mut m3);
    // VkPhysicalDeviceDriverProperties is core in Vulkan 1.2.
    if api >= vk::API_VERSION_1_2 {
        props2 = props2.push_next(&mut driver);
    }
    // VkPhysicalDeviceSubgroupProperties is core in Vulkan 1.1.
    if api >= vk::API_VERSION_1_1 {
        props2 = props2.push_next(&mut subgroup);
    }
    if has_host_import {
        props2 = props2.push_next(&mut host_props);
    }
    if has_sm {
        props2 = props2.push_next(&mut sm);
    }
    if has_cores {
        props2 = props2.push_next(&mut cores);
    }
    // SAFETY: valid physical device; the pNext chain points at live structs.
    unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
    let p = props2.properties;
    let info = DeviceInfo {
        index,
        name: cstr_name(&p.device_name),
        kind: kind_of(p.device_type),
        device_uuid: id.device_uuid,
        driver_uuid: id.driver_uuid,
        max_storage_buffer_range: u64::from(p.limits.max_storage_buffer_range),
        min_storage_offset_alignment: p.limits.min_storage_buffer_offset_alignment,
        max_push_constants: p.limits.max_push_constants_size,
        max_workgroups_x: p.limits.max_compute_work_group_count[0],
        max_workgroups: p.limits.max_compute_work_group_count,
        timestamp_period_ns: p.limits.timestamp_period,
        // SAFETY: valid physical device of `instance`.
        timestamp_valid_bits: unsafe {
            instance.get_physical_device_queue_family_properties(physical)
        }[queue_family as usize]
            .timestamp_valid_bits,
        max_storage_buffers_per_stage: p.limits.max_per_stage_descriptor_storage_buffers,
        max_workgroup_invocations: p.limits.max_compute_work_group_invocations,
        max_workgroup_size: p.limits.max_compute_work_group_size,
        max_memory_allocation_size: m3.max_memory_allocation_size,
        subgroup_size: subgroup.subgroup_size,
        resident_workgroups: 1,
        cross_process_waits: true,
        time_sliced: false,
        driver_id: driver.driver_id,
        sm_count: has_sm.then_some(sm.shader_sm_count),
        compute_units: has_cores.then(|| {
            cores.shader_engine_count
                * cores.shader_arrays_per_engine_count
                * cores.compute_units_per_shader_array
        }),
    };
    (
        info,
        has_host_import.then_some(host_props.min_imported_host_pointer_alignment),
        p,
    )
}

/// The optional capabilities `physical` supports, and whether it has
/// synchronization2.
fn supported_caps(instance: &ash::Instance, physical: vk::PhysicalDevice) -> (DeviceCaps, bool) {
    // Features: query, then enable the ones we use that the device has.
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut f11)
        .push_next(&mut f12)
        .push_next(&mut f13);
    // SAFETY: valid physical device; the pNext chain points at live structs.
    unsafe { instance.get_physical_device_features2(physical, &mut f2) };
    let base = f2.features;
    let caps = DeviceCaps {
        int64: base.shader_int64 == vk::TRUE,
        int64_atomics: f12.shader_buffer_int64_atomics == vk::TRUE,
        float64: base.shader_float64 == vk::TRUE,
        int16: base.shader_int16 == vk::TRUE,
        int8: f12.shader_int8 == vk::TRUE,
        storage8: f12.storage_buffer8_bit_access == vk::TRUE,
        storage16: f11.storage_buffer16_bit_access == vk::TRUE,
        memory_model: f12.vulkan_memory_model == vk::TRUE
            && f12.vulkan_memory_model_device_scope == vk::TRUE,
        timeline_semaphores: f12.timeline_semaphore == vk::TRUE,
    };
    (caps, f13.synchronization2 == vk::TRUE)
}

/// What [`finish`] makes a [`Gpu`] of.
struct Parts {
    entry: ash::Entry,
    instance: ash::Instance,
    physical: vk::PhysicalDevice,
    device: ash::Device,
    queue: vk::Queue,
    queue_family: u32,
    queue_index: u32,
    info: DeviceInfo,
    caps: DeviceCaps,
    host_import_alignment: Option<u64>,
    /// Whether `VK_EXT_calibrated_timestamps` was enabled.
    calibrated: bool,
    properties: vk::PhysicalDeviceProperties,
    owned: bool,
    given_driver_threads: Option<Vec<i32>>,
    cache_dir: Option<PathBuf>,
}

/// The extension tables, memory properties, pipeline cache and allocator of a
/// device that exists.
fn finish(x: Parts) -> Result<Gpu> {
    let Parts {
        entry,
        instance,
        physical,
        device,
        queue,
        queue_family,
        queue_index,
        info,
        caps,
        host_import_alignment,
        calibrated,
        properties: p,
        owned,
        given_driver_threads,
        cache_dir,
    } = x;
    let calibrated =
        calibrated.then(|| ash::ext::calibrated_timestamps::Device::new(&instance, &device));
    let external_fd = ash::khr::external_memory_fd::Device::new(&instance, &device);
    let host_import = host_import_alignment.map(|alignment| HostImportFns {
        fns: ash::ext::external_memory_host::Device::new(&instance, &device),
        alignment,
    });
    // SAFETY: valid physical device.
    let memory_properties = unsafe { instance.get_physical_device_memory_properties(physical) };
    let cache_id = pipeline_cache::CacheId {
        vendor_id: p.vendor_id,
        device_id: p.device_id,
        uuid: p.pipeline_cache_uuid,
    };
    let pipeline_cache = pipeline_cache::PipelineCache::open(&device, cache_id, cache_dir);
    let allocator =
        gpu_allocator::vulkan::Allocator::new(&gpu_allocator::vulkan::AllocatorCreateDesc {
            instance: instance.clone(),
            device: device.clone(),
            physical_device: physical,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        })
        .map_err(|e| Error::Unsupported {
            device: info.name.clone(),
            what: format!("a memory allocator (gpu-allocator: {e})"),
        })?;
    Ok(Gpu {
        allocator: Mutex::new(Some(allocator)),
        _entry: entry,
        instance,
        physical,
        device,
        external_fd,
        host_import,
        calibrated,
        queue: Mutex::new(queue),
        queue_family,
        queue_index,
        memory_properties,
        pipeline_cache,
        info,
        caps,
        owned,
        given_driver_threads,
    })
}

/// Whether `pd` (its extensions `exts`) has `VK_EXT_calibrated_timestamps`
/// with both the device's and `CLOCK_MONOTONIC` time domains.
fn calibrates_to_monotonic(
    entry: &ash::Entry,
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    exts: &[String],
) -> bool {
    if !has_extension(exts, ash::ext::calibrated_timestamps::NAME) {
        return false;
    }
    let fns = ash::ext::calibrated_timestamps::Instance::new(entry, instance);
    // SAFETY: the device supports the extension (checked above), so its
    // instance-level command may be called on `pd`.
    let domains =
        unsafe { fns.get_physical_device_calibrateable_time_domains(pd) }.unwrap_or_default();
    domains.contains(&vk::TimeDomainEXT::DEVICE)
        && domains.contains(&vk::TimeDomainEXT::CLOCK_MONOTONIC)
}

fn compute_queue_family(instance: &ash::Instance, pd: vk::PhysicalDevice) -> Option<u32> {
    // SAFETY: `pd` is a valid physical device of `instance`.
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    // Prefer a compute family without graphics (a dedicated compute queue).
    let has = |f: &vk::QueueFamilyProperties| f.queue_flags.contains(vk::QueueFlags::COMPUTE);
    families
        .iter()
        .position(|f| has(f) && !f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .or_else(|| families.iter().position(has))
        .map(|i| i as u32)
}

/// Whether vkshmem can use `pd`: Vulkan 1.3, a compute queue, external memory fd.
fn usable(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    props: &vk::PhysicalDeviceProperties,
) -> std::result::Result<(), String> {
    if props.api_version < vk::API_VERSION_1_3 {
        return Err(format!(
            "Vulkan {}.{} < 1.3",
            vk::api_version_major(props.api_version),
            vk::api_version_minor(props.api_version)
        ));
    }
    if compute_queue_family(instance, pd).is_none() {
        return Err("no compute queue".into());
    }
    let exts =
        extension_names(instance, pd).map_err(|e| format!("cannot list extensions: {e:?}"))?;
    let name = ash::khr::external_memory_fd::NAME;
    if !has_extension(&exts, name) {
        return Err(format!("no {}", name.to_string_lossy()));
    }
    Ok(())
}
