//! Reviewed updates through the binary (issue 37): a git catalog whose next commit adds a
//! language server and changes a runtime argument; `update --dry-run` shows exactly those
//! two executable-surface changes and stores nothing; `update` drops trust with them as the
//! reason, which `list` shows.

use serde_json::{Value, json};

use crate::{Sandbox, git, git_repo};

fn manifest(version: &str, level: &str, language_server: bool) -> String {
    let mut codetwo = json!({"standardVersion": "1.2.0",
        "commands": [{"id": "lint.run", "title": "Lint"}],
        "runtime": {"command": "python3", "args": ["main.py", "--level", level]}});
    if language_server {
        codetwo["languageServers"] =
            json!([{"id": "lint-ls", "languages": ["python"], "command": "pylsp"}]);
    }
    json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
           "name": "linty", "version": version, "extensions": {"dev.codetwo": codetwo}})
    .to_string()
}

fn catalog(version: &str) -> String {
    json!({"standardVersion": "1.0.0", "name": "review-hub", "plugins": [
        {"name": "linty", "version": version, "source": {"kind": "local", "path": "linty"}}]})
    .to_string()
}

#[test]
fn a_dry_run_shows_the_surface_diff_and_the_update_drops_trust_with_it_as_the_reason() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("catalog-repo");
    let (plugin, listing) = (manifest("1.0.0", "1", false), catalog("1.0.0"));
    git_repo(
        &repo,
        &[
            ("linty/plugin.json", plugin.as_str()),
            ("linty/main.py", "print('lint')\n"),
            ("marketplace.json", listing.as_str()),
        ],
    );
    let location = format!("git+file://{}#main", repo.display());
    assert_eq!(sandbox.run(&["marketplace", "add", &location]).code, 0);
    let install = sandbox.run(&["install", "linty", "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();

    std::fs::write(repo.join("linty/plugin.json"), manifest("1.1.0", "2", true)).unwrap();
    std::fs::write(repo.join("marketplace.json"), catalog("1.1.0")).unwrap();
    git(&repo, &["commit", "--quiet", "--all", "--message", "1.1.0"]);

    let dry = sandbox.run(&["update", &id, "--dry-run", "--format", "json"]);
    assert_eq!(dry.code, 0, "{dry:#?}");
    let result = dry.json()["result"].clone();
    assert_eq!(result["dryRun"], true);
    let pending = &result["pending"][0];
    assert_eq!(pending["id"], id.as_str());
    assert_eq!(
        (&pending["from"], &pending["to"]),
        (&json!("1.0.0"), &json!("1.1.0"))
    );
    let surface: Vec<(Value, Value, Value)> = pending["surface"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].clone(), c["id"].clone(), c["change"].clone()))
        .collect();
    assert_eq!(
        surface,
        vec![
            (json!("runtime"), json!("runtime"), json!("changed")),
            (json!("language-server"), json!("lint-ls"), json!("added")),
        ]
    );
    assert_eq!(
        pending["surface"][0]["after"]["args"],
        json!(["main.py", "--level", "2"])
    );
    assert_eq!(pending["files"]["changed"], json!(["plugin.json"]));
    let human = sandbox.run(&["update", &id, "--dry-run"]);
    assert_eq!(human.code, 0, "{human:#?}");
    let expected = format!(
        "{id} 1.0.0 -> 1.1.0 would be updated (dry run: nothing applied)\n  executable surface changed (2):\n    runtime changed: args [\"main.py\", \"--level\", \"1\"] -> [\"main.py\", \"--level\", \"2\"]\n    language server `lint-ls` added (command `pylsp`)\n  files: 0 added, 0 removed, 1 changed\n    ~ plugin.json"
    );
    assert_eq!(human.stdout.trim_end(), expected, "{human:#?}");
    // The relay's dry run answers the same document.
    let (mut service, socket) = crate::serve::serve_on_socket(&sandbox, "serve.log");
    let mut client = crate::serve::socket_client(&socket);
    let relayed = client.ok("hub/update", json!({"id": id, "dryRun": true}));
    assert_eq!(relayed, result);
    drop(client);
    crate::serve::sigterm(&service);
    assert_eq!(crate::serve::exit_code(&mut service), 0);
    // Nothing was applied: still 1.0.0 and trusted.
    let listed = sandbox.run(&["list", "--format", "json"]);
    let row = &listed.json()["result"][0];
    assert_eq!(
        (&row["version"], &row["trusted"]),
        (&json!("1.0.0"), &json!(true))
    );

    let update = sandbox.run(&["update", &id, "--format", "json"]);
    assert_eq!(update.code, 0, "{update:#?}");
    let updated = &update.json()["result"]["updated"][0];
    let note = updated["notes"][0].as_str().unwrap();
    assert!(
        note.contains("no longer trusted (executable surface changed: runtime changed: args")
            && note.contains("language server `lint-ls` added (command `pylsp`))"),
        "{note}"
    );
    assert_eq!(updated["review"]["surface"].as_array().unwrap().len(), 2);
    let listed = sandbox.run(&["list", "--format", "json"]);
    let row = &listed.json()["result"][0];
    assert_eq!(
        (&row["version"], &row["trusted"]),
        (&json!("1.1.0"), &json!(false))
    );
    assert_eq!(row["state"], "untrusted");
    let reason = row["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("trust was for the content before the update: executable surface changed: runtime changed")
            && reason.contains("language server `lint-ls` added"),
        "{reason}"
    );
    let human = sandbox.run(&["list"]);
    assert!(
        human
            .stdout
            .contains("untrusted: trust was for the content before the update"),
        "{human:#?}"
    );
    // Trusting the new content again clears the reason.
    assert_eq!(sandbox.run(&["trust", &id]).code, 0);
    let listed = sandbox.run(&["list", "--format", "json"]);
    assert_eq!(listed.json()["result"][0]["reason"], Value::Null);
}

