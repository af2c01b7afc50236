//! The reference's amended text: `runtime.commandTimeoutMs`, and `observation/record` answered
//! by a host without observations.

use std::sync::Arc;
use std::time::{Duration, Instant};

use c2_host::{ErrorKind, Target};
use c2_kernel::{
    BoxFuture, CommandSpec, Error as KernelError, Module, ModuleMeta, Role, ScopeContext,
    command_handler,
};
use serde_json::{Value, json};

use crate::support::{Env, FixtureBundle, gone, pid_of};

const COMMANDS: [&str; 5] = [
    "fixture.echo",
    "fixture.info",
    "fixture.call",
    "fixture.sleep",
    "fixture.request",
];

/// Writes the fixture bundle `name` with `runtime.commandTimeoutMs` set to `timeout_ms` (left
/// out when `None`).
fn bundle(env: &Env, name: &str, timeout_ms: Option<u64>) -> std::path::PathBuf {
    let dir = FixtureBundle::new(name)
        .commands(&COMMANDS)
        .project_capable()
        .write(&env.path("bundles"));
    if let Some(ms) = timeout_ms {
        let path = dir.join("plugin.json");
        let mut manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        manifest["extensions"]["dev.codetwo"]["runtime"]["commandTimeoutMs"] = json!(ms);
        std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    }
    dir
}

/// Two calls hang in `target`: the deadline stops the process and fails both
/// `deadline_exceeded`; the next call starts a new process.
async fn hang_twice_then_call_afresh(env: &Env, target: &Target) {
    let first = env
        .host
        .invoke(target, "fixture.info", json!({}))
        .await
        .unwrap();
    let started = Instant::now();
    let (a, b) = tokio::join!(
        env.host
            .invoke(target, "fixture.sleep", json!({"ms": 120_000})),
        env.host
            .invoke(target, "fixture.sleep", json!({"ms": 120_000})),
    );
    for error in [a.unwrap_err(), b.unwrap_err()] {
        assert_eq!(error.kind(), ErrorKind::DeadlineExceeded, "{error}");
        assert!(error.to_string().contains("deadline"), "{error}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        gone(pid_of(&first), Duration::from_secs(5)).await,
        "the deadline stops the process"
    );
    // Never repeated automatically; the next call starts afresh.
    let again = env
        .host
        .invoke(target, "fixture.info", json!({}))
        .await
        .unwrap();
    assert_ne!(pid_of(&again), pid_of(&first));
    assert_eq!(
        env.host
            .invoke(target, "fixture.echo", json!(7))
            .await
            .unwrap(),
        json!(7)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_timeout_ms_stops_a_hanging_command_in_every_realm_and_the_next_call_starts_afresh()
{
    let env = Env::new().await;
    let dir = bundle(&env, "deadline", Some(700));
    env.install_ready(&dir).await;
    hang_twice_then_call_afresh(&env, &Target::User).await;
    hang_twice_then_call_afresh(&env, &Target::Project(env.project("a"))).await;
    // Each expiry was one stop, not a crash: the runtime is not held failed.
    assert_eq!(env.host.stats().spawns, 4);
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_command_timeout_ms_a_long_call_is_not_cut_and_with_it_a_short_one_answers() {
    let env = Env::new().await;
    // Without the field and without an embedder deadline, a call longer than any deadline used
    // here still answers.
    let dir = bundle(&env, "unbounded", None);
    env.install_ready(&dir).await;
    assert_eq!(
        env.invoke("fixture.sleep", json!({"ms": 1_500}))
            .await
            .unwrap(),
        json!({"slept": 1_500})
    );
    env.host.shutdown().await;
    // With it, a call within the deadline answers as usual.
    let env = Env::new().await;
    let dir = bundle(&env, "bounded", Some(5_000));
    env.install_ready(&dir).await;
    assert_eq!(
        env.invoke("fixture.sleep", json!({"ms": 100}))
            .await
            .unwrap(),
        json!({"slept": 100})
    );
    env.host.shutdown().await;
}

/// An embedder module with one extension-public command that never answers in time.
struct Slow;

impl Module for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn meta(&self) -> ModuleMeta {
        ModuleMeta::new(Role::BuiltIn, "embedder", "test")
    }
    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            ctx.register_command(
                "slow.wait",
                CommandSpec::new("wait a minute").extension_public(),
                command_handler(|_, _| async {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok(json!("late"))
                }),
            )
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_timeout_ms_bounds_a_host_callback_and_stops_the_process() {
    let env = Env::new().await;
    env.host.register_module(Arc::new(Slow), 1).await.unwrap();
    let dir = bundle(&env, "callback", Some(700));
    env.install_ready(&dir).await;
    let first = env.invoke("fixture.info", json!({})).await.unwrap();
    let started = Instant::now();
    let error = env
        .invoke("fixture.call", json!({"name": "slow.wait", "args": {}}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::DeadlineExceeded, "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(gone(pid_of(&first), Duration::from_secs(5)).await);
    assert_eq!(
        env.invoke("fixture.echo", json!("afresh")).await.unwrap(),
        json!("afresh")
    );
    assert_eq!(env.host.stats().spawns, 2);
    env.host.shutdown().await;
}

#[tokio::test]
async fn observation_record_gets_the_references_answer_and_initialize_offers_no_observations() {
    let env = Env::new().await;
    let dir = bundle(&env, "observer", None);
    env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(info["hostObservations"], json!(false), "{info}");
    let error = env
        .invoke(
            "fixture.request",
            json!({"method": "observation/record", "params": {
                "connector_id": "c", "account_scope": "a", "stream_id": "s", "batch_id": "b1",
                "recovery": "resumable", "checkpoint_before": null, "checkpoint_after": "1",
                "events": []
            }}),
        )
        .await
        .unwrap_err();
    // The fixture passes the host's answer on unchanged as its own error.
    let plugin = error.plugin_error().expect("the host's answer is kept");
    assert_eq!(plugin.code, -32000, "{error}");
    assert_eq!(plugin.data, None, "{error}");
    assert!(
        error
            .to_string()
            .contains("the host does not accept observations"),
        "{error}"
    );
    // The connection stays up: the refusal acknowledges nothing and stops nothing.
    assert_eq!(
        env.invoke("fixture.echo", json!(1)).await.unwrap(),
        json!(1)
    );
    assert_eq!(env.host.stats().spawns, 1);
    env.host.shutdown().await;
}
