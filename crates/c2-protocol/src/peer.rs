//! The async peer: one per connection, symmetric, with every queue bounded.
//!
//! The request path is built for few thread wake-ups and few system calls. A caller encodes its
//! frame and appends it to the connection's outbox; one writer task on the same runtime drains
//! the outbox with a single `write` for everything queued since its last turn, so a burst of
//! calls costs one `write` (and one wake-up of the other side), not one per call. A lone call
//! costs one task poll more than writing in place, and no extra thread wake-up. The single
//! reader task parses each response and completes the caller's oneshot directly.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use c2_lock::lock;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError, mpsc, oneshot};
use tokio::task::AbortHandle;
use tracing::Instrument;

use crate::error::{CallError, CloseReason, Error, FlushError};
use crate::frame::{DecodeEvent, DroppedLine, FrameOptions, LineDecoder, encode_line};
use crate::message::{
    ErrorObject, Id, InvalidMessage, Message, Notification, RawJson, Request, Response, codes,
};

/// What a [`Peer`] does when the other side ends its output (its reader reaches end of file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InputEnd {
    /// The whole connection closes with [`CloseReason::StreamClosed`]: every pending call
    /// fails and the writer is dropped with whatever is still queued. This is the host's
    /// side: when a plugin's stdout closes, the plugin has nothing more to say and is gone.
    #[default]
    Close,
    /// A half-close, for a side that must still answer what it was asked (a plugin whose
    /// stdin closed right after the host's last request). Reading stops; this side's own
    /// pending requests fail at once with [`CloseReason::StreamClosed`], as does every later
    /// one, since nothing can answer them; incoming requests already taken in are still
    /// answered and notifications still go out. [`Peer::input_ended`] says when this happens;
    /// the connection stays open until the owner calls [`Peer::close`] (after
    /// [`Peer::flush`]) or a write fails. No queue can grow any more: nothing new comes in.
    HalfClose,
}

/// The bounds of one connection; the defaults are decisions.md's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerOptions {
    /// Framing limits for both directions.
    pub frame: FrameOptions,
    /// Outgoing requests awaiting a response (default 256); the excess fails fast with
    /// [`CallError::Busy`].
    pub max_outgoing_requests: usize,
    /// Incoming requests handled at once (default 32); the excess is answered `-32003`.
    pub max_incoming_requests: usize,
    /// Bytes of incoming requests (method and raw params) handled at once (default 8 MiB, one
    /// frame); one that would go over is answered `-32003` like the excess in number. A request
    /// always fits when none is being handled.
    pub max_incoming_request_bytes: usize,
    /// Incoming notifications waiting for the owner (default 1,024); the excess is dropped and
    /// counted.
    pub notification_queue: usize,
    /// Bytes of incoming notifications (method and raw params) waiting for the owner (default
    /// 16 MiB); one that would go over is dropped and counted like one finding the queue full.
    /// A notification always fits into an empty queue.
    pub max_queued_notification_bytes: usize,
    /// Outbound messages queued for the writer (default 1,024). Requests and responses wait for
    /// room; notifications fail with [`CallError::QueueFull`].
    pub outbound_queue: usize,
    /// Bytes of outbound frames queued or being written (default 16 MiB). A request that would
    /// go over waits for room; a response or notification that would go over closes the
    /// connection with [`CloseReason::OutboundOverflow`], since the other side is asking for
    /// answers it does not read. A frame always fits into an empty queue.
    pub max_outbound_bytes: usize,
    /// Dropped-line warnings logged per second (default 10); the rest are summarised.
    pub dropped_line_warnings_per_second: u32,
    /// Bytes asked of the reader per read (default 64 KiB).
    pub read_chunk_bytes: usize,
    /// What the end of input does (default [`InputEnd::Close`]). A read error or an oversized
    /// frame closes the connection either way.
    pub on_input_end: InputEnd,
}

impl Default for PeerOptions {
    fn default() -> Self {
        PeerOptions {
            frame: FrameOptions::default(),
            max_outgoing_requests: 256,
            max_incoming_requests: 32,
            max_incoming_request_bytes: 8 * 1024 * 1024,
            notification_queue: 1024,
            max_queued_notification_bytes: 16 * 1024 * 1024,
            outbound_queue: 1024,
            max_outbound_bytes: 16 * 1024 * 1024,
            dropped_line_warnings_per_second: 10,
            read_chunk_bytes: 64 * 1024,
            on_input_end: InputEnd::Close,
        }
    }
}

/// A snapshot of a peer's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerStats {
    /// Lines read that held a JSON object (valid message or not).
    pub frames_in: u64,
    /// Frames written.
    pub frames_out: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Lines dropped: blank, not UTF-8, not JSON, not an object.
    pub dropped_lines: u64,
    /// Responses dropped: unknown, late or duplicate id.
    pub dropped_responses: u64,
    /// Incoming notifications dropped because the owner's queue was full or gone.
    pub dropped_notifications: u64,
    /// JSON objects that were not valid messages.
    pub invalid_messages: u64,
    /// Incoming requests answered `-32003` because the handler bound was reached.
    pub busy_rejections: u64,
    /// Error answers (busy, invalid request) not sent because the outbound queue was full.
    pub dropped_answers: u64,
}

