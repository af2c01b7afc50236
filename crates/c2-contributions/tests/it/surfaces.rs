//! UI descriptors, host.actions and connectors, end to end with a Node runtime written here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_contributions::prelude::*;
use c2_contributions::{ConnectorEvent, ConnectorRequest, UiContext, UiRequest};
use c2_host::{InstallOptions, Target, UiOperation, UiSlot};
use serde_json::{Value, json};

use crate::support::{Env, FixtureBundle, pid_of};

const PANEL_PLUGIN: &str = r#"
const fs = require("fs");
const readline = require("readline");
const m = JSON.parse(fs.readFileSync("plugin.json", "utf8"));
const commands = m.extensions["dev.codetwo"].commands.map((c) => ({ name: c.id }));
let calls = 0;
const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "initialize") {
    send({ id: msg.id, result: { name: m.name, version: m.version, protocolVersion: "1.0.0", commands, events: [] } });
  } else if (msg.method === "command/invoke") {
    const a = msg.params.args;
    calls += 1;
    if (msg.params.name === "acts.panel") {
      if (a.context.operation === "render" && a.input.counted) {
        send({ id: msg.id, result: [{ id: `item-${calls}`, label: "Item", input: { n: calls } }] });
      } else if (a.context.operation === "render") send({ id: msg.id, result: a.input.document });
      else send({ id: msg.id, result: { invoked: a.context.actionId, input: a.input, context: a.context } });
    } else if (msg.params.name === "chat.connector") {
      if (a.operation === "message.send") {
        send({ method: "event/emit", params: { name: "connector/event", payload: {
          connectorId: "workspace", eventId: a.input.eventId, kind: "message.created",
          createdAt: "1724900000000", plugin_id: "forged" } } });
      }
      send({ id: msg.id, result: { operation: a.operation, input: a.input, calls } });
    }
  }
}).on("close", () => process.exit(0));
"#;

