//! What a PE keeps for queued collectives, made at the first one: the
//! completion slots (`completion.rs`), the progress thread (`progress.rs`),
//! spare command buffers. The queued collectives themselves are in
//! `crate::queue`.

use std::sync::{Arc, Mutex};

use super::completion::Completions;
use super::{lock, progress, Runtime};
use crate::error::{Error, Result};
use crate::vk::record::OwnedCommands;

/// What the context keeps for queued collectives (made at the first one).
pub(crate) struct QueueState {
    pub(crate) completions: Completions,
    /// Command buffers of completed posts, for the next.
    pub(crate) spare: Mutex<Vec<OwnedCommands>>,
    /// Slots of recorded collectives whose handle was dropped before they
    /// were seen complete: given back once they are.
    pub(crate) abandoned: Mutex<Vec<u32>>,
    pub(crate) progress: progress::Progress,
    gpu: Arc<crate::vk::Gpu>,
}

impl QueueState {
    /// Queued collectives recorded or posted and not yet seen complete.
    pub(crate) fn outstanding(&self) -> usize {
        self.progress
            .shared
            .outstanding
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::fmt::Debug for QueueState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueState")
            .field("progress", &self.progress)
            .finish()
    }
}

impl QueueState {
    /// Gives back the slots of abandoned collectives that completed.
    pub(crate) fn reap_abandoned(&self) {
        let mut ab = lock(&self.abandoned);
        ab.retain(|&slot| {
            if self.completions.read(slot).is_some() {
                self.completions.give(slot);
                self.progress.shared.retire();
                false
            } else {
                true
            }
        });
    }
}

impl Drop for QueueState {
    fn drop(&mut self) {
        self.reap_abandoned();
        if self.completions.taken() > 0 {
            tracing::error!(
                "the context closes with {} queued collectives not seen complete: waiting for the queue to go idle",
                self.completions.taken()
            );
            let q = self.gpu.queue.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the queue lock gives vkQueueWaitIdle's external
            // synchronization; the progress thread still runs (it drops after
            // this), so waits for failed peers end.
            let _ = unsafe { self.gpu.device.queue_wait_idle(*q) };
        }
    }
}

impl Runtime {
    /// The queue state, made at the first queued collective.
    pub(crate) fn queue_state(&self) -> Result<&QueueState> {
        if let Some(q) = self.queue.get() {
            return Ok(q);
        }
        let _g = lock(&self.queue_init);
        if let Some(q) = self.queue.get() {
            return Ok(q);
        }
        let gpu = self.gpu.clone();
        let progress = progress::Progress::start(progress::Watched {
            driver_threads: self.driver_threads.clone(),
            own: self.heap.block(self.my_pe())?.clone(),
            plane: self.plane.clone(),
            peers: self.n_pes() > 1,
            proxy: self.proxy.get().map(|p| p.activity()),
        })
        .map_err(|e| Error::Io {
            what: "starting the queued collectives' progress thread".into(),
            source: e,
        })?;
        let q = QueueState {
            completions: Completions::new(&gpu)?,
            spare: Mutex::new(Vec::new()),
            abandoned: Mutex::new(Vec::new()),
            progress,
            gpu,
        };
        let _ = self.queue.set(q);
        Ok(self.queue.get().expect("just set"))
    }
}
