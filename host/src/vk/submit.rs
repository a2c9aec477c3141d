//! Submissions that the host waits for: record (or find recorded), submit,
//! wait. Used by host-initiated operations.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk::{self, Handle};

use super::kernel::Kernel;
use super::memory::Staging;
use super::{DeviceInfo, Gpu};
use crate::error::{Error, Result, VkContext};
use crate::phases::{Phase, PhaseTimes};

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

/// How often a waiting submission wakes up to let its owner look around (for a
/// failed peer, a timeout).
const WAIT_SLICE: Duration = Duration::from_millis(20);

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

/// The longest wait for a fence whose submission's completion word was seen
/// (its work is done: only the fence's signal is left).
const SETTLE_MAX: Duration = Duration::from_secs(10);

/// `CLOCK_MONOTONIC` now, in nanoseconds (the calibrated timestamps'
/// host domain).
fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
    })
}

/// A device timestamp and the host's `CLOCK_MONOTONIC` read at once
/// (`vkGetCalibratedTimestampsEXT`), to place other device ticks on the
/// host's clock (pure arithmetic).
#[derive(Clone, Copy, Debug)]
struct Calibration {
    /// The device's ticks.
    device: u64,
    /// The host's nanoseconds at the same moment.
    host_ns: u64,
    /// The timestamps' valid bits.
    mask: u64,
    /// Nanoseconds per tick.
    period_ns: f64,
}

impl Calibration {
    /// `tick` (at or before the calibration) in the host's nanoseconds.
    fn on_host(&self, tick: u64) -> f64 {
        let ago = self.device.wrapping_sub(tick) & self.mask;
        self.host_ns as f64 - ago as f64 * self.period_ns
    }

    /// The launch (`submitted` on the host to the first tick on the
    /// device) and the signal (the last tick to `seen` on the host) of a
    /// submission whose first and last timestamps were `ticks`; a negative
    /// span (clocks read apart by more than it) counts as zero.
    fn launch_and_signal(
        &self,
        ticks: [u64; 2],
        submitted: u64,
        seen: u64,
    ) -> (Duration, Duration) {
        let span = |a: f64, b: f64| Duration::from_nanos((b - a).max(0.0) as u64);
        (
            span(submitted as f64, self.on_host(ticks[0])),
            span(self.on_host(ticks[1]), seen as f64),
        )
    }
}

/// Recorded submissions of dispatches a submitter keeps to run again
/// ([`Submitter::set_reuse`]): a host collective repeated with the same
/// arguments (a training step's buckets, a benchmark's calls) records each
/// of its submissions once.
pub const REUSE_SLOTS: usize = 16;

/// What a recorded submission of dispatches is known by: every input of
/// its recording (kernel ids, workgroups, barriers, windows, push
/// constants, timestamps, read-back), each list's length before it, so two
/// keys are equal only where the recordings would be the same commands.
fn key_of(items: &[Dispatch<'_>], timed: bool, read: Option<Readback>) -> Vec<u64> {
    let mut k = Vec::with_capacity(4 + items.len() * 24);
    k.push(u64::from(timed));
    match read {
        Some(r) => k.extend([1, r.buffer.as_raw(), r.offset, r.bytes]),
        None => k.push(0),
    }
    k.push(items.len() as u64);
    for it in items {
        k.push(it.kernel.id);
        k.extend(it.groups.map(u64::from));
        k.push(u64::from(it.barrier));
        k.push(it.sets.len() as u64);
        for set in it.sets {
            k.push(set.len() as u64);
            for w in *set {
                k.extend([w.buffer.as_raw(), w.offset, w.range]);
            }
        }
        push_words(&mut k, it.push);
    }
    k
}

/// Appends `bytes`' length, then its bytes eight at a time (the last word
/// zero-padded).
fn push_words(k: &mut Vec<u64>, bytes: &[u8]) {
    k.push(bytes.len() as u64);
    k.extend(bytes.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    }));
}

