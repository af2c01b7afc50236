//! The host's faces to outside clients: the relay service of docs/relay.md as a library, the one
//! JSON vocabulary in which the host's results leave the process, and the LSP and MCP stdio
//! bridges that join an editor's or an MCP client's streams to a server the host started.
//! It also runs developer mode's watcher ([`watch_development`]): a development bundle's
//! working directory is watched and each save reloads it through the host.
//!
//! [`Relay`] serves a live [`c2_host::PluginHost`] to frontends over JSON-RPC 2.0, one JSON
//! object per line, through c2-protocol's `Peer` (its frame limit, in-flight bounds and
//! outbound queue). A desktop or server runs it in-process: open the host, start the relay on
//! it, then hand it any byte stream pair ([`Relay::serve`]) or a Unix socket
//! ([`bind_socket`], [`Relay::serve_socket`]):
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use c2_host::HostOptions;
//! use c2_relay::{Relay, RelayOptions};
//!
//! // A host with every contribution, so the relay's UI, connector, LSP, MCP and library
//! // methods are served.
//! let host = c2_contributions::open(HostOptions::new("/home/me/.codetwo/plugins")).await?;
//! let relay = Relay::start(host.clone(), RelayOptions::default()).await?;
//! let (client, server) = tokio::io::duplex(64 * 1024);
//! let (reader, writer) = tokio::io::split(server);
//! let connection = relay.serve(reader, writer);
//! // ... the frontend speaks JSON-RPC on `client` ...
//! # drop(client);
//! connection.closed().await;
//! host.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! [`json`] is the one vocabulary: every JSON shape the relay answers and the `c2-plugins`
//! command line prints with `--format json` is written there, from the host's plain types.
//! The [`client`] module is the other side of a connection, for a process that uses a running
//! service.
//!
//! The bridges ([`bridge_lsp`], [`bridge_lsp_supervised`], [`bridge_mcp`]) own the byte pumps
//! and how a session ends (the LSP exit rule, drains, frame limits, a crashed language server's
//! restarts within its budget); c2-host resolves, starts and owns the servers.
//!
//! It does not open hosts, parse command lines, render text, handle signals or decide where
//! the plugins directory is: the embedder does. The `c2-plugins` binary and embedders
//! (desktop, server) depend on it; no library crate below the host does.

mod bridge;
mod connection;
mod describe;
mod dev;
mod error;
mod events;
mod lock;
mod methods;
mod service;

pub mod client;
pub mod json;

pub use bridge::{
    BridgeEnd, BridgeFailure, BridgeFailureKind, BridgeReport, DEFAULT_DRAIN,
    DEFAULT_LSP_RESTART_BACKOFF, DEFAULT_LSP_RESTART_WINDOW, DEFAULT_LSP_RESTARTS, FlowStats,
    LspBridgeOptions, LspRestartBudget, MAX_LSP_RESTART_BACKOFF, MAX_REPLAY_BYTES, McpBridgeReport,
    bridge_lsp, bridge_lsp_supervised, bridge_mcp,
};
pub use connection::{
    CANCEL, CANCELLABLE, EVENT, MAX_UI_CACHE_KEY, NOT_INITIALIZED, RELAY_VERSION,
    REQUEST_CANCELLED, VERSION_MISMATCH, error_object,
};
pub use describe::describe;
pub use dev::{DEBOUNCE, DEV_RELOADED, DevWatch, watch_development};
pub use error::Error;
pub use events::{HEALTH_CHANGED, HEALTH_INTERVAL, PUBLISHABLE, STORE_CHANGED};
pub use lock::{LOCK_FILE, ServiceLock, acquire_lock};
pub use methods::{METHODS, Method};
pub use service::{Relay, RelayOptions, SOCKET_FILE, SocketListener, bind_socket};

// The README example and docs/relay.md's embedding example are compiled as doctests, so the
// guides keep to the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

#[cfg(doctest)]
#[doc = include_str!("../../../docs/relay.md")]
struct RelayDoctest;

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests;
