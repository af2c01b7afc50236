//! What the host shows of its state: the installed bundles with their trust, enablement and
//! runtime state, the extensions list, a realm's catalog and its commands.

use std::collections::BTreeMap;

use c2_bundle_collector::InstalledRecord;
use c2_kernel::{CatalogEntry, ModuleState, Realm};
use c2_policy::Scope;
use serde::Serialize;

use crate::error::HostError;
use crate::host::{PluginHost, Target, lock};
use crate::states::{BundleState, CommandState, CommandVisibility, realm_text};

/// One installed bundle as `list` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    /// The installed id.
    pub id: String,
    /// The kernel module name, `bundle:<id>`.
    pub module: String,
    /// Manifest name.
    pub name: String,
    /// Manifest version; `None` when the manifest declares no `version` (optional in Agent Plugins 1.0.0).
    pub version: Option<String>,
    /// Whether the user trusted this exact content.
    pub trusted: bool,
    /// Whether the user enabled it (user scope).
    pub enabled: bool,
    /// `blocked` (a deny entry matches), `content_changed` (the files on disk are not the
    /// installed ones), `untrusted`, `disabled`, `ready` (dormant), `active`, `pending`, `failed`.
    pub state: BundleState,
    /// Why it is blocked, failed or pending.
    pub reason: Option<String>,
    /// Whether it ships a process runtime.
    pub runtime: bool,
    /// The stored record: source, digest, inventory.
    pub record: InstalledRecord,
    /// Each component a choice can name, `enabled` or `disabled` for the user.
    pub components: Vec<crate::components::ComponentState>,
}

/// One catalog row.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogRow {
    /// The kernel entry: name, metadata, revision, state.
    #[serde(flatten)]
    pub entry: CatalogEntry,
    /// For bundles: whether the installed content is trusted.
    pub trusted: Option<bool>,
    /// Enabled by policy in this realm (before the trust gate).
    pub enabled: bool,
    /// For a bundle with a process runtime: the scopes its runtime supports. A bundle whose
    /// runtime is user-only but that has language servers lists `project` in its module
    /// scopes for those servers only; this says where its process runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_scopes: Option<Vec<String>>,
    /// For bundles: each component a choice can name, `enabled` or `disabled` in this realm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<crate::components::ComponentState>>,
}

/// A command as `commands` shows it.
#[derive(Debug, Clone)]
pub struct CommandRow {
    /// The command name.
    pub name: String,
    /// The owning module.
    pub owner: String,
    /// The realm it is registered in (shown as `global` or the project path).
    pub realm: Realm,
    /// `internal` or `extension-public`.
    pub visibility: CommandVisibility,
    /// `dormant`, `active` or `failed` for bundle commands, `built-in` otherwise.
    pub state: CommandState,
    /// Title from the manifest or the module.
    pub title: String,
    /// Description, when there is one.
    pub description: Option<String>,
}

impl CommandRow {
    /// The realm as the host shows it: `global` or the project path.
    pub fn realm_label(&self) -> String {
        realm_text(&self.realm)
    }
}

/// `extensions.list`: installed bundles grouped the way the protocol's Trust section names them.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionsList {
    /// Installed bundles whose content is not trusted.
    pub untrusted: Vec<String>,
    /// Trusted bundles that are disabled.
    pub disabled: Vec<String>,
    /// Eligible, process dormant (or no process).
    pub ready: Vec<String>,
    /// A process is running in at least one realm.
    pub active: Vec<String>,
    /// Enabled and trusted but failed or pending, with the reason.
    pub failed: Vec<FailedExtension>,
}

/// A failed extension and why.
#[derive(Debug, Clone, Serialize)]
pub struct FailedExtension {
    /// The installed id.
    pub id: String,
    /// Why, in the failing code's words.
    pub reason: String,
}

impl PluginHost {
    /// Installed bundles with trust, enablement and runtime state.
    pub fn list(&self) -> Vec<BundleStatus> {
        let bundles = lock(&self.shared.bundles).clone();
        let states: BTreeMap<String, ModuleState> = self
            .shared
            .kernel
            .catalog(&Realm::Global)
            .into_iter()
            .map(|entry| (entry.name, entry.state))
            .collect();
        let policy_catalog = self.desired_catalog();
        let blocked = self.shared.blocked();
        // Every tree checked under one hold of the store's lock.
        let verdicts = self.shared.store.check_contents(
            bundles.values().map(|module| &module.bundle().record),
            &self.shared.options.limits,
        );
        bundles
            .values()
            .zip(verdicts)
            .map(|(module, verdict)| {
                let bundle = module.bundle();
                let name = bundle.module_name();
                let trusted = self.shared.is_trusted(bundle);
                let changed = verdict.err().map(|changed| changed.0);
                let denied = blocked.get(name).map(ToString::to_string);
                let enabled = lock(&self.shared.policy)
                    .desired(&policy_catalog, name, &Scope::User)
                    .is_ok_and(|d| d.enabled);
                let state = states.get(name).cloned();
                let instances = module.instances();
                let failure = instances.iter().find_map(|(_, i)| i.failure());
                let active = instances.iter().any(|(_, i)| i.pid().is_some());
                let (state, reason) = match (trusted, enabled, state) {
                    _ if denied.is_some() => (BundleState::Blocked, denied),
                    _ if changed.is_some() => (BundleState::ContentChanged, changed),
                    (false, _, _) => (BundleState::Untrusted, self.untrusted_reason(bundle)),
                    (true, false, _) => (BundleState::Disabled, None),
                    (true, true, Some(ModuleState::Failed { reason })) => {
                        (BundleState::Failed, Some(reason))
                    }
                    (true, true, Some(ModuleState::Pending { missing })) => (
                        BundleState::Pending,
                        Some(format!("waiting for services: {}", missing.join(", "))),
                    ),
                    _ if failure.is_some() => (BundleState::Failed, failure),
                    _ if active => (BundleState::Active, None),
                    _ => (BundleState::Ready, None),
                };
                BundleStatus {
                    id: bundle.record.id.clone(),
                    module: name.to_owned(),
                    name: bundle.record.name.clone(),
                    version: bundle.record.version.clone(),
                    trusted,
                    enabled,
                    state: state.to_owned(),
                    reason,
                    runtime: bundle.has_runtime(),
                    record: bundle.record.clone(),
                    components: self.shared.component_states(bundle, &Scope::User),
                }
            })
            .collect()
    }

