//! Developer mode's wiring: a working directory the user named becomes a development bundle,
//! trusted while held; the marks are c2-bundle-collector's, watching is the caller's.

use std::path::Path;

use c2_bundle_collector::{DeveloperStatus, DevelopmentMark, ReloadRecord};

use crate::host::{InstallOutcome, PluginHost, lock};
use crate::{ErrorKind, HostError, InstallOptions};

impl PluginHost {
    /// Installs `dir` as a development bundle, trusted and enabled, held by this host until
    /// [`PluginHost::end_development`] or its process ends (the next open then removes it).
    pub async fn develop(&self, dir: &Path) -> Result<InstallOutcome, HostError> {
        let fetched = c2_sources::fetch_path(dir, &self.collect_options())?;
        let mark = DevelopmentMark::new(&fetched.bundle, &fetched.request, dir)?;
        let hold = self.shared.store.hold_development(&mark)?;
        let installed = self.install_fetched(fetched, InstallOptions::trusted_and_enabled());
        let outcome = installed.await;
        if outcome.is_ok() {
            lock(&self.shared.development).push(hold);
        } else if let Err(error) = self.shared.store.release_development(&mark.id) {
            // Its holder is gone, so the next open removes the mark.
            tracing::warn!(id = %mark.id, "cannot release a failed install's mark: {error}");
        }
        outcome
    }

    /// Collects development bundles (`id`, or all) again: changed content that validates
    /// replaces the installed one, trusted; content that does not keeps the last good one.
    pub async fn reload_development(
        &self,
        id: Option<&str>,
    ) -> Result<Vec<DevelopmentMark>, HostError> {
        let mut reloaded = Vec::new();
        for mark in self.shared.store.development_marks(id)? {
            let fetched = c2_sources::fetch_path(&mark.dir, &self.collect_options())?;
            let record = ReloadRecord::of(&fetched.bundle);
            if record.ok && self.shared.store.get(&mark.id)?.digest != fetched.bundle.digest {
                self.install_fetched(fetched, InstallOptions::trusted_and_enabled())
                    .await?;
            }
            reloaded.push(self.shared.store.record_reload(&mark.id, record)?);
        }
        Ok(reloaded)
    }

    /// The store's development bundles, with whether their holder is alive.
    pub fn developer_status(&self) -> Result<DeveloperStatus, HostError> {
        Ok(self.shared.store.developer_status()?)
    }

    /// Removes the development bundles whose holder is gone (it crashed or was killed): run
    /// by every open of the store, so none outlives its developer mode.
    pub(crate) async fn remove_orphaned_development(&self) {
        for id in self.shared.store.orphaned_development().unwrap_or_default() {
            if let Err(error) = self.end_development(Some(&id)).await {
                tracing::warn!("cannot remove the orphaned development bundle {id}: {error}");
            }
        }
    }

    /// Ends developer mode for the development bundles this host holds: its shutdown does, so
    /// they leave every host with it.
    pub(crate) async fn end_held_development(&self) {
        let held: Vec<String> = lock(&self.shared.development)
            .iter()
            .map(|hold| hold.id().to_owned())
            .collect();
        for id in held {
            if let Err(error) = self.end_development(Some(&id)).await {
                tracing::warn!("cannot end developer mode for {id}: {error}");
            }
        }
    }

    /// Ends developer mode for `id` (or every development bundle): uninstalls and releases it.
    pub async fn end_development(&self, id: Option<&str>) -> Result<Vec<String>, HostError> {
        let mut ended = Vec::new();
        for mark in self.shared.store.development_marks(id)? {
            match self.uninstall(&mark.id).await {
                Err(error) if error.kind() != ErrorKind::NotInstalled => return Err(error),
                _ => lock(&self.shared.development).retain(|hold| hold.id() != mark.id),
            }
            self.shared.store.release_development(&mark.id)?;
            ended.push(mark.id);
        }
        Ok(ended)
    }
}
