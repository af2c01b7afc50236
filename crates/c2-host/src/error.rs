//! The crate's one error type, and the kinds a caller matches on.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

/// Declares [`ErrorKind`] with its stable snake_case names in one table, so the enum, its
/// serialization and its parser can never disagree.
macro_rules! error_kinds {
    ($($(#[doc = $doc:literal])+ $variant:ident => $name:literal,)+) => {
        /// What went wrong, as a value to match on. Serialized (and [`ErrorKind::as_str`]) as
        /// the stable snake_case name a command line prints in JSON and a relay puts in
        /// `data.kind` (docs/cli.md). New kinds may be added in minor releases.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl ErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant,)+];

            /// The stable snake_case name (`not_trusted`, `handshake_timeout`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKind::$variant => $name,)+
                }
            }

            /// The kind with this snake_case name, if there is one: how [`ErrorKind`]'s
            /// `Deserialize` reads input. A failure's kind is never read back from text: it
            /// crosses the kernel as a typed [`HostError`].
            pub(crate) fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(ErrorKind::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

error_kinds! {
    /// A project path that cannot be normalized.
    InvalidProject => "invalid_project",
    /// A bundle failed validation; nothing was stored.
    InvalidBundle => "invalid_bundle",
    /// No installed bundle has the id.
    NotInstalled => "not_installed",
    /// A source the host cannot install from.
    UnsupportedSource => "unsupported_source",
    /// A source that could make git or the store do something else than fetch a bundle.
    UnsafeSource => "unsafe_source",
    /// Fetching a git source, or running `git`, failed.
    GitFailed => "git_failed",
    /// `git.status` was asked about a directory outside a git working tree.
    NotAWorkingTree => "not_a_working_tree",
    /// The policy files are unusable; only essential modules run.
    SafeMode => "safe_mode",
    /// A plan file that cannot be used.
    InvalidPlan => "invalid_plan",
    /// A plan made against revisions another process has since changed.
    StalePlan => "stale_plan",
    /// The policy store refused the change.
    PolicyRefused => "policy_refused",
    /// The bundle store failed.
    StoreFailed => "store_failed",
    /// An installed bundle no longer validates; reinstall or uninstall it.
    CorruptStore => "corrupt_store",
    /// A filesystem operation of the host's own failed.
    Io => "io",
    /// `PluginHost::open` was called outside a tokio runtime, with no runtime handle given.
    NoRuntime => "no_runtime",
    /// A contribution was called on a host opened without it (`PluginHost::open_with`).
    NotWired => "not_wired",
    /// No command of that name is visible in the realm.
    UnknownCommand => "unknown_command",
    /// The command exists but is not published for extensions.
    NotExtensionPublic => "not_extension_public",
    /// The project realm blocks falling back to the global command.
    Blocked => "blocked",
    /// A deny entry matches the bundle; nothing was stored.
    Denied => "denied",
    /// The bundle's source is outside a managed allow list; nothing was stored.
    SourceNotAllowed => "source_not_allowed",
    /// An essential module cannot be disabled or removed.
    Essential => "essential",
    /// The host (its kernel) has been shut down.
    ShutDown => "shut_down",
    /// The bundle ships a process runtime and is not trusted.
    NotTrusted => "not_trusted",
    /// The bundle's files changed since they were trusted.
    ContentChanged => "content_changed",
    /// The bundle is disabled in this scope (or pending, or not project-capable there).
    Disabled => "disabled",
    /// The bundle waits for services it injects.
    Pending => "pending",
    /// A runtime, module or language server could not be activated.
    ActivationFailed => "activation_failed",
    /// The runtime did not reach the requested state; policy and runtime were rolled back.
    ApplyFailed => "apply_failed",
    /// The command ran and failed (a plugin's own JSON-RPC error is kept, see
    /// [`HostError::plugin_error`]).
    CommandFailed => "command_failed",
    /// The arguments were refused before anything ran.
    InvalidArgs => "invalid_args",
    /// A contribution asked for a command of another bundle.
    NotOwned => "not_owned",
    /// The bundle declares no such UI descriptor.
    UnknownUi => "unknown_ui",
    /// No rendered `host.actions` action has that id (render the slot again).
    UnknownAction => "unknown_action",
    /// A `host.actions` render returned an invalid document.
    InvalidHostActions => "invalid_host_actions",
    /// The bundle declares no such connector.
    UnknownConnector => "unknown_connector",
    /// A connector operation outside the connector's declared capabilities.
    OperationNotAllowed => "operation_not_allowed",
    /// Something the host does not support here (a provider, a transport, a language).
    Unsupported => "unsupported",
    /// The bundle has no MCP server of that name enabled here.
    UnknownMcpServer => "unknown_mcp_server",
    /// A remote MCP server: a session connects to it, there is no process to run.
    RemoteMcpServer => "remote_mcp_server",
    /// An MCP server that cannot run here (skipped, disabled, unsupported transport).
    McpServerUnusable => "mcp_server_unusable",
    /// A process the host was asked to start did not start.
    SpawnFailed => "spawn_failed",
    /// More than one active plugin provides the language.
    LanguageConflict => "language_conflict",
    /// The runtime did not answer `initialize` in time.
    HandshakeTimeout => "handshake_timeout",
    /// The runtime answered `initialize` with another protocol version.
    ProtocolMismatch => "protocol_mismatch",
    /// The runtime confirmed other commands or schemas than its manifest declares.
    CommandSetMismatch => "command_set_mismatch",
    /// The runtime process ended before answering.
    ProcessExited => "process_exited",
    /// The runtime crashed too often within the crash window and stays failed.
    CrashLoop => "crash_loop",
    /// No answer within the host's invoke deadline; the process was stopped.
    DeadlineExceeded => "deadline_exceeded",
    /// The call was cancelled because the process was stopped.
    Cancelled => "cancelled",
    /// The runtime was unloaded from the realm.
    Unloaded => "unloaded",
    /// Too many calls in flight to the runtime.
    HostBusy => "host_busy",
    /// A result over the host's value-tree bound.
    ResultTooLarge => "result_too_large",
    /// The runtime sent a frame over the frame limit.
    FrameTooLarge => "frame_too_large",
    /// The runtime did not read what the host wrote to it.
    OutboundOverflow => "outbound_overflow",
    /// A module of that name is already registered with that revision.
    AlreadyRegistered => "already_registered",
    /// A built-in or essential module cannot be replaced.
    ProtectedModule => "protected_module",
    /// A module registers a command another module owns in the realm.
    DuplicateCommand => "duplicate_command",
    /// A project or user choice names a component kind the host has no surface for.
    InvalidComponent => "invalid_component",
    /// The installed bundle has no component with that kind and local id.
    UnknownComponent => "unknown_component",
    /// A per-project choice for a bundle whose runtime runs once for the user.
    ProjectScopeNotSupported => "project_scope_not_supported",
    /// Several configured catalogs list the name; choose one with `--marketplace`.
    AmbiguousEntry => "ambiguous_entry",
    /// The fetched bundle's name or version is not the catalog entry's.
    CatalogMismatch => "catalog_mismatch",
    /// A pinned commit is not the commit checked out.
    CommitMismatch => "commit_mismatch",
    /// An archive's SHA-256 is not the one the catalog declares.
    DigestMismatch => "digest_mismatch",
    /// A catalog with that name or location is already configured.
    DuplicateMarketplace => "duplicate_marketplace",
    /// No catalog lists the name.
    EntryNotFound => "entry_not_found",
    /// The catalog lists the entry as not available (its reason is in the message).
    EntryNotAvailable => "entry_not_available",
    /// Downloading an archive failed.
    FetchFailed => "fetch_failed",
    /// The catalog cannot be read or is not a valid `marketplace.json`.
    InvalidCatalog => "invalid_catalog",
    /// The store's list of configured catalogs is unreadable.
    InvalidMarketplaces => "invalid_marketplaces",
    /// No catalog was given and none is configured.
    NoMarketplace => "no_marketplace",
    /// The bundle was not installed from a catalog, so it has nothing to update from.
    NotFromCatalog => "not_from_catalog",
    /// `npm pack` failed or left no tarball.
    NpmFailed => "npm_failed",
    /// An npm tarball's sha512 integrity is not the recorded or reported one.
    IntegrityMismatch => "integrity_mismatch",
    /// A lock file that cannot be read (another `lockVersion`, an unknown field, too large).
    InvalidLock => "invalid_lock",
    /// The configured list of catalogs is full (`HubOptions::max_marketplaces`).
    TooManyMarketplaces => "too_many_marketplaces",
    /// No configured catalog has that name.
    UnknownMarketplace => "unknown_marketplace",
    /// The catalog lists the entry, but not at the version asked for.
    VersionNotFound => "version_not_found",
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ErrorKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        ErrorKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown error kind `{name}`")))
    }
}

impl PartialEq<str> for ErrorKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The JSON-RPC error a plugin answered a call with, kept as it sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginError {
    /// The plugin's JSON-RPC error `code`.
    pub code: i64,
    /// The plugin's error `data`, when it sent one (and its tree is within the host's
    /// `max_value_tree_bytes`).
    pub data: Option<Value>,
}

impl From<&c2_kernel::RemoteError> for PluginError {
    fn from(remote: &c2_kernel::RemoteError) -> Self {
        Self {
            code: remote.code,
            data: remote.data.clone(),
        }
    }
}

/// Everything a host operation can fail with. [`HostError::kind`] is the [`ErrorKind`] to
/// match on; its `as_str()` is the stable snake_case name a command line or a frontend shows
/// (docs/cli.md). The message ([`Display`](fmt::Display)) says what is wrong for a person, in
/// the library's terms; [`HostError::hint`] is the separate advice a command line shows.
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
    #[error("the bundle is invalid ({errors} error(s)); nothing was stored")]
    InvalidBundle {
        /// The number of error diagnostics.
        errors: usize,
        /// Every diagnostic, errors and warnings.
        diagnostics: Vec<c2_bundle_collector::Diagnostic>,
    },
    /// No installed bundle has this id.
    #[error("no installed bundle has the id `{id}`")]
    NotInstalled {
        /// The id asked for.
        id: String,
    },
    /// A command, activation or check failed; `kind` says how (e.g.
    /// [`ErrorKind::HandshakeTimeout`]).
    #[error("{message}")]
    Command {
        /// What kind of failure.
        kind: ErrorKind,
        /// What happened, for a person.
        message: String,
        /// Advice for the person, in a command line's terms (see [`HostError::hint`]).
        hint: Option<String>,
        /// The same advice, structured (see [`HostError::next_action`]).
        next: Option<Box<NextAction>>,
        /// The plugin's own JSON-RPC error, when a plugin answered with one.
        plugin: Option<PluginError>,
        /// The error this one was made from (a kernel dispatch error, for example).
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Policy is unusable and the host runs only essential modules.
    #[error("the host is in safe mode because the policy files are unusable")]
    SafeMode,
    /// A plan file that cannot be used.
    #[error("{0}")]
    PlanFile(String),
    /// A source, fetch or catalog failure of c2-sources, kept typed; its kind is mapped from
    /// the source error's own ([`c2_sources::SourceError::kind`]).
    #[error("{error}")]
    Source {
        /// The source error.
        #[source]
        error: c2_sources::SourceError,
        /// Its advice ([`c2_sources::SourceError::hint`]), see [`HostError::hint`].
        hint: Option<String>,
    },
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
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            HostError::Project { .. } => ErrorKind::InvalidProject,
            HostError::InvalidBundle { .. } => ErrorKind::InvalidBundle,
            HostError::NotInstalled { .. } => ErrorKind::NotInstalled,
            HostError::Command { kind, .. } => *kind,
            HostError::Source { error, .. } => source_kind(error.kind()),
            HostError::SafeMode => ErrorKind::SafeMode,
            HostError::PlanFile(_) => ErrorKind::InvalidPlan,
            HostError::Store(_) => ErrorKind::StoreFailed,
            HostError::Policy(error) => match error {
                c2_policy::Error::StalePlan { .. } => ErrorKind::StalePlan,
                c2_policy::Error::SafeMode => ErrorKind::SafeMode,
                c2_policy::Error::Denied { .. } => ErrorKind::Denied,
                c2_policy::Error::SourceNotAllowed { .. } => ErrorKind::SourceNotAllowed,
                // The bundle went away under the change (another process uninstalled it).
                c2_policy::Error::UnknownModule(_) => ErrorKind::NotInstalled,
                c2_policy::Error::ProjectScopeNotSupported(_) => {
                    ErrorKind::ProjectScopeNotSupported
                }
                _ => ErrorKind::PolicyRefused,
            },
            HostError::Io { .. } => ErrorKind::Io,
        }
    }

    /// Advice for a person, in a command line's terms (``run `c2-plugins trust ID` ``), kept out
    /// of the message so an embedder can show its own. A command line prints it after the
    /// message.
    pub fn hint(&self) -> Option<&str> {
        match self {
            HostError::InvalidBundle { .. } => Some("fix the problems `c2-plugins validate` shows"),
            HostError::NotInstalled { .. } => Some("`c2-plugins list` shows the installed ids"),
            HostError::SafeMode => Some("run `c2-plugins reset` to recover"),
            HostError::Command { hint, .. } | HostError::Source { hint, .. } => hint.as_deref(),
            HostError::Policy(policy) => policy.hint(),
            _ => None,
        }
    }

    /// The hint's advice as an action a frontend can offer, when it has that form.
    pub fn next_action(&self) -> Option<&NextAction> {
        match self {
            HostError::Command { next, .. } => next.as_deref(),
            _ => None,
        }
    }

    /// The JSON-RPC error a plugin answered with, when the failure is a plugin's own
    /// ([`ErrorKind::CommandFailed`] from a runtime).
    pub fn plugin_error(&self) -> Option<&PluginError> {
        match self {
            HostError::Command { plugin, .. } => plugin.as_ref(),
            _ => None,
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

    /// A failure of `kind` with a message and nothing else.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        HostError::Command {
            kind,
            message: message.into(),
            hint: None,
            next: None,
            plugin: None,
            source: None,
        }
    }

    /// The same failure with advice for a person (see [`HostError::hint`]). Only a
    /// [`HostError::Command`] carries one; other variants are returned unchanged.
    #[must_use]
    pub fn with_hint(mut self, advice: impl Into<String>) -> Self {
        if let HostError::Command { hint, .. } = &mut self {
            *hint = Some(advice.into());
        }
        self
    }

    /// The same failure with advice from the crate's hint table, as its [`HostError::hint`]
    /// and [`HostError::next_action`].
    #[must_use]
    pub fn advise(mut self, advice: Advice<'_>) -> Self {
        if let HostError::Command { hint, next, .. } = &mut self {
            (*hint, *next) = (Some(advice.hint()), Some(Box::new(advice.next())));
        }
        self
    }

    pub(crate) fn command(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(kind, message)
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

/// What a person can do next, in a command line's terms: the crate's hint table, the one place
/// its text names `c2-plugins`. Errors carry it as their [`HostError::hint`]; an install note,
/// which is advice for a person already, ends with it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Advice<'a> {
    /// Trust the bundle, as a sentence.
    Trust(&'a str),
    /// The trust command alone, quoted.
    TrustCommand(&'a str),
    /// Review the changed bundle, then trust it again.
    ReviewAndTrust(&'a str),
    /// Enable the bundle.
    Enable(&'a str),
    /// Enable one component of the bundle, in a project when given (`inherit` drops the
    /// override instead).
    EnableComponent {
        /// The bundle's id.
        id: &'a str,
        /// The component, `KIND:LOCAL-ID`.
        component: &'a str,
        /// The project, or empty for the user scope.
        project: &'a str,
    },
    /// See the commands of the realm.
    ListCommands,
    /// See the components the installed bundles have.
    ListComponents,
    /// See why a bundle is not active (the installed bundles and their states).
    ListStates,
    /// Disable all but one of the bundles that conflict.
    DisableAllButOne,
    /// Review the bundles, then trust and enable them.
    ReviewTrustAndEnable,
    /// See the MCP servers of the realm.
    ListMcpServers,
    /// See the deny lists.
    ListDenied,
    /// Review the bundle, then trust it.
    ReviewThenTrust(&'a str),
    /// The command that enables one component of the bundle, quoted.
    EnableComponentCommand {
        /// The bundle's id.
        id: &'a str,
        /// The component, `KIND:LOCAL-ID`.
        component: &'a str,
    },
}

/// Advice as a frontend acts on it: `action` (`trust`, `enable`, `enable_component`,
/// `list_bundles`, `list_commands`, `list_mcp_servers`, `list_denied`, `disable_conflicting`)
/// and its names.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NextAction {
    /// What to do.
    pub action: &'static str,
    /// The bundle's id, when the action is about one.
    pub id: Option<String>,
    /// The component, for `enable_component`.
    pub component: Option<String>,
    /// The project, when the action is in one.
    pub project: Option<String>,
}

impl Advice<'_> {
    fn next(self) -> NextAction {
        let (action, id, component, project) = match self {
            Advice::Trust(id)
            | Advice::TrustCommand(id)
            | Advice::ReviewAndTrust(id)
            | Advice::ReviewThenTrust(id) => ("trust", Some(id), None, ""),
            Advice::Enable(id) => ("enable", Some(id), None, ""),
            Advice::EnableComponent {
                id,
                component,
                project,
            } => ("enable_component", Some(id), Some(component), project),
            Advice::EnableComponentCommand { id, component } => {
                ("enable_component", Some(id), Some(component), "")
            }
            Advice::ListCommands => ("list_commands", None, None, ""),
            Advice::ListComponents | Advice::ListStates | Advice::ReviewTrustAndEnable => {
                ("list_bundles", None, None, "")
            }
            Advice::DisableAllButOne => ("disable_conflicting", None, None, ""),
            Advice::ListMcpServers => ("list_mcp_servers", None, None, ""),
            Advice::ListDenied => ("list_denied", None, None, ""),
        };
        NextAction {
            action,
            id: id.map(str::to_owned),
            component: component.map(str::to_owned),
            project: (!project.is_empty()).then(|| project.to_owned()),
        }
    }

    /// The advice as text.
    pub fn hint(self) -> String {
        match self {
            Advice::Trust(id) => format!("run `c2-plugins trust {id}`"),
            Advice::TrustCommand(id) => format!("`c2-plugins trust {id}`"),
            Advice::ReviewAndTrust(id) => format!("review it and run `c2-plugins trust {id}`"),
            Advice::Enable(id) => format!("run `c2-plugins enable {id}`"),
            Advice::EnableComponent {
                id,
                component,
                project,
            } => {
                let project = if project.is_empty() {
                    String::new()
                } else {
                    format!(" --project {project}")
                };
                format!(
                    "run `c2-plugins enable {id} --component {component}{project}` (or `inherit` to drop the override)"
                )
            }
            Advice::ListCommands => "`c2-plugins commands` lists what this realm has".to_owned(),
            Advice::ListComponents => "`c2-plugins list` shows the components there are".to_owned(),
            Advice::ListStates => "`c2-plugins list` shows why".to_owned(),
            Advice::DisableAllButOne => {
                "disable all but one of them (`c2-plugins disable <ID>`)".to_owned()
            }
            Advice::ReviewTrustAndEnable => {
                "review them, then `c2-plugins trust <ID>` and `c2-plugins enable <ID>`".to_owned()
            }
            Advice::ListMcpServers => "`c2-plugins mcp` lists them".to_owned(),
            Advice::ListDenied => "`c2-plugins block --list` shows the deny lists".to_owned(),
            Advice::ReviewThenTrust(id) => format!("review it, then `c2-plugins trust {id}`"),
            Advice::EnableComponentCommand { id, component } => {
                format!("`c2-plugins enable {id} --component {component}`")
            }
        }
    }
}

/// A host failure raised through the kernel (`HostError::into_kernel`) keeps its kind: the
/// kernel carries it as a typed source, and `From<c2_kernel::Error>` gets it back by downcast.
impl c2_kernel::TypedFailure for HostError {
    fn kind(&self) -> &str {
        HostError::kind(self).as_str()
    }
}

impl HostError {
    /// This failure as a kernel error a handler returns: the kernel carries it as a typed
    /// source, so the caller gets its kind and hint back (`From<c2_kernel::Error>`).
    pub(crate) fn into_kernel(self) -> c2_kernel::Error {
        c2_kernel::Error::typed(self)
    }
}

/// A failure of `kind` as a kernel error a handler returns (see [`HostError::into_kernel`]).
pub(crate) fn raise(kind: ErrorKind, message: impl Into<String>) -> c2_kernel::Error {
    HostError::new(kind, message).into_kernel()
}

/// A kernel error keeps the kind of the [`HostError`] it was raised from, found by downcast,
/// and that error's hint; the kernel's own dispatch errors have their kinds; any other failure
/// (an embedder module's own, whatever kind string it carries) is
/// [`ErrorKind::CommandFailed`]. The kernel error stays the source.
impl From<c2_kernel::Error> for HostError {
    fn from(error: c2_kernel::Error) -> Self {
        let raised = error.downcast_ref::<HostError>();
        let kind = match &error {
            c2_kernel::Error::UnknownCommand { .. } => ErrorKind::UnknownCommand,
            c2_kernel::Error::NotExtensionPublic { .. } => ErrorKind::NotExtensionPublic,
            c2_kernel::Error::FallbackBlocked { .. } => ErrorKind::Blocked,
            c2_kernel::Error::Essential { .. } => ErrorKind::Essential,
            c2_kernel::Error::ShutDown => ErrorKind::ShutDown,
            _ => raised.map_or(ErrorKind::CommandFailed, HostError::kind),
        };
        HostError::Command {
            kind,
            message: error.to_string(),
            hint: raised.and_then(HostError::hint).map(str::to_owned),
            next: raised.and_then(|e| e.next_action().cloned().map(Box::new)),
            plugin: error
                .remote()
                .map(PluginError::from)
                .or_else(|| raised.and_then(HostError::plugin_error).cloned()),
            source: Some(Box::new(error)),
        }
    }
}

/// The host's kind for a source error's kind, one for one.
fn source_kind(kind: c2_sources::SourceErrorKind) -> ErrorKind {
    use c2_sources::SourceErrorKind as Source;
    match kind {
        Source::UnsupportedSource => ErrorKind::UnsupportedSource,
        Source::UnsafeSource => ErrorKind::UnsafeSource,
        Source::GitFailed => ErrorKind::GitFailed,
        Source::InvalidCatalog => ErrorKind::InvalidCatalog,
        Source::InvalidMarketplaces => ErrorKind::InvalidMarketplaces,
        Source::DuplicateMarketplace => ErrorKind::DuplicateMarketplace,
        Source::TooManyMarketplaces => ErrorKind::TooManyMarketplaces,
        Source::UnknownMarketplace => ErrorKind::UnknownMarketplace,
        Source::NoMarketplace => ErrorKind::NoMarketplace,
        Source::EntryNotFound => ErrorKind::EntryNotFound,
        Source::EntryNotAvailable => ErrorKind::EntryNotAvailable,
        Source::AmbiguousEntry => ErrorKind::AmbiguousEntry,
        Source::VersionNotFound => ErrorKind::VersionNotFound,
        Source::CatalogMismatch => ErrorKind::CatalogMismatch,
        Source::CommitMismatch => ErrorKind::CommitMismatch,
        Source::DigestMismatch => ErrorKind::DigestMismatch,
        Source::FetchFailed => ErrorKind::FetchFailed,
        Source::NpmFailed => ErrorKind::NpmFailed,
        Source::IntegrityMismatch => ErrorKind::IntegrityMismatch,
        Source::InvalidLock => ErrorKind::InvalidLock,
        Source::NotFromCatalog => ErrorKind::NotFromCatalog,
        Source::StoreFailed => ErrorKind::StoreFailed,
        Source::Io => ErrorKind::Io,
        // A kind added to c2-sources later, until it has its own here.
        _ => ErrorKind::CommandFailed,
    }
}

/// A source, fetch or catalog failure stays typed ([`HostError::Source`]), with its kind
/// (mapped from the source error's, one kind for one kind), message and advice. A collector or
/// filesystem failure becomes the host's own ([`HostError::Store`], [`HostError::Io`]).
impl From<c2_sources::SourceError> for HostError {
    fn from(error: c2_sources::SourceError) -> Self {
        use c2_sources::SourceError;
        match error {
            SourceError::Store(error) => HostError::Store(error),
            SourceError::Io {
                action,
                path,
                source,
            } => HostError::Io {
                action,
                path,
                source,
            },
            error => HostError::Source {
                hint: error.hint(),
                error,
            },
        }
    }
}
