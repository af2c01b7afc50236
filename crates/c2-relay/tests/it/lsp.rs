//! The LSP bridge: Content-Length frames both ways between an in-memory editor stream and a
//! plugin's language server started by the host, the LSP exit rule, the frame limit, and the
//! end of a session whose bundle unloads. The server is a small Python script speaking
//! Content-Length framing.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_contributions::prelude::*;
use c2_host::{StateChange, Target};
use c2_protocol::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, encode_content_length,
};
use c2_relay::{BridgeEnd, BridgeFailureKind, BridgeReport, LspBridgeOptions, bridge_lsp};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::support::{Env, gone, write_executable};

const WAIT: Duration = Duration::from_secs(10);

/// Answers `initialize` with a fixed result and `test/echo` with what it was sent plus where and
/// how it runs; records its start in `$LS_MARKER` when set; exits on `exit` or end of input.
const SERVER: &str = r#"#!/usr/bin/env python3
import json, os, sys

if os.environ.get("LS_MARKER"):
    with open(os.environ["LS_MARKER"], "a") as marker:
        marker.write("%d\n" % os.getpid())

def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, value = line.decode().split(":", 1)
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return json.loads(sys.stdin.buffer.read(length))

def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()

while True:
    message = read()
    if message is None or message.get("method") == "exit":
        break
    if message.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"capabilities": {"hoverProvider": True},
                         "serverInfo": {"name": "echo-ls"}}})
    elif message.get("method") == "test/echo":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"params": message.get("params"), "cwd": os.getcwd(),
                         "pid": os.getpid(), "argv": sys.argv[1:],
                         "name": os.environ.get("LS_NAME")}})
"#;

fn write_server(path: &Path) {
    write_executable(path, SERVER);
}

fn language_servers(name: &str, languages: &[&str], marker: &Path) -> Value {
    json!([{
        "id": "echo",
        "languages": languages,
        "command": "bin/server",
        "args": ["--name", name, "two words"],
        "env": {"LS_NAME": name, "LS_MARKER": marker.to_str().unwrap()},
    }])
}

