use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use c2_testkit::Fixture;
use serde_json::json;

use crate::harness::{invoke, start, start_in};

#[test]
fn initialize_is_answered_with_the_default_identity_and_commands() {
    let mut fixture = start(&Fixture::new());
    let reply = fixture.initialize();
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"name": "c2-fixture", "version": "0.1.0",
            "protocolVersion": "1.0.0", "commands": [{"name": "fixture.echo"}], "events": []}})
    );
}

#[test]
fn commands_and_events_come_from_the_environment() {
    let commands = json!([{"name": "my.greet", "schema": {"type": "object"}}]);
    let mut fixture = start(
        &Fixture::new()
            .commands(commands.clone())
            .events(json!(["engine/event"])),
    );
    let reply = fixture.initialize();
    assert_eq!(reply["result"]["commands"], commands);
    assert_eq!(reply["result"]["events"], json!(["engine/event"]));
}

#[test]
fn echo_returns_its_args() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    assert_eq!(
        fixture.invoke(2, "fixture.echo", json!({"a": [1, 2]}))["result"],
        json!({"a": [1, 2]})
    );
}

#[test]
fn echo_returns_the_exact_text_of_its_args_and_reads_any_other_shape_as_before() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    // Passed through as text: no float rounding, no re-escaping, member order kept.
    let args = r#"{"z":1E2,"s":"\u00e9\"","big":12345678901234567890123,"a":[ 1 ,2]}"#;
    fixture.send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":"k","method":"command/invoke","params":{{"name":"fixture.echo","args":{args}}}}}"#
    ));
    assert_eq!(
        String::from_utf8(fixture.raw_line()).unwrap(),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":\"k\",\"result\":{args}}}\n")
    );
    // Without args (not the borrowed shape) the echo still answers, with null.
    fixture.send_line(
        r#"{"jsonrpc":"2.0","id":3,"method":"command/invoke","params":{"name":"fixture.echo"}}"#,
    );
    assert_eq!(
        fixture.json(),
        json!({"jsonrpc": "2.0", "id": 3, "result": null})
    );
}

#[test]
fn info_reports_the_process_and_what_initialize_carried() {
    let dir = tempfile::tempdir().unwrap();
    let mut fixture = start_in(&Fixture::new().events(json!([])), dir.path());
    fixture.initialize();
    let info = fixture.invoke(
        2,
        "fixture.info",
        json!({"env": ["C2_FIXTURE_EVENTS", "C2_NOT_SET"]}),
    )["result"]
        .clone();
    assert_eq!(info["pid"], json!(fixture.pid()));
    assert_eq!(
        info["pgid"],
        json!(fixture.pid()),
        "the harness starts it as a group leader"
    );
    assert_eq!(info["cwd"], json!(dir.path().canonicalize().unwrap()));
    assert_eq!(
        info["env"],
        json!({"C2_FIXTURE_EVENTS": "[]", "C2_NOT_SET": null})
    );
    assert_eq!(info["dataDir"], "/data/dir");
    assert_eq!(info["projectPath"], "/project");
    assert_eq!(info["hostCommands"], json!(["git.status"]));
    assert_eq!(info["config"], json!({"answer": 42}));
    assert_eq!(info["children"], json!([]));
}

#[test]
fn call_reaches_the_host_and_returns_its_result_or_error() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    fixture.send(&invoke(
        2,
        "fixture.call",
        json!({"name": "git.status", "args": {"cwd": "/repo"}}),
    ));
    let call = fixture.json();
    assert_eq!(call["method"], "command/call");
    assert_eq!(
        call["params"],
        json!({"name": "git.status", "args": {"cwd": "/repo"}})
    );
    fixture.send(&json!({"jsonrpc": "2.0", "id": call["id"], "result": {"branch": "main"}}));
    assert_eq!(
        fixture.json(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"branch": "main"}})
    );

    fixture.send(&invoke(
        3,
        "fixture.call",
        json!({"name": "git.nope", "args": {}}),
    ));
    let call = fixture.json();
    let error = json!({"code": -32001, "message": "unknown command"});
    fixture.send(&json!({"jsonrpc": "2.0", "id": call["id"], "error": error}));
    assert_eq!(
        fixture.json(),
        json!({"jsonrpc": "2.0", "id": 3, "error": error})
    );
}

#[test]
fn emit_and_log_send_notifications_before_answering() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    fixture.send(&invoke(
        2,
        "fixture.emit",
        json!({"name": "my/event", "payload": {"n": 1}}),
    ));
    assert_eq!(
        fixture.json(),
        json!({"jsonrpc": "2.0", "method": "event/emit", "params": {"name": "my/event", "payload": {"n": 1}}})
    );
    assert_eq!(fixture.json()["id"], 2);
    fixture.send(&invoke(
        3,
        "fixture.log",
        json!({"level": "warn", "message": "careful"}),
    ));
    assert_eq!(
        fixture.json(),
        json!({"jsonrpc": "2.0", "method": "log", "params": {"level": "warn", "message": "careful"}})
    );
    assert_eq!(fixture.json()["id"], 3);
}

#[test]
fn sleep_does_not_hold_up_other_requests() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    let started = Instant::now();
    fixture.send(&invoke(2, "fixture.sleep", json!({"ms": 400})));
    fixture.send(&invoke(3, "fixture.echo", json!("quick")));
    assert_eq!(fixture.json()["id"], 3);
    assert_eq!(
        fixture.json(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"slept": 400}})
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[test]
fn fail_answers_a_command_error() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    let reply = fixture.invoke(2, "fixture.fail", json!({"message": "nope"}));
    assert_eq!(reply["error"], json!({"code": -32000, "message": "nope"}));
}

#[test]
fn events_lists_the_notifications_received() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    fixture.send(&json!({"jsonrpc": "2.0", "method": "event/emit", "params": {"name": "skills/changed", "payload": null}}));
    let reply = fixture.invoke(2, "fixture.events", json!({}));
    assert_eq!(
        reply["result"],
        json!([{"name": "skills/changed", "payload": null}])
    );
}

#[test]
fn crash_exits_with_the_given_code() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    fixture.send(&invoke(2, "fixture.crash", json!({"code": 13})));
    assert_eq!(fixture.exit_status().code(), Some(13));
}

#[test]
fn a_declared_command_without_behaviour_echoes_its_name_and_args() {
    let mut fixture = start(&Fixture::new().commands(json!([{"name": "my.greet"}])));
    fixture.initialize();
    assert_eq!(
        fixture.invoke(2, "my.greet", json!({"x": 1}))["result"],
        json!({"command": "my.greet", "args": {"x": 1}})
    );
    assert_eq!(
        fixture.invoke(3, "my.other", json!({}))["error"]["code"],
        -32000
    );
}

#[test]
fn an_unknown_method_is_not_found() {
    let mut fixture = start(&Fixture::new());
    fixture.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "nope"}));
    assert_eq!(fixture.json()["error"]["code"], -32601);
}

#[test]
fn the_fixture_exits_cleanly_when_stdin_closes() {
    let mut fixture = start(&Fixture::new());
    fixture.initialize();
    fixture.close_stdin();
    let status = fixture.exit_status();
    assert_eq!((status.code(), status.signal()), (Some(0), None));
}

#[test]
fn the_fixture_path_helper_finds_the_built_binary() {
    let found = c2_testkit::fixture_path().unwrap();
    assert_eq!(
        found,
        std::path::Path::new(env!("CARGO_BIN_EXE_c2-fixture"))
    );
}
