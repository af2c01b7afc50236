//! Install, dormancy, activation, confirmation and unload.

use std::time::Duration;

use serde_json::json;

use c2_host::{InstallOptions, StateChange, Target};

use crate::support::{Env, FixtureBundle, all_pids, gone, pid_of, stat_field};

#[tokio::test]
async fn an_enabled_trusted_bundle_stays_dormant_until_its_first_command() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("dormant").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    assert_eq!(env.host.stats().spawns, 0);
    let status = env.host.list().into_iter().find(|b| b.id == id).unwrap();
    assert_eq!(status.state, "ready");
    let echoed = env
        .invoke("fixture.echo", json!({"hello": "world"}))
        .await
        .unwrap();
    assert_eq!(echoed, json!({"hello": "world"}));
    assert_eq!(env.host.stats().spawns, 1);
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    env.host.shutdown().await;
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_calls_share_one_activation() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("concurrent").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let host = env.host.clone();
            tokio::spawn(async move {
                host.invoke(&Target::User, "fixture.echo", json!({ "i": i }))
                    .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap(), json!({ "i": i }));
    }
    assert_eq!(env.host.stats().spawns, 1);
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_untrusted_bundle_never_starts_whatever_its_enablement() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("untrusted").write(&env.path("bundles"));
    let outcome = env
        .host
        .install(
            dir.to_str().unwrap(),
            InstallOptions::default()
                .with_trust(false)
                .with_enable(true),
        )
        .await
        .unwrap();
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("ships a process runtime")),
        "{:?}",
        outcome.notes
    );
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "not_trusted", "{error}");
    // The message is the library's; the command-line advice is the separate hint.
    assert!(!error.to_string().contains("c2-plugins"), "{error}");
    assert!(
        error.hint().is_some_and(|h| h.contains("c2-plugins trust")),
        "{:?}",
        error.hint()
    );
    assert_eq!(
        env.host.extensions().untrusted,
        vec![outcome.record.id.clone()]
    );
    assert_eq!(env.host.stats().spawns, 0);
    // Trust makes it eligible; untrust takes it away again and stops the process.
    env.host.trust(&outcome.record.id).await.unwrap();
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    env.host.untrust(&outcome.record.id).await.unwrap();
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
    assert_eq!(
        env.invoke("fixture.echo", json!({}))
            .await
            .unwrap_err()
            .kind(),
        "not_trusted"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_handshake_timeout_kills_the_process_and_fails_closed_until_reload() {
    let env = Env::with(|o| o.handshake_timeout = Duration::from_millis(300)).await;
    let dir = FixtureBundle::new("slow")
        .modes("slow-init:60000")
        .write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "handshake_timeout", "{error}");
    assert!(error.to_string().starts_with("fixture.echo: "), "{error}");
    assert!(
        error.to_string().contains("disabled and re-enabled"),
        "{error}"
    );
    // Fail closed: no second spawn for the same generation.
    let again = env.invoke("fixture.info", json!({})).await.unwrap_err();
    assert_eq!(again.kind(), "handshake_timeout");
    assert_eq!(env.host.stats().spawns, 1);
    let status = env.host.list().into_iter().find(|b| b.id == id).unwrap();
    assert_eq!(status.state, "failed", "{status:?}");
    // Disable and re-enable starts a new generation that may try again.
    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    env.host
        .set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    assert_eq!(
        env.invoke("fixture.echo", json!({}))
            .await
            .unwrap_err()
            .kind(),
        "handshake_timeout"
    );
    assert_eq!(env.host.stats().spawns, 2);
    env.host.shutdown().await;
}

async fn refused(modes: &str, kind: &str) -> String {
    let env = Env::new().await;
    let dir = FixtureBundle::new("refused")
        .modes(modes)
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), kind, "{modes}: {error}");
    env.host.shutdown().await;
    error.to_string()
}

#[tokio::test]
async fn another_major_protocol_version_is_refused() {
    let message = refused("protocol:2.0.0", "protocol_mismatch").await;
    assert!(
        message.contains("2.0.0") && message.contains("1.0.0"),
        "{message}"
    );
    refused("no-protocol-version", "protocol_mismatch").await;
}

