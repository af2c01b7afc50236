//! Each plugin runtime's health, per bundle and realm, read from the vitals its runtime keeps
//! (c2-supervisor's `Vitals`): what `PluginHost::health` answers.

use c2_lock::lock;

/// One plugin runtime's health in one realm ([`PluginHost::health`](crate::PluginHost::health)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeHealth {
    /// The installed bundle's id.
    pub bundle: String,
    /// `global`, or the project's realm key.
    pub realm: String,
    /// Its state, process, counts, calls and usage.
    pub health: c2_supervisor::Health,
}

impl crate::host::PluginHost {
    /// Every plugin runtime's health, per bundle and realm (counts over the crash window).
    pub fn health(&self) -> Vec<RuntimeHealth> {
        let window = self.shared.options.crash_window;
        let bundles = lock(&self.shared.bundles).clone();
        let instances = bundles.values().flat_map(|module| module.instances());
        instances.map(|(_, one)| one.health(window)).collect()
    }
}
