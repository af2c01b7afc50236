//! The plugin side of a connection: the handshake, validated invocations, event dispatch and
//! the orderly end when the host closes stdin.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use c2_manifest::plain_schema::{PlainSchema, Violation};
use c2_protocol::{
    CommandInfo, CommandInvokeParams, ErrorObject, EventEmitParams, HandlerFuture,
    InitializeParams, InitializeResult, InputEnd, LogParams, Notification, PROTOCOL_VERSION, Peer,
    PeerOptions, Request, RequestHandler, codes, method,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};

use crate::context::Context;
use crate::error::Error;
use crate::log::LogHandle;
use crate::plugin::{CommandFn, EventFn, Plugin, describe_path};

/// A declared command and its handler.
pub(crate) struct Bound {
    /// The declared `argsSchema`, if any.
    pub(crate) schema: Option<Value>,
    /// The schema compiled at start when it is plain (see [`PlainSchema`]): it decides every
    /// invocation without jsonschema, whose first use in a process builds its meta-validator.
    pub(crate) plain: Option<PlainSchema>,
    /// The jsonschema validator, or why the schema did not compile (the [`Error::ArgsSchema`]
    /// message), compiled on first need: every invocation's check for a schema that is not
    /// plain, and the report of a rejection by a plain one.
    pub(crate) validator: OnceLock<Result<jsonschema::Validator, String>>,
    pub(crate) handler: CommandFn,
}

impl Bound {
    /// Checks `args` against the command's schema: with the plain schema when there is one,
    /// else with the jsonschema validator. A rejection answers `-32602` listing at most
    /// `max_reported` violations.
    pub(crate) fn check(
        &self,
        id: &str,
        args: &Value,
        max_reported: usize,
    ) -> Result<(), ErrorObject> {
        match &self.plain {
            Some(plain) => match plain.validate(args) {
                Ok(()) => Ok(()),
                Err(violation) => Err(self.rejection(id, args, violation, max_reported)),
            },
            None => match self.validator(id)? {
                Some(validator) => report(validator, args, max_reported),
                None => Ok(()),
            },
        }
    }

    /// The `-32602` answer to args the plain schema rejected. It is jsonschema's report, the
    /// same a schema that is not plain gets (its validator is compiled now, on this rarer
    /// path); should jsonschema not compile or find nothing, the plain violation is reported.
    fn rejection(
        &self,
        id: &str,
        args: &Value,
        violation: Violation,
        max_reported: usize,
    ) -> ErrorObject {
        if let Ok(Some(validator)) = self.validator(id)
            && let Err(report) = report(validator, args, max_reported)
        {
            return report;
        }
        ErrorObject {
            code: codes::INVALID_PARAMS,
            message: format!(
                "invalid args at {}: {}",
                describe_path(&violation.instance_path),
                violation.message
            ),
            data: c2_protocol::to_raw(&serde_json::json!({ "violations": [{
                "instancePath": violation.instance_path,
                "schemaPath": violation.schema_path,
                "message": violation.message,
            }] }))
            .ok(),
        }
    }

    /// The command's validator, compiled the first time it is needed; `None` without a schema.
    pub(crate) fn validator(
        &self,
        id: &str,
    ) -> Result<Option<&jsonschema::Validator>, ErrorObject> {
        let Some(schema) = &self.schema else {
            return Ok(None);
        };
        let compiled = self.validator.get_or_init(|| {
            jsonschema::validator_for(schema).map_err(|e| {
                Error::ArgsSchema {
                    command: id.to_owned(),
                    reason: e.to_string(),
                }
                .to_string()
            })
        });
        match compiled {
            Ok(validator) => Ok(Some(validator)),
            Err(message) => Err(ErrorObject::new(codes::COMMAND_FAILED, message.clone())),
        }
    }
}

/// Everything a connection serves, shared by the request handler and the event loop.
struct Served {
    /// The `initialize` answer, built once from the manifest so it cannot drift from it.
    confirmation: InitializeResult,
    commands: HashMap<String, Bound>,
    events: BTreeMap<String, EventFn>,
    init: OnceLock<Arc<InitializeParams>>,
    /// Set when the host's first message after `initialize` shows it took the answer.
    handshake_done: OnceLock<()>,
    log: Option<(LogHandle, mpsc::Sender<LogParams>)>,
    /// Handlers and event tasks running now.
    work: watch::Sender<usize>,
    max_reported_violations: usize,
}

/// Counts one running handler for as long as it lives.
struct Working(watch::Sender<usize>);

