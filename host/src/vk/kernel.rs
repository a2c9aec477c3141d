//! A compute kernel: SPIR-V module, one descriptor set of storage buffers
//! (set 0, bindings 0..n), and optional push constants ("immediates").

use std::ffi::CString;
use std::sync::Arc;

use ash::vk;

use super::Gpu;
use crate::error::{Error, Result, VkContext};

/// Most storage buffer bindings a kernel may declare (Mesa 22.3's per-stage limit).
pub const MAX_BINDINGS: u32 = 32;

/// A compute pipeline ready to dispatch.
pub struct Kernel {
    gpu: Arc<Gpu>,
    module: vk::ShaderModule,
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
    bindings: u32,
    push_bytes: u32,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("bindings", &self.bindings)
            .field("push_bytes", &self.push_bytes)
            .finish()
    }
}

impl Kernel {
    /// Builds a pipeline from `spirv` with entry point `entry`, `bindings` storage
    /// buffers in set 0 and `push_bytes` of push constants (a multiple of 4).
    pub fn new(
        gpu: &Arc<Gpu>,
        spirv: &[u32],
        entry: &str,
        bindings: u32,
        push_bytes: u32,
    ) -> Result<Kernel> {
        if bindings > MAX_BINDINGS {
            return Err(Error::InvalidArgument(format!(
                "a kernel may bind at most {MAX_BINDINGS} storage buffers, not {bindings}"
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
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            bindings,
            push_bytes,
        };
        // From here on, `k`'s Drop destroys whatever was created if a step fails.
        let info = vk::ShaderModuleCreateInfo::default().code(spirv);
        // SAFETY: valid device; `spirv` is SPIR-V produced by naga (validated).
        k.module = unsafe { d.create_shader_module(&info, None) }.vk("vkCreateShaderModule")?;
        let binds: Vec<_> = (0..bindings)
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
        k.set_layout = unsafe { d.create_descriptor_set_layout(&info, None) }
            .vk("vkCreateDescriptorSetLayout")?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(push_bytes)];
        let layouts = [k.set_layout];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&layouts)
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
        // SAFETY: valid device, module and layout.
        let pipes = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &info, None) }
            .map_err(|(_, r)| Error::Vulkan {
            call: "vkCreateComputePipelines",
            result: r,
        })?;
        k.pipeline = pipes[0];
        Ok(k)
    }

    /// Number of storage buffer bindings.
    pub fn bindings(&self) -> u32 {
        self.bindings
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
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_shader_module(self.module, None);
        }
    }
}
