//! The handshake (`handshake`, and its start and finish steps driven one by one) and
//! `Peer::request_as` against the real fixture plugin (c2-testkit's `c2-fixture` binary),
//! spawned here with its stdio piped, as an embedder without the host would; and the
//! handshake's two rules on plain values (`check_protocol_version`, `confirm_commands`), with
//! the messages a plugin author reads.

use std::fmt::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use c2_protocol::{
    CommandInfo, CommandInvokeParams, CommandMismatch, DeclaredCommand, HandshakeError,
    HandshakeOptions, HostInfo, InitializeParams, InitializeResult, Peer, PeerOptions,
    ProtocolVersion, RejectRequests, Verdicts, VersionError, check_protocol_version,
    confirm_commands, handshake, initialize_finish, initialize_start, method,
};
use c2_testkit::{Fixture, Mode};
use serde_json::{Value, json};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Generous: bounds a hang, never measures speed.
const PATIENCE: Duration = Duration::from_secs(20);

fn spawn(fixture: &Fixture) -> (Child, ChildStdout, ChildStdin) {
    let path = c2_testkit::fixture_path().expect("build the workspace's binaries first");
    #[expect(
        clippy::disallowed_methods,
        reason = "c2-protocol spawns nothing; this test is the embedder that does"
    )]
    let mut child = tokio::process::Command::new(path)
        .envs(fixture.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdout, stdin)
}

fn params() -> InitializeParams {
    InitializeParams {
        protocol_version: "1.0.0".to_owned(),
        host: HostInfo {
            name: "c2-protocol-it".to_owned(),
            version: "0.0.0".to_owned(),
            commands: Vec::new(),
            observations: false,
        },
        config: Value::Null,
        data_dir: std::env::temp_dir().display().to_string(),
        project_path: None,
    }
}

fn declared(ids: &[&str]) -> Vec<DeclaredCommand> {
    ids.iter()
        .map(|id| DeclaredCommand {
            id: (*id).to_owned(),
            args_schema: None,
        })
        .collect()
}

/// The fixture exits 0 once its stdin closes: a refused plugin must see that.
async fn exits_cleanly(mut child: Child) {
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the plugin did not exit after its stdin closed")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_well_behaved_plugin_is_confirmed_and_answers_typed_requests() {
    let fixture =
        Fixture::new().commands(json!([{"name": "fixture.echo"}, {"name": "fixture.info"}]));
    let (child, stdout, stdin) = spawn(&fixture);
    let confirmed = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo", "fixture.info"]),
        &HandshakeOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(confirmed.result.name, "c2-fixture");
    assert_eq!(confirmed.protocol_version, ProtocolVersion::new(1, 0, 0));
    let names: Vec<&str> = confirmed
        .result
        .commands
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["fixture.echo", "fixture.info"]);

    #[derive(serde::Deserialize)]
    struct Echoed {
        greeting: String,
        n: u32,
    }
    let invoke = CommandInvokeParams {
        name: "fixture.echo".to_owned(),
        args: json!({"greeting": "hi", "n": 3}),
    };
    let echoed: Echoed = confirmed
        .peer
        .request_as(method::COMMAND_INVOKE, &invoke)
        .await
        .unwrap();
    assert_eq!((echoed.greeting.as_str(), echoed.n), ("hi", 3));
    // A result of the wrong shape is a decode error, not a panic or a default.
    let wrong = confirmed
        .peer
        .request_as::<Vec<String>>(method::COMMAND_INVOKE, &invoke)
        .await;
    assert!(
        matches!(wrong, Err(c2_protocol::CallError::Decode(_))),
        "{wrong:?}"
    );
    confirmed.peer.close();
    exits_cleanly(child).await;
}

