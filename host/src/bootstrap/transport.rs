//! Frames over a Unix stream socket, with file descriptors beside them.
//!
//! A sender attaches a frame's descriptors (`SCM_RIGHTS`) to the first `sendmsg` of
//! that frame. The receiver reads exactly one frame's bytes at a time (the 4-byte
//! length, then the body) and keeps every descriptor that arrives while doing so; as
//! it never reads into the next frame, descriptors land with the frame they belong to.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{
    getsockopt, recvmsg, sendmsg, sockopt, ControlMessage, ControlMessageOwned, MsgFlags,
};

use super::wire::{self, Msg, MAX_FDS_PER_FRAME, MAX_FRAME};
use crate::error::{Error, Result};

/// Sends `msg` with `fds` attached. `fds.len()` must equal `msg.fd_count()`.
pub fn send(stream: &UnixStream, msg: &Msg, fds: &[RawFd]) -> Result<()> {
    debug_assert_eq!(fds.len(), msg.fd_count());
    let body = wire::encode(msg);
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(&body);
    let mut sent = 0;
    while sent < frame.len() {
        let iov = [IoSlice::new(&frame[sent..])];
        let rights = [ControlMessage::ScmRights(fds)];
        let cmsgs: &[ControlMessage] = if sent == 0 && !fds.is_empty() {
            &rights
        } else {
            &[]
        };
        match sendmsg::<()>(
            stream.as_raw_fd(),
            &iov,
            cmsgs,
            MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            Ok(n) => sent += n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                return Err(Error::io(
                    format!("sending bootstrap {}", msg.kind()),
                    e.into(),
                ))
            }
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes, collecting descriptors into `fds`.
/// Returns `Ok(false)` on a clean end of stream before the first byte.
fn read_exact(stream: &UnixStream, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> Result<bool> {
    let mut got = 0;
    let mut cmsg = nix::cmsg_space!([RawFd; MAX_FDS_PER_FRAME]);
    while got < buf.len() {
        let mut iov = [IoSliceMut::new(&mut buf[got..])];
        let msg = match recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(Error::io("receiving a bootstrap frame", e.into())),
        };
        let n = msg.bytes;
        let truncated = msg.flags.contains(MsgFlags::MSG_CTRUNC);
        for c in msg
            .cmsgs()
            .map_err(|e| Error::io("reading ancillary data", e.into()))?
        {
            if let ControlMessageOwned::ScmRights(raw) = c {
                // SAFETY: the kernel has just installed these descriptors into this
                // process for us (SCM_RIGHTS); nothing else refers to them, so we
                // are their only owner.
                fds.extend(
                    raw.into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        if truncated {
            return Err(Error::Bootstrap(
                "too many file descriptors attached to one frame".into(),
            ));
        }
        if n == 0 {
            if got == 0 {
                return Ok(false);
            }
            return Err(Error::io(
                "receiving a bootstrap frame",
                io::ErrorKind::UnexpectedEof.into(),
            ));
        }
        got += n;
    }
    Ok(true)
}

/// Receives one message and the descriptors that came with it. `Ok(None)` means the
/// peer closed the connection between frames.
pub fn recv(stream: &UnixStream) -> Result<Option<(Msg, Vec<OwnedFd>)>> {
    let mut fds = Vec::new();
    let mut len = [0u8; 4];
    if !read_exact(stream, &mut len, &mut fds)? {
        return Ok(None);
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(wire::WireError::TooLong {
            what: "frame",
            len,
            max: MAX_FRAME,
        }
        .into());
    }
    let mut body = vec![0u8; len];
    if !read_exact(stream, &mut body, &mut fds)? && len > 0 {
        return Err(Error::io(
            "receiving a bootstrap frame",
            io::ErrorKind::UnexpectedEof.into(),
        ));
    }
    let msg = wire::decode(&body)?;
    if fds.len() != msg.fd_count() {
        return Err(Error::Bootstrap(format!(
            "{} arrived with {} descriptors, expected {}",
            msg.kind(),
            fds.len(),
            msg.fd_count()
        )));
    }
    Ok(Some((msg, fds)))
}

/// The uid of the process at the other end of `stream` (SO_PEERCRED).
pub fn peer_uid(stream: &UnixStream) -> Result<u32> {
    getsockopt(stream, sockopt::PeerCredentials)
        .map(|c| c.uid())
        .map_err(|e| Error::io("reading the peer's credentials", e.into()))
}