/// A bundle with only `languageServers` (no runtime) under `bundles/<name>`.
fn server_bundle(env: &Env, name: &str, languages: &[&str]) -> PathBuf {
    let dir = env.path("bundles").join(name);
    write_server(&dir.join("bin/server"));
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "languageServers": language_servers(name, languages, &marker(env, name)),
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

/// Where a bundle's server records that it started.
fn marker(env: &Env, name: &str) -> PathBuf {
    env.path(&format!("{name}.started"))
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// Reads Content-Length frames from one stream, keeping what arrived past the last one.
struct FrameReader {
    decoder: ContentLengthDecoder,
    ready: VecDeque<Value>,
}

impl FrameReader {
    fn new() -> Self {
        Self {
            decoder: ContentLengthDecoder::new(ContentLengthOptions::default()),
            ready: VecDeque::new(),
        }
    }

    async fn next(&mut self, from: &mut (impl AsyncRead + Unpin)) -> Value {
        let mut chunk = vec![0u8; 4096];
        while self.ready.is_empty() {
            let read = tokio::time::timeout(WAIT, from.read(&mut chunk))
                .await
                .expect("the server answers in time")
                .unwrap();
            assert!(read > 0, "the stream ended before a frame arrived");
            let mut input = &chunk[..read];
            while let Some(event) = self.decoder.decode(&mut input).unwrap() {
                let ContentLengthEvent::Body(body) = event else {
                    panic!("unexpected {event:?}");
                };
                self.ready.push_back(serde_json::from_slice(&body).unwrap());
            }
        }
        self.ready.pop_front().unwrap()
    }
}

fn frame(message: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_content_length(
        message.to_string().as_bytes(),
        &ContentLengthOptions::default(),
        &mut out,
    )
    .unwrap();
    out
}

async fn send(to: &mut (impl AsyncWrite + Unpin), message: &Value) {
    to.write_all(&frame(message)).await.unwrap();
    to.flush().await.unwrap();
}

/// A started server bridged to an in-memory editor stream.
struct Bridged {
    client: tokio::io::DuplexStream,
    bridge: tokio::task::JoinHandle<BridgeReport>,
    pid: u32,
}

async fn bridged(env: &Env, project: &Path, max_body_bytes: usize) -> Bridged {
    let server = env
        .host
        .start_language_server(project, "zig")
        .await
        .unwrap();
    let options = LspBridgeOptions {
        framing: ContentLengthOptions {
            max_body_bytes,
            ..ContentLengthOptions::default()
        },
        ..LspBridgeOptions::default()
    };
    let pid = server.pid();
    let (client, bridge_side) = tokio::io::duplex(64 * 1024);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let bridge = tokio::spawn(bridge_lsp(server, bridge_in, bridge_out, options));
    Bridged {
        client,
        bridge,
        pid,
    }
}

#[tokio::test]
async fn the_bridge_carries_frames_both_ways_and_shutdown_then_exit_is_a_clean_end() {
    let env = Env::new().await;
    env.install(&server_bundle(&env, "zls", &["zig"]), true)
        .await;
    let project = env.project("app");
    let Bridged {
        mut client,
        bridge,
        pid,
    } = bridged(&env, &project, 1024).await;

    send(
        &mut client,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    )
    .await;
    // Split across writes, header name in lower case: the bridge re-frames whatever arrives.
    let echo = json!({"jsonrpc": "2.0", "id": 3, "method": "test/echo", "params": {"k": "v"}});
    let body = echo.to_string();
    let (head, tail) = body.as_bytes().split_at(10);
    let header = format!("content-length: {}\r\n", body.len());
    let pieces: [&[u8]; 4] = [header.as_bytes(), b"\r\n", head, tail];
    for piece in pieces {
        client.write_all(piece).await.unwrap();
        client.flush().await.unwrap();
        tokio::task::yield_now().await;
    }

    let mut reader = FrameReader::new();
    let first = reader.next(&mut client).await;
    assert_eq!(first["id"], json!(1));
    assert_eq!(
        first["result"]["capabilities"]["hoverProvider"],
        json!(true)
    );
    let second = reader.next(&mut client).await;
    assert_eq!(second["id"], json!(3));
    assert_eq!(second["result"]["params"], json!({"k": "v"}));
    assert_eq!(second["result"]["cwd"], json!(canonical(&project)));

    // The fixture answers nothing to `shutdown` but ends on `exit` with code 0.
    send(
        &mut client,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}),
    )
    .await;
    send(&mut client, &json!({"jsonrpc": "2.0", "method": "exit"})).await;
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    assert_eq!(report.ended, BridgeEnd::ServerClosed);
    assert!(report.shutdown_requested && report.exit_sent);
    assert_eq!(report.verdict, Ok(()), "{report:?}");
    assert_eq!(report.to_server.frames, 4);
    assert_eq!(report.to_client.frames, 2);
    assert!(report.exit.already_exited);
    assert!(gone(pid, WAIT).await);
    env.host.shutdown().await;
}

