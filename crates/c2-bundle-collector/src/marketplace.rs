//! Cross-checking a `marketplace.json` catalog against the local bundles it lists (a Claude
//! Code or Codex catalog file is validated by its own format's rules only). A `local`
//! path is resolved under the catalog's directory without following symlinks: one that is or
//! passes through a symlink refuses the entry, wherever the link points.

use std::path::{Path, PathBuf};

use c2_manifest::{Marketplace, MarketplaceSource};

use crate::bundle::{CollectedBundle, collect_dir, from_document};
use crate::diagnostic::{Diagnostic, codes};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::walk::{SubdirectoryRefusal, read_file_bounded, resolve_subdirectory};

/// A validated catalog and its checked `local` entries. Valid iff no diagnostic is an error.
#[derive(Debug)]
pub struct MarketplaceCheck {
    /// Present when the catalog document itself is valid.
    pub marketplace: Option<Marketplace>,
    /// Catalog findings (file = the catalog's file name) and one finding per bad entry.
    pub diagnostics: Vec<Diagnostic>,
    /// Every `local` entry with the bundle collected from it.
    pub entries: Vec<CheckedEntry>,
}

impl MarketplaceCheck {
    /// No diagnostic is an error.
    pub fn is_valid(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// One `local` catalog entry and what was found at its path.
#[derive(Debug)]
pub struct CheckedEntry {
    /// The entry's `name`.
    pub name: String,
    /// The entry's `version`.
    pub version: String,
    /// The entry's path resolved against the catalog's directory.
    pub path: PathBuf,
    /// `None` when the path is not a readable directory.
    pub bundle: Option<CollectedBundle>,
}

/// Validates the catalog at `path`, collects each `local` entry (relative to the catalog's
/// directory) and requires its bundle to be valid with the entry's name and version. Other
/// source kinds are only validated as catalog data: fetching them is the host's business.
pub fn check_marketplace(path: &Path, limits: &Limits) -> Result<MarketplaceCheck> {
    let file_name = path.file_name().map_or_else(
        || "marketplace.json".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns reading catalog files"
    )]
    let file = std::fs::File::open(path).map_err(Error::io("open", path))?;
    let bytes = read_file_bounded(file, limits.max_file_bytes).map_err(Error::io("read", path))?;
    let mut check = MarketplaceCheck {
        marketplace: None,
        diagnostics: Vec::new(),
        entries: Vec::new(),
    };
    if bytes.len() as u64 > limits.max_file_bytes {
        check.diagnostics.push(
            Diagnostic::error(
                codes::LIMIT_FILE_SIZE,
                file_name.clone(),
                format!(
                    "file size limit ({} bytes) exceeded by {file_name}",
                    limits.max_file_bytes
                ),
            )
            .with_help("split the catalog"),
        );
        return Ok(check);
    }
    let source = String::from_utf8_lossy(&bytes);
    // A Claude Code or Codex catalog is read by its own rules (c2-manifest's
    // `validate_catalog`); its bundles are checked when an entry is installed.
    let format = c2_manifest::CatalogFormat::from_path(&path.to_string_lossy())
        .map_or_else(|| c2_manifest::CatalogFormat::sniff(&source), |(f, _)| f);
    if format != c2_manifest::CatalogFormat::C2 {
        let report = c2_manifest::validate_catalog(&source, format);
        let found = report.diagnostics.into_iter();
        check
            .diagnostics
            .extend(found.map(|d| from_document(d, &file_name)));
        return Ok(check);
    }
    let report = c2_manifest::validate_marketplace(&source);
    check.diagnostics.extend(
        report
            .diagnostics
            .into_iter()
            .map(|d| from_document(d, &file_name)),
    );
    let Some(marketplace) = report.marketplace else {
        return Ok(check);
    };
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    for entry in &marketplace.plugins {
        let MarketplaceSource::Local { path: local } = &entry.source else {
            continue;
        };
        let bundle_path = base.join(local);
        let label = format!("{} ({local})", entry.name);
        // The entry must name a real directory under the catalog's: a symlink on the way
        // would validate some other tree than the one the catalog ships.
        let plain: Vec<&str> = local
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        let bundle = match resolve_subdirectory(base, &plain.join("/")) {
            Ok(resolved) => collect_dir(&resolved, limits).ok(),
            Err(why @ SubdirectoryRefusal::Symlink(_))
            | Err(why @ SubdirectoryRefusal::NotPlain) => {
                check.diagnostics.push(entry_invalid(
                    &file_name,
                    format!("entry {label} cannot be collected: {why}"),
                ));
                check.entries.push(CheckedEntry {
                    name: entry.name.clone(),
                    version: entry.version.clone(),
                    path: bundle_path,
                    bundle: None,
                });
                continue;
            }
            Err(_) => None,
        };
        match &bundle {
            None => check.diagnostics.push(entry_invalid(
                &file_name,
                format!("entry {label} is not a readable bundle directory"),
            )),
            Some(bundle) if !bundle.is_valid() => check.diagnostics.push(entry_invalid(
                &file_name,
                format!(
                    "entry {label} points to an invalid bundle ({} error(s))",
                    bundle.error_count()
                ),
            )),
            Some(bundle) => {
                // A bundle without a version can never match: a catalog entry needs one.
                let found = (
                    bundle.name().unwrap_or_default(),
                    bundle.version().unwrap_or("(no version)"),
                );
                if found != (entry.name.as_str(), entry.version.as_str()) {
                    check.diagnostics.push(
                        Diagnostic::error(
                            codes::MARKETPLACE_MISMATCH,
                            file_name.clone(),
                            format!(
                                "entry {} {} does not match its bundle {local}, which is {} {}",
                                entry.name, entry.version, found.0, found.1
                            ),
                        )
                        .with_help(
                            "make the entry's name and version equal the bundle's plugin.json",
                        ),
                    );
                }
            }
        }
        check.entries.push(CheckedEntry {
            name: entry.name.clone(),
            version: entry.version.clone(),
            path: bundle_path,
            bundle,
        });
    }
    check.marketplace = Some(marketplace);
    Ok(check)
}

fn entry_invalid(file: &str, message: String) -> Diagnostic {
    Diagnostic::error(codes::MARKETPLACE_ENTRY_INVALID, file.to_owned(), message)
        .with_help("validate the entry's bundle directory and fix it, or fix the entry's path")
}
