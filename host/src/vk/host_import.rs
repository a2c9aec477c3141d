//! Host memory the device copies to and from directly: a range of this
//! process's address space (the node segment's staging buffers, which every PE
//! of the node maps) imported as device memory with
//! `VK_EXT_external_memory_host`, and a transfer buffer over it.
//!
//! The staged transport uses it when the heap is not mapped for the host (a
//! GPU's device-local memory): `vkCmdCopyBuffer` then moves a round's bytes
//! between the heap and the staging buffers in one submission, instead of a
//! copy into a private bounce buffer and a memcpy per piece.

use std::sync::Arc;

use ash::vk;

use super::Gpu;
use crate::error::{Error, Result, VkContext};

const HANDLE: vk::ExternalMemoryHandleTypeFlags =
    vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;

/// A host range imported as device memory, with a transfer buffer over all of
/// it.
pub struct HostImport {
    gpu: Arc<Gpu>,
    pub(crate) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
}

impl std::fmt::Debug for HostImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostImport")
            .field("size", &self.size)
            .finish()
    }
}

// SAFETY: plain Vulkan handles, used only in submissions that the submitter's
// lock serialises (as SharedMemory's).
unsafe impl Send for HostImport {}
// SAFETY: as above; nothing is reached through `&HostImport` but the handles.
unsafe impl Sync for HostImport {}

impl HostImport {
    /// Whether `gpu` can import `len` bytes at `ptr`: it has the extension and
    /// both are multiples of its alignment.
    pub fn possible(gpu: &Gpu, ptr: *const u8, len: u64) -> bool {
        gpu.host_import.as_ref().is_some_and(|h| {
            let a = h.alignment.max(1);
            len > 0 && (ptr as u64) % a == 0 && len % a == 0 && Self::importable(gpu)
        })
    }

    /// Whether the device imports host allocations under transfer buffers
    /// (VUID-VkImportMemoryHostPointerInfoEXT-handleType-01748).
    fn importable(gpu: &Gpu) -> bool {
        let info = vk::PhysicalDeviceExternalBufferInfo::default()
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
            .handle_type(HANDLE);
        let mut props = vk::ExternalBufferProperties::default();
        // SAFETY: valid physical device; the out-struct is live.
        unsafe {
            gpu.instance.get_physical_device_external_buffer_properties(
                gpu.physical,
                &info,
                &mut props,
            )
        };
        props
            .external_memory_properties
            .external_memory_features
            .contains(vk::ExternalMemoryFeatureFlags::IMPORTABLE)
    }

    /// Imports `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay mapped, readable and writable for as long
    /// as the returned import lives (VUID-VkImportMemoryHostPointerInfoEXT-pHostPointer-01758
    /// asks the range to be valid host memory; the device reads and writes it
    /// until the import is dropped).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when [`HostImport::possible`] is false or no
    /// memory type accepts the pointer; Vulkan errors.
    pub unsafe fn new(gpu: &Arc<Gpu>, ptr: *mut u8, len: u64) -> Result<HostImport> {
        let Some(h) = gpu
            .host_import
            .as_ref()
            .filter(|_| Self::possible(gpu, ptr, len))
        else {
            return Err(Error::Unsupported {
                device: gpu.info.name.clone(),
                what: format!("importing {len} bytes of host memory at {ptr:p}"),
            });
        };
        let mut props = vk::MemoryHostPointerPropertiesEXT::default();
        // SAFETY: the extension is enabled on this device (HostImportFns
        // exists only then); ptr is aligned (`possible`) host memory.
        // (ash 0.38 has no wrapper for it: the raw entry point.)
        unsafe {
            (h.fns.fp().get_memory_host_pointer_properties_ext)(
                h.fns.device(),
                HANDLE,
                ptr.cast_const().cast(),
                &mut props,
            )
        }
        .result()
        .vk("vkGetMemoryHostPointerPropertiesEXT")?;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE);
        let info = vk::BufferCreateInfo::default()
            .size(len)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: valid device; len > 0 (`possible`).
        let buffer = unsafe { gpu.device.create_buffer(&info, None) }.vk("vkCreateBuffer")?;
        // SAFETY: valid buffer of this device.
        let req = unsafe { gpu.device.get_buffer_memory_requirements(buffer) };
        let types = req.memory_type_bits & props.memory_type_bits;
        // Coherent only: the PEs read and write these buffers through their
        // own mappings, with no flush or invalidate.
        let coherent = |i: u32| {
            gpu.memory_properties.memory_types[i as usize]
                .property_flags
                .contains(vk::MemoryPropertyFlags::HOST_COHERENT)
        };
        let memory_type = (0..gpu.memory_properties.memory_type_count)
            .find(|&i| types & (1 << i) != 0 && coherent(i));
        let Some(memory_type) = memory_type.filter(|_| req.size <= len && req.alignment <= 1 << 12)
        else {
            // SAFETY: not bound, not in use.
            unsafe { gpu.device.destroy_buffer(buffer, None) };
            return Err(Error::Unsupported {
                device: gpu.info.name.clone(),
                what: format!(
                    "a host-coherent memory type for {len} bytes of imported host memory under a transfer buffer (needs {} bytes)",
                    req.size
                ),
            });
        };
        let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
            .handle_type(HANDLE)
            .host_pointer(ptr.cast());
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(len)
            .memory_type_index(memory_type)
            .push_next(&mut import);
        // SAFETY: the pointer and size are multiples of
        // minImportedHostPointerAlignment (VUID-VkImportMemoryHostPointerInfoEXT-pHostPointer-01757,
        // VUID-VkMemoryAllocateInfo-allocationSize-01745), the type is one
        // vkGetMemoryHostPointerPropertiesEXT allows for it (-01744), and the
        // caller keeps the range mapped while the import lives.
        let memory = match unsafe { gpu.device.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: not bound, not in use.
                unsafe { gpu.device.destroy_buffer(buffer, None) };
                return Err(Error::Vulkan {
                    call: "vkAllocateMemory (host pointer import)",
                    result: e,
                });
            }
        };
        // SAFETY: the memory holds `len` >= req.size bytes (checked) of an
        // allowed type, bound at offset 0 (VUID-vkBindBufferMemory-size-01037).
        if let Err(e) = unsafe { gpu.device.bind_buffer_memory(buffer, memory, 0) } {
            // SAFETY: neither is in use.
            unsafe {
                gpu.device.destroy_buffer(buffer, None);
                gpu.device.free_memory(memory, None);
            }
            return Err(Error::Vulkan {
                call: "vkBindBufferMemory",
                result: e,
            });
        }
        Ok(HostImport {
            gpu: gpu.clone(),
            buffer,
            memory,
            size: len,
        })
    }

    /// Bytes imported.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for HostImport {
    fn drop(&mut self) {
        // SAFETY: submissions that use the buffer wait for completion before
        // returning (the submitter), so the device no longer uses either
        // object (VUID-vkDestroyBuffer-buffer-00922, VUID-vkFreeMemory-memory-00677).
        unsafe {
            self.gpu.device.destroy_buffer(self.buffer, None);
            self.gpu.device.free_memory(self.memory, None);
        }
    }
}
