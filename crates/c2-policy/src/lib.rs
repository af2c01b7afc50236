//! Durable plugin policy: the user's intent (enable, disable, inherit, trust, configuration and
//! component overrides, for the user and for each project), changed only through revision-bound,
//! single-use plans, promoted to last-known-good only when the host confirms the runtime got
//! there, and recovered from corruption by falling back to last-known-good or to safe mode.
//! It owns `policy.json`, `policy.last-good.json` and `policy.lock` in the plugins directory
//! (atomic, owner-only writes serialized across processes), `policy.bisect.json` (the state of
//! a bisect over policy, whose search is a pure state machine here: [`Bisection`]), and
//! `store.generation`, the
//! counter every committed change bumps, which [`StoreWatch`] watches so that every host on one
//! plugins directory sees a change made by any other within a second. It also owns the kill
//! switch: the user's deny list (`denylist.json`), the managed policy file an embedder names
//! (deny entries the user cannot remove, allow lists of sources) and the matching of a bundle
//! against them ([`DenyLists`]); the host gates installs and runnability on it. It deliberately knows nothing of
//! processes, the kernel or the wire: the host passes in the catalog and runtime revisions and
//! acts on the impact and desired state it gets back. Only c2-host (and the CLI through it)
//! depends on it.

#![warn(missing_docs)]

mod bisect;
mod catalog;
mod deny;
mod document;
mod error;
mod fsio;
mod plan;
mod store;
mod watch;

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests;

pub use bisect::{
    BISECT_FILE, BisectFile, BisectRecord, Bisection, Outcome, Restore, Step, Verdict,
};
pub use catalog::{Catalog, CatalogModule};
pub use deny::{
    AllowLists, DENY_FILE, DenyEntry, DenyKind, DenyLists, DenyMatch, ListOrigin, ManagedPolicy,
    SourceRef, Subject, git_host, source_matches,
};
pub use document::{
    ComponentSwitch, DesiredState, PluginPolicy, PolicyDocument, SCHEMA_VERSION, Scope, Switch,
};
pub use error::{ConfigIssue, Error, RevisionKind};
pub use plan::{Change, ChangeKind, Impact, Plan, PlanId, RecordedRevisions, Revisions};
pub use store::{
    Diagnostic, LAST_GOOD_FILE, LOCK_FILE, LoadSource, PRIMARY_FILE, PendingCommit, PolicyOptions,
    PolicyStore,
};

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
pub use watch::{
    GENERATION_FILE, StoreWatch, WatchMode, WatchOptions, bump_generation, read_generation,
};