#[derive(Debug, Default)]
struct Counters {
    frames_in: AtomicU64,
    frames_out: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    dropped_lines: AtomicU64,
    dropped_responses: AtomicU64,
    dropped_notifications: AtomicU64,
    invalid_messages: AtomicU64,
    busy_rejections: AtomicU64,
    dropped_answers: AtomicU64,
}

fn bump(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// The queue of incoming notifications a [`Peer`] hands its owner, bounded in items
/// ([`PeerOptions::notification_queue`]) and in bytes
/// ([`PeerOptions::max_queued_notification_bytes`]).
#[derive(Debug)]
pub struct Notifications {
    queue: mpsc::Receiver<Notification>,
    bytes: Arc<AtomicUsize>,
}

impl Notifications {
    /// The next notification; `None` once the connection is closed and the queue is empty.
    pub async fn recv(&mut self) -> Option<Notification> {
        let notification = self.queue.recv().await?;
        self.taken(&notification);
        Some(notification)
    }

    /// The next notification if one is queued now.
    pub fn try_recv(&mut self) -> Option<Notification> {
        let notification = self.queue.try_recv().ok()?;
        self.taken(&notification);
        Some(notification)
    }

    fn taken(&self, notification: &Notification) {
        self.bytes
            .fetch_sub(notification_bytes(notification), Ordering::Relaxed);
    }
}

/// What a queued notification is charged: its method and raw params.
fn notification_bytes(notification: &Notification) -> usize {
    notification.method.len() + notification.params.as_ref().map_or(0, |p| p.get().len())
}

/// The future a [`RequestHandler`] returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;

/// Answers incoming requests. Each call runs in its own task, at most
/// [`PeerOptions::max_incoming_requests`] at once. Closures `Fn(Request, Peer) -> impl Future`
/// implement it.
pub trait RequestHandler: Send + Sync + 'static {
    /// Answers `request`; `peer` is this connection, so the handler may call back.
    fn handle(&self, request: Request, peer: Peer) -> HandlerFuture;
}

impl<F, Fut> RequestHandler for F
where
    F: Fn(Request, Peer) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
{
    fn handle(&self, request: Request, peer: Peer) -> HandlerFuture {
        Box::pin(self(request, peer))
    }
}

/// A handler for a side that serves no requests: answers every one `-32601`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RejectRequests;

impl RequestHandler for RejectRequests {
    fn handle(&self, request: Request, _peer: Peer) -> HandlerFuture {
        let message = format!("method `{}` is not handled here", request.method);
        Box::pin(async move { Err(ErrorObject::new(codes::METHOD_NOT_FOUND, message)) })
    }
}

type Reply = oneshot::Sender<Result<RawJson, ErrorObject>>;

/// Whole frames waiting for the writer task, back to back in send order.
#[derive(Default)]
struct Outbox {
    bytes: Vec<u8>,
    frames: usize,
    /// Bytes the writer took and is still writing; they count against the byte bound.
    in_flight: usize,
}

/// The kind of an outbound frame, which decides how it waits for room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Waits for a write slot and for bytes of room.
    Request,
    /// Waits for a write slot; closes the connection when it would overflow the byte bound.
    Response,
    /// Waits for nothing: a full queue refuses it, an overflow closes the connection.
    Notification,
}

/// Whether a frame went into the outbox.
enum Enqueued {
    Yes,
    /// It would have gone over the byte bound; nothing was appended.
    Full,
}

/// A drained outbox keeps at most this much capacity, so one burst of large frames does not
/// pin its memory for the life of the connection.
const KEPT_OUTBOX_CAPACITY: usize = 256 * 1024;

struct Shared {
    options: PeerOptions,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Reply>>,
    reason: OnceLock<CloseReason>,
    closed: Notify,
    /// Why reading stopped: [`CloseReason::StreamClosed`] for a half-close, else the close
    /// reason. Set before `reason` on a half-close, with it on a close.
    input_end: OnceLock<CloseReason>,
    input_ended: Notify,
    /// Incoming requests taken in whose answer is not yet queued.
    serving: AtomicUsize,
    /// Wakes [`Peer::flush`]: a batch was written, a request answered, or the connection closed.
    settled: Notify,
    outgoing: Semaphore,
    incoming: Arc<Semaphore>,
    /// One permit per frame queued or being written; the writer returns them once written.
    write_slots: Arc<Semaphore>,
    outbox: Mutex<Outbox>,
    /// Wakes the writer task when the outbox stops being empty.
    outbox_ready: Notify,
    /// Wakes requests waiting for bytes of room in the outbox.
    outbox_room: Notify,
    reader: Mutex<Option<AbortHandle>>,
    writer: Mutex<Option<AbortHandle>>,
    counters: Counters,
    handler: Box<dyn RequestHandler>,
    notifications: mpsc::Sender<Notification>,
    /// Bytes of the notifications in that queue; [`Notifications`] takes them off.
    queued_notification_bytes: Arc<AtomicUsize>,
    /// Bytes of the incoming requests being handled.
    incoming_bytes: AtomicUsize,
    warned_jsonrpc_absent: AtomicBool,
}