/// Which recorded submission to run again, or which slot to record over
/// (pure bookkeeping): at most `cap` slots, the least recently used
/// recorded over first.
#[derive(Debug)]
struct Reuse {
    /// Each slot's key; `None` while it holds no finished recording.
    keys: Vec<Option<Vec<u64>>>,
    /// Each slot's last use ([`Reuse::tick`]).
    used: Vec<u64>,
    /// Calls of [`Reuse::find`] so far.
    tick: u64,
    cap: usize,
}

/// [`Reuse::find`]'s answer.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// This slot holds the recording: submit it again.
    Again(usize),
    /// Record into this slot (a new one where it is the slot count), then
    /// [`Reuse::recorded`].
    Record(usize),
}

impl Reuse {
    fn new(cap: usize) -> Reuse {
        Reuse {
            keys: Vec::new(),
            used: Vec::new(),
            tick: 0,
            cap: cap.max(1),
        }
    }

    /// Where `key`'s submission is, or goes. A slot to record over loses
    /// its key until [`Reuse::recorded`], so a recording that fails halfway
    /// is never run again.
    fn find(&mut self, key: &[u64]) -> Found {
        self.tick += 1;
        if let Some(i) = self.keys.iter().position(|k| k.as_deref() == Some(key)) {
            self.used[i] = self.tick;
            return Found::Again(i);
        }
        let i = if self.keys.len() < self.cap {
            self.keys.push(None);
            self.used.push(0);
            self.keys.len() - 1
        } else {
            // A slot without a recording first, else the least recently
            // used.
            (0..self.keys.len())
                .min_by_key(|&i| (self.keys[i].is_some(), self.used[i]))
                .expect("cap >= 1")
        };
        self.keys[i] = None;
        self.used[i] = self.tick;
        Found::Record(i)
    }

    /// Slot `i` now holds `key`'s recording.
    fn recorded(&mut self, i: usize, key: Vec<u64>) {
        self.keys[i] = Some(key);
    }

    /// Slot `i` holds no recording to run again (its submission failed).
    fn forget(&mut self, i: usize) {
        self.keys[i] = None;
    }

    /// Only the first `made` slots exist (making the next one failed).
    fn truncate(&mut self, made: usize) {
        self.keys.truncate(made);
        self.used.truncate(made);
    }
}

/// One slot of recorded submissions: its command buffer and the pool of
/// its descriptor sets (sized for what it recorded, grown when a recording
/// needs more).
#[derive(Debug)]
struct Slot {
    cmd: vk::CommandBuffer,
    descriptors: vk::DescriptorPool,
    /// Sets and descriptors the pool holds.
    holds: (u32, u32),
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

    /// Like `run`, calling `watch(elapsed)` while the work is not finished (it may,
    /// for example, set the abort word of a stuck kernel): after [`WAIT_SLICE`],
    /// then after whatever each call returns (`None`: `WAIT_SLICE`).
    /// `recording`: when the submission's recording began, while phases are
    /// timed ([`crate::phases`]).
    fn run_watched(
        &mut self,
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
        recording: Option<Instant>,
        watch: &mut dyn FnMut(Duration) -> Option<Duration>,
    ) -> Result<()> {
        self.settle()?;
        self.record_into(self.cmd, true, 0, record)?;
        self.submit_wait(self.cmd, 0, recording, watch).map(|_| ())
    }

    /// The completion word of command buffer `n` (0: the one-time buffer;
    /// `i + 1`: reuse slot `i`), where words are on.
    fn word(&self, n: usize) -> Option<(&Staging, u64)> {
        self.words.as_ref().map(|w| (w, n as u64 * 4))
    }

    /// Waits for the fence of a submission whose word was seen (its work
    /// is done; the fence follows) and resets it: after this, no command
    /// buffer of the submitter is pending.
    pub(crate) fn settle(&mut self) -> Result<()> {
        if !self.unsettled {
            return Ok(());
        }
        let d = &self.gpu.device;
        // SAFETY: the fence belongs to this device and was submitted.
        unsafe { d.wait_for_fences(&[self.fence], true, SETTLE_MAX.as_nanos() as u64) }
            .vk("vkWaitForFences (after its completion word)")?;
        // SAFETY: the fence is signaled and no longer in use by a queue.
        unsafe { d.reset_fences(&[self.fence]).vk("vkResetFences")? };
        self.unsettled = false;
        Ok(())
    }

