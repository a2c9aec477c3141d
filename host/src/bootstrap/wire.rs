//! The bootstrap wire format: length-prefixed frames, each one message.
//!
//! A frame is `u32 body length (LE)` followed by the body: a one-byte tag and the
//! message's fields in little endian. Every length is checked against a hard limit
//! before anything is allocated, and [`decode`] returns an error (never panics) on
//! any byte string: property tests (host/tests/wire_props.rs) and cargo-fuzz
//! targets (fuzz/) check it.
//!
//! File descriptors travel beside frames as `SCM_RIGHTS` ancillary data; the frame
//! says how many to expect (see [`crate::bootstrap::transport`]).

/// Length of the per-job secret in bytes.
pub const SECRET_LEN: usize = 32;
/// Most PEs one bootstrap endpoint serves.
pub const MAX_PES: u32 = 4096;
/// Largest contribution of one PE to an allgather.
pub const MAX_BLOB: usize = 4096;
/// Longest text (reasons) in a message.
pub const MAX_TEXT: usize = 4096;
/// Most file descriptors sent with one frame (below the kernel's SCM_MAX_FD of 253).
pub const MAX_FDS_PER_FRAME: usize = 240;
/// Largest frame body.
pub const MAX_FRAME: usize = 64 + MAX_PES as usize * (4 + MAX_BLOB);

pub use crate::error::WireError;

/// One bootstrap message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// PE → server: first message of a connection.
    Hello {
        /// The job's secret.
        secret: [u8; SECRET_LEN],
        /// The PE's number.
        pe: u32,
        /// The job's PE count as the PE knows it.
        npes: u32,
    },
    /// Server → PE: admitted. Carries one fd: the node segment (`crate::sync`).
    Welcome,
    /// Server → PE: not admitted, and why. The server closes the connection.
    Refused {
        /// Why.
        reason: String,
    },
    /// PE → server: arrived at barrier number `seq`.
    Barrier {
        /// Collective sequence number.
        seq: u64,
    },
    /// Server → PE: every PE arrived at barrier `seq`.
    BarrierDone {
        /// Collective sequence number.
        seq: u64,
    },
    /// PE → server: this PE's contribution to allgather `seq`.
    Gather {
        /// Collective sequence number.
        seq: u64,
        /// The contribution.
        data: Vec<u8>,
    },
    /// PE → server: this PE's contribution to allgather `seq` of the team
    /// `start + i * stride` (WORLD numbers, `i < size`). The answer is
    /// [`Msg::Gathered`] with one blob per member, in team order. Sequence numbers
    /// count per member set.
    TeamGather {
        /// WORLD number of the team's member 0.
        start: u32,
        /// WORLD distance between consecutive members (may be negative).
        stride: i32,
        /// Number of members.
        size: u32,
        /// Collective sequence number on this member set.
        seq: u64,
        /// The contribution.
        data: Vec<u8>,
    },
    /// Server → PE: every PE's contribution, in PE order.
    Gathered {
        /// Collective sequence number.
        seq: u64,
        /// One blob per PE.
        blobs: Vec<Vec<u8>>,
    },
    /// PE → server: this PE's descriptor (attached) for fd exchange `seq`, or none.
    FdOffer {
        /// Collective sequence number.
        seq: u64,
        /// Whether one descriptor is attached.
        has_fd: bool,
    },
    /// Server → PE: the descriptors of PEs `first .. first + present.len()`; one is
    /// attached, in order, for each `true`. Large jobs get several chunks.
    FdChunk {
        /// Collective sequence number.
        seq: u64,
        /// First PE this chunk covers.
        first: u32,
        /// Which of those PEs offered a descriptor.
        present: Vec<bool>,
    },
    /// Server → PE: the job is aborting because PE `pe` failed.
    Abort {
        /// The failed PE.
        pe: u32,
        /// What happened.
        reason: String,
    },
    /// PE → server: clean end; the PE closes the connection next.
    Goodbye,
    /// PE → server: the program called `shmem_global_exit(status)`; the PE
    /// exits next, and the job ends with `status` (the launcher's exit code).
    GlobalExit {
        /// The status the program passed.
        status: i32,
    },
    /// Server → PE: a collective waited longer than the job's wait timeout
    /// (`VKSHMEM_WAIT_TIMEOUT`); the job is failing. PE → server: a wait on the
    /// sync plane timed out (the PE names the members it waited for).
    TimedOut {
        /// The collective that waited ("barrier #3", "team allgather #2 over …").
        what: String,
        /// How long it had waited, in milliseconds.
        waited_ms: u64,
        /// The WORLD numbers of the PEs that had not arrived.
        missing: Vec<u32>,
    },
}

