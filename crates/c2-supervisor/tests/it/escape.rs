//! What the group kill reaches, with the fixture plugin: a grandchild in the group dies with it;
//! one that called `setsid` escapes, and goes only when the stdin it inherited closes.

use c2_supervisor::{ProcessSpec, SupervisorOptions};
use c2_testkit::{Fixture, Mode};
use serde_json::json;

use crate::support::{self, Lines, eventually, initialize, invoke, is_alive, pid, send, stat};

fn fixture_spec(fixture: &Fixture) -> ProcessSpec {
    let mut spec = ProcessSpec::new(support::fixture(), std::env::temp_dir()).label("fixture");
    for (name, value) in fixture.env() {
        spec = spec.env(name, value);
    }
    spec
}

/// Kills an escaped grandchild if a failing test left it behind; it is recognised by being the
/// leader of its own session, so a reused pid is never hit.
struct EscapedGuard(i32);

impl Drop for EscapedGuard {
    fn drop(&mut self) {
        if stat(self.0).is_some_and(|s| s.session == self.0 && is_alive(&s)) {
            #[allow(
                clippy::disallowed_methods,
                reason = "test cleanup of a process that escaped the group on purpose"
            )]
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[tokio::test]
async fn a_setsid_grandchild_escapes_the_group_kill_and_exits_when_its_stdin_closes() {
    let _guard = support::shared().await;
    let mut spawned = support::spawn(&fixture_spec(&Fixture::new().mode(Mode::SetsidGrandchild)));
    let leader = pid(&spawned.process);
    let mut out = Lines::new(spawned.stdout);
    send(&mut spawned.stdin, &initialize()).await;
    out.next().await;
    send(&mut spawned.stdin, &invoke(2, "fixture.info", json!({}))).await;
    let info = out.json().await;
    let escaped = i32::try_from(info["result"]["children"][0].as_i64().unwrap()).unwrap();
    let _cleanup = EscapedGuard(escaped);
    assert_eq!(
        stat(escaped).unwrap().session,
        escaped,
        "the grandchild leads its own session"
    );

    // Kill the group while the host still holds stdin open: the escaped grandchild survives.
    #[allow(
        clippy::disallowed_methods,
        reason = "the test kills the group itself to keep stdin open"
    )]
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(leader),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    spawned.process.exited().await;
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
    assert!(
        stat(escaped).is_some_and(|s| is_alive(&s)),
        "setsid escapes the group kill"
    );

    // What the host does about it: closing the plugin's stdin, which the grandchild inherited.
    spawned.process.close_stdin();
    assert!(
        eventually(|| !stat(escaped).is_some_and(|s| is_alive(&s))).await,
        "it exits on stdin EOF"
    );
    spawned.process.stop().await;
}

#[tokio::test]
async fn a_fixture_grandchild_in_the_group_is_killed_by_stop() {
    let _guard = support::shared().await;
    let mut spawned = support::spawn(&fixture_spec(&Fixture::new().mode(Mode::Grandchild)));
    let leader = pid(&spawned.process);
    let mut out = Lines::new(spawned.stdout);
    send(&mut spawned.stdin, &initialize()).await;
    out.next().await;
    send(&mut spawned.stdin, &invoke(2, "fixture.info", json!({}))).await;
    let info = out.json().await;
    let grandchild = i32::try_from(info["result"]["children"][0].as_i64().unwrap()).unwrap();
    assert_eq!(stat(grandchild).unwrap().pgrp, leader);

    let report = spawned.process.stop().await;

    assert!(!report.forced, "the fixture obeys SIGTERM");
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
}

#[tokio::test]
async fn a_ten_mebibyte_stderr_flood_does_not_block_the_reply() {
    let _guard = support::shared().await;
    let fixture = Fixture::new().mode(Mode::StderrFlood(10 * 1024 * 1024));
    let mut spawned = support::spawn(&fixture_spec(&fixture));
    let mut out = Lines::new(spawned.stdout);

    send(&mut spawned.stdin, &initialize()).await;
    let reply = out.json().await;

    assert_eq!(reply["result"]["protocolVersion"], "1.0.0");
    assert!(support::eventually(|| spawned.process.stderr_tail().len() == 20).await);
    spawned.process.stop().await;
}

#[tokio::test]
async fn a_fixture_blocking_sigterm_needs_sigkill() {
    let _guard = support::shared().await;
    let options = SupervisorOptions {
        stop_grace: std::time::Duration::from_millis(200),
        ..SupervisorOptions::default()
    };
    let spec = fixture_spec(
        &Fixture::new()
            .mode(Mode::IgnoreSigterm)
            .mode(Mode::IgnoreStdinEof),
    );
    let mut spawned = c2_supervisor::spawn(&spec, &options).unwrap();
    let mut out = Lines::new(spawned.stdout);
    send(&mut spawned.stdin, &initialize()).await;
    out.next().await;

    let report = spawned.process.stop().await;

    assert!(report.forced);
    assert_eq!(report.exit, c2_supervisor::Exit::Signal(9));
}