fn panel_bundle(parent: &Path) -> PathBuf {
    let dir = parent.join("panel");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.js"), PANEL_PLUGIN).unwrap();
    let good = json!([
        {"id": "build", "label": "Build", "state": "running", "input": {"target": "all"}},
        {"id": "test", "label": "Test", "detail": "unit tests", "enabled": false}
    ]);
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "panel",
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [
                {"id": "acts.panel", "title": "Panel"},
                {"id": "chat.connector", "title": "Chat connector"}
            ],
            "runtime": {"command": "node", "args": ["plugin.js"], "scopeSupport": ["user", "project"]},
            "ui": [
                {"id": "panel", "slot": "host.actions", "label": "Panel", "command": "acts.panel",
                 "input": {"document": good}, "order": 5},
                {"id": "counted", "slot": "host.actions", "label": "Counted", "command": "acts.panel",
                 "input": {"counted": true}},
                {"id": "markup", "slot": "host.actions", "label": "Markup", "command": "acts.panel",
                 "input": {"document": [{"id": "x", "label": "<script>"}]}},
                {"id": "unknown-field", "slot": "host.actions", "label": "Unknown", "command": "acts.panel",
                 "input": {"document": [{"id": "x", "label": "X", "onClick": "run()"}]}},
                {"id": "too-many", "slot": "host.actions", "label": "Many", "command": "acts.panel",
                 "input": {"document": (0..9).map(|i| json!({"id": format!("a{i}"), "label": "A"})).collect::<Vec<Value>>()}},
                {"id": "big-input", "slot": "host.actions", "label": "Big", "command": "acts.panel",
                 "input": {"document": [{"id": "x", "label": "X", "input": {"blob": "y".repeat(4100)}}]}}
            ],
            "connectors": [{"id": "workspace", "provider": "example-chat", "command": "chat.connector",
                            "capabilities": ["messaging", "connection"]}]
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

#[tokio::test]
async fn host_actions_render_is_validated_and_invoke_replays_the_cached_input() {
    let env = Env::new().await;
    let id = env.install_ready(&panel_bundle(&env.path("bundles"))).await;
    let render = |ui: &str| UiRequest {
        id: id.clone(),
        ui: ui.to_owned(),
        ..Default::default()
    };
    let rendered = env.host.invoke_ui(&render("panel")).await.unwrap();
    assert_eq!(rendered["actions"][0]["id"], json!("build"));
    assert_eq!(rendered["actions"][1]["state"], json!("default"));
    let invoked = env
        .host
        .invoke_ui(&UiRequest {
            operation: Some(UiOperation::Invoke),
            action_id: Some("build".to_owned()),
            ..render("panel")
        })
        .await
        .unwrap();
    assert_eq!(invoked["invoked"], json!("build"));
    assert_eq!(invoked["input"], json!({"target": "all"}));
    assert_eq!(invoked["context"]["operation"], json!("invoke"));
    let missing = env
        .host
        .invoke_ui(&UiRequest {
            operation: Some(UiOperation::Invoke),
            action_id: Some("nope".to_owned()),
            ..render("panel")
        })
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), "unknown_action");
    for (ui, word) in [
        ("markup", "markup"),
        ("unknown-field", "unknown field"),
        ("too-many", "at most 8"),
        ("big-input", "bytes"),
    ] {
        let error = env.host.invoke_ui(&render(ui)).await.unwrap_err();
        assert_eq!(error.kind(), "invalid_host_actions", "{ui}: {error}");
        assert!(error.to_string().contains(word), "{ui}: {error}");
    }
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_typed_render_returns_host_actions_and_the_frontend_supplies_its_cwd_and_session() {
    let env = Env::new().await;
    let id = env.install_ready(&panel_bundle(&env.path("bundles"))).await;
    let request = UiRequest {
        id: id.clone(),
        ui: "panel".to_owned(),
        ..Default::default()
    };
    let actions = env
        .host
        .render_host_actions(&request, "frontend-a")
        .await
        .unwrap();
    let ids: Vec<&str> = actions.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["build", "test"], "{actions:?}");
    assert_eq!(actions[1].state, "default");
    // The typed render was cached under its session key: an invoke there replays it, with the
    // context the frontend owns (its cwd and session) and the one the host builds.
    let session_dir = env.path("work/session");
    std::fs::create_dir_all(&session_dir).unwrap();
    let invoke = UiRequest {
        operation: Some(UiOperation::Invoke),
        action_id: Some("build".to_owned()),
        context: Some(
            UiContext::default()
                .with_cwd(&session_dir)
                .with_session_id("session-7"),
        ),
        ..request.clone()
    };
    let invoked = env
        .host
        .invoke_ui_keyed(&invoke, "frontend-a")
        .await
        .unwrap();
    assert_eq!(invoked["context"]["cwd"], json!(session_dir), "{invoked}");
    assert_eq!(invoked["context"]["sessionId"], json!("session-7"));
    assert_eq!(invoked["context"]["projectPath"], Value::Null);
    assert_eq!(invoked["context"]["operation"], json!("invoke"));
    // A relative cwd, or one outside the project of a project activation, is refused before
    // the plugin runs.
    let project = env.project("p");
    let refused = |context: UiContext, project: Option<PathBuf>| UiRequest {
        context: Some(context),
        project,
        ..request.clone()
    };
    for (request, word) in [
        (
            refused(UiContext::default().with_cwd("rel/dir"), None),
            "relative",
        ),
        (
            refused(
                UiContext::default().with_cwd(&session_dir),
                Some(project.clone()),
            ),
            "outside the project",
        ),
    ] {
        let error = env
            .host
            .render_host_actions(&request, "frontend-a")
            .await
            .unwrap_err();
        assert_eq!(error.kind(), c2_host::ErrorKind::InvalidArgs, "{error}");
        assert!(error.to_string().contains(word), "{error}");
    }
    // Inside the project it runs, and the host still sets projectPath itself.
    let inside = project.join("sub");
    std::fs::create_dir_all(&inside).unwrap();
    let in_project = UiRequest {
        context: Some(UiContext::default().with_cwd(&inside)),
        project: Some(project.clone()),
        ..invoke.clone()
    };
    env.host
        .render_host_actions(&in_project, "frontend-a")
        .await
        .unwrap();
    let invoked = env
        .host
        .invoke_ui_keyed(&in_project, "frontend-a")
        .await
        .unwrap();
    let key = invoked["context"]["projectPath"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        Path::new(&key).ends_with("projects/p") && inside.starts_with(&key),
        "{invoked}"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn host_actions_renders_are_kept_per_session_key_bounded_and_forgotten_on_request() {
    let env = Env::with(|options| options.max_host_actions_renders = 2).await;
    let id = env.install_ready(&panel_bundle(&env.path("bundles"))).await;
    let request = |operation: &str, action: Option<&str>| UiRequest {
        id: id.clone(),
        ui: "counted".to_owned(),
        operation: UiOperation::from_name(operation),
        action_id: action.map(str::to_owned),
        ..Default::default()
    };
    let render = async |session: &str| {
        let rendered = env
            .host
            .invoke_ui_keyed(&request("render", None), session)
            .await
            .unwrap();
        rendered["actions"][0]["id"].as_str().unwrap().to_owned()
    };
    let invoke = async |session: &str, item: &str| {
        env.host
            .invoke_ui_keyed(&request("invoke", Some(item)), session)
            .await
    };
    let a = render("a").await;
    let b = render("b").await;
    assert_ne!(a, b, "each render of the counted descriptor differs");
    // Each key replays its own render: b's did not overwrite a's.
    assert_eq!(invoke("a", &a).await.unwrap()["invoked"], json!(a));
    assert_eq!(invoke("b", &b).await.unwrap()["invoked"], json!(b));
    let crossed = invoke("a", &b).await.unwrap_err();
    assert_eq!(crossed.kind(), "unknown_action", "{crossed}");
    let default = env
        .host
        .invoke_ui(&request("invoke", Some(&a)))
        .await
        .unwrap_err();
    assert_eq!(
        default.kind(),
        "unknown_action",
        "the default key is its own"
    );
    // The bound (2 renders): a third key evicts the least recently rendered, a.
    let c = render("c").await;
    assert_eq!(invoke("a", &a).await.unwrap_err().kind(), "unknown_action");
    assert_eq!(invoke("b", &b).await.unwrap()["invoked"], json!(b));
    assert_eq!(invoke("c", &c).await.unwrap()["invoked"], json!(c));
    assert_eq!(env.host.forget_ui_sessions("b"), 1);
    assert_eq!(invoke("b", &b).await.unwrap_err().kind(), "unknown_action");
    assert_eq!(invoke("c", &c).await.unwrap()["invoked"], json!(c));
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_descriptor_naming_another_bundles_command_is_refused_at_install() {
    let env = Env::new().await;
    let dir = env.path("bundles/thief");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "thief", "version": "1.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
            "commands": [{"id": "thief.run", "title": "Run"}],
            "runtime": {"command": "node", "args": ["x.js"]},
            "ui": [{"id": "steal", "slot": "composer.above", "label": "Steal", "command": "hello.status"}]}}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let error = env
        .host
        .install(dir.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_bundle", "{error}");
    assert!(env.host.list().is_empty());
    env.host.shutdown().await;
}

#[tokio::test]
async fn ui_invocation_in_the_user_and_a_project_realm_reaches_different_processes() {
    let env = Env::new().await;
    let mut bundle = FixtureBundle::new("uifix").project_capable();
    bundle.ui = Some(
        json!([{"id": "info", "slot": "rail.features", "label": "Info", "command": "fixture.info"}]),
    );
    let id = env.install_ready(&bundle.write(&env.path("bundles"))).await;
    let project = env.project("a");
    let request = UiRequest {
        id: id.clone(),
        ui: "info".to_owned(),
        ..Default::default()
    };
    let user = env.host.invoke_ui(&request).await.unwrap();
    let in_project = env
        .host
        .invoke_ui(&UiRequest {
            project: Some(project),
            ..request.clone()
        })
        .await
        .unwrap();
    assert_ne!(pid_of(&user), pid_of(&in_project));
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_connector_operation_outside_its_capabilities_is_refused_before_the_plugin_runs() {
    let env = Env::new().await;
    let id = env.install_ready(&panel_bundle(&env.path("bundles"))).await;
    let request = ConnectorRequest {
        id: id.clone(),
        connector: "workspace".to_owned(),
        operation: "message.send".to_owned(),
        input: json!({"eventId": "e1"}),
        project: None,
    };
    let unsupported = env.host.invoke_connector(&request).await.unwrap_err();
    assert_eq!(unsupported.kind(), "unsupported", "{unsupported}");
    env.host.register_provider("example-chat").unwrap();
    for operation in [
        "document.read",
        "resources.list",
        "message",
        "notification.send",
    ] {
        let error = env
            .host
            .invoke_connector(&ConnectorRequest {
                operation: operation.to_owned(),
                ..request.clone()
            })
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            "operation_not_allowed",
            "{operation}: {error}"
        );
    }
    assert_eq!(env.host.stats().spawns, 0);
    let ok = env
        .host
        .invoke_connector(&ConnectorRequest {
            operation: "connection.status".to_owned(),
            ..request
        })
        .await
        .unwrap();
    assert_eq!(ok["operation"], json!("connection.status"));
    env.host.shutdown().await;
}

#[tokio::test]
async fn connector_events_are_attributed_by_the_host_deduplicated_and_kept_off_the_json_bus() {
    let env = Env::new().await;
    let id = env.install_ready(&panel_bundle(&env.path("bundles"))).await;
    env.host.register_provider("example-chat").unwrap();
    let scope = env
        .host
        .kernel()
        .open_scope(&c2_kernel::Realm::Global, "test-adapter")
        .unwrap();
    let mut typed = scope.subscribe_typed::<ConnectorEvent>().unwrap();
    let mut public = scope.subscribe("connector/event").unwrap();
    let send = |event: &str| ConnectorRequest {
        id: id.clone(),
        connector: "workspace".to_owned(),
        operation: "message.send".to_owned(),
        input: json!({"eventId": event}),
        project: None,
    };
    for event in ["e1", "e1", "e2"] {
        env.host.invoke_connector(&send(event)).await.unwrap();
    }
    let first = tokio::time::timeout(Duration::from_secs(5), typed.recv())
        .await
        .unwrap()
        .unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), typed.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (first.event_id.as_str(), second.event_id.as_str()),
        ("e1", "e2")
    );
    assert_eq!(first.bundle_id, id);
    assert!(first.payload.get("plugin_id").is_none());
    assert!(typed.try_recv().is_none(), "the duplicate e1 was delivered");
    assert!(
        public.try_recv().is_none(),
        "a connector event reached the JSON bus"
    );
    let statuses = env.host.connectors();
    assert!(statuses[0].supported);
    env.host.shutdown().await;
}

#[tokio::test]
async fn the_ui_catalog_lists_descriptors_of_enabled_bundles_per_slot_in_order() {
    let env = Env::new().await;
    let id = env.install_ready(&panel_bundle(&env.path("bundles"))).await;
    let catalog = env.host.ui_catalog(&Target::User).unwrap();
    let ids: Vec<&str> = catalog[&UiSlot::HostActions]
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(
        ids,
        vec![
            "big-input",
            "counted",
            "markup",
            "too-many",
            "unknown-field",
            "panel"
        ]
    );
    env.host
        .set_state(&id, &Target::User, c2_host::StateChange::Disable)
        .await
        .unwrap();
    assert!(env.host.ui_catalog(&Target::User).unwrap().is_empty());
    env.host.shutdown().await;
}
