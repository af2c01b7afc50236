use crate::{Sandbox, pack};

#[test]
fn install_list_and_uninstall_round_trip_in_the_plugin_store() {
    let sandbox = Sandbox::new();
    let source = pack("hello-runtime");
    let install = sandbox.run(&["install", source.to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    assert!(id.starts_with("hello-runtime-"), "{install:#?}");
    assert!(
        install.stderr.contains(&format!(
            "it will not run until you trust it: `c2-plugins trust {id}`"
        )),
        "{install:#?}"
    );
    assert!(sandbox.plugins.join(&id).join("installed.json").is_file());

    let list = sandbox.run(&["list"]);
    assert_eq!(list.code, 0, "{list:#?}");
    assert!(list.stdout.contains(&id), "{list:#?}");
    assert!(
        list.stdout.contains("1 runtime-command, 1 ui-action"),
        "{list:#?}"
    );
    let listed = sandbox.run(&["list", "--format", "json"]).json();
    assert_eq!(listed["ok"], true);
    assert_eq!(listed["result"][0]["id"], id.as_str());
    assert_eq!(listed["result"][0]["version"], "1.0.0");
    assert_eq!(
        listed["result"][0]["contributions"]["runtime-command"][0]["id"],
        "hello.status"
    );

    let uninstall = sandbox.run(&["uninstall", &id, "--format", "json"]);
    assert_eq!(uninstall.code, 0, "{uninstall:#?}");
    assert_eq!(uninstall.json()["result"]["id"], id.as_str());
    assert!(!sandbox.plugins.join(&id).exists());
    let listed = sandbox.run(&["list", "--format", "json"]).json();
    assert_eq!(listed["result"], serde_json::json!([]));

    let again = sandbox.run(&["uninstall", &id, "--format", "json"]);
    assert_eq!(again.code, 1, "{again:#?}");
    assert_eq!(again.json()["error"]["kind"], "not_installed");
}

#[test]
fn plugins_dir_option_wins_over_the_environment() {
    let sandbox = Sandbox::new();
    let explicit = sandbox.work.join("elsewhere");
    let source = pack("hello-python");
    let run = sandbox.run(&[
        "install",
        source.to_str().unwrap(),
        "--plugins-dir",
        explicit.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(explicit.join(run.stdout.trim()).is_dir());
    assert!(!sandbox.plugins.exists());
}

#[test]
fn listing_a_store_that_does_not_exist_lists_nothing_and_creates_nothing() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["list"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("no bundles installed"), "{run:#?}");
    assert!(!sandbox.plugins.exists());
}

#[test]
fn an_invalid_bundle_is_refused_with_its_diagnostics_and_nothing_is_stored() {
    let sandbox = Sandbox::new();
    let bundle = sandbox.copy_hello_runtime("linked");
    std::os::unix::fs::symlink("../../outside/secret", bundle.join("escape")).unwrap();

    let human = sandbox.run(&["install", "linked"]);
    assert_eq!(human.code, 1, "{human:#?}");
    assert!(
        human.stderr.contains("error[symlink-escapes]"),
        "{human:#?}"
    );
    assert!(human.stderr.contains("nothing was installed"), "{human:#?}");

    let json = sandbox.run(&["install", "linked", "--format", "json"]);
    assert_eq!(json.code, 1, "{json:#?}");
    let error = &json.json()["error"];
    assert_eq!(error["kind"], "invalid_bundle");
    assert_eq!(error["diagnostics"][0]["code"], "symlink-escapes");
    assert!(!sandbox.plugins.exists());
}

#[test]
fn a_git_source_is_cloned_at_its_ref_and_its_commit_recorded() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    let files: Vec<(String, String)> =
        ["plugin.json", "plugin.py", "c2_plugin_sdk.py", "README.md"]
            .iter()
            .map(|file| {
                let text = std::fs::read_to_string(pack("hello-python").join(file)).unwrap();
                (format!("packs/hello/{file}"), text)
            })
            .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    crate::git_repo(&repo, &files);
    let source = format!("git+file://{}#main:packs/hello", repo.display());
    let run = sandbox.run(&["install", &source, "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let installed = run.json();
    assert_eq!(installed["result"]["name"], "hello-python", "{run:#?}");
    let commit = installed["result"]["commit"].as_str().unwrap_or_default();
    assert_eq!(commit.len(), 40, "{run:#?}");

    let missing = sandbox.run(&[
        "install",
        "git+file:///nonexistent/repo#main",
        "--format",
        "json",
    ]);
    assert_eq!(missing.code, 1, "{missing:#?}");
    assert_eq!(
        missing.json()["error"]["kind"],
        "git_failed",
        "{missing:#?}"
    );
}

/// Installs a bundle with `scaffolds/web/{index.html,src/app.js}` and returns its id.
fn install_scaffold_bundle(sandbox: &Sandbox) -> String {
    sandbox.write(
        "scaff/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "scaff", "version": "0.1.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    sandbox.write("scaff/scaffolds/web/index.html", "<p>hi</p>\n");
    sandbox.write("scaff/scaffolds/web/src/app.js", "run();\n");
    let run = sandbox.run(&["install", "scaff"]);
    assert_eq!(run.code, 0, "{run:#?}");
    run.stdout.trim().to_owned()
}

#[test]
fn a_scaffold_is_written_into_an_empty_target() {
    let sandbox = Sandbox::new();
    let id = install_scaffold_bundle(&sandbox);
    std::fs::create_dir(sandbox.work.join("site")).unwrap();
    let run = sandbox.run(&["scaffold", &id, "web", "site", "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.json()["result"]["written"],
        serde_json::json!(["index.html", "src/app.js"])
    );
    let app = std::fs::read_to_string(sandbox.work.join("site/src/app.js")).unwrap();
    assert_eq!(app, "run();\n");
}

#[test]
fn a_scaffold_conflict_writes_nothing() {
    let sandbox = Sandbox::new();
    let id = install_scaffold_bundle(&sandbox);
    sandbox.write("site/index.html", "mine\n");
    let run = sandbox.run(&["scaffold", &id, "web", "site", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let error = &run.json()["error"];
    assert_eq!(error["kind"], "scaffold_conflict");
    assert!(error["message"].as_str().unwrap().contains("index.html"));
    assert!(!sandbox.work.join("site/src").exists());
    let kept = std::fs::read_to_string(sandbox.work.join("site/index.html")).unwrap();
    assert_eq!(kept, "mine\n");
}

#[test]
fn a_bundle_without_version_installs_and_lists_with_a_dash_and_a_null() {
    let sandbox = Sandbox::new();
    let dir = sandbox.write(
        "noversion/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "noversion", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    let install = sandbox.run(&["install", dir.parent().unwrap().to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:#?}");
    assert!(install.stderr.contains("noversion - from"), "{install:#?}");
    let list = sandbox.run(&["list"]);
    let row = list
        .stdout
        .lines()
        .find(|l| l.contains("noversion"))
        .unwrap_or_else(|| panic!("{list:#?}"));
    assert_eq!(row.split_whitespace().nth(2), Some("-"), "{row}");
    let listed = sandbox.run(&["list", "--format", "json"]).json();
    assert!(listed["result"][0]["version"].is_null(), "{listed}");
    let id = install.stdout.trim();
    let uninstall = sandbox.run(&["uninstall", id, "--format", "json"]).json();
    assert!(uninstall["result"]["version"].is_null(), "{uninstall}");
}

#[test]
fn uninstall_removes_the_data_directory_unless_told_to_keep_it() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "keeper/plugin.json",
        &serde_json::json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "keeper", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
        .to_string(),
    );
    let install = |sandbox: &Sandbox| {
        let run = sandbox.run(&["install", "keeper"]);
        assert_eq!(run.code, 0, "{run:#?}");
        let id = run.stdout.trim().to_owned();
        let data = sandbox.plugins.join(".data").join(&id);
        std::fs::create_dir_all(data.join("projects/ab")).unwrap();
        std::fs::write(data.join("state.db"), "user data").unwrap();
        std::fs::write(data.join("projects/ab/state.db"), "project data").unwrap();
        (id, data)
    };
    let (id, data) = install(&sandbox);
    let kept = sandbox.run(&["uninstall", &id, "--keep-data", "--format", "json"]);
    assert_eq!(kept.code, 0, "{kept:#?}");
    assert_eq!(kept.json()["result"]["id"], id.as_str());
    assert_eq!(
        std::fs::read_to_string(data.join("state.db")).unwrap(),
        "user data"
    );
    assert!(data.join("projects/ab/state.db").is_file());
    assert!(!sandbox.plugins.join(&id).exists());
    // The same id installed again finds its data; the default uninstall removes it.
    let (again, data) = install(&sandbox);
    assert_eq!(again, id);
    let removed = sandbox.run(&["uninstall", &id]);
    assert_eq!(removed.code, 0, "{removed:#?}");
    assert!(!data.exists(), "uninstall left {}", data.display());
}

#[test]
fn the_relay_uninstall_keeps_the_data_directory_with_keep_data_and_removes_it_without() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "kept/plugin.json",
        &serde_json::json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "kept", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
        .to_string(),
    );
    let source = sandbox.work.join("kept");
    let (mut service, socket) = crate::serve::serve_on_socket(&sandbox, "serve-uninstall.log");
    let mut client = crate::serve::socket_client(&socket);
    for keep in [true, false] {
        let installed = client.ok(
            "plugins/install",
            serde_json::json!({"source": source.to_str().unwrap()}),
        );
        let id = installed["id"].as_str().unwrap().to_owned();
        let data = sandbox.plugins.join(".data").join(&id);
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("state.db"), "data").unwrap();
        let removed = client.ok(
            "plugins/uninstall",
            serde_json::json!({"id": id, "keepData": keep}),
        );
        assert_eq!(removed["id"], id.as_str());
        assert_eq!(data.join("state.db").is_file(), keep, "keepData {keep}");
    }
    crate::serve::sigterm(&service);
    assert_eq!(crate::serve::exit_code(&mut service), 0);
}
