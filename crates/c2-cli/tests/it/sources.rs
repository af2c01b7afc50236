//! Hostile sources and stores through the binary (issue 17), each checking the disk after:
//! git repositories made here with symlinks, submodules and hooks, option-like refs,
//! marketplace links, repeated zip names, huge zips, edited installed files, broken store
//! entries, read-only stores and unknown resets.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{Run, Sandbox, git, git_repo, pack};

/// The installed ids (directories holding installed.json) in the sandbox's store.
pub(crate) fn stored(sandbox: &Sandbox) -> Vec<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test inspects what the store holds"
    )]
    let entries = std::fs::read_dir(&sandbox.plugins);
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

fn error_kind(run: &Run) -> Value {
    run.json()["error"]["kind"].clone()
}

fn first_code(run: &Run) -> Value {
    run.json()["error"]["diagnostics"][0]["code"].clone()
}

fn hello_python_files(prefix: &str) -> Vec<(String, String)> {
    ["plugin.json", "plugin.py", "c2_plugin_sdk.py", "README.md"]
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(pack("hello-python").join(file)).unwrap();
            (format!("{prefix}{file}"), text)
        })
        .collect()
}

/// A repository with a real bundle at packs/hello and hostile symlinks at the top:
/// `escape` climbs out of the clone to the sandbox's HOME, where a valid bundle waits.
fn hostile_repo(sandbox: &Sandbox) -> PathBuf {
    for (rel, text) in hello_python_files("") {
        let path = sandbox.home.join("stolen").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let repo = sandbox.work.join("repo");
    let files = hello_python_files("packs/hello/");
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    git_repo(&repo, &files);
    // plugins/.git-fetch/<n>/checkout/escape: four levels up is the sandbox root.
    std::os::unix::fs::symlink("../../../../home/stolen", repo.join("escape")).unwrap();
    std::os::unix::fs::symlink(sandbox.home.join("stolen"), repo.join("absolute")).unwrap();
    std::os::unix::fs::symlink("packs/hello", repo.join("inside")).unwrap();
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "--message", "links"]);
    repo
}

#[test]
fn a_git_subdirectory_through_a_symlink_or_an_option_like_ref_stores_nothing() {
    let sandbox = Sandbox::new();
    let repo = hostile_repo(&sandbox);
    for fragment in [
        "main:escape",
        "main:absolute",
        "main:inside",
        "main:escape/",
        "--recurse-submodules:packs/hello",
        "-p:packs/hello",
    ] {
        let source = format!("git+file://{}#{fragment}", repo.display());
        let run = sandbox.run(&["install", &source, "--format", "json"]);
        assert_eq!(run.code, 1, "{fragment}: {run:#?}");
        assert_eq!(error_kind(&run), "unsafe_source", "{fragment}: {run:#?}");
        assert_eq!(stored(&sandbox), Vec::<String>::new(), "{fragment}");
    }
    let human = sandbox.run(&[
        "install",
        &format!("git+file://{}#main:escape", repo.display()),
    ]);
    assert!(
        human
            .stderr
            .contains("escape is a symlink, which is never followed"),
        "{human:#?}"
    );
    let fine = sandbox.run(&[
        "install",
        &format!("git+file://{}#main:packs/hello", repo.display()),
    ]);
    assert_eq!(fine.code, 0, "{fine:#?}");
    assert_eq!(stored(&sandbox), vec![fine.stdout.trim().to_owned()]);
}

