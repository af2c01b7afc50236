//! One realm's instance of a bundle's process runtime: dormant until the first call, then
//! spawned, handshaken and confirmed, then serving `command/invoke` until its scope is disposed.
//!
//! The instance belongs to exactly one kernel scope generation. Its stubs call
//! [`RuntimeInstance::invoke`]; its scope's cleanup calls [`RuntimeInstance::shutdown`], which
//! stops the process group and is awaited. Activation failures that the protocol calls terminal
//! (handshake timeout, version or command-set mismatch, a process that cannot start) leave the
//! instance failed for the rest of its generation: its stubs fail closed until the bundle is
//! reloaded or disabled and re-enabled.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use c2_kernel::{Error as KernelError, Kernel, Realm, ScopeHandle};
use c2_lock::lock;
use c2_protocol::{
    CallError, CloseReason, CommandCallParams, CommandInvokeParams, DeclaredCommand, ErrorObject,
    EventEmitParams, HandshakeError, HandshakeOptions, HostInfo, InitializeParams, LogLevel,
    LogParams, Notifications, PROTOCOL_VERSION, Peer, Request, codes, initialize_finish,
    initialize_start, is_host_event, method,
};
use c2_supervisor::{HealthState, Process, ProcessSpec, Vitals};
use serde_json::{Value, json};
use tokio::sync::watch;

use self::deadline::Expiry;
use crate::env::{RuntimeEnv, RuntimeHooks};
use crate::error::{Advice, ErrorKind, HostError, raise};
use crate::installed::InstalledBundle;
use crate::paths;
use crate::states::realm_text;

mod deadline;

/// The protocol version this host speaks.
fn host_protocol() -> c2_protocol::ProtocolVersion {
    c2_protocol::ProtocolVersion::parse(PROTOCOL_VERSION)
        .unwrap_or(c2_protocol::ProtocolVersion::CURRENT)
}

pub(crate) struct RuntimeInstance {
    host: Weak<dyn RuntimeEnv>,
    bundle: Arc<InstalledBundle>,
    scope: ScopeHandle,
    realm: Realm,
    config: Value,
    slot: tokio::sync::Mutex<Slot>,
    stopping: watch::Sender<bool>,
    crashes: Mutex<VecDeque<Instant>>,
    vitals: Arc<Vitals>,
    /// The deadline of each command call and host callback: the manifest's
    /// `runtime.commandTimeoutMs` when set, else `HostOptions::invoke_deadline`, read once: the
    /// invoke path does not touch the host.
    invoke_deadline: Option<Duration>,
    /// `HostOptions::max_value_tree_bytes`, read once.
    max_value_tree_bytes: usize,
    /// `SupervisorOptions::exit_drain`, read once.
    exit_drain: Duration,
}

enum Slot {
    Dormant,
    Live(Arc<Live>),
    /// The failure every call gets until a reload, as it was raised.
    Failed(KernelError),
    Stopped,
}

/// A running, confirmed process and the connection to it.
struct Live {
    peer: Peer,
    process: Process,
    /// Set when a caller's cancellation stopped it, so it does not count as a crash.
    cancelled: AtomicBool,
    /// Set when a command call or a host callback outlived the deadline and stopped it: every
    /// call pending on it fails `deadline_exceeded`, and it does not count as a crash.
    expiry: Arc<Expiry>,
}

impl Live {
    fn healthy(&self) -> bool {
        self.peer.close_reason().is_none() && self.process.try_exit().is_none()
    }

    async fn stop(&self) {
        self.peer.close();
        self.process.stop().await;
    }

    /// The last stderr lines, for error messages.
    fn stderr_tail(&self) -> String {
        let tail = self.process.stderr_tail();
        if tail.is_empty() {
            "it wrote nothing to stderr".to_owned()
        } else {
            format!("last stderr lines:\n  {}", tail.join("\n  "))
        }
    }
}

/// Why an activation did not produce a live process.
fn failure(kind: ErrorKind, message: impl Into<String>) -> HostError {
    HostError::new(kind, message)
}

