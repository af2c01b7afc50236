//! Smoke tests of every fixture behaviour and mode, against the real binary.

mod behaviour;
mod harness;
mod modes;
