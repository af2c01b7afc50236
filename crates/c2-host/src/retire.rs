//! How a bundle's files leave the store under live hosts: the host making the change unloads
//! its own copy first (dropping its own lease), tells the other hosts, and deletes the retired
//! tree once no host holds a lease on it, waiting at most [`HostOptions::retire_wait`] for
//! the others (docs/ARCHITECTURE.md, "Many hosts, one store").

use std::time::Instant;

use c2_lock::lock;

use crate::bundle::module_name;
use crate::error::HostError;
use crate::host::PluginHost;
#[cfg(doc)]
use crate::options::HostOptions;

impl PluginHost {
    /// Unloads a loaded bundle in every realm (under the change lock): its commands disappear,
    /// its processes stop and its scopes' leases on the installed tree are dropped, so the
    /// tree can then leave the store without this host waiting for itself. The reconcile hooks
    /// (the content library's `skills/changed`, ...) do not run here: this is a step of a
    /// change, and the caller runs them once the change is complete, so a replace publishes
    /// one change, not a removal and an addition.
    pub(crate) async fn unload_locked(&self, id: &str) -> Result<(), HostError> {
        self.shared.kernel.remove_factory(&module_name(id))?;
        self.shared.set_bundles(|bundles| bundles.remove(id));
        self.sync_desired();
        self.on_runtime(self.shared.kernel.reconcile()).await;
        Ok(())
    }

    /// Tells the other hosts that the store changed (policy writes do it themselves).
    pub(crate) fn committed_store_change(&self) {
        match c2_policy::bump_generation(&self.shared.options.plugins_dir) {
            Ok(generation) => {
                self.committed_own(Some(generation));
                lock(&self.shared.policy).note_store_write(generation);
            }
            Err(error) => tracing::warn!("cannot bump the store generation: {error}"),
        }
    }

    /// Deletes a tree that left the store once no host holds it, waiting up to
    /// [`HostOptions::retire_wait`].
    pub(crate) async fn finish_retired(&self, retired: c2_bundle_collector::Retired) {
        let deadline = Instant::now() + self.shared.options.retire_wait;
        loop {
            match retired.try_finish() {
                Ok(true) => return,
                Ok(false) if Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                Ok(false) => {
                    tracing::warn!(
                        path = %retired.path().display(),
                        "another host still has the removed bundle loaded; its files stay in the trash until the store is next opened"
                    );
                    return;
                }
                Err(error) => {
                    tracing::warn!("cannot delete a removed bundle's files: {error}");
                    return;
                }
            }
        }
    }
}
