//! Sources and catalogs on the host's side: every source is parsed and fetched by
//! c2-sources with the host's collect options, then stored through the one install path
//! ([`PluginHost::install_collected`]'s), so nothing is collected or validated twice.
//!
//! The installed id of a catalog entry comes from the catalog and the entry's name, and
//! `installed.json` records the origin, so `outdated` and `update` re-read the catalog and an
//! update replaces the same installed bundle: enablement, per-component choices and data
//! directories are kept, trust is dropped when the content changed (the store's review says
//! why). A dry run fetches and reviews, and stores nothing.

use c2_bundle_collector::{
    CollectOptions, CollectedBundle, InstallRequest, InstalledRecord, Summary, UpdateReview,
};
use c2_lock::lock;
use c2_policy::Scope;
use c2_sources::{
    Catalogs, ConfiguredMarketplace, EntryLookup, FetchOptions, Fetched, LockFile, OutdatedRow,
    SearchHit, Source,
};
use serde::Serialize;

use crate::bundle::InstalledBundle;
use crate::error::{ErrorKind, HostError};
use crate::host::{InstallOutcome, PluginHost};
use crate::options::{InstallOptions, Loading};

/// One bundle updated by [`PluginHost::update`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Updated {
    /// The installed id (unchanged by the update).
    pub id: String,
    /// The version before.
    pub from: Option<String>,
    /// The version now.
    pub to: String,
    /// The replace, as an install reports it (notes say when trust was dropped).
    pub outcome: InstallOutcome,
}

/// One bundle [`PluginHost::update`] could not update; it stays installed as it was.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateFailure {
    /// The installed id.
    pub id: String,
    /// The error's kind ([`HostError::kind`]).
    pub kind: ErrorKind,
    /// What went wrong.
    pub message: String,
}

/// What [`PluginHost::update`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateReport {
    /// Bundles replaced by a newer version.
    pub updated: Vec<Updated>,
    /// Ids already at their catalog's version.
    pub current: Vec<String>,
    /// Bundles left as they were because the update failed.
    pub failed: Vec<UpdateFailure>,
    /// A dry run only: what each update would change (executable surface and files).
    pub pending: Vec<UpdateReview>,
}

impl PluginHost {
    /// What the host collects and validates every bundle with: its limits and manifest
    /// options. A bundle fetched with these ([`c2_sources::fetch_path`], say) is stored by
    /// [`PluginHost::install_fetched`] without being checked again.
    pub fn collect_options(&self) -> CollectOptions {
        let options = &self.shared.options;
        CollectOptions::new()
            .with_limits(options.limits)
            .with_manifest(options.manifest.clone())
    }

    fn fetch_options(&self) -> FetchOptions {
        let options = &self.shared.options;
        let mut fetch = FetchOptions::new(&options.plugins_dir);
        fetch.collect = self.collect_options();
        fetch.git_program = options.git_program.clone();
        fetch.git_run = options.run.clone();
        fetch.hub = options.hub.clone();
        fetch
    }

    fn records(&self) -> Vec<InstalledRecord> {
        self.list().into_iter().map(|b| b.record).collect()
    }

    /// Reads the text a person gave to install, as the command line does: with
    /// `marketplace` it is a catalog entry `NAME[@VERSION]`; without, a `NAME[@VERSION]` that
    /// is no existing path is an entry of the configured catalogs when there are any;
    /// otherwise a directory, an archive or a git source ([`Source::parse`]).
    pub fn resolve_source(
        &self,
        text: &str,
        marketplace: Option<&str>,
    ) -> Result<Source, HostError> {
        let fetch = self.fetch_options();
        Ok(Catalogs::new(&self.shared.store, &fetch).parse(text, marketplace)?)
    }

    /// Fetches a parsed source (a catalog entry from the configured catalogs) and installs
    /// it; runs nothing from it.
    pub async fn install_source(
        &self,
        source: &Source,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        // A git source outside a managed allow list is refused before it is cloned.
        if let Source::Git(git) = source {
            let managed = self.shared.options.policy.managed_policy.as_deref();
            c2_policy::DenyLists::load(&self.shared.options.plugins_dir, managed)
                .admit_source(&c2_policy::SourceRef::Git(git.url.clone()))?;
        }
        let fetch = self.fetch_options();
        let fetched = Catalogs::new(&self.shared.store, &fetch)
            .fetch(source)
            .await?;
        self.install_entry(fetched, options).await
    }

