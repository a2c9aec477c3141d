//! Waiting: submitting a recorded command buffer, then polling its
//! completion word or fence (spinning, yielding, blocking) until it is done.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ash::vk;

use super::reuse::{Reuse, REUSE_SLOTS};
use super::timing::monotonic_ns;
use super::{Staging, Submitter};
use crate::error::{Error, Result, VkContext};
use crate::phases::Phase;

/// How often a waiting submission wakes up to let its owner look around (for a
/// failed peer, a timeout).
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// The longest wait for a fence whose submission's completion word was seen
/// (its work is done: only the fence's signal is left).
const SETTLE_MAX: Duration = Duration::from_secs(10);

impl Submitter {
    /// Like `run`, calling `watch(elapsed)` while the work is not finished (it may,
    /// for example, set the abort word of a stuck kernel): after [`WAIT_SLICE`],
    /// then after whatever each call returns (`None`: `WAIT_SLICE`).
    /// `recording`: when the submission's recording began, while phases are
    /// timed ([`crate::phases`]).
    pub(super) fn run_watched(
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
    pub(super) fn word(&self, n: usize) -> Option<(&Staging, u64)> {
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

    /// Submits `cmd` (recorded, in the executable state) and waits for it,
    /// watched as [`Submitter::run_watched`] says. Returns, while phases
    /// are timed on a device with calibrated timestamps, its
    /// `vkQueueSubmit` return and completion seen on `CLOCK_MONOTONIC` (ns:
    /// the launch and signal phases, [`Submitter::finish`]).
    pub(super) fn submit_wait(
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

    /// Makes each wait poll its fence for `spin`, then poll it between
    /// `sched_yield`s until `yield_for` has passed since the submission, before
    /// it blocks (both zero: block at once). The polls end early when the
    /// fence signals; the blocking wait after them then returns at once.
    pub fn set_fence_spin(&mut self, spin: Duration, yield_for: Duration) {
        self.spin = spin;
        self.yield_for = yield_for;
    }
}
