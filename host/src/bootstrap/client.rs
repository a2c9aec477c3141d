//! A PE's side of the bootstrap: connect, then allgather, barrier and fd exchange.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};

use super::transport::{peer_uid, recv, send};
use super::wire::{Msg, MAX_BLOB, SECRET_LEN};
use crate::error::{Error, Result};

/// The job's own collectives where they do not go through the endpoint: in a
/// job of several nodes (`mpirun`, cargo feature `mpi`) the endpoint serves
/// one node, and allgathers and barriers over PEs of several nodes go over
/// MPI (`super::mpi`). Every call is collective over the PEs it names.
pub trait JobWide: Send + std::fmt::Debug {
    /// Every PE's `data` (any length), in PE order.
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Returns once every PE of the job has called it.
    fn barrier(&mut self) -> Result<()>;
    /// Every member's `data` (any length), in the order of `members` (job
    /// PEs, this PE among them; the same list on every member).
    fn group_allgather(&mut self, members: &[u32], data: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// `buf = buf_0 op buf_1 op …` over `members` (as above), element by
    /// element, in place: `kind` names the element type (`u8` … `i64`,
    /// `f32`, `f64`), every member passes the same.
    fn group_allreduce(
        &mut self,
        members: &[u32],
        buf: &mut [u8],
        kind: &str,
        op: vkshmem_device::collectives::ReduceOp,
    ) -> Result<()>;
}

/// A PE's connection to its job's bootstrap endpoint.
///
/// Every call is collective: all PEs of the job must make the same calls in the same
/// order. Dropping the connection says goodbye (a clean end), except while the thread
/// is panicking: then the endpoint sees the connection drop and aborts the job, so no
/// peer waits forever for this PE.
#[derive(Debug)]
pub struct Bootstrap {
    stream: UnixStream,
    pe: u32,
    npes: u32,
    seq: u64,
    /// Sequence numbers of team collectives, per member set.
    team_seq: std::collections::HashMap<(u32, i32, u32), u64>,
    closed: bool,
    /// The job's first failure, once this PE has heard of it: later calls fail
    /// with it at once.
    failed: Option<(u32, String)>,
    /// The node segment the endpoint handed over at admission, until taken.
    segment: Option<OwnedFd>,
    /// Where the job's collectives go when the endpoint serves one node of
    /// several ([`JobWide`]); `None`: through the endpoint.
    job: Option<Box<dyn JobWide>>,
}

impl Bootstrap {
    /// Connects to `endpoint` (`@name` for an abstract socket, else a path) and joins
    /// the job as PE `pe` of `npes` with the job's `secret`.
    pub fn connect(endpoint: &str, secret: &[u8], pe: u32, npes: u32) -> Result<Bootstrap> {
        let secret: [u8; SECRET_LEN] = secret.try_into().map_err(|_| {
            Error::Bootstrap(format!(
                "the job secret must be {SECRET_LEN} bytes, not {}",
                secret.len()
            ))
        })?;
        let stream = match endpoint.strip_prefix('@') {
            Some(name) => SocketAddr::from_abstract_name(name.as_bytes())
                .and_then(|a| UnixStream::connect_addr(&a)),
            None => UnixStream::connect(endpoint),
        }
        .map_err(|e| Error::io(format!("connecting to bootstrap endpoint {endpoint}"), e))?;
        let uid = peer_uid(&stream)?;
        let me = nix::unistd::getuid().as_raw();
        if uid != me {
            return Err(Error::Refused(format!(
                "the endpoint {endpoint} belongs to uid {uid}, not to us ({me})"
            )));
        }
        send(&stream, &Msg::Hello { secret, pe, npes }, &[])?;
        let segment = match recv(&stream)? {
            Some((Msg::Welcome, mut fds)) => fds.pop(),
            Some((Msg::Refused { reason }, _)) => return Err(Error::Refused(reason)),
            Some((Msg::Abort { pe, reason }, _)) => {
                return Err(Error::PeerFailed { pe, how: reason })
            }
            Some((other, _)) => {
                return Err(Error::Bootstrap(format!(
                    "expected welcome, got {}",
                    other.kind()
                )))
            }
            None => return Err(Error::Bootstrap("endpoint closed the connection".into())),
        };
        Ok(Bootstrap {
            stream,
            pe,
            npes,
            seq: 0,
            team_seq: Default::default(),
            closed: false,
            failed: None,
            segment,
            job: None,
        })
    }

