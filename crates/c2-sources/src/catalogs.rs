//! The configured catalogs of a store (`marketplaces.json`) and the operations that read
//! through them: parsing install text, fetching an entry, search, `outdated` and the fetch of
//! an update, whatever each catalog's format. One that cannot be read fails the operation; an
//! entry a foreign catalog skipped is not there.

use std::collections::BTreeMap;
use std::path::Path;

use c2_bundle_collector::{InstalledRecord, Store};
use c2_manifest::{Availability, CatalogEntry, SkippedEntry};
use serde::{Deserialize, Serialize};

use crate::catalog::{
    HubOptions, OpenedCatalog, invalid_catalog, is_newer, same_version, source_kind,
};
use crate::error::SourceError;
use crate::fetch::{FetchOptions, Fetched};
use crate::source::{EntryLookup, Source};

/// The store file that lists the configured catalogs.
pub const MARKETPLACES_FILE: &str = "marketplaces.json";
const MARKETPLACES_FORMAT: u32 = 1;

/// One configured catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfiguredMarketplace {
    /// The catalog's `name` (or the name given when adding it).
    pub name: String,
    /// Its normalized location: an absolute catalog file path or a `git+URL#REF:DIR`.
    pub location: String,
    /// When just added: the entries it left out, each with why (not stored).
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MarketplacesDocument {
    format: u32,
    marketplaces: Vec<ConfiguredMarketplace>,
}

/// One catalog entry found by [`Catalogs::search`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The catalog's name, else its location.
    pub catalog: String,
    /// The catalog's location.
    pub location: String,
    /// The entry's name.
    pub name: String,
    /// The entry's version; `None` when the catalog lists none (Codex's format).
    pub version: Option<String>,
    /// The entry's description.
    pub description: Option<String>,
    /// The entry's keywords.
    pub keywords: Vec<String>,
    /// The entry's source kind.
    pub source_kind: String,
    /// The installed id, when this entry of this catalog is installed.
    pub installed: Option<String>,
    /// The catalog's format: `c2`, `claude` or `codex`.
    pub format: String,
    /// Why the entry cannot be installed, when the catalog lists it as not available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_available: Option<String>,
    /// The catalog asks for it to be enabled when installed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub default_enabled: bool,
}

/// How an installed bundle compares with its catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutdatedStatus {
    /// The catalog lists a newer version.
    Outdated,
    /// The installed version is the catalog's (or newer).
    Current,
    /// The catalog no longer lists the entry.
    EntryMissing,
    /// The catalog could not be read (see `reason`).
    CatalogFailed,
}

/// One bundle installed from a catalog, by [`Catalogs::outdated`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutdatedRow {
    /// The installed id.
    pub id: String,
    /// The bundle's name.
    pub name: String,
    /// The installed version.
    pub installed: Option<String>,
    /// The catalog entry's version, when the catalog lists it.
    pub available: Option<String>,
    /// The catalog's location.
    pub catalog: String,
    /// How they compare.
    pub status: OutdatedStatus,
    /// Why the catalog could not be read.
    pub reason: Option<String>,
}

impl OutdatedStatus {
    /// The stable snake_case name (`outdated`, `current`, `entry_missing`, `catalog_failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Outdated => "outdated",
            Self::Current => "current",
            Self::EntryMissing => "entry_missing",
            Self::CatalogFailed => "catalog_failed",
        }
    }
}

/// The configured catalogs of one store, and everything read through them: parsing install
/// text, fetching entries, search, `outdated` and the fetch of an update.
#[derive(Debug, Clone, Copy)]
pub struct Catalogs<'a> {
    store: &'a Store,
    pub(crate) options: &'a FetchOptions,
}

impl<'a> Catalogs<'a> {
    /// The catalogs configured in `store` (whose directory is `options.work_dir`).
    pub fn new(store: &'a Store, options: &'a FetchOptions) -> Self {
        Self { store, options }
    }

    pub(crate) fn hub(&self) -> &HubOptions {
        &self.options.hub
    }

    /// The configured catalogs, in the order they were added.
    pub fn list(&self) -> Result<Vec<ConfiguredMarketplace>, SourceError> {
        let bytes = self
            .store
            .read_settings(MARKETPLACES_FILE, self.hub().max_marketplaces_bytes)?;
        parse_marketplaces(bytes.as_deref(), &self.options.work_dir)
    }

