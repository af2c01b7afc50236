use std::path::PathBuf;

use crate::catalog::{Location, github_url, is_full_sha, is_newer, npm_spec_refusal, same_version};
use crate::source::parse_git;
use crate::{EntryLookup, EntrySpec, GitSource, Source, SourceError, SourceErrorKind, split_name};

fn git(url: &str, reference: Option<&str>, subdir: &str) -> GitSource {
    GitSource {
        url: url.to_owned(),
        reference: reference.map(str::to_owned),
        subdir: subdir.to_owned(),
    }
}

fn entry(name: &str, version: Option<&str>, marketplace: Option<&str>) -> Source {
    Source::Catalog(EntrySpec {
        name: name.to_owned(),
        version: version.map(str::to_owned),
        marketplace: marketplace.map(str::to_owned),
    })
}

#[test]
fn git_plus_urls_carry_a_ref_and_a_subdirectory() {
    assert_eq!(
        parse_git("git+file:///repo#v1:packs/a/"),
        Some(git("file:///repo", Some("v1"), "packs/a"))
    );
    assert_eq!(
        parse_git("git+https://x/r.git"),
        Some(git("https://x/r.git", None, ""))
    );
    // An empty ref is no ref; a fragment without `:` is a ref alone.
    assert_eq!(
        parse_git("git+file:///r#:sub"),
        Some(git("file:///r", None, "sub"))
    );
    assert_eq!(
        parse_git("git+file:///r#main"),
        Some(git("file:///r", Some("main"), ""))
    );
}

#[test]
fn github_repository_and_tree_urls_are_git_sources() {
    assert_eq!(
        parse_git("https://github.com/o/r/tree/main/packs/hello"),
        Some(git(
            "https://github.com/o/r.git",
            Some("main"),
            "packs/hello"
        ))
    );
    assert_eq!(parse_git("https://github.com/o/r").unwrap().reference, None);
    assert_eq!(
        parse_git("http://github.com/o/r.git/"),
        Some(git("https://github.com/o/r.git", None, ""))
    );
    assert_eq!(
        parse_git("git+file:///r#main:./a//b/").unwrap().subdir,
        "a/b"
    );
    assert_eq!(
        parse_git("git+file:///r#main:a/../b").unwrap().subdir,
        "a/../b"
    );
    assert_eq!(parse_git("https://github.com/o/r/blob/main/x"), None);
    assert_eq!(parse_git("https://github.com/o"), None);
    assert_eq!(parse_git("./packs/hello"), None);
}

#[test]
fn names_split_at_the_first_at_sign() {
    assert_eq!(split_name("hello"), ("hello", None));
    assert_eq!(split_name("hello@1.2.0"), ("hello", Some("1.2.0")));
    assert_eq!(split_name("hello@"), ("hello", None));
    assert_eq!(split_name("a@b@c"), ("a", Some("b@c")));
}

#[test]
fn every_form_parses_to_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    let archive = dir.path().join("b.tgz");
    std::fs::write(&archive, b"").unwrap();
    let text = |p: &PathBuf| p.to_str().unwrap().to_owned();
    for lookup in [EntryLookup::Off, EntryLookup::Configured] {
        assert_eq!(
            Source::parse(&text(&bundle), lookup).unwrap(),
            Source::Directory(bundle.clone())
        );
        assert_eq!(
            Source::parse(&text(&archive), lookup).unwrap(),
            Source::Archive(archive.clone())
        );
        assert_eq!(
            Source::parse("git+file:///r#v1:a", lookup).unwrap(),
            Source::Git(git("file:///r", Some("v1"), "a"))
        );
        assert_eq!(
            Source::parse("https://github.com/o/r", lookup).unwrap(),
            Source::Git(git("https://github.com/o/r.git", None, ""))
        );
    }
    // A directory named like an archive is a directory.
    let named = dir.path().join("dir.zip");
    std::fs::create_dir(&named).unwrap();
    assert_eq!(
        Source::parse(&text(&named), EntryLookup::Off).unwrap(),
        Source::Directory(named.clone())
    );
    assert_eq!(
        Source::parse("hello@1.0.0", EntryLookup::Configured).unwrap(),
        entry("hello", Some("1.0.0"), None)
    );
    assert_eq!(
        Source::parse("hello", EntryLookup::In("main")).unwrap(),
        entry("hello", None, Some("main"))
    );
}

