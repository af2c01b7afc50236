//! End-to-end tests of the contributions with real plugin processes (the c2-testkit fixture,
//! the Node `hello-runtime` pack, language and MCP servers), on a host opened with every
//! contribution.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod support;

mod components;
mod lsp;
mod mcp;
mod packs;
mod skills;
mod surfaces;
