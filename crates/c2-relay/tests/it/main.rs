//! End-to-end tests of the stdio bridges with real server processes the host starts: a small
//! Python language server and shell MCP servers.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod support;

mod lsp;
mod lsp_restart;
mod mcp;
