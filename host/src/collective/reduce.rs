//! Host-initiated reductions (`shmem_<TYPE>_<op>_reduce`).
//!
//! Which operations a Rust element type supports is in its traits: every
//! [`Reduce`] type has max, min, sum and prod; [`BitwiseReduce`] types (the
//! integers) also and, or and xor, so `xor` on `f32` does not compile. The
//! generic [`Context::reduce`](crate::Context::reduce) takes the operation at run time and checks it.

use bytemuck::Pod;
use vkshmem_device::collectives::{self, HostCall, Kind};

pub use crate::element::{BitwiseReduce, Reduce, ReduceOp};

use super::{generic_reach, Desc, Members, Small, Step, Which};
use crate::error::{Error, Result};
use crate::kernels::library::{Declared, KernelShape, LibraryKernel};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::team::Team;
use vkshmem_device::collectives::HostCollective;

/// The kernels a reduction on a team of `s.size` launches: the wide f32 sum
/// (gradients; a team past the wide kernel's members chains other kernels)
/// and the generic f32 and i32 reductions; with `s.all`, every kind and
/// operation the library has.
pub(crate) fn kernels(s: &KernelShape) -> Declared {
    let kind = |name| collectives::kind(name).expect("a kind of the table");
    let direct = s.size <= collectives::WIDE_REDUCE_MAX_MEMBERS;
    let wide_of = |kind, op| LibraryKernel::WideReduce { kind, op };
    let mut wide: Vec<_> = direct
        .then(|| wide_of(kind("f32"), ReduceOp::Sum))
        .into_iter()
        .collect();
    let mut generic = ["f32", "i32"]
        .map(|k| LibraryKernel::Host(HostCollective::Reduce(kind(k))))
        .to_vec();
    if s.all {
        let kinds = collectives::KINDS.iter();
        for k in kinds
            .clone()
            .filter(|k| direct && collectives::wide_kind_available(s.cfg, k))
        {
            wide.extend(ReduceOp::ALL.map(|op| wide_of(*k, op)));
        }
        for k in kinds.filter(|k| collectives::kind_available(s.cfg, k)) {
            generic.push(LibraryKernel::Host(HostCollective::Reduce(*k)));
        }
    }
    Declared { wide, generic }
}

impl Runtime {
    pub(crate) fn reduce<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        self.reduce_inner(m, op, dest, source, nreduce)
    }

    pub(crate) fn reduce_inner<T: Reduce>(
        &self,
        m: Members,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let kind: Kind = collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        let n = nreduce as u64;
        let mut local = self.check_reduce(&kind, op, dest, source, n);
        let small = Small::reduction::<T>(
            source.offset(),
            n.saturating_mul(kind.bytes as u64),
            m.shape.size,
            op,
        );
        // The wide path's kernel is built before the agreement (see wide.rs), so
        // that a failure is every member's; a call this PE can run on the host
        // builds it only if the members end up on the kernel path (then after
        // the agreement: the choice uses agreed values only, so is the same).
        let mut wide = None;
        // Not on the staged transport (whose windows on peers' heaps do not
        // exist), which every member takes alike.
        let early = !self.may_stage(&m, &small) && !self.spans_devices(&m);
        if local.is_ok() && early {
            match self.wide_prepare(&m, &kind, op, dest.offset(), source.offset(), n) {
                Ok(w) => wide = w,
                Err(e) => local = Err(e),
            }
        }
        let mut desc = Desc::new::<T>(Which::Reduce, dest.offset(), source.offset(), n);
        desc.op = op.code();
        let mut prepared = early;
        self.run_collective(&m, desc, local, true, small, |me, _| {
            if !prepared {
                wide = self.wide_prepare(&m, &kind, op, dest.offset(), source.offset(), n)?;
                prepared = true;
            }
            let bytes = n * kind.bytes as u64;
            let objects = [(dest.offset(), bytes), (source.offset(), bytes)];
            // The generic kernel over elements `at..at + count`.
            let generic = |at: u64, count: u64| -> Result<Step> {
                generic_reach("reduce", &objects)?;
                let mut a = Self::host_args(&m, dest, source);
                a.dest += (at * kind.bytes as u64) as u32;
                a.source += (at * kind.bytes as u64) as u32;
                a.n = count as u32;
                // Work items: this member's share of the dest words (or elements).
                let items = if kind.bytes == 8 {
                    count.div_ceil(m.shape.size as u64)
                } else {
                    (count * kind.bytes as u64)
                        .div_ceil(4)
                        .div_ceil(m.shape.size as u64)
                        + 1
                };
                Ok(Step::Generic(
                    HostCall::Reduce { kind, op },
                    a,
                    if count == 0 { 0 } else { items },
                ))
            };
            let Some((k, sp)) = &wide else {
                return Ok(vec![generic(0, n)?]);
            };
            // Misaligned heads and tails (a few elements) on the generic
            // kernel, the rest wide.
            let es = kind.bytes as u64;
            let mut part = Vec::new();
            for (at, bytes) in [(0, sp.head), (sp.head + sp.mid, sp.tail)] {
                if bytes > 0 {
                    part.push(generic(at / es, bytes / es)?);
                }
            }
            part.extend(self.reduce_wide(
                &m,
                me,
                k,
                kind.bytes,
                dest.offset() + sp.head,
                source.offset() + sp.head,
                sp.mid,
            )?);
            Ok(part)
        })
    }

    /// Whether this device reduces `kind` with `op` (`what` names the call).
    pub(crate) fn check_kind(&self, what: &str, kind: &Kind, op: ReduceOp) -> Result<()> {
        if op.bitwise() && kind.float {
            return Err(Error::InvalidArgument(format!(
                "{what}: {}_reduce is not defined for floating-point elements ({})",
                op.name(),
                kind.name
            )));
        }
        let cfg = self.library_config()?;
        if !collectives::kind_available(&cfg, kind) {
            return Err(Error::Unsupported {
                device: self.device_info().name.clone(),
                what: format!("reductions over {} (shaderInt64/shaderFloat64)", kind.name),
            });
        }
        Ok(())
    }

    fn check_reduce<T: Pod>(
        &self,
        kind: &Kind,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        n: u64,
    ) -> Result<()> {
        self.check_kind("reduce", kind, op)?;
        self.check_sym_heap("reduce dest", dest, n)?;
        self.check_sym_heap("reduce source", source, n)?;
        let bytes = n * kind.bytes as u64;
        let (d, s) = (dest.offset(), source.offset());
        if d != s && d < s + bytes && s < d + bytes {
            return Err(Error::InvalidArgument(format!(
                "reduce: dest (offset {d}) and source (offset {s}) overlap without being the same object"
            )));
        }
        Ok(())
    }
}
