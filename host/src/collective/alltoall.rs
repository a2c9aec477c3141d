//! Host alltoall and alltoalls: block `j` of every member's dest from member
//! `j` ([`Context::alltoall`](crate::Context::alltoall), [`Context::alltoalls`](crate::Context::alltoalls)).

use bytemuck::Pod;
use vkshmem_device::collectives::HostCall;

use super::{generic_reach, Desc, Members, Small, Step, Which};
use crate::error::{Error, Result};
use crate::kernels::library::{Declared, KernelShape, LibraryKernel};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::team::Team;
use vkshmem_device::collectives::HostCollective;

/// The kernels alltoall and alltoalls on a team of `s.size` launch: the
/// wide copy from every member, then their generic kernels; with `s.all`,
/// the word copy.
pub(crate) fn kernels(s: &KernelShape) -> Declared {
    let wg = s.wg;
    let mut wide = vec![LibraryKernel::WideCopy { blocks: s.size, wg }];
    if s.all {
        wide.push(LibraryKernel::WideCopyWords { blocks: s.size, wg });
    }
    Declared {
        wide,
        generic: [HostCollective::Alltoall, HostCollective::Alltoalls]
            .map(LibraryKernel::Host)
            .to_vec(),
    }
}

impl Runtime {
    pub(crate) fn alltoall<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        self.alltoall_inner(m, dest, source, nelems)
    }

    pub(crate) fn alltoall_inner<T: Pod>(
        &self,
        m: Members,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let size = m.shape.size as u64;
        self.blocks_inner(m, Which::Alltoall, dest, source, nelems, size)
    }

    pub(crate) fn alltoallmem(
        &self,
        team: Team,
        dest: &SymSlice<u8>,
        source: &SymSlice<u8>,
        nbytes: usize,
    ) -> Result<()> {
        self.alltoall(team, dest, source, nbytes)
    }

    pub(crate) fn alltoalls<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        self.alltoalls_inner(m, dest, source, dst, sst, nelems)
    }

    pub(crate) fn alltoalls_inner<T: Pod>(
        &self,
        m: Members,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Result<()> {
        let es = std::mem::size_of::<T>() as u32;
        let n = nelems as u64;
        let size = m.shape.size as u64;
        // Elements spanned: the last element of the last block, plus one.
        let span = |stride: u64| -> Option<u64> {
            if n == 0 {
                Some(0)
            } else {
                (size.checked_mul(n)? - 1)
                    .checked_mul(stride)?
                    .checked_add(1)
            }
        };
        let (dspan, sspan) = (span(dst as u64), span(sst as u64));
        let local = if dst == 0 || sst == 0 {
            Err(Error::InvalidArgument(format!(
                "alltoalls: strides must be at least 1 (dst {dst}, sst {sst})"
            )))
        } else if es > 8 || !es.is_power_of_two() {
            Err(Error::InvalidArgument(format!(
                "alltoalls: elements of 1, 2, 4 or 8 bytes, not {es}"
            )))
        } else if let (Some(ds), Some(ss)) = (dspan, sspan) {
            self.check_sym_heap("alltoalls dest", dest, ds)
                .and_then(|_| self.check_sym_heap("alltoalls source", source, ss))
        } else {
            Err(Error::InvalidArgument(format!(
                "alltoalls: strides {dst}, {sst} with {nelems} elements overflow"
            )))
        };
        let mut desc = Desc::new::<T>(Which::Alltoalls, dest.offset(), source.offset(), n);
        desc.dst = dst as u64;
        desc.sst = sst as u64;
        // The host path stages the source's whole strided span.
        let staged = sspan.unwrap_or(u64::MAX).saturating_mul(es as u64);
        let small = Small::copies(source.offset(), staged, staged);
        self.run_collective(&m, desc, local, true, small, |me, _| {
            if dst == 1 && sst == 1 {
                // Unit strides: an alltoall, whose wide copy a member may take
                // alone (only its own dest is written).
                let bytes = n * es as u64;
                let from: Vec<u32> = m.shape.members().collect();
                let at = source.offset() + me as u64 * bytes;
                let pe = m.shape.member(me);
                if let Some(l) = self.copy_wide(pe, &from, bytes, at, dest.offset())? {
                    return Ok(vec![Step::Wide(l)]);
                }
            }
            generic_reach(
                "alltoalls",
                &[
                    (dest.offset(), dspan.unwrap_or(0) * es as u64),
                    (source.offset(), sspan.unwrap_or(0) * es as u64),
                ],
            )?;
            let mut a = Self::host_args(&m, dest, source);
            a.n = n as u32;
            let call = HostCall::Alltoalls {
                elem_bytes: es,
                dst: dst as u32,
                sst: sst as u32,
            };
            Ok(vec![Step::Generic(call, a, n * size)])
        })
    }
}
