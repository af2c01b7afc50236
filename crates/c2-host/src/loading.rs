//! On-demand loading ([`Loading::OnDemand`]): a host acting on one bundle loads only it and
//! the bundles a command conflict could involve, so its cost does not follow the store.

use std::sync::Arc;

use c2_bundle_collector::InstalledRecord;

use crate::bundle::BundleModule;
use crate::error::HostError;
use crate::host::{PluginHost, lock};
use crate::options::Loading;

impl PluginHost {
    /// The loaded bundle `id`; with [`Loading::OnDemand`], loaded now if it is installed.
    pub(crate) fn bundle(&self, id: &str) -> Result<Arc<BundleModule>, HostError> {
        let loaded = lock(&self.shared.bundles).get(id).cloned();
        loaded
            .or_else(|| match self.shared.options.loading {
                Loading::All => None,
                Loading::OnDemand => self.load_on_demand(id),
            })
            .ok_or_else(|| HostError::NotInstalled { id: id.to_owned() })
    }

    /// Loads the installed bundle `id` and its neighbours ([`PluginHost::load_neighbours`]);
    /// `None` when it is not installed or does not load (kept as a load problem, as at open).
    fn load_on_demand(&self, id: &str) -> Option<Arc<BundleModule>> {
        if !self.shared.store.contains(id).unwrap_or(false) {
            return None;
        }
        let module = self.load_record(id, self.shared.store.get(id))?;
        self.load_neighbours(&module.bundle().record);
        Some(module)
    }

    /// Loads the installed bundle `id` from its `record`; a record that cannot be read or a
    /// bundle that does not load is kept as a load problem (see [`PluginHost::diagnostics`]).
    pub(crate) fn load_record(
        &self,
        id: &str,
        record: Result<InstalledRecord, c2_bundle_collector::Error>,
    ) -> Option<Arc<BundleModule>> {
        let loaded = record
            .map_err(HostError::from)
            .and_then(|record| self.load_bundle(record));
        loaded
            .map_err(|error| {
                lock(&self.shared.load_problems)
                    .push(format!("installed bundle {id} cannot be loaded: {error}"));
            })
            .ok()
    }

    /// With [`Loading::OnDemand`]: loads every installed bundle that shares a command id with
    /// `record`, and theirs in turn, so the kernel settles a command conflict among them
    /// exactly as it would with the whole store loaded (bundles sharing no command id with
    /// them cannot change the outcome). The store's command claims name them without reading
    /// every record.
    pub(crate) fn load_neighbours(&self, record: &InstalledRecord) {
        if self.shared.options.loading != Loading::OnDemand {
            return;
        }
        let commands = record.command_ids();
        if commands.is_empty() {
            return;
        }
        let neighbours = match self.shared.store.command_neighbours(&record.id, &commands) {
            Ok(neighbours) => neighbours,
            Err(error) => {
                tracing::warn!("cannot read which commands the installed bundles declare: {error}");
                return;
            }
        };
        for id in neighbours {
            if !lock(&self.shared.bundles).contains_key(&id) {
                self.load_record(&id, self.shared.store.get(&id));
            }
        }
    }
}
