//! Scoped registries, realms and the live plugin graph.
//!
//! This crate makes a runtime module (a compiled Rust module or the host's adapter for a bundle
//! process) a first-class citizen: a [`Module`] applies into a scope, and everything it registers
//! there (commands, listeners, services, tasks, cleanups, fallback blockers) is gone when that
//! scope is disposed. The [`Kernel`] keeps the live graph equal to the desired state from policy
//! in dependency order, holds one command realm per normalized project (created lazily, reaped
//! when idle and unleased), dispatches commands with the standard's shadowing, fallback and
//! extension-visibility rules, and carries the host-wide JSON bus and the typed internal bus.
//!
//! It deliberately does no IO: no filesystem, no processes, no clock of its own (idle reclamation
//! takes `now`), no policy storage or schema validation (c2-policy), no wire types (c2-protocol).
//! Any host crate may depend on it; it depends on no workspace crate.

#![warn(missing_docs)]

mod error;
mod kernel;
mod model;
mod module;
mod registry;
mod scope;
mod unwind;

pub use error::{Error, FailureSource, RemoteError, TypedFailure};
pub use kernel::Kernel;
pub use model::{
    CatalogEntry, CommandInfo, CommandSpec, DefaultState, DesiredState, Diagnostic, Event,
    KernelOptions, ModuleIntent, ModuleMeta, ModuleState, ProjectKey, Realm, Role, ScopeKind,
    Visibility,
};
pub use module::{BoxFuture, Module, ScopeContext, ServiceValue};
pub use scope::{
    CallContext, CommandHandler, EventStream, Lease, Listener, ScopeHandle, TypedStream,
    command_handler, listener,
};

#[cfg(test)]
mod tests;

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
