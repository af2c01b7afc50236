//! The only crate that spawns and signals processes. A plugin runtime or a language server (a
//! [`ProcessSpec`] whose `cwd` is the project root) starts here under a supervisor shim that
//! holds its whole process tree; a one-shot host command such as `git` ([`run`]) starts as the
//! leader of its own process group. Either way the child has stdin, stdout and stderr
//! piped. stderr is always drained into `tracing` under the owner's label, so a chatty child never
//! blocks, and its last lines are kept for error messages; the owner gets stdin and stdout to
//! speak its protocol over. It also resolves a manifest's `runtime.command`
//! ([`resolve_command`]), because that rule decides what gets executed.
//!
//! It also measures what it runs: [`Process::usage`] reads the tree's memory, CPU time and
//! descriptors from /proc, and a [`CallMeter`] counts the calls an owner makes to a process and
//! their latency in fixed memory; [`Vitals`] keeps a slot's starts, crashes and last failure
//! beside them and gives a [`Health`] snapshot.
//!
//! It deliberately knows nothing of the plugin protocol, manifests or policy: it runs a spec and
//! reports how the process ended. The host, the kernel's runtime adapters and language-server
//! management may depend on it; nothing it depends on spawns processes.
//!
//! # The kill guarantee
//!
//! A long-lived child ([`spawn`]) runs under a supervisor shim ([`shim`], the default
//! [`Containment::Shim`]): the host's direct child is the shim, a child subreaper with a
//! parent-death signal, and the program is the shim's child in the shim's process group.
//!
//! - Nothing the program starts outlives it, its stop or the host: when the program exits, when
//!   [`Process::stop`] ends it, when its [`Process`] is dropped, or when the host dies (even by
//!   SIGKILL), the shim SIGKILLs the program's whole tree, whatever it did with process groups,
//!   sessions, double forks or stdin, and then exits.
//! - [`Process::stop`] closes stdin, sends SIGTERM to the group and to the leader itself (the
//!   shim forwards it to a program that left the group), waits the grace period (1 s by
//!   default), has the tree killed, and returns once the direct child is reaped. Every wait is
//!   bounded (`kill_wait`); a child that still cannot be reaped is reported
//!   [`Exit::Unknown`] with a warning instead of hanging the caller.
//! - The exit of the program is seen as soon as it happens, even when a descendant keeps its
//!   stdout open: the shim exits right after it, and [`Process::exit_watch`] fires.
//! - No signal is sent to a pid that is not pinned: the host signals only its unreaped direct
//!   child (and the group that child leads); the shim signals only its own unreaped children,
//!   level by level (the reasoning is in `process.rs` and `shim.rs`).
//!
//! A long-lived host keeps one shim started ahead (`SupervisorOptions::warm_shim`), so an
//! activation does not wait for the shim's own start; [`release_warm_shim`] drops it.
//!
//! Limits, stated plainly: a descendant that kills the shim itself (any process of the same
//! user can) leaves the rest of the tree with only the host's group sweep, as without a shim; a
//! process in uninterruptible sleep cannot be reaped within the bound. With
//! [`Containment::Group`] (for embedders that cannot ship the shim) only the group is
//! signalled: a descendant that leaves the group escapes, and after a host SIGKILL only stdin
//! EOF reaches the program. One-shot commands ([`run`]) are group-only: they are the host's own
//! tools with a deadline. Linux only: the crate relies on `waitid(WNOWAIT)`, process groups,
//! `PR_SET_CHILD_SUBREAPER` and `PR_SET_PDEATHSIG`; Windows (job objects) is out of scope and
//! nothing here pretends otherwise.

#![warn(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!(
    "c2-supervisor supports Linux only: it relies on waitid(WNOWAIT) and process groups"
);

mod error;
mod process;
mod reaper;
mod resolve;
mod run;
pub mod shim;
mod spec;
mod stderr;
mod usage;
mod vitals;
mod warm;

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests;

pub use error::{CommandProblem, Error};
pub use process::{Exit, ExitReport, Process, ProcessStdin, Spawned, spawn};
pub use resolve::resolve_command;
pub use run::{Output, run};
pub use spec::{Containment, ProcessSpec, RunOptions, SupervisorOptions};
pub use usage::{CallMeter, CallStats, MAX_TREE_PROCESSES, Usage};
pub use vitals::{Failure, Health, HealthState, Vitals};
pub use warm::release as release_warm_shim;

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
