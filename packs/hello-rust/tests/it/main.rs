//! The built hello-rust binary run as the host runs it: a child process in the bundle
//! directory, speaking the protocol over its stdin and stdout.

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
