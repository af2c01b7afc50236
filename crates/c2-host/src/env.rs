//! What a bundle's module and its runtime instances need of the host that runs them: the
//! [`RuntimeEnv`] the host implements, its counters, and the event hooks contributions
//! register. `bundle` and `runtime` reach the host only through it, so neither imports the
//! lifecycle that owns them.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use c2_bundle_collector::Lease;
use c2_kernel::Kernel;
use c2_manifest::Manifest;
use serde_json::Value;

use crate::installed::InstalledBundle;
use crate::options::HostOptions;

/// The host, as a bundle's module and runtime see it.
pub(crate) trait RuntimeEnv: Send + Sync {
    /// The options the host runs with.
    fn options(&self) -> &HostOptions;
    /// The host's kernel.
    fn kernel(&self) -> &Kernel;
    /// The host's counters.
    fn counters(&self) -> &Arc<Counters>;
    /// Whether the user trusted exactly the installed content of `bundle`.
    fn is_trusted(&self, bundle: &InstalledBundle) -> bool;
    /// Whether the files on disk are still the installed (and trusted) ones; `Err` says what
    /// changed and what to do.
    fn verify_content(&self, bundle: &InstalledBundle) -> Result<(), String>;
    /// A lease on the installed tree of `id`, held while a scope of it is applied.
    fn lease(&self, id: &str) -> Result<Lease, c2_bundle_collector::Error>;
    /// The event hooks the contributions registered.
    fn event_hooks(&self) -> &[Arc<dyn EventHook>];
}

/// Counters a host exposes for tests, benchmarks and diagnostics.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) spawns: AtomicU64,
    pub(crate) dropped_events: AtomicU64,
}

/// A contribution's handler for one reserved plugin event name.
pub trait EventHook: Send + Sync {
    /// The reserved name, e.g. `connector/event`. Plugins may emit it; it never reaches the
    /// public bus.
    fn name(&self) -> &'static str;

    /// The per-runtime state for one running bundle.
    fn start(&self, manifest: &Manifest) -> Box<dyn RuntimeHook>;
}

/// The per-runtime half of an [`EventHook`].
pub trait RuntimeHook: Send {
    /// One `event/emit` of the hook's name from the bundle `bundle_id`.
    fn accept(&mut self, kernel: &Kernel, bundle_id: &str, payload: Value);
}

/// The hooks of one running bundle, made when its runtime starts.
#[derive(Default)]
pub(crate) struct RuntimeHooks(Vec<(&'static str, Box<dyn RuntimeHook>)>);

impl std::fmt::Debug for RuntimeHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

impl RuntimeHooks {
    /// `hooks` started for `bundle`.
    pub(crate) fn start(hooks: &[Arc<dyn EventHook>], bundle: &InstalledBundle) -> Self {
        Self(
            hooks
                .iter()
                .map(|hook| (hook.name(), hook.start(&bundle.manifest)))
                .collect(),
        )
    }

    /// Hands an emitted event to the hook that claimed its name; gives the payload back when
    /// none did, for the public bus.
    pub(crate) fn intercept(
        &mut self,
        kernel: &Kernel,
        bundle_id: &str,
        name: &str,
        payload: Value,
    ) -> Option<Value> {
        match self.0.iter_mut().find(|(claimed, _)| *claimed == name) {
            Some((_, hook)) => {
                hook.accept(kernel, bundle_id, payload);
                None
            }
            None => Some(payload),
        }
    }
}
