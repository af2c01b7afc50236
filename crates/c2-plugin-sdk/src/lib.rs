//! c2-plugin-sdk is how a C2 plugin runtime is written in Rust: bind one typed async handler to
//! each command the bundle's `plugin.json` declares, subscribe to host events, and
//! [`Plugin::run`]. The SDK answers `initialize` with exactly the manifest's command ids and
//! `argsSchema`s (confirmation cannot drift), refuses to start when handlers and declarations
//! differ, validates every invocation's args against the command's schema before the handler
//! runs, correlates `command/call`s to the host, forwards `tracing` events as `log`
//! notifications, keeps stdout for the protocol (a stray `println!` goes to stderr) and exits
//! when stdin closes.
//!
//! It deliberately does not spawn or supervise processes, read any file but `plugin.json`, or
//! define wire types: those come from c2-protocol, manifest rules from c2-manifest, and it
//! depends on no other c2 crate. Plugin crates (packs/hello-rust) and the test kit depend on it;
//! the host never does.

mod context;
mod error;
mod log;
mod options;
mod plugin;
mod serve;
mod stdio;

#[cfg(test)]
mod tests;

pub use c2_protocol::{CallError, ErrorObject, InitializeParams, codes};
pub use context::Context;
pub use error::{CommandError, Error};
pub use log::{LogHandle, LogLayer};
pub use options::RunOptions;
pub use plugin::{MANIFEST_FILE, Plugin};

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
