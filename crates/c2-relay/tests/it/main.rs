//! End-to-end tests of the stdio bridges with real server processes the host starts: a small
//! Python language server and shell MCP servers.

mod support;

mod lsp;
mod mcp;
