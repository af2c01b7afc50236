//! The supervisor shim (issue 16): a program that moves itself out of its group, or leaves a
//! `setsid` daemon on its stdout, is still stopped within the bound with its whole tree.

use std::time::{Duration, Instant};

use c2_supervisor::{Containment, Error, Exit, ProcessSpec, SupervisorOptions};

use crate::support::{self, Lines, eventually, is_alive, pid, stat};

/// Grace (1 s), tree kill and a loaded machine.
const BOUND: Duration = Duration::from_secs(8);

/// Forks a helper into a new group, moves itself into it, ignores SIGTERM and stdin EOF.
const ESCAPE: &str = r#"
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
helper = os.fork()
if helper == 0:
    time.sleep(300)
    os._exit(0)
os.setpgid(helper, helper)
os.setpgid(0, helper)
print(os.getpid(), helper, flush=True)
time.sleep(300)
"#;

/// Double-forks a `setsid` daemon that keeps stdout, prints its pid, exits with code 3.
const DAEMON: &str = r#"
import os, signal, sys, time
first = os.fork()
if first == 0:
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    print(os.getpid(), flush=True)
    time.sleep(300)
    os._exit(0)
os.waitpid(first, 0)
time.sleep(0.2)
os._exit(3)
"#;

fn python(script: &str) -> ProcessSpec {
    ProcessSpec::new("python3", std::env::temp_dir())
        .arg("-c")
        .arg(script)
        .label("hostile")
}

fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| is_alive(&s))
}

/// SIGKILLs a process the group-only mode cannot reach, if a test leaves it behind.
struct Leftover(i32);

