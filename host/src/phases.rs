//! Where a host collective's time goes, phase by phase, when asked
//! ([`crate::Context::set_phase_times`]; `vkshmem-bench --phases` prints them
//! per row). Off by default: then nothing is timed.
//!
//! A host collective on kernels (see `collective::run_collective`) is a
//! meeting (the entry sync, the members' descriptors, their agreement), the
//! run (planning the parts and, on the member that submits, the
//! submissions), and the closing meeting. Each submission is the recording
//! (descriptor sets, command buffer), the `vkQueueSubmit` call, and the wait
//! for its fence; the GPU's own time between the submission's first and last
//! command comes from timestamps (taken on every submission while phase
//! times are on). So `wait - gpu` is what the round trip through the driver
//! costs beyond the kernels: the launch and the fence's signal reaching the
//! host. Where the device has calibrated timestamps, the two are timed apart:
//! `launch` (the submission's return to its first command on the GPU) and
//! `signal` (its last command to the fence seen). Pure bookkeeping, no Vulkan.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One phase of a host call (see the module docs). More may come.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// The entry meeting: descriptors exchanged and agreed.
    Meet,
    /// The parts planned and run (on the submitting member: the
    /// submissions below).
    Run,
    /// One submission's recording: descriptor sets and command buffer.
    Record,
    /// One `vkQueueSubmit` call (with the queue's lock).
    Submit,
    /// From `vkQueueSubmit`'s return to the submission's first command on
    /// the GPU (its timestamp on the host's clock: only on devices with
    /// calibrated timestamps).
    Launch,
    /// From `vkQueueSubmit`'s return to the fence seen signaled (or the
    /// completion word set, where those are on).
    Wait,
    /// The GPU's time from a submission's first command to its last
    /// (timestamps).
    Gpu,
    /// From the submission's last command on the GPU to its completion
    /// seen on the host: the fence signaled, or its completion word set
    /// (`VKSHMEM_COMPLETION=word`) (calibrated timestamps, as `Launch`).
    Signal,
    /// The closing meeting: every member's outcome.
    Close,
    /// The whole call, as the caller sees it.
    Call,
}

impl Phase {
    /// Every phase, in the order a call goes through them.
    pub const ALL: [Phase; 10] = [
        Phase::Meet,
        Phase::Run,
        Phase::Record,
        Phase::Submit,
        Phase::Launch,
        Phase::Wait,
        Phase::Gpu,
        Phase::Signal,
        Phase::Close,
        Phase::Call,
    ];

    /// The phase's name in reports (`meet`, `run`, …).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Meet => "meet",
            Phase::Run => "run",
            Phase::Record => "record",
            Phase::Submit => "submit",
            Phase::Launch => "launch",
            Phase::Wait => "wait",
            Phase::Gpu => "gpu",
            Phase::Signal => "signal",
            Phase::Close => "close",
            Phase::Call => "call",
        }
    }

    /// Its place in [`Phase::ALL`] (the declaration order).
    fn index(self) -> usize {
        self as usize
    }
}

/// The most samples kept per phase between two [`PhaseTimes::take`]s (later
/// ones are dropped: a diagnostic must not grow without bound).
pub const MAX_SAMPLES: usize = 1 << 20;

/// One phase's times since the last [`PhaseTimes::take`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseStat {
    /// Which phase.
    pub phase: Phase,
    /// How many times it ran (a call may submit several times).
    pub count: usize,
    /// Its median time, microseconds.
    pub median_us: f64,
    /// Its mean time, microseconds.
    pub mean_us: f64,
}

/// The samples of every phase, shared by a context and its submitter.
#[derive(Debug, Default)]
pub struct PhaseTimes {
    on: AtomicBool,
    samples: Mutex<[Vec<f32>; Phase::ALL.len()]>,
}

impl PhaseTimes {
    /// Bookkeeping that times nothing until [`PhaseTimes::set`].
    pub fn new() -> PhaseTimes {
        PhaseTimes::default()
    }

    /// Whether phases are being timed.
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Starts (or stops) timing; what was gathered stays until taken.
    pub fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Now, when timing (the start of a phase to pass to
    /// [`PhaseTimes::end`]); `None` otherwise.
    pub fn start(&self) -> Option<Instant> {
        self.on().then(Instant::now)
    }

    /// Records `phase` as having run from `since` until now, and returns now
    /// (the next phase's start); nothing when `since` is `None`.
    pub fn end(&self, phase: Phase, since: Option<Instant>) -> Option<Instant> {
        let since = since?;
        let now = Instant::now();
        self.add(phase, now.duration_since(since));
        Some(now)
    }

    /// Records one run of `phase` that took `d` (when timing).
    pub fn add(&self, phase: Phase, d: Duration) {
        if !self.on() {
            return;
        }
        let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let v = &mut s[phase.index()];
        if v.len() < MAX_SAMPLES {
            v.push(d.as_secs_f64() as f32 * 1e6);
        }
    }

    /// Every phase that ran since the last call, with its count, median and
    /// mean, in [`Phase::ALL`]'s order; the samples are cleared.
    pub fn take(&self) -> Vec<PhaseStat> {
        let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        Phase::ALL
            .iter()
            .zip(s.iter_mut())
            .filter(|(_, v)| !v.is_empty())
            .map(|(&phase, v)| {
                let mut v = std::mem::take(v);
                v.sort_by(f32::total_cmp);
                let n = v.len();
                let median = if n % 2 == 1 {
                    f64::from(v[n / 2])
                } else {
                    (f64::from(v[n / 2 - 1]) + f64::from(v[n / 2])) / 2.0
                };
                PhaseStat {
                    phase,
                    count: n,
                    median_us: median,
                    mean_us: v.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_the_phases_in_declaration_order() {
        for (i, p) in Phase::ALL.iter().enumerate() {
            assert_eq!(p.index(), i, "{p:?}");
        }
    }

    #[test]
    fn nothing_is_kept_while_off() {
        let t = PhaseTimes::new();
        assert!(t.start().is_none());
        t.add(Phase::Wait, Duration::from_micros(5));
        assert!(t.end(Phase::Meet, None).is_none());
        assert!(t.take().is_empty());
    }

    #[test]
    fn medians_and_means_per_phase_in_call_order() {
        let t = PhaseTimes::new();
        t.set(true);
        for us in [30, 10, 20, 1000] {
            t.add(Phase::Wait, Duration::from_micros(us));
        }
        for us in [7, 3, 5] {
            t.add(Phase::Meet, Duration::from_micros(us));
        }
        let s = t.take();
        assert_eq!(
            s.iter().map(|p| (p.phase, p.count)).collect::<Vec<_>>(),
            [(Phase::Meet, 3), (Phase::Wait, 4)]
        );
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3;
        assert!(near(s[0].median_us, 5.0) && near(s[0].mean_us, 5.0));
        assert!(near(s[1].median_us, 25.0) && near(s[1].mean_us, 265.0));
        // Taken: cleared.
        assert!(t.take().is_empty());
        // A phase's end is the next one's start.
        let a = t.start();
        let b = t.end(Phase::Run, a);
        assert!(b.is_some() && b >= a);
        assert_eq!(t.take()[0].phase, Phase::Run);
    }
}
