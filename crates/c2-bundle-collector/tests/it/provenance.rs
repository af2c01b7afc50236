//! The provenance of an install is kept in installed.json with the bundle: read back as
//! written, replaced with the bundle, kept as it was when a replace crashes, and unknown (not
//! an error) in a record written without it.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use c2_bundle_collector::{
    FaultPoint, InstallRequest, Provenance, ProvenanceKind, SourceIdentity, Store, StoreOptions,
};

use crate::support::*;

fn request(source: &Path, commit: &str) -> InstallRequest {
    let mut request = InstallRequest::new(SourceIdentity::local(source).unwrap());
    request.installed_at = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let mut provenance = Provenance::new(
        ProvenanceKind::Git,
        "https://example.invalid/r.git",
        request.installed_at,
    );
    provenance.commit = Some(commit.to_owned());
    request.provenance = Some(provenance);
    request
}

#[test]
fn provenance_is_stored_with_the_bundle_and_survives_a_crashed_replace() {
    let source = hello_bundle();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let record = store
        .install(
            &collect(source.path()),
            &request(source.path(), "a".repeat(40).as_str()),
        )
        .unwrap();
    let read = store.get(&record.id).unwrap();
    let provenance = read.provenance.clone().unwrap();
    assert_eq!(provenance.installed_at, "2026-01-01T00:00:00Z");
    assert_eq!(provenance.commit.as_deref(), Some("a".repeat(40).as_str()));
    assert_eq!(read, record);

    // A replace that crashes before the new tree is in place keeps the old provenance.
    write(source.path(), "README.md", "# changed\n");
    let faulty = Store::open(
        dir.path(),
        StoreOptions {
            inject_fault: Some(FaultPoint::AfterOldTrashed),
        },
    )
    .unwrap();
    let new_request = request(source.path(), "b".repeat(40).as_str());
    assert!(
        faulty
            .install(&collect(source.path()), &new_request)
            .is_err()
    );
    let reopened = Store::open(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(
        reopened.get(&record.id).unwrap().provenance,
        Some(provenance)
    );

    // A replace that completes records the new one.
    reopened
        .install(&collect(source.path()), &new_request)
        .unwrap();
    let now = reopened.get(&record.id).unwrap().provenance.unwrap();
    assert_eq!(now.commit.as_deref(), Some("b".repeat(40).as_str()));
}

#[test]
fn a_record_without_provenance_reads_as_unknown() {
    let source = hello_bundle();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let record = store
        .install(
            &collect(source.path()),
            &InstallRequest::new(SourceIdentity::local(source.path()).unwrap()),
        )
        .unwrap();
    assert_eq!(record.provenance, None);
    let text = std::fs::read_to_string(dir.path().join(&record.id).join("installed.json")).unwrap();
    assert!(!text.contains("provenance"), "{text}");
    assert_eq!(store.get(&record.id).unwrap().provenance, None);
}
