//! Host atomics on any PE's heap (OpenSHMEM's AMOs): fetch, set, swap,
//! compare_swap, fetch_inc, inc, fetch_add, add, and the bitwise
//! and/or/xor with and without fetch.
//!
//! The types are OpenSHMEM's (and ishmem's) lists, as Rust types:
//! - [`AmoValue`] (fetch, set, swap): every standard type plus the extended
//!   `f32` and `f64`;
//! - [`AmoInteger`] (compare_swap, inc, add): the standard integer types
//!   (`i32`, `u32`, `i64`, `u64`, `isize` for ptrdiff_t, `usize` for size_t);
//! - [`AmoBitwise`] (and, or, xor): the fixed-width integers.
//!
//! Each operation is one word operation of 4 or 8 bytes
//! (`crate::transport::word::apply`) on the target's heap, through
//! `Context::reach`: the host mapping, or the target's proxy thread, which
//! applies the same operation to its own mapping.

use bytemuck::Pod;
use vkshmem_device::layout as dl;

use super::Reach;
use crate::error::{Error, Result};
use crate::symbuf::SymSlice;
use crate::transport::word::apply;
use crate::Context;

/// A type host atomics fetch, set and swap (OpenSHMEM's standard and
/// extended AMO types).
pub trait AmoValue: Pod + Sealed {
    /// Its bits, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value of the low `size_of::<Self>()` bytes of `bits`.
    fn from_bits(bits: u64) -> Self;
}

/// A type with compare_swap, inc and add (OpenSHMEM's standard AMO types).
pub trait AmoInteger: AmoValue {}

/// A type with the bitwise atomics (OpenSHMEM's bitwise AMO types).
pub trait AmoBitwise: AmoValue {}

mod sealed {
    pub trait Sealed {}
}
use sealed::Sealed;

/// The type tables, in one place: `$t` as `$bits` bits, and the traits it has.
macro_rules! amo_types {
    ($($t:ty => $bits:ty, [$($tr:ident),*];)*) => {$(
        impl Sealed for $t {}
        impl AmoValue for $t {
            fn to_bits(self) -> u64 {
                bytemuck::cast::<$t, $bits>(self) as u64
            }
            fn from_bits(bits: u64) -> Self {
                bytemuck::cast::<$bits, $t>(bits as $bits)
            }
        }
        $(impl $tr for $t {})*
    )*};
}

amo_types! {
    i32 => u32, [AmoInteger, AmoBitwise];
    u32 => u32, [AmoInteger, AmoBitwise];
    i64 => u64, [AmoInteger, AmoBitwise];
    u64 => u64, [AmoInteger, AmoBitwise];
    isize => u64, [AmoInteger];
    usize => u64, [AmoInteger];
    f32 => u32, [];
    f64 => u64, [];
}

impl Context {
    /// One word operation on the first element of `dest` on PE `pe`.
    fn amo<T: AmoValue>(
        &self,
        what: &str,
        dest: SymSlice<'_, T>,
        pe: u32,
        op: u32,
        value: T,
        cmp: T,
    ) -> Result<T> {
        self.check_rma(what, &dest, 1, pe)?;
        let width = std::mem::size_of::<T>() as u32;
        let (value, cmp) = (value.to_bits(), cmp.to_bits());
        let old = match self.reach(pe, dest.offset(), u64::from(width))? {
            // SAFETY: check_rma put the element inside one live allocation,
            // aligned to its size (4 or 8); the mapping lives with the context.
            Reach::Mapped(p) => unsafe { apply(p, width, op, value, cmp) },
            Reach::Proxy(proxy) => proxy.amo(pe, dest.offset(), width, op, value, cmp)?,
            Reach::Copies => {
                return Err(Error::Unsupported {
                    device: self.device_info().name.clone(),
                    what: format!(
                        "{what}: host atomics on a heap that is not host-mapped (PE {pe})"
                    ),
                })
            }
        };
        Ok(T::from_bits(old))
    }

    /// The first element of `src` on PE `pe`, read atomically
    /// (`shmem_atomic_fetch`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is empty, outside one live
    /// allocation, or `pe` is not in the job; [`Error::Unsupported`] on a
    /// heap that is neither host-mapped nor behind a proxy;
    /// [`Error::PeerFailed`] when the job aborts while the proxy carries it.
    pub fn atomic_fetch<T: AmoValue>(&self, src: SymSlice<'_, T>, pe: u32) -> Result<T> {
        let z = T::zeroed();
        self.amo("atomic_fetch", src, pe, dl::PX_LOAD, z, z)
    }

