//! User and project realms: isolation, data directories, fallback and its blocking.

use std::sync::Arc;
use std::time::Duration;

use c2_host::{InstallOptions, StateChange, Target};
use serde_json::json;

use crate::support::{Env, FixtureBundle, gone, pid_of};

#[tokio::test]
async fn user_project_a_and_project_b_get_distinct_processes_data_dirs_and_project_paths() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("scoped")
        .project_capable()
        .write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let a = env.project("a");
    let b = env.project("b");
    let user = env.invoke("fixture.info", json!({})).await.unwrap();
    let in_a = env
        .host
        .invoke(&Target::Project(a.clone()), "fixture.info", json!({}))
        .await
        .unwrap();
    let in_b = env
        .host
        .invoke(&Target::Project(b.clone()), "fixture.info", json!({}))
        .await
        .unwrap();
    let pids = [pid_of(&user), pid_of(&in_a), pid_of(&in_b)];
    assert!(
        pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2],
        "{pids:?}"
    );
    assert_eq!(env.host.stats().spawns, 3);
    let plugins = env.path("plugins");
    let canonical_a = std::fs::canonicalize(&a).unwrap();
    let hash_a = blake3::hash(canonical_a.to_str().unwrap().as_bytes())
        .to_hex()
        .to_string();
    assert_eq!(user["projectPath"], json!(null));
    assert_eq!(
        user["dataDir"],
        json!(plugins.join(".data").join(&id).to_str().unwrap())
    );
    assert_eq!(in_a["projectPath"], json!(canonical_a.to_str().unwrap()));
    assert_eq!(
        in_a["dataDir"],
        json!(
            plugins
                .join(".data")
                .join(&id)
                .join("projects")
                .join(&hash_a)
                .to_str()
                .unwrap()
        )
    );
    assert_ne!(in_a["dataDir"], in_b["dataDir"]);
    for info in [&user, &in_a, &in_b] {
        assert!(std::path::Path::new(info["dataDir"].as_str().unwrap()).is_dir());
        // The runtime runs in its bundle directory.
        assert_eq!(
            info["cwd"],
            json!(
                env.path("plugins")
                    .join(&id)
                    .join("bundle")
                    .canonicalize()
                    .unwrap()
                    .to_str()
                    .unwrap()
            )
        );
    }
    // Unloading one realm leaves the others running.
    env.host
        .set_state(&id, &Target::Project(a.clone()), StateChange::Disable)
        .await
        .unwrap();
    assert!(gone(pid_of(&in_a), Duration::from_secs(5)).await);
    assert!(crate::support::alive(pid_of(&user)));
    assert!(crate::support::alive(pid_of(&in_b)));
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_project_disable_fails_closed_instead_of_falling_back_to_the_user_instance() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("blocked")
        .project_capable()
        .write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let a = env.project("a");
    env.host
        .set_state(&id, &Target::Project(a.clone()), StateChange::Disable)
        .await
        .unwrap();
    let error = env
        .host
        .invoke(&Target::Project(a.clone()), "fixture.echo", json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "blocked", "{error}");
    assert_eq!(env.host.stats().spawns, 0);
    // Inherit restores the user's choice, with a project instance of its own.
    env.host
        .set_state(&id, &Target::Project(a.clone()), StateChange::Inherit)
        .await
        .unwrap();
    let info = env
        .host
        .invoke(&Target::Project(a.clone()), "fixture.info", json!({}))
        .await
        .unwrap();
    assert!(info["projectPath"].is_string(), "{info}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_user_only_runtime_serves_projects_through_fallback_without_a_project_path() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("useronly").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let a = env.project("a");
    let from_project = env
        .host
        .invoke(&Target::Project(a), "fixture.info", json!({}))
        .await
        .unwrap();
    let from_user = env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(pid_of(&from_project), pid_of(&from_user));
    assert_eq!(from_project["projectPath"], json!(null));
    assert_eq!(env.host.stats().spawns, 1);
    env.host.shutdown().await;
}

