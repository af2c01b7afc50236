use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use c2_bundle_collector::{
    CollectedBundle, Error, FaultPoint, InstallRequest, Limits, SourceIdentity, Store, StoreOptions,
};

use crate::support::*;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default()).unwrap()
}

fn faulty(dir: &Path, point: FaultPoint) -> Store {
    Store::open(
        dir,
        StoreOptions {
            inject_fault: Some(point),
        },
    )
    .unwrap()
}

fn request(source: &Path) -> InstallRequest {
    InstallRequest::new(SourceIdentity::local(source).unwrap())
}

/// The installed tree is complete: its files re-collect to the digest its record states.
fn assert_complete(store: &Store, id: &str) -> String {
    let record = store.get(id).unwrap();
    let on_disk = store.collect_installed(id, &Limits::default()).unwrap();
    assert_valid(&on_disk);
    assert_eq!(
        on_disk.digest, record.digest,
        "installed files and installed.json disagree"
    );
    record.digest
}

fn assert_no_leftovers(store_dir: &Path) {
    for scratch in [".staging", ".trash"] {
        let path = store_dir.join(scratch);
        if path.exists() {
            assert!(
                names(&path).is_empty(),
                "{scratch} still holds {:?}",
                names(&path)
            );
        }
    }
}

#[test]
fn install_stores_the_files_modes_and_record() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let bundle = collect(source.path());
    let mut req = request(source.path());
    req.installed_at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    req.commit = Some("0123abcd".to_owned());
    let record = store.install(&bundle, &req).unwrap();

    assert_eq!(record.name, "hello-runtime");
    assert_eq!(record.version.as_deref(), Some("1.0.0"));
    assert_eq!(record.digest, bundle.digest);
    assert_eq!(record.installed_at, 1_700_000_000);
    assert_eq!(record.commit.as_deref(), Some("0123abcd"));
    assert!(record.id.starts_with("hello-runtime-"));
    assert_eq!(store.get(&record.id).unwrap(), record);

    let root = store.bundle_dir(&record.id).unwrap();
    assert_eq!(
        std::fs::read(root.join("lib/greet.txt")).unwrap(),
        b"hello\n"
    );
    let mode = |rel: &str| {
        std::fs::metadata(root.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("bin/hello"), 0o755);
    assert_eq!(mode("README.md"), 0o644);
    assert_complete(&store, &record.id);

    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].record.as_ref().unwrap(), &record);
    assert_no_leftovers(store_dir.path());
}

#[test]
fn an_invalid_bundle_is_refused_before_anything_is_written() {
    let source = hello_bundle();
    symlink(source.path(), "escape", "../../x");
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let result = store.install(&collect(source.path()), &request(source.path()));
    assert!(
        matches!(result, Err(Error::InvalidBundle { errors: 1 })),
        "{result:?}"
    );
    // Opening a clean store writes nothing, and a refused install neither.
    assert_eq!(names(store_dir.path()), Vec::<String>::new());
}

#[test]
fn reinstalling_from_the_same_source_replaces_the_bundle_whole() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let first = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    std::fs::remove_file(source.path().join("README.md")).unwrap();
    write(source.path(), "NEW.md", "new\n");
    let second = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();

    assert_eq!(first.id, second.id);
    assert_ne!(first.digest, second.digest);
    let root = store.bundle_dir(&second.id).unwrap();
    assert!(
        !root.join("README.md").exists(),
        "no file of the old bundle survives an update"
    );
    assert!(root.join("NEW.md").exists());
    assert_complete(&store, &second.id);
    assert_eq!(store.list().unwrap().len(), 1);
    assert_no_leftovers(store_dir.path());
}

#[test]
fn uninstall_removes_the_bundle_and_its_record() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    assert_eq!(store.uninstall(&record.id).unwrap(), record);
    assert!(matches!(
        store.get(&record.id),
        Err(Error::NotInstalled { .. })
    ));
    assert!(store.list().unwrap().is_empty());
    assert!(!store_dir.path().join(&record.id).exists());
    assert!(matches!(
        store.uninstall(&record.id),
        Err(Error::NotInstalled { .. })
    ));
    assert_no_leftovers(store_dir.path());
}

