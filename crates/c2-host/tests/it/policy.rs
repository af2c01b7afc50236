//! Sources, plan files, reset and recovery through the host.

use c2_host::{InstallOptions, PlanAction, StateChange, Target};
use serde_json::json;

use crate::support::{Env, FixtureBundle, git, options};

#[tokio::test]
async fn a_git_source_installs_the_subdirectory_at_the_ref_and_records_the_commit() {
    let env = Env::new().await;
    let repo = env.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    FixtureBundle::new("from-git").write(&repo.join("packs"));
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "bundle"]);
    git(&repo, &["tag", "v1"]);
    let commit = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    // A later commit on main must not be what v1 installs.
    std::fs::write(repo.join("packs/from-git/LATER.md"), "later").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "later"]);
    let source = format!("git+file://{}#v1:packs/from-git", repo.display());
    let outcome = env
        .host
        .install(&source, InstallOptions::trusted_and_enabled())
        .await
        .unwrap();
    assert_eq!(outcome.record.commit.as_deref(), Some(commit.as_str()));
    let dir = env.path("plugins").join(&outcome.record.id).join("bundle");
    assert!(dir.join("plugin.json").is_file());
    assert!(!dir.join("LATER.md").exists());
    assert_eq!(
        env.invoke("fixture.echo", json!(7)).await.unwrap(),
        json!(7)
    );
    // The temporary checkout is gone.
    #[expect(
        clippy::disallowed_methods,
        reason = "the test inspects the store's scratch space"
    )]
    let leftovers = std::fs::read_dir(env.path("plugins/.git-fetch")).map_or(0, Iterator::count);
    assert_eq!(leftovers, 0);
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_missing_ref_is_a_git_error_and_nothing_is_stored() {
    let env = Env::new().await;
    let repo = env.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    FixtureBundle::new("from-git").write(&repo);
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "bundle"]);
    let source = format!("git+file://{}#no-such-ref:from-git", repo.display());
    let error = env
        .host
        .install(&source, InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "git_failed", "{error}");
    assert!(env.host.list().is_empty());
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_plan_file_applies_in_another_host_and_goes_stale_when_policy_moves() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("planned")
        .project_capable()
        .write(&env.path("bundles"));
    let outcome = env
        .host
        .install(
            dir.to_str().unwrap(),
            InstallOptions::default()
                .with_trust(true)
                .with_enable(false),
        )
        .await
        .unwrap();
    let id = outcome.record.id;
    let plan = env.host.plan(&id, None, PlanAction::Enable).await.unwrap();
    assert_eq!(plan.impact.starts, vec![format!("bundle:{id}")]);
    let text = serde_json::to_string(&plan).unwrap();
    env.host.shutdown().await;
    // Another process (another host on the same store) applies it.
    let other = c2_host::PluginHost::open(options(env.root.path()))
        .await
        .unwrap();
    let stale_source = other.plan(&id, None, PlanAction::Disable).await.unwrap();
    let applied = other
        .apply_plan(&serde_json::from_str(&text).unwrap())
        .await
        .unwrap();
    assert!(applied.revision > 0);
    assert_eq!(
        other
            .invoke(&Target::User, "fixture.echo", json!(1))
            .await
            .unwrap(),
        json!(1)
    );
    // The disable plan was made before the enable was applied: it is stale now.
    let error = other.apply_plan(&stale_source).await.unwrap_err();
    assert_eq!(error.kind(), "stale_plan", "{error}");
    assert!(error.to_string().contains("stale plan"), "{error}");
    other.shutdown().await;
}

