//! The built hello-rust binary run as the host runs it: a child process in the bundle
//! directory, speaking the protocol over its stdin and stdout.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

struct Runtime {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every stdout line so far; all of them must be protocol.
    seen: Vec<Value>,
}

impl Runtime {
    fn spawn(dir: &Path) -> Runtime {
        #[expect(
            clippy::disallowed_methods,
            reason = "this test runs the pack's binary as a real child process, as the host would"
        )]
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hello-rust"))
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hello-rust");
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
        Runtime {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its response, keeping every other line for inspection.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let line = self
                .lines
                .recv_timeout(WAIT)
                .expect("hello-rust did not answer in time");
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-protocol line {line:?}: {e}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            self.seen.push(message.clone());
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Closes stdin and waits for the exit; returns the exit status and stderr.
    fn close(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "hello-rust ignored stdin EOF");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        // Lines still buffered from the reader thread must be protocol too.
        for line in self.lines.try_iter() {
            serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-protocol line {line:?}: {e}"));
        }
        (status, stderr)
    }
}

/// Whether fd 0 of `pid` is non-blocking, and how many of its pipes are.
#[expect(
    clippy::disallowed_methods,
    reason = "lists a test child's descriptors in /proc; no bundle tree is walked"
)]
fn nonblocking_fds(pid: u32) -> (bool, usize) {
    let mut fd0 = false;
    let mut pipes = 0;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let fd = entry.unwrap().file_name().into_string().unwrap();
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
        let flags = info
            .lines()
            .find_map(|line| line.strip_prefix("flags:"))
            .map(|octal| u32::from_str_radix(octal.trim(), 8).unwrap())
            .unwrap();
        if flags & 0o4000 == 0 {
            continue;
        }
        if fd == "0" {
            fd0 = true;
        } else if std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
            .is_ok_and(|target| target.to_string_lossy().starts_with("pipe:"))
        {
            pipes += 1;
        }
    }
    (fd0, pipes)
}

fn bundle_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_built_binary_speaks_the_protocol_keeps_prints_off_stdout_and_exits_on_eof() {
    let mut runtime = Runtime::spawn(bundle_dir());
    let init = runtime.request(
        1,
        "initialize",
        json!({
            "protocolVersion": "1.0.0",
            "host": { "name": "test", "version": "0", "commands": [] },
            "dataDir": "/tmp"
        }),
    );
    let result = &init["result"];
    assert_eq!(result["name"], "hello-rust");
    let manifest: Value = serde_json::from_str(include_str!("../../plugin.json")).unwrap();
    let declared = &manifest["extensions"]["dev.codetwo"]["commands"];
    let confirmed = result["commands"].as_array().unwrap();
    assert_eq!(confirmed.len(), declared.as_array().unwrap().len());
    for (c, d) in confirmed.iter().zip(declared.as_array().unwrap()) {
        assert_eq!((&c["name"], &c["schema"]), (&d["id"], &d["argsSchema"]));
    }

    let greet = runtime.request(
        2,
        "command/invoke",
        json!({ "name": "hello-rust.greet", "args": { "name": "Ada" } }),
    );
    assert_eq!(
        greet["result"],
        json!({ "greeting": "Hello, Ada!", "greetingsSoFar": 1 })
    );
    // The SDK drives its pipes non-blocking on its reactor, through descriptions of its own:
    // fd 0, which a child of a handler inherits, stays blocking, and fd 1 is stderr.
    let (fd0_nonblocking, protocol_ends) = nonblocking_fds(runtime.child.id());
    assert!(!fd0_nonblocking, "fd 0 was made non-blocking");
    assert!(
        protocol_ends >= 2,
        "the protocol's input and output are not driven by the reactor"
    );
    let refused = runtime.request(
        3,
        "command/invoke",
        json!({ "name": "hello-rust.greet", "args": { "name": 7 } }),
    );
    assert_eq!(refused["error"]["code"], -32602);
    let status = runtime.request(
        4,
        "command/invoke",
        json!({ "name": "hello-rust.status", "args": { "cwd": "/" } }),
    );
    assert!(
        status["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not offer git.status"),
        "{status}"
    );

    let (exit, stderr) = runtime.close();
    assert!(exit.success(), "{exit:?}; stderr:\n{stderr}");
    assert!(
        stderr.contains("hello-rust greeted Ada"),
        "stderr:\n{stderr}"
    );
}

