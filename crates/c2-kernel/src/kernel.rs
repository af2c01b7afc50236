//! The loader and the dispatcher: factories, desired state, reconcile, realms, leases, calls.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::Error;
use crate::model::{
    CatalogEntry, CommandInfo, DefaultState, DesiredState, Diagnostic, KernelOptions, ModuleMeta,
    ModuleState, ProjectKey, Realm, ScopeKind,
};
use crate::module::{Module, ScopeContext, ServiceValue};
use crate::registry::{PendingCleanup, Registry, ScopeId};
use crate::scope::{CallContext, Lease, LeaseCell, ScopeHandle};
use crate::unwind::guarded;

mod planning;

/// The live plugin graph of one host: every realm, registry and scope.
///
/// Cheap to clone (a shared handle). Synchronous bookkeeping sits behind one short-held mutex
/// that is never held across an await; module code (apply, cleanups) runs outside it, and
/// graph changes are serialized by a separate async lock so that apply sees a stable graph.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("Kernel")
            .field("revision", &state.revision)
            .field("factories", &state.factories.keys().collect::<Vec<_>>())
            .field("projects", &state.projects.keys().collect::<Vec<_>>())
            .field("scopes", &state.registry.scopes.len())
            .finish()
    }
}

pub(crate) struct Inner {
    state: Mutex<State>,
    pub(crate) options: KernelOptions,
    graph: tokio::sync::Mutex<()>,
}

impl Inner {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic never happens while the lock is held (module code runs outside it), so a
        // poisoned lock still guards consistent data.
        c2_lock::lock(&self.state)
    }
}

struct Factory {
    module: Arc<dyn Module>,
    revision: u64,
    meta: ModuleMeta,
    inject: Vec<String>,
    optional: Vec<String>,
    schema: Option<Value>,
}

/// Everything a module instance was built from; any difference means a reload.
#[derive(Clone, Debug, PartialEq)]
struct BuildKey {
    revision: u64,
    config: Value,
    /// What policy withholds in this realm ([`crate::ModuleIntent::withheld`]).
    withheld: BTreeSet<String>,
    /// Per injected service: (revision, provider scope), `None` when absent.
    services: Vec<(String, Option<(u64, ScopeId)>)>,
}

#[derive(Debug)]
struct Slot {
    scope: Option<ScopeId>,
    generation: u64,
    key: Option<BuildKey>,
    seq: u64,
    state: ModuleState,
    failed_key: Option<BuildKey>,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            scope: None,
            generation: 0,
            key: None,
            seq: 0,
            state: ModuleState::Disabled,
            failed_key: None,
        }
    }
}

struct ProjectGraph {
    lease: Arc<LeaseCell>,
    /// Part of the graph: reconciles build its modules.
    built: bool,
    /// A reconcile that included this realm has finished, so its commands are registered.
    /// Until then a call must wait: resolving now would fall back to another realm's command.
    ready: bool,
    slots: BTreeMap<String, Slot>,
}

impl ProjectGraph {
    fn leased_by(&self, lease: &Lease) -> bool {
        lease
            .cell
            .as_ref()
            .is_some_and(|cell| Arc::ptr_eq(cell, &self.lease))
    }
}

pub(crate) struct State {
    pub(crate) registry: Registry,
    factories: BTreeMap<String, Factory>,
    desired: DesiredState,
    project_desired: HashMap<ProjectKey, DesiredState>,
    global: BTreeMap<String, Slot>,
    projects: BTreeMap<ProjectKey, ProjectGraph>,
    revision: u64,
    /// See [`Kernel::factories_revision`].
    factories_revision: u64,
    seq: u64,
    diagnostics: VecDeque<Diagnostic>,
    shut_down: bool,
}

struct ApplyJob {
    realm: Realm,
    name: String,
    key: BuildKey,
    module: Arc<dyn Module>,
    ctx: ScopeContext,
}

fn policy_blocks(
    project_desired: &HashMap<ProjectKey, DesiredState>,
    project: &ProjectKey,
    plugin: &str,
) -> bool {
    project_desired
        .get(project)
        .and_then(|desired| desired.modules.get(plugin))
        .is_some_and(|intent| intent.enabled == Some(false))
}

