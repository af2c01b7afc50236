//! The Plugin Hub through the binary (issue 22): `marketplace add/remove/list`, `install
//! NAME[@VERSION] --marketplace`, `search`, `outdated` and `update`, on catalogs, bundles,
//! git repositories and npm packages made here.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::{Sandbox, git, git_repo, store_tree};

fn bundle_json(name: &str, version: &str) -> String {
    json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
           "name": name, "version": version,
           "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
    .to_string()
}

fn catalog(sandbox: &Sandbox, rel: &str, plugins: &Value) -> PathBuf {
    sandbox.write(
        rel,
        &json!({"standardVersion": "1.0.0", "name": "cli-hub", "plugins": plugins}).to_string(),
    )
}

#[test]
fn marketplace_add_list_remove_persist_and_refuse_duplicates_and_unknown_names() {
    let sandbox = Sandbox::new();
    sandbox.write("hub/a/plugin.json", &bundle_json("alpha", "1.0.0"));
    let path = catalog(
        &sandbox,
        "hub/marketplace.json",
        &json!([{"name": "alpha", "version": "1.0.0", "source": {"kind": "local", "path": "a"}}]),
    );
    let empty = sandbox.run(&["marketplace", "list"]);
    assert_eq!(empty.code, 0, "{empty:#?}");
    assert!(
        empty.stdout.contains("no catalogs configured"),
        "{empty:#?}"
    );
    let added = sandbox.run(&["marketplace", "add", "hub", "--format", "json"]);
    assert_eq!(added.code, 0, "{added:#?}");
    let location = path.canonicalize().unwrap().display().to_string();
    assert_eq!(
        added.json()["result"],
        json!({"name": "cli-hub", "location": location})
    );
    let twice = sandbox.run(&[
        "marketplace",
        "add",
        "hub/marketplace.json",
        "--format",
        "json",
    ]);
    assert_eq!(twice.code, 1, "{twice:#?}");
    assert_eq!(twice.json()["error"]["kind"], "duplicate_marketplace");
    let listed = sandbox.run(&["marketplace", "list"]);
    assert!(
        listed.stdout.contains("cli-hub") && listed.stdout.contains(&location),
        "{listed:#?}"
    );
    let listed = sandbox.run(&["marketplace", "list", "--format", "json"]);
    assert_eq!(listed.json()["result"].as_array().unwrap().len(), 1);
    let unknown = sandbox.run(&["marketplace", "remove", "nope", "--format", "json"]);
    assert_eq!(unknown.code, 1);
    assert_eq!(unknown.json()["error"]["kind"], "unknown_marketplace");
    let missing = sandbox.run(&["marketplace", "add", "no/such/place", "--format", "json"]);
    assert_eq!(missing.json()["error"]["kind"], "invalid_catalog");
    let removed = sandbox.run(&["marketplace", "remove", "cli-hub"]);
    assert_eq!(removed.code, 0, "{removed:#?}");
    assert!(removed.stdout.contains("removed catalog cli-hub"));
    let listed = sandbox.run(&["marketplace", "list", "--format", "json"]);
    assert_eq!(listed.json()["result"], json!([]));
}

