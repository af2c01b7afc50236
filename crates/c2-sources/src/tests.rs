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
