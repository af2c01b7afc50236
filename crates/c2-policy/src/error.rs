use std::fmt;
use std::path::PathBuf;

use crate::plan::PlanId;

/// Which recorded revision moved between planning and applying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
pub enum Error {
    #[error(
        "cannot {action} {path}: {source}; check the plugins directory's permissions and free space"
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode the policy document: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("unknown module `{0}`; list the installed plugins and use one of their ids")]
    UnknownModule(String),
    #[error("module `{0}` does not support project scope; change it for the user scope instead")]
    ProjectScopeNotSupported(String),
    #[error(
        "inherit applies to a project only; use `reset <ID>` to return the user entry to the module default"
    )]
    InheritIsProjectOnly,
    #[error("trust is bound to the bundle's content and is user-wide; drop the project")]
    TrustIsUserWide,
    #[error("module `{0}` has no bundle content to trust; built-in modules need no trust")]
    NotTrustable(String),
    #[error(
        "digest {given} is not the installed content of `{module}` ({installed}); reinstall or trust the installed digest"
    )]
    DigestMismatch {
        module: String,
        given: String,
        installed: String,
    },
    #[error("module `{0}` declares no configuration schema, so it takes no configuration")]
    NotConfigurable(String),
    #[error(
        "module `{module}` declares an unusable configuration schema: {reason}; report it to the plugin author"
    )]
    InvalidSchema { module: String, reason: String },
    #[error("configuration for `{module}` breaks its schema ({} issue(s)): {}; fix the value and plan again", issues.len(), list_issues(issues))]
    InvalidConfig {
        module: String,
        issues: Vec<ConfigIssue>,
    },
    #[error(
        "this change would stop essential module `{essential}`; essential modules keep the management plane working and stay enabled"
    )]
    EssentialProtected { essential: String },
    #[error("policy is in safe mode; run `c2-plugins reset` to leave it")]
    SafeMode,
    #[error(
        "{0} is unknown: it was already used, has expired and been dropped, or was never made; plan the change again"
    )]
    UnknownPlan(PlanId),
    #[error("{0} has expired; plan the change again")]
    PlanExpired(PlanId),
    #[error("{limit} plans are already outstanding; apply or let some expire, then plan again")]
    TooManyPlans { limit: usize },
    #[error(
        "stale plan: the {kind} revision moved from {planned} to {current}; plan the change again"
    )]
    StalePlan {
        kind: RevisionKind,
        planned: u64,
        current: u64,
    },
    #[error("revision {0} awaits confirm or rollback; finish it before applying another change")]
    CommitPending(u64),
    #[error(
        "no change at revision {0} awaits confirmation; it was already confirmed, rolled back or superseded"
    )]
    NoPendingCommit(u64),
    #[error(
        "revision {0} came from a reset out of unusable policy, so there is nothing to roll back to; run `c2-plugins reset` again if needed"
    )]
    NothingToRollBack(u64),
}
