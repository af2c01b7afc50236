//! Real processes, Linux. Every spawning test holds `support::shared()`; the one test that counts
//! this process's file descriptors and children holds `support::exclusive()`, so nothing else
//! runs beside it.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod escape;
mod lifecycle;
mod one_shot;
mod shim;
mod stress;
mod support;
mod usage;
