//! The reconcile planner: what each built realm's slots should hold (eligibility, intent,
//! configuration, withheld parts and the build key they add up to), which live scopes must go
//! and in what order, which modules are ready to apply, and the states a catalog reports.

use super::*;
use crate::ModuleIntent;

impl State {
    pub(super) fn built_realms(&self) -> Vec<Realm> {
        let projects = self.projects.iter().filter(|(_, graph)| graph.built);
        std::iter::once(Realm::Global)
            .chain(projects.map(|(key, _)| Realm::Project(key.clone())))
            .collect()
    }

    pub(super) fn slots(&self, realm: &Realm) -> Option<&BTreeMap<String, Slot>> {
        match realm {
            Realm::Global => Some(&self.global),
            Realm::Project(key) => self.projects.get(key).map(|graph| &graph.slots),
        }
    }

    /// The names of `realm`'s slots, owned, for a walk that changes the slots.
    fn slot_names(&self, realm: &Realm) -> Vec<String> {
        self.slots(realm)
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }

    pub(super) fn slots_mut(&mut self, realm: &Realm) -> Option<&mut BTreeMap<String, Slot>> {
        match realm {
            Realm::Global => Some(&mut self.global),
            Realm::Project(key) => self.projects.get_mut(key).map(|graph| &mut graph.slots),
        }
    }

    pub(super) fn eligible(factory: &Factory, realm: &Realm) -> bool {
        factory.meta.supports(scope_kind(realm))
    }

    /// `pick` of the module's intent, resolved by inheritance: the project's own when it has
    /// one, else the user's.
    fn intent<T>(
        &self,
        realm: &Realm,
        name: &str,
        pick: impl Fn(&ModuleIntent) -> Option<T>,
    ) -> Option<T> {
        let project = match realm {
            Realm::Project(key) => self
                .project_desired
                .get(key)
                .and_then(|d| pick(d.modules.get(name)?)),
            Realm::Global => None,
        };
        project.or_else(|| pick(self.desired.modules.get(name)?))
    }

    /// Policy intent resolved by inheritance: project, then user, then the module default.
    pub(super) fn enabled(&self, realm: &Realm, name: &str, factory: &Factory) -> bool {
        factory.meta.essential
            || self
                .intent(realm, name, |intent| intent.enabled)
                .unwrap_or(factory.meta.default_state == DefaultState::Enabled)
    }

    pub(super) fn config(&self, realm: &Realm, name: &str) -> Value {
        self.intent(realm, name, |intent| intent.config.clone())
            .unwrap_or(Value::Null)
    }

    pub(super) fn withheld(&self, realm: &Realm, name: &str) -> BTreeSet<String> {
        self.intent(realm, name, |intent| intent.withheld.clone())
            .unwrap_or_default()
    }

    /// The key the module would be built from now, or the required services that are missing.
    pub(super) fn key_for(&self, realm: &Realm, name: &str) -> Result<BuildKey, Vec<String>> {
        let Some(factory) = self.factories.get(name) else {
            return Err(Vec::new());
        };
        let mut missing = Vec::new();
        let mut services = Vec::new();
        for (service, required) in factory
            .inject
            .iter()
            .map(|s| (s, true))
            .chain(factory.optional.iter().map(|s| (s, false)))
        {
            let stamp = self
                .registry
                .service(realm, service)
                .map(|entry| (entry.revision, entry.provider));
            if required && stamp.is_none() {
                missing.push(service.clone());
            }
            services.push((service.clone(), stamp));
        }
        if missing.is_empty() {
            Ok(BuildKey {
                revision: factory.revision,
                config: self.config(realm, name),
                withheld: self.withheld(realm, name),
                services,
            })
        } else {
            Err(missing)
        }
    }

