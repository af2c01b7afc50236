//! The Core management module: `plugins.*` and `extensions.list` as ordinary registered
//! commands, so a frontend reaches the plugin manager through the same registry as everything
//! else. It is essential (never disabled, kept in safe mode) and internal: no command here is
//! extension-public, so a plugin cannot manage plugins.

use std::path::PathBuf;

use c2_kernel::{
    BoxFuture, CommandSpec, DefaultState, Error as KernelError, Module, ModuleMeta, Role,
    ScopeContext, command_handler,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ErrorKind, HostError, raise};
use crate::host::{PluginHost, StateChange, Target, lock};
use crate::options::InstallOptions;
use crate::seam::{CommandOp, Registry, WeakHost};

/// The essential module that carries the management plane.
pub(crate) struct ManagementModule {
    host: WeakHost,
}

impl std::fmt::Debug for ManagementModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagementModule").finish_non_exhaustive()
    }
}

impl ManagementModule {
    pub(crate) const NAME: &'static str = "plugins";

    pub(crate) fn new(host: WeakHost) -> Self {
        Self { host }
    }
}

/// Registers the management plane with a host that is opening.
pub(crate) fn install(registry: &mut Registry<'_>) {
    let module = ManagementModule::new(registry.weak_host());
    registry.module(std::sync::Arc::new(module), 1);
}

fn failure(error: HostError) -> KernelError {
    error.into_kernel()
}

