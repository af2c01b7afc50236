//! What an embedder chooses in `HostOptions`: the clock the host reads, the runtime its tasks
//! run on, the policy bounds it opens the store with.

use std::sync::Arc;
use std::time::Duration;

use c2_host::{ErrorKind, HostOptions, ManualClock, PluginHost, PolicyOptions, Target};
use serde_json::json;

use crate::support::{Env, FixtureBundle, options};

#[tokio::test]
async fn a_manual_clock_decides_when_a_plan_expires() {
    let clock = Arc::new(ManualClock::new());
    let ttl = Duration::from_secs(60);
    let env = Env::with(|o| {
        o.clock = clock.clone();
        o.policy = PolicyOptions {
            plan_ttl: ttl,
            ..PolicyOptions::default()
        };
    })
    .await;
    let dir = FixtureBundle::new("planned").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let plan = |action: &'static str| {
        let id = id.clone();
        let env = &env;
        async move {
            let answer = env
                .invoke("plugins.plan_change", json!({"id": id, "action": action}))
                .await
                .unwrap();
            answer["planId"].as_u64().unwrap()
        }
    };
    // Just inside its lifetime on the host's clock, however long it really waited: applied.
    let disable = plan("disable").await;
    clock.advance(ttl - Duration::from_secs(1));
    env.invoke("plugins.apply_change", json!({"planId": disable}))
        .await
        .unwrap();
    // Past it, on the host's clock alone (no real time passed): expired.
    let enable = plan("enable").await;
    clock.advance(ttl + Duration::from_secs(1));
    let error = env
        .invoke("plugins.apply_change", json!({"planId": enable}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::PolicyRefused, "{error}");
    assert!(error.to_string().contains("expired"), "{error}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn crashes_count_toward_the_crash_loop_only_within_the_window_on_the_hosts_clock() {
    let clock = Arc::new(ManualClock::new());
    let window = Duration::from_secs(60);
    let env = Env::with(|o| {
        o.clock = clock.clone();
        o.crash_limit = 3;
        o.crash_window = window;
    })
    .await;
    let dir = FixtureBundle::new("spaced-crashes").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let crash = || env.invoke("fixture.crash", json!({"code": 1}));
    // Four crashes a window apart never add up to three within one.
    for _ in 0..4 {
        assert_eq!(crash().await.unwrap_err().kind(), "process_exited");
        clock.advance(window + Duration::from_secs(1));
    }
    // (A crash is counted when the next call finds the process gone: this one counts the
    // fourth, then a window passes again.)
    assert_eq!(
        env.invoke("fixture.echo", json!(1)).await.unwrap(),
        json!(1)
    );
    clock.advance(window + Duration::from_secs(1));
    // Three with the clock standing still do.
    for _ in 0..3 {
        assert_eq!(crash().await.unwrap_err().kind(), "process_exited");
    }
    let error = env.invoke("fixture.echo", json!(2)).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::CrashLoop, "{error}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_project_realm_is_reclaimed_once_idle_on_the_hosts_clock() {
    let clock = Arc::new(ManualClock::new());
    let idle_after = Duration::from_secs(300);
    let env = Env::with(|o| {
        o.clock = clock.clone();
        o.kernel.idle_after = idle_after;
    })
    .await;
    let dir = FixtureBundle::new("idle-clock")
        .project_capable()
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let project = Target::Project(env.project("a"));
    env.host
        .invoke(&project, "fixture.info", json!({}))
        .await
        .unwrap();
    // Used just now on the host's clock: kept.
    assert_eq!(env.host.reap_idle().await, Vec::<String>::new());
    // Five idle minutes later on that clock, with no real time passed: reclaimed.
    clock.advance(idle_after + Duration::from_secs(1));
    assert_eq!(env.host.reap_idle().await.len(), 1);
    env.host.shutdown().await;
}

#[tokio::test]
async fn the_host_reaps_idle_project_realms_every_reap_interval_on_its_own() {
    let env = Env::with(|o| {
        o.kernel.idle_after = Duration::ZERO;
        o.reap_interval = Duration::from_millis(100);
    })
    .await;
    let dir = FixtureBundle::new("reaped")
        .project_capable()
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let project = Target::Project(env.project("a"));
    let info = env
        .host
        .invoke(&project, "fixture.info", json!({}))
        .await
        .unwrap();
    // Nobody calls reap_idle: the host's own tick (every 100 ms, not the default minute)
    // reclaims the realm and stops its process.
    assert!(
        crate::support::gone(crate::support::pid_of(&info), Duration::from_secs(20)).await,
        "the idle project realm's process still runs"
    );
    env.host.shutdown().await;
}

/// Polls `future` to completion on this thread, with no tokio runtime entered.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn a_host_on_a_chosen_runtime_serves_callers_on_other_runtimes_that_come_and_go() {
    let home = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    // Opened with no runtime entered at all: the handle is enough.
    let host: PluginHost = block_on(PluginHost::open(
        options(root.path()).with_runtime(home.handle().clone()),
    ))
    .unwrap();
    let dir = FixtureBundle::new("elsewhere").write(&root.path().join("bundles"));
    // Each call below runs on a runtime of its own, dropped right after it: whatever the host
    // started (the plugin process, its connection) must not have been left on it.
    let caller = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let id = caller().block_on(async {
        host.install(
            dir.to_str().unwrap(),
            c2_host::InstallOptions::trusted_and_enabled(),
        )
        .await
        .unwrap()
        .record
        .id
    });
    let invoke = |n: u64| {
        let host = &host;
        move || {
            caller().block_on(async move {
                tokio::time::timeout(
                    Duration::from_secs(30),
                    host.invoke(&Target::User, "fixture.echo", json!(n)),
                )
                .await
                .expect("a host on another runtime answers")
                .unwrap()
            })
        }
    };
    assert_eq!(invoke(1)(), json!(1));
    let pid = host.runtime_pid(&id, &Target::User).unwrap();
    assert!(pid.is_some(), "the runtime is live");
    // The runtime that made the first call is gone; the process and its connection live on.
    assert_eq!(invoke(2)(), json!(2));
    assert_eq!(host.runtime_pid(&id, &Target::User).unwrap(), pid);
    assert_eq!(host.stats().spawns, 1, "the process was not started again");
    // Called from the host's own runtime, too.
    assert_eq!(
        home.block_on(host.invoke(&Target::User, "fixture.echo", json!(3)))
            .unwrap(),
        json!(3)
    );
    block_on(host.shutdown());
}