#[test]
fn a_name_is_an_entry_only_with_catalogs_and_without_a_path_of_that_name() {
    // Without catalogs, a name that is no path is refused as today.
    let error = Source::parse("no-such-bundle-here", EntryLookup::Off).unwrap_err();
    assert_eq!(error.kind(), SourceErrorKind::UnsupportedSource);
    assert_eq!(
        error.to_string(),
        "no-such-bundle-here: no such directory or archive; give a bundle directory, a .tar.gz/.tgz/.zip archive, a git+URL#REF:SUBDIR or a GitHub URL"
    );
    assert!(matches!(error, SourceError::Unsupported(_)));
    // An existing directory of that name wins over the catalogs (relative to the cwd).
    let cwd = std::env::current_dir().unwrap();
    let name = "src";
    assert!(cwd.join(name).is_dir());
    assert_eq!(
        Source::parse(name, EntryLookup::Configured).unwrap(),
        Source::Directory(PathBuf::from(name))
    );
    // Only lowercase letters, digits, `-` and `.` make an entry name.
    for text in ["Hello", "a/b", "a_b", "@1.0.0", "/abs/path"] {
        assert_eq!(
            Source::parse(text, EntryLookup::Configured)
                .unwrap_err()
                .kind(),
            SourceErrorKind::UnsupportedSource,
            "{text}"
        );
    }
    // A git source is never an entry; a named catalog takes the text as an entry whatever it
    // looks like.
    assert!(matches!(
        Source::parse("git+x", EntryLookup::Configured).unwrap(),
        Source::Git(_)
    ));
    assert_eq!(
        Source::parse("src", EntryLookup::In("c")).unwrap(),
        entry("src", None, Some("c"))
    );
    assert!(
        Source::parse("hello@1.0.0", EntryLookup::Configured)
            .unwrap()
            .is_catalog()
    );
}

#[test]
fn github_sources_map_to_clone_urls_and_full_shas_are_pins() {
    assert_eq!(
        github_url("https://github.com", "o/r"),
        "https://github.com/o/r.git"
    );
    assert_eq!(github_url("file:///m/", "o/r"), "file:///m/o/r.git");
    assert!(is_full_sha(&"a".repeat(40)));
    assert!(!is_full_sha(&"a".repeat(39)));
    assert!(!is_full_sha("main"));
}

#[test]
fn versions_compare_by_semver() {
    assert!(is_newer("1.10.0", "1.9.0"));
    assert!(!is_newer("1.0.0", "1.0.0"));
    assert!(is_newer("1.0.0", "1.0.0-rc.1"));
    assert!(!is_newer("0.9.0", "1.0.0"));
    assert!(same_version("1.0.0", "1.0.0"));
    assert!(!same_version("1.0.0", "1.0.1"));
}

#[test]
fn git_locations_normalize_to_one_text() {
    let parsed = Location::parse("https://github.com/o/r/tree/main/catalogs").unwrap();
    assert_eq!(
        parsed.normalized(),
        "git+https://github.com/o/r.git#main:catalogs"
    );
    let parsed = Location::parse("git+file:///x/r").unwrap();
    assert_eq!(parsed.normalized(), "git+file:///x/r");
}

#[test]
fn kinds_have_their_stable_names_and_hints_carry_the_advice() {
    let error = SourceError::DuplicateMarketplace {
        name: "main".into(),
        location: "/m".into(),
    };
    assert_eq!(error.kind().as_str(), "duplicate_marketplace");
    assert_eq!(
        error.to_string(),
        "a catalog named `main` at /m is already configured"
    );
    assert!(error.hint().unwrap().contains("marketplace remove main"));
    let error = SourceError::UnknownMarketplace {
        name: "x".into(),
        configured: vec![],
    };
    assert_eq!(
        error.to_string(),
        "no configured catalog is named `x` (configured: none)"
    );
    assert_eq!(SourceError::Git("boom".into()).to_string(), "git: boom");
    assert_eq!(
        SourceError::AmbiguousEntry {
            name: "a".into(),
            catalogs: vec!["one".into(), "two".into()]
        }
        .to_string(),
        "`a` is listed by several catalogs (one, two): choose one with --marketplace"
    );
}