    /// The node segment's memfd (the sync plane, `crate::sync`), once.
    pub fn take_segment(&mut self) -> Option<OwnedFd> {
        self.segment.take()
    }

    /// Tells the endpoint that PE `pe`, which finalized, left this PE waiting for
    /// it on the sync plane: the endpoint fails the job, blaming `pe`.
    pub fn report_finalized(&mut self, pe: u32, how: &str) {
        let msg = Msg::Abort {
            pe,
            reason: how.to_string(),
        };
        if let Err(e) = send(&self.stream, &msg, &[]) {
            tracing::debug!("bootstrap: reporting a finalized peer: {e}");
        }
    }

    /// Tells the endpoint that a wait on the sync plane for `what` timed out
    /// after `waited`, with the PEs `missing` not arrived: the endpoint fails the
    /// job and names them.
    pub fn report_timeout(&mut self, what: &str, waited: std::time::Duration, missing: &[u32]) {
        let msg = Msg::TimedOut {
            what: what.to_string(),
            waited_ms: waited.as_millis().min(u64::MAX as u128) as u64,
            missing: missing.to_vec(),
        };
        if let Err(e) = send(&self.stream, &msg, &[]) {
            tracing::debug!("bootstrap: reporting a timeout: {e}");
        }
    }

    /// This PE's number.
    pub fn pe(&self) -> u32 {
        self.pe
    }

