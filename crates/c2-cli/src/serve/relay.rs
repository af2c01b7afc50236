//! One relay connection: JSON-RPC 2.0 requests from a frontend answered over the host's public
//! seam. `relay/initialize` comes first; every other request before it is refused. Each request
//! runs in its own task (at most `PeerOptions::max_incoming_requests` at once, the rest answered
//! busy), and `$/cancelRequest` abandons a call the way a plugin caller does: the host stops the
//! process that was serving it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use c2_host::{
    ConnectorRequest, HostError, InstallOptions, PlanAction, PlanFile, PluginHost, Resolved,
    StateChange, Target, UiRequest,
};
use c2_protocol::{CallError, ErrorObject, Id, Notifications, Peer, Request, codes};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::events::{self, Bus};

use crate::commands;
use crate::session;

/// The relay protocol's version; a client is compatible when its major version is the same.
pub(crate) const RELAY_VERSION: &str = "1.0.0";

/// The caller cancelled the request with `$/cancelRequest`.
pub(crate) const REQUEST_CANCELLED: i64 = -32800;
/// A request other than `relay/initialize` arrived before it.
pub(crate) const NOT_INITIALIZED: i64 = -32010;
/// `relay/initialize` named an incompatible relay version.
pub(crate) const VERSION_MISMATCH: i64 = -32011;

/// Every request method this relay answers: the capability list `relay/initialize` returns.
pub(crate) const METHODS: &[&str] = &[
    "relay/initialize",
    "relay/describe",
    "plugins/list",
    "plugins/install",
    "plugins/uninstall",
    "plugins/trust",
    "plugins/untrust",
    "plugins/enable",
    "plugins/disable",
    "plugins/inherit",
    "plugins/reset",
    "plugins/plan",
    "plugins/apply",
    "plugins/runtimePid",
    "plugins/refresh",
    "realm/catalog",
    "realm/commands",
    "command/invoke",
    "ui/catalog",
    "ui/invoke",
    "lsp/list",
    "lsp/resolve",
    "mcp/list",
    "connectors/list",
    "connectors/registerProvider",
    "connectors/invoke",
    "events/subscribe",
    "events/unsubscribe",
    "events/publish",
    "hub/marketplaces",
    "hub/addMarketplace",
    "hub/removeMarketplace",
    "hub/search",
    "hub/outdated",
    "hub/update",
];

/// The longest `uiCacheKey` `relay/initialize` accepts, in bytes.
pub(crate) const MAX_UI_CACHE_KEY: usize = 128;

/// The notification that carries a subscribed event to the client.
pub(crate) const EVENT: &str = "events/event";

/// The methods `$/cancelRequest` may abandon.
pub(crate) const CANCELLABLE: &[&str] = &["command/invoke", "ui/invoke", "connectors/invoke"];

/// The notification a client sends to abandon one of its requests.
pub(crate) const CANCEL: &str = "$/cancelRequest";

/// What every connection shares: the one host and where it lives.
#[derive(Debug, Clone)]
pub(crate) struct Service {
    pub(crate) host: PluginHost,
    pub(crate) plugins_dir: PathBuf,
    /// The relay module's scope, which owns every event subscription.
    pub(crate) bus: Bus,
    /// Event subscriptions one connection may hold at once.
    pub(crate) max_subscriptions: usize,
}

/// Numbers the connections of this process, for their `host.actions` session keys.
static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// One client's state.
#[derive(Debug)]
pub(crate) struct Connection {
    service: Service,
    /// This connection's number: its `host.actions` renders are cached under
    /// `relay/<number>/` plus the request's `sessionId`, so connections and sessions each
    /// invoke the items they rendered.
    number: u64,
    /// `relay/initialize`'s `uiCacheKey`: connections that name the same one share their
    /// `host.actions` renders (a CLI's successive calls), and they outlive the connection.
    ui_cache_key: Mutex<Option<String>>,
    initialized: AtomicBool,
    /// Requests that may be cancelled, by their id's JSON text (so `1` and `"1"` differ).
    cancellable: Mutex<HashMap<String, oneshot::Sender<()>>>,
    /// Live event subscriptions, by the number `events/subscribe` returned.
    subscriptions: Mutex<HashMap<u64, AbortHandle>>,
    next_subscription: AtomicU64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        for task in self.lock_subscriptions().values() {
            task.abort();
        }
        if self.lock_ui_cache_key().is_none() {
            self.service
                .host
                .forget_ui_sessions(&self.ui_session_prefix());
        }
    }
}

