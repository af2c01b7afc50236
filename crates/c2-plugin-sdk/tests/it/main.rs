//! An SDK plugin as a real process on real stdio: this test binary runs itself as the plugin
//! (with [`CHILD`] set, the test below serves the protocol through [`Plugin::run`] instead of
//! driving it), so the process's stdio, its runtime's shutdown and its exit are the SDK's own.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

use std::io::{Read as _, Write as _};
use std::process::Stdio;
use std::time::{Duration, Instant};

use c2_plugin_sdk::{CommandError, Context, Plugin, RunOptions};
use serde_json::{Value, json};

/// Set in the child: run as the plugin.
const CHILD: &str = "C2_SDK_IT_CHILD";

const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "slow",
  "version": "1.0.0",
  "extensions": {
    "dev.codetwo": {
      "standardVersion": "1.2.0",
      "commands": [
        { "id": "slow.quick", "title": "Answers at once" },
        { "id": "slow.never", "title": "Never answers" }
      ],
      "runtime": { "protocol": "1.0.0", "command": "bin/slow" }
    }
  }
}"#;

const GRACE: Duration = Duration::from_millis(300);

/// Generous: it bounds a hang under load, it does not time the exit.
const MARGIN: Duration = Duration::from_secs(3);

/// The plugin the child runs: one command that answers, one that never does.
fn serve_as_the_plugin() -> ! {
    let ran = Plugin::from_manifest_text(MANIFEST).and_then(|plugin| {
        plugin
            .command("slow.quick", |_ctx: Context, args: Value| async move {
                Ok::<_, CommandError>(args)
            })
            .command("slow.never", |_ctx: Context, _args: Value| async move {
                std::future::pending::<()>().await;
                Ok::<_, CommandError>(Value::Null)
            })
            .with_options(RunOptions {
                shutdown_grace: GRACE,
                ..RunOptions::default()
            })
            .run()
    });
    if let Err(e) = ran {
        let _ = writeln!(std::io::stderr(), "{e}");
        std::process::exit(1);
    }
    // Ends the process here, as a plugin's `main` would, instead of returning to the harness.
    std::process::exit(0);
}

/// Initialize, an invocation that answers, one that never does; then stdin ends.
fn input() -> String {
    let messages = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "1.0.0",
            "host": { "name": "test", "version": "0", "commands": [] },
            "dataDir": "/tmp"
        }}),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "command/invoke",
            "params": { "name": "slow.quick", "args": { "n": 7 } } }),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "command/invoke",
            "params": { "name": "slow.never" } }),
    ];
    messages.iter().map(|m| format!("{m}\n")).collect()
}

/// Runs this binary as the plugin, fed `input` through a pipe closed at once or from a
/// regular file; returns its stdout's protocol lines, whether it exited 0, and how long it ran.
fn run_child(through_a_file: bool) -> (Vec<Value>, bool, Duration, String) {
    let input = input();
    let stdin = if through_a_file {
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("sdk-eof-{}.jsonl", std::process::id()));
        std::fs::write(&path, &input).unwrap();
        Stdio::from(std::fs::File::open(&path).unwrap())
    } else {
        Stdio::piped()
    };
    let start = Instant::now();
    #[expect(
        clippy::disallowed_methods,
        reason = "this test runs an SDK plugin as a real child process, as a host would"
    )]
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "an_sdk_plugin_process_abandons_a_handler_over_the_grace_and_still_answers_the_rest",
            "--exact",
            "--quiet",
            "--test-threads=1",
            // The child's own error report must reach its stderr, not the harness's capture.
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(input.as_bytes()).unwrap();
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let deadline = start + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the plugin did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    // The harness prints its "running 1 test" header to stdout before the plugin takes it
    // over; everything after is the protocol.
    let lines = out
        .join()
        .unwrap()
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (lines, status.success(), took, err.join().unwrap())
}

#[test]
fn an_sdk_plugin_process_abandons_a_handler_over_the_grace_and_still_answers_the_rest() {
    if std::env::var_os(CHILD).is_some() {
        serve_as_the_plugin();
    }
    for through_a_file in [false, true] {
        let (lines, success, took, stderr) = run_child(through_a_file);
        let via = if through_a_file { "a file" } else { "a pipe" };
        assert!(success, "via {via}: the plugin failed; stderr:\n{stderr}");
        let ids: Vec<&Value> = lines.iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(1), &json!(2)], "via {via}: {lines:?}");
        assert_eq!(lines[0]["result"]["name"], "slow");
        assert_eq!(lines[1]["result"], json!({ "n": 7 }));
        assert!(
            took >= GRACE,
            "via {via}: the grace was not given: {took:?}"
        );
        let bound = GRACE + RunOptions::default().flush_timeout + MARGIN;
        assert!(took < bound, "via {via}: took {took:?}, over {bound:?}");
    }
}
