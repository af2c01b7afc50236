use c2_bundle_collector::{Limits, check_marketplace, codes};

use crate::support::*;

fn catalog(entries: &str) -> String {
    format!(r#"{{"standardVersion": "1.0.0", "plugins": [{entries}]}}"#)
}

fn entry(name: &str, version: &str, path: &str) -> String {
    format!(
        r#"{{"name": "{name}", "version": "{version}", "source": {{"kind": "local", "path": "{path}"}}}}"#
    )
}

#[test]
fn a_catalog_whose_local_entries_match_their_bundles_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(&dir.path().join("packs/hello"));
    write(
        dir.path(),
        "marketplace.json",
        &catalog(&entry("hello-runtime", "1.0.0", "packs/hello")),
    );
    let check =
        check_marketplace(&dir.path().join("marketplace.json"), &Limits::default()).unwrap();
    assert!(check.is_valid(), "{:#?}", check.diagnostics);
    assert_eq!(check.entries.len(), 1);
    assert!(check.entries[0].bundle.as_ref().unwrap().is_valid());
}

#[test]
fn a_local_entry_whose_version_differs_from_its_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(&dir.path().join("packs/hello"));
    write(
        dir.path(),
        "marketplace.json",
        &catalog(&entry("hello-runtime", "1.0.1", "packs/hello")),
    );
    let check =
        check_marketplace(&dir.path().join("marketplace.json"), &Limits::default()).unwrap();
    let codes_found: Vec<_> = check.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes_found, [codes::MARKETPLACE_MISMATCH]);
    assert!(
        check.diagnostics[0].message.contains("1.0.1"),
        "{:?}",
        check.diagnostics[0]
    );
}

#[test]
fn a_local_entry_pointing_at_an_invalid_or_missing_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(&dir.path().join("packs/hello"));
    std::fs::remove_file(dir.path().join("packs/hello/bin/hello")).unwrap();
    let entries = format!(
        "{}, {}",
        entry("hello-runtime", "1.0.0", "packs/hello"),
        entry("gone", "1.0.0", "packs/gone")
    );
    write(dir.path(), "marketplace.json", &catalog(&entries));
    let check =
        check_marketplace(&dir.path().join("marketplace.json"), &Limits::default()).unwrap();
    let codes_found: Vec<_> = check.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes_found,
        [
            codes::MARKETPLACE_ENTRY_INVALID,
            codes::MARKETPLACE_ENTRY_INVALID
        ]
    );
}

#[test]
fn an_invalid_catalog_carries_its_diagnostics_with_the_catalog_file() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "marketplace.json",
        r#"{"standardVersion": "9.9.9", "plugins": []}"#,
    );
    let check =
        check_marketplace(&dir.path().join("marketplace.json"), &Limits::default()).unwrap();
    assert!(!check.is_valid());
    assert!(check.marketplace.is_none());
    assert!(
        check
            .diagnostics
            .iter()
            .all(|d| d.file.as_deref() == Some("marketplace.json"))
    );
}

#[test]
fn a_local_entry_that_is_or_passes_through_a_symlink_is_refused() {
    let root = tempfile::tempdir().unwrap();
    // A valid bundle outside the catalog, and one inside it.
    fill_hello(&root.path().join("outside/hello"));
    let catalog_dir = root.path().join("catalog");
    fill_hello(&catalog_dir.join("packs/hello"));
    std::os::unix::fs::symlink("../outside/hello", catalog_dir.join("linked")).unwrap();
    std::os::unix::fs::symlink("../outside", catalog_dir.join("via")).unwrap();
    std::os::unix::fs::symlink("packs/hello", catalog_dir.join("inside")).unwrap();
    for path in ["linked", "via/hello", "inside", "./linked"] {
        write(
            &catalog_dir,
            "marketplace.json",
            &catalog(&entry("hello-runtime", "1.0.0", path)),
        );
        let check =
            check_marketplace(&catalog_dir.join("marketplace.json"), &Limits::default()).unwrap();
        let codes_found: Vec<_> = check.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes_found, [codes::MARKETPLACE_ENTRY_INVALID], "{path}");
        assert!(
            check.diagnostics[0].message.contains("is a symlink"),
            "{:?}",
            check.diagnostics[0]
        );
        assert!(
            check.entries[0].bundle.is_none(),
            "{path}: collected anyway"
        );
    }
}

#[test]
fn a_bundle_without_version_cannot_be_listed_in_a_marketplace() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("packs/hello");
    fill_hello(&bundle);
    write(
        &bundle,
        "plugin.json",
        &MANIFEST.replace("  \"version\": \"1.0.0\",\n", ""),
    );
    write(
        dir.path(),
        "marketplace.json",
        &catalog(&entry("hello-runtime", "1.0.0", "packs/hello")),
    );
    let check =
        check_marketplace(&dir.path().join("marketplace.json"), &Limits::default()).unwrap();
    assert!(check.entries[0].bundle.as_ref().unwrap().is_valid());
    let d = check
        .diagnostics
        .iter()
        .find(|d| d.code == codes::MARKETPLACE_MISMATCH)
        .expect("a mismatch diagnostic");
    assert!(d.message.contains("(no version)"), "{}", d.message);
}
