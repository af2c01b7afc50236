use c2_manifest::{ManifestOptions, SkillOptions};
use serde::Serialize;

/// Bounds on what collection will read. Exceeding one refuses the bundle with a diagnostic
/// that names the limit and the path; nothing is ever truncated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Stored files in a bundle.
    pub max_files: usize,
    /// Bytes in one file.
    pub max_file_bytes: u64,
    /// Bytes in all stored files together (for an archive: expanded bytes, counted while inflating).
    pub max_bundle_bytes: u64,
    /// Path components of any entry relative to the root (`plugin.json` has depth 1).
    pub max_depth: usize,
    /// Entries examined: stored files, folders, symlinks and everything refused or skipped.
    /// It bounds the work and memory spent on a tree of empty folders or links.
    pub max_entries: usize,
    /// Bytes in one path component.
    pub max_name_bytes: usize,
    /// Bytes read from an archive file, and bytes produced by inflating a whole `.tar.gz`
    /// stream (contents plus tar headers and padding).
    pub max_archive_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_files: 5_000,
            max_file_bytes: 4 * 1024 * 1024,
            max_bundle_bytes: 20 * 1024 * 1024,
            max_depth: 12,
            max_entries: 10_000,
            max_name_bytes: 255,
            // The bundle limit plus room for one 512-byte header and up to 511 bytes of
            // padding per file at the file-count limit, rounded up.
            max_archive_bytes: 32 * 1024 * 1024,
        }
    }
}

/// Everything [`crate::collect`] and its siblings apply: the reading [`Limits`] and the
/// validators' options (an embedder's reserved command namespaces, name and length limits).
/// `Default` is the project's decisions for all three.
///
/// The collect functions take `impl Into<CollectOptions>`: a `CollectOptions` (by value or by
/// reference), or `&Limits` alone for the default manifest and skill options:
///
/// ```
/// use c2_bundle_collector::{CollectOptions, Limits};
/// use c2_manifest::ManifestOptions;
///
/// let mut manifest = ManifestOptions::default();
/// manifest.reserved_namespaces.insert("acme".to_owned());
/// let options = CollectOptions::new()
///     .with_limits(Limits { max_files: 100, ..Limits::default() })
///     .with_manifest(manifest);
/// assert_eq!(options.limits.max_files, 100);
/// assert_eq!(CollectOptions::from(&Limits::default()), CollectOptions::default());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectOptions {
    /// Bounds on what is read.
    pub limits: Limits,
    /// Options for validating `plugin.json`.
    pub manifest: ManifestOptions,
    /// Options for validating each `skills/<name>/SKILL.md`.
    pub skills: SkillOptions,
}

impl CollectOptions {
    /// The defaults: [`Limits::default`], [`ManifestOptions::default`], [`SkillOptions::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The same options with other reading limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same options with other manifest options.
    #[must_use]
    pub fn with_manifest(mut self, manifest: ManifestOptions) -> Self {
        self.manifest = manifest;
        self
    }

    /// The same options with other skill options.
    #[must_use]
    pub fn with_skills(mut self, skills: SkillOptions) -> Self {
        self.skills = skills;
        self
    }
}

impl From<&Limits> for CollectOptions {
    fn from(limits: &Limits) -> Self {
        Self::new().with_limits(*limits)
    }
}

impl From<&CollectOptions> for CollectOptions {
    fn from(options: &CollectOptions) -> Self {
        options.clone()
    }
}
