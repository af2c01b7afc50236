//! The Plugin Hub: `marketplace.json` catalogs as an install source (standard §2).
//!
//! A catalog is read from a local `marketplace.json` (or a directory holding one), a git
//! source (`git+URL#REF:DIR`) or a GitHub URL, cloned with the same hardened options as a git
//! bundle source. An entry is found by name (and an exact version when one is asked for), its
//! one declared source is fetched (`local` under the catalog's directory without following
//! links, `github` and `git` cloned, `npm` packed by the system `npm pack` with scripts
//! disabled, `archive` beside the catalog or over https), and the collected bundle must have
//! the entry's name and version, a pinned commit must be exactly HEAD, a declared SHA-256 must
//! be the archive's. Only then does it go through [`PluginHost::install_collected`], the one
//! install and replace path: validated, atomic, nothing run. Every refusal stores nothing.
//!
//! The installed id comes from the catalog and the entry's name
//! ([`SourceIdentity::Catalog`]), and `installed.json` records the origin, so `outdated` and
//! `update` re-read the catalog and an update replaces the same installed bundle: enablement,
//! per-component choices and data directories are kept, trust is dropped when the content
//! changed. The configured catalogs are `marketplaces.json` in the store; a catalog is read
//! afresh every time it is used (nothing is cached), and one that cannot be read fails the
//! operation.

use std::path::{Path, PathBuf};

use c2_bundle_collector::{
    ArchiveFormat, CatalogOrigin, InstallRequest, SourceIdentity, read_contained_file,
};
use c2_manifest::{Marketplace, MarketplaceEntry, MarketplaceSource};
use c2_supervisor::{ProcessSpec, RunOptions};
use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, HostError};
use crate::host::{InstallOptions, InstallOutcome, PluginHost};
use crate::source::{self, Checkout, Fetched, GitSource, WorkDir};

/// The store file that lists the configured catalogs.
pub const MARKETPLACES_FILE: &str = "marketplaces.json";
const MARKETPLACES_FORMAT: u32 = 1;

/// Bounds and programs of the hub.
#[derive(Debug, Clone)]
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

/// One catalog entry found by [`PluginHost::search`].
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

/// One bundle installed from a catalog, by [`PluginHost::outdated`].
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
}

/// Where a catalog is.
#[derive(Debug, Clone)]
enum Location {
    /// An absolute, resolved `marketplace.json`.
    File(PathBuf),
    /// A directory of a git source holding `marketplace.json`.
    Git(GitSource),
}

impl Location {
    fn parse(text: &str) -> Result<Self, HostError> {
        if let Some(git) = source::parse_git(text) {
            return Ok(Self::Git(git));
        }
        let path = Path::new(text);
        let file = if path.is_dir() {
            path.join("marketplace.json")
        } else {
            path.to_path_buf()
        };
        let file = file.canonicalize().map_err(|error| {
            hub_error(
                ErrorKind::InvalidCatalog,
                format!(
                    "{}: cannot open the catalog ({error}): give a marketplace.json, a directory holding one, a git+URL#REF:DIR or a GitHub URL",
                    file.display()
                ),
            )
        })?;
        Ok(Self::File(file))
    }

