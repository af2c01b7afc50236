//! c2-sources end to end: real git repositories cloned by the system `git`, real `npm pack`,
//! catalogs on disk, and the store's configured catalogs.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

use std::path::{Path, PathBuf};

use c2_bundle_collector::{CollectOptions, Limits, SourceIdentity, Store, StoreOptions};
use c2_sources::{
    Catalogs, EntryLookup, FetchOptions, LockEnablement, LockEntry, LockFile, Source, SourceError,
    SourceErrorKind, fetch, fetch_locked,
};
use c2_testkit::bundles::run;
use serde_json::{Value, json};

/// A runtime-less bundle `name` at `version` in `dir`.
fn plain_bundle(dir: &Path, name: &str, version: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
               "name": name, "version": version, "description": format!("{name} for tests"),
               "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), format!("# {name}\n")).unwrap();
}

/// A repository at `repo` holding `name` 1.0.0 under `packs/<name>`; returns its commit.
fn repository(repo: &Path, name: &str) -> String {
    plain_bundle(&repo.join("packs").join(name), name, "1.0.0");
    run(repo, "git", &["init", "--quiet", "--initial-branch=main"]);
    run(repo, "git", &["add", "--all"]);
    run(repo, "git", &["commit", "--quiet", "-m", "first"]);
    run(repo, "git", &["rev-parse", "HEAD"]).trim().to_owned()
}

fn write_catalog(dir: &Path, plugins: &Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("marketplace.json");
    std::fs::write(
        &path,
        json!({"standardVersion": "1.0.0", "name": "test-hub", "plugins": plugins}).to_string(),
    )
    .unwrap();
    path
}

struct Env {
    root: tempfile::TempDir,
    store: Store,
    options: FetchOptions,
}

impl Env {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let plugins = root.path().join("plugins");
        let store = Store::open(&plugins, StoreOptions::default()).unwrap();
        let options = FetchOptions::new(&plugins);
        Self {
            root,
            store,
            options,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn catalogs(&self) -> Catalogs<'_> {
        Catalogs::new(&self.store, &self.options)
    }

    /// Nothing of a fetch is left in the store.
    fn assert_no_work_left(&self) {
        assert!(!self.options.work_dir.join(".git-fetch").exists());
    }
}

#[tokio::test]
async fn a_git_source_is_cloned_at_its_ref_and_collected_once_with_the_callers_options() {
    let mut env = Env::new();
    let repo = env.path("repo");
    let commit = repository(&repo, "alpha");
    let text = format!("git+file://{}#main:packs/alpha", repo.display());
    let source = Source::parse(&text, EntryLookup::Off).unwrap();
    let fetched = fetch(&source, &env.options).await.unwrap();
    assert!(
        fetched.bundle.is_valid(),
        "{:?}",
        fetched.bundle.diagnostics
    );
    assert_eq!(fetched.bundle.name(), Some("alpha"));
    assert_eq!(fetched.request.commit.as_deref(), Some(commit.as_str()));
    assert_eq!(
        fetched.request.source,
        SourceIdentity::git(&format!("file://{}", repo.display()), "packs/alpha")
    );
    assert_eq!(fetched.collected_with, env.options.collect);
    env.assert_no_work_left();

    // The caller's limits decide: one file allowed refuses the two-file bundle at collection.
    env.options.collect = CollectOptions::new().with_limits(Limits {
        max_files: 1,
        ..Limits::default()
    });
    let fetched = fetch(&source, &env.options).await.unwrap();
    assert!(!fetched.bundle.is_valid());
    assert_eq!(fetched.collected_with.limits.max_files, 1);
    env.assert_no_work_left();
}

#[tokio::test]
async fn unsafe_and_unknown_git_sources_are_refused_with_their_kinds() {
    let env = Env::new();
    let repo = env.path("repo");
    repository(&repo, "alpha");
    let url = format!("git+file://{}", repo.display());
    for (text, kind) in [
        (
            format!("{url}#--upload-pack=x"),
            SourceErrorKind::UnsafeSource,
        ),
        (
            format!("{url}#main:packs/../.."),
            SourceErrorKind::UnsafeSource,
        ),
        (
            format!("{url}#main:packs/nope"),
            SourceErrorKind::UnsafeSource,
        ),
        (format!("{url}#no-such-branch"), SourceErrorKind::GitFailed),
    ] {
        let source = Source::parse(&text, EntryLookup::Off).unwrap();
        let error = fetch(&source, &env.options).await.unwrap_err();
        assert_eq!(error.kind(), kind, "{text}: {error}");
    }
    env.assert_no_work_left();
}

