//! Every failure this crate reports, as data with readable messages.

use std::fmt;
use std::io;

use serde_json::Value;

use crate::message::ErrorObject;

/// A codec failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An outbound message or body over the frame limit; nothing was written.
    #[error(
        "the outbound message is {len} bytes, over the {limit}-byte frame limit; send less data per message or raise the limit"
    )]
    FrameTooLarge {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The outbound message could not be serialized.
    #[error("could not serialize the outbound message: {0}")]
    Serialize(#[source] serde_json::Error),
    /// The Content-Length header section is unusable; the stream cannot be resynchronised.
    #[error(
        "bad content-length header: {0}; the stream cannot be read further, restart the server"
    )]
    ContentLengthHeader(HeaderError),
}

/// What is wrong with a Content-Length header section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// No `Content-Length` header.
    #[error("no Content-Length header")]
    MissingContentLength,
    /// More than one `Content-Length` header.
    #[error("more than one Content-Length header")]
    DuplicateContentLength,
    /// A `Content-Length` that is not a decimal number.
    #[error("Content-Length \"{value}\" is not a decimal number of bytes")]
    InvalidContentLength {
        /// The value, escaped and cut.
        value: String,
    },
    /// A header line without `:`.
    #[error("header line \"{line}\" has no `:`")]
    Malformed {
        /// The line, escaped and cut.
        line: String,
    },
    /// The header section did not end within the limit.
    #[error("the header section is longer than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// A plugin's `protocolVersion` the host refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    /// The initialize result has no `protocolVersion`.
    #[error(
        "the plugin did not state a protocolVersion and this host speaks protocol {host}; return \"protocolVersion\": \"{host}\" (or another {major}.x version) in the initialize result",
        major = host.major()
    )]
    Missing {
        /// The host's version.
        host: crate::ProtocolVersion,
    },
    /// `protocolVersion` is not SemVer.
    #[error(
        "the plugin's protocolVersion \"{found}\" is not a version ({reason}) and this host speaks protocol {host}; return a version such as \"{host}\""
    )]
    Unparseable {
        /// The host's version.
        host: crate::ProtocolVersion,
        /// What the plugin sent.
        found: String,
        /// Why it does not parse.
        reason: String,
    },
    /// Another major version.
    #[error(
        "the plugin speaks protocol {plugin} but this host speaks protocol {host}, and only the same major version is compatible; use a plugin release for protocol {major}.x or a host that speaks {plugin_major}.x",
        major = host.major(),
        plugin_major = plugin.major()
    )]
    OtherMajor {
        /// The host's version.
        host: crate::ProtocolVersion,
        /// The plugin's version.
        plugin: crate::ProtocolVersion,
    },
}

/// The initialize result's commands differ from the declared ones.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfirmationError {
    /// Every difference, missing first, then extra, duplicated and changed schemas.
    pub mismatches: Vec<CommandMismatch>,
}

impl std::error::Error for ConfirmationError {}

impl fmt::Display for ConfirmationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.mismatches.len();
        write!(
            f,
            "the commands in the plugin's initialize result do not match extensions.dev.codetwo.commands in plugin.json ({n} problem{}):",
            if n == 1 { "" } else { "s" }
        )?;
        for m in &self.mismatches {
            write!(f, "\n  - {m}")?;
        }
        Ok(())
    }
}

/// One difference between declared and confirmed commands.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CommandMismatch {
    /// Declared but not confirmed.
    Missing {
        /// The command id.
        name: String,
    },
    /// Confirmed but not declared.
    Extra {
        /// The command id.
        name: String,
    },
    /// Confirmed more than once.
    Duplicated {
        /// The command id.
        name: String,
        /// How many times it was confirmed.
        count: usize,
    },
    /// Confirmed with another schema (`None` means no schema).
    SchemaChanged {
        /// The command id.
        name: String,
        /// The manifest's `argsSchema`.
        declared: Option<Value>,
        /// The initialize result's `schema`.
        confirmed: Option<Value>,
    },
}

