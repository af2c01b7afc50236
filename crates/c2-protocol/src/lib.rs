//! The C2 Plugin Protocol 1.0.0 wire: every byte that crosses the pipe between the host and a
//! plugin process. It holds the sans-IO newline framing with a hard frame limit
//! ([`LineDecoder`], [`encode_line`]), the Content-Length framing for language servers
//! ([`ContentLengthDecoder`]), the JSON-RPC 2.0 model and its tolerant-reader classification
//! ([`Message`], [`classify`]), the typed params and results of each method, the one handshake
//! (its rules [`check_protocol_version`] and [`confirm_commands`], its steps
//! [`initialize_start`] and [`initialize_finish`] that the host and the author's check both
//! drive, every refusal a [`HandshakeError`], and [`handshake`], which runs both steps over a
//! spawned plugin's streams), the event names only the host may emit ([`is_host_event`]), and
//! a bounded async [`Peer`] over any tokio `AsyncRead`/`AsyncWrite`, and a [`FrameTap`] that
//! shows every frame crossing such streams to an observer (recording, replay).
//!
//! It deliberately spawns no process and touches no filesystem: the caller hands it streams.
//! It knows nothing of realms or policy; declared commands come in as plain
//! [`DeclaredCommand`]s (with the optional `manifest` feature, converted from c2-manifest's
//! `CommandDecl`). It is the only crate that defines wire types; c2-host, c2-check and
//! c2-plugin-sdk depend on it, and it depends on no workspace crate unless that feature is on.

#![warn(missing_docs)]

mod content_length;
mod error;
mod events;
mod frame;
mod handshake;
mod message;
mod peer;
mod scan;
mod tap;
mod types;
mod version;

#[cfg(test)]
mod tests;

pub use content_length::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, encode_content_length,
};
pub use error::{
    CallError, CloseReason, CommandMismatch, ConfirmationError, Error, FlushError, HeaderError,
    VersionError,
};
pub use events::{HOST_EVENT_NAMES, HOST_EVENT_PREFIXES, is_host_event};
pub use frame::{
    DecodeEvent, DropReason, DroppedLine, EXCERPT_CHARS, FrameOptions, LineDecoder, encode_line,
};
pub use handshake::{
    Confirmed, DeclaredCommand, Handshake, HandshakeError, HandshakeOptions, INITIALIZE_TIMEOUT,
    Verdicts, check_protocol_version, confirm_commands, handshake, initialize_finish,
    initialize_start,
};
pub use message::{
    Classified, ErrorObject, Id, InvalidMessage, Message, Notification, RawJson, Request, Response,
    Violation, classify, codes, from_raw, to_raw, value_tree_cost,
};
pub use peer::{
    HandlerFuture, InputEnd, Notifications, Peer, PeerOptions, PeerStats, RejectRequests,
    RequestHandler,
};
pub use serde_json::value::RawValue;
pub use tap::{
    Direction, FrameObserver, FrameTap, TapRead, TapWrite, tap_editor_streams, tap_plugin_streams,
};
pub use types::{
    CommandCallParams, CommandInfo, CommandInvokeParams, EventEmitParams, HostInfo,
    InitializeParams, InitializeResult, LogLevel, LogParams, OBSERVATIONS_OFF_MESSAGE,
    PROTOCOL_VERSION, method, observations_off,
};
pub use version::{ParseVersionError, ProtocolVersion};

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
