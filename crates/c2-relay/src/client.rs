//! A client's side of the relay, for a process that uses a running service for the same plugins
//! directory when one answers on its default socket (the `c2-plugins` command line's `invoke`
//! and `invoke-ui`), so the call is warm and a `host.actions` render outlives the call that
//! made it. A connection initializes with the `uiCacheKey` its caller names, so successive
//! calls with the same key share their renders as one frontend. Without a service (no socket,
//! a stale one, another directory's or an incompatible relay) [`connect`] answers `None` and
//! the caller does the work in-process.

use std::path::Path;
use std::time::Duration;

use c2_protocol::{CallError, ErrorObject, Peer, PeerOptions, codes};
use serde_json::{Value, json};
use tokio::net::UnixStream;

use crate::{Error, RELAY_VERSION, SOCKET_FILE};

/// Who connects: the `client` of `relay/initialize` and its `uiCacheKey`.
#[derive(Debug, Clone, Copy)]
pub struct ClientInfo<'a> {
    /// The client's name.
    pub name: &'a str,
    /// The client's version.
    pub version: &'a str,
    /// The `uiCacheKey`: connections naming the same one share their `host.actions` renders.
    pub ui_cache_key: &'a str,
}

/// A connection to the service for `dir`, or `None` when no service for it answers within
/// `patience` (connecting and `relay/initialize`).
pub async fn connect(dir: &Path, patience: Duration, client: ClientInfo<'_>) -> Option<Peer> {
    let socket = dir.join(SOCKET_FILE);
    if !socket.exists() {
        return None;
    }
    let stream = match tokio::time::timeout(patience, UnixStream::connect(&socket)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            tracing::debug!("no service on {}: {error}", socket.display());
            return None;
        }
        Err(_) => {
            tracing::debug!(
                "no service answered on {} in {patience:?}",
                socket.display()
            );
            return None;
        }
    };
    let (reader, writer) = stream.into_split();
    let refuse = |request: c2_protocol::Request, _peer: Peer| async move {
        Err::<Value, _>(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("the CLI answers no requests (`{}`)", request.method),
        ))
    };
    let (peer, _notifications) = Peer::new(reader, writer, refuse, PeerOptions::default());
    let hello = peer.request(
        "relay/initialize",
        Some(json!({
            "protocolVersion": RELAY_VERSION,
            "client": { "name": client.name, "version": client.version },
            "uiCacheKey": client.ui_cache_key,
        })),
    );
    let hello = match tokio::time::timeout(patience, hello).await {
        Ok(Ok(hello)) => hello,
        Ok(Err(error)) => {
            tracing::debug!("the service on {} refused: {error}", socket.display());
            peer.close();
            return None;
        }
        Err(_) => {
            tracing::debug!(
                "the service on {} did not initialize in {patience:?}",
                socket.display()
            );
            peer.close();
            return None;
        }
    };
    let served = hello["pluginsDir"].as_str().map(Path::new);
    if !served.is_some_and(|served| same_dir(served, dir)) {
        tracing::debug!(
            "the service on {} serves {served:?}, not {}",
            socket.display(),
            dir.display()
        );
        peer.close();
        return None;
    }
    tracing::debug!("through the service (pid {})", hello["pid"]);
    Some(peer)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// One call through the service, closing the connection after it: the result, or the
/// relay's error ([`Error::Remote`]) or the connection's ([`Error::Call`]).
pub async fn call(peer: &Peer, method: &str, params: Value) -> Result<Value, Error> {
    let answer = peer.request(method, Some(params)).await;
    peer.close();
    answer.map_err(|error| match error {
        CallError::Remote(error) => Error::Remote(error),
        source => Error::Call {
            method: method.to_owned(),
            source,
        },
    })
}
