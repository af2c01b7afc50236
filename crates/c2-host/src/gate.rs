//! What may run of an installed bundle, as the host's state answers it: not a blocked one (the
//! kill switch's deny lists, c2-policy), nor one whose files changed since it was installed;
//! and the [`RuntimeEnv`] through which a bundle's module and runtime ask.

use std::collections::BTreeMap;
use std::sync::Arc;

use c2_kernel::Kernel;
use c2_lock::lock;

use crate::env::{Counters, EventHook, RuntimeEnv};
use crate::host::Shared;
use crate::installed::InstalledBundle;
use crate::options::HostOptions;

impl Shared {
    /// The deny entry each blocked bundle matches, by module name (c2-policy's kill switch).
    pub(crate) fn blocked(&self) -> BTreeMap<String, c2_policy::DenyMatch> {
        let bundles = lock(&self.bundles).clone();
        let policy = lock(&self.policy);
        let denied = |b: &InstalledBundle| {
            // The record as installed.json holds it; a path that is not UTF-8 reads as unknown.
            let record = serde_json::to_value(&b.record).unwrap_or_default();
            let author = serde_json::to_value(&b.manifest.author).unwrap_or_default();
            let subject = c2_policy::Subject::from_record(&record, &author);
            policy.deny_lists().denied(&subject)
        };
        bundles
            .values()
            .filter(|_| !policy.deny_lists().is_empty())
            .filter_map(|m| Some((m.bundle().module_name().to_owned(), denied(m.bundle())?)))
            .collect()
    }

    /// Whether the files under the bundle's directory are still the ones installed (and so
    /// the ones trusted): the digest is recomputed from disk. `Err` says what changed and
    /// what to do; nothing is untrusted by it.
    pub(crate) fn verify_content(&self, bundle: &InstalledBundle) -> Result<(), String> {
        self.store
            .check_content(&bundle.record, &self.options.limits)
            .map_err(|changed| changed.0)
    }
}

impl RuntimeEnv for Shared {
    fn options(&self) -> &HostOptions {
        &self.options
    }

    fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    fn counters(&self) -> &Arc<Counters> {
        &self.stats
    }

    fn is_trusted(&self, bundle: &InstalledBundle) -> bool {
        Shared::is_trusted(self, bundle)
    }

    fn verify_content(&self, bundle: &InstalledBundle) -> Result<(), String> {
        Shared::verify_content(self, bundle)
    }

    fn lease(&self, id: &str) -> Result<c2_bundle_collector::Lease, c2_bundle_collector::Error> {
        self.store.lease(id)
    }

    fn event_hooks(&self) -> &[Arc<dyn EventHook>] {
        self.wired.get().map_or(&[], |wired| wired.hooks())
    }
}