const T_HELLO: u8 = 1;
const T_WELCOME: u8 = 2;
const T_REFUSED: u8 = 3;
const T_BARRIER: u8 = 4;
const T_BARRIER_DONE: u8 = 5;
const T_GATHER: u8 = 6;
const T_GATHERED: u8 = 7;
const T_FD_OFFER: u8 = 8;
const T_FD_CHUNK: u8 = 9;
const T_ABORT: u8 = 10;
const T_GOODBYE: u8 = 11;
const T_TEAM_GATHER: u8 = 12;
const T_TIMED_OUT: u8 = 13;
const T_GLOBAL_EXIT: u8 = 14;

impl Msg {
    /// How many file descriptors travel with this message.
    pub fn fd_count(&self) -> usize {
        match self {
            // The node segment (the shared-memory sync plane, `crate::sync`).
            Msg::Welcome => 1,
            Msg::FdOffer { has_fd, .. } => usize::from(*has_fd),
            Msg::FdChunk { present, .. } => present.iter().filter(|p| **p).count(),
            _ => 0,
        }
    }

    /// A short name for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "hello",
            Msg::Welcome => "welcome",
            Msg::Refused { .. } => "refused",
            Msg::Barrier { .. } => "barrier",
            Msg::BarrierDone { .. } => "barrier-done",
            Msg::Gather { .. } => "allgather",
            Msg::TeamGather { .. } => "team allgather",
            Msg::Gathered { .. } => "gathered",
            Msg::FdOffer { .. } => "fd-exchange",
            Msg::FdChunk { .. } => "fd-chunk",
            Msg::Abort { .. } => "abort",
            Msg::Goodbye => "goodbye",
            Msg::GlobalExit { .. } => "global-exit",
            Msg::TimedOut { .. } => "timed-out",
        }
    }
}

/// Encodes `msg` as a frame body (without the length prefix).
pub fn encode(msg: &Msg) -> Vec<u8> {
    let mut b = Vec::with_capacity(32);
    let text = |b: &mut Vec<u8>, s: &str| {
        let s = &s.as_bytes()[..s.len().min(MAX_TEXT)];
        // Cut at a char boundary so the text stays UTF-8.
        let cut = (0..=s.len())
            .rev()
            .find(|&i| std::str::from_utf8(&s[..i]).is_ok())
            .unwrap_or(0);
        b.extend_from_slice(&(cut as u32).to_le_bytes());
        b.extend_from_slice(&s[..cut]);
    };
    match msg {
        Msg::Hello { secret, pe, npes } => {
            b.push(T_HELLO);
            b.extend_from_slice(secret);
            b.extend_from_slice(&pe.to_le_bytes());
            b.extend_from_slice(&npes.to_le_bytes());
        }
        Msg::Welcome => b.push(T_WELCOME),
        Msg::Refused { reason } => {
            b.push(T_REFUSED);
            text(&mut b, reason);
        }
        Msg::Barrier { seq } => {
            b.push(T_BARRIER);
            b.extend_from_slice(&seq.to_le_bytes());
        }
        Msg::BarrierDone { seq } => {
            b.push(T_BARRIER_DONE);
            b.extend_from_slice(&seq.to_le_bytes());
        }
        Msg::Gather { seq, data } => {
            b.push(T_GATHER);
            b.extend_from_slice(&seq.to_le_bytes());
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(data);
        }
        Msg::TeamGather {
            start,
            stride,
            size,
            seq,
            data,
        } => {
            b.push(T_TEAM_GATHER);
            b.extend_from_slice(&start.to_le_bytes());
            b.extend_from_slice(&stride.to_le_bytes());
            b.extend_from_slice(&size.to_le_bytes());
            b.extend_from_slice(&seq.to_le_bytes());
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(data);
        }
        Msg::Gathered { seq, blobs } => {
            b.push(T_GATHERED);
            b.extend_from_slice(&seq.to_le_bytes());
            b.extend_from_slice(&(blobs.len() as u32).to_le_bytes());
            for blob in blobs {
                b.extend_from_slice(&(blob.len() as u32).to_le_bytes());
                b.extend_from_slice(blob);
            }
        }
        Msg::FdOffer { seq, has_fd } => {
            b.push(T_FD_OFFER);
            b.extend_from_slice(&seq.to_le_bytes());
            b.push(u8::from(*has_fd));
        }
        Msg::FdChunk {
            seq,
            first,
            present,
        } => {
            b.push(T_FD_CHUNK);
            b.extend_from_slice(&seq.to_le_bytes());
            b.extend_from_slice(&first.to_le_bytes());
            b.extend_from_slice(&(present.len() as u32).to_le_bytes());
            b.extend(present.iter().map(|p| u8::from(*p)));
        }
        Msg::Abort { pe, reason } => {
            b.push(T_ABORT);
            b.extend_from_slice(&pe.to_le_bytes());
            text(&mut b, reason);
        }
        Msg::Goodbye => b.push(T_GOODBYE),
        Msg::GlobalExit { status } => {
            b.push(T_GLOBAL_EXIT);
            b.extend_from_slice(&status.to_le_bytes());
        }
        Msg::TimedOut {
            what,
            waited_ms,
            missing,
        } => {
            b.push(T_TIMED_OUT);
            text(&mut b, what);
            b.extend_from_slice(&waited_ms.to_le_bytes());
            let n = missing.len().min(MAX_PES as usize);
            b.extend_from_slice(&(n as u32).to_le_bytes());
            for pe in &missing[..n] {
                b.extend_from_slice(&pe.to_le_bytes());
            }
        }
    }
    b
}

