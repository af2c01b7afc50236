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
    pub name: String,
    /// Optional (Agent Plugins §5.4); any string, a non-SemVer version is accepted with a
    /// warning.
    pub version: Option<String>,
    pub description: Option<String>,
    pub author: Option<Author>,
    pub homepage: Option<String>,
    pub repository: Option<String>,
    pub license: Option<String>,
    pub keywords: Vec<String>,
    /// `extensions.dev.codetwo`.
    pub codetwo: CodeTwo,
}

/// The `author` object.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Author {
    pub name: Option<String>,
    pub email: Option<String>,
    pub url: Option<String>,
}

/// `extensions.dev.codetwo` for standard 1.2.0.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeTwo {
    pub standard_version: String,
    pub commands: Vec<CommandDecl>,
    pub runtime: Option<RuntimeDecl>,
    pub ui: Vec<UiDecl>,
    pub connectors: Vec<ConnectorDecl>,
    pub language_servers: Vec<LanguageServerDecl>,
}

/// One declared command.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandDecl {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
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
    pub command: String,
    pub protocol: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub inject: Vec<String>,
    pub optional_inject: Vec<String>,
    /// `["user"]` when the manifest omits it.
    pub scope_support: Vec<ScopeKind>,
}

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
    User,
    Project,
}

impl ScopeKind {
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
    pub id: String,
    pub slot: UiSlot,
    pub label: String,
    pub description: Option<String>,
    pub command: String,
    pub input: Option<serde_json::Value>,
    pub order: Option<i32>,
}

/// The six UI slots of standard 1.2.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum UiSlot {
    #[serde(rename = "rail.features")]
    RailFeatures,
    #[serde(rename = "session.header")]
    SessionHeader,
    #[serde(rename = "transcript.before")]
    TranscriptBefore,
    #[serde(rename = "composer.above")]
    ComposerAbove,
    #[serde(rename = "composer.toolbar")]
    ComposerToolbar,
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
    pub id: String,
    pub provider: String,
    pub command: String,
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
pub enum Capability {
    Connection,
    Conversations,
    Documents,
    Tables,
    Messaging,
    TurnNotifications,
}

impl Capability {
    pub const ALL: [Capability; 6] = [
        Capability::Connection,
        Capability::Conversations,
        Capability::Documents,
        Capability::Tables,
        Capability::Messaging,
        Capability::TurnNotifications,
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
        };
        exact.contains(&op) || op.strip_prefix(prefix).is_some_and(|rest| !rest.is_empty())
    }
}

/// One stdio language server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageServerDecl {
    pub id: String,
    pub languages: Vec<String>,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

impl LanguageServerDecl {
    /// How the host should find the executable.
    pub fn executable(&self) -> ExecutableRef<'_> {
        ExecutableRef::parse(&self.command)
    }
}
