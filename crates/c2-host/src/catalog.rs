//! The policy catalog: what c2-policy resolves desired state and plans changes against, built
//! from the kernel's factories and the loaded bundles; and the revisions a plan is bound to.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use c2_kernel::Realm;
use c2_lock::lock;
use c2_policy::{Catalog, CatalogModule, Revisions};

use crate::host::PluginHost;
use crate::states::realm_text;

/// What a cached policy catalog was built from: the kernel's factory revision and the loaded
/// bundles' revision.
pub(crate) type CatalogKey = (u64, u64);

impl PluginHost {
    /// The policy catalog as resolving desired state needs it: every factory with its
    /// metadata and, for bundles, the digest, without live resources. Built once per change
    /// to the factory set or the loaded bundles and shared until the next one: every
    /// reconcile, listing and library question asks it.
    pub(crate) fn desired_catalog(&self) -> Arc<Catalog> {
        let key = || {
            (
                self.shared.kernel.factories_revision(),
                self.shared.bundles_revision.load(Ordering::SeqCst),
            )
        };
        let before = key();
        if let Some((at, catalog)) = &*lock(&self.shared.catalog)
            && *at == before
        {
            return Arc::clone(catalog);
        }
        let catalog = Arc::new(self.build_catalog(false));
        // Kept only when nothing changed while it was built.
        if key() == before {
            *lock(&self.shared.catalog) = Some((before, Arc::clone(&catalog)));
        }
        catalog
    }

    /// The policy catalog with each bundle's live resources (its processes): what a plan
    /// shows of what a change would stop.
    pub(crate) fn policy_catalog(&self) -> Catalog {
        self.build_catalog(true)
    }

    fn build_catalog(&self, with_resources: bool) -> Catalog {
        let bundles = lock(&self.shared.bundles).clone();
        Catalog::new(
            self.shared
                .kernel
                .catalog(&Realm::Global)
                .into_iter()
                .map(|entry| {
                    let bundle = entry
                        .name
                        .strip_prefix(crate::bundle::BUNDLE_PREFIX)
                        .and_then(|id| bundles.get(id));
                    let active_resources = bundle
                        .filter(|_| with_resources)
                        .map(|module| {
                            module
                                .instances()
                                .into_iter()
                                .filter_map(|(realm, instance)| {
                                    instance.pid().map(|pid| {
                                        format!("process {pid} in {}", realm_text(&realm))
                                    })
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    CatalogModule {
                        project_capable: entry.meta.supports(c2_kernel::ScopeKind::Project),
                        essential: entry.meta.essential,
                        default_enabled: entry.meta.default_state
                            == c2_kernel::DefaultState::Enabled,
                        config_schema: entry.config_schema.clone(),
                        dependents: Vec::new(),
                        active_resources,
                        digest: bundle.map(|m| m.bundle().record.digest.clone()),
                        name: entry.name,
                    }
                }),
        )
    }

    /// A fingerprint of the factory set: it changes exactly when a bundle is installed,
    /// replaced or removed, in this process or another one.
    fn graph_revision(&self) -> u64 {
        let mut hasher = blake3::Hasher::new();
        for entry in self.shared.kernel.catalog(&Realm::Global) {
            hasher.update(entry.name.as_bytes());
            hasher.update(&[0]);
            hasher.update(&entry.revision.to_le_bytes());
        }
        let hash = hasher.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash.as_bytes()[..8]);
        u64::from_le_bytes(first)
    }

    pub(crate) fn revisions(&self) -> Revisions {
        Revisions {
            graph: self.graph_revision(),
            projects: lock(&self.shared.projects).clone(),
        }
    }
}