#[tokio::test]
async fn exit_without_shutdown_and_a_server_that_ends_on_its_own_are_failures() {
    let env = Env::new().await;
    env.install(&server_bundle(&env, "zls", &["zig"]), true)
        .await;
    let project = env.project("app");

    let Bridged {
        mut client, bridge, ..
    } = bridged(&env, &project, 1024).await;
    send(&mut client, &json!({"jsonrpc": "2.0", "method": "exit"})).await;
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    let failure = report.verdict.unwrap_err();
    assert_eq!(
        failure.kind,
        BridgeFailureKind::ExitWithoutShutdown,
        "{failure}"
    );

    // The editor went away: the bridge stopping a healthy server is the expected end.
    let Bridged { client, bridge, .. } = bridged(&env, &project, 1024).await;
    drop(client);
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    assert_eq!(report.ended, BridgeEnd::ClientClosed);
    assert_eq!(report.verdict, Ok(()), "{report:?}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_frame_over_the_limit_stops_the_server_and_tells_the_editor() {
    let env = Env::new().await;
    env.install(&server_bundle(&env, "zls", &["zig"]), true)
        .await;
    let project = env.project("app");

    // From the editor: a body over the bridge's limit.
    let Bridged {
        mut client,
        bridge,
        pid,
    } = bridged(&env, &project, 1024).await;
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "test/echo", "params": "x".repeat(4096)});
    send(&mut client, &big).await;
    let told = FrameReader::new().next(&mut client).await;
    assert_eq!(told["method"], json!("window/showMessage"), "{told}");
    assert_eq!(told["params"]["type"], json!(1));
    let message = told["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("1024-byte limit"), "{message}");
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    assert!(
        matches!(
            report.ended,
            BridgeEnd::ClientFrameTooLarge { limit: 1024, .. }
        ),
        "{report:?}"
    );
    assert_eq!(
        report.verdict.unwrap_err().kind,
        BridgeFailureKind::FrameTooLarge
    );
    assert_eq!(report.to_server.oversized, 1);
    assert!(gone(pid, WAIT).await);

    // From the server: its answer to a request under the limit is over it.
    let Bridged {
        mut client,
        bridge,
        pid,
    } = bridged(&env, &project, 1024).await;
    let request =
        json!({"jsonrpc": "2.0", "id": 5, "method": "test/echo", "params": "y".repeat(900)});
    assert!(request.to_string().len() < 1024);
    send(&mut client, &request).await;
    let told = FrameReader::new().next(&mut client).await;
    assert_eq!(told["method"], json!("window/showMessage"), "{told}");
    let message = told["params"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("language server sent") && message.contains("stopped"),
        "{message}"
    );
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    assert!(
        matches!(
            report.ended,
            BridgeEnd::ServerFrameTooLarge { limit: 1024, .. }
        ),
        "{report:?}"
    );
    assert_eq!(
        report.verdict.unwrap_err().kind,
        BridgeFailureKind::FrameTooLarge
    );
    assert!(gone(pid, WAIT).await);
    env.host.shutdown().await;
}

/// A bundle whose server writes to stderr and exits 2 at once, as a server given bad
/// arguments does.
fn broken_bundle(env: &Env, name: &str) -> PathBuf {
    let dir = env.path("bundles").join(name);
    let script = dir.join("bin/server");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'usage: server [--stdio]' >&2\necho 'server: error: unrecognized arguments: --bogus' >&2\nexit 2\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "languageServers": [{"id": "broken", "languages": ["zig"], "command": "bin/server", "args": ["--bogus"]}],
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

#[tokio::test]
async fn a_server_that_dies_at_start_is_a_failure_with_its_stderr_tail_even_after_stdin_closed() {
    let env = Env::new().await;
    env.install(&broken_bundle(&env, "broken-ls"), true).await;
    let project = env.project("app");

    let Bridged { client, bridge, .. } = bridged(&env, &project, 1024).await;
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    drop(client);
    let failure = report.verdict.clone().unwrap_err();
    assert_eq!(failure.kind, BridgeFailureKind::ProcessExited, "{report:?}");
    assert!(failure.message.contains("code 2"), "{failure}");
    assert_eq!(
        report.stderr_tail.last().map(String::as_str),
        Some("server: error: unrecognized arguments: --bogus"),
        "{report:?}"
    );

    // The editor's input is already closed when the server dies: still a failure.
    let Bridged { client, bridge, .. } = bridged(&env, &project, 1024).await;
    drop(client);
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    let failure = report.verdict.clone().unwrap_err();
    assert_eq!(failure.kind, BridgeFailureKind::ProcessExited, "{report:?}");
    assert!(
        report
            .stderr_tail
            .iter()
            .any(|line| line.contains("unrecognized arguments")),
        "{report:?}"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_bridge_ends_when_the_bundle_is_disabled_under_it() {
    let env = Env::new().await;
    let id = env
        .install(&server_bundle(&env, "zls", &["zig"]), true)
        .await;
    let project = env.project("app");
    let server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    let pid = server.pid();
    let (mut client, bridge_side) = tokio::io::duplex(64 * 1024);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let bridge = tokio::spawn(bridge_lsp(
        server,
        bridge_in,
        bridge_out,
        LspBridgeOptions::default(),
    ));
    send(
        &mut client,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    )
    .await;
    assert_eq!(FrameReader::new().next(&mut client).await["id"], json!(1));

    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    assert_eq!(report.ended, BridgeEnd::ServerClosed);
    assert_eq!(report.to_client.frames, 1);
    assert!(gone(pid, WAIT).await);
    env.host.shutdown().await;
}
