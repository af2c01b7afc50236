//! The plugin SDKs of sdks/ under the real host: a fixture plugin on each SDK (the TypeScript
//! one on Node and on Bun, the Python one) passes `c2-plugins check` (exact confirmation, stdout
//! kept for frames, exit on stdin EOF) and is then driven through a real `c2-plugins serve` on its
//! socket: cold activation, argument errors, `command/call` of `git.status`, events both ways, a
//! plugin error with `data`, 64 concurrent calls, a 4 MiB argument, stdout pollution kept off
//! the protocol, and no process left after unload. A drifted confirmation is refused, and the
//! SDK copies that bundles carry are the SDK sources.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Sandbox, git_repo};

/// How long anything may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Each SDK's single-file source and the copies the example packs carry of it (`new` writes
/// the source itself, embedded at build time).
const VENDORED: [(&str, &[&str]); 2] = [
    (
        "sdks/typescript/src/index.js",
        &["packs/hello-runtime/c2-plugin-sdk.mjs"],
    ),
    (
        "sdks/python/src/c2_plugin_sdk/__init__.py",
        &["packs/hello-python/c2_plugin_sdk.py"],
    ),
];

#[test]
fn the_sdk_copies_in_packs_and_templates_are_the_sdk_sources() {
    for (source, copies) in VENDORED {
        let expected = read(source);
        for copy in copies {
            assert!(
                read(copy) == expected,
                "{copy} differs from {source}: copy the source over it (`cp {source} {copy}`)"
            );
        }
    }
    // The versions name the protocol they speak.
    let package: Value = serde_json::from_str(&read("sdks/typescript/package.json")).unwrap();
    assert_eq!(package["c2"]["protocolVersion"], "1.0.0");
    assert!(
        read("sdks/typescript/src/index.js").contains("export const protocolVersion = \"1.0.0\";")
    );
    assert!(
        read("sdks/python/src/c2_plugin_sdk/__init__.py").contains("PROTOCOL_VERSION = \"1.0.0\"")
    );
}

/// An SDK under test: how its fixture runtime is written and started.
#[derive(Clone, Copy)]
enum Sdk {
    /// The TypeScript SDK on Node.
    TypeScript,
    /// The same runtime, unchanged, on Bun.
    Bun,
    Python,
}

const TS_FIXTURE: &str = r#"import { definePlugin, PluginError } from "./c2-plugin-sdk.mjs";
let saw = 0;
let inFlight = 0;
let peak = 0;
const waiting = [];
definePlugin({ manifestPath: process.env.SDK_FIXTURE_MANIFEST || "plugin.json" })
  .command("sdk.info", (args, ctx) => ({ pid: process.pid, dataDir: ctx.dataDir, projectPath: ctx.projectPath }))
  .command("sdk.echo", (args) => ({ length: args.text.length }))
  .command("sdk.status", async (args, ctx) => ctx.call("git.status", { cwd: args.cwd ?? "." }))
  .command("sdk.fail", () => { throw new PluginError("refused on purpose", { data: { reason: "test", n: 42 } }); })
  .command("sdk.noisy", () => {
    console.log("noise from console.log");
    process.stdout.write("noise from process.stdout.write\n");
    return { quiet: true };
  })
  .command("sdk.gather", async (args) => {
    const n = args.n ?? 1;
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    if (inFlight >= n) for (const release of waiting.splice(0)) release();
    else await new Promise((resolve) => waiting.push(resolve));
    inFlight -= 1;
    return { peak };
  })
  .command("sdk.ping", (args, ctx) => { ctx.emit("sdk.pong", { saw }); return { saw }; })
  .on("skills/changed", (payload, ctx) => { saw += 1; ctx.emit("sdk.saw", { saw }); })
  .run();
"#;

const PY_FIXTURE: &str = r#"import asyncio, os, sys
from c2_plugin_sdk import Plugin, PluginError

plugin = Plugin(os.environ.get("SDK_FIXTURE_MANIFEST", "plugin.json"))
state = {"saw": 0, "in_flight": 0, "peak": 0}
released = asyncio.Event()

@plugin.command("sdk.info")
def info(args, ctx):
    return {"pid": os.getpid(), "dataDir": ctx.data_dir, "projectPath": ctx.project_path}

@plugin.command("sdk.echo")
def echo(args, ctx):
    return {"length": len(args["text"])}

@plugin.command("sdk.status")
async def status(args, ctx):
    return await ctx.call("git.status", {"cwd": args.get("cwd", ".")})

