//! One LSP bridge session as it runs: the editor's messages read once and queued for whichever
//! server is current, each server's part of the session, and the restart of a server that
//! crashed (its budget, the error answers, the replay that brings a new server to the
//! session). The public entry points and the exit rule are in `lsp.rs`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use c2_contributions::LanguageServer;
use c2_host::ProcessStdin;
use c2_protocol::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, encode_content_length,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::bodies::{Bodies, Next};
use super::lsp::{
    BridgeEnd, BridgeFailure, BridgeFailureKind, BridgeReport, FlowStats, Lifecycle,
    LspBridgeOptions, Observe, PumpError, READ_CHUNK, pump_with, show_error, verdict,
};
#[cfg(doc)]
use super::lsp::{bridge_lsp, bridge_lsp_supervised};
use super::supervise::{CrashLog, LspRestartBudget, REPLAY_INITIALIZE_TIMEOUT, Tracker};

/// What both directions of a bridge note, shared within its one task.
#[derive(Debug, Default)]
struct Shared {
    lifecycle: Lifecycle,
    /// Present when the bridge restarts crashed servers.
    tracker: Option<Tracker>,
    to_server: FlowStats,
}

/// Locks the shared state (only this bridge's one task does; never held across an await).
trait LockShared {
    fn lock_shared(&self) -> std::sync::MutexGuard<'_, Shared>;
}

impl LockShared for Mutex<Shared> {
    fn lock_shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        c2_lock::lock(self)
    }
}

/// The server-to-editor direction's view of [`Shared`].
struct FromServer<'a>(&'a Mutex<Shared>);

impl Observe for FromServer<'_> {
    fn see(&mut self, body: &[u8]) -> bool {
        let mut shared = self.0.lock_shared();
        shared.lifecycle.server_spoke = true;
        shared
            .tracker
            .as_mut()
            .is_none_or(|tracker| tracker.server_said(body))
    }
}

/// How one server's part of a session ended.
struct Part {
    ended: BridgeEnd,
    output_ended: bool,
}

