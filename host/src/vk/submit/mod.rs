//! Submissions that the host waits for: record (or find recorded), submit,
//! wait. Used by host-initiated operations.
//!
//! The parts, one concern each: `record` (recording dispatches into a
//! command buffer), `reuse` (the recorded submissions kept to run again),
//! `wait` (submitting, then waiting on the fence or the completion word)
//! and `timing` (the submissions' phases and GPU time).

mod record;
mod reuse;
mod timing;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use ash::vk;

use super::kernel::Kernel;
use super::memory::Staging;
use super::{DeviceInfo, Gpu};
use crate::error::{Result, VkContext};
use crate::phases::PhaseTimes;

pub use reuse::REUSE_SLOTS;
use reuse::{Reuse, Slot};

/// A storage-buffer window bound to a kernel binding.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The buffer.
    pub buffer: vk::Buffer,
    /// Byte offset (a multiple of `minStorageBufferOffsetAlignment`).
    pub offset: u64,
    /// Byte length (at most `maxStorageBufferRange`).
    pub range: u64,
}

/// Most descriptor sets one dispatch binds.
const MAX_SETS: u32 = 4;

/// Most dispatches one submission records ([`Submitter::dispatch_many`]),
/// within [`pool_descriptors`] descriptors in all. A host collective of 1
/// GiB on 2 PEs is 32 wide launches (pieces of 64 MiB, one per member); in
/// batches of 8 its 4 submissions, each waited for before the next, left
/// the GPU idle between them (benches/RESULTS.md, "H200 per-launch cost").
pub const MAX_BATCH: usize = 64;

/// Descriptors the pool holds per dispatch of a batch: the device's
/// per-stage limit, capped (NVIDIA's is in the millions; a kernel binds at
/// most its PEs' heap views, a few hundred).
const MAX_DESCRIPTORS: u32 = 1 << 16;

/// Dispatches binding the per-stage maximum of descriptors that one
/// submission's pool holds (batches of smaller dispatches hold more, up to
/// [`MAX_BATCH`]).
const POOL_DISPATCHES: u64 = 8;

/// The storage-buffer descriptors one submission may bind in all (every
/// set of every dispatch): the pool's size on `info`'s device.
pub fn pool_descriptors(info: &DeviceInfo) -> u64 {
    u64::from(info.max_storage_buffers_per_stage.clamp(1, MAX_DESCRIPTORS)) * POOL_DISPATCHES
}

/// How many of the dispatches whose descriptor counts `counts` yields, from
/// the first, go in one submission: at most [`MAX_BATCH`] and `pool`
/// descriptors in all, and at least one (a dispatch binds at most the
/// per-stage limit, which the pool holds).
pub fn batch_len(pool: u64, counts: impl IntoIterator<Item = usize>) -> usize {
    let mut total = 0u64;
    let mut n = 0;
    for c in counts.into_iter().take(MAX_BATCH) {
        total += c as u64;
        if n > 0 && total > pool {
            break;
        }
        n += 1;
    }
    n
}

/// One dispatch of a submission: `kernel` over `groups` workgroups with
/// `sets[s]` bound to the bindings 0..n of descriptor set `s` and `push` as
/// push constants.
pub struct Dispatch<'a> {
    /// The pipeline.
    pub kernel: &'a Kernel,
    /// Workgroups in x, y and z.
    pub groups: [u32; 3],
    /// The windows of each descriptor set. Where the submitter reuses
    /// recordings ([`Submitter::set_reuse`]), their buffers outlive it (the
    /// context's heap blocks): a recorded submission that binds them may run
    /// again.
    pub sets: &'a [&'a [Window]],
    /// The push constants.
    pub push: &'a [u8],
    /// Whether it waits for the dispatches recorded before it in the same
    /// submission (a compute-to-compute memory barrier: their shader writes
    /// are visible to its reads and writes).
    pub barrier: bool,
}

/// The most bytes a submission copies back to the host after its dispatches
/// ([`Readback`]).
pub const READBACK_MAX: u64 = 64;