#[test]
fn ids_that_could_name_other_paths_are_rejected() {
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    for id in ["", "../x", ".staging", "a/b"] {
        assert!(
            matches!(store.uninstall(id), Err(Error::InvalidId { .. })),
            "{id:?}"
        );
    }
}

#[test]
fn list_reports_an_unreadable_record_without_hiding_the_others() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    write(
        store_dir.path(),
        "broken-00000000/installed.json",
        "{ not json",
    );
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(matches!(listed[0].record, Err(Error::CorruptRecord { .. })));
    assert_eq!(listed[1].id, record.id);
}

#[test]
fn list_skips_the_hosts_own_files_beside_the_bundles() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    write(store_dir.path(), "policy.json", "{}");
    write(store_dir.path(), "policy.lock", "");
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].id, record.id);
}

#[cfg(feature = "archive")]
#[test]
fn a_directory_and_its_tar_gz_install_with_the_same_content_digest() {
    use c2_bundle_collector::{ArchiveFormat, collect_archive_bytes};

    let source = hello_bundle();
    let mut builder = tar::Builder::new(Vec::new());
    builder.append_dir_all(".", source.path()).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &builder.into_inner().unwrap()).unwrap();
    let archive = gz.finish().unwrap();

    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let from_dir = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    let bundle = collect_archive_bytes(&archive, ArchiveFormat::TarGz, &Limits::default());
    let from_archive = store
        .install(
            &bundle,
            &InstallRequest::new(SourceIdentity::archive(&archive)),
        )
        .unwrap();
    assert_eq!(from_dir.digest, from_archive.digest);
    assert_ne!(
        from_dir.id, from_archive.id,
        "different sources are different installations"
    );
    assert_complete(&store, &from_archive.id);
}

/// Installs `old`, then crashes while installing `new` at `point`, then reopens the store.
fn crash_update(point: FaultPoint) -> (String, String, String, tempfile::TempDir) {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let old = collect(source.path());
    let record = open(store_dir.path())
        .install(&old, &request(source.path()))
        .unwrap();
    write(source.path(), "README.md", "# changed\n");
    write(source.path(), "extra/new.txt", "new\n");
    let new: CollectedBundle = collect(source.path());
    let result = faulty(store_dir.path(), point).install(&new, &request(source.path()));
    assert!(
        matches!(result, Err(Error::InjectedFault(p)) if p == point.name()),
        "{result:?}"
    );
    let reopened = open(store_dir.path());
    let digest = assert_complete(&reopened, &record.id);
    assert_no_leftovers(store_dir.path());
    (old.digest, new.digest, digest, store_dir)
}

#[test]
fn a_crash_at_any_step_of_an_update_leaves_the_complete_old_or_new_bundle() {
    for point in FaultPoint::ALL {
        // An exhaustive match: a new step cannot be added without deciding its outcome here.
        let expect_new = match point {
            FaultPoint::AfterStaging | FaultPoint::AfterOldTrashed => false,
            FaultPoint::AfterNewInPlace => true,
            FaultPoint::AfterUninstallTrashed => continue,
        };
        let (old, new, found, _dir) = crash_update(point);
        let expected = if expect_new { new } else { old };
        assert_eq!(found, expected, "after a crash at {point:?}");
    }
}

#[test]
fn a_crash_after_the_old_bundle_is_trashed_is_undone_on_open() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let record = open(store_dir.path())
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    write(source.path(), "README.md", "# changed\n");
    let result = faulty(store_dir.path(), FaultPoint::AfterOldTrashed)
        .install(&collect(source.path()), &request(source.path()));
    assert!(result.is_err());
    assert!(
        !store_dir.path().join(&record.id).exists(),
        "the crash left no live bundle"
    );
    let reopened = open(store_dir.path());
    assert_eq!(assert_complete(&reopened, &record.id), record.digest);
}

