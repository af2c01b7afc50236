//! Handles into live scopes, what handlers receive, event streams and leases.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::kernel::{Inner, Kernel};
use crate::model::{CommandSpec, Event, ProjectKey, Realm};
use crate::module::{BoxFuture, ServiceValue};
use crate::registry::{Registry, ScopeId};
use crate::unwind::guarded;

/// A command handler: async, shareable, called with the call's context and JSON arguments.
pub type CommandHandler =
    Arc<dyn Fn(CallContext, Value) -> BoxFuture<'static, Result<Value, Error>> + Send + Sync>;

/// A JSON bus listener.
pub type Listener = Arc<dyn Fn(Event) -> BoxFuture<'static, ()> + Send + Sync>;

/// Wraps an async closure as a [`CommandHandler`].
pub fn command_handler<F, Fut>(handler: F) -> CommandHandler
where
    F: Fn(CallContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, Error>> + Send + 'static,
{
    Arc::new(move |ctx, args| Box::pin(handler(ctx, args)))
}

/// Wraps an async closure as a [`Listener`].
pub fn listener<F, Fut>(listener: F) -> Listener
where
    F: Fn(Event) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |event| Box::pin(listener(event)))
}

/// What a handler learns about the call it serves.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The realm the call was made in (a project call may reach a global command).
    pub realm: Realm,
    /// The scope that owns the command; work it starts should attach here so it dies with it.
    pub scope: ScopeHandle,
    /// Whether the call came through the extension seam.
    pub via_extension: bool,
}

/// A handle to one scope generation. Everything attached through it is refused with
/// [`Error::StaleScope`] once that scope is disposed, so work started for an old generation
/// (a lazy activation that finishes after a reload) cannot attach to the new one.
#[derive(Clone)]
pub struct ScopeHandle {
    pub(crate) inner: Weak<Inner>,
    pub(crate) id: ScopeId,
    pub(crate) generation: u64,
    pub(crate) realm: Realm,
    pub(crate) module: std::sync::Arc<str>,
}

impl fmt::Debug for ScopeHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeHandle")
            .field("id", &self.id)
            .field("generation", &self.generation)
            .field("realm", &self.realm)
            .field("module", &self.module)
            .finish()
    }
}

impl ScopeHandle {
    /// The scope's unique id (never reused).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The module generation this scope was built for.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The realm the scope registers into.
    pub fn realm(&self) -> &Realm {
        &self.realm
    }

    /// The owning module's name.
    pub fn module(&self) -> &str {
        &self.module
    }

    /// Whether this generation is still live.
    pub fn is_current(&self) -> bool {
        self.inner
            .upgrade()
            .is_some_and(|inner| inner.lock().registry.is_live(self.id))
    }

    /// The kernel, while it exists.
    pub fn kernel(&self) -> Option<Kernel> {
        self.inner.upgrade().map(|inner| Kernel { inner })
    }

    fn with_live<R>(
        &self,
        f: impl FnOnce(&mut Registry, &Inner) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let inner = self.inner.upgrade().ok_or(Error::ShutDown)?;
        let mut state = inner.lock();
        state
            .registry
            .live(self.id, &self.module, self.generation)?;
        f(&mut state.registry, &inner)
    }

    /// Registers a command in this scope's realm.
    pub fn register_command(
        &self,
        name: impl Into<String>,
        spec: CommandSpec,
        handler: CommandHandler,
    ) -> Result<(), Error> {
        let name = name.into();
        self.with_live(|registry, _| registry.register_command(self.id, name, spec, handler))
    }

    pub(crate) fn provide_service(&self, name: String, value: ServiceValue) -> Result<(), Error> {
        self.with_live(|registry, _| registry.provide_service(self.id, name, value))
    }

    /// Blocks `project` from falling back to the global commands of `plugin` while this scope
    /// lives; calls then fail closed unless the project has its own command of that name.
    pub fn block_fallback(
        &self,
        project: &ProjectKey,
        plugin: impl Into<String>,
    ) -> Result<(), Error> {
        let plugin = plugin.into();
        self.with_live(|registry, _| {
            registry.block_fallback(self.id, project.clone(), plugin);
            Ok(())
        })
    }

    /// Subscribes to a JSON bus event with a bounded queue; the stream ends with the scope.
    pub fn subscribe(&self, name: impl Into<String>) -> Result<EventStream, Error> {
        let name = name.into();
        self.with_live(|registry, inner| {
            let (rx, dropped) =
                registry.subscribe(self.id, name, inner.options.event_queue_capacity);
            Ok(EventStream { rx, dropped })
        })
    }

