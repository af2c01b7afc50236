//! The typed manifest: what a valid plugin.json says, with nothing left to re-check.

use std::collections::BTreeMap;

use serde::Serialize;

/// A valid `plugin.json`: Agent Plugins 1.0.0 identity plus the C2 1.2.0 extension.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// `$schema`: always the Agent Plugins 1.0.0 URL (required, Agent Plugins §5.3).
    #[serde(rename = "$schema")]
    pub schema: String,
    /// The bundle's name: 1 to 64 of a-z, 0-9, `-` and `.`, starting and ending with a letter
    /// or digit (Agent Plugins §5.4); the installed id is derived from it.
    pub name: String,
    /// Optional (Agent Plugins §5.4); any string, a non-SemVer version is accepted with a
    /// warning.
    pub version: Option<String>,
    /// One-line summary shown in listings; optional.
    pub description: Option<String>,
    /// Who publishes the bundle; optional.
    pub author: Option<Author>,
    /// URL of the bundle's home page, as written; optional.
    pub homepage: Option<String>,
    /// URL of the bundle's source repository, as written; optional.
    pub repository: Option<String>,
    /// License expression, as written (typically SPDX); optional.
    pub license: Option<String>,
    /// Search keywords, in manifest order; empty when absent.
    pub keywords: Vec<String>,
    /// `extensions.dev.codetwo`.
    pub codetwo: CodeTwo,
}

/// The `author` object.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Author {
    /// Person or organization name.
    pub name: Option<String>,
    /// Contact address, as written.
    pub email: Option<String>,
    /// Author web page, as written.
    pub url: Option<String>,
}

/// `extensions.dev.codetwo` for standard 1.2.0.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeTwo {
    /// `standardVersion`: always `1.2.0`, the only version that loads.
    pub standard_version: String,
    /// The complete command surface, declared before any code runs; the runtime must confirm
    /// exactly these ids and schemas during `initialize`.
    pub commands: Vec<CommandDecl>,
    /// The one process implementation speaking the C2 Plugin Protocol, if any.
    pub runtime: Option<RuntimeDecl>,
    /// Host-rendered action descriptors (`ui`); each invokes a command of this bundle.
    pub ui: Vec<UiDecl>,
    /// Host-rendered external-system connectors; each owns a command of this bundle.
    pub connectors: Vec<ConnectorDecl>,
    /// Trusted stdio language servers (`languageServers`), selected by Monaco language id.
    pub language_servers: Vec<LanguageServerDecl>,
}

/// One declared command.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandDecl {
    /// Unique namespaced id (`namespace.verb`); the namespace is not host-reserved.
    pub id: String,
    /// Non-empty title of at most [`crate::ManifestOptions::max_title_chars`] chars.
    pub title: String,
    /// Optional description of at most [`crate::ManifestOptions::max_description_chars`] chars.
    pub description: Option<String>,
    /// Optional `argsSchema` (a JSON Schema object). The handshake checks the runtime confirms
    /// it unchanged; validating each invocation's arguments stays the runtime's job.
    pub args_schema: Option<serde_json::Value>,
}

impl CommandDecl {
    /// The namespace: the part of the id before the first dot.
    pub fn namespace(&self) -> &str {
        self.id.split('.').next().unwrap_or_default()
    }
}

/// The process runtime declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeDecl {
    /// Executable to start: a bare name or a bundle-relative path (see [`Self::executable`]).
    pub command: String,
    /// The declared wire version; informative only, since the `initialize` result is the
    /// authoritative compatibility check.
    pub protocol: Option<String>,
    /// Arguments passed to `command`, in order.
    pub args: Vec<String>,
    /// Extra environment variables for the child process.
    pub env: BTreeMap<String, String>,
    /// Service names that must all exist before the runtime activates; it reloads when one
    /// changes.
    pub inject: Vec<String>,
    /// Service names whose arrival or departure reloads the runtime, not required to start.
    pub optional_inject: Vec<String>,
    /// `["user"]` when the manifest omits it.
    pub scope_support: Vec<ScopeKind>,
    /// `commandTimeoutMs`: the host's deadline, in milliseconds, for each command call to this
    /// runtime and each of its host callbacks, within [`COMMAND_TIMEOUT_MS_RANGE`]. `None` when
    /// the manifest omits it. It does not bound the handshake.
    pub command_timeout_ms: Option<u64>,
}

