//! `c2-plugins serve` as a frontend sees it: the real binary on stdio and on its Unix socket,
//! driving the real Node pack hello-runtime and the c2-testkit fixture through the relay. Warm
//! invokes reuse one runtime process, a cancelled call stops the process serving it, and every
//! way the service ends (stdin EOF, SIGTERM) leaves no plugin process alive.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::resilience::{built, bundle};
use crate::{Sandbox, git_repo, pack};

/// How long anything may take on a loaded machine (a cold Node start, a build-heavy CI box).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// A relay client over any byte stream: one reader thread hands over each line.
pub(crate) struct Client {
    pub(crate) writer: Box<dyn Write + Send>,
    lines: Receiver<Value>,
    /// Responses read while waiting for another one.
    early: HashMap<u64, Value>,
    /// Notifications read while waiting for something else.
    notes: Vec<Value>,
    next_id: u64,
}

impl Client {
    fn new(reader: impl Read + Send + 'static, writer: impl Write + Send + 'static) -> Self {
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the relay wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Self {
            writer: Box::new(writer),
            lines,
            early: HashMap::new(),
            notes: Vec::new(),
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).unwrap();
        self.writer.flush().unwrap();
    }

    /// Sends a request and returns its id without waiting.
    fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The whole response to request `id`.
    pub(crate) fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(response) = self.early.remove(&id) {
                return response;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.lines.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no response to request {id} in {PATIENCE:?}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the relay closed before answering request {id}")
                }
            };
            self.keep(message);
        }
    }

    fn keep(&mut self, message: Value) {
        match message["id"].as_u64() {
            Some(got) => {
                self.early.insert(got, message);
            }
            None => self.notes.push(message),
        }
    }

    /// The next notification `method`, in arrival order.
    pub(crate) fn notification(&mut self, method: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(at) = self.notes.iter().position(|n| n["method"] == method) {
                return self.notes.remove(at);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(message) => self.keep(message),
                Err(error) => panic!("no {method} notification in {PATIENCE:?}: {error}"),
            }
        }
    }

    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response(id)
    }

    /// The result of a call that must succeed.
    pub(crate) fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params.clone());
        assert!(
            response.get("error").is_none(),
            "{method} {params} failed: {response:#}"
        );
        response["result"].clone()
    }

    fn initialize(&mut self) -> Value {
        self.ok(
            "relay/initialize",
            json!({"protocolVersion": "2.0.0", "client": {"name": "it"}}),
        )
    }
}

/// `c2-plugins serve ARGS` in the sandbox, its stderr in `work/serve-N.log`.
fn spawn_serve(sandbox: &Sandbox, args: &[&str], log: &str) -> Child {
    let log = std::fs::File::create(sandbox.work.join(log)).unwrap();
    #[expect(
        clippy::disallowed_methods,
        reason = "these tests run the built service as a frontend would"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    command
        .arg("serve")
        .args(args)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit, at most PATIENCE; kills it and fails the test otherwise.
pub(crate) fn exit_code(child: &mut Child) -> i32 {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("the service did not exit within {PATIENCE:?}");
}

/// A process is gone when /proc no longer has it or it is a zombie waiting for its reaper.
pub(crate) fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

pub(crate) fn wait_gone(pid: u64) {
    let deadline = Instant::now() + PATIENCE;
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "plugin process {pid} still runs");
}

pub(crate) fn sigterm(child: &Child) {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test signals the service it started, as a service manager would"
    )]
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

pub(crate) fn runtime_pid(client: &mut Client, id: &str) -> Option<u64> {
    client.ok("plugins/runtimePid", json!({"id": id}))["pid"].as_u64()
}

