//! A plugin that fights back, seen from the terminal (issue 16, items 3 to 5 and 8): the real
//! `c2-plugins run` against a Python runtime that floods each direction of the wire, logs 7 MiB
//! at once, or answers with an error full of terminal escapes. Each case ends with the CLI
//! having answered within a bound, the documented error kind, and no process of the case alive
//! (found by a marker variable in the bundle's runtime environment). The host's peak resident
//! set is read from /proc while it runs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::resilience::marked;
use crate::{Run, Sandbox};

/// The runtime the c2-host tests use too.
const HOSTILE_PY: &str = include_str!("../../../c2-host/tests/it/hostile.py");
/// The marker the bundle's runtime environment carries.
const MARKER: &str = "C2_HOSTILE_MARKER";
/// How long one `run` may take on a loaded machine with an unoptimized build.
const RUN_BOUND: Duration = Duration::from_secs(60);
/// decisions.md: host RSS under any single plugin stays under 64 MiB above idle.
const RSS_BOUND_KIB: u64 = 64 * 1024;

fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Writes the hostile bundle with `marker` in its runtime environment.
fn bundle(sandbox: &Sandbox, marker: &str) -> PathBuf {
    sandbox.write("hostile/hostile.py", HOSTILE_PY);
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "hostile",
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [{"id": "hostile.go", "title": "Misbehave"}],
            "runtime": {"command": "python3", "args": ["hostile.py"], "scopeSupport": ["user"],
                        "env": {MARKER: marker}}
        }}
    });
    sandbox.write("hostile/plugin.json", &manifest.to_string());
    sandbox.work.join("hostile")
}

fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// One `c2-plugins run <bundle> hostile.go --args {"mode": mode}` with `extra` flags, and the
/// highest VmHWM seen while it ran.
struct Observed {
    run: Run,
    peak_kib: u64,
    elapsed: Duration,
}

fn run_mode(sandbox: &Sandbox, dir: &Path, mode: &str, extra: &[&str]) -> Observed {
    let args = json!({"mode": mode}).to_string();
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the built binary as a user would, watching its memory"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    let start = Instant::now();
    let mut child = command
        .args(["run", dir.to_str().unwrap(), "hostile.go", "--args", &args])
        .args(extra)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env_remove("C2_PLUGINS_DIR")
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Drained on threads, so a chatty child never blocks on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        text
    });
    let mut peak_kib = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > RUN_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{mode}: c2-plugins did not answer within {RUN_BOUND:?}");
        }
        if let Some(hwm) = status_kib(pid, "VmHWM") {
            peak_kib = peak_kib.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let lossy = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    Observed {
        run: Run {
            code: status.code().unwrap_or(-1),
            stdout: lossy(out.join().unwrap()),
            stderr: lossy(err.join().unwrap()),
        },
        peak_kib,
        elapsed,
    }
}

/// Nothing of the case may be left: the plugin was stopped with the host's unload.
fn assert_none_left(marker: &str, what: &str) {
    let start = Instant::now();
    let mut left = marked(MARKER, marker);
    while !left.is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
        left = marked(MARKER, marker);
    }
    assert!(left.is_empty(), "{what}: processes left: {left:?}");
}

/// No byte of the output can drive the terminal, and no line can pass for the host's.
fn assert_terminal_safe(run: &Run, what: &str) {
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        let raw: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\n' | '\t'))
            .collect();
        assert!(
            raw.is_empty(),
            "{what}: raw control characters {raw:?} on {name}"
        );
        assert!(
            !text
                .lines()
                .any(|line| line.starts_with("c2-plugins: trusted evil")),
            "{what}: a plugin forged a host line on {name}:\n{text}"
        );
    }
}

#[test]
fn plugin_text_reaches_the_terminal_escaped_and_json_keeps_it_exact() {
    let sandbox = Sandbox::new();
    let marker = unique("escape");
    let dir = bundle(&sandbox, &marker);
    let human = run_mode(&sandbox, &dir, "hostile-error", &[]);
    assert_eq!(human.run.code, 1, "{:#?}", human.run);
    assert_terminal_safe(&human.run, "hostile-error");
    let error = human
        .run
        .stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {}", human.run.stderr));
    assert!(
        error.contains(r"bad\u{1b}[2J\u{1b}]0;pwned\u{7}"),
        "{error}"
    );
    assert!(
        human
            .run
            .stderr
            .contains("\n  c2-plugins: trusted evil-123"),
        "{}",
        human.run.stderr
    );
    // JSON needs no escaping of ours: it carries the message exactly, control characters and all.
    let json = run_mode(&sandbox, &dir, "hostile-error", &["--format", "json"]);
    assert_eq!(json.run.code, 1, "{:#?}", json.run);
    let document: Value = json.run.json();
    let message = document["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bad\u{1b}[2J\u{1b}]0;pwned\u{7}\nc2-plugins: trusted evil-123"),
        "{message:?}"
    );
    assert_none_left(&marker, "hostile-error");
}

