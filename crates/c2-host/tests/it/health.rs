//! `PluginHost::health` from real plugin processes: a leak shows as growing RSS, two crashes
//! as two crashes with the last one's exit, and a slow command in the p99 latency.

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_host::RuntimeHealth;
use serde_json::json;

use crate::support::{Env, FixtureBundle};

/// A plugin runtime whose `leak.grow` keeps 16 MiB more each call (touched, so resident).
const LEAKY_PY: &str = r#"
import json, sys
out, inp = sys.stdout.buffer, sys.stdin.buffer
kept = []
def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()
while True:
    line = inp.readline()
    if not line:
        sys.exit(0)
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"name": "leaky", "version": "1.0.0",
              "protocolVersion": "1.0.0", "commands": [{"name": "leak.grow"}], "events": []}})
    elif msg.get("method") == "command/invoke":
        kept.append(bytearray(b"x" * (16 * 1024 * 1024)))
        send({"jsonrpc": "2.0", "id": msg["id"], "result": len(kept)})
    elif "id" in msg and "method" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
"#;

fn leaky_bundle(parent: &Path) -> PathBuf {
    let dir = parent.join("leaky");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("leaky.py"), LEAKY_PY).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "leaky", "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [{"id": "leak.grow", "title": "Grow"}],
            "runtime": {"command": "python3", "args": ["leaky.py"], "scopeSupport": ["user"]}
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

fn health_of(env: &Env, id: &str) -> RuntimeHealth {
    let rows = env.host.health();
    rows.into_iter()
        .find(|row| row.bundle == id && row.realm == "global")
        .unwrap_or_else(|| panic!("no health row for {id}"))
}

#[tokio::test]
async fn a_leaking_plugin_shows_growing_rss_summed_over_its_tree() {
    let env = Env::new().await;
    let id = env.install_ready(&leaky_bundle(&env.path("bundles"))).await;
    let before = health_of(&env, &id);
    assert_eq!(before.health.state.name(), "dormant");
    assert_eq!(before.health.usage.processes, 0);
    let mut rss = Vec::new();
    for n in 1..=3 {
        assert_eq!(env.invoke("leak.grow", json!({})).await.unwrap(), json!(n));
        let health = health_of(&env, &id).health;
        assert_eq!(health.state.name(), "running");
        assert!(health.pid.is_some() && health.uptime.is_some());
        assert!(health.usage.processes >= 1);
        assert!(health.usage.open_fds >= 3, "{health:?}");
        rss.push(health.usage.rss_bytes);
    }
    // 16 MiB more resident each call (allow for the interpreter's own movements).
    assert!(rss[1] >= rss[0] + 12 * 1024 * 1024, "{rss:?}");
    assert!(rss[2] >= rss[1] + 12 * 1024 * 1024, "{rss:?}");
    let health = health_of(&env, &id).health;
    assert_eq!((health.calls.served, health.calls.failed), (3, 0));
    assert_eq!((health.starts, health.crashes), (1, 0));
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_plugin_that_crashes_twice_shows_two_crashes_and_the_last_failure() {
    let env = Env::new().await;
    let id = env
        .install_ready(&FixtureBundle::new("crashy").write(&env.path("bundles")))
        .await;
    for code in [3, 4] {
        let error = env
            .invoke("fixture.crash", json!({"code": code}))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "process_exited", "{error}");
    }
    let health = health_of(&env, &id).health;
    assert_eq!((health.starts, health.crashes), (2, 2), "{health:?}");
    assert_eq!((health.calls.served, health.calls.failed), (2, 2));
    // Crashed and not yet restarted: nothing runs until the next call.
    assert_eq!(health.state.name(), "dormant");
    assert_eq!(health.pid, None);
    let failure = health.last_failure.expect("the last crash is kept");
    assert_eq!(failure.kind, "process_exited");
    assert!(failure.message.contains("code 4"), "{failure:?}");
    // The next call restarts it.
    env.invoke("fixture.echo", json!(1)).await.unwrap();
    let health = health_of(&env, &id).health;
    assert_eq!((health.starts, health.crashes), (3, 2));
    assert_eq!(health.state.name(), "running");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_slow_command_shows_in_the_p99_latency_and_not_in_the_p50() {
    let env = Env::new().await;
    let id = env
        .install_ready(&FixtureBundle::new("slow").write(&env.path("bundles")))
        .await;
    // The first call starts the process; the rest are warm.
    for n in 0..60 {
        env.invoke("fixture.echo", json!(n)).await.unwrap();
    }
    env.invoke("fixture.sleep", json!({"ms": 400}))
        .await
        .unwrap();
    let health = health_of(&env, &id).health;
    assert_eq!(health.calls.served, 61);
    let p99 = health.calls.p99.unwrap();
    let p50 = health.calls.p50.unwrap();
    assert!(p99 >= Duration::from_millis(400), "{p99:?}");
    assert!(p50 < Duration::from_millis(100), "{p50:?}");
    env.host.shutdown().await;
}