    /// [`PluginHost::resolve_source`] then [`PluginHost::install_source`]: the one call that
    /// turns a person's install text (and the catalog they named) into an install.
    pub async fn install_text(
        &self,
        text: &str,
        marketplace: Option<&str>,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        let source = self.resolve_source(text, marketplace)?;
        self.install_source(&source, options).await
    }

    /// Installs a directory, archive or git source given as text; a name is not a source
    /// here (see [`PluginHost::install_text`]).
    pub(crate) async fn install_plain(
        &self,
        text: &str,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        let source = Source::parse(text, EntryLookup::Off)?;
        self.install_source(&source, options).await
    }

    /// Installs a bundle c2-sources fetched. One collected with the host's own options
    /// ([`PluginHost::collect_options`]) is not collected or checked again; one collected
    /// with other options is checked like any [`PluginHost::install_collected`].
    pub async fn install_fetched(
        &self,
        fetched: Fetched,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        let checked = fetched.collected_with == self.collect_options();
        self.install_checked(&fetched.bundle, fetched.request, options, checked)
            .await
    }

    /// Fetches every entry of a lock file from its recorded provenance with the host's
    /// options, verifying each ([`c2_sources::fetch_locked`]); stores nothing.
    pub async fn fetch_locked(&self, lock: &LockFile) -> Result<Vec<Fetched>, HostError> {
        Ok(c2_sources::fetch_locked(lock, &self.fetch_options()).await?)
    }

    /// [`PluginHost::install_fetched`], enabling what its catalog entry asks to have enabled
    /// on install (never trusting it).
    async fn install_entry(
        &self,
        fetched: Fetched,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        let by_catalog = fetched.default_enabled && !options.enable;
        let options = options.with_enable(options.enable || by_catalog);
        let mut outcome = self.install_fetched(fetched, options).await?;
        outcome.enabled_by_catalog = by_catalog;
        Ok(outcome)
    }

    /// The configured catalogs, in the order they were added.
    pub fn marketplaces(&self) -> Result<Vec<ConfiguredMarketplace>, HostError> {
        let fetch = self.fetch_options();
        Ok(Catalogs::new(&self.shared.store, &fetch).list()?)
    }

    /// Reads and validates the catalog at `location` and adds it to the configured catalogs
    /// under its `name` (or `name` given here, which wins). A duplicate name or location, an
    /// invalid catalog or one that cannot be fetched is refused and nothing is written.
    pub async fn marketplace_add(
        &self,
        location: &str,
        name: Option<&str>,
    ) -> Result<ConfiguredMarketplace, HostError> {
        let fetch = self.fetch_options();
        Ok(Catalogs::new(&self.shared.store, &fetch)
            .add(location, name)
            .await?)
    }

    /// Removes the configured catalog named `name`. Installed bundles keep their origin and
    /// are still compared with it by `outdated`.
    pub fn marketplace_remove(&self, name: &str) -> Result<ConfiguredMarketplace, HostError> {
        let fetch = self.fetch_options();
        Ok(Catalogs::new(&self.shared.store, &fetch).remove(name)?)
    }

    /// Installs the entry `name` (at exactly `version` when given) of the catalog named or
    /// located by `marketplace`, else of the one configured catalog that lists it.
    pub async fn install_from_catalog(
        &self,
        name: &str,
        version: Option<&str>,
        marketplace: Option<&str>,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        let fetch = self.fetch_options();
        let fetched = Catalogs::new(&self.shared.store, &fetch)
            .fetch_entry(name, version, marketplace)
            .await?;
        self.install_entry(fetched, options).await
    }

    /// Case-insensitive search of names, descriptions and keywords of the entries of the
    /// catalog named or located by `marketplace`, else of every configured catalog. Every
    /// catalog must be readable (a failure fails the search). Empty `text` lists everything.
    pub async fn search(
        &self,
        text: &str,
        marketplace: Option<&str>,
    ) -> Result<Vec<SearchHit>, HostError> {
        let fetch = self.fetch_options();
        let installed = self.records();
        Ok(Catalogs::new(&self.shared.store, &fetch)
            .search(text, marketplace, &installed)
            .await?)
    }

