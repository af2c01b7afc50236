//! Per-component policy: one contribution of an installed bundle switched on or off for the
//! user or one project (plugin-standard.md §2, §3). A choice is stored in the bundle's policy
//! entry under the identity `<installed-id>:<kind>:<local-id>`, so it survives a reinstall or
//! update that keeps the local id; [`PluginHost::set_component`] plans and applies it like every
//! other policy change. Each surface that shows or runs a contribution asks
//! [`Shared::withheld`] for the realm's disabled components: the bundle module registers no
//! stub for a disabled runtime command (and starts no process when all are disabled), and the
//! UI catalog, connector dispatch, language-server resolution and MCP composition leave the
//! rest out.

use std::collections::BTreeSet;

use c2_bundle_collector::{ContributionKind, InstalledRecord};
use c2_policy::{CatalogModule, ChangeKind, ComponentSwitch, Scope};
use serde::{Deserialize, Serialize};

use crate::bundle::InstalledBundle;
use crate::error::{Advice, ErrorKind, HostError};
use crate::host::{Applied, PluginHost, Shared, StateChange, Target, lock};

pub use c2_bundle_collector::{COMPONENT_KINDS, ComponentRef, component_id};

impl From<c2_bundle_collector::InvalidComponent> for HostError {
    fn from(error: c2_bundle_collector::InvalidComponent) -> Self {
        HostError::command(ErrorKind::InvalidComponent, error.0)
    }
}

/// A component of one bundle as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentState {
    /// `<kind>:<local-id>`.
    pub component: String,
    /// `enabled` or `disabled` in the listed realm.
    pub state: String,
}

/// Component choices that named local ids a reinstalled bundle no longer has: reported once,
/// then dropped from the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedChoice {
    /// The installed id.
    pub id: String,
    /// The policy identity that was dropped, `<id>:<kind>:<local-id>`.
    pub component: String,
    /// `user` or the normalized project the choice was made for.
    pub scope: String,
}

