//! Plan files: a planned policy change written to disk by one process and applied by another
//! (`c2-plugins plan` then `c2-plugins apply`), accepted only while every revision it recorded
//! is still current.

use std::path::PathBuf;

use c2_policy::{Change, ChangeKind, RevisionKind, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bundle::module_name;
use crate::components::ComponentRef;
use crate::error::{ErrorKind, HostError};
use crate::host::{Applied, ImpactView, PluginHost, StateChange, lock};

/// The plan file format version.
pub const PLAN_FORMAT: u32 = 1;

/// What a plan changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "action")]
#[non_exhaustive]
pub enum PlanAction {
    /// Enable the bundle in the scope.
    Enable,
    /// Disable the bundle in the scope.
    Disable,
    /// Project only: follow the user's choice.
    Inherit,
    /// Replace the configuration.
    Configure {
        /// The new configuration value.
        config: Value,
    },
}

/// The revisions a plan depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanRevisions {
    /// The factory set fingerprint.
    pub graph: u64,
    /// The policy document revision.
    pub config: u64,
    /// The project realm revision, for project changes.
    pub project: Option<u64>,
}

/// A plan as written to a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanFile {
    /// [`PLAN_FORMAT`].
    pub format: u32,
    /// The installed bundle id.
    pub id: String,
    /// The normalized project, for a project change.
    pub project: Option<PathBuf>,
    /// The change.
    pub change: PlanAction,
    /// For a per-component choice: the component, `<kind>:<local-id>` (enable, disable and
    /// inherit only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The revisions it was planned against.
    pub revisions: PlanRevisions,
    /// What applying it does, as planned.
    pub impact: ImpactView,
}

impl PluginHost {
    fn plan_change(
        &self,
        id: &str,
        scope: Scope,
        action: &PlanAction,
        component: Option<&str>,
    ) -> Result<Change, HostError> {
        let kind = match (action, component) {
            (PlanAction::Configure { .. }, Some(_)) => {
                return Err(HostError::command(
                    ErrorKind::InvalidArgs,
                    "a component is enabled, disabled or inherited, not configured: drop --component",
                ));
            }
            (action, Some(component)) => {
                let state = match action {
                    PlanAction::Enable => StateChange::Enable,
                    PlanAction::Disable => StateChange::Disable,
                    _ => StateChange::Inherit,
                };
                let component = ComponentRef::parse(component)?;
                let module = self.bundle(id)?;
                self.component_change(module.bundle(), &scope, &component, state)?
            }
            (PlanAction::Enable, None) => ChangeKind::Enable,
            (PlanAction::Disable, None) => ChangeKind::Disable,
            (PlanAction::Inherit, None) => ChangeKind::Inherit,
            (PlanAction::Configure { config }, None) => ChangeKind::Configure(config.clone()),
        };
        Ok(Change {
            module: module_name(id),
            scope,
            kind,
        })
    }

    fn scope_for(&self, project: Option<&PathBuf>) -> Result<(Scope, Option<PathBuf>), HostError> {
        match project {
            None => Ok((Scope::User, None)),
            Some(path) => {
                let key = self.register_project(path)?;
                Ok((Scope::Project(key.clone()), Some(PathBuf::from(key))))
            }
        }
    }

    fn plan_now(&self, change: Change) -> Result<c2_policy::Plan, HostError> {
        let catalog = self.policy_catalog();
        let revisions = self.revisions();
        Ok(lock(&self.shared.policy).plan_change(
            change,
            &catalog,
            &revisions,
            self.shared.options.clock.now(),
        )?)
    }

    /// Plans a change and returns it as a file's content; nothing changes until it is applied.
    pub async fn plan(
        &self,
        id: &str,
        project: Option<&PathBuf>,
        action: PlanAction,
    ) -> Result<PlanFile, HostError> {
        self.plan_component(id, project, action, None).await
    }

    /// [`Self::plan`] of a per-component choice when `component` (`<kind>:<local-id>`) is
    /// given: `enable`, `disable` or `inherit` of that component only.
    pub async fn plan_component(
        &self,
        id: &str,
        project: Option<&PathBuf>,
        action: PlanAction,
        component: Option<&str>,
    ) -> Result<PlanFile, HostError> {
        let _changes = self.shared.changes.lock().await;
        self.catch_up_locked().await;
        self.bundle(id)?;
        let (scope, project) = self.scope_for(project)?;
        let change = self.plan_change(id, scope, &action, component)?;
        let plan = self.plan_now(change)?;
        Ok(PlanFile {
            format: PLAN_FORMAT,
            id: id.to_owned(),
            project,
            change: action,
            component: component.map(str::to_owned),
            revisions: PlanRevisions {
                graph: plan.revisions.graph,
                config: plan.revisions.config,
                project: plan.revisions.project,
            },
            impact: self.describe_impact(plan.impact, &plan.change.scope),
        })
    }

    /// Applies a plan file while every revision it recorded is current; otherwise `stale plan`.
    pub async fn apply_plan(&self, file: &PlanFile) -> Result<Applied, HostError> {
        if file.format != PLAN_FORMAT {
            return Err(HostError::PlanFile(format!(
                "plan format {} is not supported (this host writes {PLAN_FORMAT}): plan again",
                file.format
            )));
        }
        let _changes = self.shared.changes.lock().await;
        self.catch_up_locked().await;
        self.bundle(&file.id)?;
        let (scope, _) = self.scope_for(file.project.as_ref())?;
        let change = self.plan_change(&file.id, scope, &file.change, file.component.as_deref())?;
        let plan = self.plan_now(change)?;
        let now = &plan.revisions;
        let planned = &file.revisions;
        let stale = [
            (RevisionKind::Graph, planned.graph, now.graph),
            (RevisionKind::Config, planned.config, now.config),
            (
                RevisionKind::Project,
                planned.project.unwrap_or(0),
                now.project.unwrap_or(0),
            ),
        ]
        .into_iter()
        .find(|(_, planned, current)| planned != current);
        if let Some((kind, planned, current)) = stale {
            // The fresh plan is simply left to expire.
            return Err(HostError::Policy(c2_policy::Error::StalePlan {
                kind,
                planned,
                current,
            }));
        }
        let revisions = self.revisions();
        self.apply_locked(plan.id, plan.change, &revisions).await
    }
}