impl fmt::Display for CommandMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandMismatch::Missing { name } => write!(
                f,
                "`{name}` is declared in plugin.json but missing from the initialize result; implement it and list it in `commands`"
            ),
            CommandMismatch::Extra { name } => write!(
                f,
                "`{name}` is in the initialize result but not declared in plugin.json; declare it in plugin.json or remove it from `commands`"
            ),
            CommandMismatch::Duplicated { name, count } => write!(
                f,
                "`{name}` appears {count} times in the initialize result; list each command once"
            ),
            CommandMismatch::SchemaChanged {
                name,
                declared,
                confirmed,
            } => match (declared, confirmed) {
                (Some(d), Some(c)) => write!(
                    f,
                    "`{name}` has schema {} in the initialize result but argsSchema {} in plugin.json; return the argsSchema from plugin.json unchanged",
                    brief(c),
                    brief(d)
                ),
                (None, Some(c)) => write!(
                    f,
                    "`{name}` has schema {} in the initialize result but no argsSchema in plugin.json; omit `schema` for it or declare the same argsSchema in plugin.json",
                    brief(c)
                ),
                (Some(d), None) => write!(
                    f,
                    "`{name}` has no schema in the initialize result but argsSchema {} in plugin.json; return that argsSchema as `schema`",
                    brief(d)
                ),
                (None, None) => write!(f, "`{name}` has a changed schema"),
            },
        }
    }
}

/// A schema shown compactly, cut so one message stays readable.
fn brief(value: &Value) -> String {
    const MAX: usize = 120;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let mut cut: String = text.chars().take(MAX - 1).collect();
    cut.push('…');
    cut
}

/// Why a peer's connection closed. Every pending call resolves with it, and so does every later
/// call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The other side ended its output (for a plugin: the process exited or closed stdout).
    StreamClosed,
    /// Reading failed.
    ReadFailed(io::ErrorKind),
    /// The other side sent a frame over the limit (a protocol violation).
    FrameTooLarge {
        /// The frame's length in bytes.
        len: u64,
        /// The limit in bytes.
        limit: usize,
    },
    /// Writing failed.
    WriteFailed(io::ErrorKind),
    /// A response or notification would have taken the outbound queue over its byte bound: the
    /// other side stopped reading while it kept asking for answers.
    OutboundOverflow {
        /// The bound in bytes ([`PeerOptions::max_outbound_bytes`](crate::PeerOptions)).
        limit: usize,
    },
    /// The owner closed the connection.
    Cancelled,
}

impl CloseReason {
    /// A stable snake_case code for diagnostics.
    pub fn code(&self) -> &'static str {
        match self {
            CloseReason::StreamClosed => "stream_closed",
            CloseReason::ReadFailed(_) => "read_failed",
            CloseReason::FrameTooLarge { .. } => "frame_too_large",
            CloseReason::WriteFailed(_) => "write_failed",
            CloseReason::OutboundOverflow { .. } => "outbound_overflow",
            CloseReason::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::StreamClosed => f.write_str("the other side closed its output"),
            CloseReason::ReadFailed(kind) => write!(f, "reading failed: {kind}"),
            CloseReason::FrameTooLarge { len, limit } => {
                write!(
                    f,
                    "the other side sent a frame of at least {len} bytes, over the {limit}-byte limit"
                )
            }
            CloseReason::WriteFailed(kind) => write!(f, "writing failed: {kind}"),
            CloseReason::OutboundOverflow { limit } => write!(
                f,
                "the other side stopped reading while more than {limit} bytes of answers and notifications were queued for it"
            ),
            CloseReason::Cancelled => f.write_str("the connection was closed by its owner"),
        }
    }
}

/// Why [`Peer::flush`](crate::Peer::flush) returned before everything was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlushError {
    /// The connection closed first; what was still queued is dropped.
    #[error("the connection closed before everything queued was written: {0}")]
    Closed(CloseReason),
    /// The caller's bound passed first.
    #[error(
        "{unanswered} incoming requests were still unanswered and {queued_bytes} bytes still unwritten after {within:?}; the other side is not reading, or a handler is still running"
    )]
    TimedOut {
        /// The caller's bound.
        within: std::time::Duration,
        /// Incoming requests whose answer was not yet queued.
        unanswered: usize,
        /// Bytes queued or being written.
        queued_bytes: usize,
    },
}

/// A call through a peer that did not produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The connection is closed; nothing more can be sent.
    #[error("the connection is closed: {0}; start a new one")]
    Closed(CloseReason),
    /// Too many requests in flight; this one was not sent.
    #[error("{limit} requests are already in flight; wait for one to finish and retry")]
    Busy {
        /// The in-flight limit.
        limit: usize,
    },
    /// The outbound queue is full; this notification was not sent.
    #[error(
        "the outbound queue is full ({limit} messages) because the other side is not reading; retry later"
    )]
    QueueFull {
        /// The queue bound.
        limit: usize,
    },
    /// The other side answered with an error.
    #[error("{0}")]
    Remote(ErrorObject),
    /// The message could not be encoded; nothing was sent and the connection is unaffected.
    #[error(transparent)]
    Encode(#[from] Error),
    /// The other side's result is not the JSON the caller asked to read it as.
    #[error("the result could not be read: {0}")]
    Decode(#[source] serde_json::Error),
}