#[test]
fn a_crash_during_a_first_install_leaves_nothing_or_the_complete_bundle() {
    for (point, installed) in [
        (FaultPoint::AfterStaging, false),
        (FaultPoint::AfterNewInPlace, true),
    ] {
        let source = hello_bundle();
        let store_dir = tempfile::tempdir().unwrap();
        let bundle = collect(source.path());
        let result = faulty(store_dir.path(), point).install(&bundle, &request(source.path()));
        assert!(result.is_err());
        let store = open(store_dir.path());
        let listed = store.list().unwrap();
        assert_eq!(
            listed.len(),
            usize::from(installed),
            "after a crash at {point:?}"
        );
        if installed {
            assert_eq!(assert_complete(&store, &listed[0].id), bundle.digest);
        }
        assert_no_leftovers(store_dir.path());
    }
}

#[test]
fn a_crash_during_uninstall_finishes_the_removal_on_open() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let record = open(store_dir.path())
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    let result = faulty(store_dir.path(), FaultPoint::AfterUninstallTrashed).uninstall(&record.id);
    assert!(matches!(
        result,
        Err(Error::InjectedFault(p)) if p == FaultPoint::AfterUninstallTrashed.name()
    ));
    let store = open(store_dir.path());
    assert!(store.list().unwrap().is_empty());
    assert_no_leftovers(store_dir.path());
}

