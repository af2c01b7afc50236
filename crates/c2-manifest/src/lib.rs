//! c2-manifest parses and validates the documents a C2 bundle declares itself with:
//! `plugin.json` (Agent Plugins 1.0.0 plus `extensions.dev.codetwo` 1.2.0), `marketplace.json`
//! (and the Claude Code and Codex catalog formats, [`validate_catalog`]), the root `mcp.json`
//! and `SKILL.md` frontmatter, and reads the frontmatter of any Markdown file
//! ([`parse_frontmatter`]); it also checks the `host.actions` documents a runtime renders
//! ([`validate_host_actions`]). Every validator is pure: it takes text and options and returns
//! a typed value (when valid) with every diagnostic, each carrying a stable code, a JSON
//! pointer, and a line and column. The same pure checks find hidden text (bidirectional
//! controls and invisible characters: warnings in text, errors in identifiers,
//! [`scan_hidden_text`]) and look-alike names ([`lookalike`]). It deliberately does no IO: it
//! never opens a path, walks a bundle, checks that an executable exists, or fetches a schema
//! (that is c2-bundle-collector's job, which calls in here with the text it read). Any crate may
//! depend on it; it depends on no other c2 crate.
//!
//! Diagnostic codes are listed in [`CODES`]. The conformance corpus lives in `test_data/{ok,err}/`
//! with an insta snapshot (`diagnostics.snap`) beside each case; review changes with
//! `INSTA_UPDATE=always cargo test -p c2-manifest`. The committed docs/schemas/plugin.schema.json
//! is regenerated with `UPDATE_EXPECT=1 cargo test -p c2-manifest`.

#![warn(missing_docs)]

mod args_schema;
mod catalog_formats;
mod catalog_sources;
mod check;
mod codes;
mod diagnostic;
mod error;
mod frontmatter;
mod hidden;
mod host_actions;
mod json;
mod lookalike;
mod manifest;
mod marketplace;
mod mcp;
mod model;
mod options;
pub mod plain_schema;
mod render;
mod schema;
mod skill;
#[cfg(test)]
mod tests;
mod yaml;

pub use catalog_formats::{
    Availability, CATALOG_FILES, Catalog, CatalogEntry, CatalogFormat, CatalogReport, SkippedEntry,
    validate_catalog,
};
pub use codes::CODES;
pub use diagnostic::{BundleDiagnostic, Diagnostic, Severity};
pub use error::Error;
pub use frontmatter::{Frontmatter, FrontmatterValue, parse_frontmatter};
pub use hidden::{
    HiddenChar, HiddenKind, hidden_chars, hidden_identifier_diagnostic, hidden_kind,
    identifier_hidden_char, scan_hidden_text,
};
pub use host_actions::{HostAction, HostActionsLimits, validate_host_actions};
pub use lookalike::{Lookalike, LookalikeName, lookalike, skeleton, within_one_edit};
pub use manifest::{
    AGENT_PLUGINS_SCHEMA_URL, CODETWO_NAMESPACE, ManifestReport, STANDARD_VERSION,
    validate_manifest,
};
pub use marketplace::{
    MARKETPLACE_STANDARD_VERSION, Marketplace, MarketplaceEntry, MarketplaceReport,
    MarketplaceSource, is_npm_registry_name, validate_marketplace,
};
pub use mcp::{
    AGENT_PLUGINS_MCP_SCHEMA_URL, McpReport, McpServer, McpSkipped, McpTransport,
    RESERVED_ENV_NAMES, validate_mcp, validate_mcp_for,
};
pub use model::{
    Author, COMMAND_TIMEOUT_MS_RANGE, Capability, CodeTwo, CommandDecl, ConnectorDecl,
    ExecutableRef, LanguageServerDecl, Manifest, RuntimeDecl, ScopeKind, UiDecl, UiSlot,
};
pub use options::{DEFAULT_RESERVED_NAMESPACES, ManifestOptions, SkillOptions};
pub use render::{
    RenderOptions, TerminalLines, render_bundle_diagnostics, render_diagnostic, render_diagnostics,
    terminal_text,
};
pub use schema::{PLUGIN_SCHEMA_ID, plugin_json_schema};
pub use skill::{Skill, SkillReport, validate_skill, validate_skill_with};
pub use yaml::{MAX_FRONTMATTER_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES};

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
