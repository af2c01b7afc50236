use std::sync::Arc;

use c2_host::{HostOptions, PluginHost};
use c2_protocol::{Id, Request, codes};
use serde_json::{Value, json};

use crate::connection::{self as relay, Connection, NOT_INITIALIZED, Service, VERSION_MISMATCH};
use crate::{Error, RELAY_VERSION, lock};

#[test]
fn a_second_lock_on_the_same_directory_is_refused_naming_the_holder_pid() {
    let dir = tempfile::tempdir().unwrap();
    let held = lock::acquire_lock(dir.path()).unwrap();
    let written = std::fs::read_to_string(&held.path).unwrap();
    assert_eq!(written.trim(), std::process::id().to_string());
    let refused = lock::acquire_lock(dir.path()).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains(&format!("(pid {}) already serves", std::process::id())),
        "{refused}"
    );
    assert!(
        matches!(refused, Error::ServiceRunning { pid: Some(pid), .. } if pid == std::process::id()),
        "{refused:?}"
    );
    assert!(refused.hint().is_some());
    drop(held);
    assert!(
        lock::acquire_lock(dir.path()).is_ok(),
        "released with its holder"
    );
}

fn request(id: u64, method: &str, params: Value) -> Request {
    Request {
        id: Id::from(id),
        method: method.to_owned(),
        params: Some(c2_protocol::to_raw(&params).unwrap()),
    }
}

async fn connection(dir: &std::path::Path) -> (Arc<Connection>, PluginHost) {
    let host = c2_contributions::open(HostOptions::new(dir)).await.unwrap();
    (Connection::new(service(&host, dir)), host)
}

/// The service of the tests: `host` on `dir`, four subscriptions a client.
fn service(host: &PluginHost, dir: &std::path::Path) -> Service {
    Service {
        host: host.clone(),
        plugins_dir: dir.to_owned(),
        bus: crate::events::Bus::default(),
        max_subscriptions: 4,
        server_name: "c2-relay",
        dev: crate::dev::Watches::default(),
    }
}

async fn ask(conn: &Arc<Connection>, id: u64, method: &str, params: Value) -> Answer {
    Arc::clone(conn)
        .handle(request(id, method, params), None)
        .await
}

type Answer = Result<Value, c2_protocol::ErrorObject>;

fn code(answer: &Result<Value, c2_protocol::ErrorObject>) -> Option<i64> {
    answer.as_ref().err().map(|e| e.code)
}

#[tokio::test]
async fn initialize_comes_first_and_accepts_only_the_same_major_version() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, host) = connection(dir.path()).await;
    let early = ask(&conn, 1, "plugins/list", json!({})).await;
    assert_eq!(code(&early), Some(NOT_INITIALIZED));
    let unknown = ask(&conn, 2, "nope", json!({})).await;
    assert_eq!(code(&unknown), Some(codes::METHOD_NOT_FOUND));
    for (version, expected) in [
        ("1.0.0", Some(VERSION_MISMATCH)),
        ("3.0.0", Some(VERSION_MISMATCH)),
        ("0.9.0", Some(VERSION_MISMATCH)),
        ("one", Some(codes::INVALID_PARAMS)),
    ] {
        let answer = ask(
            &conn,
            3,
            "relay/initialize",
            json!({"protocolVersion": version}),
        )
        .await;
        assert_eq!(code(&answer), expected, "{version}");
    }
    for key in [String::new(), "k".repeat(relay::MAX_UI_CACHE_KEY + 1)] {
        let answer = ask(
            &conn,
            3,
            "relay/initialize",
            json!({"protocolVersion": RELAY_VERSION, "uiCacheKey": key}),
        )
        .await;
        assert_eq!(code(&answer), Some(codes::INVALID_PARAMS), "{key}");
    }
    let refused = ask(&conn, 4, "plugins/list", json!({})).await;
    assert_eq!(
        code(&refused),
        Some(NOT_INITIALIZED),
        "a refused initialize"
    );
    let hello = ask(
        &conn,
        5,
        "relay/initialize",
        json!({"protocolVersion": "2.7.2"}),
    )
    .await
    .unwrap();
    assert_eq!(hello["protocolVersion"], relay::RELAY_VERSION);
    assert_eq!(
        hello["server"]["name"], "c2-relay",
        "the name the embedder gave"
    );
    let methods = hello["capabilities"]["methods"].as_array().unwrap();
    assert_eq!(methods.len(), crate::METHODS.len());
    let listed = ask(&conn, 6, "plugins/list", json!({})).await;
    assert_eq!(listed, Ok(json!([])));
    let bad = ask(&conn, 7, "plugins/trust", json!({"name": "x"})).await;
    assert_eq!(code(&bad), Some(codes::INVALID_PARAMS));
    let missing = ask(&conn, 8, "plugins/trust", json!({"id": "absent"}))
        .await
        .unwrap_err();
    assert_eq!(missing.code, codes::COMMAND_FAILED);
    assert_eq!(
        missing.data.as_ref().map(|d| data(d)["kind"].clone()),
        Some(json!("not_installed"))
    );
    host.shutdown().await;
}

