//! Host fcollect and collect: every member's data, concatenated in team order,
//! to every member ([`Context::fcollect`](crate::Context::fcollect), [`Context::collect`](crate::Context::collect)); also the block
//! movement fcollect shares with alltoall.

use bytemuck::Pod;
use vkshmem_device::collectives::HostCall;

use super::collect_total;
use super::wide::Push;
use super::{generic_reach, nonzero, Desc, Members, Small, Step, Which};
use crate::error::{Error, Result};
use crate::kernels::library::{Declared, KernelShape, LibraryKernel};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::team::Team;
use vkshmem_device::collectives::HostCollective;
use vkshmem_device::layout;

/// The kernels fcollect and collect on a team of `s.size` launch: the
/// wide pushes to every member (as broadcast's) and the wide copy from
/// every member, then their generic kernels; with `s.all`, the word copy.
pub(crate) fn kernels(s: &KernelShape) -> Declared {
    let wg = s.wg;
    let mut wide = super::broadcast::pushes(s);
    wide.push(LibraryKernel::WideCopy { blocks: s.size, wg });
    if s.all {
        wide.push(LibraryKernel::WideCopyWords { blocks: s.size, wg });
    }
    Declared {
        wide,
        generic: [HostCollective::Fcollect, HostCollective::Collect]
            .map(LibraryKernel::Host)
            .to_vec(),
    }
}

