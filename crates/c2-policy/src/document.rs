use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::CatalogModule;

/// The only document schema this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The durable policy: the user's intent, for the user scope and for each project.
///
/// Unknown fields anywhere make the document unusable: a file this version cannot fully
/// understand is treated like a corrupt one rather than partly obeyed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyDocument {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Grows by one with every write; never reused, not even by a rollback.
    pub revision: u64,
    /// User-scope entries by module name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user: BTreeMap<String, PluginPolicy>,
    /// Per-project entries: normalized project key, then module name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub projects: BTreeMap<String, BTreeMap<String, PluginPolicy>>,
}

impl Default for PolicyDocument {
    fn default() -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            revision: 0,
            user: BTreeMap::new(),
            projects: BTreeMap::new(),
        }
    }
}

/// The plugin-level switch.
///
/// In a project entry `Inherit` follows the user entry; in a user entry it means the
/// module's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    /// Follow the user entry (in a project) or the module's default (for the user).
    #[default]
    Inherit,
    /// On.
    Enabled,
    /// Off.
    Disabled,
}

impl Switch {
    fn is_inherit(&self) -> bool {
        *self == Self::Inherit
    }
}

/// A per-component override, independent of the plugin switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ComponentSwitch {
    /// The component is on while its plugin runs.
    Enabled,
    /// The component is withheld while its plugin runs.
    Disabled,
}

/// One module's entry in one scope. An entry equal to the default is not stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PluginPolicy {
    /// The plugin-level switch.
    #[serde(default, skip_serializing_if = "Switch::is_inherit")]
    pub state: Switch,
    /// Trust holds only while the bundle's content digest equals this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_digest: Option<String>,
    /// Handed verbatim to the plugin's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Component id to override.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, ComponentSwitch>,
}

impl PluginPolicy {
    /// Whether trust was granted to exactly this content.
    pub fn is_trusted(&self, digest: &str) -> bool {
        self.trusted_digest.as_deref() == Some(digest)
    }

    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a desired state applies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// The user's own entries, the base every project inherits from.
    User,
    /// A normalized project key, as the caller computed it.
    Project(String),
}

/// What the host should make true for one module in one scope.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredState {
    /// The switches, resolved by inheritance (essential modules are always enabled).
    pub enabled: bool,
    /// Built-in modules (no digest) need no trust and are always trusted.
    pub trusted: bool,
    /// Project configuration replaces the user's when set.
    pub config: Option<Value>,
    /// User overrides with the project's laid over them.
    pub components: BTreeMap<String, ComponentSwitch>,
}

impl DesiredState {
    /// Enabled and trusted: the host may register the module.
    pub fn is_runnable(&self) -> bool {
        self.enabled && self.trusted
    }
}

impl PolicyDocument {
    /// The entry for `module` in `scope`, if one is stored.
    pub fn entry(&self, module: &str, scope: &Scope) -> Option<&PluginPolicy> {
        match scope {
            Scope::User => self.user.get(module),
            Scope::Project(key) => self.projects.get(key)?.get(module),
        }
    }

    /// Resolves the effective state: project inherit follows the user entry, user inherit
    /// follows the module default. Essential modules are always enabled, whatever the file says.
    /// Project entries of a module that is not project-capable are ignored.
    pub fn resolve(&self, module: &CatalogModule, scope: &Scope) -> DesiredState {
        let user = self.user.get(&module.name);
        let project = match scope {
            Scope::Project(key) if module.project_capable => self
                .projects
                .get(key)
                .and_then(|entries| entries.get(&module.name)),
            _ => None,
        };
        let user_enabled = match user.map(|entry| entry.state).unwrap_or_default() {
            Switch::Inherit => module.default_enabled,
            Switch::Enabled => true,
            Switch::Disabled => false,
        };
        let enabled = module.essential
            || match project.map(|entry| entry.state).unwrap_or_default() {
                Switch::Inherit => user_enabled,
                Switch::Enabled => true,
                Switch::Disabled => false,
            };
        let trusted = match &module.digest {
            None => true,
            Some(digest) => user.is_some_and(|entry| entry.is_trusted(digest)),
        };
        let config = project
            .and_then(|entry| entry.config.clone())
            .or_else(|| user.and_then(|entry| entry.config.clone()));
        let mut components = user
            .map(|entry| entry.components.clone())
            .unwrap_or_default();
        if let Some(project) = project {
            components.extend(
                project
                    .components
                    .iter()
                    .map(|(id, switch)| (id.clone(), *switch)),
            );
        }
        DesiredState {
            enabled,
            trusted,
            config,
            components,
        }
    }

    /// Parses a stored document, refusing anything this version does not fully understand.
    pub(crate) fn from_slice(bytes: &[u8]) -> Result<Self, String> {
        let document: Self = serde_json::from_slice(bytes).map_err(|error| error.to_string())?;
        if document.schema_version != SCHEMA_VERSION {
            return Err(format!(
                "schema version {} is not {SCHEMA_VERSION}",
                document.schema_version
            ));
        }
        Ok(document)
    }

    pub(crate) fn entry_mut(&mut self, module: &str, scope: &Scope) -> &mut PluginPolicy {
        let entries = match scope {
            Scope::User => &mut self.user,
            Scope::Project(key) => self.projects.entry(key.clone()).or_default(),
        };
        entries.entry(module.to_owned()).or_default()
    }

    /// Drops entries and projects that say nothing, so equal intent means an equal file.
    pub(crate) fn prune(&mut self) {
        self.user.retain(|_, entry| !entry.is_default());
        for entries in self.projects.values_mut() {
            entries.retain(|_, entry| !entry.is_default());
        }
        self.projects.retain(|_, entries| !entries.is_empty());
    }

    /// Drops the overrides of `components` from one module's entries, in every scope.
    pub(crate) fn forget_components(&mut self, module: &str, components: &[String]) {
        let scopes = std::iter::once(&mut self.user).chain(self.projects.values_mut());
        for entries in scopes {
            if let Some(entry) = entries.get_mut(module) {
                entry.components.retain(|id, _| !components.contains(id));
            }
        }
    }

    /// Removes every entry of one module, in every scope.
    pub(crate) fn forget(&mut self, module: &str) {
        self.user.remove(module);
        for entries in self.projects.values_mut() {
            entries.remove(module);
        }
        self.prune();
    }
}
