//! command/call into the host, events and logs.

use std::time::Duration;

use c2_host::Target;
use serde_json::json;

use crate::support::{Env, FixtureBundle, git_repo};

#[tokio::test]
async fn a_plugin_calls_git_status_back_through_the_host() {
    let env = Env::new().await;
    let repo = env.path("repo");
    git_repo(&repo);
    let dir = FixtureBundle::new("caller").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let status = env
        .invoke(
            "fixture.call",
            json!({"name": "git.status", "args": {"cwd": repo.to_str().unwrap()}}),
        )
        .await
        .unwrap();
    assert_eq!(status["branch"], json!("trunk"), "{status}");
    assert!(
        status["head"].as_str().is_some_and(|h| h.len() == 40),
        "{status}"
    );
    assert_eq!(
        status["files"],
        json!([{"path": "new.txt", "status": "??"}])
    );
    // A relative cwd resolves against the host's working directory in the user realm.
    let relative = env
        .invoke(
            "fixture.call",
            json!({"name": "git.status", "args": {"cwd": "repo"}}),
        )
        .await
        .unwrap();
    assert_eq!(relative["branch"], json!("trunk"));
    // Not a working tree is a command error, not an empty list.
    let outside = env
        .invoke(
            "fixture.call",
            json!({"name": "git.status", "args": {"cwd": "bundles"}}),
        )
        .await
        .unwrap_err();
    assert!(
        outside
            .to_string()
            .contains("not inside a git working tree"),
        "{outside}"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_internal_command_is_refused_through_the_extension_seam_even_by_name() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("snoop").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let error = env
        .invoke("fixture.call", json!({"name": "plugins.list", "args": {}}))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("not extension-public"),
        "{error}"
    );
    let unknown = env
        .invoke("fixture.call", json!({"name": "nothing.here", "args": {}}))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("unknown command"), "{unknown}");
    // A frontend still reaches the internal command directly.
    assert!(
        env.invoke("plugins.list", json!({}))
            .await
            .unwrap()
            .is_array()
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn only_subscribed_events_are_delivered_after_activation_and_none_are_replayed() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("listener")
        .events(&["skills/changed"])
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let kernel = env.host.kernel().clone();
    kernel.emit("skills/changed", json!("before activation"));
    assert_eq!(
        env.invoke("fixture.events", json!({})).await.unwrap(),
        json!([])
    );
    kernel.emit("scenes/changed", json!(null));
    kernel.emit("skills/changed", json!("after"));
    let mut delivered = json!([]);
    for _ in 0..100 {
        delivered = env.invoke("fixture.events", json!({})).await.unwrap();
        if delivered.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        delivered,
        json!([{"name": "skills/changed", "payload": "after"}])
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_plugin_event_goes_onto_the_host_wide_json_bus() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("emitter").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let scope = env
        .host
        .kernel()
        .open_scope(&c2_kernel::Realm::Global, "test-listener")
        .unwrap();
    let mut stream = scope.subscribe("emitter/ping").unwrap();
    env.invoke(
        "fixture.emit",
        json!({"name": "emitter/ping", "payload": {"n": 1}}),
    )
    .await
    .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), stream.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.payload, json!({"n": 1}));
    env.host.shutdown().await;
}

#[tokio::test]
async fn git_status_is_refused_arguments_it_does_not_take() {
    let env = Env::new().await;
    let error = env
        .host
        .invoke(
            &Target::User,
            "git.status",
            json!({"cwd": ".", "force": true}),
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("unknown argument `force`"),
        "{error}"
    );
    env.host.shutdown().await;
}