impl Working {
    fn start(work: &watch::Sender<usize>) -> Self {
        work.send_modify(|n| *n += 1);
        Working(work.clone())
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

pub(crate) async fn serve<R, W>(plugin: Plugin, reader: R, writer: W)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let options = plugin.options;
    let (log_tx, log_rx) = mpsc::channel(options.log_queue.max(1));
    let served = Arc::new(Served::new(plugin, log_tx));
    // The end of stdin is a half-close: what the host asked before it is still answered.
    let peer_options = PeerOptions {
        on_input_end: InputEnd::HalfClose,
        ..options.peer
    };
    let (peer, mut notifications) = Peer::new(
        reader,
        writer,
        Dispatcher(Arc::clone(&served)),
        peer_options,
    );
    let (stop_logs, logs_stopped) = oneshot::channel();
    let forwarder = tokio::spawn(forward_logs(peer.clone(), log_rx, logs_stopped));
    loop {
        tokio::select! {
            // Events that arrived before the end are still delivered.
            biased;
            notification = notifications.recv() => match notification {
                Some(notification) => served.notification(notification, &peer),
                None => break,
            },
            _ = peer.input_ended() => break,
        }
    }
    let mut work = served.work.subscribe();
    // Whatever still runs after the grace period is abandoned by the caller.
    let _ = tokio::time::timeout(options.shutdown_grace, work.wait_for(|n| *n == 0)).await;
    if let Some((log, _)) = &served.log {
        log.disconnect();
    }
    // What the handlers answered and logged is written out, within the flush bound.
    let deadline = tokio::time::Instant::now() + options.flush_timeout;
    let _ = stop_logs.send(());
    if tokio::time::timeout_at(deadline, forwarder).await.is_err() {
        tracing::debug!("log lines were still being forwarded when the flush bound passed");
    }
    let within = deadline.saturating_duration_since(tokio::time::Instant::now());
    if let Err(e) = peer.flush(within).await {
        // Stdout is the host's; stderr is where an unwritten answer can still be told.
        tracing::debug!(error = %e, "not everything was written before exiting");
    }
    peer.close();
}

/// Sends queued log events as `log` notifications until told to stop, then sends what is
/// still queued and ends.
async fn forward_logs(
    peer: Peer,
    mut queue: mpsc::Receiver<LogParams>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        let params = tokio::select! {
            biased;
            params = queue.recv() => match params {
                Some(params) => params,
                None => return,
            },
            _ = &mut stop => break,
        };
        if !forward(&peer, params).await {
            return;
        }
    }
    while let Ok(params) = queue.try_recv() {
        if !forward(&peer, params).await {
            return;
        }
    }
}

/// Sends one log event; `false` once the connection is closed.
async fn forward(peer: &Peer, params: LogParams) -> bool {
    let params = serde_json::to_value(params).unwrap_or(Value::Null);
    // A full outbound queue drops the line: logging must never hold up the protocol.
    !(peer.notify(method::LOG, Some(params)).await.is_err() && peer.close_reason().is_some())
}

impl Served {
    fn new(plugin: Plugin, log_tx: mpsc::Sender<LogParams>) -> Self {
        let Plugin {
            manifest,
            mut commands,
            events,
            options,
            log,
            ..
        } = plugin;
        let confirmation = InitializeResult {
            name: manifest.name.clone(),
            // `version` is optional in plugin.json; the wire field is then empty.
            version: manifest.version.clone().unwrap_or_default(),
            protocol_version: Some(PROTOCOL_VERSION.to_owned()),
            commands: manifest
                .codetwo
                .commands
                .iter()
                .map(|c| CommandInfo {
                    name: c.id.clone(),
                    description: c.description.clone(),
                    schema: c.args_schema.clone().filter(|s| !s.is_null()),
                })
                .collect(),
            events: events.keys().cloned().collect(),
        };
        let commands = manifest
            .codetwo
            .commands
            .iter()
            .filter_map(|c| {
                let handler = commands.remove(&c.id)?;
                let schema = c.args_schema.clone().filter(|s| !s.is_null());
                let bound = Bound {
                    plain: schema.as_ref().and_then(PlainSchema::detect),
                    schema,
                    validator: OnceLock::new(),
                    handler,
                };
                Some((c.id.clone(), bound))
            })
            .collect();
        Served {
            confirmation,
            commands,
            events,
            init: OnceLock::new(),
            handshake_done: OnceLock::new(),
            log: log.map(|handle| (handle, log_tx)),
            work: watch::Sender::new(0),
            max_reported_violations: options.max_reported_violations,
        }
    }

