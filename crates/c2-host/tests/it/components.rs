//! Per-component policy end to end with the fixture runtime: choices survive a reinstall, and a
//! choice whose component vanished is dropped and reported once; a choice goes through a plan
//! file and the management plane. (What a disabled component does to each contribution surface
//! is c2-contributions' `components` test.)

use std::time::Duration;

use c2_host::{ComponentChoicesDropped, InstallOptions, PlanAction, StateChange, Target};
use serde_json::json;

use crate::support::{Env, assert_disabled, component_kit as kit};

#[tokio::test]
async fn choices_survive_a_reinstall_and_a_vanished_component_is_dropped_and_reported_once() {
    let env = Env::new().await;
    let bundles = env.path("bundles");
    let id = env.install_ready(&kit(&bundles, "1.0.0", true, true)).await;
    let app = Target::Project(env.project("app"));
    env.set(&id, &Target::User, "skill:review", StateChange::Disable)
        .await;
    env.set(&id, &Target::User, "skill:extra", StateChange::Disable)
        .await;
    env.set(&id, &app, "skill:extra", StateChange::Disable)
        .await;
    env.set(
        &id,
        &app,
        "runtime-command:fixture.echo",
        StateChange::Disable,
    )
    .await;
    let scope = env
        .host
        .kernel()
        .open_scope(&c2_kernel::Realm::Global, "test-frontend")
        .unwrap();
    let mut events = scope.subscribe_typed::<ComponentChoicesDropped>().unwrap();

    // Version 2 no longer has the `extra` skill: same source, so the same installed id.
    let outcome = env
        .host
        .install(
            kit(&bundles, "2.0.0", false, true).to_str().unwrap(),
            InstallOptions::default()
                .with_trust(true)
                .with_enable(false),
        )
        .await
        .unwrap();
    assert!(outcome.replaced);
    assert_eq!(outcome.record.id, id);
    let mut dropped: Vec<(String, String)> = outcome
        .dropped_choices
        .iter()
        .map(|d| (d.component.clone(), d.scope.clone()))
        .collect();
    dropped.sort();
    let project_key = std::fs::canonicalize(env.project("app"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        dropped,
        [
            (format!("{id}:skill:extra"), project_key),
            (format!("{id}:skill:extra"), "user".to_owned())
        ]
    );
    assert_eq!(
        outcome
            .notes
            .iter()
            .filter(|n| n.contains("skill:extra") && n.contains("dropped"))
            .count(),
        2,
        "{:?}",
        outcome.notes
    );
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("the drop is published")
        .unwrap();
    assert_eq!(event.id, id);
    assert_eq!(event.dropped.len(), 2);

    // Kept: the choices whose local ids are still there, in both scopes.
    assert_eq!(env.listed_state(&id, "skill:review"), "disabled");
    assert_eq!(
        env.catalog_state(&id, &app, "runtime-command:fixture.echo"),
        "disabled"
    );
    assert_disabled(
        &env.host
            .invoke(&app, "fixture.echo", json!({}))
            .await
            .unwrap_err(),
        "runtime-command:fixture.echo",
    );
    let policy =
        std::fs::read_to_string(env.host.options().plugins_dir.join("policy.json")).unwrap();
    assert!(!policy.contains("skill:extra"), "{policy}");
    assert!(policy.contains(&format!("{id}:skill:review")), "{policy}");

    // Reported once: the next reinstall has nothing more to drop.
    let again = env
        .host
        .install(
            kit(&bundles, "3.0.0", false, true).to_str().unwrap(),
            InstallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        again.dropped_choices.is_empty(),
        "{:?}",
        again.dropped_choices
    );
    assert!(!again.notes.iter().any(|n| n.contains("dropped")));
    assert_eq!(env.listed_state(&id, "skill:review"), "disabled");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_component_choice_goes_through_a_revision_bound_plan_file() {
    let env = Env::new().await;
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, true))
        .await;
    let plan = env
        .host
        .plan_component(
            &id,
            None,
            PlanAction::Disable,
            Some("runtime-command:fixture.echo"),
        )
        .await
        .unwrap();
    assert_eq!(
        plan.component.as_deref(),
        Some("runtime-command:fixture.echo")
    );
    assert_eq!(plan.impact.reloads, [c2_host::module_name(&id)]);
    // Nothing changed until it is applied.
    env.invoke("fixture.echo", json!({})).await.unwrap();
    let file: c2_host::PlanFile =
        serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
    env.host.apply_plan(&file).await.unwrap();
    assert_disabled(
        &env.invoke("fixture.echo", json!({})).await.unwrap_err(),
        "runtime-command:fixture.echo",
    );
    // Single use: applying it again finds the config revision moved.
    let stale = env.host.apply_plan(&file).await.unwrap_err();
    assert_eq!(stale.kind(), "stale_plan", "{stale}");
    let configure = env
        .host
        .plan_component(
            &id,
            None,
            PlanAction::Configure { config: json!({}) },
            Some("skill:review"),
        )
        .await
        .unwrap_err();
    assert_eq!(configure.kind(), "invalid_args", "{configure}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn the_management_plane_plans_and_applies_a_component_choice() {
    let env = Env::new().await;
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, true))
        .await;
    let plan = env
        .invoke(
            "plugins.plan_change",
            json!({"id": id, "action": "disable", "component": "runtime-command:fixture.echo"}),
        )
        .await
        .unwrap();
    assert_eq!(
        plan["impact"]["reloads"],
        json!([c2_host::module_name(&id)])
    );
    env.invoke("fixture.echo", json!({})).await.unwrap();
    env.invoke("plugins.apply_change", json!({"planId": plan["planId"]}))
        .await
        .unwrap();
    assert_disabled(
        &env.invoke("fixture.echo", json!({})).await.unwrap_err(),
        "runtime-command:fixture.echo",
    );
    for (args, kind) in [
        (
            json!({"id": id, "action": "configure", "config": {}, "component": "skill:review"}),
            "invalid_args",
        ),
        (
            json!({"id": id, "action": "trust", "component": "skill:review"}),
            "invalid_args",
        ),
        (
            json!({"id": id, "action": "enable", "component": "skill:gone"}),
            "unknown_component",
        ),
    ] {
        let error = env.invoke("plugins.plan_change", args).await.unwrap_err();
        assert_eq!(error.kind(), kind, "{error}");
    }
    env.host.shutdown().await;
}