#[test]
fn the_binary_refuses_to_start_outside_its_bundle_directory() {
    let runtime = Runtime::spawn(&bundle_dir().join("src"));
    let (exit, stderr) = runtime.close();
    assert!(!exit.success());
    assert!(stderr.contains("could not read plugin.json"), "{stderr}");
}

/// What one run fed all its input at once produced.
struct OneShot {
    exit: std::process::ExitStatus,
    /// Every stdout line, parsed; all of them must be protocol.
    answers: Vec<Value>,
    /// From the spawn to the exit.
    took: Duration,
    stderr: String,
}

/// Generous: it bounds a hang, it does not measure speed. An idle plugin exits at once on
/// EOF, and one with handlers running within its 500 ms grace (and 200 ms to write out).
const EXIT_BOUND: Duration = Duration::from_secs(5);

/// The requests a host sends first: `initialize` (offering `host_commands`), then `invoke`.
fn requests(host_commands: &[&str], invoke: &Value) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "1.0.0",
        "host": { "name": "test", "version": "0", "commands": host_commands },
        "dataDir": "/tmp"
    }});
    let invoke = json!({ "jsonrpc": "2.0", "id": 2, "method": "command/invoke", "params": invoke });
    format!("{init}\n{invoke}\n")
}

/// Runs hello-rust with `input` as its whole stdin, through a pipe closed right after the
/// last byte, or as a regular file (`hello-rust < requests.jsonl`).
fn one_shot(input: &str, through_a_file: bool) -> OneShot {
    let stdin = if through_a_file {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hello-rust-{}-{n}.jsonl", std::process::id()));
        std::fs::write(&path, input).unwrap();
        Stdio::from(std::fs::File::open(&path).unwrap())
    } else {
        Stdio::piped()
    };
    let start = Instant::now();
    #[expect(
        clippy::disallowed_methods,
        reason = "this test runs the pack's binary as a real child process, as a plugin author would"
    )]
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hello-rust"))
        .current_dir(bundle_dir())
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hello-rust");
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(input.as_bytes()).unwrap();
        // Dropped here: stdin closes right after the last request.
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
    let deadline = start + WAIT;
    let exit = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "hello-rust did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let answers = out
        .join()
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout carried a non-protocol line {line:?}: {e}"))
        })
        .collect();
    OneShot {
        exit,
        answers,
        took,
        stderr: err.join().unwrap(),
    }
}

fn response(answers: &[Value], id: u64) -> &Value {
    answers
        .iter()
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer to request {id} among {answers:?}"))
}

fn answers_before_exiting(through_a_file: bool) {
    let input = requests(
        &[],
        &json!({ "name": "hello-rust.greet", "args": { "name": "Ada" } }),
    );
    // The loss was intermittent with a file: a few runs make a regression show.
    for _ in 0..5 {
        let run = one_shot(&input, through_a_file);
        assert!(
            run.exit.success(),
            "{:?}; stderr:\n{}",
            run.exit,
            run.stderr
        );
        assert_eq!(
            response(&run.answers, 1)["result"]["name"],
            "hello-rust",
            "stderr:\n{}",
            run.stderr
        );
        assert_eq!(
            response(&run.answers, 2)["result"],
            json!({ "greeting": "Hello, Ada!", "greetingsSoFar": 1 })
        );
        assert!(run.took < EXIT_BOUND, "took {:?}", run.took);
    }
}

#[test]
fn requests_piped_in_with_stdin_closed_at_once_are_all_answered() {
    answers_before_exiting(false);
}

#[test]
fn requests_read_from_a_file_are_all_answered() {
    answers_before_exiting(true);
}

#[test]
fn a_call_back_to_the_host_after_stdin_closed_fails_at_once_and_is_answered() {
    // The host offers git.status, but it can no longer answer: the handler's call fails at
    // once instead of holding the plugin for its grace, and the invocation gets that error.
    let input = requests(
        &["git.status"],
        &json!({ "name": "hello-rust.status", "args": { "cwd": "/" } }),
    );
    let run = one_shot(&input, false);
    assert!(
        run.exit.success(),
        "{:?}; stderr:\n{}",
        run.exit,
        run.stderr
    );
    let status = response(&run.answers, 2);
    assert!(
        status["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("closed its output")),
        "{status}"
    );
    assert!(run.took < EXIT_BOUND, "took {:?}", run.took);
    // The host's request went out before the end was seen, or was never sent: never both.
    let calls = run
        .answers
        .iter()
        .filter(|m| m["method"] == "command/call")
        .count();
    assert!(calls <= 1, "{:?}", run.answers);
}