type Answer = Result<Value, ErrorObject>;

impl Connection {
    pub(crate) fn new(service: Service) -> Arc<Self> {
        Arc::new(Self {
            service,
            number: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
            ui_cache_key: Mutex::new(None),
            initialized: AtomicBool::new(false),
            cancellable: Mutex::new(HashMap::new()),
            subscriptions: Mutex::new(HashMap::new()),
            next_subscription: AtomicU64::new(1),
        })
    }

    /// Answers one request; `peer` is the connection (events need it; unit tests pass none).
    pub(crate) async fn handle(self: Arc<Self>, request: Request, peer: Option<Peer>) -> Answer {
        let method = request.method.as_str();
        // The params stay the frame's raw text (already bounded and checked to be JSON by the
        // peer): each method reads its typed params straight from it, never through a `Value`
        // tree of the whole document first.
        let params = request.params.as_deref();
        if method == "relay/initialize" {
            return self.initialize(params);
        }
        if !METHODS.contains(&method) {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!(
                    "unknown method `{method}`: `relay/initialize` lists the methods this relay answers"
                ),
            ));
        }
        if !self.initialized.load(Ordering::Acquire) {
            return Err(ErrorObject::new(
                NOT_INITIALIZED,
                format!("`{method}` before `relay/initialize`: initialize the connection first"),
            ));
        }
        // Only calls into plugins may be abandoned: a policy or store change always runs to
        // its end, so it is never left half applied.
        if !CANCELLABLE.contains(&method) {
            return self.dispatch(method, params, peer).await;
        }
        let key = id_key(&request.id);
        let (cancel, cancelled) = oneshot::channel();
        self.lock_cancellable().insert(key.clone(), cancel);
        let _forget = Forget {
            connection: &self,
            key,
        };
        // A client that goes away abandons its calls as a cancel would (an interrupted CLI).
        let gone = peer.clone();
        let gone = async move {
            match gone {
                Some(peer) => peer.closed().await,
                None => std::future::pending().await,
            }
        };
        // Bound to a local so the receiver is gone before `_forget` looks at the entry.
        let answer = tokio::select! {
            answer = self.dispatch(method, params, peer) => answer,
            Ok(()) = cancelled => Err(ErrorObject::new(
                REQUEST_CANCELLED,
                format!("`{method}` was cancelled by the caller ($/cancelRequest)"),
            )),
            reason = gone => Err(ErrorObject::new(
                REQUEST_CANCELLED,
                format!("`{method}` was abandoned: the client's connection closed ({reason:?})"),
            )),
        };
        answer
    }

    /// The start of every `host.actions` session key of this connection.
    fn ui_session_prefix(&self) -> String {
        match &*self.lock_ui_cache_key() {
            Some(key) => format!("relay/shared/{}/", key.replace('/', "//")),
            None => format!("relay/{}/", self.number),
        }
    }

    fn lock_ui_cache_key(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.ui_cache_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The `host.actions` session key of a request: this connection and the request's
    /// `sessionId` (none and an empty one differ).
    fn ui_session(&self, session_id: Option<&str>) -> String {
        match session_id {
            None => self.ui_session_prefix(),
            Some(id) => format!("{}={id}", self.ui_session_prefix()),
        }
    }

    /// Requests that may still be cancelled (for tests of the bound).
    #[cfg(test)]
    pub(crate) fn cancellable_len(&self) -> usize {
        self.lock_cancellable().len()
    }

    /// Handles the client's notifications until the connection's queue closes: only
    /// `$/cancelRequest` means anything; others are logged and dropped.
    pub(crate) async fn pump(self: Arc<Self>, mut notifications: Notifications) {
        while let Some(notification) = notifications.recv().await {
            if notification.method != CANCEL {
                tracing::debug!(method = %notification.method, "ignored a relay notification");
                continue;
            }
            let params: Option<Value> = notification
                .params
                .as_deref()
                .and_then(|raw| serde_json::from_str(raw.get()).ok());
            let id = params.as_ref().and_then(|p| p.get("id"));
            let Some(id) = id.filter(|id| id.is_string() || id.is_number()) else {
                tracing::warn!("`$/cancelRequest` without a string or number `id`; ignored");
                continue;
            };
            if let Some(cancel) = self.lock_cancellable().remove(&id.to_string()) {
                let _ = cancel.send(());
            }
        }
    }

    fn lock_subscriptions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, AbortHandle>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Subscribes the client to `name`: a task forwards each event as `events/event` until the
    /// client unsubscribes, the connection closes or the host shuts down.
    fn subscribe(&self, name: &str, peer: Option<Peer>) -> Answer {
        let Some(peer) = peer else {
            return Err(ErrorObject::new(
                codes::COMMAND_FAILED,
                "events need a connection",
            ));
        };
        let mut subscriptions = self.lock_subscriptions();
        subscriptions.retain(|_, task| !task.is_finished());
        if subscriptions.len() >= self.service.max_subscriptions {
            return Err(ErrorObject::new(
                codes::HOST_BUSY,
                format!(
                    "this connection already holds {} event subscriptions, the limit: unsubscribe one first",
                    self.service.max_subscriptions
                ),
            ));
        }
        let mut stream = self
            .service
            .bus
            .subscribe(name)
            .map_err(|message| ErrorObject::new(codes::COMMAND_FAILED, message))?;
        let number = self.next_subscription.fetch_add(1, Ordering::Relaxed);
        let task = tokio::spawn(async move {
            let mut dropped = 0u64;
            loop {
                let event = tokio::select! {
                    event = stream.next() => event,
                    _ = peer.closed() => None,
                };
                let Some((name, payload)) = event else { break };
                let params = json!({
                    "subscription": number,
                    "name": name,
                    "payload": payload,
                    "dropped": dropped + stream.dropped(),
                });
                match peer.notify(EVENT, Some(params)).await {
                    Ok(()) => {}
                    Err(CallError::QueueFull { limit }) => {
                        dropped += 1;
                        tracing::warn!(
                            subscription = number,
                            "dropped an event: the client's outbound queue is full ({limit} messages)"
                        );
                    }
                    Err(_) => break,
                }
            }
        });
        subscriptions.insert(number, task.abort_handle());
        Ok(json!({ "subscription": number }))
    }

    fn lock_cancellable(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<()>>> {
        self.cancellable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn initialize(&self, params: Option<&RawValue>) -> Answer {
        let params: InitializeParams = parse(params)?;
        let theirs = semver::Version::parse(&params.protocol_version).map_err(|error| {
            ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "protocolVersion `{}` is not a semantic version ({error}); send \"{RELAY_VERSION}\"",
                    params.protocol_version
                ),
            )
        })?;
        let ours = semver::Version::parse(RELAY_VERSION).unwrap_or(semver::Version::new(1, 0, 0));
        if theirs.major != ours.major {
            let mut error = ErrorObject::new(
                VERSION_MISMATCH,
                format!(
                    "this relay speaks {RELAY_VERSION}; a client of relay {theirs} is not compatible (the major versions differ)"
                ),
            );
            error.data = c2_protocol::to_raw(
                &json!({ "kind": "version_mismatch", "supported": RELAY_VERSION }),
            )
            .ok();
            return Err(error);
        }
        if let Some(key) = &params.ui_cache_key
            && (key.is_empty() || key.len() > MAX_UI_CACHE_KEY)
        {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "uiCacheKey must be 1 to {MAX_UI_CACHE_KEY} bytes; omit it to keep this connection's renders its own"
                ),
            ));
        }
        *self.lock_ui_cache_key() = params.ui_cache_key;
        self.initialized.store(true, Ordering::Release);
        Ok(json!({
            "protocolVersion": RELAY_VERSION,
            "server": { "name": "c2-plugins", "version": env!("CARGO_PKG_VERSION") },
            "pid": std::process::id(),
            "pluginsDir": self.service.plugins_dir,
            "capabilities": { "methods": METHODS, "notifications": [CANCEL], "serverNotifications": [EVENT] },
        }))
    }

    async fn dispatch(
        &self,
        method: &str,
        params: Option<&RawValue>,
        peer: Option<Peer>,
    ) -> Answer {
        let host = &self.service.host;
        match method {
            "events/subscribe" => {
                let p: SubscribeParams = parse(params)?;
                self.subscribe(&p.event, peer)
            }
            "events/unsubscribe" => {
                let p: UnsubscribeParams = parse(params)?;
                let task = self.lock_subscriptions().remove(&p.subscription);
                if let Some(task) = &task {
                    task.abort();
                }
                Ok(json!({ "removed": task.is_some() }))
            }
            "events/publish" => {
                let p: PublishParams = parse(params)?;
                if !events::PUBLISHABLE.contains(&p.name.as_str()) {
                    return Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        format!(
                            "relay clients publish only the host events {}; `{}` is not one",
                            events::PUBLISHABLE.join(", "),
                            p.name
                        ),
                    ));
                }
                let delivered = host
                    .kernel()
                    .emit(&p.name, p.payload.unwrap_or(Value::Null));
                Ok(json!({ "delivered": delivered }))
            }
            "relay/describe" => {
                let NoParams {} = parse(params)?;
                Ok(super::describe::describe())
            }
            "plugins/list" => {
                let NoParams {} = parse(params)?;
                let languages = host.language_listing(&Target::User).map_err(host_error)?;
                let listed: Vec<Value> = host
                    .list()
                    .iter()
                    .map(|status| commands::list::status_json(status, &languages))
                    .collect();
                Ok(Value::Array(listed))
            }
            "plugins/install" => {
                let p: InstallParams = parse(params)?;
                let options = InstallOptions::default()
                    .with_trust(p.trust)
                    .with_enable(p.enable);
                if let Some(marketplace) = &p.marketplace {
                    // `source` is a catalog entry, NAME[@VERSION].
                    let (name, version) = commands::hub::split_name(&p.source);
                    let outcome = host
                        .install_from_catalog(name, version, Some(marketplace), options)
                        .await
                        .map_err(host_error)?;
                    let mut result = commands::install::outcome_json(&outcome, options);
                    result["origin"] = json!(outcome.record.origin);
                    return Ok(result);
                }
                let outcome = host.install(&p.source, options).await.map_err(host_error)?;
                Ok(commands::install::outcome_json(&outcome, options))
            }
            "plugins/uninstall" => {
                let p: IdParams = parse(params)?;
                let removed = host.uninstall(&p.id).await.map_err(host_error)?;
                let record = removed.record.as_ref();
                Ok(json!({
                    "id": removed.id,
                    "name": record.map(|r| &r.name),
                    "version": record.and_then(|r| r.version.as_ref()),
                }))
            }
            "plugins/trust" | "plugins/untrust" => {
                let p: IdParams = parse(params)?;
                let applied = if method == "plugins/trust" {
                    host.trust(&p.id).await
                } else {
                    host.untrust(&p.id).await
                }
                .map_err(host_error)?;
                Ok(commands::policy::applied_json(&p.id, &applied))
            }
            "plugins/enable" | "plugins/disable" | "plugins/inherit" => {
                let p: SwitchParams = parse(params)?;
                let change = match method {
                    "plugins/enable" => StateChange::Enable,
                    "plugins/disable" => StateChange::Disable,
                    _ => StateChange::Inherit,
                };
                if let Some(component) = &p.component {
                    let component = c2_host::ComponentRef::parse(component).map_err(host_error)?;
                    let applied = host
                        .set_component(&p.id, &target(p.project), &component, change)
                        .await
                        .map_err(host_error)?;
                    let mut result = commands::policy::applied_json(&p.id, &applied);
                    result["component"] = json!(component.policy_key(&p.id));
                    return Ok(result);
                }
                if change == StateChange::Inherit && p.project.is_none() {
                    return Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        "`plugins/inherit` needs `project`: the user realm has nothing to inherit from",
                    ));
                }
                let applied = host
                    .set_state(&p.id, &target(p.project), change)
                    .await
                    .map_err(host_error)?;
                Ok(commands::policy::applied_json(&p.id, &applied))
            }
            "plugins/reset" => {
                let p: ResetParams = parse(params)?;
                let revision = host.reset(p.id.as_deref()).await.map_err(host_error)?;
                Ok(json!({ "id": p.id, "revision": revision }))
            }
            "plugins/plan" => {
                let p: PlanParams = parse(params)?;
                if matches!(p.change, PlanAction::Inherit)
                    && p.project.is_none()
                    && p.component.is_none()
                {
                    return Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        "an `inherit` plan needs `project`: the user realm has nothing to inherit from",
                    ));
                }
                let plan = host
                    .plan_component(&p.id, p.project.as_ref(), p.change, p.component.as_deref())
                    .await
                    .map_err(host_error)?;
                let mut plan = serde_json::to_value(plan).unwrap_or_default();
                revisions_as_text(&mut plan);
                Ok(plan)
            }
            "plugins/apply" => {
                let mut params: Value = parse(params)?;
                if let Some(plan) = params.get_mut("plan") {
                    revisions_as_numbers(plan);
                }
                let p: ApplyParams = serde_json::from_value(params).map_err(invalid_params)?;
                let applied = host.apply_plan(&p.plan).await.map_err(host_error)?;
                Ok(commands::policy::applied_json(&p.plan.id, &applied))
            }
            "plugins/runtimePid" => {
                let p: StateParams = parse(params)?;
                let pid = host
                    .runtime_pid(&p.id, &target(p.project))
                    .map_err(host_error)?;
                Ok(json!({ "pid": pid }))
            }
            "plugins/refresh" => {
                let NoParams {} = parse(params)?;
                let changed = host.refresh().await.map_err(host_error)?;
                Ok(json!({ "changed": changed }))
            }
            "realm/catalog" => {
                let p: RealmParams = parse(params)?;
                let rows = host.catalog(&target(p.project)).map_err(host_error)?;
                Ok(serde_json::to_value(rows).unwrap_or_default())
            }
            "realm/commands" => {
                let p: RealmParams = parse(params)?;
                let rows = host.commands(&target(p.project)).map_err(host_error)?;
                Ok(serde_json::to_value(rows).unwrap_or_default())
            }
            "command/invoke" => {
                let p: InvokeParams = parse(params)?;
                let args = p.args.unwrap_or_else(|| json!({}));
                host.invoke(&target(p.project), &p.command, args)
                    .await
                    .map_err(host_error)
            }
            "lsp/list" => {
                let p: RealmParams = parse(params)?;
                let listing = host
                    .language_listing(&target(p.project))
                    .map_err(host_error)?;
                Ok(commands::lsp::listing_json(&listing))
            }
            "lsp/resolve" => {
                let p: ResolveParams = parse(params)?;
                let resolved = host
                    .resolve_language_server(&p.project, &p.language)
                    .map_err(host_error)?;
                Ok(match resolved {
                    Resolved::Plugin {
                        bundle,
                        server,
                        program,
                    } => {
                        json!({ "kind": "plugin", "bundle": bundle, "server": server, "program": program })
                    }
                    Resolved::BuiltIn(builtin) => json!({ "kind": "builtIn", "builtin": builtin }),
                    _ => Value::Null,
                })
            }
            "mcp/list" => {
                // Listing only: a session launches its MCP servers, never the relay.
                let p: McpParams = parse(params)?;
                let rows = host.mcp_servers(&target(p.project)).map_err(host_error)?;
                Ok(Value::Array(
                    rows.iter()
                        .map(|row| commands::mcp::row_json(row, p.env_values))
                        .collect(),
                ))
            }
            "connectors/list" => {
                let NoParams {} = parse(params)?;
                Ok(serde_json::to_value(host.connectors()).unwrap_or_default())
            }
            "connectors/registerProvider" => {
                let p: ProviderParams = parse(params)?;
                host.register_provider(&p.provider);
                Ok(json!({ "provider": p.provider }))
            }
            "connectors/invoke" => {
                let request: ConnectorRequest = parse(params)?;
                host.invoke_connector(&request).await.map_err(host_error)
            }
            "ui/catalog" => {
                let p: RealmParams = parse(params)?;
                let slots = host.ui_catalog(&target(p.project)).map_err(host_error)?;
                Ok(serde_json::to_value(slots).unwrap_or_default())
            }
            "ui/invoke" => {
                let request: UiRequest = parse(params)?;
                let session = self.ui_session(request.session_id.as_deref());
                host.invoke_ui_keyed(&request, &session)
                    .await
                    .map_err(host_error)
            }
            "hub/marketplaces" => {
                let NoParams {} = parse(params)?;
                Ok(json!(host.marketplaces().map_err(host_error)?))
            }
            "hub/addMarketplace" => {
                let p: AddMarketplaceParams = parse(params)?;
                let added = host
                    .marketplace_add(&p.location, p.name.as_deref())
                    .await
                    .map_err(host_error)?;
                Ok(json!(added))
            }
            "hub/removeMarketplace" => {
                let p: NameParams = parse(params)?;
                Ok(json!(host.marketplace_remove(&p.name).map_err(host_error)?))
            }
            "hub/search" => {
                let p: SearchParams = parse(params)?;
                let hits = host
                    .search(&p.text, p.marketplace.as_deref())
                    .await
                    .map_err(host_error)?;
                Ok(json!(hits))
            }
            "hub/outdated" => {
                let NoParams {} = parse(params)?;
                Ok(json!(host.outdated().await))
            }
            "hub/update" => {
                let p: UpdateParams = parse(params)?;
                let report = host.update(p.id.as_deref()).await.map_err(host_error)?;
                Ok(commands::hub::update_json(&report))
            }
            other => Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("unknown method `{other}`"),
            )),
        }
    }
}

