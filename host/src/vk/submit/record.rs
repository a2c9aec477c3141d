//! Recording: the commands of a submission (dispatches, their descriptor
//! sets, barriers, timestamps, a read-back) written into one of the
//! submitter's command buffers.

use std::sync::Arc;
use std::time::Duration;

use ash::vk;

use super::reuse::{key_of, Found};
use super::{
    batch_len, pool_descriptors, Dispatch, Readback, Staging, Submitter, MAX_BATCH, READBACK_MAX,
};
use crate::error::{Error, Result, VkContext};

/// Records a global memory barrier in `cmd`: writes of `src` (stages,
/// accesses) made available and visible to `dst`'s.
///
/// # Safety
/// `cmd` is a command buffer of `d` in the recording state, not used by
/// another thread (vkCmdPipelineBarrier's external synchronization), and the
/// stages are ones its queue supports (compute, transfer, host).
unsafe fn memory_barrier(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    src: (vk::PipelineStageFlags, vk::AccessFlags),
    dst: (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let b = [vk::MemoryBarrier::default()
        .src_access_mask(src.1)
        .dst_access_mask(dst.1)];
    // SAFETY: the caller's (see above).
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            src.0,
            dst.0,
            vk::DependencyFlags::empty(),
            &b,
            &[],
            &[],
        )
    };
}

impl Submitter {
    /// Records `record` into `cmd` (one of this submitter's command
    /// buffers, reset first), then a final barrier that makes shader and
    /// transfer writes visible to the host. `once`: for one submission only
    /// (else it may be submitted again, [`Submitter::set_reuse`]).
    pub(super) fn record_into(
        &self,
        cmd: vk::CommandBuffer,
        once: bool,
        n: usize,
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<()> {
        let d = &self.gpu.device;
        let flags = if once {
            vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT
        } else {
            vk::CommandBufferUsageFlags::empty()
        };
        let begin = vk::CommandBufferBeginInfo::default().flags(flags);
        // SAFETY: every submission of this submitter's command buffers
        // completed before its call returned (the fence), or was settled
        // since (its completion word seen, then its fence: settle; a failed
        // fence wait is the device lost, after which no submission runs), so
        // `cmd` is not pending and may be reset and re-recorded
        // (VUID-vkBeginCommandBuffer-commandBuffer-00049); its pool was
        // created with RESET_COMMAND_BUFFER.
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .vk("vkResetCommandBuffer")?;
            d.begin_command_buffer(cmd, &begin)
                .vk("vkBeginCommandBuffer")?;
        }
        record(d, cmd);
        let all_writes = (
            vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
            vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
        );
        let host = (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ);
        // SAFETY: recording state (begun above); the word lies inside its
        // buffer (TRANSFER_DST usage), a multiple of 4 (word()).
        unsafe {
            match self.word(n) {
                Some((w, at)) => {
                    // The word set after every command (an execution
                    // dependency from all of them to the fill), then made
                    // visible to the host.
                    memory_barrier(
                        d,
                        cmd,
                        all_writes,
                        (
                            host.0 | vk::PipelineStageFlags::TRANSFER,
                            host.1 | vk::AccessFlags::TRANSFER_WRITE,
                        ),
                    );
                    d.cmd_fill_buffer(cmd, w.buffer, at, 4, 1);
                    memory_barrier(
                        d,
                        cmd,
                        (
                            vk::PipelineStageFlags::TRANSFER,
                            vk::AccessFlags::TRANSFER_WRITE,
                        ),
                        host,
                    );
                }
                None => memory_barrier(d, cmd, all_writes, host),
            }
            d.end_command_buffer(cmd).vk("vkEndCommandBuffer")?;
        }
        Ok(())
    }

