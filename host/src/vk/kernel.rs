//! A compute kernel: SPIR-V module, descriptor sets of storage buffers (set `s`
//! has bindings 0..n_s), and optional push constants ("immediates").

use std::ffi::CString;
use std::sync::Arc;

use ash::vk;

use super::Gpu;
use crate::error::{Error, Result, VkContext};

/// A compute pipeline ready to dispatch.
pub struct Kernel {
    pub(crate) gpu: Arc<Gpu>,
    module: vk::ShaderModule,
    pub(crate) set_layouts: Vec<vk::DescriptorSetLayout>,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
    sets: Vec<u32>,
    push_bytes: u32,
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
        let mut k = Kernel {
            gpu: gpu.clone(),
            module: vk::ShaderModule::null(),
            set_layouts: Vec::new(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            sets: sets.to_vec(),
            push_bytes,
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
        let pipes =
            unsafe { d.create_compute_pipelines(cache, &info, None) }.map_err(|(_, r)| {
                Error::Vulkan {
                    call: "vkCreateComputePipelines",
                    result: r,
                }
            })?;
        k.pipeline = pipes[0];
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
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let d = &self.gpu.device;
        // SAFETY: dispatches wait for completion before returning, so nothing uses
        // these objects; destroying null handles is a no-op.
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            for &l in &self.set_layouts {
                d.destroy_descriptor_set_layout(l, None);
            }
            d.destroy_shader_module(self.module, None);
        }
    }
}
