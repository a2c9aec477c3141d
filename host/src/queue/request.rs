//! The handles of queued collectives: [`Queued`], [`Request`], [`Persistent`].

use std::time::{Duration, Instant};

use super::state::{poll_until, Pending};
use crate::error::{Error, Result};
use crate::lock::lock;
use crate::vk::record::{OwnedCommands, SemaphorePoint};

/// A collective recorded into the user's command buffer ([`Context::record`](crate::Context::record)).
/// Dropping it before it was seen complete logs an error; its completion slot
/// is given back when the device has run it.
#[must_use = "a queued collective reports its errors through test or wait"]
pub struct Queued<'a> {
    pub(super) p: Pending<'a>,
}

impl std::fmt::Debug for Queued<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued")
            .field("name", &self.p.name)
            .field("finished", &self.p.finished)
            .finish()
    }
}

impl Queued<'_> {
    /// Whether it has completed on this PE (never blocks). The first `true`
    /// comes with its result: an error on the device, a failed peer or the
    /// timeout (counted from the first `test` or `wait`).
    ///
    /// # Errors
    /// See the module docs.
    pub fn test(&mut self) -> Result<bool> {
        let r = self.p.test(None);
        if self.p.finished {
            self.retire();
        }
        r
    }

    /// Waits until it completed on this PE (its command buffer must have been
    /// submitted, or be about to be by another thread).
    ///
    /// # Errors
    /// As [`Queued::test`].
    pub fn wait(mut self) -> Result<()> {
        poll_until(|| self.test())
    }

    fn retire(&mut self) {
        let q = self.p.state();
        if self.p.slot != u32::MAX {
            q.completions.give(self.p.slot);
            q.progress.shared.retire();
            self.p.slot = u32::MAX;
        }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.p.slot == u32::MAX {
            return;
        }
        if self.p.state().completions.read(self.p.slot).is_some() {
            let _ = self.test();
            return;
        }
        tracing::error!(
            "PE {}: a {} was dropped before it was seen complete; its errors are lost",
            self.p.ctx.my_pe(),
            self.p.name
        );
        lock(&self.p.state().abandoned).push(self.p.slot);
        self.p.slot = u32::MAX;
    }
}

/// A nonblocking collective ([`Context::post`](crate::Context::post)). Dropping it unfinished waits
/// for it (and logs its error).
#[must_use = "a nonblocking collective reports its errors through test or wait"]
pub struct Request<'a> {
    pub(super) p: Pending<'a>,
    pub(super) cmds: Option<OwnedCommands>,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("name", &self.p.name)
            .field("finished", &self.p.finished)
            .finish()
    }
}

impl Request<'_> {
    /// Whether it has completed on this PE (never blocks); the first `true`
    /// comes with its result.
    ///
    /// # Errors
    /// See the module docs.
    pub fn test(&mut self) -> Result<bool> {
        if self.p.finished {
            return Ok(true);
        }
        let fence = match &mut self.cmds {
            Some(c) => c.done()?,
            None => true,
        };
        if !fence {
            // The fence says no: the slot would too.
            self.p.check_stuck(false)?;
            return Ok(false);
        }
        let r = self.p.test(Some(true));
        if self.p.finished {
            self.retire();
        }
        r
    }

    /// Waits until it completed on this PE.
    ///
    /// # Errors
    /// As [`Request::test`].
    pub fn wait(mut self) -> Result<()> {
        self.wait_inner()
    }

    fn wait_inner(&mut self) -> Result<()> {
        loop {
            if let Some(c) = &mut self.cmds {
                // Block on the fence in slices (it wakes us as soon as the
                // queue is done); look for failures in between.
                c.wait(Duration::from_millis(20))?;
            }
            if self.test()? {
                return Ok(());
            }
        }
    }

    fn retire(&mut self) {
        let q = self.p.state();
        q.completions.give(self.p.slot);
        q.progress.shared.retire();
        if let Some(c) = self.cmds.take() {
            lock(&q.spare).push(c);
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.p.finished {
            return;
        }
        if let Err(e) = self.wait_inner() {
            tracing::error!(
                "PE {}: a {} dropped before completion failed: {e}",
                self.p.ctx.my_pe(),
                self.p.name
            );
        }
    }
}

/// A collective recorded once and started many times ([`Context::persistent`](crate::Context::persistent)).
/// One run at a time; dropping it waits for a run in progress.
pub struct Persistent<'a> {
    pub(super) p: Pending<'a>,
    pub(super) cmds: OwnedCommands,
    pub(super) running: bool,
}

impl std::fmt::Debug for Persistent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persistent")
            .field("name", &self.p.name)
            .field("running", &self.running)
            .finish()
    }
}

impl Persistent<'_> {
    /// Starts a run (one queue submission).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) while the previous run is not complete
    /// (wait for it first); [`Error::Broken`](crate::Error::Broken); Vulkan errors.
    pub fn start(&mut self) -> Result<()> {
        // SAFETY: no semaphores.
        unsafe { self.start_with(&[], &[]) }
    }

    /// [`Persistent::start`] after `waits`, signaling `signals`.
    ///
    /// # Safety
    /// As [`Context::post_with`](crate::Context::post_with).
    ///
    /// # Errors
    /// As [`Persistent::start`].
    pub unsafe fn start_with(
        &mut self,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<()> {
        if self.running {
            return Err(Error::InvalidArgument(format!(
                "{}: started while its previous run is not complete",
                self.p.name
            )));
        }
        if let Some(why) = lock(&self.p.ctx.broken).clone() {
            return Err(Error::Broken(why));
        }
        let q = self.p.state();
        q.completions.clear(self.p.slot);
        self.cmds.submit(waits, signals)?;
        q.progress.shared.add();
        self.running = true;
        self.p.finished = false;
        self.p.since = Some(Instant::now());
        Ok(())
    }

    /// Whether the current run completed (never blocks; `true` when none runs);
    /// the first `true` after a start comes with the run's result.
    ///
    /// # Errors
    /// See the module docs.
    pub fn test(&mut self) -> Result<bool> {
        if !self.running {
            return Ok(true);
        }
        if !self.cmds.done()? {
            self.p.check_stuck(false)?;
            return Ok(false);
        }
        self.running = false;
        self.p.state().progress.shared.retire();
        self.p.test(Some(true)).map(|_| true)
    }

    /// Waits for the current run.
    ///
    /// # Errors
    /// As [`Persistent::test`].
    pub fn wait(&mut self) -> Result<()> {
        loop {
            if self.running {
                self.cmds.wait(Duration::from_millis(20))?;
            }
            if self.test()? {
                return Ok(());
            }
        }
    }
}

impl Drop for Persistent<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.wait() {
            tracing::error!(
                "PE {}: the last run of a persistent {} failed: {e}",
                self.p.ctx.my_pe(),
                self.p.name
            );
        }
        self.p.state().completions.give(self.p.slot);
    }
}
