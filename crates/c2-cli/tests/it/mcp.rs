//! `c2-plugins mcp` and `mcp run` end to end, with the real MCP filesystem server from npm
//! (`@modelcontextprotocol/server-filesystem`, installed globally by .ci/run): a bundle without
//! a version whose mcp.json uses every Agent Plugins variant is installed, listed, and its stdio
//! servers (one through `npx`, one through a `./` launcher) complete a real MCP `initialize`,
//! `tools/list` and `tools/call` through `mcp run`. `PLUGIN_DATA` survives a reinstall of new
//! content and is removed on uninstall.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Sandbox;

/// Generous: npx and Node start slowly on a loaded machine.
const ANSWER_WITHIN: Duration = Duration::from_secs(90);

const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "fs-tools",
  "description": "The MCP filesystem server, scoped to the plugin's data directory.",
  "extensions": { "dev.codetwo": { "standardVersion": "1.2.0" } }
}"#;

const MCP: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": {
    "files": {
      "type": "stdio",
      "command": "npx",
      "args": ["--no-install", "@modelcontextprotocol/server-filesystem", "${PLUGIN_DATA}"],
      "env": { "FS_TOOLS_ROOT": "${PLUGIN_ROOT}" },
      "cwd": "${PLUGIN_DATA}"
    },
    "files-local": {
      "type": "stdio",
      "command": "./bin/launch",
      "args": ["${PLUGIN_DATA}", "${PLUGIN_ROOT}/docs"],
      "cwd": "./docs"
    },
    "remote": { "type": "streamable-http", "url": "https://mcp.example.com/mcp", "headers": { "X-Tenant": "demo" } },
    "legacy": { "type": "sse", "url": "http://localhost:9/sse" }
  }
}"#;

const LAUNCHER: &str = "#!/bin/sh\n# Runs the globally installed server; its arguments are the allowed directories.\nexec mcp-server-filesystem \"$@\"\n";

/// Writes the fs-tools bundle (every mcp.json variant) under `work` and returns its directory.
pub(crate) fn write_bundle(sandbox: &Sandbox, readme: &str) -> PathBuf {
    sandbox.write("fs-tools/plugin.json", MANIFEST);
    sandbox.write("fs-tools/mcp.json", MCP);
    sandbox.write("fs-tools/docs/README.md", readme);
    let launcher = sandbox.write("fs-tools/bin/launch", LAUNCHER);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    sandbox.work.join("fs-tools")
}

