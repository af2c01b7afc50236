use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Instant;

use serde_json::Value;

use crate::catalog::{Catalog, CatalogModule};
use crate::document::{ComponentSwitch, PolicyDocument, Scope, Switch};
use crate::error::{ConfigIssue, Error};

/// One edit of one module's policy in one scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The module's catalog name (e.g. `bundle:<id>`).
    pub module: String,
    /// The user scope or one project's.
    pub scope: Scope,
    /// What to change.
    pub kind: ChangeKind,
}

/// What a [`Change`] does to the module's entry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChangeKind {
    /// Switch the module on in the scope.
    Enable,
    /// Switch the module off in the scope; refused for essential modules and what they need.
    Disable,
    /// Project scope only: follow the user entry again.
    Inherit,
    /// Replace the configuration; validated against the module's schema.
    Configure(Value),
    /// User scope only: trust this content digest (must be the installed one).
    Trust(String),
    /// User scope only.
    Untrust,
    /// User scope only: [`ChangeKind::Trust`] and [`ChangeKind::Enable`] as one revision, so
    /// both hold or, when the host cannot reach the state, neither does (an install asked
    /// for both).
    TrustAndEnable(String),
    /// Set (`Some`) or clear (`None`) one component's override.
    SetComponent {
        /// The component id (e.g. `skill:review`).
        component: String,
        /// The override, or `None` to follow the plugin switch again.
        state: Option<ComponentSwitch>,
    },
    /// User scope only: drop these component ids' overrides in every scope (the user's and
    /// every project's), e.g. because the installed bundle no longer has those components.
    ForgetComponents(Vec<String>),
}

impl ChangeKind {
    /// What an install asks for content of `digest`: trust, enablement, or both as one
    /// revision ([`ChangeKind::TrustAndEnable`]); `None` for neither.
    pub fn for_install(trust: bool, enable: bool, digest: &str) -> Option<Self> {
        match (trust, enable) {
            (true, true) => Some(Self::TrustAndEnable(digest.to_owned())),
            (true, false) => Some(Self::Trust(digest.to_owned())),
            (false, true) => Some(Self::Enable),
            (false, false) => None,
        }
    }
}

/// The runtime revisions the host reports; the config revision is the store's own.
///
/// The project revision is kept per normalized project key (a key the host has never
/// reported counts as 0): the host bumps it whenever that project's realm is created,
/// reclaimed or rebuilt, so a plan made against one realm instance is not applied to another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revisions {
    /// The kernel's graph revision.
    pub graph: u64,
    /// Each project realm's revision, by normalized project key.
    pub projects: BTreeMap<String, u64>,
}

impl Revisions {
    /// The revision of project `key`'s realm; 0 when the host has not reported it.
    pub fn project(&self, key: &str) -> u64 {
        self.projects.get(key).copied().unwrap_or(0)
    }
}

/// Every revision a plan depends on, captured when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRevisions {
    /// The kernel's graph revision.
    pub graph: u64,
    /// The policy document's revision.
    pub config: u64,
    /// Recorded for project-scope changes only.
    pub project: Option<u64>,
}

/// The exact effect of a change, for the user to confirm.
///
/// Starting means becoming eligible (enabled and trusted); stopping means leaving that state.
/// Dependents transitively require a stopped or reloaded module and go down with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impact {
    /// Modules that become eligible to run.
    pub starts: Vec<String>,
    /// Modules that stop being eligible.
    pub stops: Vec<String>,
    /// Modules that keep running but restart with new configuration or components.
    pub reloads: Vec<String>,
    /// Modules that go down because they require a stopped or reloaded one.
    pub dependents: Vec<String>,
    /// `module: resource` for every live resource a stop, reload or dependent touches.
    pub resources: Vec<String>,
}

impl Impact {
    /// Whether the change has no runtime effect at all.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Identifies a plan within one store instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlanId(pub u64);

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plan-{}", self.0)
    }
}

/// A validated change waiting to be applied once.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What [`crate::PolicyStore::apply_change`] takes.
    pub id: PlanId,
    /// The validated change.
    pub change: Change,
    /// Its effect, to show before applying.
    pub impact: Impact,
    /// The revisions it was made against; applying refuses if any moved.
    pub revisions: RecordedRevisions,
    /// After this the plan cannot be applied.
    pub expires_at: Instant,
}

