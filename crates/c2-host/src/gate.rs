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
            .filter_map(|m| Some((m.bundle().module_name(), denied(m.bundle())?)))
            .collect()
    }

    /// Whether the files under the bundle's directory are still the ones installed (and so
    /// the ones trusted): the digest is recomputed from disk. `Err` says what changed and
    /// what to do; nothing is untrusted by it.
    pub(crate) fn verify_content(&self, bundle: &InstalledBundle) -> Result<(), String> {
        let id = &bundle.record.id;
        let what_to_do = "nothing from it runs and its trust is unchanged: reinstall it from its source to restore the reviewed files, or uninstall it";
        match self.store.current_digest(id, &self.options.limits) {
            Ok(Some(digest)) if digest == bundle.record.digest => Ok(()),
            Ok(Some(digest)) => Err(format!(
                "the installed files of {id} changed on disk since it was installed (content digest {} instead of {}); {what_to_do}",
                &digest[..16.min(digest.len())],
                &bundle.record.digest[..16.min(bundle.record.digest.len())]
            )),
            Ok(None) => Err(format!(
                "the installed files of {id} changed on disk since it was installed (a symlink, special file or unexpected directory appeared in {}); {what_to_do}",
                bundle.dir.display()
            )),
            Err(error) => Err(format!(
                "the installed files of {id} cannot be checked against its digest: {error}; {what_to_do}"
            )),
        }
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