#[tokio::test]
async fn a_plugin_that_never_answers_times_out_and_its_stdin_is_closed() {
    let fixture = Fixture::new().mode(Mode::NoInit);
    let (child, stdout, stdin) = spawn(&fixture);
    let started = Instant::now();
    let error = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo"]),
        &HandshakeOptions::new().with_timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, HandshakeError::TimedOut { timeout } if timeout == Duration::from_millis(300)),
        "{error:?}"
    );
    assert!(started.elapsed() < PATIENCE, "{:?}", started.elapsed());
    assert!(error.to_string().contains("within 300 ms"), "{error}");
    // The fixture keeps reading stdin without answering; it exits once stdin closes.
    exits_cleanly(child).await;
}

#[tokio::test]
async fn dropping_the_handshake_future_closes_the_plugins_stdin() {
    let fixture = Fixture::new().mode(Mode::NoInit);
    let (child, stdout, stdin) = spawn(&fixture);
    let declared = declared(&["fixture.echo"]);
    let params = params();
    let options = HandshakeOptions::new().with_timeout(PATIENCE * 3);
    let pending = handshake(stdout, stdin, RejectRequests, &params, &declared, &options);
    // The caller gives up long before the handshake's own bound.
    let gave_up = tokio::time::timeout(Duration::from_millis(300), pending).await;
    assert!(
        gave_up.is_err(),
        "the fixture answered initialize in no-init mode"
    );
    exits_cleanly(child).await;
}

#[tokio::test]
async fn another_major_protocol_version_is_refused() {
    let fixture = Fixture::new().mode(Mode::Protocol("2.0.0".to_owned()));
    let (child, stdout, stdin) = spawn(&fixture);
    let error = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo"]),
        &HandshakeOptions::default(),
    )
    .await
    .unwrap_err();
    match &error {
        HandshakeError::Version(VersionError::OtherMajor { host, plugin }) => {
            assert_eq!((host.major(), plugin.major()), (1, 2));
        }
        other => panic!("expected OtherMajor, got {other:?}"),
    }
    exits_cleanly(child).await;
}

#[tokio::test]
async fn the_host_version_is_an_option() {
    // A host that speaks 2.x accepts the 2.0.0 plugin and refuses a 1.0.0 one.
    let host_two = HandshakeOptions::new().with_host_version("2.1.0".parse().unwrap());
    let (child, stdout, stdin) = spawn(&Fixture::new().mode(Mode::Protocol("2.0.0".to_owned())));
    let confirmed = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo"]),
        &host_two,
    )
    .await
    .unwrap();
    assert_eq!(confirmed.protocol_version.to_string(), "2.0.0");
    confirmed.peer.close();
    exits_cleanly(child).await;

    let (child, stdout, stdin) = spawn(&Fixture::new());
    let error = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo"]),
        &host_two,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            error,
            HandshakeError::Version(VersionError::OtherMajor { .. })
        ),
        "{error:?}"
    );
    exits_cleanly(child).await;
}

#[tokio::test]
async fn a_command_set_that_differs_from_the_declared_one_is_refused_with_every_difference() {
    let fixture = Fixture::new().mode(Mode::ExtraCommand);
    let (child, stdout, stdin) = spawn(&fixture);
    let error = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo", "fixture.missing"]),
        &HandshakeOptions::default(),
    )
    .await
    .unwrap_err();
    let HandshakeError::Confirmation(confirmation) = &error else {
        panic!("expected a confirmation error, got {error:?}");
    };
    assert_eq!(
        confirmation.mismatches,
        [
            CommandMismatch::Missing {
                name: "fixture.missing".to_owned()
            },
            CommandMismatch::Extra {
                name: "fixture.extra".to_owned()
            },
        ]
    );
    exits_cleanly(child).await;
}

