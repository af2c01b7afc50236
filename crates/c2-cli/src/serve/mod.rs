//! `serve`: one live `PluginHost` for a plugins directory, serving the relay (docs/relay.md) to
//! a frontend: JSON-RPC 2.0 over newline-delimited JSON through c2-protocol's `Peer`, so the
//! frame limit, the in-flight bounds and the outbound queue are the plugin peer's. On stdio
//! (`--stdio`, for a frontend that spawns the service) or on a Unix socket in the plugins
//! directory (`--socket [PATH]`, mode 0600, peers of another uid refused). There is no TCP
//! listener. One service per directory, held by a lock file naming its pid. SIGTERM, SIGINT or
//! the end of stdin (`--stdio`) shut every runtime down before the process exits.

mod client;
mod describe;
mod events;
mod lock;
mod relay;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use c2_protocol::{Peer, PeerOptions};
use tokio::net::{UnixListener, UnixStream};
use tokio::signal::unix::{SignalKind, signal};

use crate::output::Failure;
use crate::session::{self, Settings};

pub(crate) use client::{call as call_service, connect as connect_service};
pub(crate) use relay::RELAY_VERSION;

/// The default socket's name inside the plugins directory.
pub(crate) const SOCKET_FILE: &str = ".serve.sock";

/// Where the relay listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// The process's stdin and stdout; the service ends when stdin does.
    Stdio,
    /// A Unix socket; `None` for `<plugins-dir>/.serve.sock`.
    Socket(Option<PathBuf>),
}

/// The service's named bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServeOptions {
    /// Socket clients connected at once; one more is closed at once with a warning.
    pub(crate) max_connections: usize,
    /// Event subscriptions one connection may hold at once.
    pub(crate) max_subscriptions: usize,
    /// Each connection's peer bounds (frame size, requests in flight, queues).
    pub(crate) peer: PeerOptions,
}

/// Runs the service until a signal, or the end of stdin for `--stdio`.
pub(crate) async fn run(
    settings: &Settings,
    transport: &Transport,
    options: ServeOptions,
) -> Result<ExitCode, Failure> {
    let dir = crate::commands::plugins_dir(settings.plugins_dir.as_deref())?;
    std::fs::create_dir_all(&dir).map_err(|error| {
        Failure::environment(
            "io",
            format!(
                "cannot create the plugins directory {}: {error}",
                dir.display()
            ),
        )
    })?;
    let held = lock::acquire(&dir)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(signal_failure)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(signal_failure)?;
    // A socket that cannot be bound fails before any host is opened.
    let listener = match transport {
        Transport::Stdio => None,
        Transport::Socket(path) => {
            let path = path.clone().unwrap_or_else(|| dir.join(SOCKET_FILE));
            Some(bind(&path)?)
        }
    };
    let host = session::open_host(&dir, settings.handshake_timeout, true).await?;
    let bus = events::Bus::default();
    host.register_module(bus.module(), 1)
        .await
        .map_err(|error| {
            Failure::environment(
                "io",
                format!("cannot register the relay's event module: {error}"),
            )
        })?;
    let service = relay::Service {
        host: host.clone(),
        plugins_dir: dir.clone(),
        bus,
        max_subscriptions: options.max_subscriptions,
    };
    tracing::info!(
        pid = std::process::id(),
        lock = %held.path.display(),
        "c2-plugins serve: relay {RELAY_VERSION} for {}",
        dir.display()
    );
    let stop = async {
        tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        }
    };
    let why = match listener {
        None => {
            let peer = connect(
                &service,
                tokio::io::stdin(),
                tokio::io::stdout(),
                options.peer,
            );
            let why = tokio::select! {
                why = stop => why,
                _ = peer.closed() => "the end of stdin",
            };
            peer.close();
            why
        }
        Some((listener, path)) => {
            let why = accept_loop(&service, &listener, &path, options, stop).await;
            drop(listener);
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::warn!("cannot remove the socket {}: {error}", path.display());
            }
            why
        }
    };
    tracing::info!("c2-plugins serve: stopping on {why}; shutting every runtime down");
    host.shutdown().await;
    drop(held);
    Ok(ExitCode::SUCCESS)
}

