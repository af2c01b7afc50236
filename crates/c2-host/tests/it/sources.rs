//! Hostile sources through the host (issue 17): git repositories made here with symlinks,
//! submodules and hooks, option-like refs, marketplace links, repeated zip names, edited
//! installed files, validity options and read-only stores. Each case checks the disk after.

use std::path::{Path, PathBuf};

use c2_host::{InstallOptions, PluginHost};
use serde_json::json;

use crate::support::{Env, git, options};

/// The installed ids (directories holding installed.json) in a plugins directory.
fn stored(plugins: &Path) -> Vec<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test inspects what the store holds"
    )]
    let entries = std::fs::read_dir(plugins);
    let Ok(entries) = entries else {
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

/// Scratch checkouts left in the store.
fn fetch_leftovers(plugins: &Path) -> usize {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test inspects the store's scratch space"
    )]
    let entries = std::fs::read_dir(plugins.join(".git-fetch"));
    entries.map_or(0, Iterator::count)
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn commit_all(repo: &Path, message: &str) {
    git(repo, &["add", "--all"]);
    git(repo, &["commit", "--quiet", "-m", message]);
}

/// A plain bundle without a runtime, so it validates anywhere.
fn plain_bundle(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": name, "version": "1.0.0",
               "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), format!("# {name}\n")).unwrap();
}

/// A hostile repository: `escape -> ../../../../outside` (relative, out of the clone),
/// `absolute -> <outside>` and `inside -> packs/real` (a symlinked directory inside it), and a
/// real bundle at packs/real.
fn hostile_repo(env: &Env) -> (PathBuf, PathBuf) {
    let outside = env.path("outside");
    plain_bundle(&outside, "stolen");
    std::fs::write(outside.join("secret.txt"), "the user's file\n").unwrap();
    let repo = env.path("repo");
    plain_bundle(&repo.join("packs/real"), "real");
    symlink("../../../../outside", repo.join("escape"));
    symlink(&outside, repo.join("absolute"));
    symlink("packs/real", repo.join("inside"));
    std::fs::create_dir_all(repo.join("via")).unwrap();
    symlink("../packs", repo.join("via/packs"));
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    commit_all(&repo, "hostile");
    (repo, outside)
}

#[tokio::test]
async fn a_git_subdirectory_through_a_symlink_is_refused_and_nothing_is_stored() {
    let env = Env::new().await;
    let (repo, outside) = hostile_repo(&env);
    let plugins = env.path("plugins");
    for subdir in [
        "escape",
        "absolute",
        "inside",
        "via/packs/real",
        "packs/../escape",
    ] {
        let source = format!("git+file://{}#main:{subdir}", repo.display());
        let error = env
            .host
            .install(&source, InstallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "unsafe_source", "{subdir}: {error}");
        assert!(error.to_string().contains("nothing was stored"), "{error}");
        assert_eq!(stored(&plugins), Vec::<String>::new(), "{subdir}");
        assert_eq!(fetch_leftovers(&plugins), 0);
    }
    assert!(env.host.list().is_empty());
    // The outside directory is as it was.
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "the user's file\n"
    );
    // The real directory of the same repository installs.
    let source = format!("git+file://{}#main:packs/real", repo.display());
    let outcome = env
        .host
        .install(&source, InstallOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.record.name, "real");
    assert_eq!(stored(&plugins), vec![outcome.record.id.clone()]);
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_option_like_ref_is_refused_before_git_runs() {
    let env = Env::new().await;
    let repo = env.path("repo");
    plain_bundle(&repo.join("pack"), "pack");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    commit_all(&repo, "pack");
    // Each of these reached git as an option before.
    for reference in ["--recurse-submodules", "-p", "--upload-pack=touch x"] {
        let source = format!("git+file://{}#{reference}:pack", repo.display());
        let error = env
            .host
            .install(&source, InstallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "unsafe_source", "{reference}: {error}");
        assert!(error.to_string().contains("starts with `-`"), "{error}");
    }
    assert_eq!(stored(&env.path("plugins")), Vec::<String>::new());
    assert!(!env.path("plugins/.git-fetch").exists() || fetch_leftovers(&env.path("plugins")) == 0);
    env.host.shutdown().await;
}

