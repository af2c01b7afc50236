//! `validate_marketplace`: closed catalog, entry and source objects.

use c2_manifest::{MarketplaceSource, validate_marketplace};

fn catalog(plugins: &str) -> String {
    format!(r#"{{"standardVersion": "1.0.0", "name": "community", "plugins": [{plugins}]}}"#)
}

fn codes(source: &str) -> Vec<&'static str> {
    validate_marketplace(source)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn every_source_kind_is_accepted_with_its_own_fields() {
    let source = catalog(
        r#"{"name": "a", "version": "1.0.0", "source": {"kind": "local", "path": "plugins/a"}},
           {"name": "b", "version": "1.0.0", "source": {"kind": "github", "repo": "o/b", "ref": "abc", "path": "p"}},
           {"name": "c", "version": "1.0.0", "source": {"kind": "git", "url": "https://x/c.git"}},
           {"name": "d", "version": "2.0.0-rc.1", "source": {"kind": "npm", "package": "@o/d", "version": "2.0.0-rc.1"}},
           {"name": "e", "version": "1.0.0", "description": "E", "source": {"kind": "archive", "url": "https://x/e.tgz",
              "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}"#,
    );
    let report = validate_marketplace(&source);
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let m = report.marketplace.unwrap();
    assert_eq!(m.plugins.len(), 5);
    assert!(
        matches!(&m.plugins[1].source, MarketplaceSource::Github { repo, r#ref: Some(_), .. } if repo == "o/b")
    );
}

#[test]
fn the_standard_version_must_be_1_0_0() {
    assert_eq!(
        codes(r#"{"standardVersion": "1.2.0", "plugins": []}"#),
        vec!["standard-version-unsupported"]
    );
    assert_eq!(codes(r#"{"plugins": []}"#), vec!["missing-field"]);
}

#[test]
fn catalog_entry_and_source_objects_are_closed() {
    let source = r#"{"standardVersion": "1.0.0", "owner": "x", "plugins": [
        {"name": "a", "version": "1.0.0", "tags": [], "source": {"kind": "local", "path": "a", "repo": "o/a"}}]}"#;
    let found: Vec<_> = validate_marketplace(source)
        .diagnostics
        .iter()
        .map(|d| (d.code, d.pointer.clone()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("unknown-key", "/owner".to_owned()),
            ("unknown-key", "/plugins/0/tags".to_owned()),
            ("unknown-key", "/plugins/0/source/repo".to_owned()),
        ]
    );
}

#[test]
fn entries_need_a_valid_name_and_a_semver_version() {
    let source =
        catalog(r#"{"name": "Bad", "version": "1.0", "source": {"kind": "local", "path": "a"}}"#);
    assert_eq!(codes(&source), vec!["name-invalid", "version-not-semver"]);
    let missing = catalog(r#"{"source": {"kind": "local", "path": "a"}}"#);
    assert_eq!(codes(&missing), vec!["missing-field", "missing-field"]);
    let dup = catalog(
        r#"{"name": "a", "version": "1.0.0", "source": {"kind": "local", "path": "a"}},
           {"name": "a", "version": "1.0.1", "source": {"kind": "local", "path": "b"}}"#,
    );
    assert_eq!(codes(&dup), vec!["entry-duplicate"]);
}

#[test]
fn each_source_kind_requires_its_own_fields_and_checks_them() {
    let entry = |src: &str| {
        catalog(&format!(
            r#"{{"name": "a", "version": "1.0.0", "source": {src}}}"#
        ))
    };
    assert_eq!(
        codes(&entry(r#"{"kind": "ftp"}"#)),
        vec!["source-kind-unknown"]
    );
    assert_eq!(codes(&entry(r#"{"path": "a"}"#)), vec!["missing-field"]);
    assert_eq!(codes(&entry(r#"{"kind": "local"}"#)), vec!["missing-field"]);
    assert_eq!(
        codes(&entry(r#"{"kind": "local", "path": "../a"}"#)),
        vec!["source-path-invalid"]
    );
    assert_eq!(
        codes(&entry(r#"{"kind": "github", "repo": "nope"}"#)),
        vec!["source-repo-invalid"]
    );
    assert_eq!(codes(&entry(r#"{"kind": "git"}"#)), vec!["missing-field"]);
    assert_eq!(codes(&entry(r#"{"kind": "npm"}"#)), vec!["missing-field"]);
    assert_eq!(
        codes(&entry(
            r#"{"kind": "archive", "url": "http://x", "sha256": "zz"}"#
        )),
        vec!["source-url-invalid", "source-sha256-invalid"]
    );
}

#[test]
fn entries_may_carry_keywords_and_an_archive_beside_the_catalog() {
    let source = catalog(
        r#"{"name": "a", "version": "1.0.0", "keywords": ["Review", "lint"],
            "source": {"kind": "archive", "url": "dist/a.tgz"}}"#,
    );
    let report = validate_marketplace(&source);
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let entry = &report.marketplace.unwrap().plugins[0];
    assert_eq!(entry.keywords, vec!["Review", "lint"]);
    let entry = |src: &str| catalog(&format!(r#"{{"name": "a", "version": "1.0.0", {src}}}"#));
    assert_eq!(
        codes(&entry(
            r#""keywords": [1], "source": {"kind": "local", "path": "a"}"#
        )),
        vec!["wrong-type"]
    );
    for url in ["../a.tgz", "/abs/a.tgz", "file:///a.tgz", "http://x/a.tgz"] {
        let text = entry(&format!(
            r#""source": {{"kind": "archive", "url": "{url}"}}"#
        ));
        assert_eq!(codes(&text).len(), 1, "{url}: {:?}", codes(&text));
    }
}

#[test]
fn entry_names_follow_the_agent_plugins_name_rule_up_to_64_characters() {
    let entry = |name: &str| {
        catalog(&format!(
            r#"{{"name": "{name}", "version": "1.0.0", "source": {{"kind": "local", "path": "a"}}}}"#
        ))
    };
    assert!(codes(&entry(&"a".repeat(64))).is_empty());
    assert!(codes(&entry("acme.tools")).is_empty());
    let report = validate_marketplace(&entry(&"a".repeat(65)));
    assert!(!report.is_valid());
    assert_eq!(
        report
            .diagnostics
            .iter()
            .map(|d| (d.code, d.pointer.as_str()))
            .collect::<Vec<_>>(),
        vec![("name-too-long", "/plugins/0/name")]
    );
    for bad in ["", "Acme", "-a", "a--b", "a..b", "a_b"] {
        assert_eq!(codes(&entry(bad)), vec!["name-invalid"], "{bad:?}");
    }
}

#[test]
fn npm_sources_are_a_registry_name_at_an_exact_version_or_a_path_under_the_catalog() {
    let entry = |src: &str| {
        catalog(&format!(
            r#"{{"name": "a", "version": "1.0.0", "source": {{"kind": "npm", {src}}}}}"#
        ))
    };
    let npm = |src: &str| {
        let report = validate_marketplace(&entry(src));
        assert!(report.is_valid(), "{src}: {:#?}", report.diagnostics);
        match &report.marketplace.unwrap().plugins[0].source {
            MarketplaceSource::Npm { package, version } => (package.clone(), version.clone()),
            other => panic!("{other:?}"),
        }
    };
    // A registry package is fetched at an exact version: its own, else the entry's.
    assert_eq!(
        npm(r#""package": "pkg", "version": "2.1.0""#),
        ("pkg".to_owned(), Some("2.1.0".to_owned()))
    );
    assert_eq!(
        npm(r#""package": "@scope/my.pkg_x""#),
        ("@scope/my.pkg_x".to_owned(), Some("1.0.0".to_owned()))
    );
    assert_eq!(
        npm(r#""package": "pkg", "version": "1.0.0-rc.1+build.5""#).1,
        Some("1.0.0-rc.1+build.5".to_owned())
    );
    // A directory or tarball beside the catalog takes no version.
    assert_eq!(
        npm(r#""package": "./npm/pkg-1.0.0.tgz""#),
        ("./npm/pkg-1.0.0.tgz".to_owned(), None)
    );
    assert_eq!(npm(r#""package": "./pkg""#).1, None);
    let refused = |src: &str| {
        let report = validate_marketplace(&entry(src));
        assert!(!report.is_valid(), "{src} was accepted");
        report
            .diagnostics
            .iter()
            .map(|d| (d.code, d.pointer.clone()))
            .collect::<Vec<_>>()
    };
    let package = "/plugins/0/source/package".to_owned();
    let version = "/plugins/0/source/version".to_owned();
    for spec in [
        "file:/abs/dir",
        "file:../outside",
        "file:./pkg",
        "~/dir",
        "~",
        "git+https://example.com/x.git",
        "git://example.com/x.git",
        "git+ssh://git@example.com/x.git",
        "github:owner/repo",
        "owner/repo",
        "gitlab:owner/repo",
        "https://example.com/x.tgz",
        "http://example.com/x.tgz",
        "npm:other@1.0.0",
        "alias@npm:other",
        "pkg@1.0.0",
        "pkg@latest",
        "@scope/pkg@^1",
        "@scope",
        "@/pkg",
        "Pkg",
        "_pkg",
        "pkg name",
        "-pkg",
        "",
    ] {
        assert_eq!(
            refused(&format!(r#""package": "{spec}""#)),
            vec![("source-npm-package-invalid", package.clone())],
            "{spec}"
        );
    }
    for path in ["/abs/dir", "../outside", "./a/../../outside"] {
        assert_eq!(
            refused(&format!(r#""package": "{path}""#)),
            vec![("source-path-invalid", package.clone())],
            "{path}"
        );
    }
    for spec in [
        "file:/abs/dir",
        "file:../x.tgz",
        "^1.0.0",
        "~1.0.0",
        "1.x",
        "1",
        ">=1.0.0",
        "1.0.0 - 2.0.0",
        "latest",
        "next",
        "v1.0.0",
        "=1.0.0",
        " 1.0.0",
        "*",
        "",
        "npm:other@1.0.0",
        "git+https://example.com/x.git",
        "https://example.com/x.tgz",
    ] {
        assert_eq!(
            refused(&format!(r#""package": "pkg", "version": "{spec}""#)),
            vec![("source-npm-version-invalid", version.clone())],
            "{spec}"
        );
    }
    assert_eq!(
        refused(r#""package": "./pkg", "version": "1.0.0""#),
        vec![("source-npm-version-invalid", version.clone())]
    );
}
