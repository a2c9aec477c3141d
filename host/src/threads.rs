//! A whole job of PEs as threads of one process ([`run_threads`]).
//!
//! The job is what `vkshmrun` makes, in-process: the bootstrap endpoint and
//! its node segment (the sync plane), then one thread per PE, each joining
//! with its own place in the job and its own [`Context`]. Everything a PE
//! owns hangs off its context, so PEs as threads and PEs as processes behave
//! alike: the same teams, collectives, RMA, queue-ordered calls, wait
//! timeout and failure reports.
//!
//! # Devices
//! Each thread-PE opens its own Vulkan device (instance, device, queue) as a
//! process would, chosen by `VKSHMEM_DEVICE` and its PE number, and shares
//! its heap with the others by fd, as processes do. On lavapipe (one queue
//! per device) that is the only way. Devices open one at a time, so each
//! PE's wait throttle knows its own driver threads.
//!
//! Where a device offers a queue per PE, the PEs of a process could share
//! one `VkDevice` and bind each other's heaps without the fd round trip;
//! [`Context`] keeps the device behind an `Arc` for that step, and a job of
//! several processes with several PEs each needs only an endpoint that
//! admits each process's PEs ([`Server::start_for_node`]).
//!
//! # Failure
//! A PE that panics, returns an error or cannot join fails the job at once:
//! the endpoint tells every other PE, whose calls return
//! [`Error::PeerFailed`] naming it, and [`run_threads`] returns that error.
//! A PE fails before its context drops, so peers never wait on it.
//!
//! A symmetric buffer that drops is freed collectively. A PE closure that
//! returns early with an error drops its buffers on the way out, and those
//! frees wait for peers that are in another call. So fail fast by
//! panicking (a panic skips the frees), or return the error only after the
//! calls your peers will make; a `VKSHMEM_WAIT_TIMEOUT` bounds either.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread;

use crate::bootstrap::Server;
use crate::config::{self, JobEnv};
use crate::context::Context;
use crate::error::{Error, Result};

/// An error a PE's closure returns: any error converts with `?` (vkshmem's,
/// `std::io`'s, anyhow's, a `String`), so a closure needs no annotation.
pub type PeError = Box<dyn std::error::Error + Send + Sync>;

/// Runs a job of `npes` PEs as threads of this process: each thread joins
/// the job with its own [`Context`], runs `body` on it, and finalizes it
/// (a barrier) when `body` returns `Ok`. Returns each PE's value, by PE.
///
/// ```no_run
/// # fn main() -> vkshmem_host::Result<()> {
/// use vkshmem_host::{ReduceOp, Team};
/// let sums = vkshmem_host::run_threads(4, |ctx| {
///     let buf = ctx.malloc::<u32>(1)?;
///     buf.write(&[ctx.my_pe() + 1])?;
///     let s = buf.as_slice();
///     ctx.reduce(Team::WORLD, ReduceOp::Sum, &s, &s, 1)?;
///     Ok(buf.to_vec()?[0])
/// })?;
/// assert_eq!(sums, [10; 4]);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for `npes` of 0 or above the endpoint's
/// limit; [`Error::PeerFailed`] naming the first PE that failed (panicked,
/// returned an error, or could not join: `how` says which, with its
/// message).
pub fn run_threads<T, F>(npes: u32, body: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&Context) -> std::result::Result<T, PeError> + Sync,
{
    run_threads_joining(npes, |m| Ok(m.join()?), body)
}

/// A thread-PE's place in its job, for [`run_threads_joining`]'s `join`: it
/// joins on vkshmem's own device ([`Member::join`]) or the program's
/// ([`Member::join_on_device`]).
#[derive(Debug)]
pub struct Member {
    job: JobEnv,
}

impl Member {
    /// This PE's number.
    pub fn pe(&self) -> u32 {
        self.job.pe
    }

    /// Joins on a device of vkshmem's own, as [`run_threads`]' PEs do.
    ///
    /// # Errors
    /// As [`Context::init`].
    pub fn join(&self) -> Result<Context> {
        Context::init_as(&self.job)
    }

    /// Runs `open`, the program's opening of this PE's instance and device,
    /// while no other device of the process opens, and returns its value
    /// with the threads its driver started: what
    /// [`crate::UserDevice::driver_threads`] takes.
    pub fn open_device<R>(&self, open: impl FnOnce() -> R) -> (R, Vec<i32>) {
        crate::driver::opening(open)
    }