/// Writes a git wrapper whose "user configuration" turns on everything the host must turn
/// off: a hooks path and a template directory with hooks that write `marker`, recursive
/// submodules and real symlinks. Returns (wrapper, global config, marker).
fn hostile_git(env: &Env) -> (PathBuf, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let marker = env.path("HOOK-RAN");
    let hooks = env.path("evil/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let template = env.path("evil/template");
    std::fs::create_dir_all(template.join("hooks")).unwrap();
    for dir in [hooks.clone(), template.join("hooks")] {
        for hook in [
            "post-checkout",
            "post-merge",
            "reference-transaction",
            "post-index-change",
        ] {
            let path = dir.join(hook);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho {hook} >> '{}'\n", marker.display()),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let config = env.path("evil/gitconfig");
    std::fs::write(
        &config,
        format!(
            "[core]\n\thooksPath = {}\n\tsymlinks = true\n[init]\n\ttemplateDir = {}\n[submodule]\n\trecurse = true\n[protocol \"file\"]\n\tallow = always\n[protocol \"ext\"]\n\tallow = always\n",
            hooks.display(),
            template.display()
        ),
    )
    .unwrap();
    let wrapper = env.path("evil/git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nGIT_CONFIG_GLOBAL='{}' exec git \"$@\"\n",
            config.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    (wrapper, config, marker)
}

/// A repository whose bundle has a submodule (with a file of its own), an inside symlink and
/// a committed `.git/hooks`-like folder that must stay inert data.
fn repo_with_submodule(env: &Env) -> PathBuf {
    let sub = env.path("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("FROM-SUBMODULE"), "fetched\n").unwrap();
    git(&sub, &["init", "--quiet", "--initial-branch=main"]);
    commit_all(&sub, "sub");
    let repo = env.path("repo");
    plain_bundle(&repo.join("pack"), "pack");
    symlink("README.md", repo.join("pack/link"));
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(
        &repo,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "--quiet",
            sub.to_str().unwrap(),
            "pack/sub",
        ],
    );
    commit_all(&repo, "with submodule");
    repo
}

#[tokio::test]
async fn git_sources_run_no_hook_fetch_no_submodule_and_store_no_symlink() {
    let root = tempfile::tempdir().unwrap();
    let probe = Env::with(|_| {}).await;
    let (wrapper, _config, marker) = hostile_git(&probe);
    let repo = repo_with_submodule(&probe);
    // The hostile configuration is real: a clone through the wrapper runs the hooks, and
    // the file protocol it allows fetches the submodule when asked to.
    #[expect(
        clippy::disallowed_methods,
        reason = "the test proves the hostile git configuration is live"
    )]
    let plain = std::process::Command::new(&wrapper)
        .args(["clone", "--quiet", "--recurse-submodules", "--"])
        .arg(&repo)
        .arg(root.path().join("plain"))
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    assert!(marker.exists(), "the hooks of the hostile config would run");
    assert!(root.path().join("plain/pack/sub/FROM-SUBMODULE").exists());
    std::fs::remove_file(&marker).unwrap();

    let mut host_options = options(probe.root.path());
    host_options.plugins_dir = root.path().join("plugins");
    host_options.git_program = wrapper;
    let host = PluginHost::open(host_options).await.unwrap();
    let source = format!("git+file://{}#main:pack", repo.display());
    let outcome = host
        .install(&source, InstallOptions::default())
        .await
        .unwrap();
    assert!(!marker.exists(), "a hook ran during install");
    let bundle = root
        .path()
        .join("plugins")
        .join(&outcome.record.id)
        .join("bundle");
    assert!(bundle.join("plugin.json").is_file());
    assert!(
        !bundle.join("sub/FROM-SUBMODULE").exists(),
        "a submodule was fetched"
    );
    assert!(
        !bundle.join("link").exists(),
        "a symlink placeholder was stored"
    );
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("symlink-skipped") && n.contains("link")),
        "{:?}",
        outcome.notes
    );
    // A submodule as the subdirectory is refused.
    let source = format!("git+file://{}#main:pack/sub", repo.display());
    let error = host
        .install(&source, InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "unsafe_source", "{error}");
    assert!(error.to_string().contains("submodule"), "{error}");
    assert!(!marker.exists());
    // The `ext::` transport runs a command; the user configuration allows it, the host not.
    let ext_marker = probe.path("EXT-RAN");
    let source = format!("git+ext::sh -c touch% {}", ext_marker.display());
    let error = host
        .install(&source, InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "git_failed", "{error}");
    assert!(!ext_marker.exists(), "the ext transport ran a command");
    assert_eq!(
        stored(&root.path().join("plugins")),
        vec![outcome.record.id.clone()]
    );
    host.shutdown().await;
    probe.host.shutdown().await;
}

