//! The LSP bridge with the real typescript-language-server (on PATH: `npm install -g
//! typescript-language-server typescript`): the editor going away is a clean end although the
//! server exits 1 on its closed input, and a server killed under the editor is restarted with
//! the session replayed, within its crash budget, then left failed.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use c2_contributions::prelude::*;
use c2_host::Exit;
use c2_protocol::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, encode_content_length,
};
use c2_relay::{
    BridgeEnd, BridgeFailureKind, LspBridgeOptions, LspRestartBudget, bridge_lsp,
    bridge_lsp_supervised,
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::support::{Env, gone};

/// Generous: Node and tsserver start slowly on a loaded machine.
const WAIT: Duration = Duration::from_secs(60);

/// typescript-language-server's path, which the tests require.
fn typescript_language_server() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("typescript-language-server"))
        .find(|path| path.is_file())
        .expect(
            "typescript-language-server is on PATH (npm install -g typescript-language-server typescript)",
        )
}

/// A bundle mapping `typescript` to typescript-language-server.
fn typescript_bundle(env: &Env) -> PathBuf {
    let dir = env.path("bundles/ts");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "ts-ls",
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "languageServers": [{
                "id": "tsls",
                "languages": ["typescript"],
                // A bare name, found on PATH (checked first, for a clear failure).
                "command": typescript_language_server().file_name().unwrap().to_str().unwrap(),
                "args": ["--stdio"],
            }],
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

/// Reads Content-Length frames, keeping what arrived past the last one.
struct Frames {
    decoder: ContentLengthDecoder,
    ready: VecDeque<Value>,
}

impl Frames {
    fn new() -> Self {
        Self {
            decoder: ContentLengthDecoder::new(ContentLengthOptions::default()),
            ready: VecDeque::new(),
        }
    }

    /// The next message, or `None` at the end of the stream.
    async fn next(&mut self, from: &mut (impl AsyncRead + Unpin)) -> Option<Value> {
        let mut chunk = vec![0u8; 64 * 1024];
        while self.ready.is_empty() {
            let read = tokio::time::timeout(WAIT, from.read(&mut chunk))
                .await
                .expect("the bridge speaks in time")
                .unwrap();
            if read == 0 {
                return None;
            }
            let mut input = &chunk[..read];
            while let Some(event) = self.decoder.decode(&mut input).unwrap() {
                let ContentLengthEvent::Body(body) = event else {
                    panic!("unexpected {event:?}");
                };
                self.ready.push_back(serde_json::from_slice(&body).unwrap());
            }
        }
        self.ready.pop_front()
    }

    /// The answer to request `id`, skipping everything else.
    async fn answer(&mut self, from: &mut (impl AsyncRead + Unpin), id: i64) -> Value {
        loop {
            let message = self.next(from).await.expect("an answer before the end");
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

async fn send(to: &mut (impl AsyncWrite + Unpin), message: &Value) {
    let mut out = Vec::new();
    encode_content_length(
        message.to_string().as_bytes(),
        &ContentLengthOptions::default(),
        &mut out,
    )
    .unwrap();
    to.write_all(&out).await.unwrap();
    to.flush().await.unwrap();
}

fn uri(path: &Path) -> String {
    format!("file://{}", std::fs::canonicalize(path).unwrap().display())
}

fn initialize(project: &Path) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": null, "rootUri": uri(project), "capabilities": {}}})
}

/// The names of the symbols typescript-language-server finds in `file`, asked as request `id`.
async fn symbols(
    client: &mut tokio::io::DuplexStream,
    frames: &mut Frames,
    file: &str,
    id: i64,
) -> Vec<String> {
    send(
        client,
        &json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
            "params": {"textDocument": {"uri": file}}}),
    )
    .await;
    let answer = frames.answer(client, id).await;
    answer["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|symbol| symbol["name"].as_str().unwrap().to_owned())
        .collect()
}

#[expect(
    clippy::disallowed_methods,
    reason = "the test kills the server as a crash would, with kill(1)"
)]
fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_going_away_is_a_clean_end_although_typescript_language_server_exits_1() {
    let env = Env::new().await;
    env.install(&typescript_bundle(&env), true).await;
    let project = env.project("app");
    let server = env
        .host
        .start_language_server(&project, "typescript")
        .await
        .unwrap();
    let (mut client, bridge_side) = tokio::io::duplex(64 * 1024);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let bridge = tokio::spawn(bridge_lsp(
        server,
        bridge_in,
        bridge_out,
        LspBridgeOptions::default(),
    ));
    send(&mut client, &initialize(&project)).await;
    let mut frames = Frames::new();
    let answer = frames.answer(&mut client, 1).await;
    assert!(answer["result"]["capabilities"].is_object(), "{answer}");

    // The editor closes its side without `shutdown` and `exit`, as an editor that quits does.
    let (read_half, mut write_half) = tokio::io::split(client);
    write_half.shutdown().await.unwrap();
    drop(write_half);
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    drop(read_half);
    assert_eq!(report.ended, BridgeEnd::ClientClosed);
    assert_eq!(report.verdict, Ok(()), "{report:?}");
    assert!(report.stderr_tail.is_empty());
    // What the server itself made of its closed input: the bridge calls it clean all the same.
    assert_ne!(report.exit.exit, Exit::Code(0), "{report:?}");
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_twice_is_restarted_twice_with_the_session_then_left_failed() {
    let env = Env::new().await;
    env.install(&typescript_bundle(&env), true).await;
    let project = env.project("app");
    let file = project.join("a.ts");
    std::fs::write(&file, "").unwrap();
    let file = uri(&file);

    let server = env
        .host
        .start_language_server(&project, "typescript")
        .await
        .unwrap();
    let pids = Arc::new(Mutex::new(vec![server.pid()]));
    let budget = LspRestartBudget {
        restarts: 2,
        window: Duration::from_secs(600),
        backoff: Duration::from_millis(50),
    };
    let restart = {
        let host = env.host.clone();
        let project = project.clone();
        let pids = Arc::clone(&pids);
        move || {
            let host = host.clone();
            let project = project.clone();
            let pids = Arc::clone(&pids);
            async move {
                let server = host
                    .start_language_server(&project, "typescript")
                    .await
                    .map_err(|e| e.to_string())?;
                pids.lock().unwrap().push(server.pid());
                Ok(server)
            }
        }
    };
    let (mut client, bridge_side) = tokio::io::duplex(64 * 1024);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let bridge = tokio::spawn(bridge_lsp_supervised(
        server,
        bridge_in,
        bridge_out,
        LspBridgeOptions::default(),
        budget,
        restart,
    ));
    let mut frames = Frames::new();
    send(&mut client, &initialize(&project)).await;
    frames.answer(&mut client, 1).await;
    send(
        &mut client,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    )
    .await;
    // The document as the editor has it: opened with one function, then changed to two.
    send(
        &mut client,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":
            {"uri": file, "languageId": "typescript", "version": 1, "text": "function hello() {}\n"}}}),
    )
    .await;
    send(
        &mut client,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": file, "version": 2},
            "contentChanges": [{"text": "function hello() {}\nfunction again() {}\n"}]}}),
    )
    .await;
    let expected = vec!["again".to_owned(), "hello".to_owned()];
    let mut id = 10;
    assert_eq!(symbols(&mut client, &mut frames, &file, id).await, expected);

    for restarted in 1..=2 {
        let pid = *pids.lock().unwrap().last().unwrap();
        kill(pid);
        assert!(gone(pid, WAIT).await);
        let deadline = Instant::now() + WAIT;
        while pids.lock().unwrap().len() <= restarted {
            assert!(Instant::now() < deadline, "restart {restarted} in time");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The new server knows the document as the editor changed it: the session was
        // replayed, and its answer to the replayed `initialize` was not passed on.
        id += 1;
        assert_eq!(
            symbols(&mut client, &mut frames, &file, id).await,
            expected,
            "after restart {restarted}"
        );
    }

    // The third crash is past the budget: the server is left failed and the editor told why.
    let pid = *pids.lock().unwrap().last().unwrap();
    kill(pid);
    let mut told = None;
    while let Some(message) = frames.next(&mut client).await {
        assert!(
            message["id"] != json!(1) || message.get("method").is_some(),
            "a replayed initialize answered: {message}"
        );
        if message["method"] == "window/showMessage" && message["params"]["type"] == 1 {
            told = Some(message["params"]["message"].as_str().unwrap().to_owned());
        }
    }
    let told = told.expect("the editor is told the server was left failed");
    assert!(told.contains("left failed after 2 restart(s)"), "{told}");
    let report = tokio::time::timeout(WAIT, bridge).await.unwrap().unwrap();
    assert_eq!(report.restarts, 2);
    assert_eq!(report.ended, BridgeEnd::ServerClosed);
    let failure = report.verdict.unwrap_err();
    assert_eq!(failure.kind, BridgeFailureKind::ProcessExited);
    assert!(
        failure.message.contains("crashed more than 2 times"),
        "{failure}"
    );
    assert_eq!(pids.lock().unwrap().len(), 3);
    env.host.shutdown().await;
}
