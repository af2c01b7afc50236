//! The lock file: an installed set as a versioned, sorted, pretty-printed JSON document
//! (`"lockVersion": 1`), fetched again from each entry's recorded provenance and verified
//! before anything is stored, and compared with a store to report drift.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use c2_bundle_collector::{
    InstallRequest, InstalledRecord, Provenance, ProvenanceKind, SourceIdentity,
};
use serde::{Deserialize, Serialize};

use crate::error::SourceError;
use crate::fetch::{FetchOptions, Fetched};
use crate::source::GitSource;

/// The one lock format this version reads and writes.
pub const LOCK_VERSION: u32 = 1;

/// The largest lock file read (4 MiB).
pub const MAX_LOCK_BYTES: u64 = 4 * 1024 * 1024;

/// A lock file: every installed bundle with where it came from and what it must be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct LockFile {
    /// Always [`LOCK_VERSION`].
    pub lock_version: u32,
    /// The bundles, sorted by id.
    pub plugins: Vec<LockEntry>,
}

/// One locked bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct LockEntry {
    /// The installed id.
    pub id: String,
    /// The manifest's name.
    pub name: String,
    /// The manifest's version, `null` when it has none.
    pub version: Option<String>,
    /// The content digest the fetched bundle must have.
    pub digest: String,
    /// The source identity that fixes the installed id.
    pub source: SourceIdentity,
    /// Where the bytes come from (without the install time, so the file stays stable).
    pub provenance: Provenance,
    /// Whether the content with this digest is trusted.
    pub trusted: bool,
    /// Enablement as recorded.
    pub enabled: LockEnablement,
}

impl LockEnablement {
    /// Enabled for the user or not, with no project choices.
    pub fn user(user: bool) -> Self {
        Self {
            user,
            projects: BTreeMap::new(),
        }
    }
}

/// Where a locked bundle is enabled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct LockEnablement {
    /// Enabled for the user (every realm that inherits the user's choice).
    pub user: bool,
    /// Projects (by normalized directory) with their own choice: enabled or disabled there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub projects: BTreeMap<String, bool>,
}

impl LockEntry {
    /// The entry of an installed bundle, trusted and enabled as given. A record without a
    /// provenance (installed by an older version) gets the one its source identity implies
    /// for a directory or git source; for any other it is refused.
    pub fn from_record(
        record: &InstalledRecord,
        trusted: bool,
        enabled: LockEnablement,
    ) -> Result<Self, SourceError> {
        let mut provenance = match (&record.provenance, &record.source) {
            (Some(provenance), _) => provenance.clone(),
            (None, SourceIdentity::Local { path }) => Provenance::new(
                ProvenanceKind::Directory,
                path.display().to_string(),
                std::time::UNIX_EPOCH,
            ),
            (None, SourceIdentity::Git { url, subdir }) if record.commit.is_some() => {
                let mut provenance =
                    Provenance::new(ProvenanceKind::Git, url, std::time::UNIX_EPOCH);
                provenance.commit.clone_from(&record.commit);
                provenance.subdir = Some(subdir.clone());
                provenance
            }
            (None, _) => {
                return Err(SourceError::InvalidLock(format!(
                    "{} has no recorded provenance, so it cannot be locked; install it again from its source",
                    record.id
                )));
            }
        };
        provenance.installed_at = String::new();
        Ok(Self {
            id: record.id.clone(),
            name: record.name.clone(),
            version: record.version.clone(),
            digest: record.digest.clone(),
            source: record.source.clone(),
            provenance,
            trusted,
            enabled,
        })
    }
}

impl LockFile {
    /// A lock of `entries`, sorted by id.
    pub fn new(mut entries: Vec<LockEntry>) -> Self {
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        Self {
            lock_version: LOCK_VERSION,
            plugins: entries,
        }
    }