@plugin.command("sdk.fail")
def fail(args, ctx):
    raise PluginError("refused on purpose", data={"reason": "test", "n": 42})

@plugin.command("sdk.noisy")
def noisy(args, ctx):
    print("noise from print")
    os.write(1, b"noise from file descriptor 1\n")
    return {"quiet": True}

@plugin.command("sdk.gather")
async def gather(args, ctx):
    state["in_flight"] += 1
    state["peak"] = max(state["peak"], state["in_flight"])
    if state["in_flight"] >= args.get("n", 1):
        released.set()
    await released.wait()
    state["in_flight"] -= 1
    return {"peak": state["peak"]}

@plugin.command("sdk.ping")
def ping(args, ctx):
    ctx.emit("sdk.pong", {"saw": state["saw"]})
    return {"saw": state["saw"]}

@plugin.on("skills/changed")
def saw(payload, ctx):
    state["saw"] += 1
    ctx.emit("sdk.saw", {"saw": state["saw"]})

plugin.run()
"#;

impl Sdk {
    fn name(self) -> &'static str {
        match self {
            Sdk::TypeScript => "sdk-ts",
            Sdk::Bun => "sdk-bun",
            Sdk::Python => "sdk-py",
        }
    }

    /// Writes the fixture bundle at `work/<dir>`; `schema_drift` makes the runtime confirm a
    /// stale copy of the manifest whose `sdk.echo` schema differs.
    fn bundle(self, sandbox: &Sandbox, dir: &str, schema_drift: bool) -> PathBuf {
        let (command, args, sdk_file, sdk_source, entry, fixture) = match self {
            Sdk::TypeScript | Sdk::Bun => (
                if matches!(self, Sdk::Bun) {
                    "bun"
                } else {
                    "node"
                },
                json!(["plugin.mjs"]),
                "c2-plugin-sdk.mjs",
                "sdks/typescript/src/index.js",
                "plugin.mjs",
                TS_FIXTURE,
            ),
            Sdk::Python => (
                "python3",
                json!(["-B", "-u", "plugin.py"]),
                "c2_plugin_sdk.py",
                "sdks/python/src/c2_plugin_sdk/__init__.py",
                "plugin.py",
                PY_FIXTURE,
            ),
        };
        let object = json!({"type": "object"});
        let echo = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false,
        });
        let commands = |echo: &Value| {
            [
                ("sdk.info", object.clone()),
                ("sdk.echo", echo.clone()),
                (
                    "sdk.status",
                    json!({"type": "object", "properties": {"cwd": {"type": "string"}}}),
                ),
                ("sdk.fail", object.clone()),
                ("sdk.noisy", object.clone()),
                (
                    "sdk.gather",
                    json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}),
                ),
                ("sdk.ping", object.clone()),
            ]
            .iter()
            .map(|(id, schema)| {
                json!({"id": id, "title": id, "description": format!("{id} of the SDK fixture"), "argsSchema": schema})
            })
            .collect::<Vec<_>>()
        };
        let manifest = |echo: &Value, env: Value| {
            json!({
                "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
                "name": self.name(),
                "version": "1.0.0",
                "extensions": {"dev.codetwo": {
                    "standardVersion": "1.2.0",
                    "commands": commands(echo),
                    "runtime": {
                        "protocol": "1.0.0",
                        "command": command,
                        "args": args,
                        "env": env,
                        "scopeSupport": ["user"],
                    },
                }},
            })
        };
        let env = if schema_drift {
            json!({"SDK_FIXTURE_MANIFEST": "stale.json"})
        } else {
            json!({})
        };
        sandbox.write(
            &format!("{dir}/plugin.json"),
            &serde_json::to_string_pretty(&manifest(&echo, env)).unwrap(),
        );
        if schema_drift {
            let mut stale_echo = echo.clone();
            stale_echo["properties"]["text"]["maxLength"] = json!(10);
            sandbox.write(
                &format!("{dir}/stale.json"),
                &manifest(&stale_echo, json!({})).to_string(),
            );
        }
        sandbox.write(&format!("{dir}/{sdk_file}"), &read(sdk_source));
        sandbox.write(&format!("{dir}/{entry}"), fixture);
        sandbox.work.join(dir)
    }
}

/// A relay client on the service's socket: one reader thread hands over each line.
struct Client {
    stream: UnixStream,
    lines: Receiver<Value>,
    early: HashMap<u64, Value>,
    notes: Vec<Value>,
    next_id: u64,
}