/// Bytes of a buffer (the heap) that a submission copies to the host after
/// its dispatches, in the same submission
/// ([`Submitter::dispatch_many_reading`]): the device error words of a heap
/// the host does not map, read without a submission of their own (one more
/// round trip through the driver per call).
#[derive(Clone, Copy, Debug)]
pub struct Readback {
    /// The buffer read (with `TRANSFER_SRC` usage).
    pub buffer: vk::Buffer,
    /// Where, in bytes (a multiple of 4).
    pub offset: u64,
    /// How many bytes: a multiple of 4, at most [`READBACK_MAX`].
    pub bytes: u64,
}

/// A one-time command buffer with its descriptor pool, the reuse slots'
/// recorded submissions, a fence and a timestamp query pool, reused
/// submission after submission. Not shared between threads (the owner wraps it in
/// a mutex).
pub struct Submitter {
    gpu: Arc<Gpu>,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    descriptors: vk::DescriptorPool,
    /// Two timestamps around a dispatch; null when the queue has none.
    queries: vk::QueryPool,
    /// Set by a submission's first command once the queue has finished what
    /// was submitted before it ([`Submitter::dispatch_noting_start`]).
    reached: vk::Event,
    /// How long a wait polls the fence before it blocks
    /// (`VKSHMEM_FENCE_SPIN_US`, see [`Submitter::set_fence_spin`]).
    spin: Duration,
    /// How long a wait keeps polling with `sched_yield` after the spin
    /// before it blocks (`VKSHMEM_YIELD_POLL_US`, see
    /// [`Submitter::set_fence_spin`]).
    yield_for: Duration,
    /// Work that uses the device beside this submitter (the kernels built in
    /// the background, `crate::kernels::prebuild`): ended first when the
    /// submitter drops, so before the context's heap and device go.
    companion: Option<Box<dyn std::any::Any + Send>>,
    /// Where each submission's phases go when timed
    /// ([`Submitter::set_phase_times`]).
    phases: Arc<PhaseTimes>,
    /// Where [`Readback`]s land (made at the first one).
    readback: Option<Staging>,
    /// Whether submissions of dispatches are recorded once and run again
    /// ([`Submitter::set_reuse`]).
    reuse_on: bool,
    /// Which recorded submission is in which slot.
    reuse: Reuse,
    /// The recorded submissions.
    slots: Vec<Slot>,
    /// Where submissions tell the host they finished first, where asked
    /// ([`Submitter::set_completion`]): a word per command buffer that the
    /// submission's last command sets (the one-time buffer's first, then
    /// each reuse slot's). `None`: the fence alone.
    words: Option<Staging>,
    /// The last submission's word was seen, its fence not yet: waited for
    /// ([`Submitter::settle`]) before a command buffer, a descriptor pool or
    /// the fence is touched again.
    unsettled: bool,
}

impl std::fmt::Debug for Submitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Submitter")
    }
}

impl Submitter {
    /// Creates the objects on `gpu`.
    pub fn new(gpu: &Arc<Gpu>) -> Result<Submitter> {
        let d = &gpu.device;
        let mut s = Submitter {
            gpu: gpu.clone(),
            pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            descriptors: vk::DescriptorPool::null(),
            queries: vk::QueryPool::null(),
            reached: vk::Event::null(),
            spin: Duration::ZERO,
            yield_for: Duration::ZERO,
            companion: None,
            phases: Arc::new(PhaseTimes::new()),
            readback: None,
            reuse_on: false,
            reuse: Reuse::new(REUSE_SLOTS),
            slots: Vec::new(),
            words: None,
            unsettled: false,
        };
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(gpu.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device; family exists.
        s.pool = unsafe { d.create_command_pool(&info, None) }.vk("vkCreateCommandPool")?;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(s.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: valid pool.
        s.cmd = unsafe { d.allocate_command_buffers(&info) }.vk("vkAllocateCommandBuffers")?[0];
        // SAFETY: valid device.
        s.fence =
            unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.vk("vkCreateFence")?;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(pool_descriptors(&gpu.info) as u32)];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(MAX_SETS * MAX_BATCH as u32)
            .pool_sizes(&sizes);
        // SAFETY: valid device.
        s.descriptors =
            unsafe { d.create_descriptor_pool(&info, None) }.vk("vkCreateDescriptorPool")?;
        // SAFETY: valid device.
        s.reached =
            unsafe { d.create_event(&vk::EventCreateInfo::default(), None) }.vk("vkCreateEvent")?;
        if gpu.info.timestamp_valid_bits > 0 {
            let info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2);
            // SAFETY: valid device; the queue family supports timestamps (valid bits > 0).
            s.queries = unsafe { d.create_query_pool(&info, None) }.vk("vkCreateQueryPool")?;
        }
        Ok(s)
    }

