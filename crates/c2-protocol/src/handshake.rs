//! The handshake: its rules (protocol version compatibility, exact command confirmation) and
//! [`handshake`], which runs all of it over a spawned plugin's streams.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::{CallError, CommandMismatch, ConfirmationError, VersionError};
use crate::peer::{Notifications, Peer, PeerOptions, RequestHandler};
use crate::types::{InitializeParams, InitializeResult, method};
use crate::version::ProtocolVersion;

/// Accepts the plugin's `protocolVersion` iff it parses as SemVer with the host's major version.
pub fn check_protocol_version(
    host: &ProtocolVersion,
    plugin: Option<&str>,
) -> Result<ProtocolVersion, VersionError> {
    let Some(found) = plugin else {
        return Err(VersionError::Missing { host: host.clone() });
    };
    let plugin = ProtocolVersion::parse(found.trim()).map_err(|e| VersionError::Unparseable {
        host: host.clone(),
        found: found.to_owned(),
        reason: e.reason,
    })?;
    if plugin.major() != host.major() {
        return Err(VersionError::OtherMajor {
            host: host.clone(),
            plugin,
        });
    }
    Ok(plugin)
}

/// A command as the manifest declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredCommand {
    /// The command id.
    pub id: String,
    /// Its `argsSchema`, if declared; `Some(Value::Null)` counts as absent.
    pub args_schema: Option<Value>,
}

/// Checks that `result.commands` holds exactly the declared ids and schemas, and reports every
/// difference: missing, extra and duplicated commands, and changed schemas.
pub fn confirm_commands(
    declared: &[DeclaredCommand],
    result: &InitializeResult,
) -> Result<(), ConfirmationError> {
    let mut confirmed: BTreeMap<&str, Vec<Option<&Value>>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for command in &result.commands {
        let entry = confirmed.entry(command.name.as_str()).or_default();
        if entry.is_empty() {
            order.push(&command.name);
        }
        entry.push(present(command.schema.as_ref()));
    }
    let declared_ids: HashSet<&str> = declared.iter().map(|c| c.id.as_str()).collect();

    let mut mismatches = Vec::new();
    let mut seen = HashSet::new();
    for command in declared {
        if !seen.insert(command.id.as_str()) {
            continue;
        }
        if !confirmed.contains_key(command.id.as_str()) {
            mismatches.push(CommandMismatch::Missing {
                name: command.id.clone(),
            });
        }
    }
    for name in &order {
        if !declared_ids.contains(name) {
            mismatches.push(CommandMismatch::Extra {
                name: (*name).to_owned(),
            });
        }
    }
    for name in &order {
        let count = confirmed[name].len();
        if count > 1 {
            mismatches.push(CommandMismatch::Duplicated {
                name: (*name).to_owned(),
                count,
            });
        }
    }
    seen.clear();
    for command in declared {
        if !seen.insert(command.id.as_str()) {
            continue;
        }
        let Some(schemas) = confirmed.get(command.id.as_str()) else {
            continue;
        };
        let want = present(command.args_schema.as_ref());
        if let Some(got) = schemas.iter().find(|got| **got != want) {
            mismatches.push(CommandMismatch::SchemaChanged {
                name: command.id.clone(),
                declared: want.cloned(),
                confirmed: got.cloned(),
            });
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(ConfirmationError { mismatches })
    }
}

fn present(schema: Option<&Value>) -> Option<&Value> {
    schema.filter(|s| !s.is_null())
}

#[cfg(feature = "manifest")]
impl From<&c2_manifest::CommandDecl> for DeclaredCommand {
    /// The id and `argsSchema` a manifest declares, as the handshake compares them (feature
    /// `manifest`).
    fn from(command: &c2_manifest::CommandDecl) -> Self {
        DeclaredCommand {
            id: command.id.clone(),
            args_schema: command.args_schema.clone(),
        }
    }
}

/// The protocol's bound on the `initialize` answer: 10 s.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(10);

/// How [`handshake`] runs: the peer's bounds, the time allowed and the host's version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandshakeOptions {
    /// The bounds of the connection the handshake opens.
    pub peer: PeerOptions,
    /// How long the plugin has to answer `initialize`, counted from the call to [`handshake`]
    /// (default [`INITIALIZE_TIMEOUT`]); call it right after spawning the plugin so the bound
    /// is the protocol's "from spawn".
    pub timeout: Duration,
    /// The version the host speaks; the plugin's must have the same major version (default
    /// [`ProtocolVersion::CURRENT`]).
    pub host_version: ProtocolVersion,
}

impl Default for HandshakeOptions {
    fn default() -> Self {
        Self {
            peer: PeerOptions::default(),
            timeout: INITIALIZE_TIMEOUT,
            host_version: ProtocolVersion::CURRENT,
        }
    }
}

