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
//! `Runtime::reach`: the host mapping, or the target's proxy thread, which
//! applies the same operation to its own mapping.

use bytemuck::Pod;
use vkshmem_device::layout as dl;

use super::Reach;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use crate::transport::word::{apply, WordOp};

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

/// A host atomic on a heap the host does not map: one invocation applies
/// word operation `op` (`PX_*`) with the public device API and stores the
/// old value in this PE's control region. The 64-bit branch is left out on
/// devices without 64-bit atomics (see `Runtime::amo_by_kernel`).
const AMO_KERNEL: &str =
    "struct P { op: u32, pe: u32, a: u32, wide: u32, vlo: u32, vhi: u32, clo: u32, chi: u32 }
var<immediate> p: P;

@compute @workgroup_size(1)
fn main() {
    var r = vec2<u32>();
    if p.wide == 0u {
        switch p.op {
            case VKS_PX_STORE: { shmem_uint32_atomic_set(p.a, p.vlo, p.pe); }
            case VKS_PX_ADD: { r.x = shmem_uint32_atomic_fetch_add(p.a, p.vlo, p.pe); }
            case VKS_PX_AND: { r.x = shmem_uint32_atomic_fetch_and(p.a, p.vlo, p.pe); }
            case VKS_PX_OR: { r.x = shmem_uint32_atomic_fetch_or(p.a, p.vlo, p.pe); }
            case VKS_PX_XOR: { r.x = shmem_uint32_atomic_fetch_xor(p.a, p.vlo, p.pe); }
            case VKS_PX_SWAP: { r.x = shmem_uint32_atomic_swap(p.a, p.vlo, p.pe); }
            case VKS_PX_CAS: { r.x = shmem_uint32_atomic_compare_swap(p.a, p.clo, p.vlo, p.pe); }
            default: { r.x = shmem_uint32_atomic_fetch(p.a, p.pe); }
        }
    } else {
        let v = u64(p.vlo) | (u64(p.vhi) << 32u);
        let c = u64(p.clo) | (u64(p.chi) << 32u);
        var o = 0lu;
        switch p.op {
            case VKS_PX_STORE: { shmem_uint64_atomic_set(p.a, v, p.pe); }
            case VKS_PX_ADD: { o = shmem_uint64_atomic_fetch_add(p.a, v, p.pe); }
            case VKS_PX_AND: { o = shmem_uint64_atomic_fetch_and(p.a, v, p.pe); }
            case VKS_PX_OR: { o = shmem_uint64_atomic_fetch_or(p.a, v, p.pe); }
            case VKS_PX_XOR: { o = shmem_uint64_atomic_fetch_xor(p.a, v, p.pe); }
            case VKS_PX_SWAP: { o = shmem_uint64_atomic_swap(p.a, v, p.pe); }
            case VKS_PX_CAS: { o = shmem_uint64_atomic_compare_swap(p.a, c, v, p.pe); }
            default: { o = shmem_uint64_atomic_fetch(p.a, p.pe); }
        }
        r = vec2<u32>(u32(o), u32(o >> 32u));
    }
";

/// The kernel's end: the old value into this PE's control region.
const AMO_KERNEL_END: &str = "    let me = u32(shmem_my_pe());
    shmem_uint32_p(VKS_CTRL_AMO_LO, r.x, me);
    shmem_uint32_p(VKS_CTRL_AMO_HI, r.y, me);
}
";

/// [`AMO_KERNEL`] for a device with (`wide`) or without 64-bit atomics.
fn amo_kernel_source(wide: bool) -> String {
    let body = if wide {
        AMO_KERNEL.to_string()
    } else {
        // Without the 64-bit branch: its functions do not exist.
        let narrow = AMO_KERNEL.split("    } else {").next();
        narrow.expect("a 32-bit branch").to_string() + "    }\n"
    };
    body + AMO_KERNEL_END
}