/// A cursor over a frame body that fails instead of panicking.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() < n {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn flag(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(WireError::BadFlag(x)),
        }
    }
    fn len(&mut self, what: &'static str, max: usize) -> Result<usize, WireError> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(WireError::TooLong { what, len, max });
        }
        Ok(len)
    }
    fn blob(&mut self) -> Result<Vec<u8>, WireError> {
        let n = self.len("blob", MAX_BLOB)?;
        Ok(self.take(n)?.to_vec())
    }
    fn text(&mut self) -> Result<String, WireError> {
        let n = self.len("text", MAX_TEXT)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| WireError::BadText)
    }
}

/// Decodes one frame body. Never panics.
pub fn decode(body: &[u8]) -> Result<Msg, WireError> {
    if body.len() > MAX_FRAME {
        return Err(WireError::TooLong {
            what: "frame",
            len: body.len(),
            max: MAX_FRAME,
        });
    }
    let mut r = Reader { buf: body };
    let msg = match r.u8()? {
        T_HELLO => {
            let mut secret = [0u8; SECRET_LEN];
            secret.copy_from_slice(r.take(SECRET_LEN)?);
            Msg::Hello {
                secret,
                pe: r.u32()?,
                npes: r.u32()?,
            }
        }
        T_WELCOME => Msg::Welcome,
        T_REFUSED => Msg::Refused { reason: r.text()? },
        T_BARRIER => Msg::Barrier { seq: r.u64()? },
        T_BARRIER_DONE => Msg::BarrierDone { seq: r.u64()? },
        T_GATHER => Msg::Gather {
            seq: r.u64()?,
            data: r.blob()?,
        },
        T_TEAM_GATHER => Msg::TeamGather {
            start: r.u32()?,
            stride: r.u32()? as i32,
            size: r.u32()?,
            seq: r.u64()?,
            data: r.blob()?,
        },
        T_GATHERED => {
            let seq = r.u64()?;
            let n = r.len("blob count", MAX_PES as usize)?;
            let blobs = (0..n).map(|_| r.blob()).collect::<Result<_, _>>()?;
            Msg::Gathered { seq, blobs }
        }
        T_FD_OFFER => Msg::FdOffer {
            seq: r.u64()?,
            has_fd: r.flag()?,
        },
        T_FD_CHUNK => {
            let seq = r.u64()?;
            let first = r.u32()?;
            let n = r.len("fd chunk", MAX_PES as usize)?;
            let present: Vec<bool> = (0..n).map(|_| r.flag()).collect::<Result<_, _>>()?;
            if present.iter().filter(|p| **p).count() > MAX_FDS_PER_FRAME {
                return Err(WireError::TooLong {
                    what: "descriptors in one chunk",
                    len: present.len(),
                    max: MAX_FDS_PER_FRAME,
                });
            }
            Msg::FdChunk {
                seq,
                first,
                present,
            }
        }
        T_ABORT => Msg::Abort {
            pe: r.u32()?,
            reason: r.text()?,
        },
        T_GOODBYE => Msg::Goodbye,
        T_GLOBAL_EXIT => Msg::GlobalExit {
            status: r.u32()? as i32,
        },
        T_TIMED_OUT => {
            let what = r.text()?;
            let waited_ms = r.u64()?;
            let n = r.len("missing PEs", MAX_PES as usize)?;
            let missing = (0..n).map(|_| r.u32()).collect::<Result<_, _>>()?;
            Msg::TimedOut {
                what,
                waited_ms,
                missing,
            }
        }
        t => return Err(WireError::UnknownTag(t)),
    };
    if !r.buf.is_empty() {
        return Err(WireError::Trailing(r.buf.len()));
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Msg> {
        vec![
            Msg::Hello {
                secret: [7; SECRET_LEN],
                pe: 3,
                npes: 8,
            },
            Msg::Welcome,
            Msg::Refused {
                reason: "wrong secret".into(),
            },
            Msg::Barrier { seq: 42 },
            Msg::BarrierDone { seq: u64::MAX },
            Msg::Gather {
                seq: 1,
                data: vec![1, 2, 3],
            },
            Msg::TeamGather {
                start: 7,
                stride: -2,
                size: 3,
                seq: 9,
                data: vec![4; 10],
            },
            Msg::Gathered {
                seq: 2,
                blobs: vec![vec![], vec![9; 100], vec![0]],
            },
            Msg::FdOffer {
                seq: 3,
                has_fd: true,
            },
            Msg::FdChunk {
                seq: 4,
                first: 0,
                present: vec![true, false, true],
            },
            Msg::Abort {
                pe: 2,
                reason: "killed by SIGKILL".into(),
            },
            Msg::Goodbye,
            Msg::GlobalExit { status: -3 },
            Msg::TimedOut {
                what: "barrier #3".into(),
                waited_ms: 2500,
                missing: vec![1, 3],
            },
        ]
    }

    #[test]
    fn roundtrip() {
        for m in samples() {
            assert_eq!(decode(&encode(&m)).unwrap(), m);
        }
    }

    #[test]
    fn every_truncation_and_extension_is_an_error() {
        for m in samples() {
            let b = encode(&m);
            for cut in 0..b.len() {
                assert!(decode(&b[..cut]).is_err(), "{m:?} cut at {cut}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert_eq!(decode(&longer), Err(WireError::Trailing(1)));
        }
    }

    #[test]
    fn limits_are_enforced() {
        let mut b = vec![T_GATHER];
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&(MAX_BLOB as u32 + 1).to_le_bytes());
        assert!(matches!(decode(&b), Err(WireError::TooLong { .. })));
        let mut b = vec![T_GATHERED];
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode(&b), Err(WireError::TooLong { .. })));
        assert_eq!(decode(&[200]), Err(WireError::UnknownTag(200)));
        assert_eq!(decode(&[]), Err(WireError::Truncated));
    }

    #[test]
    fn long_text_is_cut_at_a_char_boundary() {
        let reason = "é".repeat(MAX_TEXT);
        let Msg::Refused { reason: got } = decode(&encode(&Msg::Refused { reason })).unwrap()
        else {
            panic!()
        };
        assert!(got.len() <= MAX_TEXT && got.chars().all(|c| c == 'é'));
    }

    #[test]
    fn decoder_never_panics_on_random_bytes() {
        // A small deterministic fuzz loop: random bodies and mutated valid bodies.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let valid: Vec<Vec<u8>> = samples().iter().map(encode).collect();
        for i in 0..200_000 {
            let body: Vec<u8> = if i % 2 == 0 {
                let len = (rnd() % 64) as usize;
                (0..len).map(|_| rnd() as u8).collect()
            } else {
                let mut b = valid[(rnd() as usize) % valid.len()].clone();
                let k = (rnd() as usize) % b.len();
                b[k] = rnd() as u8;
                b
            };
            let _ = decode(&body);
        }
    }
}
