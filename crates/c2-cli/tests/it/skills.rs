//! `c2-plugins skills` and `scenes` end to end: a bundle with two skills, a prompt command, a
//! subagent and a scene, installed from a real git repository, listed in the user realm and in
//! a project with a different component choice; a second bundle's colliding skill name gets the
//! bundle prefix on both sides and the bare name is offered by neither.

use serde_json::Value;

use crate::{HELLO_RUNTIME_FILES, Run, Sandbox, git_repo, pack};

fn ok(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()["result"].clone()
}

fn row<'a>(rows: &'a Value, bundle: &str, kind: &str, local: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["bundleName"] == bundle && r["kind"] == kind && r["localName"] == local)
        .unwrap_or_else(|| panic!("{bundle} {kind} {local} in {rows:#}"))
}

#[test]
fn the_library_of_a_git_installed_bundle_per_realm_with_a_collision_and_a_scene() {
    let sandbox = Sandbox::new();
    let mut files: Vec<(String, String)> = HELLO_RUNTIME_FILES
        .iter()
        .map(|f| {
            (
                (*f).to_owned(),
                std::fs::read_to_string(pack("hello-runtime").join(f)).unwrap(),
            )
        })
        .collect();
    for (rel, text) in [
        (
            "skills/review/SKILL.md",
            "---\nname: review\ndescription: Review code.\nallowed-tools: Read Grep\n---\nReview.\n",
        ),
        (
            "skills/lint/SKILL.md",
            "---\nname: lint\ndescription: Lint code.\n---\nLint.\n",
        ),
        (
            "commands/fix.md",
            "---\ndescription: Fix an issue.\nargument-hint: <issue>\n---\nFix $ARGUMENTS.\n",
        ),
        (
            "agents/reviewer.md",
            "---\nname: reviewer\ndescription: Reviews diffs.\nmodel: strong\n---\nYou review.\n",
        ),
        (
            "scenes/daily.scene.json",
            r#"{"version": "1.0", "name": "daily"}"#,
        ),
    ] {
        files.push((rel.to_owned(), text.to_owned()));
    }
    let repo = sandbox.work.join("repo");
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    git_repo(&repo, &borrowed);
    let source = format!("git+file://{}#main", repo.display());
    let installed = ok(&sandbox.run(&[
        "install", &source, "--trust", "--enable", "--format", "json",
    ]));
    let id = installed["id"].as_str().unwrap().to_owned();

    sandbox.write(
        "other/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "other", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    sandbox.write(
        "other/skills/review/SKILL.md",
        "---\nname: review\ndescription: Another review.\n---\nReview.\n",
    );
    ok(&sandbox.run(&[
        "install", "other", "--trust", "--enable", "--format", "json",
    ]));

    let project = sandbox.work.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project_arg = project.to_str().unwrap();
    ok(&sandbox.run(&[
        "disable",
        &id,
        "--component",
        "skill:lint",
        "--project",
        project_arg,
        "--format",
        "json",
    ]));

    let user = ok(&sandbox.run(&["skills", "--format", "json"]));
    assert_eq!(user.as_array().unwrap().len(), 5, "{user:#}");
    assert_eq!(
        row(&user, "hello-runtime", "skill", "review")["name"],
        "hello-runtime:review"
    );
    assert_eq!(
        row(&user, "other", "skill", "review")["name"],
        "other:review"
    );
    assert_eq!(row(&user, "hello-runtime", "skill", "lint")["name"], "lint");
    let fix = row(&user, "hello-runtime", "prompt-command", "fix");
    assert_eq!(
        (&fix["name"], &fix["description"], &fix["instructions"]),
        (
            &Value::from("fix"),
            &Value::from("Fix an issue."),
            &Value::from("Fix $ARGUMENTS.\n")
        )
    );
    assert_eq!(fix["fields"]["argument-hint"], "<issue>");
    let agent = row(&user, "hello-runtime", "agent", "reviewer");
    assert_eq!(
        (&agent["fields"]["model"], &agent["status"]),
        (&Value::from("strong"), &Value::from("supported"))
    );

    let in_project = ok(&sandbox.run(&["skills", "--project", project_arg, "--format", "json"]));
    let lint = row(&in_project, "hello-runtime", "skill", "lint");
    assert_eq!(lint["name"], Value::Null);
    assert!(
        lint["status"].as_str().unwrap().starts_with("disabled:"),
        "{lint:#}"
    );

    let text = sandbox.run(&["skills", "--project", project_arg]);
    assert_eq!(text.code, 0, "{text:#?}");
    assert!(text.stdout.starts_with("NAME"), "{}", text.stdout);
    assert!(
        text.stdout.contains("hello-runtime:review"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("(lint)"), "{}", text.stdout);

    let scenes = ok(&sandbox.run(&["scenes", "--format", "json"]));
    assert_eq!(scenes.as_array().unwrap().len(), 1, "{scenes:#}");
    assert_eq!(
        (
            &scenes[0]["name"],
            &scenes[0]["status"],
            &scenes[0]["version"]
        ),
        (
            &Value::from("daily"),
            &Value::from("valid"),
            &Value::from("1.0")
        )
    );
    let text = sandbox.run(&["scenes"]);
    assert!(text.stdout.contains("daily"), "{}", text.stdout);
}

/// A live host in this process hears `skills/changed` exactly once for each library change
/// made by another `c2-plugins` process on its store, and not for one that changes nothing.
#[test]
fn a_live_host_publishes_skills_changed_once_per_change_made_by_another_process() {
    let sandbox = Sandbox::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    std::fs::create_dir_all(&sandbox.plugins).unwrap();
    let mut options = c2_host::HostOptions::new(&sandbox.plugins);
    options.working_dir = Some(sandbox.work.clone());
    let host = rt.block_on(c2_contributions::open(options)).unwrap();
    let mut events = rt
        .block_on(async { host.subscribe("skills/changed") })
        .unwrap();
    // Counts the events that arrive within `wait`.
    let mut drain = |wait: std::time::Duration| {
        rt.block_on(async {
            let mut n = 0;
            while let Ok(Some(event)) = tokio::time::timeout(wait, events.recv()).await {
                assert_eq!(event.payload, Value::Null);
                n += 1;
            }
            n
        })
    };
    sandbox.write(
        "docs/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "docs", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    sandbox.write(
        "docs/skills/write/SKILL.md",
        "---\nname: write\ndescription: Write docs.\n---\nWrite.\n",
    );
    let id =
        ok(&sandbox.run(&["install", "docs", "--trust", "--enable", "--format", "json"]))["id"]
            .as_str()
            .unwrap()
            .to_owned();
    let wait = std::time::Duration::from_secs(3);
    assert_eq!(
        drain(wait),
        1,
        "one event for the install by another process"
    );
    ok(&sandbox.run(&["enable", &id, "--format", "json"]));
    assert_eq!(drain(wait), 0, "enabling what is enabled changes nothing");
    ok(&sandbox.run(&["disable", &id, "--format", "json"]));
    assert_eq!(
        drain(wait),
        1,
        "one event for the disable by another process"
    );
    rt.block_on(host.shutdown());
}
