//! Point-to-point synchronization: `wait_until` and `test` in every form,
//! and the signal reads. The words are this PE's own symmetric objects
//! (heap or global), read atomically through this PE's address; a wait
//! ends with a message when the job aborts or past the wait timeout.

use vkshmem_host::rma::Cmp;

use crate::amo::{load, Word};
use crate::setup::{fatal, st, OrDie};

/// Where the next `_any` search starts (see [`many`]).
static ROTATE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `SHMEM_CMP_NE`.
pub const CMP_NE: i32 = 1;

/// The host library's comparison for a `SHMEM_CMP_*` value, or the end of
/// the PE for an unknown one.
fn cmp_of(call: &str, cmp: i32) -> Cmp {
    match cmp {
        0 => Cmp::Eq,
        1 => Cmp::Ne,
        2 => Cmp::Gt,
        3 => Cmp::Ge,
        4 => Cmp::Lt,
        5 => Cmp::Le,
        c => fatal(
            call,
            format!("unknown comparison {c} (SHMEM_CMP_EQ .. SHMEM_CMP_LE)"),
        ),
    }
}

/// The comparison value(s) of a multi-word wait.
#[derive(Debug, Clone, Copy)]
pub enum Vals<T> {
    /// One value for every word.
    One(T),
    /// A value per word (the `_vector` forms).
    Each(*const T),
}

/// Which words must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Every included word.
    All,
    /// One included word (its index is returned).
    Any,
    /// At least one; every index that holds is written to `indices`.
    Some,
}

/// Checks `ivars` (`n` words of this PE's symmetric memory).
fn check<T>(call: &str, ivars: *const T, n: usize) {
    let s = st(call);
    let _ = s.sym(call, "ivars", ivars, n.max(1));
    if (ivars as usize) % std::mem::align_of::<T>() != 0 {
        fatal(call, "ivars is not aligned to its type");
    }
}

/// `wait_until`; returns the value that satisfied the comparison.
pub fn wait_until<T: Word>(call: &str, ivar: *mut T, cmp: i32, value: T) -> T {
    check(call, ivar, 1);
    let cmp = cmp_of(call, cmp);
    let mut seen = value;
    st(call)
        .ctx
        .poll_until(call, || {
            // SAFETY: checked: this PE's aligned symmetric word; writers use atomics.
            seen = unsafe { load::<T>(ivar.cast()) };
            Ok(cmp.holds(seen, value))
        })
        .or_die(call);
    seen
}

/// `test`: 1 when the word holds now.
pub fn test<T: Word>(call: &str, ivar: *mut T, cmp: i32, value: T) -> i32 {
    check(call, ivar, 1);
    // SAFETY: as in `wait_until`.
    i32::from(cmp_of(call, cmp).holds(unsafe { load::<T>(ivar.cast()) }, value))
}

/// The `_all`, `_any` and `_some` waits and tests (`block`: wait, else test).
/// Returns: All: 1 when every included word holds (0 for a test that
/// fails); Any: the index, or `SIZE_MAX`; Some: how many indices it wrote.
#[allow(clippy::too_many_arguments)]
pub fn many<T: Word>(
    call: &str,
    ivars: *mut T,
    nelems: usize,
    status: *const i32,
    cmp: i32,
    vals: Vals<T>,
    how: How,
    indices: *mut usize,
    block: bool,
) -> usize {
    let none = match how {
        How::All => 1,
        How::Any => usize::MAX,
        How::Some => 0,
    };
    if nelems == 0 {
        return none;
    }
    check(call, ivars, nelems);
    if let Vals::Each(v) = vals {
        if v.is_null() {
            fatal(call, "cmp_values is NULL");
        }
    }
    if how == How::Some && indices.is_null() {
        fatal(call, "indices is NULL");
    }
    // SAFETY: C's contract: status (when given) has nelems entries.
    let included = |i: usize| status.is_null() || unsafe { *status.add(i) } == 0;
    if !(0..nelems).any(included) {
        return none;
    }
    let value = |i: usize| match vals {
        Vals::One(v) => v,
        // SAFETY: C's contract: nelems comparison values.
        Vals::Each(p) => unsafe { p.add(i).read_unaligned() },
    };
    let cmp = cmp_of(call, cmp);
    // SAFETY: word i of the checked symmetric array.
    let ok = |i: usize| cmp.holds(unsafe { load::<T>(ivars.add(i).cast()) }, value(i));
    let start = ROTATE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % nelems;
    let mut out = none;
    let mut ready = || -> bool {
        match how {
            How::All => (0..nelems).filter(|&i| included(i)).all(ok),
            // From a rotating start, so that repeated calls return every
            // index that holds, not always the first.
            How::Any => match (0..nelems)
                .map(|k| (k + start) % nelems)
                .find(|&i| included(i) && ok(i))
            {
                Some(i) => {
                    out = i;
                    true
                }
                None => false,
            },
            How::Some => {
                let mut k = 0;
                for i in (0..nelems).filter(|&i| included(i) && ok(i)) {
                    // SAFETY: C's contract: indices has room for nelems.
                    unsafe { *indices.add(k) = i };
                    k += 1;
                }
                out = k;
                k > 0
            }
        }
    };
    if block {
        st(call).ctx.poll_until(call, || Ok(ready())).or_die(call);
        if how == How::All {
            return 1;
        }
        out
    } else {
        let r = ready();
        match how {
            How::All => usize::from(r),
            _ => out,
        }
    }
}

/// `shmem_signal_fetch`.
pub fn signal_fetch(call: &str, sig_addr: *const u64) -> u64 {
    check(call, sig_addr, 1);
    // SAFETY: as in `wait_until`.
    unsafe { load::<u64>(sig_addr.cast()) }
}

/// `shmem_signal_wait_until`: the signal's value that satisfied the
/// comparison.
pub fn signal_wait_until(call: &str, sig_addr: *mut u64, cmp: i32, value: u64) -> u64 {
    wait_until(call, sig_addr, cmp, value)
}