impl Runtime {
    pub(crate) fn fcollect<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        self.fcollect_inner(m, dest, source, nelems)
    }

    pub(crate) fn fcollect_inner<T: Pod>(
        &self,
        m: Members,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.blocks_inner(m, Which::Fcollect, dest, source, nelems, 1)
    }

    /// fcollect and alltoall: every member's dest gets `size` blocks of `nelems`
    /// elements; the source holds `source_blocks` blocks (1 or `size`).
    pub(super) fn blocks_inner<T: Pod>(
        &self,
        m: Members,
        which: Which,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        source_blocks: u64,
    ) -> Result<()> {
        let es = std::mem::size_of::<T>() as u32;
        let n = nelems as u64;
        let size = m.shape.size as u64;
        let name = which.name();
        let (what_dest, what_source) = match which {
            Which::Fcollect => ("fcollect dest", "fcollect source"),
            _ => ("alltoall dest", "alltoall source"),
        };
        let mut local = match (n.checked_mul(size), n.checked_mul(source_blocks)) {
            (Some(d), Some(s)) => self
                .check_sym_heap(what_dest, dest, d)
                .and_then(|_| self.check_sym_heap(what_source, source, s)),
            _ => Err(Error::InvalidArgument(format!(
                "{name}: {nelems} elements times {size} members overflow"
            ))),
        };
        let desc = Desc::new::<T>(which, dest.offset(), source.offset(), n);
        let call = match which {
            Which::Fcollect => HostCall::Fcollect,
            _ => HostCall::Alltoall,
        };
        let bytes = n.saturating_mul(es as u64).saturating_mul(source_blocks);
        let small = Small::copies(source.offset(), bytes, bytes);
        // fcollect pushes: each member writes its source to its place in
        // every member's dest (each source read once), decided and built as
        // broadcast's push is (see broadcast.rs).
        let to: Vec<u32> = m.shape.members().collect();
        let bytes = n.saturating_mul(es as u64);
        let pushes: Vec<Push> = to
            .iter()
            .enumerate()
            .map(|(j, &pe)| Push {
                from: pe,
                src: source.offset(),
                dst: dest
                    .offset()
                    .saturating_add((j as u64).saturating_mul(bytes)),
                bytes,
            })
            .collect();
        // Objects equally off 16-byte alignment in whole words push whole:
        // the push kernel starts them inside their first vec4 (see wide.rs).
        let fcollect = which == Which::Fcollect;
        let early = fcollect && !self.may_stage(&m, &small) && !self.spans_devices(&m);
        let mut push = None;
        if local.is_ok() && early {
            match self.push_possible(&pushes, to.len()) {
                Ok(p) => push = Some(p),
                Err(e) => local = Err(e),
            }
        }
        self.run_collective(&m, desc, local, true, small, |me, _| {
            let bytes = n * es as u64;
            let push_ok = match push {
                Some(p) => p,
                None => fcollect && self.push_possible(&pushes, to.len())?,
            };
            if push_ok {
                let l = self.push_wide(&pushes[me as usize], &to, 0, 1)?;
                return Ok(vec![Step::Wide(l)]);
            }
            // fcollect pulls every member's source, alltoall block `me` of it.
            let from: Vec<u32> = m.shape.members().collect();
            let at = match which {
                Which::Fcollect => source.offset(),
                _ => source.offset() + me as u64 * bytes,
            };
            let pe = m.shape.member(me);
            if let Some(l) = self.copy_wide(pe, &from, bytes, at, dest.offset())? {
                return Ok(vec![Step::Wide(l)]);
            }
            generic_reach(
                name,
                &[
                    (dest.offset(), bytes * size),
                    (source.offset(), bytes * source_blocks),
                ],
            )?;
            let mut a = Self::host_args(&m, dest, source);
            a.n = bytes as u32;
            let items = nonzero(bytes, (bytes * size).div_ceil(4) + size);
            Ok(vec![Step::Generic(call, a, items)])
        })
    }

    pub(crate) fn fcollectmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
    ) -> Result<()> {
        self.fcollect(team, dest, source, nbytes)
    }

    pub(crate) fn collect<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        self.collect_inner(m, dest, source, nelems)
    }

    pub(crate) fn collect_inner<T: Pod>(
        &self,
        m: Members,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let es = std::mem::size_of::<T>() as u32;
        let n = nelems as u64;
        let mut local = self
            .check_sym_heap("collect source", source, n)
            .and_then(|_| {
                // The total is known after the agreement; the dest must at least
                // hold this PE's own part.
                self.check_sym_heap("collect dest", dest, n)
            });
        let mut desc = Desc::new::<T>(Which::Collect, dest.offset(), source.offset(), n);
        desc.cap = dest.len() as u64;
        let bytes = n.saturating_mul(es as u64);
        let small = Small::copies(source.offset(), bytes, bytes);
        // The push (as fcollect's) needs the counts, known after the
        // agreement; its kernels are built before it where the call will not
        // run on the host (see broadcast.rs); the kernels for edge vec4s, if
        // the counts and the unit need them, by `push_possible` after it.
        let to: Vec<u32> = m.shape.members().collect();
        if local.is_ok() && !self.may_stage(&m, &small) && !self.spans_devices(&m) {
            if let Err(e) = self.push_kernels(to.len(), false) {
                local = Err(e);
            }
        }
        self.run_collective(&m, desc, local, false, small, |me, all| {
            let counts: Vec<u64> = all.iter().map(|d| d.nelems * es as u64).collect();
            let total = collect_total(all)? * es as u64;
            self.check_sym_heap("collect dest", dest, total / es as u64)?;
            let mut at = dest.offset();
            let pushes: Vec<Push> = to
                .iter()
                .zip(&counts)
                .map(|(&pe, &c)| {
                    let p = Push {
                        from: pe,
                        src: source.offset(),
                        dst: at,
                        bytes: c,
                    };
                    at += c;
                    p
                })
                .collect();
            if self.push_possible(&pushes, to.len())? {
                let l = self.push_wide(&pushes[me as usize], &to, 0, 1)?;
                return Ok(vec![Step::Wide(l)]);
            }
            let pe = m.shape.member(me);
            if counts.iter().all(|&c| c == counts[0]) {
                // Equal counts: an fcollect, whose wide copy a member may take
                // alone (only its own dest is written).
                let from: Vec<u32> = m.shape.members().collect();
                let l = self.copy_wide(pe, &from, counts[0], source.offset(), dest.offset())?;
                if let Some(l) = l {
                    return Ok(vec![Step::Wide(l)]);
                }
            } else if counts.iter().all(|&c| c % 4 == 0) {
                // Unequal counts in whole words: one wide copy per member, each
                // block to its place in the member's dest (word by word where
                // a block or its place is off whole vec4s).
                let mut at = dest.offset();
                let mut launches = Vec::new();
                let mut wide = true;
                for (j, from) in m.shape.members().enumerate() {
                    if counts[j] > 0 {
                        match self.copy_wide(pe, &[from], counts[j], source.offset(), at)? {
                            Some(l) => launches.extend(l),
                            None => {
                                wide = false;
                                break;
                            }
                        }
                    }
                    at += counts[j];
                }
                if wide {
                    return Ok(vec![Step::Wide(launches)]);
                }
            }
            let most = counts.iter().copied().max().unwrap_or(0);
            generic_reach(
                "collect",
                &[(dest.offset(), total), (source.offset(), most)],
            )?;
            let words: Vec<u32> = counts.iter().map(|&c| c as u32).collect();
            let at = layout::host_counts_word(self.n_pes());
            Ok(vec![
                Step::WriteOwn(at as u64 * 4, bytemuck::cast_slice(&words).to_vec()),
                Step::Generic(
                    HostCall::Collect { counts_at: at },
                    Self::host_args(&m, dest, source),
                    nonzero(total, total.div_ceil(4) + m.shape.size as u64),
                ),
            ])
        })
    }

    pub(crate) fn collectmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
    ) -> Result<()> {
        self.collect(team, dest, source, nbytes)
    }
}