/// A line-oriented MCP client on a running `c2-plugins mcp run`.
struct Client {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Client {
    fn start(sandbox: &Sandbox, target: &str) -> Self {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test drives the built binary as an MCP client would"
        )]
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
            .args(["mcp", "run", target])
            .current_dir(&sandbox.work)
            .env("HOME", &sandbox.home)
            .env("C2_PLUGINS_DIR", &sandbox.plugins)
            .env("NO_COLOR", "1")
            .env("npm_config_update_notifier", "false")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The response to request `id` (notifications in between are skipped).
    fn response(&mut self, id: u64) -> Value {
        loop {
            let line = self.lines.recv_timeout(ANSWER_WITHIN).unwrap_or_else(|e| {
                let _ = self.child.kill();
                let stderr = self.child.stderr.take().map(|mut s| {
                    let mut text = String::new();
                    std::io::Read::read_to_string(&mut s, &mut text).ok();
                    text
                });
                panic!("no answer to request {id} ({e}); stderr: {stderr:?}")
            });
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only MCP messages ({e}): {line:?}"));
            if value["id"] == json!(id) {
                return value;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.response(id);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// `initialize` then `notifications/initialized`; returns the server's info.
    fn initialize(&mut self) -> Value {
        let result = self.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "c2-plugins-test", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    /// Closes stdin and waits for a clean exit.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let output = self.child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        stderr
    }
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_real_mcp_server_runs_through_mcp_run_with_plugin_data_kept_across_reinstall() {
    let sandbox = Sandbox::new();
    let dir = write_bundle(&sandbox, "first edition\n");
    let install = sandbox.run(&["install", dir.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();

    // The listing: every variant, nothing started, stdio resolved.
    let listed = sandbox.run(&["mcp", "--format", "json"]).json();
    let rows = listed["result"].as_array().unwrap().clone();
    let status: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["server"].as_str().unwrap(),
                r["transport"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("files", "stdio", "supported"),
            ("files-local", "stdio", "supported"),
            ("remote", "streamable-http", "supported"),
            ("legacy", "sse", "supported"),
        ]
    );
    let data = sandbox.plugins.join(".data").join(&id).join("mcp");
    assert!(
        !data.exists(),
        "a listing writes nothing; the launch makes PLUGIN_DATA"
    );
    let data_real = std::fs::canonicalize(&sandbox.plugins)
        .unwrap()
        .join(".data")
        .join(&id)
        .join("mcp");
    let files = &rows[0]["launch"];
    assert_eq!(
        files["args"],
        json!([
            "--no-install",
            "@modelcontextprotocol/server-filesystem",
            data_real
        ])
    );
    assert_eq!(
        files["env"],
        json!(["FS_TOOLS_ROOT", "PLUGIN_ROOT", "PLUGIN_DATA"])
    );
    assert!(files["envValues"].is_null(), "values only with -v");
    assert_eq!(rows[2]["launch"]["headers"]["X-Tenant"], "demo");
    let human = sandbox.run(&["mcp", "-v"]);
    assert!(human.stdout.contains("PLUGIN_DATA="), "{human:#?}");

    // Through npx: initialize, tools/list, tools/call writing into PLUGIN_DATA.
    let mut client = Client::start(&sandbox, &format!("{id}/files"));
    let init = client.initialize();
    assert_eq!(
        init["serverInfo"]["name"], "secure-filesystem-server",
        "{init}"
    );
    let tools = client.request(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"write_file") && names.contains(&"list_allowed_directories"),
        "{names:?}"
    );
    let note = data_real.join("note.txt");
    let wrote = client.request(
        3,
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": note, "content": "kept across updates"}}),
    );
    assert_ne!(wrote["isError"], json!(true), "{wrote}");
    let allowed = client.request(
        4,
        "tools/call",
        json!({"name": "list_allowed_directories", "arguments": {}}),
    );
    assert!(
        text_of(&allowed).contains(data_real.to_str().unwrap()),
        "{allowed}"
    );
    let stderr = client.finish();
    assert!(stderr.contains("started (pid"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "kept across updates"
    );

    // Through the ./ launcher, in ./docs: reads a file the bundle ships.
    let mut client = Client::start(&sandbox, &format!("{id}/files-local"));
    client.initialize();
    let readme =
        std::fs::canonicalize(sandbox.plugins.join(&id).join("bundle/docs/README.md")).unwrap();
    let read = client.request(
        2,
        "tools/call",
        json!({"name": "read_text_file", "arguments": {"path": readme}}),
    );
    assert_eq!(text_of(&read), "first edition\n", "{read}");
    client.finish();

    // A remote server has nothing to run.
    let remote = sandbox.run(&["--format", "json", "mcp", "run", &format!("{id}/remote")]);
    assert_eq!(remote.code, 1, "{remote:#?}");
    assert!(
        remote.stdout.is_empty(),
        "stdout belongs to the MCP client: {remote:#?}"
    );
    assert!(
        remote.stderr.contains("is a remote streamable-http server"),
        "{remote:#?}"
    );

    // New content from the same source: untrusted again, PLUGIN_DATA kept.
    write_bundle(&sandbox, "second edition\n");
    let again = sandbox.run(&["install", dir.to_str().unwrap(), "--enable"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(again.stdout.trim(), id);
    let listed = sandbox.run(&["mcp", "--format", "json"]).json();
    assert_eq!(listed["result"][0]["status"], "not_trusted");
    assert!(listed["result"][0]["launch"].is_null());
    let refused = sandbox.run(&["mcp", "run", &format!("{id}/files")]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("trust"), "{refused:#?}");
    assert_eq!(sandbox.run(&["trust", &id]).code, 0);
    let mut client = Client::start(&sandbox, &format!("{id}/files"));
    client.initialize();
    let read = client.request(
        2,
        "tools/call",
        json!({"name": "read_text_file", "arguments": {"path": note}}),
    );
    assert_eq!(text_of(&read), "kept across updates", "{read}");
    client.finish();

    // Uninstall removes PLUGIN_DATA.
    assert_eq!(sandbox.run(&["uninstall", &id]).code, 0);
    assert!(!data.exists(), "PLUGIN_DATA is removed on uninstall");
    let listed = sandbox.run(&["mcp", "--format", "json"]).json();
    assert_eq!(listed["result"], json!([]));
}

#[test]
fn mcp_run_refuses_a_malformed_target_and_an_unknown_server_on_stderr() {
    let sandbox = Sandbox::new();
    let dir = write_bundle(&sandbox, "x\n");
    let install = sandbox.run(&["install", dir.to_str().unwrap(), "--trust", "--enable"]);
    let id = install.stdout.trim().to_owned();
    let malformed = sandbox.run(&["mcp", "run", "no-slash"]);
    assert_eq!(malformed.code, 1, "{malformed:#?}");
    assert!(malformed.stderr.contains("<ID>/<SERVER>"), "{malformed:#?}");
    let unknown = sandbox.run(&["--format", "json", "mcp", "run", &format!("{id}/nope")]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stdout.is_empty());
    assert!(
        unknown.stderr.contains("has no MCP server `nope`"),
        "{unknown:#?}"
    );
}

#[test]
fn mcp_listing_escapes_control_characters_from_the_bundles_mcp_json() {
    let sandbox = Sandbox::new();
    sandbox.write("evil/plugin.json", &MANIFEST.replace("fs-tools", "evil"));
    sandbox.write(
        "evil/mcp.json",
        r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": {
    "clear\u001b[2J": {
      "type": "stdio",
      "command": "sh",
      "args": ["-c", "exit 0", "\u009b31m"],
      "env": { "NOTE": "line\nc2-plugins: trusted evil-123" }
    },
    "title": { "type": "streamable-http", "url": "https://mcp.example.com/\u001b]0;owned\u0007" }
  }
}"#,
    );
    let dir = sandbox.work.join("evil");
    let install = sandbox.run(&["install", dir.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let listed = sandbox.run(&["-v", "mcp"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let out = &listed.stdout;
    for raw in ['\u{1b}', '\u{9b}', '\u{7}'] {
        assert!(
            !out.contains(raw),
            "raw {raw:?} reached the terminal: {out:?}"
        );
    }
    assert!(out.contains(r"clear\u{1b}[2J"), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("c2-plugins: trusted")),
        "a bundle's newline forged a host line: {out}"
    );
    // JSON keeps the exact text.
    let json = sandbox.run(&["--format", "json", "-v", "mcp"]);
    let rows: Value = serde_json::from_str(&json.stdout).unwrap();
    let rows = if rows.is_array() {
        rows
    } else {
        rows["result"].clone()
    };
    assert!(
        rows.as_array()
            .unwrap_or_else(|| panic!("{rows:#}"))
            .iter()
            .any(|r| r["server"] == "clear\u{1b}[2J"),
        "{rows:#}"
    );
}

/// Runs `c2-plugins ARGS` with `input` on stdin, then closed.
fn run_with_input(sandbox: &Sandbox, args: &[&str], input: &[u8]) -> crate::Run {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test drives the built binary as an MCP client would"
    )]
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
        .args(args)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The bridge may end (and close the pipe) before all of it is read.
    let _ = stdin.write_all(input);
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    crate::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Reads one request, says why it fails on stderr and exits 4.
const FAILING_SERVER: &str =
    "#!/bin/sh\necho \"server pid $$\" >&2\nread line\necho \"cannot serve: $line\" >&2\nexit 4\n";

#[test]
fn mcp_run_fails_when_its_server_fails_after_the_input_ended_and_shows_its_stderr_and_pid() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "failing/plugin.json",
        &MANIFEST.replace("fs-tools", "failing"),
    );
    sandbox.write(
        "failing/mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {"local": {"type": "stdio", "command": "./bin/server"}}}"#,
    );
    let server = sandbox.write("failing/bin/server", FAILING_SERVER);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let install = sandbox.run(&["install", "failing", "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    // The usual smoke test: one piped request, then the input ends.
    for _ in 0..3 {
        let run = run_with_input(
            &sandbox,
            &["mcp", "run", &format!("{id}/local")],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        );
        assert_eq!(run.code, 1, "{run:#?}");
        assert!(run.stdout.is_empty(), "{run:#?}");
        assert!(
            run.stderr.contains("exit code 4") || run.stderr.contains("code 4"),
            "{run:#?}"
        );
        assert!(run.stderr.contains("  | cannot serve: {"), "{run:#?}");
        let started = run
            .stderr
            .split("started (pid ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap_or_else(|| panic!("{run:#?}"));
        assert!(
            run.stderr.contains(&format!("  | server pid {started}")),
            "the pid printed is the server's: {run:#?}"
        );
    }
}

#[test]
fn the_mcp_listing_writes_nothing_and_uninstall_leaves_no_data_directory() {
    let sandbox = Sandbox::new();
    sandbox.write("quiet/plugin.json", &MANIFEST.replace("fs-tools", "quiet"));
    sandbox.write(
        "quiet/mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {"local": {"type": "stdio", "command": "./bin/server",
                                     "args": ["${PLUGIN_DATA}"], "cwd": "${PLUGIN_DATA}/work"}}}"#,
    );
    let server = sandbox.write("quiet/bin/server", "#!/bin/sh\npwd\ncat >/dev/null\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let install = sandbox.run(&["install", "quiet", "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    let data = sandbox.plugins.join(".data").join(&id);
    let listed = sandbox.run(&["mcp", "--format", "json"]).json();
    assert_eq!(listed["result"][0]["status"], "supported", "{listed:#}");
    let expected = std::fs::canonicalize(&sandbox.plugins)
        .unwrap()
        .join(".data")
        .join(&id)
        .join("mcp");
    assert_eq!(
        listed["result"][0]["launch"]["pluginData"],
        expected.to_str().unwrap()
    );
    assert!(!data.exists(), "the listing wrote {}", data.display());
    assert_eq!(sandbox.run(&["mcp"]).code, 0);
    assert!(!data.exists(), "the listing wrote {}", data.display());
    // Launching makes PLUGIN_DATA and its cwd; uninstall leaves no empty `.data/<id>/`.
    let run = run_with_input(&sandbox, &["mcp", "run", &format!("{id}/local")], b"");
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout.trim(), expected.join("work").to_str().unwrap());
    assert!(data.join("mcp/work").is_dir());
    assert_eq!(sandbox.run(&["uninstall", &id]).code, 0);
    assert!(!data.exists(), "uninstall left {}", data.display());
}
