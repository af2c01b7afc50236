//! The crate's one error type.

use std::path::PathBuf;

/// Everything a host operation can fail with. [`HostError::kind`] is the stable snake_case
/// name a command line or a frontend shows and matches on (docs/cli.md).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A project path that cannot be normalized.
    #[error("{}: not a usable project directory: {reason}", path.display())]
    Project {
        /// The path as given.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The bundle failed validation; nothing was stored.
    #[error(
        "the bundle is invalid ({errors} error(s)); nothing was stored: fix the problems `c2-plugins validate` shows"
    )]
    InvalidBundle {
        /// The number of error diagnostics.
        errors: usize,
        /// Every diagnostic, errors and warnings.
        diagnostics: Vec<c2_bundle_collector::Diagnostic>,
    },
    /// No installed bundle has this id.
    #[error("no installed bundle has the id `{id}`: `c2-plugins list` shows the installed ids")]
    NotInstalled {
        /// The id asked for.
        id: String,
    },
    /// A source the host cannot install from.
    #[error("{0}")]
    UnsupportedSource(String),
    /// Fetching a git source failed.
    #[error("git: {0}")]
    Git(String),
    /// A command or activation failed; `kind` says how (e.g. `handshake_timeout`).
    #[error("{message}")]
    Command {
        /// A stable snake_case kind.
        kind: String,
        /// What happened, for a person.
        message: String,
    },
    /// Policy is unusable and the host runs only essential modules.
    #[error(
        "the host is in safe mode because the policy files are unusable: run `c2-plugins reset` to recover"
    )]
    SafeMode,
    /// A plan file that cannot be used.
    #[error("{0}")]
    PlanFile(String),
    /// The bundle store failed.
    #[error(transparent)]
    Store(#[from] c2_bundle_collector::Error),
    /// The policy store refused or failed.
    #[error(transparent)]
    Policy(#[from] c2_policy::Error),
    /// A filesystem operation of the host's own failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What the host was doing.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl HostError {
    /// The stable snake_case kind of this error.
    pub fn kind(&self) -> &str {
        match self {
            HostError::Project { .. } => "invalid_project",
            HostError::InvalidBundle { .. } => "invalid_bundle",
            HostError::NotInstalled { .. } => "not_installed",
            HostError::UnsupportedSource(_) => "unsupported_source",
            HostError::Git(_) => "git_failed",
            HostError::Command { kind, .. } => kind,
            HostError::SafeMode => "safe_mode",
            HostError::PlanFile(_) => "invalid_plan",
            HostError::Store(_) => "store_failed",
            HostError::Policy(error) => match error {
                c2_policy::Error::StalePlan { .. } => "stale_plan",
                c2_policy::Error::SafeMode => "safe_mode",
                _ => "policy_refused",
            },
            HostError::Io { .. } => "io",
        }
    }

    /// Whether the failure is the environment's (unreadable store, corrupt files, bad paths)
    /// rather than the operation's own; a command line exits 2 for these.
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            HostError::Project { .. } | HostError::Io { .. } | HostError::Store(_)
        )
    }

    pub(crate) fn command(kind: &str, message: impl Into<String>) -> Self {
        HostError::Command {
            kind: kind.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| HostError::Io {
            action,
            path,
            source,
        }
    }
}

impl From<c2_kernel::Error> for HostError {
    fn from(error: c2_kernel::Error) -> Self {
        let kind = match &error {
            c2_kernel::Error::UnknownCommand { .. } => "unknown_command",
            c2_kernel::Error::NotExtensionPublic { .. } => "not_extension_public",
            c2_kernel::Error::FallbackBlocked { .. } => "blocked",
            c2_kernel::Error::Essential { .. } => "essential",
            c2_kernel::Error::ShutDown => "shut_down",
            other => other.kind().unwrap_or("command_failed"),
        };
        HostError::command(kind, error.to_string())
    }
}
