pub use c2_manifest::Severity;

/// One refusal or warning, as data: the shared [`c2_manifest::BundleDiagnostic`] (this crate
/// and c2-manifest use one type, so one renderer, [`c2_manifest::render_diagnostic`], shows
/// every finding). `code` is stable kebab-case; `file` is the path relative to the bundle root
/// when the finding concerns one file (manifest findings use `plugin.json`).
pub use c2_manifest::BundleDiagnostic as Diagnostic;

/// The stable codes this crate emits (manifest codes come from c2-manifest).
pub mod codes {
    pub const LIMIT_FILES: &str = "limit-files";
    pub const LIMIT_FILE_SIZE: &str = "limit-file-size";
    pub const LIMIT_BUNDLE_SIZE: &str = "limit-bundle-size";
    pub const LIMIT_DEPTH: &str = "limit-depth";
    pub const LIMIT_ENTRIES: &str = "limit-entries";
    pub const LIMIT_NAME_LENGTH: &str = "limit-name-length";
    pub const LIMIT_ARCHIVE_SIZE: &str = "limit-archive-size";
    pub const NON_UTF8_NAME: &str = "non-utf8-name";
    pub const SPECIAL_FILE: &str = "special-file";
    pub const SKIPPED_DIRECTORY: &str = "skipped-directory";
    pub const SYMLINK_ABSOLUTE: &str = "symlink-absolute";
    pub const SYMLINK_ESCAPES: &str = "symlink-escapes";
    pub const SYMLINK_LOOP: &str = "symlink-loop";
    pub const SYMLINK_COMPONENT_PATH: &str = "symlink-component-path";
    pub const SYMLINK_SKIPPED: &str = "symlink-skipped";
    pub const READ_FAILED: &str = "read-failed";
    pub const MISSING_MANIFEST: &str = "missing-manifest";
    pub const MANIFEST_NOT_UTF8: &str = "manifest-not-utf8";
    pub const ARCHIVE_WRAPPED_ROOT: &str = "archive-wrapped-root";
    pub const ARCHIVE_UNSAFE_PATH: &str = "archive-unsafe-path";
    pub const ARCHIVE_LINK: &str = "archive-link";
    pub const ARCHIVE_SPECIAL_ENTRY: &str = "archive-special-entry";
    pub const ARCHIVE_DUPLICATE_ENTRY: &str = "archive-duplicate-entry";
    pub const ARCHIVE_UNSUPPORTED_COMPRESSION: &str = "archive-unsupported-compression";
    pub const ARCHIVE_MALFORMED: &str = "archive-malformed";
    pub const COMMAND_MISSING: &str = "command-missing";
    pub const COMMAND_NOT_REGULAR: &str = "command-not-regular";
    pub const COMMAND_NOT_EXECUTABLE: &str = "command-not-executable";
    /// A fixed component location of the wrong kind: that component type is disabled.
    pub const COMPONENT_WRONG_KIND: &str = "component-wrong-kind";
    pub const SKILL_INVALID: &str = "skill-invalid";
    pub const MCP_INVALID: &str = "mcp-invalid";
    pub const SCAFFOLD_METADATA_INVALID: &str = "scaffold-metadata-invalid";
    pub const UNSUPPORTED_COMPONENT: &str = "unsupported-component";
    pub const MARKETPLACE_MISMATCH: &str = "marketplace-mismatch";
    pub const MARKETPLACE_ENTRY_INVALID: &str = "marketplace-entry-invalid";
}