    fn initialize(&self, params: Option<Value>) -> Result<Value, ErrorObject> {
        let params: InitializeParams = serde_json::from_value(params.unwrap_or(Value::Null))
            .map_err(|e| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("invalid initialize params: {e}"),
                )
            })?;
        if major(&params.protocol_version) != major(PROTOCOL_VERSION) {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "this plugin speaks protocol {PROTOCOL_VERSION} and the host speaks {}; use a host with protocol {}.x",
                    params.protocol_version,
                    major(PROTOCOL_VERSION)
                ),
            ));
        }
        if self.init.set(Arc::new(params)).is_err() {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "initialize was already answered; a connection is initialized once",
            ));
        }
        Ok(serde_json::to_value(&self.confirmation).unwrap_or(Value::Null))
    }

    /// Runs a command. Its params are read from their raw text straight into
    /// [`CommandInvokeParams`]: one parse builds the args, with no intermediate `Value` of the
    /// whole params rebuilt after.
    async fn invoke(
        &self,
        params: Option<c2_protocol::RawJson>,
        peer: Peer,
    ) -> Result<Value, ErrorObject> {
        let init = self.initialized()?;
        let params: CommandInvokeParams =
            c2_protocol::from_raw(params.as_deref()).map_err(|e| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("invalid command/invoke params: {e}"),
                )
            })?;
        let Some(bound) = self.commands.get(&params.name) else {
            let declared: Vec<&str> = self.commands.keys().map(String::as_str).collect();
            return Err(ErrorObject::new(
                codes::UNKNOWN_COMMAND,
                format!(
                    "unknown command `{}`: this plugin declares {}",
                    params.name,
                    declared.join(", ")
                ),
            ));
        };
        let args = match params.args {
            Value::Null => Value::Object(serde_json::Map::new()),
            args => args,
        };
        bound.check(&params.name, &args, self.max_reported_violations)?;
        let _working = Working::start(&self.work);
        (bound.handler)(Context::new(peer, init), args).await
    }

    fn initialized(&self) -> Result<Arc<InitializeParams>, ErrorObject> {
        let init = self.init.get().cloned().ok_or_else(|| {
            ErrorObject::new(
                codes::INVALID_REQUEST,
                "the plugin is not initialized; send initialize first",
            )
        })?;
        self.handshake_done();
        Ok(init)
    }

    /// From now on `tracing` events travel as `log` notifications: the host has the answer to
    /// `initialize`, so a log line can no longer arrive before it.
    fn handshake_done(&self) {
        if self.handshake_done.set(()).is_ok()
            && let Some((log, sink)) = &self.log
        {
            log.connect(sink.clone());
        }
    }

    fn notification(&self, notification: Notification, peer: &Peer) {
        if notification.method != method::EVENT_EMIT {
            tracing::debug!(method = %notification.method, "ignored a notification this plugin does not handle");
            return;
        }
        let Ok(init) = self.initialized() else {
            tracing::debug!("ignored an event that arrived before initialize");
            return;
        };
        let params: EventEmitParams = match c2_protocol::from_raw(notification.params.as_deref()) {
            Ok(params) => params,
            Err(e) => {
                tracing::warn!(error = %e, "ignored an event/emit with invalid params");
                return;
            }
        };
        let Some(handler) = self.events.get(&params.name) else {
            return;
        };
        let run = handler(Context::new(peer.clone(), init), params.payload);
        // Counted before the spawn, so the end of the session cannot miss it.
        let working = Working::start(&self.work);
        tokio::spawn(async move {
            run.await;
            drop(working);
        });
    }
}

/// jsonschema's `-32602` report of `args`, or `Ok` when they are valid.
fn report(
    validator: &jsonschema::Validator,
    args: &Value,
    max_reported: usize,
) -> Result<(), ErrorObject> {
    let mut errors = validator.iter_errors(args).peekable();
    let Some(first) = errors.peek() else {
        return Ok(());
    };
    let message = format!(
        "invalid args at {}: {}",
        describe_path(first.instance_path().as_str()),
        first
    );
    let violations: Vec<Value> = errors
        .take(max_reported.max(1))
        .map(|e| {
            serde_json::json!({
                "instancePath": e.instance_path().as_str(),
                "schemaPath": e.schema_path().as_str(),
                "message": e.to_string(),
            })
        })
        .collect();
    Err(ErrorObject {
        code: codes::INVALID_PARAMS,
        message,
        data: c2_protocol::to_raw(&serde_json::json!({ "violations": violations })).ok(),
    })
}

/// The major version of a SemVer-ish string: everything before the first dot.
fn major(version: &str) -> &str {
    let version = version.trim();
    version.split('.').next().unwrap_or(version)
}

/// Raw params read as a value (the host's params are small and typed next).
fn params_value(params: Option<c2_protocol::RawJson>) -> Result<Option<Value>, ErrorObject> {
    c2_protocol::from_raw(params.as_deref())
        .map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, format!("unreadable params: {e}")))
}

struct Dispatcher(Arc<Served>);

impl RequestHandler for Dispatcher {
    fn handle(&self, request: Request, peer: Peer) -> HandlerFuture {
        let served = Arc::clone(&self.0);
        Box::pin(async move {
            match request.method.as_str() {
                method::INITIALIZE => served.initialize(params_value(request.params)?),
                method::COMMAND_INVOKE => served.invoke(request.params, peer).await,
                other => Err(ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!(
                        "method `{other}` is not handled by a plugin; send initialize or command/invoke"
                    ),
                )),
            }
        })
    }
}