fn scope_kind(realm: &Realm) -> ScopeKind {
    match realm {
        Realm::Global => ScopeKind::User,
        Realm::Project(_) => ScopeKind::Project,
    }
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel::new(KernelOptions::default())
    }
}

impl Kernel {
    /// An empty kernel: no factories, only the global realm.
    pub fn new(options: KernelOptions) -> Self {
        let state = State {
            registry: Registry::default(),
            factories: BTreeMap::new(),
            desired: DesiredState::default(),
            project_desired: HashMap::new(),
            global: BTreeMap::new(),
            projects: BTreeMap::new(),
            revision: 0,
            factories_revision: 0,
            seq: 0,
            diagnostics: VecDeque::new(),
            shut_down: false,
        };
        Kernel {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                options,
                graph: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The limits this kernel runs with.
    pub fn options(&self) -> &KernelOptions {
        &self.inner.options
    }

    /// Registers (or replaces) the factory named by `module.name()`. Returns whether anything
    /// changed: the same revision again is a no-op, a new one rebuilds the module on reconcile.
    pub fn register_factory(&self, module: Arc<dyn Module>, revision: u64) -> bool {
        let name = module.name().to_owned();
        let mut state = self.inner.lock();
        if state
            .factories
            .get(&name)
            .is_some_and(|f| f.revision == revision)
        {
            return false;
        }
        let factory = Factory {
            meta: module.meta(),
            inject: module.inject(),
            optional: module.optional_inject(),
            schema: module.config_schema(),
            module,
            revision,
        };
        state.factories.insert(name, factory);
        state.factories_revision += 1;
        true
    }

    /// Removes a factory; its instances unload on the next reconcile. Essential ones are refused.
    pub fn remove_factory(&self, name: &str) -> Result<(), Error> {
        let mut state = self.inner.lock();
        match state.factories.get(name) {
            None => Err(Error::UnknownModule {
                name: name.to_owned(),
            }),
            Some(factory) if factory.meta.essential => Err(Error::Essential {
                name: name.to_owned(),
            }),
            Some(_) => {
                state.factories.remove(name);
                state.factories_revision += 1;
                Ok(())
            }
        }
    }

    /// Replaces the user-level desired state. Disabling an essential module is refused.
    pub fn set_desired(&self, desired: DesiredState) -> Result<(), Error> {
        let mut state = self.inner.lock();
        state.check_essential(&desired)?;
        state.desired = desired;
        Ok(())
    }

    /// Replaces one project's desired state (intent left `None` inherits the user's). A project
    /// that explicitly disables a plugin also blocks falling back to its global commands.
    pub fn set_project_desired(
        &self,
        project: ProjectKey,
        desired: DesiredState,
    ) -> Result<(), Error> {
        let mut state = self.inner.lock();
        state.check_essential(&desired)?;
        state.project_desired.insert(project, desired);
        Ok(())
    }

    /// Brings every live realm to the desired state, in dependency order. Returns the graph
    /// revision, which bumps exactly once when anything changed.
    pub async fn reconcile(&self) -> u64 {
        let _graph = self.inner.graph.lock().await;
        self.reconcile_locked().await
    }

    async fn reconcile_locked(&self) -> u64 {
        let before = self.inner.lock().snapshot();
        let mut acted = false;
        for _ in 0..self.inner.options.max_reconcile_rounds.max(1) {
            let mut cleanups = Vec::new();
            let disposed = self.inner.lock().plan_disposals(&mut cleanups);
            self.run_cleanups(cleanups).await;
            let mut applied = false;
            // Pass after pass, each applying everything ready at its start: a pass costs
            // O(modules), and a module waits exactly as many passes as its dependency depth.
            loop {
                let ready = self.inner.lock().ready();
                if ready.is_empty() {
                    break;
                }
                for (realm, name) in ready {
                    let job = self
                        .inner
                        .lock()
                        .open_job(realm, name, &Arc::downgrade(&self.inner));
                    if let Some(job) = job {
                        self.run_apply(job).await;
                        applied = true;
                    }
                }
            }
            self.inner.lock().refresh_states();
            if !disposed && !applied {
                break;
            }
            acted = true;
        }
        let mut state = self.inner.lock();
        if acted || state.snapshot() != before {
            state.revision += 1;
        }
        state.revision
    }

    async fn run_apply(&self, job: ApplyJob) {
        let ApplyJob {
            realm,
            name,
            key,
            module,
            mut ctx,
        } = job;
        let scope = ctx.scope.id;
        let outcome = match guarded(|| module.apply(&mut ctx)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(message) => Err(Error::Panicked {
                what: format!("apply of `{name}`"),
                message,
            }
            .to_string()),
        };
        drop(ctx);
        let mut cleanups = Vec::new();
        {
            let mut guard = self.inner.lock();
            let state = &mut *guard;
            let live = state.registry.is_live(scope);
            state.seq += 1;
            let seq = state.seq;
            let slot = state.slots_mut(&realm).and_then(|s| s.get_mut(&name));
            match (outcome, slot) {
                // The realm went away while apply ran: nothing to record, just roll back.
                (_, None) => state.registry.detach(scope, &mut cleanups),
                (Ok(()), Some(slot)) if live => {
                    slot.scope = Some(scope);
                    slot.key = Some(key);
                    slot.seq = seq;
                    slot.state = ModuleState::Active {
                        generation: slot.generation,
                    };
                    slot.failed_key = None;
                }
                (outcome, Some(slot)) => {
                    let reason = outcome
                        .err()
                        .unwrap_or_else(|| "its scope was disposed during apply".to_owned());
                    slot.state = ModuleState::Failed {
                        reason: reason.clone(),
                    };
                    slot.failed_key = Some(key);
                    // Roll back whatever apply managed to register before it failed.
                    state.registry.detach(scope, &mut cleanups);
                    let max = self.inner.options.max_diagnostics;
                    state.diagnose(
                        max,
                        Diagnostic {
                            module: name,
                            realm,
                            message: reason,
                        },
                    );
                }
            }
        }
        self.run_cleanups(cleanups).await;
    }

    async fn run_cleanups(&self, cleanups: Vec<PendingCleanup>) {
        for cleanup in cleanups {
            let PendingCleanup { module, realm, run } = cleanup;
            if let Err(message) = guarded(run).await {
                let message = Error::Panicked {
                    what: format!("cleanup of `{module}`"),
                    message,
                }
                .to_string();
                let max = self.inner.options.max_diagnostics;
                self.inner.lock().diagnose(
                    max,
                    Diagnostic {
                        module: module.to_string(),
                        realm,
                        message,
                    },
                );
            }
        }
    }

    /// Disposes one scope (a module's, a child, or a host root scope) and reconciles.
    pub(crate) async fn dispose_scope(&self, scope: ScopeId) {
        let _graph = self.inner.graph.lock().await;
        let mut cleanups = Vec::new();
        self.inner.lock().registry.detach(scope, &mut cleanups);
        self.run_cleanups(cleanups).await;
        self.reconcile_locked().await;
    }

    /// Marks the module owning `scope` failed and unloads it (with its dependents).
    pub(crate) async fn fail_scope(&self, scope: ScopeId, reason: String) {
        let _graph = self.inner.graph.lock().await;
        let mut cleanups = Vec::new();
        {
            let mut guard = self.inner.lock();
            let state = &mut *guard;
            if !state.registry.is_live(scope) {
                return;
            }
            let root = state.registry.root_of(scope);
            let Some((realm, module)) = state
                .registry
                .scopes
                .get(&root)
                .map(|r| (r.realm.clone(), r.module.clone()))
            else {
                return;
            };
            let slot = state
                .slots_mut(&realm)
                .and_then(|s| s.get_mut(&*module))
                .filter(|s| s.scope == Some(root));
            match slot {
                Some(slot) => {
                    slot.state = ModuleState::Failed {
                        reason: reason.clone(),
                    };
                    slot.failed_key = slot.key.clone();
                }
                None => state.registry.detach(root, &mut cleanups),
            }
            let max = self.inner.options.max_diagnostics;
            state.diagnose(
                max,
                Diagnostic {
                    module: module.to_string(),
                    realm,
                    message: reason,
                },
            );
        }
        self.run_cleanups(cleanups).await;
        self.reconcile_locked().await;
    }

    pub(crate) fn fail_scope_in_background(&self, scope: ScopeId, reason: String) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let kernel = self.clone();
            runtime.spawn(async move { kernel.fail_scope(scope, reason).await });
        }
    }

