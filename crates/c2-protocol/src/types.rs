//! Typed params and results of the protocol's methods.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "1.0.0";

/// Method names.
pub mod method {
    /// Host → plugin request: the handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Host → plugin request: run a declared command.
    pub const COMMAND_INVOKE: &str = "command/invoke";
    /// Either direction, notification: an event.
    pub const EVENT_EMIT: &str = "event/emit";
    /// Plugin → host request: call an extension-public host command.
    pub const COMMAND_CALL: &str = "command/call";
    /// Plugin → host notification: a log line.
    pub const LOG: &str = "log";
    /// Plugin → host request: submit a batch of external feedback for a connector declaring the
    /// `observations` capability. A host that does not offer observations
    /// ([`HostInfo::observations`](crate::HostInfo::observations) `false`) answers [`observations_off`](crate::observations_off).
    pub const OBSERVATION_RECORD: &str = "observation/record";
}

/// The message of [`observations_off`].
pub const OBSERVATIONS_OFF_MESSAGE: &str = "the host does not accept observations";

/// The answer to `observation/record` from a host that does not offer observations: code
/// [`codes::COMMAND_FAILED`](crate::codes::COMMAND_FAILED) (-32000), message
/// [`OBSERVATIONS_OFF_MESSAGE`], no `data`, whatever the params. It acknowledges nothing, so a
/// plugin must not treat the batch as recorded.
pub fn observations_off() -> crate::ErrorObject {
    crate::ErrorObject::new(crate::codes::COMMAND_FAILED, OBSERVATIONS_OFF_MESSAGE)
}

/// Params of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The host's protocol version, e.g. `"1.0.0"`.
    pub protocol_version: String,
    /// Who is calling.
    pub host: HostInfo,
    /// The plugin's config entry, verbatim.
    #[serde(default)]
    pub config: Value,
    /// The directory the plugin may write to.
    pub data_dir: String,
    /// The normalized project path; omitted for a user-scoped instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_path: Option<String>,
}

/// The `host` member of [`InitializeParams`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// The host's name.
    pub name: String,
    /// The host's version.
    pub version: String,
    /// The extension-public commands visible from this realm.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Whether the host accepts `observation/record` from this runtime: `true` only when the
    /// runtime owns a connector declaring the `observations` capability and the host has a store
    /// for them. Always sent; a plugin that reads no `observations` member takes it as `false`.
    #[serde(default)]
    pub observations: bool,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin's protocol version; optional here so its absence is refused readably by
    /// [`check_protocol_version`](crate::check_protocol_version) rather than by serde.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The commands the plugin implements; must equal the declared ones.
    #[serde(default)]
    pub commands: Vec<CommandInfo>,
    /// The host events the plugin subscribes to.
    #[serde(default)]
    pub events: Vec<String>,
}

/// One command in [`InitializeResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInfo {
    /// The command id.
    pub name: String,
    /// Informational; the host uses the manifest's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The args schema; `null` reads as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
}

/// Params of `command/invoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInvokeParams {
    /// The declared command to run.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Value,
}

/// Params of `command/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandCallParams {
    /// The extension-public host command to run.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Value,
}

/// Params of `event/emit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEmitParams {
    /// The event name.
    pub name: String,
    /// The event payload.
    #[serde(default)]
    pub payload: Value,
}

/// Params of `log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogParams {
    /// The severity.
    pub level: LogLevel,
    /// The text.
    pub message: String,
}

/// The severity of a [`LogParams`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `error`
    Error,
    /// `warn`
    Warn,
    /// `info`
    Info,
    /// `debug`
    Debug,
    /// `trace`
    Trace,
}
