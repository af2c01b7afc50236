//! `Loading::OnDemand`: a host that acts on one bundle loads only it and the bundles sharing a
//! command id with it, and still gives the answers a host with every bundle loaded gives.

use c2_host::{InstallOptions, Loading, PluginHost, StateChange, Target};

use crate::support::*;

async fn on_demand(env: &Env) -> PluginHost {
    let mut options = options(env.root.path());
    options.loading = Loading::OnDemand;
    PluginHost::open(options).await.unwrap()
}

fn loaded(host: &PluginHost) -> Vec<String> {
    host.list().into_iter().map(|status| status.id).collect()
}

#[tokio::test]
async fn a_bundle_loaded_on_demand_meets_a_taken_command_as_with_the_whole_store_loaded() {
    let env = Env::new().await;
    let bundles = env.path("bundles");
    let first = FixtureBundle::new("first")
        .commands(&["fixture.echo", "first.chained"])
        .write(&bundles);
    let first_id = env.install_ready(&first).await;
    let unrelated = FixtureBundle::new("unrelated")
        .commands(&["unrelated.run"])
        .write(&bundles);
    env.install_ready(&unrelated).await;
    let trusted_only = InstallOptions::default().with_trust(true);
    let chained = FixtureBundle::new("chained")
        .commands(&["first.chained"])
        .write(&bundles);
    let chained_id = env
        .host
        .install(chained.to_str().unwrap(), trusted_only)
        .await
        .unwrap()
        .record
        .id;
    let second = FixtureBundle::new("second")
        .commands(&["fixture.echo"])
        .write(&bundles);
    let second_id = env
        .host
        .install(second.to_str().unwrap(), trusted_only)
        .await
        .unwrap()
        .record
        .id;

    let host = on_demand(&env).await;
    assert!(loaded(&host).is_empty(), "nothing loads at open");
    let error = host
        .set_state(&second_id, &Target::User, StateChange::Enable)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "apply_failed", "{error}");
    assert!(error.to_string().contains("already registered"), "{error}");
    assert!(error.to_string().contains(&first_id), "{error}");
    // The bundle named, the one sharing its command and the one sharing that one's; not the
    // bundle that shares nothing with them.
    let mut expected = vec![chained_id, first_id, second_id.clone()];
    expected.sort();
    assert_eq!(loaded(&host), expected);
    host.shutdown().await;
    // The full host agrees, and still serves the first bundle's command.
    let error = env
        .host
        .set_state(&second_id, &Target::User, StateChange::Enable)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "apply_failed", "{error}");
    env.invoke("fixture.echo", serde_json::json!({"x": 1}))
        .await
        .unwrap();
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_install_on_demand_warns_of_a_look_alike_as_with_the_whole_store_loaded() {
    let env = Env::new().await;
    let original = FixtureBundle::new("formatter")
        .commands(&["fmt.run"])
        .write(&env.path("bundles"));
    env.install_ready(&original).await;
    let copy = FixtureBundle::new("formater")
        .commands(&["fmt2.run"])
        .write(&env.path("elsewhere"));
    let host = on_demand(&env).await;
    let outcome = host
        .install(
            copy.to_str().unwrap(),
            InstallOptions::trusted_and_enabled(),
        )
        .await
        .unwrap();
    let warnings: Vec<&String> = outcome
        .notes
        .iter()
        .filter(|note| note.contains("possible typosquat"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", outcome.notes);
    assert!(warnings[0].contains("formatter"), "{warnings:?}");
    assert_eq!(loaded(&host), vec![outcome.record.id.clone()]);
    host.shutdown().await;
    env.host.shutdown().await;
}