#[test]
fn plan_revisions_travel_as_text_and_come_back_as_numbers() {
    let file = c2_host::PlanFile {
        format: c2_host::PLAN_FORMAT,
        id: "x".to_owned(),
        project: None,
        change: c2_host::PlanAction::Enable,
        component: None,
        revisions: c2_host::PlanRevisions {
            graph: u64::MAX,
            config: 3,
            project: None,
        },
        impact: c2_host::ImpactView::default(),
    };
    let text = crate::json::plan(&file, crate::json::Revisions::Text);
    assert_eq!(
        text["revisions"],
        json!({"graph": u64::MAX.to_string(), "config": "3", "project": null})
    );
    let numbers = crate::json::plan(&file, crate::json::Revisions::Numbers);
    assert_eq!(
        numbers["revisions"],
        json!({"graph": u64::MAX, "config": 3, "project": null})
    );
    for form in [text, numbers] {
        let back = crate::json::plan_from_value(form).unwrap();
        assert_eq!(back, file);
    }
    let wrong = json!({"format": 1, "id": "x", "project": null, "change": {"action": "enable"},
        "revisions": {"graph": "-1", "config": "3", "project": null},
        "impact": {"starts": [], "stops": [], "reloads": [], "dependents": [], "resources": []}});
    assert!(crate::json::plan_from_value(wrong).is_err());
}

#[test]
fn every_method_name_parses_to_its_method_and_back() {
    assert_eq!(crate::Method::ALL.len(), crate::METHODS.len());
    for (method, name) in crate::Method::ALL.iter().zip(crate::METHODS) {
        assert_eq!(method.name(), *name);
        assert_eq!(crate::Method::parse(name), Some(*method));
        assert_eq!(method.cancellable(), crate::CANCELLABLE.contains(name));
    }
    assert_eq!(crate::Method::parse("nope"), None);
}

#[test]
fn the_committed_relay_description_is_the_generated_one() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/relay.json");
    let generated = serde_json::to_string_pretty(&crate::describe::describe()).unwrap() + "\n";
    if std::env::var_os("C2_UPDATE_RELAY_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/schemas/relay.json is stale: run `C2_UPDATE_RELAY_SCHEMA=1 cargo test -p c2-relay relay_description`"
    );
    let names: Vec<&str> = crate::describe::DESCRIPTION.iter().map(|m| m.0).collect();
    assert_eq!(
        names,
        crate::METHODS,
        "one entry per relay method, in order"
    );
}

#[tokio::test]
async fn every_described_method_accepts_its_params_and_refuses_a_missing_or_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, host) = connection(dir.path()).await;
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    for (method, _, params) in crate::describe::DESCRIPTION {
        let full: serde_json::Map<String, Value> = params
            .iter()
            .map(|(name, _, _, sample)| ((*name).to_owned(), serde_json::from_str(sample).unwrap()))
            .collect();
        let answer = ask(&conn, 2, method, Value::Object(full.clone())).await;
        assert_ne!(
            code(&answer),
            Some(codes::INVALID_PARAMS),
            "{method}: {answer:?}"
        );
        let mut extra = full.clone();
        extra.insert("unexpected".to_owned(), json!(1));
        let answer = ask(&conn, 3, method, Value::Object(extra)).await;
        assert_eq!(
            code(&answer),
            Some(codes::INVALID_PARAMS),
            "{method} with an unknown param"
        );
        for (name, _, required, _) in params.iter().filter(|p| p.2) {
            let mut missing = full.clone();
            missing.remove(*name);
            let answer = ask(&conn, 4, method, Value::Object(missing)).await;
            assert_eq!(
                code(&answer),
                Some(codes::INVALID_PARAMS),
                "{method} without {name} (required: {required})"
            );
        }
    }
    host.shutdown().await;
}

