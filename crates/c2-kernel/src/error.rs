//! The crate's one error type.

/// Everything that can go wrong in the kernel: dispatch, registration, lifecycle.
///
/// Dispatch errors carry the JSON-RPC code from decisions.md through [`Error::code`], so the host
/// can put them on the wire without a second mapping table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No command of that name is visible in the realm.
    #[error("unknown command `{name}`: list the realm's commands to see what is registered")]
    UnknownCommand {
        /// The requested command name.
        name: String,
    },
    /// The command exists but its owner did not publish it for extensions.
    #[error(
        "command `{name}` is not extension-public: only commands their owner published can be called from a plugin"
    )]
    NotExtensionPublic {
        /// The requested command name.
        name: String,
    },
    /// The project realm blocks falling back to the global command of this plugin.
    #[error(
        "command `{name}` is blocked in project `{project}`: enable its plugin for this project to reach it"
    )]
    FallbackBlocked {
        /// The requested command name.
        name: String,
        /// The project realm that blocks the fallback.
        project: String,
    },
    /// The handler ran and reported a failure (or panicked).
    #[error("{name}: {message}")]
    CommandFailed {
        /// The command that failed.
        name: String,
        /// What the handler said.
        message: String,
        /// The machine-readable kind, when the handler reported an [`Error::Failure`].
        kind: Option<String>,
        /// The remote JSON-RPC error the handler's [`Error::Failure`] carried, if any.
        remote: Option<RemoteError>,
    },
    /// A handler failure with a machine-readable kind (e.g. `handshake_timeout`) that callers
    /// such as a command line map to their own error kinds. Dispatch keeps the kind in
    /// [`Error::CommandFailed`].
    #[error("{message}")]
    Failure {
        /// A stable snake_case kind.
        kind: String,
        /// What happened, for a person.
        message: String,
        /// The JSON-RPC error a remote handler (a plugin process) answered with, kept as it
        /// sent it.
        remote: Option<RemoteError>,
    },
    /// A module, handler or cleanup reported a failure in its own words.
    #[error("{0}")]
    Module(String),
    /// A panic was caught and contained.
    #[error("{what} panicked: {message}")]
    Panicked {
        /// Which piece of module code panicked (apply, cleanup, listener, handler).
        what: String,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// A second owner tried to register a command name already taken in the realm.
    #[error(
        "command `{name}` is already registered in realm {realm} by `{owner}`: pick another name or disable that module"
    )]
    DuplicateCommand {
        /// The contested name.
        name: String,
        /// The realm, rendered.
        realm: String,
        /// The module that owns the existing registration.
        owner: String,
    },
    /// A second scope tried to provide a service that already has a provider.
    #[error(
        "service `{name}` is already provided by `{owner}`: a service has exactly one provider, disable one of them"
    )]
    DuplicateService {
        /// The contested service name.
        name: String,
        /// The module that provides it now.
        owner: String,
    },
    /// Work started for a scope generation that has since been disposed or reloaded.
    #[error(
        "scope of `{module}` (generation {generation}) is no longer live: it was reloaded or unloaded, start again from the current one"
    )]
    StaleScope {
        /// The module that owned the scope.
        module: String,
        /// The generation the caller held.
        generation: u64,
    },
    /// An essential module cannot be disabled or removed.
    #[error(
        "module `{name}` is essential and cannot be disabled or removed: use reset to recover it"
    )]
    Essential {
        /// The essential module.
        name: String,
    },
    /// A module name that no factory provides.
    #[error("no module named `{name}` is registered: check the catalog for the available names")]
    UnknownModule {
        /// The requested module name.
        name: String,
    },
    /// A project realm was unloaded ([`crate::Kernel::unload_project`]) while a call was
    /// waiting for it; the call is not answered from another realm instead.
    #[error(
        "project realm `{project}` was unloaded while this call waited for it: call again to recreate it"
    )]
    ProjectUnloaded {
        /// The project realm, rendered.
        project: String,
    },
    /// The kernel has been shut down.
    #[error("the plugin kernel is shut down: start a new host")]
    ShutDown,
}

impl Error {
    /// A module or handler failure with a free-form message.
    pub fn module(message: impl Into<String>) -> Self {
        Error::Module(message.into())
    }

    /// A handler failure with a stable snake_case kind.
    pub fn failure(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Failure {
            kind: kind.into(),
            message: message.into(),
            remote: None,
        }
    }

    /// A handler failure that relays the JSON-RPC error a remote handler answered with.
    pub fn remote_failure(
        kind: impl Into<String>,
        message: impl Into<String>,
        remote: RemoteError,
    ) -> Self {
        Error::Failure {
            kind: kind.into(),
            message: message.into(),
            remote: Some(remote),
        }
    }

    /// The remote JSON-RPC error a handler failure carries, if it relayed one.
    pub fn remote(&self) -> Option<&RemoteError> {
        match self {
            Error::Failure { remote, .. } | Error::CommandFailed { remote, .. } => remote.as_ref(),
            _ => None,
        }
    }

    /// The machine-readable kind of a handler failure, if it reported one.
    pub fn kind(&self) -> Option<&str> {
        match self {
            Error::Failure { kind, .. } => Some(kind),
            Error::CommandFailed { kind, .. } => kind.as_deref(),
            _ => None,
        }
    }

    /// The JSON-RPC error code decisions.md assigns to this error.
    pub fn code(&self) -> i64 {
        match self {
            Error::UnknownCommand { .. } => -32001,
            Error::NotExtensionPublic { .. } | Error::FallbackBlocked { .. } => -32002,
            _ => -32000,
        }
    }
}

/// The JSON-RPC error object's `code` and `data` a remote handler answered with (its message
/// is the failure's message).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The error's `data`, when there was one.
    pub data: Option<serde_json::Value>,
}

impl RemoteError {
    /// A remote error with this code and data.
    pub fn new(code: i64, data: Option<serde_json::Value>) -> Self {
        Self { code, data }
    }
}
