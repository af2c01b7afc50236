//! `c2-plugins lsp`: a plugin's language server bridged to the CLI's stdio.

use std::io::Write;
use std::process::Stdio;

use crate::Sandbox;

/// A language server in Python: answers `initialize` with its working directory.
pub(crate) const SERVER: &str = r#"#!/usr/bin/env python3
import json, os, sys
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
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
while True:
    message = read()
    if message is None:
        break
    body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"cwd": os.getcwd()}}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
"#;

pub(crate) fn frame(body: &str) -> Vec<u8> {
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

#[test]
fn lsp_bridges_the_active_plugins_server_in_the_project_root() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "ls/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "zig-ls", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "languageServers": [{"id": "echo", "languages": ["Zig"], "command": "bin/server"}]}}}"#,
    );
    let server = sandbox.write("ls/bin/server", SERVER);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let installed = sandbox.run(&["install", "ls", "--trust", "--enable"]);
    assert_eq!(installed.code, 0, "{installed:#?}");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();

    #[expect(
        clippy::disallowed_methods,
        reason = "the test drives the built binary as an editor would"
    )]
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
        .args(["lsp", "zig", "--project", project.to_str().unwrap()])
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&frame(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
        ))
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let canonical = std::fs::canonicalize(&project).unwrap();
    assert!(stdout.starts_with("Content-Length: "), "{stdout:?}");
    assert!(
        stdout.contains(&format!("\"cwd\": \"{}\"", canonical.display())),
        "{stdout:?}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn lsp_for_a_language_no_plugin_provides_fails_on_stderr_only() {
    let sandbox = Sandbox::new();
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    let run = sandbox.run(&[
        "--format",
        "json",
        "lsp",
        "cobol",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stdout.is_empty(),
        "stdout belongs to the editor: {run:#?}"
    );
    assert!(run.stderr.contains("cobol"), "{run:#?}");
}

/// A bundle whose one language server is pylsp (python-lsp-server from PyPI, installed by
/// .ci/run) started as `python3 -m pylsp` with `args`.
fn pylsp_bundle(sandbox: &Sandbox, dir: &str, name: &str, language: &str, args: &[&str]) {
    let mut all = vec!["-m", "pylsp"];
    all.extend_from_slice(args);
    let manifest = serde_json::json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name, "version": "1.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
            "languageServers": [{"id": "pylsp", "languages": [language], "command": "python3", "args": all}]}}
    });
    sandbox.write(&format!("{dir}/plugin.json"), &manifest.to_string());
}

/// A bundle with the Python fixture server above for `languages`.
pub(crate) fn fixture_bundle(sandbox: &Sandbox, dir: &str, name: &str, languages: &[&str]) {
    let manifest = serde_json::json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name, "version": "1.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
            "languageServers": [{"id": "echo", "languages": languages, "command": "bin/server"}]}}
    });
    sandbox.write(&format!("{dir}/plugin.json"), &manifest.to_string());
    let server = sandbox.write(&format!("{dir}/bin/server"), SERVER);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub(crate) fn install(sandbox: &Sandbox, dir: &str) -> String {
    let installed = sandbox.run(&["install", dir, "--trust", "--enable"]);
    assert_eq!(installed.code, 0, "{installed:#?}");
    installed.stdout.trim().to_owned()
}

