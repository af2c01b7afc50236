//! Smoke tests of every fixture behaviour and mode, against the real binary.

mod behaviour;
mod echo;
mod harness;
mod modes;
