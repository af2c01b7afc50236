//! The stdio bridges: an outside client's streams joined to a server process the host started.
//! The host resolves and launches (and owns the process's lifetime); the bridge only moves
//! bytes, bounded, and says how the session ended.

mod bodies;
mod lsp;
mod mcp;
mod session;
mod supervise;

pub use lsp::{
    BridgeEnd, BridgeFailure, BridgeFailureKind, BridgeReport, DEFAULT_DRAIN, FlowStats,
    LspBridgeOptions, bridge_lsp, bridge_lsp_supervised,
};
pub use mcp::{McpBridgeReport, bridge_mcp};
pub use supervise::{
    DEFAULT_LSP_RESTART_BACKOFF, DEFAULT_LSP_RESTART_WINDOW, DEFAULT_LSP_RESTARTS,
    LspRestartBudget, MAX_LSP_RESTART_BACKOFF, MAX_REPLAY_BYTES,
};

#[cfg(test)]
mod tests;
