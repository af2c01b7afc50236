//! `c2-plugins invoke` through a running service, interrupted: the runtime it started in the
//! service stops with it, and the service keeps serving.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::Sandbox;
use crate::resilience::{built, bundle};
use crate::serve::{
    PATIENCE, exit_code, runtime_pid, serve_on_socket, sigterm, socket_client, wait_gone,
};

#[test]
fn an_interrupted_cli_invoke_through_the_service_leaves_nothing_running_there() {
    let sandbox = Sandbox::new();
    let fixture = built("c2-fixture", "C2_FIXTURE_BIN");
    let dir = bundle(
        &sandbox,
        "sleeper",
        &fixture,
        &["fixture.sleep"],
        &[(
            "C2_FIXTURE_COMMANDS",
            json!([{"name": "fixture.sleep"}]).to_string(),
        )],
        "serve-interrupt",
    );
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    let id = client.ok(
        "plugins/install",
        json!({"source": dir, "trust": true, "enable": true}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    #[expect(
        clippy::disallowed_methods,
        reason = "the test interrupts a CLI call it started, as a terminal would"
    )]
    let mut cli = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
        .args(["invoke", "fixture.sleep", "--args", r#"{"ms":600000}"#])
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let pid = loop {
        if let Some(pid) = runtime_pid(&mut client, &id) {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the CLI's call never reached the service"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "the test interrupts the CLI it started, as a terminal would"
    )]
    let status = std::process::Command::new("kill")
        .args(["-INT", &cli.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(exit_code(&mut cli), 130, "the in-process SIGINT exit");
    wait_gone(pid);
    // The service lives on and starts the runtime afresh for the next call.
    client.ok(
        "command/invoke",
        json!({"command": "fixture.sleep", "args": {"ms": 1}}),
    );
    assert_ne!(runtime_pid(&mut client, &id), Some(pid));
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}
