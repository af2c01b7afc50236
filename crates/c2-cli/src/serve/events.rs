//! Relay event subscriptions: the service registers one core module, `relay`, whose kernel
//! scope owns every client's JSON bus subscription, so they end with the host like every other
//! registration. Each subscription's queue is the kernel's bounded one (new events dropped and
//! counted when full); forwarding to a client never waits: a notification that does not fit in
//! the connection's outbound queue is dropped and counted, so a slow frontend costs the service
//! no memory.

use std::sync::{Arc, Mutex, PoisonError};

use c2_kernel::{
    BoxFuture, DefaultState, Error as KernelError, EventStream, Module, ModuleMeta, Role,
    ScopeContext, ScopeHandle,
};

/// The module's name in the catalog.
pub(crate) const MODULE: &str = "relay";

/// The host events only relay clients may publish (`events/publish`).
pub(crate) const PUBLISHABLE: &[&str] = &["engine/event", "skills/changed", "scenes/changed"];

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

    /// A bounded subscription to the JSON bus event `name`.
    pub(crate) fn subscribe(&self, name: &str) -> Result<EventStream, String> {
        let scope = self
            .scope
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(scope) = scope else {
            return Err("the relay's event scope is not live (safe mode, or shutting down)".into());
        };
        scope.subscribe(name).map_err(|error| error.to_string())
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
            *self
                .bus
                .scope
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(ctx.scope().clone());
            Ok(())
        })
    }
}
