//! The one poison-tolerant lock helper of the workspace.
//!
//! [`lock`] takes a `std::sync::Mutex` and, when a thread panicked while holding it, takes it
//! anyway; [`wait_timeout`] waits on a `Condvar` the same way. Every C2 crate keeps the state
//! behind its mutexes consistent at each unlock, so a poisoned lock carries no value that must
//! not be read, and one panicking task must not wedge a host, a supervisor or a plugin.
//!
//! It does nothing else: no other lock type, no timeouts, no IO. Every crate of the workspace
//! may depend on it; it depends on none.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, WaitTimeoutResult};
use std::time::Duration;

/// Locks `mutex`, recovering the guard if a thread panicked while holding it.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar` for at most `timeout` like [`Condvar::wait_timeout`], recovering the
/// guard if a thread panicked while holding its mutex.
pub fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
    condvar
        .wait_timeout(guard, timeout)
        .unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
