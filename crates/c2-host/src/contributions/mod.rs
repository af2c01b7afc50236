//! Contributions: what bundles add beyond commands (language servers, MCP servers, ...). Each
//! contribution module imports the host's core through one narrow seam and owns its own
//! state; no core file imports a contribution.

pub(crate) mod lsp;
pub(crate) mod mcp;
