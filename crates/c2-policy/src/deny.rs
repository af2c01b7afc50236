//! The kill switch: the user's deny list (`denylist.json` in the plugins directory), the
//! managed policy file an embedder points at (deny entries the user cannot remove, and allow
//! lists of sources), and the one matching mechanism both use.
//!
//! A [`Subject`] is what a bundle is matched by: its content digest, installed id, manifest
//! name, publisher and source. [`DenyLists::denied`] names the first entry that matches
//! (managed entries first); [`DenyLists::admit`] is the install gate: a denied bundle, a source
//! outside a managed allow list, or an unusable list refuses the install.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::fsio;
use crate::watch::bump_generation_locked;

/// The user's deny list's file name, in the plugins directory.
pub const DENY_FILE: &str = "denylist.json";

/// The only schema version of the deny list and the managed policy file.
const DENY_SCHEMA: u32 = 1;

/// The shortest digest prefix a `digest` entry may hold (a full digest is 64 hex digits).
const MIN_DIGEST_PREFIX: usize = 12;

/// What a deny entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DenyKind {
    /// The content digest (lowercase hex), or a prefix of at least 12 digits of it.
    Digest,
    /// The installed id.
    Id,
    /// The manifest `name` (ignoring ASCII case).
    Name,
    /// Where the bundle came from: a path or URL prefix, or a catalog's name or location.
    Source,
    /// The manifest `author`'s name, email or URL (ignoring ASCII case).
    Publisher,
}

impl DenyKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [DenyKind] = &[
        DenyKind::Digest,
        DenyKind::Id,
        DenyKind::Name,
        DenyKind::Source,
        DenyKind::Publisher,
    ];

    /// The kind as written in the files and on a command line.
    pub fn as_str(self) -> &'static str {
        match self {
            DenyKind::Digest => "digest",
            DenyKind::Id => "id",
            DenyKind::Name => "name",
            DenyKind::Source => "source",
            DenyKind::Publisher => "publisher",
        }
    }

    /// The kind written as `text`, if there is one.
    pub fn from_name(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.as_str() == text)
    }
}

impl fmt::Display for DenyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// One deny entry: a kind, the value it matches and why it is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DenyEntry {
    /// What the value is matched against.
    pub kind: DenyKind,
    /// The value.
    pub value: String,
    /// Why it is denied, for the person who meets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DenyEntry {
    /// An entry of `kind` for `value` (trimmed; a digest in lowercase), refused when the value
    /// cannot match anything: empty, or a digest that is not at least 12 hex digits.
    pub fn new(kind: DenyKind, value: &str, reason: Option<String>) -> Result<Self, Error> {
        let value = value.trim();
        let value = match kind {
            DenyKind::Digest => value.to_ascii_lowercase(),
            _ => value.to_owned(),
        };
        let usable = match kind {
            DenyKind::Digest => {
                value.len() >= MIN_DIGEST_PREFIX && value.bytes().all(|b| b.is_ascii_hexdigit())
            }
            _ => !value.is_empty(),
        };
        if !usable {
            return Err(Error::InvalidDenyEntry { kind, value });
        }
        Ok(Self {
            kind,
            value,
            reason: reason.filter(|r| !r.trim().is_empty()),
        })
    }

    /// Whether this entry matches `subject`.
    pub fn matches(&self, subject: &Subject) -> bool {
        let value = self.value.as_str();
        match self.kind {
            DenyKind::Digest => {
                value.len() >= MIN_DIGEST_PREFIX
                    && subject.digest.to_ascii_lowercase().starts_with(value)
            }
            DenyKind::Id => subject.id == value,
            DenyKind::Name => subject.name.eq_ignore_ascii_case(value),
            DenyKind::Publisher => subject
                .publisher
                .iter()
                .any(|p| p.trim().eq_ignore_ascii_case(value)),
            DenyKind::Source => subject
                .source
                .texts()
                .iter()
                .any(|t| source_matches(value, t)),
        }
    }

    fn same(&self, kind: DenyKind, value: &str) -> bool {
        self.kind == kind && self.value == value
    }
}

impl fmt::Display for DenyEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.kind, self.value)
    }
}