    /// The document: pretty-printed JSON with two-space indents and a final newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads a lock document. Another `lockVersion`, an unknown field, a duplicate id or a
    /// document over [`MAX_LOCK_BYTES`] is refused ([`SourceError::InvalidLock`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, SourceError> {
        if bytes.len() as u64 > MAX_LOCK_BYTES {
            return Err(SourceError::InvalidLock(format!(
                "the lock file is larger than {MAX_LOCK_BYTES} bytes"
            )));
        }
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|error| SourceError::InvalidLock(format!("not a JSON document ({error})")))?;
        match value.get("lockVersion").and_then(serde_json::Value::as_u64) {
            Some(version) if version == u64::from(LOCK_VERSION) => {}
            Some(version) => {
                return Err(SourceError::InvalidLock(format!(
                    "lockVersion {version} is not supported (this version reads {LOCK_VERSION})"
                )));
            }
            None => {
                return Err(SourceError::InvalidLock(
                    "no lockVersion: not a lock file".to_owned(),
                ));
            }
        }
        let lock: Self = serde_json::from_value(value)
            .map_err(|error| SourceError::InvalidLock(format!("invalid lock file: {error}")))?;
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = lock.plugins.iter().find(|e| !seen.insert(e.id.as_str())) {
            return Err(SourceError::InvalidLock(format!(
                "{} is listed twice",
                twice.id
            )));
        }
        Ok(lock)
    }

    /// Reads the lock file at `path`, bounded by [`MAX_LOCK_BYTES`].
    pub fn read(path: &Path) -> Result<Self, SourceError> {
        let mut options = FetchOptions::new(".");
        options.collect.limits.max_archive_bytes = MAX_LOCK_BYTES + 1;
        let bytes = crate::remote::read_local_file(path, &options)
            .map_err(|error| SourceError::InvalidLock(error.to_string()))?;
        Self::parse(&bytes)
    }
}

/// What differs between a lock and a store, for one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum DriftKind {
    /// Locked but not installed.
    Missing,
    /// Installed but not locked.
    Extra,
    /// Another content digest.
    Digest,
    /// Another version.
    Version,
    /// Another source identity.
    Source,
}

/// One difference between a lock and a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Drift {
    /// The installed id.
    pub id: String,
    /// What differs.
    pub kind: DriftKind,
    /// The lock's value (`null` for an extra bundle).
    pub locked: Option<String>,
    /// The store's value (`null` for a missing bundle).
    pub installed: Option<String>,
}

/// Every difference between `lock` and the `installed` records, by id then kind.
pub fn drift(lock: &LockFile, installed: &[InstalledRecord]) -> Vec<Drift> {
    let installed: BTreeMap<&str, &InstalledRecord> =
        installed.iter().map(|r| (r.id.as_str(), r)).collect();
    let locked: BTreeMap<&str, &LockEntry> =
        lock.plugins.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut found = Vec::new();
    let row = |id: &str, kind, locked: Option<String>, installed: Option<String>| Drift {
        id: id.to_owned(),
        kind,
        locked,
        installed,
    };
    for (id, entry) in &locked {
        let Some(record) = installed.get(id) else {
            found.push(row(
                id,
                DriftKind::Missing,
                Some(entry.digest.clone()),
                None,
            ));
            continue;
        };
        if entry.digest != record.digest {
            let (a, b) = (entry.digest.clone(), record.digest.clone());
            found.push(row(id, DriftKind::Digest, Some(a), Some(b)));
        }
        if entry.version != record.version {
            let (a, b) = (entry.version.clone(), record.version.clone());
            found.push(row(id, DriftKind::Version, a, b));
        }
        if entry.source != record.source {
            let text = |s: &SourceIdentity| serde_json::to_string(s).unwrap_or_default();
            let (a, b) = (text(&entry.source), text(&record.source));
            found.push(row(id, DriftKind::Source, Some(a), Some(b)));
        }
    }
    for (id, record) in &installed {
        if !locked.contains_key(id) {
            found.push(row(id, DriftKind::Extra, None, Some(record.digest.clone())));
        }
    }
    found.sort_by(|a, b| (&a.id, a.kind).cmp(&(&b.id, b.kind)));
    found
}

/// Fetches every entry of `lock` from its recorded provenance and verifies each before any is
/// returned: the archive's SHA-256, the npm integrity, the git commit, then the content
/// digest, the name and the installed id. The first failure refuses the whole set, naming
/// the entry (and both digests for a digest mismatch).
pub async fn fetch_locked(
    lock: &LockFile,
    options: &FetchOptions,
) -> Result<Vec<Fetched>, SourceError> {
    let mut fetched = Vec::with_capacity(lock.plugins.len());
    for entry in &lock.plugins {
        fetched.push(fetch_entry(entry, options).await?);
    }
    Ok(fetched)
}

