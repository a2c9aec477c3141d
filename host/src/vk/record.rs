//! Recording into a command buffer that someone else submits: the queued
//! collectives' commands (`crate::queue`). Unlike [`super::submit`], nothing
//! here submits or waits; the caller guarantees that the command buffer is in
//! the recording state and belongs to the context's device and queue family.

use std::sync::Arc;

use ash::vk;

use super::kernel::Kernel;
use super::Gpu;
use crate::error::{Result, VkContext};

/// Every stage and access a queued collective's commands touch or must be
/// ordered with: the user's compute and transfer work before and after, and
/// the host reading what the queue wrote.
fn all_work() -> (vk::PipelineStageFlags, vk::AccessFlags) {
    (
        vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::SHADER_READ
            | vk::AccessFlags::SHADER_WRITE
            | vk::AccessFlags::TRANSFER_READ
            | vk::AccessFlags::TRANSFER_WRITE,
    )
}

/// Commands recorded into a command buffer the caller owns.
pub struct Recorder<'a> {
    gpu: &'a Gpu,
    cmd: vk::CommandBuffer,
}

impl<'a> Recorder<'a> {
    /// Records into `cmd`.
    ///
    /// # Safety
    /// `cmd` is a primary command buffer of `gpu`'s device, allocated from a
    /// pool of `gpu`'s queue family, in the recording state, outside a render
    /// pass, not being recorded by another thread
    /// (VUID-vkCmdDispatch-commandBuffer-recording and the
    /// externally-synchronized rule of every `vkCmd*`), and it is submitted only
    /// to `gpu`'s queue.
    pub unsafe fn new(gpu: &'a Gpu, cmd: vk::CommandBuffer) -> Recorder<'a> {
        Recorder { gpu, cmd }
    }

    /// A global memory barrier: every compute and transfer write recorded or
    /// submitted before it (the user's work, an earlier collective) is visible
    /// to every compute and transfer access after it, and to the host when
    /// `host`.
    pub fn barrier(&self, host: bool) {
        let (stages, access) = all_work();
        let (dst_stages, dst_access) = if host {
            (
                stages | vk::PipelineStageFlags::HOST,
                access | vk::AccessFlags::HOST_READ,
            )
        } else {
            (stages, access)
        };
        let b = [vk::MemoryBarrier::default()
            .src_access_mask(access)
            .dst_access_mask(dst_access)];
        // SAFETY: recording state (`new`); the stages exist on a compute queue
        // (HOST needs no queue support).
        unsafe {
            self.gpu.device.cmd_pipeline_barrier(
                self.cmd,
                stages,
                dst_stages,
                vk::DependencyFlags::empty(),
                &b,
                &[],
                &[],
            )
        };
    }

    /// Dispatches `kernel` over `groups` with `sets` bound as its descriptor
    /// sets and `push` as its push constants.
    pub fn dispatch(
        &self,
        kernel: &Kernel,
        sets: &[vk::DescriptorSet],
        push: &[u8],
        groups: [u32; 3],
    ) {
        let d = &self.gpu.device;
        // SAFETY: recording state; the pipeline, its layout and `sets` (allocated
        // with the layout's set layouts, `Kernel::fixed_sets`) belong to this device;
        // `push` is the kernel's push-constant size (checked by the caller).
        unsafe {
            d.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, kernel.pipeline);
            d.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                kernel.layout,
                0,
                sets,
                &[],
            );
            if !push.is_empty() {
                d.cmd_push_constants(
                    self.cmd,
                    kernel.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    push,
                );
            }
            d.cmd_dispatch(self.cmd, groups[0], groups[1], groups[2]);
        }
    }

    /// Copies `size` bytes (a multiple of 4) between two buffers of this device.
    pub fn copy(
        &self,
        src: vk::Buffer,
        src_offset: u64,
        dst: vk::Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        let region = [vk::BufferCopy::default()
            .src_offset(src_offset)
            .dst_offset(dst_offset)
            .size(size)];
        // SAFETY: recording state; both buffers have TRANSFER usage and the
        // region lies inside them (the caller's layout).
        unsafe { self.gpu.device.cmd_copy_buffer(self.cmd, src, dst, &region) };
    }

    /// Writes `data` (a multiple of 4 bytes, at most 65536) at `offset` (a
    /// multiple of 4) of `buffer`, when the command runs: the bytes travel in
    /// the command buffer.
    pub fn update(&self, buffer: vk::Buffer, offset: u64, data: &[u8]) {
        debug_assert!(data.len() % 4 == 0 && data.len() <= 65536 && offset % 4 == 0);
        // SAFETY: recording state; TRANSFER_DST usage; offset and size multiples
        // of 4, size at most 65536, inside the buffer (the caller's layout)
        // (VUID-vkCmdUpdateBuffer-dstOffset-00036, -dataSize-00037, -00038).
        unsafe {
            self.gpu
                .device
                .cmd_update_buffer(self.cmd, buffer, offset, data)
        };
    }

    /// Fills `size` bytes (a multiple of 4) at `offset` (a multiple of 4) of
    /// `buffer` with the word `value`.
    pub fn fill(&self, buffer: vk::Buffer, offset: u64, size: u64, value: u32) {
        // SAFETY: recording state; TRANSFER_DST usage; offset and size multiples
        // of 4 inside the buffer (VUID-vkCmdFillBuffer-dstOffset-00025, -size-00028).
        unsafe {
            self.gpu
                .device
                .cmd_fill_buffer(self.cmd, buffer, offset, size, value)
        };
    }
}