#[test]
fn serve_stdio_keeps_the_node_runtime_warm_refuses_a_second_service_and_ends_on_stdin_eof() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    let mut service = spawn_serve(&sandbox, &["--stdio"], "serve-1.log");
    let mut client = Client::new(
        service.stdout.take().unwrap(),
        service.stdin.take().unwrap(),
    );

    let early = client.call("plugins/list", json!({}));
    assert_eq!(early["error"]["code"], -32010, "{early:#}");
    let incompatible = client.call("relay/initialize", json!({"protocolVersion": "1.0.0"}));
    assert_eq!(incompatible["error"]["code"], -32011, "{incompatible:#}");
    let hello = client.initialize();
    assert_eq!(hello["protocolVersion"], "2.0.0");
    assert_eq!(hello["pid"], service.id());
    assert!(
        hello["capabilities"]["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("command/invoke"))
    );
    let unknown = client.call("plugins/frobnicate", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown:#}");

    let source = pack("hello-runtime");
    let installed = client.ok("plugins/install", json!({"source": source}));
    let id = installed["id"].as_str().unwrap().to_owned();
    let args = json!({"command": "hello.status", "args": {"cwd": repo}});
    let untrusted = client.call("command/invoke", args.clone());
    assert_eq!(
        untrusted["error"]["data"]["kind"], "not_trusted",
        "{untrusted:#}"
    );
    client.ok("plugins/trust", json!({"id": id}));
    client.ok("plugins/enable", json!({"id": id}));
    let listed = client.ok("plugins/list", json!({}));
    assert_eq!(listed[0]["trusted"], true, "{listed:#}");
    assert_eq!(listed[0]["enabled"], true, "{listed:#}");
    assert_eq!(
        runtime_pid(&mut client, &id),
        None,
        "installing started nothing"
    );

    let first = client.ok("command/invoke", args.clone());
    assert_eq!(first["git"]["branch"], "main", "{first:#}");
    let pid = runtime_pid(&mut client, &id).expect("the first invoke started the runtime");
    let second = client.ok("command/invoke", args);
    assert_eq!(second["git"]["branch"], "main", "{second:#}");
    assert_eq!(
        runtime_pid(&mut client, &id),
        Some(pid),
        "the second invoke reused the warm runtime"
    );

    // The UI descriptor runs the same command in the project realm, through the host's checks.
    let slots = client.ok("ui/catalog", json!({"project": repo}));
    assert_eq!(slots["composer.toolbar"][0]["id"], "status", "{slots:#}");
    let shown = client.ok(
        "ui/invoke",
        json!({"id": id, "ui": "status", "project": repo, "sessionId": "s1"}),
    );
    assert_eq!(shown["git"]["branch"], "main", "{shown:#}");

    // A planned disable, applied, stops the user realm's runtime; enabling brings it back.
    let plan = client.ok(
        "plugins/plan",
        json!({"id": id, "change": {"action": "disable"}}),
    );
    assert_eq!(plan["id"], id.as_str(), "{plan:#}");
    assert!(
        plan["revisions"]["graph"].is_string(),
        "64-bit revisions travel as text: {plan:#}"
    );
    client.ok("plugins/apply", json!({"plan": plan}));
    wait_gone(pid);
    assert_eq!(runtime_pid(&mut client, &id), None);
    let stale = client.call("plugins/apply", json!({"plan": plan}));
    assert_eq!(stale["error"]["data"]["kind"], "stale_plan", "{stale:#}");
    client.ok("plugins/enable", json!({"id": id}));
    client.ok(
        "command/invoke",
        json!({"command": "hello.status", "args": {"cwd": repo}}),
    );
    let pid = runtime_pid(&mut client, &id).expect("enabled again, the runtime restarted");

    // Language servers: the active plugin that maps a language is what it resolves to.
    crate::lsp::fixture_bundle(&sandbox, "ls", "zig-ls", &["zig"]);
    let ls = client.ok(
        "plugins/install",
        json!({"source": sandbox.work.join("ls"), "trust": true, "enable": true}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resolved = client.ok("lsp/resolve", json!({"language": "Zig", "project": repo}));
    assert_eq!(resolved["kind"], "plugin", "{resolved:#}");
    assert_eq!(resolved["bundle"], ls.as_str(), "{resolved:#}");
    let listing = client.ok("lsp/list", json!({"project": repo}));
    assert_eq!(listing["languages"][0]["language"], "zig", "{listing:#}");

    let mut refused = spawn_serve(&sandbox, &["--stdio"], "serve-2.log");
    assert_eq!(exit_code(&mut refused), 2);
    let log = std::fs::read_to_string(sandbox.work.join("serve-2.log")).unwrap();
    assert!(
        log.contains(&format!("(pid {}) already serves", service.id())),
        "{log}"
    );
    assert!(alive(pid), "the refused service touched nothing");

    drop(client);
    assert_eq!(exit_code(&mut service), 0);
    wait_gone(pid);
}

#[test]
fn serve_socket_is_private_cancels_a_hanging_call_and_leaves_nothing_on_sigterm() {
    let sandbox = Sandbox::new();
    let fixture = built("c2-fixture", "C2_FIXTURE_BIN");
    let dir = bundle(
        &sandbox,
        "sleeper",
        &fixture,
        &["fixture.sleep", "fixture.emit", "chat.connector"],
        &[(
            "C2_FIXTURE_COMMANDS",
            json!([{"name": "fixture.sleep"}, {"name": "fixture.emit"}, {"name": "chat.connector"}])
                .to_string(),
        )],
        "serve-socket",
    );
    // The fixture also serves a declared connector, whose events it emits through fixture.emit.
    let manifest_path = dir.join("plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["extensions"]["dev.codetwo"]["connectors"] = json!([{
        "id": "workspace", "provider": "example-chat", "command": "chat.connector",
        "capabilities": ["messaging"]
    }]);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let mut service = spawn_serve(
        &sandbox,
        &[
            "--socket",
            "--max-connections",
            "2",
            "--max-subscriptions",
            "2",
        ],
        "serve.log",
    );
    let socket = sandbox.plugins.join(".serve.sock");
    let deadline = Instant::now() + PATIENCE;
    while !socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the socket is private to its owner");
    }
    let stream = connect(&socket);
    let mut client = Client::new(stream.try_clone().unwrap(), stream);
    client.initialize();
    let installed = client.ok(
        "plugins/install",
        json!({"source": dir, "trust": true, "enable": true}),
    );
    let id = installed["id"].as_str().unwrap().to_owned();

    let hanging = client.start(
        "command/invoke",
        json!({"command": "fixture.sleep", "args": {"ms": 600_000}}),
    );
    let deadline = Instant::now() + PATIENCE;
    let mut pid = runtime_pid(&mut client, &id);
    while pid.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        pid = runtime_pid(&mut client, &id);
    }
    let pid = pid.expect("the hanging call started the fixture");
    client.send(&json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": hanging}}));
    let cancelled = client.response(hanging);
    assert_eq!(cancelled["error"]["code"], -32800, "{cancelled:#}");
    wait_gone(pid);

    // A second client on the same socket sees the same host; the next call starts afresh.
    let stream = connect(&socket);
    let mut other = Client::new(stream.try_clone().unwrap(), stream);
    other.initialize();
    other.ok(
        "command/invoke",
        json!({"command": "fixture.sleep", "args": {"ms": 1}}),
    );
    let restarted = runtime_pid(&mut other, &id).expect("the call after the cancel ran");

    // Events: a plugin's event/emit and a frontend's host event reach subscribers as
    // notifications; a plugin-looking event cannot be published by a client.
    let ping =
        client.ok("events/subscribe", json!({"event": "fixture.ping"}))["subscription"].clone();
    let skills =
        client.ok("events/subscribe", json!({"event": "skills/changed"}))["subscription"].clone();
    other.ok(
        "command/invoke",
        json!({"command": "fixture.emit", "args": {"name": "fixture.ping", "payload": {"n": 1}}}),
    );
    let event = client.notification("events/event");
    assert_eq!(event["params"]["subscription"], ping, "{event:#}");
    assert_eq!(event["params"]["name"], "fixture.ping");
    assert_eq!(event["params"]["payload"], json!({"n": 1}));
    let published = other.ok(
        "events/publish",
        json!({"name": "skills/changed", "payload": {"skills": ["a"]}}),
    );
    assert!(published["delivered"].as_u64() >= Some(1), "{published:#}");
    let event = client.notification("events/event");
    assert_eq!(event["params"]["subscription"], skills, "{event:#}");
    assert_eq!(event["params"]["payload"], json!({"skills": ["a"]}));
    let forged = other.call("events/publish", json!({"name": "fixture.ping"}));
    assert_eq!(forged["error"]["code"], -32602, "{forged:#}");
    let third = client.call("events/subscribe", json!({"event": "scenes/changed"}));
    assert_eq!(
        third["error"]["code"], -32003,
        "over --max-subscriptions: {third:#}"
    );
    let removed = client.ok("events/unsubscribe", json!({"subscription": ping}));
    assert_eq!(removed["removed"], true);
    client.ok("events/subscribe", json!({"event": "scenes/changed"}));

    // Connector events are typed: the host names the owning bundle and drops a forged id.
    client.ok("events/unsubscribe", json!({"subscription": skills}));
    let connector =
        client.ok("events/subscribe", json!({"event": "connector/event"}))["subscription"].clone();
    let envelope = json!({"connectorId": "workspace", "eventId": "e1", "kind": "message.created",
                          "createdAt": "1724900000000", "plugin_id": "forged"});
    other.ok(
        "command/invoke",
        json!({"command": "fixture.emit", "args": {"name": "connector/event", "payload": envelope}}),
    );
    let event = client.notification("events/event");
    assert_eq!(event["params"]["subscription"], connector, "{event:#}");
    assert_eq!(event["params"]["name"], "connector/event");
    let typed = &event["params"]["payload"];
    assert_eq!(typed["bundleId"], id.as_str(), "{event:#}");
    assert_eq!(typed["connectorId"], "workspace");
    assert_eq!(typed["eventId"], "e1");
    assert!(typed["payload"].get("plugin_id").is_none(), "{event:#}");

    // A frontend is the connector's provider adapter: until it registers, the connector is
    // unsupported; then operations inside the declared capabilities reach the plugin.
    let send = json!({"id": id, "connector": "workspace", "operation": "message.send",
                      "input": {"text": "hi"}});
    let unsupported = other.call("connectors/invoke", send.clone());
    assert_eq!(
        unsupported["error"]["data"]["kind"], "unsupported",
        "{unsupported:#}"
    );
    other.ok(
        "connectors/registerProvider",
        json!({"provider": "example-chat"}),
    );
    let listed = other.ok("connectors/list", json!({}));
    assert_eq!(listed[0]["supported"], true, "{listed:#}");
    let sent = other.ok("connectors/invoke", send);
    assert_eq!(sent["command"], "chat.connector", "{sent:#}");
    assert_eq!(sent["args"]["operation"], "message.send");
    assert_eq!(sent["args"]["input"], json!({"text": "hi"}));
    let outside = other.call(
        "connectors/invoke",
        json!({"id": id, "connector": "workspace", "operation": "document.read"}),
    );
    assert_eq!(
        outside["error"]["data"]["kind"], "operation_not_allowed",
        "{outside:#}"
    );

    // A third client is over --max-connections: the service closes it at once.
    let mut extra = connect(&socket);
    extra.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(
        extra.read(&mut byte).unwrap(),
        0,
        "the third client was closed"
    );
    assert_ne!(restarted, pid);

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
    wait_gone(restarted);
    assert!(!socket.exists(), "the service removed its socket");
}

