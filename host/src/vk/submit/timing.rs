//! Timing: the phases of a submission (launch, signal, GPU time) placed on
//! the host's clock.

use std::sync::Arc;
use std::time::Duration;

use ash::vk;

use super::{Readback, Submitter};
use crate::error::{Result, VkContext};
use crate::phases::{Phase, PhaseTimes};

/// `CLOCK_MONOTONIC` now, in nanoseconds (the calibrated timestamps'
/// host domain).
pub(super) fn monotonic_ns() -> u64 {
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

impl Submitter {
    /// A finished submission's read-back bytes (where `read`) and GPU
    /// time (where `queries`, which it wrote; returned where `asked`), and
    /// its launch and signal phases from its host `marks` (`submit_wait`).
    pub(super) fn finish(
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

    /// Times each submission's phases into `phases` while it is on
    /// ([`crate::phases`]: recording, `vkQueueSubmit`, the fence's wait, and
    /// the GPU's time from timestamps).
    pub fn set_phase_times(&mut self, phases: Arc<PhaseTimes>) {
        self.phases = phases;
    }
}

#[cfg(test)]
mod tests {

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
}