    /// The graph revision: bumps exactly once per reconcile, reap or unload that changed anything.
    pub fn revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// Bumps with every factory registered, replaced or removed: what is derived from the
    /// factories alone (names, metadata, schemas, revisions) is current while it holds.
    pub fn factories_revision(&self) -> u64 {
        self.inner.lock().factories_revision
    }

    /// Every factory eligible for `realm`, with metadata and effective state there. A project
    /// realm that is not live shows enabled modules as [`ModuleState::Idle`].
    pub fn catalog(&self, realm: &Realm) -> Vec<CatalogEntry> {
        let state = self.inner.lock();
        let slots = match realm {
            Realm::Global => Some(&state.global),
            Realm::Project(key) => state
                .projects
                .get(key)
                .filter(|g| g.built)
                .map(|g| &g.slots),
        };
        state
            .factories
            .iter()
            .filter(|(_, factory)| State::eligible(factory, realm))
            .map(|(name, factory)| {
                let module_state = match slots.and_then(|s| s.get(name)) {
                    Some(slot) => slot.state.clone(),
                    None if state.enabled(realm, name, factory) => ModuleState::Idle,
                    None => ModuleState::Disabled,
                };
                CatalogEntry {
                    name: name.clone(),
                    meta: factory.meta.clone(),
                    revision: factory.revision,
                    inject: factory.inject.clone(),
                    optional_inject: factory.optional.clone(),
                    config_schema: factory.schema.clone(),
                    state: module_state,
                }
            })
            .collect()
    }

