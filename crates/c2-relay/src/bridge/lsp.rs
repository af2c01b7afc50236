//! The LSP stdio bridge: Content-Length frames between an editor's streams and a language
//! server the host started, with the LSP exit rule applied to how the session ended.
//!
//! Every body is decoded and re-encoded by c2-protocol's Content-Length codec under the
//! framing limits, so memory stays bounded whatever either side sends; a body over the limit
//! ends the session. The bridge reads only the `method` of the editor's messages (for
//! `shutdown` and `exit`); it answers nothing and tracks no ids.

use std::time::Duration;

use c2_contributions::LanguageServer;
use c2_host::ExitReport;
use c2_protocol::{ContentLengthDecoder, ContentLengthOptions, encode_content_length};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::bodies::{Bodies, Next};

use super::supervise::LspRestartBudget;
#[cfg(doc)]
use super::supervise::MAX_REPLAY_BYTES;

/// How many bytes one read of a bridged stream asks for. Memory stays bounded by the decoder's
/// limits whatever this is; it only sets how much is moved per wake-up.
pub(super) const READ_CHUNK: usize = 64 * 1024;

/// The limits of [`bridge_lsp`] and how it speaks to the editor.
#[derive(Debug, Clone)]
pub struct LspBridgeOptions {
    /// The framing limits enforced in both directions (8 MiB bodies, 8 KiB headers).
    pub framing: ContentLengthOptions,
    /// How long the server's output is still forwarded after the editor closed its input or
    /// sent `exit`, before the server is stopped ([`DEFAULT_DRAIN`]).
    pub drain: Duration,
    /// Who the editor's `window/showMessage` error says it comes from (`<sender>: <message>`);
    /// empty for the message alone.
    pub sender: String,
}

impl Default for LspBridgeOptions {
    fn default() -> Self {
        Self {
            framing: ContentLengthOptions::default(),
            drain: DEFAULT_DRAIN,
            sender: String::new(),
        }
    }
}

/// Copies Content-Length frames both ways, `client_in` to `server` and `server` to
/// `client_out`, re-framing each body under `options.framing`, and watches the editor's
/// `shutdown` and `exit` for the LSP exit rule ([`BridgeReport::verdict`]).
///
/// A body over the limit in either direction ends the session: its bytes are discarded as they
/// arrive, the editor gets a `window/showMessage` error naming the size and the limit, and the
/// server is stopped. Returns when either side ends or fails, after stopping the server.
pub async fn bridge_lsp<R, W>(
    server: LanguageServer,
    client_in: R,
    client_out: W,
    options: LspBridgeOptions,
) -> BridgeReport
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    super::session::run(
        server,
        client_in,
        client_out,
        options,
        None::<(LspRestartBudget, NoRestart)>,
    )
    .await
}

/// No restarts: the type [`bridge_lsp`] gives the session's `run`.
type NoRestart = fn() -> std::future::Ready<Result<LanguageServer, String>>;

/// [`bridge_lsp`] with supervised restarts: a server that ends before the editor sent `exit`
/// (after it had answered the editor at least once, and without the host stopping it, as when
/// its bundle unloads) is restarted through
/// `restart` within `budget`, after the budget's backoff, and brought back to the editor's
/// session by replaying the editor's `initialize` (its answer kept from the editor, which has
/// one), `initialized`, and the `didOpen` and `didChange` notifications of every document
/// still open. The editor's requests the crashed server had not answered get an error answer
/// (code -32803); a request is never sent again.
///
/// Fail-closed: when the session cannot be replayed exactly (the server had asked the editor
/// something still unanswered, or the replay log passed [`MAX_REPLAY_BYTES`]), when the budget
/// is spent, or when `restart` fails, the editor gets a `window/showMessage` error and the
/// session ends with a [`BridgeFailureKind::ProcessExited`] failure giving the reason.
pub async fn bridge_lsp_supervised<R, W, S, F>(
    server: LanguageServer,
    client_in: R,
    client_out: W,
    options: LspBridgeOptions,
    budget: LspRestartBudget,
    restart: S,
) -> BridgeReport
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    S: FnMut() -> F,
    F: Future<Output = Result<LanguageServer, String>>,
{
    super::session::run(
        server,
        client_in,
        client_out,
        options,
        Some((budget, restart)),
    )
    .await
}

/// The default of [`LspBridgeOptions::drain`].
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(2);

/// What the editor said about ending the session (LSP `shutdown` request, `exit` notification).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Lifecycle {
    pub(super) shutdown_requested: bool,
    pub(super) exit_sent: bool,
    /// The server sent the editor at least one message: it was up, so how it ends once the
    /// editor has gone away is its own business.
    pub(super) server_spoke: bool,
}

impl Lifecycle {
    /// Notes `shutdown` and `exit` in one editor message. Only `method` is looked at; the rest
    /// of the body is skipped without being built.
    pub(super) fn observe(&mut self, body: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(borrow)]
            method: Option<std::borrow::Cow<'a, str>>,
        }
        let Ok(Probe {
            method: Some(method),
        }) = serde_json::from_slice::<Probe<'_>>(body)
        else {
            return;
        };
        match method.as_ref() {
            "shutdown" => self.shutdown_requested = true,
            "exit" => self.exit_sent = true,
            _ => {}
        }
    }
}