    /// Joins on a device the program opened for this thread, as
    /// [`Context::init_on_device`] does for a process. On lavapipe, give
    /// the threads its driver started ([`Member::open_device`]): the other
    /// thread-PEs are not its.
    ///
    /// # Safety
    /// As [`Context::init_on_device`].
    ///
    /// # Errors
    /// As [`Context::init_on_device`].
    pub unsafe fn join_on_device(&self, dev: crate::vk::UserDevice) -> Result<Context> {
        // SAFETY: the caller's guarantee.
        unsafe { Context::init_on_device_as(dev, &self.job) }
    }
}

/// What a thread-PE holds: its context, or a value built around one (a
/// wgpu device and its context, say), left collectively at the end.
pub trait ThreadPe {
    /// Leaves the job (collective), as [`Context::finalize`].
    ///
    /// # Errors
    /// As [`Context::finalize`].
    fn finalize(self) -> std::result::Result<(), PeError>;
}

impl ThreadPe for Context {
    fn finalize(self) -> std::result::Result<(), PeError> {
        Ok(Context::finalize(self)?)
    }
}

/// [`run_threads`] where each thread joins with `join` (given its
/// [`Member`]), which makes the PE's value `S` that `body` runs on: for PEs
/// on devices the program opens itself. Failures go as in [`run_threads`]:
/// a `join`, `body` or finalize that fails fails the job before `S` drops.
///
/// # Errors
/// As [`run_threads`].
pub fn run_threads_joining<S, T, J, F>(npes: u32, join: J, body: F) -> Result<Vec<T>>
where
    S: ThreadPe,
    T: Send,
    J: Fn(&Member) -> std::result::Result<S, PeError> + Sync,
    F: Fn(&S) -> std::result::Result<T, PeError> + Sync,
{
    let timeout = config::wait_timeout(config::env)?;
    let server = Arc::new(Server::start_with_timeout(npes, timeout)?);
    let (join, body) = (&join, &body);
    let results: Vec<Option<T>> = thread::scope(|s| {
        let handles: Vec<_> = (0..npes)
            .map(|pe| {
                let server = server.clone();
                // Named apart from vkshmem's own threads (the wait
                // throttle's `OWN_THREADS`): the driver's threads that this
                // thread starts inherit its name.
                thread::Builder::new()
                    .name(format!("{}{pe}", crate::driver::throttle::THREAD_PE_PREFIX))
                    .spawn_scoped(s, move || run_pe(&server, pe, npes, join, body))
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(pe, h)| {
                let how = match h.map(|h| h.join()) {
                    Ok(Ok(v)) => return v,
                    Ok(Err(panic)) => format!("panicked: {}", panic_message(&*panic)),
                    Err(e) => format!("could not start its thread: {e}"),
                };
                server.fail(pe as u32, &how);
                None
            })
            .collect()
    });
    if let Some(path) = config::trace(config::env) {
        // Every PE's context has gone, its part written: one trace.
        if let Err(e) = crate::trace::merge(&path, npes) {
            tracing::error!("merging the trace into {}: {e}", path.display());
        }
    }
    if let Some((pe, how)) = server.first_failure() {
        return Err(Error::PeerFailed { pe, how });
    }
    results
        .into_iter()
        .enumerate()
        .map(|(pe, r)| {
            r.ok_or_else(|| Error::PeerFailed {
                pe: pe as u32,
                how: "ended without a result".into(),
            })
        })
        .collect()
}

/// One PE's thread: join, run, finalize; `None` after failing the job
/// (through `server`, before the PE's value drops) or hearing it failed.
fn run_pe<S, T, J, F>(server: &Server, pe: u32, npes: u32, join: &J, body: &F) -> Option<T>
where
    S: ThreadPe,
    J: Fn(&Member) -> std::result::Result<S, PeError>,
    F: Fn(&S) -> std::result::Result<T, PeError>,
{
    let member = Member {
        job: JobEnv {
            pe,
            npes,
            bootstrap: Some((server.endpoint().to_string(), server.secret().to_vec())),
        },
    };
    let state = match catch_unwind(AssertUnwindSafe(|| join(&member))) {
        Ok(Ok(state)) => state,
        Ok(Err(e)) => {
            server.fail(pe, &format!("could not join the job: {e}"));
            return None;
        }
        Err(panic) => {
            server.fail(pe, &format!("panicked joining: {}", panic_message(&*panic)));
            return None;
        }
    };
    // A PE that heard of another's failure fails too; the endpoint keeps
    // the first failure only, so the blame stays with that one.
    let how = match catch_unwind(AssertUnwindSafe(|| body(&state))) {
        Ok(Ok(v)) => match state.finalize() {
            Ok(()) => return Some(v),
            Err(e) => format!("could not finalize: {e}"),
        },
        Ok(Err(e)) => format!("returned an error: {e}"),
        Err(panic) => format!("panicked: {}", panic_message(&*panic)),
    };
    server.fail(pe, &how);
    None
}

/// A panic's message, where it is a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}
