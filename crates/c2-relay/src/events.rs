//! Relay event subscriptions: the service registers one core module, `relay`, whose kernel
//! scope owns every client's JSON bus subscription, so they end with the host like every other
//! registration. Each subscription's queue is the kernel's bounded one (new events dropped and
//! counted when full); forwarding to a client never waits: a notification that does not fit in
//! the connection's outbound queue is dropped and counted, so a slow frontend costs the service
//! no memory.

use std::sync::{Arc, Mutex};

use c2_contributions::{CONNECTOR_EVENT, ConnectorEvent};
use c2_host::{PluginHost, StoreChanged};
use c2_kernel::{
    BoxFuture, DefaultState, Error as KernelError, EventStream, Module, ModuleMeta, Role,
    ScopeContext, ScopeHandle, TypedStream,
};
use c2_lock::lock;
use serde_json::Value;

/// The module's name in the catalog.
pub(crate) const MODULE: &str = "relay";

/// The subscription name of the host's typed store-change events ([`StoreChanged`]): a change
/// any process committed to the store or its policy, once this host has reconciled it.
pub const STORE_CHANGED: &str = "store/changed";

/// The subscription name of the runtimes' health: the `health/status` result, sent when the
/// subscription starts and then whenever a runtime's state, pid, starts, crashes, last failure,
/// call counts or dropped events changed, looked at every [`HEALTH_INTERVAL`] (usage and uptime
/// alone do not make a change).
pub const HEALTH_CHANGED: &str = "health/changed";

/// How often a `health/changed` subscription looks at the runtimes.
pub const HEALTH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// The host events only relay clients may publish (`events/publish`).
pub const PUBLISHABLE: &[&str] = &["engine/event", "skills/changed", "scenes/changed"];

/// The relay's scope, once the kernel has applied the module.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bus {
    scope: Arc<Mutex<Option<ScopeHandle>>>,
}

impl Bus {
    /// The module to register with the host; it hands its scope to this bus.
    pub(crate) fn module(&self) -> Arc<dyn Module> {
        Arc::new(RelayModule { bus: self.clone() })
    }

    /// A bounded subscription to `name`: the typed connector events for `connector/event`
    /// (each with the owning bundle id the host authenticated), the typed store changes for
    /// `store/changed`, the JSON bus otherwise.
    pub(crate) fn subscribe(&self, name: &str, host: &PluginHost) -> Result<Stream, String> {
        let scope = lock(&self.scope).clone();
        let Some(scope) = scope else {
            return Err("the relay's event scope is not live (safe mode, or shutting down)".into());
        };
        let stream = match name {
            CONNECTOR_EVENT => scope
                .subscribe_typed::<ConnectorEvent>()
                .map(Stream::Connector),
            STORE_CHANGED => scope.subscribe_typed::<StoreChanged>().map(Stream::Store),
            HEALTH_CHANGED => Ok(Stream::Health {
                host: host.clone(),
                last: None,
            }),
            _ => scope.subscribe(name).map(Stream::Json),
        };
        stream.map_err(|error| error.to_string())
    }
}

/// One subscription's bounded queue.
#[derive(Debug)]
pub(crate) enum Stream {
    /// A JSON bus event.
    Json(EventStream),
    /// The typed connector events.
    Connector(TypedStream<ConnectorEvent>),
    /// The typed store changes.
    Store(TypedStream<StoreChanged>),
    /// The runtimes' health, looked at every [`HEALTH_INTERVAL`].
    Health {
        host: PluginHost,
        /// What the last event compared as ([`crate::json::health_change_key`]).
        last: Option<Value>,
    },
}

impl Stream {
    /// The next event's name and payload; `None` once the relay's scope is gone.
    pub(crate) async fn next(&mut self) -> Option<(String, Value)> {
        match self {
            Stream::Json(stream) => stream.recv().await.map(|e| (e.name, e.payload)),
            Stream::Connector(stream) => {
                let event = stream.recv().await?;
                Some((
                    CONNECTOR_EVENT.to_owned(),
                    crate::json::connector_event(&event),
                ))
            }
            Stream::Store(stream) => {
                let event = stream.recv().await?;
                let payload = crate::json::store_changed(&event, crate::json::Revisions::Text);
                Some((STORE_CHANGED.to_owned(), payload))
            }
            Stream::Health { host, last } => loop {
                if last.is_some() {
                    tokio::time::sleep(HEALTH_INTERVAL).await;
                }
                let rows = host.health();
                let key = crate::json::health_change_key(&rows);
                if last.as_ref() != Some(&key) {
                    *last = Some(key);
                    return Some((HEALTH_CHANGED.to_owned(), crate::json::health(&rows)));
                }
            },
        }
    }

    /// Events the kernel dropped because this queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        match self {
            Stream::Json(stream) => stream.dropped(),
            Stream::Connector(stream) => stream.dropped(),
            Stream::Store(stream) => stream.dropped(),
            Stream::Health { .. } => 0,
        }
    }
}

impl std::fmt::Debug for RelayModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RelayModule")
    }
}

struct RelayModule {
    bus: Bus,
}

impl Module for RelayModule {
    fn name(&self) -> &str {
        MODULE
    }

    fn meta(&self) -> ModuleMeta {
        let mut meta = ModuleMeta::new(Role::Core, "c2", "relay");
        meta.essential = true;
        meta.default_state = DefaultState::Enabled;
        meta
    }

    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            *lock(&self.bus.scope) = Some(ctx.scope().clone());
            Ok(())
        })
    }
}