/// Validates `change` against `catalog` and returns the document after it and its impact.
pub(crate) fn evaluate(
    before: &PolicyDocument,
    change: &Change,
    catalog: &Catalog,
) -> Result<(PolicyDocument, Impact), Error> {
    let module = catalog
        .get(&change.module)
        .ok_or_else(|| Error::UnknownModule(change.module.clone()))?;
    validate(module, change)?;

    let mut after = before.clone();
    if let ChangeKind::ForgetComponents(components) = &change.kind {
        after.forget_components(&module.name, components);
    }
    let entry = after.entry_mut(&module.name, &change.scope);
    match &change.kind {
        ChangeKind::ForgetComponents(_) => {}
        ChangeKind::Enable => entry.state = Switch::Enabled,
        ChangeKind::Disable => entry.state = Switch::Disabled,
        ChangeKind::Inherit => entry.state = Switch::Inherit,
        ChangeKind::Configure(value) => entry.config = Some(value.clone()),
        ChangeKind::Trust(digest) => entry.trusted_digest = Some(digest.clone()),
        ChangeKind::TrustAndEnable(digest) => {
            entry.trusted_digest = Some(digest.clone());
            entry.state = Switch::Enabled;
        }
        ChangeKind::Untrust => entry.trusted_digest = None,
        ChangeKind::SetComponent { component, state } => match state {
            Some(state) => {
                entry.components.insert(component.clone(), *state);
            }
            None => {
                entry.components.remove(component);
            }
        },
    }
    after.prune();

    let impact = impact(before, &after, module, &change.scope, catalog);
    if let Some(essential) = impact
        .stops
        .iter()
        .chain(&impact.dependents)
        .find(|name| catalog.get(name).is_some_and(|module| module.essential))
    {
        return Err(Error::EssentialProtected {
            essential: essential.clone(),
        });
    }
    Ok((after, impact))
}

fn validate(module: &CatalogModule, change: &Change) -> Result<(), Error> {
    let project = matches!(change.scope, Scope::Project(_));
    if project && !module.project_capable {
        return Err(Error::ProjectScopeNotSupported(module.name.clone()));
    }
    match &change.kind {
        ChangeKind::Disable if module.essential => Err(Error::EssentialProtected {
            essential: module.name.clone(),
        }),
        ChangeKind::Inherit if !project => Err(Error::InheritIsProjectOnly),
        ChangeKind::Trust(_) | ChangeKind::TrustAndEnable(_) | ChangeKind::Untrust if project => {
            Err(Error::TrustIsUserWide)
        }
        ChangeKind::ForgetComponents(_) if project => Err(Error::ForgetIsEveryScope),
        ChangeKind::Trust(digest) | ChangeKind::TrustAndEnable(digest) => match &module.digest {
            None => Err(Error::NotTrustable(module.name.clone())),
            Some(installed) if installed != digest => Err(Error::DigestMismatch {
                module: module.name.clone(),
                given: digest.clone(),
                installed: installed.clone(),
            }),
            Some(_) => Ok(()),
        },
        ChangeKind::Configure(value) => validate_config(module, value),
        _ => Ok(()),
    }
}

fn validate_config(module: &CatalogModule, value: &Value) -> Result<(), Error> {
    let schema = module
        .config_schema
        .as_ref()
        .ok_or_else(|| Error::NotConfigurable(module.name.clone()))?;
    let validator = jsonschema::validator_for(schema).map_err(|error| Error::InvalidSchema {
        module: module.name.clone(),
        reason: error.to_string(),
    })?;
    let issues: Vec<ConfigIssue> = validator
        .iter_errors(value)
        .map(|error| ConfigIssue {
            instance_path: error.instance_path().to_string(),
            message: error.to_string(),
        })
        .collect();
    if issues.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidConfig {
            module: module.name.clone(),
            issues,
        })
    }
}

fn impact(
    before: &PolicyDocument,
    after: &PolicyDocument,
    module: &CatalogModule,
    scope: &Scope,
    catalog: &Catalog,
) -> Impact {
    let was = before.resolve(module, scope);
    let will = after.resolve(module, scope);
    let name = module.name.clone();
    let mut impact = Impact::default();
    match (was.is_runnable(), will.is_runnable()) {
        (false, true) => impact.starts.push(name),
        (true, false) => impact.stops.push(name),
        (true, true) if was.config != will.config || was.components != will.components => {
            impact.reloads.push(name);
        }
        _ => {}
    }
    let touched: BTreeSet<&str> = impact
        .stops
        .iter()
        .chain(&impact.reloads)
        .map(String::as_str)
        .collect();
    impact.dependents = catalog
        .dependents_closure(touched.iter().copied())
        .into_iter()
        .collect();
    let affected = touched
        .iter()
        .copied()
        .chain(impact.dependents.iter().map(String::as_str));
    for affected in affected {
        for resource in catalog
            .get(affected)
            .map(|m| m.active_resources.as_slice())
            .unwrap_or_default()
        {
            impact.resources.push(format!("{affected}: {resource}"));
        }
    }
    impact
}
