//! `shmem_set_lock`, `shmem_test_lock`, `shmem_clear_lock`: a ticket lock
//! in the symmetric `long` on PE 0 (high 32 bits: the next ticket; low 32
//! bits: the ticket served), so PEs get the lock in the order they asked.
//! A zeroed `long` is a free lock, as OpenSHMEM requires.

use crate::amo::{compare_swap, fetch, fetch_add};
use crate::setup::{st, OrDie};
use crate::SHMEM_CTX_DEFAULT as D;

const LO: i64 = 0xffff_ffff;

fn next(v: i64) -> i64 {
    (v >> 32) & LO
}

fn served(v: i64) -> i64 {
    v & LO
}

/// `shmem_set_lock`: takes a ticket and waits until it is served.
pub fn set(lock: *mut i64) {
    let call = "shmem_set_lock";
    let ticket = next(fetch_add::<i64>(call, D, lock, 1 << 32, 0));
    st(call)
        .ctx
        .poll_until(
            call,
            || Ok(served(fetch::<i64>(call, D, lock, 0)) == ticket),
        )
        .or_die(call);
}

/// `shmem_test_lock`: 0 when it took the free lock, 1 when the lock is held.
pub fn test(lock: *mut i64) -> i32 {
    let call = "shmem_test_lock";
    let v = fetch::<i64>(call, D, lock, 0);
    if next(v) != served(v) {
        return 1;
    }
    let n = (((next(v) + 1) & LO) << 32) | served(v);
    i32::from(compare_swap::<i64>(call, D, lock, v, n, 0) != v)
}

/// `shmem_clear_lock`: this PE's updates complete, then the next ticket is
/// served (the low half wraps without carrying into the high half).
pub fn clear(lock: *mut i64) {
    let call = "shmem_clear_lock";
    crate::rma::quiet(call, D);
    let mut v = fetch::<i64>(call, D, lock, 0);
    loop {
        let n = (v & !LO) | ((v + 1) & LO);
        let old = compare_swap::<i64>(call, D, lock, v, n, 0);
        if old == v {
            return;
        }
        v = old;
    }
}