    /// Gives the submitter `companion` to keep (replacing and dropping any
    /// earlier one): it is dropped before the submitter's own objects. Its `Drop`
    /// must end whatever it runs on the device.
    pub fn set_companion(&mut self, companion: Box<dyn std::any::Any + Send>) {
        self.companion = Some(companion);
    }

    /// The companion given with [`Submitter::set_companion`], when it is a `T`.
    pub fn companion<T: 'static>(&self) -> Option<&T> {
        self.companion.as_ref()?.downcast_ref()
    }

    /// Records with `record`, submits, and waits for completion. A final barrier
    /// makes shader and transfer writes visible to the host.
    fn run(&mut self, record: impl FnOnce(&ash::Device, vk::CommandBuffer)) -> Result<()> {
        let recording = self.phases.start();
        self.run_watched(record, recording, &mut |_| None)
    }

    /// Runs `kernel` over `groups` workgroups with `sets[s]` bound to the bindings
    /// 0..n of descriptor set `s` and `push` as push constants; returns when it has
    /// finished, with the GPU time between the start and the end of the dispatch
    /// when `timed` and the queue has timestamps. `watch` is called while waiting
    /// (see `run_watched`).
    pub fn dispatch(
        &mut self,
        kernel: &Kernel,
        groups: [u32; 3],
        sets: &[&[Window]],
        push: &[u8],
        timed: bool,
        watch: &mut dyn FnMut(Duration) -> Option<Duration>,
    ) -> Result<Option<Duration>> {
        let one = Dispatch {
            kernel,
            groups,
            sets,
            push,
            barrier: false,
        };
        let took = self.dispatch_many(std::slice::from_ref(&one), timed, watch)?;
        // The caller's kernel may go as soon as this returns: its
        // submission settled (where completion words are on).
        self.settle()?;
        Ok(took)
    }

    /// Records `items` (at most [`MAX_BATCH`]) in one command buffer, in order
    /// and with no barrier between them except before the items that ask for
    /// one ([`Dispatch::barrier`]; between two barriers, writes must not overlap
    /// and no item may read what another writes), submits once and waits: one
    /// submission for several launches. The time, when `timed`, spans them all.
    pub fn dispatch_many(
        &mut self,
        items: &[Dispatch<'_>],
        timed: bool,
        watch: &mut dyn FnMut(Duration) -> Option<Duration>,
    ) -> Result<Option<Duration>> {
        self.dispatch_items(items, timed, false, None, &mut |_, el| watch(el))
            .map(|(t, _)| t)
    }

    /// [`Submitter::dispatch_many`], then, where `read` is given, its bytes
    /// copied to the host in the same submission, after every dispatch (and
    /// visible to it: a barrier from the shaders' writes to the copy):
    /// returned with the time (`None` without `read`).
    pub fn dispatch_many_reading(
        &mut self,
        items: &[Dispatch<'_>],
        timed: bool,
        read: Option<Readback>,
        watch: &mut dyn FnMut(Duration) -> Option<Duration>,
    ) -> Result<(Option<Duration>, Option<Vec<u8>>)> {
        self.dispatch_items(items, timed, false, read, &mut |_, el| watch(el))
    }

    /// Submits `item` alone, untimed, like [`Submitter::dispatch`], telling
    /// `watch` also whether the queue has reached this submission: whether
    /// everything submitted to the queue before it (this PE's other work) has
    /// finished. A kernel built in a compile turn warms up so
    /// (`crate::vk::compile_turn`).
    pub fn dispatch_noting_start(
        &mut self,
        item: &Dispatch<'_>,
        watch: &mut dyn FnMut(bool, Duration) -> Option<Duration>,
    ) -> Result<()> {
        self.dispatch_items(std::slice::from_ref(item), false, true, None, watch)
            .map(|_| ())
    }

    /// Copies `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`.
    pub fn copy(
        &mut self,
        src: vk::Buffer,
        src_offset: u64,
        dst: vk::Buffer,
        dst_offset: u64,
        size: u64,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        let region = [vk::BufferCopy {
            src_offset,
            dst_offset,
            size,
        }];
        self.run(|d, cmd| {
            // SAFETY: recording state; the caller checked both ranges lie inside
            // their buffers (VUID-vkCmdCopyBuffer-srcOffset-00113 and friends).
            unsafe { d.cmd_copy_buffer(cmd, src, dst, &region) }
        })
    }

    /// Copies every region of `regions` from `src` to `dst` in one submission
    /// (empty: nothing submitted). The caller checked that every region lies
    /// inside both buffers; `src` and `dst` are different memory.
    pub fn copy_regions(
        &mut self,
        src: vk::Buffer,
        dst: vk::Buffer,
        regions: &[vk::BufferCopy],
    ) -> Result<()> {
        if regions.is_empty() {
            return Ok(());
        }
        self.run(|d, cmd| {
            // A bounded number of regions per command.
            for chunk in regions.chunks(4096) {
                // SAFETY: recording state; every region lies inside both
                // buffers (the caller checked: VUID-vkCmdCopyBuffer-srcOffset-00113,
                // -dstOffset-00114, -size-00115, -size-00116); source and
                // destination are different memory, so no source region
                // overlaps a destination one (-pRegions-00117); sizes are
                // nonzero (callers drop empty regions: VUID-VkBufferCopy-size-01988).
                unsafe { d.cmd_copy_buffer(cmd, src, dst, chunk) }
            }
        })
    }

    /// Fills `size` bytes of `buffer` from `offset` with the 32-bit `value`
    /// (offset and size multiples of 4).
    pub fn fill(&mut self, buffer: vk::Buffer, offset: u64, size: u64, value: u32) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        self.run(|d, cmd| {
            // SAFETY: recording state; offset/size are multiples of 4 inside the
            // buffer (VUID-vkCmdFillBuffer-dstOffset-00025, -size-00028), checked by the caller.
            unsafe { d.cmd_fill_buffer(cmd, buffer, offset, size, value) }
        })
    }

    /// Submits an empty command buffer and waits: the floor of any host-initiated
    /// device operation.
    pub fn empty(&mut self) -> Result<()> {
        self.run(|_, _| {})
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        // The companion's device work ends before anything of the context goes.
        drop(self.companion.take());
        // No submission pending (a failure here is the device lost).
        let _ = self.settle();
        let d = &self.gpu.device;
        // SAFETY: every submission was waited for; freeing the pool frees its
        // command buffers (the slots' too).
        unsafe {
            d.destroy_query_pool(self.queries, None);
            d.destroy_event(self.reached, None);
            d.destroy_descriptor_pool(self.descriptors, None);
            for slot in &self.slots {
                d.destroy_descriptor_pool(slot.descriptors, None);
            }
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{batch_len, MAX_BATCH};

    #[test]
    fn batches_stop_at_the_dispatch_count_or_the_pool() {
        assert_eq!(batch_len(1000, []), 0);
        assert_eq!(batch_len(1000, [5; 3]), 3);
        assert_eq!(batch_len(1000, vec![5; 200]), MAX_BATCH);
        // The pool holds 10: dispatches of 4 go two at a time.
        assert_eq!(batch_len(10, [4, 4, 4]), 2);
        assert_eq!(batch_len(10, [4, 6, 1]), 2);
        // A dispatch alone always goes (it binds at most the per-stage
        // limit, which the pool holds).
        assert_eq!(batch_len(10, [12, 1]), 1);
    }
}