    /// `extensions.list`.
    pub fn extensions(&self) -> ExtensionsList {
        let mut list = ExtensionsList::default();
        for status in self.list() {
            match status.state.as_str() {
                "untrusted" => list.untrusted.push(status.id),
                "disabled" => list.disabled.push(status.id),
                "active" => list.active.push(status.id),
                "failed" | "pending" | "content_changed" | "blocked" => {
                    list.failed.push(FailedExtension {
                        id: status.id,
                        reason: status.reason.unwrap_or_default(),
                    })
                }
                _ => list.ready.push(status.id),
            }
        }
        list
    }

    /// The catalog of a realm: built-in modules and bundles, with metadata and effective state.
    pub fn catalog(&self, target: &Target) -> Result<Vec<CatalogRow>, HostError> {
        let realm = self.realm(target)?;
        let scope = match &realm {
            Realm::Global => Scope::User,
            Realm::Project(key) => Scope::Project(key.as_str().to_owned()),
        };
        let policy_catalog = self.desired_catalog();
        let bundles = lock(&self.shared.bundles).clone();
        let components: BTreeMap<String, Vec<crate::components::ComponentState>> = bundles
            .values()
            .map(|module| {
                let bundle = module.bundle();
                (
                    bundle.module_name().to_owned(),
                    self.shared.component_states(bundle, &scope),
                )
            })
            .collect();
        let policy = lock(&self.shared.policy);
        Ok(self
            .shared
            .kernel
            .catalog(&realm)
            .into_iter()
            .map(|entry| {
                let trusted = entry
                    .name
                    .strip_prefix(crate::bundle::BUNDLE_PREFIX)
                    .and_then(|id| bundles.get(id))
                    .map(|module| {
                        policy
                            .document()
                            .and_then(|d| d.entry(&entry.name, &Scope::User))
                            .is_some_and(|e| e.is_trusted(&module.bundle().record.digest))
                    });
                let enabled = policy
                    .desired(&policy_catalog, &entry.name, &scope)
                    .is_ok_and(|d| d.enabled);
                let runtime_scopes = entry
                    .name
                    .strip_prefix(crate::bundle::BUNDLE_PREFIX)
                    .and_then(|id| bundles.get(id))
                    .filter(|module| module.bundle().has_runtime())
                    .map(|module| {
                        let mut scopes = vec!["user".to_owned()];
                        if module.bundle().runtime_project_capable() {
                            scopes.push("project".to_owned());
                        }
                        scopes
                    });
                CatalogRow {
                    components: components.get(&entry.name).cloned(),
                    entry,
                    trusted,
                    enabled,
                    runtime_scopes,
                }
            })
            .collect())
    }

    /// Builds a project realm's module graph if it was not built yet, so that listings
    /// ([`PluginHost::commands`], c2-contributions' `ui_catalog`) show its dormant commands and
    /// descriptors before anything was invoked there. Applying modules registers commands and
    /// prepares runtimes; it starts no plugin process. The user realm is always built.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future is safe: a build it started is redone by the next caller.
    pub async fn load_realm(&self, target: &Target) -> Result<(), HostError> {
        let realm = self.realm(target)?;
        // The lease only had to see the build through: an idle realm may be reaped again.
        let _built = self.on_runtime(self.shared.kernel.lease(&realm)).await?;
        Ok(())
    }

    /// The commands visible in a realm (a project realm as far as it is built: see
    /// [`PluginHost::load_realm`]).
    pub fn commands(&self, target: &Target) -> Result<Vec<CommandRow>, HostError> {
        let realm = self.realm(target)?;
        let bundles = lock(&self.shared.bundles).clone();
        Ok(self
            .shared
            .kernel
            .commands(&realm)
            .into_iter()
            .map(|info| {
                let state = match info
                    .owner
                    .strip_prefix(crate::bundle::BUNDLE_PREFIX)
                    .and_then(|id| bundles.get(id))
                {
                    Some(module) => match module.instance(&info.realm) {
                        Some(instance) if instance.pid().is_some() => CommandState::Active,
                        Some(instance) if instance.failure().is_some() => CommandState::Failed,
                        _ => CommandState::Dormant,
                    },
                    None => CommandState::BuiltIn,
                };
                CommandRow {
                    name: info.name,
                    owner: info.owner,
                    realm: info.realm,
                    visibility: match info.spec.visibility {
                        c2_kernel::Visibility::Internal => CommandVisibility::Internal,
                        c2_kernel::Visibility::ExtensionPublic => {
                            CommandVisibility::ExtensionPublic
                        }
                    },
                    state,
                    title: info.spec.title,
                    description: info.spec.description,
                }
            })
            .collect())
    }
}