/// One end of a connection: sends requests and notifications, correlates responses, serves
/// incoming requests through a [`RequestHandler`] and queues incoming notifications.
///
/// Cloning is cheap and every clone is the same connection. Dropping the clones does not close
/// it; [`Peer::close`] does, as do the stream ending (unless [`PeerOptions::on_input_end`] is
/// [`InputEnd::HalfClose`]), a read error, an oversized frame and a write error.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("close_reason", &self.close_reason())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// Starts a peer over `reader` and `writer`; returns it with the queue of incoming
    /// notifications. The reader task runs in the current span.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn new<R, W>(
        reader: R,
        writer: W,
        handler: impl RequestHandler,
        options: PeerOptions,
    ) -> (Peer, Notifications)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        // tokio's queues cannot be empty or larger than this; out-of-range options are clamped.
        let bound = |n: usize| n.clamp(1, Semaphore::MAX_PERMITS);
        let (notifications, queue) = mpsc::channel(bound(options.notification_queue));
        let queued_notification_bytes = Arc::new(AtomicUsize::new(0));
        let queue = Notifications {
            queue,
            bytes: Arc::clone(&queued_notification_bytes),
        };
        let shared = Arc::new(Shared {
            options,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            reason: OnceLock::new(),
            closed: Notify::new(),
            input_end: OnceLock::new(),
            input_ended: Notify::new(),
            serving: AtomicUsize::new(0),
            settled: Notify::new(),
            outgoing: Semaphore::new(options.max_outgoing_requests.min(Semaphore::MAX_PERMITS)),
            incoming: Arc::new(Semaphore::new(
                options.max_incoming_requests.min(Semaphore::MAX_PERMITS),
            )),
            write_slots: Arc::new(Semaphore::new(bound(options.outbound_queue))),
            outbox: Mutex::new(Outbox::default()),
            outbox_ready: Notify::new(),
            outbox_room: Notify::new(),
            reader: Mutex::new(None),
            writer: Mutex::new(None),
            counters: Counters::default(),
            handler: Box::new(handler),
            notifications,
            queued_notification_bytes,
            incoming_bytes: AtomicUsize::new(0),
            warned_jsonrpc_absent: AtomicBool::new(false),
        });
        let peer = Peer { shared };
        let span = tracing::Span::current();
        let writing = tokio::spawn(write_loop(peer.clone(), writer).instrument(span.clone()));
        peer.keep_task(&peer.shared.writer, &writing);
        let reading = tokio::spawn(read_loop(peer.clone(), reader).instrument(span));
        peer.keep_task(&peer.shared.reader, &reading);
        (peer, queue)
    }

    /// Sends a request and waits for its response.
    ///
    /// Fails at once with [`CallError::Busy`] when the in-flight bound is reached, and waits for
    /// room in the outbound queue. Dropping the future forgets the request; a late response is
    /// then dropped and counted.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, CallError> {
        let raw = self.send_request(method, params.as_ref()).await?;
        serde_json::from_str(raw.get()).map_err(CallError::Decode)
    }

    /// [`Peer::request`] returning the result as the raw JSON text it arrived as, for a caller
    /// that reads it into its own type (or passes it on) without building a [`Value`].
    pub async fn request_raw<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<RawJson, CallError> {
        self.send_request(method, Some(params)).await
    }

    /// [`Peer::request`] with params serialized straight from `params` (any serializable
    /// struct), without building a [`Value`] first.
    pub async fn request_with<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Value, CallError> {
        let raw = self.send_request(method, Some(params)).await?;
        serde_json::from_str(raw.get()).map_err(CallError::Decode)
    }

    async fn send_request<P: Serialize>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<RawJson, CallError> {
        let s = &*self.shared;
        self.check_open()?;
        let _in_flight = s.outgoing.try_acquire().map_err(|_| CallError::Busy {
            limit: s.options.max_outgoing_requests,
        })?;
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&s.pending);
            // Checked under the lock `close` and a half-close drain, so no waiter is ever left
            // behind.
            self.check_open()?;
            self.check_input()?;
            pending.insert(id, tx);
        }
        let _forget = Forget { shared: s, id };
        let request = OutgoingRequest { id, method, params };
        if s.options.on_input_end == InputEnd::HalfClose {
            // A request still waiting for room when input ends could never be answered.
            tokio::select! {
                written = self.write_message(&request, Kind::Request, 0) => written?,
                reason = self.input_ended() => return Err(CallError::Closed(reason)),
            }
        } else {
            self.write_message(&request, Kind::Request, 0).await?;
        }
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(CallError::Remote(error)),
            Err(_) => Err(CallError::Closed(
                self.close_reason()
                    .or_else(|| s.input_end.get().copied())
                    .unwrap_or(CloseReason::Cancelled),
            )),
        }
    }

    /// Sends a notification. Fails with [`CallError::QueueFull`] rather than waiting when the
    /// outbound queue is full.
    ///
    /// A notification that would take the queue over [`PeerOptions::max_outbound_bytes`]
    /// closes the connection with [`CloseReason::OutboundOverflow`].
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), CallError> {
        self.check_open()?;
        let message = OutgoingNotification {
            method,
            params: params.as_ref(),
        };
        self.write_message(&message, Kind::Notification, 0).await
    }

    /// Closes the connection with [`CloseReason::Cancelled`]: every pending call fails, the reader
    /// stops, and the writer is dropped at once (for a child process: its stdin closes), with any
    /// frame still queued or half written. Callers of [`Peer::notify`] learn of a frame only that
    /// it was queued; [`Peer::flush`] first to have it written.
    pub fn close(&self) {
        self.close_with(CloseReason::Cancelled);
    }

    /// Why the connection closed, or `None` while it is open.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.reason.get().copied()
    }

    /// Waits until the connection closes and returns why.
    pub async fn closed(&self) -> CloseReason {
        let notified = self.shared.closed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(reason) = self.close_reason() {
            return reason;
        }
        notified.await;
        self.close_reason().unwrap_or(CloseReason::Cancelled)
    }

    /// Waits until this side stops reading and returns why: [`CloseReason::StreamClosed`] when
    /// input ended in an [`InputEnd::HalfClose`] (the connection is still open for writing),
    /// else the reason the connection closed. Unlike [`Peer::closed`], it resolves at a
    /// half-close.
    pub async fn input_ended(&self) -> CloseReason {
        let s = &*self.shared;
        let notified = s.input_ended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(reason) = s.input_end.get() {
            return *reason;
        }
        notified.await;
        s.input_end.get().copied().unwrap_or(CloseReason::Cancelled)
    }

    /// Waits, for at most `within`, until every incoming request already taken in has its
    /// answer queued and every queued frame is written (flushed to the writer). A handler that
    /// is still running holds it up; so does another side that does not read.
    ///
    /// # Errors
    ///
    /// [`FlushError::Closed`] when the connection closes first, [`FlushError::TimedOut`] when
    /// `within` passes first.
    pub async fn flush(&self, within: Duration) -> Result<(), FlushError> {
        let s = &*self.shared;
        let settle = async {
            loop {
                // Registered before looking, so progress made between the look and the wait
                // is seen.
                let progress = s.settled.notified();
                tokio::pin!(progress);
                progress.as_mut().enable();
                if let Some(reason) = self.close_reason() {
                    return Err(FlushError::Closed(reason));
                }
                if self.unsettled() == (0, 0) {
                    return Ok(());
                }
                progress.await;
            }
        };
        match tokio::time::timeout(within, settle).await {
            Ok(settled) => settled,
            Err(_) => {
                let (unanswered, queued_bytes) = self.unsettled();
                Err(FlushError::TimedOut {
                    within,
                    unanswered,
                    queued_bytes,
                })
            }
        }
    }

    /// Incoming requests not yet answered, and bytes queued or being written.
    fn unsettled(&self) -> (usize, usize) {
        let s = &*self.shared;
        let outbox = lock(&s.outbox);
        (
            s.serving.load(Ordering::Acquire),
            outbox.bytes.len() + outbox.in_flight,
        )
    }

    /// The counters, read now.
    pub fn stats(&self) -> PeerStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PeerStats {
            frames_in: get(&c.frames_in),
            frames_out: get(&c.frames_out),
            bytes_in: get(&c.bytes_in),
            bytes_out: get(&c.bytes_out),
            dropped_lines: get(&c.dropped_lines),
            dropped_responses: get(&c.dropped_responses),
            dropped_notifications: get(&c.dropped_notifications),
            invalid_messages: get(&c.invalid_messages),
            busy_rejections: get(&c.busy_rejections),
            dropped_answers: get(&c.dropped_answers),
        }
    }

    fn check_open(&self) -> Result<(), CallError> {
        match self.close_reason() {
            Some(reason) => Err(CallError::Closed(reason)),
            None => Ok(()),
        }
    }

    /// A request needs an answer, so it needs input: fails once input ended.
    fn check_input(&self) -> Result<(), CallError> {
        match self.shared.input_end.get() {
            Some(reason) => Err(CallError::Closed(*reason)),
            None => Ok(()),
        }
    }

    /// The half-close: reading has stopped, so every request of ours still waiting for an
    /// answer fails now; answers and notifications still go out.
    fn end_input(&self) {
        let s = &*self.shared;
        let waiters = {
            let mut pending = lock(&s.pending);
            if s.reason.get().is_some() || s.input_end.set(CloseReason::StreamClosed).is_err() {
                return;
            }
            std::mem::take(&mut *pending)
        };
        // Dropping the senders wakes every waiter, which then reads the input's end.
        drop(waiters);
        s.input_ended.notify_waiters();
    }

    /// The single close path: the first reason wins, every waiter resolves with it.
    fn close_with(&self, reason: CloseReason) {
        let s = &*self.shared;
        let waiters = {
            let mut pending = lock(&s.pending);
            if s.reason.set(reason).is_err() {
                return;
            }
            // Reading stops with the connection (it may have stopped already, at a half-close).
            let _ = s.input_end.set(reason);
            std::mem::take(&mut *pending)
        };
        // Dropping the senders wakes every waiter, which then reads the reason.
        drop(waiters);
        for task in [&s.reader, &s.writer] {
            if let Some(task) = lock(task).take() {
                task.abort();
            }
        }
        // Frames still queued are dropped with the writer; nobody waits for a slot any more.
        s.write_slots.close();
        s.outbox_room.notify_waiters();
        s.closed.notify_waiters();
        s.input_ended.notify_waiters();
        s.settled.notify_waiters();
    }

    /// Keeps a connection task's handle for [`Peer::close_with`], or stops the task at once if
    /// the connection already closed.
    fn keep_task(&self, slot: &Mutex<Option<AbortHandle>>, task: &tokio::task::JoinHandle<()>) {
        let mut slot = lock(slot);
        if self.shared.reason.get().is_some() {
            task.abort();
        } else {
            *slot = Some(task.abort_handle());
        }
    }

    /// Queues a message for the writer task. A request waits for a slot and for bytes of room;
    /// a response waits for a slot and closes the connection when it would overflow the byte
    /// bound; a notification waits for neither (a full queue fails with
    /// [`CallError::QueueFull`], an overflow closes the connection).
    async fn write_message(
        &self,
        message: &impl Serialize,
        kind: Kind,
        size_hint: usize,
    ) -> Result<(), CallError> {
        let s = &*self.shared;
        let wait_for_slot = kind != Kind::Notification;
        // Closing the connection closes the semaphore, which ends any wait for a slot.
        let slot = if wait_for_slot {
            s.write_slots.acquire().await.ok()
        } else {
            match s.write_slots.try_acquire() {
                Ok(slot) => Some(slot),
                Err(TryAcquireError::NoPermits) => {
                    return Err(CallError::QueueFull {
                        limit: s.options.outbound_queue,
                    });
                }
                Err(TryAcquireError::Closed) => None,
            }
        };
        self.check_open()?;
        let Some(slot) = slot else {
            return Err(CallError::Closed(CloseReason::Cancelled));
        };
        loop {
            // Registered before looking, so room made between the look and the wait is seen.
            let room = s.outbox_room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.enqueue(message, size_hint)? {
                Enqueued::Yes => break,
                Enqueued::Full if kind == Kind::Request => {
                    room.await;
                    self.check_open()?;
                }
                Enqueued::Full => {
                    let reason = CloseReason::OutboundOverflow {
                        limit: s.options.max_outbound_bytes,
                    };
                    tracing::warn!(
                        limit = s.options.max_outbound_bytes,
                        "closing the connection: the other side stopped reading while answers and notifications for it piled up"
                    );
                    self.close_with(reason);
                    return Err(CallError::Closed(reason));
                }
            }
        }
        // The writer task gives the slot back once the frame is written.
        slot.forget();
        Ok(())
    }

    /// Encodes a message as one frame at the end of the outbox, or appends nothing and fails;
    /// the caller has taken its write slot. Encoding in place means no frame buffer is
    /// allocated per message: the outbox's memory is reused from one turn to the next. A frame
    /// that would take the queued bytes over the bound is taken back and reported
    /// [`Enqueued::Full`], unless nothing else is queued.
    ///
    /// `size_hint` is a lower bound of the frame's length when the caller knows one (an error
    /// answer quoting megabytes): a frame that cannot fit is refused before it is encoded, and
    /// one that may fit gets its room at once rather than by doubling (and copying) the outbox.
    fn enqueue(&self, message: &impl Serialize, size_hint: usize) -> Result<Enqueued, Error> {
        let s = &*self.shared;
        let was_empty = {
            let mut outbox = lock(&s.outbox);
            let start = outbox.bytes.len();
            if size_hint > KEPT_OUTBOX_CAPACITY {
                let queued = outbox.in_flight + start;
                if queued > 0 && queued + size_hint > s.options.max_outbound_bytes {
                    return Ok(Enqueued::Full);
                }
                outbox.bytes.reserve(size_hint);
            }
            encode_line(message, &s.options.frame, &mut outbox.bytes)?;
            let queued = outbox.in_flight + outbox.bytes.len();
            if queued > s.options.max_outbound_bytes && outbox.in_flight + start > 0 {
                outbox.bytes.truncate(start);
                if outbox.bytes.capacity() > KEPT_OUTBOX_CAPACITY && start == 0 {
                    outbox.bytes = Vec::new();
                }
                return Ok(Enqueued::Full);
            }
            outbox.frames += 1;
            outbox.frames == 1
        };
        // A non-empty outbox has already woken the writer, which has not drained it yet.
        if was_empty {
            s.outbox_ready.notify_one();
        }
        Ok(Enqueued::Yes)
    }

    async fn respond(&self, id: Id, outcome: Result<Value, ErrorObject>) {
        let response = OutgoingResponse {
            id: &id,
            outcome: outcome.as_ref(),
        };
        // An error's size is known up front (a result's is not without encoding it twice).
        let size_hint = outcome.as_ref().err().map_or(0, |e| {
            e.message.len() + e.data.as_ref().map_or(0, |d| d.get().len())
        });
        // A closed connection has no one left to tell; an answer too large to encode is
        // replaced by an error saying so.
        if let Err(CallError::Encode(e)) = self
            .write_message(&response, Kind::Response, size_hint)
            .await
        {
            let error = ErrorObject::new(codes::COMMAND_FAILED, e.to_string());
            let fallback = OutgoingResponse {
                id: &id,
                outcome: Err(&error),
            };
            let _ = self.write_message(&fallback, Kind::Response, 0).await;
        }
    }

    /// Answers an error without waiting: sent only if the outbound queue has room, so a flood of
    /// bad requests cannot make the reader wait or pile up tasks.
    fn answer_at_once(&self, id: Id, error: ErrorObject) {
        let s = &*self.shared;
        if self.close_reason().is_some() {
            return;
        }
        let Ok(slot) = s.write_slots.try_acquire() else {
            bump(&s.counters.dropped_answers, 1);
            return;
        };
        let answer = OutgoingResponse {
            id: &id,
            outcome: Err(&error),
        };
        match self.enqueue(&answer, 0) {
            Ok(Enqueued::Yes) => slot.forget(),
            Ok(Enqueued::Full) => bump(&s.counters.dropped_answers, 1),
            Err(_) => {}
        }
    }

    fn dispatch(&self, event: DecodeEvent, warnings: &mut WarnLimiter) -> Option<CloseReason> {
        let s = &*self.shared;
        match event {
            DecodeEvent::Message {
                message,
                jsonrpc_absent,
            } => {
                bump(&s.counters.frames_in, 1);
                if jsonrpc_absent && !s.warned_jsonrpc_absent.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "the other side omits `jsonrpc`; accepted, but it should send \"jsonrpc\": \"2.0\""
                    );
                }
                match message {
                    Message::Request(request) => self.serve(request),
                    Message::Notification(n) => self.queue_notification(n),
                    Message::Response(response) => self.complete(response),
                }
            }
            DecodeEvent::Invalid(invalid) => {
                bump(&s.counters.frames_in, 1);
                bump(&s.counters.invalid_messages, 1);
                self.reject_invalid(invalid);
            }
            DecodeEvent::Dropped(line) => {
                bump(&s.counters.dropped_lines, 1);
                warnings.dropped(&line);
            }
            DecodeEvent::Oversized { len } => {
                return Some(CloseReason::FrameTooLarge {
                    len,
                    limit: s.options.frame.max_frame_bytes,
                });
            }
        }
        None
    }

    /// Hands a notification to the owner's queue, or drops and counts it when the queue is
    /// full in items or bytes.
    fn queue_notification(&self, notification: Notification) {
        let s = &*self.shared;
        let size = notification_bytes(&notification);
        let queued = s.queued_notification_bytes.load(Ordering::Relaxed);
        if queued > 0 && queued.saturating_add(size) > s.options.max_queued_notification_bytes {
            bump(&s.counters.dropped_notifications, 1);
            return;
        }
        s.queued_notification_bytes
            .fetch_add(size, Ordering::Relaxed);
        if s.notifications.try_send(notification).is_err() {
            s.queued_notification_bytes
                .fetch_sub(size, Ordering::Relaxed);
            bump(&s.counters.dropped_notifications, 1);
        }
    }

    fn serve(&self, request: Request) {
        let s = &*self.shared;
        let Ok(permit) = Arc::clone(&s.incoming).try_acquire_owned() else {
            bump(&s.counters.busy_rejections, 1);
            let limit = s.options.max_incoming_requests;
            let message = format!("busy: {limit} requests are already being handled; retry later");
            self.answer_at_once(request.id, ErrorObject::host_busy(message));
            return;
        };
        let size = request.method.len() + request.params.as_ref().map_or(0, |p| p.get().len());
        let held = s.incoming_bytes.fetch_add(size, Ordering::Relaxed);
        s.serving.fetch_add(1, Ordering::AcqRel);
        let bytes = IncomingBytes {
            shared: Arc::clone(&self.shared),
            size,
        };
        if held > 0 && held.saturating_add(size) > s.options.max_incoming_request_bytes {
            bump(&s.counters.busy_rejections, 1);
            let limit = s.options.max_incoming_request_bytes;
            let message =
                format!("busy: requests of {limit} bytes are already being handled; retry later");
            self.answer_at_once(request.id, ErrorObject::host_busy(message));
            // Given back once its answer is queued, so a flush cannot miss the answer.
            drop(bytes);
            return;
        }
        let peer = self.clone();
        tokio::spawn(
            async move {
                // Dropped last: after `unanswered`, so the request counts as served only once
                // its answer (or the panic's) is queued.
                let _bytes = bytes;
                let mut unanswered = Unanswered {
                    peer: peer.clone(),
                    id: Some(request.id.clone()),
                };
                let outcome = peer.shared.handler.handle(request, peer.clone()).await;
                if let Some(id) = unanswered.id.take() {
                    peer.respond(id, outcome).await;
                }
                drop::<OwnedSemaphorePermit>(permit);
            }
            .in_current_span(),
        );
    }

    fn complete(&self, response: Response) {
        let s = &*self.shared;
        let waiter = response
            .id
            .as_u64()
            .and_then(|id| lock(&s.pending).remove(&id));
        match waiter {
            // The caller may have just given up; its response is then dropped like a late one.
            Some(waiter) => {
                if waiter.send(response.outcome).is_err() {
                    bump(&s.counters.dropped_responses, 1);
                }
            }
            None => {
                bump(&s.counters.dropped_responses, 1);
                tracing::warn!(id = %response.id, "dropped a response to an unknown or finished request");
            }
        }
    }

    fn reject_invalid(&self, invalid: InvalidMessage) {
        tracing::warn!(violation = %invalid.violation, "received an invalid JSON-RPC message");
        if let Some(id) = invalid.answer_to {
            let message = format!("invalid request: {}", invalid.violation);
            self.answer_at_once(id, ErrorObject::new(codes::INVALID_REQUEST, message));
        }
    }
}

