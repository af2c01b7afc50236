//! `handshake` and `Peer::request_as` against the real fixture plugin (c2-testkit's
//! `c2-fixture` binary), spawned here with its stdio piped, as an embedder without the host
//! would.

use std::process::Stdio;
use std::time::{Duration, Instant};

use c2_protocol::{
    CommandInvokeParams, CommandMismatch, DeclaredCommand, HandshakeError, HandshakeOptions,
    HostInfo, InitializeParams, ProtocolVersion, RejectRequests, VersionError, handshake, method,
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
    assert!(started.elapsed() < PATIENCE, "{:?}", started.elapsed());
    tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
}