#[tokio::test]
async fn a_plugin_that_exits_before_answering_fails_the_call_not_the_clock() {
    let fixture = Fixture::new().mode(Mode::NoInit);
    let (mut child, stdout, stdin) = spawn(&fixture);
    // The plugin dies without answering: the handshake learns it from the closed stream.
    child.start_kill().unwrap();
    let started = Instant::now();
    let error = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params(),
        &declared(&["fixture.echo"]),
        &HandshakeOptions::new().with_timeout(PATIENCE),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, HandshakeError::Initialize(_)), "{error:?}");
    assert!(error.close_reason().is_some(), "{error:?}");
    assert!(started.elapsed() < PATIENCE, "{:?}", started.elapsed());
    tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn the_start_and_finish_steps_driven_one_by_one_confirm_a_plugin_and_its_events() {
    let fixture = Fixture::new()
        .commands(json!([{"name": "fixture.echo"}]))
        .events(json!(["skills/changed", "engine/event", "skills/changed"]));
    let (child, stdout, stdin) = spawn(&fixture);
    let spawned_at = tokio::time::Instant::now();
    let (peer, _notifications) = Peer::new(stdout, stdin, RejectRequests, PeerOptions::default());
    let options = HandshakeOptions::default();
    let answer = initialize_start(&peer, &params(), &options, spawned_at)
        .await
        .unwrap();
    assert_eq!(answer.name, "c2-fixture");
    // The start step judges nothing: a declared set the plugin does not confirm fails only in
    // the finish step.
    let refused =
        initialize_finish(answer.clone(), &declared(&["fixture.other"]), &options).unwrap_err();
    assert!(
        matches!(refused, HandshakeError::Confirmation(_)),
        "{refused:?}"
    );
    let confirmed = initialize_finish(answer, &declared(&["fixture.echo"]), &options).unwrap();
    assert_eq!(confirmed.protocol_version, ProtocolVersion::new(1, 0, 0));
    let events: Vec<String> = confirmed.events().into_iter().collect();
    assert_eq!(events, ["engine/event", "skills/changed"]);
    peer.close();
    exits_cleanly(child).await;
}

