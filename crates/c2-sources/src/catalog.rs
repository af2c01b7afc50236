//! `marketplace.json` catalogs as an install source (standard §2), and the store's configured
//! catalogs.
//!
//! A catalog is read from a local `marketplace.json` (or a directory holding one), a git
//! source (`git+URL#REF:DIR`) or a GitHub URL, cloned with the same hardened options as a git
//! bundle source. An entry is found by name (and an exact version when one is asked for), its
//! one declared source is fetched (`local` under the catalog's directory without following
//! links, `github` and `git` cloned, `npm` packed by the system `npm pack` with scripts
//! disabled, `archive` beside the catalog or over https), and the collected bundle must have
//! the entry's name and version, a pinned commit must be exactly HEAD, a declared SHA-256 must
//! be the archive's. The request that comes back carries the catalog identity
//! ([`SourceIdentity::Catalog`]) and the origin, so `outdated` and `update` re-read the catalog.
//! The configured catalogs are `marketplaces.json` in the store; a catalog is read afresh every
//! time it is used (nothing is cached), and one that cannot be read fails the operation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use c2_bundle_collector::{
    ArchiveFormat, CatalogOrigin, InstallRequest, InstalledRecord, SourceIdentity, Store,
    read_contained_file,
};
use c2_manifest::{Marketplace, MarketplaceEntry, MarketplaceSource};
use c2_supervisor::{ProcessSpec, RunOptions};
use serde::{Deserialize, Serialize};

use crate::error::SourceError;
use crate::fetch::{FetchOptions, Fetched, WorkDir};
use crate::git::{self, Checkout};
use crate::source::{EntryLookup, GitSource, Source, normalize_subdir, parse_git};

/// The store file that lists the configured catalogs.
pub const MARKETPLACES_FILE: &str = "marketplaces.json";
const MARKETPLACES_FORMAT: u32 = 1;

/// Bounds and programs of catalog sources.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HubOptions {
    /// The `npm` program that packs `npm` sources (`npm`).
    pub npm_program: PathBuf,
    /// The `curl` program that downloads `https` archives (`curl`).
    pub curl_program: PathBuf,
    /// Where a `github` source's `owner/name` is cloned from (`https://github.com`).
    pub github_base: String,
    /// Deadline and output caps of one `npm pack` (120 s, 1 MiB of stdout, 64 KiB of stderr).
    /// A download's stdout cap is the archive limit instead.
    pub fetch_run: RunOptions,
    /// The largest `marketplace.json` read (4 MiB).
    pub max_catalog_bytes: u64,
    /// The most configured catalogs (64).
    pub max_marketplaces: usize,
    /// The largest `marketplaces.json` read or written (256 KiB).
    pub max_marketplaces_bytes: u64,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            npm_program: PathBuf::from("npm"),
            curl_program: PathBuf::from("curl"),
            github_base: "https://github.com".to_owned(),
            fetch_run: RunOptions {
                stdout_max: 1024 * 1024,
                stderr_max: 64 * 1024,
                deadline: std::time::Duration::from_secs(120),
            },
            max_catalog_bytes: 4 * 1024 * 1024,
            max_marketplaces: 64,
            max_marketplaces_bytes: 256 * 1024,
        }
    }
}

/// One configured catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfiguredMarketplace {
    /// The catalog's `name` (or the name given when adding it).
    pub name: String,
    /// Its normalized location: an absolute `marketplace.json` path or a `git+URL#REF:DIR`.
    pub location: String,
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
    /// The entry's version.
    pub version: String,
    /// The entry's description.
    pub description: Option<String>,
    /// The entry's keywords.
    pub keywords: Vec<String>,
    /// The entry's source kind.
    pub source_kind: String,
    /// The installed id, when this entry of this catalog is installed.
    pub installed: Option<String>,
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

/// Where a catalog is.
#[derive(Debug, Clone)]
pub(crate) enum Location {
    /// An absolute, resolved `marketplace.json`.
    File(PathBuf),
    /// A directory of a git source holding `marketplace.json`.
    Git(GitSource),
}

