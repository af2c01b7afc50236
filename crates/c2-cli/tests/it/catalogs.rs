//! Catalogs in the formats other tools write (issue 35), through the binary: a Claude Code
//! catalog in a real git repository and a Codex catalog in a directory, with local and git
//! sources, are added, searched, installed from and updated from; bad entries are skipped
//! with a warning, withheld entries and content that is not a C2 bundle are refused before
//! anything is stored.

use serde_json::{Value, json};

use crate::{Sandbox, git, git_repo, store_tree};

fn bundle_json(name: &str, version: &str) -> String {
    json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
           "name": name, "version": version,
           "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
    .to_string()
}

fn hit<'a>(hits: &'a Value, name: &str) -> &'a Value {
    hits.as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("no hit {name} in {hits:#}"))
}

fn enabled(sandbox: &Sandbox, id: &str) -> Value {
    let listed = sandbox.run(&["list", "--format", "json"]).json();
    listed["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .map(|b| b["enabled"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn a_claude_code_catalog_in_a_git_repository_is_added_searched_installed_from_and_updated_from() {
    let sandbox = Sandbox::new();
    // A bundle in its own repository, named by a `url` source that lists no version.
    let beta_repo = sandbox.work.join("beta-repo");
    let beta = bundle_json("remote-beta", "0.1.0");
    git_repo(&beta_repo, &[("plugin.json", beta.as_str())]);
    let catalog_text = |alpha_version: &str| {
        json!({
            "name": "claude-hub",
            "owner": {"name": "Catalog Owner"},
            "metadata": {"description": "written as Claude Code documents it", "pluginRoot": "./plugins"},
            "plugins": [
                {"name": "alpha", "version": alpha_version, "description": "formats code",
                 "tags": ["style"], "source": "alpha"},
                {"name": "remote-beta",
                 "source": {"source": "url", "url": format!("file://{}", beta_repo.display()), "ref": "main"}},
                {"name": "claude-only", "source": "./claude-only"},
                {"name": "strict-off", "source": "alpha", "strict": false},
                {"name": "Bad_Entry", "source": "alpha"}
            ]})
        .to_string()
    };
    let repo = sandbox.work.join("claude-catalog");
    let alpha = bundle_json("alpha", "1.0.0");
    let claude_only = json!({"name": "claude-only", "version": "1.0.0"}).to_string();
    let first = catalog_text("1.0.0");
    git_repo(
        &repo,
        &[
            (".claude-plugin/marketplace.json", first.as_str()),
            ("plugins/alpha/plugin.json", alpha.as_str()),
            (
                "plugins/claude-only/.claude-plugin/plugin.json",
                claude_only.as_str(),
            ),
        ],
    );
    // `validate` reads it by its own format: the bad entry is an error with its pointer.
    let file = repo.join(".claude-plugin/marketplace.json");
    let validated = sandbox.run(&["validate", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(validated.code, 1, "{validated:#?}");
    assert!(
        validated.stdout.contains("/plugins/4/name"),
        "{validated:#?}"
    );
    assert!(!validated.stdout.contains("unknown-key"), "{validated:#?}");
    let location = format!("git+file://{}#main", repo.display());
    let add = sandbox.run(&["marketplace", "add", &location]);
    assert_eq!(add.code, 0, "{add:#?}");
    assert!(
        add.stderr
            .contains("warning: skipped entry 4 (Bad_Entry) at /plugins/4"),
        "{add:#?}"
    );
    assert!(add.stdout.contains("added catalog claude-hub"), "{add:#?}");

    let search = sandbox.run(&["search", "", "--format", "json"]);
    assert_eq!(search.code, 0, "{search:#?}");
    let hits = search.json()["result"].clone();
    assert_eq!(hits.as_array().unwrap().len(), 4, "{hits:#}");
    assert_eq!(hit(&hits, "alpha")["format"], "claude");
    assert_eq!(hit(&hits, "alpha")["version"], "1.0.0");
    assert_eq!(hit(&hits, "remote-beta")["version"], Value::Null);
    assert_eq!(hit(&hits, "remote-beta")["sourceKind"], "git");
    assert!(
        hit(&hits, "strict-off")["notAvailable"]
            .as_str()
            .unwrap()
            .contains("strict: false"),
        "{hits:#}"
    );
    let by_tag = sandbox.run(&["search", "style"]);
    assert!(by_tag.stdout.contains("alpha"), "{by_tag:#?}");
    let human = sandbox.run(&["search", "strict"]);
    assert!(human.stdout.contains("(not available)"), "{human:#?}");

    let before = store_tree(&sandbox.plugins);
    let withheld = sandbox.run(&["install", "strict-off", "--format", "json"]);
    assert_eq!(withheld.code, 1, "{withheld:#?}");
    assert_eq!(withheld.json()["error"]["kind"], "entry_not_available");
    let foreign = sandbox.run(&["install", "claude-only", "--format", "json"]);
    assert_eq!(foreign.code, 1, "{foreign:#?}");
    let error = &foreign.json()["error"];
    assert_eq!(error["kind"], "unsupported_source", "{error:#}");
    assert!(
        error["message"].as_str().unwrap().contains(
            "a Claude Code plugin (.claude-plugin/plugin.json) with no Agent Plugins plugin.json"
        ),
        "{error:#}"
    );
    let skipped = sandbox.run(&["install", "Bad_Entry", "--format", "json"]);
    assert_eq!(skipped.code, 1, "{skipped:#?}");
    assert_eq!(store_tree(&sandbox.plugins), before);

    let install = sandbox.run(&["install", "alpha", "--format", "json"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let result = install.json()["result"].clone();
    assert_eq!(result["origin"]["version"], "1.0.0");
    assert_eq!(result["origin"]["catalogName"], "claude-hub");
    let alpha_id = result["id"].as_str().unwrap().to_owned();
    let install = sandbox.run(&["install", "remote-beta", "--enable", "--format", "json"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let result = install.json()["result"].clone();
    // The catalog lists no version: the origin records the bundle's own.
    assert_eq!(result["origin"]["version"], "0.1.0");
    assert_eq!(result["origin"]["sourceKind"], "git");
    let beta_id = result["id"].as_str().unwrap().to_owned();
    let current = sandbox.run(&["outdated"]);
    assert_eq!(current.code, 0, "{current:#?}");
    assert!(current.stdout.contains("is current"), "{current:#?}");

    // New versions: alpha through the catalog, remote-beta in its own repository.
    let alpha = bundle_json("alpha", "1.1.0");
    std::fs::write(repo.join("plugins/alpha/plugin.json"), alpha).unwrap();
    std::fs::write(
        repo.join(".claude-plugin/marketplace.json"),
        catalog_text("1.1.0"),
    )
    .unwrap();
    git(
        &repo,
        &["commit", "--quiet", "--all", "--message", "alpha 1.1.0"],
    );
    std::fs::write(
        beta_repo.join("plugin.json"),
        bundle_json("remote-beta", "0.2.0"),
    )
    .unwrap();
    git(
        &beta_repo,
        &["commit", "--quiet", "--all", "--message", "0.2.0"],
    );
    let outdated = sandbox.run(&["outdated", "--format", "json"]);
    assert_eq!(outdated.code, 0, "{outdated:#?}");
    let rows = outdated.json()["result"].clone();
    for (id, available) in [(&alpha_id, "1.1.0"), (&beta_id, "0.2.0")] {
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id.as_str())
            .unwrap();
        assert_eq!(row["status"], "outdated", "{rows:#}");
        assert_eq!(row["available"], available, "{rows:#}");
    }
    let update = sandbox.run(&["update"]);
    assert_eq!(update.code, 0, "{update:#?}");
    assert!(
        update
            .stdout
            .contains(&format!("updated {alpha_id} 1.0.0 -> 1.1.0")),
        "{update:#?}"
    );
    assert!(
        update
            .stdout
            .contains(&format!("updated {beta_id} 0.1.0 -> 0.2.0")),
        "{update:#?}"
    );
    assert_eq!(enabled(&sandbox, &beta_id), true);
    let again = sandbox.run(&["update", "--format", "json"]);
    assert_eq!(again.json()["result"]["updated"], json!([]), "{again:#?}");
}

#[test]
fn a_codex_catalog_in_a_directory_honours_its_policies_and_is_searched_installed_and_updated() {
    let sandbox = Sandbox::new();
    let eps_repo = sandbox.work.join("eps-repo");
    let eps = bundle_json("git-eps", "2.0.0");
    git_repo(&eps_repo, &[("plugins/git-eps/plugin.json", eps.as_str())]);
    sandbox.write(
        "codex-root/plugins/gamma/plugin.json",
        &bundle_json("gamma", "1.0.0"),
    );
    sandbox.write(
        "codex-root/plugins/delta/plugin.json",
        &bundle_json("delta", "1.0.0"),
    );
    let catalog = sandbox.write(
        "codex-root/.agents/plugins/marketplace.json",
        &json!({
        "name": "codex-hub",
        "interface": {"displayName": "Codex Hub"},
        "plugins": [
            {"name": "gamma", "source": {"source": "local", "path": "./plugins/gamma"},
             "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
             "category": "Productivity"},
            {"name": "delta", "source": "./plugins/delta",
             "policy": {"installation": "INSTALLED_BY_DEFAULT"}},
            {"name": "withheld", "source": "./plugins/gamma",
             "policy": {"installation": "NOT_AVAILABLE"}},
            {"name": "git-eps",
             "source": {"source": "git-subdir", "url": format!("file://{}", eps_repo.display()),
                        "path": "plugins/git-eps", "ref": "main"}},
            {"name": "outside", "source": {"source": "local", "path": "../outside"}}
        ]})
        .to_string(),
    );
    // Named directly, the file is read the same way (its root is two levels up).
    let direct = sandbox.run(&[
        "search",
        "gamma",
        "--marketplace",
        catalog.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(direct.code, 0, "{direct:#?}");
    assert_eq!(direct.json()["result"][0]["format"], "codex");
    let add = sandbox.run(&["marketplace", "add", "codex-root"]);
    assert_eq!(add.code, 0, "{add:#?}");
    assert!(
        add.stderr
            .contains("warning: skipped entry 4 (outside) at /plugins/4"),
        "{add:#?}"
    );
    let hits = sandbox.run(&["search", "", "--format", "json"]).json()["result"].clone();
    assert_eq!(hits.as_array().unwrap().len(), 4, "{hits:#}");
    assert_eq!(
        hit(&hits, "withheld")["notAvailable"],
        "the catalog marks it NOT_AVAILABLE"
    );
    assert_eq!(hit(&hits, "delta")["defaultEnabled"], true);
    assert_eq!(hit(&hits, "gamma")["catalog"], "codex-hub");

    let before = store_tree(&sandbox.plugins);
    let withheld = sandbox.run(&["install", "withheld", "--format", "json"]);
    assert_eq!(withheld.code, 1, "{withheld:#?}");
    let error = &withheld.json()["error"];
    assert_eq!(error["kind"], "entry_not_available");
    assert!(
        error["message"].as_str().unwrap().contains("NOT_AVAILABLE"),
        "{error:#}"
    );
    assert_eq!(store_tree(&sandbox.plugins), before);

    let gamma = sandbox.run(&["install", "gamma"]);
    assert_eq!(gamma.code, 0, "{gamma:#?}");
    let gamma_id = gamma.stdout.trim().to_owned();
    assert_eq!(enabled(&sandbox, &gamma_id), false);
    let delta = sandbox.run(&["install", "delta"]);
    assert_eq!(delta.code, 0, "{delta:#?}");
    let delta_id = delta.stdout.trim().to_owned();
    assert!(delta.stderr.contains(", enabled"), "{delta:#?}");
    assert_eq!(
        enabled(&sandbox, &delta_id),
        true,
        "INSTALLED_BY_DEFAULT enables"
    );
    let again = sandbox.run(&["install", "delta", "--format", "json"]);
    assert_eq!(again.json()["result"]["enabled"], true, "{again:#?}");
    assert_eq!(again.json()["result"]["trusted"], false, "{again:#?}");
    let eps = sandbox.run(&["install", "git-eps", "--format", "json"]);
    assert_eq!(eps.code, 0, "{eps:#?}");
    let eps_id = eps.json()["result"]["id"].as_str().unwrap().to_owned();
    // `gamma@1.0.0` is what the source holds; another version is not.
    let pinned = sandbox.run(&["install", "gamma@9.9.9", "--format", "json"]);
    assert_eq!(
        pinned.json()["error"]["kind"],
        "version_not_found",
        "{pinned:#?}"
    );

    // The catalog lists no versions: what the sources hold now is what is offered.
    sandbox.write(
        "codex-root/plugins/gamma/plugin.json",
        &bundle_json("gamma", "1.1.0"),
    );
    std::fs::write(
        eps_repo.join("plugins/git-eps/plugin.json"),
        bundle_json("git-eps", "2.1.0"),
    )
    .unwrap();
    git(
        &eps_repo,
        &["commit", "--quiet", "--all", "--message", "2.1.0"],
    );
    let outdated = sandbox.run(&["outdated", "--format", "json"]);
    assert_eq!(outdated.code, 0, "{outdated:#?}");
    let rows = outdated.json()["result"].clone();
    let status = |id: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| (r["status"].clone(), r["available"].clone()))
            .unwrap()
    };
    assert_eq!(status(&gamma_id), (json!("outdated"), json!("1.1.0")));
    assert_eq!(status(&delta_id), (json!("current"), json!("1.0.0")));
    assert_eq!(status(&eps_id), (json!("outdated"), json!("2.1.0")));
    let update = sandbox.run(&["update", &gamma_id]);
    assert_eq!(update.code, 0, "{update:#?}");
    assert!(
        update
            .stdout
            .contains(&format!("updated {gamma_id} 1.0.0 -> 1.1.0")),
        "{update:#?}"
    );
    // An update keeps the user's choice: gamma stays disabled.
    assert_eq!(enabled(&sandbox, &gamma_id), false);
    let update = sandbox.run(&["update", &eps_id]);
    assert!(
        update
            .stdout
            .contains(&format!("updated {eps_id} 2.0.0 -> 2.1.0")),
        "{update:#?}"
    );
}
