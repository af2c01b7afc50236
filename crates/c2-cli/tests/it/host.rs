//! The commands that run through the plugin host, with real plugin processes (Node and
//! Python). Each CLI invocation is its own host, so state that lives only in a process (a
//! runtime turning active) is not observable across invocations; policy and the store are.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::{Run, Sandbox, git_repo, pack};

/// A git repository under `work` with one commit and one untracked file, `notes.txt`.
fn repo_with_a_change(sandbox: &Sandbox) -> PathBuf {
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    std::fs::write(repo.join("notes.txt"), "draft\n").unwrap();
    repo
}

fn pack_arg(name: &str) -> String {
    pack(name).to_str().unwrap().to_owned()
}

/// Installs a pack with extra flags and returns its id.
fn install(sandbox: &Sandbox, name: &str, flags: &[&str]) -> String {
    let source = pack_arg(name);
    let mut args = vec!["install", source.as_str()];
    args.extend_from_slice(flags);
    let run = sandbox.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    run.stdout.trim().to_owned()
}

/// The `list --format json` entry of `id`.
fn listed(sandbox: &Sandbox, id: &str) -> Value {
    let list = sandbox.run(&["list", "--format", "json"]).json();
    list["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn error_kind(run: &Run) -> Value {
    run.json()["error"]["kind"].clone()
}

#[test]
fn run_prints_the_git_status_of_the_working_directory_through_the_node_plugin() {
    let sandbox = Sandbox::new();
    let repo = repo_with_a_change(&sandbox);
    let run = sandbox.run_in(&repo, &["run", &pack_arg("hello-runtime"), "hello.status"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["git"]["branch"], "main", "{run:#?}");
    assert_eq!(
        result["git"]["files"],
        json!([{"path": "notes.txt", "status": "??"}])
    );
    assert_eq!(result["summary"], "on main, 1 changed file");
    let steps: Vec<&str> = run.stderr.lines().collect();
    let position = |step: &str| {
        steps
            .iter()
            .position(|line| line.starts_with(step))
            .unwrap_or_else(|| panic!("no `{step}` step: {run:#?}"))
    };
    let order = [
        position("c2-plugins: installed hello-runtime-"),
        position("c2-plugins: trusted hello-runtime-"),
        position("c2-plugins: enabled hello-runtime-"),
        position("c2-plugins: invoking hello.status"),
        position("c2-plugins: unloaded"),
        position("c2-plugins: removed the temporary store"),
    ];
    assert!(order.is_sorted(), "{run:#?}");
    // The throw-away store is used even though C2_PLUGINS_DIR is set.
    assert!(!sandbox.plugins.exists());
}

#[test]
fn run_in_json_wraps_the_result_and_quiet_shows_no_steps() {
    let sandbox = Sandbox::new();
    let repo = repo_with_a_change(&sandbox);
    let args = ["run", &pack_arg("hello-runtime"), "hello.status"];
    let run = sandbox.run_in(&repo, &[&args[..], &["--format", "json", "-q"]].concat());
    assert_eq!(run.code, 0, "{run:#?}");
    let document = run.json();
    assert_eq!(document["ok"], true);
    assert_eq!(document["result"]["git"]["branch"], "main");
    assert_eq!(run.stderr, "", "{run:#?}");
}

#[test]
fn run_with_an_explicit_store_keeps_the_bundle_installed() {
    let sandbox = Sandbox::new();
    let store = sandbox.work.join("kept");
    let run = sandbox.run(&[
        "run",
        &pack_arg("hello-python"),
        "hello-python.greet",
        "--args",
        r#"{"name": "Ada"}"#,
        "--plugins-dir",
        store.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["greeting"], "Hello, Ada!");
    let list = sandbox.run(&["list", "--plugins-dir", store.to_str().unwrap()]);
    assert!(list.stdout.contains("hello-python-"), "{list:#?}");
}

#[test]
fn run_reads_arguments_from_a_file() {
    let sandbox = Sandbox::new();
    sandbox.write("args.json", r#"{"name": "Grace"}"#);
    let run = sandbox.run(&[
        "run",
        &pack_arg("hello-python"),
        "hello-python.greet",
        "--args",
        "@args.json",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.json()["result"]["greeting"], "Hello, Grace!");
}

#[test]
fn a_bundle_runs_only_once_trusted_and_enabled_and_stops_when_disabled() {
    let sandbox = Sandbox::new();
    let id = install(&sandbox, "hello-python", &[]);
    let greet = [
        "invoke",
        "hello-python.greet",
        "--args",
        r#"{"name":"Ada"}"#,
        "--format",
        "json",
    ];
    let entry = listed(&sandbox, &id);
    assert_eq!(
        (&entry["state"], &entry["trusted"], &entry["enabled"]),
        (&json!("untrusted"), &json!(false), &json!(false))
    );

    let refused = sandbox.run(&greet);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert_eq!(error_kind(&refused), "not_trusted");

    for step in ["trust", "enable"] {
        let run = sandbox.run(&[step, &id]);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(run.stdout.contains("policy revision"), "{run:#?}");
    }
    assert_eq!(listed(&sandbox, &id)["state"], "ready");
    let greeted = sandbox.run(&greet);
    assert_eq!(greeted.code, 0, "{greeted:#?}");
    assert_eq!(greeted.json()["result"]["greeting"], "Hello, Ada!");

    let disable = sandbox.run(&["disable", &id, "--format", "json"]);
    assert_eq!(disable.code, 0, "{disable:#?}");
    assert_eq!(disable.json()["result"]["id"], id.as_str());
    let refused = sandbox.run(&greet);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert_eq!(error_kind(&refused), "disabled");
    // The advice is the error's hint, apart from its message.
    let error = &refused.json()["error"];
    assert_eq!(
        error["hint"],
        format!("run `c2-plugins enable {id}`").as_str(),
        "{refused:#?}"
    );
    assert!(
        !error["message"].as_str().unwrap().contains("c2-plugins"),
        "{refused:#?}"
    );
    let human = sandbox.run(&greet[..4]);
    assert!(
        human
            .stderr
            .contains(&format!("\nhint: run `c2-plugins enable {id}`")),
        "{human:#?}"
    );

    let uninstall = sandbox.run(&["uninstall", &id]);
    assert_eq!(uninstall.code, 0, "{uninstall:#?}");
    assert_eq!(listed(&sandbox, &id), Value::Null);
}

#[test]
fn a_trusted_enabled_runtime_lists_its_commands_as_dormant() {
    let sandbox = Sandbox::new();
    let id = install(&sandbox, "hello-runtime", &["--trust", "--enable"]);
    let run = sandbox.run(&["commands", "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let rows = run.json()["result"].as_array().unwrap().clone();
    let row = |name: &str| rows.iter().find(|row| row["name"] == name).cloned();
    let status = row("hello.status").unwrap();
    assert_eq!(status["owner"], format!("bundle:{id}"));
    assert_eq!(status["state"], "dormant");
    assert_eq!(status["visibility"], "internal");
    let git = row("git.status").unwrap();
    assert_eq!(
        (&git["visibility"], &git["state"]),
        (&json!("extension-public"), &json!("built-in"))
    );
    let human = sandbox.run(&["commands"]);
    let line = human
        .stdout
        .lines()
        .find(|line| line.starts_with("hello.status"))
        .unwrap_or_default();
    assert!(line.contains("dormant"), "{human:#?}");
}

#[test]
fn the_catalog_shows_built_in_modules_and_bundles_with_trust() {
    let sandbox = Sandbox::new();
    let id = install(&sandbox, "hello-runtime", &[]);
    let run = sandbox.run(&["catalog", "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let rows = run.json()["result"].as_array().unwrap().clone();
    let bundle = rows
        .iter()
        .find(|row| row["name"] == format!("bundle:{id}"))
        .unwrap();
    assert_eq!(bundle["trusted"], false);
    assert!(rows.iter().any(|row| row["name"] == "git"));
    let human = sandbox.run(&["catalog"]);
    assert!(human.stdout.starts_with("NAME"), "{human:#?}");
}

#[test]
fn reading_commands_on_a_missing_store_create_nothing() {
    let sandbox = Sandbox::new();
    for command in ["list", "catalog", "commands", "ui"] {
        let run = sandbox.run(&[command]);
        assert_eq!(run.code, 0, "{run:#?}");
    }
    let trust = sandbox.run(&["trust", "nothing-1234", "--format", "json"]);
    assert_eq!(error_kind(&trust), "not_installed");
    assert!(!sandbox.plugins.exists());
}

#[test]
fn a_plan_applies_while_current_and_is_refused_once_stale() {
    let sandbox = Sandbox::new();
    let id = install(&sandbox, "hello-python", &["--trust"]);
    let plan = sandbox.run(&["plan", &id, "enable"]);
    assert_eq!(plan.code, 0, "{plan:#?}");
    let file = format!("{id}.plan.json");
    assert!(sandbox.work.join(&file).is_file(), "{plan:#?}");
    assert!(plan.stdout.contains("starts: bundle:"), "{plan:#?}");
    let apply = sandbox.run(&["apply", &file]);
    assert_eq!(apply.code, 0, "{apply:#?}");
    assert_eq!(listed(&sandbox, &id)["enabled"], true);

    let plan = sandbox.run(&["plan", &id, "disable", "--out", "later.json"]);
    assert_eq!(plan.code, 0, "{plan:#?}");
    let untrust = sandbox.run(&["untrust", &id]);
    assert_eq!(untrust.code, 0, "{untrust:#?}");
    let stale = sandbox.run(&["apply", "later.json"]);
    assert_eq!(stale.code, 1, "{stale:#?}");
    assert!(stale.stderr.contains("stale plan"), "{stale:#?}");
    let stale = sandbox.run(&["apply", "later.json", "--format", "json"]);
    assert_eq!(error_kind(&stale), "stale_plan");
    assert_eq!(listed(&sandbox, &id)["enabled"], true);
}

#[test]
fn plan_usage_mistakes_exit_2_before_anything_is_planned() {
    let sandbox = Sandbox::new();
    let id = install(&sandbox, "hello-python", &[]);
    for args in [
        vec!["plan", id.as_str(), "configure"],
        vec!["plan", id.as_str(), "inherit"],
        vec!["plan", id.as_str(), "enable", "--config", "{}"],
    ] {
        let run = sandbox.run(&args);
        assert_eq!(run.code, 2, "{run:#?}");
    }
    assert!(!sandbox.work.join(format!("{id}.plan.json")).exists());
}

#[test]
fn reset_clears_a_bundles_trust_and_enablement() {
    let sandbox = Sandbox::new();
    let id = install(&sandbox, "hello-python", &["--trust", "--enable"]);
    let entry = listed(&sandbox, &id);
    assert_eq!(
        (&entry["trusted"], &entry["enabled"]),
        (&json!(true), &json!(true))
    );
    let reset = sandbox.run(&["reset", &id]);
    assert_eq!(reset.code, 0, "{reset:#?}");
    let entry = listed(&sandbox, &id);
    assert_eq!(
        (&entry["trusted"], &entry["enabled"]),
        (&json!(false), &json!(false))
    );
}

#[test]
fn an_unknown_command_fails_with_its_kind_and_exit_1() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["invoke", "nobody.here", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(error_kind(&run), "unknown_command");
    let human = sandbox.run(&["invoke", "nobody.here"]);
    assert!(
        human.stderr.contains("unknown command `nobody.here`"),
        "{human:#?}"
    );
}

#[test]
fn a_missing_project_directory_is_an_environment_error() {
    let sandbox = Sandbox::new();
    let missing = sandbox.work.join("gone");
    let run = sandbox.run(&[
        "invoke",
        "git.status",
        "--project",
        missing.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(error_kind(&run), "invalid_project");
}

#[test]
fn ui_lists_descriptors_per_slot_and_invoke_ui_runs_the_owning_runtime() {
    let sandbox = Sandbox::new();
    let repo = repo_with_a_change(&sandbox);
    let id = install(&sandbox, "hello-runtime", &["--trust", "--enable"]);
    let ui = sandbox.run(&["ui", "--format", "json"]);
    assert_eq!(ui.code, 0, "{ui:#?}");
    let slot = &ui.json()["result"]["composer.toolbar"];
    assert_eq!(slot[0]["bundle"], id.as_str());
    assert_eq!(slot[0]["command"], "hello.status");

    let invoked = sandbox.run_in(
        &repo,
        &[
            "invoke-ui",
            &id,
            "status",
            "--project",
            ".",
            "--format",
            "json",
        ],
    );
    assert_eq!(invoked.code, 0, "{invoked:#?}");
    assert_eq!(
        invoked.json()["result"]["git"]["branch"],
        "main",
        "{invoked:#?}"
    );
    let unknown = sandbox.run(&["invoke-ui", &id, "nothing", "--format", "json"]);
    assert_eq!(error_kind(&unknown), "unknown_ui");
}

#[test]
fn run_of_a_missing_bundle_directory_is_an_environment_error() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["run", "no-such-bundle", "x.y", "--format", "json"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(error_kind(&run), "unreadable_path");
}

#[test]
fn an_unreadable_plan_file_exits_2_and_a_malformed_one_exits_1() {
    let sandbox = Sandbox::new();
    let missing = sandbox.run(&["apply", "missing.plan.json", "--format", "json"]);
    assert_eq!(missing.code, 2, "{missing:#?}");
    sandbox.write("bad.plan.json", r#"{"format": 1}"#);
    let malformed = sandbox.run(&["apply", "bad.plan.json", "--format", "json"]);
    assert_eq!(malformed.code, 1, "{malformed:#?}");
    assert_eq!(error_kind(&malformed), "invalid_plan");
}

#[test]
fn the_handshake_timeout_option_reaches_the_host() {
    let sandbox = Sandbox::new();
    // No interpreter starts and answers `initialize` within a millisecond.
    let run = sandbox.run(&[
        "run",
        &pack_arg("hello-python"),
        "hello-python.greet",
        "--handshake-timeout",
        "1ms",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(error_kind(&run), "handshake_timeout");
    assert!(run.stderr.contains("c2-plugins: unloaded"), "{run:#?}");
}