impl HandshakeOptions {
    /// The defaults: [`PeerOptions::default`], [`INITIALIZE_TIMEOUT`], [`ProtocolVersion::CURRENT`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The same options with other connection bounds.
    #[must_use]
    pub fn with_peer(mut self, peer: PeerOptions) -> Self {
        self.peer = peer;
        self
    }

    /// The same options with another time allowed for the `initialize` answer.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same options with another host protocol version.
    #[must_use]
    pub fn with_host_version(mut self, version: ProtocolVersion) -> Self {
        self.host_version = version;
        self
    }
}

/// A confirmed connection: the plugin answered `initialize` in time, speaks a compatible
/// protocol version and implements exactly the declared commands.
#[derive(Debug)]
#[non_exhaustive]
pub struct Handshake {
    /// The open connection, ready for `command/invoke`.
    pub peer: Peer,
    /// Notifications from the plugin, those sent during the handshake (its first `log`
    /// lines, say) included.
    pub notifications: Notifications,
    /// The plugin's `initialize` answer.
    pub result: InitializeResult,
    /// The plugin's protocol version, parsed from `result`.
    pub protocol_version: ProtocolVersion,
}

/// Why [`handshake`] refused a plugin. The connection is closed in every case (the plugin's
/// stdin closes); stopping the process is the caller's job, since it spawned it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// No answer to `initialize` within the time allowed.
    #[error(
        "the plugin did not answer initialize within {} ms; make it answer sooner, or allow more time (HandshakeOptions::timeout)",
        timeout.as_millis()
    )]
    TimedOut {
        /// The time allowed.
        timeout: Duration,
    },
    /// `initialize` failed: the plugin answered with an error, sent a result that is not an
    /// `InitializeResult`, or the connection closed (the process exited, an oversized frame).
    #[error("initialize failed: {0}")]
    Initialize(#[source] CallError),
    /// The plugin's protocol version is missing, unparseable or of another major version.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// The confirmed commands differ from the declared ones.
    #[error(transparent)]
    Confirmation(#[from] ConfirmationError),
}

/// Runs the C2 Plugin Protocol handshake over a spawned plugin's streams: starts a [`Peer`]
/// on `reader` (the plugin's stdout) and `writer` (its stdin), sends `initialize` with
/// `params`, waits at most [`HandshakeOptions::timeout`] for the answer, checks its protocol
/// version against [`HandshakeOptions::host_version`] ([`check_protocol_version`]) and that it
/// confirms exactly `declared` ([`confirm_commands`]). Requests the plugin sends (`command/call`)
/// go to `handler`, from the first byte on.
///
/// On success the connection stays open and is returned with the parsed answer; on any
/// failure it is closed before this returns, so a refused plugin sees its stdin close.
///
/// # Panics
///
/// Outside a tokio runtime (like [`Peer::new`]).
///
/// # Cancel safety
///
/// Dropping the future before it completes closes the connection, as a refusal does (the
/// plugin's stdin closes).
pub async fn handshake<R, W>(
    reader: R,
    writer: W,
    handler: impl RequestHandler,
    params: &InitializeParams,
    declared: &[DeclaredCommand],
    options: &HandshakeOptions,
) -> Result<Handshake, HandshakeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (peer, notifications) = Peer::new(reader, writer, handler, options.peer);
    // Closes the connection on every way out but success, a dropped future included: the
    // peer's own tasks hold clones, so dropping ours would not close it.
    let mut unconfirmed = CloseOnDrop(Some(peer.clone()));
    let result: InitializeResult =
        tokio::time::timeout(options.timeout, peer.request_as(method::INITIALIZE, params))
            .await
            .map_err(|_| HandshakeError::TimedOut {
                timeout: options.timeout,
            })?
            .map_err(HandshakeError::Initialize)?;
    let protocol_version =
        check_protocol_version(&options.host_version, result.protocol_version.as_deref())?;
    confirm_commands(declared, &result)?;
    unconfirmed.0 = None;
    Ok(Handshake {
        peer,
        notifications,
        result,
        protocol_version,
    })
}

/// Closes the peer it holds when dropped.
struct CloseOnDrop(Option<Peer>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.0.take() {
            peer.close();
        }
    }
}

impl Peer {
    /// [`Peer::request_with`] with the result read into `R`: sends `method` with `params` and
    /// deserializes the answer straight from the raw JSON it arrived as. A result that is not
    /// an `R` is [`CallError::Decode`].
    ///
    /// ```no_run
    /// # async fn example(peer: c2_protocol::Peer) -> Result<(), c2_protocol::CallError> {
    /// use c2_protocol::{CommandInvokeParams, method};
    ///
    /// let params = CommandInvokeParams { name: "hello.greet".into(), args: serde_json::json!({}) };
    /// let greeting: String = peer.request_as(method::COMMAND_INVOKE, &params).await?;
    /// # Ok(()) }
    /// ```
    pub async fn request_as<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<R, CallError> {
        let raw = self.request_raw(method, params).await?;
        serde_json::from_str(raw.get()).map_err(CallError::Decode)
    }
}