/// Whether `pattern` names `text`: the same text, or a prefix of it that ends at a boundary
/// (`/`, `#`, `@`, `:`), so `https://git.example/team` names `https://git.example/team/tool`
/// but not `https://git.example/teammate`. URL schemes and hosts compare ignoring ASCII case.
pub fn source_matches(pattern: &str, text: &str) -> bool {
    let pattern = pattern.trim_end_matches('/');
    if pattern.is_empty() {
        return false;
    }
    let (pattern, text) = (fold_host(pattern), fold_host(text));
    match text.strip_prefix(pattern.as_str()) {
        Some(rest) => rest.is_empty() || rest.starts_with(['/', '#', '@', ':']),
        None => false,
    }
}

/// A URL with its scheme and host in lowercase; anything else unchanged.
fn fold_host(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '#', '?']).unwrap_or(rest.len());
            format!(
                "{}://{}{}",
                scheme.to_ascii_lowercase(),
                rest[..end].to_ascii_lowercase(),
                &rest[end..]
            )
        }
        None => text.to_owned(),
    }
}

/// The host of a git URL (`https://HOST/...`, `ssh://user@HOST:port/...`, `user@HOST:path`),
/// lowercase; `None` for a local path or `file://` URL.
pub fn git_host(url: &str) -> Option<String> {
    let url = url.strip_prefix("git+").unwrap_or(url);
    let authority = match url.split_once("://") {
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("file") => return None,
        Some((_, rest)) => rest.split(['/', '?', '#']).next().unwrap_or_default(),
        // scp-like `user@host:path`.
        None => url.split_once(':').map(|(host, _)| host)?,
    };
    let host = authority.rsplit('@').next().unwrap_or_default();
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    (!host.is_empty() && !host.contains(['/', '\\'])).then(|| host.to_ascii_lowercase())
}

/// Where a bundle came from, as far as matching is concerned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceRef {
    /// Not known.
    #[default]
    Unknown,
    /// A local directory (absolute path).
    Local(String),
    /// An archive, by the digest of its bytes.
    Archive(String),
    /// A git repository URL.
    Git(String),
    /// An npm package name.
    Npm(String),
    /// An entry of a catalog.
    Catalog {
        /// The catalog's location (path or URL).
        location: String,
        /// The catalog's name, when it has one.
        name: Option<String>,
        /// The entry's own source, when it is recorded.
        inner: Option<Box<SourceRef>>,
    },
}

impl SourceRef {
    /// The texts a `source` entry is matched against.
    fn texts(&self) -> Vec<&str> {
        match self {
            SourceRef::Unknown => Vec::new(),
            SourceRef::Local(text)
            | SourceRef::Archive(text)
            | SourceRef::Git(text)
            | SourceRef::Npm(text) => vec![text.as_str()],
            SourceRef::Catalog {
                location,
                name,
                inner,
            } => {
                let mut texts = vec![location.as_str()];
                texts.extend(name.as_deref());
                texts.extend(inner.iter().flat_map(|inner| inner.texts()));
                texts
            }
        }
    }
}

/// What a bundle is matched by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    /// The content digest.
    pub digest: String,
    /// The installed id.
    pub id: String,
    /// The manifest `name`.
    pub name: String,
    /// The manifest author's name, email and URL, those it declares.
    pub publisher: Vec<String>,
    /// Where it came from.
    pub source: SourceRef,
}

impl Subject {
    /// The subject of an installed record as the bundle store writes it (`installed.json`:
    /// `id`, `name`, `digest`, `source` tagged by `kind` (`local` `path`, `archive` `digest`,
    /// `git` `url`, `catalog` `catalog`), `origin.catalogName`) and the manifest's `author`
    /// object (`name`, `email`, `url`). Fields it lacks are left empty.
    pub fn from_record(record: &serde_json::Value, author: &serde_json::Value) -> Self {
        let text = |value: &serde_json::Value, key: &str| {
            value
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let source = record.get("source").unwrap_or(&serde_json::Value::Null);
        let field = |key: &str| text(source, key).unwrap_or_default();
        let source = match source.get("kind").and_then(serde_json::Value::as_str) {
            Some("local") => SourceRef::Local(field("path")),
            Some("archive") => SourceRef::Archive(field("digest")),
            Some("git") => SourceRef::Git(field("url")),
            Some("npm") => SourceRef::Npm(field("package")),
            Some("catalog") => SourceRef::Catalog {
                location: field("catalog"),
                name: record.get("origin").and_then(|o| text(o, "catalogName")),
                inner: None,
            },
            _ => SourceRef::Unknown,
        };
        Self {
            digest: text(record, "digest").unwrap_or_default(),
            id: text(record, "id").unwrap_or_default(),
            name: text(record, "name").unwrap_or_default(),
            publisher: ["name", "email", "url"]
                .iter()
                .filter_map(|key| text(author, key))
                .collect(),
            source,
        }
    }
}

/// Which list an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ListOrigin {
    /// The user's deny list (`denylist.json`).
    User,
    /// The managed policy file, which the user cannot change.
    Managed,
}