#[tokio::test]
async fn language_servers_are_listed_and_resolved_through_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let (conn, host) = connection(dir.path()).await;
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    let listing = ask(&conn, 2, "lsp/list", json!({})).await.unwrap();
    assert_eq!(listing["languages"], json!([]), "{listing:#}");
    let none = ask(
        &conn,
        3,
        "lsp/resolve",
        json!({"language": "zig", "project": project.path()}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        none.data.map(|d| data(&d)["kind"].clone()),
        Some(json!("unsupported"))
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_finished_call_leaves_nothing_to_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, host) = connection(dir.path()).await;
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    for id in [2, 2, 3] {
        let answer = ask(&conn, id, "command/invoke", json!({"command": "no.such"})).await;
        assert_eq!(code(&answer), Some(codes::UNKNOWN_COMMAND));
    }
    assert_eq!(conn.cancellable_len(), 0);
    host.shutdown().await;
}

/// An error's raw `data` as a value, for assertions.
fn data(raw: &c2_protocol::RawJson) -> Value {
    serde_json::from_str(raw.get()).unwrap()
}

#[tokio::test]
async fn refresh_reports_what_another_host_committed_once_and_then_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = tempfile::tempdir().unwrap();
    std::fs::write(
        bundle.path().join("plugin.json"),
        r#"{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"quiet","version":"1.0.0","extensions":{"dev.codetwo":{"standardVersion":"1.2.0"}}}"#,
    )
    .unwrap();
    // No watcher wake-up within the test: only `plugins/refresh` looks again.
    let mut options = HostOptions::new(dir.path());
    options.store_watch.notifications = false;
    options.store_watch.poll_interval = std::time::Duration::from_secs(3600);
    let host = c2_contributions::open(options).await.unwrap();
    let conn = Connection::new(service(&host, dir.path()));
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    let other = c2_contributions::open(HostOptions::new(dir.path()))
        .await
        .unwrap();
    let outcome = other
        .install(
            bundle.path().to_str().unwrap(),
            c2_host::InstallOptions::default(),
        )
        .await
        .unwrap();
    let answer = ask(&conn, 2, "plugins/refresh", json!({})).await.unwrap();
    let changed = &answer["changed"];
    assert_eq!(
        changed["installed"],
        json!([outcome.record.id]),
        "{answer:#}"
    );
    // 64-bit generations and revisions travel as decimal strings.
    assert!(
        changed["generation"]
            .as_str()
            .and_then(|g| g.parse::<u64>().ok())
            > Some(0),
        "{answer:#}"
    );
    assert!(changed["policyRevision"].is_string(), "{answer:#}");
    let again = ask(&conn, 3, "plugins/refresh", json!({})).await.unwrap();
    assert_eq!(again, json!({"changed": null}));
    other.shutdown().await;
    host.shutdown().await;
}

/// Params are read typed straight from the request's raw text: params that are not the
/// method's object (an array, a string, `null`) are invalid params, never a panic of the
/// request's task (`plugins/apply` used to index its params as an object).
#[tokio::test]
async fn params_of_the_wrong_shape_are_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, host) = connection(dir.path()).await;
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    for (id, method) in [
        "plugins/apply",
        "command/invoke",
        "plugins/trust",
        "realm/commands",
    ]
    .into_iter()
    .enumerate()
    {
        for params in [json!([1]), json!("plan"), Value::Null] {
            let answer = ask(&conn, id as u64 + 2, method, params.clone()).await;
            let error = answer.unwrap_err();
            assert_eq!(error.code, codes::INVALID_PARAMS, "{method} {params}");
            assert!(
                error.message.contains("docs/relay.md"),
                "{method} {params}: {}",
                error.message
            );
        }
    }
    // Absent params read as `{}`, as before.
    let listed = Arc::clone(&conn)
        .handle(
            Request {
                id: Id::from(9u64),
                method: "realm/commands".to_owned(),
                params: None,
            },
            None,
        )
        .await;
    assert!(listed.as_ref().is_ok_and(Value::is_array), "{listed:?}");
    host.shutdown().await;
}

