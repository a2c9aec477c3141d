//! The job-wide meetings of a context: quiet, barriers, the bootstrap connection.

use super::{lock, Runtime};
use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use crate::team::Team;
use std::sync::atomic::{fence, Ordering};

impl Runtime {
    /// Runs a bootstrap collective, or nothing in a job of one PE without a launcher.
    pub(crate) fn with_boot<T>(
        &self,
        solo: T,
        f: impl FnOnce(&mut Bootstrap) -> Result<T>,
    ) -> Result<T> {
        if let Some(why) = lock(&self.broken).clone() {
            return Err(Error::Broken(why));
        }
        let mut boot = lock(&self.boot);
        match boot.as_mut() {
            Some(b) => f(b),
            None if self.npes == 1 => Ok(solo),
            None => Err(Error::InvalidArgument("this PE has finalized".into())),
        }
    }

    pub(crate) fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(p) = self.proxy.get() {
            // Device code's posted stores to PEs on other devices.
            p.quiet()?;
        }
        Ok(())
    }

    pub(crate) fn barrier_all(&self) -> Result<()> {
        self.quiet()?;
        let m = self.members(Team::WORLD)?;
        self.sync_call(&m, "barrier_all")
            .map_err(|e| e.during("barrier_all"))?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    pub(crate) fn sync_all(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        let m = self.members(Team::WORLD)?;
        self.sync_call(&m, "sync_all")
            .map_err(|e| e.during("sync_all"))?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// The proxy, when PE `pe` is on another device and this PE runs one
    /// (host access to `pe`'s heap then goes through it).
    pub(crate) fn proxied(&self, pe: u32) -> Option<&crate::transport::proxy::Proxy> {
        if matches!(
            self.heap.transport(pe),
            Some(crate::transport::Transport::Staged | crate::transport::Transport::Remote)
        ) {
            self.proxy.get()
        } else {
            None
        }
    }
}