    /// Makes every built realm hold exactly one slot per eligible factory; slots of vanished or
    /// ineligible factories are dropped once they hold no scope.
    pub(super) fn sync_slots(&mut self) {
        for realm in self.built_realms() {
            let Some(slots) = self.slots(&realm) else {
                continue;
            };
            // In name order, as the factories are kept: searched, not scanned, per slot.
            let eligible: Vec<&String> = self
                .factories
                .iter()
                .filter(|(_, factory)| Self::eligible(factory, &realm))
                .map(|(name, _)| name)
                .collect();
            let added: Vec<String> = eligible
                .iter()
                .filter(|name| !slots.contains_key(name.as_str()))
                .map(|name| (*name).clone())
                .collect();
            let dropped: Vec<String> = slots
                .iter()
                .filter(|(name, slot)| {
                    slot.scope.is_none() && eligible.binary_search(name).is_err()
                })
                .map(|(name, _)| name.clone())
                .collect();
            if added.is_empty() && dropped.is_empty() {
                continue;
            }
            let Some(slots) = self.slots_mut(&realm) else {
                continue;
            };
            for name in dropped {
                slots.remove(&name);
            }
            for name in added {
                slots.insert(name, Slot::default());
            }
        }
    }

    /// Detaches every live module scope that no longer matches policy, its factory or its
    /// services, plus everything built on those, dependents first.
    pub(super) fn plan_disposals(&mut self, out: &mut Vec<PendingCleanup>) -> bool {
        self.sync_slots();
        let mut changed = false;
        let mut doomed: Vec<(Realm, String, ScopeId, u64)> = Vec::new();
        let mut live: Vec<(Realm, String, ScopeId, u64, BuildKey)> = Vec::new();
        for realm in self.built_realms() {
            let names = self.slot_names(&realm);
            for name in names {
                let (scope, key, seq, failed) = match self.slots(&realm).and_then(|s| s.get(&name))
                {
                    Some(Slot {
                        scope: Some(scope),
                        key: Some(key),
                        seq,
                        failed_key,
                        ..
                    }) => (*scope, key.clone(), *seq, failed_key.as_ref() == Some(key)),
                    _ => continue,
                };
                if !self.registry.is_live(scope) {
                    // Disposed from outside (a handle's `dispose`): forget it so it is rebuilt.
                    if let Some(slot) = self.slots_mut(&realm).and_then(|s| s.get_mut(&name)) {
                        slot.scope = None;
                        slot.key = None;
                    }
                    changed = true;
                    continue;
                }
                let keep = !failed
                    && self.factories.get(&name).is_some_and(|factory| {
                        Self::eligible(factory, &realm) && self.enabled(&realm, &name, factory)
                    })
                    && self
                        .key_for(&realm, &name)
                        .is_ok_and(|wanted| wanted == key);
                if keep {
                    live.push((realm.clone(), name, scope, seq, key));
                } else {
                    doomed.push((realm.clone(), name, scope, seq));
                }
            }
        }
        // Dependents of a doomed provider go too, before it: they were built on its services.
        loop {
            let doomed_scopes: HashSet<ScopeId> = doomed.iter().map(|d| d.2).collect();
            let (dependents, rest): (Vec<_>, Vec<_>) =
                live.into_iter().partition(|(_, _, _, _, key)| {
                    key.services.iter().any(|(_, stamp)| {
                        stamp.is_some_and(|(_, provider)| {
                            doomed_scopes.contains(&self.registry.root_of(provider))
                        })
                    })
                });
            live = rest;
            if dependents.is_empty() {
                break;
            }
            doomed.extend(
                dependents
                    .into_iter()
                    .map(|(realm, name, scope, seq, _)| (realm, name, scope, seq)),
            );
        }
        doomed.sort_by_key(|d| std::cmp::Reverse(d.3));
        for (realm, name, scope, _) in doomed {
            self.registry.detach(scope, out);
            if let Some(slot) = self.slots_mut(&realm).and_then(|s| s.get_mut(&name)) {
                slot.scope = None;
                slot.key = None;
            }
            changed = true;
        }
        self.sync_slots();
        changed
    }

    /// The key `realm`/`name` would be applied with now, if it should be applied.
    pub(super) fn ready_key(&self, realm: &Realm, name: &str) -> Option<BuildKey> {
        let factory = self.factories.get(name)?;
        let slot = self.slots(realm)?.get(name)?;
        if self.shut_down || slot.scope.is_some() || !self.enabled(realm, name, factory) {
            return None;
        }
        let key = self.key_for(realm, name).ok()?;
        (slot.failed_key.as_ref() != Some(&key)).then_some(key)
    }

