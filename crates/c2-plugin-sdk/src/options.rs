//! Every limit the SDK applies, with its default.

use std::time::Duration;

use c2_protocol::PeerOptions;

/// How a plugin runs. `Default` holds the project's decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// The connection's bounds. The defaults mirror the host's side of decisions.md: up to 256
    /// host requests handled at once (the host's in-flight bound, so the host is never refused
    /// below its own limit) and up to 32 `command/call`s in flight (the host answers the excess
    /// `-32003`, so the SDK fails it fast instead). Its
    /// [`on_input_end`](PeerOptions::on_input_end) is ignored: the end of stdin is always a
    /// half-close ([`InputEnd::HalfClose`](c2_protocol::InputEnd::HalfClose)), so what the host
    /// asked before it closed stdin is still answered.
    pub peer: PeerOptions,
    /// How long to let in-flight handlers finish after stdin closes (default 500 ms). It stays
    /// under the 1 second the host waits before it escalates, and that `c2-plugins check` allows.
    pub shutdown_grace: Duration,
    /// After the handlers finished or the grace ran out, how long their answers and log lines
    /// get to reach stdout before the plugin exits (default 200 ms). A host that does not read
    /// stdout, or a handler abandoned at the grace, costs this much more; with the grace it
    /// stays under the host's 1 second.
    pub flush_timeout: Duration,
    /// `log` notifications waiting to be sent (default 1,024, the outbound queue's size); a log
    /// event that finds the queue full is dropped and counted.
    pub log_queue: usize,
    /// The most detailed `tracing` level forwarded to the host (default `info`).
    pub log_level: tracing::Level,
    /// Schema violations listed in a `-32602` error's `data` (default 16); the message names the
    /// first one.
    pub max_reported_violations: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            peer: PeerOptions {
                max_incoming_requests: 256,
                max_outgoing_requests: 32,
                ..PeerOptions::default()
            },
            shutdown_grace: Duration::from_millis(500),
            flush_timeout: Duration::from_millis(200),
            log_queue: 1024,
            log_level: tracing::Level::INFO,
            max_reported_violations: 16,
        }
    }
}