fn signal_failure(error: std::io::Error) -> Failure {
    Failure::environment("io", format!("cannot listen for SIGTERM/SIGINT: {error}"))
}

/// Binds the socket, replacing a stale one (the lock proves no service owns it), and makes it
/// readable and writable by its owner only.
fn bind(path: &Path) -> Result<(UnixListener, PathBuf), Failure> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let fail = |what: &str, error: std::io::Error| {
        Failure::environment(
            "io",
            format!(
                "cannot {what} the relay socket {}: {error}; pass --socket PATH with a short path in a directory you own",
                path.display()
            ),
        )
    };
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(Failure::environment(
                "io",
                format!(
                    "{} exists and is not a socket: remove it or pass --socket PATH",
                    path.display()
                ),
            ));
        }
        std::fs::remove_file(path).map_err(|e| fail("replace", e))?;
    }
    // Bound inside a fresh 0700 directory, restricted, then renamed into place: the socket is
    // never reachable at `path` with the umask's looser mode, not even for an instant.
    let private = PathBuf::from(format!("{}.{}", path.display(), std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(&private)
        .map_err(|e| fail("prepare", e))?;
    let staged = private.join("s");
    let bound = UnixListener::bind(&staged)
        .map_err(|e| fail("bind", e))
        .and_then(|listener| {
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| fail("restrict", e))?;
            std::fs::rename(&staged, path).map_err(|e| fail("place", e))?;
            Ok(listener)
        });
    let _ = std::fs::remove_dir_all(&private);
    Ok((bound?, path.to_owned()))
}

/// Accepts clients until `stop` resolves; each is checked by uid and served on its own peer.
async fn accept_loop(
    service: &relay::Service,
    listener: &UnixListener,
    path: &Path,
    options: ServeOptions,
    stop: impl std::future::Future<Output = &'static str>,
) -> &'static str {
    use std::os::unix::fs::MetadataExt;
    // The socket was created by this process, so its owner is this process's effective uid.
    let own_uid = std::fs::metadata(path).map(|m| m.uid()).ok();
    let mut peers: Vec<Peer> = Vec::new();
    tokio::pin!(stop);
    let why = loop {
        let accepted = tokio::select! {
            why = &mut stop => break why,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!("cannot accept a relay client: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(refusal) = check_peer(&stream, own_uid) {
            tracing::warn!("refused a relay client: {refusal}");
            continue;
        }
        peers.retain(|peer| peer.close_reason().is_none());
        if peers.len() >= options.max_connections {
            tracing::warn!(
                "refused a relay client: {} clients are connected, the limit (--max-connections)",
                options.max_connections
            );
            continue;
        }
        let (reader, writer) = stream.into_split();
        peers.push(connect(service, reader, writer, options.peer));
    };
    for peer in &peers {
        peer.close();
    }
    why
}

/// Only a client running as the service's own user may connect.
fn check_peer(stream: &UnixStream, own_uid: Option<u32>) -> Result<(), String> {
    let credentials = stream
        .peer_cred()
        .map_err(|error| format!("cannot read its credentials: {error}"))?;
    match own_uid {
        Some(uid) if credentials.uid() == uid => Ok(()),
        Some(uid) => Err(format!(
            "its uid {} is not the service's uid {uid}",
            credentials.uid()
        )),
        None => Err("the service cannot read its own socket's owner".to_owned()),
    }
}

/// Serves one client on a new peer.
fn connect<R, W>(service: &relay::Service, reader: R, writer: W, options: PeerOptions) -> Peer
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let connection = relay::Connection::new(service.clone());
    let handler = {
        let connection = Arc::clone(&connection);
        move |request: c2_protocol::Request, peer: Peer| {
            Arc::clone(&connection).handle(request, Some(peer))
        }
    };
    let (peer, notifications) = Peer::new(reader, writer, handler, options);
    tokio::spawn(connection.pump(notifications));
    peer
}

#[cfg(test)]
mod tests;
