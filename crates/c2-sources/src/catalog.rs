//! One catalog as an install source (standard §2): where it is, reading it, and fetching one
//! entry's declared source.
//!
//! A catalog is our `marketplace.json`, Claude Code's `.claude-plugin/marketplace.json` or
//! Codex's `.agents/plugins/marketplace.json` ([`c2_manifest::validate_catalog`]: a foreign
//! catalog's bad entries are skipped, the rest stay usable). It is read from such a file named
//! directly, a directory holding one (searched in that order), a git source
//! (`git+URL#REF:DIR`) or a GitHub URL, cloned with the same hardened options as a git
//! bundle source, afresh every time it is used (nothing is cached). Relative paths resolve
//! against the catalog root (the directory holding `.claude-plugin/` or `.agents/`). An entry's one declared
//! source is fetched (`local` under the catalog's directory without following links, `github`
//! and `git` cloned, `npm` packed by the system `npm pack` with scripts disabled, `archive`
//! beside the catalog or over https), and the collected bundle must have the entry's name and
//! version, a pinned commit must be exactly HEAD, a declared SHA-256 must be the archive's.
//! The request that comes back carries the catalog identity ([`SourceIdentity::Catalog`]) and
//! the origin, so `outdated` and `update` re-read the catalog.

use std::path::{Path, PathBuf};

use c2_bundle_collector::{
    ArchiveFormat, CatalogOrigin, InstallRequest, Provenance, ProvenanceKind, SourceIdentity,
    read_contained_file,
};
use c2_manifest::{
    Availability, CATALOG_FILES, Catalog, CatalogEntry, CatalogFormat, MarketplaceSource,
    SkippedEntry,
};
use c2_supervisor::RunOptions;

use crate::catalogs::Catalogs;
use crate::error::SourceError;
use crate::fetch::Fetched;
use crate::git::{self, Checkout};
use crate::source::{GitSource, normalize_subdir, parse_git};

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

/// Where a catalog is.
#[derive(Debug, Clone)]
pub(crate) enum Location {
    /// An absolute, resolved catalog file.
    File(PathBuf),
    /// A directory of a git source holding a catalog file.
    Git(GitSource),
}