    /// The live scope of a module in a realm, if it is active.
    pub fn module_scope(&self, realm: &Realm, module: &str) -> Option<ScopeHandle> {
        let state = self.inner.lock();
        let slot = state.slots(realm)?.get(module)?;
        let id = slot.scope?;
        let inner = Arc::downgrade(&self.inner);
        Some(ScopeHandle {
            inner,
            id,
            generation: slot.generation,
            realm: realm.clone(),
            module: Arc::from(module),
        })
    }

    /// Opens a host-owned root scope outside the module graph (e.g. one frontend connection).
    /// It lives until disposed, its realm is unloaded, or shutdown.
    pub fn open_scope(
        &self,
        realm: &Realm,
        owner: impl Into<String>,
    ) -> Result<ScopeHandle, Error> {
        let mut state = self.inner.lock();
        if state.shut_down {
            return Err(Error::ShutDown);
        }
        let owner: Arc<str> = Arc::from(owner.into());
        let id = state
            .registry
            .open_scope(realm.clone(), Arc::clone(&owner), 1, None);
        let inner = Arc::downgrade(&self.inner);
        Ok(ScopeHandle {
            inner,
            id,
            generation: 1,
            realm: realm.clone(),
            module: owner,
        })
    }

    /// Calls a command as Core or a frontend: internal and public commands alike.
    pub async fn call(&self, realm: &Realm, name: &str, args: Value) -> Result<Value, Error> {
        self.dispatch(realm, name, args, false).await
    }

    /// Calls a command through the extension seam: only extension-public commands, and a
    /// project-internal command never falls back to a public global one.
    pub async fn call_extension(
        &self,
        realm: &Realm,
        name: &str,
        args: Value,
    ) -> Result<Value, Error> {
        self.dispatch(realm, name, args, true).await
    }

    /// An extension call on behalf of `caller` (e.g. a process's `command/call`), in its realm.
    /// Refused when the caller's scope generation is no longer live.
    pub async fn call_as(
        &self,
        caller: &ScopeHandle,
        name: &str,
        args: Value,
    ) -> Result<Value, Error> {
        if !caller.is_current() {
            return Err(Error::StaleScope {
                module: caller.module.to_string(),
                generation: caller.generation,
            });
        }
        self.dispatch(&caller.realm, name, args, true).await
    }