    /// The normalized text recorded in the store.
    fn normalized(&self) -> String {
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

fn hub_error(kind: ErrorKind, message: impl Into<String>) -> HostError {
    HostError::command(kind, message)
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
fn is_full_sha(reference: &str) -> bool {
    reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `./a//b/` is `a/b`; `..`, an absolute path or a backslash is refused by the resolvers.
fn plain(path: &str) -> String {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect::<Vec<_>>()
        .join("/")
}

fn escapes(entry: &MarketplaceEntry, path: &str, why: &str) -> HostError {
    hub_error(
        ErrorKind::UnsafeSource,
        format!(
            "entry {} names `{path}`, which cannot be used: {why}; nothing was stored: name a real directory or file inside the catalog's directory",
            entry.name
        ),
    )
}

/// A relative path that stays inside the catalog's directory (no `..`, not absolute).
fn contained(entry: &MarketplaceEntry, path: &str) -> Result<String, HostError> {
    if path.starts_with('/') || path.split(['/', '\\']).any(|p| p == "..") {
        return Err(escapes(
            entry,
            path,
            "it is absolute or climbs out of the catalog with `..`",
        ));
    }
    Ok(plain(path))
}

/// The GitHub clone URL of `owner/name`.
pub(crate) fn github_url(base: &str, repo: &str) -> String {
    format!("{}/{repo}.git", base.trim_end_matches('/'))
}

impl PluginHost {
    fn hub(&self) -> &HubOptions {
        &self.shared.options.hub
    }

    /// The configured catalogs, in the order they were added.
    pub fn marketplaces(&self) -> Result<Vec<ConfiguredMarketplace>, HostError> {
        let bytes = self
            .shared
            .store
            .read_settings(MARKETPLACES_FILE, self.hub().max_marketplaces_bytes)?;
        parse_marketplaces(bytes.as_deref(), &self.shared.options.plugins_dir)
    }

    /// Reads and validates the catalog at `location` and adds it to the configured catalogs
    /// under its `name` (or `name` given here, which wins). A duplicate name or location, an
    /// invalid catalog or one that cannot be fetched is refused and nothing is written.
    pub async fn marketplace_add(
        &self,
        location: &str,
        name: Option<&str>,
    ) -> Result<ConfiguredMarketplace, HostError> {
        let catalog = self.open_catalog(location).await?;
        let name = match (name, catalog.marketplace.name.as_deref()) {
            (Some(name), _) | (None, Some(name)) => name.trim().to_owned(),
            (None, None) => {
                return Err(hub_error(
                    ErrorKind::InvalidCatalog,
                    format!(
                        "the catalog at {} has no `name`: give one with --name",
                        catalog.location
                    ),
                ));
            }
        };
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(hub_error(
                ErrorKind::InvalidCatalog,
                "a catalog name must be non-empty and free of control characters: give another with --name",
            ));
        }
        let added = ConfiguredMarketplace {
            name,
            location: catalog.location.clone(),
        };
        let max = self.hub().max_marketplaces;
        let plugins_dir = self.shared.options.plugins_dir.clone();
        let result = self.shared.store.update_settings(
            MARKETPLACES_FILE,
            self.hub().max_marketplaces_bytes,
            |current| {
                let mut list = parse_marketplaces(current, &plugins_dir)?;
                if let Some(same) = list
                    .iter()
                    .find(|m| m.name == added.name || m.location == added.location)
                {
                    return Err(hub_error(
                        ErrorKind::DuplicateMarketplace,
                        format!(
                            "a catalog named `{}` at {} is already configured",
                            same.name, same.location
                        ),
                    )
                    .with_hint(format!(
                        "remove it first with `c2-plugins marketplace remove {}`, or add this one with another --name",
                        same.name
                    )));
                }
                if list.len() >= max {
                    return Err(hub_error(
                        ErrorKind::TooManyMarketplaces,
                        format!(
                            "{max} catalogs are configured, the most allowed: remove one first"
                        ),
                    ));
                }
                list.push(added.clone());
                encode_marketplaces(list)
            },
        )?;
        result.map(|()| added)
    }

    /// Removes the configured catalog named `name`. Installed bundles keep their origin and
    /// are still compared with it by `outdated`.
    pub fn marketplace_remove(&self, name: &str) -> Result<ConfiguredMarketplace, HostError> {
        let plugins_dir = self.shared.options.plugins_dir.clone();
        let mut removed = None;
        let result = self.shared.store.update_settings(
            MARKETPLACES_FILE,
            self.hub().max_marketplaces_bytes,
            |current| {
                let mut list = parse_marketplaces(current, &plugins_dir)?;
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
    fn catalog_locations(&self, marketplace: Option<&str>) -> Result<Vec<String>, HostError> {
        let configured = self.marketplaces()?;
        match marketplace {
            Some(text) => Ok(vec![
                configured
                    .iter()
                    .find(|m| m.name == text)
                    .map_or_else(|| text.to_owned(), |m| m.location.clone()),
            ]),
            None if configured.is_empty() => Err(hub_error(
                ErrorKind::NoMarketplace,
                "no catalog was given and none is configured",
            )
            .with_hint(
                "give --marketplace PATH|URL, or add one with `c2-plugins marketplace add`",
            )),
            None => Ok(configured.into_iter().map(|m| m.location).collect()),
        }
    }

    async fn open_catalog(&self, text: &str) -> Result<OpenedCatalog, HostError> {
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
                    hub_error(
                        ErrorKind::InvalidCatalog,
                        format!("{normalized}: cannot read the catalog: {why}"),
                    )
                })?;
                (bytes, dir, None)
            }
            Location::Git(git) => {
                let checkout = source::checkout_git(&git, &self.shared.options).await?;
                let bytes =
                    read_contained_file(&checkout.dir, "marketplace.json", max).map_err(|why| {
                        hub_error(
                            ErrorKind::InvalidCatalog,
                            format!("{normalized}: no readable marketplace.json ({why})"),
                        )
                    })?;
                (bytes, checkout.dir.clone(), Some(checkout))
            }
        };
        if bytes.len() as u64 > max {
            return Err(hub_error(
                ErrorKind::InvalidCatalog,
                format!(
                    "{normalized}: the catalog is larger than {max} bytes (HubOptions::max_catalog_bytes)"
                ),
            ));
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            hub_error(
                ErrorKind::InvalidCatalog,
                format!("{normalized}: the catalog is not UTF-8"),
            )
        })?;
        let report = c2_manifest::validate_marketplace(&text);
        let Some(marketplace) = report.marketplace else {
            let first = report
                .diagnostics
                .iter()
                .filter(|d| d.severity == c2_manifest::Severity::Error)
                .map(|d| format!("{} at {}:{}: {}", d.code, d.line, d.column, d.message))
                .next()
                .unwrap_or_default();
            return Err(hub_error(
                ErrorKind::InvalidCatalog,
                format!(
                    "{normalized} is not a valid catalog ({first}); nothing was installed from it"
                ),
            )
            .with_hint(format!(
                "`c2-plugins validate {normalized}` shows every problem"
            )));
        };
        Ok(OpenedCatalog {
            location: normalized,
            marketplace,
            dir,
            _checkout: checkout,
        })
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
        let mut found = Vec::new();
        for location in self.catalog_locations(marketplace)? {
            let catalog = self.open_catalog(&location).await?;
            if catalog.entry(name).is_some() {
                found.push(catalog);
            }
        }
        let catalog = match found.len() {
            0 => {
                return Err(hub_error(
                    ErrorKind::EntryNotFound,
                    format!("no catalog lists `{name}`"),
                )
                .with_hint(format!(
                    "`c2-plugins search {name}` shows what the catalogs offer"
                )));
            }
            1 => found.remove(0),
            _ => {
                let names: Vec<String> = found.iter().map(OpenedCatalog::label).collect();
                return Err(hub_error(
                    ErrorKind::AmbiguousEntry,
                    format!(
                        "`{name}` is listed by several catalogs ({}): choose one with --marketplace",
                        names.join(", ")
                    ),
                ));
            }
        };
        let entry = catalog.entry(name).cloned().ok_or_else(|| {
            hub_error(
                ErrorKind::EntryNotFound,
                format!("no catalog lists `{name}`"),
            )
        })?;
        if let Some(wanted) = version
            && !same_version(wanted, &entry.version)
        {
            return Err(hub_error(
                ErrorKind::VersionNotFound,
                format!(
                    "{} lists {name} at {}, not {wanted}: install `{name}` or `{name}@{}`",
                    catalog.label(),
                    entry.version,
                    entry.version
                ),
            ));
        }
        let fetched = self.fetch_entry(&catalog, &entry).await?;
        self.install_collected(&fetched.bundle, fetched.request, options)
            .await
    }

    /// Fetches an entry's source and checks it against the entry; the request carries the
    /// catalog identity and origin.
    async fn fetch_entry(
        &self,
        catalog: &OpenedCatalog,
        entry: &MarketplaceEntry,
    ) -> Result<Fetched, HostError> {
        let options = &self.shared.options;
        let mut fetched = match &entry.source {
            MarketplaceSource::Local { path } => {
                let rel = contained(entry, path)?;
                let dir = c2_bundle_collector::resolve_subdirectory(&catalog.dir, &rel)
                    .map_err(|why| escapes(entry, path, &why.to_string()))?;
                let bundle = c2_bundle_collector::collect_dir(&dir, &options.limits)?;
                Fetched {
                    bundle,
                    request: InstallRequest::new(SourceIdentity::local(&dir)?),
                }
            }
            MarketplaceSource::Github { repo, r#ref, path } => {
                let git = GitSource {
                    url: github_url(&self.hub().github_base, repo),
                    reference: r#ref.clone(),
                    subdir: plain(path.as_deref().unwrap_or("")),
                };
                self.fetch_pinned(entry, &git).await?
            }
            MarketplaceSource::Git { url, r#ref, path } => {
                let git = GitSource {
                    url: url.clone(),
                    reference: r#ref.clone(),
                    subdir: plain(path.as_deref().unwrap_or("")),
                };
                self.fetch_pinned(entry, &git).await?
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
            return Err(hub_error(
                ErrorKind::CatalogMismatch,
                format!(
                    "the catalog lists {} {} but its source holds {} {}; nothing was stored: the catalog must name the bundle's plugin.json name and version",
                    entry.name, entry.version, found.0, found.1
                ),
            ));
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
        git: &GitSource,
    ) -> Result<Fetched, HostError> {
        let fetched = source::fetch_git(git, &self.shared.options).await?;
        if let Some(pinned) = git.reference.as_deref().filter(|r| is_full_sha(r)) {
            let head = fetched.request.commit.as_deref().unwrap_or("");
            if !head.eq_ignore_ascii_case(pinned) {
                return Err(hub_error(
                    ErrorKind::CommitMismatch,
                    format!(
                        "entry {} pins commit {pinned} but {} checked out {head}; nothing was stored: the pinned commit must exist in the repository (a branch or tag named like a commit is not it)",
                        entry.name, git.url
                    ),
                ));
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
    ) -> Result<Fetched, HostError> {
        let options = &self.shared.options;
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
            return Err(hub_error(
                ErrorKind::UnsafeSource,
                format!("the npm package `{spec}` starts with `-`; nothing was fetched"),
            ));
        }
        let work = WorkDir::new(options)?;
        let (cwd, cache, dest) = (
            work.0.join("cwd"),
            work.0.join("cache"),
            work.0.join("dest"),
        );
        for dir in [&cwd, &cache, &dest] {
            std::fs::create_dir_all(dir).map_err(HostError::io("create", dir))?;
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
            .map_err(|error| {
                hub_error(ErrorKind::NpmFailed, format!("npm pack {spec}: {error}"))
            })?;
        if !output.exit.success() {
            return Err(hub_error(
                ErrorKind::NpmFailed,
                format!(
                    "`npm pack {spec}` {}: {}; nothing was stored",
                    output.exit,
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            ));
        }
        #[derive(Deserialize)]
        struct Packed {
            filename: String,
        }
        let packed: Vec<Packed> = serde_json::from_slice(&output.stdout).map_err(|error| {
            hub_error(
                ErrorKind::NpmFailed,
                format!("`npm pack {spec}` printed no package list ({error})"),
            )
        })?;
        let [packed] = packed.as_slice() else {
            return Err(hub_error(
                ErrorKind::NpmFailed,
                format!(
                    "`npm pack {spec}` packed {} packages, not one",
                    packed.len()
                ),
            ));
        };
        // npm names a scoped package's tarball `scope-name-1.0.0.tgz`: a plain file name.
        let max = options.limits.max_archive_bytes;
        let bytes = read_contained_file(&dest, &packed.filename, max).map_err(|why| {
            hub_error(
                ErrorKind::NpmFailed,
                format!(
                    "`npm pack {spec}` left no tarball {}: {why}",
                    packed.filename
                ),
            )
        })?;
        let bundle = c2_bundle_collector::collect_npm_tarball_bytes(&bytes, &options.limits);
        Ok(Fetched {
            bundle,
            request: InstallRequest::new(SourceIdentity::archive(&bytes)),
        })
    }

    async fn fetch_archive(
        &self,
        catalog: &OpenedCatalog,
        entry: &MarketplaceEntry,
        url: &str,
        sha256: Option<&str>,
    ) -> Result<Fetched, HostError> {
        let options = &self.shared.options;
        let max = options.limits.max_archive_bytes;
        let format =
            ArchiveFormat::from_path(Path::new(url.split(['?', '#']).next().unwrap_or(url)))
                .ok_or_else(|| {
                    hub_error(
                        ErrorKind::UnsupportedSource,
                        format!(
                            "entry {}: the archive `{url}` is not a .tar.gz, .tgz or .zip",
                            entry.name
                        ),
                    )
                })?;
        let bytes = if url.starts_with("https://") {
            let run = RunOptions {
                stdout_max: usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1),
                ..self.hub().fetch_run.clone()
            };
            let process = ProcessSpec::new(&self.hub().curl_program, &options.plugins_dir)
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
            let output = c2_supervisor::run(&process, &run).await.map_err(|error| {
                hub_error(ErrorKind::FetchFailed, format!("download {url}: {error}"))
            })?;
            if !output.exit.success() {
                return Err(hub_error(
                    ErrorKind::FetchFailed,
                    format!(
                        "download {url} {}: {}; nothing was stored",
                        output.exit,
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                ));
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
                return Err(hub_error(
                    ErrorKind::DigestMismatch,
                    format!(
                        "entry {}: the archive's SHA-256 is {actual}, the catalog says {expected}; nothing was stored",
                        entry.name
                    ),
                ));
            }
        }
        let bundle = c2_bundle_collector::collect_archive_bytes(&bytes, format, &options.limits);
        Ok(Fetched {
            bundle,
            request: InstallRequest::new(SourceIdentity::archive(&bytes)),
        })
    }

    /// Case-insensitive search of names, descriptions and keywords of the entries of the
    /// catalog named or located by `marketplace`, else of every configured catalog. Every
    /// catalog must be readable (a failure fails the search). Empty `text` lists everything.
    pub async fn search(
        &self,
        text: &str,
        marketplace: Option<&str>,
    ) -> Result<Vec<SearchHit>, HostError> {
        let needle = text.to_lowercase();
        let installed: Vec<_> = self.list().into_iter().map(|b| b.record).collect();
        let mut hits = Vec::new();
        for location in self.catalog_locations(marketplace)? {
            let catalog = self.open_catalog(&location).await?;
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

    /// Every bundle installed from a catalog, compared by SemVer with that catalog's entry.
    /// Each catalog is read once; one that fails marks its bundles `catalog_failed`.
    pub async fn outdated(&self) -> Vec<OutdatedRow> {
        let mut rows = Vec::new();
        let mut catalogs: std::collections::BTreeMap<String, Result<OpenedCatalog, String>> =
            std::collections::BTreeMap::new();
        for status in self.list() {
            let record = status.record;
            let Some(origin) = &record.origin else {
                continue;
            };
            if !catalogs.contains_key(&origin.catalog) {
                let opened = self
                    .open_catalog(&origin.catalog)
                    .await
                    .map_err(|e| e.to_string());
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

    /// Updates the bundle `id` (or every bundle installed from a catalog) to its catalog
    /// entry's version when that is newer, in place through the install path's replace:
    /// same id, enablement, component choices and data kept, trust dropped if the content
    /// changed, live runtimes reloaded. A bundle whose update fails stays as it was and is
    /// listed in `failed`. `id` not installed or not from a catalog is an error.
    pub async fn update(&self, id: Option<&str>) -> Result<UpdateReport, HostError> {
        let records: Vec<_> = self.list().into_iter().map(|b| b.record).collect();
        let targets: Vec<_> = match id {
            Some(id) => {
                let record = records
                    .iter()
                    .find(|r| r.id == id)
                    .ok_or_else(|| HostError::NotInstalled { id: id.to_owned() })?;
                if record.origin.is_none() {
                    return Err(hub_error(
                        ErrorKind::NotFromCatalog,
                        format!(
                            "{id} was not installed from a catalog, so it has no catalog entry to update from"
                        ),
                    )
                    .with_hint(
                        "reinstall it from its source, or install it with `c2-plugins install NAME --marketplace ...`",
                    ));
                }
                vec![record.clone()]
            }
            None => records.into_iter().filter(|r| r.origin.is_some()).collect(),
        };
        let mut report = UpdateReport::default();
        for record in targets {
            match self.update_one(&record).await {
                Ok(Some(updated)) => report.updated.push(updated),
                Ok(None) => report.current.push(record.id.clone()),
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
        record: &c2_bundle_collector::InstalledRecord,
    ) -> Result<Option<Updated>, HostError> {
        let Some(origin) = &record.origin else {
            return Ok(None);
        };
        let catalog = self.open_catalog(&origin.catalog).await?;
        let entry = catalog.entry(&origin.entry).cloned().ok_or_else(|| {
            hub_error(
                ErrorKind::EntryNotFound,
                format!(
                    "{} no longer lists `{}`; {} stays as it is",
                    catalog.label(),
                    origin.entry,
                    record.id
                ),
            )
        })?;
        let newer = record
            .version
            .as_deref()
            .is_none_or(|installed| is_newer(&entry.version, installed));
        if !newer {
            return Ok(None);
        }
        let fetched = self.fetch_entry(&catalog, &entry).await?;
        let id = fetched
            .bundle
            .manifest
            .as_ref()
            .map(|m| c2_bundle_collector::installed_id(&m.name, &fetched.request.source));
        if id.as_deref() != Some(record.id.as_str()) {
            return Err(hub_error(
                ErrorKind::CatalogMismatch,
                format!(
                    "the update of {} would install under another id ({}); nothing was stored",
                    record.id,
                    id.as_deref().unwrap_or("none")
                ),
            ));
        }
        let outcome = self
            .install_collected(&fetched.bundle, fetched.request, InstallOptions::default())
            .await?;
        Ok(Some(Updated {
            id: record.id.clone(),
            from: record.version.clone(),
            to: entry.version.clone(),
            outcome,
        }))
    }
}

fn same_version(a: &str, b: &str) -> bool {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `candidate` is a strictly greater SemVer than `installed` (an unparsable installed
/// version counts as older, so a valid catalog version replaces it).
fn is_newer(candidate: &str, installed: &str) -> bool {
    match (
        semver::Version::parse(candidate),
        semver::Version::parse(installed),
    ) {
        (Ok(candidate), Ok(installed)) => candidate > installed,
        (Ok(_), Err(_)) => true,
        _ => false,
    }
}

fn unknown_marketplace(name: &str, list: &[ConfiguredMarketplace]) -> HostError {
    let known: Vec<&str> = list.iter().map(|m| m.name.as_str()).collect();
    hub_error(
        ErrorKind::UnknownMarketplace,
        format!(
            "no configured catalog is named `{name}` (configured: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ),
    )
    .with_hint("`c2-plugins marketplace list` shows them")
}

fn parse_marketplaces(
    bytes: Option<&[u8]>,
    plugins_dir: &Path,
) -> Result<Vec<ConfiguredMarketplace>, HostError> {
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    let document: MarketplacesDocument = serde_json::from_slice(bytes).map_err(|error| {
        hub_error(
            ErrorKind::InvalidMarketplaces,
            format!(
                "{} is unreadable ({error}): fix or delete it, then add the catalogs again",
                plugins_dir.join(MARKETPLACES_FILE).display()
            ),
        )
    })?;
    if document.format != MARKETPLACES_FORMAT {
        return Err(hub_error(
            ErrorKind::InvalidMarketplaces,
            format!(
                "{} has format {}, this host reads {MARKETPLACES_FORMAT}",
                plugins_dir.join(MARKETPLACES_FILE).display(),
                document.format
            ),
        ));
    }
    Ok(document.marketplaces)
}

fn encode_marketplaces(list: Vec<ConfiguredMarketplace>) -> Result<Vec<u8>, HostError> {
    let document = MarketplacesDocument {
        format: MARKETPLACES_FORMAT,
        marketplaces: list,
    };
    let mut bytes = serde_json::to_vec_pretty(&document)
        .map_err(|error| hub_error(ErrorKind::InvalidMarketplaces, error.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_sources_map_to_clone_urls_and_full_shas_are_pins() {
        assert_eq!(
            github_url("https://github.com", "o/r"),
            "https://github.com/o/r.git"
        );
        assert_eq!(github_url("file:///m/", "o/r"), "file:///m/o/r.git");
        assert!(is_full_sha(&"a".repeat(40)));
        assert!(!is_full_sha(&"a".repeat(39)));
        assert!(!is_full_sha("main"));
    }

    #[test]
    fn versions_compare_by_semver() {
        assert!(is_newer("1.10.0", "1.9.0"));
        assert!(!is_newer("1.0.0", "1.0.0"));
        assert!(is_newer("1.0.0", "1.0.0-rc.1"));
        assert!(!is_newer("0.9.0", "1.0.0"));
        assert!(same_version("1.0.0", "1.0.0"));
        assert!(!same_version("1.0.0", "1.0.1"));
    }

    #[test]
    fn git_locations_normalize_to_one_text() {
        let parsed = Location::parse("https://github.com/o/r/tree/main/catalogs").unwrap();
        assert_eq!(
            parsed.normalized(),
            "git+https://github.com/o/r.git#main:catalogs"
        );
        let parsed = Location::parse("git+file:///x/r").unwrap();
        assert_eq!(parsed.normalized(), "git+file:///x/r");
    }
}
