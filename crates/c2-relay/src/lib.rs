//! The host's faces to outside clients: the LSP and MCP stdio bridges that join an editor's or
//! an MCP client's streams to a server process the host started.
//!
//! It owns the byte pumps and how a session ends (the LSP exit rule, drains, frame limits); it
//! does not resolve, launch, trust or stop anything by policy: c2-host resolves and starts the
//! servers and owns their lifetime, c2-protocol frames the bytes, c2-supervisor (through the
//! host's handles) runs the processes. The CLI and embedders that serve outside clients depend
//! on it; no library crate below it does.

#![warn(missing_docs)]

mod bridge;

pub use bridge::{
    BridgeEnd, BridgeFailure, BridgeFailureKind, BridgeReport, DEFAULT_DRAIN, FlowStats,
    LspBridgeOptions, McpBridgeReport, bridge_lsp, bridge_mcp,
};

// The README example is compiled (not run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