/// Removes a finished request from the cancellable set.
struct Forget<'a> {
    connection: &'a Connection,
    key: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        // Only this request's entry, whose receiver is gone by now: a client that reused the
        // id for a newer request keeps that one cancellable.
        let mut cancellable = self.connection.lock_cancellable();
        if cancellable
            .get(&self.key)
            .is_some_and(oneshot::Sender::is_closed)
        {
            cancellable.remove(&self.key);
        }
    }
}

/// A plan's revisions are 64-bit (the graph's is a hash), past what a JavaScript number holds
/// exactly, so the relay sends them as decimal strings.
pub(crate) fn revisions_as_text(plan: &mut Value) {
    if let Some(revisions) = plan.get_mut("revisions").and_then(Value::as_object_mut) {
        for value in revisions.values_mut() {
            if let Some(n) = value.as_u64() {
                *value = Value::String(n.to_string());
            }
        }
    }
}

/// The inverse of [`revisions_as_text`]; numbers are accepted as they are.
pub(crate) fn revisions_as_numbers(plan: &mut Value) {
    if let Some(revisions) = plan.get_mut("revisions").and_then(Value::as_object_mut) {
        for value in revisions.values_mut() {
            if let Some(n) = value.as_str().and_then(|text| text.parse::<u64>().ok()) {
                *value = Value::from(n);
            }
        }
    }
}