/// The kind of a connection the host closed for a protocol violation.
fn violation(reason: &CloseReason) -> ErrorKind {
    match reason {
        CloseReason::FrameTooLarge { .. } => ErrorKind::FrameTooLarge,
        _ => ErrorKind::OutboundOverflow,
    }
}

/// The activation failure for a refused handshake, its kind read from the typed refusal. The
/// process is stopped already, so its exit is known.
fn refusal(id: &str, live: &Live, error: HandshakeError) -> HostError {
    match error {
        HandshakeError::TimedOut { timeout } => failure(
            ErrorKind::HandshakeTimeout,
            format!(
                "{id} did not answer initialize within {timeout:?}; the process was stopped. {}",
                live.stderr_tail()
            ),
        ),
        HandshakeError::Initialize(error) => {
            let kind = match &error {
                CallError::Closed(
                    reason @ (CloseReason::FrameTooLarge { .. }
                    | CloseReason::OutboundOverflow { .. }),
                ) => violation(reason),
                CallError::Closed(_) => ErrorKind::ProcessExited,
                _ => ErrorKind::ActivationFailed,
            };
            let exit = live
                .process
                .try_exit()
                .map_or_else(String::new, |exit| format!(" (it {exit})"));
            failure(
                kind,
                format!(
                    "{id} failed its handshake: {error}{exit}. {}",
                    live.stderr_tail()
                ),
            )
        }
        HandshakeError::Malformed(error) => failure(
            ErrorKind::ProtocolMismatch,
            format!("{id} answered initialize with a malformed result: {error}"),
        ),
        HandshakeError::Version(error) => {
            failure(ErrorKind::ProtocolMismatch, format!("{id}: {error}"))
        }
        HandshakeError::Confirmation(error) => {
            failure(ErrorKind::CommandSetMismatch, format!("{id}: {error}"))
        }
        error => failure(ErrorKind::ActivationFailed, format!("{id}: {error}")),
    }
}

impl std::fmt::Debug for RuntimeInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeInstance")
            .field("bundle", &self.bundle.record.id)
            .field("realm", &self.realm)
            .finish_non_exhaustive()
    }
}

impl RuntimeInstance {
    pub(crate) fn new(
        host: Weak<dyn RuntimeEnv>,
        bundle: Arc<InstalledBundle>,
        scope: ScopeHandle,
        config: Value,
    ) -> Self {
        let realm = scope.realm().clone();
        let invoke_deadline = bundle
            .manifest
            .codetwo
            .runtime
            .as_ref()
            .and_then(|runtime| runtime.command_timeout_ms)
            .map(Duration::from_millis)
            .or_else(|| host.upgrade().and_then(|h| h.options().invoke_deadline));
        let max_value_tree_bytes = host
            .upgrade()
            .map_or(32 * 1024 * 1024, |h| h.options().max_value_tree_bytes);
        let exit_drain = host.upgrade().map_or(Duration::from_millis(200), |h| {
            h.options().supervisor.exit_drain
        });
        Self {
            invoke_deadline,
            max_value_tree_bytes,
            exit_drain,
            host,
            bundle,
            scope,
            realm,
            config,
            slot: tokio::sync::Mutex::new(Slot::Dormant),
            stopping: watch::channel(false).0,
            crashes: Mutex::new(VecDeque::new()),
            vitals: Arc::default(),
        }
    }

    /// Why this instance fails closed, if it does.
    pub(crate) fn failure(&self) -> Option<String> {
        match self.slot.try_lock() {
            Ok(slot) => match &*slot {
                Slot::Failed(error) => Some(error.to_string()),
                _ => None,
            },
            Err(_) => None,
        }
    }

    /// The pid of the live process, if any.
    pub(crate) fn pid(&self) -> Option<u32> {
        match self.slot.try_lock() {
            Ok(slot) => match &*slot {
                Slot::Live(live) if live.healthy() => live.process.program_pid(),
                _ => None,
            },
            Err(_) => None,
        }
    }

