//! The content digest and the installed-id rule.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tree::FileEntry;

/// Domain separation: a digest of this encoding can never equal one of another encoding.
const CONTENT_DOMAIN: &[u8] = b"c2-bundle-content-v1\0";
const SOURCE_DOMAIN: &[u8] = b"c2-bundle-source-v1\0";

/// Lowercase hex BLAKE3 over every stored file in path order. Each file contributes its
/// path (u64 little-endian length, then UTF-8 bytes), one executable byte (0 or 1) and its
/// content (u64 little-endian length, then bytes), after the file count, so no two distinct
/// bundles share an encoding.
pub fn content_digest(files: &BTreeMap<String, FileEntry>) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(CONTENT_DOMAIN);
    hasher.update(&(files.len() as u64).to_le_bytes());
    for (path, entry) in files {
        hasher.update(&(path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update(&[u8::from(entry.executable)]);
        hasher.update(&(entry.bytes.len() as u64).to_le_bytes());
        hasher.update(&entry.bytes);
    }
    hasher.finalize().to_hex().to_string()
}

/// Where a bundle came from; its identity fixes the installed id, so reinstalling from the
/// same place updates the same installed bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum SourceIdentity {
    /// A local directory.
    Local {
        /// The directory as an absolute path with symlinks resolved.
        path: PathBuf,
    },
    /// An archive: the same archive anywhere is the same source.
    Archive {
        /// BLAKE3 of the archive bytes, in hex.
        digest: String,
    },
    /// A git repository and the bundle's subdirectory in it.
    Git {
        /// The repository URL, without a trailing `/`.
        url: String,
        /// The bundle's subdirectory in the repository (empty for the root).
        subdir: String,
    },
    /// An entry of a `marketplace.json` catalog. Whatever source and version the entry
    /// names, updating it replaces the same installed bundle.
    Catalog {
        /// The catalog's location (a normalized path or URL).
        catalog: String,
        /// The entry's name.
        entry: String,
    },
}

impl SourceIdentity {
    /// Normalizes a local bundle directory: absolute, symlinks resolved.
    pub fn local(path: &Path) -> Result<Self> {
        let path = path.canonicalize().map_err(Error::io("resolve", path))?;
        Ok(Self::Local { path })
    }

    /// The identity of an archive from its bytes.
    pub fn archive(bytes: &[u8]) -> Self {
        Self::Archive {
            digest: blake3::hash(bytes).to_hex().to_string(),
        }
    }

    /// A git source. The subdirectory is normalized (no leading, trailing or doubled `/`,
    /// no `.`) so `a/b/`, `/a/b` and `./a//b` are one source.
    pub fn git(url: &str, subdir: &str) -> Self {
        let subdir = subdir
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect::<Vec<_>>()
            .join("/");
        Self::Git {
            url: url.trim_end_matches('/').to_owned(),
            subdir,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = SOURCE_DOMAIN.to_vec();
        let mut field = |bytes: &[u8]| {
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        };
        match self {
            Self::Local { path } => {
                field(b"local");
                field(path.as_os_str().as_encoded_bytes());
            }
            Self::Archive { digest } => {
                field(b"archive");
                field(digest.as_bytes());
            }
            Self::Git { url, subdir } => {
                field(b"git");
                field(url.as_bytes());
                field(subdir.as_bytes());
            }
            Self::Catalog { catalog, entry } => {
                field(b"catalog");
                field(catalog.as_bytes());
                field(entry.as_bytes());
            }
        }
        out
    }
}

/// `<name>-<first 8 hex of BLAKE3(source identity)>`.
pub fn installed_id(name: &str, source: &SourceIdentity) -> String {
    let hash = blake3::hash(&source.encode()).to_hex();
    format!("{name}-{}", &hash[..8])
}

/// The name an [`installed_id`] was made from; `None` when `id` does not have its shape.
pub fn installed_name(id: &str) -> Option<&str> {
    let (name, hash) = id.rsplit_once('-')?;
    let hex = hash.len() == 8 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (hex && !name.is_empty()).then_some(name)
}
