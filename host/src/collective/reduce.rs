//! Host-initiated reductions (`shmem_<TYPE>_<op>_reduce`).
//!
//! Which operations a Rust element type supports is in its traits: every
//! [`Reduce`] type has max, min, sum and prod; [`BitwiseReduce`] types (the
//! integers) also and, or and xor, so `xor` on `f32` does not compile. The
//! generic [`Context::reduce`] takes the operation at run time and checks it.

use bytemuck::Pod;
use vkshmem_device::collectives::{self, HostCall, Kind};

pub use vkshmem_device::collectives::ReduceOp;

use super::{generic_reach, Desc, Members, Small, Step, Which};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::symbuf::SymSlice;
use crate::team::Team;

mod sealed {
    pub trait Sealed {}
}

/// An element type the reductions support: max, min, sum and prod (integer sums
/// and products wrap). Implemented for the fixed-width integers, `isize`/`usize`
/// (64-bit), `f32`, `f64` and the half-precision [`half::f16`] and
/// [`half::bf16`]; 64-bit types need a device with `shaderInt64` (`f64`:
/// `shaderFloat64`). Half-precision elements are combined in f32 and rounded
/// to nearest even after every step (exactly what native half arithmetic
/// gives), on every device.
pub trait Reduce: Pod + sealed::Sealed {
    /// The device's machine kind for it (`i8`, `u64`, `f32`, ...).
    const KIND: &'static str;
    /// `a op b` on the host, as the device computes it (the host path of small
    /// reductions; integers wrap; bitwise ops are never asked of floats).
    #[doc(hidden)]
    fn host_combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

/// A [`Reduce`] type that also supports the bitwise reductions (and, or, xor).
pub trait BitwiseReduce: Reduce {}

macro_rules! reduce_types {
    ($($t:ty => $k:literal, $bitwise:tt;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Reduce for $t {
            const KIND: &'static str = $k;
            #[inline(always)]
            fn host_combine(op: ReduceOp, a: Self, b: Self) -> Self {
                reduce_types!(@combine $bitwise, op, a, b)
            }
        }
        reduce_types!(@bitwise $t, $bitwise);
    )*};
    (@bitwise $t:ty, yes) => { impl BitwiseReduce for $t {} };
    (@bitwise $t:ty, no) => {};
    (@combine yes, $op:ident, $a:ident, $b:ident) => {
        match $op {
            ReduceOp::And => $a & $b,
            ReduceOp::Or => $a | $b,
            ReduceOp::Xor => $a ^ $b,
            ReduceOp::Max => $a.max($b),
            ReduceOp::Min => $a.min($b),
            ReduceOp::Sum => $a.wrapping_add($b),
            ReduceOp::Prod => $a.wrapping_mul($b),
        }
    };
    (@combine no, $op:ident, $a:ident, $b:ident) => {
        match $op {
            ReduceOp::Max => $a.max($b),
            ReduceOp::Min => $a.min($b),
            ReduceOp::Sum => $a + $b,
            ReduceOp::Prod => $a * $b,
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                unreachable!("checked: no bitwise reductions of floats")
            }
        }
    };
}

reduce_types! {
    i8 => "i8", yes;
    u8 => "u8", yes;
    i16 => "i16", yes;
    u16 => "u16", yes;
    i32 => "i32", yes;
    u32 => "u32", yes;
    i64 => "i64", yes;
    u64 => "u64", yes;
    isize => "i64", yes;
    usize => "u64", yes;
    f32 => "f32", no;
    f64 => "f64", no;
    half::f16 => "f16", no;
    half::bf16 => "bf16", no;
}

macro_rules! typed_reductions {
    ($($(#[$m:meta])* $name:ident: $bound:ident => $op:ident;)*) => {
        impl Context {$(
            $(#[$m])*
            ///
            /// # Errors
            /// As [`Context::reduce`].
            pub fn $name<T: $bound>(
                &self,
                team: Team,
                dest: &SymSlice<T>,
                source: &SymSlice<T>,
                nreduce: usize,
            ) -> Result<()> {
                self.reduce(team, ReduceOp::$op, dest, source, nreduce)
            }
        )*}
    };
}

typed_reductions! {
    /// Bitwise and of every member's `source`, element by element, into every
    /// member's `dest` (`shmem_and_reduce`).
    and_reduce: BitwiseReduce => And;
    /// Bitwise or (`shmem_or_reduce`); see [`Context::and_reduce`].
    or_reduce: BitwiseReduce => Or;
    /// Bitwise exclusive or (`shmem_xor_reduce`); see [`Context::and_reduce`].
    xor_reduce: BitwiseReduce => Xor;
    /// Maximum (`shmem_max_reduce`); see [`Context::sum_reduce`].
    max_reduce: Reduce => Max;
    /// Minimum (`shmem_min_reduce`); see [`Context::sum_reduce`].
    min_reduce: Reduce => Min;
    /// Sum of every member's `source`, element by element, into every member's
    /// `dest` (`shmem_sum_reduce`, an allreduce). `dest` and `source` are the same
    /// object (in place) or do not overlap.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{Context, Team};
    /// let ctx = Context::init()?;
    /// let grads = ctx.malloc::<f32>(1024)?;
    /// grads.write(&vec![1.0; 1024])?;
    /// let g = grads.as_slice();
    /// ctx.sum_reduce(Team::WORLD, &g, &g, 1024)?; // in place
    /// assert_eq!(grads.to_vec()?[0], ctx.n_pes() as f32);
    /// # Ok(()) }
    /// ```
    sum_reduce: Reduce => Sum;
    /// Product (`shmem_prod_reduce`); see [`Context::sum_reduce`].
    prod_reduce: Reduce => Prod;
}

impl Context {
    /// Reduces `nreduce` elements of every member's `source` with `op` into every
    /// member's `dest`; the typed forms ([`Context::sum_reduce`] …) check the
    /// operation at compile time, this one at run time. Collective over `team`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (on every member) for an invalid team, a bitwise
    /// operation on a floating type, objects that do not hold `nreduce` elements,
    /// lie outside the heap or overlap without being the same, or members passing
    /// different arguments; [`Error::Unsupported`] for 64-bit types on a device
    /// without 64-bit shader arithmetic; the rest as [`Context::broadcast`]
    /// ([`Error::PeerFailed`], [`Error::Broken`], [`Error::Device`], Vulkan).
    pub fn reduce<T: Reduce>(
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