    /// Its health now: state, process, counts, usage.
    pub(crate) fn health(&self, window: Duration) -> crate::RuntimeHealth {
        let (state, live) = match self.slot.try_lock().as_deref() {
            Ok(Slot::Dormant) => (HealthState::Dormant, None),
            Ok(Slot::Live(live)) => (HealthState::Running, Some(live.clone())),
            Ok(Slot::Failed(_)) => (HealthState::Failed, None),
            Ok(Slot::Stopped) => (HealthState::Stopped, None),
            Err(_) => (HealthState::Starting, None),
        };
        let process = live.as_ref().map(|live| &live.process);
        let health = self.vitals.snapshot(Instant::now(), window, state, process);
        let (bundle, realm) = (self.bundle.record.id.clone(), realm_text(&self.realm));
        crate::RuntimeHealth {
            bundle,
            realm,
            health,
        }
    }

    /// Invokes a declared command, activating the process on first use; metered.
    pub(crate) async fn invoke(&self, name: &str, args: Value) -> Result<Value, KernelError> {
        let start = Instant::now();
        let result = self.call(name, args).await;
        self.vitals.meter().record(start.elapsed(), result.is_ok());
        result
    }

    async fn call(&self, name: &str, args: Value) -> Result<Value, KernelError> {
        let (live, activated) = self.live().await?;
        let mut guard = CancelGuard {
            live: Some(live.clone()),
        };
        let params = CommandInvokeParams {
            name: name.to_owned(),
            args,
        };
        // A leader that exits fails the call as closed (`process_exited`) after the drain.
        let request = async {
            live.process
                .until_exit(
                    self.exit_drain,
                    live.peer.request_raw(method::COMMAND_INVOKE, &params),
                )
                .await
                .unwrap_or(Err(CallError::Closed(CloseReason::StreamClosed)))
        };
        let result = match self.invoke_deadline {
            Some(limit) => match tokio::time::timeout(limit, request).await {
                Ok(result) => result,
                Err(_) => {
                    guard.live = None;
                    live.expiry.expire();
                    live.cancelled.store(true, Ordering::Relaxed);
                    live.stop().await;
                    return Err(deadline::exceeded(limit));
                }
            },
            None => request.await,
        };
        guard.live = None;
        if activated {
            // The call that activated the process is answered: its start-up no longer
            // competes with the supervisor's pre-start of the next shim. That pre-start
            // starts a thread, so it runs as a task once this answer is on its way to the
            // caller instead of before it.
            self.pre_start_next_shim(&live, Duration::ZERO);
        }
        match result {
            Ok(raw) => self.read_result(name, &raw),
            Err(CallError::Remote(error)) => {
                // The plugin's code and data travel with the failure; data whose tree would
                // exceed the bound is left out, like an oversized result.
                let data = error
                    .data
                    .as_deref()
                    .filter(|raw| {
                        c2_protocol::value_tree_cost(raw.get()) <= self.max_value_tree_bytes
                    })
                    .and_then(|raw| serde_json::from_str(raw.get()).ok());
                Err(KernelError::typed_remote(
                    HostError::new(ErrorKind::CommandFailed, error.message),
                    c2_kernel::RemoteError::new(error.code, data),
                ))
            }
            Err(CallError::Closed(_)) if live.expiry.expired() => {
                // Another call or a host callback outlived the deadline and stopped it.
                live.stop().await;
                Err(deadline::exceeded(self.invoke_deadline.unwrap_or_default()))
            }
            Err(CallError::Closed(reason)) => Err(self.closed(&live, reason).await),
            Err(error @ CallError::Busy { .. }) => {
                Err(raise(ErrorKind::HostBusy, error.to_string()))
            }
            Err(error) => Err(raise(ErrorKind::CommandFailed, error.to_string())),
        }
    }

    /// A result read into a value, unless its tree would take more than the bound.
    fn read_result(&self, name: &str, raw: &c2_protocol::RawValue) -> Result<Value, KernelError> {
        let cost = c2_protocol::value_tree_cost(raw.get());
        if cost > self.max_value_tree_bytes {
            return Err(raise(
                ErrorKind::ResultTooLarge,
                format!(
                    "{name}: the result ({} bytes of JSON) would take about {cost} bytes in memory, over the host's {}-byte bound; return less, or fewer and larger values",
                    raw.get().len(),
                    self.max_value_tree_bytes
                ),
            ));
        }
        serde_json::from_str(raw.get()).map_err(|error| {
            raise(
                ErrorKind::CommandFailed,
                format!("{name}: unreadable result: {error}"),
            )
        })
    }

