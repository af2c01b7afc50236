use std::sync::Arc;
use std::time::{Duration, Instant};

use c2_supervisor::{Containment, Error, Exit, ProcessSpec, SupervisorOptions};
use tokio::io::AsyncWriteExt;

use crate::support::{self, Lines, alive_in_group, eventually, is_our_child, pid, sh, spawn, stat};

#[tokio::test]
async fn stop_reaps_the_child_and_kills_its_backgrounded_grandchild() {
    let _guard = support::shared().await;
    let spawned = spawn(&sh("sleep 300 & echo $!; wait"));
    let leader = pid(&spawned.process);
    let mut out = Lines::new(spawned.stdout);
    let grandchild: i32 = out.next().await.parse().unwrap();
    assert_eq!(
        stat(grandchild).unwrap().pgrp,
        leader,
        "the grandchild starts in the child's group"
    );

    let report = spawned.process.stop().await;

    assert_eq!(report.exit, Exit::Signal(15));
    assert!(!report.forced && !report.already_exited);
    assert!(!is_our_child(leader), "the direct child is reaped");
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
}

#[tokio::test]
async fn a_grandchild_ignoring_sigterm_dies_with_its_leader() {
    let _guard = support::shared().await;
    let spawned = spawn(&sh("(trap '' TERM; echo ready; exec sleep 300) & wait"));
    let leader = pid(&spawned.process);
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(out.next().await, "ready");

    let report = spawned.process.stop().await;

    assert!(!report.forced, "the leader itself obeyed SIGTERM");
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_after_the_grace_period() {
    let _guard = support::shared().await;
    let grace = Duration::from_millis(500);
    let options = SupervisorOptions {
        stop_grace: grace,
        ..SupervisorOptions::default()
    };
    let spawned =
        c2_supervisor::spawn(&sh("trap '' TERM; echo ready; exec sleep 300"), &options).unwrap();
    let leader = pid(&spawned.process);
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(out.next().await, "ready");

    let started = Instant::now();
    let report = spawned.process.stop().await;
    let took = started.elapsed();

    assert!(report.forced);
    assert_eq!(report.exit, Exit::Signal(9));
    assert!(
        took >= grace,
        "SIGKILL came before the grace period ended ({took:?})"
    );
    assert!(took < grace + Duration::from_secs(5), "stop took {took:?}");
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
}

#[tokio::test]
async fn a_child_that_exits_by_itself_is_noticed_and_reaped() {
    let _guard = support::shared().await;
    let spawned = spawn(&sh("exit 7"));
    let leader = pid(&spawned.process);

    let exit = tokio::time::timeout(support::PATIENCE, spawned.process.exited())
        .await
        .unwrap();

    assert_eq!(exit, Exit::Code(7));
    assert_eq!(spawned.process.try_exit(), Some(Exit::Code(7)));
    assert!(!is_our_child(leader), "no zombie remains");
    let report = spawned.process.stop().await;
    assert_eq!(report.exit, Exit::Code(7));
    assert!(report.already_exited && !report.forced);
}

#[tokio::test]
async fn until_exit_answers_while_the_child_runs_and_gives_up_after_its_exit_and_a_drain() {
    let _guard = support::shared().await;
    let spawned = spawn(&sh("read _; exit 3"));
    let drain = Duration::from_millis(50);

    assert_eq!(spawned.process.until_exit(drain, async { 1 }).await, Ok(1));
    spawned.process.close_stdin();
    let started = Instant::now();
    let answer = tokio::time::timeout(
        support::PATIENCE,
        spawned
            .process
            .until_exit(drain, std::future::pending::<()>()),
    )
    .await
    .unwrap();
    assert_eq!(answer, Err(Exit::Code(3)));
    assert!(started.elapsed() >= drain);
    let late = spawned.process.until_exit(drain, async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        2
    });
    assert_eq!(late.await, Ok(2), "an answer within the drain still counts");
    spawned.process.stop().await;
}

#[tokio::test]
async fn try_exit_is_none_while_the_child_runs() {
    let _guard = support::shared().await;
    let spawned = spawn(&sh("read _"));
    assert_eq!(spawned.process.try_exit(), None);
    spawned.process.stop().await;
    assert!(spawned.process.try_exit().is_some());
}

