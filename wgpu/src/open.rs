//! Opening a wgpu device that vkshmem shares: the adapter's checks, the
//! device opened through wgpu-hal with vkshmem's extension, and vkshmem
//! started on its raw handles.

use vkshmem::ash::{self, vk, vk::Handle as _};
use wgpu::hal::api::Vulkan;

use crate::error::{Error, Result};

/// The device extension vkshmem cannot do without: each PE's heap is
/// exported and imported by file descriptor.
const EXTERNAL_MEMORY_FD: &std::ffi::CStr = ash::khr::external_memory_fd::NAME;

/// What `open` made: wgpu's device and queue, and vkshmem's context on them.
pub(crate) struct Opened {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub ctx: vkshmem::Context,
}

/// How a PE joins: as this process's PE, or as a thread-PE of a job of
/// threads, with its driver's threads (`Member::open_device`).
pub(crate) enum Join<'a> {
    Process,
    Thread(&'a vkshmem::Member, Vec<i32>),
}

/// Opens `desc` on `adapter` with vkshmem's extension added, and starts
/// vkshmem (joins the job as `how` says) on the device and queue wgpu uses.
pub(crate) fn open(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'_>,
    how: Join<'_>,
) -> Result<Opened> {
    join(open_device(adapter, desc)?, desc, how)
}

/// Opens `desc` on `adapter` with vkshmem's extension added.
pub(crate) fn open_device(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'_>,
) -> Result<(wgpu::Device, wgpu::Queue)> {
    let info = adapter.get_info();
    if info.backend != wgpu::Backend::Vulkan {
        return Err(not_vulkan(&info));
    }
    let unsupported = |what: String| Error::Unsupported {
        adapter: info.name.clone(),
        what,
    };
    let missing = desc.required_features - adapter.features();
    if !missing.is_empty() {
        return Err(unsupported(format!("features {missing:?}")));
    }
    let mut over = Vec::new();
    desc.required_limits.check_limits_with_fail_fn(
        &adapter.limits(),
        false,
        |name, wanted, allowed| {
            over.push(format!("{name} {wanted} (at most {allowed})"));
        },
    );
    if !over.is_empty() {
        return Err(unsupported(format!("limits {}", over.join(", "))));
    }
    let open = {
        // SAFETY: the hal adapter is only read here and dropped before
        // `create_device_from_hal` (wgpu: the guard must not outlive the
        // adapter); a Vulkan adapter (checked above) has a Vulkan hal.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }.ok_or_else(|| not_vulkan(&info))?;
        if !supports(&hal, EXTERNAL_MEMORY_FD) {
            return Err(Error::MissingExtension {
                adapter: info.name.clone(),
                extension: "VK_KHR_external_memory_fd",
            });
        }
        let add: Box<wgpu::hal::vulkan::CreateDeviceCallback> = Box::new(|args| {
            if !args.extensions.contains(&EXTERNAL_MEMORY_FD) {
                args.extensions.push(EXTERNAL_MEMORY_FD);
            }
        });
        // SAFETY: the callback only adds an extension the physical device
        // reports (checked above), as wgpu-hal's CreateDeviceCallback
        // allows; the features and limits are the adapter's (checked above).
        unsafe {
            hal.open_with_callback(
                desc.required_features,
                &desc.required_limits,
                &desc.memory_hints,
                Some(add),
            )?
        }
    };
    // SAFETY: `open` came from this adapter's hal adapter, with
    // `desc.required_features` (wgpu: "desc.features must be a subset of
    // hal_device's supported features").
    Ok(unsafe { adapter.create_device_from_hal(open, desc)? })
}

/// Starts vkshmem on wgpu's `device` (opened by [`open_device`] for `desc`),
/// joining the job as `how` says.
pub(crate) fn join(
    (device, queue): (wgpu::Device, wgpu::Queue),
    desc: &wgpu::DeviceDescriptor<'_>,
    how: Join<'_>,
) -> Result<Opened> {
    let mut user = user_device(&device, desc.required_features)?;
    // SAFETY: the handles are wgpu's device's, which outlives the context:
    // every value of this crate that holds the context (or a symmetric
    // buffer, which holds it too) holds a clone of `device` after it, and
    // the heap buffer's drop callback, which holds one too, runs before
    // wgpu destroys the device. The device was created with
    // VK_KHR_external_memory_fd and the features `user.enabled` names.
    let ctx = unsafe {
        match how {
            Join::Process => vkshmem::init_on_device(user)?,
            Join::Thread(member, driver_threads) => {
                user.driver_threads = Some(driver_threads);
                member.join_on_device(user)?
            }
        }
    };
    Ok(Opened { device, queue, ctx })
}

fn not_vulkan(info: &wgpu::AdapterInfo) -> Error {
    Error::NotVulkan {
        name: info.name.clone(),
        backend: info.backend,
    }
}

/// Whether the physical device of `hal` offers device extension `name`.
fn supports(hal: &wgpu::hal::vulkan::Adapter, name: &std::ffi::CStr) -> bool {
    let instance = hal.shared_instance().raw_instance();
    // SAFETY: the physical device is the adapter's, enumerated from this
    // instance (VUID-vkEnumerateDeviceExtensionProperties-physicalDevice-parameter).
    let exts = unsafe { instance.enumerate_device_extension_properties(hal.raw_physical_device()) };
    exts.unwrap_or_default()
        .iter()
        .any(|e| e.extension_name_as_c_str() == Ok(name))
}

/// vkshmem's view of wgpu's device: its raw handles, and the optional
/// features wgpu enabled for `features` (wgpu-hal enables shaderInt64 for
/// SHADER_INT64, 64-bit buffer atomics for the INT64_ATOMIC features,
/// shaderFloat64 for SHADER_F64, shaderInt16 for SHADER_I16, and 16-bit
/// storage for SHADER_F16 or SHADER_I16).
fn user_device(device: &wgpu::Device, features: wgpu::Features) -> Result<vkshmem::UserDevice> {
    // SAFETY: the hal device is only read (its handles copied) and the
    // guard dropped at the end of this function.
    let hal = unsafe { device.as_hal::<Vulkan>() }.ok_or_else(|| {
        Error::InvalidArgument("the wgpu device opened on a Vulkan adapter is not Vulkan".into())
    })?;
    let int64 = features.contains(wgpu::Features::SHADER_INT64);
    let enabled = vkshmem::DeviceCaps {
        int64,
        int64_atomics: int64
            && features.intersects(
                wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS
                    | wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX,
            ),
        float64: features.contains(wgpu::Features::SHADER_F64),
        int16: features.contains(wgpu::Features::SHADER_I16),
        storage16: features.intersects(wgpu::Features::SHADER_F16 | wgpu::Features::SHADER_I16),
        ..Default::default()
    };
    Ok(vkshmem::UserDevice {
        instance: vk::Instance::from_raw(hal.shared_instance().raw_instance().handle().as_raw()),
        physical_device: hal.raw_physical_device(),
        device: hal.raw_device().handle(),
        queue_family: hal.queue_family_index(),
        queue_index: hal.queue_index(),
        enabled,
        external_memory_host: false,
        driver_threads: None,
    })
}
