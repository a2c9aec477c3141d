//! How the PEs of a node meet: a private Unix-socket endpoint run by the launcher.
//!
//! - [`wire`]: the message format (pure, fuzzed).
//! - [`transport`]: frames and `SCM_RIGHTS` descriptors over a stream socket.
//! - [`server`]: the endpoint (in `vkshmrun`): admission, collectives in a star, abort.
//! - `mpi` (cargo feature `mpi`): jobs started by `mpirun`, whose nodes'
//!   first ranks run the endpoint.
//! - [`client`]: a PE's connection: [`Bootstrap::barrier`], [`Bootstrap::allgather`],
//!   [`Bootstrap::exchange_fds`].

pub mod client;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod server;
pub mod transport;
pub mod wire;

pub use client::Bootstrap;
pub use server::Server;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::thread;

    fn job<T: Send + 'static>(
        npes: u32,
        f: impl Fn(Bootstrap) -> T + Send + Sync + Clone + 'static,
    ) -> Vec<T> {
        let server = Server::start(npes).unwrap();
        let ep = server.endpoint().to_string();
        let secret = server.secret().to_vec();
        let handles: Vec<_> = (0..npes)
            .map(|pe| {
                let (ep, secret, f) = (ep.clone(), secret.clone(), f.clone());
                thread::spawn(move || f(Bootstrap::connect(&ep, &secret, pe, npes).unwrap()))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn allgather_and_barrier() {
        for npes in [1u32, 2, 3, 5, 8] {
            let out = job(npes, move |mut b| {
                let mut all = Vec::new();
                for round in 0..20u32 {
                    let me = format!("pe{}-r{round}", b.pe()).into_bytes();
                    let got = b.allgather(&me).unwrap();
                    for (p, blob) in got.iter().enumerate() {
                        assert_eq!(blob, &format!("pe{p}-r{round}").into_bytes());
                    }
                    b.barrier().unwrap();
                    all.push(got.len());
                }
                b.finalize().unwrap();
                all
            });
            for v in out {
                assert!(v.iter().all(|&n| n == npes as usize));
            }
        }
    }

    #[test]
    fn team_allgathers_run_side_by_side() {
        // 7 PEs: evens (stride 2) and odds (negative stride) gather concurrently,
        // interleaved with world barriers; a 1-PE team answers at once.
        job(7, |mut b| {
            let pe = b.pe();
            for round in 0..10u32 {
                let (start, stride, size) = if pe % 2 == 0 { (0, 2, 4) } else { (5, -2, 3) };
                let got = b
                    .team_allgather(start, stride, size, &[pe as u8, round as u8])
                    .unwrap();
                for (i, blob) in got.iter().enumerate() {
                    let w = (start as i32 + i as i32 * stride) as u8;
                    assert_eq!(blob, &vec![w, round as u8]);
                }
                assert_eq!(
                    b.team_allgather(pe, 1, 1, &[]).unwrap(),
                    vec![Vec::<u8>::new()]
                );
                b.barrier().unwrap();
            }
            b.finalize().unwrap();
        });
    }

    #[test]
    fn team_allgather_outside_the_team_fails_the_job() {
        let out = job(2, |mut b| {
            if b.pe() == 0 {
                // PE 0 claims a team it is not part of.
                b.team_allgather(1, 1, 1, &[]).map(|_| ())
            } else {
                b.barrier()
            }
        });
        assert!(
            out.iter()
                .all(|r| matches!(r, Err(Error::PeerFailed { pe: 0, .. }))),
            "{out:?}"
        );
    }

    #[test]
    fn empty_and_max_blobs_and_oversize() {
        job(3, |mut b| {
            let big = vec![b.pe() as u8; wire::MAX_BLOB];
            let got = b.allgather(if b.pe() == 1 { &[] } else { &big }).unwrap();
            assert!(got[1].is_empty());
            assert_eq!(got[2], vec![2u8; wire::MAX_BLOB]);
            assert!(matches!(
                b.allgather(&vec![0; wire::MAX_BLOB + 1]),
                Err(Error::InvalidArgument(_))
            ));
        });
    }

    #[test]
    fn fd_passing() {
        job(4, |mut b| {
            // Each PE offers a temp file holding its number; PE 2 offers nothing.
            let mut f = tempfile::tempfile().unwrap();
            write!(f, "from pe {}", b.pe()).unwrap();
            let offer = (b.pe() != 2).then(|| f.as_fd());
            let got = b.exchange_fds(offer).unwrap();
            assert_eq!(got.len(), 4);
            for (p, fd) in got.into_iter().enumerate() {
                if p == 2 {
                    assert!(fd.is_none());
                    continue;
                }
                // pread, not seek + read: every PE's copy of a descriptor shares
                // one file offset (the reason for vk::memory::private_description).
                let file = std::fs::File::from(fd.expect("descriptor"));
                let mut buf = [0u8; 32];
                let n = std::os::unix::fs::FileExt::read_at(&file, &mut buf, 0).unwrap();
                let s = String::from_utf8_lossy(&buf[..n]);
                assert_eq!(s, format!("from pe {p}"));
            }
        });
    }

    #[test]
    fn stranger_without_the_secret_is_refused() {
        let server = Server::start(2).unwrap();
        let mut wrong = server.secret().to_vec();
        wrong[0] ^= 1;
        let e = Bootstrap::connect(server.endpoint(), &wrong, 0, 2).unwrap_err();
        assert!(
            matches!(&e, Error::Refused(r) if r.contains("secret")),
            "{e}"
        );
        // Wrong PE count, PE outside the job, short secret.
        let s = server.secret().to_vec();
        assert!(matches!(
            Bootstrap::connect(server.endpoint(), &s, 0, 3),
            Err(Error::Refused(_))
        ));
        assert!(matches!(
            Bootstrap::connect(server.endpoint(), &s, 2, 2),
            Err(Error::Refused(_))
        ));
        assert!(Bootstrap::connect(server.endpoint(), &s[..5], 0, 2).is_err());
        // The refusals did not fail the job: the right PEs still get in.
        let _a = Bootstrap::connect(server.endpoint(), &s, 0, 2).unwrap();
        let e = Bootstrap::connect(server.endpoint(), &s, 0, 2).unwrap_err();
        assert!(
            matches!(&e, Error::Refused(r) if r.contains("already")),
            "{e}"
        );
        assert!(server.first_failure().is_none());
    }

    #[test]
    fn raw_garbage_is_refused_without_harm() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixStream};
        let server = Server::start(1).unwrap();
        let name = &server.endpoint()[1..];
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let mut s = UnixStream::connect_addr(&addr).unwrap();
        s.write_all(&[0xff, 0xff, 0xff, 0x7f, 1, 2, 3]).unwrap();
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf); // the server answers with a refusal and closes
        let mut b = Bootstrap::connect(server.endpoint(), server.secret(), 0, 1).unwrap();
        b.barrier().unwrap();
    }

    /// The environment variable that turns [`raw_stranger_process`] into the
    /// stranger: `ENDPOINT SECRET_HEX`.
    const STRANGER_ENV: &str = crate::config::ENV_TEST_RAW_STRANGER;

    #[test]
    fn wrong_secret_is_refused_at_the_process_level() {
        // Another process (this test binary, running only `raw_stranger_process`)
        // speaks raw frames to the endpoint; see there for what it checks.
        let server = Server::start(2).unwrap();
        let hex: String = server.secret().iter().map(|b| format!("{b:02x}")).collect();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "bootstrap::tests::raw_stranger_process"])
            .args(["--nocapture", "--test-threads=1"])
            .env(STRANGER_ENV, format!("{} {hex}", server.endpoint()))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("stranger: refused 3 times"),
            "{}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // The refusals did not fail the job: the right PEs get in and work.
        let (ep, secret) = (server.endpoint().to_string(), server.secret().to_vec());
        let pes: Vec<_> = (0..2u32)
            .map(|pe| {
                let (ep, secret) = (ep.clone(), secret.clone());
                thread::spawn(move || {
                    let mut b = Bootstrap::connect(&ep, &secret, pe, 2).unwrap();
                    b.barrier().unwrap();
                    b.finalize().unwrap();
                })
            })
            .collect();
        for h in pes {
            h.join().unwrap();
        }
        assert!(server.first_failure().is_none());
    }

    /// Does nothing unless started by [`wrong_secret_is_refused_at_the_process_level`]
    /// with [`STRANGER_ENV`] set: then, as a separate process of the same uid, it
    /// connects three times with hand-made frames and checks that each is answered
    /// with exactly one `Refused` frame and then end of stream:
    /// a Hello whose secret differs in one bit, and length prefixes of
    /// `MAX_FRAME + 1` and `u32::MAX` with no body behind them, which are refused at
    /// once (the server neither allocates nor waits for a body that size).
    #[test]
    fn raw_stranger_process() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixStream};
        use std::time::{Duration, Instant};
        let Some(spec) = crate::config::env(STRANGER_ENV) else {
            return;
        };
        let (ep, hex) = spec.split_once(' ').unwrap();
        let mut secret = [0u8; wire::SECRET_LEN];
        for (i, b) in secret.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
        }
        let addr = SocketAddr::from_abstract_name(&ep.as_bytes()[1..]).unwrap();
        // Sends `bytes`, reads until the server closes, returns the one refusal.
        let refused = |bytes: &[u8]| -> String {
            let t0 = Instant::now();
            let mut s = UnixStream::connect_addr(&addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(bytes).unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got)
                .expect("the server closes the connection");
            assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
            let len = u32::from_le_bytes(got[..4].try_into().unwrap()) as usize;
            assert_eq!(got.len(), 4 + len, "one frame, then the end");
            match wire::decode(&got[4..]) {
                Ok(wire::Msg::Refused { reason }) => reason,
                other => panic!("{other:?}"),
            }
        };
        let frame = |m: &wire::Msg| {
            let body = wire::encode(m);
            [&(body.len() as u32).to_le_bytes()[..], &body].concat()
        };
        secret[wire::SECRET_LEN - 1] ^= 0x80;
        let r = refused(&frame(&wire::Msg::Hello {
            secret,
            pe: 0,
            npes: 2,
        }));
        assert!(r.contains("secret"), "{r}");
        for len in [wire::MAX_FRAME as u32 + 1, u32::MAX] {
            let r = refused(&len.to_le_bytes());
            assert!(r.contains("over the limit"), "{r}");
        }
        println!("stranger: refused 3 times");
    }

    #[test]
    fn a_dead_peer_aborts_the_others() {
        let server = Server::start(3).unwrap();
        let (ep, secret) = (server.endpoint().to_string(), server.secret().to_vec());
        let handles: Vec<_> = (0..3u32)
            .map(|pe| {
                let (ep, secret) = (ep.clone(), secret.clone());
                thread::spawn(move || {
                    let mut b = Bootstrap::connect(&ep, &secret, pe, 3).unwrap();
                    b.barrier().unwrap();
                    if pe == 1 {
                        // Die: close the socket without a goodbye.
                        b.crash_for_test();
                        return None;
                    }
                    Some(b.barrier().unwrap_err())
                })
            })
            .collect();
        for h in handles {
            if let Some(e) = h.join().unwrap() {
                assert!(matches!(e, Error::PeerFailed { pe: 1, .. }), "{e}");
            }
        }
        assert_eq!(server.first_failure().map(|f| f.0), Some(1));
    }
}