impl Drop for Leftover {
    fn drop(&mut self) {
        if alive(self.0) {
            #[allow(
                clippy::disallowed_methods,
                reason = "test cleanup of a process the group-only mode cannot reach, by design"
            )]
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

fn pids(line: &str) -> Vec<i32> {
    line.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn a_leader_that_moves_into_its_helpers_group_is_stopped_in_bounds_with_its_helper() {
    let _guard = support::shared().await;
    let spawned = support::spawn(&python(ESCAPE));
    assert!(spawned.process.contained());
    let mut out = Lines::new(spawned.stdout);
    let found = pids(&out.next().await);
    let (program, helper) = (found[0], found[1]);
    let _cleanup = (Leftover(program), Leftover(helper));
    assert_eq!(stat(program).unwrap().pgrp, helper, "it left its group");
    assert_eq!(
        spawned.process.program_pid(),
        Some(u32::try_from(program).unwrap())
    );

    let start = Instant::now();
    let report = tokio::time::timeout(BOUND, spawned.process.stop())
        .await
        .expect("stop is bounded");
    assert!(report.forced, "it ignored SIGTERM: {report:?}");
    assert_eq!(report.exit, Exit::Signal(9));
    println!("escape: stopped in {:?}", start.elapsed());
    assert!(eventually(|| !alive(program) && !alive(helper)).await);
}

#[tokio::test]
async fn without_a_shim_stop_is_still_bounded_but_the_helper_escapes() {
    let _guard = support::shared().await;
    let options = SupervisorOptions {
        containment: Containment::Group,
        ..SupervisorOptions::default()
    };
    let spawned = c2_supervisor::spawn(&python(ESCAPE), &options).unwrap();
    assert!(!spawned.process.contained());
    let mut out = Lines::new(spawned.stdout);
    let found = pids(&out.next().await);
    let (program, helper) = (found[0], found[1]);
    let _cleanup = (Leftover(program), Leftover(helper));
    assert_eq!(program, pid(&spawned.process));
    // The leader left its group, so only the signal to the leader itself ends it.
    let report = tokio::time::timeout(BOUND, spawned.process.stop())
        .await
        .expect("stop is bounded");
    assert_eq!(report.exit, Exit::Signal(9));
    assert!(!alive(program));
    // The documented limit of group-only containment.
    assert!(alive(helper), "the helper in its own group is out of reach");
}

#[tokio::test]
async fn a_leader_that_exits_leaving_a_daemon_on_stdout_is_reported_at_once_and_the_daemon_dies() {
    let _guard = support::shared().await;
    let spawned = support::spawn(&python(DAEMON));
    let mut out = Lines::new(spawned.stdout);
    let daemon: i32 = out.next().await.trim().parse().unwrap();
    let _cleanup = Leftover(daemon);
    assert_ne!(
        stat(daemon).unwrap().session,
        stat(pid(&spawned.process)).unwrap().session,
        "it left the session"
    );
    let exit = tokio::time::timeout(BOUND, spawned.process.exited())
        .await
        .expect("the exit is seen although the daemon holds stdout");
    assert_eq!(exit, Exit::Code(3));
    assert!(
        eventually(|| !alive(daemon)).await,
        "the daemon outlived the leader"
    );
    // With the daemon gone nothing holds stdout: the reader sees EOF.
    assert_eq!(out.next().await, "");
}

#[tokio::test]
async fn exit_codes_and_signals_of_the_program_are_reported_through_the_shim() {
    let _guard = support::shared().await;
    for (script, expected) in [
        ("exit 7", Exit::Code(7)),
        ("kill -TERM $$", Exit::Signal(15)),
        ("kill -SEGV $$", Exit::Signal(11)),
        ("kill -USR1 $$", Exit::Signal(10)),
    ] {
        let spawned = support::spawn(&support::sh(script));
        let exit = tokio::time::timeout(BOUND, spawned.process.exited())
            .await
            .unwrap();
        assert_eq!(exit, expected, "{script}");
    }
}

/// The signals the shim takes (HUP, INT, QUIT, USR1, USR2, TERM, CHLD), as a /proc mask.
const SHIM_SIGNALS: u64 = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 9 | 1 << 11 | 1 << 14 | 1 << 16;

/// A hex signal mask line of /proc/<pid>/status, such as `SigBlk:\t0000000000000000`.
fn mask(status: &str, field: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

/// The shim blocks its signals once the program runs; the program (cold or from a pre-started
/// shim) starts with none of them blocked or ignored, so a SIGTERM or a Ctrl-C reaches it.
#[tokio::test]
async fn the_program_starts_with_no_signal_of_the_shim_blocked_or_ignored() {
    let _guard = support::exclusive().await;
    let spec = support::sh("exec cat /proc/self/status");
    for round in [
        "first",
        "second, from the shim the first one's stop pre-started",
    ] {
        let spawned = support::spawn(&spec);
        assert!(spawned.process.contained());
        let mut status = String::new();
        tokio::time::timeout(
            BOUND,
            tokio::io::AsyncReadExt::read_to_string(&mut { spawned.stdout }, &mut status),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(mask(&status, "SigBlk:"), 0, "{round}: {status}");
        assert_eq!(
            mask(&status, "SigIgn:") & SHIM_SIGNALS,
            0,
            "{round}: {status}"
        );
        // cat closes its stdout before it exits: wait for the exit itself, or the stop's
        // SIGTERM may still reach it.
        tokio::time::timeout(BOUND, spawned.process.exited())
            .await
            .unwrap();
        let report = spawned.process.stop().await;
        assert_eq!(report.exit, Exit::Code(0), "{round}");
    }
}

#[tokio::test]
async fn the_program_pid_is_the_shims_child_and_the_shim_leaves_the_directory() {
    let _guard = support::shared().await;
    let spawned = support::spawn(&support::sh("echo $$; exec sleep 300"));
    let mut out = Lines::new(spawned.stdout);
    let program: u32 = out.next().await.parse().unwrap();
    assert_ne!(program, spawned.process.pid());
    assert_eq!(spawned.process.program_pid(), Some(program));
    let parent = stat(i32::try_from(program).unwrap()).unwrap().ppid;
    assert_eq!(parent, pid(&spawned.process));
    #[expect(
        clippy::disallowed_methods,
        reason = "a process's working directory is read from /proc, not a bundle"
    )]
    let cwd = || std::fs::read_link(format!("/proc/{}/cwd", spawned.process.pid())).unwrap();
    assert!(
        eventually(|| cwd() == std::path::Path::new("/")).await,
        "{:?}",
        cwd()
    );
    spawned.process.stop().await;
}

#[tokio::test]
async fn a_missing_shim_is_an_error_that_says_how_to_provide_one() {
    let _guard = support::shared().await;
    let options = SupervisorOptions {
        containment: Containment::ShimAt("/nonexistent/c2-supervisor-shim".into()),
        ..SupervisorOptions::default()
    };
    let error =
        c2_supervisor::spawn(&ProcessSpec::new("sh", std::env::temp_dir()), &options).unwrap_err();
    assert!(matches!(error, Error::NoShim { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("/nonexistent/c2-supervisor-shim"),
        "{message}"
    );
    assert!(message.contains("run_if_requested"), "{message}");
}

/// A relative shim path names the shim from the host's working directory, though the shim is
/// started in the program's directory: the spawn runs, and the program runs under it.
#[tokio::test]
async fn a_relative_shim_path_is_taken_from_the_hosts_working_directory() {
    let _guard = support::shared().await;
    let shim = std::path::PathBuf::from(env!("CARGO_BIN_EXE_c2-supervisor-shim"));
    let cwd = std::env::current_dir().unwrap();
    // `../..` up to the common ancestor, then down to the shim.
    let common = cwd
        .ancestors()
        .find(|dir| shim.starts_with(dir))
        .expect("the shim and the test share an ancestor directory");
    let mut relative = std::path::PathBuf::new();
    for _ in cwd.strip_prefix(common).unwrap().components() {
        relative.push("..");
    }
    relative.push(shim.strip_prefix(common).unwrap());
    assert!(relative.is_relative() && relative.is_file(), "{relative:?}");
    let options = SupervisorOptions {
        containment: Containment::ShimAt(relative),
        ..SupervisorOptions::default()
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let spec = ProcessSpec::new("sh", elsewhere.path())
        .arg("-c")
        .arg("echo started; read line");
    let spawned = c2_supervisor::spawn(&spec, &options).unwrap();
    assert!(spawned.process.contained());
    let mut lines = Lines::new(spawned.stdout);
    assert_eq!(lines.next().await, "started");
    let report = spawned.process.stop().await;
    assert!(!report.forced, "{report:?}");
}

/// The pre-started shim of this process, if one is idle: a child started with `--warm`.
fn idle_shim() -> Option<i32> {
    support::our_children()
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).any(|arg| arg == b"--warm"))
        })
}

#[tokio::test]
async fn a_pre_started_shim_runs_the_next_spec_exactly_as_a_cold_one() {
    let _guard = support::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let spec = ProcessSpec::new("sh", &dir)
        .arg("-c")
        .arg(r#"read line; echo "$(pwd)|$C2_WARM_TEST|$0|$line""#)
        .arg("zero")
        .env("C2_WARM_TEST", "yes");
    // The first spawn (cold, or warm from an earlier test) leaves a shim started ahead.
    let first = support::spawn(&spec);
    first.process.stop().await;
    assert!(
        eventually(|| idle_shim().is_some()).await,
        "no shim was started ahead"
    );
    let idle = idle_shim().unwrap();

    let mut spawned = support::spawn(&spec);
    assert_eq!(pid(&spawned.process), idle, "the idle shim took the spec");
    crate::support::send(&mut spawned.stdin, &serde_json::json!("first line")).await;
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(
        out.next().await,
        format!("{}|yes|zero|\"first line\"", dir.display()),
        "directory, environment, arguments and every byte of stdin reach the program"
    );
    let exit = tokio::time::timeout(BOUND, spawned.process.exited())
        .await
        .unwrap();
    assert_eq!(exit, Exit::Code(0));
    c2_supervisor::release_warm_shim();
    assert!(eventually(|| idle_shim().is_none()).await);
}

#[tokio::test]
async fn the_next_shim_is_started_only_after_the_handshake_or_the_stop() {
    let _guard = support::exclusive().await;
    c2_supervisor::release_warm_shim();
    let spec = support::sh("read line; echo \"$line\"");
    // No shim is idle: this spawn is cold and starts none of its own.
    let first = support::spawn(&spec);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        idle_shim(),
        None,
        "a shim was pre-started during the start-up"
    );
    first.process.handshake_done();
    assert!(
        eventually(|| idle_shim().is_some()).await,
        "handshake_done started no shim"
    );
    let idle = idle_shim().unwrap();
    first.process.stop().await;

    // The second spawn takes the idle shim (whose command line still says `--warm`) and,
    // until its handshake, starts no other.
    let second = support::spawn(&spec);
    assert_eq!(pid(&second.process), idle, "the idle shim took the spec");
    let other = || idle_shim().filter(|pid| *pid != idle);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(other(), None, "a shim was pre-started during the start-up");
    // Without a handshake_done, the stop starts it.
    second.process.stop().await;
    assert!(
        eventually(|| other().is_some()).await,
        "the stop started no shim"
    );
    c2_supervisor::release_warm_shim();
    assert!(eventually(|| idle_shim().is_none()).await);
}
