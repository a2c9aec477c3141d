//! Device memory that other processes can import: one dedicated allocation with one
//! storage buffer over it, exported and imported as an opaque fd
//! (`VK_KHR_external_memory_fd`). The host mapping sits at an address aligned
//! to the block's size rounded up to a power of two (2 MiB to 1 GiB) where
//! the memory allows ([`super::aligned_map`]).

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;

use ash::vk;

use super::aligned_map::{map_align, AlignedAlias};
use super::Gpu;
use crate::error::{Error, Result, VkContext};

const HANDLE: vk::ExternalMemoryHandleTypeFlags = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;

fn usage() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST
}

/// Returns a descriptor for the same memory with an open file description of its
/// own, when `fd` is a memfd (lavapipe's opaque fds are).
///
/// Mesa's lavapipe imports an opaque fd by `lseek(fd, 0)` then `read(fd, header)`
/// (`os_import_memory_fd`). Descriptors passed with SCM_RIGHTS share one open file
/// description, hence one file offset, across every process that received them, so
/// PEs importing the same peer's heap at once race on that offset and some imports
/// fail with VK_ERROR_INVALID_EXTERNAL_HANDLE. Reopening a memfd through
/// `/proc/self/fd` gives a new description of the same memory. Other kinds of fd
/// (a GPU driver's) are returned untouched: reopening a device node would not name
/// the same memory.
fn private_description(fd: OwnedFd) -> Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let is_memfd = std::fs::read_link(&link)
        .map(|target| target.to_string_lossy().starts_with("/memfd:"))
        .unwrap_or(false);
    if !is_memfd {
        return Ok(fd);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&link)
        .map_err(|e| Error::io("reopening a peer's heap memfd", e))?;
    Ok(OwnedFd::from(file))
}

/// One process's view of a symmetric heap block: its own (exported) or a peer's
/// (imported).
pub struct SharedMemory {
    gpu: Arc<Gpu>,
    pub(crate) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    memory_type: u32,
    mapped: Option<NonNull<u8>>,
    /// The same pages mapped again at an aligned address, where they can be.
    aligned: Option<AlignedAlias>,
}

impl std::fmt::Debug for SharedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMemory")
            .field("size", &self.size)
            .field("memory_type", &self.memory_type)
            .field("mapped", &self.mapped.is_some())
            .field("aligned", &self.aligned.is_some())
            .finish()
    }
}

