//! Unit tests of the crate's small pure pieces: connector event checking and language-id folding.

use serde_json::{Value, json};

use crate::connectors::{CONNECTOR_DEDUP_WINDOW, ConnectorEvents};
use crate::lsp::fold;

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

#[test]
fn language_ids_fold_case() {
    assert_eq!(fold("TypeScriptReact"), fold("typescriptreact"));
    assert_ne!(fold("c"), fold("cpp"));
}