fn args<T: for<'de> Deserialize<'de>>(value: Value, command: &str) -> Result<T, KernelError> {
    let value = if value.is_null() { json!({}) } else { value };
    serde_json::from_value(value)
        .map_err(|error| raise(ErrorKind::InvalidArgs, format!("{command}: {error}")))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, KernelError> {
    serde_json::to_value(value).map_err(|error| raise(ErrorKind::CommandFailed, error.to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectArgs {
    project: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetArgs {
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstallArgs {
    source: String,
    #[serde(default)]
    trust: bool,
    #[serde(default)]
    enable: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeveloperModeArgs {
    enabled: bool,
    path: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum Action {
    Enable,
    Disable,
    Inherit,
    Configure,
    Trust,
    Untrust,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    id: String,
    action: Action,
    project: Option<PathBuf>,
    config: Option<Value>,
    /// `<kind>:<local-id>`: a per-component choice (enable, disable, inherit).
    component: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ApplyArgs {
    plan_id: u64,
}

fn target(project: Option<PathBuf>) -> Target {
    project.map_or(Target::User, Target::Project)
}

impl Module for ManagementModule {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn meta(&self) -> ModuleMeta {
        let mut meta = ModuleMeta::new(Role::Core, "c2", "management");
        meta.essential = true;
        meta.default_state = DefaultState::Enabled;
        meta
    }

    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            let commands: [(&str, &str, CommandOp); 13] = [
                (
                    "plugins.catalog",
                    "Catalog of modules and bundles with their state",
                    |host, value| {
                        Box::pin(async move {
                            let a: ProjectArgs = args(value, "plugins.catalog")?;
                            to_json(&host.catalog(&target(a.project)).map_err(failure)?)
                        })
                    },
                ),
                ("plugins.list", "Installed bundles", |host, value| {
                    Box::pin(async move {
                        let _: ProjectArgs = args(value, "plugins.list")?;
                        to_json(&host.list())
                    })
                }),
                (
                    "extensions.list",
                    "Installed bundles by trust and runtime state",
                    |host, value| {
                        Box::pin(async move {
                            let _: ProjectArgs = args(value, "extensions.list")?;
                            to_json(&host.extensions())
                        })
                    },
                ),
                (
                    "plugins.plan_change",
                    "Plan a policy change and show its impact",
                    |host, value| {
                        Box::pin(async move {
                            let a: PlanArgs = args(value, "plugins.plan_change")?;
                            let kind = match a.component {
                                Some(component) => a.action.into_component(component, a.config)?,
                                None => a.action.into_kind(a.config)?,
                            };
                            host.plan_in_process(a.id, kind, target(a.project))
                                .await
                                .map_err(failure)
                        })
                    },
                ),
                (
                    "plugins.apply_change",
                    "Apply a planned change while its revisions are current",
                    |host, value| {
                        Box::pin(async move {
                            let a: ApplyArgs = args(value, "plugins.apply_change")?;
                            to_json(&host.apply_in_process(a.plan_id).await.map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.reset",
                    "Clear one plugin's policy, or all policy (leaves safe mode)",
                    |host, value| {
                        Box::pin(async move {
                            let a: ResetArgs = args(value, "plugins.reset")?;
                            Ok(
                                json!({ "revision": host.reset(a.id.as_deref()).await.map_err(failure)? }),
                            )
                        })
                    },
                ),
                (
                    "plugins.install",
                    "Install a bundle (runs nothing from it)",
                    |host, value| {
                        Box::pin(async move {
                            let a: InstallArgs = args(value, "plugins.install")?;
                            let options = InstallOptions {
                                trust: a.trust,
                                enable: a.enable,
                            };
                            to_json(&host.install(&a.source, options).await.map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.uninstall",
                    "Stop and remove a bundle",
                    |host, value| {
                        Box::pin(async move {
                            let a: IdArgs = args(value, "plugins.uninstall")?;
                            to_json(&host.uninstall(&a.id).await.map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.trust",
                    "Trust a bundle's installed content",
                    |host, value| {
                        Box::pin(async move {
                            let a: IdArgs = args(value, "plugins.trust")?;
                            to_json(&host.trust(&a.id).await.map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.untrust",
                    "Withdraw trust; its processes stop",
                    |host, value| {
                        Box::pin(async move {
                            let a: IdArgs = args(value, "plugins.untrust")?;
                            to_json(&host.untrust(&a.id).await.map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.developer_status",
                    "Development bundles",
                    |host, value| {
                        Box::pin(async move {
                            let _: ProjectArgs = args(value, "plugins.developer_status")?;
                            to_json(&host.developer_status().map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.set_developer_mode",
                    "Develop a directory, or end developer mode",
                    |host, value| {
                        Box::pin(async move {
                            let a: DeveloperModeArgs = args(value, "plugins.set_developer_mode")?;
                            match (a.enabled, a.path) {
                                (true, Some(path)) => host.develop(&path).await.map(drop),
                                (true, None) => Err(HostError::command(
                                    ErrorKind::InvalidArgs,
                                    "developer mode needs `path`, the working directory",
                                )),
                                (false, _) => host.end_development(None).await.map(drop),
                            }
                            .map_err(failure)?;
                            to_json(&host.developer_status().map_err(failure)?)
                        })
                    },
                ),
                (
                    "plugins.reload_development",
                    "Reload development bundles from their directories",
                    |host, value| {
                        Box::pin(async move {
                            let a: ResetArgs = args(value, "plugins.reload_development")?;
                            host.reload_development(a.id.as_deref())
                                .await
                                .map_err(failure)?;
                            to_json(&host.developer_status().map_err(failure)?)
                        })
                    },
                ),
            ];
            // The commands contributions add to the management plane (seam::Registry::command).
            let added = self.host.upgrade().map_or_else(Vec::new, |host| {
                host.shared
                    .wired
                    .get()
                    .map_or_else(Vec::new, |wired| wired.commands().to_vec())
            });
            for (name, title, op) in commands.into_iter().chain(added) {
                let weak = self.host.clone();
                ctx.register_command(
                    name,
                    CommandSpec::new(title),
                    command_handler(move |_call, value| {
                        let host = weak.upgrade();
                        async move {
                            match host {
                                Some(host) => op(host, value).await,
                                None => {
                                    Err(raise(ErrorKind::ShutDown, "the host is shutting down"))
                                }
                            }
                        }
                    }),
                )?;
            }
            Ok(())
        })
    }
}

impl Action {
    fn into_component(
        self,
        component: String,
        config: Option<Value>,
    ) -> Result<PlannedKind, KernelError> {
        let state = match (self, config) {
            (Action::Enable, None) => StateChange::Enable,
            (Action::Disable, None) => StateChange::Disable,
            (Action::Inherit, None) => StateChange::Inherit,
            _ => {
                return Err(raise(
                    ErrorKind::InvalidArgs,
                    "a component takes enable, disable or inherit, without `config`",
                ));
            }
        };
        let component = crate::components::ComponentRef::parse(&component)
            .map_err(|error| failure(error.into()))?;
        Ok(PlannedKind::Component(component, state))
    }

    fn into_kind(self, config: Option<Value>) -> Result<PlannedKind, KernelError> {
        Ok(match (self, config) {
            (Action::Configure, Some(config)) => PlannedKind::Configure(config),
            (Action::Configure, None) => {
                return Err(raise(ErrorKind::InvalidArgs, "configure needs `config`"));
            }
            (_, Some(_)) => {
                return Err(raise(
                    ErrorKind::InvalidArgs,
                    "only configure takes `config`",
                ));
            }
            (Action::Enable, None) => PlannedKind::State(StateChange::Enable),
            (Action::Disable, None) => PlannedKind::State(StateChange::Disable),
            (Action::Inherit, None) => PlannedKind::State(StateChange::Inherit),
            (Action::Trust, None) => PlannedKind::Trust,
            (Action::Untrust, None) => PlannedKind::Untrust,
        })
    }
}

/// A change planned through `plugins.plan_change`.
pub(crate) enum PlannedKind {
    State(StateChange),
    Configure(Value),
    Trust,
    Untrust,
    Component(crate::components::ComponentRef, StateChange),
}

impl PluginHost {
    /// `plugins.plan_change`: records a single-use plan in this host and returns its id and impact.
    pub(crate) async fn plan_in_process(
        &self,
        id: String,
        kind: PlannedKind,
        target: Target,
    ) -> Result<Value, HostError> {
        let _changes = self.shared.changes.lock().await;
        self.catch_up_locked().await;
        let module = self.bundle(&id)?;
        let scope = match &target {
            Target::User => c2_policy::Scope::User,
            Target::Project(path) => c2_policy::Scope::Project(self.register_project(path)?),
        };
        let kind = match kind {
            PlannedKind::State(StateChange::Enable) => c2_policy::ChangeKind::Enable,
            PlannedKind::State(StateChange::Disable) => c2_policy::ChangeKind::Disable,
            PlannedKind::State(StateChange::Inherit) => c2_policy::ChangeKind::Inherit,
            PlannedKind::Configure(config) => c2_policy::ChangeKind::Configure(config),
            PlannedKind::Trust => {
                self.shared
                    .verify_content(module.bundle())
                    .map_err(|message| HostError::command(ErrorKind::ContentChanged, message))?;
                c2_policy::ChangeKind::Trust(module.bundle().record.digest.clone())
            }
            PlannedKind::Untrust => c2_policy::ChangeKind::Untrust,
            PlannedKind::Component(component, state) => {
                self.component_change(module.bundle(), &scope, &component, state)?
            }
        };
        let catalog = self.policy_catalog();
        let revisions = self.revisions();
        let plan = lock(&self.shared.policy).plan_change(
            c2_policy::Change {
                module: module.bundle().module_name().to_owned(),
                scope,
                kind,
            },
            &catalog,
            &revisions,
            self.shared.options.clock.now(),
        )?;
        Ok(json!({
            "planId": plan.id.0,
            "impact": self.describe_impact(plan.impact, &plan.change.scope),
            "revisions": {
                "graph": plan.revisions.graph,
                "config": plan.revisions.config,
                "project": plan.revisions.project,
            },
        }))
    }

    /// `plugins.apply_change`: applies a plan recorded by `plugins.plan_change`, once.
    pub(crate) async fn apply_in_process(
        &self,
        plan_id: u64,
    ) -> Result<crate::host::Applied, HostError> {
        let _changes = self.shared.changes.lock().await;
        let id = c2_policy::PlanId(plan_id);
        let change = lock(&self.shared.policy)
            .plan(id)
            .map(|plan| plan.change.clone())
            .ok_or(HostError::Policy(c2_policy::Error::UnknownPlan(id)))?;
        let revisions = self.revisions();
        self.apply_locked(id, change, &revisions).await
    }
}
