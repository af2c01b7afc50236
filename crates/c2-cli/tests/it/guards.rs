//! Hostile input at the relay service and the LSP bridge, through the built binary: a trusted
//! bundle changed on disk gets no MCP launch data in any listing, a planted `.serve.lock` link
//! is refused, a dense request near the frame limit is weighed and refused before any tree of
//! it is built, and an LSP header declaring a body over the limit ends the session at once.

use std::io::Write;

use serde_json::json;

use crate::Sandbox;
use crate::lsp::{EDITOR_WAIT, Editor, fixture_bundle, initialize, install};
use crate::serve::{exit_code, serve_on_socket, sigterm, socket_client};

#[test]
fn a_trusted_bundle_changed_on_disk_gets_no_mcp_launch_data_in_any_listing() {
    let sandbox = Sandbox::new();
    let dir = crate::mcp::write_bundle(&sandbox, "reviewed\n");
    let install = sandbox.run(&["install", dir.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    let before = sandbox.run(&["mcp", "--format", "json"]).json();
    assert_eq!(before["result"][1]["status"], "supported", "{before:#}");
    // The trusted server script is swapped on disk after review.
    let launcher = sandbox.plugins.join(&id).join("bundle/bin/launch");
    std::fs::write(&launcher, "#!/bin/sh\necho changed >&2\nexit 0\n").unwrap();
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    let listed = client.ok("mcp/list", json!({}));
    let cli = sandbox.run(&["mcp", "--format", "json"]).json();
    assert_eq!(listed, cli["result"], "the relay's rows are the CLI's");
    for row in listed.as_array().unwrap() {
        assert_eq!(row["status"], "content_changed", "{listed:#}");
        assert!(row["launch"].is_null(), "no launch data: {listed:#}");
    }
    let text = sandbox.run(&["mcp"]);
    assert!(text.stdout.contains("content_changed"), "{text:#?}");
    assert!(!text.stdout.contains("command "), "{text:#?}");
    let run = sandbox.run(&["mcp", "run", &format!("{id}/files-local")]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("changed on disk"), "{run:#?}");
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}

#[test]
fn serve_refuses_a_planted_lock_link_and_writes_nothing_through_it() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(&sandbox.plugins).unwrap();
    let lock = sandbox.plugins.join(".serve.lock");
    let victim = sandbox.write("victim.txt", "precious\n");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let dangling = sandbox.work.join("created-through-link");
    for (target, what) in [
        (&victim, "a link to a file"),
        (&dangling, "a dangling link"),
    ] {
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(target, &lock).unwrap();
        let run = sandbox.run(&["serve", "--stdio"]);
        assert_eq!(run.code, 2, "an environment failure, {what}: {run:#?}");
        assert!(
            run.stderr
                .contains("symbolic link, which is never followed"),
            "{what}: {run:#?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!dangling.exists(), "nothing created through the link");
    // A hard link to another file is refused too.
    std::fs::remove_file(&lock).unwrap();
    std::fs::hard_link(&victim, &lock).unwrap();
    let run = sandbox.run(&["serve", "--stdio"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("another hard link"), "{run:#?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

/// The peak resident memory of process `pid`, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_dense_request_near_the_frame_limit_is_refused_before_it_is_built() {
    let sandbox = Sandbox::new();
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    // Just under the 8 MiB frame: ~4 million values, ~300 MiB as a `Value` tree.
    let values = (8 * 1024 * 1024 - 256) / 2;
    let mut line = String::with_capacity(values * 2 + 128);
    line.push_str(
        r#"{"jsonrpc":"2.0","id":900,"method":"command/invoke","params":{"command":"x.y","args":["#,
    );
    for i in 0..values {
        line.push_str(if i == 0 { "0" } else { ",0" });
    }
    line.push_str("]}}\n");
    assert!(line.len() < 8 * 1024 * 1024);
    client.writer.write_all(line.as_bytes()).unwrap();
    client.writer.flush().unwrap();
    let refused = client.response(900);
    assert_eq!(refused["error"]["code"], -32602, "{refused:#}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("bound in memory"), "{message}");
    // The connection goes on, and the service never held a tree of it: its peak stays far
    // below the ~300 MiB the tree would take (a frame and its copies, plus the host).
    assert!(client.ok("plugins/list", json!({})).is_array());
    let peak = peak_rss_kib(service.id());
    assert!(peak < 160 * 1024, "peak resident memory {peak} KiB");
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}

/// A language server that answers its first message with a header declaring a 9 MB body,
/// sends a few bytes of it and then nothing, holding its stdout open.
const HUGE_HEADER_SERVER: &str = r#"#!/usr/bin/env python3
import sys, time
sys.stdin.buffer.readline()
sys.stdout.buffer.write(b"Content-Length: 9000000\r\n\r\n{\"jsonrpc\"")
sys.stdout.buffer.flush()
while True:
    time.sleep(60)
"#;

#[test]
fn a_header_declaring_a_body_over_the_limit_ends_the_session_at_once_in_both_directions() {
    let sandbox = Sandbox::new();
    fixture_bundle(&sandbox, "ls", "zig-ls", &["zig"]);
    install(&sandbox, "ls");
    fixture_bundle(&sandbox, "huge", "odin-ls", &["odin"]);
    let server = sandbox.write("huge/bin/server", HUGE_HEADER_SERVER);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    install(&sandbox, "huge");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    for (language, from_editor) in [("zig", true), ("odin", false)] {
        let mut editor = Editor::start(&sandbox, language, &project);
        if from_editor {
            // The editor declares 9 MB, sends a few bytes and goes silent, stdin kept open.
            let stdin = editor.stdin.as_mut().unwrap();
            stdin
                .write_all(b"Content-Length: 9000000\r\n\r\n{\"jsonrpc\"")
                .unwrap();
            stdin.flush().unwrap();
        } else {
            editor.send(&[initialize()]);
        }
        let told = editor
            .received
            .recv_timeout(EDITOR_WAIT)
            .unwrap_or_else(|e| panic!("{language}: the editor is told ({e})"));
        assert_eq!(told["method"], "window/showMessage", "{language}: {told}");
        assert_eq!(told["params"]["type"], 1);
        let text = told["params"]["message"].as_str().unwrap();
        assert!(text.contains("8388608-byte limit"), "{language}: {text}");
        // Stdin stays open: the bridge ends on its own, with a failure.
        let (code, stderr) = editor.wait_exit();
        assert_eq!(code, Some(1), "{language}: {stderr}");
        assert!(
            stderr.contains("8388608-byte limit"),
            "{language}: {stderr}"
        );
    }
}