impl Location {
    pub(crate) fn parse(text: &str) -> Result<Self, SourceError> {
        if let Some(git) = parse_git(text) {
            return Ok(Self::Git(git));
        }
        let path = Path::new(text);
        let file = if path.is_dir() {
            // The first catalog file there, ours first; ours named in the error when none is.
            CATALOG_FILES
                .iter()
                .map(|(rel, _)| path.join(rel))
                .find(|file| file.is_file())
                .unwrap_or_else(|| path.join("marketplace.json"))
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
/// (kept alive for a git checkout) and the entries it left out.
#[derive(Debug)]
pub(crate) struct OpenedCatalog {
    pub(crate) location: String,
    pub(crate) catalog: Catalog,
    pub(crate) skipped: Vec<SkippedEntry>,
    dir: PathBuf,
    _checkout: Option<Checkout>,
}

impl OpenedCatalog {
    pub(crate) fn label(&self) -> String {
        self.catalog
            .name
            .clone()
            .unwrap_or_else(|| self.location.clone())
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&CatalogEntry> {
        self.catalog.entries.iter().find(|e| e.name == name)
    }
}

/// The catalog root of the catalog file `file`: the directory holding `.claude-plugin/` or
/// `.agents/` for a foreign catalog at its usual place, else the file's own directory.
fn catalog_root(file: &Path, depth: usize) -> PathBuf {
    let mut dir = file
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
    for _ in 0..depth {
        if let Some(parent) = dir.parent() {
            dir = parent.to_path_buf();
        }
    }
    dir
}

pub(crate) fn invalid_catalog(message: String) -> SourceError {
    SourceError::InvalidCatalog {
        message,
        invalid: None,
    }
}

/// Why a fetched bundle is not an Agent Plugins bundle with a C2 namespace, when that is
/// plain from its files: no plugin.json but another tool's manifest, or a plugin.json without
/// `extensions.dev.codetwo`. Any other invalid bundle is left to the host's diagnostics.
fn not_agent_plugins(bundle: &c2_bundle_collector::CollectedBundle) -> Option<String> {
    if bundle.manifest.is_some() {
        return None;
    }
    if !bundle.files.contains_key("plugin.json") {
        let other = [
            (".claude-plugin/plugin.json", "a Claude Code plugin"),
            (".codex-plugin/plugin.json", "a Codex plugin"),
        ]
        .into_iter()
        .find(|(file, _)| bundle.files.contains_key(*file));
        return Some(match other {
            Some((file, what)) => format!("{what} ({file}) with no Agent Plugins plugin.json"),
            None => "not a bundle: it has no plugin.json".to_owned(),
        });
    }
    bundle
        .diagnostics
        .iter()
        .any(|d| d.code == "codetwo-missing")
        .then(|| "an Agent Plugins bundle without the extensions.dev.codetwo namespace".to_owned())
}

pub(crate) fn source_kind(source: &MarketplaceSource) -> &'static str {
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

fn escapes(entry: &CatalogEntry, path: &str, why: &str) -> SourceError {
    SourceError::Unsafe(format!(
        "entry {} names `{path}`, which cannot be used: {why}; nothing was stored: name a real directory or file inside the catalog's directory",
        entry.name
    ))
}

/// A relative path that stays inside the catalog's directory (no `..`, not absolute).
fn contained(entry: &CatalogEntry, path: &str) -> Result<String, SourceError> {
    if path.starts_with('/') || path.split(['/', '\\']).any(|p| p == "..") {
        return Err(escapes(
            entry,
            path,
            "it is absolute or climbs out of the catalog with `..`",
        ));
    }
    Ok(normalize_subdir(path))
}

/// Why an npm source is not one of the two forms a catalog may use, if it is not: a path
/// under the catalog's directory (starting with `.`, no `version`) or a registry name at an
/// exact SemVer version. Every other spec npm understands (`file:`, `~`, git, GitHub and
/// `npm:` alias specs, URLs, tags, ranges) is refused here too, whatever validation said.
pub(crate) fn npm_spec_refusal(package: &str, version: Option<&str>) -> Option<String> {
    if package.starts_with('.') {
        return version
            .map(|v| format!("a path under the catalog takes no `version` (it has \"{v}\")"));
    }
    if !c2_manifest::is_npm_registry_name(package) {
        return Some(format!(
            "`{package}` is neither a registry package name nor a path under the catalog starting with `.`"
        ));
    }
    match version {
        None => Some(format!(
            "the registry package `{package}` has no exact version to fetch"
        )),
        Some(v) if semver::Version::parse(v).is_err() => Some(format!(
            "the npm version \"{v}\" of `{package}` is not an exact SemVer version (ranges and tags are refused)"
        )),
        Some(_) => None,
    }
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

impl Catalogs<'_> {
    pub(crate) async fn open(&self, text: &str) -> Result<OpenedCatalog, SourceError> {
        let location = Location::parse(text)?;
        let normalized = location.normalized();
        let max = self.hub().max_catalog_bytes;
        let (bytes, dir, format, checkout) = match location {
            Location::File(file) => {
                // Canonical already; opened without following a link and never blocking on a
                // FIFO, and only a regular file is read.
                let parent = catalog_root(&file, 0);
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let bytes = read_contained_file(&parent, &name, max).map_err(|why| {
                    invalid_catalog(format!("{normalized}: cannot read the catalog: {why}"))
                })?;
                let named = CatalogFormat::from_path(&file.to_string_lossy());
                let depth = named.map_or(0, |(_, depth)| depth);
                (
                    bytes,
                    catalog_root(&file, depth),
                    named.map(|(f, _)| f),
                    None,
                )
            }
            Location::Git(source) => {
                let checkout = git::checkout_git(&source, self.options).await?;
                // The first catalog file of the checkout's directory, ours first.
                let mut found = None;
                let mut first_why = None;
                for (rel, format) in CATALOG_FILES {
                    match read_contained_file(&checkout.dir, rel, max) {
                        Ok(bytes) => {
                            found = Some((bytes, format));
                            break;
                        }
                        Err(why) => {
                            first_why.get_or_insert(why);
                        }
                    }
                }
                let Some((bytes, format)) = found else {
                    return Err(invalid_catalog(format!(
                        "{normalized}: no readable marketplace.json ({})",
                        first_why.map(|why| why.to_string()).unwrap_or_default()
                    )));
                };
                (bytes, checkout.dir.clone(), Some(format), Some(checkout))
            }
        };
        if bytes.len() as u64 > max {
            return Err(invalid_catalog(format!(
                "{normalized}: the catalog is larger than {max} bytes (HubOptions::max_catalog_bytes)"
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| invalid_catalog(format!("{normalized}: the catalog is not UTF-8")))?;
        let format = format.unwrap_or_else(|| CatalogFormat::sniff(&text));
        let report = c2_manifest::validate_catalog(&text, format);
        let Some(catalog) = report.catalog else {
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
            catalog,
            skipped: report.skipped,
            dir,
            _checkout: checkout,
        })
    }

    /// Fetches an entry's source and checks it against the entry; the request carries the
    /// catalog identity and origin.
    pub(crate) async fn fetch_from(
        &self,
        catalog: &OpenedCatalog,
        entry: &CatalogEntry,
    ) -> Result<Fetched, SourceError> {
        if let Availability::NotAvailable { reason } = &entry.availability {
            return Err(SourceError::EntryNotAvailable {
                name: entry.name.clone(),
                catalog: catalog.label(),
                reason: reason.clone(),
            });
        }
        let options = self.options;
        let mut fetched = match &entry.source {
            MarketplaceSource::Local { path } => {
                let rel = contained(entry, path)?;
                let dir = c2_bundle_collector::resolve_subdirectory(&catalog.dir, &rel)
                    .map_err(|why| escapes(entry, path, &why.to_string()))?;
                let bundle = c2_bundle_collector::collect_dir(&dir, &options.collect)?;
                let mut request = InstallRequest::new(SourceIdentity::local(&dir)?);
                request.provenance = Some(Provenance::new(
                    ProvenanceKind::Directory,
                    dir.display().to_string(),
                    request.installed_at,
                ));
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
        if let Some(why) = not_agent_plugins(&fetched.bundle) {
            return Err(SourceError::Unsupported(format!(
                "entry {} of {} is {why}; this host installs only Agent Plugins bundles whose plugin.json has an extensions.dev.codetwo namespace; nothing was stored",
                entry.name,
                catalog.label()
            )));
        }
        if fetched.bundle.manifest.is_some()
            && (found.0 != entry.name
                || entry
                    .version
                    .as_deref()
                    .is_some_and(|listed| !same_version(&found.1, listed)))
        {
            return Err(SourceError::CatalogMismatch(format!(
                "the catalog lists {} {} but its source holds {} {}; nothing was stored: the catalog must name the bundle's plugin.json name and version",
                entry.name,
                entry.version.as_deref().unwrap_or("(any version)"),
                found.0,
                found.1
            )));
        }
        fetched.request.source = SourceIdentity::Catalog {
            catalog: catalog.location.clone(),
            entry: entry.name.clone(),
        };
        let origin = CatalogOrigin {
            catalog: catalog.location.clone(),
            catalog_name: catalog.catalog.name.clone(),
            entry: entry.name.clone(),
            // A catalog that lists no version (Codex's) offers the bundle's own.
            version: entry.version.clone().unwrap_or(found.1),
            source_kind: source_kind(&entry.source).to_owned(),
        };
        if let Some(provenance) = &mut fetched.request.provenance {
            provenance.catalog = Some(origin.clone());
        }
        fetched.request.origin = Some(origin);
        fetched.default_enabled = entry.default_enabled;
        Ok(fetched)
    }

    async fn fetch_pinned(
        &self,
        entry: &CatalogEntry,
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
        entry: &CatalogEntry,
        package: &str,
        version: Option<&str>,
    ) -> Result<Fetched, SourceError> {
        let options = self.options;
        if let Some(why) = npm_spec_refusal(package, version) {
            return Err(SourceError::Unsafe(format!(
                "entry {} has an npm source that cannot be used: {why}; nothing was stored",
                entry.name
            )));
        }
        let local = package.starts_with('.');
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
        let packed = crate::remote::npm_pack(&spec, None, options).await?;
        let bundle =
            c2_bundle_collector::collect_npm_tarball_bytes(&packed.bytes, &options.collect);
        let mut request = InstallRequest::new(SourceIdentity::archive(&packed.bytes));
        let mut provenance = Provenance::new(ProvenanceKind::Npm, spec, request.installed_at);
        provenance.sha256 = Some(packed.sha256);
        provenance.npm = Some(packed.npm);
        request.provenance = Some(provenance);
        Ok(Fetched::new(bundle, request, options))
    }

    async fn fetch_archive(
        &self,
        catalog: &OpenedCatalog,
        entry: &CatalogEntry,
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
        let (kind, location, bytes) = if url.starts_with("https://") {
            let bytes = crate::remote::download(url, options).await?;
            (ProvenanceKind::Https, url.to_owned(), bytes)
        } else {
            let rel = contained(entry, url)?;
            let bytes = read_contained_file(&catalog.dir, &rel, max)
                .map_err(|why| escapes(entry, url, &why.to_string()))?;
            let path = catalog.dir.join(&rel).display().to_string();
            (ProvenanceKind::Archive, path, bytes)
        };
        let actual = crate::remote::sha256_hex(&bytes);
        if let Some(expected) = sha256
            && !actual.eq_ignore_ascii_case(expected)
        {
            return Err(SourceError::DigestMismatch(format!(
                "entry {}: the archive's SHA-256 is {actual}, the catalog says {expected}; nothing was stored",
                entry.name
            )));
        }
        let bundle = c2_bundle_collector::collect_archive_bytes(&bytes, format, &options.collect);
        let mut request = InstallRequest::new(SourceIdentity::archive(&bytes));
        let mut provenance = Provenance::new(kind, location, request.installed_at);
        provenance.sha256 = Some(actual);
        request.provenance = Some(provenance);
        Ok(Fetched::new(bundle, request, options))
    }
}