impl Location {
    pub(crate) fn parse(text: &str) -> Result<Self, SourceError> {
        if let Some(git) = parse_git(text) {
            return Ok(Self::Git(git));
        }
        let path = Path::new(text);
        let file = if path.is_dir() {
            path.join("marketplace.json")
        } else {
            path.to_path_buf()
        };
        let file = file.canonicalize().map_err(|error| SourceError::InvalidCatalog {
            message: format!(
                "{}: cannot open the catalog ({error}): give a marketplace.json, a directory holding one, a git+URL#REF:DIR or a GitHub URL",
                file.display()
            ),
            invalid: None,
        })?;
        Ok(Self::File(file))
    }

    /// The normalized text recorded in the store.
    pub(crate) fn normalized(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Git(git) => {
                let mut text = format!("git+{}", git.url);
                if git.reference.is_some() || !git.subdir.is_empty() {
                    text.push('#');
                    text.push_str(git.reference.as_deref().unwrap_or(""));
                }
                if !git.subdir.is_empty() {
                    text.push(':');
                    text.push_str(&git.subdir);
                }
                text
            }
        }
    }
}

/// A catalog read and validated, with the directory its relative paths resolve against
/// (kept alive for a git checkout).
#[derive(Debug)]
struct OpenedCatalog {
    location: String,
    marketplace: Marketplace,
    dir: PathBuf,
    _checkout: Option<Checkout>,
}

impl OpenedCatalog {
    fn label(&self) -> String {
        self.marketplace
            .name
            .clone()
            .unwrap_or_else(|| self.location.clone())
    }

    fn entry(&self, name: &str) -> Option<&MarketplaceEntry> {
        self.marketplace.plugins.iter().find(|e| e.name == name)
    }
}

fn invalid_catalog(message: String) -> SourceError {
    SourceError::InvalidCatalog {
        message,
        invalid: None,
    }
}

fn source_kind(source: &MarketplaceSource) -> &'static str {
    match source {
        MarketplaceSource::Local { .. } => "local",
        MarketplaceSource::Github { .. } => "github",
        MarketplaceSource::Git { .. } => "git",
        MarketplaceSource::Npm { .. } => "npm",
        MarketplaceSource::Archive { .. } => "archive",
    }
}

/// A full commit SHA (40 hex digits): a pinned ref.
pub(crate) fn is_full_sha(reference: &str) -> bool {
    reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit())
}

fn escapes(entry: &MarketplaceEntry, path: &str, why: &str) -> SourceError {
    SourceError::Unsafe(format!(
        "entry {} names `{path}`, which cannot be used: {why}; nothing was stored: name a real directory or file inside the catalog's directory",
        entry.name
    ))
}

/// A relative path that stays inside the catalog's directory (no `..`, not absolute).
fn contained(entry: &MarketplaceEntry, path: &str) -> Result<String, SourceError> {
    if path.starts_with('/') || path.split(['/', '\\']).any(|p| p == "..") {
        return Err(escapes(
            entry,
            path,
            "it is absolute or climbs out of the catalog with `..`",
        ));
    }
    Ok(normalize_subdir(path))
}

/// The GitHub clone URL of `owner/name`.
pub(crate) fn github_url(base: &str, repo: &str) -> String {
    format!("{}/{repo}.git", base.trim_end_matches('/'))
}

