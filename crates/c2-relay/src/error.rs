//! The relay's one error type: what can fail around the service (its lock, its socket, the
//! host's event module) and on the client side of a connection. Failures of a relay method are
//! answered to the client as JSON-RPC errors, never as this type.

use std::path::PathBuf;

/// A failure of the relay service or of a client connection to it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another service already holds the plugins directory's lock.
    #[error("a relay service ({holder}) already serves {}", dir.display())]
    ServiceRunning {
        /// The plugins directory.
        dir: PathBuf,
        /// `pid N`, or `another process` when the lock file names none.
        holder: String,
        /// The holder's pid, when the lock file names one.
        pid: Option<u32>,
    },
    /// The service lock could not be opened, taken or written.
    #[error("cannot {action} the service lock {}: {source}", path.display())]
    Lock {
        /// What was attempted.
        action: &'static str,
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The socket path exists and is not a socket.
    #[error("{} exists and is not a socket", path.display())]
    NotASocket {
        /// The path asked for.
        path: PathBuf,
    },
    /// The socket could not be prepared, bound or placed.
    #[error("cannot {action} the relay socket {}: {source}", path.display())]
    Socket {
        /// What was attempted.
        action: &'static str,
        /// The path asked for.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The host refused the relay's event module.
    #[error("cannot register the relay's event module: {0}")]
    Module(c2_host::ModuleError),
    /// A call through a connection failed before the service answered it.
    #[error("the relay service failed during `{method}`: {source}")]
    Call {
        /// The method called.
        method: String,
        /// The peer's failure.
        source: c2_protocol::CallError,
    },
    /// The service answered a call with a JSON-RPC error.
    #[error("{}", .0.message)]
    Remote(c2_protocol::ErrorObject),
}

impl Error {
    /// Advice for a person, beside the message.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::ServiceRunning { .. } => Some(
                "connect to the running service, or stop it first (one service per plugins directory)",
            ),
            Error::NotASocket { .. } => Some("remove it or choose another socket path"),
            Error::Socket { .. } => Some("choose a short socket path in a directory you own"),
            Error::Call { .. } => Some("retry, or run the command without the service"),
            _ => None,
        }
    }
}