#[test]
fn install_by_name_and_version_from_a_catalog_records_its_origin_and_refusals_store_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("hub/a/plugin.json", &bundle_json("alpha", "1.0.0"));
    sandbox.write("hub/b/plugin.json", &bundle_json("beta", "1.0.1"));
    catalog(
        &sandbox,
        "hub/marketplace.json",
        &json!([
            {"name": "alpha", "version": "1.0.0", "source": {"kind": "local", "path": "a"}},
            {"name": "beta", "version": "1.0.0", "source": {"kind": "local", "path": "b"}},
        ]),
    );
    let run = sandbox.run(&[
        "install",
        "alpha@1.0.0",
        "--marketplace",
        "hub/marketplace.json",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let result = &run.json()["result"];
    assert_eq!(result["name"], "alpha");
    assert_eq!(result["origin"]["entry"], "alpha");
    assert_eq!(result["origin"]["sourceKind"], "local");
    assert_eq!(result["source"]["kind"], "catalog");
    let before = store_tree(&sandbox.plugins);
    for (spec, kind) in [
        ("beta", "catalog_mismatch"),
        ("alpha@2.0.0", "version_not_found"),
        ("gamma", "entry_not_found"),
    ] {
        let refused = sandbox.run(&["install", spec, "--marketplace", "hub", "--format", "json"]);
        assert_eq!(refused.code, 1, "{spec}: {refused:#?}");
        assert_eq!(refused.json()["error"]["kind"], kind, "{spec}");
        assert_eq!(store_tree(&sandbox.plugins), before, "{spec}");
    }
    let human = sandbox.run(&["install", "beta", "--marketplace", "hub"]);
    assert!(
        human
            .stderr
            .contains("the catalog lists beta 1.0.0 but its source holds beta 1.0.1"),
        "{human:#?}"
    );
    let human = sandbox.run(&["install", "alpha", "--marketplace", "hub"]);
    assert_eq!(human.code, 0, "{human:#?}");
    assert!(
        human
            .stderr
            .contains("replaced alpha 1.0.0 from cli-hub (local)"),
        "{human:#?}"
    );
}

#[test]
fn search_matches_names_descriptions_and_keywords_and_escapes_catalog_text() {
    let sandbox = Sandbox::new();
    sandbox.write("hub/a/plugin.json", &bundle_json("alpha", "1.0.0"));
    catalog(
        &sandbox,
        "hub/marketplace.json",
        &json!([
            {"name": "alpha", "version": "1.0.0", "description": "Lints \u{1b}[31mcode\nerror: fake",
             "keywords": ["Review"], "source": {"kind": "local", "path": "a"}},
            {"name": "beta", "version": "2.0.0", "source": {"kind": "npm", "package": "beta-pkg"}},
        ]),
    );
    let none = sandbox.run(&["search", "alpha"]);
    assert_eq!(none.code, 1, "{none:#?}");
    assert!(none.stderr.contains("none is configured"), "{none:#?}");
    let run = sandbox.run(&[
        "search",
        "REVIEW",
        "--marketplace",
        "hub",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let hits = run.json()["result"].clone();
    assert_eq!(hits.as_array().unwrap().len(), 1);
    assert_eq!(hits[0]["name"], "alpha");
    assert_eq!(hits[0]["sourceKind"], "local");
    assert_eq!(hits[0]["installed"], Value::Null);
    assert!(sandbox.run(&["marketplace", "add", "hub"]).code == 0);
    let human = sandbox.run(&["search", "lints"]);
    assert_eq!(human.code, 0, "{human:#?}");
    assert!(human.stdout.contains("alpha"), "{human:#?}");
    assert!(!human.stdout.contains('\u{1b}'), "{human:#?}");
    assert!(
        !human.stdout.lines().any(|l| l.starts_with("error:")),
        "{human:#?}"
    );
    let all = sandbox.run(&["search", "", "--format", "json"]);
    assert_eq!(all.json()["result"].as_array().unwrap().len(), 2);
    let nothing = sandbox.run(&["search", "zzz"]);
    assert!(
        nothing.stdout.contains("no catalog entry matches"),
        "{nothing:#?}"
    );
}

#[test]
fn outdated_and_update_follow_a_git_catalog_and_keep_enablement() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("catalog-repo");
    let catalog_text = |version: &str| {
        json!({"standardVersion": "1.0.0", "name": "git-hub", "plugins": [
            {"name": "delta", "version": version, "source": {"kind": "local", "path": "delta"}}]})
        .to_string()
    };
    let first = (bundle_json("delta", "1.0.0"), catalog_text("1.0.0"));
    git_repo(
        &repo,
        &[
            ("delta/plugin.json", first.0.as_str()),
            ("marketplace.json", first.1.as_str()),
        ],
    );
    let location = format!("git+file://{}#main", repo.display());
    let add = sandbox.run(&["marketplace", "add", &location]);
    assert_eq!(add.code, 0, "{add:#?}");
    let install = sandbox.run(&["install", "delta", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    let current = sandbox.run(&["outdated"]);
    assert_eq!(current.code, 0, "{current:#?}");
    assert!(current.stdout.contains("is current"), "{current:#?}");
    std::fs::write(
        repo.join("delta/plugin.json"),
        bundle_json("delta", "1.1.0"),
    )
    .unwrap();
    std::fs::write(repo.join("marketplace.json"), catalog_text("1.1.0")).unwrap();
    git(&repo, &["commit", "--quiet", "--all", "--message", "1.1.0"]);
    let outdated = sandbox.run(&["outdated", "--format", "json"]);
    assert_eq!(outdated.code, 0, "{outdated:#?}");
    let rows = outdated.json()["result"].clone();
    assert_eq!(rows[0]["id"], id.as_str());
    assert_eq!(rows[0]["status"], "outdated");
    assert_eq!(rows[0]["available"], "1.1.0");
    let update = sandbox.run(&["update", &id]);
    assert_eq!(update.code, 0, "{update:#?}");
    assert!(
        update
            .stdout
            .contains(&format!("updated {id} 1.0.0 -> 1.1.0")),
        "{update:#?}"
    );
    let listed = sandbox.run(&["list", "--format", "json"]);
    let listed = &listed.json()["result"][0];
    assert_eq!(listed["id"], id.as_str());
    assert_eq!(listed["version"], "1.1.0");
    assert_eq!(listed["enabled"], true);
    let again = sandbox.run(&["update", "--format", "json"]);
    assert_eq!(again.json()["result"]["current"], json!([id]));
    // A bundle not from a catalog has nothing to update from.
    sandbox.write("plain/plugin.json", &bundle_json("plain", "1.0.0"));
    let plain = sandbox.run(&["install", "plain"]);
    assert_eq!(plain.code, 0, "{plain:#?}");
    let plain_id = plain.stdout.trim().to_owned();
    let refused = sandbox.run(&["update", &plain_id, "--format", "json"]);
    assert_eq!(refused.json()["error"]["kind"], "not_from_catalog");
    // A catalog that can no longer be read fails closed.
    std::fs::remove_dir_all(&repo).unwrap();
    let failed = sandbox.run(&["outdated", "--format", "json"]);
    assert_eq!(failed.code, 1, "{failed:#?}");
    assert_eq!(failed.json()["result"][0]["status"], "catalog_failed");
}

#[test]
fn an_npm_entry_is_packed_without_scripts_and_installed_without_its_package_folder() {
    let sandbox = Sandbox::new();
    let marker = sandbox.work.join("SCRIPT-RAN");
    sandbox.write("hub/pkg/plugin.json", &bundle_json("npm-one", "3.0.0"));
    sandbox.write(
        "hub/pkg/package.json",
        &json!({"name": "npm-one", "version": "3.0.0",
                "scripts": {"prepack": format!("touch {}", marker.display())}})
        .to_string(),
    );
    catalog(
        &sandbox,
        "hub/marketplace.json",
        &json!([{"name": "npm-one", "version": "3.0.0", "source": {"kind": "npm", "package": "./pkg"}}]),
    );
    let run = sandbox.run(&[
        "install",
        "npm-one",
        "--marketplace",
        "hub",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let id = run.json()["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(run.json()["result"]["origin"]["sourceKind"], "npm");
    assert!(!marker.exists(), "npm ran a lifecycle script");
    let stored = sandbox.plugins.join(&id).join("bundle");
    assert!(stored.join("plugin.json").is_file());
    assert!(!stored.join("package").exists());
}

#[test]
fn every_npm_spec_form_but_a_catalog_path_or_an_exact_registry_version_is_refused_at_install() {
    let sandbox = Sandbox::new();
    // A bundle outside the catalog's directory that the escaping specs point at.
    let outside = sandbox.work.join("outside");
    sandbox.write("outside/plugin.json", &bundle_json("escape", "1.0.0"));
    let abs = outside.display().to_string();
    let forms = [
        json!({"kind": "npm", "package": format!("file:{abs}")}),
        json!({"kind": "npm", "package": "~/outside"}),
        json!({"kind": "npm", "package": abs}),
        json!({"kind": "npm", "package": "escape", "version": format!("file:{abs}")}),
        json!({"kind": "npm", "package": "git+https://example.invalid/escape.git"}),
        json!({"kind": "npm", "package": "https://example.invalid/escape.tgz"}),
        json!({"kind": "npm", "package": "escape", "version": "latest"}),
        json!({"kind": "npm", "package": "escape", "version": "^1.0.0"}),
        json!({"kind": "npm", "package": "escape@1.0.0"}),
    ];
    // The store's lock file may appear; nothing else may.
    let stored = || {
        let mut tree = store_tree(&sandbox.plugins);
        tree.retain(|(path, _)| path != ".lock");
        tree
    };
    for (i, source) in forms.iter().enumerate() {
        let rel = format!("hub{i}/marketplace.json");
        catalog(
            &sandbox,
            &rel,
            &json!([{"name": "escape", "version": "1.0.0", "source": source}]),
        );
        let run = sandbox.run(&[
            "install",
            "escape",
            "--marketplace",
            &rel,
            "--format",
            "json",
        ]);
        assert_eq!(run.code, 1, "{source}: {run:#?}");
        assert_eq!(run.json()["ok"], false, "{source}: {run:#?}");
        assert_eq!(stored(), [], "{source}: nothing stored");
    }
}
