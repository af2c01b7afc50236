//! Install, dormancy, activation, confirmation and unload.

use std::time::Duration;

use serde_json::json;

use crate::support::{Env, FixtureBundle, gone, pid_of};

#[tokio::test]
async fn an_enabled_trusted_bundle_stays_dormant_until_its_first_command() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("dormant").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    assert_eq!(env.host.stats().spawns, 0);
    let status = env.host.list().into_iter().find(|b| b.id == id).unwrap();
    assert_eq!(status.state, "ready");
    let echoed = env.invoke("fixture.echo", json!({"hello": "world"})).await.unwrap();
    assert_eq!(echoed, json!({"hello": "world"}));
    assert_eq!(env.host.stats().spawns, 1);
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    env.host.shutdown().await;
    assert!(gone(pid_of(&info), Duration::from_secs(5)).await);
}