    /// Sets the first element of `dest` on PE `pe` atomically
    /// (`shmem_atomic_set`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_set<T: AmoValue>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
        let z = T::zeroed();
        self.amo("atomic_set", dest, pe, dl::PX_STORE, value, z)
            .map(drop)
    }

    /// Swaps `value` into the first element of `dest` on PE `pe`; returns
    /// the old value (`shmem_atomic_swap`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_swap<T: AmoValue>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<T> {
        let z = T::zeroed();
        self.amo("atomic_swap", dest, pe, dl::PX_SWAP, value, z)
    }

    /// Sets the first element of `dest` on PE `pe` to `value` if it equals
    /// `cond`; returns the old value either way (`shmem_atomic_compare_swap`).
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// let ctx = vkshmem_host::Context::init()?;
    /// let lock = ctx.calloc::<u64>(1)?;
    /// // Take a lock word on PE 0: 0 means free.
    /// while ctx.atomic_compare_swap(lock.as_slice(), 0, ctx.my_pe() as u64 + 1, 0)? != 0 {}
    /// ctx.atomic_set(lock.as_slice(), 0, 0)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_compare_swap<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        cond: T,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.amo("atomic_compare_swap", dest, pe, dl::PX_CAS, value, cond)
    }

    /// Adds `value` to the first element of `dest` on PE `pe`; returns the
    /// old value (`shmem_atomic_fetch_add`). Integers wrap.
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_fetch_add<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<T> {
        let z = T::zeroed();
        self.amo("atomic_fetch_add", dest, pe, dl::PX_ADD, value, z)
    }

    /// [`Context::atomic_fetch_add`] without the fetch (`shmem_atomic_add`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_add<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic_fetch_add(dest, value, pe).map(drop)
    }

    /// Adds one; returns the old value (`shmem_atomic_fetch_inc`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_fetch_inc<T: AmoInteger>(&self, dest: SymSlice<'_, T>, pe: u32) -> Result<T> {
        self.atomic_fetch_add(dest, T::from_bits(1), pe)
    }

    /// Adds one (`shmem_atomic_inc`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`].
    pub fn atomic_inc<T: AmoInteger>(&self, dest: SymSlice<'_, T>, pe: u32) -> Result<()> {
        self.atomic_fetch_inc(dest, pe).map(drop)
    }
}

/// The bitwise atomics, generated: `fetch_<op>` returns the old value, `<op>`
/// does not.
macro_rules! bitwise {
    ($($fetch:ident, $plain:ident, $px:ident, $name:literal;)*) => {
        impl Context {$(
            #[doc = concat!("Applies bitwise ", $name, " with `value` to the first element of `dest` on PE `pe`; returns the old value (`shmem_atomic_fetch_", $name, "`).")]
            ///
            /// # Errors
            /// As [`Context::atomic_fetch`].
            pub fn $fetch<T: AmoBitwise>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<T> {
                let z = T::zeroed();
                self.amo(stringify!($fetch), dest, pe, dl::$px, value, z)
            }

            #[doc = concat!("Applies bitwise ", $name, " with `value` to the first element of `dest` on PE `pe` (`shmem_atomic_", $name, "`).")]
            ///
            /// # Errors
            /// As [`Context::atomic_fetch`].
            pub fn $plain<T: AmoBitwise>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
                self.$fetch(dest, value, pe).map(drop)
            }
        )*}
    };
}

bitwise! {
    atomic_fetch_and, atomic_and, PX_AND, "and";
    atomic_fetch_or, atomic_or, PX_OR, "or";
    atomic_fetch_xor, atomic_xor, PX_XOR, "xor";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        assert_eq!(AmoValue::to_bits(-1i32), 0xffff_ffff);
        assert_eq!(<i32 as AmoValue>::from_bits(0xffff_fffe), -2);
        assert_eq!(<f64 as AmoValue>::from_bits(AmoValue::to_bits(2.5f64)), 2.5);
        assert_eq!(
            <f32 as AmoValue>::from_bits(AmoValue::to_bits(-0.5f32)),
            -0.5
        );
        assert_eq!(<usize as AmoValue>::from_bits(u64::MAX), usize::MAX);
    }
}
