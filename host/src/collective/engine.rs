//! The one sequence every host collective runs, SHMEM's and UCC's alike:
//!
//! 1. **Agree** ([`Call::agree`]): a meeting of the members shares each
//!    one's arguments and its own checks' verdict, and every member checks
//!    everyone's the same way, so that bad or mismatched arguments fail
//!    every member with the same typed error, never a hang.
//! 2. **Choose a path and run** ([`Call::run`]): from the agreed values
//!    only, so every member chooses alike; this PE's part moves on it.
//! 3. **Close** ([`Runtime::close_run`]): a meeting that carries every
//!    member's outcome and how it moved its part, so that no member returns
//!    before the others are done with its memory, and all return the same
//!    verdict. Paths that complete on their own (the host path through the
//!    data slots, the staged rounds) skip it ([`Ran::Complete`]).
//!
//! A collective is a [`Call`]. SHMEM's (`mod.rs`: [`Shmem`]) take a
//! descriptor and a plan per family (`broadcast.rs`, `collect.rs`,
//! `alltoall.rs`, `reduce.rs`); UCC's (`ucc/`) take their pulls and
//! folds.

use crate::error::Result;
use crate::phases::Phase;
use crate::runtime::recorder::Recording;
use crate::runtime::rendezvous::Members;
use crate::runtime::Runtime;
use crate::sync::recorder::{CallInfo, Phase as Step};

/// What a PE does once the closing meeting has passed: the step a path
/// may take only when no member reads this PE's heap any more.
pub(crate) enum Then {
    /// Nothing: the dest was written before the closing meeting.
    Nothing,
    /// Writes `bytes` (gathered in host memory) at heap offset `offset` of
    /// this PE's heap: a dest that overlapped what members read.
    Write { offset: u64, bytes: Vec<u8> },
    /// Zeroes `bytes` bytes at heap offset `offset` of this PE's heap: the
    /// dest of a fold of no members (an exclusive scan's first member).
    Zero { offset: u64, bytes: u64 },
}

/// How step 2 ended.
pub(crate) enum Ran {
    /// Complete on return on every member, with no closing meeting (the
    /// path synced on its own), or failed alike on every member before
    /// anything moved.
    Complete(Result<()>),
    /// This PE's part `moved` (or failed), the members having moved their
    /// parts `how` (`part::EACH`, `part::LEADER`, `direct::DIRECT`): the
    /// closing meeting follows, then `then`.
    Moved {
        moved: Result<()>,
        how: u32,
        then: Then,
    },
}

impl Ran {
    /// Each member moved its own part, and that is all.
    pub(crate) fn each(moved: Result<()>) -> Ran {
        Ran::Moved {
            moved,
            how: super::part::EACH,
            then: Then::Nothing,
        }
    }
}

/// One host collective as the engine runs it (see the module docs).
pub(crate) trait Call {
    /// What every member agreed on in step 1.
    type Agreed;
    /// The public call's name, for errors and traces.
    fn name(&self) -> &str;
    /// Bytes it moves per member, and its root where it has one (for the
    /// flight recorder).
    fn size(&self) -> (u64, Option<u32>) {
        (0, None)
    }
    /// Step 1: the meeting and the checks, the same verdict on every member.
    fn agree(&mut self, rt: &Runtime, m: &Members) -> Result<Self::Agreed>;
    /// Step 2: the path, chosen from `agreed` alone, and this PE's part on it.
    fn run(&mut self, rt: &Runtime, m: &Members, agreed: Self::Agreed) -> Ran;
}

impl Runtime {
    /// Runs `call` on the members `m`: agree, choose and run, close (module
    /// docs), its phases timed when asked ([`crate::phases`]).
    /// Each step's start goes into the flight recorder
    /// (`crate::sync::recorder`).
    pub(crate) fn run_call<C: Call>(&self, m: &Members, mut call: C) -> Result<()> {
        let called = self.phases.start();
        let (bytes, root) = call.size();
        let info = CallInfo {
            name: call.name(),
            slot: m.slot,
            bytes,
            root,
        };
        let rec = self.record_call(&info);
        let r = self.run_steps(m, &mut call, rec);
        self.phases.end(Phase::Call, called);
        self.record_end(rec, r)
    }

    fn run_steps<C: Call>(&self, m: &Members, call: &mut C, rec: Recording) -> Result<()> {
        let meeting = self.phases.start();
        let agreed = call.agree(self, m)?;
        let running = self.phases.end(Phase::Meet, meeting);
        self.record_phase(rec, Step::Agreed);
        match call.run(self, m, agreed) {
            Ran::Complete(r) => r,
            Ran::Moved { moved, how, then } => {
                self.record_phase(rec, Step::Closing);
                self.close_run(m, call.name(), how, running, moved)?;
                match then {
                    Then::Nothing => Ok(()),
                    Then::Write { offset, bytes } => self.write_bytes(self.my_pe(), offset, &bytes),
                    Then::Zero { offset, bytes } => self.zero_own(offset, bytes),
                }
            }
        }
    }

    /// The end of a call's run (`moved`, this PE's part, timed from
    /// `running`) and its closing meeting (`how` the members moved it):
    /// complete on every member even when this PE's part failed, so that no
    /// member waits forever; then this PE's failure, the more precise error,
    /// or a member's.
    pub(crate) fn close_run(
        &self,
        m: &Members,
        name: &str,
        how: u32,
        running: Option<std::time::Instant>,
        moved: Result<()>,
    ) -> Result<()> {
        let phases = &self.phases;
        let closing = phases.end(Phase::Run, running);
        let done = self
            .close_members(m, name, moved.is_ok(), how)
            .map_err(|e| e.during(name));
        phases.end(Phase::Close, closing);
        moved.and(done)
    }
}