    /// The error for a call whose connection closed under it.
    async fn closed(&self, live: &Live, reason: CloseReason) -> KernelError {
        match reason {
            CloseReason::Cancelled => raise(
                ErrorKind::Cancelled,
                "the call was cancelled because the process was stopped (unloaded, or another caller cancelled); the next call starts it again",
            ),
            CloseReason::FrameTooLarge { .. } | CloseReason::OutboundOverflow { .. } => {
                live.stop().await;
                raise(
                    violation(&reason),
                    format!("{reason}; the process was stopped. {}", live.stderr_tail()),
                )
            }
            _ => {
                // Give the reaper a moment to report how the process ended.
                let exit =
                    tokio::time::timeout(Duration::from_secs(2), live.process.exited()).await;
                let how = match exit {
                    Ok(exit) => exit.to_string(),
                    Err(_) => format!("{reason}, still running"),
                };
                if exit.is_err() {
                    live.stop().await;
                }
                self.vitals.process_ended(&live.process);
                raise(
                    ErrorKind::ProcessExited,
                    format!(
                        "the plugin process ended before answering ({how}); {}",
                        live.stderr_tail()
                    ),
                )
            }
        }
    }

    /// The live process, activating it if dormant, and whether this call activated it.
    /// Concurrent first callers queue on the slot and share the one activation.
    async fn live(&self) -> Result<(Arc<Live>, bool), KernelError> {
        let mut slot = self.slot.lock().await;
        loop {
            match &*slot {
                Slot::Live(live) if live.healthy() => return Ok((live.clone(), false)),
                Slot::Live(live) => {
                    let live = live.clone();
                    let cancelled = live.cancelled.load(Ordering::Relaxed) || live.expiry.expired();
                    live.stop().await;
                    if !cancelled {
                        self.vitals.process_ended(&live.process);
                    }
                    *slot = if cancelled || self.note_crash() {
                        Slot::Dormant
                    } else {
                        let (limit, window) = self.crash_bounds();
                        Slot::Failed(raise(
                            ErrorKind::CrashLoop,
                            format!(
                                "{} crashed {limit} times within {window:?}; it stays failed until the plugin is reloaded or disabled and re-enabled",
                                self.bundle.record.id
                            ),
                        ))
                    };
                }
                Slot::Failed(error) => return Err(error.clone()),
                Slot::Stopped => {
                    return Err(raise(
                        ErrorKind::Unloaded,
                        format!("{} was unloaded from this realm", self.bundle.record.id),
                    ));
                }
                Slot::Dormant => match self.activate().await {
                    Ok(live) => {
                        *slot = Slot::Live(live.clone());
                        return Ok((live, true));
                    }
                    Err(error) => {
                        let mut failed = HostError::new(
                            error.kind(),
                            format!(
                                "{error}; the runtime fails closed until the plugin is reloaded, or disabled and re-enabled"
                            ),
                        );
                        if let Some(hint) = error.hint() {
                            failed = failed.with_hint(hint);
                        }
                        let failed = failed.into_kernel();
                        self.vitals
                            .failed(error.kind().as_str(), failed.to_string());
                        *slot = Slot::Failed(failed.clone());
                        return Err(failed);
                    }
                },
            }
        }
    }

    /// Has the supervisor pre-start the next shim (`Process::handshake_done`, idempotent)
    /// from a task of this runtime's scope, `after` from now, unless the process is gone by
    /// then. A scope disposed first refuses or aborts the task; the stop then does the
    /// pre-start.
    fn pre_start_next_shim(&self, live: &Arc<Live>, after: Duration) {
        let weak = Arc::downgrade(live);
        let _ = self.scope.spawn(async move {
            if !after.is_zero() {
                tokio::time::sleep(after).await;
            }
            if let Some(live) = weak.upgrade() {
                live.process.handshake_done();
            }
        });
    }

    fn crash_bounds(&self) -> (usize, Duration) {
        self.host
            .upgrade()
            .map_or((3, Duration::from_secs(60)), |h| {
                (h.options().crash_limit, h.options().crash_window)
            })
    }

