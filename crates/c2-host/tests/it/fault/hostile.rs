//! Runtimes that fight back (issue 16): c2-testkit's `HOSTILE_RUNTIME`, a Python plugin that
//! escapes its process group, leaves a `setsid` daemon holding its stdout, or ignores SIGTERM
//! and stdin EOF. Each case runs next to the bystander and ends with: the host answered within
//! a bound, the bystander kept answering, the documented error kind, and no process of the case
//! alive, found by a marker variable in the environment (a daemon that moved to `/` has no
//! working directory in the store to be found by).

use std::sync::atomic::AtomicU32;

use super::*;

const MARKER: &str = "C2_HOSTILE_MARKER";

/// The bound on an unload or a failing call: the stop grace (1 s), the tree kill, a loaded
/// machine.
const BOUND: Duration = Duration::from_secs(8);

static CASES: AtomicU32 = AtomicU32::new(0);

/// A unique marker for one case.
fn marker(case: &str) -> String {
    let n = CASES.fetch_add(1, Ordering::Relaxed);
    format!("{case}-{}-{n}", std::process::id())
}

/// Writes a bundle whose runtime is `python3 hostile.py`, declaring the hostile commands and
/// putting `marker` in the runtime's environment.
fn hostile_bundle(parent: &Path, name: &str, marker: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hostile.py"), c2_testkit::HOSTILE_RUNTIME).unwrap();
    let ids = [
        "hostile.ping",
        "hostile.escape",
        "hostile.daemon",
        "hostile.hang",
    ];
    let commands: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "title": format!("Hostile {id}")}))
        .collect();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": commands,
            "runtime": {
                "command": "python3",
                "args": ["hostile.py"],
                "env": {
                    "C2_HOSTILE_COMMANDS": json!(ids).to_string(),
                    MARKER: marker,
                },
                "scopeSupport": ["user"],
            }
        }}
    });
    std::fs::write(
        dir.join("plugin.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    dir
}

/// Live (non-zombie) processes whose environment holds `MARKER=marker`.
fn marked(marker: &str) -> Vec<u32> {
    let needle = format!("{MARKER}={marker}");
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
            })
        })
        .filter(|pid| alive(*pid))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_that_moves_into_its_helpers_group_is_killed_by_a_bounded_unload() {
    let scene = Scene::new(|_| {}).await;
    let mark = marker("escape");
    let dir = hostile_bundle(&scene.env.path("bundles"), "hostile-escape", &mark);
    let id = scene.env.install_ready(&dir).await;
    let answer = tokio::time::timeout(BOUND, scene.env.invoke("hostile.escape", json!({})))
        .await
        .expect("the escape call answers")
        .unwrap();
    let runtime = u32::try_from(answer["pid"].as_u64().unwrap()).unwrap();
    let helper = u32::try_from(answer["helper"].as_u64().unwrap()).unwrap();
    // It really escaped: the runtime now sits in the helper's group, which no group signal of
    // the host names.
    assert_eq!(pgid(runtime), Some(helper), "{answer}");
    assert!(marked(&mark).contains(&helper), "{answer}");

    let start = Instant::now();
    tokio::time::timeout(
        BOUND,
        scene
            .env
            .host
            .set_state(&id, &Target::User, StateChange::Disable),
    )
    .await
    .expect("the unload is bounded")
    .unwrap();
    println!("escape: unload took {:?}", start.elapsed());
    let left = settle(|| marked(&mark)).await;
    assert!(left.is_empty(), "the escaped processes live on: {left:?}");
    assert!(!alive(runtime) && !alive(helper));
    assert_eq!(scene.state(&id), "disabled");
    let error = scene
        .env
        .invoke("hostile.ping", json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "disabled", "{error}");
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_exits_leaving_a_daemon_on_stdout_fails_the_call_at_once() {
    let scene = Scene::new(|_| {}).await;
    let mark = marker("daemon");
    let dir = hostile_bundle(&scene.env.path("bundles"), "hostile-daemon", &mark);
    let id = scene.env.install_ready(&dir).await;
    let pong = scene.env.invoke("hostile.ping", json!({})).await.unwrap();
    assert!(pong["pong"].is_u64(), "{pong}");

    let start = Instant::now();
    let error = tokio::time::timeout(BOUND, scene.env.invoke("hostile.daemon", json!({})))
        .await
        .expect("the call fails when the leader exits, not when the daemon does")
        .unwrap_err();
    println!("daemon: the call failed after {:?}", start.elapsed());
    assert_eq!(error.kind(), "process_exited", "{error}");
    assert!(error.to_string().contains("code 3"), "{error}");
    let left = settle(|| marked(&mark)).await;
    assert!(left.is_empty(), "the daemon lives on: {left:?}");
    // A crash, not a failure: the next call starts it again.
    assert_eq!(scene.state(&id), "ready");
    let pong = scene.env.invoke("hostile.ping", json!({})).await.unwrap();
    assert!(pong["pong"].is_u64(), "{pong}");
    scene.remove(&id).await;
    assert!(settle(|| marked(&mark)).await.is_empty());
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_runtime_that_ignores_sigterm_and_stdin_eof_dies_with_the_host() {
    let scene = Scene::new(|_| {}).await;
    let mark = marker("hang");
    let dir = hostile_bundle(&scene.env.path("bundles"), "hostile-hang", &mark);
    let id = scene.env.install_ready(&dir).await;
    let host = scene.env.host.clone();
    let call =
        tokio::spawn(async move { host.invoke(&Target::User, "hostile.hang", json!({})).await });
    let start = Instant::now();
    while scene.state(&id) != "active" && start.elapsed() < PATIENCE {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(scene.state(&id), "active", "the handshake is done");
    // The runtime (a pre-started shim has the host's environment, not the marker).
    assert!(!marked(&mark).is_empty(), "the runtime runs");
    // Let the runtime reach its hang before the host goes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The bystander's checks come first: `finish` shuts the host down, which must stop the
    // hanging runtime within the bound and fail its call.
    let start = Instant::now();
    tokio::time::timeout(BOUND, scene.finish())
        .await
        .expect("shutdown is bounded");
    println!("hang: shutdown took {:?}", start.elapsed());
    let error = tokio::time::timeout(BOUND, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(error.kind(), "cancelled", "{error}");
    let left = settle(|| marked(&mark)).await;
    assert!(
        left.is_empty(),
        "the hanging runtime outlived the host: {left:?}"
    );
}
