//! `connector/event`: provider notifications from a connector runtime.
//!
//! They never enter the public JSON bus. The host checks the envelope, attributes the event to
//! the authenticated installed bundle (a `plugin_id` the process supplies is ignored and
//! removed), drops duplicate `eventId`s per connector (the last 1,024), and publishes a typed
//! [`ConnectorEvent`] on the kernel's internal bus for host adapters.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use c2_manifest::Manifest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use c2_host::seam::{EventHook, Registry, RuntimeHook};
use c2_host::{ErrorKind, HostError, PluginHost};
use c2_lock::lock;

/// The reserved event name.
pub const CONNECTOR_EVENT: &str = "connector/event";

/// How many recent event ids are remembered per connector for deduplication.
pub const CONNECTOR_DEDUP_WINDOW: usize = 1024;

/// A connector notification as host adapters receive it on the typed internal bus.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorEvent {
    /// The authenticated installed-bundle id: set by the host, never by the process.
    pub bundle_id: String,
    /// The bundle-local connector id; adapters match it against the active connector.
    pub connector_id: String,
    /// The provider's event or message id (deduplicated).
    pub event_id: String,
    /// e.g. `message.created`.
    pub kind: String,
    /// As the provider stated it.
    pub created_at: String,
    /// The whole payload, without any process-supplied plugin id.
    pub payload: Value,
}

/// Registers connectors with a host that is opening: their state and the `connector/event` hook.
pub(crate) fn install(registry: &mut Registry<'_>) {
    registry.own(Arc::new(ConnectorState::default()));
    registry.event_hook(Arc::new(ConnectorHook));
}

/// The connectors contribution's state: the provider adapters the embedder registered.
#[derive(Debug, Default)]
struct ConnectorState {
    providers: Mutex<BTreeSet<String>>,
}

/// Claims `connector/event`: each runtime checks and deduplicates its own events.
#[derive(Debug)]
struct ConnectorHook;

impl EventHook for ConnectorHook {
    fn name(&self) -> &'static str {
        CONNECTOR_EVENT
    }

    fn start(&self, manifest: &Manifest) -> Box<dyn RuntimeHook> {
        Box::new(ConnectorEvents::new(manifest))
    }
}

impl RuntimeHook for ConnectorEvents {
    fn accept(&mut self, kernel: &c2_kernel::Kernel, bundle_id: &str, payload: Value) {
        match ConnectorEvents::accept(self, bundle_id, payload) {
            Ok(Some(typed)) => {
                kernel.emit_typed(typed);
            }
            Ok(None) => {}
            Err(reason) => {
                tracing::warn!(owner = %bundle_id, "dropping connector/event: {reason}");
            }
        }
    }
}

/// Per-runtime envelope checking and deduplication.
#[derive(Debug)]
pub(crate) struct ConnectorEvents {
    seen: BTreeMap<String, (VecDeque<String>, HashSet<String>)>,
}

impl ConnectorEvents {
    pub(crate) fn new(manifest: &Manifest) -> Self {
        let seen = manifest
            .codetwo
            .connectors
            .iter()
            .map(|c| (c.id.clone(), (VecDeque::new(), HashSet::new())))
            .collect();
        Self { seen }
    }

    /// Checks one payload; `Ok(None)` for a duplicate.
    pub(crate) fn accept(
        &mut self,
        bundle_id: &str,
        mut payload: Value,
    ) -> Result<Option<ConnectorEvent>, String> {
        let Some(object) = payload.as_object_mut() else {
            return Err("the payload must be an object".to_owned());
        };
        object.remove("plugin_id");
        object.remove("pluginId");
        let field = |name: &str| -> Result<String, String> {
            match object.get(name) {
                Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
                Some(_) => Err(format!("`{name}` must be a non-empty string")),
                None => Err(format!("the envelope needs `{name}`")),
            }
        };
        let connector_id = field("connectorId")?;
        let event_id = field("eventId")?;
        let kind = field("kind")?;
        let created_at = field("createdAt")?;
        let Some((order, ids)) = self.seen.get_mut(&connector_id) else {
            return Err(format!(
                "connector `{connector_id}` is not declared by this bundle"
            ));
        };
        if !ids.insert(event_id.clone()) {
            return Ok(None);
        }
        order.push_back(event_id.clone());
        if order.len() > CONNECTOR_DEDUP_WINDOW
            && let Some(oldest) = order.pop_front()
        {
            ids.remove(&oldest);
        }
        Ok(Some(ConnectorEvent {
            bundle_id: bundle_id.to_owned(),
            connector_id,
            event_id,
            kind,
            created_at,
            payload,
        }))
    }
}

