//! What the check watches besides the answers: the stand-in host that answers the plugin's
//! `command/call`s, its `log` and `event/emit` notifications, and what stdout and stderr carried.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use c2_lock::lock;
use c2_protocol::{
    DecodeEvent, ErrorObject, LineDecoder, Notifications, Peer, Request, codes, method,
};
use c2_supervisor::Process;
use tokio::io::{AsyncRead, ReadBuf};

use crate::hints;
use crate::report::CheckReport;

/// The one host command a checked plugin is told about, answered by the check's stub.
pub(crate) const STUB_COMMAND: &str = "git.status";

pub(crate) fn report_stdout(peer: &Peer, log: &StdoutLog, report: &mut CheckReport) {
    let stats = peer.stats();
    let mut problems = Vec::new();
    if stats.dropped_lines > 0 {
        let quoted: Vec<String> = log.excerpts.iter().map(|e| format!("`{e}`")).collect();
        problems.push(format!(
            "{} non-protocol line(s): {}",
            stats.dropped_lines,
            quoted.join(", ")
        ));
    }
    if stats.invalid_messages > 0 {
        problems.push(format!(
            "{} JSON object(s) that are not JSON-RPC 2.0 messages",
            stats.invalid_messages
        ));
    }
    if let Some(len) = log.oversized {
        problems.push(format!("a line of {len} bytes, over the frame limit"));
    }
    if problems.is_empty() {
        report.pass(
            "stdout",
            format!("{} protocol frame(s), nothing else", stats.frames_in),
        );
    } else {
        report.fail(
            "stdout",
            format!(
                "stdout carried {}; stdout is the protocol channel: write logs to stderr or use the log notification",
                problems.join(" and ")
            ),
        );
    }
}

pub(crate) fn report_stderr(
    process: &Process,
    logs: &LogMessages,
    log_max: usize,
    report: &mut CheckReport,
) {
    let tail = process.stderr_tail();
    let stderr = if tail.is_empty() {
        "nothing on stderr".to_owned()
    } else {
        format!("last stderr line(s):\n  {}", tail.join("\n  "))
    };
    let log = if logs.count == 0 {
        "no log notifications".to_owned()
    } else {
        format!(
            "{} log notification(s), first: {}",
            logs.count,
            logs.first.join("; ")
        )
    };
    if logs.oversized > 0 {
        report.fail(
            "stderr and log",
            format!(
                "{log}; {} of them over the host's {log_max}-byte bound (the longest {} bytes), which the host cuts; log less per message. {stderr}",
                logs.oversized, logs.longest
            ),
        );
    } else {
        report.pass("stderr and log", format!("{log}; {stderr}"));
    }
    if !logs.forged_events.is_empty() {
        let names: Vec<String> = logs
            .forged_events
            .iter()
            .map(|n| format!("`{}`", n.escape_debug()))
            .collect();
        report.fail(
            "event names",
            format!(
                "the plugin emitted {}, which only the host may emit (engine/, host/, plugins/, kernel/, skills/changed, scenes/changed); the host drops them. Name your events after your plugin, e.g. `<plugin>/changed`",
                names.join(", ")
            ),
        );
    }
}

pub(crate) fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The check's host side: every `command/call` fails, saying why; it records what was called.
pub(crate) fn stub_host(calls: Arc<Mutex<Vec<String>>>) -> impl c2_protocol::RequestHandler {
    move |request: Request, _peer: Peer| {
        let calls = calls.clone();
        async move {
            if request.method != method::COMMAND_CALL {
                return Err(ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!(
                        "method not found: {}; a plugin may call only command/call",
                        request.method
                    ),
                ));
            }
            #[derive(serde::Deserialize)]
            struct Named {
                #[serde(default)]
                name: String,
            }
            let name = c2_protocol::from_raw::<Named>(request.params.as_deref())
                .map(|p| p.name)
                .unwrap_or_default();
            lock(&calls).push(format!("`{name}`"));
            if name == STUB_COMMAND {
                Err(ErrorObject::new(
                    codes::COMMAND_FAILED,
                    format!("{STUB_COMMAND} is not available during {}", hints::CHECK),
                ))
            } else {
                Err(ErrorObject::new(
                    codes::UNKNOWN_COMMAND,
                    format!(
                        "unknown command `{name}`: host.commands lists what the host publishes"
                    ),
                ))
            }
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct LogMessages {
    count: usize,
    first: Vec<String>,
    /// Log messages over the host's bound, and the longest one's length.
    oversized: usize,
    longest: usize,
    /// Host event names the plugin tried to emit, each once.
    forged_events: Vec<String>,
}

pub(crate) async fn collect_logs(
    mut notifications: Notifications,
    logs: Arc<Mutex<LogMessages>>,
    max: usize,
    log_max: usize,
) {
    while let Some(notification) = notifications.recv().await {
        if notification.method == method::EVENT_EMIT {
            #[derive(serde::Deserialize)]
            struct Named {
                name: String,
            }
            if let Ok(Named { name }) = c2_protocol::from_raw(notification.params.as_deref())
                && c2_protocol::is_host_event(&name)
            {
                let mut logs = lock(&logs);
                if !logs.forged_events.contains(&name) && logs.forged_events.len() < max {
                    logs.forged_events.push(name);
                }
            }
            continue;
        }
        if notification.method != method::LOG {
            continue;
        }
        #[derive(serde::Deserialize)]
        struct Line {
            #[serde(default)]
            level: Option<String>,
            #[serde(default)]
            message: String,
        }
        let Line { level, message } = c2_protocol::from_raw(notification.params.as_deref())
            .unwrap_or(Line {
                level: None,
                message: String::new(),
            });
        let level = level.as_deref().unwrap_or("?");
        let mut logs = lock(&logs);
        logs.count += 1;
        if message.len() > log_max {
            logs.oversized += 1;
            logs.longest = logs.longest.max(message.len());
        }
        if logs.first.len() < max {
            logs.first
                .push(format!("{level}: {}", excerpt(&message, 80)));
        }
    }
}

/// What the tap saw on stdout besides protocol frames.
#[derive(Debug, Default)]
pub(crate) struct StdoutLog {
    excerpts: Vec<String>,
    oversized: Option<u64>,
}

/// Reads the plugin's stdout for the peer and, on the side, decodes it once more to keep
/// excerpts of the lines the peer drops (the peer only counts them).
pub(crate) struct StdoutTap<R> {
    pub(crate) inner: R,
    pub(crate) decoder: LineDecoder,
    pub(crate) log: Arc<Mutex<StdoutLog>>,
    pub(crate) max_excerpts: usize,
}

impl<R: AsyncRead + Unpin> AsyncRead for StdoutTap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            let mut fresh = &buf.filled()[before..];
            while let Some(event) = this.decoder.decode(&mut fresh) {
                let mut log = lock(&this.log);
                match event {
                    DecodeEvent::Dropped(line) if log.excerpts.len() < this.max_excerpts => {
                        log.excerpts.push(line.excerpt);
                    }
                    DecodeEvent::Oversized { len } => log.oversized = Some(len),
                    _ => {}
                }
            }
        }
        poll
    }
}

impl<R> std::fmt::Debug for StdoutTap<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdoutTap").finish_non_exhaustive()
    }
}
