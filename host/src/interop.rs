//! What a language binding over this crate needs beyond the Rust API (the C
//! ABI in `capi/` uses it): the host address of a PE's mapped heap, a
//! world-wide byte allgather and file-descriptor exchange, and the abortable,
//! timed poll loop of the point-to-point waits for memory the library does
//! not own.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::sync::layout::ABORT_PE_MASK;
use crate::team::TeamShape;
use crate::Context;

impl Context {
    /// Where PE `pe`'s symmetric heap starts in this process's address
    /// space, when this PE maps it (its own heap on a host-visible memory
    /// type, and the heaps of the PEs on the same device it imported), else
    /// `None`. Byte `offset` of a symmetric object is at `base + offset`.
    /// Stores through it are ordered with the library's calls as the
    /// mapping's are (see [`Context::quiet`]).
    pub fn heap_base(&self, pe: u32) -> Option<NonNull<u8>> {
        if self.proxied(pe).is_some() {
            return None;
        }
        self.inner.heap.block(pe).ok().and_then(|b| b.mapped())
    }

    /// The largest power of two dividing every heap address this process
    /// maps ([`Context::heap_base`] of every PE), up to 1 GiB: an allocation
    /// of [`Context::align`] with an alignment up to this is at an address
    /// so aligned in every mapping of it here. `None` when no heap is
    /// mapped. Each heap is mapped at its size rounded up to a power of two
    /// (2 MiB to 1 GiB) where the memory allows (memory a driver backs with
    /// the file it exports, as lavapipe's); elsewhere at what the driver's
    /// mapping gives (at least `minMemoryMapAlignment`). Local: PEs may
    /// differ.
    pub fn heap_mapping_align(&self) -> Option<u64> {
        (0..self.n_pes())
            .filter_map(|pe| self.heap_base(pe))
            .map(|p| (p.as_ptr() as usize).trailing_zeros().min(30))
            .min()
            .map(|z| 1u64 << z)
    }

    /// Every PE's `data`, in PE order (a collective over WORLD: every PE
    /// calls it). Up to the bootstrap's blob limit (64 KiB).
    ///
    /// # Errors
    /// As [`Context::barrier_all`]; [`Error::InvalidArgument`] for `data`
    /// over the limit.
    pub fn allgather_bytes(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.with_boot(vec![data.to_vec()], |b| b.allgather(data))
    }

    /// Offers `fd` (or nothing) to the PEs of this node and receives each
    /// PE's offer in PE order (this PE's own as a duplicate; PEs of other
    /// nodes offer nothing). A collective over WORLD.
    ///
    /// # Errors
    /// As [`Context::barrier_all`].
    pub fn exchange_fds(&self, fd: Option<BorrowedFd<'_>>) -> Result<Vec<Option<OwnedFd>>> {
        let solo = || -> Result<Vec<Option<OwnedFd>>> {
            let own = fd.map(|f| f.try_clone_to_owned()).transpose();
            Ok(vec![own.map_err(|source| Error::Io {
                what: "exchange_fds: duplicating this PE's descriptor".into(),
                source,
            })?])
        };
        if self.n_pes() == 1 {
            return solo();
        }
        self.with_boot(Vec::new(), |b| b.exchange_fds(fd))
    }

    /// [`Context::finalize`] for a binding whose context lives until the
    /// process exits (a C program's, in a static): after the goodbye it
    /// also stops the proxy thread and, under mpirun, finalizes MPI, which
    /// would otherwise happen when the last clone is dropped. Every later
    /// call on any clone fails.
    ///
    /// # Errors
    /// As [`Context::finalize`].
    pub fn finalize_in_place(&self) -> Result<()> {
        self.clone().finalize()?;
        if let Some(p) = self.inner.proxy.get() {
            p.stop();
        }
        #[cfg(feature = "mpi")]
        {
            let job = self
                .inner
                .mpi
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            drop(job);
        }
        Ok(())
    }

    /// Ends the whole job with `status` (`shmem_global_exit`): the endpoint
    /// hears it and stops every other PE, and the launcher exits with
    /// `status` (under mpirun, `MPI_Abort` with it). `flush` runs first
    /// (a binding's output buffers); this process then exits with
    /// `status` without running exit handlers.
    pub fn global_exit(&self, status: i32, flush: impl FnOnce()) -> ! {
        flush();
        #[cfg(feature = "mpi")]
        if let Some(m) = self
            .inner
            .mpi
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            m.abort_with(
                status,
                &format!("PE {} called shmem_global_exit({status})", self.my_pe()),
            );
        }
        if let Ok(mut boot) = self.inner.boot.try_lock() {
            if let Some(b) = boot.as_mut() {
                let _ = b.global_exit(status);
            }
        }
        // SAFETY: _exit ends the process at once; nothing of this process
        // runs after it (the endpoint already has the message: one stream,
        // in order).
        unsafe { nix::libc::_exit(status) }
    }

    /// Every member's `data`, in member order: a collective over the PEs of
    /// `shape` (every member calls it), through the bootstrap (the sockets,
    /// or MPI across nodes). Up to the bootstrap's blob limit
    /// (`bootstrap::wire::MAX_BLOB` bytes) per call.
    ///
    /// # Errors
    /// As [`Context::barrier_all`].
    pub fn gather_members(&self, shape: TeamShape, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.gather_shape(shape, data)
    }

    /// Calls `ready` until it returns `true`: first yielding, then napping
    /// up to [`crate::rma::wait::MAX_NAP`], as the point-to-point waits do.
    /// Ends with [`Error::PeerFailed`] when the job aborts, and with
    /// [`Error::Timeout`] (naming `what`) past the wait timeout.
    ///
    /// # Errors
    /// As above, and whatever `ready` returns.
    pub fn poll_until(&self, what: &str, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
        let started = Instant::now();
        let mut nap = Duration::ZERO;
        let mut spins = 0u32;
        loop {
            if ready()? {
                return Ok(());
            }
            self.check_abort(what)?;
            if let Some(t) = self.inner.wait_timeout.filter(|t| started.elapsed() > *t) {
                return Err(Error::Timeout {
                    what: what.into(),
                    pe: self.my_pe(),
                    seconds: t.as_secs_f64(),
                    missing: String::new(),
                });
            }
            if spins < 64 {
                spins += 1;
                std::hint::spin_loop();
            } else if nap.is_zero() {
                std::thread::yield_now();
                nap = Duration::from_micros(1);
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(crate::rma::wait::MAX_NAP);
            }
        }
    }

    /// [`Error::PeerFailed`] when the job has aborted (a PE died, or one
    /// timed out), else `Ok`.
    ///
    /// # Errors
    /// As above.
    pub fn check_abort(&self, what: &str) -> Result<()> {
        if let Some(plane) = &self.inner.plane {
            let word = plane.abort_word();
            if word != 0 {
                return Err(Error::PeerFailed {
                    pe: word & ABORT_PE_MASK,
                    how: format!("the job aborted while this PE waited in {what}"),
                });
            }
        }
        Ok(())
    }
}