/// Answers `-32000` for a handler that panicked, so the caller is not left waiting forever.
struct Unanswered {
    peer: Peer,
    id: Option<Id>,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        // A runtime shutting down drops its tasks; there is nothing to answer with then.
        if tokio::runtime::Handle::try_current().is_ok() && self.peer.close_reason().is_none() {
            let error = ErrorObject::new(
                codes::COMMAND_FAILED,
                "the request handler failed without answering",
            );
            self.peer.answer_at_once(id, error);
        }
    }
}

/// Gives an incoming request's bytes back, and counts it served, when its handling ends,
/// however it ends.
struct IncomingBytes {
    shared: Arc<Shared>,
    size: usize,
}

impl Drop for IncomingBytes {
    fn drop(&mut self) {
        self.shared
            .incoming_bytes
            .fetch_sub(self.size, Ordering::Relaxed);
        self.shared.serving.fetch_sub(1, Ordering::AcqRel);
        self.shared.settled.notify_waiters();
    }
}

/// Removes a request's waiter when its caller stops waiting, so a late response finds nothing.
struct Forget<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).remove(&self.id);
    }
}

/// A request as it goes on the wire, borrowing its parts; the shape of [`Message::Request`].
struct OutgoingRequest<'a, P> {
    id: u64,
    method: &'a str,
    params: Option<&'a P>,
}