    /// Subscribes to a typed internal event with a bounded queue; the stream ends with the scope.
    pub fn subscribe_typed<T: Clone + Send + Sync + 'static>(
        &self,
    ) -> Result<TypedStream<T>, Error> {
        self.with_live(|registry, inner| {
            let (rx, dropped) =
                registry.subscribe_typed::<T>(self.id, inner.options.event_queue_capacity);
            Ok(TypedStream { rx, dropped })
        })
    }

    /// Runs `listener` for each `name` event in a task owned by this scope. A panic in the
    /// listener fails this scope (and only this scope).
    pub fn listen(&self, name: impl Into<String>, listener: Listener) -> Result<(), Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::module("listeners need a tokio runtime: call from inside the host's runtime")
        })?;
        let name = name.into();
        let weak = self.inner.clone();
        let scope = self.id;
        self.with_live(|registry, inner| {
            let (mut rx, _) =
                registry.subscribe(scope, name.clone(), inner.options.event_queue_capacity);
            let task = runtime.spawn(async move {
                while let Some(event) = rx.recv().await {
                    if let Err(message) = guarded(|| listener(event)).await {
                        if let Some(inner) = weak.upgrade() {
                            let reason = Error::Panicked {
                                what: format!("listener for `{name}`"),
                                message,
                            };
                            Kernel { inner }.fail_scope_in_background(scope, reason.to_string());
                        }
                        return;
                    }
                }
            });
            registry.add_task(scope, task.abort_handle());
            Ok(())
        })
    }

    /// Registers an async cleanup; a scope's cleanups run newest first when it is disposed.
    pub fn on_cleanup<F, Fut>(&self, cleanup: F) -> Result<(), Error>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.with_live(|registry, _| {
            registry.add_cleanup(self.id, Box::new(move || Box::pin(cleanup())));
            Ok(())
        })
    }

    /// Spawns a task owned by this scope; disposal aborts it.
    pub fn spawn<Fut>(&self, task: Fut) -> Result<(), Error>
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::module("tasks need a tokio runtime: call from inside the host's runtime")
        })?;
        self.with_live(|registry, _| {
            let handle = runtime.spawn(task);
            registry.add_task(self.id, handle.abort_handle());
            Ok(())
        })
    }

    /// Opens a child scope (e.g. one process activation). Disposing this scope disposes the
    /// child first; the child can also be disposed alone.
    pub fn child(&self) -> Result<ScopeHandle, Error> {
        self.with_live(|registry, _| {
            let id = registry.open_scope(
                self.realm.clone(),
                self.module.clone(),
                self.generation,
                Some(self.id),
            );
            Ok(ScopeHandle { id, ..self.clone() })
        })
    }

    /// Disposes this scope now (children first, cleanups newest first, awaited), then
    /// reconciles so dependents of anything it provided follow.
    pub async fn dispose(&self) {
        if let Some(kernel) = self.kernel() {
            kernel.dispose_scope(self.id).await;
        }
    }
}

/// A bounded JSON bus subscription. When the queue is full, new events for this subscriber are
/// dropped and counted; other subscribers are unaffected.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::Receiver<Event>,
    dropped: Arc<AtomicU64>,
}

impl EventStream {
    /// The next event; `None` once the owning scope is disposed and the queue is drained.
    pub async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// The next event if one is queued.
    pub fn try_recv(&mut self) -> Option<Event> {
        self.rx.try_recv().ok()
    }

    /// Events dropped for this subscriber because its queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A bounded typed-bus subscription, with the same drop-and-count rule as [`EventStream`].
#[derive(Debug)]
pub struct TypedStream<T> {
    rx: mpsc::Receiver<T>,
    dropped: Arc<AtomicU64>,
}

impl<T> TypedStream<T> {
    /// The next event; `None` once the owning scope is disposed and the queue is drained.
    pub async fn recv(&mut self) -> Option<T> {
        self.rx.recv().await
    }

    /// The next event if one is queued.
    pub fn try_recv(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }

    /// Events dropped for this subscriber because its queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Lease bookkeeping of one project realm instance.
#[derive(Debug)]
pub(crate) struct LeaseCell {
    pub(crate) count: AtomicUsize,
    pub(crate) last_used: Mutex<Instant>,
}

impl LeaseCell {
    pub(crate) fn new(now: Instant) -> Self {
        LeaseCell {
            count: AtomicUsize::new(0),
            last_used: Mutex::new(now),
        }
    }

    pub(crate) fn touch(&self, now: Instant) {
        *c2_lock::lock(&self.last_used) = now;
    }

    pub(crate) fn last_used(&self) -> Instant {
        *c2_lock::lock(&self.last_used)
    }
}

/// Keeps a project realm from idle reclamation while held (an active command or a live
/// resource such as a worktree). Dropping it releases the lease and marks the realm as used now.
#[derive(Debug)]
#[must_use = "a lease protects its realm only while it is held"]
pub struct Lease {
    pub(crate) cell: Option<Arc<LeaseCell>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.touch(Instant::now());
            cell.count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
