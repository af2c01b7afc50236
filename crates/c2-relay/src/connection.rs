//! One relay connection: JSON-RPC 2.0 requests from a frontend answered over the host's public
//! seam. `relay/initialize` comes first; every other request before it is refused. Each request
//! runs in its own task (at most `PeerOptions::max_incoming_requests` at once, the rest answered
//! busy), and `$/cancelRequest` abandons a call the way a plugin caller does: the host stops the
//! process that was serving it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use c2_contributions::prelude::*;
use c2_host::{
    ErrorKind, HostError, InstallOptions, PlanAction, PlanFile, PluginHost, StateChange, Target,
};
use c2_lock::lock;
use c2_protocol::{CallError, ErrorObject, Id, Notifications, Peer, Request, codes};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use crate::events::{self, Bus};
use crate::json::{self, Revisions};
use crate::methods::{Call, InitializeParams, METHODS, Method};

/// The relay protocol's version; a client is compatible when its major version is the same.
pub const RELAY_VERSION: &str = "2.0.0";

/// The caller cancelled the request with `$/cancelRequest`.
pub const REQUEST_CANCELLED: i64 = -32800;
/// A request other than `relay/initialize` arrived before it.
pub const NOT_INITIALIZED: i64 = -32010;
/// `relay/initialize` named an incompatible relay version.
pub const VERSION_MISMATCH: i64 = -32011;

/// The longest `uiCacheKey` `relay/initialize` accepts, in bytes.
pub const MAX_UI_CACHE_KEY: usize = 128;

/// The notification that carries a subscribed event to the client.
pub const EVENT: &str = "events/event";

/// The methods `$/cancelRequest` may abandon.
pub const CANCELLABLE: &[&str] = &["command/invoke", "ui/invoke", "connectors/invoke"];

/// The notification a client sends to abandon one of its requests.
pub const CANCEL: &str = "$/cancelRequest";

