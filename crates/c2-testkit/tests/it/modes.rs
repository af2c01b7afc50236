use std::time::{Duration, Instant};

use c2_testkit::{Fixture, Mode};
use serde_json::json;

use crate::harness::{alive, eventually, proc_stat, start};

fn declared() -> serde_json::Value {
    json!([{"name": "a.one", "schema": {"type": "object"}}, {"name": "a.two"}])
}

fn answered(mode: Mode) -> serde_json::Value {
    let mut fixture = start(&Fixture::new().commands(declared()).mode(mode));
    fixture.initialize()["result"].clone()
}

#[test]
fn slow_init_answers_late() {
    let mut fixture = start(&Fixture::new().mode(Mode::SlowInit(300)));
    let started = Instant::now();
    assert_eq!(fixture.initialize()["id"], 1);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn no_init_never_answers_but_keeps_serving() {
    let mut fixture = start(&Fixture::new().mode(Mode::NoInit));
    fixture.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}));
    assert!(fixture.silent_for(Duration::from_millis(300)));
    assert_eq!(fixture.invoke(2, "fixture.echo", json!(1))["id"], 2);
}

#[test]
fn banner_prints_a_non_json_line_first() {
    let mut fixture = start(&Fixture::new().mode(Mode::Banner));
    assert!(serde_json::from_slice::<serde_json::Value>(&fixture.raw_line()).is_err());
    assert_eq!(fixture.initialize()["id"], 1);
}

#[test]
fn invalid_utf8_prints_a_line_that_is_not_utf8_first() {
    let mut fixture = start(&Fixture::new().mode(Mode::InvalidUtf8));
    assert!(std::str::from_utf8(&fixture.raw_line()).is_err());
    assert_eq!(fixture.initialize()["id"], 1);
}

#[test]
fn huge_line_prints_a_line_of_the_given_size_first() {
    let mut fixture = start(&Fixture::new().mode(Mode::HugeLine(200_000)));
    let line = fixture.raw_line();
    assert_eq!(line.len(), 200_001);
    assert!(line[..200_000].iter().all(|&byte| byte == b'x'));
    assert_eq!(fixture.initialize()["id"], 1);
}

#[test]
fn stderr_flood_writes_exactly_that_many_bytes() {
    let mut fixture = start(&Fixture::new().mode(Mode::StderrFlood(1_000_050)));
    assert_eq!(fixture.initialize()["id"], 1);
    fixture.close_stdin();
    assert_eq!(fixture.stderr_bytes(), 1_000_050);
}

#[test]
fn grandchild_stays_in_the_fixtures_group() {
    let mut fixture = start(&Fixture::new().mode(Mode::Grandchild));
    fixture.initialize();
    let info = fixture.invoke(2, "fixture.info", json!({}));
    let grandchild = info["result"]["children"][0].as_i64().unwrap();
    let (_, pgrp, _) = proc_stat(grandchild).unwrap();
    assert_eq!(pgrp, i64::from(fixture.pid()));
}

#[test]
fn setsid_grandchild_leads_its_own_session_and_leaves_on_stdin_eof() {
    let mut fixture = start(&Fixture::new().mode(Mode::SetsidGrandchild));
    fixture.initialize();
    let info = fixture.invoke(2, "fixture.info", json!({}));
    let grandchild = info["result"]["children"][0].as_i64().unwrap();
    let (_, pgrp, session) = proc_stat(grandchild).unwrap();
    assert_eq!((pgrp, session), (grandchild, grandchild));
    fixture.close_stdin();
    assert!(eventually(|| !alive(grandchild)));
}

#[test]
fn ignore_sigterm_survives_sigterm() {
    let mut fixture = start(&Fixture::new().mode(Mode::IgnoreSigterm));
    fixture.initialize();
    #[expect(
        clippy::disallowed_methods,
        reason = "the test proves the fixture shrugs off SIGTERM"
    )]
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(fixture.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(
        fixture.invoke(2, "fixture.echo", json!("still here"))["result"],
        "still here"
    );
    assert!(fixture.is_running());
}

#[test]
fn exit_after_init_answers_then_exits() {
    let mut fixture = start(&Fixture::new().mode(Mode::ExitAfterInit));
    assert_eq!(fixture.initialize()["id"], 1);
    assert_eq!(fixture.exit_status().code(), Some(0));
}

#[test]
fn close_stdout_closes_the_pipe_but_keeps_running() {
    let mut fixture = start(&Fixture::new().mode(Mode::CloseStdout));
    assert_eq!(fixture.initialize()["id"], 1);
    assert!(fixture.stdout_closed());
    assert!(fixture.is_running());
    fixture.close_stdin();
    assert_eq!(fixture.exit_status().code(), Some(0));
}

