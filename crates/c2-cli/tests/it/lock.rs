//! Provenance and lock files through the binary (issue 37), with real sources made here: a git
//! repository (git CLI), an npm tarball (`npm pack` of a package directory, through a catalog)
//! and a `.tar.gz` archive. `info` and `list` show where each came from; `lock` then `install
//! --locked` on a fresh store reproduces the set byte for byte; a tampered lock or a changed
//! source is refused with nothing stored; `lock verify` reports drift.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::serve::{exit_code, serve_on_socket, sigterm, socket_client};
use crate::{Run, Sandbox, git_repo};

fn bundle_json(name: &str, version: &str) -> String {
    json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
           "name": name, "version": version,
           "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
    .to_string()
}

/// Runs a system tool the test prepares sources with; returns its stdout.
fn tool(dir: &Path, program: &str, args: &[&str]) -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test makes a real npm tarball, archive and hashes with the system tools"
    )]
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("npm_config_cache", dir.join(".npm-cache"))
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap();
    assert!(output.status.success(), "{program} {args:?}: {output:#?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Every file under `dir` with its bytes, sorted by path.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test compares two stores' bundle trees"
        )]
        let entries = std::fs::read_dir(&next).unwrap();
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The installed ids in the store at `plugins`.
fn stored(plugins: &Path) -> Vec<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test inspects what the store holds"
    )]
    let Ok(entries) = std::fs::read_dir(plugins) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join("installed.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

/// `c2-plugins --plugins-dir STORE ARGS`.
fn on(sandbox: &Sandbox, store: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--plugins-dir", store.to_str().unwrap()];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

struct Sources {
    commit: String,
    archive: PathBuf,
    catalog: PathBuf,
}

/// A git repository, an npm package packed into a tarball beside a catalog, and an archive.
fn sources(sandbox: &Sandbox) -> Sources {
    let repo = sandbox.work.join("repo");
    let manifest = bundle_json("git-one", "1.0.0");
    git_repo(
        &repo,
        &[
            ("packs/git-one/plugin.json", manifest.as_str()),
            ("packs/git-one/README.md", "# git-one\n"),
        ],
    );
    let commit = tool(&repo, "git", &["rev-parse", "HEAD"]).trim().to_owned();

    sandbox.write("pkg/plugin.json", &bundle_json("npm-two", "2.0.0"));
    sandbox.write("pkg/README.md", "# npm-two\n");
    sandbox.write(
        "pkg/package.json",
        &json!({"name": "npm-two", "version": "2.0.0",
                "files": ["plugin.json", "README.md"]})
        .to_string(),
    );
    let hub = sandbox.work.join("hub");
    std::fs::create_dir_all(&hub).unwrap();
    let pkg = sandbox.work.join("pkg");
    tool(
        &sandbox.work,
        "npm",
        &[
            "pack",
            "--ignore-scripts",
            "--pack-destination",
            hub.to_str().unwrap(),
            pkg.to_str().unwrap(),
        ],
    );
    let catalog = sandbox.write(
        "hub/marketplace.json",
        &json!({"standardVersion": "1.0.0", "name": "lock-hub", "plugins": [
            {"name": "npm-two", "version": "2.0.0",
             "source": {"kind": "npm", "package": "./npm-two-2.0.0.tgz"}}]})
        .to_string(),
    );

    // A language server makes the bundle's enablement a per-project choice.
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "arch-three", "version": "3.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
            "languageServers": [{"id": "zls", "languages": ["zig"], "command": "python3"}]}}
    });
    sandbox.write("arch/arch-three/plugin.json", &manifest.to_string());
    sandbox.write("arch/arch-three/README.md", "# arch-three\n");
    let archive = sandbox.work.join("arch-three.tar.gz");
    tool(
        &sandbox.work.join("arch/arch-three"),
        "tar",
        &["czf", archive.to_str().unwrap(), "plugin.json", "README.md"],
    );
    Sources {
        commit,
        archive,
        catalog,
    }
}