// SAFETY: the raw handles are plain identifiers; Vulkan allows using a buffer and
// memory object from any thread as long as commands recording/submission is
// externally synchronized, which Gpu's queue mutex and the submitter do. The mapping
// pointer is only used for bounds-checked copies.
unsafe impl Send for SharedMemory {}
// SAFETY: as above; no interior mutation happens through `&SharedMemory` except
// through the mapping, whose users copy bytes with raw pointers (no references).
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    fn create_buffer(gpu: &Gpu, size: u64) -> Result<vk::Buffer> {
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage())
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: valid device; size > 0 checked by callers; the external handle type
        // was reported exportable/importable by `check_external`.
        unsafe { gpu.device.create_buffer(&info, None) }.vk("vkCreateBuffer")
    }

    /// Whether the device can export and import storage buffers as opaque fds.
    fn check_external(gpu: &Gpu) -> Result<()> {
        let info = vk::PhysicalDeviceExternalBufferInfo::default()
            .usage(usage())
            .handle_type(HANDLE);
        let mut props = vk::ExternalBufferProperties::default();
        // SAFETY: valid physical device; out-struct is live.
        unsafe {
            gpu.instance.get_physical_device_external_buffer_properties(
                gpu.physical,
                &info,
                &mut props,
            )
        };
        let f = props.external_memory_properties.external_memory_features;
        let need =
            vk::ExternalMemoryFeatureFlags::EXPORTABLE | vk::ExternalMemoryFeatureFlags::IMPORTABLE;
        if !f.contains(need) {
            return Err(Error::Unsupported {
                device: gpu.info.name.clone(),
                what: format!(
                    "exportable and importable opaque-fd storage buffers (features {f:?})"
                ),
            });
        }
        Ok(())
    }

    /// Chooses the memory type: device-local and host-visible+coherent when such a
    /// type's heap has room for twice the size (host mapping for free), else
    /// device-local, else anything allowed.
    fn choose_type(gpu: &Gpu, allowed: u32, size: u64) -> Option<u32> {
        let mp = &gpu.memory_properties;
        let types = &mp.memory_types[..mp.memory_type_count as usize];
        let ok = |i: usize| allowed & (1 << i) != 0;
        let has = |i: usize, f: vk::MemoryPropertyFlags| types[i].property_flags.contains(f);
        let heap_size = |i: usize| mp.memory_heaps[types[i].heap_index as usize].size;
        let dl = vk::MemoryPropertyFlags::DEVICE_LOCAL;
        let hv = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        (0..types.len())
            .find(|&i| ok(i) && has(i, dl | hv) && heap_size(i) >= size.saturating_mul(2))
            .or_else(|| (0..types.len()).find(|&i| ok(i) && has(i, dl)))
            .or_else(|| (0..types.len()).find(|&i| ok(i)))
            .map(|i| i as u32)
    }

    fn bind_and_map(
        gpu: &Arc<Gpu>,
        buffer: vk::Buffer,
        memory: vk::DeviceMemory,
        size: u64,
        memory_type: u32,
        map: bool,
    ) -> Result<SharedMemory> {
        let mut me = SharedMemory {
            gpu: gpu.clone(),
            buffer,
            memory,
            size,
            memory_type,
            mapped: None,
            aligned: None,
        };
        // SAFETY: the memory was allocated dedicated to this buffer, with the size
        // of its requirements, at offset 0 (VUID-vkBindBufferMemory-memory-01508).
        unsafe { gpu.device.bind_buffer_memory(buffer, memory, 0) }.vk("vkBindBufferMemory")?;
        let flags = gpu.memory_properties.memory_types[memory_type as usize].property_flags;
        if map
            && flags.contains(
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            )
        {
            // SAFETY: host-visible memory, not mapped yet, whole range.
            let p = unsafe {
                gpu.device
                    .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
            }
            .vk("vkMapMemory")?;
            me.mapped = NonNull::new(p.cast());
        }
        Ok(me)
    }

    /// Allocates `size` bytes of exportable memory, mapped for the host when
    /// its type allows and `map`.
    pub fn export_new(gpu: &Arc<Gpu>, size: u64, map: bool) -> Result<SharedMemory> {
        Self::check_external(gpu)?;
        let buffer = Self::create_buffer(gpu, size)?;
        // SAFETY: valid buffer of this device.
        let req = unsafe { gpu.device.get_buffer_memory_requirements(buffer) };
        let destroy_buffer = || {
            // SAFETY: the buffer is not in use and not bound.
            unsafe { gpu.device.destroy_buffer(buffer, None) }
        };
        let Some(memory_type) = Self::choose_type(gpu, req.memory_type_bits, req.size) else {
            destroy_buffer();
            return Err(Error::Unsupported {
                device: gpu.info.name.clone(),
                what: "a memory type for exportable storage buffers".into(),
            });
        };
        let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(HANDLE);
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let info = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(memory_type)
            .push_next(&mut export)
            .push_next(&mut dedicated);
        // SAFETY: the type is allowed by the buffer's requirements; export and
        // dedicated info are valid for a buffer created with the same handle type.
        let memory = match unsafe { gpu.device.allocate_memory(&info, None) } {
            Ok(m) => m,
            Err(e) => {
                destroy_buffer();
                return Err(match e {
                    vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
                        Error::InvalidArgument(format!(
                            "cannot allocate a symmetric heap of {size} bytes on {} ({e:?}); lower VKSHMEM_SYMMETRIC_SIZE",
                            gpu.info.name
                        ))
                    }
                    e => Error::Vulkan { call: "vkAllocateMemory", result: e },
                });
            }
        };
        let mut me = Self::bind_and_map(gpu, buffer, memory, req.size, memory_type, map)
            .inspect_err(|_| {
                // SAFETY: neither object is in use yet.
                unsafe {
                    gpu.device.destroy_buffer(buffer, None);
                    gpu.device.free_memory(memory, None);
                }
            })?;
        if me.mapped.is_some() {
            let fd = me.export_fd()?;
            me.place(fd.as_fd());
        }
        Ok(me)
    }

    /// Maps the memory again at an address aligned to [`map_align`] of its
    /// size where the driver's mapping is a shared mapping of `fd`'s file (the
    /// memory's exported or imported fd); else keeps the driver's mapping.
    fn place(&mut self, fd: BorrowedFd<'_>) {
        let Some(p) = self.mapped else { return };
        let Ok(len) = usize::try_from(self.size) else {
            return;
        };
        if p.as_ptr() as usize % map_align(len) == 0 {
            return;
        }
        match AlignedAlias::new(p, self.size, fd) {
            Ok(a) => self.aligned = Some(a),
            Err(why) => tracing::debug!(
                "heap mapping left at {p:p} (aligned to {} bytes): {why}",
                1usize << (p.as_ptr() as usize).trailing_zeros()
            ),
        }
    }

    /// Exports a new fd referring to this memory (the caller owns it).
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let info = vk::MemoryGetFdInfoKHR::default()
            .memory(self.memory)
            .handle_type(HANDLE);
        // SAFETY: the memory was allocated with ExportMemoryAllocateInfo for HANDLE.
        let fd = unsafe { self.gpu.external_fd.get_memory_fd(&info) }.vk("vkGetMemoryFdKHR")?;
        // SAFETY: vkGetMemoryFdKHR returns a new descriptor owned by the caller.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Imports a peer's memory of `size` bytes and type `memory_type` from `fd`,
    /// mapped for the host when its type allows and `map`. The peer must be on
    /// the same physical device and driver (equal UUIDs).
    pub fn import(
        gpu: &Arc<Gpu>,
        fd: OwnedFd,
        size: u64,
        memory_type: u32,
        map: bool,
    ) -> Result<SharedMemory> {
        if memory_type >= gpu.memory_properties.memory_type_count {
            return Err(Error::Bootstrap(format!(
                "peer sent memory type {memory_type}, which does not exist here"
            )));
        }
        let buffer = Self::create_buffer(gpu, size)?;
        // SAFETY: valid buffer of this device.
        let req = unsafe { gpu.device.get_buffer_memory_requirements(buffer) };
        if req.memory_type_bits & (1 << memory_type) == 0 || req.size > size {
            // SAFETY: the buffer is unused.
            unsafe { gpu.device.destroy_buffer(buffer, None) };
            return Err(Error::Bootstrap(format!(
                "peer heap (type {memory_type}, {size} bytes) does not fit a local buffer (types {:#x}, {} bytes)",
                req.memory_type_bits, req.size
            )));
        }
        let fd = private_description(fd)?;
        // The driver owns the imported fd; this copy names the same file for
        // placing the mapping.
        let kept = fd
            .try_clone()
            .map_err(|e| Error::io("duplicating a peer's heap fd", e))?;
        let raw = fd.into_raw_fd();
        let mut import = vk::ImportMemoryFdInfoKHR::default()
            .handle_type(HANDLE)
            .fd(raw);
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let info = vk::MemoryAllocateInfo::default()
            .allocation_size(size)
            .memory_type_index(memory_type)
            .push_next(&mut import)
            .push_next(&mut dedicated);
        // SAFETY: the fd was exported by the same driver on the same device (UUIDs
        // were compared by the caller), with the same size, type and dedicated
        // allocation (VUID-VkMemoryAllocateInfo-allocationSize-01742 and -01743).
        match unsafe { gpu.device.allocate_memory(&info, None) } {
            // On success the implementation owns the fd (VK_KHR_external_memory_fd).
            Ok(memory) => {
                let mut me = Self::bind_and_map(gpu, buffer, memory, size, memory_type, map)?;
                me.place(kept.as_fd());
                Ok(me)
            }
            Err(e) => {
                // On failure we still own it.
                // SAFETY: `raw` came from into_raw_fd above and was not consumed.
                drop(unsafe { OwnedFd::from_raw_fd(raw) });
                // SAFETY: the buffer is unused.
                unsafe { gpu.device.destroy_buffer(buffer, None) };
                Err(Error::Vulkan {
                    call: "vkAllocateMemory (import)",
                    result: e,
                })
            }
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The memory type index (peers import with the same one).
    pub fn memory_type(&self) -> u32 {
        self.memory_type
    }

    /// The host mapping, when the memory is host-visible and coherent:
    /// aligned to the size rounded up to a power of two (2 MiB to 1 GiB)
    /// where the memory allows it.
    pub fn mapped(&self) -> Option<NonNull<u8>> {
        match &self.aligned {
            Some(a) => Some(a.ptr()),
            None => self.mapped,
        }
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        self.aligned = None;
        // SAFETY: users of the buffer (submissions) wait for completion before
        // returning, so the device no longer uses it (VUID-vkDestroyBuffer-buffer-00922);
        // unmapping is implicit in vkFreeMemory.
        unsafe {
            self.gpu.device.destroy_buffer(self.buffer, None);
            self.gpu.device.free_memory(self.memory, None);
        }
    }
}

/// A private host-visible buffer for copies to and from heaps that the host cannot
/// map (device-local only memory), allocated through gpu-allocator.
pub struct Staging {
    gpu: Arc<Gpu>,
    pub(crate) buffer: vk::Buffer,
    allocation: Option<gpu_allocator::vulkan::Allocation>,
    size: u64,
    ptr: NonNull<u8>,
}

// SAFETY: see SharedMemory; the staging buffer is only used under its owner's mutex.
unsafe impl Send for Staging {}

impl Staging {
    /// A host-visible, coherent transfer buffer of `size` bytes (cached where
    /// the device has such memory: the host reads what the device copied).
    pub fn new(gpu: &Arc<Gpu>, size: u64) -> Result<Staging> {
        Self::with_usage(
            gpu,
            size,
            vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST,
            gpu_allocator::MemoryLocation::GpuToCpu,
        )
    }

    /// A host-visible, coherent storage buffer of `size` bytes: something valid
    /// to bind to every binding of a kernel that runs no workgroup (a warm-up
    /// away from the heap).
    pub fn storage(gpu: &Arc<Gpu>, size: u64) -> Result<Staging> {
        Self::with_usage(
            gpu,
            size,
            vk::BufferUsageFlags::STORAGE_BUFFER,
            gpu_allocator::MemoryLocation::CpuToGpu,
        )
    }

    fn with_usage(
        gpu: &Arc<Gpu>,
        size: u64,
        usage: vk::BufferUsageFlags,
        location: gpu_allocator::MemoryLocation,
    ) -> Result<Staging> {
        let d = &gpu.device;
        let info = vk::BufferCreateInfo::default().size(size).usage(usage);
        // SAFETY: valid device, size > 0.
        let buffer = unsafe { d.create_buffer(&info, None) }.vk("vkCreateBuffer")?;
        // SAFETY: valid buffer.
        let requirements = unsafe { d.get_buffer_memory_requirements(buffer) };
        let unsupported = |e: String| Error::Unsupported {
            device: gpu.info.name.clone(),
            what: format!("host-visible coherent memory for staging ({e})"),
        };
        let allocated = gpu
            .allocator
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .ok_or_else(|| unsupported("the device is closing".into()))
            .and_then(|a| {
                a.allocate(&gpu_allocator::vulkan::AllocationCreateDesc {
                    name: "vkshmem staging",
                    requirements,
                    location,
                    linear: true,
                    allocation_scheme: gpu_allocator::vulkan::AllocationScheme::GpuAllocatorManaged,
                })
                .map_err(|e| unsupported(e.to_string()))
            });
        let allocation = match allocated {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: unused buffer.
                unsafe { d.destroy_buffer(buffer, None) };
                return Err(e);
            }
        };
        let mut st = Staging {
            gpu: gpu.clone(),
            buffer,
            size,
            ptr: NonNull::dangling(),
            allocation: None,
        };
        // SAFETY: the allocation satisfies the buffer's requirements (type,
        // size, alignment of its offset: VUID-vkBindBufferMemory-memoryOffset-01036);
        // on failure Drop frees both.
        unsafe { d.bind_buffer_memory(buffer, allocation.memory(), allocation.offset()) }
            .vk("vkBindBufferMemory (staging)")?;
        st.ptr = allocation
            .mapped_ptr()
            .map(|p| p.cast::<u8>())
            .ok_or_else(|| unsupported("gpu-allocator returned unmapped memory".into()))?;
        st.allocation = Some(allocation);
        Ok(st)
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The host mapping.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // SAFETY: transfers wait for completion, so the device no longer uses it.
        unsafe { self.gpu.device.destroy_buffer(self.buffer, None) };
        if let Some(a) = self.allocation.take() {
            if let Some(alloc) = self
                .gpu
                .allocator
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            {
                if let Err(e) = alloc.free(a) {
                    tracing::warn!("freeing a staging buffer: {e}");
                }
            }
        }
    }
}