#[test]
fn a_command_rows_realm_is_shown_as_global_or_its_project_path() {
    let row = c2_host::CommandRow {
        name: "x.y".to_owned(),
        owner: "bundle:x".to_owned(),
        realm: c2_host::Realm::Global,
        visibility: c2_host::CommandVisibility::ExtensionPublic,
        state: c2_host::CommandState::BuiltIn,
        title: "X".to_owned(),
        description: None,
    };
    let json = crate::json::command_rows(std::slice::from_ref(&row));
    assert_eq!(
        (&json[0]["realm"], &json[0]["visibility"], &json[0]["state"]),
        (
            &serde_json::json!("global"),
            &serde_json::json!("extension-public"),
            &serde_json::json!("built-in")
        )
    );
    assert_eq!(
        json[0],
        json!({"name": "x.y", "owner": "bundle:x", "realm": "global",
            "visibility": "extension-public", "state": "built-in", "title": "X",
            "description": null})
    );
}

#[test]
fn revisions_are_numbers_for_the_cli_and_decimal_strings_on_the_wire() {
    let applied = c2_host::Applied {
        revision: u64::MAX,
        impact: c2_host::ImpactView {
            starts: vec!["bundle:x".to_owned()],
            user_runtimes: vec!["x".to_owned()],
            ..c2_host::ImpactView::default()
        },
    };
    let cli = crate::json::applied("x", &applied, crate::json::Revisions::Numbers);
    assert_eq!(
        cli,
        json!({"id": "x", "revision": u64::MAX, "impact": {"starts": ["bundle:x"], "stops": [],
            "reloads": [], "dependents": [], "resources": [], "userRuntimes": ["x"]}})
    );
    let wire = crate::json::applied("x", &applied, crate::json::Revisions::Text);
    assert_eq!(wire["revision"], json!(u64::MAX.to_string()));
    assert_eq!(wire["impact"], cli["impact"]);
    let changed = c2_host::StoreChanged {
        generation: 1 << 60,
        policy_revision: 3,
        installed: vec!["x".to_owned()],
        ..c2_host::StoreChanged::default()
    };
    assert_eq!(
        crate::json::store_changed(&changed, crate::json::Revisions::Text),
        json!({"generation": (1u64 << 60).to_string(), "policyRevision": "3",
            "installed": ["x"], "removed": [], "replaced": [], "policy": []})
    );
}

