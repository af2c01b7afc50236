//! The threads that wait for children to die, kept for the next child instead of ending.
//!
//! Every supervised child has one thread blocked in `waitid` for it (see `process.rs`). A thread
//! whose child is reaped does not exit: it waits, bounded by [`REAPER_LINGER`], to be handed the
//! next child, and at most [`IDLE_REAPERS`] wait at a time. A host that starts and stops
//! runtimes so pays neither a thread's creation on the activation's path nor its exit on the
//! unload's (on one CPU, about 29 us for the pair against 5 for the hand-over; see
//! docs/reports/2026-12-01-performance-levers.md). A thread is never shared by two children at once, so a child's reap
//! never waits for another's.
//!
//! Hand-over and expiry are decided under one lock, the idle list's: a thread is either still
//! listed (and may be handed a child) or has left the list (and ends); it cannot be handed a
//! child after it has decided to end.

use std::sync::{Arc, Condvar, Mutex};

use c2_lock::lock;
use std::time::{Duration, Instant};

/// Reaper threads kept waiting for a next child; one finishing beyond these ends.
pub(crate) const IDLE_REAPERS: usize = 4;

/// How long a reaper thread with no child waits to be handed one before it ends.
pub(crate) const REAPER_LINGER: Duration = Duration::from_secs(10);

/// A reaper thread's stack: it only waits, signals and reaps.
const STACK_BYTES: usize = 64 * 1024;

/// Every reaper thread's name, as `top -H` and /proc show it.
const THREAD_NAME: &str = "c2-reaper";

/// What a reaper thread runs for one child: wait for its death, sweep, reap.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// The reaper threads of this process.
pub(crate) static REAPERS: Pool = Pool::new(IDLE_REAPERS, REAPER_LINGER);

/// Idle threads and the bounds on them.
pub(crate) struct Pool {
    idle: Mutex<Vec<Arc<Slot>>>,
    keep: usize,
    linger: Duration,
}

/// An idle thread's mailbox.
struct Slot {
    job: Mutex<Option<Job>>,
    handed: Condvar,
}

impl Pool {
    pub(crate) const fn new(keep: usize, linger: Duration) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            keep,
            linger,
        }
    }

    /// Runs `job` on an idle thread, or on a new one when none is idle. Fails only when a new
    /// thread was needed and could not be created; `job` has not run then.
    pub(crate) fn run(&'static self, job: Job) -> std::io::Result<()> {
        let mut idle = lock(&self.idle);
        if let Some(slot) = idle.pop() {
            // Handed over while the list is locked: see `next`.
            *lock(&slot.job) = Some(job);
            drop(idle);
            slot.handed.notify_one();
            return Ok(());
        }
        drop(idle);
        std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .stack_size(STACK_BYTES)
            .spawn(move || self.serve(job))
            .map(drop)
    }

    /// Idle threads now; for tests.
    #[cfg(test)]
    pub(crate) fn idle(&self) -> usize {
        lock(&self.idle).len()
    }

    /// A reaper thread's life: its first job, then each one it is handed until none comes.
    fn serve(&self, first: Job) {
        let slot = Arc::new(Slot {
            job: Mutex::new(None),
            handed: Condvar::new(),
        });
        let mut job = first;
        loop {
            job();
            match self.next(&slot) {
                Some(next) => job = next,
                None => return,
            }
        }
    }

    /// Waits, listed as idle, for the next job; `None` when the pool is full or none came.
    fn next(&self, slot: &Arc<Slot>) -> Option<Job> {
        {
            let mut idle = lock(&self.idle);
            if idle.len() >= self.keep {
                return None;
            }
            idle.push(Arc::clone(slot));
        }
        let deadline = Instant::now() + self.linger;
        {
            let mut job = lock(&slot.job);
            loop {
                if let Some(job) = job.take() {
                    return Some(job);
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                job = c2_lock::wait_timeout(&slot.handed, job, left).0;
            }
        }
        // Time is up. Under the list's lock: either a job was handed over before this point
        // (the slot is off the list and holds it), or the slot is still listed and leaves it
        // now, so nothing can be handed to it any more.
        let mut idle = lock(&self.idle);
        if let Some(job) = lock(&slot.job).take() {
            return Some(job);
        }
        idle.retain(|listed| !Arc::ptr_eq(listed, slot));
        None
    }
}