async fn fetch_entry(entry: &LockEntry, options: &FetchOptions) -> Result<Fetched, SourceError> {
    let p = &entry.provenance;
    let mismatch = |what: &str, recorded: &str, found: &str| {
        SourceError::DigestMismatch(format!(
            "{}: the {what} is {found}, the lock says {recorded}; nothing was stored",
            entry.id
        ))
    };
    let mut fetched = match p.kind {
        ProvenanceKind::Directory | ProvenanceKind::Archive => {
            let fetched = crate::fetch::fetch_path(Path::new(&p.location), &options.collect)?;
            let sha = fetched
                .request
                .provenance
                .as_ref()
                .and_then(|f| f.sha256.clone());
            if let Some(recorded) = &p.sha256
                && sha.as_deref() != Some(recorded.as_str())
            {
                let found = sha.unwrap_or_else(|| "(not an archive)".to_owned());
                return Err(mismatch("archive's SHA-256", recorded, &found));
            }
            fetched
        }
        ProvenanceKind::Git | ProvenanceKind::Github => {
            let Some(commit) = &p.commit else {
                return Err(SourceError::InvalidLock(format!(
                    "{}: a git entry needs its commit",
                    entry.id
                )));
            };
            let subdir = p.subdir.as_deref().unwrap_or("");
            let source = GitSource::new(&p.location, Some(commit.clone()), subdir);
            let mut fetched = crate::git::fetch_git(&source, options).await?;
            let head = fetched.request.commit.clone().unwrap_or_default();
            if !head.eq_ignore_ascii_case(commit) {
                return Err(SourceError::CommitMismatch(format!(
                    "{}: the lock pins commit {commit} but {} checked out {head}; nothing was stored",
                    entry.id, p.location
                )));
            }
            if let Some(provenance) = &mut fetched.request.provenance {
                provenance.reference.clone_from(&p.reference);
            }
            fetched
        }
        ProvenanceKind::Npm => {
            if let Some(why) = npm_refusal(&p.location) {
                return Err(SourceError::Unsafe(format!(
                    "{}: the npm source cannot be used: {why}; nothing was fetched",
                    entry.id
                )));
            }
            let integrity = p.npm.as_ref().map(|n| n.integrity.as_str());
            let packed = crate::remote::npm_pack(&p.location, integrity, options).await?;
            let bytes = &packed.bytes;
            let bundle = c2_bundle_collector::collect_npm_tarball_bytes(bytes, &options.collect);
            let mut request = InstallRequest::new(SourceIdentity::archive(bytes));
            let mut provenance = p.clone();
            provenance.sha256 = Some(packed.sha256);
            provenance.npm = Some(packed.npm);
            request.provenance = Some(provenance);
            Fetched::new(bundle, request, options)
        }
        ProvenanceKind::Https => {
            let Some(recorded) = &p.sha256 else {
                return Err(SourceError::InvalidLock(format!(
                    "{}: an https entry needs its sha256",
                    entry.id
                )));
            };
            let bytes = crate::remote::download(&p.location, options).await?;
            let found = crate::remote::sha256_hex(&bytes);
            if found != *recorded {
                return Err(mismatch("archive's SHA-256", recorded, &found));
            }
            let name = p.location.split(['?', '#']).next().unwrap_or("");
            let format = c2_bundle_collector::ArchiveFormat::from_path(&PathBuf::from(name))
                .ok_or_else(|| {
                    SourceError::Unsupported(format!("{}: {name} is no archive", entry.id))
                })?;
            let bundle =
                c2_bundle_collector::collect_archive_bytes(&bytes, format, &options.collect);
            let request = InstallRequest::new(SourceIdentity::archive(&bytes));
            Fetched::new(bundle, request, options)
        }
        other => {
            return Err(SourceError::InvalidLock(format!(
                "{}: provenance kind {} cannot be fetched again",
                entry.id,
                other.as_str()
            )));
        }
    };
    if fetched.bundle.digest != entry.digest {
        return Err(mismatch(
            "content digest",
            &entry.digest,
            &fetched.bundle.digest,
        ));
    }
    let name = fetched.bundle.name().unwrap_or("(no name)");
    let id = c2_bundle_collector::installed_id(name, &entry.source);
    if name != entry.name || id != entry.id {
        return Err(SourceError::InvalidLock(format!(
            "{}: the fetched bundle is {name}, installed as {id}, not {} as {}; nothing was stored",
            entry.id, entry.name, entry.id
        )));
    }
    let at = fetched.request.installed_at;
    let mut provenance = fetched
        .request
        .provenance
        .take()
        .unwrap_or_else(|| p.clone());
    provenance.catalog.clone_from(&p.catalog);
    provenance.installed_at = c2_bundle_collector::rfc3339(at);
    fetched.request.provenance = Some(provenance);
    fetched.request.source = entry.source.clone();
    fetched.request.origin.clone_from(&p.catalog);
    Ok(fetched)
}

/// Why a locked npm spec is not one of the two forms a fetch records, if it is not: an
/// absolute package directory or tarball, or a registry name at an exact version. Git, URL,
/// `file:`, alias and tag specs are refused like a catalog's.
pub(crate) fn npm_refusal(location: &str) -> Option<String> {
    if location.starts_with('/') {
        return None;
    }
    if location.starts_with('.') {
        return Some(format!("`{location}` is a relative path"));
    }
    match location.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() => {
            crate::catalog::npm_spec_refusal(name, Some(version))
        }
        _ => crate::catalog::npm_spec_refusal(location, None),
    }
}