#[tokio::test]
async fn the_content_library_is_listed_through_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = bundle.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "lib", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    write(
        "skills/note/SKILL.md",
        "---\nname: note\ndescription: Take a note.\n---\nNote.\n",
    );
    write("scenes/day.scene.json", r#"{"version": 1}"#);
    let (conn, host) = connection(dir.path()).await;
    host.install(
        bundle.path().to_str().unwrap(),
        c2_host::InstallOptions::trusted_and_enabled(),
    )
    .await
    .unwrap();
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    let skills = ask(&conn, 2, "skills/list", json!({})).await.unwrap();
    assert_eq!(
        (&skills[0]["name"], &skills[0]["kind"], &skills[0]["status"]),
        (&json!("note"), &json!("skill"), &json!("supported")),
        "{skills:#}"
    );
    let scenes = ask(&conn, 3, "scenes/list", json!({})).await.unwrap();
    assert_eq!(
        (
            &scenes[0]["name"],
            &scenes[0]["version"],
            &scenes[0]["status"]
        ),
        (&json!("day"), &json!("1"), &json!("valid")),
        "{scenes:#}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn request_params_are_weighed_before_any_tree_is_built_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let bound = 1024 * 1024;
    let host =
        c2_contributions::open(HostOptions::new(dir.path()).with_max_value_tree_bytes(bound))
            .await
            .unwrap();
    let service = service(&host, dir.path());
    let conn = Connection::new(service);
    let hello = ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await;
    assert!(hello.is_ok(), "{hello:?}");
    // 64 KiB of text whose tree would be ~2.6 MiB (a value per two bytes), and one deeply
    // nested: both over the bound, refused before they are read.
    let dense = json!({"command": "x.y", "args": vec![0; 32 * 1024]});
    let nested = format!(
        r#"{{"name":"x","data":{}0{}}}"#,
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let raw = |text: String| Some(serde_json::value::RawValue::from_string(text).unwrap());
    for request in [
        Request {
            id: Id::from(2),
            method: "command/invoke".to_owned(),
            params: raw(dense.to_string()),
        },
        // Raw text: serde_json could not even build a `Value` this deep.
        Request {
            id: Id::from(2),
            method: "events/publish".to_owned(),
            params: raw(nested),
        },
    ] {
        let method = request.method.clone();
        let text_len = request.params.as_ref().unwrap().get().len();
        assert!(
            c2_protocol::value_tree_cost(request.params.as_ref().unwrap().get()) > bound,
            "{method}: the case is over the bound"
        );
        assert!(
            text_len * 4 < bound,
            "{method}: the text alone is well under it"
        );
        let answer = Arc::clone(&conn).handle(request, None).await;
        let error = answer.unwrap_err();
        assert_eq!(error.code, codes::INVALID_PARAMS, "{method}: {error:?}");
        assert!(
            error.message.contains("bound in memory"),
            "{method}: {error:?}"
        );
    }
    // Text of the same size as one string weighs about its length and goes on to the method.
    let sparse = json!({"command": "x.y", "args": "0,".repeat(32 * 1024)});
    let answer = ask(&conn, 3, "command/invoke", sparse).await;
    assert!(
        !answer
            .as_ref()
            .is_err_and(|e| e.message.contains("bound in memory")),
        "{answer:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn plugins_install_resolves_a_name_through_the_configured_catalogs_as_the_cli_does() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = catalog.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "named/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "relay-named", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    write(
        "marketplace.json",
        r#"{"standardVersion": "1.0.0", "name": "relay-catalog", "plugins": [{"name": "relay-named", "version": "1.0.0", "source": {"kind": "local", "path": "named"}}]}"#,
    );
    let (conn, host) = connection(dir.path()).await;
    host.marketplace_add(catalog.path().to_str().unwrap(), None)
        .await
        .unwrap();
    ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await
    .unwrap();
    // A bare NAME (no `marketplace`) is an entry of the configured catalogs, as on the CLI.
    let installed = ask(
        &conn,
        2,
        "plugins/install",
        json!({"source": "relay-named@1.0.0"}),
    )
    .await
    .unwrap();
    assert_eq!(installed["origin"]["entry"], "relay-named", "{installed:#}");
    assert_eq!(
        installed["origin"]["catalogName"], "relay-catalog",
        "{installed:#}"
    );
}

#[test]
fn the_ready_line_names_the_socket_the_directory_the_pid_and_the_version() {
    let line = crate::json::ready(
        std::path::Path::new("/p/.serve.sock"),
        std::path::Path::new("/p"),
        42,
    );
    assert_eq!(
        line,
        json!({"ready": true, "socket": "/p/.serve.sock", "pluginsDir": "/p", "pid": 42, "relayVersion": RELAY_VERSION})
    );
}

#[tokio::test]
async fn a_refusal_carries_its_advice_as_a_next_action_beside_the_hint() {
    let dir = tempfile::tempdir().unwrap();
    let host = c2_contributions::open(HostOptions::new(dir.path()))
        .await
        .unwrap();
    let conn = Connection::new(service(&host, dir.path()));
    let hello = ask(
        &conn,
        1,
        "relay/initialize",
        json!({"protocolVersion": RELAY_VERSION}),
    )
    .await;
    assert!(hello.is_ok(), "{hello:?}");
    let error = ask(&conn, 2, "command/invoke", json!({"command": "nope.x"}))
        .await
        .unwrap_err();
    let data: Value = serde_json::from_str(error.data.as_ref().unwrap().get()).unwrap();
    assert_eq!(data["kind"], "unknown_command", "{data:#}");
    assert!(data["hint"].is_string(), "{data:#}");
    assert_eq!(data["next"], json!({"action": "list_commands"}), "{data:#}");
    assert!(!error.message.contains("c2-plugins "), "{error:?}");
    host.shutdown().await;
}
