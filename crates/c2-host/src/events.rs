//! Event subscriptions for an embedder, without opening a kernel scope by hand.

use std::ops::{Deref, DerefMut};

use c2_kernel::{EventStream, Realm, ScopeHandle, TypedStream};

use crate::error::HostError;
use crate::host::PluginHost;

/// The owner name of the scopes that hold an embedder's subscriptions.
const SUBSCRIBER: &str = "embedder";

/// A subscription the host opened for the embedder: the stream (an [`EventStream`] or a
/// [`TypedStream`]; use it through `Deref`, e.g. `subscription.recv().await`) and the
/// host-owned scope that holds it. Dropping it releases the scope (in the background, on the
/// host's runtime); the stream also ends (`recv` returns `None`) when the host shuts down.
/// Events that arrive while its queue (`KernelOptions::event_queue_capacity`) is full are
/// dropped and counted (`dropped()`), never blocking the emitter.
#[derive(Debug)]
pub struct Subscription<S> {
    stream: S,
    scope: ScopeHandle,
    runtime: Option<tokio::runtime::Handle>,
}

impl<S> Deref for Subscription<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.stream
    }
}

impl<S> DerefMut for Subscription<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.stream
    }
}

impl<S> Drop for Subscription<S> {
    fn drop(&mut self) {
        if !self.scope.is_current() {
            return;
        }
        let runtime = self
            .runtime
            .clone()
            .or_else(|| tokio::runtime::Handle::try_current().ok());
        if let Some(runtime) = runtime {
            let scope = self.scope.clone();
            runtime.spawn(async move { scope.dispose().await });
        }
    }
}

impl PluginHost {
    /// Subscribes to the JSON event `name` (a plugin's `event/emit`, `skills/changed`, the
    /// host's own such as c2-contributions' `connector/event`) in a scope of its own, which the
    /// returned [`Subscription`] releases when dropped.
    ///
    /// Fails `shut_down` once the host is shut down.
    pub fn subscribe(
        &self,
        name: impl Into<String>,
    ) -> Result<Subscription<EventStream>, HostError> {
        let scope = self.kernel().open_scope(&Realm::Global, SUBSCRIBER)?;
        let stream = scope.subscribe(name)?;
        Ok(self.subscription(stream, scope))
    }

    /// Subscribes to the typed in-process event `T` (for example [`crate::StoreChanged`]),
    /// like [`PluginHost::subscribe`].
    pub fn subscribe_typed<T: Clone + Send + Sync + 'static>(
        &self,
    ) -> Result<Subscription<TypedStream<T>>, HostError> {
        let scope = self.kernel().open_scope(&Realm::Global, SUBSCRIBER)?;
        let stream = scope.subscribe_typed::<T>()?;
        Ok(self.subscription(stream, scope))
    }

    fn subscription<S>(&self, stream: S, scope: ScopeHandle) -> Subscription<S> {
        Subscription {
            stream,
            scope,
            runtime: self.options().runtime.clone(),
        }
    }
}