    /// Reads the text a person gave to install (with the catalog they named, if any) as
    /// [`Source::parse`] does, a `NAME[@VERSION]` being an entry when catalogs are configured
    /// here. An unreadable list of catalogs counts as none.
    pub fn parse(&self, text: &str, marketplace: Option<&str>) -> Result<Source, SourceError> {
        let lookup = match marketplace {
            Some(marketplace) => EntryLookup::In(marketplace),
            None if self.list().is_ok_and(|list| !list.is_empty()) => EntryLookup::Configured,
            None => EntryLookup::Off,
        };
        Source::parse(text, lookup)
    }

    /// Fetches any parsed source: a catalog entry through these catalogs, the rest through
    /// [`crate::fetch`].
    pub async fn fetch(&self, source: &Source) -> Result<Fetched, SourceError> {
        match source {
            Source::Catalog(entry) => {
                self.fetch_entry(
                    &entry.name,
                    entry.version.as_deref(),
                    entry.marketplace.as_deref(),
                )
                .await
            }
            other => crate::fetch::fetch(other, self.options).await,
        }
    }

    /// Reads and validates the catalog at `location` and adds it to the configured catalogs
    /// under its `name` (or `name` given here, which wins). A duplicate name or location, an
    /// invalid catalog or one that cannot be fetched is refused and nothing is written.
    pub async fn add(
        &self,
        location: &str,
        name: Option<&str>,
    ) -> Result<ConfiguredMarketplace, SourceError> {
        let catalog = self.open(location).await?;
        let name = match (name, catalog.catalog.name.as_deref()) {
            (Some(name), _) | (None, Some(name)) => name.trim().to_owned(),
            (None, None) => {
                return Err(invalid_catalog(format!(
                    "the catalog at {} has no `name`: give one with --name",
                    catalog.location
                )));
            }
        };
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(invalid_catalog(
                "a catalog name must be non-empty and free of control characters: give another with --name"
                    .to_owned(),
            ));
        }
        let added = ConfiguredMarketplace {
            name,
            location: catalog.location.clone(),
            skipped: Vec::new(),
        };
        let max = self.hub().max_marketplaces;
        let work_dir = &self.options.work_dir;
        let result = self.store.update_settings(
            MARKETPLACES_FILE,
            self.hub().max_marketplaces_bytes,
            |current| {
                let mut list = parse_marketplaces(current, work_dir)?;
                if let Some(same) = list
                    .iter()
                    .find(|m| m.name == added.name || m.location == added.location)
                {
                    return Err(SourceError::DuplicateMarketplace {
                        name: same.name.clone(),
                        location: same.location.clone(),
                    });
                }
                if list.len() >= max {
                    return Err(SourceError::TooManyMarketplaces { max });
                }
                list.push(added.clone());
                encode_marketplaces(list)
            },
        )?;
        result.map(|()| ConfiguredMarketplace {
            skipped: catalog.skipped,
            ..added
        })
    }

    /// Removes the configured catalog named `name`. Installed bundles keep their origin and
    /// are still compared with it by [`Catalogs::outdated`].
    pub fn remove(&self, name: &str) -> Result<ConfiguredMarketplace, SourceError> {
        let work_dir = &self.options.work_dir;
        let mut removed = None;
        let result = self.store.update_settings(
            MARKETPLACES_FILE,
            self.hub().max_marketplaces_bytes,
            |current| {
                let mut list = parse_marketplaces(current, work_dir)?;
                let at = list
                    .iter()
                    .position(|m| m.name == name)
                    .ok_or_else(|| unknown_marketplace(name, &list))?;
                removed = Some(list.remove(at));
                encode_marketplaces(list)
            },
        )?;
        result?;
        removed.ok_or_else(|| unknown_marketplace(name, &[]))
    }

    /// The catalogs an operation reads: the one named or located by `marketplace`, else
    /// every configured one.
    fn locations(&self, marketplace: Option<&str>) -> Result<Vec<String>, SourceError> {
        let configured = self.list()?;
        match marketplace {
            Some(text) => Ok(vec![
                configured
                    .iter()
                    .find(|m| m.name == text)
                    .map_or_else(|| text.to_owned(), |m| m.location.clone()),
            ]),
            None if configured.is_empty() => Err(SourceError::NoMarketplace),
            None => Ok(configured.into_iter().map(|m| m.location).collect()),
        }
    }

    /// Fetches the entry `name` (at exactly `version` when given) of the catalog named or
    /// located by `marketplace`, else of the one configured catalog that lists it, and
    /// checks what was fetched against the entry.
    pub async fn fetch_entry(
        &self,
        name: &str,
        version: Option<&str>,
        marketplace: Option<&str>,
    ) -> Result<Fetched, SourceError> {
        let mut found = Vec::new();
        for location in self.locations(marketplace)? {
            let catalog = self.open(&location).await?;
            if catalog.entry(name).is_some() {
                found.push(catalog);
            }
        }
        let catalog = match found.len() {
            0 => {
                return Err(SourceError::EntryNotFound {
                    name: name.to_owned(),
                });
            }
            1 => found.remove(0),
            _ => {
                return Err(SourceError::AmbiguousEntry {
                    name: name.to_owned(),
                    catalogs: found.iter().map(OpenedCatalog::label).collect(),
                });
            }
        };
        let entry = catalog
            .entry(name)
            .cloned()
            .ok_or_else(|| SourceError::EntryNotFound {
                name: name.to_owned(),
            })?;
        let not_listed = |listed: &str| {
            SourceError::VersionNotFound(format!(
                "{} lists {name} at {listed}, not {}: install `{name}` or `{name}@{listed}`",
                catalog.label(),
                version.unwrap_or_default()
            ))
        };
        if let (Some(wanted), Some(listed)) = (version, entry.version.as_deref())
            && !same_version(wanted, listed)
        {
            return Err(not_listed(listed));
        }
        let fetched = self.fetch_from(&catalog, &entry).await?;
        // A catalog that lists no version offers what its source holds.
        if let (Some(wanted), Some(origin)) = (version, &fetched.request.origin)
            && !same_version(wanted, &origin.version)
        {
            return Err(not_listed(&origin.version));
        }
        Ok(fetched)
    }

    /// Case-insensitive search of names, descriptions and keywords of the entries of the
    /// catalog named or located by `marketplace`, else of every configured catalog. Every
    /// catalog must be readable (a failure fails the search). Empty `text` lists everything.
    /// `installed` marks the hits installed from that entry of that catalog.
    pub async fn search(
        &self,
        text: &str,
        marketplace: Option<&str>,
        installed: &[InstalledRecord],
    ) -> Result<Vec<SearchHit>, SourceError> {
        let needle = text.to_lowercase();
        let mut hits = Vec::new();
        for location in self.locations(marketplace)? {
            let catalog = self.open(&location).await?;
            for entry in &catalog.catalog.entries {
                let matches = entry.name.to_lowercase().contains(&needle)
                    || entry
                        .description
                        .as_deref()
                        .is_some_and(|d| d.to_lowercase().contains(&needle))
                    || entry
                        .keywords
                        .iter()
                        .any(|k| k.to_lowercase().contains(&needle));
                if !matches {
                    continue;
                }
                let installed = installed
                    .iter()
                    .find(|r| {
                        r.origin
                            .as_ref()
                            .is_some_and(|o| o.catalog == catalog.location && o.entry == entry.name)
                    })
                    .map(|r| r.id.clone());
                hits.push(SearchHit {
                    catalog: catalog.label(),
                    location: catalog.location.clone(),
                    name: entry.name.clone(),
                    version: entry.version.clone(),
                    description: entry.description.clone(),
                    keywords: entry.keywords.clone(),
                    source_kind: source_kind(&entry.source).to_owned(),
                    installed,
                    format: catalog.catalog.format.as_str().to_owned(),
                    not_available: match &entry.availability {
                        Availability::NotAvailable { reason } => Some(reason.clone()),
                        _ => None,
                    },
                    default_enabled: entry.default_enabled,
                });
            }
        }
        Ok(hits)
    }

    /// Every record installed from a catalog, compared by SemVer with that catalog's entry.
    /// Each catalog is read once; one that fails marks its bundles `catalog_failed`.
    pub async fn outdated(&self, installed: &[InstalledRecord]) -> Vec<OutdatedRow> {
        let mut rows = Vec::new();
        let mut catalogs: BTreeMap<String, Result<OpenedCatalog, String>> = BTreeMap::new();
        for record in installed {
            let Some(origin) = &record.origin else {
                continue;
            };
            if !catalogs.contains_key(&origin.catalog) {
                let opened = self.open(&origin.catalog).await.map_err(|e| e.to_string());
                catalogs.insert(origin.catalog.clone(), opened);
            }
            let (available, status, reason) = match &catalogs[&origin.catalog] {
                Err(why) => (None, OutdatedStatus::CatalogFailed, Some(why.clone())),
                Ok(catalog) => match catalog.entry(&origin.entry) {
                    None => (None, OutdatedStatus::EntryMissing, None),
                    Some(entry) => match self.offered_version(catalog, entry).await {
                        Err(why) => (None, OutdatedStatus::CatalogFailed, Some(why.to_string())),
                        Ok((offered, _)) => {
                            let newer = record
                                .version
                                .as_deref()
                                .is_none_or(|installed| is_newer(&offered, installed));
                            let status = if newer {
                                OutdatedStatus::Outdated
                            } else {
                                OutdatedStatus::Current
                            };
                            (Some(offered), status, None)
                        }
                    },
                },
            };
            rows.push(OutdatedRow {
                id: record.id.clone(),
                name: record.name.clone(),
                installed: record.version.clone(),
                available,
                catalog: origin.catalog.clone(),
                status,
                reason,
            });
        }
        rows
    }

    /// Fetches the newer version of a bundle installed from a catalog: `None` when its
    /// catalog entry is not newer. What is fetched must install under the same id
    /// ([`SourceError::CatalogMismatch`] otherwise); the request's origin carries the new
    /// version.
    pub async fn fetch_update(
        &self,
        record: &InstalledRecord,
    ) -> Result<Option<Fetched>, SourceError> {
        let Some(origin) = &record.origin else {
            return Err(SourceError::NotFromCatalog {
                id: record.id.clone(),
            });
        };
        let catalog = self.open(&origin.catalog).await?;
        let entry =
            catalog
                .entry(&origin.entry)
                .cloned()
                .ok_or_else(|| SourceError::EntryGone {
                    catalog: catalog.label(),
                    entry: origin.entry.clone(),
                    id: record.id.clone(),
                })?;
        let (offered, fetched) = self.offered_version(&catalog, &entry).await?;
        let newer = record
            .version
            .as_deref()
            .is_none_or(|installed| is_newer(&offered, installed));
        if !newer {
            return Ok(None);
        }
        let fetched = match fetched {
            Some(fetched) => fetched,
            None => self.fetch_from(&catalog, &entry).await?,
        };
        let id = fetched
            .bundle
            .manifest
            .as_ref()
            .map(|m| c2_bundle_collector::installed_id(&m.name, &fetched.request.source));
        if id.as_deref() != Some(record.id.as_str()) {
            return Err(SourceError::CatalogMismatch(format!(
                "the update of {} would install under another id ({}); nothing was stored",
                record.id,
                id.as_deref().unwrap_or("none")
            )));
        }
        Ok(Some(fetched))
    }
}

