//! The scoped registries: scopes, commands, fallback blockers, services and both event buses.
//!
//! Every registration is recorded twice: in its registry, for O(1) lookup, and as a key in its
//! owning scope, so disposal removes exactly what the scope added in time linear in that amount.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::error::Error;
use crate::model::{CommandInfo, CommandSpec, Event, ProjectKey, Realm, Visibility};
use crate::module::{BoxFuture, ServiceValue};
use crate::scope::CommandHandler;

pub(crate) type ScopeId = u64;
pub(crate) type Cleanup = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// A cleanup detached from a disposed scope, still to be awaited outside the lock.
pub(crate) struct PendingCleanup {
    pub(crate) module: Arc<str>,
    pub(crate) realm: Realm,
    pub(crate) run: Cleanup,
}

enum Reg {
    Command { realm: Realm, name: String },
    Blocker { project: ProjectKey, plugin: String },
    Service { realm: Realm, name: String },
    Json { name: String, id: u64 },
    Typed { type_id: TypeId, id: u64 },
    Task(AbortHandle),
}

pub(crate) struct ScopeRecord {
    pub(crate) realm: Realm,
    /// Shared with every command entry and call context of the scope: no copy per command.
    pub(crate) module: Arc<str>,
    pub(crate) generation: u64,
    parent: Option<ScopeId>,
    children: Vec<ScopeId>,
    regs: Vec<Reg>,
    cleanups: Vec<Cleanup>,
}

pub(crate) struct CommandEntry {
    pub(crate) spec: CommandSpec,
    pub(crate) owner: Arc<str>,
    pub(crate) scope: ScopeId,
    pub(crate) handler: CommandHandler,
}

pub(crate) struct ServiceEntry {
    pub(crate) value: ServiceValue,
    pub(crate) provider: ScopeId,
    pub(crate) owner: String,
    pub(crate) revision: u64,
}

struct JsonSub {
    tx: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
}

struct TypedSub<T> {
    tx: mpsc::Sender<T>,
    dropped: Arc<AtomicU64>,
}

#[derive(Default)]
pub(crate) struct Registry {
    next_id: u64,
    pub(crate) scopes: HashMap<ScopeId, ScopeRecord>,
    /// Entries are boxed: a bucket stays a name and a pointer, so growing a realm of many
    /// thousands of commands moves 32 bytes per command instead of the whole entry.
    commands: HashMap<Realm, HashMap<String, Box<CommandEntry>>>,
    blockers: HashMap<ProjectKey, HashMap<String, usize>>,
    services: HashMap<Realm, HashMap<String, ServiceEntry>>,
    json: HashMap<String, HashMap<u64, JsonSub>>,
    typed: HashMap<TypeId, HashMap<u64, Box<dyn Any + Send + Sync>>>,
}