    /// Records a crash; false when the crash loop bound is reached.
    fn note_crash(&self) -> bool {
        let (limit, window) = self.crash_bounds();
        let now = self
            .host
            .upgrade()
            .map_or_else(Instant::now, |h| h.options().clock.now());
        let mut crashes = lock(&self.crashes);
        crashes.push_back(now);
        while crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > window)
        {
            crashes.pop_front();
        }
        crashes.len() < limit
    }

    /// Spawn, initialize, check the version and the exact command set, subscribe to events.
    async fn activate(&self) -> Result<Arc<Live>, HostError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| failure(ErrorKind::ShutDown, "the host is shutting down"))?;
        let bundle = &self.bundle;
        let id = &bundle.record.id;
        // Trust is checked again right before any spawn, in every realm.
        if !host.is_trusted(bundle) {
            return Err(failure(
                ErrorKind::NotTrusted,
                format!("{id} is not trusted, so its process never starts"),
            )
            .advise(Advice::Trust(id)));
        }
        // ... and against the bytes that would run: the files on disk must still be the
        // ones whose digest the user trusted.
        host.verify_content(bundle)
            .map_err(|message| failure(ErrorKind::ContentChanged, message))?;
        if !self.scope.is_current() || *self.stopping.borrow() {
            return Err(failure(
                ErrorKind::Unloaded,
                format!("{id} was unloaded from this realm"),
            ));
        }
        let Some(runtime) = bundle.manifest.codetwo.runtime.as_ref() else {
            return Err(failure(
                ErrorKind::ActivationFailed,
                format!("{id} declares no runtime"),
            ));
        };
        let (project_path, project_hash) = match &self.realm {
            Realm::Global => (None, None),
            Realm::Project(key) => (
                Some(key.as_str().to_owned()),
                Some(blake3::hash(key.as_str().as_bytes()).to_hex().to_string()),
            ),
        };
        let data_dir = paths::data_dir(&host.options().plugins_dir, id, project_hash.as_deref());
        c2_bundle_collector::ensure_data_dir(&data_dir).map_err(|error| {
            failure(
                ErrorKind::ActivationFailed,
                format!(
                    "cannot create the data directory {}: {error}",
                    data_dir.display()
                ),
            )
        })?;
        let program = c2_supervisor::resolve_command(
            &bundle.dir,
            &runtime.command,
            std::env::var_os("PATH").as_deref(),
        )
        .map_err(|error| failure(ErrorKind::ActivationFailed, error.to_string()))?;
        let label = match &project_hash {
            None => id.clone(),
            Some(hash) => format!("{id}@{}", &hash[..12]),
        };
        let mut spec = ProcessSpec::new(program, &bundle.dir)
            .args(&runtime.args)
            .label(label);
        for (name, value) in &runtime.env {
            spec = spec.env(name, value);
        }
        let spawned_at = tokio::time::Instant::now();
        let spawned = c2_supervisor::spawn(&spec, &host.options().supervisor)
            .map_err(|error| failure(ErrorKind::ActivationFailed, error.to_string()))?;
        host.counters().spawns.fetch_add(1, Ordering::Relaxed);
        self.vitals.started(Instant::now());
        let expiry = Arc::new(Expiry::default());
        let tap = host.options().frame_tap.as_ref();
        let (stdout, stdin) = c2_protocol::tap_plugin_streams(tap, spawned.stdout, spawned.stdin);
        let (peer, notifications) = Peer::new(
            stdout,
            stdin,
            deadline::bounded(
                extension_handler(self.scope.clone(), self.max_value_tree_bytes),
                self.invoke_deadline.map(|limit| (limit, expiry.clone())),
            ),
            host.options().peer,
        );
        let live = Arc::new(Live {
            peer,
            process: spawned.process,
            cancelled: AtomicBool::new(false),
            expiry,
        });
        let _ = live.expiry.live.set(Arc::downgrade(&live));
        // From here on, returning early without `live` in the slot must stop it; dropping the
        // last handle would also kill the group, but stopping reaps it before we answer.
        let params = InitializeParams {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            host: HostInfo {
                name: host.options().host_name.clone(),
                version: host.options().host_version.clone(),
                commands: host
                    .kernel()
                    .extension_commands(&self.realm)
                    .into_iter()
                    .map(|c| c.name)
                    .collect(),
                // No observation store: `observation/record` is answered `observations_off`.
                observations: false,
            },
            config: self.config.clone(),
            data_dir: data_dir.to_string_lossy().into_owned(),
            project_path,
        };
        let handshake = HandshakeOptions::new()
            .with_peer(host.options().peer)
            .with_timeout(host.options().handshake_timeout)
            .with_host_version(host_protocol());
        let mut stopping = self.stopping.subscribe();
        let answer = tokio::select! {
            answer = initialize_start(&live.peer, &params, &handshake, spawned_at) => Some(answer),
            _ = stopping.wait_for(|stop| *stop) => None,
        };
        let Some(answer) = answer else {
            live.stop().await;
            return Err(failure(
                ErrorKind::Unloaded,
                format!("{id} was unloaded during its handshake"),
            ));
        };
        let declared: Vec<DeclaredCommand> = bundle
            .manifest
            .codetwo
            .commands
            .iter()
            .map(DeclaredCommand::from)
            .collect();
        match answer.and_then(|answer| initialize_finish(answer, &declared, &handshake)) {
            Ok(confirmed) => {
                // The supervisor's pre-start of the next shim (an exec of about a millisecond
                // of CPU) waits until the call that activated this process is answered, so
                // that on a busy or one-CPU machine it does not delay that first answer; a
                // first call that runs long starts it after `REFILL_AFTER` all the same.
                self.pre_start_next_shim(&live, REFILL_AFTER);
                if !self.scope.is_current() || *self.stopping.borrow() {
                    live.stop().await;
                    return Err(failure(
                        ErrorKind::Unloaded,
                        format!("{id} was reloaded or unloaded during its handshake"),
                    ));
                }
                self.attach(&live, confirmed.events(), notifications)
                    .map_err(|error| failure(ErrorKind::Unloaded, error.to_string()))?;
                Ok(live)
            }
            Err(error) => {
                live.stop().await;
                Err(refusal(id, &live, error))
            }
        }
    }

    /// Subscribes the confirmed process to its events and starts the notification pump; every
    /// task belongs to the scope and ends with it.
    fn attach(
        &self,
        live: &Arc<Live>,
        events: BTreeSet<String>,
        notifications: Notifications,
    ) -> Result<(), KernelError> {
        let host = self.host.upgrade();
        let counters = host.as_ref().map(|h| Arc::clone(h.counters()));
        for name in events {
            let mut stream = self.scope.subscribe(name.clone())?;
            let peer = live.peer.clone();
            let counters = counters.clone();
            let vitals = self.vitals.clone();
            self.scope.spawn(async move {
                while let Some(event) = stream.recv().await {
                    let params = json!({ "name": event.name, "payload": event.payload });
                    if peer.notify(method::EVENT_EMIT, Some(params)).await.is_err() {
                        if let Some(counters) = &counters {
                            counters.dropped_events.fetch_add(1, Ordering::Relaxed);
                        }
                        vitals.dropped_event();
                        if peer.close_reason().is_some() {
                            break;
                        }
                    }
                }
            })?;
        }
        let log_message_max = self
            .host
            .upgrade()
            .map_or(64 * 1024, |h| h.options().log_message_max_bytes);
        let pump = NotificationPump {
            scope: self.scope.clone(),
            bundle_id: self.bundle.record.id.clone(),
            hooks: host
                .as_ref()
                .map(|h| RuntimeHooks::start(h.event_hooks(), &self.bundle))
                .unwrap_or_default(),
            log_message_max,
            max_value_tree_bytes: self.max_value_tree_bytes,
        };
        self.scope.spawn(pump.run(notifications))?;
        // A protocol violation found by the peer stops the process at once, even with no call
        // in flight to notice it (an event flood it never reads, say).
        let watched = Arc::downgrade(live);
        let peer = live.peer.clone();
        let owner = self.bundle.record.id.clone();
        self.scope.spawn(async move {
            let reason = peer.closed().await;
            if matches!(
                reason,
                CloseReason::OutboundOverflow { .. } | CloseReason::FrameTooLarge { .. }
            ) {
                tracing::warn!(%owner, kind = reason.code(), "stopping the plugin process: {reason}");
                if let Some(live) = watched.upgrade() {
                    live.stop().await;
                }
            }
        })?;
        Ok(())
    }

    /// Stops the process, if any, and leaves the instance unusable. Awaited and idempotent.
    pub(crate) async fn shutdown(&self) {
        self.stopping.send_replace(true);
        let previous = {
            let mut slot = self.slot.lock().await;
            std::mem::replace(&mut *slot, Slot::Stopped)
        };
        if let Slot::Live(live) = previous {
            live.stop().await;
        }
    }
}