#[tokio::test]
async fn local_directories_and_archives_are_fetched_and_a_name_needs_a_catalog() {
    let env = Env::new();
    let dir = env.path("bundles/beta");
    plain_bundle(&dir, "beta", "1.0.0");
    let source = Source::parse(dir.to_str().unwrap(), EntryLookup::Off).unwrap();
    assert_eq!(source, Source::Directory(dir.clone()));
    let fetched = fetch(&source, &env.options).await.unwrap();
    assert_eq!(fetched.bundle.name(), Some("beta"));
    assert!(matches!(
        fetched.request.source,
        SourceIdentity::Local { .. }
    ));

    run(
        &env.path("bundles"),
        "tar",
        &["-czf", "beta.tgz", "-C", "beta", "."],
    );
    let archive = env.path("bundles/beta.tgz");
    let source = Source::parse(archive.to_str().unwrap(), EntryLookup::Off).unwrap();
    assert_eq!(source, Source::Archive(archive));
    let fetched = fetch(&source, &env.options).await.unwrap();
    assert_eq!(fetched.bundle.name(), Some("beta"));
    assert!(matches!(
        fetched.request.source,
        SourceIdentity::Archive { .. }
    ));

    // Without configured catalogs a name is no source; with one it is an entry.
    assert_eq!(
        env.catalogs().parse("beta", None).unwrap_err().kind(),
        SourceErrorKind::UnsupportedSource
    );
    let catalog = write_catalog(
        &env.path("catalog"),
        &json!([{"name": "beta", "version": "1.0.0", "source": {"kind": "local", "path": "beta"}}]),
    );
    plain_bundle(&env.path("catalog/beta"), "beta", "1.0.0");
    env.catalogs()
        .add(catalog.to_str().unwrap(), None)
        .await
        .unwrap();
    let source = env.catalogs().parse("beta@1.0.0", None).unwrap();
    assert!(source.is_catalog(), "{source:?}");
    let fetched = env.catalogs().fetch(&source).await.unwrap();
    assert_eq!(fetched.bundle.name(), Some("beta"));
    let origin = fetched.request.origin.as_ref().unwrap();
    assert_eq!(
        (origin.entry.as_str(), origin.version.as_str()),
        ("beta", "1.0.0")
    );
    assert_eq!(origin.source_kind, "local");
    // The directory of that name still wins over the catalogs.
    let existing = env.path("bundles/beta");
    assert_eq!(
        env.catalogs()
            .parse(existing.to_str().unwrap(), None)
            .unwrap(),
        Source::Directory(existing)
    );
}

#[tokio::test]
async fn catalog_entries_are_verified_against_what_was_fetched() {
    let env = Env::new();
    let repo = env.path("repo");
    let commit = repository(&repo, "pinned");
    let url = format!("file://{}", repo.display());
    let catalog_dir = env.path("catalog");
    // An archive beside the catalog, declared with its SHA-256, and one with a wrong digest.
    plain_bundle(&env.path("staging/archived"), "archived", "1.0.0");
    run(
        &env.path("staging"),
        "tar",
        &["-czf", "archived.tgz", "-C", "archived", "."],
    );
    std::fs::create_dir_all(&catalog_dir).unwrap();
    std::fs::copy(
        env.path("staging/archived.tgz"),
        catalog_dir.join("archived.tgz"),
    )
    .unwrap();
    let sha = run(&catalog_dir, "sha256sum", &["archived.tgz"]);
    let sha = sha.split_whitespace().next().unwrap();
    // An npm package directory whose scripts must never run.
    let npm = catalog_dir.join("npm-one");
    plain_bundle(&npm, "npm-one", "2.0.0");
    let marker = env.path("PREPACK-RAN");
    std::fs::write(
        npm.join("package.json"),
        json!({"name": "npm-one", "version": "2.0.0",
               "scripts": {"prepack": format!("touch {}", marker.display())}})
        .to_string(),
    )
    .unwrap();
    write_catalog(
        &catalog_dir,
        &json!([
            {"name": "pinned", "version": "1.0.0",
             "source": {"kind": "git", "url": url, "ref": commit, "path": "packs/pinned"}},
            {"name": "archived", "version": "1.0.0",
             "source": {"kind": "archive", "url": "archived.tgz", "sha256": sha}},
            {"name": "tampered", "version": "1.0.0",
             "source": {"kind": "archive", "url": "archived.tgz", "sha256": "0".repeat(64)}},
            {"name": "misnamed", "version": "1.0.0",
             "source": {"kind": "git", "url": url, "path": "packs/pinned"}},
            {"name": "npm-one", "version": "2.0.0",
             "source": {"kind": "npm", "package": "./npm-one"}},
            {"name": "escaping", "version": "1.0.0",
             "source": {"kind": "local", "path": "link/pinned"}},
        ]),
    );
    // A local entry through a symlink out of the catalog's directory.
    std::os::unix::fs::symlink(repo.join("packs"), catalog_dir.join("link")).unwrap();
    let location = catalog_dir.to_str().unwrap();
    let catalogs = env.catalogs();
    let fetched = catalogs
        .fetch_entry("pinned", None, Some(location))
        .await
        .unwrap();
    assert_eq!(fetched.request.commit.as_deref(), Some(commit.as_str()));
    assert!(matches!(
        fetched.request.source,
        SourceIdentity::Catalog { .. }
    ));
    let fetched = catalogs
        .fetch_entry("archived", Some("1.0.0"), Some(location))
        .await
        .unwrap();
    assert_eq!(fetched.bundle.name(), Some("archived"));
    let fetched = catalogs
        .fetch_entry("npm-one", None, Some(location))
        .await
        .unwrap();
    assert_eq!(fetched.bundle.name(), Some("npm-one"));
    assert!(
        fetched.bundle.is_valid(),
        "{:?}",
        fetched.bundle.diagnostics
    );
    assert!(!marker.exists(), "npm pack ran a script");
    for (name, version, kind) in [
        ("tampered", None, SourceErrorKind::DigestMismatch),
        ("misnamed", None, SourceErrorKind::CatalogMismatch),
        ("escaping", None, SourceErrorKind::UnsafeSource),
        ("pinned", Some("2.0.0"), SourceErrorKind::VersionNotFound),
        ("nope", None, SourceErrorKind::EntryNotFound),
    ] {
        let error = catalogs
            .fetch_entry(name, version, Some(location))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), kind, "{name}: {error}");
    }
    env.assert_no_work_left();
}