/// What an editor session through `c2-plugins lsp` produced.
#[derive(Debug)]
struct Session {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Session {
    /// The bodies the editor received, parsed (the bridge writes only `Content-Length`).
    fn messages(&self) -> Vec<serde_json::Value> {
        let mut rest = &self.stdout[..];
        let mut out = Vec::new();
        while !rest.is_empty() {
            let text = std::str::from_utf8(rest)
                .unwrap_or_else(|e| std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap());
            let header_end = text.find("\r\n\r\n").expect("a complete header");
            let len: usize = text[..header_end]
                .strip_prefix("Content-Length: ")
                .expect("only a length header")
                .parse()
                .unwrap();
            let body = &rest[header_end + 4..header_end + 4 + len];
            out.push(serde_json::from_slice(body).unwrap());
            rest = &rest[header_end + 4 + len..];
        }
        out
    }
}

/// Runs `c2-plugins lsp LANGUAGE --project PROJECT` with `input` on stdin (written from a
/// thread, then closed) and waits for it, bounded.
fn session(
    sandbox: &Sandbox,
    language: &str,
    project: &std::path::Path,
    input: Vec<u8>,
) -> Session {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test drives the built binary as an editor would"
    )]
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
        .args(["lsp", language, "--project", project.to_str().unwrap()])
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
    let writer = std::thread::spawn(move || {
        // The bridge may end (and close the pipe) before all of it is read.
        let _ = stdin.write_all(&input);
    });
    let (done, wait) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let output = child.wait_with_output().unwrap();
        let _ = done.send(());
        output
    });
    // Generous: a loaded machine starts Python slowly; pylsp itself answers in well under 1 s.
    wait.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the lsp bridge ends in time");
    let output = waiter.join().unwrap();
    writer.join().unwrap();
    Session {
        code: output.status.code(),
        stdout: output.stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// An editor driving `c2-plugins lsp` step by step: frames are read on a thread, and every
/// wait is bounded.
pub(crate) struct Editor {
    child: std::process::Child,
    pub(crate) stdin: Option<std::process::ChildStdin>,
    pub(crate) received: std::sync::mpsc::Receiver<serde_json::Value>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Generous: a loaded machine starts Python slowly; pylsp itself answers in well under 1 s.
pub(crate) const EDITOR_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Editor {
    pub(crate) fn start(sandbox: &Sandbox, language: &str, project: &std::path::Path) -> Self {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test drives the built binary as an editor would"
        )]
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
            .args(["lsp", language, "--project", project.to_str().unwrap()])
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
        let stdin = child.stdin.take();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (sender, received) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            use std::io::{BufRead, Read};
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(value) = line.strip_prefix("Content-Length: ") {
                        length = value.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0u8; length.expect("a Content-Length header")];
                if stdout.read_exact(&mut body).is_err() {
                    return;
                }
                if sender.send(serde_json::from_slice(&body).unwrap()).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            received,
            reader: Some(reader),
        }
    }

    pub(crate) fn send(&mut self, messages: &[serde_json::Value]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&frames(messages)).unwrap();
        stdin.flush().unwrap();
    }

    /// The response to request `id`, skipping notifications and other answers.
    fn answer(&mut self, id: i64) -> serde_json::Value {
        let deadline = std::time::Instant::now() + EDITOR_WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let message = self
                .received
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {id} in time: {e}"));
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Closes stdin and waits, bounded, for the exit: its code and stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        self.wait_exit()
    }

    /// Waits, bounded, for the exit with stdin left as it is: its code and stderr.
    pub(crate) fn wait_exit(mut self) -> (Option<i32>, String) {
        let deadline = std::time::Instant::now() + EDITOR_WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the lsp bridge ends in time"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        self.reader.take().unwrap().join().unwrap();
        let mut stderr = String::new();
        use std::io::Read;
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status.code(), stderr)
    }
}

fn frames(messages: &[serde_json::Value]) -> Vec<u8> {
    messages
        .iter()
        .flat_map(|message| frame(&message.to_string()))
        .collect()
}

pub(crate) fn initialize() -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": null, "rootUri": null, "capabilities": {}}})
}

#[test]
fn pylsp_shutdown_then_exit_is_exit_0_and_exit_without_shutdown_is_1() {
    let sandbox = Sandbox::new();
    pylsp_bundle(&sandbox, "pyls", "pyls", "python", &[]);
    install(&sandbox, "pyls");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("app.py"), "def greet():\n    return 1\n").unwrap();
    let uri = format!("file://{}", project.join("app.py").display());

    // Interactive, as an editor: pylsp answers requests on worker threads and may drop one
    // still in flight at `exit`, so `shutdown` goes out only after the answers arrived.
    let mut editor = Editor::start(&sandbox, "Python", &project);
    editor.send(&[
        initialize(),
        serde_json::json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": "def greet():\n    return 1\n"}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/documentSymbol",
            "params": {"textDocument": {"uri": uri}}}),
    ]);
    assert_eq!(editor.answer(1)["result"]["serverInfo"]["name"], "pylsp");
    let symbols = editor.answer(2);
    assert_eq!(symbols["result"][0]["name"], "greet", "{symbols:#}");
    editor.send(&[serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})]);
    assert!(editor.answer(3).get("error").is_none());
    editor.send(&[serde_json::json!({"jsonrpc": "2.0", "method": "exit"})]);
    let (code, stderr) = editor.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");

    let unclean = session(
        &sandbox,
        "python",
        &project,
        frames(&[
            initialize(),
            serde_json::json!({"jsonrpc": "2.0", "method": "exit"}),
        ]),
    );
    assert_eq!(unclean.code, Some(1), "{unclean:#?}");
    assert!(
        unclean.stderr.contains("without `shutdown`"),
        "{}",
        unclean.stderr
    );
}