/// Stops the process when a caller abandons its call: the protocol's "caller cancellation:
/// process killed; the next invocation may retry". Calls in flight on it fail with `cancelled`.
struct CancelGuard {
    live: Option<Arc<Live>>,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some(live) = self.live.take() else { return };
        live.cancelled.store(true, Ordering::Relaxed);
        live.peer.close();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { live.stop().await });
        }
        // Without a runtime, dropping the last handle kills the group synchronously.
    }
}

/// Serves `command/call` from a plugin through the kernel's extension seam, in the plugin's
/// own realm: only extension-public commands are reachable, with the realm's fallback rules.
fn extension_handler(
    scope: ScopeHandle,
    max_value_tree_bytes: usize,
) -> impl c2_protocol::RequestHandler {
    move |request: Request, _peer: Peer| {
        let scope = scope.clone();
        async move {
            if request.method == method::OBSERVATION_RECORD {
                return Err(c2_protocol::observations_off());
            }
            if request.method != method::COMMAND_CALL {
                return Err(ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!(
                        "method not found: {}; a plugin may call only command/call",
                        request.method
                    ),
                ));
            }
            let raw = request
                .params
                .as_deref()
                .map_or("null", c2_protocol::RawValue::get);
            let call: CallEnvelope<'_> = serde_json::from_str(raw).map_err(|error| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("command/call needs {{name, args}}: {error}"),
                )
            })?;
            let args = match call.args {
                None => Value::Null,
                Some(args) if c2_protocol::value_tree_cost(args.get()) > max_value_tree_bytes => {
                    return Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        format!(
                            "command/call args ({} bytes of JSON) would take more than the host's {max_value_tree_bytes}-byte bound in memory; send less",
                            args.get().len()
                        ),
                    ));
                }
                Some(args) => serde_json::from_str(args.get()).map_err(|error| {
                    ErrorObject::new(codes::INVALID_PARAMS, format!("command/call args: {error}"))
                })?,
            };
            let params = CommandCallParams {
                name: call.name,
                args,
            };
            // The raw params may be megabytes; nothing needs them once read.
            drop(request);
            let kernel: Kernel = scope.kernel().ok_or_else(|| {
                ErrorObject::new(codes::COMMAND_FAILED, "the host is shutting down")
            })?;
            kernel
                .call_as(&scope, &params.name, params.args)
                .await
                .map_err(|error| {
                    // The error may quote the (huge) name: one copy of it at a time.
                    drop(params.name);
                    let code = error.code();
                    let message = display_exact(&error);
                    drop(error);
                    ErrorObject::new(code, message)
                })
        }
    }
}

