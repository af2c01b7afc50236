use std::path::PathBuf;
use std::time::{Duration, Instant};

use c2_supervisor::{ProcessSpec, Spawned, SupervisorOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static PROCESSES: RwLock<()> = RwLock::const_new(());

/// Held by every test that spawns.
pub(crate) async fn shared() -> RwLockReadGuard<'static, ()> {
    PROCESSES.read().await
}

/// Held by the test that observes the whole test process.
pub(crate) async fn exclusive() -> RwLockWriteGuard<'static, ()> {
    PROCESSES.write().await
}

/// Generous: a loaded 2-core machine may be slow, but never this slow.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) state: char,
    pub(crate) ppid: i32,
    pub(crate) pgrp: i32,
    pub(crate) session: i32,
}

/// Fields of /proc/<pid>/stat after the command name (which may contain anything but ends at
/// the last `)`).
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(Stat {
        state,
        ppid,
        pgrp,
        session,
    })
}

pub(crate) fn is_alive(stat: &Stat) -> bool {
    !matches!(stat.state, 'Z' | 'X' | 'x')
}

#[allow(
    clippy::disallowed_methods,
    reason = "the tests scan /proc to prove no process survives"
)]
pub(crate) fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Live processes whose process group is `pgid`.
pub(crate) fn alive_in_group(pgid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|s| s.pgrp == pgid && is_alive(&s)))
        .collect()
}

/// Processes (any state) whose parent is this test process.
pub(crate) fn our_children() -> Vec<(i32, Stat)> {
    let me = i32::try_from(std::process::id()).unwrap();
    all_pids()
        .into_iter()
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .filter(|(_, s)| s.ppid == me)
        .collect()
}

/// Whether `pid` is still an unreaped child of this test process.
pub(crate) fn is_our_child(pid: i32) -> bool {
    let me = i32::try_from(std::process::id()).unwrap();
    stat(pid).is_some_and(|s| s.ppid == me)
}

#[allow(
    clippy::disallowed_methods,
    reason = "the tests count this process's descriptors"
)]
pub(crate) fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Polls `condition` until it holds or `PATIENCE` passes.
pub(crate) async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition()
}

pub(crate) fn sh(script: &str) -> ProcessSpec {
    ProcessSpec::new("sh", std::env::temp_dir())
        .arg("-c")
        .arg(script)
        .label("test-sh")
}

pub(crate) fn spawn(spec: &ProcessSpec) -> Spawned {
    c2_supervisor::spawn(spec, &SupervisorOptions::default()).unwrap()
}

pub(crate) fn fixture() -> PathBuf {
    c2_testkit::fixture_path().unwrap()
}

pub(crate) fn pid(process: &c2_supervisor::Process) -> i32 {
    i32::try_from(process.pid()).unwrap()
}

/// Reads lines from a child's stdout with a deadline.
#[derive(Debug)]
pub(crate) struct Lines(BufReader<ChildStdout>);

impl Lines {
    pub(crate) fn new(stdout: ChildStdout) -> Self {
        Self(BufReader::new(stdout))
    }

    pub(crate) async fn next(&mut self) -> String {
        let mut line = String::new();
        tokio::time::timeout(PATIENCE, self.0.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        line.trim_end().to_owned()
    }

    pub(crate) async fn json(&mut self) -> serde_json::Value {
        serde_json::from_str(&self.next().await).unwrap()
    }
}

pub(crate) async fn send(stdin: &mut c2_supervisor::ProcessStdin, message: &serde_json::Value) {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    stdin.write_all(&line).await.unwrap();
    stdin.flush().await.unwrap();
}

pub(crate) fn initialize() -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "1.0.0", "host": {"name": "test", "version": "0", "commands": []},
        "config": {}, "dataDir": "/tmp"}})
}

pub(crate) fn invoke(id: u64, name: &str, args: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "command/invoke", "params": {"name": name, "args": args}})
}

/// Whether every member of the group is dead. SIGKILL is delivered at once, but a dying process
/// may take a moment to leave the process table, and it is not this process's child to wait for.
pub(crate) async fn group_dies(pgid: i32) -> bool {
    eventually(|| alive_in_group(pgid).is_empty()).await
}
