//! The only crate that spawns and signals processes. A plugin runtime, a language server (a
//! [`ProcessSpec`] whose `cwd` is the project root) or a one-shot host command such as `git`
//! ([`run`]) starts here as the leader of its own process group, with stdin, stdout and stderr
//! piped. stderr is always drained into `tracing` under the owner's label, so a chatty child never
//! blocks, and its last lines are kept for error messages; the owner gets stdin and stdout to
//! speak its protocol over. It also resolves a manifest's `runtime.command`
//! ([`resolve_command`]), because that rule decides what gets executed.
//!
//! It deliberately knows nothing of the plugin protocol, manifests or policy: it runs a spec and
//! reports how the process ended. The host, the kernel's runtime adapters and language-server
//! management may depend on it; nothing it depends on spawns processes.
//!
//! # The kill guarantee
//!
//! - [`Process::stop`] closes stdin, sends SIGTERM to the group, waits the grace period (1 s by
//!   default), sends SIGKILL to the group, and returns once the direct child is reaped.
//! - The group never outlives its leader: when the leader dies, on its own or by a signal, the
//!   rest of its group is SIGKILLed before the leader is reaped.
//! - Dropping a [`Process`] that was not stopped SIGKILLs the group synchronously, without a
//!   runtime; a dedicated thread reaps the child, so no zombie is left.
//! - No signal is sent after the leader is reaped: until then the unreaped leader pins its pid,
//!   so the group id cannot belong to anyone else (the reasoning is in `process.rs`).
//!
//! Limits, stated plainly: a descendant that calls `setsid` (or moves to another group) has left
//! the group and no group signal reaches it. What the host does about it is close the stdin it
//! inherited, so a well-behaved process (one that exits on stdin EOF, as the SDK does) goes; a
//! process that ignores that outlives the plugin. Such a descendant may also keep the stderr pipe
//! open, which keeps the draining task alive until it exits. Linux only: the crate relies on
//! `waitid(WNOWAIT)` and process groups; Windows (job objects) is out of scope and nothing here
//! pretends otherwise.

#[cfg(not(target_os = "linux"))]
compile_error!(
    "c2-supervisor supports Linux only: it relies on waitid(WNOWAIT) and process groups"
);

mod error;
mod process;
mod resolve;
mod run;
pub mod shim;
mod spec;
mod stderr;

#[cfg(test)]
mod tests;

pub use error::{CommandProblem, Error};
pub use process::{Exit, ExitReport, Process, ProcessStdin, Spawned, spawn};
pub use resolve::resolve_command;
pub use run::{Output, run};
pub use spec::{Containment, ProcessSpec, RunOptions, SupervisorOptions};
