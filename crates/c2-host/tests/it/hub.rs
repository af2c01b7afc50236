//! The Plugin Hub through the host (issue 22): a catalog with every source kind made here
//! (a local folder, a git repository pinned at a commit, a GitHub `owner/name` served from a
//! local base, `npm pack` of a directory and of a tarball, an archive beside the catalog),
//! refusals that store nothing, and updates of a live host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_host::{HostOptions, InstallOptions, OutdatedStatus, PluginHost, Target};
use serde_json::{Value, json};

use crate::support::{Env, FixtureBundle, git, gone, options, pid_of};

/// Every path under `dir` with its bytes (symlinks as their target), sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test compares the whole store before and after"
        )]
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                stack.push(path);
            } else if kind.is_file() {
                out.push((rel, std::fs::read(&path).unwrap()));
            } else {
                out.push((rel, b"(other)".to_vec()));
            }
        }
    }
    out.sort();
    out
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "the tests make tarballs and digests with the system tools"
    )]
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{program} {args:?}: {output:#?}");
    String::from_utf8(output.stdout).unwrap()
}

/// A runtime-less bundle `name` at `version` in `dir`, with `extra` in its README.
fn plain_bundle(dir: &Path, name: &str, version: &str, extra: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
               "name": name, "version": version, "description": format!("{name} for tests"),
               "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), format!("# {name}\n{extra}\n")).unwrap();
}

fn write_catalog(dir: &Path, plugins: &Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("marketplace.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&json!({
            "standardVersion": "1.0.0", "name": "test-hub", "plugins": plugins
        }))
        .unwrap(),
    )
    .unwrap();
    path
}

