use std::fmt;
use std::path::PathBuf;

use crate::deny::{DenyKind, DenyMatch};
use crate::plan::PlanId;

/// Which recorded revision moved between planning and applying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RevisionKind {
    /// The kernel's module graph.
    Graph,
    /// The policy document itself.
    Config,
    /// The project realm the change targets.
    Project,
}

impl fmt::Display for RevisionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Graph => "graph",
            Self::Config => "config",
            Self::Project => "project",
        })
    }
}

/// One place where a configuration value breaks its module's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    /// JSON Pointer into the configuration value; empty for the value itself.
    pub instance_path: String,
    /// What the schema expected there.
    pub message: String,
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.instance_path.is_empty() {
            "(root)"
        } else {
            &self.instance_path
        };
        write!(f, "{path}: {}", self.message)
    }
}

fn list_issues(issues: &[ConfigIssue]) -> String {
    issues
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Everything that can go wrong while planning, applying or storing policy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading, writing, locking or renaming a policy file failed.
    #[error(
        "cannot {action} {path}: {source}; check the plugins directory's permissions and free space"
    )]
    Io {
        /// What the store was doing (`read`, `write`, `lock`, ...).
        action: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The document could not be serialized.
    #[error("cannot encode the policy document: {0}")]
    Encode(#[source] serde_json::Error),
    /// The change names a module the catalog does not have.
    #[error("unknown module `{0}`; list the installed plugins and use one of their ids")]
    UnknownModule(String),
    /// A project-scope change to a module that runs in the user scope only.
    #[error("module `{0}` does not support project scope; change it for the user scope instead")]
    ProjectScopeNotSupported(String),
    /// `Inherit` was asked for the user scope, which has nothing to inherit from.
    #[error(
        "inherit applies to a project only; use `reset <ID>` to return the user entry to the module default"
    )]
    InheritIsProjectOnly,
    /// Trust (or untrust) was asked for a project scope; trust is user-wide.
    #[error("trust is bound to the bundle's content and is user-wide; drop the project")]
    TrustIsUserWide,
    /// Forgetting component choices was asked for one project; it always covers every scope.
    #[error(
        "forgetting component choices covers the user and every project at once; plan it for the user scope"
    )]
    ForgetIsEveryScope,
    /// Trust was asked for a built-in module, which has no content digest.
    #[error("module `{0}` has no bundle content to trust; built-in modules need no trust")]
    NotTrustable(String),
    /// The digest to trust is not the installed content's.
    #[error(
        "digest {given} is not the installed content of `{module}` ({installed}); reinstall or trust the installed digest"
    )]
    DigestMismatch {
        /// The module.
        module: String,
        /// The digest the caller asked to trust.
        given: String,
        /// The digest of the installed content.
        installed: String,
    },
    /// A configuration for a module without a configuration schema.
    #[error("module `{0}` declares no configuration schema, so it takes no configuration")]
    NotConfigurable(String),
    /// The module's configuration schema does not compile.
    #[error(
        "module `{module}` declares an unusable configuration schema: {reason}; report it to the plugin author"
    )]
    InvalidSchema {
        /// The module.
        module: String,
        /// Why the schema cannot be used.
        reason: String,
    },
    /// The configuration breaks the module's schema.
    #[error("configuration for `{module}` breaks its schema ({} issue(s)): {}; fix the value and plan again", issues.len(), list_issues(issues))]
    InvalidConfig {
        /// The module.
        module: String,
        /// Every place the value breaks the schema.
        issues: Vec<ConfigIssue>,
    },
    /// The change would disable an essential module (or one it requires).
    #[error(
        "this change would stop essential module `{essential}`; essential modules keep the management plane working and stay enabled"
    )]
    EssentialProtected {
        /// The essential module that would stop.
        essential: String,
    },
    /// The policy files are unusable and the store refuses changes until a reset.
    #[error("policy is in safe mode")]
    SafeMode,
    /// No outstanding plan has this id.
    #[error(
        "{0} is unknown: it was already used, has expired and been dropped, or was never made; plan the change again"
    )]
    UnknownPlan(PlanId),
    /// The plan's time to live ([`crate::PolicyOptions`]) ran out.
    #[error("{0} has expired; plan the change again")]
    PlanExpired(PlanId),
    /// As many plans as [`crate::PolicyOptions`] allows are outstanding.
    #[error("{limit} plans are already outstanding; apply or let some expire, then plan again")]
    TooManyPlans {
        /// The limit.
        limit: usize,
    },
    /// A revision recorded in the plan moved before it was applied.
    #[error(
        "stale plan: the {kind} revision moved from {planned} to {current}; plan the change again"
    )]
    StalePlan {
        /// Which revision moved.
        kind: RevisionKind,
        /// Its value when the plan was made.
        planned: u64,
        /// Its value now.
        current: u64,
    },
    /// An applied change still awaits confirm or rollback.
    #[error("revision {0} awaits confirm or rollback; finish it before applying another change")]
    CommitPending(u64),
    /// Confirm or rollback of a revision that is not the pending one.
    #[error(
        "no change at revision {0} awaits confirmation; it was already confirmed, rolled back or superseded"
    )]
    NoPendingCommit(u64),
    /// A deny entry whose value cannot match anything.
    #[error(
        "`{value}` cannot be a {kind} entry: a digest entry is at least 12 hex digits of a content digest, other values are not empty"
    )]
    InvalidDenyEntry {
        /// The entry's kind.
        kind: DenyKind,
        /// The value given.
        value: String,
    },
    /// The user's deny list or the managed policy file cannot be used; installs are refused
    /// until it is fixed.
    #[error(
        "the deny list {} cannot be used: {reason}; installs are refused until it is fixed or removed",
        path.display()
    )]
    UnusableList {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The bundle matches a deny entry.
    #[error("{subject} is blocked by {found}; nothing was stored")]
    Denied {
        /// The bundle's name.
        subject: String,
        /// The entry that matched.
        found: Box<DenyMatch>,
    },
    /// The bundle's source is outside a managed allow list.
    #[error(
        "{subject} comes from a source the managed policy does not allow: {why}; nothing was stored"
    )]
    SourceNotAllowed {
        /// The bundle's name.
        subject: String,
        /// Which list refuses it.
        why: String,
    },
    /// An unblock of an entry the managed policy file holds.
    #[error(
        "{entry} is on the managed deny list ({}), which the user cannot change; ask whoever manages it",
        path.display()
    )]
    ManagedEntry {
        /// The entry.
        entry: String,
        /// The managed policy file.
        path: std::path::PathBuf,
    },
    /// An unblock of an entry the user's deny list does not hold.
    #[error("{0} is not on the deny list")]
    NotDenied(String),
    /// Rollback of a reset out of unusable policy: there is no earlier good state.
    #[error(
        "revision {0} came from a reset out of unusable policy, so there is nothing to roll back to"
    )]
    NothingToRollBack(u64),
    /// The bisect state file exists but cannot be used.
    #[error("bisect state {path} is unusable: {reason}")]
    BisectUnusable {
        /// Its path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl Error {
    /// Advice for a person, in a command line's terms, kept out of the message so an embedder
    /// can show its own. A command line prints it after the message.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::SafeMode => Some("run `c2-plugins reset` to leave it"),
            Error::NothingToRollBack(_) => Some("run `c2-plugins reset` again if needed"),
            Error::Denied { .. } => Some(
                "`c2-plugins block --list` shows the deny lists; `c2-plugins unblock KIND VALUE` removes a user entry",
            ),
            Error::NotDenied(_) => Some("`c2-plugins block --list` shows the deny lists"),
            Error::UnusableList { .. } => {
                Some("fix the file's JSON, or remove it and block again with `c2-plugins block`")
            }
            Error::BisectUnusable { .. } => {
                Some("restore the bundles by hand, then delete the file to end the bisect")
            }
            _ => None,
        }
    }
}