fn connect(socket: &Path) -> std::os::unix::net::UnixStream {
    std::os::unix::net::UnixStream::connect(socket).unwrap()
}

#[test]
fn the_javascript_client_passes_its_node_and_bun_tests_against_a_real_service() {
    // Fourteen tests against the service (relay.test.js; lifecycle.test.js: connectOrSpawn,
    // two windows, SIGKILL recovery, events, npm pack, the examples), nine on scripted streams,
    // three that the docs, the description document and the types agree; under Node the shared
    // runner and service modules count as two more passing files.
    let node = client_suite("node", &["--test", "test/"]);
    assert!(node.contains("# pass 28"), "{node}");
    assert!(node.contains("# fail 0"), "{node}");
    let bun = client_suite("bun", &["test"]);
    assert!(bun.contains(" 26 pass"), "{bun}");
    assert!(bun.contains(" 0 fail"), "{bun}");
}

/// Runs the client's suite with `runtime` against the built service; its report, once passed.
fn client_suite(runtime: &str, args: &[&str]) -> String {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/typescript");
    let fixture = built("c2-fixture", "C2_FIXTURE_BIN");
    #[expect(
        clippy::disallowed_methods,
        reason = "Node's and Bun's own test runners exercise the client against the built service"
    )]
    let output = std::process::Command::new(runtime)
        .args(args)
        .current_dir(&client)
        .env("C2_PLUGINS_BIN", env!("CARGO_BIN_EXE_c2-plugins"))
        .env("C2_HELLO_RUNTIME", pack("hello-runtime"))
        .env("C2_FIXTURE_BIN", fixture)
        .env_remove("C2_PLUGINS_DIR")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {runtime} (install it: .ci/run does): {error}"));
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{runtime} {args:?} failed:\n{report}"
    );
    report
}