pub(super) async fn run<R, W, S, F>(
    mut server: LanguageServer,
    client_in: R,
    mut client_out: W,
    options: LspBridgeOptions,
    supervision: Option<(LspRestartBudget, S)>,
) -> BridgeReport
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    S: FnMut() -> F,
    F: Future<Output = Result<LanguageServer, String>>,
{
    let LspBridgeOptions {
        framing,
        drain,
        sender,
    } = options;
    let shared = Mutex::new(Shared {
        tracker: supervision.as_ref().map(|_| Tracker::default()),
        ..Shared::default()
    });
    let mut supervision = supervision.map(|(budget, restart)| (CrashLog::new(budget), restart));
    let mut to_client = FlowStats::default();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(EDITOR_QUEUE);
    let mut editor = std::pin::pin!(read_editor(client_in, framing, tx, &shared));
    let mut editor_done: Option<Result<(), PumpError>> = None;
    let mut restarts = 0u32;
    let mut left_failed: Option<String> = None;
    let mut decoder = ContentLengthDecoder::new(framing);
    let part = loop {
        let part = serve_part(
            &mut server,
            &mut editor,
            &mut editor_done,
            &mut rx,
            &mut client_out,
            framing,
            drain,
            &shared,
            &mut to_client,
            decoder,
        )
        .await;
        // A server that never answered anything failed to start: restarting it would only
        // fail again, so that is reported as it is.
        let crashed = {
            let lifecycle = shared.lock_shared().lifecycle;
            part.ended == BridgeEnd::ServerClosed
                && editor_done.is_none()
                && !lifecycle.exit_sent
                && !lifecycle.shutdown_requested
                && lifecycle.server_spoke
                && !server.stopped_by_host()
        };
        let Some((log, restart)) = supervision.as_mut().filter(|_| crashed) else {
            break part;
        };
        let exit = server.stop().await.exit;
        let language = server.language().to_owned();
        // What the editor sent that the crashed server never took is already in the replay
        // log (documents) or among the requests answered below: delivering it again to the new
        // server would apply it twice.
        while rx.try_recv().is_ok() {}
        let (answers, unreplayable) = {
            let mut shared = shared.lock_shared();
            let tracker = shared.tracker.get_or_insert_with(Tracker::default);
            (tracker.abandon(&language), tracker.unreplayable())
        };
        for answer in answers {
            let _told = write_body(&mut client_out, &answer, framing).await;
        }
        let budget = log.budget();
        let reason = match (log.crashed(Instant::now()), unreplayable) {
            (None, _) => Err(format!(
                "it crashed more than {} times within {} s ({exit})",
                budget.restarts,
                budget.window.as_secs()
            )),
            (Some(_), Some(why)) => Err(format!("it crashed ({exit}) and {why}")),
            (Some(wait), None) => Ok(wait),
        };
        let wait = match reason {
            Ok(wait) => wait,
            Err(reason) => {
                left_failed = Some(reason);
                break part;
            }
        };
        tracing::warn!(language, %exit, ?wait, "the language server crashed: restarting it");
        tokio::time::sleep(wait).await;
        let replacement = match restart().await {
            Ok(replacement) => replacement,
            Err(why) => {
                left_failed = Some(format!("it crashed ({exit}) and cannot restart: {why}"));
                break part;
            }
        };
        restarts += 1;
        // The crashed server is already stopped and reaped.
        let crashed = std::mem::replace(&mut server, replacement);
        drop(crashed);
        match replay(
            &mut server,
            &mut client_out,
            framing,
            &shared,
            &mut to_client,
        )
        .await
        {
            Ok(carried) => decoder = carried,
            Err(why) => {
                left_failed = Some(format!("it crashed ({exit}) and its restart failed: {why}"));
                break Part {
                    ended: BridgeEnd::ServerClosed,
                    output_ended: true,
                };
            }
        }
    };
    let Part {
        ended,
        output_ended,
    } = part;
    let lifecycle = shared.lock_shared().lifecycle;
    if output_ended || lifecycle.exit_sent {
        // The server closed its output or was told to exit: it is ending on its own (its
        // stdout closes a moment before its exit is reaped). Wait for that, bounded, so the
        // report tells a server that ended by itself from one the bridge had to stop.
        let _exited = tokio::time::timeout(drain, server.exited()).await;
    }
    let exit = server.stop().await;
    let verdict = match &left_failed {
        Some(reason) => Err(BridgeFailure {
            kind: BridgeFailureKind::ProcessExited,
            message: format!(
                "the {} language server was left failed after {restarts} restart(s): {reason}",
                server.language()
            ),
        }),
        None => verdict(&ended, lifecycle, &exit, server.language(), drain),
    };
    if let Err(failure) = &verdict
        && (failure.kind == BridgeFailureKind::FrameTooLarge || left_failed.is_some())
    {
        // Tell the editor why the session ends (it cannot otherwise know which of its
        // requests will never be answered).
        let _told = show_error(&mut client_out, &sender, &failure.message, framing).await;
    }
    let stderr_tail = if verdict.is_err() {
        settled_stderr_tail(&server).await
    } else {
        Vec::new()
    };
    let to_server = shared.lock_shared().to_server;
    BridgeReport {
        ended,
        to_server,
        to_client,
        exit,
        shutdown_requested: lifecycle.shutdown_requested,
        exit_sent: lifecycle.exit_sent,
        verdict,
        stderr_tail,
        restarts,
    }
}

/// How many editor messages wait, decoded, for the server to take them.
const EDITOR_QUEUE: usize = 16;

