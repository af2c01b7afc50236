//! Development marks: held by a lock that dies with its process, found orphaned once it is
//! gone, recording each reload; and the data directory layout of the store.

use std::path::Path;

use c2_bundle_collector::{
    DevelopmentMark, Error, InstallRequest, ReloadRecord, SourceIdentity, Store, StoreOptions,
    data_dir,
};

use crate::support::*;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default()).unwrap()
}

fn mark_of(root: &Path) -> DevelopmentMark {
    let bundle = collect(root);
    let request = InstallRequest::new(SourceIdentity::local(root).unwrap());
    DevelopmentMark::new(&bundle, &request, root).unwrap()
}

#[test]
fn a_held_mark_is_refused_to_another_holder_and_orphaned_once_released() {
    let bundle = hello_bundle();
    let plugins = tempfile::tempdir().unwrap();
    let store = open(plugins.path());
    let mark = mark_of(bundle.path());
    assert_eq!(mark.pid, std::process::id());
    assert!(mark.dir.is_absolute());
    let hold = store.hold_development(&mark).unwrap();
    assert_eq!(hold.id(), mark.id);

    // Another holder (another open of the lock file) is refused while it is held.
    let other = open(plugins.path());
    let refused = other.hold_development(&mark).unwrap_err();
    assert!(
        matches!(&refused, Error::DevelopmentHeld { id, pid: Some(pid) } if *id == mark.id && *pid == mark.pid),
        "{refused:?}"
    );
    let status = other.developer_status().unwrap();
    assert!(status.enabled && status.watching, "{status:?}");
    assert_eq!(status.bundles.len(), 1);
    assert!(other.orphaned_development().unwrap().is_empty());

    // Its holder gone (the lock released, as by a crash), the mark is an orphan.
    drop(hold);
    assert_eq!(other.orphaned_development().unwrap(), vec![mark.id.clone()]);
    let status = other.developer_status().unwrap();
    assert!(status.enabled && !status.watching, "{status:?}");

    other.release_development(&mark.id).unwrap();
    assert!(other.development().unwrap().is_empty());
    assert!(!other.developer_status().unwrap().enabled);
}

#[test]
fn a_reload_is_recorded_in_the_mark_and_is_the_last_reload() {
    let bundle = hello_bundle();
    let plugins = tempfile::tempdir().unwrap();
    let store = open(plugins.path());
    let mark = mark_of(bundle.path());
    let _hold = store.hold_development(&mark).unwrap();
    assert_eq!(store.developer_status().unwrap().last_reload, None);

    write(bundle.path(), "plugin.json", "{ \"name\": ");
    let record = ReloadRecord::of(&collect(bundle.path()));
    assert!(!record.ok);
    assert!(
        record.diagnostics.iter().any(|d| d.starts_with("error[")),
        "{record:?}"
    );
    let recorded = store.record_reload(&mark.id, record.clone()).unwrap();
    assert_eq!(recorded.last_reload.as_ref(), Some(&record));
    let last = store.developer_status().unwrap().last_reload.unwrap();
    assert_eq!(last.plugins, vec![mark.id.clone()]);
    assert_eq!(last.record, record);
    let marks = store.development_marks(Some(&mark.id)).unwrap();
    assert_eq!(marks[0].last_reload.as_ref(), Some(&record));
}

#[test]
fn an_invalid_bundle_has_no_mark_and_an_unknown_id_has_no_marks() {
    let bundle = hello_bundle();
    write(bundle.path(), "plugin.json", "{}");
    let collected = collect(bundle.path());
    let request = InstallRequest::new(SourceIdentity::local(bundle.path()).unwrap());
    let refused = DevelopmentMark::new(&collected, &request, bundle.path()).unwrap_err();
    assert!(
        matches!(refused, Error::InvalidBundle { .. }),
        "{refused:?}"
    );
    let plugins = tempfile::tempdir().unwrap();
    let store = open(plugins.path());
    assert!(store.development_marks(None).unwrap().is_empty());
    let unknown = store
        .development_marks(Some("nobody-12345678"))
        .unwrap_err();
    assert!(matches!(unknown, Error::NotInstalled { .. }), "{unknown:?}");
    assert!(matches!(
        store.record_reload("nobody-12345678", ReloadRecord::of(&collected)),
        Err(Error::NotInstalled { .. })
    ));
}

#[test]
fn data_dirs_follow_the_store_layout() {
    let root = Path::new("/p");
    assert_eq!(data_dir(root, "x-1", None), Path::new("/p/.data/x-1"));
    assert_eq!(
        data_dir(root, "x-1", Some("ab")),
        Path::new("/p/.data/x-1/projects/ab")
    );
}
