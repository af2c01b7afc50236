pub use c2_manifest::Severity;

/// One refusal or warning, as data: the shared [`c2_manifest::BundleDiagnostic`] (this crate
/// and c2-manifest use one type, so one renderer, [`c2_manifest::render_diagnostic`], shows
/// every finding). `code` is stable kebab-case; `file` is the path relative to the bundle root
/// when the finding concerns one file (manifest findings use `plugin.json`).
pub use c2_manifest::BundleDiagnostic as Diagnostic;

/// The stable codes this crate emits (manifest codes come from c2-manifest's
/// [`c2_manifest::CODES`]). Each constant's doc says whether it is an error, which refuses the
/// bundle, or a warning.
pub mod codes {
    /// Error: more stored files than [`crate::Limits::max_files`].
    pub const LIMIT_FILES: &str = "limit-files";
    /// Error: one file is larger than [`crate::Limits::max_file_bytes`].
    pub const LIMIT_FILE_SIZE: &str = "limit-file-size";
    /// Error: all stored files together exceed [`crate::Limits::max_bundle_bytes`].
    pub const LIMIT_BUNDLE_SIZE: &str = "limit-bundle-size";
    /// Error: an entry is nested deeper than [`crate::Limits::max_depth`].
    pub const LIMIT_DEPTH: &str = "limit-depth";
    /// Error: more entries examined than [`crate::Limits::max_entries`] (for a zip, counted
    /// from its central directory before anything inflates).
    pub const LIMIT_ENTRIES: &str = "limit-entries";
    /// Error: a path component is longer than [`crate::Limits::max_name_bytes`].
    pub const LIMIT_NAME_LENGTH: &str = "limit-name-length";
    /// Error: the archive, or the inflated `.tar.gz` stream, exceeds
    /// [`crate::Limits::max_archive_bytes`].
    pub const LIMIT_ARCHIVE_SIZE: &str = "limit-archive-size";
    /// Error: a file, folder or archive entry name is not UTF-8.
    pub const NON_UTF8_NAME: &str = "non-utf8-name";
    /// Error: a FIFO, socket or device file in the bundle.
    pub const SPECIAL_FILE: &str = "special-file";
    /// Warning: a folder that is never part of a bundle ([`crate::SKIPPED_DIRECTORIES`],
    /// `.git` for one) was left out.
    pub const SKIPPED_DIRECTORY: &str = "skipped-directory";
    /// Error: a symlink with an absolute target.
    pub const SYMLINK_ABSOLUTE: &str = "symlink-absolute";
    /// Error: a symlink that resolves outside the bundle root.
    pub const SYMLINK_ESCAPES: &str = "symlink-escapes";
    /// Error: a symlink that loops.
    pub const SYMLINK_LOOP: &str = "symlink-loop";
    /// Error: a symlink at, above or below a path components are read from
    /// (`plugin.json`, `mcp.json`, `skills/`, ...) or at an executable the manifest names.
    pub const SYMLINK_COMPONENT_PATH: &str = "symlink-component-path";
    /// Warning: a symlink inside the bundle, elsewhere, left out (symlinks are never stored).
    pub const SYMLINK_SKIPPED: &str = "symlink-skipped";
    /// Error: an entry could not be opened or read (permissions, say, or a symlink swapped in
    /// after the listing, which is never followed).
    pub const READ_FAILED: &str = "read-failed";
    /// Error: no readable `plugin.json` at the bundle root.
    pub const MISSING_MANIFEST: &str = "missing-manifest";
    /// Error: `plugin.json` is not UTF-8.
    pub const MANIFEST_NOT_UTF8: &str = "manifest-not-utf8";
    /// Error: the archive holds its bundle inside one top-level folder instead of at
    /// its root.
    pub const ARCHIVE_WRAPPED_ROOT: &str = "archive-wrapped-root";
    /// Error: an archive entry path is not a plain relative path (absolute, or with a `..`
    /// component, a backslash or a NUL byte).
    pub const ARCHIVE_UNSAFE_PATH: &str = "archive-unsafe-path";
    /// Error: an archive entry is a symlink or hard link.
    pub const ARCHIVE_LINK: &str = "archive-link";
    /// Error: an archive entry is neither a regular file nor a directory.
    pub const ARCHIVE_SPECIAL_ENTRY: &str = "archive-special-entry";
    /// Error: two archive entries have the same path.
    pub const ARCHIVE_DUPLICATE_ENTRY: &str = "archive-duplicate-entry";
    /// Error: a zip entry uses a compression method other than stored or
    /// deflated.
    pub const ARCHIVE_UNSUPPORTED_COMPRESSION: &str = "archive-unsupported-compression";
    /// Error: the archive cannot be parsed.
    pub const ARCHIVE_MALFORMED: &str = "archive-malformed";
    /// Error: an executable the manifest names (runtime or language server) is not in the
    /// bundle.
    pub const COMMAND_MISSING: &str = "command-missing";
    /// Error: an executable the manifest names is a directory, not a regular file.
    pub const COMMAND_NOT_REGULAR: &str = "command-not-regular";
    /// Error: an executable the manifest names lacks the executable bit.
    pub const COMMAND_NOT_EXECUTABLE: &str = "command-not-executable";
    /// A fixed component location of the wrong kind: that component type is disabled.
    pub const COMPONENT_WRONG_KIND: &str = "component-wrong-kind";
    /// Warning: an MCP stdio server's `./` command or a `${PLUGIN_ROOT}/...` argument points
    /// under a folder the collector skips ([`crate::SKIPPED_DIRECTORIES`]), so it is not part
    /// of the installed bundle and the server cannot be resolved there.
    pub const MCP_PATH_SKIPPED: &str = "mcp-path-skipped";
    /// Warning: a `skills/<name>` folder is skipped (no `SKILL.md`, or an invalid one).
    pub const SKILL_INVALID: &str = "skill-invalid";
    /// Warning: `mcp.json` has a document-level problem, so MCP is disabled for the bundle.
    pub const MCP_INVALID: &str = "mcp-invalid";
    /// Warning: a scaffold's `scaffold.json` is ignored because it is invalid.
    pub const SCAFFOLD_METADATA_INVALID: &str = "scaffold-metadata-invalid";
    /// Warning: a contribution this host inventories and stores but never runs (hooks,
    /// monitors, ...).
    pub const UNSUPPORTED_COMPONENT: &str = "unsupported-component";
    /// Error: a catalog entry's name or version differs from its bundle's plugin.json.
    pub const MARKETPLACE_MISMATCH: &str = "marketplace-mismatch";
    /// Error: a catalog entry's `local` path cannot be used (not plain, reached through a
    /// symlink, missing) or leads to an invalid bundle.
    pub const MARKETPLACE_ENTRY_INVALID: &str = "marketplace-entry-invalid";
    /// Error: an identifier (a manifest name or id, an MCP server name, a prompt command's,
    /// subagent's or skill's file or folder name) holds a hidden character (c2-manifest's
    /// code, which a skill or mcp.json finding keeps as an error).
    pub const HIDDEN_IN_IDENTIFIER: &str = "hidden-character-in-identifier";
    /// Warning: a bidirectional control character in bundle text (c2-manifest's code).
    pub const BIDI_CONTROL: &str = "bidi-control";
    /// Warning: an invisible or format character in bundle text (c2-manifest's code).
    pub const INVISIBLE_CHARACTER: &str = "invisible-character";
}