    /// Every module that can be applied now, in realm then name order.
    pub(super) fn ready(&self) -> Vec<(Realm, String)> {
        let mut ready = Vec::new();
        for realm in self.built_realms() {
            for name in self.slots(&realm).into_iter().flat_map(|s| s.keys()) {
                if self.ready_key(&realm, name).is_some() {
                    ready.push((realm.clone(), name.clone()));
                }
            }
        }
        ready
    }

    /// Opens the scope `realm`/`name` applies into, if it is still ready.
    pub(super) fn open_job(
        &mut self,
        realm: Realm,
        name: String,
        inner: &Weak<Inner>,
    ) -> Option<ApplyJob> {
        let key = self.ready_key(&realm, &name)?;
        let module = self.factories.get(&name)?.module.clone();
        let slot = self.slots_mut(&realm)?.get_mut(&name)?;
        slot.generation += 1;
        let generation = slot.generation;
        let mut services: HashMap<String, ServiceValue> = HashMap::new();
        for (service, _) in &key.services {
            if let Some(entry) = self.registry.service(&realm, service) {
                services.insert(service.clone(), entry.value.clone());
            }
        }
        let owner: Arc<str> = Arc::from(name.as_str());
        let id = self
            .registry
            .open_scope(realm.clone(), Arc::clone(&owner), generation, None);
        let scope = ScopeHandle {
            inner: inner.clone(),
            id,
            generation,
            realm: realm.clone(),
            module: owner,
        };
        let ctx = ScopeContext {
            scope,
            config: key.config.clone(),
            withheld: key.withheld.clone(),
            services,
        };
        Some(ApplyJob {
            realm,
            name,
            key,
            module,
            ctx,
        })
    }

    /// Recomputes the catalog state of every slot that is not active.
    pub(super) fn refresh_states(&mut self) {
        for realm in self.built_realms() {
            let names = self.slot_names(&realm);
            for name in names {
                let Some(factory) = self.factories.get(&name) else {
                    continue;
                };
                let enabled = self.enabled(&realm, &name, factory);
                let key = self.key_for(&realm, &name);
                let Some(slot) = self.slots_mut(&realm).and_then(|s| s.get_mut(&name)) else {
                    continue;
                };
                if slot.scope.is_some() {
                    slot.state = ModuleState::Active {
                        generation: slot.generation,
                    };
                } else if !enabled {
                    slot.state = ModuleState::Disabled;
                    slot.failed_key = None;
                } else if let Err(missing) = key {
                    slot.state = ModuleState::Pending { missing };
                } else if !matches!(slot.state, ModuleState::Failed { .. }) {
                    slot.state = ModuleState::Pending {
                        missing: Vec::new(),
                    };
                }
            }
        }
    }

    pub(super) fn snapshot(&self) -> Vec<(Realm, String, ModuleState)> {
        self.built_realms()
            .into_iter()
            .flat_map(|realm| {
                let slots = self.slots(&realm).into_iter().flatten();
                slots
                    .map(move |(name, slot)| (realm.clone(), name.clone(), slot.state.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Detaches a whole realm: module scopes newest first, then any other root scopes in it.
    pub(super) fn detach_realm(&mut self, realm: &Realm, out: &mut Vec<PendingCleanup>) {
        let mut scopes: Vec<(u64, ScopeId)> = self
            .slots(realm)
            .into_iter()
            .flatten()
            .filter_map(|(_, slot)| slot.scope.map(|scope| (slot.seq, scope)))
            .collect();
        scopes.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (_, scope) in scopes {
            self.registry.detach(scope, out);
        }
        for scope in self.registry.root_scopes_of(realm) {
            self.registry.detach(scope, out);
        }
    }

    pub(super) fn diagnose(&mut self, max: usize, diagnostic: Diagnostic) {
        tracing::warn!(module = %diagnostic.module, realm = %diagnostic.realm, "{}", diagnostic.message);
        self.diagnostics.push_back(diagnostic);
        while self.diagnostics.len() > max {
            self.diagnostics.pop_front();
        }
    }

    pub(super) fn check_essential(&self, desired: &DesiredState) -> Result<(), Error> {
        for (name, intent) in &desired.modules {
            if intent.enabled == Some(false)
                && self.factories.get(name).is_some_and(|f| f.meta.essential)
            {
                return Err(Error::Essential { name: name.clone() });
            }
        }
        Ok(())
    }
}