/// Reads the editor's messages, notes them, and queues them for whichever server is current.
/// Ends at the end of the editor's input (dropping the queue's sender, so the server's input
/// is closed once the queue is delivered), or on a framing failure.
async fn read_editor<R: AsyncRead + Unpin>(
    from: R,
    framing: ContentLengthOptions,
    to: mpsc::Sender<Vec<u8>>,
    shared: &Mutex<Shared>,
) -> Result<(), PumpError> {
    let oversized = |len: u64| {
        tracing::warn!(
            len,
            limit = framing.max_body_bytes,
            "a language-server frame over the limit: the session ends"
        );
        shared.lock_shared().to_server.oversized += 1;
        PumpError::Oversized {
            len,
            limit: framing.max_body_bytes,
        }
    };
    let mut bodies = Bodies::new(from, ContentLengthDecoder::new(framing));
    loop {
        match bodies.next().await? {
            Next::Body(body) => {
                {
                    let mut shared = shared.lock_shared();
                    shared.lifecycle.observe(&body);
                    if let Some(tracker) = shared.tracker.as_mut() {
                        tracker.editor_said(&body);
                    }
                }
                if to.send(body).await.is_err() {
                    return Ok(());
                }
            }
            Next::Drained => {}
            Next::Oversized(len) => return Err(oversized(len)),
            Next::End => return Ok(()),
        }
    }
}

/// Writes queued editor messages to the server until the queue ends (the editor is done:
/// the server's input is then closed) or a write fails (the server is gone).
async fn feed(
    queue: &mut mpsc::Receiver<Vec<u8>>,
    stdin: &mut ProcessStdin,
    close_stdin: impl FnOnce(),
    framing: ContentLengthOptions,
    shared: &Mutex<Shared>,
) -> Result<(), String> {
    while let Some(body) = queue.recv().await {
        write_body(stdin, &body, framing).await?;
        shared.lock_shared().to_server.frames += 1;
    }
    close_stdin();
    Ok(())
}

/// Bridges the editor to one server until that server's part ends.
#[expect(
    clippy::too_many_arguments,
    reason = "one session's streams and state, borrowed for one server's part of it"
)]
async fn serve_part<E, W>(
    server: &mut LanguageServer,
    editor: &mut std::pin::Pin<&mut E>,
    editor_done: &mut Option<Result<(), PumpError>>,
    queue: &mut mpsc::Receiver<Vec<u8>>,
    client_out: &mut W,
    framing: ContentLengthOptions,
    drain: Duration,
    shared: &Mutex<Shared>,
    to_client: &mut FlowStats,
    decoder: ContentLengthDecoder,
) -> Part
where
    E: Future<Output = Result<(), PumpError>>,
    W: AsyncWrite + Unpin,
{
    let (stdin, stdout, process) = server.pipes();
    let mut observer = FromServer(shared);
    let mut down = std::pin::pin!(pump_with(
        decoder,
        stdout,
        client_out,
        framing,
        to_client,
        Some(&mut observer),
    ));
    let mut feeder = std::pin::pin!(feed(
        queue,
        stdin,
        move || process.close_stdin(),
        framing,
        shared,
    ));
    loop {
        tokio::select! {
            result = editor.as_mut(), if editor_done.is_none() => {
                match result {
                    Ok(()) => *editor_done = Some(Ok(())),
                    Err(PumpError::Oversized { len, limit }) => {
                        *editor_done = Some(Err(PumpError::Oversized { len, limit }));
                        // What the editor sent before goes to the server first.
                        let _fed = tokio::time::timeout(drain, &mut feeder).await;
                        return Part { ended: BridgeEnd::ClientFrameTooLarge { len, limit }, output_ended: false };
                    }
                    Err(PumpError::Failed(reason)) => {
                        *editor_done = Some(Err(PumpError::Failed(reason.clone())));
                        return Part { ended: BridgeEnd::ClientToServerFailed(reason), output_ended: false };
                    }
                }
            }
            result = &mut feeder => {
                match result {
                    // The editor is done and the server has seen the end of its input. Let it
                    // deliver what it has already answered, for at most the drain time,
                    // before it is stopped.
                    Ok(()) => {
                        let output_ended = tokio::time::timeout(drain, &mut down).await.is_ok();
                        return Part { ended: BridgeEnd::ClientClosed, output_ended };
                    }
                    // The server's input failed: it is most likely gone; its output says.
                    Err(reason) => {
                        return match tokio::time::timeout(drain, &mut down).await {
                            Ok(Ok(())) => Part { ended: BridgeEnd::ServerClosed, output_ended: true },
                            _ => Part { ended: BridgeEnd::ClientToServerFailed(reason), output_ended: false },
                        };
                    }
                }
            }
            result = &mut down => {
                return match result {
                    Ok(()) => Part { ended: BridgeEnd::ServerClosed, output_ended: true },
                    Err(PumpError::Oversized { len, limit }) => Part { ended: BridgeEnd::ServerFrameTooLarge { len, limit }, output_ended: false },
                    Err(PumpError::Failed(reason)) => Part { ended: BridgeEnd::ServerToClientFailed(reason), output_ended: false },
                };
            }
        }
    }
}