#[test]
fn options_are_built_with_setters_and_name_no_hidden_default() {
    let options = HostOptions::new("/plugins")
        .with_host_name("my-desktop")
        .with_crash_limit(5)
        .with_invoke_deadline(Duration::from_secs(30));
    assert_eq!(options.host_name, "my-desktop");
    assert_eq!(options.crash_limit, 5);
    assert_eq!(options.invoke_deadline, Some(Duration::from_secs(30)));
    // Nothing read from the environment: the working directory is resolved at open.
    assert_eq!(HostOptions::new("/plugins").working_dir, None);
    assert_eq!(HostOptions::default().host_name, "c2-host");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let Err(error) = runtime.block_on(PluginHost::open(HostOptions::default())) else {
        panic!("opened a host with no plugins directory");
    };
    assert_eq!(error.kind(), ErrorKind::InvalidArgs, "{error}");
    assert!(error.to_string().contains("plugins_dir"), "{error}");
}

#[tokio::test]
async fn a_per_call_deadline_ends_the_call_with_deadline_exceeded_instead_of_a_hang() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("deadlined").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let started = std::time::Instant::now();
    let error = env
        .host
        .invoke_with(
            &Target::User,
            "fixture.sleep",
            json!({"ms": 60_000}),
            &c2_host::InvokeOptions::default().with_deadline(Duration::from_millis(500)),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::DeadlineExceeded, "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // A call within its deadline answers; the abandoned one's process was replaced.
    let answer = env
        .host
        .invoke_with(
            &Target::User,
            "fixture.echo",
            json!(5),
            &c2_host::InvokeOptions::default().with_deadline(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert_eq!(answer, json!(5));
    assert_eq!(env.host.stats().spawns, 2);
    env.host.shutdown().await;
}