    async fn dispatch(
        &self,
        realm: &Realm,
        name: &str,
        args: Value,
        extension: bool,
    ) -> Result<Value, Error> {
        let lease = self.lease(realm).await?;
        let (handler, scope) = {
            let mut guard = self.inner.lock();
            if let Realm::Project(key) = realm {
                // Unloaded between the lease and now: its commands are gone, and resolving
                // would answer from the global realm instead.
                Self::leased_graph(&mut guard, key, &lease)?;
            }
            let state = &*guard;
            if state.shut_down {
                return Err(Error::ShutDown);
            }
            let entry = state
                .registry
                .resolve(realm, name, extension, |p, plugin| {
                    policy_blocks(&state.project_desired, p, plugin)
                })?;
            let record = state.registry.scopes.get(&entry.scope);
            let scope = ScopeHandle {
                inner: Arc::downgrade(&self.inner),
                id: entry.scope,
                generation: record.map_or(0, |r| r.generation),
                realm: record.map_or(Realm::Global, |r| r.realm.clone()),
                module: entry.owner.clone(),
            };
            (entry.handler.clone(), scope)
        };
        let ctx = CallContext {
            realm: realm.clone(),
            scope,
            via_extension: extension,
        };
        match guarded(|| handler(ctx, args)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(error.failed_in(name)),
            Err(message) => Err(Error::CommandFailed {
                name: name.to_owned(),
                kind: None,
                remote: None,
                typed: None,
                message: Error::Panicked {
                    what: "handler".to_owned(),
                    message,
                }
                .to_string(),
            }),
        }
    }

    /// Leases `realm`, creating and building a project realm on first use. While any lease is
    /// held the realm is never reaped. The global realm needs no lease; its lease is inert.
    ///
    /// Returns only once the realm's modules are applied: concurrent first callers all wait
    /// for the one build, so none of them resolves a command before the realm has registered
    /// its own (which would fall back to the global command). Fails with
    /// [`Error::ProjectUnloaded`] when [`Kernel::unload_project`] removed the realm meanwhile.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future is safe: a build it started and did not finish is redone by the
    /// next caller.
    pub async fn lease(&self, realm: &Realm) -> Result<Lease, Error> {
        let Realm::Project(key) = realm else {
            return Ok(Lease { cell: None });
        };
        let (lease, ready) = {
            let mut state = self.inner.lock();
            if state.shut_down {
                return Err(Error::ShutDown);
            }
            let now = Instant::now();
            let graph = state
                .projects
                .entry(key.clone())
                .or_insert_with(|| ProjectGraph {
                    lease: Arc::new(LeaseCell::new(now)),
                    built: false,
                    ready: false,
                    slots: BTreeMap::new(),
                });
            graph.lease.count.fetch_add(1, Ordering::AcqRel);
            graph.lease.touch(now);
            (
                Lease {
                    cell: Some(graph.lease.clone()),
                },
                graph.ready,
            )
        };
        if ready {
            return Ok(lease);
        }
        // The graph lock is held by whoever is building (or reconciling) now; once we hold it,
        // either that build finished (ready) or nobody finished one and we build it ourselves.
        let _graph = self.inner.graph.lock().await;
        let build = {
            let mut state = self.inner.lock();
            let graph = Self::leased_graph(&mut state, key, &lease)?;
            if graph.ready {
                false
            } else {
                graph.built = true;
                true
            }
        };
        if build {
            self.reconcile_locked().await;
            let mut state = self.inner.lock();
            Self::leased_graph(&mut state, key, &lease)?.ready = true;
        }
        Ok(lease)
    }

