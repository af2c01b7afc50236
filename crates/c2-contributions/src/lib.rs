//! What bundles contribute beyond commands, and what a host makes of it: UI descriptors and
//! `host.actions` ([`Ui`]), connectors ([`Connectors`]), language-server resolution and start
//! ([`LanguageServers`]), MCP listing and launch ([`McpServers`]), and the session's content
//! library of skills, prompt commands, subagents and scenes ([`Library`]), whose changes the
//! host publishes as [`SKILLS_CHANGED`] and [`SCENES_CHANGED`].
//!
//! Each kind is one module with one installer ([`ALL`] lists them) and one extension trait
//! implemented for [`PluginHost`]; [`prelude`] brings the traits into scope. An embedder opens
//! a host with all of them through [`open`] (or passes some of [`ALL`] to
//! [`PluginHost::open_with`]); the state each kind keeps (the render cache, the provider
//! adapters, the registered built-in servers, the library cache) lives in an object its
//! installer hands to that host, so two hosts never share it. A method of a kind the host was
//! not opened with fails with kind `not_wired`.
//!
//! It does not own the lifecycle: installing, trusting, enabling, activating and invoking are
//! c2-host's, reached through `c2_host::seam` alone; reading a bundle's files is
//! c2-bundle-collector's, processes are c2-supervisor's. The JSON its callers print is
//! c2-relay's. The CLI, c2-relay and embedders depend on it; c2-host and the crates below it do
//! not.

mod connectors;
mod lsp;
mod mcp;
mod skills;
mod ui;

use c2_host::seam::Install;
use c2_host::{HostError, HostOptions, PluginHost};

pub use connectors::{
    CONNECTOR_DEDUP_WINDOW, CONNECTOR_EVENT, ConnectorEvent, ConnectorRequest, ConnectorStatus,
    Connectors,
};
pub use lsp::{
    BuiltinLanguageServer, LanguageListing, LanguageMapping, LanguageRow, LanguageServer,
    LanguageServers, ProviderRef, Resolved, ServerListing, ServerOrigin,
};
pub use mcp::{
    MCP_DATA_DIR, McpLaunch, McpProcess, McpServerLaunch, McpServers, McpStatus, StdioLaunch,
};
pub use skills::{
    Library, LibraryItem, LibraryKind, LibraryStatus, SCENES_CHANGED, SKILLS_CHANGED, SceneEntry,
    SceneKind, SceneStatus,
};
pub use ui::{DEFAULT_UI_SESSION, Ui, UiContext, UiEntry, UiRequest};

/// The extension traits, so that `use c2_contributions::prelude::*;` gives a [`PluginHost`]
/// every contribution method.
pub mod prelude {
    pub use crate::{Connectors, LanguageServers, Library, McpServers, Ui};
}

/// Every contribution's installer, in the order a host registers them: UI descriptors,
/// connectors, language servers, MCP servers, the content library.
pub const ALL: &[Install] = &[
    ui::install,
    connectors::install,
    lsp::install,
    mcp::install,
    skills::install,
];

/// Opens a host with every contribution: [`PluginHost::open_with`] with [`ALL`].
pub async fn open(options: HostOptions) -> Result<PluginHost, HostError> {
    PluginHost::open_with(options, ALL).await
}

// The README example is compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

// docs/embedding.md's host is compiled as a doctest, so the guide keeps to the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/embedding.md")]
struct EmbeddingDoctest;

#[cfg(test)]
mod tests;
