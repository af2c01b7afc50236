use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use c2_testkit::Fixture;
use serde_json::{Value, json};

/// Generous: a loaded 2-core machine may be slow, but never this slow.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// A running fixture in its own process group; dropping it kills the group and reaps the child.
#[derive(Debug)]
pub(crate) struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Option<std::thread::JoinHandle<usize>>,
}

pub(crate) fn start(fixture: &Fixture) -> Running {
    start_in(fixture, &std::env::temp_dir())
}

pub(crate) fn start_in(fixture: &Fixture, cwd: &std::path::Path) -> Running {
    #[expect(
        clippy::disallowed_methods,
        reason = "c2-testkit is dev-only and tests its fixture without the supervisor"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-fixture"));
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
        .envs(fixture.env())
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (sender, lines) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut count = 0;
        let mut buffer = [0_u8; 16 * 1024];
        while let Ok(n @ 1..) = stderr.read(&mut buffer) {
            count += n;
        }
        count
    });
    Running {
        stdin: child.stdin.take(),
        child,
        lines,
        stderr: Some(stderr),
    }
}

impl Running {
    pub(crate) fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `line` and a newline as they are.
    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next stdout line, with its newline.
    pub(crate) fn raw_line(&self) -> Vec<u8> {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("the fixture wrote no line in time")
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.raw_line()).unwrap()
    }

    /// Whether stdout stayed silent (and open) for `wait`.
    pub(crate) fn silent_for(&self, wait: Duration) -> bool {
        matches!(
            self.lines.recv_timeout(wait),
            Err(RecvTimeoutError::Timeout)
        )
    }

    /// Whether stdout reached its end.
    pub(crate) fn stdout_closed(&self) -> bool {
        matches!(
            self.lines.recv_timeout(PATIENCE),
            Err(RecvTimeoutError::Disconnected)
        )
    }

    pub(crate) fn initialize(&mut self) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "1.0.0",
                "host": {"name": "test", "version": "0", "commands": ["git.status"]},
                "config": {"answer": 42},
                "dataDir": "/data/dir",
                "projectPath": "/project"
            }}),
        );
        self.json()
    }

    pub(crate) fn invoke(&mut self, id: u64, name: &str, args: Value) -> Value {
        self.send(&invoke(id, name, args));
        self.json()
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub(crate) fn exit_status(&mut self) -> ExitStatus {
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the fixture did not exit in time");
    }

    pub(crate) fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Total stderr bytes, once the fixture has exited.
    pub(crate) fn stderr_bytes(&mut self) -> usize {
        self.exit_status();
        self.stderr.take().unwrap().join().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // Still unreaped, so the group id cannot have been reused.
            #[expect(
                clippy::disallowed_methods,
                reason = "test cleanup kills the fixture's whole group"
            )]
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pid()),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = self.child.wait();
        }
    }
}

pub(crate) fn invoke(id: u64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "command/invoke", "params": {"name": name, "args": args}})
}

/// (state, pgrp, session) of a process, from /proc.
pub(crate) fn proc_stat(pid: i64) -> Option<(char, i64, i64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text[text.rfind(')')? + 2..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    Some((
        state,
        fields.next()?.parse().ok()?,
        fields.next()?.parse().ok()?,
    ))
}

pub(crate) fn alive(pid: i64) -> bool {
    proc_stat(pid).is_some_and(|(state, _, _)| !matches!(state, 'Z' | 'X'))
}

pub(crate) fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}