impl Client {
    fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket).unwrap();
        let reader = stream.try_clone().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the relay wrote a line that is not JSON ({e})"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut client = Self {
            stream,
            lines,
            early: HashMap::new(),
            notes: Vec::new(),
            next_id: 1,
        };
        client.ok(
            "relay/initialize",
            json!({"protocolVersion": "2.0.0", "client": {"name": "sdk-it"}}),
        );
        client
    }

    fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .unwrap();
        line.push(b'\n');
        self.stream.write_all(&line).unwrap();
        id
    }

    fn keep(&mut self, message: Value) {
        match message["id"].as_u64() {
            Some(id) => {
                self.early.insert(id, message);
            }
            None => self.notes.push(message),
        }
    }

    fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(response) = self.early.remove(&id) {
                return response;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no response to request {id}: {e}"));
            self.keep(message);
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response(id)
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params.clone());
        assert!(
            response.get("error").is_none(),
            "{method} {params} failed: {response:#}"
        );
        response["result"].clone()
    }

    /// The next `events/event` notification named `name`.
    fn event(&mut self, name: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(at) = self
                .notes
                .iter()
                .position(|n| n["method"] == "events/event" && n["params"]["name"] == name)
            {
                return self.notes.remove(at)["params"]["payload"].clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no {name} event: {e}"));
            self.keep(message);
        }
    }
}

/// `c2-plugins serve --socket` in the sandbox, waited for until its socket answers.
fn serve(sandbox: &Sandbox, log: &str) -> (Child, PathBuf) {
    let log = std::fs::File::create(sandbox.work.join(log)).unwrap();
    #[expect(
        clippy::disallowed_methods,
        reason = "these tests run the built service as a frontend would"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    let child = command
        .args(["serve", "--socket"])
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let socket = sandbox.plugins.join(".serve.sock");
    let deadline = Instant::now() + PATIENCE;
    while UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "the service never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, socket)
}

/// A process is gone when /proc no longer has it or it is a zombie waiting for its reaper.
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

fn wait_gone(pid: u64) {
    let deadline = Instant::now() + PATIENCE;
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "plugin process {pid} still runs");
}