impl fmt::Display for ListOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            ListOrigin::User => "user",
            ListOrigin::Managed => "managed",
        })
    }
}

/// A deny entry with the list it is on: what matched a bundle, or one row of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DenyMatch {
    /// The entry.
    #[serde(flatten)]
    pub entry: DenyEntry,
    /// The list it is on.
    pub origin: ListOrigin,
}

impl fmt::Display for DenyMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on the {} deny list", self.entry, self.origin)?;
        if let Some(reason) = &self.entry.reason {
            write!(f, " ({reason})")?;
        }
        Ok(())
    }
}

/// The managed allow lists of sources. A list that is absent allows everything of its kind;
/// one that is present (even empty) allows only what it names. Local directories and archives
/// are not constrained by them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AllowLists {
    /// Catalogs, by name or location (matched like a `source` entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogs: Option<Vec<String>>,
    /// Hosts git sources may come from (exact host names, ignoring case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_hosts: Option<Vec<String>>,
    /// npm scopes packages may come from (`@scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm_scopes: Option<Vec<String>>,
}

impl AllowLists {
    /// Why `source` is outside these lists, or `None` when they allow it.
    pub fn refusal(&self, source: &SourceRef) -> Option<String> {
        let outside = |list: &Option<Vec<String>>, what: &str, value: &str, ok: bool| {
            (list.is_some() && !ok).then(|| {
                format!(
                    "{what} `{value}` is not on the managed allow list ({})",
                    list.as_deref().unwrap_or_default().join(", ")
                )
            })
        };
        match source {
            SourceRef::Unknown | SourceRef::Local(_) | SourceRef::Archive(_) => None,
            SourceRef::Git(url) => {
                let host = git_host(url);
                let ok = host.as_deref().is_some_and(|host| {
                    self.git_hosts
                        .iter()
                        .flatten()
                        .any(|allowed| allowed.trim().eq_ignore_ascii_case(host))
                });
                outside(
                    &self.git_hosts,
                    "git host",
                    host.as_deref().unwrap_or(url),
                    ok,
                )
            }
            SourceRef::Npm(package) => {
                let scope = package
                    .strip_prefix('@')
                    .and_then(|rest| rest.split_once('/'))
                    .map(|(scope, _)| format!("@{scope}"));
                let ok = scope.as_deref().is_some_and(|scope| {
                    self.npm_scopes.iter().flatten().any(|allowed| {
                        let allowed = allowed.trim();
                        allowed.trim_start_matches('@') == scope.trim_start_matches('@')
                    })
                });
                outside(&self.npm_scopes, "npm package", package, ok)
            }
            SourceRef::Catalog {
                location,
                name,
                inner,
            } => {
                let ok = self.catalogs.iter().flatten().any(|allowed| {
                    source_matches(allowed, location)
                        || name.as_deref().is_some_and(|n| allowed.trim() == n)
                });
                outside(
                    &self.catalogs,
                    "catalog",
                    name.as_deref().unwrap_or(location),
                    ok,
                )
                .or_else(|| inner.as_deref().and_then(|inner| self.refusal(inner)))
            }
        }
    }
}

/// The user's deny list file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UserFile {
    schema_version: u32,
    #[serde(default)]
    deny: Vec<DenyEntry>,
}