/// A connector operation requested by a host-rendered adapter.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectorRequest {
    /// The installed bundle id.
    pub id: String,
    /// The connector's bundle-local id.
    pub connector: String,
    /// The dotted operation name chosen by the adapter, e.g. `message.send`.
    pub operation: String,
    /// Operation data.
    #[serde(default)]
    pub input: Value,
    /// The project realm; the user realm when absent.
    #[serde(default)]
    pub project: Option<PathBuf>,
}

/// Connectors: provider adapters the embedder registers and the checked invocation of a
/// bundle's connector. Implemented for [`PluginHost`].
pub trait Connectors {
    /// Registers a provider adapter by name (e.g. `feishu`). Connectors whose provider has no
    /// adapter are reported unsupported and cannot be invoked.
    fn register_provider(&self, provider: &str) -> Result<(), HostError>;

    /// Invokes a connector's command with `{operation, input}` after every check, all of them
    /// before the plugin runs: a known provider adapter, an operation inside the declared
    /// capabilities, trust, ownership and registration in the realm.
    fn invoke_connector(
        &self,
        request: &ConnectorRequest,
    ) -> impl Future<Output = Result<Value, HostError>> + Send;

    /// The connectors of trusted, enabled bundles with whether their provider is supported.
    fn connectors(&self) -> Vec<ConnectorStatus>;
}

impl Connectors for PluginHost {
    fn register_provider(&self, provider: &str) -> Result<(), HostError> {
        lock(&self.seam().state::<ConnectorState>()?.providers).insert(provider.to_owned());
        Ok(())
    }

    async fn invoke_connector(&self, request: &ConnectorRequest) -> Result<Value, HostError> {
        let (target, realm, bundle) = self
            .seam()
            .contribution(&request.id, request.project.as_ref())?;
        let Some(connector) = bundle
            .manifest()
            .codetwo
            .connectors
            .iter()
            .find(|c| c.id == request.connector)
        else {
            return Err(HostError::new(
                ErrorKind::UnknownConnector,
                format!(
                    "{} declares no connector `{}`",
                    bundle.record().id,
                    request.connector
                ),
            ));
        };
        self.seam().refuse_withheld(
            &bundle,
            &realm,
            c2_bundle_collector::ContributionKind::Connector,
            &connector.id,
        )?;
        if !lock(&self.seam().state::<ConnectorState>()?.providers).contains(&connector.provider) {
            return Err(HostError::new(
                ErrorKind::Unsupported,
                format!(
                    "no host adapter for provider `{}` is registered, so connector `{}` is unsupported here",
                    connector.provider, connector.id
                ),
            ));
        }
        if !connector.operation_allowed(&request.operation) {
            let declared: Vec<&str> = connector.capabilities.iter().map(|c| c.as_str()).collect();
            return Err(HostError::new(
                ErrorKind::OperationNotAllowed,
                format!(
                    "operation `{}` is outside connector `{}`'s declared capabilities ({}); it was refused before the plugin ran",
                    request.operation,
                    connector.id,
                    declared.join(", ")
                ),
            ));
        }
        self.seam()
            .verify_owned_command(&bundle, &connector.command, &realm)?;
        let args = serde_json::json!({ "operation": request.operation, "input": request.input });
        self.invoke(&target, &connector.command, args).await
    }

    fn connectors(&self) -> Vec<ConnectorStatus> {
        // A host opened without connectors has no provider adapters: none is supported.
        let providers = &self
            .seam()
            .state::<ConnectorState>()
            .map(|state| lock(&state.providers).clone())
            .unwrap_or_default();
        let bundles = self.seam().installed();
        bundles
            .iter()
            .flat_map(|bundle| {
                let withheld = self.seam().withheld(bundle, &c2_policy::Scope::User);
                bundle
                    .manifest()
                    .codetwo
                    .connectors
                    .iter()
                    .map(move |c| ConnectorStatus {
                        bundle: bundle.record().id.clone(),
                        id: c.id.clone(),
                        provider: c.provider.clone(),
                        capabilities: c
                            .capabilities
                            .iter()
                            .map(|c| c.as_str().to_owned())
                            .collect(),
                        supported: providers.contains(&c.provider),
                        disabled: withheld.contains(&format!("connector:{}", c.id)),
                    })
            })
            .collect()
    }
}

/// A declared connector and whether this host can render it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorStatus {
    /// The installed bundle id.
    pub bundle: String,
    /// The connector's bundle-local id.
    pub id: String,
    /// The provider it needs an adapter for.
    pub provider: String,
    /// Its declared capabilities.
    pub capabilities: Vec<String>,
    /// Whether an adapter for the provider is registered.
    pub supported: bool,
    /// Whether the user disabled this connector (`connector:<id>`); it cannot be invoked.
    pub disabled: bool,
}