/// Installs the three sources into `store`; returns the listing by name.
fn install_all(sandbox: &Sandbox, store: &Path, s: &Sources) -> Value {
    let repo = sandbox.work.join("repo");
    let git_source = format!("git+file://{}#main:packs/git-one", repo.display());
    for args in [
        vec!["install", git_source.as_str(), "--trust", "--enable"],
        vec![
            "install",
            "npm-two",
            "--marketplace",
            s.catalog.to_str().unwrap(),
        ],
        vec!["install", s.archive.to_str().unwrap(), "--enable"],
    ] {
        let run = on(sandbox, store, &args);
        assert_eq!(run.code, 0, "{args:?}: {run:#?}");
    }
    let run = on(sandbox, store, &["--format", "json", "list"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let mut by_name = serde_json::Map::new();
    for record in run.json()["result"].as_array().unwrap() {
        by_name.insert(record["name"].as_str().unwrap().to_owned(), record.clone());
    }
    Value::Object(by_name)
}

#[test]
fn provenance_is_recorded_and_a_lock_reproduces_the_set_byte_for_byte() {
    let sandbox = Sandbox::new();
    let s = sources(&sandbox);
    let store = sandbox.plugins.clone();
    let listed = install_all(&sandbox, &store, &s);

    // Git: URL, requested ref, resolved commit and subdirectory.
    let git = &listed["git-one"]["provenance"];
    assert_eq!(git["kind"], "git", "{git:#}");
    assert_eq!(git["reference"], "main");
    assert_eq!(git["commit"], s.commit.as_str());
    assert_eq!(git["subdir"], "packs/git-one");
    assert!(git["installedAt"].as_str().unwrap().ends_with('Z'));
    // npm: name, version and sha512 integrity, through the catalog entry.
    let npm = &listed["npm-two"]["provenance"];
    assert_eq!(npm["kind"], "npm", "{npm:#}");
    assert_eq!(npm["npm"]["name"], "npm-two");
    assert_eq!(npm["npm"]["version"], "2.0.0");
    assert!(
        npm["npm"]["integrity"]
            .as_str()
            .unwrap()
            .starts_with("sha512-")
    );
    assert_eq!(npm["catalog"]["entry"], "npm-two");
    assert_eq!(npm["catalog"]["catalogName"], "lock-hub");
    // Archive: its path and SHA-256, as sha256sum computes it.
    let archive = &listed["arch-three"]["provenance"];
    let sha = tool(&sandbox.work, "sha256sum", &[s.archive.to_str().unwrap()]);
    assert_eq!(archive["kind"], "archive", "{archive:#}");
    assert_eq!(archive["sha256"], sha.split_whitespace().next().unwrap());

    // The relay's listing carries the same provenance.
    let (mut service, socket) = serve_on_socket(&sandbox, "lock-serve.log");
    let mut client = socket_client(&socket);
    let relayed = client.ok("plugins/list", json!({}));
    for record in relayed.as_array().unwrap() {
        let name = record["name"].as_str().unwrap();
        assert_eq!(record["provenance"], listed[name]["provenance"], "{name}");
    }
    drop(client);
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);

    // `info` shows it, in both formats.
    let git_id = listed["git-one"]["id"].as_str().unwrap().to_owned();
    let info = on(&sandbox, &store, &["info", &git_id]);
    assert_eq!(info.code, 0, "{info:#?}");
    assert!(
        info.stdout
            .contains(&format!("commit          {}", s.commit)),
        "{}",
        info.stdout
    );
    assert!(
        info.stdout.contains("source kind     git"),
        "{}",
        info.stdout
    );
    assert!(
        info.stdout.contains("requested ref   main"),
        "{}",
        info.stdout
    );
    let npm_id = listed["npm-two"]["id"].as_str().unwrap().to_owned();
    let info = on(&sandbox, &store, &["--format", "json", "info", &npm_id]);
    assert_eq!(info.json()["result"]["provenance"], *npm);
    let missing = on(&sandbox, &store, &["--format", "json", "info", "nope"]);
    assert_eq!(missing.code, 1);
    assert_eq!(missing.json()["error"]["kind"], "not_installed");

    // A project's own choice is part of the lock too.
    let project = sandbox.work.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let arch_id = listed["arch-three"]["id"].as_str().unwrap().to_owned();
    let project_arg = project.to_str().unwrap();
    let run = on(
        &sandbox,
        &store,
        &["disable", &arch_id, "--project", project_arg],
    );
    assert_eq!(run.code, 0, "{run:#?}");

    // The lock, written and reproduced on a fresh store.
    let lock_path = sandbox.work.join("c2-plugins.lock.json");
    let run = on(
        &sandbox,
        &store,
        &["lock", "--output", lock_path.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let text = std::fs::read_to_string(&lock_path).unwrap();
    let stdout = on(&sandbox, &store, &["lock"]).stdout;
    assert_eq!(stdout, text, "stdout and --output write the same document");
    let lock: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(lock["lockVersion"], 1);
    let ids: Vec<&str> = lock["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, stored(&store), "every installed bundle, sorted by id");
    let plugins = lock["plugins"].as_array().unwrap();
    let arch = plugins
        .iter()
        .find(|e| e["id"] == arch_id.as_str())
        .unwrap();
    assert_eq!(arch["enabled"]["user"], true);
    let projects = arch["enabled"]["projects"].as_object().unwrap();
    assert_eq!(projects.len(), 1, "{arch:#}");
    assert_eq!(projects.values().next().unwrap(), false);

    let fresh = sandbox.work.join("fresh");
    let run = on(
        &sandbox,
        &fresh,
        &[
            "--format",
            "json",
            "install",
            "--locked",
            lock_path.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(stored(&fresh), stored(&store));
    for id in stored(&store) {
        assert_eq!(
            tree(&store.join(&id).join("bundle")),
            tree(&fresh.join(&id).join("bundle")),
            "{id}: the same bytes"
        );
    }
    let again = install_listing(&sandbox, &fresh);
    for (name, record) in listed.as_object().unwrap() {
        let copy = &again[name.as_str()];
        for field in ["id", "digest", "version", "source", "trusted", "enabled"] {
            assert_eq!(copy[field], record[field], "{name}.{field}");
        }
        assert_eq!(copy["provenance"]["kind"], record["provenance"]["kind"]);
    }
    // Locking the fresh store gives the same document, byte for byte: same ids, digests,
    // sources, provenance, trust and enablement (project choices included).
    assert_eq!(on(&sandbox, &fresh, &["lock"]).stdout, text);
    let verify = on(
        &sandbox,
        &fresh,
        &[
            "--format",
            "json",
            "lock",
            "verify",
            lock_path.to_str().unwrap(),
        ],
    );
    assert_eq!(verify.code, 0, "{verify:#?}");
    assert_eq!(verify.json()["result"], json!({"clean": true, "drift": []}));
}

fn install_listing(sandbox: &Sandbox, store: &Path) -> Value {
    let run = on(sandbox, store, &["--format", "json", "list"]);
    let mut by_name = serde_json::Map::new();
    for record in run.json()["result"].as_array().unwrap() {
        by_name.insert(record["name"].as_str().unwrap().to_owned(), record.clone());
    }
    Value::Object(by_name)
}

/// The lock entry of `name` in `lock`, mutably.
fn entry<'a>(lock: &'a mut Value, name: &str) -> &'a mut Value {
    lock["plugins"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["name"] == name)
        .unwrap()
}

#[test]
fn a_tampered_lock_or_a_changed_source_stores_nothing_and_verify_reports_drift() {
    let sandbox = Sandbox::new();
    let s = sources(&sandbox);
    let store = sandbox.plugins.clone();
    install_all(&sandbox, &store, &s);
    let lock_path = sandbox.work.join("lock.json");
    assert_eq!(
        on(
            &sandbox,
            &store,
            &["lock", "--output", lock_path.to_str().unwrap()]
        )
        .code,
        0
    );
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();

    let refused = |lock: &Value, label: &str| -> Value {
        let path = sandbox.work.join(format!("{label}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(lock).unwrap()).unwrap();
        let fresh = sandbox.work.join(format!("fresh-{label}"));
        let run = on(
            &sandbox,
            &fresh,
            &[
                "--format",
                "json",
                "install",
                "--locked",
                path.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, 1, "{label}: {run:#?}");
        assert_eq!(
            stored(&fresh),
            Vec::<String>::new(),
            "{label}: nothing stored"
        );
        run.json()["error"].clone()
    };

    // A digest edited in the lock: refused, naming the entry and both digests.
    let mut lock = good.clone();
    let git = entry(&mut lock, "git-one");
    let real = git["digest"].as_str().unwrap().to_owned();
    let forged = format!(
        "{}{}",
        &real[..63],
        if real.ends_with('0') { '1' } else { '0' }
    );
    git["digest"] = json!(forged);
    let id = git["id"].as_str().unwrap().to_owned();
    let error = refused(&lock, "digest");
    assert_eq!(error["kind"], "digest_mismatch", "{error:#}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&id) && message.contains(&real) && message.contains(&forged),
        "{message}"
    );

    // An npm integrity that does not match the tarball.
    let mut lock = good.clone();
    entry(&mut lock, "npm-two")["provenance"]["npm"]["integrity"] = json!(
        "sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
    );
    let error = refused(&lock, "integrity");
    assert_eq!(error["kind"], "integrity_mismatch", "{error:#}");
    assert!(error["hint"].is_string(), "{error:#}");

    // Another lockVersion and an unknown field are refused before anything is fetched.
    let mut lock = good.clone();
    lock["lockVersion"] = json!(2);
    assert_eq!(refused(&lock, "version")["kind"], "invalid_lock");
    let mut lock = good.clone();
    entry(&mut lock, "arch-three")["surprise"] = json!(true);
    assert_eq!(refused(&lock, "unknown")["kind"], "invalid_lock");

    // The archive's content changed at its recorded path: its SHA-256 no longer matches.
    sandbox.write("arch/arch-three/README.md", "# arch-three, changed\n");
    tool(
        &sandbox.work.join("arch/arch-three"),
        "tar",
        &[
            "czf",
            s.archive.to_str().unwrap(),
            "plugin.json",
            "README.md",
        ],
    );
    let error = refused(&good, "changed");
    assert_eq!(error["kind"], "digest_mismatch", "{error:#}");
    assert!(
        error["message"].as_str().unwrap().contains("SHA-256"),
        "{error:#}"
    );

    // Drift: one bundle removed, one added that the lock does not list.
    let verify = |args: &[&str]| on(&sandbox, &store, args);
    let arch_id = entry(&mut good.clone(), "arch-three")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(verify(&["uninstall", &arch_id]).code, 0);
    let extra = sandbox.work.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(
        extra.join("plugin.json"),
        bundle_json("extra-four", "4.0.0"),
    )
    .unwrap();
    assert_eq!(verify(&["install", extra.to_str().unwrap()]).code, 0);
    let run = verify(&[
        "--format",
        "json",
        "lock",
        "verify",
        lock_path.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:#?}");
    let result = &run.json()["result"];
    assert_eq!(result["clean"], false);
    let kinds: Vec<(String, String)> = result["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap().to_owned(),
                d["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("missing".to_owned(), arch_id.clone())),
        "{kinds:?}"
    );
    assert!(
        kinds
            .iter()
            .any(|(k, id)| k == "extra" && id.starts_with("extra-four")),
        "{kinds:?}"
    );
    let human = verify(&["lock", "verify", lock_path.to_str().unwrap()]);
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains("missing") && human.stdout.contains("extra"),
        "{}",
        human.stdout
    );
}
