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

use crate::seam::{ErrorKind, EventHook, HostError, PluginHost, Registry, RuntimeHook, lock};

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
    registry.own(Arc::new(Connectors::default()));
    registry.event_hook(Arc::new(ConnectorHook));
}

/// The connectors contribution's state: the provider adapters the embedder registered.
#[derive(Debug, Default)]
struct Connectors {
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

impl PluginHost {
    /// Registers a provider adapter by name (e.g. `feishu`). Connectors whose provider has no
    /// adapter are reported unsupported and cannot be invoked.
    pub fn register_provider(&self, provider: &str) {
        lock(&self.state::<Connectors>().providers).insert(provider.to_owned());
    }

    /// Invokes a connector's command with `{operation, input}` after every check, all of them
    /// before the plugin runs: a known provider adapter, an operation inside the declared
    /// capabilities, trust, ownership and registration in the realm.
    pub async fn invoke_connector(&self, request: &ConnectorRequest) -> Result<Value, HostError> {
        let (target, realm, bundle) = self.contribution(&request.id, request.project.as_ref())?;
        let Some(connector) = bundle
            .manifest
            .codetwo
            .connectors
            .iter()
            .find(|c| c.id == request.connector)
        else {
            return Err(HostError::command(
                ErrorKind::UnknownConnector,
                format!(
                    "{} declares no connector `{}`",
                    bundle.record.id, request.connector
                ),
            ));
        };
        self.refuse_withheld(
            &bundle,
            &realm,
            c2_bundle_collector::ContributionKind::Connector,
            &connector.id,
        )?;
        if !lock(&self.state::<Connectors>().providers).contains(&connector.provider) {
            return Err(HostError::command(
                ErrorKind::Unsupported,
                format!(
                    "no host adapter for provider `{}` is registered, so connector `{}` is unsupported here",
                    connector.provider, connector.id
                ),
            ));
        }
        if !connector.operation_allowed(&request.operation) {
            let declared: Vec<&str> = connector.capabilities.iter().map(|c| c.as_str()).collect();
            return Err(HostError::command(
                ErrorKind::OperationNotAllowed,
                format!(
                    "operation `{}` is outside connector `{}`'s declared capabilities ({}); it was refused before the plugin ran",
                    request.operation,
                    connector.id,
                    declared.join(", ")
                ),
            ));
        }
        self.verify_owned_command(&bundle, &connector.command, &realm)?;
        let args = serde_json::json!({ "operation": request.operation, "input": request.input });
        self.invoke(&target, &connector.command, args).await
    }

    /// The connectors of trusted, enabled bundles with whether their provider is supported.
    pub fn connectors(&self) -> Vec<ConnectorStatus> {
        let providers = &lock(&self.state::<Connectors>().providers).clone();
        let bundles = self.installed();
        bundles
            .iter()
            .flat_map(|bundle| {
                let withheld = self.withheld(bundle, &c2_policy::Scope::User);
                bundle
                    .manifest
                    .codetwo
                    .connectors
                    .iter()
                    .map(move |c| ConnectorStatus {
                        bundle: bundle.record.id.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events() -> ConnectorEvents {
        let text = r#"{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"chat","version":"1.0.0",
          "extensions":{"dev.codetwo":{"standardVersion":"1.2.0",
            "commands":[{"id":"chat.connector","title":"Chat"}],
            "runtime":{"command":"node","args":["x.js"]},
            "connectors":[{"id":"workspace","provider":"example-chat","command":"chat.connector","capabilities":["messaging"]}]}}}"#;
        let report = c2_manifest::validate_manifest(text, &c2_manifest::ManifestOptions::default());
        ConnectorEvents::new(report.manifest.as_ref().expect("valid test manifest"))
    }

    fn envelope(id: &str) -> Value {
        json!({"connectorId": "workspace", "eventId": id, "kind": "message.created",
               "createdAt": "1724900000000", "plugin_id": "forged", "text": "hi"})
    }

    #[test]
    fn the_host_attributes_the_event_and_drops_a_forged_plugin_id() {
        let event = events()
            .accept("chat-1234", envelope("e1"))
            .unwrap()
            .unwrap();
        assert_eq!(event.bundle_id, "chat-1234");
        assert_eq!(event.connector_id, "workspace");
        assert!(event.payload.get("plugin_id").is_none());
        assert_eq!(event.payload["text"], "hi");
    }

    #[test]
    fn duplicates_are_dropped_within_the_window_only() {
        let mut events = events();
        assert!(events.accept("b", envelope("e1")).unwrap().is_some());
        assert!(events.accept("b", envelope("e1")).unwrap().is_none());
        for i in 0..CONNECTOR_DEDUP_WINDOW {
            events.accept("b", envelope(&format!("n{i}"))).unwrap();
        }
        assert!(events.accept("b", envelope("e1")).unwrap().is_some());
    }

    #[test]
    fn a_bad_envelope_or_an_undeclared_connector_is_refused() {
        let mut events = events();
        let mut missing = envelope("e1");
        missing.as_object_mut().unwrap().remove("kind");
        assert!(events.accept("b", missing).unwrap_err().contains("`kind`"));
        let mut number = envelope("e1");
        number["createdAt"] = json!(1);
        assert!(
            events
                .accept("b", number)
                .unwrap_err()
                .contains("createdAt")
        );
        let mut other = envelope("e1");
        other["connectorId"] = json!("elsewhere");
        assert!(
            events
                .accept("b", other)
                .unwrap_err()
                .contains("not declared")
        );
        assert!(events.accept("b", json!([1])).is_err());
    }
}