#[test]
fn an_npm_source_is_fetched_only_as_a_catalog_path_or_a_registry_name_at_an_exact_version() {
    for (package, version) in [
        ("./bundles/one", None),
        ("./one.tgz", None),
        ("one", Some("1.2.3")),
        ("@scope/one", Some("1.0.0-beta.1")),
    ] {
        assert_eq!(
            npm_spec_refusal(package, version),
            None,
            "{package} {version:?}"
        );
    }
    for (package, version) in [
        ("file:/abs/dir", None),
        ("file:../up", Some("1.0.0")),
        ("~/dir", None),
        ("/abs/dir", None),
        ("git+https://example.com/x.git", None),
        ("github:owner/repo", None),
        ("owner/repo", Some("1.0.0")),
        ("https://example.com/x.tgz", None),
        ("npm:other@1.0.0", None),
        ("one@latest", None),
        ("one", None),
        ("one", Some("latest")),
        ("one", Some("^1.0.0")),
        ("one", Some("1.x")),
        ("one", Some("file:/abs/dir")),
        ("./dir", Some("1.0.0")),
        ("-one", Some("1.0.0")),
    ] {
        assert!(
            npm_spec_refusal(package, version).is_some(),
            "{package} {version:?} must be refused"
        );
    }
}

mod lock {
    use c2_bundle_collector::{
        InstalledRecord, Inventory, Provenance, ProvenanceKind, SourceIdentity, rfc3339,
    };

    use crate::remote::{sha256_hex, sha512_integrity};
    use crate::{
        DriftKind, LOCK_VERSION, LockEnablement, LockEntry, LockFile, MAX_LOCK_BYTES,
        SourceErrorKind, drift,
    };

    fn record(id: &str, digest: &str, version: &str) -> InstalledRecord {
        let text = serde_json::json!({
            "id": id, "name": id, "version": version,
            "source": {"kind": "git", "url": "file:///repo", "subdir": id},
            "digest": digest, "commit": "0123456789abcdef0123456789abcdef01234567",
            "installedAt": 0, "inventory": serde_json::to_value(Inventory::default()).unwrap(),
            "provenance": {"kind": "git", "location": "file:///repo", "reference": "main",
                           "commit": "0123456789abcdef0123456789abcdef01234567",
                           "subdir": id, "installedAt": "2026-01-31T12:00:00Z"},
        });
        serde_json::from_value(text).unwrap()
    }

    fn lock_of(records: &[InstalledRecord]) -> LockFile {
        LockFile::new(
            records
                .iter()
                .map(|r| LockEntry::from_record(r, true, LockEnablement::user(false)).unwrap())
                .collect(),
        )
    }

    #[test]
    fn a_lock_round_trips_sorted_with_no_install_time() {
        let lock = lock_of(&[record("b", "22", "1.0.0"), record("a", "11", "2.0.0")]);
        let text = lock.to_text();
        assert!(text.ends_with("}\n"), "{text}");
        assert!(text.starts_with("{\n  \"lockVersion\": 1,"), "{text}");
        assert!(
            !text.contains("installedAt"),
            "a lock records no time: {text}"
        );
        let ids: Vec<&str> = lock.plugins.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        let read = LockFile::parse(text.as_bytes()).unwrap();
        assert_eq!(read, lock);
        assert_eq!(read.to_text(), text, "the same bytes again");
        assert_eq!(read.lock_version, LOCK_VERSION);
        assert!(read.plugins[0].trusted && !read.plugins[0].enabled.user);
        assert_eq!(read.plugins[0].provenance.kind, ProvenanceKind::Git);
    }

    #[test]
    fn another_version_an_unknown_field_a_duplicate_or_a_huge_file_is_refused() {
        let lock = lock_of(&[record("a", "11", "1.0.0")]);
        let mut value = serde_json::to_value(&lock).unwrap();
        let refused = |value: &serde_json::Value, needle: &str| {
            let error = LockFile::parse(value.to_string().as_bytes()).unwrap_err();
            assert_eq!(error.kind(), SourceErrorKind::InvalidLock);
            assert!(error.to_string().contains(needle), "{error}");
            assert!(error.hint().is_some());
        };
        value["lockVersion"] = serde_json::json!(2);
        refused(&value, "lockVersion 2");
        value["lockVersion"] = serde_json::json!(1);
        value["extra"] = serde_json::json!(true);
        refused(&value, "extra");
        let mut value = serde_json::to_value(&lock).unwrap();
        value["plugins"][0]["provenance"]["mirror"] = serde_json::json!("x");
        refused(&value, "mirror");
        let mut value = serde_json::to_value(&lock).unwrap();
        value["plugins"][0]["enabled"]["team"] = serde_json::json!(true);
        refused(&value, "team");
        let mut value = serde_json::to_value(&lock).unwrap();
        let first = value["plugins"][0].clone();
        value["plugins"].as_array_mut().unwrap().push(first);
        refused(&value, "listed twice");
        refused(&serde_json::json!({"plugins": []}), "no lockVersion");
        let huge = vec![b' '; usize::try_from(MAX_LOCK_BYTES).unwrap() + 1];
        let error = LockFile::parse(&huge).unwrap_err();
        assert!(error.to_string().contains("larger than"), "{error}");
        assert!(LockFile::parse(b"not json").is_err());
    }

