//! Smoke tests of every fixture behaviour and mode, against the real binary.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod behaviour;
mod echo;
mod harness;
mod modes;
