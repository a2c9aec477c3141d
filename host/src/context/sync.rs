//! The job-wide meetings of a context: quiet, barriers, the bootstrap connection.

use super::{lock, Context};
use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use crate::team::Team;
use std::sync::atomic::{fence, Ordering};

impl Context {
    /// Runs a bootstrap collective, or nothing in a job of one PE without a launcher.
    pub(crate) fn with_boot<T>(
        &self,
        solo: T,
        f: impl FnOnce(&mut Bootstrap) -> Result<T>,
    ) -> Result<T> {
        if let Some(why) = lock(&self.inner.broken).clone() {
            return Err(Error::Broken(why));
        }
        let mut boot = lock(&self.inner.boot);
        match boot.as_mut() {
            Some(b) => f(b),
            None if self.inner.npes == 1 => Ok(solo),
            None => Err(Error::InvalidArgument("this PE has finalized".into())),
        }
    }

    /// Completes this PE's outstanding memory updates (`shmem_quiet`). Host-initiated
    /// operations of this version wait for their device work before returning, so
    /// this is a full memory fence for the host's own stores through the mapping.
    /// It cannot fail (the `Result` leaves room for outstanding operations).
    pub fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(p) = self.inner.proxy.get() {
            // Device code's posted stores to PEs on other devices.
            p.quiet()?;
        }
        Ok(())
    }

    /// Waits until every PE has called it, after completing this PE's outstanding
    /// memory updates (`shmem_barrier_all`): stores made before it, by the host or by
    /// finished dispatches, are visible to every PE after it.
    ///
    /// # Errors
    /// [`Error::PeerFailed`] when another PE dies or leaves first,
    /// [`Error::Broken`] after a failed launch (see [`Context::launch`]),
    /// [`Error::InvalidArgument`] on a clone of a context that has finalized,
    /// [`Error::Bootstrap`] when the job's endpoint cannot be reached.
    pub fn barrier_all(&self) -> Result<()> {
        self.quiet()?;
        let m = self.members(Team::WORLD)?;
        self.sync_members(&m, "barrier_all")
            .map_err(|e| e.during("barrier_all"))?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// Waits until every PE has called it (`shmem_sync_all`). Unlike
    /// [`Context::barrier_all`] it does not promise completion of outstanding
    /// remote updates; host stores through the mapping are still ordered.
    ///
    /// # Errors
    /// As [`Context::barrier_all`].
    pub fn sync_all(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        let m = self.members(Team::WORLD)?;
        self.sync_members(&m, "sync_all")
            .map_err(|e| e.during("sync_all"))?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// The proxy, when PE `pe` is on another device and this PE runs one
    /// (host access to `pe`'s heap then goes through it).
    pub(crate) fn proxied(&self, pe: u32) -> Option<&crate::transport::proxy::Proxy> {
        if matches!(
            self.inner.heap.transport(pe),
            Some(crate::transport::Transport::Staged | crate::transport::Transport::Remote)
        ) {
            self.inner.proxy.get()
        } else {
            None
        }
    }
}
