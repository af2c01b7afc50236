//! The CLI's side of the relay: `invoke` and `invoke-ui` use a running `serve` for the same
//! plugins directory when one answers on its default socket, so the call is warm and a
//! `host.actions` render outlives the CLI call that made it. Every CLI connection initializes
//! with one `uiCacheKey`, so successive CLI calls share their renders as one frontend.
//! Without a service (no socket, a stale one, another directory's or an incompatible relay)
//! the caller runs the command in-process; the output and exit codes are the same either way.

use std::path::Path;
use std::time::Duration;

use c2_protocol::{CallError, ErrorObject, Peer, PeerOptions, codes};
use serde_json::{Value, json};
use tokio::net::UnixStream;

use super::{RELAY_VERSION, SOCKET_FILE};
use crate::output::Failure;

/// The `uiCacheKey` every CLI call initializes with.
pub(crate) const CLI_UI_CACHE_KEY: &str = "c2-plugins-cli";

/// A connection to the service for `dir`, or `None` when no service for it answers within
/// `patience` (connecting and `relay/initialize`).
pub(crate) async fn connect(dir: &Path, patience: Duration) -> Option<Peer> {
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
            "client": { "name": "c2-plugins", "version": env!("CARGO_PKG_VERSION") },
            "uiCacheKey": CLI_UI_CACHE_KEY,
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

/// One call through the service; its failure is the one the in-process command would print.
pub(crate) async fn call(peer: &Peer, method: &str, params: Value) -> Result<Value, Failure> {
    let answer = peer.request(method, Some(params)).await;
    peer.close();
    answer.map_err(|error| match error {
        CallError::Remote(error) => failure(&error),
        other => Failure::environment(
            "io",
            format!("the c2-plugins service failed during `{method}`: {other}; retry, or pass --no-service"),
        ),
    })
}

/// The relay's error as the CLI's failure: the host's kind, message and exit, and its detail.
pub(crate) fn failure(error: &ErrorObject) -> Failure {
    let data: serde_json::Map<String, Value> = error
        .data
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let mut failure = if data.get("environment") == Some(&Value::Bool(true)) {
        Failure::environment("io", error.message.clone())
    } else {
        Failure::operation("command_failed", error.message.clone())
    };
    if let Some(kind) = data.get("kind").and_then(Value::as_str) {
        failure.kind = kind.to_owned();
    }
    failure.hint = data.get("hint").and_then(Value::as_str).map(str::to_owned);
    for (key, value) in data {
        if !matches!(key.as_str(), "kind" | "environment" | "hint") {
            failure.detail.insert(key, value);
        }
    }
    failure
}