impl Registry {
    /// A fresh id, never reused: scope ids, subscription ids and service revisions share it.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn open_scope(
        &mut self,
        realm: Realm,
        module: Arc<str>,
        generation: u64,
        parent: Option<ScopeId>,
    ) -> ScopeId {
        let id = self.next_id();
        if let Some(parent) = parent.and_then(|p| self.scopes.get_mut(&p)) {
            parent.children.push(id);
        }
        let record = ScopeRecord {
            realm,
            module,
            generation,
            parent,
            children: Vec::new(),
            regs: Vec::new(),
            cleanups: Vec::new(),
        };
        self.scopes.insert(id, record);
        id
    }

    pub(crate) fn is_live(&self, scope: ScopeId) -> bool {
        self.scopes.contains_key(&scope)
    }

    /// The scope's record, or `StaleScope` when it was disposed.
    pub(crate) fn live(
        &mut self,
        scope: ScopeId,
        module: &str,
        generation: u64,
    ) -> Result<&mut ScopeRecord, Error> {
        self.scopes
            .get_mut(&scope)
            .ok_or_else(|| Error::StaleScope {
                module: module.to_owned(),
                generation,
            })
    }

    pub(crate) fn register_command(
        &mut self,
        scope: ScopeId,
        name: String,
        spec: CommandSpec,
        handler: CommandHandler,
    ) -> Result<(), Error> {
        let record = self
            .scopes
            .get(&scope)
            .ok_or_else(|| Error::module("scope is gone"))?;
        let realm = record.realm.clone();
        let owner = record.module.clone();
        // A project registration may shadow only its own plugin's global command: another
        // module's global command must stay the one the project reaches (protocol "Methods").
        if let Realm::Project(_) = realm
            && let Some(global) = self.commands.get(&Realm::Global).and_then(|c| c.get(&name))
            && global.owner != owner
        {
            return Err(Error::DuplicateCommand {
                name,
                realm: realm.to_string(),
                owner: global.owner.to_string(),
            });
        }
        let realm_commands = self.commands.entry(realm.clone()).or_default();
        match realm_commands.entry(name.clone()) {
            Entry::Occupied(existing) => Err(Error::DuplicateCommand {
                name,
                realm: realm.to_string(),
                owner: existing.get().owner.to_string(),
            }),
            Entry::Vacant(slot) => {
                slot.insert(Box::new(CommandEntry {
                    spec,
                    owner,
                    scope,
                    handler,
                }));
                self.push_reg(scope, Reg::Command { realm, name });
                Ok(())
            }
        }
    }

    pub(crate) fn block_fallback(&mut self, scope: ScopeId, project: ProjectKey, plugin: String) {
        *self
            .blockers
            .entry(project.clone())
            .or_default()
            .entry(plugin.clone())
            .or_default() += 1;
        self.push_reg(scope, Reg::Blocker { project, plugin });
    }

    pub(crate) fn provide_service(
        &mut self,
        scope: ScopeId,
        name: String,
        value: ServiceValue,
    ) -> Result<(), Error> {
        let Some(record) = self.scopes.get(&scope) else {
            return Err(Error::module("scope is gone"));
        };
        let realm = record.realm.clone();
        let owner = record.module.clone();
        let revision = self.next_id();
        match self
            .services
            .entry(realm.clone())
            .or_default()
            .entry(name.clone())
        {
            Entry::Occupied(existing) => Err(Error::DuplicateService {
                name,
                owner: existing.get().owner.clone(),
            }),
            Entry::Vacant(slot) => {
                slot.insert(ServiceEntry {
                    value,
                    provider: scope,
                    owner: owner.to_string(),
                    revision,
                });
                self.push_reg(scope, Reg::Service { realm, name });
                Ok(())
            }
        }
    }

    /// The service visible from `realm`: the realm's own, else the global one.
    pub(crate) fn service(&self, realm: &Realm, name: &str) -> Option<&ServiceEntry> {
        let own = self.services.get(realm).and_then(|s| s.get(name));
        own.or_else(|| match realm {
            Realm::Project(_) => self.services.get(&Realm::Global).and_then(|s| s.get(name)),
            Realm::Global => None,
        })
    }

    pub(crate) fn subscribe(
        &mut self,
        scope: ScopeId,
        name: String,
        capacity: usize,
    ) -> (mpsc::Receiver<Event>, Arc<AtomicU64>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let id = self.next_id();
        self.json.entry(name.clone()).or_default().insert(
            id,
            JsonSub {
                tx,
                dropped: dropped.clone(),
            },
        );
        self.push_reg(scope, Reg::Json { name, id });
        (rx, dropped)
    }

    pub(crate) fn subscribe_typed<T: Clone + Send + Sync + 'static>(
        &mut self,
        scope: ScopeId,
        capacity: usize,
    ) -> (mpsc::Receiver<T>, Arc<AtomicU64>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let id = self.next_id();
        let type_id = TypeId::of::<T>();
        let sub: Box<dyn Any + Send + Sync> = Box::new(TypedSub {
            tx,
            dropped: dropped.clone(),
        });
        self.typed.entry(type_id).or_default().insert(id, sub);
        self.push_reg(scope, Reg::Typed { type_id, id });
        (rx, dropped)
    }

    pub(crate) fn add_task(&mut self, scope: ScopeId, task: AbortHandle) {
        self.push_reg(scope, Reg::Task(task));
    }

    pub(crate) fn add_cleanup(&mut self, scope: ScopeId, cleanup: Cleanup) {
        if let Some(record) = self.scopes.get_mut(&scope) {
            record.cleanups.push(cleanup);
        }
    }

    fn push_reg(&mut self, scope: ScopeId, reg: Reg) {
        if let Some(record) = self.scopes.get_mut(&scope) {
            record.regs.push(reg);
        }
    }

    /// Delivers to every subscriber of `name` without waiting; returns how many accepted it.
    pub(crate) fn emit(&self, name: &str, payload: &serde_json::Value) -> usize {
        let Some(subs) = self.json.get(name) else {
            return 0;
        };
        let mut delivered = 0;
        for sub in subs.values() {
            let event = Event {
                name: name.to_owned(),
                payload: payload.clone(),
            };
            match sub.tx.try_send(event) {
                Ok(()) => delivered += 1,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        delivered
    }

    pub(crate) fn emit_typed<T: Clone + Send + Sync + 'static>(&self, event: &T) -> usize {
        let Some(subs) = self.typed.get(&TypeId::of::<T>()) else {
            return 0;
        };
        let mut delivered = 0;
        for sub in subs.values() {
            let Some(sub) = sub.downcast_ref::<TypedSub<T>>() else {
                continue;
            };
            match sub.tx.try_send(event.clone()) {
                Ok(()) => delivered += 1,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        delivered
    }

    /// Removes the scope and its descendants (children first, newest first) from every registry
    /// at once, and queues their cleanups newest first for the caller to await.
    pub(crate) fn detach(&mut self, scope: ScopeId, out: &mut Vec<PendingCleanup>) {
        let Some(record) = self.scopes.remove(&scope) else {
            return;
        };
        if let Some(parent) = record.parent.and_then(|p| self.scopes.get_mut(&p)) {
            parent.children.retain(|child| *child != scope);
        }
        for child in record.children.iter().rev() {
            self.detach(*child, out);
        }
        for reg in record.regs {
            self.remove_reg(scope, reg);
        }
        let (module, realm) = (record.module, record.realm);
        out.extend(record.cleanups.into_iter().rev().map(|run| PendingCleanup {
            module: module.clone(),
            realm: realm.clone(),
            run,
        }));
    }

    /// Detaches every scope when the kernel shuts down: the modules' scopes of `modules`
    /// (`(sequence, scope)`) latest applied first, then the rest newest first. The cleanups
    /// come out as one [`Registry::detach`] after another gives them and every task is aborted,
    /// but the registries are emptied at once instead of entry by entry: with no scope left,
    /// none of their entries has an owner.
    pub(crate) fn detach_all(
        &mut self,
        mut modules: Vec<(u64, ScopeId)>,
        out: &mut Vec<PendingCleanup>,
    ) {
        modules.sort_by_key(|m| std::cmp::Reverse(m.0));
        let mut tasks = Vec::new();
        for (_, scope) in modules {
            self.take_scope(scope, out, &mut tasks);
        }
        let mut rest: Vec<ScopeId> = self.scopes.keys().copied().collect();
        rest.sort_unstable_by(|a, b| b.cmp(a));
        for scope in rest {
            self.take_scope(scope, out, &mut tasks);
        }
        for task in tasks {
            task.abort();
        }
        self.commands.clear();
        self.blockers.clear();
        self.services.clear();
        self.json.clear();
        self.typed.clear();
    }

    /// [`Registry::detach`] for [`Registry::detach_all`]: the scope's registrations are left in
    /// place (they are cleared with the registries), its tasks are gathered into `tasks`.
    fn take_scope(
        &mut self,
        scope: ScopeId,
        out: &mut Vec<PendingCleanup>,
        tasks: &mut Vec<AbortHandle>,
    ) {
        let Some(record) = self.scopes.remove(&scope) else {
            return;
        };
        for child in record.children.iter().rev() {
            self.take_scope(*child, out, tasks);
        }
        tasks.extend(record.regs.into_iter().filter_map(|reg| match reg {
            Reg::Task(task) => Some(task),
            _ => None,
        }));
        let (module, realm) = (record.module, record.realm);
        out.extend(record.cleanups.into_iter().rev().map(|run| PendingCleanup {
            module: module.clone(),
            realm: realm.clone(),
            run,
        }));
    }

    fn remove_reg(&mut self, scope: ScopeId, reg: Reg) {
        match reg {
            Reg::Command { realm, name } => {
                if let Some(commands) = self.commands.get_mut(&realm) {
                    if commands
                        .get(&name)
                        .is_some_and(|entry| entry.scope == scope)
                    {
                        commands.remove(&name);
                    }
                    if commands.is_empty() {
                        self.commands.remove(&realm);
                    }
                }
            }
            Reg::Blocker { project, plugin } => {
                if let Some(plugins) = self.blockers.get_mut(&project) {
                    if let Some(count) = plugins.get_mut(&plugin) {
                        *count = count.saturating_sub(1);
                        if *count == 0 {
                            plugins.remove(&plugin);
                        }
                    }
                    if plugins.is_empty() {
                        self.blockers.remove(&project);
                    }
                }
            }
            Reg::Service { realm, name } => {
                if let Some(services) = self.services.get_mut(&realm) {
                    if services
                        .get(&name)
                        .is_some_and(|entry| entry.provider == scope)
                    {
                        services.remove(&name);
                    }
                    if services.is_empty() {
                        self.services.remove(&realm);
                    }
                }
            }
            Reg::Json { name, id } => {
                if let Some(subs) = self.json.get_mut(&name) {
                    subs.remove(&id);
                    if subs.is_empty() {
                        self.json.remove(&name);
                    }
                }
            }
            Reg::Typed { type_id, id } => {
                if let Some(subs) = self.typed.get_mut(&type_id) {
                    subs.remove(&id);
                    if subs.is_empty() {
                        self.typed.remove(&type_id);
                    }
                }
            }
            Reg::Task(task) => task.abort(),
        }
    }

    /// Resolves `name` in `realm` by the standard's rules: the realm's own command first, then
    /// the global one unless fallback to its plugin is blocked. Through the extension seam the
    /// resolved command must be public, and a project-internal command never falls back.
    pub(crate) fn resolve(
        &self,
        realm: &Realm,
        name: &str,
        extension: bool,
        policy_blocked: impl Fn(&ProjectKey, &str) -> bool,
    ) -> Result<&CommandEntry, Error> {
        let own = self.commands.get(realm).and_then(|c| c.get(name));
        let entry = match (own, realm) {
            (Some(entry), _) => entry,
            (None, Realm::Global) => {
                return Err(Error::UnknownCommand {
                    name: name.to_owned(),
                });
            }
            (None, Realm::Project(project)) => {
                let global = self.commands.get(&Realm::Global).and_then(|c| c.get(name));
                let Some(global) = global else {
                    return Err(Error::UnknownCommand {
                        name: name.to_owned(),
                    });
                };
                if self.is_blocked(project, &global.owner) || policy_blocked(project, &global.owner)
                {
                    return Err(Error::FallbackBlocked {
                        name: name.to_owned(),
                        project: project.to_string(),
                    });
                }
                global
            }
        };
        if extension && entry.spec.visibility != Visibility::ExtensionPublic {
            return Err(Error::NotExtensionPublic {
                name: name.to_owned(),
            });
        }
        Ok(entry)
    }

    fn is_blocked(&self, project: &ProjectKey, plugin: &str) -> bool {
        self.blockers
            .get(project)
            .is_some_and(|plugins| plugins.contains_key(plugin))
    }

    /// The commands callable in `realm`, sorted by name; `extension` keeps only what the
    /// extension seam would dispatch.
    pub(crate) fn list(
        &self,
        realm: &Realm,
        extension: bool,
        policy_blocked: impl Fn(&ProjectKey, &str) -> bool,
    ) -> Vec<CommandInfo> {
        // What `resolve` would answer for each name, walking the entries once instead of
        // looking each name up again.
        let own = self.commands.get(realm);
        let fallbacks = match realm {
            Realm::Project(_) => self.commands.get(&Realm::Global).map_or(0, HashMap::len),
            Realm::Global => 0,
        };
        let mut chosen: Vec<(&String, &CommandEntry)> =
            Vec::with_capacity(own.map_or(0, HashMap::len) + fallbacks);
        let wanted = |entry: &CommandEntry| {
            !extension || entry.spec.visibility == Visibility::ExtensionPublic
        };
        chosen.extend(
            own.into_iter()
                .flatten()
                .filter(|(_, entry)| wanted(entry))
                .map(|(name, entry)| (name, &**entry)),
        );
        if let (Realm::Project(project), Some(global)) = (realm, self.commands.get(&Realm::Global))
        {
            for (name, entry) in global {
                let shadowed = own.is_some_and(|own| own.contains_key(name));
                let blocked = || {
                    self.is_blocked(project, &entry.owner) || policy_blocked(project, &entry.owner)
                };
                if wanted(entry) && !shadowed && !blocked() {
                    chosen.push((name, entry));
                }
            }
        }
        // Names are unique: a realm's own command hides the global one of the same name.
        // Sorted as references, so thousands of entries are not moved around whole.
        chosen.sort_unstable_by(|a, b| a.0.cmp(b.0));
        chosen
            .into_iter()
            .map(|(name, entry)| CommandInfo {
                name: name.clone(),
                realm: self
                    .scopes
                    .get(&entry.scope)
                    .map_or(Realm::Global, |s| s.realm.clone()),
                owner: String::from(&*entry.owner),
                spec: entry.spec.clone(),
            })
            .collect()
    }

    pub(crate) fn command_count(&self) -> usize {
        self.commands.values().map(HashMap::len).sum()
    }

    /// Every live scope of `realm` that has no parent, newest first.
    pub(crate) fn root_scopes_of(&self, realm: &Realm) -> Vec<ScopeId> {
        let mut roots: Vec<ScopeId> = self
            .scopes
            .iter()
            .filter(|(_, record)| record.parent.is_none() && &record.realm == realm)
            .map(|(id, _)| *id)
            .collect();
        roots.sort_unstable_by(|a, b| b.cmp(a));
        roots
    }

    /// The outermost ancestor of `scope`.
    pub(crate) fn root_of(&self, mut scope: ScopeId) -> ScopeId {
        while let Some(parent) = self.scopes.get(&scope).and_then(|record| record.parent) {
            scope = parent;
        }
        scope
    }
}