impl<P: Serialize> Serialize for OutgoingRequest<'_, P> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", self.method)?;
        if let Some(params) = self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

/// A notification as it goes on the wire, borrowing its parts.
struct OutgoingNotification<'a, P> {
    method: &'a str,
    params: Option<&'a P>,
}

impl<P: Serialize> Serialize for OutgoingNotification<'_, P> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("method", self.method)?;
        if let Some(params) = self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

/// A response as it goes on the wire, borrowing its parts; the id is echoed as it arrived.
struct OutgoingResponse<'a> {
    id: &'a Id,
    outcome: Result<&'a Value, &'a ErrorObject>,
}

impl Serialize for OutgoingResponse<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", self.id)?;
        match self.outcome {
            Ok(result) => map.serialize_entry("result", result)?,
            Err(error) => map.serialize_entry("error", error)?,
        }
        map.end()
    }
}

/// The one writer: drains the outbox in one `write_all` per turn, gives the frames' slots
/// back, and closes the connection on the first write error. Aborting it drops `sink`.
async fn write_loop<W: AsyncWrite + Unpin>(peer: Peer, mut sink: W) {
    let s = &*peer.shared;
    let mut batch = Vec::new();
    loop {
        s.outbox_ready.notified().await;
        let frames = {
            let mut outbox = lock(&s.outbox);
            std::mem::swap(&mut outbox.bytes, &mut batch);
            outbox.in_flight = batch.len();
            std::mem::take(&mut outbox.frames)
        };
        if frames == 0 {
            continue;
        }
        let written = async {
            sink.write_all(&batch).await?;
            sink.flush().await
        };
        if let Err(e) = written.await {
            peer.close_with(CloseReason::WriteFailed(e.kind()));
            return;
        }
        bump(&s.counters.frames_out, frames as u64);
        bump(&s.counters.bytes_out, batch.len() as u64);
        batch.clear();
        batch.shrink_to(KEPT_OUTBOX_CAPACITY);
        lock(&s.outbox).in_flight = 0;
        s.write_slots.add_permits(frames);
        s.outbox_room.notify_waiters();
        s.settled.notify_waiters();
    }
}