/// `value.to_string()` in a string allocated once at its exact length: an error that quotes a
/// plugin's megabytes is not copied again while the string grows.
pub(crate) fn display_exact(value: &impl std::fmt::Display) -> String {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = std::fmt::write(&mut count, format_args!("{value}"));
    let mut text = String::with_capacity(count.0);
    let _ = std::fmt::write(&mut text, format_args!("{value}"));
    text
}

/// How long after an activation's handshake the next shim is pre-started when the call that
/// activated the process has not been answered by then.
const REFILL_AFTER: Duration = Duration::from_millis(50);

/// A log message cut to `max` bytes (on a character boundary) with a marker saying how much
/// was cut, like a stderr line.
pub(crate) fn cut_log_message(message: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if message.len() <= max {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{} [… {} more bytes cut: log message longer than {max} bytes]",
        &message[..end],
        message.len() - end
    ))
}

/// The envelope of a `command/call`: the args are weighed before they are read.
#[derive(serde::Deserialize)]
struct CallEnvelope<'a> {
    name: String,
    #[serde(borrow, default)]
    args: Option<&'a c2_protocol::RawValue>,
}

/// The envelope of an `event/emit`: the name is checked before the payload is read.
#[derive(serde::Deserialize)]
struct EmitEnvelope<'a> {
    name: String,
    #[serde(borrow, default)]
    payload: Option<&'a c2_protocol::RawValue>,
}