#[tokio::test]
async fn the_start_step_counts_the_window_from_spawn() {
    let fixture = Fixture::new().mode(Mode::NoInit);
    let (child, stdout, stdin) = spawn(&fixture);
    let spawned_at = tokio::time::Instant::now();
    let (peer, _notifications) = Peer::new(stdout, stdin, RejectRequests, PeerOptions::default());
    let options = HandshakeOptions::new().with_timeout(Duration::from_secs(2));
    // Most of the window is used up before the start step is called.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let started = Instant::now();
    let error = initialize_start(&peer, &params(), &options, spawned_at)
        .await
        .unwrap_err();
    assert!(
        matches!(error, HandshakeError::TimedOut { timeout } if timeout == Duration::from_secs(2)),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    peer.close();
    exits_cleanly(child).await;
}

#[tokio::test]
async fn a_result_that_is_not_an_initialize_result_is_malformed() {
    let (host_end, plugin_end) = tokio::io::duplex(4096);
    let (plugin_read, mut plugin_write) = tokio::io::split(plugin_end);
    let (host_read, host_write) = tokio::io::split(host_end);
    let plugin = tokio::spawn(async move {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut lines = tokio::io::BufReader::new(plugin_read).lines();
        let line = lines.next_line().await.unwrap().unwrap();
        let request: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(request["method"], "initialize");
        assert_eq!(request["params"]["host"]["name"], "c2-protocol-it");
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"name": 3}});
        plugin_write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .unwrap();
        // Keeps its end open until the host has read the answer.
        let _ = lines.next_line().await;
    });
    let (peer, _notifications) = Peer::new(
        host_read,
        host_write,
        RejectRequests,
        PeerOptions::default(),
    );
    let error = initialize_start(
        &peer,
        &params(),
        &HandshakeOptions::new().with_timeout(PATIENCE),
        tokio::time::Instant::now(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, HandshakeError::Malformed(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("the initialize result is malformed: "),
        "{error}"
    );
    peer.close();
    tokio::time::timeout(PATIENCE, plugin)
        .await
        .unwrap()
        .unwrap();
}

#[test]
fn the_verdicts_judge_version_and_commands_each_on_its_own_and_finish_reports_the_version_first() {
    let result: InitializeResult = serde_json::from_value(json!({
        "name": "p",
        "version": "1.0.0",
        "protocolVersion": "2.0.0",
        "commands": [{"name": "p.extra"}],
    }))
    .unwrap();
    let declared = declared(&["p.go"]);
    let options = HandshakeOptions::default();
    let verdicts = Verdicts::of(&result, &declared, &options);
    assert!(
        matches!(
            verdicts.protocol_version,
            Err(VersionError::OtherMajor { .. })
        ),
        "{verdicts:?}"
    );
    assert_eq!(
        verdicts.commands.unwrap_err().mismatches,
        [
            CommandMismatch::Missing {
                name: "p.go".to_owned()
            },
            CommandMismatch::Extra {
                name: "p.extra".to_owned()
            },
        ]
    );
    let error = initialize_finish(result, &declared, &options).unwrap_err();
    assert!(
        matches!(
            error,
            HandshakeError::Version(VersionError::OtherMajor { .. })
        ),
        "{error:?}"
    );
}

fn host_version() -> ProtocolVersion {
    ProtocolVersion::parse("1.0.0").unwrap()
}

#[test]
fn same_major_versions_are_compatible() {
    for v in ["1.0.0", "1.4.2", "1.0.0-beta.1", " 1.1.0 "] {
        assert!(
            check_protocol_version(&host_version(), Some(v)).is_ok(),
            "{v}"
        );
    }
}

#[test]
fn missing_unparseable_and_other_major_versions_are_refused_readably() {
    let mut out = String::new();
    for v in [None, Some("one"), Some("1.0"), Some("2.0.0"), Some("0.9.0")] {
        let err = check_protocol_version(&host_version(), v).unwrap_err();
        writeln!(out, "{v:?}: {err}").unwrap();
    }
    insta::assert_snapshot!(out);
}

fn declared_with_schemas(list: &[(&str, Option<Value>)]) -> Vec<DeclaredCommand> {
    list.iter()
        .map(|(id, schema)| DeclaredCommand {
            id: (*id).into(),
            args_schema: schema.clone(),
        })
        .collect()
}

fn confirmed_with_schemas(list: &[(&str, Option<Value>)]) -> InitializeResult {
    InitializeResult {
        name: "p".into(),
        version: "1.0.0".into(),
        protocol_version: Some("1.0.0".into()),
        commands: list
            .iter()
            .map(|(name, schema)| CommandInfo {
                name: (*name).into(),
                description: None,
                schema: schema.clone(),
            })
            .collect(),
        events: vec![],
    }
}

#[test]
fn exact_commands_and_schemas_are_confirmed() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let reordered = json!({"properties": {"a": {"type": "string"}}, "type": "object"});
    let d = declared_with_schemas(&[
        ("a.one", Some(schema)),
        ("a.two", None),
        ("a.three", Some(Value::Null)),
    ]);
    let c = confirmed_with_schemas(&[
        ("a.three", Some(Value::Null)),
        ("a.one", Some(reordered)),
        ("a.two", None),
    ]);
    assert_eq!(confirm_commands(&d, &c), Ok(()));
}

#[test]
fn every_mismatch_kind_is_reported_with_an_actionable_message() {
    let obj = json!({"type": "object"});
    let other = json!({"type": "object", "additionalProperties": false});
    let cases = [
        (
            "missing",
            declared_with_schemas(&[("a.one", None), ("a.two", None)]),
            confirmed_with_schemas(&[("a.one", None)]),
        ),
        (
            "extra",
            declared_with_schemas(&[("a.one", None)]),
            confirmed_with_schemas(&[("a.one", None), ("a.zzz", None)]),
        ),
        (
            "duplicated",
            declared_with_schemas(&[("a.one", None)]),
            confirmed_with_schemas(&[("a.one", None), ("a.one", None)]),
        ),
        (
            "schema_changed",
            declared_with_schemas(&[("a.one", Some(obj.clone()))]),
            confirmed_with_schemas(&[("a.one", Some(other.clone()))]),
        ),
        (
            "schema_added",
            declared_with_schemas(&[("a.one", None)]),
            confirmed_with_schemas(&[("a.one", Some(obj.clone()))]),
        ),
        (
            "schema_dropped",
            declared_with_schemas(&[("a.one", Some(obj.clone()))]),
            confirmed_with_schemas(&[("a.one", Some(Value::Null))]),
        ),
        (
            "all_at_once",
            declared_with_schemas(&[
                ("a.one", Some(obj.clone())),
                ("a.two", None),
                ("a.three", None),
            ]),
            confirmed_with_schemas(&[
                ("a.three", None),
                ("a.one", Some(other)),
                ("x.extra", None),
                ("a.three", Some(obj)),
            ]),
        ),
    ];
    for (name, d, c) in cases {
        let err = confirm_commands(&d, &c).unwrap_err();
        insta::assert_snapshot!(format!("mismatch_{name}"), err.to_string());
    }
}