/// The managed policy file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManagedPolicy {
    /// Always 1.
    pub schema_version: u32,
    /// Deny entries the user cannot remove.
    #[serde(default)]
    pub deny: Vec<DenyEntry>,
    /// Allow lists of sources.
    #[serde(default)]
    pub allow: AllowLists,
}

/// A list file as loaded: its entries, or why it cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Loaded<T> {
    Usable(T),
    Unusable { path: PathBuf, reason: String },
}

impl<T> Loaded<T> {
    fn usable(&self) -> Option<&T> {
        match self {
            Loaded::Usable(value) => Some(value),
            Loaded::Unusable { .. } => None,
        }
    }

    fn problem(&self) -> Option<Error> {
        match self {
            Loaded::Usable(_) => None,
            Loaded::Unusable { path, reason } => Some(Error::UnusableList {
                path: path.clone(),
                reason: reason.clone(),
            }),
        }
    }
}

fn read_list<T: serde::de::DeserializeOwned>(
    path: &Path,
    schema: impl Fn(&T) -> u32,
) -> Option<Loaded<T>> {
    let unusable = |reason: String| Loaded::Unusable {
        path: path.to_owned(),
        reason,
    };
    Some(match fsio::read(path) {
        fsio::Read::Missing => return None,
        fsio::Read::Unreadable(reason) => unusable(reason),
        fsio::Read::Bytes(bytes) => match serde_json::from_slice::<T>(&bytes) {
            Ok(file) if schema(&file) == DENY_SCHEMA => Loaded::Usable(file),
            Ok(file) => unusable(format!("schemaVersion {} is not 1", schema(&file))),
            Err(error) => unusable(error.to_string()),
        },
    })
}

fn read_user(plugins_dir: &Path) -> Loaded<Vec<DenyEntry>> {
    match read_list::<UserFile>(&plugins_dir.join(DENY_FILE), |f| f.schema_version) {
        None => Loaded::Usable(Vec::new()),
        Some(Loaded::Usable(file)) => Loaded::Usable(file.deny),
        Some(Loaded::Unusable { path, reason }) => Loaded::Unusable { path, reason },
    }
}

/// The user's deny list and the managed policy of one plugins directory, as last loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyLists {
    user: Loaded<Vec<DenyEntry>>,
    /// `None` when no managed file is configured or it does not exist.
    managed: Option<Loaded<ManagedPolicy>>,
}

impl DenyLists {
    /// Reads `denylist.json` in `plugins_dir` and the managed policy file, when one is named.
    /// Never fails: a missing file is an empty list, an unusable one is remembered
    /// ([`DenyLists::problems`]) and refuses installs.
    pub fn load(plugins_dir: &Path, managed: Option<&Path>) -> Self {
        Self {
            user: read_user(plugins_dir),
            managed: managed.and_then(|path| {
                read_list::<ManagedPolicy>(path, |f: &ManagedPolicy| f.schema_version)
            }),
        }
    }

    /// Whether no deny entry is in force (a matching is then needless).
    pub fn is_empty(&self) -> bool {
        let managed = self.managed.as_ref().and_then(Loaded::usable);
        managed.is_none_or(|m| m.deny.is_empty()) && self.user.usable().is_none_or(Vec::is_empty)
    }

    /// Every entry, managed ones first.
    pub fn entries(&self) -> Vec<DenyMatch> {
        let managed = self.managed.as_ref().and_then(Loaded::usable);
        let tagged = |entries: &[DenyEntry], origin| {
            entries
                .iter()
                .map(move |entry| DenyMatch {
                    entry: entry.clone(),
                    origin,
                })
                .collect::<Vec<_>>()
        };
        let mut all = managed.map_or_else(Vec::new, |m| tagged(&m.deny, ListOrigin::Managed));
        all.extend(tagged(
            self.user.usable().map_or(&[][..], Vec::as_slice),
            ListOrigin::User,
        ));
        all
    }

    /// The managed allow lists (all absent when there is no managed file).
    pub fn allow(&self) -> AllowLists {
        self.managed
            .as_ref()
            .and_then(Loaded::usable)
            .map(|m| m.allow.clone())
            .unwrap_or_default()
    }

    /// The list files that cannot be used, and why.
    pub fn problems(&self) -> Vec<Error> {
        self.user
            .problem()
            .into_iter()
            .chain(self.managed.as_ref().and_then(Loaded::problem))
            .collect()
    }

