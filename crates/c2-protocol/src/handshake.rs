//! The one handshake: its rules (protocol version compatibility, exact command confirmation),
//! its two steps ([`initialize_start`] sends `initialize` and reads the answer,
//! [`initialize_finish`] judges it) that every driver runs, and [`handshake`], which runs both
//! over a spawned plugin's streams.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::{
    CallError, CloseReason, CommandMismatch, ConfirmationError, Error, VersionError,
};
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

/// How a handshake runs: the peer's bounds, the time allowed and the host's version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandshakeOptions {
    /// The bounds of the connection [`handshake`] opens.
    pub peer: PeerOptions,
    /// How long the plugin has to answer `initialize`, counted from spawn (default
    /// [`INITIALIZE_TIMEOUT`]).
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

/// What the finish step accepted: the plugin's answer and its parsed protocol version.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Confirmed {
    /// The plugin's `initialize` answer.
    pub result: InitializeResult,
    /// The plugin's protocol version, parsed from `result`.
    pub protocol_version: ProtocolVersion,
}

impl Confirmed {
    /// The events the plugin subscribes to, each once, in name order.
    pub fn events(&self) -> BTreeSet<String> {
        self.result.events.iter().cloned().collect()
    }
}

/// Why a handshake refused a plugin. [`handshake`] closes the connection in every case (the
/// plugin's stdin closes); with the separate steps, closing it and stopping the process are the
/// caller's job.
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
    /// The `initialize` call failed: the connection closed before the answer (the process
    /// exited or closed stdout, an oversized frame: [`CallError::Closed`], see
    /// [`HandshakeError::close_reason`]), the plugin answered with an error
    /// ([`CallError::Remote`]), or the request could not be sent.
    #[error("initialize failed: {0}")]
    Initialize(#[source] CallError),
    /// The plugin answered `initialize` with a result that is not an `InitializeResult`.
    #[error("the initialize result is malformed: {0}")]
    Malformed(#[source] serde_json::Error),
    /// The plugin's protocol version is missing, unparseable or of another major version.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// The confirmed commands differ from the declared ones; every difference is listed.
    #[error(transparent)]
    Confirmation(#[from] ConfirmationError),
}

impl HandshakeError {
    /// Why the connection closed, when it closed before the answer.
    pub fn close_reason(&self) -> Option<CloseReason> {
        match self {
            HandshakeError::Initialize(CallError::Closed(reason)) => Some(*reason),
            _ => None,
        }
    }
}

/// The start step: sends `initialize` with `params` on `peer` and waits for the answer until
/// [`HandshakeOptions::timeout`] after `spawned_at` (the protocol counts the window from spawn),
/// then reads it as an [`InitializeResult`]. Nothing of the answer is judged yet: that is
/// [`initialize_finish`]. The connection stays open whatever happens.
///
/// ```no_run
/// # async fn example(peer: c2_protocol::Peer, params: c2_protocol::InitializeParams)
/// # -> Result<(), c2_protocol::HandshakeError> {
/// use c2_protocol::{HandshakeOptions, initialize_finish, initialize_start};
///
/// let options = HandshakeOptions::default();
/// let spawned_at = tokio::time::Instant::now();
/// let answer = initialize_start(&peer, &params, &options, spawned_at).await?;
/// let confirmed = initialize_finish(answer, &[], &options)?;
/// println!("{} speaks {}", confirmed.result.name, confirmed.protocol_version);
/// # Ok(()) }
/// ```
///
/// # Cancel safety
///
/// Dropping the future abandons the request; the peer stays usable.
pub async fn initialize_start(
    peer: &Peer,
    params: &InitializeParams,
    options: &HandshakeOptions,
    spawned_at: tokio::time::Instant,
) -> Result<InitializeResult, HandshakeError> {
    let params = serde_json::to_value(params)
        .map_err(|error| HandshakeError::Initialize(CallError::Encode(Error::Serialize(error))))?;
    let answer = tokio::time::timeout_at(
        spawned_at + options.timeout,
        peer.request(method::INITIALIZE, Some(params)),
    )
    .await
    .map_err(|_| HandshakeError::TimedOut {
        timeout: options.timeout,
    })?
    .map_err(HandshakeError::Initialize)?;
    serde_json::from_value(answer).map_err(HandshakeError::Malformed)
}

/// The finish step's two verdicts on an `initialize` answer, each on its own: for a caller
/// that reports both (an author's check) rather than stopping at the first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Verdicts {
    /// The plugin's protocol version against the host's ([`check_protocol_version`]).
    pub protocol_version: Result<ProtocolVersion, VersionError>,
    /// The confirmed commands against the declared ones ([`confirm_commands`]).
    pub commands: Result<(), ConfirmationError>,
}

impl Verdicts {
    /// Judges `result` against the host's version in `options` and the `declared` commands.
    pub fn of(
        result: &InitializeResult,
        declared: &[DeclaredCommand],
        options: &HandshakeOptions,
    ) -> Self {
        Self {
            protocol_version: check_protocol_version(
                &options.host_version,
                result.protocol_version.as_deref(),
            ),
            commands: confirm_commands(declared, result),
        }
    }
}

/// The finish step: accepts the answer [`initialize_start`] read iff its protocol version is
/// compatible with [`HandshakeOptions::host_version`] and it confirms exactly `declared`; the
/// version is judged first. The events it subscribes to are [`Confirmed::events`].
pub fn initialize_finish(
    result: InitializeResult,
    declared: &[DeclaredCommand],
    options: &HandshakeOptions,
) -> Result<Confirmed, HandshakeError> {
    let verdicts = Verdicts::of(&result, declared, options);
    let protocol_version = verdicts.protocol_version?;
    verdicts.commands?;
    Ok(Confirmed {
        result,
        protocol_version,
    })
}

/// Both steps over a spawned plugin's streams: starts a [`Peer`] on `reader` (the plugin's
/// stdout) and `writer` (its stdin), runs [`initialize_start`] (counting the window from this
/// call, so call it right after spawning) and [`initialize_finish`]. Requests the plugin sends
/// (`command/call`) go to `handler`, from the first byte on.
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
    let spawned_at = tokio::time::Instant::now();
    let (peer, notifications) = Peer::new(reader, writer, handler, options.peer);
    // Closes the connection on every way out but success, a dropped future included: the
    // peer's own tasks hold clones, so dropping ours would not close it.
    let mut unconfirmed = CloseOnDrop(Some(peer.clone()));
    let answer = initialize_start(&peer, params, options, spawned_at).await?;
    let Confirmed {
        result,
        protocol_version,
    } = initialize_finish(answer, declared, options)?;
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