#[test]
fn reply_unknown_id_answers_an_id_never_asked_first() {
    let mut fixture = start(&Fixture::new().mode(Mode::ReplyUnknownId));
    assert_eq!(fixture.initialize()["id"], "fixture-unknown-id");
    assert_eq!(fixture.json()["id"], 1);
}

#[test]
fn reply_twice_sends_every_response_twice() {
    let mut fixture = start(&Fixture::new().mode(Mode::ReplyTwice));
    let first = fixture.initialize();
    assert_eq!(fixture.json(), first);
    let echo = fixture.invoke(2, "fixture.echo", json!(5));
    assert_eq!(fixture.json(), echo);
}

#[test]
fn protocol_answers_the_given_version() {
    assert_eq!(
        answered(Mode::Protocol("2.0.0".to_owned()))["protocolVersion"],
        "2.0.0"
    );
}

#[test]
fn no_protocol_version_omits_it() {
    assert!(
        answered(Mode::NoProtocolVersion)
            .get("protocolVersion")
            .is_none()
    );
}

#[test]
fn extra_command_adds_one() {
    let commands = answered(Mode::ExtraCommand)["commands"].clone();
    assert_eq!(
        commands,
        json!([declared()[0], declared()[1], {"name": "fixture.extra"}])
    );
}

#[test]
fn missing_command_drops_the_last() {
    assert_eq!(
        answered(Mode::MissingCommand)["commands"],
        json!([declared()[0]])
    );
}

#[test]
fn duplicate_command_repeats_the_first() {
    assert_eq!(
        answered(Mode::DuplicateCommand)["commands"],
        json!([declared()[0], declared()[1], declared()[0]])
    );
}

#[test]
fn schema_drift_changes_the_first_schema() {
    let commands = answered(Mode::SchemaDrift)["commands"].clone();
    assert_eq!(commands[0]["name"], "a.one");
    assert_ne!(commands[0]["schema"], declared()[0]["schema"]);
    assert_eq!(commands[1], declared()[1]);
}

#[test]
fn ignore_stdin_eof_keeps_running() {
    let mut fixture = start(&Fixture::new().mode(Mode::IgnoreStdinEof));
    fixture.initialize();
    fixture.close_stdin();
    std::thread::sleep(Duration::from_millis(300));
    assert!(fixture.is_running());
}

#[test]
fn modes_combine_in_one_variable() {
    let mut fixture = start(
        &Fixture::new()
            .mode(Mode::Banner)
            .mode(Mode::Protocol("1.4.0".to_owned())),
    );
    fixture.raw_line();
    assert_eq!(fixture.initialize()["result"]["protocolVersion"], "1.4.0");
}

#[test]
fn an_unknown_mode_or_a_bad_value_is_refused_with_a_message() {
    let error = c2_testkit::parse_modes("banner,warp-speed").unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown fixture mode `warp-speed`; see the c2-testkit docs for the list of modes"
    );
    let error = c2_testkit::parse_modes("slow-init:soon").unwrap_err();
    assert_eq!(
        error.to_string(),
        "fixture mode `slow-init` needs a number after the colon, got `soon`"
    );
}

#[test]
fn every_mode_survives_a_round_trip_through_its_text() {
    let all = [
        Mode::SlowInit(5),
        Mode::NoInit,
        Mode::Banner,
        Mode::InvalidUtf8,
        Mode::HugeLine(7),
        Mode::StderrFlood(9),
        Mode::Grandchild,
        Mode::SetsidGrandchild,
        Mode::IgnoreSigterm,
        Mode::ExitAfterInit,
        Mode::CloseStdout,
        Mode::ReplyUnknownId,
        Mode::ReplyTwice,
        Mode::Protocol("2.0.0".to_owned()),
        Mode::NoProtocolVersion,
        Mode::ExtraCommand,
        Mode::MissingCommand,
        Mode::DuplicateCommand,
        Mode::SchemaDrift,
        Mode::IgnoreStdinEof,
    ];
    let text = all
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(c2_testkit::parse_modes(&text).unwrap(), all);
}

#[test]
fn the_fixture_refuses_to_start_with_an_unknown_mode() {
    #[expect(
        clippy::disallowed_methods,
        reason = "c2-testkit is dev-only and tests its fixture without the supervisor"
    )]
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_c2-fixture"))
        .env(c2_testkit::ENV_MODE, "warp-speed")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}