fn id_key(id: &Id) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

fn target(project: Option<PathBuf>) -> Target {
    project.map_or(Target::User, Target::Project)
}

/// A host error as a JSON-RPC error: `-32001` for an unknown command, `-32000` otherwise, with
/// the host's kind, its hint, an invalid bundle's diagnostics and a plugin's own error
/// (`pluginError`) in `data`.
pub(crate) fn host_error(error: HostError) -> ErrorObject {
    let failure = session::failure(error);
    let code = if failure.kind == "unknown_command" {
        codes::UNKNOWN_COMMAND
    } else {
        codes::COMMAND_FAILED
    };
    let mut data = serde_json::Map::new();
    data.insert("kind".to_owned(), Value::String(failure.kind.clone()));
    data.insert("environment".to_owned(), Value::Bool(failure.exit == 2));
    if let Some(hint) = failure.hint {
        data.insert("hint".to_owned(), Value::String(hint));
    }
    data.extend(failure.detail);
    ErrorObject {
        code,
        message: failure.message,
        data: c2_protocol::to_raw(&Value::Object(data)).ok(),
    }
}

/// Reads a method's typed params from the request's raw text in one pass; absent params read
/// as `{}`.
fn parse<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", RawValue::get)).map_err(invalid_params)
}

fn invalid_params(error: serde_json::Error) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("invalid params: {error}; docs/relay.md lists each method's params"),
    )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InitializeParams {
    protocol_version: String,
    #[serde(default)]
    #[expect(dead_code, reason = "accepted for the client's own logs; not used yet")]
    client: Option<Value>,
    #[serde(default)]
    ui_cache_key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InstallParams {
    source: String,
    #[serde(default)]
    trust: bool,
    #[serde(default)]
    enable: bool,
    /// A catalog (path, URL or configured name): `source` is then NAME[@VERSION].
    marketplace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddMarketplaceParams {
    location: String,
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NameParams {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchParams {
    text: String,
    marketplace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateParams {
    id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdParams {
    id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetParams {
    #[serde(default)]
    id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateParams {
    id: String,
    #[serde(default)]
    project: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchParams {
    id: String,
    #[serde(default)]
    project: Option<PathBuf>,
    /// `<kind>:<local-id>`: switch one component instead of the bundle.
    #[serde(default)]
    component: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RealmParams {
    #[serde(default)]
    project: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct McpParams {
    #[serde(default)]
    project: Option<PathBuf>,
    #[serde(default)]
    env_values: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InvokeParams {
    command: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    project: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanParams {
    id: String,
    #[serde(default)]
    project: Option<PathBuf>,
    change: PlanAction,
    /// `<kind>:<local-id>`: plan one component's choice.
    #[serde(default)]
    component: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyParams {
    plan: PlanFile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscribeParams {
    event: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnsubscribeParams {
    subscription: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishParams {
    name: String,
    #[serde(default)]
    payload: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveParams {
    language: String,
    project: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderParams {
    provider: String,
}
