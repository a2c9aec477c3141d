//! The façade of barriers, syncs and quiet on the whole job (`crate::runtime::sync`).

use crate::error::Result;

use super::Context;

impl Context {
    /// Completes this PE's outstanding memory updates (`shmem_quiet`). Host-initiated
    /// operations of this version wait for their device work before returning, so
    /// this is a full memory fence for the host's own stores through the mapping.
    /// It cannot fail (the `Result` leaves room for outstanding operations).
    pub fn quiet(&self) -> Result<()> {
        self.rt.quiet()
    }

    /// Waits until every PE has called it, after completing this PE's outstanding
    /// memory updates (`shmem_barrier_all`): stores made before it, by the host or by
    /// finished dispatches, are visible to every PE after it.
    ///
    /// # Errors
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when another PE dies or leaves first,
    /// [`Error::Broken`](crate::Error::Broken) after a failed launch (see [`Context::launch`](crate::Context::launch)),
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) on a clone of a context that has finalized,
    /// [`Error::Bootstrap`](crate::Error::Bootstrap) when the job's endpoint cannot be reached.
    pub fn barrier_all(&self) -> Result<()> {
        self.rt.barrier_all()
    }

    /// Waits until every PE has called it (`shmem_sync_all`). Unlike
    /// [`Context::barrier_all`](crate::Context::barrier_all) it does not promise completion of outstanding
    /// remote updates; host stores through the mapping are still ordered.
    ///
    /// # Errors
    /// As [`Context::barrier_all`](crate::Context::barrier_all).
    pub fn sync_all(&self) -> Result<()> {
        self.rt.sync_all()
    }
}