#[test]
fn a_content_only_update_says_the_executable_surface_is_unchanged() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("catalog-repo");
    let (plugin, listing) = (manifest("1.0.0", "1", false), catalog("1.0.0"));
    git_repo(
        &repo,
        &[
            ("linty/plugin.json", plugin.as_str()),
            ("linty/README.md", "one\n"),
            ("marketplace.json", listing.as_str()),
        ],
    );
    let location = format!("git+file://{}#main", repo.display());
    assert_eq!(sandbox.run(&["marketplace", "add", &location]).code, 0);
    let install = sandbox.run(&["install", "linty", "--trust"]);
    let id = install.stdout.trim().to_owned();
    let plugin = manifest("1.0.1", "1", false);
    std::fs::write(repo.join("linty/plugin.json"), plugin).unwrap();
    std::fs::write(repo.join("linty/README.md"), "two\n").unwrap();
    std::fs::write(repo.join("marketplace.json"), catalog("1.0.1")).unwrap();
    git(&repo, &["commit", "--quiet", "--all", "--message", "1.0.1"]);
    let dry = sandbox.run(&["update", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:#?}");
    assert!(
        dry.stdout
            .contains("  content changed, executable surface unchanged\n  files: 0 added, 0 removed, 2 changed"),
        "{dry:#?}"
    );
    let update = sandbox.run(&["update", &id]);
    assert_eq!(update.code, 0, "{update:#?}");
    assert!(
        update.stderr.contains(
            "changed content, so it is no longer trusted (content changed, executable surface unchanged)"
        ),
        "{update:#?}"
    );
}

fn plain_bundle(name: &str) -> String {
    json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
           "name": name, "version": "1.0.0",
           "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
    .to_string()
}

#[test]
fn a_right_to_left_override_in_a_skill_warns_and_a_zero_width_joiner_in_a_command_id_refuses() {
    let sandbox = Sandbox::new();
    let manifest = json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "hidden", "version": "1.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
            "commands": [{"id": "hidden.r\u{200d}un", "title": "Run"}],
            "runtime": {"command": "python3", "args": ["main.py"]}}}})
    .to_string();
    sandbox.write("hidden/plugin.json", &manifest);
    sandbox.write("hidden/main.py", "print('ok')  # \u{2067}hidden\u{2069}\n");
    sandbox.write(
        "hidden/skills/review/SKILL.md",
        "---\nname: review\ndescription: Reviews code.\n---\nRun `ls \u{202e}exe.txt`.\n",
    );
    let validated = sandbox.run(&["validate", "hidden", "--format", "json"]);
    assert_eq!(validated.code, 1, "{validated:#?}");
    let diagnostics = validated.json()["results"][0]["diagnostics"].clone();
    let found: Vec<(String, String, String, Value, Value)> = diagnostics
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            ["bidi-control", "hidden-character-in-identifier"]
                .contains(&d["code"].as_str().unwrap_or_default())
        })
        .map(|d| {
            let text = |key: &str| d[key].as_str().unwrap_or_default().to_owned();
            (
                text("code"),
                text("severity"),
                text("file"),
                d["line"].clone(),
                d["column"].clone(),
            )
        })
        .collect();
    let row = |code: &str, severity: &str, file: &str, line: u32, column: u32| {
        (
            code.to_owned(),
            severity.to_owned(),
            file.to_owned(),
            json!(line),
            json!(column),
        )
    };
    assert!(
        found.contains(&row(
            "hidden-character-in-identifier",
            "error",
            "plugin.json",
            1,
            120
        )),
        "{found:#?}"
    );
    assert!(
        found.contains(&row(
            "bidi-control",
            "warning",
            "skills/review/SKILL.md",
            5,
            9
        )),
        "{found:#?}"
    );
    let human = sandbox.run(&["validate", "hidden"]);
    assert!(
        human
            .stdout
            .contains("error[hidden-character-in-identifier]")
            && human.stdout.contains("skills/review/SKILL.md:5:9")
            && human.stdout.contains("\\u{202e}"),
        "{human:#?}"
    );
    let install = sandbox.run(&["install", "hidden", "--format", "json"]);
    assert_eq!(install.code, 1, "{install:#?}");
    assert_eq!(install.json()["error"]["kind"], "invalid_bundle");
    // A valid bundle's runtime script with a hidden character is installed, with a warning.
    sandbox.write(
        "hidden/plugin.json",
        &manifest.replace("r\u{200d}un", "run"),
    );
    let validated = sandbox.run(&["validate", "hidden"]);
    assert_eq!(validated.code, 0, "{validated:#?}");
    assert!(
        validated.stdout.contains("warning[bidi-control]")
            && validated.stdout.contains("main.py:1:16"),
        "{validated:#?}"
    );
    let install = sandbox.run(&["install", "hidden"]);
    assert_eq!(install.code, 0, "{install:#?}");
    assert!(
        install.stderr.contains("warning[bidi-control] main.py"),
        "{install:#?}"
    );
}