    /// [`Submitter::dispatch_many`], with `note_start` for
    /// [`Submitter::dispatch_noting_start`] (`watch`'s first argument: the
    /// queue reached the submission; always false without `note_start`).
    pub(super) fn dispatch_items(
        &mut self,
        items: &[Dispatch<'_>],
        timed: bool,
        note_start: bool,
        read: Option<Readback>,
        watch: &mut dyn FnMut(bool, Duration) -> Option<Duration>,
    ) -> Result<(Option<Duration>, Option<Vec<u8>>)> {
        if let Some(r) = read {
            if r.bytes == 0 || r.bytes > READBACK_MAX || r.bytes % 4 != 0 || r.offset % 4 != 0 {
                return Err(Error::InvalidArgument(format!(
                    "read back {} bytes at {}: 4 to {READBACK_MAX}, both multiples of 4",
                    r.bytes, r.offset
                )));
            }
            if self.readback.is_none() {
                self.readback = Some(Staging::new(&self.gpu, READBACK_MAX)?);
            }
        }
        let landing = read.zip(self.readback.as_ref().map(|st| st.buffer));
        let counts = || items.iter().map(|it| it.sets.iter().map(|s| s.len()).sum());
        let pool = pool_descriptors(&self.gpu.info);
        if items.is_empty() || batch_len(pool, counts()) < items.len() {
            return Err(Error::InvalidArgument(format!(
                "{} dispatches binding {} descriptors in one submission: 1 to {MAX_BATCH}, at most {pool} descriptors",
                items.len(),
                counts().sum::<usize>(),
            )));
        }
        for it in items {
            if !Arc::ptr_eq(&it.kernel.gpu, &self.gpu) {
                return Err(Error::InvalidArgument(
                    "the kernel was built on another context's device (build it again on this context)"
                        .into(),
                ));
            }
            let counts: Vec<u32> = it.sets.iter().map(|s| s.len() as u32).collect();
            if counts != it.kernel.sets() {
                return Err(Error::InvalidArgument(format!(
                    "kernel has bindings {:?} per descriptor set, {counts:?} given",
                    it.kernel.sets()
                )));
            }
            if it.push.len() != it.kernel.push_bytes() as usize {
                return Err(Error::InvalidArgument(format!(
                    "kernel takes {} bytes of push constants, {} given",
                    it.kernel.push_bytes(),
                    it.push.len()
                )));
            }
        }
        self.settle()?;
        let recording = self.phases.start();
        // Timed phases take the GPU's time of every submission.
        let asked = timed;
        let timed = timed || self.phases.on();
        let gpu = self.gpu.clone();
        let d = &gpu.device;
        let queries = if timed {
            self.queries
        } else {
            vk::QueryPool::null()
        };
        let reached = if note_start {
            // SAFETY: the previous submission completed and was settled, so no pending
            // command refers to the event (and none waits on it: vkResetEvent's
            // rules).
            unsafe { d.reset_event(self.reached) }.vk("vkResetEvent")?;
            self.reached
        } else {
            vk::Event::null()
        };
        let mut watch_reached = |elapsed| {
            // SAFETY: the event belongs to this device; reading its status
            // needs no synchronization with the queue that sets it.
            let started = reached != vk::Event::null()
                && matches!(unsafe { d.get_event_status(reached) }, Ok(true));
            watch(started, elapsed)
        };
        // Recorded into a slot that keeps it (found there already recorded:
        // submitted again), or, noting its start, into the one-time buffer.
        let (cmd, descriptors, keep) = if self.reuse_on && !note_start {
            let key = key_of(items, timed, read);
            match self.reuse.find(&key) {
                Found::Again(i) => {
                    tracing::trace!(slot = i, "a recorded submission submitted again");
                    let cmd = self.slots[i].cmd;
                    return match self.submit_wait(cmd, i + 1, recording, &mut watch_reached) {
                        Ok(marks) => self.finish(read, queries, asked, marks),
                        Err(e) => {
                            // Perhaps still pending: never submitted again.
                            self.reuse.forget(i);
                            Err(e)
                        }
                    };
                }
                Found::Record(i) => match self.slot_for(i, items) {
                    Ok(slot) => (slot.cmd, slot.descriptors, Some((i, key))),
                    Err(e) => {
                        self.reuse.truncate(self.slots.len());
                        return Err(e);
                    }
                },
            }
        } else {
            (self.cmd, self.descriptors, None)
        };
        let handles = self.bind_sets(descriptors, items)?;
        let n = keep.as_ref().map_or(0, |(i, _)| i + 1);
        self.record_into(cmd, keep.is_none(), n, |d, cmd| {
            // SAFETY: recording state; each pipeline, layout and its sets are
            // compatible; the query pool has two timestamp queries, reset
            // before use; the event was reset above and is set once, by
            // this command buffer, after every command submitted before it
            // (ALL_COMMANDS: its first synchronization scope).
            unsafe {
                if reached != vk::Event::null() {
                    d.cmd_set_event(cmd, reached, vk::PipelineStageFlags::ALL_COMMANDS);
                }
                if queries != vk::QueryPool::null() {
                    d.cmd_reset_query_pool(cmd, queries, 0, 2);
                    d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, queries, 0);
                }
                for (it, hs) in items.iter().zip(&handles) {
                    if it.barrier {
                        memory_barrier(
                            d,
                            cmd,
                            (
                                vk::PipelineStageFlags::COMPUTE_SHADER,
                                vk::AccessFlags::SHADER_WRITE,
                            ),
                            (
                                vk::PipelineStageFlags::COMPUTE_SHADER,
                                vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                            ),
                        );
                    }
                    let k = it.kernel;
                    d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, k.pipeline);
                    d.cmd_bind_descriptor_sets(
                        cmd,
                        vk::PipelineBindPoint::COMPUTE,
                        k.layout,
                        0,
                        hs,
                        &[],
                    );
                    if !it.push.is_empty() {
                        d.cmd_push_constants(
                            cmd,
                            k.layout,
                            vk::ShaderStageFlags::COMPUTE,
                            0,
                            it.push,
                        );
                    }
                    d.cmd_dispatch(cmd, it.groups[0], it.groups[1], it.groups[2]);
                }
                if let Some((r, to)) = landing {
                    // The dispatches' writes reach the copy; record_into's
                    // closing barrier makes the copy's host-visible.
                    memory_barrier(
                        d,
                        cmd,
                        (
                            vk::PipelineStageFlags::COMPUTE_SHADER,
                            vk::AccessFlags::SHADER_WRITE,
                        ),
                        (
                            vk::PipelineStageFlags::TRANSFER,
                            vk::AccessFlags::TRANSFER_READ,
                        ),
                    );
                    let region = vk::BufferCopy {
                        src_offset: r.offset,
                        dst_offset: 0,
                        size: r.bytes,
                    };
                    d.cmd_copy_buffer(cmd, r.buffer, to, &[region]);
                }
                if queries != vk::QueryPool::null() {
                    d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, queries, 1);
                }
            }
        })?;
        let marks = self.submit_wait(cmd, n, recording, &mut watch_reached)?;
        // Run again only once it completed (a failed wait may leave it
        // pending).
        if let Some((i, key)) = keep {
            self.reuse.recorded(i, key);
        }
        self.finish(read, queries, asked, marks)
    }

    /// Allocates from `pool` (reset first) the descriptor sets of `items`
    /// and writes their windows: each item's sets, in order.
    fn bind_sets(
        &self,
        pool: vk::DescriptorPool,
        items: &[Dispatch<'_>],
    ) -> Result<Vec<Vec<vk::DescriptorSet>>> {
        let d = &self.gpu.device;
        // SAFETY: no set from the pool is in use (every submission of this
        // submitter completed before its call returned, and was settled).
        unsafe {
            d.reset_descriptor_pool(pool, vk::DescriptorPoolResetFlags::empty())
                .vk("vkResetDescriptorPool")?;
        }
        let mut handles = Vec::with_capacity(items.len());
        for it in items {
            let info = vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(pool)
                .set_layouts(&it.kernel.set_layouts);
            // SAFETY: the pool holds the sets and descriptors of every item:
            // the one-time pool at most MAX_SETS sets per dispatch and
            // MAX_BATCH dispatches binding at most pool_descriptors in all
            // (checked by dispatch_items), a slot's pool what slot_for
            // sized it for.
            handles.push(unsafe {
                d.allocate_descriptor_sets(&info)
                    .vk("vkAllocateDescriptorSets")?
            });
        }
        let infos: Vec<Vec<Vec<[vk::DescriptorBufferInfo; 1]>>> = items
            .iter()
            .map(|it| {
                it.sets
                    .iter()
                    .map(|set| {
                        set.iter()
                            .map(|w| {
                                [vk::DescriptorBufferInfo::default()
                                    .buffer(w.buffer)
                                    .offset(w.offset)
                                    .range(w.range)]
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .zip(&handles)
            .flat_map(|(sets, hs)| sets.iter().zip(hs))
            .flat_map(|(set, &handle)| {
                set.iter().enumerate().map(move |(i, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(handle)
                        .dst_binding(i as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
            })
            .collect();
        // SAFETY: the sets are not in use; offsets and ranges were validated by the
        // caller against minStorageBufferOffsetAlignment and maxStorageBufferRange.
        unsafe { d.update_descriptor_sets(&writes, &[]) };
        Ok(handles)
    }
}