    /// Whether each submission also sets a word in host memory after its
    /// last command, which the wait polls before the fence (off: the fence
    /// alone, the default). For measurement (`VKSHMEM_COMPLETION=word`): a
    /// call returns when the word is seen, and the fence is waited for at
    /// the next submission. The work has finished when the word is set (a
    /// barrier orders the fill after every command), so the results in
    /// device memory are complete; formally, Vulkan makes them visible to the
    /// host and other queues only through the fence (as this project's
    /// cross-process reads are outside the memory model, see
    /// ARCHITECTURE.md). The recordings kept for reuse are dropped.
    pub fn set_completion(&mut self, words: bool) -> Result<()> {
        self.settle()?;
        self.reuse = Reuse::new(REUSE_SLOTS);
        self.words = if words {
            Some(Staging::new(&self.gpu, (1 + REUSE_SLOTS as u64) * 4)?)
        } else {
            None
        };
        Ok(())
    }

    /// Records `record` into `cmd` (one of this submitter's command
    /// buffers, reset first), then a final barrier that makes shader and
    /// transfer writes visible to the host. `once`: for one submission only
    /// (else it may be submitted again, [`Submitter::set_reuse`]).
    fn record_into(
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

    /// Submits `cmd` (recorded, in the executable state) and waits for it,
    /// watched as [`Submitter::run_watched`] says. Returns, while phases
    /// are timed on a device with calibrated timestamps, its
    /// `vkQueueSubmit` return and completion seen on `CLOCK_MONOTONIC` (ns:
    /// the launch and signal phases, [`Submitter::finish`]).
    fn submit_wait(
        &mut self,
        cmd: vk::CommandBuffer,
        n: usize,
        recording: Option<Instant>,
        watch: &mut dyn FnMut(Duration) -> Option<Duration>,
    ) -> Result<Option<(u64, u64)>> {
        let word = self.word(n).map(|(w, at)| {
            let p = w.ptr().as_ptr().wrapping_add(at as usize);
            // The allocation's offset is aligned to the buffer's
            // requirements (at least 4 on every driver seen), the word's
            // offset a multiple of 4.
            debug_assert_eq!(p as usize % 4, 0);
            // SAFETY: the mapping holds every command buffer's word, 4-byte
            // aligned (above) and alive as long as `self.words` (replaced only
            // through &mut self, after settle); host-coherent; the store
            // before vkQueueSubmit is visible to the submission (a submission
            // makes the host's earlier writes available to the device), which
            // fills the word after it; only this submitter (under its owner's
            // mutex) and its own submissions touch it.
            let a = unsafe { &*(p as *const AtomicU32) };
            a.store(0, Ordering::Relaxed);
            a
        });
        let d = &self.gpu.device;
        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        // SAFETY: `cmd` is executable and not pending (the previous
        // submission of it completed: VUID-vkQueueSubmit-pCommandBuffers-00071);
        // the queue lock gives the external synchronization vkQueueSubmit
        // needs; the fence is unsignaled (reset after each wait).
        unsafe {
            let submitting = self.phases.end(Phase::Record, recording);
            let q = self.gpu.queue.lock().unwrap_or_else(|p| p.into_inner());
            d.queue_submit(*q, &submit, self.fence)
                .vk("vkQueueSubmit")?;
            drop(q);
            self.phases.end(Phase::Submit, submitting);
        }
        let marks = self.phases.on() && self.gpu.calibrated.is_some();
        let submitted = marks.then(monotonic_ns);
        let start = Instant::now();
        let slice = watch(Duration::ZERO).unwrap_or(WAIT_SLICE);
        // Polled first where asked (a blocking wait may wake up well after
        // the GPU has finished), spinning, then yielding the core between
        // polls, for at most one slice, so the watch keeps its pace.
        let spin = self.spin.min(slice);
        let polled = self.yield_for.max(spin).min(slice);
        // Seen done by the completion word (where words are on) while
        // polling; else the fence is waited for below (at once where the
        // poll saw it signaled).
        let mut by_word = false;
        while start.elapsed() < polled {
            match word {
                Some(w) if w.load(Ordering::Acquire) == 1 => {
                    by_word = true;
                    break;
                }
                Some(_) => {}
                // SAFETY: the fence belongs to this device and was just submitted.
                None => {
                    if unsafe { d.get_fence_status(self.fence) }.vk("vkGetFenceStatus")? {
                        break;
                    }
                }
            }
            if start.elapsed() < spin {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if !by_word {
            // The first blocking wait covers what the polls left of the
            // slice, so the watch's first call comes one slice after the
            // submission.
            let mut wait = slice.saturating_sub(start.elapsed());
            loop {
                // SAFETY: the fence belongs to this device and was just submitted.
                match unsafe { d.wait_for_fences(&[self.fence], true, wait.as_nanos() as u64) } {
                    Ok(()) => break,
                    Err(vk::Result::TIMEOUT) => {
                        wait = watch(start.elapsed()).unwrap_or(WAIT_SLICE);
                    }
                    Err(r) => {
                        return Err(Error::Vulkan {
                            call: "vkWaitForFences",
                            result: r,
                        })
                    }
                }
            }
        }
        if self.phases.on() {
            self.phases.add(Phase::Wait, start.elapsed());
        }
        let marks = submitted.map(|s| (s, monotonic_ns()));
        if by_word {
            // Done; the fence is waited for before the next submission
            // (settle).
            tracing::trace!("a submission seen done by its word");
            self.unsettled = true;
        } else {
            // SAFETY: the fence is signaled and no longer in use by a queue.
            unsafe { d.reset_fences(&[self.fence]).vk("vkResetFences")? };
        }
        Ok(marks)
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

    /// [`Submitter::dispatch_many`], with `note_start` for
    /// [`Submitter::dispatch_noting_start`] (`watch`'s first argument: the
    /// queue reached the submission; always false without `note_start`).
    fn dispatch_items(
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

    /// A finished submission's read-back bytes (where `read`) and GPU
    /// time (where `queries`, which it wrote; returned where `asked`), and
    /// its launch and signal phases from its host `marks` (`submit_wait`).
    fn finish(
        &self,
        read: Option<Readback>,
        queries: vk::QueryPool,
        asked: bool,
        marks: Option<(u64, u64)>,
    ) -> Result<(Option<Duration>, Option<Vec<u8>>)> {
        let d = &self.gpu.device;
        let bytes = match (read, &self.readback) {
            (Some(r), Some(st)) => {
                let mut v = vec![0u8; r.bytes as usize];
                // SAFETY: the submission that copied into the staging buffer
                // completed (submit_wait waited on its fence) and its closing
                // barrier made the copy host-visible; the mapping holds
                // READBACK_MAX >= r.bytes bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(st.ptr().as_ptr(), v.as_mut_ptr(), v.len())
                };
                Some(v)
            }
            _ => None,
        };
        if queries == vk::QueryPool::null() {
            return Ok((None, bytes));
        }
        let mut ticks = [0u64; 2];
        // SAFETY: both queries were written by the completed submission; WAIT and
        // TYPE_64 match the u64 result slots.
        unsafe {
            d.get_query_pool_results(
                queries,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
            .vk("vkGetQueryPoolResults")?;
        }
        let mask = match self.gpu.info.timestamp_valid_bits {
            64.. => u64::MAX,
            b => (1u64 << b) - 1,
        };
        let delta = ticks[1].wrapping_sub(ticks[0]) & mask;
        let gpu_time =
            Duration::from_nanos((delta as f64 * self.gpu.info.timestamp_period_ns as f64) as u64);
        self.phases.add(Phase::Gpu, gpu_time);
        if let (Some(cal), Some((submitted, seen))) = (&self.gpu.calibrated, marks) {
            let domains = [
                vk::CalibratedTimestampInfoEXT::default().time_domain(vk::TimeDomainEXT::DEVICE),
                vk::CalibratedTimestampInfoEXT::default()
                    .time_domain(vk::TimeDomainEXT::CLOCK_MONOTONIC),
            ];
            // SAFETY: the extension is enabled on this device with both
            // domains (`Gpu::calibrated`); the info structs live across the
            // call. A diagnostic: a failure only leaves the phases out. The
            // two clocks are read up to the returned deviation apart
            // (about a microsecond): launch and signal are that exact.
            if let Ok((now, _)) = unsafe { cal.get_calibrated_timestamps(&domains) } {
                let clock = Calibration {
                    device: now[0],
                    host_ns: now[1],
                    mask,
                    period_ns: f64::from(self.gpu.info.timestamp_period_ns),
                };
                let (launch, signal) = clock.launch_and_signal(ticks, submitted, seen);
                self.phases.add(Phase::Launch, launch);
                self.phases.add(Phase::Signal, signal);
            }
        }
        Ok((asked.then_some(gpu_time), bytes))
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

    /// Reuse slot `i` (made where `i` is the slot count), its descriptor
    /// pool holding at least the sets and descriptors of `items`.
    fn slot_for(&mut self, i: usize, items: &[Dispatch<'_>]) -> Result<&Slot> {
        let d = &self.gpu.device;
        let sets: usize = items.iter().map(|it| it.sets.len()).sum();
        let descriptors: usize = items
            .iter()
            .flat_map(|it| it.sets.iter().map(|s| s.len()))
            .sum();
        let need = (sets.max(1) as u32, descriptors.max(1) as u32);
        if i == self.slots.len() {
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            // SAFETY: valid pool, used by this submitter's thread only (the
            // owner's mutex).
            let cmd =
                unsafe { d.allocate_command_buffers(&info) }.vk("vkAllocateCommandBuffers")?[0];
            self.slots.push(Slot {
                cmd,
                descriptors: vk::DescriptorPool::null(),
                holds: (0, 0),
            });
        }
        let slot = &mut self.slots[i];
        if slot.holds.0 < need.0 || slot.holds.1 < need.1 {
            let holds = (
                need.0.max(slot.holds.0).next_power_of_two(),
                need.1.max(slot.holds.1).next_power_of_two(),
            );
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(holds.1)];
            let info = vk::DescriptorPoolCreateInfo::default()
                .max_sets(holds.0)
                .pool_sizes(&sizes);
            // SAFETY: valid device. The old pool's sets are in no pending
            // submission (each completed before its call returned, and was
            // settled); the
            // slot's recording that used them is never submitted again
            // (Reuse::find dropped its key).
            unsafe {
                let pool = d
                    .create_descriptor_pool(&info, None)
                    .vk("vkCreateDescriptorPool")?;
                d.destroy_descriptor_pool(slot.descriptors, None);
                slot.descriptors = pool;
            }
            slot.holds = holds;
        }
        Ok(slot)
    }

    /// Whether submissions of dispatches are recorded once and submitted
    /// again when a later call's dispatches are the same (kernels,
    /// workgroups, windows, push constants: every input of the recording),
    /// in up to [`REUSE_SLOTS`] slots, the least recently used recorded
    /// over. Off in a new submitter; a context turns it on
    /// (`VKSHMEM_REUSE_RECORDINGS`, on by default): a repeated host
    /// collective skips the descriptor writes and the recording
    /// (benches/RESULTS.md, "Reuse recordings"). Only where every buffer its
    /// dispatches bind outlives the submitter (a recording binds buffers by
    /// handle, and a destroyed buffer's handle may come back for another).
    pub fn set_reuse(&mut self, on: bool) {
        self.reuse_on = on;
    }

    /// Times each submission's phases into `phases` while it is on
    /// ([`crate::phases`]: recording, `vkQueueSubmit`, the fence's wait, and
    /// the GPU's time from timestamps).
    pub fn set_phase_times(&mut self, phases: Arc<PhaseTimes>) {
        self.phases = phases;
    }

    /// Makes each wait poll its fence for `spin`, then poll it between
    /// `sched_yield`s until `yield_for` has passed since the submission, before
    /// it blocks (both zero: block at once). The polls end early when the
    /// fence signals; the blocking wait after them then returns at once.
    pub fn set_fence_spin(&mut self, spin: Duration, yield_for: Duration) {
        self.spin = spin;
        self.yield_for = yield_for;
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
    use super::{batch_len, push_words, Found, Reuse, MAX_BATCH};

    #[test]
    fn reuse_finds_recorded_keys_and_records_over_the_least_recently_used() {
        let mut r = Reuse::new(2);
        let (a, b, c) = (vec![1u64, 2], vec![1u64, 3], vec![4u64]);
        assert_eq!(r.find(&a), Found::Record(0));
        r.recorded(0, a.clone());
        assert_eq!(r.find(&a), Found::Again(0));
        assert_eq!(r.find(&b), Found::Record(1));
        r.recorded(1, b.clone());
        assert_eq!(r.find(&b), Found::Again(1));
        assert_eq!(r.find(&a), Found::Again(0));
        // Full: c goes over b, used longest ago.
        assert_eq!(r.find(&c), Found::Record(1));
        r.recorded(1, c.clone());
        assert_eq!(r.find(&b), Found::Record(0));
        // A recording that failed (never `recorded`) is never found, and
        // its slot is the first recorded over.
        assert_eq!(r.find(&b), Found::Record(0));
        assert_eq!(r.find(&a), Found::Record(0));
        r.recorded(0, a.clone());
        assert_eq!(r.find(&c), Found::Again(1));
        assert_eq!(r.find(&a), Found::Again(0));
        // A submission that failed is forgotten.
        r.forget(1);
        assert_eq!(r.find(&c), Found::Record(1));
        // A slot that could not be made is taken back: the next key asks
        // for the same new slot.
        let mut r = Reuse::new(4);
        assert_eq!(r.find(&a), Found::Record(0));
        r.truncate(0);
        assert_eq!(r.find(&b), Found::Record(0));
    }

    #[test]
    fn calibrated_ticks_split_the_wait_into_launch_and_signal() {
        use std::time::Duration;
        // 1 tick = 2 ns; at the calibration the device read 10_000 ticks
        // and the host 1_000_000 ns.
        let c = super::Calibration {
            device: 10_000,
            host_ns: 1_000_000,
            mask: u64::MAX,
            period_ns: 2.0,
        };
        assert_eq!(c.on_host(9_000), 998_000.0);
        // Submitted at 990_000 ns, first tick at 996_000 ns, last at
        // 998_000 ns, seen at 999_500 ns: 6 us of launch, 1.5 us of signal.
        let (launch, signal) = c.launch_and_signal([8_000, 9_000], 990_000, 999_500);
        assert_eq!(launch, Duration::from_micros(6));
        assert_eq!(signal, Duration::from_nanos(1_500));
        // The device counter wrapped (36 valid bits) between the ticks and
        // the calibration.
        let w = super::Calibration {
            device: 5,
            mask: (1 << 36) - 1,
            ..c
        };
        assert_eq!(w.on_host((1 << 36) - 5), 1_000_000.0 - 20.0);
        // Clocks read apart: a negative span is zero.
        let (launch, _) = c.launch_and_signal([8_000, 9_000], 997_000, 999_500);
        assert_eq!(launch, Duration::ZERO);
    }

    #[test]
    fn push_words_keep_lengths_apart() {
        let words = |b: &[u8]| {
            let mut k = Vec::new();
            push_words(&mut k, b);
            k
        };
        assert_eq!(words(&[]), vec![0]);
        assert_eq!(words(&[1, 0, 0, 0]), vec![4, 1]);
        // Zero bytes past the end differ from no bytes.
        assert_ne!(words(&[1, 0, 0, 0]), words(&[1, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(words(&[0; 9]), vec![9, 0, 0]);
        assert_eq!(words(&[1, 2, 3, 4, 5, 6, 7, 8, 9])[1], 0x0807060504030201);
    }

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
