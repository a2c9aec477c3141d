//! A failed check ends its PE at once (exit code 1, after saying why on
//! stderr), where `anyhow::ensure!` would return the error: on the way out
//! the program's symmetric buffers drop, and each free is a collective call
//! that the other PEs, gone on to their next collective, never join. The
//! job would then hang until the test's limit (one PE in a free's socket
//! agreement, another on the sync plane). vkshmrun, and mpirun, stop
//! the other PEs when one exits with an error.
//!
//! The including program declares the module with `#[macro_use]` and calls
//! [`on_pe`] once it knows its PE.

// Each program that includes this module uses a part of it.
#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    /// The PE this thread runs (a process's one, or a thread-PE's).
    static PE: Cell<Option<u32>> = const { Cell::new(None) };
    /// What its checks are about now.
    static SCOPE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Whether the PEs are threads of this process (`--threads`): a failed
/// check then panics, which fails the job with the PE named, where a
/// process exits.
static THREADS: AtomicBool = AtomicBool::new(false);

/// Names this thread's PE in the failure message.
pub fn on_pe(pe: u32) {
    PE.set(Some(pe));
}

/// Says that PEs are threads of this process from now on.
pub fn pes_are_threads() {
    THREADS.store(true, Ordering::SeqCst);
}

/// Names what the checks that follow are about (a team, a round), for the
/// failure message.
pub fn scope(what: String) {
    SCOPE.set(what);
}

/// Says why this PE failed and ends it: the process, or with PEs as
/// threads this PE's thread (a panic).
pub fn fail(why: std::fmt::Arguments) -> ! {
    let prog = std::env::args()
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let pe = PE.get().map(|pe| format!(" PE {pe}:")).unwrap_or_default();
    let scope = SCOPE.with_borrow(|s| s.clone());
    let scope = if scope.is_empty() {
        scope
    } else {
        format!(" {scope}:")
    };
    let text = format!("{prog}:{pe}{scope} check failed: {why}");
    if THREADS.load(Ordering::SeqCst) {
        panic!("{text}");
    }
    eprintln!("{text}");
    std::process::exit(1)
}

/// `anyhow::ensure!`'s form, but a failure ends the PE ([`fail`]).
#[allow(unused_macros)]
macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            $crate::fail_fast::fail(format_args!($($why)+))
        }
    };
}

/// `anyhow::bail!`'s form, but the failure ends the PE ([`fail`]).
#[allow(unused_macros)]
macro_rules! bail {
    ($($why:tt)+) => {
        $crate::fail_fast::fail(format_args!($($why)+))
    };
}
