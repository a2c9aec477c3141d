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
//!   member asked for it: the wide kernels bind every heap they touch as
//!   explicit windows, and every PE has every heap of its device imported,
//!   so one PE can run any member's launches. A generic kernel binds the
//!   heaps through the library as its PE; where the first member reaches
//!   every PE of the job directly, every PE's library is its own with the
//!   slots turned (one compile per job), so it runs a member's generic
//!   kernel with set 0 bound as that member's (`Launch::as_pe`), and writes
//!   a member's tables into that member's heap; elsewhere a part with a
//!   generic step makes each member submit its own. Step `i` of every part
//!   forms phase `i`; the phases go in one command buffer (or as few as
//!   [`crate::vk::submit::MAX_BATCH`] allows) with a memory barrier between
//!   phases, cut where a phase writes a table (written from the host once
//!   the phases before it have run). On a GPU that switches between
//!   processes, a call then costs one submission instead of one per member,
//!   each with a context switch, which costs several times an empty
//!   submission (benches/RESULTS.md, "H200 first run").
//!
//! Phases keep the order each member's steps had, and the steps of
//! different members never depended on each other except through the
//! closing sync (they write disjoint bytes): putting them side by side in a
//! phase adds no race. The closing meeting carries every member's outcome,
//! so a failed submission (the leader's, or any member's own) fails the call
//! on every member instead of leaving their dests unwritten.

use std::sync::Arc;

use vkshmem_device::collectives::{HostArgs, HostCall};

use crate::error::Result;
use crate::kernels::DeviceKernel;
use crate::runtime::rendezvous::Members;
use crate::runtime::{HeapWindow, Runtime};
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
    /// the heaps through the library as the member's PE, so the member runs
    /// it, or the team's first member with set 0 bound as the member's
    /// (`Launch::as_pe`).
    Generic(HostCall, HostArgs, u64),
    /// Bytes written into the member's own heap at a byte offset (a generic
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

/// One item of a phase: a wide launch, a generic kernel run as member PE
/// `pe` (its `args.me` that member's index), or bytes written into `pe`'s heap.
#[derive(Clone, Copy)]
pub(crate) enum Item<'a> {
    Wide(&'a Planned),
    Generic {
        pe: u32,
        call: HostCall,
        args: HostArgs,
        items: u64,
    },
    Write {
        pe: u32,
        at: u64,
        bytes: &'a [u8],
    },
}