#[test]
fn mismatches_are_reported_as_data() {
    let d = declared_with_schemas(&[("a.one", None), ("a.two", None)]);
    let c = confirmed_with_schemas(&[("a.two", Some(json!(true))), ("a.x", None), ("a.x", None)]);
    assert_eq!(
        confirm_commands(&d, &c).unwrap_err().mismatches,
        vec![
            CommandMismatch::Missing {
                name: "a.one".into()
            },
            CommandMismatch::Extra { name: "a.x".into() },
            CommandMismatch::Duplicated {
                name: "a.x".into(),
                count: 2
            },
            CommandMismatch::SchemaChanged {
                name: "a.two".into(),
                declared: None,
                confirmed: Some(json!(true))
            },
        ]
    );
}

#[test]
fn host_observations_is_read_as_false_when_absent_and_the_off_answer_is_the_references() {
    let host: HostInfo =
        serde_json::from_value(json!({"name": "h", "version": "1", "commands": []})).unwrap();
    assert!(!host.observations);
    let on: HostInfo =
        serde_json::from_value(json!({"name": "h", "version": "1", "observations": true})).unwrap();
    assert!(on.observations);
    let answer = c2_protocol::observations_off();
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"code": -32000, "message": "the host does not accept observations"})
    );
    assert_eq!(
        c2_protocol::method::OBSERVATION_RECORD,
        "observation/record"
    );
}

#[test]
fn initialize_params_omit_an_absent_project_path_and_read_the_spec_example() {
    let params = InitializeParams {
        protocol_version: c2_protocol::PROTOCOL_VERSION.into(),
        host: HostInfo {
            name: "code2".into(),
            version: "0.0.0".into(),
            commands: vec!["git.status".into()],
            observations: false,
        },
        config: json!({"k": 1}),
        data_dir: "/data".into(),
        project_path: None,
    };
    assert_eq!(
        serde_json::to_value(&params).unwrap(),
        json!({"protocolVersion": "1.0.0", "host": {"name": "code2", "version": "0.0.0", "commands": ["git.status"], "observations": false}, "config": {"k": 1}, "dataDir": "/data"})
    );
    let result: InitializeResult = serde_json::from_value(json!({
        "name": "my-plugin", "version": "0.1.0", "protocolVersion": "1.0.0",
        "commands": [{"name": "my.greet", "description": "Say hello.", "schema": {"type": "object"}}, {"name": "b.c", "schema": null}],
        "events": ["engine/event"]
    }))
    .unwrap();
    assert_eq!(result.commands[0].schema, Some(json!({"type": "object"})));
    assert_eq!(result.commands[1].schema, None);
    assert_eq!(result.events, ["engine/event"]);
    let no_version: InitializeResult =
        serde_json::from_value(json!({"name": "p", "version": "1"})).unwrap();
    assert_eq!(
        (no_version.protocol_version, no_version.commands.len()),
        (None, 0)
    );
    let log: c2_protocol::LogParams =
        serde_json::from_value(json!({"level": "trace", "message": "m"})).unwrap();
    assert_eq!(log.level, c2_protocol::LogLevel::Trace);
    assert!(
        serde_json::from_value::<c2_protocol::LogParams>(json!({"level": "loud", "message": "m"}))
            .is_err()
    );
}
