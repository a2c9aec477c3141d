//! What the context keeps for queued collectives, and how a wait for one
//! goes.

use std::time::{Duration, Instant};

use vkshmem_device::layout;

use crate::error::{Error, Result};
use crate::lock::lock;
use crate::runtime::completion::SlotWords;
use crate::runtime::queued::QueueState;
use crate::runtime::Runtime;

/// How long a wait for a queued collective whose peers failed, or whose
/// commands may never have been submitted, keeps looking before it reports
/// the failure without the device's word on it.
const NEVER_RAN_GRACE: Duration = Duration::from_millis(1500);

/// Where a collective's completion is reported, and how a wait for it goes.
pub(super) struct Pending<'a> {
    pub(super) ctx: &'a Runtime,
    pub(super) slot: u32,
    pub(super) name: String,
    /// When the host started waiting (the timeout counts from there).
    pub(super) since: Option<Instant>,
    /// Seen complete (the slot is given back, or kept by a persistent one).
    pub(super) finished: bool,
}

impl<'a> Pending<'a> {
    pub(super) fn state(&self) -> &'a QueueState {
        self.ctx
            .queue
            .get()
            .expect("made before any pending collective")
    }

    /// The slot's words once done; else starts the timeout clock.
    pub(super) fn poll(&mut self) -> Option<SlotWords> {
        let w = self.state().completions.read(self.slot);
        if w.is_none() && self.since.is_none() {
            self.since = Some(Instant::now());
        }
        w
    }

    /// Whether it completed: `Ok(true)` once, with its errors, then `Ok(true)`.
    pub(super) fn test(&mut self, fence_done: Option<bool>) -> Result<bool> {
        if self.finished {
            return Ok(true);
        }
        match self.poll() {
            Some(w) => {
                self.finished = true;
                self.ctx
                    .queued_result(&self.name, &w, fence_done.is_some())
                    .map(|()| true)
            }
            None => {
                self.check_stuck(false)?;
                Ok(false)
            }
        }
    }

    /// Gives up on a collective that is not done when the job aborted or its
    /// timeout expired: raises this PE's device abort word (its device waits
    /// end, so its commands complete) and, when they never complete (never
    /// submitted), reports the failure after a grace period. `final_`: no
    /// more polls follow (a drop).
    pub(super) fn check_stuck(&mut self, final_: bool) -> Result<()> {
        let since = self.since.unwrap_or_else(Instant::now);
        let ctx = self.ctx;
        let timeout = ctx.wait_timeout;
        let timed_out = timeout.is_some_and(|t| since.elapsed() >= t);
        let aborted = ctx.plane.as_ref().is_some_and(|p| p.abort_word() != 0);
        if !(timed_out || aborted) {
            return Ok(());
        }
        ctx.raise_device_abort();
        let grace = timeout.unwrap_or_default() + NEVER_RAN_GRACE;
        if final_ || since.elapsed() >= grace {
            let e = if aborted {
                ctx.peer_failure().unwrap_or_else(|| Error::PeerFailed {
                    pe: ctx.my_pe(),
                    how: "the job aborted".into(),
                })
            } else {
                Error::Timeout {
                    what: self.name.clone(),
                    pe: ctx.my_pe(),
                    seconds: timeout.unwrap_or_default().as_secs_f64(),
                    missing: String::new(),
                }
            };
            ctx.set_broken(&e);
            return Err(e);
        }
        Ok(())
    }
}
impl Runtime {
    /// The error of a completed queued collective, from its slot's words.
    pub(super) fn queued_result(&self, name: &str, w: &SlotWords, _posted: bool) -> Result<()> {
        if w.error == 0 && w.abort == 0 {
            return Ok(());
        }
        let aborted = w.abort != 0 || w.error & layout::ERR_ABORTED != 0;
        let e = if aborted || w.error & layout::ERR_LOOPS_CUT != 0 {
            // A failed peer or a timeout ended the device's waits (or the
            // driver cut them, possibly because a peer died).
            let word = self.plane.as_ref().map_or(0, |p| p.abort_word());
            if word & !crate::sync::layout::ABORT_PE_MASK == crate::sync::layout::ABORT_TIMEOUT {
                Some(Error::Timeout {
                    what: name.to_string(),
                    pe: self.my_pe(),
                    seconds: self.wait_timeout.unwrap_or_default().as_secs_f64(),
                    missing: String::new(),
                })
            } else if word != 0 || aborted {
                self.peer_failure()
            } else {
                None
            }
        } else {
            None
        };
        // Argument and address checks fail alike on every member, or on one
        // member between the syncs, which it still takes part in: the PEs stay
        // in step. Anything else (a wait cut short or aborted, a sync skipped
        // on a bad team, two syncs at once) leaves them out of step.
        let in_step = w.abort == 0
            && w.error & !(layout::ERR_BAD_ARGUMENT | layout::ERR_BAD_PE | layout::ERR_BAD_ADDRESS)
                == 0;
        let e = e.unwrap_or_else(|| Error::Device {
            kernel: name.to_string(),
            pe: self.my_pe(),
            what: layout::describe_errors(w.error).join("; "),
            bits: w.error,
            arg_pe: w.error_pe,
            arg_addr: w.error_addr,
        });
        if !in_step {
            self.set_broken(&e);
        }
        Err(e)
    }

    /// The failed peer the bootstrap or the plane names, if any.
    pub(super) fn peer_failure(&self) -> Option<Error> {
        let word = self.plane.as_ref().map_or(0, |p| p.abort_word());
        let told = lock(&self.boot).as_mut().and_then(|b| b.poll_abort());
        match told {
            Some((pe, how)) => Some(Error::PeerFailed { pe, how }),
            None if word != 0 => Some(Error::PeerFailed {
                pe: word & crate::sync::layout::ABORT_PE_MASK,
                how: "failed (the job's abort word is raised)".into(),
            }),
            None => None,
        }
    }

    /// Sets this PE's device abort word, so that its device waits give up.
    pub(super) fn raise_device_abort(&self) {
        let abort = std::mem::offset_of!(layout::ControlHeader, abort) as u64;
        if let Ok(Some(_)) = self.heap.block(self.my_pe()).map(|b| b.mapped()) {
            let _ = self.write_bytes(self.my_pe(), abort, &1u32.to_le_bytes());
        }
    }

    /// Marks the context broken after a queued collective failed (the PEs are
    /// out of step, see [`Error::Broken`](crate::Error::Broken)).
    pub(super) fn set_broken(&self, e: &Error) {
        if self.n_pes() > 1 {
            let mut b = lock(&self.broken);
            if b.is_none() {
                *b = Some(e.to_string());
            }
        }
    }
}

/// Polls until `done()` or `test` says complete, sleeping in growing steps
/// (a host that spins takes the CPU a CPU driver's queue needs).
pub(super) fn poll_until(mut test: impl FnMut() -> Result<bool>) -> Result<()> {
    let mut nap = Duration::from_micros(20);
    loop {
        if test()? {
            return Ok(());
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}