    /// The first entry that matches `subject`, managed entries first.
    pub fn denied(&self, subject: &Subject) -> Option<DenyMatch> {
        self.entries()
            .into_iter()
            .find(|found| found.entry.matches(subject))
    }

    /// The install gate: `subject` may be stored only if both lists are usable, no entry
    /// matches it and the managed allow lists admit its source.
    pub fn admit(&self, subject: &Subject) -> Result<(), Error> {
        if let Some(problem) = self.problems().into_iter().next() {
            return Err(problem);
        }
        if let Some(found) = self.denied(subject) {
            return Err(Error::Denied {
                subject: subject.name.clone(),
                found: Box::new(found),
            });
        }
        self.admit_source(&subject.source)
            .map_err(|error| match error {
                Error::SourceNotAllowed { why, .. } => Error::SourceNotAllowed {
                    subject: subject.name.clone(),
                    why,
                },
                other => other,
            })
    }

    /// The allow lists' half of the gate, for a source not fetched yet (a git URL is judged
    /// before it is cloned).
    pub fn admit_source(&self, source: &SourceRef) -> Result<(), Error> {
        if let Some(problem) = self.managed.as_ref().and_then(Loaded::problem) {
            return Err(problem);
        }
        match self.allow().refusal(source) {
            Some(why) => Err(Error::SourceNotAllowed {
                subject: "the bundle".to_owned(),
                why,
            }),
            None => Ok(()),
        }
    }

    fn managed_entry(&self, kind: DenyKind, value: &str) -> Option<DenyEntry> {
        let managed = self.managed.as_ref().and_then(Loaded::usable)?;
        managed.deny.iter().find(|e| e.same(kind, value)).cloned()
    }
}

/// Adds `entry` to the user's deny list of `plugins_dir` (written atomically under
/// `policy.lock`, then the store generation is bumped so every live host applies it). Returns
/// false when the list already has that kind and value (its reason is replaced).
pub(crate) fn block(plugins_dir: &Path, entry: DenyEntry) -> Result<bool, Error> {
    edit(plugins_dir, |entries| {
        match entries
            .iter_mut()
            .find(|e| e.same(entry.kind, &entry.value))
        {
            Some(existing) => {
                existing.reason = entry.reason.clone();
                Ok(false)
            }
            None => {
                entries.push(entry.clone());
                Ok(true)
            }
        }
    })
}

/// Removes the user's entry of `kind` and `value`; a managed entry cannot be removed.
pub(crate) fn unblock(
    plugins_dir: &Path,
    managed: Option<&Path>,
    kind: DenyKind,
    value: &str,
) -> Result<DenyEntry, Error> {
    let probe = DenyEntry::new(kind, value, None)?;
    let lists = DenyLists::load(plugins_dir, managed);
    if let Some(entry) = lists.managed_entry(kind, &probe.value) {
        return Err(Error::ManagedEntry {
            entry: entry.to_string(),
            path: managed.map(Path::to_path_buf).unwrap_or_default(),
        });
    }
    edit(plugins_dir, |entries| {
        let at = entries
            .iter()
            .position(|e| e.same(kind, &probe.value))
            .ok_or_else(|| Error::NotDenied(probe.to_string()))?;
        Ok(entries.remove(at))
    })
}

/// Reads the user's list under the lock, lets `change` edit it, writes it back and bumps the
/// store generation.
fn edit<T>(
    plugins_dir: &Path,
    change: impl FnOnce(&mut Vec<DenyEntry>) -> Result<T, Error>,
) -> Result<T, Error> {
    let _lock = fsio::lock(plugins_dir)?;
    let mut entries = match read_user(plugins_dir) {
        Loaded::Usable(entries) => entries,
        Loaded::Unusable { path, reason } => return Err(Error::UnusableList { path, reason }),
    };
    let result = change(&mut entries)?;
    let file = UserFile {
        schema_version: DENY_SCHEMA,
        deny: entries,
    };
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(Error::Encode)?;
    bytes.push(b'\n');
    fsio::write_atomic(&plugins_dir.join(DENY_FILE), &bytes)?;
    bump_generation_locked(plugins_dir)?;
    Ok(result)
}