/// The LSP exit rule applied to how a bridge ended (see [`BridgeReport::verdict`]).
pub(super) fn verdict(
    ended: &BridgeEnd,
    lifecycle: Lifecycle,
    exit: &ExitReport,
    language: &str,
    drain: Duration,
) -> Result<(), BridgeFailure> {
    let fail = |kind: BridgeFailureKind, message: String| Err(BridgeFailure { kind, message });
    match ended {
        BridgeEnd::ClientFrameTooLarge { len, limit } => {
            return fail(
                BridgeFailureKind::FrameTooLarge,
                format!(
                    "the editor sent a {len}-byte message to the {language} language server, over the {limit}-byte limit; the message was discarded and the server stopped (raise the limit or send smaller messages)"
                ),
            );
        }
        BridgeEnd::ServerFrameTooLarge { len, limit } => {
            return fail(
                BridgeFailureKind::FrameTooLarge,
                format!(
                    "the {language} language server sent a {len}-byte message, over the {limit}-byte limit; the message was discarded and the server stopped, so a pending request may never be answered"
                ),
            );
        }
        BridgeEnd::ClientToServerFailed(why) | BridgeEnd::ServerToClientFailed(why) => {
            return fail(
                BridgeFailureKind::BridgeFailed,
                format!("the {language} language-server bridge failed: {why}"),
            );
        }
        BridgeEnd::ClientClosed | BridgeEnd::ServerClosed => {}
    }
    if lifecycle.exit_sent {
        if !lifecycle.shutdown_requested {
            return fail(
                BridgeFailureKind::ExitWithoutShutdown,
                format!(
                    "the editor sent `exit` to the {language} language server without `shutdown` first; by the LSP exit rule the session ends with code 1"
                ),
            );
        }
        if exit.already_exited && exit.exit.success() {
            return Ok(());
        }
        if !exit.already_exited {
            return fail(
                BridgeFailureKind::ProcessExited,
                format!(
                    "the {language} language server did not exit within {} ms of `shutdown` and `exit`; it was stopped ({})",
                    drain.as_millis(),
                    exit.exit
                ),
            );
        }
        return fail(
            BridgeFailureKind::ProcessExited,
            format!(
                "the {language} language server {}; the editor had sent `shutdown` and `exit`, after which the LSP exit rule asks for code 0",
                exit.exit
            ),
        );
    }
    match ended {
        BridgeEnd::ServerClosed => fail(
            BridgeFailureKind::ProcessExited,
            format!(
                "the {language} language server ended before the editor sent `exit`: {}",
                exit.exit
            ),
        ),
        // The editor went away: a clean end, whatever the server's code on its closed input
        // (some servers exit 1 there), once the server had spoken. A server that ended with a
        // failure without ever answering (it died at start, say) is reported.
        _ if exit.already_exited && !exit.exit.success() && !lifecycle.server_spoke => fail(
            BridgeFailureKind::ProcessExited,
            format!("the {language} language server ended: {}", exit.exit),
        ),
        _ => Ok(()),
    }
}

/// Writes a `window/showMessage` error notification to the editor.
pub(super) async fn show_error<W: AsyncWrite + Unpin>(
    to: &mut W,
    sender: &str,
    message: &str,
    framing: ContentLengthOptions,
) -> Result<(), String> {
    let message = if sender.is_empty() {
        message.to_owned()
    } else {
        format!("{sender}: {message}")
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "window/showMessage",
        "params": { "type": 1, "message": message },
    })
    .to_string();
    let mut frame = Vec::new();
    encode_content_length(body.as_bytes(), &framing, &mut frame).map_err(|e| e.to_string())?;
    to.write_all(&frame).await.map_err(|e| e.to_string())?;
    to.flush().await.map_err(|e| e.to_string())
}

/// Frames moved in one direction of a bridge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowStats {
    /// Bodies forwarded.
    pub frames: u64,
    /// Bodies over the limit (at most one: the first ends the bridge).
    pub oversized: u64,
}

/// Why a bridge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BridgeEnd {
    /// The client's input reached its end (the editor went away).
    ClientClosed,
    /// The server's output reached its end (it exited or was stopped).
    ServerClosed,
    /// Reading the client, its framing, or writing to the server failed.
    ClientToServerFailed(String),
    /// Reading the server, its framing, or writing to the client failed.
    ServerToClientFailed(String),
    /// The editor sent a body over the limit.
    ClientFrameTooLarge {
        /// Its declared length in bytes.
        len: u64,
        /// The limit it broke.
        limit: usize,
    },
    /// The server sent a body over the limit.
    ServerFrameTooLarge {
        /// Its declared length in bytes.
        len: u64,
        /// The limit it broke.
        limit: usize,
    },
}

/// Why a bridged session did not end cleanly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeFailure {
    /// Which rule it broke.
    pub kind: BridgeFailureKind,
    /// What happened, for the user.
    pub message: String,
}