/// The phases of `parts` (member `j`'s part is `parts[j]`, its PE
/// `pes[j]`): phase `i` holds step `i` of every part, in member order.
/// `None` when some step is generic or a write and `any_pe` is false (this
/// PE cannot run library kernels as the others: then each member runs its
/// own part).
pub(crate) fn phases<'a>(
    parts: &'a [Part],
    pes: &[u32],
    any_pe: bool,
) -> Option<Vec<Vec<Item<'a>>>> {
    let items: Option<Vec<Vec<Vec<Item<'a>>>>> = parts
        .iter()
        .zip(pes)
        .enumerate()
        .map(|(j, (p, &pe))| {
            p.iter()
                .map(|s| match s {
                    Step::Wide(l) => Some(l.iter().map(Item::Wide).collect()),
                    _ if !any_pe => None,
                    Step::Generic(call, args, items) => Some(vec![Item::Generic {
                        pe,
                        call: *call,
                        args: HostArgs {
                            me: j as u32,
                            ..*args
                        },
                        items: *items,
                    }]),
                    Step::WriteOwn(at, bytes) => Some(vec![Item::Write { pe, at: *at, bytes }]),
                })
                .collect()
        })
        .collect();
    Some(
        interleave(items?)
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

impl Runtime {
    /// Every member's part (`parts[j]` member `j`'s) submitted by the
    /// team's first member, the others submitting nothing; `None` where
    /// [`phases`] declines (`any_pe` false and a step only its own PE can
    /// run: each member then runs its own). With the outcome (`Ok` on the
    /// other members), whether some step runs as a member other than the
    /// first (a generic kernel or a write).
    pub(crate) fn run_as_first(
        &self,
        m: &Members,
        parts: &[Part],
        any_pe: bool,
    ) -> Option<(Result<()>, bool)> {
        let pes: Vec<u32> = m.shape.members().collect();
        let ph = phases(parts, &pes, any_pe)?;
        let as_members = ph.iter().flatten().any(|it| !matches!(it, Item::Wide(_)));
        let ran = if m.me == 0 {
            self.run_phases(&ph)
        } else {
            Ok(())
        };
        Some((ran, as_members))
    }

    /// Runs this PE's own `part`, step by step: consecutive wide steps as
    /// the phases of one submission ([`Runtime::run_phases`]); a generic
    /// step alone (its kernel may wait, [`Context::launch`](crate::Context::launch)).
    pub(crate) fn run_part(&self, part: Part) -> Result<()> {
        let mut wide: Vec<Vec<Item<'_>>> = Vec::new();
        for step in &part {
            match step {
                Step::Wide(l) => wide.push(l.iter().map(Item::Wide).collect()),
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
    /// barrier before each later phase (`Runtime::launch_batch`). A phase
    /// that writes tables first runs the phases before it, then writes
    /// them from the host, then goes on. A generic kernel with no work
    /// items launches nothing.
    pub(crate) fn run_phases(&self, phases: &[Vec<Item<'_>>]) -> Result<()> {
        // The generic kernels' pipelines and immediates, owned for the batch.
        struct Generic {
            kernel: Arc<DeviceKernel>,
            groups: u32,
            immediates: Vec<u8>,
        }
        let mut generic: Vec<Option<Generic>> = Vec::new();
        for ph in phases {
            for it in ph {
                generic.push(match *it {
                    Item::Generic {
                        call, args, items, ..
                    } if items > 0 => {
                        let (kernel, args, groups) = self.host_kernel_call(call, args, items)?;
                        Some(Generic {
                            kernel,
                            groups,
                            immediates: bytemuck::bytes_of(&args).to_vec(),
                        })
                    }
                    _ => None,
                });
            }
        }
        let mut launches: Vec<Launch<'_>> = Vec::new();
        let mut g = generic.iter();
        for (i, ph) in phases.iter().enumerate() {
            if ph.iter().any(|it| matches!(it, Item::Write { .. })) {
                self.launch_all(&std::mem::take(&mut launches))?;
                for it in ph {
                    if let Item::Write { pe, at, bytes } = *it {
                        self.write_bytes(pe, at, bytes)?;
                    }
                }
            }
            let mut first = true;
            for it in ph {
                let slot = g.next().expect("one entry per item");
                let launch = match (it, slot) {
                    (Item::Wide(p), _) => Launch {
                        kernel: &p.kernel,
                        groups: [p.groups, 1, 1],
                        buffers: &p.windows,
                        immediates: &p.immediates,
                        barrier: false,
                        as_pe: None,
                    },
                    (Item::Generic { pe, .. }, Some(k)) => Launch {
                        kernel: &k.kernel,
                        groups: [k.groups, 1, 1],
                        buffers: &[],
                        immediates: &k.immediates,
                        barrier: false,
                        as_pe: Some(*pe),
                    },
                    _ => continue,
                };
                // A barrier before the phase's first launch when launches
                // of earlier phases go in the same batch.
                let barrier = first && i > 0 && !launches.is_empty();
                first = false;
                launches.push(Launch { barrier, ..launch });
            }
        }
        self.launch_all(&launches)
    }

    fn launch_all(&self, launches: &[Launch<'_>]) -> Result<()> {
        if launches.is_empty() {
            return Ok(());
        }
        self.launch_batch(launches)
    }
}

#[cfg(test)]
mod tests {
    use super::{interleave, phases, HostArgs, HostCall, Item, Step};

    #[test]
    fn generic_steps_run_as_their_member_or_not_at_all() {
        let call = HostCall::Broadcast {
            root: 0,
            skip_root: false,
        };
        let args = HostArgs {
            me: 7,
            n: 12,
            ..Default::default()
        };
        let parts = vec![
            vec![Step::Generic(call, args, 5), Step::Wide(vec![])],
            vec![
                Step::WriteOwn(8, vec![1, 2, 3, 4]),
                Step::Generic(call, args, 3),
            ],
        ];
        // Each member its own where this PE cannot run as the others.
        assert!(phases(&parts, &[3, 5], false).is_none());
        let ph = phases(&parts, &[3, 5], true).unwrap();
        assert_eq!(ph.len(), 2);
        match (&ph[0][0], &ph[0][1]) {
            (
                Item::Generic {
                    pe: 3,
                    args,
                    items: 5,
                    ..
                },
                Item::Write {
                    pe: 5,
                    at: 8,
                    bytes: &[1, 2, 3, 4],
                },
            ) => assert_eq!((args.me, args.n), (0, 12)),
            _ => panic!("phase 0: member 0's kernel, member 1's table"),
        }
        assert_eq!(ph[1].len(), 1);
        match &ph[1][0] {
            Item::Generic {
                pe: 5,
                args,
                items: 3,
                ..
            } => assert_eq!(args.me, 1, "member 1's index, not the planner's"),
            _ => panic!("phase 1: member 1's kernel"),
        }
        // Wide steps alone need no run as another PE.
        let wide = vec![vec![Step::Wide(vec![])], vec![Step::Wide(vec![])]];
        assert!(phases(&wide, &[0, 1], false).is_some());
    }

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