    #[test]
    fn a_lock_file_is_read_bounded_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock_of(&[record("a", "11", "1.0.0")]);
        let path = dir.path().join("c2.lock.json");
        std::fs::write(&path, lock.to_text()).unwrap();
        assert_eq!(LockFile::read(&path).unwrap(), lock);
        let big = dir.path().join("big.json");
        std::fs::write(
            &big,
            vec![b' '; usize::try_from(MAX_LOCK_BYTES).unwrap() + 10],
        )
        .unwrap();
        assert_eq!(
            LockFile::read(&big).unwrap_err().kind(),
            SourceErrorKind::InvalidLock
        );
        let missing = LockFile::read(&dir.path().join("missing.json")).unwrap_err();
        assert_eq!(missing.kind(), SourceErrorKind::InvalidLock);
    }

    #[test]
    fn drift_names_missing_extra_and_changed_bundles() {
        let lock = lock_of(&[record("a", "11", "1.0.0"), record("b", "22", "1.0.0")]);
        assert!(
            drift(
                &lock,
                &[record("a", "11", "1.0.0"), record("b", "22", "1.0.0")]
            )
            .is_empty()
        );
        let mut moved = record("b", "23", "1.1.0");
        moved.source = SourceIdentity::Git {
            url: "file:///elsewhere".to_owned(),
            subdir: "b".to_owned(),
        };
        let found = drift(&lock, &[moved, record("c", "33", "1.0.0")]);
        let kinds: Vec<(&str, DriftKind)> = found.iter().map(|d| (d.id.as_str(), d.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("a", DriftKind::Missing),
                ("b", DriftKind::Digest),
                ("b", DriftKind::Version),
                ("b", DriftKind::Source),
                ("c", DriftKind::Extra),
            ]
        );
        assert_eq!(found[1].locked.as_deref(), Some("22"));
        assert_eq!(found[1].installed.as_deref(), Some("23"));
    }

    #[test]
    fn a_record_without_provenance_locks_only_when_its_source_implies_one() {
        let mut git = record("a", "11", "1.0.0");
        git.provenance = None;
        let entry = LockEntry::from_record(&git, false, LockEnablement::user(true)).unwrap();
        assert_eq!(entry.provenance.commit, git.commit);
        let mut archive = git.clone();
        archive.source = SourceIdentity::archive(b"bytes");
        let error =
            LockEntry::from_record(&archive, false, LockEnablement::user(true)).unwrap_err();
        assert_eq!(error.kind(), SourceErrorKind::InvalidLock);
    }

    #[test]
    fn hashes_and_times_have_their_standard_forms() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // SHA-512 of the empty string, base64 (as `npm` and browsers write integrity).
        assert_eq!(
            sha512_integrity(b""),
            "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
        );
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400 + 3_723);
        assert_eq!(rfc3339(at), "2000-02-29T01:02:03Z");
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let p = Provenance::new(ProvenanceKind::Directory, "/x", std::time::UNIX_EPOCH);
        assert_eq!(p.installed_at, "1970-01-01T00:00:00Z");
    }

    #[test]
    fn an_older_or_unreadable_recorded_provenance_is_unknown_never_an_error() {
        let mut value = serde_json::to_value(record("a", "11", "1.0.0")).unwrap();
        value.as_object_mut().unwrap().remove("provenance");
        let older: InstalledRecord = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(older.provenance, None);
        assert!(
            !serde_json::to_string(&older)
                .unwrap()
                .contains("provenance")
        );
        value["provenance"] = serde_json::json!({"kind": "carrier-pigeon", "future": 1});
        let newer: InstalledRecord = serde_json::from_value(value).unwrap();
        assert_eq!(newer.provenance, None);
        assert_eq!(newer.digest, "11");
    }

    #[test]
    fn a_locked_npm_spec_is_an_absolute_path_or_an_exact_registry_version() {
        use crate::lock::npm_refusal;
        assert_eq!(npm_refusal("/work/hub/pkg-1.0.0.tgz"), None);
        assert_eq!(npm_refusal("left-pad@1.3.0"), None);
        assert_eq!(npm_refusal("@scope/pkg@2.0.0"), None);
        for bad in [
            "left-pad",
            "left-pad@^1.0.0",
            "left-pad@latest",
            "git+https://example.invalid/x.git",
            "file:../x",
            "./relative",
            "alias@npm:other@1.0.0",
        ] {
            assert!(npm_refusal(bad).is_some(), "{bad}");
        }
    }
}