async fn read_loop<R: AsyncRead + Unpin>(peer: Peer, mut reader: R) {
    let s = &*peer.shared;
    let mut decoder = LineDecoder::new(s.options.frame);
    // Read into the buffer's spare capacity, never zeroed: a zeroed chunk is written whole
    // when it is allocated, which in a process that just started is one page fault for each
    // of its 16 pages before the first byte arrives; unwritten capacity costs nothing.
    let mut buf = Vec::with_capacity(s.options.read_chunk_bytes.max(1));
    let mut warnings = WarnLimiter::new(s.options.dropped_line_warnings_per_second);
    let reason = 'read: loop {
        buf.clear();
        let n = match reader.read_buf(&mut buf).await {
            Ok(0) => break CloseReason::StreamClosed,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break CloseReason::ReadFailed(e.kind()),
        };
        bump(&s.counters.bytes_in, n as u64);
        let mut input = &buf[..n];
        while let Some(event) = decoder.decode(&mut input) {
            if let Some(reason) = peer.dispatch(event, &mut warnings) {
                break 'read reason;
            }
        }
    };
    warnings.flush();
    if reason == CloseReason::StreamClosed && s.options.on_input_end == InputEnd::HalfClose {
        peer.end_input();
    } else {
        peer.close_with(reason);
    }
}

