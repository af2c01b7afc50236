//! Plain data the kernel speaks in: realms, catalog metadata, desired state, options.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A normalized project identity (decisions.md: absolute, symlinks resolved, no trailing
/// separator). The kernel never normalizes: it does no IO, so the host hands it the final key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProjectKey(String);

impl ProjectKey {
    /// Wraps an already normalized project path.
    pub fn new(normalized: impl Into<String>) -> Self {
        ProjectKey(normalized.into())
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a command, service or module instance lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Realm {
    /// The user-wide realm.
    Global,
    /// One normalized project.
    Project(ProjectKey),
}

impl Realm {
    /// The project realm of a normalized key.
    pub fn project(normalized: impl Into<String>) -> Self {
        Realm::Project(ProjectKey::new(normalized))
    }
}

impl fmt::Display for Realm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Realm::Global => f.write_str("global"),
            Realm::Project(key) => write!(f, "project `{key}`"),
        }
    }
}

/// A runtime module's product role (plugin-standard.md §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Host-owned, not controlled by extension policy.
    Core,
    /// Optional behaviour shipped by C2 or a host.
    BuiltIn,
    /// A separately installed bundle.
    Extension,
}

/// A scope a module can run in (`scopeSupport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    /// The user-wide (global) instance.
    User,
    /// One independent instance per project.
    Project,
}

/// Whether a module runs when policy says nothing about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DefaultState {
    /// Runs unless policy disables it.
    Enabled,
    /// Stays off unless policy enables it.
    Disabled,
}

/// Catalog metadata every module declares (plugin-standard.md §10).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleMeta {
    /// Core, built-in or extension.
    pub role: Role,
    /// Who ships it, e.g. `c2` or `bundle:<id>`.
    pub origin: String,
    /// A UI grouping, e.g. `vcs`.
    pub category: String,
    /// Scopes it supports; `project` only when explicitly declared.
    pub scopes: Vec<ScopeKind>,
    /// Essential modules cannot be disabled or removed.
    pub essential: bool,
    /// What happens when policy is silent.
    pub default_state: DefaultState,
}

impl ModuleMeta {
    /// Metadata with the standard's defaults: user scope only, not essential, enabled.
    pub fn new(role: Role, origin: impl Into<String>, category: impl Into<String>) -> Self {
        ModuleMeta {
            role,
            origin: origin.into(),
            category: category.into(),
            scopes: vec![ScopeKind::User],
            essential: false,
            default_state: DefaultState::Enabled,
        }
    }

    /// Whether the module supports `kind`.
    pub fn supports(&self, kind: ScopeKind) -> bool {
        self.scopes.contains(&kind)
    }
}

/// A module's effective state in one realm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
#[non_exhaustive]
pub enum ModuleState {
    /// Policy (or the default state) keeps it off.
    Disabled,
    /// Enabled, waiting for the named required services.
    Pending {
        /// Required services that no live scope provides.
        missing: Vec<String>,
    },
    /// Applied; its scope is live at this generation.
    Active {
        /// The scope generation, bumped on every (re)load.
        generation: u64,
    },
    /// Enabled in a project realm that is not live; it is built on the realm's first use.
    Idle,
    /// Apply, a listener or the scope failed; it stays down until its inputs change.
    Failed {
        /// Why, in the failing code's words.
        reason: String,
    },
}

/// One catalog row.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// The module (factory) name.
    pub name: String,
    /// Its declared metadata.
    pub meta: ModuleMeta,
    /// The factory revision currently registered.
    pub revision: u64,
    /// Required services.
    pub inject: Vec<String>,
    /// Optional services.
    pub optional_inject: Vec<String>,
    /// The configuration JSON Schema, carried for c2-policy to validate against.
    pub config_schema: Option<Value>,
    /// Effective state in the listed realm.
    pub state: ModuleState,
}

/// Policy's intent for one module. `None` inherits: a project inherits the user intent, the user
/// intent inherits the module's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleIntent {
    /// Enable or disable; `None` inherits.
    pub enabled: Option<bool>,
    /// The module's configuration; `None` inherits.
    pub config: Option<Value>,
    /// Parts of the module policy withholds in this realm (opaque names the module
    /// understands, e.g. its component ids); `None` inherits. A change reloads the scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<BTreeSet<String>>,
}

/// Policy's intent for one realm, by module name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DesiredState {
    /// Intent per module name; modules not named inherit.
    pub modules: BTreeMap<String, ModuleIntent>,
}

impl DesiredState {
    /// Sets the intent for `name`, builder style.
    pub fn with(
        mut self,
        name: impl Into<String>,
        enabled: Option<bool>,
        config: Option<Value>,
    ) -> Self {
        self.modules.insert(
            name.into(),
            ModuleIntent {
                enabled,
                config,
                withheld: None,
            },
        );
        self
    }
}

/// Whether a command is reachable through the extension seam.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Visibility {
    /// Core and frontends only (the default).
    #[default]
    Internal,
    /// Deliberately published to plugins through `command/call`.
    ExtensionPublic,
}

/// What a module declares about a command it registers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandSpec {
    /// A short human title.
    pub title: String,
    /// An optional longer description.
    pub description: Option<String>,
    /// Internal unless published.
    pub visibility: Visibility,
    /// Inspectable argument schema, carried verbatim.
    pub args_schema: Option<Value>,
}

impl CommandSpec {
    /// An internal command with a title.
    pub fn new(title: impl Into<String>) -> Self {
        CommandSpec {
            title: title.into(),
            ..CommandSpec::default()
        }
    }

    /// Adds a description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Publishes the command to extensions.
    pub fn extension_public(mut self) -> Self {
        self.visibility = Visibility::ExtensionPublic;
        self
    }
}

/// A command as listed for a realm.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommandInfo {
    /// The command name.
    pub name: String,
    /// The realm it is registered in (a project listing includes global fallbacks).
    pub realm: Realm,
    /// The owning module.
    pub owner: String,
    /// Its metadata.
    pub spec: CommandSpec,
}

/// A JSON bus event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// The event name, e.g. `skills/changed`.
    pub name: String,
    /// The JSON payload.
    pub payload: Value,
}

/// Something that went wrong without failing the caller, kept as data for the host to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The module whose scope it concerns.
    pub module: String,
    /// The realm of that scope.
    pub realm: Realm,
    /// What happened.
    pub message: String,
}

/// Every limit the kernel enforces, with the defaults from decisions.md.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelOptions {
    /// Capacity of each JSON or typed bus subscriber queue; a full queue drops and counts.
    pub event_queue_capacity: usize,
    /// How long a project realm may sit unleased and unused before `reap_idle` reclaims it.
    pub idle_after: Duration,
    /// Reconcile passes before giving up on a graph that keeps changing (optional-service cycles).
    pub max_reconcile_rounds: usize,
    /// How many diagnostics are kept; older ones are dropped first.
    pub max_diagnostics: usize,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            event_queue_capacity: 1024,
            idle_after: Duration::from_secs(5 * 60),
            max_reconcile_rounds: 32,
            max_diagnostics: 256,
        }
    }
}
