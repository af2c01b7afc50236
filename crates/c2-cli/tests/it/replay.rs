//! `--record` and `replay` end to end with the Node `hello-runtime` pack: a real session is
//! recorded, replayed against the same plugin with no divergence, and against a copy changed
//! to answer differently, which is reported at the first different frame.

use serde_json::Value;

use crate::{Sandbox, git_repo};

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_recorded_node_session_replays_clean_and_a_changed_plugin_diverges_at_its_answer() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    let plugin = sandbox.copy_hello_runtime("hello");
    let recording = sandbox.work.join("session.ndjson");
    let run = sandbox.run_in(
        &repo,
        &[
            "run",
            plugin.to_str().unwrap(),
            "hello.status",
            "--record",
            recording.to_str().unwrap(),
            "--redact",
            "DataDir",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");

    let entries = lines(&recording);
    let header = &entries[0];
    assert_eq!(header["format"], "c2-plugins-recording", "{header}");
    assert_eq!(header["version"], 1);
    assert_eq!(header["command"], "run");
    assert!(header["startedAtUnixMs"].as_u64().unwrap() > 0);
    let frames = &entries[1..];
    assert_eq!(frames[0]["dir"], "host->plugin");
    assert_eq!(frames[0]["frame"]["method"], "initialize");
    assert!(frames.iter().any(|f| f["dir"] == "plugin->host"));
    let times: Vec<u64> = frames.iter().map(|f| f["t"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // Redaction matches keys in any case; replay sends what was recorded.
    assert_eq!(frames[0]["frame"]["params"]["dataDir"], "[redacted]");
    // The plugin's call back to the host and the host's answer are both there.
    assert!(
        frames
            .iter()
            .any(|f| f["frame"]["method"] == "command/call")
    );
    assert!(
        frames
            .iter()
            .any(|f| f["dir"] == "host->plugin" && f["frame"]["result"]["branch"] == "main")
    );

    let clean = sandbox.run(&[
        "replay",
        recording.to_str().unwrap(),
        "--against-plugin",
        plugin.to_str().unwrap(),
    ]);
    assert_eq!(clean.code, 0, "{clean:#?}");
    assert!(clean.stdout.contains("no divergence"), "{clean:#?}");

    let changed = sandbox.copy_hello_runtime("changed");
    let manifest = changed.join("plugin.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("Hello from hello-runtime", "Howdy")).unwrap();
    let diverged = sandbox.run(&[
        "replay",
        recording.to_str().unwrap(),
        "--against-plugin",
        changed.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(diverged.code, 1, "{diverged:#?}");
    let error = &diverged.json()["error"];
    assert_eq!(error["kind"], "replay_diverged", "{error}");
    let divergence = &error["divergence"];
    let last = frames.len() - 1;
    assert_eq!(divergence["index"], last, "{error}");
    assert_eq!(divergence["dir"], "plugin->host");
    assert_eq!(divergence["path"], "/result/greeting");
    assert_eq!(divergence["expected"], "Hello from hello-runtime");
    assert_eq!(divergence["actual"], "Howdy");
}

#[test]
fn replay_refuses_a_file_that_is_not_a_recording() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("not.ndjson", "{\"hello\": 1}\n");
    let run = sandbox.run(&["replay", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(run.json()["error"]["kind"], "invalid_recording");
}

/// A conformance transcript is a recording: `replay` plays its plugin side against the real
/// host (`run`), which gets the transcript's outcome; a host whose frames differ is reported.
#[test]
fn a_conformance_transcript_replays_as_the_plugin_against_the_real_host() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let transcript = crate::pack("../conformance/transcripts/handshake-ok-invoke.ndjson")
        .canonicalize()
        .unwrap();
    let bundle = sandbox.write(
        "as-plugin/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "as-plugin", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "commands": [{"id": "t.run", "title": "Run the transcript"}],
              "runtime": {"command": "bin/replay", "args": []}}}}"#,
    );
    let bundle = bundle.parent().unwrap().to_owned();
    let launcher = sandbox.write(
        "as-plugin/bin/replay",
        &format!(
            "#!/bin/sh\nexec '{}' replay '{}'\n",
            env!("CARGO_BIN_EXE_c2-plugins"),
            transcript.display()
        ),
    );
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let played = sandbox.run(&[
        "run",
        bundle.to_str().unwrap(),
        "t.run",
        "--args",
        r#"{"n": 1}"#,
    ]);
    assert_eq!(played.code, 0, "{played:#?}");
    let result: Value = serde_json::from_str(&played.stdout).unwrap();
    assert_eq!(result, serde_json::json!({"answer": 42}));
    // Other arguments: the host's command/invoke differs from the recorded one.
    let other = sandbox.run(&[
        "run",
        bundle.to_str().unwrap(),
        "t.run",
        "--args",
        r#"{"n": 2}"#,
    ]);
    assert_eq!(other.code, 1, "{other:#?}");
    assert!(
        other
            .stderr
            .contains("differs at /params/args/n: expected 1, got 2"),
        "{other:#?}"
    );
}

/// `lsp --record` records the editor's and the server's Content-Length frames.
#[test]
fn lsp_records_the_editors_and_the_servers_frames() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let sandbox = Sandbox::new();
    crate::lsp::fixture_bundle(&sandbox, "echo", "echo", &["echolang"]);
    crate::lsp::install(&sandbox, "echo");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    let recording = sandbox.work.join("lsp.ndjson");
    #[expect(
        clippy::disallowed_methods,
        reason = "the test drives the built binary as an editor would"
    )]
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
        .args(["lsp", "echolang", "--project", project.to_str().unwrap()])
        .args(["--record", recording.to_str().unwrap()])
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&crate::lsp::frame(&crate::lsp::initialize().to_string()))
        .unwrap();
    stdin.flush().unwrap();
    // Wait for the server's answer before the editor goes away.
    let mut stdout = child.stdout.take().unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains("\"result\"") {
        let n = stdout.read(&mut chunk).unwrap();
        assert!(n > 0, "the bridge ended before the server answered");
        received.extend_from_slice(&chunk[..n]);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let entries = lines(&recording);
    assert_eq!(entries[0]["command"], "lsp");
    let frames = &entries[1..];
    assert_eq!(frames[0]["dir"], "host->plugin", "{frames:#?}");
    assert_eq!(frames[0]["frame"]["method"], "initialize");
    assert_eq!(frames[1]["dir"], "plugin->host", "{frames:#?}");
    assert_eq!(frames[1]["frame"]["id"], 1);
    assert!(frames[1]["frame"]["result"]["cwd"].is_string());
}
