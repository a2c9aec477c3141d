//! A compute kernel: SPIR-V module, descriptor sets of storage buffers (set `s`
//! has bindings 0..n_s), and optional push constants ("immediates").

use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ash::vk;

use super::Gpu;
use crate::error::{Error, Result, VkContext};

/// A compute pipeline ready to dispatch.
pub struct Kernel {
    pub(crate) gpu: Arc<Gpu>,
    /// Unique in the process, never reused: what a recorded submission that
    /// dispatches this kernel is known by (`super::submit`'s reuse; a
    /// pipeline handle can come back for another kernel once this one is
    /// destroyed).
    pub(crate) id: u64,
    module: vk::ShaderModule,
    pub(crate) set_layouts: Vec<vk::DescriptorSetLayout>,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
    sets: Vec<u32>,
    push_bytes: u32,
    /// A descriptor set 0 bound once to fixed windows, with its pool
    /// ([`Kernel::fixed_set`]).
    fixed: std::sync::Mutex<Option<(vk::DescriptorPool, Vec<vk::DescriptorSet>)>>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("sets", &self.sets)
            .field("push_bytes", &self.push_bytes)
            .finish()
    }
}

impl Kernel {
    /// Builds a pipeline from `spirv` with entry point `entry`, `sets[s]` storage
    /// buffers in set `s` and `push_bytes` of push constants (a multiple of 4).
    pub fn new(
        gpu: &Arc<Gpu>,
        spirv: &[u32],
        entry: &str,
        sets: &[u32],
        push_bytes: u32,
    ) -> Result<Kernel> {
        let total: u32 = sets.iter().sum();
        let limit = gpu.info.max_storage_buffers_per_stage;
        if total > limit {
            return Err(Error::InvalidArgument(format!(
                "a kernel on this device may bind at most {limit} storage buffers \
                 (maxPerStageDescriptorStorageBuffers), not {total}"
            )));
        }
        if push_bytes % 4 != 0 || push_bytes > gpu.info.max_push_constants {
            return Err(Error::InvalidArgument(format!(
                "push constants of {push_bytes} bytes: must be a multiple of 4 and at most {}",
                gpu.info.max_push_constants
            )));
        }
        let entry = CString::new(entry)
            .map_err(|_| Error::InvalidArgument("entry point name contains NUL".into()))?;
        let d = &gpu.device;
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let mut k = Kernel {
            gpu: gpu.clone(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            module: vk::ShaderModule::null(),
            set_layouts: Vec::new(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            sets: sets.to_vec(),
            push_bytes,
            fixed: Default::default(),
        };
        // From here on, `k`'s Drop destroys whatever was created if a step fails.
        let info = vk::ShaderModuleCreateInfo::default().code(spirv);
        // SAFETY: valid device; `spirv` is SPIR-V produced by naga (validated).
        k.module = unsafe { d.create_shader_module(&info, None) }.vk("vkCreateShaderModule")?;
        for &n in sets {
            let binds: Vec<_> = (0..n)
                .map(|i| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(i)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds);
            // SAFETY: valid device and create info.
            let l = unsafe { d.create_descriptor_set_layout(&info, None) }
                .vk("vkCreateDescriptorSetLayout")?;
            k.set_layouts.push(l);
        }
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(push_bytes)];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&k.set_layouts)
            .push_constant_ranges(if push_bytes > 0 { &ranges } else { &[] });
        // SAFETY: valid device and create info.
        k.layout = unsafe { d.create_pipeline_layout(&info, None) }.vk("vkCreatePipelineLayout")?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(k.module)
            .name(&entry);
        let info = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(k.layout)];
        let cache = gpu.pipeline_cache.handle();
        // SAFETY: valid device, module and layout; the pipeline cache is null or a
        // cache of this device (VUID-vkCreateComputePipelines-pipelineCache-parent)
        // created without VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT, and
        // vkCreateComputePipelines' host synchronization rule asks for external
        // synchronization of the cache only with that bit: threads may build
        // pipelines with it at once.
        let started = std::time::Instant::now();
        let pipes =
            unsafe { d.create_compute_pipelines(cache, &info, None) }.map_err(|(_, r)| {
                Error::Vulkan {
                    call: "vkCreateComputePipelines",
                    result: r,
                }
            })?;
        k.pipeline = pipes[0];
        // Where drivers compile (llvmpipe: seconds for large kernels, unless
        // Mesa's disk cache has the shader).
        tracing::debug!(
            ms = started.elapsed().as_millis() as u64,
            spirv_words = spirv.len(),
            "pipeline created"
        );
        Ok(k)
    }

    /// Number of storage buffer bindings of each descriptor set.
    pub fn sets(&self) -> &[u32] {
        &self.sets
    }

    /// Bytes of push constants.
    pub fn push_bytes(&self) -> u32 {
        self.push_bytes
    }

    /// For a kernel whose descriptor sets after the first have no bindings:
    /// its sets, the first bound to `windows`, allocated and written at the
    /// first call and never changed after (later calls must pass the same
    /// windows: the device library's, fixed for a context). Commands recorded
    /// with them stay valid as long as the kernel.
    pub fn fixed_sets(&self, windows: &[super::submit::Window]) -> Result<Vec<vk::DescriptorSet>> {
        let mut fixed = self.fixed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, sets)) = &*fixed {
            return Ok(sets.clone());
        }
        if self.sets.first() != Some(&(windows.len() as u32))
            || self.sets[1..].iter().any(|&n| n > 0)
        {
            return Err(Error::InvalidArgument(format!(
                "kernel has bindings {:?} per descriptor set, one set of {} given",
                self.sets,
                windows.len()
            )));
        }
        let d = &self.gpu.device;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(self.sets[0].max(1))];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(self.set_layouts.len() as u32)
            .pool_sizes(&sizes);
        // SAFETY: valid device and create info.
        let pool = unsafe { d.create_descriptor_pool(&info, None) }.vk("vkCreateDescriptorPool")?;
        let info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&self.set_layouts);
        // SAFETY: the pool has room for exactly these sets.
        let sets = match unsafe { d.allocate_descriptor_sets(&info) } {
            Ok(s) => s,
            Err(r) => {
                // SAFETY: nothing was allocated from it.
                unsafe { d.destroy_descriptor_pool(pool, None) };
                return Err(Error::Vulkan {
                    call: "vkAllocateDescriptorSets",
                    result: r,
                });
            }
        };
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = windows
            .iter()
            .map(|w| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(w.buffer)
                    .offset(w.offset)
                    .range(w.range)]
            })
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(sets[0])
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set is new, so no command buffer uses it; the windows were
        // checked against the device's limits by the caller (the library's).
        unsafe { d.update_descriptor_sets(&writes, &[]) };
        *fixed = Some((pool, sets.clone()));
        Ok(sets)
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let d = &self.gpu.device;
        // SAFETY: dispatches wait for completion before returning (their
        // fence, or with completion words the word a submission sets after
        // every command, its fence waited for before the next), and queued
        // commands recorded with the kernel complete before it goes (their
        // handles borrow the context that holds it), so nothing uses
        // these objects; destroying null handles is a no-op.
        unsafe {
            if let Some((pool, _)) = self.fixed.lock().unwrap_or_else(|p| p.into_inner()).take() {
                d.destroy_descriptor_pool(pool, None);
            }
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            for &l in &self.set_layouts {
                d.destroy_descriptor_set_layout(l, None);
            }
            d.destroy_shader_module(self.module, None);
        }
    }
}
