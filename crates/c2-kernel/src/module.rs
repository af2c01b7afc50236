//! The runtime module trait and the context its `apply` registers into.

use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::model::{CommandSpec, ModuleMeta, ProjectKey, Realm};
use crate::scope::{CommandHandler, EventStream, Listener, ScopeHandle, TypedStream};

/// A boxed, sendable future; what object-safe async methods in this crate return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A service instance as the registry stores it.
pub type ServiceValue = Arc<dyn Any + Send + Sync>;

/// A runtime module: compiled into the host, or the host's adapter for a bundle process.
///
/// The same module value serves every realm it is eligible for; `apply` learns which one from
/// [`ScopeContext::realm`]. Everything it registers belongs to that one scope and disappears when
/// the scope is disposed.
pub trait Module: Send + Sync + 'static {
    /// The unique factory name, e.g. `git` or `bundle:<id>`.
    fn name(&self) -> &str;
    /// Catalog metadata.
    fn meta(&self) -> ModuleMeta;
    /// Required services: the module stays pending until all exist, and reloads when one changes.
    fn inject(&self) -> Vec<String> {
        Vec::new()
    }
    /// Optional services: their arrival, departure or replacement reloads the module.
    fn optional_inject(&self) -> Vec<String> {
        Vec::new()
    }
    /// The configuration JSON Schema, if the configuration is user-editable.
    fn config_schema(&self) -> Option<Value> {
        None
    }
    /// Registers the module's commands, listeners, services and cleanups into `ctx`.
    ///
    /// On error or panic everything registered so far is rolled back. Apply runs while the
    /// graph is being changed, so it must not wait on graph changes itself: no `dispose` of a
    /// scope, no call into a project realm that is not live yet (that would build it).
    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), Error>>;
}

/// What `apply` sees: its scope, its configuration and the services it asked for.
pub struct ScopeContext {
    pub(crate) scope: ScopeHandle,
    pub(crate) config: Value,
    pub(crate) withheld: BTreeSet<String>,
    pub(crate) services: HashMap<String, ServiceValue>,
}

impl fmt::Debug for ScopeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeContext")
            .field("scope", &self.scope)
            .field("config", &self.config)
            .field("services", &self.services.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ScopeContext {
    /// The scope being built; clone it into handlers that need to attach work later.
    pub fn scope(&self) -> &ScopeHandle {
        &self.scope
    }

    /// The realm this instance serves.
    pub fn realm(&self) -> &Realm {
        self.scope.realm()
    }

    /// The module's effective configuration (`null` when policy gives none).
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// What policy withholds from the module in this realm ([`crate::ModuleIntent::withheld`]):
    /// the module leaves those parts out of what it registers.
    pub fn withheld(&self) -> &BTreeSet<String> {
        &self.withheld
    }

    /// An injected service, downcast to its concrete type. `None` when an optional service is
    /// absent or the type does not match.
    pub fn service<T: Any + Send + Sync>(&self, name: &str) -> Option<Arc<T>> {
        self.services
            .get(name)
            .cloned()
            .and_then(|value| value.downcast::<T>().ok())
    }

    /// Registers a command in this scope's realm.
    pub fn register_command(
        &mut self,
        name: impl Into<String>,
        spec: CommandSpec,
        handler: CommandHandler,
    ) -> Result<(), Error> {
        self.scope.register_command(name, spec, handler)
    }

    /// Provides a named service from this scope. A second provider in the realm is refused.
    pub fn provide_service(
        &mut self,
        name: impl Into<String>,
        value: ServiceValue,
    ) -> Result<(), Error> {
        self.scope.provide_service(name.into(), value)
    }

    /// Blocks this project realm from falling back to the global commands of `plugin`.
    pub fn block_fallback(
        &mut self,
        project: &ProjectKey,
        plugin: impl Into<String>,
    ) -> Result<(), Error> {
        self.scope.block_fallback(project, plugin)
    }

    /// Subscribes to a JSON bus event; the stream ends when the scope is disposed.
    pub fn subscribe(&mut self, name: impl Into<String>) -> Result<EventStream, Error> {
        self.scope.subscribe(name)
    }

    /// Subscribes to a typed internal event.
    pub fn subscribe_typed<T: Clone + Send + Sync + 'static>(
        &mut self,
    ) -> Result<TypedStream<T>, Error> {
        self.scope.subscribe_typed()
    }

    /// Runs `listener` for every `name` event; a panic in it fails this scope only.
    pub fn listen(&mut self, name: impl Into<String>, listener: Listener) -> Result<(), Error> {
        self.scope.listen(name, listener)
    }

    /// Registers a cleanup; cleanups run newest first when the scope is disposed.
    pub fn on_cleanup<F, Fut>(&mut self, cleanup: F) -> Result<(), Error>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.scope.on_cleanup(cleanup)
    }

    /// Spawns a task owned by this scope; it is aborted when the scope is disposed.
    pub fn spawn<Fut>(&mut self, task: Fut) -> Result<(), Error>
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.scope.spawn(task)
    }
}