/// SIGTERM to the service, waited for until it exits.
fn stop(mut service: Child) {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test signals the service it started, as a service manager would"
    )]
    let status = std::process::Command::new("kill")
        .args(["-TERM", &service.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + PATIENCE;
    while service.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the service did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check(sandbox: &Sandbox, dir: &Path) -> Value {
    let run = sandbox.run(&["check", dir.to_str().unwrap(), "--format", "json"]);
    let report = run.json();
    assert!(report["checks"].is_array(), "{run:#?}");
    report
}

fn check_item<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {report:#}"))
}

/// The whole end-to-end run for one SDK.
fn exercise(sdk: Sdk) {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    std::fs::write(repo.join("new.txt"), "x").unwrap();
    let dir = sdk.bundle(&sandbox, "fixture", false);

    // `check` runs it as the host would: exact confirmation, every command that takes `{}`
    // (sdk.noisy among them: its console.log/print must not reach stdout), exit on stdin EOF.
    let report = check(&sandbox, &dir);
    assert_eq!(report["ok"], true, "{report:#}");
    for name in ["commands", "stdout", "exit on stdin EOF"] {
        assert_eq!(check_item(&report, name)["pass"], true, "{report:#}");
    }
    assert!(
        check_item(&report, "invoke sdk.noisy")["detail"]
            .as_str()
            .unwrap()
            .contains("quiet"),
        "{report:#}"
    );

    // A runtime that confirms a schema other than the manifest's is refused.
    let drifted = sdk.bundle(&sandbox, "drifted", true);
    let report = check(&sandbox, &drifted);
    assert_eq!(report["ok"], false, "{report:#}");
    let commands = check_item(&report, "commands");
    assert_eq!(commands["pass"], false, "{report:#}");
    assert!(
        commands["detail"].as_str().unwrap().contains("sdk.echo"),
        "{report:#}"
    );

    let (service, socket) = serve(&sandbox, "serve.log");
    let mut client = Client::connect(&socket);
    let installed = client.ok(
        "plugins/install",
        json!({"source": dir, "trust": true, "enable": true}),
    );
    let id = installed["id"].as_str().unwrap().to_owned();
    assert_eq!(
        client.ok("plugins/runtimePid", json!({"id": id}))["pid"],
        Value::Null,
        "installing started nothing"
    );
    let invoke = |client: &mut Client, command: &str, args: Value| {
        client.call("command/invoke", json!({"command": command, "args": args}))
    };

    // Cold activation: the first call starts the runtime, which knows its data directory.
    let info = invoke(&mut client, "sdk.info", json!({}));
    let pid = info["result"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("{info:#}"));
    assert!(info["result"]["dataDir"].is_string(), "{info:#}");
    assert_eq!(
        client.ok("plugins/runtimePid", json!({"id": id}))["pid"],
        pid
    );

    // Argument errors are the SDK's -32602, naming the path, before the handler runs.
    for (args, path) in [
        (json!({"text": 5}), "/text"),
        (json!({"text": "a", "extra": 1}), "/extra"),
    ] {
        let refused = invoke(&mut client, "sdk.echo", args);
        assert_eq!(
            refused["error"]["data"]["pluginError"]["code"], -32602,
            "{refused:#}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("`{path}`")),
            "{refused:#}"
        );
        let violations = &refused["error"]["data"]["pluginError"]["data"]["violations"];
        assert_eq!(violations[0]["instancePath"], path, "{refused:#}");
    }

    // command/call of git.status through the host.
    let status = invoke(&mut client, "sdk.status", json!({"cwd": repo}));
    assert_eq!(status["result"]["branch"], "main", "{status:#}");
    assert_eq!(
        status["result"]["files"],
        json!([{"path": "new.txt", "status": "??"}]),
        "{status:#}"
    );

    // A plugin error keeps its code and data.
    let failed = invoke(&mut client, "sdk.fail", json!({}));
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused on purpose"),
        "{failed:#}"
    );
    assert_eq!(
        failed["error"]["data"]["pluginError"],
        json!({"code": -32000, "data": {"reason": "test", "n": 42}}),
        "{failed:#}"
    );

    // Stdout pollution is kept off the protocol: the call answers and the runtime stays.
    let noisy = invoke(&mut client, "sdk.noisy", json!({}));
    assert_eq!(noisy["result"], json!({"quiet": true}), "{noisy:#}");

    // Events both ways: a host event reaches the subscription, the plugin's own reach the bus.
    client.ok("events/subscribe", json!({"event": "sdk.saw"}));
    client.ok("events/subscribe", json!({"event": "sdk.pong"}));
    client.ok(
        "events/publish",
        json!({"name": "skills/changed", "payload": null}),
    );
    assert_eq!(client.event("sdk.saw"), json!({"saw": 1}));
    let ping = invoke(&mut client, "sdk.ping", json!({}));
    assert_eq!(ping["result"], json!({"saw": 1}), "{ping:#}");
    assert_eq!(client.event("sdk.pong"), json!({"saw": 1}));

    // A 4 MiB argument.
    let text = "x".repeat(4 * 1024 * 1024);
    let echoed = invoke(&mut client, "sdk.echo", json!({"text": text}));
    assert_eq!(echoed["result"]["length"], text.len(), "{echoed:#}");

    // 64 concurrent calls, 16 on each of 4 connections: each waits until all 64 are running.
    let mut clients: Vec<Client> = (0..4).map(|_| Client::connect(&socket)).collect();
    let mut started = Vec::new();
    for (n, connection) in clients.iter_mut().enumerate() {
        for _ in 0..16 {
            let id = connection.start(
                "command/invoke",
                json!({"command": "sdk.gather", "args": {"n": 64}}),
            );
            started.push((n, id));
        }
    }
    for (n, id) in started {
        let answer = clients[n].response(id);
        assert_eq!(answer["result"]["peak"], 64, "{answer:#}");
    }
    assert_eq!(
        client.ok("plugins/runtimePid", json!({"id": id}))["pid"],
        pid,
        "every call went to the one warm runtime"
    );

    // Unload: disabling the bundle stops its process, and nothing is left.
    client.ok("plugins/disable", json!({"id": id}));
    wait_gone(pid);
    assert_eq!(
        client.ok("plugins/runtimePid", json!({"id": id}))["pid"],
        Value::Null
    );
    drop(clients);
    drop(client);
    stop(service);
    assert!(!alive(pid));
}

#[test]
fn the_typescript_sdk_under_the_real_host() {
    exercise(Sdk::TypeScript);
}

/// Bun is installed by .ci/run (`npm install -g bun`), as node and python3 are.
#[test]
fn the_typescript_sdk_on_bun_under_the_real_host() {
    exercise(Sdk::Bun);
}

#[test]
fn the_python_sdk_under_the_real_host() {
    exercise(Sdk::Python);
}