/// The files of a stored bundle, by relative path, with their bytes.
fn bundle_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let collected =
        c2_bundle_collector::collect_dir(dir, &c2_bundle_collector::Limits::default()).unwrap();
    collected
        .files
        .into_iter()
        .map(|(path, entry)| (path, entry.bytes))
        .collect()
}

#[tokio::test]
async fn a_zip_with_a_repeated_name_or_too_many_entries_stores_nothing() {
    let env = Env::new().await;
    let manifest = json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "zipped", "version": "1.0.0",
        "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
    .to_string();
    let repeated = c2_testkit::archive::stored_zip(&[
        ("plugin.json", manifest.as_bytes()),
        ("README.md", b"what a reviewer reads"),
        ("./README.md", b"what would be stored"),
    ]);
    let path = env.path("repeated.zip");
    std::fs::write(&path, repeated).unwrap();
    let error = env
        .host
        .install(path.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap_err();
    let c2_host::HostError::InvalidBundle { diagnostics, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(
        diagnostics[0].code, "archive-duplicate-entry",
        "{diagnostics:?}"
    );

    let names: Vec<String> = (0..340_000).map(|i| format!("d/{i:06}")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("plugin.json", manifest.as_bytes())];
    entries.extend(names.iter().map(|n| (n.as_str(), &b""[..])));
    let path = env.path("many.zip");
    std::fs::write(&path, c2_testkit::archive::stored_zip(&entries)).unwrap();
    let error = env
        .host
        .install(path.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap_err();
    let c2_host::HostError::InvalidBundle { diagnostics, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(diagnostics[0].code, "limit-entries", "{diagnostics:?}");
    assert_eq!(stored(&env.path("plugins")), Vec::<String>::new());
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_edited_installed_file_fails_closed_as_content_changed() {
    let env = Env::new().await;
    let source = crate::support::FixtureBundle::new("edited").write(&env.path("bundles"));
    let id = env.install_ready(&source).await;
    let bundle = env.path("plugins").join(&id).join("bundle");
    let marker = env.path("EDITED-CODE-RAN");
    // Another tool rewrites the trusted launcher after the user trusted it.
    let launcher = bundle.join("bin/fixture");
    let original = std::fs::read_to_string(&launcher).unwrap();
    std::fs::write(
        &launcher,
        original.replace("exec ", &format!("touch '{}'\nexec ", marker.display())),
    )
    .unwrap();
    let error = env.invoke("fixture.echo", json!(1)).await.unwrap_err();
    assert_eq!(error.kind(), "content_changed", "{error}");
    assert!(
        error.to_string().contains("reinstall it from its source"),
        "{error}"
    );
    assert!(!marker.exists(), "the edited code ran");
    assert_eq!(env.host.stats().spawns, 0);
    let listed = env.host.list();
    assert_eq!(listed[0].state, "content_changed", "{listed:?}");
    assert!(listed[0].trusted, "trust is not withdrawn silently");
    assert!(
        listed[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("changed on disk")),
        "{listed:?}"
    );
    assert_eq!(env.host.extensions().failed[0].id, id);
    // Trusting again would bind the old digest to the new bytes: refused.
    let error = env.host.trust(&id).await.unwrap_err();
    assert_eq!(error.kind(), "content_changed", "{error}");

    // A file planted next to the trusted ones counts as a change too.
    std::fs::write(&launcher, &original).unwrap();
    // (The runtime remembers its failed activation until the next call retries.)
    assert_ne!(env.host.list()[0].state, "content_changed");
    std::fs::create_dir_all(bundle.join("node_modules/evil")).unwrap();
    std::fs::write(bundle.join("node_modules/evil/index.js"), "evil()").unwrap();
    assert_eq!(env.host.list()[0].state, "content_changed");
    std::fs::remove_dir_all(bundle.join("node_modules")).unwrap();
    std::fs::write(bundle.join("extra.js"), "more()").unwrap();
    assert_eq!(env.host.list()[0].state, "content_changed");
    std::fs::remove_file(bundle.join("extra.js")).unwrap();

    // Restored and reloaded, it runs again without being trusted anew.
    for state in [c2_host::StateChange::Disable, c2_host::StateChange::Enable] {
        env.host
            .set_state(&id, &c2_host::Target::User, state)
            .await
            .unwrap();
    }
    assert_eq!(
        env.invoke("fixture.echo", json!(2)).await.unwrap(),
        json!(2)
    );
    assert!(!marker.exists());
    env.host.shutdown().await;
}

#[tokio::test]
async fn validity_options_apply_before_storing_and_broken_entries_stay_removable() {
    let reserve = |options: &mut c2_host::HostOptions| {
        options
            .manifest
            .reserved_namespaces
            .insert("fixture".to_owned());
    };
    // Installed under the default options...
    let env = Env::new().await;
    let source = crate::support::FixtureBundle::new("reserved").write(&env.path("bundles"));
    let outcome = env
        .host
        .install(source.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap();
    let id = outcome.record.id.clone();
    env.host.shutdown().await;
    let plugins = env.path("plugins");
    let before = bundle_files(&plugins.join(&id).join("bundle"));
    let record_before = std::fs::read(plugins.join(&id).join("installed.json")).unwrap();

    // ... an embedder that reserves `fixture` refuses the update before storing anything,
    let mut tweaked = options(env.root.path());
    reserve(&mut tweaked);
    let host = PluginHost::open(tweaked.clone()).await.unwrap();
    assert!(
        host.diagnostics().iter().any(|d| d.contains(&id)),
        "{:?}",
        host.diagnostics()
    );
    std::fs::write(source.join("NEW.md"), "an update").unwrap();
    let error = host
        .install(source.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap_err();
    let c2_host::HostError::InvalidBundle { diagnostics, .. } = &error else {
        panic!("{error}");
    };
    assert!(
        diagnostics
            .iter()
            .any(|d| d.code == "command-namespace-reserved"),
        "{diagnostics:?}"
    );
    // The old bundle is intact, byte for byte, and nothing else was written.
    assert_eq!(bundle_files(&plugins.join(&id).join("bundle")), before);
    assert_eq!(
        std::fs::read(plugins.join(&id).join("installed.json")).unwrap(),
        record_before
    );
    assert_eq!(stored(&plugins), vec![id.clone()]);

    // ... and the entry it cannot load is still removable.
    let removed = host.uninstall(&id).await.unwrap();
    assert_eq!(removed.record.map(|r| r.id), Some(id.clone()));
    assert!(!plugins.join(&id).exists());
    assert!(host.diagnostics().is_empty(), "{:?}", host.diagnostics());
    host.shutdown().await;
    let again = PluginHost::open(tweaked.clone()).await.unwrap();
    assert!(again.diagnostics().is_empty(), "{:?}", again.diagnostics());

    // A fresh install under those options stores nothing at all.
    let error = again
        .install(source.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_bundle", "{error}");
    assert_eq!(stored(&plugins), Vec::<String>::new());

    // An entry whose installed.json is garbage is removable too.
    std::fs::create_dir_all(plugins.join("garbage-0000/bundle")).unwrap();
    std::fs::write(plugins.join("garbage-0000/installed.json"), "{not json").unwrap();
    again.shutdown().await;
    let host = PluginHost::open(tweaked).await.unwrap();
    let removed = host.uninstall("garbage-0000").await.unwrap();
    assert!(removed.record.is_none());
    assert!(!plugins.join("garbage-0000").exists());
    let missing = host.uninstall("garbage-0000").await.unwrap_err();
    assert_eq!(missing.kind(), "not_installed");
    host.shutdown().await;
}

#[tokio::test]
async fn resetting_an_unknown_id_is_an_error_and_writes_no_policy() {
    let env = Env::new().await;
    let source = crate::support::FixtureBundle::new("known").write(&env.path("bundles"));
    let id = env.install_ready(&source).await;
    let policy = env.path("plugins/policy.json");
    let before = std::fs::read(&policy).unwrap();
    let error = env
        .host
        .reset(Some("no-such-bundle-1234"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "not_installed", "{error}");
    assert_eq!(
        std::fs::read(&policy).unwrap(),
        before,
        "the policy was written"
    );
    // A known id still resets and moves the revision.
    let revision = env.host.reset(Some(&id)).await.unwrap();
    assert!(std::fs::read(&policy).unwrap() != before);
    assert!(revision > 0);
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_bundle_collected_under_looser_limits_is_refused_before_storing() {
    let env = Env::with(|options| {
        options.limits.max_files = 2;
        options.limits.max_file_bytes = 1024;
    })
    .await;
    let dir = env.path("bundles/loose");
    plain_bundle(&dir, "loose");
    std::fs::write(dir.join("big.txt"), "x".repeat(2048)).unwrap();
    let collected =
        c2_bundle_collector::collect_dir(&dir, &c2_bundle_collector::Limits::default()).unwrap();
    assert!(collected.is_valid());
    let request = c2_bundle_collector::InstallRequest::new(
        c2_bundle_collector::SourceIdentity::local(&dir).unwrap(),
    );
    let error = env
        .host
        .install_collected(&collected, request, InstallOptions::default())
        .await
        .unwrap_err();
    let c2_host::HostError::InvalidBundle { diagnostics, .. } = &error else {
        panic!("{error}");
    };
    let codes: Vec<&str> = diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["limit-files", "limit-file-size"], "{diagnostics:?}");
    assert_eq!(stored(&env.path("plugins")), Vec::<String>::new());
    // Through a source path the host's limits refuse it while collecting.
    let error = env
        .host
        .install(dir.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_bundle", "{error}");
    assert_eq!(stored(&env.path("plugins")), Vec::<String>::new());
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_fetched_bundle_is_checked_again_only_when_collected_with_other_options() {
    let env = Env::with(|options| {
        options.limits.max_files = 2;
        options.limits.max_file_bytes = 1024;
    })
    .await;
    let dir = env.path("bundles/fetched");
    plain_bundle(&dir, "fetched");
    std::fs::write(dir.join("big.txt"), "x".repeat(2048)).unwrap();
    // Fetched under looser options than the host's: checked again and refused.
    let loose = c2_bundle_collector::CollectOptions::default();
    let fetched = c2_sources::fetch_path(&dir, &loose).unwrap();
    assert!(fetched.bundle.is_valid());
    let error = env
        .host
        .install_fetched(fetched, InstallOptions::default())
        .await
        .unwrap_err();
    let c2_host::HostError::InvalidBundle { diagnostics, .. } = &error else {
        panic!("{error}");
    };
    let codes: Vec<&str> = diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["limit-files", "limit-file-size"], "{diagnostics:?}");
    assert_eq!(stored(&env.path("plugins")), Vec::<String>::new());
    // Fetched with the host's own options: the collection's verdict is the host's.
    std::fs::remove_file(dir.join("big.txt")).unwrap();
    let fetched = c2_sources::fetch_path(&dir, &env.host.collect_options()).unwrap();
    assert_eq!(fetched.collected_with, env.host.collect_options());
    let outcome = env
        .host
        .install_fetched(fetched, InstallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        stored(&env.path("plugins")),
        vec![outcome.record.id.clone()]
    );
    env.host.shutdown().await;
}