#[test]
fn a_server_that_dies_at_start_shows_its_stderr_without_verbose_even_with_stdin_closed() {
    let sandbox = Sandbox::new();
    pylsp_bundle(&sandbox, "bad", "bad-pyls", "python", &["--bogus"]);
    install(&sandbox, "bad");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();

    // The editor keeps its input open, as an editor does: the server's end is the session's.
    let mut editor = Editor::start(&sandbox, "python", &project);
    editor.send(&[initialize()]);
    let (code, stderr) = editor.wait_exit();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("code 2"), "{stderr}");
    assert!(
        stderr.lines().any(|line| line.starts_with("  | ")
            && line.ends_with("error: unrecognized arguments: --bogus")),
        "{stderr}"
    );

    // stdin already closed when the server dies: reported all the same. A server that fails
    // at once is used here (pylsp's Python start-up can outlast the 2 s the bridge waits for a
    // server to end on its own after the editor closed its input, on a loaded machine).
    sandbox.write(
        "quick/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "quick-bad", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "languageServers": [{"id": "bad", "languages": ["zig"], "command": "sh",
                "args": ["-c", "echo 'zls: error: unrecognized arguments: --bogus' >&2; exit 2"]}]}}}"#,
    );
    install(&sandbox, "quick");
    let run = session(&sandbox, "zig", &project, Vec::new());
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("code 2"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("\n  | zls: error: unrecognized arguments: --bogus"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_frame_over_the_limit_ends_the_session_with_a_message_to_the_editor() {
    let sandbox = Sandbox::new();
    fixture_bundle(&sandbox, "ls", "zig-ls", &["zig"]);
    install(&sandbox, "ls");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    // A didOpen of 9 MB: over the bridge's 8 MiB limit.
    let text = "x".repeat(9 * 1000 * 1000);
    let did_open = serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": "file:///big.zig", "languageId": "zig", "version": 1, "text": text}}});
    let run = session(
        &sandbox,
        "zig",
        &project,
        frames(&[
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            did_open,
        ]),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let messages = run.messages();
    let told = messages
        .iter()
        .find(|m| m["method"] == "window/showMessage")
        .unwrap_or_else(|| panic!("the editor is told: {messages:#?}"));
    assert_eq!(told["params"]["type"], 1);
    let text = told["params"]["message"].as_str().unwrap();
    assert!(text.contains("8388608-byte limit"), "{text}");
    assert!(run.stderr.contains("8388608-byte limit"), "{}", run.stderr);
}

#[test]
fn the_language_listing_in_human_and_json_and_a_per_project_disable_resolving_a_conflict() {
    let sandbox = Sandbox::new();
    fixture_bundle(&sandbox, "first", "zig-first", &["Zig", "zon"]);
    fixture_bundle(&sandbox, "second", "zig-second", &["zig"]);
    pylsp_bundle(&sandbox, "pyls", "pyls", "python", &[]);
    let first = install(&sandbox, "first");
    let second = install(&sandbox, "second");
    let pyls = install(&sandbox, "pyls");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    let dir = project.to_str().unwrap();

    let listed = sandbox.run(&["lsp", "--list", "--project", dir]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let line = |text: &str, language: &str, bundle: &str| -> String {
        text.lines()
            .find(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.first() == Some(&language) && cells.get(1) == Some(&bundle)
            })
            .unwrap_or_else(|| panic!("no {language} {bundle} row in:\n{text}"))
            .to_owned()
    };
    assert!(line(&listed.stdout, "Zig", &first).contains("conflict"));
    assert!(line(&listed.stdout, "Zig", &second).contains("conflict"));
    assert!(line(&listed.stdout, "zon", &first).contains("selected"));
    assert!(line(&listed.stdout, "python", &pyls).contains("python3 "));

    let json = sandbox
        .run(&["--format", "json", "lsp", "--list", "--project", dir])
        .json();
    let zig = json["result"]["languages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["language"] == "Zig")
        .unwrap()
        .clone();
    assert_eq!(zig["conflict"], true);
    assert_eq!(zig["winner"], serde_json::Value::Null);
    assert_eq!(zig["providers"].as_array().unwrap().len(), 2);

    // `list` shows each server's languages; `catalog --project` the project's winners.
    let list = sandbox.run(&["--format", "json", "list"]).json();
    let entry = list["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == first.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        entry["languageServers"][0]["languages"],
        serde_json::json!(["Zig", "zon"])
    );
    assert_eq!(
        entry["languageServers"][0]["conflicts"],
        serde_json::json!(["Zig"])
    );
    assert_eq!(
        entry["languageServers"][0]["selected"],
        serde_json::json!(["zon"])
    );
    let human = sandbox.run(&["list"]);
    assert!(
        line(&human.stdout, "python", &pyls).contains("selected"),
        "{}",
        human.stdout
    );

    // Resolve the conflict in this project only.
    let disabled = sandbox.run(&["disable", &second, "--project", dir]);
    assert_eq!(disabled.code, 0, "{disabled:#?}");
    let listed = sandbox.run(&["lsp", "--list", "--project", dir]);
    assert!(
        line(&listed.stdout, "Zig", &first).contains("selected"),
        "{}",
        listed.stdout
    );
    assert!(
        line(&listed.stdout, "Zig", &second).contains("inactive"),
        "{}",
        listed.stdout
    );
    let catalog = sandbox
        .run(&["--format", "json", "catalog", "--project", dir])
        .json();
    let row = catalog["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == format!("bundle:{first}"))
        .unwrap_or_else(|| panic!("the bundle is in the project catalog: {catalog:#}"))
        .clone();
    assert_eq!(
        row["languageServers"][0]["selected"],
        serde_json::json!(["Zig", "zon"])
    );
    let catalog_human = sandbox.run(&["catalog", "--project", dir]);
    assert!(line(&catalog_human.stdout, "Zig", &first).contains("selected"));

    // The user-wide mapping stays: still both enabled, still a conflict outside the project.
    let user = sandbox.run(&["lsp", "--list"]);
    assert!(
        line(&user.stdout, "Zig", &second).contains("conflict"),
        "{}",
        user.stdout
    );
    let list = sandbox.run(&["--format", "json", "list"]).json();
    assert!(
        list["result"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["enabled"] == true),
        "{list:#}"
    );
    let elsewhere = sandbox.work.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let refused = session(&sandbox, "zig", &elsewhere, Vec::new());
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("2 active plugins"),
        "{}",
        refused.stderr
    );

    // In the project, the one remaining provider serves.
    let mut editor = Editor::start(&sandbox, "zig", &project);
    editor.send(&[
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    ]);
    let answer = editor.answer(1);
    let canonical = std::fs::canonicalize(&project).unwrap();
    assert_eq!(answer["result"]["cwd"], canonical.to_str().unwrap());
    let (code, stderr) = editor.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn validate_warns_about_a_bare_command_not_on_path() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "ls/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "ghost-ls", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "languageServers": [
                {"id": "present", "languages": ["python"], "command": "python3"},
                {"id": "ghost", "languages": ["ghost"], "command": "c2-no-such-language-server"}]}}}"#,
    );
    let run = sandbox.run(&["--format", "json", "validate", "ls"]);
    assert_eq!(run.code, 0, "a warning, not an error: {run:#?}");
    let result = &run.json()["results"][0];
    assert_eq!(result["valid"], true);
    let diagnostics = result["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["code"], "command-not-on-path");
    assert_eq!(diagnostics[0]["severity"], "warning");
    assert_eq!(
        diagnostics[0]["pointer"],
        "/extensions/dev.codetwo/languageServers/1/command"
    );
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(
        message.contains("language server `ghost`") && message.contains("PATH"),
        "{message}"
    );
}

