//! The wire side of a plugin that fights back (issue 16, items 3 to 7), each case run by a
//! Python runtime written here, under the fault suite's scene: a bystander plugin is called
//! without pause throughout, and every case ends with the host having answered within a bound,
//! the documented error kind, the bystander still answering from the same process, and no
//! process of the case left once it is uninstalled.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fault::Scene;
use crate::support::FixtureBundle;

/// How long the host may take to answer any of these calls on a loaded 2-core machine, with an
/// unoptimized build decoding 8 MiB frames.
const ANSWER_BOUND: Duration = Duration::from_secs(30);

/// The hostile runtime: `hostile.go {"mode": ...}` misbehaves as asked (shared with the
/// c2-cli tests).
pub(crate) const HOSTILE_PY: &str = include_str!("hostile.py");

/// Writes the hostile bundle `name` under `parent`, declaring `hostile.go`.
pub(crate) fn hostile_bundle(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hostile.py"), HOSTILE_PY).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [{"id": "hostile.go", "title": "Misbehave"}],
            "runtime": {"command": "python3", "args": ["hostile.py"], "scopeSupport": ["user"]}
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

impl Scene {
    async fn hostile(&self, name: &str) -> String {
        let dir = hostile_bundle(&self.env.path("bundles"), name);
        self.env.install_ready(&dir).await
    }

    /// Calls `hostile.go` in `mode` (with `extra` args), bounded by [`ANSWER_BOUND`].
    #[expect(
        clippy::print_stderr,
        reason = "the answer time is worth seeing in the test log"
    )]
    async fn go(&self, mode: &str, extra: Value) -> Result<Value, c2_host::HostError> {
        let mut args = json!({"mode": mode});
        if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
            args.extend(extra.clone());
        }
        let start = Instant::now();
        let outcome = tokio::time::timeout(ANSWER_BOUND, self.env.invoke("hostile.go", args))
            .await
            .unwrap_or_else(|_| panic!("{mode}: the host did not answer within {ANSWER_BOUND:?}"));
        eprintln!("{mode}: answered in {:?}", start.elapsed());
        outcome
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_and_events_a_plugin_never_reads_stop_it_with_outbound_overflow() {
    let scene = Scene::new(|_| {}).await;
    for mode in ["call-flood", "event-flood"] {
        let id = scene.hostile(&format!("hostile-{mode}")).await;
        let error = scene.go(mode, json!({})).await.unwrap_err();
        assert_eq!(error.kind(), "outbound_overflow", "{mode}: {error}");
        assert!(
            error.to_string().contains("stopped reading"),
            "{mode}: {error}"
        );
        // Stopped, not failed: the next call starts it again.
        assert_eq!(
            scene.go("plain", json!({})).await.unwrap(),
            json!({"mode": "plain"}),
            "{mode}"
        );
        scene.remove(&id).await;
    }
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_of_zeros_are_read_raw_and_a_tree_too_large_is_refused() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.hostile("hostile-zeros").await;
    // A notification nobody reads: decoded as raw params, dropped, the call answered.
    assert_eq!(
        scene.go("zeros-notify", json!({})).await.unwrap(),
        json!({"survived": true})
    );
    // A result that would be a ~300 MiB tree is refused before it is built.
    let error = scene.go("zeros-result", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "result_too_large", "{error}");
    // command/call args like it get -32602, and the plugin lives on.
    assert_eq!(
        scene.go("zeros-call", json!({})).await.unwrap(),
        json!({"code": -32602})
    );
    assert_eq!(scene.state(&id), "active");
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_error_code_and_data_are_kept_on_the_host_error() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.hostile("hostile-error-data").await;
    let error = scene.go("error-data", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), c2_host::ErrorKind::CommandFailed, "{error}");
    assert!(error.to_string().contains("quota used up"), "{error}");
    let plugin = error.plugin_error().expect("the plugin's error is kept");
    assert_eq!(plugin.code, -32050);
    assert_eq!(
        plugin.data,
        Some(json!({"retryAfter": 30, "scope": ["user", "org"]}))
    );
    // The kernel's dispatch error is the source, and it carries the same remote error.
    let source = std::error::Error::source(&error).expect("the kernel error is the source");
    let kernel = source
        .downcast_ref::<c2_host::KernelError>()
        .expect("a kernel error");
    assert_eq!(kernel.remote().map(|r| r.code), Some(-32050));
    // Data whose tree would exceed the bound is dropped, the code kept.
    let error = scene.go("error-data-zeros", json!({})).await.unwrap_err();
    let plugin = error.plugin_error().expect("the plugin's error is kept");
    assert_eq!(
        (plugin.code, plugin.data.as_ref()),
        (-32051, None),
        "{error}"
    );
    assert_eq!(scene.state(&id), "active");
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_request_ids_are_echoed_byte_for_byte() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.hostile("hostile-ids").await;
    let long = format!("\"{}\"", "i".repeat(100_000));
    let ids = [
        "12345678901234567890123",
        "18446744073709551616",
        "-0",
        "1E2",
        "-1.5e-300",
        r#""\u00e9""#,
        &long,
    ];
    let answer = scene.go("ids", json!({"ids": ids})).await.unwrap();
    assert_eq!(answer, json!({"echoed": vec![true; ids.len()]}));
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_emit_the_hosts_event_names() {
    let scene = Scene::new(|_| {}).await;
    let dir = FixtureBundle::new("poser").write(&scene.env.path("bundles"));
    let id = scene.env.install_ready(&dir).await;
    let listener = scene
        .env
        .host
        .kernel()
        .open_scope(&c2_kernel::Realm::Global, "test-listener")
        .unwrap();
    let forged = [
        "engine/event",
        "skills/changed",
        "scenes/changed",
        "engine/permission",
        "host/ready",
        "plugins/changed",
        "kernel/stop",
    ];
    let mut streams: Vec<_> = forged
        .iter()
        .map(|name| listener.subscribe(*name).unwrap())
        .collect();
    let mut own = listener.subscribe("poser/ping").unwrap();
    for name in forged.iter().chain(["poser/ping"].iter()) {
        let start = Instant::now();
        scene
            .env
            .invoke(
                "fixture.emit",
                json!({"name": name, "payload": {"permission": "granted"}}),
            )
            .await
            .unwrap();
        assert!(start.elapsed() < ANSWER_BOUND);
    }
    // The plugin's own event arrives; it was emitted last, so the forged ones had their chance.
    let event = tokio::time::timeout(ANSWER_BOUND, own.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.name, "poser/ping");
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (name, stream) in forged.iter().zip(&mut streams) {
        assert!(
            stream.try_recv().is_none(),
            "a plugin's {name} reached a subscriber"
        );
    }
    assert_eq!(scene.state(&id), "active");
    drop(listener);
    scene.remove(&id).await;
    scene.finish().await;
}