#[test]
fn a_killed_service_leaves_a_lock_and_socket_the_next_one_takes_over_and_sigint_ends_it() {
    let sandbox = Sandbox::new();
    let socket = sandbox.plugins.join(".serve.sock");
    let mut first = spawn_serve(&sandbox, &["--socket"], "serve-1.log");
    let deadline = Instant::now() + PATIENCE;
    while !socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stream = connect(&socket);
    let mut client = Client::new(stream.try_clone().unwrap(), stream);
    assert_eq!(client.initialize()["pid"], first.id());
    // SIGKILL: no cleanup runs, so the socket file and the lock file stay behind.
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(socket.exists() && sandbox.plugins.join(".serve.lock").exists());
    // A stale socket answers nobody: the CLI runs in-process.
    let stale = sandbox.run(&["--format", "json", "invoke", "nope.x"]);
    assert_eq!(stale.code, 1, "{stale:#?}");
    assert_eq!(stale.json()["error"]["kind"], "unknown_command");

    let mut second = spawn_serve(&sandbox, &["--socket"], "serve-2.log");
    let deadline = Instant::now() + PATIENCE;
    let stream = loop {
        if let Ok(stream) = std::os::unix::net::UnixStream::connect(&socket) {
            break stream;
        }
        assert!(
            Instant::now() < deadline,
            "the second service never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut client = Client::new(stream.try_clone().unwrap(), stream);
    assert_eq!(client.initialize()["pid"], second.id());
    #[expect(
        clippy::disallowed_methods,
        reason = "the test interrupts the service it started, as a terminal would"
    )]
    let status = std::process::Command::new("kill")
        .args(["-INT", &second.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(exit_code(&mut second), 0);
    assert!(!socket.exists(), "the service removed its socket");
}

/// `serve --socket` in the sandbox, waited for until its socket answers.
pub(crate) fn serve_on_socket(sandbox: &Sandbox, log: &str) -> (Child, std::path::PathBuf) {
    let service = spawn_serve(sandbox, &["--socket"], log);
    let socket = sandbox.plugins.join(".serve.sock");
    let deadline = Instant::now() + PATIENCE;
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "the service never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    (service, socket)
}

pub(crate) fn socket_client(socket: &Path) -> Client {
    let stream = connect(socket);
    let mut client = Client::new(stream.try_clone().unwrap(), stream);
    client.initialize();
    client
}

#[test]
fn mcp_list_is_the_cli_listing_and_launches_nothing() {
    let sandbox = Sandbox::new();
    let dir = crate::mcp::write_bundle(&sandbox, "relay\n");
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    assert_eq!(client.ok("mcp/list", json!({})), json!([]));
    let id = client.ok(
        "plugins/install",
        json!({"source": dir, "trust": true, "enable": true}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = client.ok("mcp/list", json!({}));
    let cli = sandbox.run(&["mcp", "--format", "json"]).json();
    assert_eq!(listed, cli["result"], "the relay's rows are the CLI's");
    let servers: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["files", "files-local", "remote", "legacy"]);
    assert_eq!(listed[0]["bundle"], id.as_str());
    assert!(listed[0]["launch"]["envValues"].is_null(), "{listed:#}");
    let valued = client.ok("mcp/list", json!({"envValues": true}));
    assert_eq!(
        valued,
        sandbox.run(&["mcp", "--format", "json", "-v"]).json()["result"]
    );
    assert!(
        valued[0]["launch"]["envValues"]["FS_TOOLS_ROOT"].is_string(),
        "{valued:#}"
    );
    // A disabled bundle composes nothing.
    client.ok("plugins/disable", json!({"id": id}));
    assert_eq!(client.ok("mcp/list", json!({})), json!([]));
    let bad = client.call("mcp/list", json!({"envValues": "yes"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad:#}");
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}

/// How soon another process's committed change reaches a subscriber (the many-hosts bound).
const PROPAGATION: Duration = Duration::from_secs(1);

/// The next `store/changed` event for which `wanted` holds, asserted to arrive within
/// PROPAGATION of `since` (events already queued count as arrived when read).
fn store_change(client: &mut Client, since: Instant, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        let event = client.notification("events/event");
        assert_eq!(event["params"]["name"], "store/changed", "{event:#}");
        let payload = event["params"]["payload"].clone();
        if wanted(&payload) {
            let took = since.elapsed();
            assert!(
                took <= PROPAGATION,
                "the change reached the subscriber after {took:?}: {payload:#}"
            );
            return payload;
        }
    }
}

fn lists(payload: &Value, field: &str, id: &str) -> bool {
    payload[field]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|x| x == id))
}

#[test]
fn a_store_change_committed_by_the_cli_reaches_a_subscribed_client_within_a_second() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    let subscription =
        client.ok("events/subscribe", json!({"event": "store/changed"}))["subscription"].clone();

    let source = pack("hello-runtime");
    let install = sandbox.run(&["install", source.to_str().unwrap(), "--trust", "--enable"]);
    let done = Instant::now();
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    let installed = store_change(&mut client, done, |p| lists(p, "installed", &id));
    // 64-bit generations travel as decimal strings.
    assert!(
        installed["generation"]
            .as_str()
            .and_then(|g| g.parse::<u64>().ok())
            > Some(0),
        "{installed:#}"
    );
    // The trust and enable commits may come as their own events; the service ends up at
    // the CLI's state and serves the bundle as if it had been installed through it.
    let deadline = Instant::now() + PATIENCE;
    let listed = loop {
        let listed = client.ok("plugins/list", json!({}));
        if listed[0]["enabled"] == true || Instant::now() > deadline {
            break listed;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(listed[0]["id"], id.as_str(), "{listed:#}");
    assert_eq!(listed[0]["trusted"], true, "{listed:#}");
    assert_eq!(listed[0]["enabled"], true, "{listed:#}");
    let status = client.ok(
        "command/invoke",
        json!({"command": "hello.status", "args": {"cwd": repo}}),
    );
    assert_eq!(status["git"]["branch"], "main", "{status:#}");
    let pid = runtime_pid(&mut client, &id).expect("the invoke started the runtime");
    // Drain what the install produced, then one commit, one event.
    client.ok("plugins/refresh", json!({}));
    client.notes.clear();

    let disable = sandbox.run(&["disable", &id]);
    let done = Instant::now();
    assert_eq!(disable.code, 0, "{disable:#?}");
    let disabled = store_change(&mut client, done, |p| lists(p, "policy", &id));
    assert!(lists(&disabled, "policy", &id), "{disabled:#}");
    wait_gone(pid);
    // Nothing more to see once the watcher has caught up.
    assert_eq!(
        client.ok("plugins/refresh", json!({})),
        json!({"changed": null})
    );

    let uninstall = sandbox.run(&["uninstall", &id]);
    let done = Instant::now();
    assert_eq!(uninstall.code, 0, "{uninstall:#?}");
    let removed = store_change(&mut client, done, |p| lists(p, "removed", &id));
    assert_eq!(removed["installed"], json!([]), "{removed:#}");
    assert_eq!(client.ok("plugins/list", json!({})), json!([]));
    let event_subscription = client.ok("events/unsubscribe", json!({"subscription": subscription}));
    assert_eq!(event_subscription["removed"], true);

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}

/// A Node runtime whose `host.actions` render names its item after the call count, so two
/// renders of one descriptor differ; an invoke answers the item and input it was given.
const COUNTING_PANEL: &str = r#"
const readline = require("readline");
let calls = 0;
const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "initialize") {
    send({ id: msg.id, result: { name: "counting-panel", version: "1.0.0", protocolVersion: "1.0.0",
      commands: [{ name: "acts.panel" }], events: [] } });
  } else if (msg.method === "command/invoke") {
    const a = msg.params.args;
    calls += 1;
    if (a.context.operation === "render") {
      send({ id: msg.id, result: [{ id: `item-${calls}`, label: "Item", input: { n: calls } }] });
    } else {
      send({ id: msg.id, result: { invoked: a.context.actionId, input: a.input, session: a.context.sessionId, project: a.context.projectPath } });
    }
  }
}).on("close", () => process.exit(0));
"#;

#[test]
fn two_connections_render_one_host_actions_slot_and_each_invokes_its_own_item() {
    let sandbox = Sandbox::new();
    sandbox.write("panel/plugin.js", COUNTING_PANEL);
    sandbox.write(
        "panel/plugin.json",
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "counting-panel",
            "version": "1.0.0",
            "extensions": {"dev.codetwo": {
                "standardVersion": "1.2.0",
                "commands": [{"id": "acts.panel", "title": "Panel"}],
                "runtime": {"command": "node", "args": ["plugin.js"], "scopeSupport": ["user"]},
                "ui": [{"id": "panel", "slot": "host.actions", "label": "Panel", "command": "acts.panel"}]
            }}
        })
        .to_string(),
    );
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut first = socket_client(&socket);
    let mut second = socket_client(&socket);
    let id = first.ok(
        "plugins/install",
        json!({"source": sandbox.work.join("panel"), "trust": true, "enable": true}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ui = |operation: &str, item: Option<&str>, session: Option<&str>| {
        let mut params = json!({"id": id, "ui": "panel", "operation": operation});
        if let Some(item) = item {
            params["actionId"] = json!(item);
        }
        if let Some(session) = session {
            params["sessionId"] = json!(session);
        }
        params
    };
    let rendered = |client: &mut Client, session: Option<&str>| -> String {
        let result = client.ok("ui/invoke", ui("render", None, session));
        result["actions"][0]["id"].as_str().unwrap().to_owned()
    };
    let a = rendered(&mut first, None);
    let b = rendered(&mut second, None);
    assert_ne!(a, b, "the two renders differ");

    let invoked = first.ok("ui/invoke", ui("invoke", Some(&a), None));
    assert_eq!(invoked["invoked"], a.as_str(), "{invoked:#}");
    let invoked = second.ok("ui/invoke", ui("invoke", Some(&b), None));
    assert_eq!(invoked["invoked"], b.as_str(), "{invoked:#}");
    assert_eq!(
        invoked["input"]["n"].as_u64(),
        b.trim_start_matches("item-").parse().ok()
    );
    let crossed = first.call("ui/invoke", ui("invoke", Some(&b), None));
    assert_eq!(
        crossed["error"]["data"]["kind"], "unknown_action",
        "{crossed:#}"
    );

    // Within one connection, each sessionId has its own render too.
    let c = rendered(&mut first, Some("s2"));
    let invoked = first.ok("ui/invoke", ui("invoke", Some(&c), Some("s2")));
    assert_eq!(invoked["invoked"], c.as_str(), "{invoked:#}");
    assert_eq!(invoked["session"], "s2", "{invoked:#}");
    let other_session = first.call("ui/invoke", ui("invoke", Some(&c), None));
    assert_eq!(
        other_session["error"]["data"]["kind"], "unknown_action",
        "{other_session:#}"
    );
    let still = first.ok("ui/invoke", ui("invoke", Some(&a), None));
    assert_eq!(still["invoked"], a.as_str(), "{still:#}");

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}

/// Writes the counting host.actions bundle under `work/panel`.
pub(crate) fn counting_panel(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.write("panel/plugin.js", COUNTING_PANEL);
    sandbox.write(
        "panel/plugin.json",
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "counting-panel",
            "version": "1.0.0",
            "extensions": {"dev.codetwo": {
                "standardVersion": "1.2.0",
                "commands": [{"id": "acts.panel", "title": "Panel"}],
                "runtime": {"command": "node", "args": ["plugin.js"], "scopeSupport": ["user", "project"]},
                "ui": [{"id": "panel", "slot": "host.actions", "label": "Panel", "command": "acts.panel"}]
            }}
        })
        .to_string(),
    );
    sandbox.work.join("panel")
}

