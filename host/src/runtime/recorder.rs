//! This PE's side of the flight recorder (`crate::sync::recorder`) and of
//! traces (`crate::trace`): a call marks itself on entry and moves its
//! phase on; nothing is recorded without a node segment or with
//! `VKSHMEM_RECORD=off`, nothing traced without `VKSHMEM_TRACE`.

use super::Runtime;
use crate::error::Result;
use crate::sync::recorder::{self, CallInfo, Mark, Phase};

/// A call's record in progress, and its trace span (nothing where
/// nothing is recorded or traced).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recording(Option<Mark>, Option<usize>);

impl Runtime {
    /// Starts the record of call `c`.
    pub(crate) fn record_call(&self, c: &CallInfo) -> Recording {
        Recording(
            self.plane
                .as_ref()
                .filter(|_| self.record)
                .map(|p| recorder::enter(p.segment(), self.pe, c)),
            self.tracer
                .as_ref()
                .map(|t| t.begin(c.name, c.slot, c.bytes)),
        )
    }

    /// Moves the call of `r` to phase `p`.
    pub(crate) fn record_phase(&self, r: Recording, p: Phase) {
        if let (Some(m), Some(plane)) = (r.0, &self.plane) {
            recorder::phase(plane.segment(), m, p);
        }
        if let (Some(id), Some(t)) = (r.1, &self.tracer) {
            match p {
                Phase::Done | Phase::Failed => t.end(id, p == Phase::Failed),
                Phase::Agreed => t.mark(id, "run"),
                Phase::Closing => t.mark(id, "close"),
                Phase::Entered => {}
            }
        }
    }

    /// Ends the call of `r` as `result` says; passes `result` on.
    pub(crate) fn record_end<T>(&self, r: Recording, result: Result<T>) -> Result<T> {
        let p = if result.is_ok() {
            Phase::Done
        } else {
            Phase::Failed
        };
        self.record_phase(r, p);
        result
    }

    /// Runs `f` as call `c`, recorded from entry to its end.
    pub(crate) fn recorded<T>(&self, c: &CallInfo, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = self.record_call(c);
        self.record_end(r, f())
    }
}