impl Runtime {
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
        let w = WordOp {
            pe,
            at: dest.offset(),
            width,
            op,
            value: value.to_bits(),
            cmp: cmp.to_bits(),
        };
        let old = match self.reach(pe, w.at, u64::from(width))? {
            // SAFETY: check_rma put the element inside one live allocation,
            // aligned to its size (4 or 8); the mapping lives with the context.
            Reach::Mapped(p) => unsafe { apply(p, width, op, w.value, w.cmp) },
            Reach::Proxy(proxy) => proxy.amo(w)?,
            Reach::Copies => self.amo_by_kernel(what, w)?,
        };
        Ok(T::from_bits(old))
    }

    /// Whether a host atomic of `width` bytes can reach a heap the host does
    /// not map: through [`AMO_KERNEL`], whose 64-bit form needs the device's
    /// 64-bit atomics.
    pub(crate) fn kernel_amo_supported(&self, width: u32) -> bool {
        width == 4 || self.library.int64_atomics
    }

    /// The word operation `w` on a heap on this device the host does not
    /// map, by a one-invocation kernel, which leaves the old value in this
    /// PE's control region (`amo_lo`, `amo_hi`). Serialised: one result slot.
    fn amo_by_kernel(&self, what: &str, w: WordOp) -> Result<u64> {
        let WordOp {
            pe,
            at,
            width,
            op,
            value,
            cmp,
        } = w;
        if !self.kernel_amo_supported(width) {
            return Err(Error::Unsupported {
                device: self.device_info().name.clone(),
                what: format!(
                    "{what}: 64-bit host atomics on a heap that is not host-mapped (PE {pe}) need shaderBufferInt64Atomics"
                ),
            });
        }
        // One result slot: one such atomic at a time. The kernel is built
        // at the first one.
        let mut slot = crate::lock::lock(&self.host_amo);
        let kernel = match &*slot {
            Some(k) => k.clone(),
            None => {
                let source = amo_kernel_source(self.library.int64_atomics);
                let k = self.device_kernel(&source, "vkshmem_host_amo.wgsl")?;
                slot.insert(k).clone()
            }
        };
        let args: [u32; 8] = [
            op,
            pe,
            (at / 4) as u32,
            u32::from(width == 8),
            value as u32,
            (value >> 32) as u32,
            cmp as u32,
            (cmp >> 32) as u32,
        ];
        self.launch(&kernel, [1, 1, 1], &[], bytemuck::cast_slice(&args))?;
        let mut old = [0u8; 8];
        let at = std::mem::offset_of!(dl::ControlHeader, amo_lo) as u64;
        self.read_bytes(self.my_pe(), at, &mut old)?;
        drop(slot);
        Ok(u64::from_le_bytes(old))
    }

    pub(crate) fn atomic_fetch<T: AmoValue>(&self, src: SymSlice<'_, T>, pe: u32) -> Result<T> {
        let z = T::zeroed();
        self.amo("atomic_fetch", src, pe, dl::PX_LOAD, z, z)
    }

    pub(crate) fn atomic_set<T: AmoValue>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<()> {
        let z = T::zeroed();
        self.amo("atomic_set", dest, pe, dl::PX_STORE, value, z)
            .map(drop)
    }

    pub(crate) fn atomic_swap<T: AmoValue>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<T> {
        let z = T::zeroed();
        self.amo("atomic_swap", dest, pe, dl::PX_SWAP, value, z)
    }

    pub(crate) fn atomic_compare_swap<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        cond: T,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.amo("atomic_compare_swap", dest, pe, dl::PX_CAS, value, cond)
    }

    pub(crate) fn atomic_fetch_add<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<T> {
        let z = T::zeroed();
        self.amo("atomic_fetch_add", dest, pe, dl::PX_ADD, value, z)
    }

    pub(crate) fn atomic_add<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic_fetch_add(dest, value, pe).map(drop)
    }

    pub(crate) fn atomic_fetch_inc<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        pe: u32,
    ) -> Result<T> {
        self.atomic_fetch_add(dest, T::from_bits(1), pe)
    }

    pub(crate) fn atomic_inc<T: AmoInteger>(&self, dest: SymSlice<'_, T>, pe: u32) -> Result<()> {
        self.atomic_fetch_inc(dest, pe).map(drop)
    }
}

/// The bitwise atomics, generated: `fetch_<op>` returns the old value, `<op>`
/// does not (their façade: `context/rma.rs`).
macro_rules! bitwise {
    ($($fetch:ident, $plain:ident, $px:ident, $name:literal;)*) => {
        impl Runtime {$(
            pub(crate) fn $fetch<T: AmoBitwise>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<T> {
                let z = T::zeroed();
                self.amo(stringify!($fetch), dest, pe, dl::$px, value, z)
            }

            pub(crate) fn $plain<T: AmoBitwise>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
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

    /// The kernel of host atomics on unmapped heaps links on devices with
    /// and without 64-bit atomics (only the first are at hand here).
    #[test]
    fn the_amo_kernel_links_with_and_without_64bit_atomics() {
        for wide in [true, false] {
            let cfg = vkshmem_device::LibraryConfig {
                slots: 8,
                chunks: 1,
                max_binding_bytes: 1 << 27,
                int64: wide,
                float64: wide,
                int64_atomics: wide,
                divergent_fences: true,
                loop_cap: false,
                row_lanes: 0,
                proxy: false,
                vec4_u64: false,
            };
            let src = amo_kernel_source(wide);
            assert_eq!(src.contains("shmem_uint64_atomic"), wide);
            vkshmem_device::link_kernel(&src, "amo", None, &cfg)
                .unwrap_or_else(|e| panic!("64-bit atomics {wide}: {e}"));
        }
    }

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