/// The fixture server above for `languages`, in a bundle whose runtime is the c2-testkit
/// fixture with `fixture.info` and user-only scope support.
fn user_only_runtime_bundle(sandbox: &Sandbox, dir: &str, name: &str, languages: &[&str]) {
    let fixture = c2_testkit::fixture_path().unwrap();
    let manifest = serde_json::json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name, "version": "1.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
            "commands": [{"id": "fixture.info", "title": "Fixture info"}],
            "runtime": {
                "command": "bin/fixture",
                "env": {
                    "C2_TEST_FIXTURE": fixture.to_str().unwrap(),
                    "C2_FIXTURE_COMMANDS": r#"[{"name": "fixture.info"}]"#,
                },
                "scopeSupport": ["user"],
            },
            "languageServers": [{"id": "echo", "languages": languages, "command": "bin/server"}]}}
    });
    sandbox.write(&format!("{dir}/plugin.json"), &manifest.to_string());
    let launcher = sandbox.write(
        &format!("{dir}/bin/fixture"),
        "#!/bin/sh\nexec \"$C2_TEST_FIXTURE\" \"$@\"\n",
    );
    let server = sandbox.write(&format!("{dir}/bin/server"), SERVER);
    use std::os::unix::fs::PermissionsExt;
    for file in [launcher, server] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn a_bundle_with_a_user_only_runtime_is_disabled_for_one_project_to_resolve_a_conflict() {
    let sandbox = Sandbox::new();
    fixture_bundle(&sandbox, "plain", "zig-plain", &["zig"]);
    user_only_runtime_bundle(&sandbox, "runtime", "zig-runtime", &["zig"]);
    let plain = install(&sandbox, "plain");
    let runtime = install(&sandbox, "runtime");
    let project = sandbox.work.join("project");
    let elsewhere = sandbox.work.join("elsewhere");
    std::fs::create_dir(&project).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    let dir = project.to_str().unwrap();
    let conflict = |listed: &str| {
        listed
            .lines()
            .filter(|l| l.trim_start().starts_with("zig ") && l.contains("conflict"))
            .count()
    };
    assert_eq!(
        conflict(&sandbox.run(&["lsp", "--list", "--project", dir]).stdout),
        2
    );

    let disabled = sandbox.run(&["disable", &runtime, "--project", dir]);
    assert_eq!(disabled.code, 0, "{disabled:#?}");
    assert!(
        disabled
            .stdout
            .contains(&format!("runtime stays user-wide: bundle:{runtime}")),
        "{}",
        disabled.stdout
    );
    let catalog = sandbox
        .run(&["--format", "json", "catalog", "--project", dir])
        .json();
    let entry = catalog["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == format!("bundle:{runtime}"))
        .unwrap_or_else(|| panic!("the bundle is in the project catalog: {catalog:#}"))
        .clone();
    assert_eq!(entry["runtimeScopes"], serde_json::json!(["user"]));
    assert_eq!(entry["enabled"], false);
    let catalog_human = sandbox.run(&["catalog", "--project", dir]).stdout;
    assert!(
        catalog_human
            .lines()
            .any(|l| l.starts_with(&format!("bundle:{runtime} "))
                && l.contains(" user,project(lsp) ")),
        "{catalog_human}"
    );
    // In the project the other bundle's server is selected and serves.
    let listed = sandbox.run(&["lsp", "--list", "--project", dir]).stdout;
    let row = |bundle: &str| {
        listed
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(bundle))
            .unwrap_or_else(|| panic!("no row of {bundle} in:\n{listed}"))
            .to_owned()
    };
    assert!(row(&plain).contains("selected"), "{listed}");
    assert!(row(&runtime).contains("inactive"), "{listed}");
    let mut editor = Editor::start(&sandbox, "zig", &project);
    editor.send(&[
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    ]);
    let answer = editor.answer(1);
    let canonical = std::fs::canonicalize(&project).unwrap();
    assert_eq!(answer["result"]["cwd"], canonical.to_str().unwrap());
    let (code, stderr) = editor.finish();
    assert_eq!(code, Some(0), "{stderr}");

    // User-wide the conflict stands and both stay enabled.
    assert_eq!(conflict(&sandbox.run(&["lsp", "--list"]).stdout), 2);
    let refused = session(&sandbox, "zig", &elsewhere, Vec::new());
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("2 active plugins"),
        "{}",
        refused.stderr
    );
    let list = sandbox.run(&["--format", "json", "list"]).json();
    assert!(
        list["result"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["enabled"] == true),
        "{list:#}"
    );

    // The user-only runtime answers in the user realm, and (by fallback, with no project
    // path) in a project that does not disable it; the project that disables it is refused.
    let info = sandbox.run(&["--format", "json", "invoke", "fixture.info"]);
    assert_eq!(info.code, 0, "{info:#?}");
    assert_eq!(
        info.json()["result"]["projectPath"],
        serde_json::Value::Null
    );
    let other = sandbox.run(&[
        "--format",
        "json",
        "invoke",
        "fixture.info",
        "--project",
        elsewhere.to_str().unwrap(),
    ]);
    assert_eq!(other.code, 0, "{other:#?}");
    assert_eq!(
        other.json()["result"]["projectPath"],
        serde_json::Value::Null
    );
    let blocked = sandbox.run(&["invoke", "fixture.info", "--project", dir]);
    assert_eq!(blocked.code, 1, "{blocked:#?}");
    assert!(blocked.stderr.contains("blocked"), "{}", blocked.stderr);

    // Enabling it for the project again brings the conflict back there.
    let enabled = sandbox.run(&["enable", &runtime, "--project", dir]);
    assert_eq!(enabled.code, 0, "{enabled:#?}");
    assert_eq!(
        conflict(&sandbox.run(&["lsp", "--list", "--project", dir]).stdout),
        2
    );
    let refused = session(&sandbox, "zig", &project, Vec::new());
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("2 active plugins"),
        "{}",
        refused.stderr
    );
    let info = sandbox.run(&["invoke", "fixture.info", "--project", dir]);
    assert_eq!(info.code, 0, "{info:#?}");
}
