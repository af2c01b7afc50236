//! The bisect state file, `policy.bisect.json` beside the policy document: written atomically
//! under the policy lock, so a restart (or another host on the same plugins directory) sees
//! the same search.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Bisection;
use crate::error::Error;
use crate::fsio;

/// The bisect state, inside the plugins directory.
pub const BISECT_FILE: &str = "policy.bisect.json";

/// The only state-file format this crate reads and writes.
const FORMAT: u32 = 1;

/// How to give a bundle back the enablement bisect took from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Restore {
    /// Its entry said enabled.
    Enable,
    /// Its project entry followed the user's choice.
    Inherit,
}

/// One bisect in progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BisectRecord {
    /// Always the current format.
    pub format: u32,
    /// The normalized project key, or `None` for the user scope.
    pub project: Option<String>,
    /// The policy revision in force when the bisect started.
    pub started_from: u64,
    /// The policy revision bisect itself wrote last; another revision in force means someone
    /// else changed policy meanwhile.
    pub last_written: u64,
    /// Enabled bundles left out of the search (`--keep`).
    pub kept: Vec<String>,
    /// The bundles bisect disabled and has not re-enabled, with how to restore each.
    pub disabled: BTreeMap<String, Restore>,
    /// The search.
    pub bisection: Bisection,
}

impl BisectRecord {
    /// A new record for a search that starts at policy revision `started_from`.
    pub fn new(project: Option<String>, started_from: u64, bisection: Bisection) -> Self {
        Self {
            format: FORMAT,
            project,
            started_from,
            last_written: started_from,
            kept: Vec::new(),
            disabled: BTreeMap::new(),
            bisection,
        }
    }
}

/// Reads, writes and removes [`BISECT_FILE`] in one plugins directory.
#[derive(Debug, Clone)]
pub struct BisectFile {
    dir: PathBuf,
}

impl BisectFile {
    /// The state file of the plugins directory `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Its path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(BISECT_FILE)
    }

    /// The bisect in progress, if any.
    pub fn load(&self) -> Result<Option<BisectRecord>, Error> {
        let path = self.path();
        match fsio::read(&path) {
            fsio::Read::Missing => Ok(None),
            fsio::Read::Unreadable(reason) => Err(Error::BisectUnusable { path, reason }),
            fsio::Read::Bytes(bytes) => {
                let record: BisectRecord =
                    serde_json::from_slice(&bytes).map_err(|error| Error::BisectUnusable {
                        path: path.clone(),
                        reason: error.to_string(),
                    })?;
                if record.format != FORMAT {
                    return Err(Error::BisectUnusable {
                        path,
                        reason: format!("format {} is not {FORMAT}", record.format),
                    });
                }
                Ok(Some(record))
            }
        }
    }

    /// Replaces the state atomically, under the policy lock.
    pub fn save(&self, record: &BisectRecord) -> Result<(), Error> {
        let mut bytes = serde_json::to_vec_pretty(record).map_err(Error::Encode)?;
        bytes.push(b'\n');
        let _lock = fsio::lock(&self.dir)?;
        fsio::write_atomic(&self.path(), &bytes)
    }

    /// Ends the bisect: removes the state (nothing to do when there is none).
    pub fn remove(&self) -> Result<(), Error> {
        let _lock = fsio::lock(&self.dir)?;
        fsio::remove(&self.path())
    }
}