fn commit_all(repo: &Path, message: &str) -> String {
    git(repo, &["add", "--all"]);
    git(repo, &["commit", "--quiet", "-m", message]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// Catalog entries of every source kind under `root`, with what each should install.
fn every_kind(root: &Path) -> Value {
    let catalog = root.join("catalog");
    plain_bundle(&catalog.join("plugins/local-one"), "local-one", "1.0.0", "");
    // git: a repository with the bundle in a subdirectory, pinned at its commit.
    let repo = root.join("repos/git-one");
    plain_bundle(&repo.join("packs/git-one"), "git-one", "1.2.0", "");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    let sha = commit_all(&repo, "first");
    // github: `o/gh-one` under a local base standing in for https://github.com.
    let gh = root.join("gh/o/gh-one.git");
    plain_bundle(&gh, "gh-one", "0.3.0", "");
    git(&gh, &["init", "--quiet", "--initial-branch=main"]);
    commit_all(&gh, "first");
    // npm, a directory: a prepack script that must never run.
    let npm_dir = catalog.join("npm/npm-dir");
    plain_bundle(&npm_dir, "npm-dir", "2.0.0", "");
    let marker = root.join("PREPACK-RAN");
    std::fs::write(
        npm_dir.join("package.json"),
        json!({"name": "npm-dir", "version": "2.0.0",
               "scripts": {"prepack": format!("touch {}", marker.display()),
                           "prepare": format!("touch {}", marker.display())}})
        .to_string(),
    )
    .unwrap();
    // npm, a tarball as npm makes them: everything under package/.
    let staging = root.join("npm-staging");
    plain_bundle(&staging.join("package"), "npm-tgz", "1.0.1", "");
    std::fs::write(
        staging.join("package/package.json"),
        json!({"name": "npm-tgz", "version": "1.0.1"}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(catalog.join("npm")).unwrap();
    let tgz = catalog.join("npm/npm-tgz-1.0.1.tgz");
    run(&staging, "tar", &["-czf", tgz.to_str().unwrap(), "package"]);
    // archive beside the catalog, with its SHA-256.
    let arch = root.join("arch-src");
    plain_bundle(&arch, "arch-one", "4.0.0", "");
    std::fs::create_dir_all(catalog.join("dist")).unwrap();
    let archive = catalog.join("dist/arch-one.tar.gz");
    run(&arch, "tar", &["-czf", archive.to_str().unwrap(), "."]);
    let sha256 = run(root, "sha256sum", &[archive.to_str().unwrap()]);
    let sha256 = sha256.split_whitespace().next().unwrap().to_owned();
    json!([
        {"name": "local-one", "version": "1.0.0", "keywords": ["Review"],
         "source": {"kind": "local", "path": "plugins/local-one"}},
        {"name": "git-one", "version": "1.2.0",
         "source": {"kind": "git", "url": format!("file://{}", repo.display()), "ref": sha, "path": "packs/git-one"}},
        {"name": "gh-one", "version": "0.3.0", "source": {"kind": "github", "repo": "o/gh-one", "ref": "main"}},
        {"name": "npm-dir", "version": "2.0.0", "source": {"kind": "npm", "package": "./npm/npm-dir"}},
        {"name": "npm-tgz", "version": "1.0.1", "source": {"kind": "npm", "package": "./npm/npm-tgz-1.0.1.tgz"}},
        {"name": "arch-one", "version": "4.0.0", "description": "An ARCHIVE source",
         "source": {"kind": "archive", "url": "dist/arch-one.tar.gz", "sha256": sha256}},
    ])
}

async fn env_with_github(root_for_gh: &Path) -> (tempfile::TempDir, PluginHost) {
    let root = tempfile::tempdir().unwrap();
    let mut options: HostOptions = options(root.path());
    options.hub.github_base = format!("file://{}", root_for_gh.join("gh").display());
    let host = PluginHost::open(options).await.unwrap();
    (root, host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_with_every_source_kind_installs_each_entry_verified_and_records_its_origin() {
    let work = tempfile::tempdir().unwrap();
    let plugins = every_kind(work.path());
    let catalog = write_catalog(&work.path().join("catalog"), &plugins);
    let (root, host) = env_with_github(work.path()).await;
    let location = catalog.to_str().unwrap();
    for (name, version, kind) in [
        ("local-one", "1.0.0", "local"),
        ("git-one", "1.2.0", "git"),
        ("gh-one", "0.3.0", "github"),
        ("npm-dir", "2.0.0", "npm"),
        ("npm-tgz", "1.0.1", "npm"),
        ("arch-one", "4.0.0", "archive"),
    ] {
        let outcome = host
            .install_from_catalog(
                name,
                Some(version),
                Some(location),
                InstallOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let record = &outcome.record;
        assert_eq!(
            (record.name.as_str(), record.version.as_deref()),
            (name, Some(version))
        );
        let origin = record.origin.as_ref().unwrap();
        assert_eq!(
            (origin.entry.as_str(), origin.source_kind.as_str()),
            (name, kind)
        );
        assert_eq!(
            origin.catalog,
            catalog.canonicalize().unwrap().display().to_string()
        );
        assert_eq!(origin.catalog_name.as_deref(), Some("test-hub"));
        if kind == "git" {
            let pinned = plugins[1]["source"]["ref"].as_str().unwrap();
            assert_eq!(record.commit.as_deref(), Some(pinned));
        }
        // The npm package/ folder is gone: plugin.json sits at the stored root.
        if kind == "npm" {
            let stored = root.path().join("plugins").join(&record.id).join("bundle");
            assert!(stored.join("plugin.json").is_file(), "{name}");
            assert!(stored.join("package.json").is_file(), "{name}");
            assert!(!stored.join("package").exists(), "{name}");
        }
    }
    assert!(
        !work.path().join("PREPACK-RAN").exists(),
        "npm ran a lifecycle script"
    );
    let installed: Vec<String> = host.list().into_iter().map(|b| b.name).collect();
    assert_eq!(installed.len(), 6, "{installed:?}");
    // Installing an entry again replaces the same id.
    let again = host
        .install_from_catalog("local-one", None, Some(location), InstallOptions::default())
        .await
        .unwrap();
    assert!(again.replaced);
    assert_eq!(host.list().len(), 6);
    // search: names, descriptions and keywords, any case.
    let hits = host.search("review", Some(location)).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].name, "local-one");
    assert!(hits[0].installed.is_some());
    let hits = host.search("archive", Some(location)).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
        ["arch-one"]
    );
    assert_eq!(host.search("", Some(location)).await.unwrap().len(), 6);
    // All current.
    let rows = host.outdated().await;
    assert_eq!(rows.len(), 6);
    assert!(
        rows.iter().all(|r| r.status == OutdatedStatus::Current),
        "{rows:#?}"
    );
    host.shutdown().await;
}

/// Runs `attempt`, which must fail with `kind`, and checks the store is byte-for-byte the same.
async fn refused(host: &PluginHost, plugins: &Path, location: &str, name: &str, kind: &str) {
    let before = tree(plugins);
    let error = host
        .install_from_catalog(name, None, Some(location), InstallOptions::default())
        .await
        .expect_err(name);
    assert_eq!(error.kind(), kind, "{name}: {error}");
    assert!(error.to_string().contains("nothing"), "{name}: {error}");
    assert_eq!(tree(plugins), before, "{name} left something in the store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mismatched_pinned_escaping_and_tampered_entries_are_refused_and_store_nothing() {
    let env = Env::new().await;
    let root = env.path("work");
    let catalog_dir = root.join("catalog");
    plain_bundle(&catalog_dir.join("named"), "other-name", "1.0.0", "");
    plain_bundle(&catalog_dir.join("versioned"), "versioned", "1.0.1", "");
    plain_bundle(&root.join("outside"), "outside", "1.0.0", "");
    std::os::unix::fs::symlink(root.join("outside"), catalog_dir.join("linked")).unwrap();
    // A branch named like a commit that is not in the repository: a pin must be the commit.
    let repo = root.join("repo");
    plain_bundle(&repo, "pinned", "1.0.0", "");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    commit_all(&repo, "first");
    let fake = "0123456789abcdef0123456789abcdef01234567";
    git(&repo, &["branch", fake]);
    let archive_src = root.join("arch");
    plain_bundle(&archive_src, "tampered", "1.0.0", "");
    std::fs::create_dir_all(catalog_dir.join("dist")).unwrap();
    let archive = catalog_dir.join("dist/tampered.tgz");
    run(
        &archive_src,
        "tar",
        &["-czf", archive.to_str().unwrap(), "."],
    );
    let catalog = write_catalog(
        &catalog_dir,
        &json!([
            {"name": "named", "version": "1.0.0", "source": {"kind": "local", "path": "named"}},
            {"name": "versioned", "version": "1.0.0", "source": {"kind": "local", "path": "versioned"}},
            {"name": "outside", "version": "1.0.0", "source": {"kind": "local", "path": "linked"}},
            {"name": "pinned", "version": "1.0.0",
             "source": {"kind": "git", "url": format!("file://{}", repo.display()), "ref": fake}},
            {"name": "tampered", "version": "1.0.0",
             "source": {"kind": "archive", "url": "dist/tampered.tgz", "sha256": "0".repeat(64)}},
        ]),
    );
    let location = catalog.to_str().unwrap();
    let plugins = env.path("plugins");
    refused(&env.host, &plugins, location, "named", "catalog_mismatch").await;
    refused(
        &env.host,
        &plugins,
        location,
        "versioned",
        "catalog_mismatch",
    )
    .await;
    refused(&env.host, &plugins, location, "outside", "unsafe_source").await;
    refused(&env.host, &plugins, location, "pinned", "commit_mismatch").await;
    refused(&env.host, &plugins, location, "tampered", "digest_mismatch").await;
    // A wanted version that the catalog does not list, and an unknown entry.
    let error = env
        .host
        .install_from_catalog(
            "named",
            Some("2.0.0"),
            Some(location),
            InstallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "version_not_found");
    let error = env
        .host
        .install_from_catalog("nope", None, Some(location), InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "entry_not_found");
    assert!(env.host.list().is_empty());
    // A `local` path with `..` makes the whole catalog invalid: nothing is read from it.
    let bad = write_catalog(
        &root.join("bad"),
        &json!([{"name": "up", "version": "1.0.0", "source": {"kind": "local", "path": "../catalog/named"}}]),
    );
    refused(
        &env.host,
        &plugins,
        bad.to_str().unwrap(),
        "up",
        "invalid_catalog",
    )
    .await;
    // So does an npm `package` outside the catalog's directory, in any spec form.
    for (i, package) in ["../outside", "file:../outside", "~/outside"]
        .iter()
        .enumerate()
    {
        let bad = write_catalog(
            &root.join(format!("bad-npm-{i}")),
            &json!([{"name": "escape-npm", "version": "1.0.0", "source": {"kind": "npm", "package": package}}]),
        );
        refused(
            &env.host,
            &plugins,
            bad.to_str().unwrap(),
            "escape-npm",
            "invalid_catalog",
        )
        .await;
    }
    env.host.shutdown().await;
}

/// Writes the fixture bundle `hub-fixture` at `version` under `dir`, with `extra` changing its
/// content; returns its directory.
fn fixture_at(dir: &Path, version: &str, extra: &str) -> PathBuf {
    let bundle = FixtureBundle::new("hub-fixture").write(dir);
    let manifest_path = bundle.join("plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["version"] = json!(version);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    std::fs::write(bundle.join("NOTES.md"), extra).unwrap();
    bundle
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_replaces_in_place_keeping_enablement_and_data_and_dropping_changed_trust() {
    let env = Env::new().await;
    let catalog_dir = env.path("catalog");
    let versions = catalog_dir.join("v1");
    fixture_at(&versions, "1.0.0", "first");
    let entry = |version: &str, path: &str| {
        json!([{"name": "hub-fixture", "version": version,
                "source": {"kind": "local", "path": path}}])
    };
    let catalog = write_catalog(&catalog_dir, &entry("1.0.0", "v1/hub-fixture"));
    let location = catalog.to_str().unwrap();
    let ready = InstallOptions::default().with_trust(true).with_enable(true);
    let id = env
        .host
        .install_from_catalog("hub-fixture", None, Some(location), ready)
        .await
        .unwrap()
        .record
        .id;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let old_pid = pid_of(&info);
    let data = env.path(&format!("plugins/.data/{id}"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("kept.txt"), "runtime data").unwrap();

    // Nothing newer yet.
    let report = env.host.update(Some(&id)).await.unwrap();
    assert_eq!(report.current, vec![id.clone()]);
    assert!(env.host.update(None).await.unwrap().updated.is_empty());

    // A failed update (the catalog says 3.0.0, the bundle is 2.0.0) keeps the old one running.
    fixture_at(&catalog_dir.join("v2"), "2.0.0", "second");
    write_catalog(&catalog_dir, &entry("3.0.0", "v2/hub-fixture"));
    let outdated = env.host.outdated().await;
    assert_eq!(outdated[0].status, OutdatedStatus::Outdated);
    assert_eq!(outdated[0].available.as_deref(), Some("3.0.0"));
    let report = env.host.update(None).await.unwrap();
    assert_eq!(report.failed.len(), 1, "{report:#?}");
    assert_eq!(report.failed[0].kind, "catalog_mismatch");
    let listed = env.host.list();
    assert_eq!(listed[0].version.as_deref(), Some("1.0.0"));
    assert!(listed[0].trusted && listed[0].enabled);
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(
        pid_of(&info),
        old_pid,
        "a failed update restarted the runtime"
    );

    // A real update: same id, enabled, data kept, trust dropped with a note, process stopped.
    write_catalog(&catalog_dir, &entry("2.0.0", "v2/hub-fixture"));
    let report = env.host.update(Some(&id)).await.unwrap();
    assert_eq!(report.updated.len(), 1, "{report:#?}");
    let updated = &report.updated[0];
    assert_eq!(updated.id, id);
    assert_eq!(
        (updated.from.as_deref(), updated.to.as_str()),
        (Some("1.0.0"), "2.0.0")
    );
    assert!(
        updated
            .outcome
            .notes
            .iter()
            .any(|n| n.contains("changed content, so it is no longer trusted")),
        "{:?}",
        updated.outcome.notes
    );
    assert!(
        gone(old_pid, Duration::from_secs(20)).await,
        "the old runtime still runs"
    );
    let listed = env.host.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    assert_eq!(listed[0].version.as_deref(), Some("2.0.0"));
    assert!(listed[0].enabled && !listed[0].trusted, "{:?}", listed[0]);
    assert_eq!(
        std::fs::read_to_string(data.join("kept.txt")).unwrap(),
        "runtime data"
    );
    let error = env.invoke("fixture.info", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), "not_trusted", "{error}");
    // Trusting the new content runs the new version.
    env.host.trust(&id).await.unwrap();
    let info = env
        .host
        .invoke(&Target::User, "fixture.info", json!({}))
        .await
        .unwrap();
    assert_ne!(pid_of(&info), old_pid);
    assert_eq!(env.host.outdated().await[0].status, OutdatedStatus::Current);
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_catalogs_persist_refuse_duplicates_and_feed_install_and_search() {
    let env = Env::new().await;
    let catalog_dir = env.path("catalog");
    plain_bundle(&catalog_dir.join("a"), "alpha", "1.0.0", "");
    let catalog = write_catalog(
        &catalog_dir,
        &json!([{"name": "alpha", "version": "1.0.0", "description": "First Letter",
                 "source": {"kind": "local", "path": "a"}}]),
    );
    let location = catalog.to_str().unwrap();
    let added = env.host.marketplace_add(location, None).await.unwrap();
    assert_eq!(added.name, "test-hub");
    let again = env.host.marketplace_add(location, Some("other")).await;
    assert_eq!(again.unwrap_err().kind(), "duplicate_marketplace");
    let dir_form = env
        .host
        .marketplace_add(catalog_dir.to_str().unwrap(), Some("x"))
        .await;
    assert_eq!(dir_form.unwrap_err().kind(), "duplicate_marketplace");
    let invalid = env.path("invalid.json");
    std::fs::write(&invalid, "{\"standardVersion\": \"9\"}").unwrap();
    let error = env
        .host
        .marketplace_add(invalid.to_str().unwrap(), Some("bad"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_catalog");
    // Persisted in the store: a second host sees it.
    let second = PluginHost::open(options(env.root.path())).await.unwrap();
    assert_eq!(second.marketplaces().unwrap(), vec![added.clone()]);
    second.shutdown().await;
    // Install by name from the configured list, by configured name, and search.
    let hits = env.host.search("LETTER", None).await.unwrap();
    assert_eq!(hits.len(), 1);
    let outcome = env
        .host
        .install_from_catalog("alpha", None, Some("test-hub"), InstallOptions::default())
        .await
        .unwrap();
    let by_list = env
        .host
        .install_from_catalog("alpha", Some("1.0.0"), None, InstallOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.record.id, by_list.record.id);
    assert_eq!(
        env.host.marketplace_remove("nope").unwrap_err().kind(),
        "unknown_marketplace"
    );
    env.host.marketplace_remove("test-hub").unwrap();
    assert!(env.host.marketplaces().unwrap().is_empty());
    assert_eq!(
        env.host.search("alpha", None).await.unwrap_err().kind(),
        "no_marketplace"
    );
    // The installed bundle keeps its origin: outdated still reads its catalog.
    assert_eq!(env.host.outdated().await[0].status, OutdatedStatus::Current);
    assert_eq!(
        env.host
            .update(Some("nope-12345678"))
            .await
            .unwrap_err()
            .kind(),
        "not_installed"
    );
    // Two hosts adding at once both land: the list is changed under the store's lock.
    let twin_dir = env.path("twin");
    plain_bundle(&twin_dir.join("a"), "alpha", "1.0.0", "");
    let twin = write_catalog(
        &twin_dir,
        &json!([{"name": "alpha", "version": "1.0.0", "source": {"kind": "local", "path": "a"}}]),
    );
    let second = PluginHost::open(options(env.root.path())).await.unwrap();
    let (a, b) = tokio::join!(
        env.host.marketplace_add(location, Some("first")),
        second.marketplace_add(twin.to_str().unwrap(), Some("second")),
    );
    a.unwrap();
    b.unwrap();
    let mut names: Vec<String> = env
        .host
        .marketplaces()
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    names.sort();
    assert_eq!(names, ["first", "second"]);
    // Both list `alpha`: by name alone it is ambiguous, and nothing is installed.
    let before = env.host.list().len();
    let error = env
        .host
        .install_from_catalog("alpha", None, None, InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "ambiguous_entry", "{error}");
    assert!(error.to_string().contains("--marketplace"), "{error}");
    assert_eq!(env.host.list().len(), before);
    second.shutdown().await;
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_in_a_git_repository_resolves_local_entries_inside_its_checkout() {
    let env = Env::new().await;
    let repo = env.path("catalog-repo");
    plain_bundle(&repo.join("hub/bundles/in-repo"), "in-repo", "1.0.0", "");
    write_catalog(
        &repo.join("hub"),
        &json!([{"name": "in-repo", "version": "1.0.0",
                 "source": {"kind": "local", "path": "bundles/in-repo"}}]),
    );
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    commit_all(&repo, "catalog");
    let location = format!("git+file://{}#main:hub", repo.display());
    let outcome = env
        .host
        .install_from_catalog("in-repo", None, Some(&location), InstallOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.record.origin.as_ref().unwrap().catalog, location);
    // The checkout is gone afterwards.
    assert!(!env.path("plugins/.git-fetch").exists());
    // A newer version committed to the repository is seen by outdated and update.
    plain_bundle(&repo.join("hub/bundles/in-repo"), "in-repo", "1.1.0", "");
    write_catalog(
        &repo.join("hub"),
        &json!([{"name": "in-repo", "version": "1.1.0",
                 "source": {"kind": "local", "path": "bundles/in-repo"}}]),
    );
    commit_all(&repo, "1.1.0");
    assert_eq!(
        env.host.outdated().await[0].status,
        OutdatedStatus::Outdated
    );
    let report = env.host.update(None).await.unwrap();
    assert_eq!(report.updated[0].to, "1.1.0");
    assert_eq!(report.updated[0].id, outcome.record.id);
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_limits_are_options_and_each_refuses_with_its_name() {
    let work = tempfile::tempdir().unwrap();
    // An `npm` that never finishes: the deadline stops it, and nothing is stored.
    let slow_npm = work.path().join("slow-npm");
    std::fs::write(&slow_npm, "#!/bin/sh\nexec sleep 30\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&slow_npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = Env::with(|options| {
        options.hub.max_catalog_bytes = 600;
        options.hub.max_marketplaces = 1;
        options.hub.npm_program = slow_npm.clone();
        options.hub.fetch_run.deadline = Duration::from_millis(500);
    })
    .await;
    let small = write_catalog(
        &work.path().join("small"),
        &json!([{"name": "slow", "version": "1.0.0", "source": {"kind": "npm", "package": "slow"}}]),
    );
    let started = std::time::Instant::now();
    let error = env
        .host
        .install_from_catalog(
            "slow",
            None,
            Some(small.to_str().unwrap()),
            InstallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "npm_failed", "{error}");
    assert!(error.to_string().contains("deadline"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(env.host.list().is_empty());
    // A catalog over max_catalog_bytes.
    let entries: Vec<Value> = (0..20)
        .map(|i| json!({"name": format!("e{i}"), "version": "1.0.0", "source": {"kind": "local", "path": "x"}}))
        .collect();
    let big = write_catalog(&work.path().join("big"), &Value::Array(entries));
    let error = env
        .host
        .search("e", Some(big.to_str().unwrap()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_catalog");
    assert!(error.to_string().contains("max_catalog_bytes"), "{error}");
    // One catalog at most.
    env.host
        .marketplace_add(small.to_str().unwrap(), None)
        .await
        .unwrap();
    let other = write_catalog(&work.path().join("other"), &json!([]));
    let error = env
        .host
        .marketplace_add(other.to_str().unwrap(), Some("other"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "too_many_marketplaces", "{error}");
    assert_eq!(env.host.marketplaces().unwrap().len(), 1);
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_archive_is_downloaded_https_only_capped_and_checked_against_its_sha256() {
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let src = work.path().join("src");
    plain_bundle(&src, "remote-one", "1.0.0", "");
    let archive = served.join("remote-one.tgz");
    run(&src, "tar", &["-czf", archive.to_str().unwrap(), "."]);
    let sha256 = run(work.path(), "sha256sum", &[archive.to_str().unwrap()]);
    let sha256 = sha256.split_whitespace().next().unwrap().to_owned();
    std::fs::write(served.join("huge.tgz"), vec![0u8; 100 * 1024]).unwrap();
    // A stand-in for curl that serves files from `served` and records its arguments.
    let args_log = work.path().join("curl-args");
    let curl = work.path().join("fake-curl");
    std::fs::write(
        &curl,
        format!(
            "#!/bin/sh\necho \"$@\" >> {log}\nfor last; do :; done\nexec cat {dir}/\"${{last##*/}}\"\n",
            log = args_log.display(),
            dir = served.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&curl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = Env::with(|options| {
        options.hub.curl_program = curl.clone();
        options.limits.max_archive_bytes = 64 * 1024;
    })
    .await;
    let catalog = write_catalog(
        &work.path().join("catalog"),
        &json!([
            {"name": "remote-one", "version": "1.0.0",
             "source": {"kind": "archive", "url": "https://example.invalid/remote-one.tgz", "sha256": sha256}},
            {"name": "wrong-sum", "version": "1.0.0",
             "source": {"kind": "archive", "url": "https://example.invalid/remote-one.tgz", "sha256": "f".repeat(64)}},
            {"name": "huge", "version": "1.0.0",
             "source": {"kind": "archive", "url": "https://example.invalid/huge.tgz"}},
        ]),
    );
    let location = catalog.to_str().unwrap();
    let outcome = env
        .host
        .install_from_catalog(
            "remote-one",
            None,
            Some(location),
            InstallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.record.origin.as_ref().unwrap().source_kind,
        "archive"
    );
    let logged = std::fs::read_to_string(&args_log).unwrap();
    assert!(
        logged.contains("--proto =https --proto-redir =https")
            && logged.contains("--max-filesize 65536"),
        "{logged}"
    );
    let plugins = env.path("plugins");
    refused(
        &env.host,
        &plugins,
        location,
        "wrong-sum",
        "digest_mismatch",
    )
    .await;
    let before = tree(&plugins);
    let error = env
        .host
        .install_from_catalog("huge", None, Some(location), InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "fetch_failed", "{error}");
    assert_eq!(tree(&plugins), before);
    env.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_that_is_a_fifo_is_refused_without_waiting_for_a_writer() {
    let env = Env::new().await;
    let fifo = env.path("marketplace.json");
    run(env.root.path(), "mkfifo", &[fifo.to_str().unwrap()]);
    let started = std::time::Instant::now();
    let error = env
        .host
        .search("x", Some(fifo.to_str().unwrap()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_catalog");
    assert!(error.to_string().contains("not a regular file"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    env.host.shutdown().await;
}