/// The kind of a [`BridgeFailure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BridgeFailureKind {
    /// The server ended on its own with a failure, or not with 0 after `shutdown` and `exit`.
    ProcessExited,
    /// The editor sent `exit` without `shutdown` first (LSP exit code 1).
    ExitWithoutShutdown,
    /// A body over the framing limit, in either direction.
    FrameTooLarge,
    /// Reading, framing or writing one of the streams failed.
    BridgeFailed,
}

impl BridgeFailureKind {
    /// The stable snake_case name of the kind: `process_exited`, `exit_without_shutdown`,
    /// `frame_too_large` or `command_failed`.
    pub fn name(self) -> &'static str {
        match self {
            Self::ProcessExited => "process_exited",
            Self::ExitWithoutShutdown => "exit_without_shutdown",
            Self::FrameTooLarge => "frame_too_large",
            Self::BridgeFailed => "command_failed",
        }
    }
}

impl std::fmt::Display for BridgeFailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for BridgeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What [`bridge_lsp`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeReport {
    /// Which side ended it.
    pub ended: BridgeEnd,
    /// Client to server.
    pub to_server: FlowStats,
    /// Server to client.
    pub to_client: FlowStats,
    /// How the server ended.
    pub exit: ExitReport,
    /// The editor sent the `shutdown` request.
    pub shutdown_requested: bool,
    /// The editor sent the `exit` notification.
    pub exit_sent: bool,
    /// The LSP exit rule applied: `Ok` when the editor sent `shutdown` then `exit` and the
    /// server exited 0 by itself, or when the editor went away and the server had not failed
    /// on its own; otherwise why not (`exit` without `shutdown` is a failure, as in LSP where
    /// it means exit code 1).
    pub verdict: Result<(), BridgeFailure>,
    /// The server's last stderr lines when the verdict is a failure (empty otherwise).
    pub stderr_tail: Vec<String>,
    /// How many times a crashed server was restarted ([`bridge_lsp_supervised`]).
    pub restarts: u32,
}

/// Why one direction of a bridge stopped early.
#[derive(Debug)]
pub(super) enum PumpError {
    /// A body over the limit; its bytes were discarded.
    Oversized { len: u64, limit: usize },
    /// Reading, framing or writing failed.
    Failed(String),
}

/// Something that looks at every body a pump moves.
pub(super) trait Observe {
    /// Notes `body`; `false` keeps it from being forwarded.
    fn see(&mut self, body: &[u8]) -> bool;
}

impl Observe for Lifecycle {
    fn see(&mut self, body: &[u8]) -> bool {
        self.observe(body);
        true
    }
}

/// Moves frames from `from` to `to` until `from` ends; a partial frame at the end is dropped.
/// A body over the limit ends it with [`PumpError::Oversized`]. With `observer`, every body
/// is also shown to it (the editor's direction checks for `shutdown` and `exit`).
#[cfg(test)]
pub(super) async fn pump<R, W>(
    from: R,
    to: W,
    framing: ContentLengthOptions,
    stats: &mut FlowStats,
    observer: Option<&mut (dyn Observe + Send)>,
) -> Result<(), PumpError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let decoder = ContentLengthDecoder::new(framing);
    pump_with(decoder, from, to, framing, stats, observer).await
}

/// [`pump`] going on from `decoder`'s state.
pub(super) async fn pump_with<R, W>(
    decoder: ContentLengthDecoder,
    from: R,
    mut to: W,
    framing: ContentLengthOptions,
    stats: &mut FlowStats,
    mut observer: Option<&mut (dyn Observe + Send)>,
) -> Result<(), PumpError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let failed = |what: &str, error: std::io::Error| PumpError::Failed(format!("{what}: {error}"));
    let mut bodies = Bodies::new(from, decoder);
    let mut frame = Vec::new();
    loop {
        match bodies.next().await? {
            Next::Body(body) => {
                if let Some(observer) = observer.as_deref_mut()
                    && !observer.see(&body)
                {
                    continue;
                }
                frame.clear();
                encode_content_length(&body, &framing, &mut frame)
                    .map_err(|e| PumpError::Failed(e.to_string()))?;
                to.write_all(&frame)
                    .await
                    .map_err(|e| failed("cannot write", e))?;
                stats.frames += 1;
            }
            Next::Drained => to.flush().await.map_err(|e| failed("cannot write", e))?,
            Next::Oversized(len) => return Err(oversized(len, framing, stats, &mut to).await),
            Next::End => return Ok(()),
        }
    }
}

/// Ends a direction on a body over the limit, delivering what was already forwarded.
async fn oversized<W: AsyncWrite + Unpin>(
    len: u64,
    framing: ContentLengthOptions,
    stats: &mut FlowStats,
    to: &mut W,
) -> PumpError {
    tracing::warn!(
        len,
        limit = framing.max_body_bytes,
        "a language-server frame over the limit: the session ends"
    );
    stats.oversized += 1;
    let _flushed = to.flush().await;
    PumpError::Oversized {
        len,
        limit: framing.max_body_bytes,
    }
}
