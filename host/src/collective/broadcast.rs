//! Host broadcast: one member's data to every member ([`Context::broadcast`](crate::Context::broadcast)).

use bytemuck::Pod;
use vkshmem_device::collectives::HostCall;

use super::wide::{split_words, Push};
use super::{generic_reach, nonzero, Desc, Members, Small, Step, Which};
use crate::error::{Error, Result};
use crate::kernels::library::{Declared, KernelShape, LibraryKernel};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::team::Team;
use vkshmem_device::collectives::{HostCollective, WIDE_REDUCE_MAX_MEMBERS};

/// The kernels a broadcast on a team of `s.size` launches: its wide pushes
/// to every member (in groups of [`WIDE_REDUCE_MAX_MEMBERS`]) and copy
/// from the root, then its generic kernel; with `s.all`, the word copy of
/// objects off whole vec4s.
pub(crate) fn kernels(s: &KernelShape) -> Declared {
    let wg = s.wg;
    let mut wide = pushes(s);
    wide.push(LibraryKernel::WideCopy { blocks: 1, wg });
    if s.all {
        wide.push(LibraryKernel::WideCopyWords { blocks: 1, wg });
    }
    Declared {
        wide,
        generic: vec![LibraryKernel::Host(HostCollective::Broadcast)],
    }
}

/// The wide pushes to every member of a team of `s.size`, in groups of
/// [`WIDE_REDUCE_MAX_MEMBERS`] and the rest (broadcast's and fcollect's).
pub(super) fn pushes(s: &KernelShape) -> Vec<LibraryKernel> {
    let group = s.size.min(WIDE_REDUCE_MAX_MEMBERS);
    let push = |dests| LibraryKernel::WidePush { dests, wg: s.wg };
    let mut out = vec![push(group)];
    if group > 0 && s.size % group != 0 {
        out.push(push(s.size % group));
    }
    out
}

impl Runtime {
    pub(crate) fn broadcast<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        root: u32,
    ) -> Result<()> {
        self.broadcast_inner(self.members(team)?, dest, source, nelems, root, false)
    }

    pub(crate) fn broadcastmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
        root: u32,
    ) -> Result<()> {
        self.broadcast(team, dest, source, nbytes, root)
    }

    pub(crate) fn broadcast_inner<T: Pod>(
        &self,
        m: Members,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        root: u32,
        skip_root: bool,
    ) -> Result<()> {
        let es = std::mem::size_of::<T>() as u32;
        let n = nelems as u64;
        let mut local = self
            .check_sym_heap("broadcast dest", dest, n)
            .and_then(|_| self.check_sym_heap("broadcast source", source, n))
            .and_then(|_| {
                if root >= m.shape.size {
                    Err(Error::InvalidArgument(format!(
                        "broadcast: root {root} is not a PE of the team (size {})",
                        m.shape.size
                    )))
                } else {
                    Ok(())
                }
            });
        let mut desc = Desc::new::<T>(Which::Broadcast, dest.offset(), source.offset(), n);
        desc.root = root;
        desc.skip_root = u32::from(skip_root);
        let bytes = n.saturating_mul(es as u64);
        let small = Small::copies(source.offset(), if m.me == root { bytes } else { 0 }, bytes);
        // The push (each member writes its share of the root's source to
        // every member, or the first member all of it where it submits
        // every part: the source read once) is decided from symmetric
        // values; its kernels are built before the agreement where the call
        // will not run on the host, so that a build failure fails every
        // member (as the wide reduction's, see reduce.rs).
        let to: Vec<u32> = m
            .shape
            .members()
            .enumerate()
            .filter(|&(j, _)| !(skip_root && j as u32 == root))
            .map(|(_, pe)| pe)
            .collect();
        // Equally misaligned objects: pushed whole where off by whole words
        // (the push starts them inside their first vec4), else the head
        // bytes (not whole words) on the generic kernel; a tail off whole
        // words likewise; the rest pushed (see wide.rs).
        let sp = split_words(
            dest.offset(),
            source.offset(),
            n.saturating_mul(es as u64),
            es as u64,
        )
        .unwrap_or_default();
        let push = Push {
            from: m.shape.member(root.min(m.shape.size.saturating_sub(1))),
            src: source.offset() + sp.head,
            dst: dest.offset() + sp.head,
            bytes: sp.mid,
        };
        let early = !self.may_stage(&m, &small) && !self.spans_devices(&m);
        let mut pushes = None;
        if local.is_ok() && early {
            match self.push_possible(&[push], to.len()) {
                Ok(p) => pushes = Some(p),
                Err(e) => local = Err(e),
            }
        }
        self.run_collective(&m, desc, local, true, small, |me, all| {
            let bytes = n * es as u64;
            let objects = [(dest.offset(), bytes), (source.offset(), bytes)];
            let push_ok = match pushes {
                Some(p) => p,
                None => self.push_possible(&[push], to.len())?,
            };
            let mut part = Vec::new();
            if push_ok {
                // The head and tail (this member's own dest bytes, apart from
                // the pushed middle; never whole words, see `split_words`) on
                // the generic kernel.
                if !(skip_root && me == root) {
                    for (at, len) in [(0, sp.head), (sp.head + sp.mid, sp.tail)] {
                        if len == 0 {
                            continue;
                        }
                        generic_reach("broadcast", &objects)?;
                        let mut a = Self::host_args(&m, dest, source);
                        a.dest += at as u32;
                        a.source += at as u32;
                        a.n = len as u32;
                        let call = HostCall::Broadcast { root, skip_root };
                        part.push(Step::Generic(call, a, len.div_ceil(4) + 1));
                    }
                }
                // Where the team's first member submits every part (every
                // member asked for it: run_collective's test), its part
                // pushes the whole source in one launch and the others'
                // push nothing: on a GPU one push to every dest beats four
                // shares side by side (benches/RESULTS.md, "H200 broadcast as
                // one push"). Where the parts end up submitted each by its
                // member instead (a generic step this PE cannot run as
                // another), the first member still pushes it all.
                let together = super::submits_together(&m, all);
                if !together {
                    part.push(Step::Wide(self.push_wide(&push, &to, me, m.shape.size)?));
                } else if me == 0 {
                    part.push(Step::Wide(self.push_wide(&push, &to, 0, 1)?));
                }
                return Ok(part);
            }
            if skip_root && me == root {
                return Ok(part);
            }
            let from = [m.shape.member(root)];
            let to = m.shape.member(me);
            if let Some(l) = self.copy_wide(to, &from, bytes, source.offset(), dest.offset())? {
                part.push(Step::Wide(l));
                return Ok(part);
            }
            generic_reach("broadcast", &objects)?;
            let mut a = Self::host_args(&m, dest, source);
            a.n = bytes as u32;
            let call = HostCall::Broadcast { root, skip_root };
            part.push(Step::Generic(
                call,
                a,
                nonzero(bytes, bytes.div_ceil(4) + 1),
            ));
            Ok(part)
        })
    }
}
