//! `PluginHost::subscribe` and `subscribe_typed`: events without a kernel scope by hand.

use std::time::Duration;

use serde_json::json;

use crate::support::{Env, FixtureBundle};

#[tokio::test]
async fn a_subscription_receives_a_plugins_event_and_releases_its_scope_when_dropped() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("emitter").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let scopes_before = env.host.kernel().scope_count();
    let mut events = env.host.subscribe("emitter/ping").unwrap();
    assert_eq!(env.host.kernel().scope_count(), scopes_before + 1);
    env.invoke(
        "fixture.emit",
        json!({"name": "emitter/ping", "payload": {"n": 1}}),
    )
    .await
    .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("the event arrives")
        .expect("the stream is open");
    assert_eq!(
        (event.name.as_str(), event.payload),
        ("emitter/ping", json!({"n": 1}))
    );
    assert_eq!(events.dropped(), 0);
    drop(events);
    // The scope is released in the background.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while env.host.kernel().scope_count() != scopes_before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the subscription's scope was not released"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    env.host.shutdown().await;
}

#[derive(Debug, Clone, PartialEq)]
struct Ping(u32);

#[tokio::test]
async fn a_typed_subscription_receives_typed_events_and_ends_at_shutdown() {
    let env = Env::new().await;
    let mut pings = env.host.subscribe_typed::<Ping>().unwrap();
    assert_eq!(env.host.kernel().emit_typed(Ping(7)), 1);
    assert_eq!(pings.recv().await, Some(Ping(7)));
    env.host.shutdown().await;
    let end = tokio::time::timeout(Duration::from_secs(10), pings.recv())
        .await
        .expect("the stream ends at shutdown");
    assert_eq!(end, None);
    let error = env.host.subscribe("x/y").unwrap_err();
    assert_eq!(error.kind(), c2_host::ErrorKind::ShutDown, "{error}");
}
