//! What a language binding over this crate needs beyond the Rust API (the C
//! ABI in `capi/` uses it): the host address of a PE's mapped heap, a
//! world-wide byte allgather and file-descriptor exchange, and the abortable,
//! timed poll loop of the point-to-point waits for memory the library does
//! not own.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::sync::layout::ABORT_PE_MASK;
use crate::team::TeamShape;

/// The longest nap between two looks at the words a poll waits on (the
/// point-to-point waits of `crate::rma::wait` and `Runtime::poll_until`).
pub const MAX_NAP: Duration = Duration::from_micros(200);

impl Runtime {
    pub(crate) fn heap_base(&self, pe: u32) -> Option<NonNull<u8>> {
        if self.proxied(pe).is_some() {
            return None;
        }
        self.heap.block(pe).ok().and_then(|b| b.mapped())
    }

    pub(crate) fn heap_mapping_align(&self) -> Option<u64> {
        (0..self.n_pes())
            .filter_map(|pe| self.heap_base(pe))
            .map(|p| (p.as_ptr() as usize).trailing_zeros().min(30))
            .min()
            .map(|z| 1u64 << z)
    }

    pub(crate) fn allgather_bytes(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.with_boot(vec![data.to_vec()], |b| b.allgather(data))
    }

    pub(crate) fn exchange_fds(&self, fd: Option<BorrowedFd<'_>>) -> Result<Vec<Option<OwnedFd>>> {
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

    pub(crate) fn finalize_in_place(&self) -> Result<()> {
        self.finalize()?;
        if let Some(p) = self.proxy.get() {
            p.stop();
        }
        #[cfg(feature = "mpi")]
        {
            let job = self.mpi.lock().unwrap_or_else(|e| e.into_inner()).take();
            drop(job);
        }
        Ok(())
    }

    pub(crate) fn global_exit(&self, status: i32, flush: impl FnOnce()) -> ! {
        flush();
        #[cfg(feature = "mpi")]
        if let Some(m) = self.mpi.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            m.abort_with(
                status,
                &format!("PE {} called shmem_global_exit({status})", self.my_pe()),
            );
        }
        if let Ok(mut boot) = self.boot.try_lock() {
            if let Some(b) = boot.as_mut() {
                let _ = b.global_exit(status);
            }
        }
        // SAFETY: _exit ends the process at once; nothing of this process
        // runs after it (the endpoint already has the message: one stream,
        // in order).
        unsafe { nix::libc::_exit(status) }
    }

    pub(crate) fn gather_members(&self, shape: TeamShape, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.gather_shape(shape, data)
    }

    /// Polls `ready` until it says so, the job aborts or the wait timeout
    /// passes; in the flight recorder as a `wait_until` (a satisfied first
    /// look records nothing: most waits end there).
    pub(crate) fn poll_until(
        &self,
        what: &str,
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        if ready()? {
            return Ok(());
        }
        let c = crate::sync::recorder::CallInfo::named("wait_until");
        self.recorded(&c, || self.poll_more(what, ready))
    }

    fn poll_more(&self, what: &str, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
        let started = Instant::now();
        let mut nap = Duration::ZERO;
        let mut spins = 0u32;
        loop {
            if ready()? {
                return Ok(());
            }
            self.check_abort(what)?;
            if let Some(t) = self.wait_timeout.filter(|t| started.elapsed() > *t) {
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
                nap = (nap * 2).min(MAX_NAP);
            }
        }
    }

    pub(crate) fn check_abort(&self, what: &str) -> Result<()> {
        if let Some(plane) = &self.plane {
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
