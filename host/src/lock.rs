//! Locking that survives a panic elsewhere in the PE.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`. A poisoned mutex means a panic elsewhere in this PE; the
/// guarded state is still usable for tearing down, so the guard is taken
/// anyway.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