#[test]
fn a_git_install_runs_no_hook_of_the_user_configuration_and_fetches_no_submodule() {
    let sandbox = Sandbox::new();
    let marker = sandbox.work.join("HOOK-RAN");
    let hooks = sandbox.home.join("hooks");
    let template = sandbox.home.join("template");
    for dir in [hooks.clone(), template.join("hooks")] {
        std::fs::create_dir_all(&dir).unwrap();
        for hook in ["post-checkout", "post-merge", "reference-transaction"] {
            let path = dir.join(hook);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho {hook} >> '{}'\n", marker.display()),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    // The CLI's git reads HOME's configuration (the test helper's git does not).
    std::fs::write(
        sandbox.home.join(".gitconfig"),
        format!(
            "[core]\n\thooksPath = {}\n\tsymlinks = true\n[init]\n\ttemplateDir = {}\n[submodule]\n\trecurse = true\n[protocol \"file\"]\n\tallow = always\n",
            hooks.display(),
            template.display()
        ),
    )
    .unwrap();
    let sub = sandbox.work.join("sub");
    git_repo(&sub, &[("FROM-SUBMODULE", "fetched\n")]);
    let repo = sandbox.work.join("repo");
    let files = hello_python_files("pack/");
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    git_repo(&repo, &files);
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
    git(&repo, &["commit", "--quiet", "--message", "submodule"]);
    let run = sandbox.run(&[
        "install",
        &format!("git+file://{}#main:pack", repo.display()),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let id = run.json()["result"]["id"].as_str().unwrap().to_owned();
    assert!(!marker.exists(), "a hook ran");
    let bundle = sandbox.plugins.join(&id).join("bundle");
    assert!(bundle.join("plugin.py").is_file());
    assert!(!bundle.join("sub/FROM-SUBMODULE").exists());
}

#[test]
fn a_marketplace_entry_through_a_symlink_is_refused() {
    let sandbox = Sandbox::new();
    for (rel, text) in hello_python_files("outside/hello/") {
        sandbox.write(&rel, &text);
    }
    let catalog = sandbox.work.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::os::unix::fs::symlink("../outside/hello", catalog.join("hello")).unwrap();
    let entry = json!({"name": "hello-python", "version": "1.0.0",
                       "source": {"kind": "local", "path": "hello"}});
    sandbox.write(
        "catalog/marketplace.json",
        &json!({"standardVersion": "1.0.0", "plugins": [entry]}).to_string(),
    );
    let run = sandbox.run(&["validate", "catalog/marketplace.json", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let text = run.stdout.clone();
    assert!(text.contains("marketplace-entry-invalid"), "{run:#?}");
    assert!(text.contains("is a symlink"), "{run:#?}");
}

#[test]
fn zips_with_a_repeated_name_or_too_many_entries_store_nothing() {
    let sandbox = Sandbox::new();
    let manifest = std::fs::read(pack("hello-python").join("plugin.json")).unwrap();
    let script = std::fs::read(pack("hello-python").join("plugin.py")).unwrap();
    let repeated = c2_testkit::archive::stored_zip(&[
        ("plugin.json", &manifest),
        ("plugin.py", &script),
        ("plugin.py", b"import os; os.system('touch pwned')"),
    ]);
    std::fs::write(sandbox.work.join("repeated.zip"), repeated).unwrap();
    let run = sandbox.run(&["install", "repeated.zip", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(first_code(&run), "archive-duplicate-entry", "{run:#?}");

    let names: Vec<String> = (0..340_000).map(|i| format!("d/{i:06}")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("plugin.json", &manifest)];
    entries.extend(names.iter().map(|n| (n.as_str(), &b""[..])));
    std::fs::write(
        sandbox.work.join("many.zip"),
        c2_testkit::archive::stored_zip(&entries),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let run = sandbox.run(&["install", "many.zip", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(first_code(&run), "limit-entries", "{run:#?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(!sandbox.plugins.exists() || stored(&sandbox).is_empty());
}

/// Installs hello-python trusted and enabled; returns its id.
fn install_trusted(sandbox: &Sandbox) -> String {
    let run = sandbox.run(&[
        "install",
        pack("hello-python").to_str().unwrap(),
        "--trust",
        "--enable",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    run.stdout.trim().to_owned()
}

fn listed(sandbox: &Sandbox) -> Value {
    let run = sandbox.run(&["list", "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()["result"][0].clone()
}

#[test]
fn an_edited_installed_file_never_runs_and_list_says_so() {
    let sandbox = Sandbox::new();
    let id = install_trusted(&sandbox);
    let greet = sandbox.run(&["invoke", "hello-python.greet", "--args", r#"{"name":"a"}"#]);
    assert_eq!(greet.code, 0, "{greet:#?}");
    let script = sandbox.plugins.join(&id).join("bundle/plugin.py");
    let marker = sandbox.work.join("EDITED-CODE-RAN");
    let original = std::fs::read_to_string(&script).unwrap();
    std::fs::write(
        &script,
        format!(
            "open({:?}, 'w').close()\n{original}",
            marker.to_str().unwrap()
        ),
    )
    .unwrap();
    let run = sandbox.run(&[
        "invoke",
        "hello-python.greet",
        "--args",
        r#"{"name":"a"}"#,
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(error_kind(&run), "content_changed", "{run:#?}");
    assert!(!marker.exists(), "the edited code ran");
    let entry = listed(&sandbox);
    assert_eq!(entry["state"], "content_changed", "{entry:#}");
    assert_eq!(entry["trusted"], true);
    let human = sandbox.run(&["list"]);
    assert!(human.stdout.contains("content_changed"), "{human:#?}");
    // Reinstalling from the source restores the reviewed bytes; it runs again.
    install_trusted(&sandbox);
    let greet = sandbox.run(&["invoke", "hello-python.greet", "--args", r#"{"name":"a"}"#]);
    assert_eq!(greet.code, 0, "{greet:#?}");
    assert!(!marker.exists());
}

#[test]
fn a_store_entry_that_no_longer_loads_is_removable() {
    let sandbox = Sandbox::new();
    let id = install_trusted(&sandbox);
    std::fs::write(
        sandbox.plugins.join(&id).join("bundle/plugin.json"),
        r#"{"name": "hello-python"}"#,
    )
    .unwrap();
    let list = sandbox.run(&["list"]);
    assert!(list.stderr.contains("cannot be loaded"), "{list:#?}");
    let run = sandbox.run(&["uninstall", &id, "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.json()["result"]["id"], id.as_str());
    assert!(!sandbox.plugins.join(&id).exists());
    let list = sandbox.run(&["list"]);
    assert!(!list.stderr.contains("cannot be loaded"), "{list:#?}");
    // With an unreadable installed.json too.
    let id = install_trusted(&sandbox);
    std::fs::write(sandbox.plugins.join(&id).join("installed.json"), "{").unwrap();
    let run = sandbox.run(&["uninstall", &id, "--format", "json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!sandbox.plugins.join(&id).exists());
}

/// Runs the binary unable to write the store: as an unprivileged user the mode bits
/// suffice; root ignores them, so it runs in a user namespace of its own, where the store's
/// owner bits apply to it like to anyone.
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the built binary without write access to the store"
)]
fn run_read_only(sandbox: &Sandbox, args: &[&str]) -> Run {
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let mut command = if root {
        let mut command = std::process::Command::new("unshare");
        command
            .args(["--user", "--"])
            .arg(env!("CARGO_BIN_EXE_c2-plugins"));
        command
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
    };
    let output = command
        .args(args)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Makes `dir` and everything under it read-only (directories 0555, files 0444), or back
/// (0755, 0644).
fn set_read_only(dir: &Path, read_only: bool) {
    let mode = if read_only { 0o555 } else { 0o755 };
    if !read_only {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the test changes the modes of the store it made"
    )]
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    for path in entries {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test changes the modes of the store it made"
        )]
        let is_dir = std::fs::symlink_metadata(&path).unwrap().is_dir();
        if is_dir {
            set_read_only(&path, read_only);
        } else {
            let mode = if read_only { 0o444 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    if read_only {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[test]
fn a_read_only_store_lists_and_an_unknown_reset_writes_nothing() {
    let sandbox = Sandbox::new();
    let id = install_trusted(&sandbox);
    let policy = sandbox.plugins.join("policy.json");
    let before = std::fs::read(&policy).unwrap();
    let reset = sandbox.run(&["reset", "no-such-bundle-1234", "--format", "json"]);
    assert_eq!(reset.code, 1, "{reset:#?}");
    assert_eq!(error_kind(&reset), "not_installed", "{reset:#?}");
    assert_eq!(std::fs::read(&policy).unwrap(), before);

    assert!(sandbox.plugins.join(".lock").is_file());
    set_read_only(&sandbox.plugins, true);
    let proof = run_read_only(
        &sandbox,
        &["install", pack("hello-runtime").to_str().unwrap()],
    );
    assert_ne!(proof.code, 0, "the store is writable after all: {proof:#?}");
    let list = run_read_only(&sandbox, &["list", "--format", "json"]);
    set_read_only(&sandbox.plugins, false);
    assert_eq!(list.code, 0, "{list:#?}");
    let listed = list.json();
    assert_eq!(listed["result"][0]["id"], id.as_str(), "{list:#?}");
    assert_eq!(listed["result"][0]["trusted"], true);
    // A store whose lock file is missing is read without creating it.
    std::fs::remove_file(sandbox.plugins.join(".lock")).unwrap();
    set_read_only(&sandbox.plugins, true);
    let list = run_read_only(&sandbox, &["list", "--format", "json"]);
    set_read_only(&sandbox.plugins, false);
    assert_eq!(list.code, 0, "{list:#?}");
    assert_eq!(list.json()["result"][0]["id"], id.as_str(), "{list:#?}");
    assert!(!sandbox.plugins.join(".lock").exists());
    assert_eq!(stored(&sandbox), vec![id]);
}

/// Rewrites `script` so that running it creates `marker`, at the same size and (where the
/// tamper says so) with its mtime set back: only the ctime (or the inode) tells.
fn same_size_payload(script: &Path, marker: &Path) -> String {
    let original = std::fs::read_to_string(script).unwrap();
    let line = format!("open({:?}, 'w').close()\n", marker.to_str().unwrap());
    assert!(line.len() < original.len(), "the payload fits the file");
    format!("{line}{}\n", "#".repeat(original.len() - line.len() - 1))
}

fn touch_back(path: &Path, modified: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
}

#[test]
fn a_tampered_file_never_runs_though_a_stat_manifest_vouched_for_its_tree() {
    type Tamper = fn(&Path, &Path);
    let tampers: [(&str, Tamper); 3] = [
        ("same size, mtime touched back", |script, marker| {
            let modified = std::fs::metadata(script).unwrap().modified().unwrap();
            std::fs::write(script, same_size_payload(script, marker)).unwrap();
            touch_back(script, modified);
        }),
        ("inode swapped, same size and mtime", |script, marker| {
            let modified = std::fs::metadata(script).unwrap().modified().unwrap();
            let swap = script.with_file_name(".swap");
            std::fs::write(&swap, same_size_payload(script, marker)).unwrap();
            let mode = std::fs::metadata(script).unwrap().permissions();
            std::fs::set_permissions(&swap, mode).unwrap();
            touch_back(&swap, modified);
            std::fs::rename(&swap, script).unwrap();
        }),
        ("chmod", |script, _| {
            let mode = std::fs::metadata(script).unwrap().permissions().mode();
            std::fs::set_permissions(script, std::fs::Permissions::from_mode(mode ^ 0o100))
                .unwrap();
        }),
    ];
    let sandbox = Sandbox::new();
    let marker = sandbox.work.join("TAMPERED-CODE-RAN");
    for (what, tamper) in tampers {
        let id = install_trusted(&sandbox);
        // Settled, then checked once: the tree's stat manifest is on disk, so the next
        // process would vouch for an unchanged tree without reading it.
        std::thread::sleep(std::time::Duration::from_millis(2200));
        let greet = sandbox.run(&["invoke", "hello-python.greet", "--args", r#"{"name":"a"}"#]);
        assert_eq!(greet.code, 0, "{what}: {greet:#?}");
        assert!(
            sandbox.plugins.join(&id).join("stamps.json").exists(),
            "{what}: no stat manifest was written"
        );
        tamper(&sandbox.plugins.join(&id).join("bundle/plugin.py"), &marker);
        let run = sandbox.run(&[
            "invoke",
            "hello-python.greet",
            "--args",
            r#"{"name":"a"}"#,
            "--format",
            "json",
        ]);
        assert_eq!(run.code, 1, "{what}: {run:#?}");
        assert_eq!(error_kind(&run), "content_changed", "{what}: {run:#?}");
        assert!(!marker.exists(), "{what}: the tampered code ran");
        assert_eq!(listed(&sandbox)["state"], "content_changed", "{what}");
    }
}