#[test]
fn a_plugins_error_code_and_data_reach_the_json_error_object() {
    let sandbox = Sandbox::new();
    let marker = unique("error-data");
    let dir = bundle(&sandbox, &marker);
    let json = run_mode(&sandbox, &dir, "error-data", &["--format", "json"]);
    assert_eq!(json.run.code, 1, "{:#?}", json.run);
    let document: Value = json.run.json();
    assert_eq!(document["error"]["kind"], "command_failed", "{document}");
    assert_eq!(
        document["error"]["pluginError"],
        json!({"code": -32050, "data": {"retryAfter": 30, "scope": ["user", "org"]}}),
        "{document}"
    );
    assert!(
        document["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("quota used up")),
        "{document}"
    );
    assert_none_left(&marker, "error-data");
}

#[test]
fn a_seven_mib_log_message_is_cut_like_a_stderr_line() {
    let sandbox = Sandbox::new();
    let marker = unique("log");
    let dir = bundle(&sandbox, &marker);
    let seen = run_mode(&sandbox, &dir, "log-flood", &[]);
    assert_eq!(seen.run.code, 0, "{:#?}", seen.run.stderr);
    assert!(seen.elapsed < RUN_BOUND);
    assert_terminal_safe(&seen.run, "log-flood");
    let longest = seen.run.stderr.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest <= 64 * 1024 + 1024,
        "a stderr line of {longest} bytes"
    );
    assert!(
        seen.run
            .stderr
            .contains("more bytes cut: log message longer than 65536 bytes]"),
        "no cut marker"
    );
    // A short log with a newline: escaped, and its second line indented under the first.
    assert!(
        seen.run
            .stderr
            .contains("short\\u{1b}]0;title\\u{7}\n  c2-plugins: trusted evil-123"),
        "{}",
        seen.run
            .stderr
            .lines()
            .filter(|l| l.len() < 1000)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let result: Value = serde_json::from_str(&seen.run.stdout).unwrap();
    assert_eq!(result, json!({"logged": true}));
    assert_none_left(&marker, "log-flood");
}

#[test]
fn host_memory_stays_bounded_while_a_plugin_floods_each_direction() {
    let sandbox = Sandbox::new();
    let marker = unique("flood");
    let dir = bundle(&sandbox, &marker);
    let idle = run_mode(&sandbox, &dir, "plain", &["--format", "json"]);
    assert_eq!(idle.run.json()["result"], json!({"mode": "plain"}));
    assert!(idle.peak_kib > 0, "no VmHWM read for the idle run");
    for (mode, kind) in [
        // Host to plugin: answers it asked for, events it subscribed to, never read.
        ("call-flood", Some("outbound_overflow")),
        ("event-flood", Some("outbound_overflow")),
        // Plugin to host: 48 frames of 8 MiB the host reads, then one of 8 MiB of zeros.
        ("note-flood", None),
        ("zeros-notify", None),
    ] {
        let seen = run_mode(&sandbox, &dir, mode, &["--format", "json"]);
        let document = seen.run.json();
        match kind {
            Some(kind) => {
                assert_eq!(seen.run.code, 1, "{mode}: {document}");
                assert_eq!(document["error"]["kind"], kind, "{mode}: {document}");
            }
            None => assert_eq!(seen.run.code, 0, "{mode}: {document}"),
        }
        let growth = seen.peak_kib.saturating_sub(idle.peak_kib);
        eprintln!(
            "{mode}: peak {} KiB, idle peak {} KiB, growth {growth} KiB, {:?}",
            seen.peak_kib, idle.peak_kib, seen.elapsed
        );
        assert!(
            growth < RSS_BOUND_KIB,
            "{mode}: the host's peak grew {growth} KiB over idle ({} KiB)",
            idle.peak_kib
        );
        assert_none_left(&marker, mode);
    }
}