#[test]
fn the_digest_on_disk_is_the_recorded_one_until_a_file_changes_and_checking_it_is_cheap() {
    // The benchmark's kind of bundle: a manifest and a launcher.
    let small = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store
        .install(&collect(small.path()), &request(small.path()))
        .unwrap();
    let started = std::time::Instant::now();
    for _ in 0..20 {
        store
            .current_digest(&record.id, &Limits::default())
            .unwrap();
    }
    eprintln!(
        "current_digest of hello (4 files): {:?}",
        started.elapsed() / 20
    );

    let source = hello_bundle();
    // A typical bundle: a manifest, a runtime and a few dozen small files (~200 KiB).
    for i in 0..40 {
        write(
            source.path(),
            &format!("lib/m{i:02}.js"),
            &"x".repeat(5 * 1024),
        );
    }
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    let limits = Limits::default();
    let started = std::time::Instant::now();
    let runs: u32 = 20;
    for _ in 0..runs {
        let digest = store.current_digest(&record.id, &limits).unwrap();
        assert_eq!(digest.as_deref(), Some(record.digest.as_str()));
    }
    let each = started.elapsed() / runs;
    eprintln!("current_digest of a 45-file, ~200 KiB bundle: {each:?}");
    // Well under a millisecond unloaded; the bound only catches a pathological regression.
    assert!(each < Duration::from_millis(100), "{each:?}");

    let bundle = store.bundle_dir(&record.id).unwrap();
    std::fs::write(bundle.join("lib/m00.js"), "changed").unwrap();
    let changed = store.current_digest(&record.id, &limits).unwrap();
    assert!(changed.is_some_and(|d| d != record.digest));
    std::fs::remove_file(bundle.join("lib/m00.js")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", bundle.join("lib/m00.js")).unwrap();
    assert_eq!(store.current_digest(&record.id, &limits).unwrap(), None);
}

#[test]
fn a_bundle_without_version_installs_with_a_null_version_in_its_record() {
    let source = hello_bundle();
    write(
        source.path(),
        "plugin.json",
        &MANIFEST.replace("  \"version\": \"1.0.0\",\n", ""),
    );
    let bundle = collect(source.path());
    assert_valid(&bundle);
    assert_eq!(bundle.version(), None);
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store.install(&bundle, &request(source.path())).unwrap();
    assert_eq!(record.version, None);
    let text =
        std::fs::read_to_string(store_dir.path().join(&record.id).join("installed.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(json["version"].is_null(), "{text}");
    assert_eq!(store.get(&record.id).unwrap(), record);
}

#[test]
fn a_leased_tree_is_deleted_only_after_its_last_lease_goes() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let record = store
        .install(&collect(source.path()), &request(source.path()))
        .unwrap();
    let first = store.lease(&record.id).unwrap();
    let second = open(store_dir.path()).lease(&record.id).unwrap();
    assert_eq!(first.id(), record.id);
    let (_, retired) = store.uninstall_deferred(&record.id).unwrap();
    // Gone from the store at once, the files kept while a lease is held.
    assert!(store.list().unwrap().is_empty());
    assert!(matches!(
        store.lease(&record.id),
        Err(Error::NotInstalled { .. })
    ));
    assert!(retired.path().join("bundle/plugin.json").exists());
    assert!(!retired.try_finish().unwrap());
    // An open's recovery leaves a leased tree alone too.
    open(store_dir.path());
    assert!(retired.path().join("bundle/plugin.json").exists());
    drop(first);
    assert!(!retired.try_finish().unwrap(), "one lease is still held");
    drop(second);
    assert!(retired.finish(Duration::from_secs(1)).unwrap());
    assert_no_leftovers(store_dir.path());
}

#[test]
fn a_retired_tree_still_leased_at_the_deadline_is_deleted_by_a_later_open() {
    let source = hello_bundle();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let bundle = collect(source.path());
    let record = store.install(&bundle, &request(source.path())).unwrap();
    let lease = store.lease(&record.id).unwrap();
    // A replace retires the old tree; the new one is leased separately.
    let (_, retired) = store
        .install_deferred(&bundle, &request(source.path()))
        .unwrap();
    let retired = retired.expect("the replaced tree");
    let path = retired.path().to_path_buf();
    let started = std::time::Instant::now();
    assert!(!retired.finish(Duration::from_millis(50)).unwrap());
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert!(path.exists());
    let new_lease = store.lease(&record.id).unwrap();
    drop(lease);
    open(store_dir.path());
    assert!(!path.exists(), "the unleased old tree is gone");
    assert_complete(&store, &record.id);
    drop(new_lease);
    assert_no_leftovers(store_dir.path());
}

#[test]
fn settings_files_are_replaced_atomically_bounded_and_plain_names_only() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
    assert_eq!(store.read_settings("hub.json", 64).unwrap(), None);
    let wrote = store
        .update_settings("hub.json", 64, |current| {
            assert_eq!(current, None);
            Ok::<_, String>(b"{\"a\":1}".to_vec())
        })
        .unwrap();
    assert_eq!(wrote, Ok(()));
    // A refusing change writes nothing and hands its error back.
    let refused = store
        .update_settings("hub.json", 64, |current| {
            assert_eq!(current, Some(&b"{\"a\":1}"[..]));
            Err("no".to_owned())
        })
        .unwrap();
    assert_eq!(refused, Err("no".to_owned()));
    assert_eq!(
        store.read_settings("hub.json", 64).unwrap().as_deref(),
        Some(&b"{\"a\":1}"[..])
    );
    // Contents over the bound are refused both ways, and nothing is left behind.
    let big = store.update_settings("hub.json", 4, |_| Ok::<_, String>(vec![b'x'; 5]));
    assert!(
        matches!(big, Err(Error::SettingsTooLarge { limit: 4, .. })),
        "{big:?}"
    );
    assert!(matches!(
        store.read_settings("hub.json", 4),
        Err(Error::SettingsTooLarge { .. })
    ));
    for bad in ["../x", ".lock", "a/b", ""] {
        assert!(store.read_settings(bad, 64).is_err(), "{bad}");
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lists the store directory"
    )]
    let names: Vec<String> = std::fs::read_dir(root.path().join("plugins"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("hub.json"))
        .collect();
    assert_eq!(names, ["hub.json"]);
}