#[tokio::test]
async fn every_kind_of_command_set_mismatch_is_refused() {
    for (mode, word) in [
        ("extra-command", "fixture.extra"),
        ("missing-command", "fixture.log"),
        ("duplicate-command", "fixture.echo"),
        ("schema-drift", "schema"),
    ] {
        let message = refused(mode, "command_set_mismatch").await;
        assert!(message.contains(word), "{mode}: {message}");
    }
}

#[tokio::test]
async fn an_oversized_line_before_the_answer_stops_the_process() {
    let env = Env::with(|o| o.peer.frame.max_frame_bytes = 64 * 1024).await;
    let dir = FixtureBundle::new("huge")
        .modes("huge-line:200000")
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "frame_too_large", "{error}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_banner_and_invalid_utf8_on_stdout_are_dropped_not_fatal() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("noisy")
        .modes("banner,invalid-utf8")
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    assert_eq!(
        env.invoke("fixture.echo", json!([1])).await.unwrap(),
        json!([1])
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_crash_fails_pending_calls_with_the_exit_status_and_restarts_on_the_next_call() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("crashy").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let error = env
        .invoke("fixture.crash", json!({"code": 3}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "process_exited", "{error}");
    assert!(error.to_string().contains("code 3"), "{error}");
    assert_eq!(
        env.invoke("fixture.echo", json!(1)).await.unwrap(),
        json!(1)
    );
    assert_eq!(env.host.stats().spawns, 2);
    env.host.shutdown().await;
}

#[tokio::test]
async fn three_crashes_within_the_window_leave_the_runtime_failed() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("crashloop").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    for _ in 0..3 {
        let error = env
            .invoke("fixture.crash", json!({"code": 1}))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "process_exited");
    }
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "crash_loop", "{error}");
    assert_eq!(env.host.stats().spawns, 3);
    let status = env.host.list().into_iter().find(|b| b.id == id).unwrap();
    assert_eq!(status.state, "failed");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_call_stops_the_process_and_the_next_call_starts_it_again() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("cancel").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let slow = env.invoke("fixture.sleep", json!({"ms": 30000}));
    assert!(
        tokio::time::timeout(Duration::from_millis(200), slow)
            .await
            .is_err()
    );
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
    assert_eq!(
        env.invoke("fixture.echo", json!(2)).await.unwrap(),
        json!(2)
    );
    assert_eq!(env.host.stats().spawns, 2);
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_call_right_after_a_cancelled_one_starts_a_fresh_process_every_time() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("recancel").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    for round in 0..20u64 {
        // Abandoned at different moments: during the activation, and with the call in flight.
        let slow = env.invoke("fixture.sleep", json!({"ms": 30000}));
        let waited = Duration::from_millis(round % 5 * 10);
        assert!(tokio::time::timeout(waited, slow).await.is_err());
        // At once, without waiting for the stopped process to be gone.
        assert_eq!(
            env.invoke("fixture.echo", json!(round)).await.unwrap(),
            json!(round),
            "round {round}"
        );
    }
    env.host.shutdown().await;
}

/// This process's idle pre-started shims: children started with `--warm`.
fn idle_shims() -> Vec<u32> {
    let me = std::process::id();
    all_pids()
        .into_iter()
        .filter(|pid| {
            stat_field(*pid, 0) == Some(me)
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).any(|arg| arg == b"--warm"))
        })
        .collect()
}

/// Set in the child this test re-executes itself as (see below).
const ALONE_VAR: &str = "C2_HOST_IT_ALONE";

/// The pool of pre-started shims is one per process and every other test's activations fill
/// and take it, so a test of it re-executes this binary to run alone in a process of its own:
/// true in the test's first process, once the re-executed one passed; false in that one.
async fn ran_alone(test: &str) -> bool {
    if std::env::var_os(ALONE_VAR).is_some() {
        return false;
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the test re-executes this test binary to run in a process of its own"
    )]
    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE_VAR, "1")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .expect("the test's own process did not finish within 60 s")
        .unwrap();
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains("1 passed"),
        "the test did not run alone: {report}"
    );
    true
}

