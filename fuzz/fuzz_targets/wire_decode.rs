//! `decode` never panics on any byte string, and whatever it accepts is canonical:
//! the message re-encodes to exactly the input and round-trips.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vkshmem_host::bootstrap::wire::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(msg) = decode(data) {
        let bytes = encode(&msg);
        assert_eq!(bytes, data, "{msg:?} re-encodes differently");
        assert_eq!(decode(&bytes), Ok(msg));
    }
});
