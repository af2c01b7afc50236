//! Why a plugin cannot start, and how a handler reports a failed command.

use std::fmt;
use std::path::PathBuf;

use c2_protocol::{ErrorObject, codes};
use serde_json::Value;

/// Why a plugin refused to start or stopped abnormally.
///
/// `Debug` prints the same readable message as `Display`, so `fn main() -> Result<(), Error>`
/// tells the author what to fix on stderr and exits non-zero.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `plugin.json` could not be read.
    #[error(
        "could not read {}: {source}; run the plugin from its bundle directory (the host does)",
        path.display()
    )]
    ReadManifest {
        /// The path tried.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
    /// `plugin.json` is not a valid C2 1.2.0 manifest.
    #[error("plugin.json is not a valid manifest; fix these problems:\n{rendered}")]
    InvalidManifest {
        /// The diagnostics, rendered against the source.
        rendered: String,
    },
    /// A declared `argsSchema` does not compile.
    #[error("the argsSchema of `{command}` does not compile: {reason}; fix it in plugin.json")]
    ArgsSchema {
        /// The command id.
        command: String,
        /// The compiler's message.
        reason: String,
    },
    /// The bound handlers differ from the declared commands.
    #[error("{}", handler_mismatch(missing, undeclared, duplicated))]
    Handlers {
        /// Declared commands without a handler.
        missing: Vec<String>,
        /// Handlers bound to ids plugin.json does not declare.
        undeclared: Vec<String>,
        /// Command ids or event names bound more than once.
        duplicated: Vec<String>,
    },
    /// stdout could not be reserved for the protocol.
    #[error(
        "could not reserve stdout for the protocol: {0}; the plugin needs open stdin, stdout and stderr"
    )]
    ReserveStdout(#[source] nix::Error),
    /// The async runtime could not start.
    #[error("could not start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl Error {
    /// Advice for the plugin's author, in the command line's terms, kept out of the message
    /// (which says what is wrong and where to fix it).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::ArgsSchema { .. } => Some("`c2-plugins validate` shows where"),
            _ => None,
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn handler_mismatch(missing: &[String], undeclared: &[String], duplicated: &[String]) -> String {
    let list = |ids: &[String]| {
        ids.iter()
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!(
            "declared in plugin.json but no handler bound: {}; bind each with .command(id, handler)",
            list(missing)
        ));
    }
    if !undeclared.is_empty() {
        parts.push(format!(
            "handler bound but not declared in plugin.json: {}; declare each under extensions.dev.codetwo.commands or remove the handler",
            list(undeclared)
        ));
    }
    if !duplicated.is_empty() {
        parts.push(format!(
            "bound more than once: {}; keep one handler per command id and event name",
            list(duplicated)
        ));
    }
    format!(
        "the plugin's handlers do not match plugin.json, so it refuses to start: {}",
        parts.join("; ")
    )
}

/// A command that failed: the host shows the caller `<command>: <message>`.
///
/// Any `std::error::Error` converts into one (code `-32000`), so `?` works inside a handler,
/// including on [`Context::call`](crate::Context::call).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl CommandError {
    /// A failure with code `-32000` (command failed).
    pub fn new(message: impl Into<String>) -> Self {
        CommandError {
            code: codes::COMMAND_FAILED,
            message: message.into(),
            data: None,
        }
    }

    /// A failure with code `-32602`: the args are acceptable to the schema but not to the
    /// command (for example, two options that exclude each other).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        CommandError {
            code: codes::INVALID_PARAMS,
            ..CommandError::new(message)
        }
    }

    /// Replaces the code (any JSON-RPC error code).
    #[must_use]
    pub fn with_code(mut self, code: i64) -> Self {
        self.code = code;
        self
    }

    /// Attaches structured detail for the caller.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> i64 {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn into_error_object(self) -> ErrorObject {
        ErrorObject {
            code: self.code,
            message: self.message,
            // A value always serializes; `None` only if it holds a non-string map key.
            data: self.data.and_then(|data| c2_protocol::to_raw(&data).ok()),
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for CommandError {
    fn from(error: E) -> Self {
        CommandError::new(error.to_string())
    }
}