#[tokio::test]
async fn the_next_shim_is_pre_started_once_the_activating_call_is_answered() {
    if ran_alone("lifecycle::the_next_shim_is_pre_started_once_the_activating_call_is_answered")
        .await
    {
        return;
    }
    let env = Env::new().await;
    let dir = FixtureBundle::new("answered").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    assert_eq!(
        idle_shims(),
        Vec::<u32>::new(),
        "a shim before any activation"
    );
    assert_eq!(
        env.invoke("fixture.echo", json!(1)).await.unwrap(),
        json!(1)
    );
    // The runtime stays live: the pre-start comes from the answer, not from a stop.
    let deadline = std::time::Instant::now() + Duration::from_secs(4);
    while idle_shims().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        idle_shims().len(),
        1,
        "no shim was pre-started after the answer"
    );
    assert!(
        env.host.runtime_pid(&id, &Target::User).unwrap().is_some(),
        "the runtime was stopped meanwhile"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn the_next_shim_is_pre_started_while_an_activating_call_runs_long_and_gone_at_shutdown() {
    if ran_alone("lifecycle::the_next_shim_is_pre_started_while_an_activating_call_runs_long_and_gone_at_shutdown").await {
        return;
    }
    let env = Env::new().await;
    let dir = FixtureBundle::new("refill")
        .commands(&["fixture.sleep"])
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    assert_eq!(
        idle_shims(),
        Vec::<u32>::new(),
        "a shim before any activation"
    );
    // The activating call runs for seconds: the pre-start does not wait for its answer.
    let slow = env.invoke("fixture.sleep", json!({"ms": 5000}));
    tokio::pin!(slow);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(4);
    let started = loop {
        tokio::select! {
            answer = &mut slow => panic!("the slow call answered first: {answer:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        if !idle_shims().is_empty() {
            break true;
        }
        if tokio::time::Instant::now() >= deadline {
            break false;
        }
    };
    assert!(
        started,
        "no shim was pre-started while the activating call ran"
    );
    env.host.shutdown().await;
    assert!(slow.await.is_err(), "shutdown cancels the slow call");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !idle_shims().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        idle_shims(),
        Vec::<u32>::new(),
        "shutdown leaves the idle shim behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unloading_during_the_handshake_stops_the_process_at_once() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("unload")
        .modes("slow-init:60000")
        .write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let host = env.host.clone();
    let call =
        tokio::spawn(async move { host.invoke(&Target::User, "fixture.echo", json!({})).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), "unloaded", "{error}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn hot_install_and_uninstall_reconcile_without_a_restart() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("hot").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let names: Vec<String> = env
        .host
        .commands(&Target::User)
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert!(names.contains(&"fixture.echo".to_owned()));
    env.host.uninstall(&id).await.unwrap();
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "unknown_command", "{error}");
    assert!(env.host.list().is_empty());
    env.host.shutdown().await;
}

#[tokio::test]
async fn shutdown_leaves_no_process_of_the_plugin_group_behind() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("family")
        .modes("grandchild")
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let children: Vec<u32> = info["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u32::try_from(c.as_u64().unwrap()).unwrap())
        .collect();
    assert!(!children.is_empty(), "{info}");
    env.host.shutdown().await;
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
    for child in children {
        assert!(
            gone(child, Duration::from_secs(5)).await,
            "grandchild {child} survived"
        );
    }
}

#[tokio::test]
async fn replacing_a_bundle_with_new_content_drops_trust_and_rebuilds_its_runtime() {
    let env = Env::new().await;
    let parent = env.path("bundles");
    let dir = FixtureBundle::new("replace").write(&parent);
    let id = env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    std::fs::write(dir.join("NOTES.md"), "changed").unwrap();
    let outcome = env
        .host
        .install(dir.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.record.id, id);
    assert!(outcome.replaced);
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("no longer trusted")),
        "{:?}",
        outcome.notes
    );
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
    assert_eq!(
        env.invoke("fixture.echo", json!({}))
            .await
            .unwrap_err()
            .kind(),
        "not_trusted"
    );
    let status = env.host.list().into_iter().find(|b| b.id == id).unwrap();
    assert!(status.enabled && !status.trusted, "{status:?}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_failing_command_reaches_the_caller_as_command_colon_message() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("failing").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let error = env
        .invoke("fixture.fail", json!({"message": "no luck"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "command_failed");
    assert_eq!(error.to_string(), "fixture.fail: no luck");
    // The process is still healthy.
    assert_eq!(
        env.invoke("fixture.echo", json!(3)).await.unwrap(),
        json!(3)
    );
    assert_eq!(env.host.stats().spawns, 1);
    env.host.shutdown().await;
}