/// Keeps a flood of junk lines from flooding the log: a few warnings a second, then a count.
#[derive(Debug)]
struct WarnLimiter {
    per_second: u32,
    window_start: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

/// What to do with one more warning.
#[derive(Debug, PartialEq, Eq)]
enum Admit {
    /// Log it; first report how many were suppressed in the last window, if any.
    Log { suppressed_before: u64 },
    /// Count it silently.
    Suppress,
}

impl WarnLimiter {
    fn new(per_second: u32) -> Self {
        WarnLimiter {
            per_second,
            window_start: None,
            in_window: 0,
            suppressed: 0,
        }
    }

    fn admit(&mut self, now: Instant) -> Admit {
        let expired = self
            .window_start
            .is_none_or(|start| now.saturating_duration_since(start) >= Duration::from_secs(1));
        let mut suppressed_before = 0;
        if expired {
            suppressed_before = std::mem::take(&mut self.suppressed);
            self.window_start = Some(now);
            self.in_window = 0;
        }
        if self.in_window < self.per_second {
            self.in_window += 1;
            Admit::Log { suppressed_before }
        } else {
            self.suppressed += suppressed_before + 1;
            Admit::Suppress
        }
    }

    fn dropped(&mut self, line: &DroppedLine) {
        if let Admit::Log { suppressed_before } = self.admit(Instant::now()) {
            report_suppressed(suppressed_before);
            tracing::warn!(reason = %line.reason, len = line.len, excerpt = %line.excerpt, "dropped a line that is not a JSON-RPC message");
        }
    }