#[tokio::test]
async fn a_pin_that_is_not_head_is_a_commit_mismatch() {
    let env = Env::new();
    let repo = env.path("repo");
    let first = repository(&repo, "moving");
    // A branch named like a commit is not that commit.
    let fake = "a".repeat(40);
    run(&repo, "git", &["branch", &fake, &first]);
    let url = format!("file://{}", repo.display());
    let catalog = write_catalog(
        &env.path("catalog"),
        &json!([{"name": "moving", "version": "1.0.0",
                 "source": {"kind": "git", "url": url, "ref": fake, "path": "packs/moving"}}]),
    );
    let error = env
        .catalogs()
        .fetch_entry("moving", None, Some(catalog.to_str().unwrap()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), SourceErrorKind::CommitMismatch, "{error}");
}

#[tokio::test]
async fn configured_catalogs_are_listed_refuse_duplicates_and_are_removed() {
    let env = Env::new();
    let catalog = write_catalog(&env.path("catalog"), &json!([]));
    let catalogs = env.catalogs();
    assert!(catalogs.list().unwrap().is_empty());
    assert!(matches!(
        catalogs.fetch_entry("x", None, None).await.unwrap_err(),
        SourceError::NoMarketplace
    ));
    let added = catalogs.add(catalog.to_str().unwrap(), None).await.unwrap();
    assert_eq!(added.name, "test-hub");
    let again = catalogs
        .add(env.path("catalog").to_str().unwrap(), Some("other"))
        .await
        .unwrap_err();
    assert_eq!(again.kind(), SourceErrorKind::DuplicateMarketplace);
    assert!(again.hint().unwrap().contains("test-hub"));
    assert!(!again.to_string().contains("c2-plugins"));
    assert_eq!(catalogs.list().unwrap(), vec![added.clone()]);
    let unknown = catalogs.remove("nope").unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "no configured catalog is named `nope` (configured: test-hub)"
    );
    assert_eq!(catalogs.remove("test-hub").unwrap(), added);
    assert!(catalogs.list().unwrap().is_empty());
    let invalid = catalogs
        .add(env.path("nowhere").to_str().unwrap(), None)
        .await
        .unwrap_err();
    assert_eq!(invalid.kind(), SourceErrorKind::InvalidCatalog);
}

#[tokio::test]
async fn a_locked_git_entry_is_fetched_at_its_commit_after_the_branch_moved_on() {
    let env = Env::new();
    let repo = env.path("repo");
    let commit = repository(&repo, "alpha");
    let text = format!("git+file://{}#main:packs/alpha", repo.display());
    let source = Source::parse(&text, EntryLookup::Off).unwrap();
    let fetched = fetch(&source, &env.options).await.unwrap();
    let provenance = fetched.request.provenance.clone().unwrap();
    assert_eq!(provenance.reference.as_deref(), Some("main"));
    assert_eq!(provenance.commit.as_deref(), Some(commit.as_str()));
    let record = env
        .store
        .install(&fetched.bundle, &fetched.request)
        .unwrap();
    let lock = LockFile::new(vec![
        LockEntry::from_record(&record, true, LockEnablement::user(true)).unwrap(),
    ]);

    // main moves on; the lock still brings back the recorded commit's bytes.
    std::fs::write(repo.join("packs/alpha/README.md"), "# changed\n").unwrap();
    run(
        &repo,
        "git",
        &["commit", "--quiet", "--all", "-m", "second"],
    );
    let again = fetch_locked(&lock, &env.options).await.unwrap();
    let [again] = again.as_slice() else {
        panic!("one entry")
    };
    assert_eq!(again.bundle.digest, record.digest);
    assert_eq!(again.request.commit.as_deref(), Some(commit.as_str()));
    assert_eq!(again.request.source, record.source);
    env.assert_no_work_left();

    // A commit the repository does not have refuses the set.
    let mut missing = lock.clone();
    missing.plugins[0].provenance.commit = Some("0".repeat(40));
    let error = fetch_locked(&missing, &env.options).await.unwrap_err();
    assert_eq!(error.kind(), SourceErrorKind::GitFailed, "{error}");
    env.assert_no_work_left();
}