/// Brings a restarted server to the editor's session (see [`bridge_lsp_supervised`]): sends
/// the editor's `initialize` and forwards what the server says until it answers it (that
/// answer is kept), then the rest of the replay log. Returns the decoder of the server's
/// output, holding what followed the answer.
async fn replay<W: AsyncWrite + Unpin>(
    server: &mut LanguageServer,
    client_out: &mut W,
    framing: ContentLengthOptions,
    shared: &Mutex<Shared>,
    to_client: &mut FlowStats,
) -> Result<ContentLengthDecoder, String> {
    let (initialize, rest) = match shared.lock_shared().tracker.as_mut() {
        Some(tracker) => tracker.replay(),
        None => (None, Vec::new()),
    };
    let mut decoder = ContentLengthDecoder::new(framing);
    let Some(initialize) = initialize else {
        return Ok(decoder);
    };
    let (stdin, stdout, _) = server.pipes();
    write_body(stdin, &initialize, framing).await?;
    let answered = async {
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            let read = stdout.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if read == 0 {
                return Err("it ended before answering `initialize`".to_owned());
            }
            let mut input = &chunk[..read];
            while let Some(event) = decoder.decode(&mut input).map_err(|e| e.to_string())? {
                let ContentLengthEvent::Body(body) = event else {
                    return Err("its answer to `initialize` is over the frame limit".to_owned());
                };
                if FromServer(shared).see(&body) {
                    write_body(client_out, &body, framing).await?;
                    to_client.frames += 1;
                }
            }
            let waiting = shared
                .lock_shared()
                .tracker
                .as_ref()
                .is_some_and(|tracker| tracker.swallow.is_some());
            if !waiting {
                // Every complete body of this read was forwarded; a partial one stays in the
                // decoder for the bridge to go on with.
                return Ok(());
            }
        }
    };
    tokio::time::timeout(REPLAY_INITIALIZE_TIMEOUT, answered)
        .await
        .map_err(|_| {
            format!(
                "it did not answer `initialize` within {} s",
                REPLAY_INITIALIZE_TIMEOUT.as_secs()
            )
        })??;
    for body in rest {
        write_body(stdin, &body, framing).await?;
    }
    Ok(decoder)
}

/// Writes one body, framed, and flushes.
async fn write_body<W: AsyncWrite + Unpin>(
    to: &mut W,
    body: &[u8],
    framing: ContentLengthOptions,
) -> Result<(), String> {
    let mut frame = Vec::with_capacity(body.len() + 32);
    encode_content_length(body, &framing, &mut frame).map_err(|e| e.to_string())?;
    to.write_all(&frame).await.map_err(|e| e.to_string())?;
    to.flush().await.map_err(|e| e.to_string())
}

/// The stderr tail once the drain of the (now dead) group's stderr has caught up: the reaper
/// can report the exit before the last lines were read, so wait a moment, bounded.
async fn settled_stderr_tail(server: &LanguageServer) -> Vec<String> {
    let mut tail = server.stderr_tail();
    for _ in 0..STDERR_SETTLE_STEPS {
        tokio::time::sleep(STDERR_SETTLE_STEP).await;
        let now = server.stderr_tail();
        if now == tail && !now.is_empty() {
            break;
        }
        tail = now;
    }
    tail
}

/// How long [`bridge_lsp`] waits, at most, for a failed server's last stderr lines:
/// this many steps of [`STDERR_SETTLE_STEP`] (only on a failure, never on a clean end).
const STDERR_SETTLE_STEPS: u32 = 10;
const STDERR_SETTLE_STEP: Duration = Duration::from_millis(20);