/// What every connection shares: the one host and where it lives.
#[derive(Debug, Clone)]
pub(crate) struct Service {
    pub(crate) host: PluginHost,
    pub(crate) plugins_dir: PathBuf,
    /// The relay module's scope, which owns every event subscription.
    pub(crate) bus: Bus,
    /// Event subscriptions one connection may hold at once.
    pub(crate) max_subscriptions: usize,
    /// The name `relay/initialize` answers ([`crate::RelayOptions::server_name`]).
    pub(crate) server_name: &'static str,
    /// The working directories clients develop, watched by id (`plugins/setDeveloperMode`).
    pub(crate) dev: crate::dev::Watches,
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
        let name = request.method.as_str();
        let Some(method) = Method::parse(name) else {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!(
                    "unknown method `{name}`: `relay/initialize` lists the methods this relay answers"
                ),
            ));
        };
        // The params stay the frame's raw text (already bounded and checked to be JSON by the
        // peer): each method reads its typed params straight from it, never through a `Value`
        // tree of the whole document first.
        let params = request.params.as_deref();
        if method != Method::Initialize && !self.initialized.load(Ordering::Acquire) {
            return Err(ErrorObject::new(
                NOT_INITIALIZED,
                format!("`{name}` before `relay/initialize`: initialize the connection first"),
            ));
        }
        // Weighed before anything is built from them, as plugin messages are: a dense
        // document (8 MiB of `[0,0,...]` would take ~300 MiB as a tree) is refused, so a
        // request's tree stays within the host's bound (4x a frame).
        if let Some(raw) = params {
            let bound = self.service.host.options().max_value_tree_bytes;
            if c2_protocol::value_tree_cost(raw.get()) > bound {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "`{name}` params ({} bytes of JSON) would take more than the host's {bound}-byte bound in memory; send less",
                        raw.get().len()
                    ),
                ));
            }
        }
        let call = Call::parse(method, params).map_err(invalid_params)?;
        if let Call::Initialize(params) = call {
            return self.initialize(params);
        }
        // Only calls into plugins may be abandoned: a policy or store change always runs to
        // its end, so it is never left half applied.
        if !method.cancellable() {
            return self.dispatch(call, peer).await;
        }
        let method = name;
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
            answer = self.dispatch(call, peer) => answer,
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
        lock(&self.ui_cache_key)
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
        lock(&self.subscriptions)
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
            // The kind a busy peer answers with, so a client reads one field for both.
            let mut busy = ErrorObject::new(
                codes::HOST_BUSY,
                format!(
                    "this connection already holds {} event subscriptions, the limit: unsubscribe one first",
                    self.service.max_subscriptions
                ),
            );
            busy.data = c2_protocol::to_raw(&json!({ "kind": ErrorKind::HostBusy.as_str() })).ok();
            return Err(busy);
        }
        let mut stream = self
            .service
            .bus
            .subscribe(name, &self.service.host)
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
        lock(&self.cancellable)
    }

    fn initialize(&self, params: InitializeParams) -> Answer {
        let theirs = semver::Version::parse(&params.protocol_version).map_err(|error| {
            ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "protocolVersion `{}` is not a semantic version ({error}); send \"{RELAY_VERSION}\"",
                    params.protocol_version
                ),
            )
        })?;
        let ours = semver::Version::parse(RELAY_VERSION).unwrap_or(semver::Version::new(2, 0, 0));
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
            "server": { "name": self.service.server_name, "version": env!("CARGO_PKG_VERSION") },
            "pid": std::process::id(),
            "pluginsDir": self.service.plugins_dir,
            "capabilities": { "methods": METHODS, "notifications": [CANCEL], "serverNotifications": [EVENT] },
        }))
    }

    async fn dispatch(&self, call: Call, peer: Option<Peer>) -> Answer {
        let host = &self.service.host;
        let wire = Revisions::Text;
        match call {
            Call::Initialize(_) => Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "`relay/initialize` is answered before any other request",
            )),
            Call::EventsSubscribe(p) => self.subscribe(&p.event, peer),
            Call::EventsUnsubscribe(p) => {
                let task = self.lock_subscriptions().remove(&p.subscription);
                if let Some(task) = &task {
                    task.abort();
                }
                Ok(json!({ "removed": task.is_some() }))
            }
            Call::EventsPublish(p) => {
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
            Call::Describe => Ok(crate::describe::describe()),
            Call::PluginsList => {
                let languages = host.language_listing(&Target::User).map_err(error_object)?;
                let listed: Vec<Value> = host
                    .list()
                    .iter()
                    .map(|status| json::bundle_status(status, &languages))
                    .collect();
                Ok(Value::Array(listed))
            }
            Call::PluginsInstall(p) => {
                let options = InstallOptions::default()
                    .with_trust(p.trust)
                    .with_enable(p.enable);
                // The text resolves exactly as the command line's `install` resolves it: a
                // named catalog's entry, a configured catalog's entry, or a path or git source.
                let source = host
                    .resolve_source(&p.source, p.marketplace.as_deref())
                    .map_err(error_object)?;
                let outcome = host
                    .install_source(&source, options)
                    .await
                    .map_err(error_object)?;
                let mut result = json::install_outcome(&outcome, options);
                if source.is_catalog() {
                    result["origin"] = json::origin(outcome.record.origin.as_ref());
                }
                Ok(result)
            }
            Call::PluginsUninstall(p) => {
                let options = c2_host::UninstallOptions {
                    keep_data: p.keep_data,
                };
                let removed = host
                    .uninstall_with(&p.id, options)
                    .await
                    .map_err(error_object)?;
                Ok(json::uninstalled(&removed))
            }
            Call::PluginsTrust(p) => {
                let applied = host.trust(&p.id).await.map_err(error_object)?;
                Ok(json::applied(&p.id, &applied, wire))
            }
            Call::PluginsUntrust(p) => {
                let applied = host.untrust(&p.id).await.map_err(error_object)?;
                Ok(json::applied(&p.id, &applied, wire))
            }
            Call::PluginsSwitch(method, p) => {
                let change = match method {
                    Method::PluginsEnable => StateChange::Enable,
                    Method::PluginsDisable => StateChange::Disable,
                    _ => StateChange::Inherit,
                };
                if let Some(component) = &p.component {
                    let component = c2_host::ComponentRef::parse(component)
                        .map_err(|error| error_object(error.into()))?;
                    let applied = host
                        .set_component(&p.id, &target(p.project), &component, change)
                        .await
                        .map_err(error_object)?;
                    let mut result = json::applied(&p.id, &applied, wire);
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
                    .map_err(error_object)?;
                Ok(json::applied(&p.id, &applied, wire))
            }
            Call::PluginsReset(p) => {
                let revision = host.reset(p.id.as_deref()).await.map_err(error_object)?;
                Ok(json::reset(p.id.as_deref(), revision, wire))
            }
            Call::PluginsPlan(p) => {
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
                    .map_err(error_object)?;
                Ok(json::plan(&plan, wire))
            }
            Call::PluginsApply(p) => {
                let plan = PlanFile::from(p.plan);
                let applied = host.apply_plan(&plan).await.map_err(error_object)?;
                Ok(json::applied(&plan.id, &applied, wire))
            }
            Call::PluginsRuntimePid(p) => {
                let pid = host
                    .runtime_pid(&p.id, &target(p.project))
                    .map_err(error_object)?;
                Ok(json!({ "pid": pid }))
            }
            Call::PluginsRefresh => {
                let changed = host.refresh().await.map_err(error_object)?;
                Ok(json!({ "changed": changed.map(|c| json::store_changed(&c, wire)) }))
            }
            Call::HealthStatus => Ok(json::health(&host.health())),
            Call::PluginsDeveloperStatus => crate::dev::status(host),
            Call::PluginsSetDeveloperMode(p) => {
                let dev = &self.service.dev;
                crate::dev::set_mode(host, dev, p.enabled, p.path.as_deref()).await
            }
            Call::PluginsReloadDevelopment(p) => {
                for mark in host
                    .reload_development(p.id.as_deref())
                    .await
                    .map_err(error_object)?
                {
                    host.kernel()
                        .emit(crate::dev::DEV_RELOADED, json::dev_reloaded(&mark));
                }
                crate::dev::status(host)
            }
            Call::RealmCatalog(p) => {
                let rows = host.catalog(&target(p.project)).map_err(error_object)?;
                Ok(json::catalog_rows(&rows, wire))
            }
            Call::RealmCommands(p) => {
                let t = target(p.project);
                // A project realm's dormant commands are listed before its first use.
                host.load_realm(&t).await.map_err(error_object)?;
                let rows = host.commands(&t).map_err(error_object)?;
                Ok(json::command_rows(&rows))
            }
            Call::CommandInvoke(p) => {
                let args = p.args.unwrap_or_else(|| json!({}));
                host.invoke(&target(p.project), &p.command, args)
                    .await
                    .map_err(error_object)
            }
            Call::LspList(p) => {
                let listing = host
                    .language_listing(&target(p.project))
                    .map_err(error_object)?;
                Ok(json::language_listing(&listing))
            }
            Call::LspResolve(p) => {
                let resolved = host
                    .resolve_language_server(&p.project, &p.language)
                    .map_err(error_object)?;
                Ok(json::resolved(&resolved))
            }
            Call::McpList(p) => {
                // Listing only: a session launches its MCP servers, never the relay.
                let rows = host.mcp_servers(&target(p.project)).map_err(error_object)?;
                Ok(Value::Array(
                    rows.iter()
                        .map(|row| json::mcp_server(row, p.env_values))
                        .collect(),
                ))
            }
            Call::SkillsList(p) => Ok(json::skill_library(
                &host
                    .skill_library(&target(p.project))
                    .map_err(error_object)?,
            )),
            Call::ScenesList(p) => Ok(json::scene_library(
                &host
                    .scene_library(&target(p.project))
                    .map_err(error_object)?,
            )),
            Call::ConnectorsList => Ok(json::connectors(&host.connectors())),
            Call::ConnectorsRegisterProvider(p) => {
                host.register_provider(&p.provider).map_err(error_object)?;
                Ok(json!({ "provider": p.provider }))
            }
            Call::ConnectorsInvoke(request) => {
                host.invoke_connector(&request).await.map_err(error_object)
            }
            Call::UiCatalog(p) => {
                let t = target(p.project);
                host.load_realm(&t).await.map_err(error_object)?;
                let slots = host.ui_catalog(&t).map_err(error_object)?;
                Ok(json::ui_catalog(&slots))
            }
            Call::UiInvoke(request) => {
                // The effective session keys the renders: `sessionId`, else `context.sessionId`.
                let session_id = request.session_id.as_deref().or_else(|| {
                    request
                        .context
                        .as_ref()
                        .and_then(|context| context.session_id.as_deref())
                });
                let session = self.ui_session(session_id);
                host.invoke_ui_keyed(&request, &session)
                    .await
                    .map_err(error_object)
            }
            Call::HubMarketplaces => Ok(json::marketplaces(
                &host.marketplaces().map_err(error_object)?,
            )),
            Call::HubAddMarketplace(p) => {
                let added = host
                    .marketplace_add(&p.location, p.name.as_deref())
                    .await
                    .map_err(error_object)?;
                Ok(json::marketplace(&added))
            }
            Call::HubRemoveMarketplace(p) => Ok(json::marketplace(
                &host.marketplace_remove(&p.name).map_err(error_object)?,
            )),
            Call::HubSearch(p) => {
                let hits = host
                    .search(&p.text, p.marketplace.as_deref())
                    .await
                    .map_err(error_object)?;
                Ok(json::search_hits(&hits))
            }
            Call::HubOutdated => Ok(json::outdated_rows(&host.outdated().await)),
            Call::HubUpdate(p) => {
                let report = host
                    .update_with(p.id.as_deref(), p.dry_run)
                    .await
                    .map_err(error_object)?;
                Ok(if p.dry_run {
                    json::update_dry_run(&report)
                } else {
                    json::update_report(&report)
                })
            }
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

fn id_key(id: &Id) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

fn target(project: Option<PathBuf>) -> Target {
    project.map_or(Target::User, Target::Project)
}

/// A host error as a JSON-RPC error: `-32001` for an unknown command, `-32000` otherwise, with
/// [`json::error_data`] (the host's kind, whose fault, its hint, an invalid bundle's
/// diagnostics and a plugin's own error) in `data`.
pub fn error_object(error: HostError) -> ErrorObject {
    let code = if error.kind() == ErrorKind::UnknownCommand {
        codes::UNKNOWN_COMMAND
    } else {
        codes::COMMAND_FAILED
    };
    let data = json::error_data(&error);
    ErrorObject {
        code,
        message: error.to_string(),
        data: c2_protocol::to_raw(&Value::Object(data)).ok(),
    }
}

fn invalid_params(error: serde_json::Error) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("invalid params: {error}; docs/relay.md lists each method's params"),
    )
}
