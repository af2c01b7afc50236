//! The content library end to end: skills, prompt commands compiled to the Skill fallback and
//! subagents per realm, names that cannot collide silently, scenes and pipelines with their
//! status, real published skills, and `skills/changed` / `scenes/changed` published by the host
//! exactly once per change, counted by a subscribed plugin.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use c2_contributions::prelude::*;
use c2_contributions::{LibraryItem, LibraryKind, LibraryStatus, SceneKind, SceneStatus};
use c2_host::{ComponentRef, InstallOptions, PluginHost, StateChange, Target};
use serde_json::{Value, json};

use crate::support::{Env, FixtureBundle, options};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project-capable fixture bundle `kit` with skills `review` and `lint` (which ships an
/// executable script), the prompt command `fix`, the subagent `reviewer`, the scene `daily` and
/// the pipeline `ship` (of a version this host does not read).
fn kit(parent: &Path, review: &str) -> PathBuf {
    let dir = FixtureBundle::new("kit")
        .commands(&["kit.noop"])
        .project_capable()
        .write(parent);
    write(
        &dir.join("skills/review/SKILL.md"),
        &format!(
            "---\nname: review\ndescription: {review}\nallowed-tools: Read Grep\n---\nReview.\n"
        ),
    );
    write(
        &dir.join("skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lint the code.\nlicense: MIT\n---\nRun scripts/run.sh.\n",
    );
    let script = dir.join("skills/lint/scripts/run.sh");
    write(&script, "#!/bin/sh\necho lint\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &dir.join("commands/fix.md"),
        "---\nargument-hint: [issue-number]\nallowed-tools: Bash(git add:*), Read\nmodel: fast\n---\nFix issue $ARGUMENTS.\n",
    );
    write(
        &dir.join("agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews diffs.\ntools:\n  - Read\n  - Grep\nmodel: \"strong\"\n---\nYou review diffs.\n",
    );
    write(
        &dir.join("scenes/daily.scene.json"),
        r#"{"version": "1.0", "name": "daily", "agents": []}"#,
    );
    write(
        &dir.join("scenes/ship.pipeline.json"),
        r#"{"version": "2.0", "steps": []}"#,
    );
    dir
}

/// A data-only bundle `other` with a skill `review` (colliding with kit's) and a prompt
/// command `hello` whose description is its first line.
fn other(parent: &Path) -> PathBuf {
    let dir = parent.join("other");
    write(
        &dir.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "other", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    write(
        &dir.join("skills/review/SKILL.md"),
        "---\nname: review\ndescription: Another review.\n---\nReview too.\n",
    );
    write(
        &dir.join("commands/hello.md"),
        "# Say hello\n\nSay hello to $ARGUMENTS.\n",
    );
    dir
}

fn find<'a>(
    items: &'a [LibraryItem],
    bundle: &str,
    kind: LibraryKind,
    name: &str,
) -> &'a LibraryItem {
    items
        .iter()
        .find(|i| i.bundle_name == bundle && i.kind == kind && i.local_name == name)
        .unwrap_or_else(|| panic!("{bundle} {kind:?} {name} in {items:#?}"))
}

#[tokio::test]
async fn the_library_lists_every_item_per_realm_with_names_that_cannot_collide() {
    let env = Env::new().await;
    let bundles = env.path("bundles");
    let kit_id = env.install_ready(&kit(&bundles, "Review code.")).await;
    env.install_ready(&other(&bundles)).await;
    let project = env.project("p");
    let target = Target::Project(project.clone());
    env.host
        .set_component(
            &kit_id,
            &target,
            &ComponentRef::parse("skill:lint").unwrap(),
            StateChange::Disable,
        )
        .await
        .unwrap();

    let user = env.host.skill_library(&Target::User).unwrap();
    assert_eq!(user.len(), 6, "{user:#?}");
    // Both bundles offer `review`: each gets `<bundle>:review`, the bare name is offered by none.
    let review = find(&user, "kit", LibraryKind::Skill, "review");
    assert_eq!(review.name.as_deref(), Some("kit:review"));
    assert_eq!(review.allowed_tools, ["Read", "Grep"]);
    assert_eq!(review.description.as_deref(), Some("Review code."));
    assert!(review.path.ends_with("skills/review/SKILL.md"));
    assert!(review.folder.ends_with("skills/review"));
    assert!(!review.scripts);
    let theirs = find(&user, "other", LibraryKind::Skill, "review");
    assert_eq!(theirs.name.as_deref(), Some("other:review"));
    assert!(!user.iter().any(|i| i.name.as_deref() == Some("review")));
    let lint = find(&user, "kit", LibraryKind::Skill, "lint");
    assert_eq!(
        (lint.name.as_deref(), lint.scripts, &lint.status),
        (Some("lint"), true, &LibraryStatus::Supported)
    );
    assert_eq!(lint.fields.get("license").map(String::as_str), Some("MIT"));
    // The prompt command compiled to the Skill fallback.
    let fix = find(&user, "kit", LibraryKind::PromptCommand, "fix");
    assert_eq!(fix.name.as_deref(), Some("fix"));
    assert_eq!(fix.description.as_deref(), Some("Fix issue $ARGUMENTS."));
    assert_eq!(fix.instructions.as_deref(), Some("Fix issue $ARGUMENTS.\n"));
    assert_eq!(
        fix.fields.get("argument-hint").map(String::as_str),
        Some("issue-number"),
        "a flow list is joined: {:?}",
        fix.fields
    );
    assert_eq!(fix.allowed_tools, ["Bash(git add:*)", "Read"]);
    assert_eq!(fix.fields.get("model").map(String::as_str), Some("fast"));
    let hello = find(&user, "other", LibraryKind::PromptCommand, "hello");
    assert_eq!(hello.description.as_deref(), Some("Say hello"));
    let reviewer = find(&user, "kit", LibraryKind::Agent, "reviewer");
    assert_eq!(reviewer.name.as_deref(), Some("reviewer"));
    assert_eq!(
        reviewer.fields.get("tools").map(String::as_str),
        Some("Read, Grep")
    );
    assert_eq!(
        reviewer.fields.get("model").map(String::as_str),
        Some("strong")
    );
    assert_eq!(
        reviewer.instructions.as_deref(),
        Some("You review diffs.\n")
    );

    // The project withholds `lint`: listed, with the reason, and not offered.
    let in_project = env.host.skill_library(&target).unwrap();
    assert_eq!(in_project.len(), 6);
    let lint = find(&in_project, "kit", LibraryKind::Skill, "lint");
    assert_eq!(lint.name, None);
    assert!(
        matches!(&lint.status, LibraryStatus::Disabled(why) if why.contains("skill:lint")),
        "{:?}",
        lint.status
    );
    assert_eq!(
        find(&in_project, "kit", LibraryKind::Skill, "review")
            .name
            .as_deref(),
        Some("kit:review")
    );

    // Untrusted, a skill that ships scripts is not offered; content without scripts is.
    env.host.untrust(&kit_id).await.unwrap();
    env.host
        .set_state(&kit_id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    let untrusted = env.host.skill_library(&Target::User).unwrap();
    assert_eq!(
        find(&untrusted, "kit", LibraryKind::Skill, "lint").status,
        LibraryStatus::NotTrusted
    );

    // Scenes and pipelines, each with its status.
    let scenes = env.host.scene_library(&Target::User).unwrap();
    assert_eq!(scenes.len(), 2, "{scenes:#?}");
    let daily = scenes.iter().find(|s| s.kind == SceneKind::Scene).unwrap();
    assert_eq!(
        (daily.name.as_str(), daily.version.as_deref(), &daily.status),
        ("daily", Some("1.0"), &SceneStatus::Valid)
    );
    let ship = scenes
        .iter()
        .find(|s| s.kind == SceneKind::Pipeline)
        .unwrap();
    assert!(
        matches!(&ship.status, SceneStatus::Invalid(why) if why.contains("2.0")),
        "{:?}",
        ship.status
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn published_skills_compose_without_a_false_refusal() {
    // `C2_SKILLS_CORPUS`, else `shared/corpora/...` beside an ancestor of this crate (as in
    // c2-manifest's real-world test).
    let corpus = std::env::var_os("C2_SKILLS_CORPUS")
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .map(|a| a.join("shared/corpora/agent-skills-realworld"))
                .find(|d| d.join("skills").is_dir())
        })
        .expect("the real-world skills corpus is beside an ancestor of this crate")
        .join("skills");
    let picks = [
        "anthropics+skills/skills/mcp-builder",
        "anthropics+skills/skills/skill-creator",
        "trailofbits+skills/plugins/c-review/skills/c-review",
        "hashicorp+agent-skills/terraform/policy/skills/terraform-policy",
    ];
    let env = Env::new().await;
    let dir = env.path("bundles/real");
    write(
        &dir.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "real", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    for pick in picks {
        let from = corpus.join(pick);
        let name = from.file_name().unwrap().to_owned();
        let to = dir.join("skills").join(&name);
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
    }
    // Resources and a script beside SKILL.md, as people ship them.
    let script = dir.join("skills/mcp-builder/scripts/check.sh");
    write(&script, "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &dir.join("skills/mcp-builder/reference/notes.md"),
        "notes\n",
    );
    env.install_ready(&dir).await;
    let library = env.host.skill_library(&Target::User).unwrap();
    assert_eq!(library.len(), picks.len(), "{library:#?}");
    for item in &library {
        assert_eq!(item.status, LibraryStatus::Supported, "{item:#?}");
        assert_eq!(item.name.as_deref(), Some(item.local_name.as_str()));
        assert!(item.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    assert!(find(&library, "real", LibraryKind::Skill, "mcp-builder").scripts);
    env.host.shutdown().await;
}

/// Installs, trusted and enabled, a bundle whose plugin subscribes to `skills/changed` and
/// `scenes/changed` and counts what it receives ([`received`]).
async fn install_listener(env: &Env, bundles: &Path) {
    let listener = FixtureBundle::new("listener")
        .events(&["skills/changed", "scenes/changed"])
        .write(bundles);
    env.install_ready(&listener).await;
}

/// The `event/emit` params the listener received so far.
async fn received(host: &PluginHost) -> Vec<Value> {
    let events = host
        .invoke(&Target::User, "fixture.events", json!({}))
        .await
        .unwrap();
    events.as_array().cloned().unwrap_or_default()
}

/// Waits until the listener counted `want` `skills/changed`, then a little longer to see that
/// no more arrive.
async fn expect_count(host: &PluginHost, want: usize, step: &str) {
    let count = |events: &[Value]| {
        events
            .iter()
            .filter(|e| e["name"] == "skills/changed")
            .count()
    };
    let start = Instant::now();
    loop {
        let got = count(&received(host).await);
        if got >= want || start.elapsed() > Duration::from_secs(10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events = received(host).await;
    assert_eq!(count(&events), want, "after {step}: {events:#?}");
    assert!(
        events.iter().all(|e| e["payload"].is_null()),
        "the payload is null: {events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_plugin_receives_one_skills_changed_per_change_and_none_otherwise() {
    let env = Env::new().await;
    let bundles = env.path("bundles");
    // A bundle without library content changes no library.
    install_listener(&env, &bundles).await;
    expect_count(&env.host, 0, "installing a bundle with no skills").await;

    let kit_dir = kit(&bundles, "Review code.");
    let kit_id = env.install_ready(&kit_dir).await;
    expect_count(&env.host, 1, "install").await;

    let project = env.project("p");
    let target = Target::Project(project);
    env.host.skill_library(&target).unwrap();
    env.host
        .set_state(&kit_id, &target, StateChange::Disable)
        .await
        .unwrap();
    expect_count(&env.host, 2, "disable in a project").await;
    env.host
        .set_state(&kit_id, &target, StateChange::Enable)
        .await
        .unwrap();
    expect_count(&env.host, 3, "enable in a project").await;

    env.host
        .set_component(
            &kit_id,
            &Target::User,
            &ComponentRef::parse("skill:lint").unwrap(),
            StateChange::Disable,
        )
        .await
        .unwrap();
    expect_count(&env.host, 4, "a component disable").await;

    // Nothing changes: enabling what is enabled, reconciling.
    env.host
        .set_state(&kit_id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    env.host.reconcile().await;
    expect_count(&env.host, 4, "a change that leaves the library as it was").await;

    // An update that changes a skill.
    kit(&bundles, "Review code carefully.");
    env.host
        .install(
            kit_dir.to_str().unwrap(),
            InstallOptions::trusted_and_enabled(),
        )
        .await
        .unwrap();
    expect_count(&env.host, 5, "an update that changes a skill").await;

    // A change made by another host on the same store.
    let other = c2_contributions::open(options(env.root.path()))
        .await
        .unwrap();
    other
        .set_state(&kit_id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    other.shutdown().await;
    expect_count(&env.host, 6, "a change by another process").await;
    env.host.shutdown().await;
}

/// A host that opens reads no library (its first reconcile only records what each realm's
/// libraries are made of), yet the first change after it still publishes exactly: an update
/// that leaves a bundle's skills as they were publishes nothing, and one that gives a bundle
/// without library content a skill publishes once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_change_after_open_publishes_exactly_though_open_read_no_library() {
    let env = Env::new().await;
    let bundles = env.path("bundles");
    install_listener(&env, &bundles).await;
    let kit_dir = kit(&bundles, "Review code.");
    env.install_ready(&kit_dir).await;
    let plain = FixtureBundle::new("plain")
        .commands(&["plain.noop"])
        .write(&bundles);
    env.install_ready(&plain).await;
    env.host.shutdown().await;

    let host = c2_contributions::open(options(env.root.path()))
        .await
        .unwrap();
    expect_count(&host, 0, "opening").await;
    // Another file of the kit changes; its skills, one with scripts, do not. The new content
    // is trusted with the install, so no realm ever offers the scripts untrusted.
    write(&kit_dir.join("NOTES.md"), "notes\n");
    host.install(
        kit_dir.to_str().unwrap(),
        InstallOptions::trusted_and_enabled(),
    )
    .await
    .unwrap();
    expect_count(&host, 0, "an update that leaves the library as it was").await;
    write(
        &plain.join("skills/tidy/SKILL.md"),
        "---\nname: tidy\ndescription: Tidy up.\n---\nTidy.\n",
    );
    host.install(
        plain.to_str().unwrap(),
        InstallOptions::trusted_and_enabled(),
    )
    .await
    .unwrap();
    expect_count(&host, 1, "an update that adds a skill").await;
    host.shutdown().await;
}
