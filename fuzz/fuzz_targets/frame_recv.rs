//! The byte stream of a connection, fed through a socket pair into
//! `transport::recv` until the peer's end or the first error: no panic, no
//! allocation past the frame limit, and every message received is canonical.

#![no_main]

use std::io::Write;
use std::os::unix::net::UnixStream;

use libfuzzer_sys::fuzz_target;
use vkshmem_host::bootstrap::{transport, wire};

fuzz_target!(|data: &[u8]| {
    let (mut tx, rx) = UnixStream::pair().expect("socketpair");
    // No writer thread (threads are slow here and leave LeakSanitizer noise): the
    // socket buffer (about 200 KiB) holds any input libFuzzer makes by default, and
    // a larger one is cut where the buffer is full.
    tx.set_nonblocking(true).expect("nonblocking");
    let _ = tx.write_all(data);
    drop(tx);
    while let Ok(Some((msg, fds))) = transport::recv(&rx) {
        assert!(fds.is_empty(), "descriptors out of nowhere");
        let body = wire::encode(&msg);
        assert_eq!(wire::decode(&body), Ok(msg));
    }
});
