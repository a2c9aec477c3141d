//! One member's part of a host collective on the kernel path, and who submits it.
//!
//! A family's plan (broadcast.rs, collect.rs, alltoall.rs, reduce.rs) turns
//! the agreed descriptors into a member's [`Part`]: its steps in order. The
//! parts are submitted one of two ways (`run_collective` in mod.rs):
//!
//! - **each member its own** (`VKSHMEM_SUBMIT=each`, and wherever a part
//!   has a step that only its own PE can run): the steps one after another,
//!   every wide step in one submission;
//! - **the team's first member every member's** (`VKSHMEM_SUBMIT=leader`,
//!   the default on drivers that time-slice processes: NVIDIA's), when every
//!   member asked for it and every step of every part is a wide launch: the
//!   wide kernels bind every heap they touch as explicit windows, and every
//!   PE has every heap of its device imported, so one PE can run any
//!   member's launches. Step `i` of every part forms phase `i`; the phases
//!   go in one command buffer (or as few as [`crate::vk::submit::MAX_BATCH`]
//!   allows) with a memory barrier between phases. On a GPU that switches
//!   between processes, a call then costs one submission instead of one per
//!   member, each with a context switch (on an H200, 2 PEs submitting at once
//!   took 319 us per empty submission against 35-46 us for one alone).
//!
//! Phases keep the order each member's steps had, and the steps of
//! different members never depended on each other except through the
//! closing sync (they write disjoint bytes): putting them side by side in a
//! phase adds no race. The closing meeting carries every member's outcome,
//! so a failed submission (the leader's, or any member's own) fails the call
//! on every member instead of leaving their dests unwritten.

use std::sync::Arc;

use vkshmem_device::collectives::{HostArgs, HostCall};

use crate::context::{Context, HeapWindow};
use crate::error::Result;
use crate::kernels::DeviceKernel;
use crate::user_kernel::Launch;

/// One planned launch of a wide kernel: kernel, workgroups, windows and
/// immediates.
#[derive(Clone)]
pub(crate) struct Planned {
    pub kernel: Arc<DeviceKernel>,
    pub groups: u32,
    pub windows: Vec<HeapWindow>,
    pub immediates: Vec<u8>,
}

/// One step of a member's part, run after the step before it has finished.
pub(crate) enum Step {
    /// Wide launches that depend on none of each other (one batch).
    Wide(Vec<Planned>),
    /// The generic kernel over `items` work items (`call`, `args`): it binds
    /// the heaps through the library, which knows this PE as itself, so only
    /// this PE runs it.
    Generic(HostCall, HostArgs, u64),
    /// Bytes written into this PE's own heap at a byte offset (a generic
    /// kernel's table).
    WriteOwn(u64, Vec<u8>),
}

/// A member's part: its steps in order.
pub(crate) type Part = Vec<Step>;

/// How the members of a call submitted their parts (carried by the closing
/// meeting, so that a disagreement is seen instead of work done twice).
pub(crate) const EACH: u32 = 1;
/// The team's first member submitted every part.
pub(crate) const LEADER: u32 = 2;

/// The phases of `parts` when every step of every part is wide: phase `i`
/// holds step `i` of every part, in member order; `None` when some step is
/// not (then each member runs its own part).
pub(crate) fn phases(parts: &[Part]) -> Option<Vec<Vec<&Planned>>> {
    let wide: Option<Vec<Vec<&[Planned]>>> = parts
        .iter()
        .map(|p| {
            p.iter()
                .map(|s| match s {
                    Step::Wide(l) => Some(&l[..]),
                    _ => None,
                })
                .collect()
        })
        .collect();
    Some(
        interleave(wide?)
            .into_iter()
            .map(|ph| ph.into_iter().flatten().collect())
            .collect(),
    )
}

/// `parts` (of one member, over disjoint bytes) as one part: step `i` of
/// every part in its step `i`, the wide launches of a step in one batch.
pub(crate) fn side_by_side(parts: Vec<Part>) -> Part {
    interleave(parts)
        .into_iter()
        .flat_map(|steps| {
            let mut wide = Vec::new();
            let mut other = Vec::new();
            for s in steps {
                match s {
                    Step::Wide(l) => wide.extend(l),
                    s => other.push(s),
                }
            }
            other.into_iter().chain([Step::Wide(wide)])
        })
        .collect()
}

/// Step `i` of every sequence in phase `i`, sequences in order (shorter
/// sequences simply end); empty phases are left out.
fn interleave<L>(seqs: Vec<Vec<L>>) -> Vec<Vec<L>> {
    let mut out: Vec<Vec<L>> = Vec::new();
    for seq in seqs {
        for (i, step) in seq.into_iter().enumerate() {
            if out.len() <= i {
                out.push(Vec::new());
            }
            out[i].push(step);
        }
    }
    out
}

impl Context {
    /// Runs this PE's own `part`, step by step: consecutive wide steps as
    /// the phases of one submission ([`Context::run_phases`]).
    pub(crate) fn run_part(&self, part: Part) -> Result<()> {
        let mut wide: Vec<Vec<&Planned>> = Vec::new();
        for step in &part {
            match step {
                Step::Wide(l) => wide.push(l.iter().collect()),
                Step::Generic(call, args, items) => {
                    self.run_phases(&std::mem::take(&mut wide))?;
                    if *items > 0 {
                        let (k, args, groups) = self.host_kernel_call(*call, *args, *items)?;
                        self.launch(&k, [groups, 1, 1], &[], bytemuck::bytes_of(&args))?;
                    }
                }
                Step::WriteOwn(at, bytes) => {
                    self.run_phases(&std::mem::take(&mut wide))?;
                    self.write_bytes(self.my_pe(), *at, bytes)?;
                }
            }
        }
        self.run_phases(&wide)
    }

    /// Submits `phases` in order: each phase's launches side by side, a
    /// barrier before each later phase (`Context::launch_batch`).
    pub(crate) fn run_phases(&self, phases: &[Vec<&Planned>]) -> Result<()> {
        let items: Vec<Launch<'_>> = phases
            .iter()
            .enumerate()
            .flat_map(|(i, ph)| {
                ph.iter().enumerate().map(move |(j, p)| Launch {
                    kernel: &p.kernel,
                    groups: [p.groups, 1, 1],
                    buffers: &p.windows,
                    immediates: &p.immediates,
                    barrier: i > 0 && j == 0,
                })
            })
            .collect();
        if items.is_empty() {
            return Ok(());
        }
        self.launch_batch(&items)
    }
}

#[cfg(test)]
mod tests {
    use super::interleave;

    #[test]
    fn phases_keep_each_members_order() {
        let parts = vec![vec!["a0", "a1", "a2"], vec![], vec!["c0"], vec!["d0", "d1"]];
        assert_eq!(
            interleave(parts),
            vec![vec!["a0", "c0", "d0"], vec!["a1", "d1"], vec!["a2"]]
        );
        assert!(interleave::<u8>(vec![vec![], vec![]]).is_empty());
    }
}