#[tokio::test]
async fn the_child_sees_the_requested_cwd_and_environment() {
    let _guard = support::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = ProcessSpec::new("sh", dir.path())
        .args(["-c", "pwd; echo \"$C2_SUPERVISOR_TEST\"; echo \"$HOME\""])
        .env("C2_SUPERVISOR_TEST", "added")
        .env("HOME", "/overridden-home");
    let spawned = spawn(&spec);
    let mut out = Lines::new(spawned.stdout);

    assert_eq!(
        out.next().await,
        dir.path().canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(out.next().await, "added");
    assert_eq!(out.next().await, "/overridden-home");
    spawned.process.stop().await;
}

#[tokio::test]
async fn a_path_given_in_the_spec_environment_finds_the_program() {
    let _guard = support::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("c2-only-here");
    std::fs::write(&script, "#!/bin/sh\necho found\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", dir.path().display());
    let spawned = spawn(&ProcessSpec::new("c2-only-here", dir.path()).env("PATH", path));
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(out.next().await, "found");
    spawned.process.stop().await;
}

#[tokio::test]
async fn a_missing_program_is_an_error_naming_it() {
    let _guard = support::shared().await;
    let error = c2_supervisor::spawn(
        &ProcessSpec::new("c2-no-such-program", std::env::temp_dir()),
        &SupervisorOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&error, Error::Spawn { resolved: None, .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("cannot start `c2-no-such-program` (not found on PATH)"),
        "{message}"
    );
}

#[tokio::test]
async fn a_program_that_cannot_execute_names_the_resolved_path_and_os_error() {
    let _guard = support::shared().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), "not a program").unwrap();
    let error = c2_supervisor::spawn(
        &ProcessSpec::new("./plain", dir.path()),
        &SupervisorOptions::default(),
    )
    .unwrap_err();
    let resolved = dir.path().join("./plain");
    match &error {
        Error::Spawn {
            resolved: Some(path),
            source,
            ..
        } => {
            assert_eq!(path, &resolved);
            assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(error.to_string().contains(&resolved.display().to_string()));
}

#[tokio::test]
async fn a_missing_working_directory_is_named() {
    let _guard = support::shared().await;
    let error = c2_supervisor::spawn(
        &ProcessSpec::new("sh", "/nonexistent/c2"),
        &SupervisorOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(error, Error::Cwd { .. }), "{error:?}");
}

#[tokio::test]
async fn stop_is_idempotent_and_concurrent_callers_share_one_report() {
    let _guard = support::shared().await;
    let mut spawned = spawn(&sh("sleep 300"));
    let process = Arc::new(spawned.process);

    let (a, b, c) = tokio::join!(process.stop(), process.stop(), process.stop());
    let later = process.stop().await;

    assert_eq!(a, b);
    assert_eq!(b, c);
    assert_eq!(c, later);
    assert_eq!(a.exit, Exit::Signal(15));
    let write = spawned.stdin.write_all(b"too late\n").await.unwrap_err();
    assert_eq!(write.kind(), std::io::ErrorKind::BrokenPipe);
}

#[tokio::test]
async fn a_megabyte_stderr_line_is_cut_and_kept_in_the_tail() {
    let _guard = support::shared().await;
    let options = SupervisorOptions {
        stderr_tail_lines: 2,
        ..SupervisorOptions::default()
    };
    let script = "echo first >&2; head -c 1048576 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2; echo done";
    let spawned = c2_supervisor::spawn(&sh(script), &options).unwrap();
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(out.next().await, "done");
    spawned.process.exited().await;

    assert!(
        eventually(|| spawned
            .process
            .stderr_tail()
            .last()
            .is_some_and(|l| l == "last"))
        .await
    );
    let tail = spawned.process.stderr_tail();
    assert_eq!(tail.len(), 2);
    assert!(tail[0].starts_with("xxxx"));
    assert!(
        tail[0].ends_with("[… 983040 more bytes cut: line longer than 65536 bytes]"),
        "{}",
        &tail[0][65000..]
    );
}

#[test]
fn dropping_a_process_kills_its_group_without_a_runtime() {
    let _guard = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(support::shared());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (spawned, grandchild) = runtime.block_on(async {
        let spawned = spawn(&sh("sleep 300 & echo $!; wait"));
        let mut out = Lines::new(spawned.stdout);
        let grandchild: i32 = out.next().await.parse().unwrap();
        (spawned.process, grandchild)
    });
    drop(runtime);
    let leader = pid(&spawned);
    assert!(stat(grandchild).is_some_and(|s| support::is_alive(&s)));

    drop(spawned);

    let deadline = Instant::now() + support::PATIENCE;
    while (is_our_child(leader) || !alive_in_group(leader).is_empty()) && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !is_our_child(leader),
        "the reaper thread reaps the killed child"
    );
    assert_eq!(alive_in_group(leader), Vec::<i32>::new());
}

#[tokio::test]
async fn an_executable_still_open_for_writing_starts_once_the_writer_closes_it() {
    use std::os::unix::fs::OpenOptionsExt;
    let _guard = support::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, b"#!/bin/sh\necho started\n").unwrap();
    // While the file is open for writing, exec fails with "text file busy"; the writer lets go
    // a few milliseconds later, as a concurrent fork's copy of the descriptor would.
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        drop(file);
    });
    let spawned = spawn(&ProcessSpec::new("./fresh", dir.path()));
    writer.join().unwrap();
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(out.next().await, "started");
    spawned.process.stop().await;
}

#[tokio::test]
async fn an_executable_that_stays_busy_is_an_error_after_the_bounded_retries() {
    use std::os::unix::fs::OpenOptionsExt;
    let _guard = support::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, b"#!/bin/sh\n").unwrap();
    let spec = ProcessSpec::new("./busy", dir.path());
    // Without a shim the host execs the program itself, and the error is synchronous.
    let group = SupervisorOptions {
        containment: Containment::Group,
        ..SupervisorOptions::default()
    };
    let error = c2_supervisor::spawn(&spec, &group).unwrap_err();
    assert!(error.to_string().contains("busy"), "{error}");
    // Under the shim, the shim retries and then exits 127 naming the OS error on stderr.
    let spawned = c2_supervisor::spawn(&spec, &SupervisorOptions::default()).unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), spawned.process.exited())
        .await
        .unwrap();
    drop(file);
    assert_eq!(exit, Exit::Code(c2_supervisor::shim::EXEC_FAILED));
    let said = eventually(|| spawned.process.stderr_tail().join("\n").contains("busy")).await;
    assert!(said, "{:?}", spawned.process.stderr_tail());
}