#[test]
fn a_name_one_edit_from_an_installed_bundle_of_another_source_gets_a_typosquat_warning() {
    let sandbox = Sandbox::new();
    sandbox.write("a/plugin.json", &plain_bundle("reviewer"));
    sandbox.write("b/plugin.json", &plain_bundle("reviewr"));
    sandbox.write("c/plugin.json", &plain_bundle("formatter"));
    let first = sandbox.run(&["install", "a"]);
    assert_eq!(first.code, 0, "{first:#?}");
    let id = first.stdout.trim().to_owned();
    let again = sandbox.run(&["install", "a"]);
    assert!(!again.stderr.contains("typosquat"), "{again:#?}");
    let unrelated = sandbox.run(&["install", "c"]);
    assert!(!unrelated.stderr.contains("typosquat"), "{unrelated:#?}");
    let squat = sandbox.run(&["install", "b"]);
    assert_eq!(squat.code, 0, "{squat:#?}");
    let expected = format!(
        "warning: possible typosquat: reviewr is one edit away from reviewer (installed as {id} from another source); make sure this is the bundle you meant"
    );
    assert!(squat.stderr.contains(&expected), "{squat:#?}");
    sandbox.write("d/plugin.json", &plain_bundle("reviewer"));
    let json = sandbox.run(&["install", "d", "--format", "json"]);
    let notes = json.json()["result"]["notes"].clone();
    assert!(
        notes.as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("possible typosquat: reviewer is the same name as reviewer")),
        "{notes:#?}"
    );
}