impl Catalogs<'_> {
    /// The version an entry offers: the one it lists, else (a catalog that lists none) the
    /// version of the bundle its source holds, fetched to read it (and handed back).
    async fn offered_version(
        &self,
        catalog: &OpenedCatalog,
        entry: &CatalogEntry,
    ) -> Result<(String, Option<Fetched>), SourceError> {
        if let Some(listed) = &entry.version {
            return Ok((listed.clone(), None));
        }
        let fetched = self.fetch_from(catalog, entry).await?;
        let offered = fetched
            .request
            .origin
            .as_ref()
            .map(|o| o.version.clone())
            .unwrap_or_default();
        Ok((offered, Some(fetched)))
    }
}

fn unknown_marketplace(name: &str, list: &[ConfiguredMarketplace]) -> SourceError {
    SourceError::UnknownMarketplace {
        name: name.to_owned(),
        configured: list.iter().map(|m| m.name.clone()).collect(),
    }
}

fn parse_marketplaces(
    bytes: Option<&[u8]>,
    plugins_dir: &Path,
) -> Result<Vec<ConfiguredMarketplace>, SourceError> {
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    let document: MarketplacesDocument = serde_json::from_slice(bytes).map_err(|error| {
        SourceError::InvalidMarketplaces(format!(
            "{} is unreadable ({error}): fix or delete it, then add the catalogs again",
            plugins_dir.join(MARKETPLACES_FILE).display()
        ))
    })?;
    if document.format != MARKETPLACES_FORMAT {
        return Err(SourceError::InvalidMarketplaces(format!(
            "{} has format {}, this host reads {MARKETPLACES_FORMAT}",
            plugins_dir.join(MARKETPLACES_FILE).display(),
            document.format
        )));
    }
    Ok(document.marketplaces)
}

fn encode_marketplaces(list: Vec<ConfiguredMarketplace>) -> Result<Vec<u8>, SourceError> {
    let document = MarketplacesDocument {
        format: MARKETPLACES_FORMAT,
        marketplaces: list,
    };
    let mut bytes = serde_json::to_vec_pretty(&document)
        .map_err(|error| SourceError::InvalidMarketplaces(error.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}