impl Shared {
    /// The components of `bundle` disabled in `scope` (project choices over the user's), as
    /// `<kind>:<local-id>`. Empty in safe mode, where nothing of a bundle runs anyway.
    pub(crate) fn withheld(&self, bundle: &InstalledBundle, scope: &Scope) -> BTreeSet<String> {
        let module = CatalogModule {
            name: bundle.module_name().to_owned(),
            project_capable: bundle.project_capable(),
            ..CatalogModule::default()
        };
        let prefix = format!("{}:", bundle.record.id);
        let policy = lock(&self.policy);
        let Some(document) = policy.document() else {
            return BTreeSet::new();
        };
        document
            .resolve(&module, scope)
            .components
            .into_iter()
            .filter(|(_, switch)| *switch == ComponentSwitch::Disabled)
            .filter_map(|(key, _)| key.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    /// The components of `bundle` with their state in `scope`.
    pub(crate) fn component_states(
        &self,
        bundle: &InstalledBundle,
        scope: &Scope,
    ) -> Vec<ComponentState> {
        let withheld = self.withheld(bundle, scope);
        bundle
            .record
            .switchable()
            .into_iter()
            .map(|component| ComponentState {
                state: if withheld.contains(&component) {
                    "disabled"
                } else {
                    "enabled"
                }
                .to_owned(),
                component,
            })
            .collect()
    }
}

/// `disabled` for a component the policy withholds: which one, where, and how to enable it.
pub(crate) fn disabled_error(id: &str, component: &str, realm: &str) -> HostError {
    HostError::command(
        ErrorKind::Disabled,
        format!(
            "component {component} of {id} is disabled in {}",
            if realm == "global" {
                "the user scope".to_owned()
            } else {
                format!("project {realm}")
            }
        ),
    )
    .advise(Advice::EnableComponent {
        id,
        component,
        project: if realm == "global" { "" } else { realm },
    })
}

impl PluginHost {
    /// Enables, disables or (`Inherit`) clears one component's choice in the user scope or a
    /// project. The component must be one the installed bundle has (`unknown_component`
    /// lists them). A project choice needs a runtime that runs per project, except for a
    /// language server, which always runs per project (a user-only runtime's process, and so
    /// its commands, UI, connectors and MCP servers, are the user realm's). Planned, applied,
    /// reconciled and confirmed like any policy change.
    pub async fn set_component(
        &self,
        id: &str,
        target: &Target,
        component: &ComponentRef,
        state: StateChange,
    ) -> Result<Applied, HostError> {
        self.catch_up().await;
        let module = self.bundle(id)?;
        let bundle = module.bundle().clone();
        let scope = self.scope_of(target)?;
        let kind = self.component_change(&bundle, &scope, component, state)?;
        self.change(bundle.module_name().to_owned(), scope, kind)
            .await
    }

    /// The policy change for one component choice, after every check.
    pub(crate) fn component_change(
        &self,
        bundle: &InstalledBundle,
        scope: &Scope,
        component: &ComponentRef,
        state: StateChange,
    ) -> Result<ChangeKind, HostError> {
        let id = &bundle.record.id;
        let valid = bundle.record.switchable();
        if !valid.contains(&component.to_string()) {
            let listed = if valid.is_empty() {
                "it has no component a choice can name".to_owned()
            } else {
                format!(
                    "its components are: {}",
                    valid.into_iter().collect::<Vec<_>>().join(", ")
                )
            };
            return Err(HostError::command(
                ErrorKind::UnknownComponent,
                format!("{id} has no component `{component}`; {listed}"),
            ));
        }
        if let Scope::Project(key) = scope {
            if !bundle.project_capable() {
                return Err(HostError::command(
                    ErrorKind::ProjectScopeNotSupported,
                    format!(
                        "{id} is not project-capable (its contributions are user-wide), so its components are chosen for the user only: drop --project {key}"
                    ),
                ));
            }
            // Without a project runtime only the language servers live in project realms;
            // everything else of the bundle follows the user entry in every project.
            if component.kind != ContributionKind::LanguageServer
                && !bundle.runtime_project_capable()
            {
                return Err(HostError::command(
                    ErrorKind::ProjectScopeNotSupported,
                    format!(
                        "{id} has no per-project runtime (its runtime, if any, is user-only and serves every project from the user realm): only its language servers can be chosen per project, so `{component}` is chosen for the user only: drop --project {key}"
                    ),
                ));
            }
        }
        Ok(ChangeKind::SetComponent {
            component: component.policy_key(id),
            state: match state {
                StateChange::Enable => Some(ComponentSwitch::Enabled),
                StateChange::Disable => Some(ComponentSwitch::Disabled),
                StateChange::Inherit => None,
            },
        })
    }
}

/// The policy scope of a realm.
pub fn realm_scope(realm: &c2_kernel::Realm) -> Scope {
    match realm {
        c2_kernel::Realm::Global => Scope::User,
        c2_kernel::Realm::Project(key) => Scope::Project(key.as_str().to_owned()),
    }
}

impl PluginHost {
    /// `disabled` when policy withholds `<kind>:<local_id>` of `bundle` in `realm`.
    pub(crate) fn refuse_withheld(
        &self,
        bundle: &InstalledBundle,
        realm: &c2_kernel::Realm,
        kind: ContributionKind,
        local_id: &str,
    ) -> Result<(), HostError> {
        let component = component_id(kind, local_id);
        if self
            .shared
            .withheld(bundle, &realm_scope(realm))
            .contains(&component)
        {
            return Err(disabled_error(
                &bundle.record.id,
                &component,
                &crate::states::realm_text(realm),
            ));
        }
        Ok(())
    }
}

/// Published on the kernel's typed bus when a replace dropped component choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentChoicesDropped {
    /// The installed id that was replaced.
    pub id: String,
    /// What was dropped.
    pub dropped: Vec<DroppedChoice>,
}

impl PluginHost {
    /// The replace hook: after `record` replaced a bundle of the same id, drops (in one policy
    /// change) every component choice naming a local id the new content no longer has, and
    /// reports each once (returned, logged, and published as [`ComponentChoicesDropped`]).
    /// Choices whose local id is still there are kept: they are keyed by id.
    pub(crate) async fn drop_vanished_choices(
        &self,
        record: &InstalledRecord,
    ) -> Result<Vec<DroppedChoice>, HostError> {
        let module = crate::bundle::module_name(&record.id);
        let prefix = format!("{}:", record.id);
        let present = record.switchable();
        let dropped: Vec<DroppedChoice> = {
            let policy = lock(&self.shared.policy);
            let Some(document) = policy.document() else {
                return Ok(Vec::new());
            };
            let scopes = document
                .user
                .get(&module)
                .map(|entry| ("user".to_owned(), entry))
                .into_iter()
                .chain(document.projects.iter().filter_map(|(key, entries)| {
                    entries.get(&module).map(|entry| (key.clone(), entry))
                }));
            scopes
                .flat_map(|(scope, entry)| {
                    entry
                        .components
                        .keys()
                        .filter(|key| {
                            key.strip_prefix(&prefix)
                                .is_none_or(|local| !present.contains(local))
                        })
                        .map(move |key| DroppedChoice {
                            id: record.id.clone(),
                            component: key.clone(),
                            scope: scope.clone(),
                        })
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        if dropped.is_empty() {
            return Ok(dropped);
        }
        let components: BTreeSet<String> = dropped.iter().map(|d| d.component.clone()).collect();
        self.change(
            module,
            Scope::User,
            ChangeKind::ForgetComponents(components.into_iter().collect()),
        )
        .await?;
        for choice in &dropped {
            // The caller shows the outcome's note; the log keeps a record without repeating it.
            tracing::info!(
                bundle = %choice.id,
                component = %choice.component,
                scope = %choice.scope,
                "dropped a component choice: the reinstalled bundle has no such component"
            );
        }
        self.shared.kernel.emit_typed(ComponentChoicesDropped {
            id: record.id.clone(),
            dropped: dropped.clone(),
        });
        Ok(dropped)
    }
}

/// Whether the policy stored in `plugins_dir` disables `component` of installed bundle `id`
/// for the user: for a command that reads the store without opening a host (`scaffold`).
/// Reading never writes; an unusable policy disables nothing (safe mode runs no bundle code,
/// and a scaffold copies files only).
pub fn disabled_for_user(
    plugins_dir: &std::path::Path,
    id: &str,
    component: &ComponentRef,
) -> bool {
    let store = c2_policy::PolicyStore::open(plugins_dir, c2_policy::PolicyOptions::default());
    store
        .document()
        .and_then(|document| document.entry(&crate::bundle::module_name(id), &Scope::User))
        .and_then(|entry| entry.components.get(&component.policy_key(id)))
        == Some(&ComponentSwitch::Disabled)
}