#[tokio::test]
async fn configuration_reaches_initialize_verbatim_and_a_bad_project_path_is_an_environment_error()
{
    let env = Env::new().await;
    let dir = FixtureBundle::new("configured").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    // The fixture bundle declares no configuration schema: configuring it is refused.
    let error = env
        .host
        .configure(&format!("bundle:{id}"), &Target::User, json!({"a": 1}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "policy_refused", "{error}");
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(info["config"], json!(null));
    let missing = env
        .host
        .invoke(
            &Target::Project(env.path("nowhere")),
            "fixture.echo",
            json!({}),
        )
        .await
        .unwrap_err();
    assert!(missing.is_environment(), "{missing}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn corrupt_policy_files_enter_safe_mode_and_reset_leaves_it() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("safe").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    env.host.shutdown().await;
    let plugins = env.path("plugins");
    std::fs::write(plugins.join("policy.json"), "{ not json").unwrap();
    std::fs::write(plugins.join("policy.last-good.json"), "garbage").unwrap();
    let host = c2_host::PluginHost::open(options(env.root.path()))
        .await
        .unwrap();
    assert!(host.is_safe_mode());
    // The management plane still works in safe mode; the bundle does not run.
    assert!(
        host.invoke(&Target::User, "plugins.list", json!({}))
            .await
            .is_ok()
    );
    let error = host
        .invoke(&Target::User, "fixture.echo", json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "not_trusted", "{error}");
    let refused = host
        .set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), "safe_mode", "{refused}");
    host.reset(None).await.unwrap();
    assert!(!host.is_safe_mode());
    host.trust(&id).await.unwrap();
    host.set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    assert_eq!(
        host.invoke(&Target::User, "fixture.echo", json!(5))
            .await
            .unwrap(),
        json!(5)
    );
    host.shutdown().await;
}

#[tokio::test]
async fn uninstall_racing_re_trust_leaves_nothing_running() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("racer").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let host = env.host.clone();
    let racer = id.clone();
    let trusting = tokio::spawn(async move {
        let _ = host.untrust(&racer).await;
        let _ = host.trust(&racer).await;
        let _ = host.invoke(&Target::User, "fixture.echo", json!({})).await;
    });
    env.host.uninstall(&id).await.unwrap();
    trusting.await.unwrap();
    assert!(env.host.list().is_empty());
    assert!(
        crate::support::gone(
            crate::support::pid_of(&info),
            std::time::Duration::from_secs(5)
        )
        .await
    );
    let error = env.invoke("fixture.echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "unknown_command");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_damaged_installed_bundle_is_reported_and_the_others_still_load() {
    let env = Env::new().await;
    let good = env
        .install_ready(&FixtureBundle::new("good").write(&env.path("bundles")))
        .await;
    let bad = env
        .install_ready(
            &FixtureBundle::new("bad")
                .commands(&["other.echo"])
                .write(&env.path("bundles")),
        )
        .await;
    env.host.shutdown().await;
    let manifest = env.path("plugins").join(&bad).join("bundle/plugin.json");
    std::fs::write(&manifest, "{ \"name\": ").unwrap();
    let host = c2_host::PluginHost::open(options(env.root.path()))
        .await
        .unwrap();
    let problems = host.diagnostics();
    assert!(
        problems
            .iter()
            .any(|p| p.contains(&bad) && p.contains("no longer validates")),
        "{problems:?}"
    );
    let ids: Vec<String> = host.list().into_iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![good]);
    assert_eq!(
        host.invoke(&Target::User, "fixture.echo", json!(1))
            .await
            .unwrap(),
        json!(1)
    );
    host.shutdown().await;
}

/// Trust and enablement asked with an install are one policy revision: when the bundle cannot
/// be enabled (a command another bundle registers), it stays installed, neither trusted nor
/// enabled, and the bundle holding the command goes on serving it.
#[tokio::test]
async fn an_install_whose_enablement_fails_leaves_the_content_neither_trusted_nor_enabled() {
    let env = Env::new().await;
    let bundles = env.path("bundles");
    let first = FixtureBundle::new("first")
        .commands(&["fixture.echo"])
        .write(&bundles);
    env.install_ready(&first).await;
    let second = FixtureBundle::new("second")
        .commands(&["fixture.echo"])
        .write(&bundles);
    let error = env
        .host
        .install(
            second.to_str().unwrap(),
            InstallOptions::trusted_and_enabled(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "apply_failed", "{error}");
    let listed = env.host.list();
    let status = listed
        .iter()
        .find(|status| status.name == "second")
        .expect("the bundle stays installed");
    assert!(!status.trusted && !status.enabled, "{status:?}");
    assert_eq!(status.state, "untrusted");
    env.invoke("fixture.echo", json!({"x": 1})).await.unwrap();
    env.host.shutdown().await;
}
