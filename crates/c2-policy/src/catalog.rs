use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// What the host knows about one module, as seen from the scope being planned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CatalogModule {
    /// The module's name (e.g. `bundle:<id>`, `git`).
    pub name: String,
    /// Whether a project may override the user entry (scope support beyond the user scope).
    pub project_capable: bool,
    /// Essential modules keep the management plane alive: never disabled, always desired.
    pub essential: bool,
    /// Whether the module runs when no policy entry says otherwise.
    pub default_enabled: bool,
    /// JSON Schema for the configuration; `None` means the module takes no configuration.
    pub config_schema: Option<Value>,
    /// Modules that require this one directly.
    pub dependents: Vec<String>,
    /// Live resources (leases, sessions, tasks) this module holds right now.
    pub active_resources: Vec<String>,
    /// Content digest of the installed bundle; `None` for built-in modules, which need no trust.
    pub digest: Option<String>,
}

/// The host's modules, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    modules: BTreeMap<String, CatalogModule>,
}

impl Catalog {
    /// Later modules with an already seen name replace earlier ones.
    pub fn new(modules: impl IntoIterator<Item = CatalogModule>) -> Self {
        Self {
            modules: modules
                .into_iter()
                .map(|module| (module.name.clone(), module))
                .collect(),
        }
    }

    /// The module named `name`.
    pub fn get(&self, name: &str) -> Option<&CatalogModule> {
        self.modules.get(name)
    }

    /// Every module, by name.
    pub fn modules(&self) -> impl Iterator<Item = &CatalogModule> {
        self.modules.values()
    }

    /// Everything that transitively requires any of `roots`, excluding the roots.
    pub fn dependents_closure<'a>(
        &self,
        roots: impl IntoIterator<Item = &'a str>,
    ) -> BTreeSet<String> {
        let roots: BTreeSet<&str> = roots.into_iter().collect();
        let mut seen = BTreeSet::new();
        let mut queue: Vec<&str> = roots.iter().copied().collect();
        while let Some(name) = queue.pop() {
            for dependent in self
                .get(name)
                .map(|module| module.dependents.as_slice())
                .unwrap_or_default()
            {
                if !roots.contains(dependent.as_str()) && seen.insert(dependent.clone()) {
                    queue.push(dependent);
                }
            }
        }
        seen
    }

    /// Essential modules and everything they transitively require: what safe mode keeps.
    pub fn essential_closure(&self) -> BTreeSet<String> {
        let mut requires: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for module in self.modules.values() {
            for dependent in &module.dependents {
                requires.entry(dependent).or_default().push(&module.name);
            }
        }
        let mut seen = BTreeSet::new();
        let mut queue: Vec<&str> = self
            .modules
            .values()
            .filter(|module| module.essential)
            .map(|module| module.name.as_str())
            .collect();
        while let Some(name) = queue.pop() {
            if seen.insert(name.to_owned()) {
                queue.extend(requires.get(name).into_iter().flatten().copied());
            }
        }
        seen
    }
}