    /// Every bundle installed from a catalog, compared by SemVer with that catalog's entry.
    /// Each catalog is read once; one that fails marks its bundles `catalog_failed`.
    pub async fn outdated(&self) -> Vec<OutdatedRow> {
        let fetch = self.fetch_options();
        let installed = self.records();
        Catalogs::new(&self.shared.store, &fetch)
            .outdated(&installed)
            .await
    }

    /// Updates the bundle `id` (or every bundle installed from a catalog) to its catalog
    /// entry's version when that is newer, in place through the install path's replace:
    /// same id, enablement, component choices and data kept, trust dropped if the content
    /// changed, live runtimes reloaded. A bundle whose update fails stays as it was and is
    /// listed in `failed`. `id` not installed or not from a catalog is an error.
    pub async fn update(&self, id: Option<&str>) -> Result<UpdateReport, HostError> {
        self.update_with(id, false).await
    }

    /// [`PluginHost::update`]; with `dry_run`, each newer version is fetched and reviewed
    /// against the installed content into `pending`, and nothing is stored or changed.
    pub async fn update_with(
        &self,
        id: Option<&str>,
        dry_run: bool,
    ) -> Result<UpdateReport, HostError> {
        let records = self.records();
        let targets: Vec<_> = match id {
            Some(id) => {
                let record = records
                    .iter()
                    .find(|r| r.id == id)
                    .ok_or_else(|| HostError::NotInstalled { id: id.to_owned() })?;
                if record.origin.is_none() {
                    return Err(
                        c2_sources::SourceError::NotFromCatalog { id: id.to_owned() }.into(),
                    );
                }
                vec![record.clone()]
            }
            None => records.into_iter().filter(|r| r.origin.is_some()).collect(),
        };
        let mut report = UpdateReport::default();
        for record in targets {
            match self.update_one(&record, dry_run, &mut report).await {
                Ok(true) => {}
                Ok(false) => report.current.push(record.id.clone()),
                Err(error) => report.failed.push(UpdateFailure {
                    id: record.id.clone(),
                    kind: error.kind(),
                    message: error.to_string(),
                }),
            }
        }
        Ok(report)
    }

    async fn update_one(
        &self,
        record: &InstalledRecord,
        dry_run: bool,
        report: &mut UpdateReport,
    ) -> Result<bool, HostError> {
        let fetch = self.fetch_options();
        let Some(fetched) = Catalogs::new(&self.shared.store, &fetch)
            .fetch_update(record)
            .await?
        else {
            return Ok(false);
        };
        let to = fetched
            .request
            .origin
            .as_ref()
            .map(|o| o.version.clone())
            .unwrap_or_default();
        if dry_run {
            let store = &self.shared.store;
            let review = store.review_replace(&record.id, &fetched.bundle)?;
            report.pending.push(review);
            return Ok(true);
        }
        let outcome = self
            .install_fetched(fetched, InstallOptions::default())
            .await?;
        report.updated.push(Updated {
            id: record.id.clone(),
            from: record.version.clone(),
            to,
            outcome,
        });
        Ok(true)
    }

    /// Why `bundle` is untrusted when an update dropped the user's trust (the store's review).
    pub(crate) fn untrusted_reason(&self, bundle: &InstalledBundle) -> Option<String> {
        let review = bundle.record.review.as_ref()?;
        let policy = lock(&self.shared.policy);
        let document = policy.document()?;
        let entry = document.entry(bundle.module_name(), &Scope::User)?;
        review.lost_trust(entry.trusted_digest.as_deref())
    }

    /// Typosquat warnings: installed bundles from another source whose name resembles it.
    pub(crate) fn lookalike_notes(
        &self,
        bundle: &CollectedBundle,
        to: &InstallRequest,
    ) -> Vec<String> {
        if self.shared.options.loading == Loading::OnDemand {
            return self
                .shared
                .store
                .lookalike_warnings(bundle.name(), &to.source)
                .unwrap_or_else(|error| {
                    vec![format!(
                        "the name could not be compared with the installed bundles' ({error})"
                    )]
                });
        }
        let installed: Vec<Summary> = lock(&self.shared.bundles)
            .values()
            .map(|m| Summary::of(&m.bundle().record))
            .collect();
        c2_bundle_collector::lookalike_warnings(bundle.name(), &to.source, &installed)
    }
}
