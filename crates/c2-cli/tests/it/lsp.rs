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