#[tokio::test]
async fn host_commands_are_the_extension_public_surface_of_the_realm() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("surface").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let commands: Vec<&str> = info["hostCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    assert_eq!(commands, vec!["git.status"], "{info}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_second_bundle_declaring_a_taken_command_is_refused_not_shadowing() {
    let env = Env::new().await;
    let first = FixtureBundle::new("first")
        .commands(&["fixture.echo"])
        .write(&env.path("bundles"));
    let second = FixtureBundle::new("second")
        .commands(&["fixture.echo"])
        .write(&env.path("bundles"));
    let first_id = env.install_ready(&first).await;
    let outcome = env
        .host
        .install(
            second.to_str().unwrap(),
            InstallOptions::default()
                .with_trust(true)
                .with_enable(false),
        )
        .await
        .unwrap();
    let error = env
        .host
        .set_state(&outcome.record.id, &Target::User, StateChange::Enable)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "apply_failed", "{error}");
    assert!(error.to_string().contains("already registered"), "{error}");
    // The first owner keeps the command; the failed change was rolled back.
    let rows = env.host.commands(&Target::User).unwrap();
    let echo = rows.iter().find(|c| c.name == "fixture.echo").unwrap();
    assert_eq!(echo.owner, format!("bundle:{first_id}"));
    let second_status = env
        .host
        .list()
        .into_iter()
        .find(|b| b.id == outcome.record.id)
        .unwrap();
    assert!(!second_status.enabled, "{second_status:?}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_idle_project_realm_is_reclaimed_and_rebuilt_on_the_next_call() {
    let env = Env::with(|o| o.kernel.idle_after = Duration::ZERO).await;
    let dir = FixtureBundle::new("idle")
        .project_capable()
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let project = Target::Project(env.project("a"));
    let first = env
        .host
        .invoke(&project, "fixture.info", json!({}))
        .await
        .unwrap();
    let reaped = env.host.reap_idle().await;
    assert_eq!(reaped.len(), 1, "{reaped:?}");
    assert!(gone(pid_of(&first), Duration::from_secs(5)).await);
    let second = env
        .host
        .invoke(&project, "fixture.info", json!({}))
        .await
        .unwrap();
    assert_ne!(pid_of(&first), pid_of(&second));
    // The user realm is never reclaimed.
    let user = env.invoke("fixture.info", json!({})).await.unwrap();
    assert!(env.host.reap_idle().await.len() <= 1);
    assert!(crate::support::alive(pid_of(&user)));
    env.host.shutdown().await;
}

/// An embedder's project-capable module that takes a while to apply, named to apply first, so
/// the first calls to a project realm arrive while it is being built.
struct SlowToApply;

impl c2_kernel::Module for SlowToApply {
    fn name(&self) -> &str {
        "aaa-slow"
    }
    fn meta(&self) -> c2_kernel::ModuleMeta {
        let mut meta = c2_kernel::ModuleMeta::new(c2_kernel::Role::BuiltIn, "embedder", "slow");
        meta.scopes = vec![c2_kernel::ScopeKind::User, c2_kernel::ScopeKind::Project];
        meta
    }
    fn apply<'a>(
        &'a self,
        ctx: &'a mut c2_kernel::ScopeContext,
    ) -> c2_kernel::BoxFuture<'a, Result<(), c2_kernel::Error>> {
        Box::pin(async move {
            if ctx.realm() != &c2_kernel::Realm::Global {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(())
        })
    }
}

/// Concurrent first calls to a project realm that is not built yet: every one is answered by
/// the project's own process, never by the user-realm one that is already running.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_calls_to_a_project_realm_never_reach_the_user_process() {
    let env = Arc::new(Env::new().await);
    env.host
        .register_module(Arc::new(SlowToApply), 1)
        .await
        .unwrap();
    let dir = FixtureBundle::new("racy")
        .project_capable()
        .write(&env.path("bundles"));
    env.install_ready(&dir).await;
    let user = env.invoke("fixture.info", json!({})).await.unwrap();
    let project = env.project("racy");
    let canonical = std::fs::canonicalize(&project).unwrap();
    let (tasks, per_task) = (8, 10);
    let start = Arc::new(tokio::sync::Barrier::new(tasks));
    let calls: Vec<_> = (0..tasks)
        .map(|task| {
            let (env, project, start) = (env.clone(), project.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                // Later tasks arrive while the first one is building the realm.
                tokio::time::sleep(Duration::from_millis(2 * task as u64)).await;
                let mut answers = Vec::new();
                for _ in 0..per_task {
                    let target = Target::Project(project.clone());
                    answers.push(env.host.invoke(&target, "fixture.info", json!({})).await);
                }
                answers
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.extend(call.await.unwrap());
    }
    assert_eq!(answers.len(), 80);
    let wrong: Vec<String> = answers
        .iter()
        .filter_map(|answer| match answer {
            Ok(info)
                if info["projectPath"] == json!(canonical.to_str().unwrap())
                    && info["dataDir"] != user["dataDir"]
                    && pid_of(info) != pid_of(&user) =>
            {
                None
            }
            other => Some(format!("{other:?}")),
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} project calls not answered by the project's process: {wrong:?}",
        wrong.len(),
        answers.len()
    );
    let data_dirs: std::collections::HashSet<String> = answers
        .iter()
        .map(|a| a.as_ref().unwrap()["dataDir"].to_string())
        .collect();
    assert_eq!(data_dirs.len(), 1, "one project process: {data_dirs:?}");
    env.host.shutdown().await;
}
