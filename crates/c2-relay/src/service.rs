//! The service: one live `PluginHost` served to any number of relay connections. Each
//! connection is a c2-protocol `Peer` over a byte stream pair the embedder hands in
//! ([`Relay::serve`]), or a client accepted on a Unix socket ([`Relay::serve_socket`]): mode
//! 0600, peers of another uid refused, at most [`RelayOptions::max_connections`] at once. There
//! is no TCP listener.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use c2_host::PluginHost;
use c2_protocol::{Peer, PeerOptions};
use tokio::net::{UnixListener, UnixStream};

use crate::Error;
use crate::connection::{Connection, Service};
use crate::events::Bus;

/// The default socket's name inside the plugins directory.
pub const SOCKET_FILE: &str = ".serve.sock";

/// The service's named bounds.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RelayOptions {
    /// Socket clients connected at once; one more is closed at once with a warning.
    pub max_connections: usize,
    /// Event subscriptions one connection may hold at once.
    pub max_subscriptions: usize,
    /// Each connection's peer bounds (frame size, requests in flight, queues).
    pub peer: PeerOptions,
    /// The name `relay/initialize` answers as `server.name`: the embedder's own (a command
    /// line names itself), `c2-relay` unless set.
    pub server_name: &'static str,
}

impl Default for RelayOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            max_subscriptions: 64,
            peer: PeerOptions::default(),
            server_name: "c2-relay",
        }
    }
}

impl RelayOptions {
    /// Sets [`RelayOptions::max_connections`].
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Sets [`RelayOptions::max_subscriptions`].
    pub fn with_max_subscriptions(mut self, max: usize) -> Self {
        self.max_subscriptions = max;
        self
    }

    /// Sets [`RelayOptions::peer`].
    pub fn with_peer(mut self, peer: PeerOptions) -> Self {
        self.peer = peer;
        self
    }

    /// Sets [`RelayOptions::server_name`].
    pub fn with_server_name(mut self, name: &'static str) -> Self {
        self.server_name = name;
        self
    }
}

/// The relay of one host; cheap to clone (every clone serves the same host and event bus).
#[derive(Debug, Clone)]
pub struct Relay {
    service: Service,
    options: RelayOptions,
}

impl Relay {
    /// Starts the relay on `host`: registers its event module (whose scope owns every
    /// client's subscription, so they end with the host). The embedder keeps owning the host
    /// and shuts it down when it is done.
    pub async fn start(host: PluginHost, options: RelayOptions) -> Result<Self, Error> {
        let bus = Bus::default();
        host.register_module(bus.module(), 1)
            .await
            .map_err(Error::Module)?;
        let plugins_dir = host.options().plugins_dir.clone();
        Ok(Self {
            service: Service {
                host,
                plugins_dir,
                bus,
                max_subscriptions: options.max_subscriptions,
                server_name: options.server_name,
                dev: crate::dev::Watches::default(),
            },
            options,
        })
    }

    /// The host it serves.
    pub fn host(&self) -> &PluginHost {
        &self.service.host
    }

    /// Serves one client on `reader`/`writer` (stdio, a pipe, an in-memory duplex) until the
    /// stream ends or the returned peer is closed.
    pub fn serve<R, W>(&self, reader: R, writer: W) -> Peer
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let connection = Connection::new(self.service.clone());
        let handler = {
            let connection = Arc::clone(&connection);
            move |request: c2_protocol::Request, peer: Peer| {
                Arc::clone(&connection).handle(request, Some(peer))
            }
        };
        let (peer, notifications) = Peer::new(reader, writer, handler, self.options.peer);
        tokio::spawn(connection.pump(notifications));
        peer
    }

    /// Accepts clients on `listener` until `stop` resolves, then closes every connection and
    /// returns what `stop` gave. Each client is checked by uid and served on its own peer.
    pub async fn serve_socket<T>(
        &self,
        listener: &SocketListener,
        stop: impl std::future::Future<Output = T>,
    ) -> T {
        use std::os::unix::fs::MetadataExt;
        // The socket was created by this process, so its owner is this process's effective uid.
        let own_uid = std::fs::metadata(&listener.path).map(|m| m.uid()).ok();
        let mut peers: Vec<Peer> = Vec::new();
        tokio::pin!(stop);
        let why = loop {
            let accepted = tokio::select! {
                why = &mut stop => break why,
                accepted = listener.listener.accept() => accepted,
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
            if peers.len() >= self.options.max_connections {
                tracing::warn!(
                    "refused a relay client: {} clients are connected, the limit (--max-connections)",
                    self.options.max_connections
                );
                continue;
            }
            let (reader, writer) = stream.into_split();
            peers.push(self.serve(reader, writer));
        };
        for peer in &peers {
            peer.close();
        }
        why
    }
}

/// A bound relay socket; the socket file is removed when this is dropped.
#[derive(Debug)]
pub struct SocketListener {
    listener: UnixListener,
    path: PathBuf,
}

impl SocketListener {
    /// Where it listens.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketListener {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!("cannot remove the socket {}: {error}", self.path.display());
        }
    }
}

/// Binds the socket at `path`, replacing a stale one (the caller holds the directory's
/// service lock, which proves no service owns it), readable and writable by its owner only.
pub fn bind_socket(path: &Path) -> Result<SocketListener, Error> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let fail = |action: &'static str, source: std::io::Error| Error::Socket {
        action,
        path: path.to_owned(),
        source,
    };
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(Error::NotASocket {
                path: path.to_owned(),
            });
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
    Ok(SocketListener {
        listener: bound?,
        path: path.to_owned(),
    })
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