    /// The job's PE count.
    pub fn npes(&self) -> u32 {
        self.npes
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The job's failure as an error, once known.
    fn failure(&self) -> Result<()> {
        match &self.failed {
            Some((pe, how)) => Err(Error::PeerFailed {
                pe: *pe,
                how: how.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Checks, without blocking, whether the endpoint has announced that the job
    /// is failing. Only meaningful between collectives (the endpoint sends nothing
    /// else unasked). Returns the failed PE and how it failed.
    pub fn poll_abort(&mut self) -> Option<(u32, String)> {
        if self.failed.is_none() {
            let fd = nix::poll::PollFd::new(self.stream.as_fd(), nix::poll::PollFlags::POLLIN);
            if let Ok(1..) = nix::poll::poll(&mut [fd], nix::poll::PollTimeout::ZERO) {
                self.failed = Some(match recv(&self.stream) {
                    Ok(Some((Msg::Abort { pe, reason }, _))) => (pe, reason),
                    Ok(Some((m @ Msg::TimedOut { .. }, _))) => timed_out(&m),
                    Ok(Some((m, _))) => (
                        u32::MAX,
                        format!("unexpected {} from the endpoint", m.kind()),
                    ),
                    Ok(None) | Err(_) => (
                        u32::MAX,
                        "the job's endpoint went away (launcher gone?)".into(),
                    ),
                });
            }
        }
        self.failed.clone()
    }

    /// Waits for the answer to collective `seq`; an abort becomes [`Error::PeerFailed`](crate::Error::PeerFailed).
    fn answer(&mut self, seq: u64) -> Result<(Msg, Vec<OwnedFd>)> {
        self.failure()?;
        match recv(&self.stream)? {
            Some((Msg::Abort { pe, reason }, _)) => {
                self.failed = Some((pe, reason.clone()));
                Err(Error::PeerFailed { pe, how: reason })
            }
            Some((m @ Msg::TimedOut { .. }, _)) => {
                let (pe, how) = timed_out(&m);
                self.failed = Some((pe, how.clone()));
                let Msg::TimedOut {
                    what,
                    waited_ms,
                    missing,
                } = m
                else {
                    unreachable!("matched above")
                };
                if missing.contains(&self.pe) {
                    // This PE is one of the late ones: it did not wait, the job
                    // failed while it was away.
                    return Err(Error::PeerFailed { pe, how });
                }
                Err(Error::Timeout {
                    what,
                    pe: self.pe,
                    seconds: waited_ms as f64 / 1000.0,
                    missing: waiting_for(&missing),
                })
            }
            Some((msg, fds)) => {
                let got = match &msg {
                    Msg::BarrierDone { seq }
                    | Msg::Gathered { seq, .. }
                    | Msg::FdChunk { seq, .. } => *seq,
                    _ => u64::MAX,
                };
                if got != seq {
                    return Err(Error::Bootstrap(format!(
                        "expected the answer to collective #{seq}, got {} #{got}",
                        msg.kind()
                    )));
                }
                Ok((msg, fds))
            }
            None => Err(Error::Bootstrap(
                "the job's endpoint closed the connection (launcher gone?)".into(),
            )),
        }
    }

    /// Sends the job's collectives ([`Bootstrap::barrier`],
    /// [`Bootstrap::allgather`], [`Bootstrap::team_allgather`]) through `job`
    /// from now on: the endpoint serves this PE's node only. The fd exchange
    /// stays with the endpoint (within the node).
    pub fn set_job(&mut self, job: Box<dyn JobWide>) {
        self.job = Some(job);
    }

    /// The job's collectives when they go around the endpoint (several nodes).
    pub fn job(&mut self) -> Option<&mut (dyn JobWide + 'static)> {
        self.job.as_deref_mut()
    }

    /// Returns once every PE of the job has called `barrier`.
    pub fn barrier(&mut self) -> Result<()> {
        self.failure()?;
        if let Some(j) = self.job.as_mut() {
            return j.barrier();
        }
        let seq = self.next_seq();
        send(&self.stream, &Msg::Barrier { seq }, &[])?;
        match self.answer(seq)? {
            (Msg::BarrierDone { .. }, _) => Ok(()),
            (m, _) => Err(Error::Bootstrap(format!(
                "expected barrier-done, got {}",
                m.kind()
            ))),
        }
    }

    /// Every PE's `data` (at most 4 KiB each), in PE order.
    pub fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        if data.len() > MAX_BLOB {
            return Err(Error::InvalidArgument(format!(
                "allgather contribution of {} bytes is over the {MAX_BLOB}-byte limit",
                data.len()
            )));
        }
        self.failure()?;
        if let Some(j) = self.job.as_mut() {
            return j.allgather(data);
        }
        let seq = self.next_seq();
        send(
            &self.stream,
            &Msg::Gather {
                seq,
                data: data.to_vec(),
            },
            &[],
        )?;
        match self.answer(seq)? {
            (Msg::Gathered { blobs, .. }, _) if blobs.len() == self.npes as usize => Ok(blobs),
            (m, _) => Err(Error::Bootstrap(format!(
                "expected {} gathered blobs, got {}",
                self.npes,
                m.kind()
            ))),
        }
    }

    /// Every member's `data` (at most 4 KiB each), in team order, for the team of
    /// WORLD PEs `start + i * stride`, `i < size`, which must contain this PE. Only
    /// the members call it; a barrier over the team when `data` is empty.
    pub fn team_allgather(
        &mut self,
        start: u32,
        stride: i32,
        size: u32,
        data: &[u8],
    ) -> Result<Vec<Vec<u8>>> {
        if data.len() > MAX_BLOB {
            return Err(Error::InvalidArgument(format!(
                "allgather contribution of {} bytes is over the {MAX_BLOB}-byte limit",
                data.len()
            )));
        }
        self.failure()?;
        if let Some(j) = self.job.as_mut() {
            let members: Vec<u32> = (0..size)
                .map(|i| (i64::from(start) + i64::from(i) * i64::from(stride)) as u32)
                .collect();
            return j.group_allgather(&members, data);
        }
        let key = (start, stride, size);
        let seq = {
            let s = self.team_seq.entry(key).or_insert(0);
            *s += 1;
            *s
        };
        let msg = Msg::TeamGather {
            start,
            stride,
            size,
            seq,
            data: data.to_vec(),
        };
        send(&self.stream, &msg, &[])?;
        match self.answer(seq)? {
            (Msg::Gathered { blobs, .. }, _) if blobs.len() == size as usize => Ok(blobs),
            (m, _) => Err(Error::Bootstrap(format!(
                "expected {size} gathered blobs, got {}",
                m.kind()
            ))),
        }
    }

    /// Offers `fd` (or nothing) and receives every PE's offer, in PE order
    /// (this PE's own included, as a duplicate). Over the endpoint's PEs
    /// (this node's): PEs of other nodes offer nothing.
    pub fn exchange_fds(&mut self, fd: Option<BorrowedFd<'_>>) -> Result<Vec<Option<OwnedFd>>> {
        self.failure()?;
        let seq = self.next_seq();
        let raw: Vec<_> = fd.iter().map(|f| f.as_raw_fd()).collect();
        send(
            &self.stream,
            &Msg::FdOffer {
                seq,
                has_fd: fd.is_some(),
            },
            &raw,
        )?;
        let mut out: Vec<Option<OwnedFd>> = Vec::with_capacity(self.npes as usize);
        while out.len() < self.npes as usize {
            let (msg, fds) = self.answer(seq)?;
            let Msg::FdChunk { first, present, .. } = msg else {
                return Err(Error::Bootstrap(format!(
                    "expected fd-chunk, got {}",
                    msg.kind()
                )));
            };
            if first as usize != out.len() || out.len() + present.len() > self.npes as usize {
                return Err(Error::Bootstrap("fd chunks out of order".into()));
            }
            let mut fds = fds.into_iter();
            for p in present {
                out.push(if p { fds.next() } else { None });
            }
        }
        Ok(out)
    }

    /// Drops the connection like a crashed process would (no goodbye).
    #[cfg(test)]
    pub(crate) fn crash_for_test(mut self) {
        self.closed = true;
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// Tells the endpoint that the program called `shmem_global_exit(status)`
    /// (the PE exits next; the endpoint stops the job, and the launcher
    /// exits with `status`).
    pub fn global_exit(&mut self, status: i32) -> Result<()> {
        send(&self.stream, &Msg::GlobalExit { status }, &[])
    }

    /// Ends this PE's membership cleanly.
    pub fn finalize(mut self) -> Result<()> {
        self.closed = true;
        send(&self.stream, &Msg::Goodbye, &[])
    }
}

/// ", waiting for PEs 1, 3" (empty when no PE is named).
pub(crate) fn waiting_for(missing: &[u32]) -> String {
    match missing {
        [] => String::new(),
        [pe] => format!(", waiting for PE {pe}"),
        _ => format!(
            ", waiting for PEs {}",
            missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The job's failure as (PE, how) after a [`Msg::TimedOut`]: the first PE that
/// had not arrived.
fn timed_out(m: &Msg) -> (u32, String) {
    match m {
        Msg::TimedOut {
            what,
            waited_ms,
            missing,
        } => (
            missing.first().copied().unwrap_or(u32::MAX),
            format!(
                "did not arrive at {what} within {:.1} s (VKSHMEM_WAIT_TIMEOUT){}",
                *waited_ms as f64 / 1000.0,
                waiting_for(missing)
            ),
        ),
        _ => (u32::MAX, format!("unexpected {}", m.kind())),
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        if !self.closed && !std::thread::panicking() {
            let _ = send(&self.stream, &Msg::Goodbye, &[]);
        }
    }
}