/// A semaphore wait or signal of a submission: a binary semaphore (`value`
/// ignored) or a timeline semaphore and the value to wait for or set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemaphorePoint {
    /// The semaphore (of the context's device).
    pub semaphore: vk::Semaphore,
    /// The timeline value (0 for a binary semaphore).
    pub value: u64,
}

/// A command buffer with its own pool and fence, for work the context records
/// and submits itself (nonblocking and persistent collectives).
pub struct OwnedCommands {
    gpu: Arc<Gpu>,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    /// Submitted, and the fence not yet seen signaled.
    in_flight: bool,
}

impl std::fmt::Debug for OwnedCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedCommands")
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl OwnedCommands {
    /// Creates the pool, one primary command buffer and an unsignaled fence.
    pub fn new(gpu: &Arc<Gpu>) -> Result<OwnedCommands> {
        let d = &gpu.device;
        let mut c = OwnedCommands {
            gpu: gpu.clone(),
            pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            in_flight: false,
        };
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(gpu.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device; the family exists. On a later failure Drop
        // destroys what exists (null handles are ignored).
        c.pool = unsafe { d.create_command_pool(&info, None) }.vk("vkCreateCommandPool")?;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(c.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: valid pool.
        c.cmd = unsafe { d.allocate_command_buffers(&info) }.vk("vkAllocateCommandBuffers")?[0];
        // SAFETY: valid device.
        c.fence =
            unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.vk("vkCreateFence")?;
        Ok(c)
    }

    /// Resets the command buffer and begins recording; `reusable`: it will be
    /// submitted more than once (persistent collectives), else once.
    pub fn begin(&mut self, reusable: bool) -> Result<Recorder<'_>> {
        self.settle_for_reuse()?;
        let d = &self.gpu.device;
        let flags = if reusable {
            vk::CommandBufferUsageFlags::empty()
        } else {
            vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT
        };
        // SAFETY: not in flight (settled above), so it may be reset and
        // re-recorded (VUID-vkBeginCommandBuffer-commandBuffer-00049); its pool
        // was created with RESET_COMMAND_BUFFER.
        unsafe {
            d.reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty())
                .vk("vkResetCommandBuffer")?;
            d.begin_command_buffer(
                self.cmd,
                &vk::CommandBufferBeginInfo::default().flags(flags),
            )
            .vk("vkBeginCommandBuffer")?;
            Ok(Recorder::new(&self.gpu, self.cmd))
        }
    }

    /// Ends recording.
    pub fn end(&mut self) -> Result<()> {
        // SAFETY: recording state (begin).
        unsafe { self.gpu.device.end_command_buffer(self.cmd) }.vk("vkEndCommandBuffer")
    }

    /// Submits the recorded commands to the context's queue after `waits`,
    /// signaling `signals` and the fence when they complete.
    pub fn submit(&mut self, waits: &[SemaphorePoint], signals: &[SemaphorePoint]) -> Result<()> {
        self.settle_for_reuse()?;
        let d = &self.gpu.device;
        let wait_sems: Vec<_> = waits.iter().map(|w| w.semaphore).collect();
        let wait_vals: Vec<_> = waits.iter().map(|w| w.value).collect();
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; waits.len()];
        let sig_sems: Vec<_> = signals.iter().map(|s| s.semaphore).collect();
        let sig_vals: Vec<_> = signals.iter().map(|s| s.value).collect();
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_vals)
            .signal_semaphore_values(&sig_vals);
        let cmds = [self.cmd];
        let mut info = vk::SubmitInfo::default()
            .command_buffers(&cmds)
            .wait_semaphores(&wait_sems)
            .wait_dst_stage_mask(&stages)
            .signal_semaphores(&sig_sems);
        if !waits.is_empty() || !signals.is_empty() {
            // Values of binary semaphores are ignored (VkTimelineSemaphoreSubmitInfo).
            info = info.push_next(&mut timeline);
        }
        let q = self.gpu.queue.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the command buffer is executable (ended) and not in flight;
        // the fence is unsignaled (reset when it was last seen signaled); the
        // queue lock gives vkQueueSubmit's external synchronization
        // (VUID-vkQueueSubmit-queue-00893); the caller vouches for the semaphores.
        unsafe { d.queue_submit(*q, &[info], self.fence) }.vk("vkQueueSubmit")?;
        self.in_flight = true;
        Ok(())
    }

    /// Whether the last submission completed (never blocks).
    pub fn done(&mut self) -> Result<bool> {
        if !self.in_flight {
            return Ok(true);
        }
        // SAFETY: the fence belongs to this device.
        let signaled =
            unsafe { self.gpu.device.get_fence_status(self.fence) }.vk("vkGetFenceStatus")?;
        if signaled {
            self.settle_for_reuse()?;
        }
        Ok(signaled)
    }

    /// Waits up to `timeout` for the last submission; whether it completed.
    pub fn wait(&mut self, timeout: std::time::Duration) -> Result<bool> {
        if !self.in_flight {
            return Ok(true);
        }
        // SAFETY: the fence belongs to this device and was submitted.
        match unsafe {
            self.gpu
                .device
                .wait_for_fences(&[self.fence], true, timeout.as_nanos() as u64)
        } {
            Ok(()) => {
                self.settle_for_reuse()?;
                Ok(true)
            }
            Err(vk::Result::TIMEOUT) => Ok(false),
            Err(r) => Err(crate::error::Error::Vulkan {
                call: "vkWaitForFences",
                result: r,
            }),
        }
    }

    /// After the fence signaled: resets it for the next submission. Fails
    /// while the submission is still running.
    fn settle_for_reuse(&mut self) -> Result<()> {
        if !self.in_flight {
            return Ok(());
        }
        // SAFETY: the fence belongs to this device.
        if !unsafe { self.gpu.device.get_fence_status(self.fence) }.vk("vkGetFenceStatus")? {
            return Err(crate::error::Error::InvalidArgument(
                "the previous submission of these commands is still running".into(),
            ));
        }
        // SAFETY: signaled, so no queue uses it (VUID-vkResetFences-pFences-01123).
        unsafe { self.gpu.device.reset_fences(&[self.fence]) }.vk("vkResetFences")?;
        self.in_flight = false;
        Ok(())
    }
}

impl Drop for OwnedCommands {
    fn drop(&mut self) {
        let d = &self.gpu.device;
        if self.in_flight {
            // The owner waits before dropping; if it could not (an error), the
            // commands must still finish before their objects go
            // (VUID-vkDestroyCommandPool-commandPool-00041): every device wait
            // in them ends on the abort word or the peers' arrival.
            // SAFETY: the fence belongs to this device.
            let _ = unsafe { d.wait_for_fences(&[self.fence], true, u64::MAX) };
        }
        // SAFETY: nothing is in flight (above); null handles are ignored.
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}