    fn flush(&mut self) {
        report_suppressed(std::mem::take(&mut self.suppressed));
    }
}

fn report_suppressed(count: u64) {
    if count > 0 {
        tracing::warn!(count, "dropped more lines that are not JSON-RPC messages");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outgoing_request_has_the_wire_shape_of_a_request_message() {
        for params in [
            Some(serde_json::json!({"name": "x", "args": [1, "two"]})),
            None,
        ] {
            let borrowed = OutgoingRequest {
                id: 7,
                method: "command/invoke",
                params: params.as_ref(),
            };
            let owned = Message::Request(Request {
                id: Id::from(7),
                method: "command/invoke".to_owned(),
                params: params.as_ref().map(|p| crate::to_raw(p).unwrap()),
            });
            assert_eq!(
                serde_json::to_string(&borrowed).unwrap(),
                serde_json::to_string(&owned).unwrap()
            );
        }
    }

    #[test]
    fn dropped_line_warnings_are_limited_per_second_then_summarised() {
        let mut limiter = WarnLimiter::new(3);
        let t0 = Instant::now();
        let first: Vec<_> = (0..5).map(|_| limiter.admit(t0)).collect();
        assert_eq!(
            first,
            [
                Admit::Log {
                    suppressed_before: 0
                },
                Admit::Log {
                    suppressed_before: 0
                },
                Admit::Log {
                    suppressed_before: 0
                },
                Admit::Suppress,
                Admit::Suppress,
            ]
        );
        assert_eq!(
            limiter.admit(t0 + Duration::from_millis(999)),
            Admit::Suppress
        );
        assert_eq!(
            limiter.admit(t0 + Duration::from_secs(1)),
            Admit::Log {
                suppressed_before: 3
            }
        );
        assert_eq!(
            limiter.admit(t0 + Duration::from_secs(5)),
            Admit::Log {
                suppressed_before: 0
            }
        );
    }

    #[test]
    fn a_zero_rate_suppresses_every_warning_into_the_count() {
        let mut limiter = WarnLimiter::new(0);
        let t0 = Instant::now();
        assert_eq!(limiter.admit(t0), Admit::Suppress);
        assert_eq!(limiter.admit(t0), Admit::Suppress);
        assert_eq!(limiter.suppressed, 2);
    }
}
