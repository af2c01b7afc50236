//! The stdio bridges: an outside client's streams joined to a server process the host started.
//! The host resolves and launches (and owns the process's lifetime); the bridge only moves
//! bytes, bounded, and says how the session ended.

mod lsp;
mod mcp;

pub use lsp::{
    BridgeEnd, BridgeFailure, BridgeFailureKind, BridgeReport, DEFAULT_DRAIN, FlowStats,
    LspBridgeOptions, bridge_lsp,
};
pub use mcp::{McpBridgeReport, bridge_mcp};

#[cfg(test)]
mod tests;
