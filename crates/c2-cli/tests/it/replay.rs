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
