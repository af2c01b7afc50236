//! The typed component inventory: what a bundle contributes and how this host supports it
//! (plugin-standard §5). Files that are no contribution never appear here.

use serde::{Deserialize, Serialize};

/// Everything a bundle contributes, in discovery order (by kind, then path).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// The contributions found, skipped and disabled ones included.
    #[serde(deserialize_with = "exact")]
    pub contributions: Vec<Contribution>,
}

/// A list read to its exact length: serde grows a `Vec` by doubling, and a host keeps the
/// inventory of every installed bundle (ten contributions took the room of sixteen).
fn exact<'de, D: serde::Deserializer<'de>>(from: D) -> Result<Vec<Contribution>, D::Error> {
    let mut contributions = Vec::deserialize(from)?;
    contributions.shrink_to_fit();
    Ok(contributions)
}

impl Inventory {
    /// Contributions reported but not supported by this host (hooks, monitors).
    pub fn unsupported(&self) -> impl Iterator<Item = &Contribution> {
        self.contributions
            .iter()
            .filter(|c| c.status == ContributionStatus::InventoriedUnsupported)
    }

    /// Contributions of one kind.
    pub fn of_kind(&self, kind: ContributionKind) -> impl Iterator<Item = &Contribution> {
        self.contributions.iter().filter(move |c| c.kind == kind)
    }
}

/// One contribution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contribution {
    /// What sort of contribution it is.
    pub kind: ContributionKind,
    /// Bundle-local id: a skill's folder, a file stem, a manifest id, a scaffold folder.
    pub id: String,
    /// How this host supports it: the kind's [`ContributionKind::status`], or `Skipped` or
    /// `Disabled` when it failed its rules.
    pub status: ContributionStatus,
    /// The file or folder it comes from, relative to the bundle root; `None` for manifest
    /// declarations (they live in plugin.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A display title (a command's title, a UI label, a scaffold's `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description: the skill's, command's, UI action's or scaffold's own, or one this
    /// crate writes (a language server's languages, an MCP server's transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// For an MCP server: its declared `type` (`stdio`, `streamable-http`, `sse`) when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Why a `skipped` or `disabled` contribution is not usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Contribution {
    /// Usable on this host in some form: neither skipped nor disabled.
    pub fn is_usable(&self) -> bool {
        !matches!(
            self.status,
            ContributionStatus::Skipped | ContributionStatus::Disabled
        )
    }

    /// The status as one line: `supported`, `skipped: <why>`, `disabled: <why>`, ...
    pub fn status_text(&self) -> String {
        let word = match self.status {
            ContributionStatus::Supported => "supported",
            ContributionStatus::SupportedWithFallback => "supported-with-fallback",
            ContributionStatus::SupportedAsContent => "supported-as-content",
            ContributionStatus::SupportedStatically => "supported-statically",
            ContributionStatus::HostRendered => "host-rendered",
            ContributionStatus::InventoriedUnsupported => "inventoried-unsupported",
            ContributionStatus::Skipped => "skipped",
            ContributionStatus::Disabled => "disabled",
        };
        match &self.reason {
            Some(why) => format!("{word}: {why}"),
            None => word.to_owned(),
        }
    }
}

/// The kinds of contribution plugin-standard §5 names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ContributionKind {
    /// An Agent Skill: `skills/<name>/SKILL.md`.
    Skill,
    /// A subagent: `agents/*.md`.
    Agent,
    /// A prompt command: `commands/*.md`, used as skill content.
    PromptCommand,
    /// One server of the root `mcp.json`.
    McpServer,
    /// A command declared in `extensions.dev.codetwo.commands`, run by the bundle's runtime.
    RuntimeCommand,
    /// An external-system connector declared in `extensions.dev.codetwo.connectors`.
    Connector,
    /// A scene: `scenes/*.scene.json`.
    Scene,
    /// A pipeline: `scenes/*.pipeline.json`.
    Pipeline,
    /// A scaffold: a folder under `scaffolds/`.
    Scaffold,
    /// A template: a folder under `templates/`.
    Template,
    /// A stdio language server declared in `extensions.dev.codetwo.languageServers`.
    LanguageServer,
    /// A UI action descriptor declared in `extensions.dev.codetwo.ui`.
    UiAction,
    /// `hooks/hooks.json`: inventoried, never run on this host.
    Hooks,
    /// `monitors/monitors.json`: inventoried, never run on this host.
    Monitors,
}

impl ContributionKind {
    /// The inventory's kebab-case name of this kind (`skill`, `ui-action`, `mcp-server`, ...),
    /// as it is serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skill => "skill",
            Self::Agent => "agent",
            Self::PromptCommand => "prompt-command",
            Self::McpServer => "mcp-server",
            Self::RuntimeCommand => "runtime-command",
            Self::Connector => "connector",
            Self::Scene => "scene",
            Self::Pipeline => "pipeline",
            Self::Scaffold => "scaffold",
            Self::Template => "template",
            Self::LanguageServer => "language-server",
            Self::UiAction => "ui-action",
            Self::Hooks => "hooks",
            Self::Monitors => "monitors",
        }
    }

    /// The §5 status of this kind on this host.
    pub fn status(self) -> ContributionStatus {
        match self {
            Self::Skill
            | Self::McpServer
            | Self::Scene
            | Self::Pipeline
            | Self::Scaffold
            | Self::Template
            | Self::LanguageServer => ContributionStatus::Supported,
            Self::Agent => ContributionStatus::SupportedWithFallback,
            Self::PromptCommand => ContributionStatus::SupportedAsContent,
            Self::RuntimeCommand => ContributionStatus::SupportedStatically,
            Self::Connector | Self::UiAction => ContributionStatus::HostRendered,
            Self::Hooks | Self::Monitors => ContributionStatus::InventoriedUnsupported,
        }
    }
}

/// Support levels from the plugin-standard §5 table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ContributionStatus {
    /// Supported as the standard describes (skills, MCP, scenes, scaffolds, language servers).
    Supported,
    /// Supported, following the same contract inline where a provider cannot delegate
    /// (subagents).
    SupportedWithFallback,
    /// Used as content, compiled to the skill fallback (prompt commands).
    SupportedAsContent,
    /// Read from the manifest without running anything; the runtime starts on first
    /// invocation (runtime commands).
    SupportedStatically,
    /// Drawn by the host from declared data, never by bundle code (connectors, UI actions).
    HostRendered,
    /// Stored and listed as unsupported; nothing runs it (hooks, monitors).
    InventoriedUnsupported,
    /// One entry of a component failed its rules and is skipped (a bad MCP server entry);
    /// `reason` says why.
    Skipped,
    /// The whole component type is disabled (an invalid mcp.json, a location of the wrong
    /// kind); `reason` says why.
    Disabled,
}
