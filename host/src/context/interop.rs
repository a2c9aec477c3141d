//! The façade of what a language binding needs beyond the Rust API (`crate::interop`).

use crate::error::Result;
use crate::team::TeamShape;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use super::Context;

impl Context {
    /// Where PE `pe`'s symmetric heap starts in this process's address
    /// space, when this PE maps it (its own heap on a host-visible memory
    /// type, and the heaps of the PEs on the same device it imported), else
    /// `None`. Byte `offset` of a symmetric object is at `base + offset`.
    /// Stores through it are ordered with the library's calls as the
    /// mapping's are (see [`Context::quiet`](crate::Context::quiet)).
    pub fn heap_base(&self, pe: u32) -> Option<NonNull<u8>> {
        self.rt.heap_base(pe)
    }

    /// The largest power of two dividing every heap address this process
    /// maps ([`Context::heap_base`](crate::Context::heap_base) of every PE), up to 1 GiB: an allocation
    /// of [`Context::align`](crate::Context::align) with an alignment up to this is at an address
    /// so aligned in every mapping of it here. `None` when no heap is
    /// mapped. Each heap is mapped at its size rounded up to a power of two
    /// (2 MiB to 1 GiB) where the memory allows (memory a driver backs with
    /// the file it exports, as lavapipe's); elsewhere at what the driver's
    /// mapping gives (at least `minMemoryMapAlignment`). Local: PEs may
    /// differ.
    pub fn heap_mapping_align(&self) -> Option<u64> {
        self.rt.heap_mapping_align()
    }

    /// Every PE's `data`, in PE order (a collective over WORLD: every PE
    /// calls it). Up to the bootstrap's blob limit (64 KiB).
    ///
    /// # Errors
    /// As [`Context::barrier_all`](crate::Context::barrier_all); [`Error::InvalidArgument`](crate::Error::InvalidArgument) for `data`
    /// over the limit.
    pub fn allgather_bytes(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.rt.allgather_bytes(data)
    }

    /// Offers `fd` (or nothing) to the PEs of this node and receives each
    /// PE's offer in PE order (this PE's own as a duplicate; PEs of other
    /// nodes offer nothing). A collective over WORLD.
    ///
    /// # Errors
    /// As [`Context::barrier_all`](crate::Context::barrier_all).
    pub fn exchange_fds(&self, fd: Option<BorrowedFd<'_>>) -> Result<Vec<Option<OwnedFd>>> {
        self.rt.exchange_fds(fd)
    }

    /// [`Context::finalize`](crate::Context::finalize) for a binding whose context lives until the
    /// process exits (a C program's, in a static): after the goodbye it
    /// also stops the proxy thread and, under mpirun, finalizes MPI, which
    /// would otherwise happen when the last clone is dropped. Every later
    /// call on any clone fails.
    ///
    /// # Errors
    /// As [`Context::finalize`](crate::Context::finalize).
    pub fn finalize_in_place(&self) -> Result<()> {
        self.rt.finalize_in_place()
    }

    /// Ends the whole job with `status` (`shmem_global_exit`): the endpoint
    /// hears it and stops every other PE, and the launcher exits with
    /// `status` (under mpirun, `MPI_Abort` with it). `flush` runs first
    /// (a binding's output buffers); this process then exits with
    /// `status` without running exit handlers.
    pub fn global_exit(&self, status: i32, flush: impl FnOnce()) -> ! {
        self.rt.global_exit(status, flush)
    }

    /// Every member's `data`, in member order: a collective over the PEs of
    /// `shape` (every member calls it), through the bootstrap (the sockets,
    /// or MPI across nodes). Up to the bootstrap's blob limit
    /// (`bootstrap::wire::MAX_BLOB` bytes) per call.
    ///
    /// # Errors
    /// As [`Context::barrier_all`](crate::Context::barrier_all).
    pub fn gather_members(&self, shape: TeamShape, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.rt.gather_members(shape, data)
    }

    /// Calls `ready` until it returns `true`: first yielding, then napping
    /// up to [`crate::rma::wait::MAX_NAP`], as the point-to-point waits do.
    /// Ends with [`Error::PeerFailed`](crate::Error::PeerFailed) when the job aborts, and with
    /// [`Error::Timeout`](crate::Error::Timeout) (naming `what`) past the wait timeout.
    ///
    /// # Errors
    /// As above, and whatever `ready` returns.
    pub fn poll_until(&self, what: &str, ready: impl FnMut() -> Result<bool>) -> Result<()> {
        self.rt.poll_until(what, ready)
    }

    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when the job has aborted (a PE died, or one
    /// timed out), else `Ok`.
    ///
    /// # Errors
    /// As above.
    pub fn check_abort(&self, what: &str) -> Result<()> {
        self.rt.check_abort(what)
    }
}