    /// The graph `lease` was taken on, unless it was unloaded (or the kernel shut down) since.
    fn leased_graph<'s>(
        state: &'s mut State,
        key: &ProjectKey,
        lease: &Lease,
    ) -> Result<&'s mut ProjectGraph, Error> {
        if state.shut_down {
            return Err(Error::ShutDown);
        }
        state
            .projects
            .get_mut(key)
            .filter(|graph| graph.leased_by(lease))
            .ok_or_else(|| Error::ProjectUnloaded {
                project: key.to_string(),
            })
    }

    /// Project realms that exist now (live or being built).
    pub fn live_projects(&self) -> Vec<ProjectKey> {
        self.inner.lock().projects.keys().cloned().collect()
    }

    /// Reclaims every project realm without a lease whose last use is at least `idle_after`
    /// before `now` ([`KernelOptions::idle_after`] is the standard's 5 minutes). The next call
    /// re-creates a reclaimed realm. Returns the reclaimed keys.
    pub async fn reap_idle(&self, now: Instant, idle_after: Duration) -> Vec<ProjectKey> {
        self.unload_projects(|_, graph| {
            graph.lease.count.load(Ordering::Acquire) == 0
                && now.saturating_duration_since(graph.lease.last_used()) >= idle_after
        })
        .await
    }

    /// Unloads one project realm now, leases or not (the project was closed). Other realms
    /// are untouched. Returns whether it existed.
    pub async fn unload_project(&self, project: &ProjectKey) -> bool {
        !self
            .unload_projects(|key, _| key == project)
            .await
            .is_empty()
    }

    async fn unload_projects(
        &self,
        select: impl Fn(&ProjectKey, &ProjectGraph) -> bool,
    ) -> Vec<ProjectKey> {
        let _graph = self.inner.graph.lock().await;
        let mut cleanups = Vec::new();
        let reaped = {
            let mut state = self.inner.lock();
            // Checked under the state lock, where leases are taken, so a call cannot slip in.
            let reaped: Vec<ProjectKey> = state
                .projects
                .iter()
                .filter(|(key, graph)| select(key, graph))
                .map(|(key, _)| key.clone())
                .collect();
            for key in &reaped {
                let realm = Realm::Project(key.clone());
                state.detach_realm(&realm, &mut cleanups);
                state.projects.remove(key);
            }
            if !reaped.is_empty() {
                state.revision += 1;
            }
            reaped
        };
        self.run_cleanups(cleanups).await;
        reaped
    }

    /// The commands callable in `realm` by Core or a frontend, sorted by name.
    pub fn commands(&self, realm: &Realm) -> Vec<CommandInfo> {
        let state = self.inner.lock();
        state.registry.list(realm, false, |p, plugin| {
            policy_blocks(&state.project_desired, p, plugin)
        })
    }

    /// The extension-public view of `realm`: public global plus public same-project commands,
    /// never another project's; what `host.commands` in `initialize` lists.
    pub fn extension_commands(&self, realm: &Realm) -> Vec<CommandInfo> {
        let state = self.inner.lock();
        state.registry.list(realm, true, |p, plugin| {
            policy_blocks(&state.project_desired, p, plugin)
        })
    }

    /// Publishes on the host-wide JSON bus. Never waits: a full subscriber queue drops the
    /// event for that subscriber and counts it. Returns how many subscribers accepted it.
    pub fn emit(&self, name: &str, payload: Value) -> usize {
        self.inner.lock().registry.emit(name, &payload)
    }

    /// Publishes on the typed internal bus (never visible to plugins), same queue rule.
    pub fn emit_typed<T: Clone + Send + Sync + 'static>(&self, event: T) -> usize {
        self.inner.lock().registry.emit_typed(&event)
    }

    /// Problems that did not fail a caller (cleanup panics, failed applies), oldest first.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.inner.lock().diagnostics.iter().cloned().collect()
    }

    /// Registered commands across all realms.
    pub fn command_count(&self) -> usize {
        self.inner.lock().registry.command_count()
    }

    /// Live scopes across all realms.
    pub fn scope_count(&self) -> usize {
        self.inner.lock().registry.scopes.len()
    }

    /// Disposes everything (newest module first, then host scopes), awaiting every cleanup.
    /// Afterwards every call fails with [`Error::ShutDown`].
    pub async fn shutdown(&self) {
        let _graph = self.inner.graph.lock().await;
        let mut cleanups = Vec::new();
        {
            let mut state = self.inner.lock();
            state.shut_down = true;
            let mut modules: Vec<(u64, ScopeId)> = Vec::new();
            for realm in state.built_realms() {
                let slots = state.slots(&realm).into_iter().flatten();
                modules.extend(
                    slots.filter_map(|(_, slot)| slot.scope.map(|scope| (slot.seq, scope))),
                );
            }
            state.registry.detach_all(modules, &mut cleanups);
            state.projects.clear();
            for slot in state.global.values_mut() {
                slot.scope = None;
                slot.key = None;
                slot.state = ModuleState::Disabled;
            }
            state.revision += 1;
        }
        self.run_cleanups(cleanups).await;
    }
}
