//! One-sided communication from the host (OpenSHMEM's RMA, atomics, signals
//! and point-to-point synchronisation): [`Context::put`](crate::Context::put), [`Context::get`](crate::Context::get),
//! their `_nbi`, single-element ([`Context::p`](crate::Context::p), [`Context::g`](crate::Context::g)) and strided
//! ([`Context::iput`](crate::Context::iput), [`Context::iget`](crate::Context::iget)) forms, [`Context::put_signal`](crate::Context::put_signal),
//! [`Context::fence`](crate::Context::fence); the atomics are in [`amo`], the waits in [`wait`].
//!
//! # How a PE's heap is reached
//! By transport ([`crate::transport`]), in one place (`Runtime::reach`):
//! - **Direct, host-mapped**: loads, stores and atomics through the host
//!   mapping of the peer's heap (plain `std` atomics: the device's atomics on
//!   the same words are atomic with them where the mapping is coherent, which
//!   is what host-visible heaps are allocated as).
//! - **Direct, not host-mapped** (`VKSHMEM_HOST_MAPPED_MAX=0` or a heap in
//!   device-only memory): copies through the staging buffer and a transfer
//!   submit; atomics by a one-invocation kernel of the device library's
//!   atomics (64-bit ones need `shaderBufferInt64Atomics`, else
//!   [`crate::Error::Unsupported`]).
//! - **Staged** (another device) and **Remote** (another node): through this
//!   PE's proxy thread, which sends the put, get or atomic to the target PE's
//!   proxy; that one applies it to its own heap through its mapping.
//!
//! # Completion and ordering
//! Every call here returns once its effect is complete at the target (the
//! proxy waits for the target's answer), so the `_nbi` forms are the blocking
//! ones (OpenSHMEM allows completion at any time before the next quiet) and
//! [`Context::fence`](crate::Context::fence) is a full fence. [`Context::quiet`](crate::Context::quiet) also waits for what
//! device code posted through the proxy.

pub mod amo;
pub mod wait;

use std::sync::atomic::{fence, Ordering};

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;

pub use amo::{AmoBitwise, AmoInteger, AmoValue};
pub use wait::{Cmp, WaitValue};

/// How a signal word is updated by [`Context::put_signal`](crate::Context::put_signal)
/// (`SHMEM_SIGNAL_SET`, `SHMEM_SIGNAL_ADD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOp {
    /// The signal becomes the value.
    Set,
    /// The value is added to the signal (atomically).
    Add,
}

/// How this PE reaches a word of another PE's heap (see the module docs).
pub(crate) enum Reach<'a> {
    /// The host mapping of the PE's block, at the byte address.
    Mapped(*mut u8),
    /// Through this PE's proxy.
    Proxy(&'a crate::transport::proxy::Proxy),
    /// Through copies (no mapping, same device); atomics by a kernel.
    Copies,
}

impl Runtime {
    /// Checks an RMA's target: `n` elements of `s` (inside the heap's
    /// allocatable part, aligned, live) on PE `pe`.
    fn check_rma<T: Pod>(&self, what: &str, s: &SymSlice<T>, n: u64, pe: u32) -> Result<()> {
        if pe >= self.n_pes() {
            return Err(Error::InvalidArgument(format!(
                "{what}: PE {pe} is not in the job ({} PEs)",
                self.n_pes()
            )));
        }
        self.check_sym(what, s, n)
    }