/// The first item a `--format json` render printed.
fn rendered_item(run: &crate::Run) -> String {
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()["result"]["actions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_cli_invokes_through_a_running_service_with_the_same_output_and_in_process_without_one() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    let panel = counting_panel(&sandbox);
    let install = sandbox.run(&["install", panel.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let panel = install.stdout.trim().to_owned();
    let source = pack("hello-runtime");
    let install = sandbox.run(&["install", source.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let hello = install.stdout.trim().to_owned();
    let status_args = json!({"cwd": repo}).to_string();
    let status = ["invoke", "hello.status", "--args", status_args.as_str()];
    let render = ["--format", "json", "invoke-ui", panel.as_str(), "panel"];
    let invoke_item = |item: &str, extra: &[&str]| {
        let mut args = vec!["--format", "json", "invoke-ui", panel.as_str(), "panel"];
        args.extend(["--operation", "invoke", "--action", item]);
        args.extend(extra);
        sandbox.run(&args)
    };

    // No service: every call is its own host, so an invoke renders the slot in its own
    // process first and replays only an item that render offers.
    let cold = sandbox.run(&status);
    assert_eq!(cold.code, 0, "{cold:#?}");
    let item = rendered_item(&sandbox.run(&render));
    let one_shot = invoke_item(&item, &[]);
    assert_eq!(one_shot.code, 0, "{one_shot:#?}");
    assert_eq!(one_shot.json()["result"]["invoked"], item.as_str());
    assert_eq!(one_shot.json()["result"]["input"], json!({"n": 1}));
    let not_offered = invoke_item("item-9", &[]);
    assert_eq!(not_offered.code, 1, "{not_offered:#?}");
    assert_eq!(not_offered.json()["error"]["kind"], "unknown_action");
    let failed_here = sandbox.run(&["--format", "json", "invoke", "nope.x"]);
    let failed_here_human = sandbox.run(&["invoke", "nope.x"]);
    let bad_args_here = sandbox.run(&["invoke", "hello.status", "--args", "{nope"]);

    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    assert_eq!(runtime_pid(&mut client, &hello), None);

    // Through the service: the same output, and the runtime stays warm in the service.
    let warm = sandbox.run(&status);
    assert_eq!(warm.code, 0, "{warm:#?}");
    assert_eq!(
        warm.stdout, cold.stdout,
        "the same output through the service"
    );
    let pid = runtime_pid(&mut client, &hello).expect("the CLI's invoke ran in the service");
    let again = sandbox.run(&[
        "--format",
        "json",
        "invoke",
        "hello.status",
        "--args",
        &status_args,
    ]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(runtime_pid(&mut client, &hello), Some(pid), "warm");
    let here = sandbox.run(&[
        "--format",
        "json",
        "invoke",
        "hello.status",
        "--args",
        &status_args,
        "--no-service",
    ]);
    assert_eq!(here.stdout, again.stdout, "--no-service prints the same");

    // A render survives the CLI call that made it; another call invokes its item.
    let item = rendered_item(&sandbox.run(&render));
    let invoked = invoke_item(&item, &[]);
    assert_eq!(invoked.code, 0, "{invoked:#?}");
    assert_eq!(invoked.json()["result"]["invoked"], item.as_str());
    // The CLI's renders are its own: a relay client does not see them; --no-service renders
    // in its own process and invokes only what that render offers.
    let relay = client.call(
        "ui/invoke",
        json!({"id": panel, "ui": "panel", "operation": "invoke", "actionId": item}),
    );
    assert_eq!(
        relay["error"]["data"]["kind"], "unknown_action",
        "{relay:#}"
    );
    let in_process = invoke_item("item-1", &["--no-service"]);
    assert_eq!(in_process.code, 0, "{in_process:#?}");
    assert_eq!(in_process.json()["result"]["input"], json!({"n": 1}));
    let in_process = invoke_item("item-9", &["--no-service"]);
    assert_eq!(in_process.code, 1, "{in_process:#?}");
    assert_eq!(in_process.json()["error"]["kind"], "unknown_action");

    // Failures: the same kind, message and exit code either way.
    let failed = sandbox.run(&["--format", "json", "invoke", "nope.x"]);
    assert_eq!(
        (failed.code, &failed.stdout),
        (failed_here.code, &failed_here.stdout)
    );
    assert_eq!(failed.json()["error"]["kind"], "unknown_command");
    let failed_human = sandbox.run(&["invoke", "nope.x"]);
    assert_eq!(
        (failed_human.code, &failed_human.stderr),
        (failed_here_human.code, &failed_here_human.stderr)
    );
    let bad_args = sandbox.run(&["invoke", "hello.status", "--args", "{nope"]);
    assert_eq!(
        (bad_args.code, &bad_args.stderr),
        (bad_args_here.code, &bad_args_here.stderr)
    );
    assert_eq!(bad_args.code, 2);

    // A project realm named relative to the CLI's directory is the same realm in the service.
    let project = sandbox.run_in(
        &repo,
        &[
            "--format",
            "json",
            "invoke-ui",
            &panel,
            "panel",
            "--project",
            ".",
        ],
    );
    let item = rendered_item(&project);
    let invoked = sandbox.run_in(
        &repo,
        &[
            "--format",
            "json",
            "invoke-ui",
            &panel,
            "panel",
            "--project",
            ".",
            "--operation",
            "invoke",
            "--action",
            &item,
        ],
    );
    assert_eq!(invoked.code, 0, "{invoked:#?}");
    assert_eq!(
        invoked.json()["result"]["project"],
        json!(std::fs::canonicalize(&repo).unwrap()),
        "{invoked:#?}"
    );

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
    wait_gone(pid);
    // The service is gone: the CLI runs in-process again.
    let after = sandbox.run(&status);
    assert_eq!((after.code, &after.stdout), (0, &cold.stdout));
}