pub(crate) fn same_version(a: &str, b: &str) -> bool {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `candidate` is a strictly greater SemVer than `installed` (an unparsable installed
/// version counts as older, so a valid catalog version replaces it).
pub(crate) fn is_newer(candidate: &str, installed: &str) -> bool {
    match (
        semver::Version::parse(candidate),
        semver::Version::parse(installed),
    ) {
        (Ok(candidate), Ok(installed)) => candidate > installed,
        (Ok(_), Err(_)) => true,
        _ => false,
    }
}

/// The configured catalogs of one store, and everything read through them: parsing install
/// text, fetching entries, search, `outdated` and the fetch of an update.
#[derive(Debug, Clone, Copy)]
pub struct Catalogs<'a> {
    store: &'a Store,
    options: &'a FetchOptions,
}

impl<'a> Catalogs<'a> {
    /// The catalogs configured in `store` (whose directory is `options.work_dir`).
    pub fn new(store: &'a Store, options: &'a FetchOptions) -> Self {
        Self { store, options }
    }

    fn hub(&self) -> &HubOptions {
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
        let name = match (name, catalog.marketplace.name.as_deref()) {
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
        result.map(|()| added)
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

    async fn open(&self, text: &str) -> Result<OpenedCatalog, SourceError> {
        let location = Location::parse(text)?;
        let normalized = location.normalized();
        let max = self.hub().max_catalog_bytes;
        let (bytes, dir, checkout) = match location {
            Location::File(file) => {
                // Canonical already; opened without following a link and never blocking on a
                // FIFO, and only a regular file is read.
                let dir = file
                    .parent()
                    .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let bytes = read_contained_file(&dir, &name, max).map_err(|why| {
                    invalid_catalog(format!("{normalized}: cannot read the catalog: {why}"))
                })?;
                (bytes, dir, None)
            }
            Location::Git(source) => {
                let checkout = git::checkout_git(&source, self.options).await?;
                let bytes =
                    read_contained_file(&checkout.dir, "marketplace.json", max).map_err(|why| {
                        invalid_catalog(format!(
                            "{normalized}: no readable marketplace.json ({why})"
                        ))
                    })?;
                (bytes, checkout.dir.clone(), Some(checkout))
            }
        };
        if bytes.len() as u64 > max {
            return Err(invalid_catalog(format!(
                "{normalized}: the catalog is larger than {max} bytes (HubOptions::max_catalog_bytes)"
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| invalid_catalog(format!("{normalized}: the catalog is not UTF-8")))?;
        let report = c2_manifest::validate_marketplace(&text);
        let Some(marketplace) = report.marketplace else {
            let first = report
                .diagnostics
                .iter()
                .filter(|d| d.severity == c2_manifest::Severity::Error)
                .map(|d| format!("{} at {}:{}: {}", d.code, d.line, d.column, d.message))
                .next()
                .unwrap_or_default();
            return Err(SourceError::InvalidCatalog {
                message: format!(
                    "{normalized} is not a valid catalog ({first}); nothing was installed from it"
                ),
                invalid: Some(normalized),
            });
        };
        Ok(OpenedCatalog {
            location: normalized,
            marketplace,
            dir,
            _checkout: checkout,
        })
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
        if let Some(wanted) = version
            && !same_version(wanted, &entry.version)
        {
            return Err(SourceError::VersionNotFound(format!(
                "{} lists {name} at {}, not {wanted}: install `{name}` or `{name}@{}`",
                catalog.label(),
                entry.version,
                entry.version
            )));
        }
        self.fetch_from(&catalog, &entry).await
    }

    /// Fetches an entry's source and checks it against the entry; the request carries the
    /// catalog identity and origin.
    async fn fetch_from(
        &self,
        catalog: &OpenedCatalog,
        entry: &MarketplaceEntry,
    ) -> Result<Fetched, SourceError> {
        let options = self.options;
        let mut fetched = match &entry.source {
            MarketplaceSource::Local { path } => {
                let rel = contained(entry, path)?;
                let dir = c2_bundle_collector::resolve_subdirectory(&catalog.dir, &rel)
                    .map_err(|why| escapes(entry, path, &why.to_string()))?;
                let bundle = c2_bundle_collector::collect_dir(&dir, &options.collect)?;
                let request = InstallRequest::new(SourceIdentity::local(&dir)?);
                Fetched::new(bundle, request, options)
            }
            MarketplaceSource::Github { repo, r#ref, path } => {
                let source = GitSource::new(
                    github_url(&self.hub().github_base, repo),
                    r#ref.clone(),
                    path.as_deref().unwrap_or(""),
                );
                self.fetch_pinned(entry, &source).await?
            }
            MarketplaceSource::Git { url, r#ref, path } => {
                let source =
                    GitSource::new(url.clone(), r#ref.clone(), path.as_deref().unwrap_or(""));
                self.fetch_pinned(entry, &source).await?
            }
            MarketplaceSource::Npm { package, version } => {
                self.fetch_npm(catalog, entry, package, version.as_deref())
                    .await?
            }
            MarketplaceSource::Archive { url, sha256 } => {
                self.fetch_archive(catalog, entry, url, sha256.as_deref())
                    .await?
            }
        };
        let found = (
            fetched.bundle.name().unwrap_or("(no name)").to_owned(),
            fetched
                .bundle
                .version()
                .unwrap_or("(no version)")
                .to_owned(),
        );
        if fetched.bundle.manifest.is_some()
            && (found.0 != entry.name || !same_version(&found.1, &entry.version))
        {
            return Err(SourceError::CatalogMismatch(format!(
                "the catalog lists {} {} but its source holds {} {}; nothing was stored: the catalog must name the bundle's plugin.json name and version",
                entry.name, entry.version, found.0, found.1
            )));
        }
        fetched.request.source = SourceIdentity::Catalog {
            catalog: catalog.location.clone(),
            entry: entry.name.clone(),
        };
        fetched.request.origin = Some(CatalogOrigin {
            catalog: catalog.location.clone(),
            catalog_name: catalog.marketplace.name.clone(),
            entry: entry.name.clone(),
            version: entry.version.clone(),
            source_kind: source_kind(&entry.source).to_owned(),
        });
        Ok(fetched)
    }

    async fn fetch_pinned(
        &self,
        entry: &MarketplaceEntry,
        source: &GitSource,
    ) -> Result<Fetched, SourceError> {
        let fetched = git::fetch_git(source, self.options).await?;
        if let Some(pinned) = source.reference.as_deref().filter(|r| is_full_sha(r)) {
            let head = fetched.request.commit.as_deref().unwrap_or("");
            if !head.eq_ignore_ascii_case(pinned) {
                return Err(SourceError::CommitMismatch(format!(
                    "entry {} pins commit {pinned} but {} checked out {head}; nothing was stored: the pinned commit must exist in the repository (a branch or tag named like a commit is not it)",
                    entry.name, source.url
                )));
            }
        }
        Ok(fetched)
    }

    async fn fetch_npm(
        &self,
        catalog: &OpenedCatalog,
        entry: &MarketplaceEntry,
        package: &str,
        version: Option<&str>,
    ) -> Result<Fetched, SourceError> {
        let options = self.options;
        let local = package.starts_with('.') || package.starts_with('/');
        let spec = if local {
            // A directory or tarball shipped with the catalog, resolved without links.
            let rel = contained(entry, package)?;
            let path = if ArchiveFormat::from_path(Path::new(&rel)).is_some() {
                read_contained_file(&catalog.dir, &rel, 0)
                    .map_err(|why| escapes(entry, package, &why.to_string()))?;
                catalog.dir.join(&rel)
            } else {
                c2_bundle_collector::resolve_subdirectory(&catalog.dir, &rel)
                    .map_err(|why| escapes(entry, package, &why.to_string()))?
            };
            path.display().to_string()
        } else {
            match version {
                Some(version) => format!("{package}@{version}"),
                None => package.to_owned(),
            }
        };
        if spec.starts_with('-') {
            return Err(SourceError::Unsafe(format!(
                "the npm package `{spec}` starts with `-`; nothing was fetched"
            )));
        }
        let work = WorkDir::new(options)?;
        let (cwd, cache, dest) = (
            work.0.join("cwd"),
            work.0.join("cache"),
            work.0.join("dest"),
        );
        for dir in [&cwd, &cache, &dest] {
            std::fs::create_dir_all(dir).map_err(SourceError::io("create", dir))?;
        }
        let process = ProcessSpec::new(&self.hub().npm_program, &cwd)
            .args(["pack", "--ignore-scripts", "--json", "--pack-destination"])
            .args([dest.as_os_str()])
            .args(["--", spec.as_str()])
            .env("npm_config_ignore_scripts", "true")
            .env("npm_config_cache", cache.as_os_str())
            .env("npm_config_audit", "false")
            .env("npm_config_fund", "false")
            .env("npm_config_update_notifier", "false")
            .env("npm_config_loglevel", "error")
            .label("npm");
        let output = c2_supervisor::run(&process, &self.hub().fetch_run)
            .await
            .map_err(|error| SourceError::NpmFailed(format!("npm pack {spec}: {error}")))?;
        if !output.exit.success() {
            return Err(SourceError::NpmFailed(format!(
                "`npm pack {spec}` {}: {}; nothing was stored",
                output.exit,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        #[derive(Deserialize)]
        struct Packed {
            filename: String,
        }
        let packed: Vec<Packed> = serde_json::from_slice(&output.stdout).map_err(|error| {
            SourceError::NpmFailed(format!(
                "`npm pack {spec}` printed no package list ({error})"
            ))
        })?;
        let [packed] = packed.as_slice() else {
            return Err(SourceError::NpmFailed(format!(
                "`npm pack {spec}` packed {} packages, not one",
                packed.len()
            )));
        };
        // npm names a scoped package's tarball `scope-name-1.0.0.tgz`: a plain file name.
        let max = options.collect.limits.max_archive_bytes;
        let bytes = read_contained_file(&dest, &packed.filename, max).map_err(|why| {
            SourceError::NpmFailed(format!(
                "`npm pack {spec}` left no tarball {}: {why}",
                packed.filename
            ))
        })?;
        let bundle = c2_bundle_collector::collect_npm_tarball_bytes(&bytes, &options.collect);
        let request = InstallRequest::new(SourceIdentity::archive(&bytes));
        Ok(Fetched::new(bundle, request, options))
    }

    async fn fetch_archive(
        &self,
        catalog: &OpenedCatalog,
        entry: &MarketplaceEntry,
        url: &str,
        sha256: Option<&str>,
    ) -> Result<Fetched, SourceError> {
        let options = self.options;
        let max = options.collect.limits.max_archive_bytes;
        let format =
            ArchiveFormat::from_path(Path::new(url.split(['?', '#']).next().unwrap_or(url)))
                .ok_or_else(|| {
                    SourceError::Unsupported(format!(
                        "entry {}: the archive `{url}` is not a .tar.gz, .tgz or .zip",
                        entry.name
                    ))
                })?;
        let bytes = if url.starts_with("https://") {
            let run = RunOptions {
                stdout_max: usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1),
                ..self.hub().fetch_run.clone()
            };
            let process = ProcessSpec::new(&self.hub().curl_program, &options.work_dir)
                .args([
                    "--silent",
                    "--show-error",
                    "--fail",
                    "--location",
                    "--proto",
                    "=https",
                    "--proto-redir",
                    "=https",
                    "--max-redirs",
                    "5",
                    "--max-filesize",
                ])
                .args([max.to_string()])
                .args(["--", url])
                .label("curl");
            let output = c2_supervisor::run(&process, &run)
                .await
                .map_err(|error| SourceError::FetchFailed(format!("download {url}: {error}")))?;
            if !output.exit.success() {
                return Err(SourceError::FetchFailed(format!(
                    "download {url} {}: {}; nothing was stored",
                    output.exit,
                    String::from_utf8_lossy(&output.stderr).trim()
                )));
            }
            output.stdout
        } else {
            let rel = contained(entry, url)?;
            read_contained_file(&catalog.dir, &rel, max)
                .map_err(|why| escapes(entry, url, &why.to_string()))?
        };
        if let Some(expected) = sha256 {
            use sha2::Digest;
            let actual = sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>();
            if !actual.eq_ignore_ascii_case(expected) {
                return Err(SourceError::DigestMismatch(format!(
                    "entry {}: the archive's SHA-256 is {actual}, the catalog says {expected}; nothing was stored",
                    entry.name
                )));
            }
        }
        let bundle = c2_bundle_collector::collect_archive_bytes(&bytes, format, &options.collect);
        let request = InstallRequest::new(SourceIdentity::archive(&bytes));
        Ok(Fetched::new(bundle, request, options))
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
            for entry in &catalog.marketplace.plugins {
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
                    Some(entry) => {
                        let newer = record
                            .version
                            .as_deref()
                            .is_none_or(|installed| is_newer(&entry.version, installed));
                        let status = if newer {
                            OutdatedStatus::Outdated
                        } else {
                            OutdatedStatus::Current
                        };
                        (Some(entry.version.clone()), status, None)
                    }
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
        let newer = record
            .version
            .as_deref()
            .is_none_or(|installed| is_newer(&entry.version, installed));
        if !newer {
            return Ok(None);
        }
        let fetched = self.fetch_from(&catalog, &entry).await?;
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