/// The values `runtime.commandTimeoutMs` may take: 1 ms to one hour.
pub const COMMAND_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 1..=3_600_000;

impl RuntimeDecl {
    /// How the host should find the executable.
    pub fn executable(&self) -> ExecutableRef<'_> {
        ExecutableRef::parse(&self.command)
    }
}

/// A scope a runtime can run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ScopeKind {
    /// The user realm: one process for the user, no project (the default).
    User,
    /// A project realm: one process per project, honoured only when declared.
    Project,
}

impl ScopeKind {
    /// The spelling used in plugin.json (`user`, `project`).
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::User => "user",
            ScopeKind::Project => "project",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(ScopeKind::User),
            "project" => Some(ScopeKind::Project),
            _ => None,
        }
    }
}

/// An executable named by a runtime or language-server `command`.
///
/// The manifest validator has already refused empty, absolute and `..` commands; whether the
/// file exists (and is not reached through a symlink) is the bundle collector's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "value")]
pub enum ExecutableRef<'a> {
    /// No `/`: an executable file in the bundle root if one exists, else looked up on `PATH`.
    BareName(&'a str),
    /// Contains `/`: a path relative to the bundle root that must exist inside the bundle.
    BundleRelative(&'a str),
}

impl<'a> ExecutableRef<'a> {
    /// Classifies a command string: one containing `/` is bundle-relative.
    pub fn parse(command: &'a str) -> Self {
        if command.contains('/') {
            ExecutableRef::BundleRelative(command)
        } else {
            ExecutableRef::BareName(command)
        }
    }
}

/// One host-rendered UI action.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiDecl {
    /// Bundle-local id, unique among this bundle's descriptors.
    pub id: String,
    /// Where the host places it.
    pub slot: UiSlot,
    /// Non-empty label of at most [`crate::ManifestOptions::max_title_chars`] chars.
    pub label: String,
    /// Optional description of at most [`crate::ManifestOptions::max_description_chars`] chars.
    pub description: Option<String>,
    /// The id of a command declared by this bundle, invoked on activation.
    pub command: String,
    /// JSON passed as `input` when the command is invoked; bounded by
    /// [`crate::ManifestOptions::max_ui_input_bytes`].
    pub input: Option<serde_json::Value>,
    /// Sort position within the slot, from [`crate::ManifestOptions::min_ui_order`] to
    /// [`crate::ManifestOptions::max_ui_order`].
    pub order: Option<i32>,
}

/// The six UI slots of standard 1.2.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[non_exhaustive]
pub enum UiSlot {
    /// `rail.features`: the primary feature list in the session rail.
    #[serde(rename = "rail.features")]
    RailFeatures,
    /// `session.header`: session header actions.
    #[serde(rename = "session.header")]
    SessionHeader,
    /// `transcript.before`: inside the transcript scroll area, before the conversation.
    #[serde(rename = "transcript.before")]
    TranscriptBefore,
    /// `composer.above`: a full-width action card above the composer.
    #[serde(rename = "composer.above")]
    ComposerAbove,
    /// `composer.toolbar`: a compact action in the composer control row.
    #[serde(rename = "composer.toolbar")]
    ComposerToolbar,
    /// `host.actions`: the one dynamic slot; its command renders compact actions that a host
    /// adapter shows, then is invoked with the chosen one.
    #[serde(rename = "host.actions")]
    HostActions,
}

impl UiSlot {
    /// Every slot, in the standard's order.
    pub const ALL: [UiSlot; 6] = [
        UiSlot::RailFeatures,
        UiSlot::SessionHeader,
        UiSlot::TranscriptBefore,
        UiSlot::ComposerAbove,
        UiSlot::ComposerToolbar,
        UiSlot::HostActions,
    ];

