//! Where the bytes of an installed bundle came from, recorded in `installed.json` beside the
//! content digest. The store only keeps it; c2-sources fills it in when it fetches.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize};

use crate::store::CatalogOrigin;

/// How the bytes were brought in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ProvenanceKind {
    /// A local bundle directory.
    Directory,
    /// A local `.tar.gz`, `.tgz` or `.zip` archive.
    Archive,
    /// A git repository cloned by URL.
    Git,
    /// A GitHub repository (a git clone of `https://github.com/...`).
    Github,
    /// A tarball made by `npm pack` (a registry package or a package directory).
    Npm,
    /// An archive downloaded over https.
    Https,
}

impl ProvenanceKind {
    /// The camelCase name (`directory`, `github`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Directory => "directory",
            Self::Archive => "archive",
            Self::Git => "git",
            Self::Github => "github",
            Self::Npm => "npm",
            Self::Https => "https",
        }
    }
}

/// The npm package a tarball was packed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NpmProvenance {
    /// The package's name, as `npm pack` reported it.
    pub name: String,
    /// The package's version, as `npm pack` reported it.
    pub version: String,
    /// The tarball's Subresource Integrity string (`sha512-<base64>`).
    pub integrity: String,
}

/// Where an installed bundle's bytes came from. Every field but `kind`, `location` and
/// `installedAt` is present only when it applies to that kind of source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct Provenance {
    /// How the bytes were brought in.
    pub kind: ProvenanceKind,
    /// The absolute path, clone URL, download URL or npm package spec fetched.
    pub location: String,
    /// The branch, tag or commit asked for (git and GitHub sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The exact commit checked out (git and GitHub sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The bundle's directory in the repository (git and GitHub sources; empty for the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdir: Option<String>,
    /// The npm package, version and integrity (npm sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<NpmProvenance>,
    /// Lowercase hex SHA-256 of the archive or tarball bytes (archive, https and npm sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The catalog entry that named this source, when installed from a catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogOrigin>,
    /// When it was installed, RFC 3339 in UTC to the second (`2026-01-31T12:00:00Z`); empty
    /// (and left out) in a lock file, which records no time.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub installed_at: String,
}

impl Provenance {
    /// A provenance of `kind` at `location`, installed at `at`; the rest is unset.
    pub fn new(kind: ProvenanceKind, location: impl Into<String>, at: SystemTime) -> Self {
        Self {
            kind,
            location: location.into(),
            reference: None,
            commit: None,
            subdir: None,
            npm: None,
            sha256: None,
            catalog: None,
            installed_at: rfc3339(at),
        }
    }
}

/// `at` as RFC 3339 in UTC to the second; a time before the epoch is the epoch.
pub fn rfc3339(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Eras of 400 years (146,097 days) start on March 1st, so leap days end a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Reads a recorded provenance; a missing or unreadable one (an older store, a newer
/// writer's shape) is unknown provenance, never an error.
pub(crate) fn lenient<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Provenance>, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}