    /// How to reach byte `at` (`bytes` long, already checked) of PE `pe`'s heap.
    pub(crate) fn reach(&self, pe: u32, at: u64, bytes: u64) -> Result<Reach<'_>> {
        if let Some(p) = self.proxied(pe) {
            return Ok(Reach::Proxy(p));
        }
        let block = self.check_range(pe, at, bytes)?;
        Ok(match block.mapped() {
            // SAFETY: `at + bytes` lies inside the block (check_range), so the
            // pointer stays inside its mapping.
            Some(base) => Reach::Mapped(unsafe { base.as_ptr().add(at as usize) }),
            None => Reach::Copies,
        })
    }

    pub(crate) fn put<T: Pod>(&self, dest: SymSlice<'_, T>, src: &[T], pe: u32) -> Result<()> {
        self.check_rma("put", &dest, src.len() as u64, pe)?;
        if src.is_empty() {
            return Ok(());
        }
        self.write_bytes(pe, dest.offset(), bytemuck::cast_slice(src))
    }

    pub(crate) fn get<T: Pod>(&self, dest: &mut [T], src: SymSlice<'_, T>, pe: u32) -> Result<()> {
        self.check_rma("get", &src, dest.len() as u64, pe)?;
        if dest.is_empty() {
            return Ok(());
        }
        self.read_bytes(pe, src.offset(), bytemuck::cast_slice_mut(dest))
    }

    pub(crate) fn put_nbi<T: Pod>(&self, dest: SymSlice<'_, T>, src: &[T], pe: u32) -> Result<()> {
        self.put(dest, src, pe)
    }

    pub(crate) fn get_nbi<T: Pod>(
        &self,
        dest: &mut [T],
        src: SymSlice<'_, T>,
        pe: u32,
    ) -> Result<()> {
        self.get(dest, src, pe)
    }

    pub(crate) fn p<T: Pod>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
        self.put(dest, std::slice::from_ref(&value), pe)
    }

    pub(crate) fn g<T: Pod>(&self, src: SymSlice<'_, T>, pe: u32) -> Result<T> {
        let mut v = [T::zeroed()];
        self.get(&mut v, src, pe)?;
        Ok(v[0])
    }

    pub(crate) fn iput<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        src: &[T],
        dst: usize,
        sst: usize,
        nelems: usize,
        pe: u32,
    ) -> Result<()> {
        let (dn, sn) = strided_spans("iput", dst, sst, nelems)?;
        if sn > src.len() as u64 {
            return Err(Error::InvalidArgument(format!(
                "iput: {nelems} elements {sst} apart need {sn} source elements, the slice holds {}",
                src.len()
            )));
        }
        self.check_rma("iput", &dest, dn, pe)?;
        let es = std::mem::size_of::<T>() as u64;
        if dst == 1 {
            let packed: Vec<T> = (0..nelems).map(|i| src[i * sst]).collect();
            return self.put(dest, &packed, pe);
        }
        for i in 0..nelems {
            let at = dest.offset() + (i * dst) as u64 * es;
            self.write_bytes(pe, at, bytemuck::bytes_of(&src[i * sst]))?;
        }
        Ok(())
    }

    pub(crate) fn iget<T: Pod>(
        &self,
        dest: &mut [T],
        src: SymSlice<'_, T>,
        dst: usize,
        sst: usize,
        nelems: usize,
        pe: u32,
    ) -> Result<()> {
        let (dn, sn) = strided_spans("iget", dst, sst, nelems)?;
        if dn > dest.len() as u64 {
            return Err(Error::InvalidArgument(format!(
                "iget: {nelems} elements {dst} apart need {dn} destination elements, the slice holds {}",
                dest.len()
            )));
        }
        self.check_rma("iget", &src, sn, pe)?;
        if nelems == 0 {
            return Ok(());
        }
        // One read of the whole span, then the elements picked out of it.
        let mut span = vec![T::zeroed(); sn as usize];
        self.read_bytes(pe, src.offset(), bytemuck::cast_slice_mut(&mut span))?;
        for i in 0..nelems {
            dest[i * dst] = span[i * sst];
        }
        Ok(())
    }

    pub(crate) fn put_signal<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        src: &[T],
        sig: SymSlice<'_, u64>,
        signal: u64,
        op: SignalOp,
        pe: u32,
    ) -> Result<()> {
        self.check_rma("put_signal (signal)", &sig, 1, pe)?;
        // The signal's atomic must be possible before any data moves.
        if let Reach::Copies = self.reach(pe, sig.offset(), 8)? {
            if !self.kernel_amo_supported(8) {
                return Err(Error::Unsupported {
                    device: self.device_info().name.clone(),
                    what: format!(
                        "put_signal: 64-bit host atomics on a heap that is not host-mapped (PE {pe}) need shaderBufferInt64Atomics"
                    ),
                });
            }
        }
        self.put(dest, src, pe)?;
        // The data is in place (put returns after it landed, and the release
        // fence orders the mapping's stores before the signal's).
        fence(Ordering::Release);
        match op {
            SignalOp::Set => self.atomic_set(sig, signal, pe),
            SignalOp::Add => self.atomic_add(sig, signal, pe),
        }
    }

    pub(crate) fn put_signal_nbi<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        src: &[T],
        sig: SymSlice<'_, u64>,
        signal: u64,
        op: SignalOp,
        pe: u32,
    ) -> Result<()> {
        self.put_signal(dest, src, sig, signal, op, pe)
    }

    pub(crate) fn signal_fetch(&self, sig: SymSlice<'_, u64>) -> Result<u64> {
        self.check_rma("signal_fetch", &sig, 1, self.my_pe())?;
        let mut v = Vec::new();
        self.load_own(&sig.prefix(1), &mut v)?;
        Ok(v[0])
    }

    pub(crate) fn fence(&self) {
        fence(Ordering::SeqCst);
    }
}

/// The elements a strided access spans: (destination, source).
fn strided_spans(what: &str, dst: usize, sst: usize, nelems: usize) -> Result<(u64, u64)> {
    if nelems == 0 {
        return Ok((0, 0));
    }
    if dst == 0 || sst == 0 {
        return Err(Error::InvalidArgument(format!(
            "{what}: strides must be at least 1 (dst {dst}, sst {sst})"
        )));
    }
    let span = |s: usize| {
        ((nelems - 1) as u64)
            .checked_mul(s as u64)
            .and_then(|v| v.checked_add(1))
            .ok_or_else(|| Error::InvalidArgument(format!("{what}: the strided span overflows")))
    };
    Ok((span(dst)?, span(sst)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_spans_cover_the_last_element() {
        assert_eq!(strided_spans("t", 3, 2, 4).unwrap(), (10, 7));
        assert_eq!(strided_spans("t", 1, 1, 5).unwrap(), (5, 5));
        assert_eq!(strided_spans("t", 0, 1, 0).unwrap(), (0, 0));
        assert!(strided_spans("t", 0, 1, 2).is_err());
        assert!(strided_spans("t", usize::MAX, 1, 3).is_err());
    }
}