    /// The spelling used in plugin.json.
    pub fn as_str(self) -> &'static str {
        match self {
            UiSlot::RailFeatures => "rail.features",
            UiSlot::SessionHeader => "session.header",
            UiSlot::TranscriptBefore => "transcript.before",
            UiSlot::ComposerAbove => "composer.above",
            UiSlot::ComposerToolbar => "composer.toolbar",
            UiSlot::HostActions => "host.actions",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|slot| slot.as_str() == s)
    }
}

/// One external-system connector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorDecl {
    /// Stable bundle-local id.
    pub id: String,
    /// Selects the host adapter that renders it (for example `feishu`).
    pub provider: String,
    /// The id of the command of this bundle that the host invokes with `{ operation, input }`.
    pub command: String,
    /// The non-empty set of capabilities; they bound which operations the host dispatches.
    pub capabilities: Vec<Capability>,
}

impl ConnectorDecl {
    /// Whether any declared capability admits the host operation `op` (e.g. `message.send`).
    pub fn operation_allowed(&self, op: &str) -> bool {
        self.capabilities.iter().any(|c| c.operation_allowed(op))
    }
}

/// A connector capability and the operation namespaces it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Capability {
    /// `connection`: operations under `connection.`.
    Connection,
    /// `conversations`: `resources.list` and operations under `conversation.`.
    Conversations,
    /// `documents`: `resources.list` and operations under `document.`.
    Documents,
    /// `tables`: `resources.list` and operations under `table.`.
    Tables,
    /// `messaging`: operations under `message.`.
    Messaging,
    /// `turn_notifications`: operations under `notification.`.
    TurnNotifications,
    /// `issues`: operations under `issues.`.
    Issues,
    /// `observations`: no command operation; it marks the connector whose runtime may send the
    /// host-only `observation/record` request.
    Observations,
}

impl Capability {
    /// Every capability, in the standard's order.
    pub const ALL: [Capability; 8] = [
        Capability::Connection,
        Capability::Conversations,
        Capability::Documents,
        Capability::Tables,
        Capability::Messaging,
        Capability::TurnNotifications,
        Capability::Issues,
        Capability::Observations,
    ];

    /// The spelling used in plugin.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Connection => "connection",
            Capability::Conversations => "conversations",
            Capability::Documents => "documents",
            Capability::Tables => "tables",
            Capability::Messaging => "messaging",
            Capability::TurnNotifications => "turn_notifications",
            Capability::Issues => "issues",
            Capability::Observations => "observations",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether this capability admits operation `op`, per the standard's table: an exact
    /// operation name, or any operation under a `prefix.*` namespace (at least one more segment).
    pub fn operation_allowed(self, op: &str) -> bool {
        let (exact, prefix): (&[&str], &str) = match self {
            Capability::Connection => (&[], "connection."),
            Capability::Conversations => (&["resources.list"], "conversation."),
            Capability::Documents => (&["resources.list"], "document."),
            Capability::Tables => (&["resources.list"], "table."),
            Capability::Messaging => (&[], "message."),
            Capability::TurnNotifications => (&[], "notification."),
            Capability::Issues => (&[], "issues."),
            Capability::Observations => return false,
        };
        exact.contains(&op) || op.strip_prefix(prefix).is_some_and(|rest| !rest.is_empty())
    }
}

/// One stdio language server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageServerDecl {
    /// Bundle-local id, unique among this bundle's language servers.
    pub id: String,
    /// Monaco language ids it serves, at most [`crate::ManifestOptions::max_languages`].
    pub languages: Vec<String>,
    /// Executable to start: a bare name or a bundle-relative path (see [`Self::executable`]).
    pub command: String,
    /// Arguments passed to `command`, in order.
    pub args: Vec<String>,
    /// Extra environment variables for the child process.
    pub env: BTreeMap<String, String>,
}

impl LanguageServerDecl {
    /// How the host should find the executable.
    pub fn executable(&self) -> ExecutableRef<'_> {
        ExecutableRef::parse(&self.command)
    }
}