/// Turns a plugin's notifications into bus events and log lines.
struct NotificationPump {
    scope: ScopeHandle,
    bundle_id: String,
    hooks: RuntimeHooks,
    /// `HostOptions::log_message_max_bytes`.
    log_message_max: usize,
    /// `HostOptions::max_value_tree_bytes`.
    max_value_tree_bytes: usize,
}

impl NotificationPump {
    async fn run(mut self, mut notifications: Notifications) {
        while let Some(notification) = notifications.recv().await {
            let params = notification.params.as_deref();
            match notification.method.as_str() {
                method::EVENT_EMIT => match self.read_event(params) {
                    Ok(Some(event)) => self.event(event),
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(owner = %self.bundle_id, "ignoring a malformed event/emit: {error}")
                    }
                },
                method::LOG => match c2_protocol::from_raw::<LogParams>(params) {
                    Ok(log) => self.log(&log),
                    Err(error) => {
                        tracing::warn!(owner = %self.bundle_id, "ignoring a malformed log: {error}")
                    }
                },
                other => {
                    tracing::debug!(owner = %self.bundle_id, "ignoring notification {other}");
                }
            }
        }
    }

    /// Reads an `event/emit`, refusing a host event name before its payload is built.
    fn read_event(
        &self,
        params: Option<&c2_protocol::RawValue>,
    ) -> Result<Option<EventEmitParams>, serde_json::Error> {
        let raw = params.map_or("null", c2_protocol::RawValue::get);
        let envelope: EmitEnvelope<'_> = serde_json::from_str(raw)?;
        if is_host_event(&envelope.name) {
            tracing::warn!(
                owner = %self.bundle_id,
                event = %envelope.name,
                "dropping an event/emit from {}: `{}` is a host event name (engine/, host/, plugins/, kernel/, skills/changed, scenes/changed) that plugins may not emit",
                self.bundle_id,
                envelope.name.escape_debug()
            );
            return Ok(None);
        }
        let payload = match envelope.payload {
            Some(raw) if c2_protocol::value_tree_cost(raw.get()) > self.max_value_tree_bytes => {
                tracing::warn!(
                    owner = %self.bundle_id,
                    "dropping an event/emit from {}: its payload ({} bytes of JSON) would take more than the host's {}-byte bound in memory",
                    self.bundle_id,
                    raw.get().len(),
                    self.max_value_tree_bytes
                );
                return Ok(None);
            }
            Some(raw) => serde_json::from_str(raw.get())?,
            None => Value::Null,
        };
        Ok(Some(EventEmitParams {
            name: envelope.name,
            payload,
        }))
    }

    fn event(&mut self, event: EventEmitParams) {
        let Some(kernel) = self.scope.kernel() else {
            return;
        };
        let Some(payload) =
            self.hooks
                .intercept(&kernel, &self.bundle_id, &event.name, event.payload)
        else {
            return;
        };
        kernel.emit(&event.name, payload);
    }

    fn log(&self, log: &LogParams) {
        let owner = &self.bundle_id;
        let message = cut_log_message(&log.message, self.log_message_max);
        match log.level {
            LogLevel::Error => tracing::error!(target: "c2_host::plugin", %owner, "{message}"),
            LogLevel::Warn => tracing::warn!(target: "c2_host::plugin", %owner, "{message}"),
            LogLevel::Info => tracing::info!(target: "c2_host::plugin", %owner, "{message}"),
            LogLevel::Debug => tracing::debug!(target: "c2_host::plugin", %owner, "{message}"),
            LogLevel::Trace => tracing::trace!(target: "c2_host::plugin", %owner, "{message}"),
        }
    }
}
