//! The kill switch: matching, the allow lists, the user's list and the managed file.

use std::fs;

use crate::*;

const DIGEST: &str = "4f1c0a9e2b7d3c5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6";

fn subject(source: SourceRef) -> Subject {
    Subject {
        digest: DIGEST.to_owned(),
        id: "review-1a2b3c4d".to_owned(),
        name: "review".to_owned(),
        publisher: vec!["Ana Example".to_owned(), "ana@example.org".to_owned()],
        source,
    }
}

fn entry(kind: DenyKind, value: &str) -> DenyEntry {
    DenyEntry::new(kind, value, None).unwrap()
}

fn git(url: &str) -> SourceRef {
    SourceRef::Git(url.to_owned())
}

#[test]
fn each_kind_matches_what_it_names_and_nothing_else() {
    let s = subject(git("https://git.example/team/review"));
    for (kind, yes, no) in [
        (DenyKind::Digest, DIGEST, "ffffffffffffffff"),
        (DenyKind::Digest, &DIGEST[..12], &DIGEST[1..13]),
        (
            DenyKind::Digest,
            &DIGEST.to_uppercase(),
            "4f1c0a9e2b7d3c5e6f708192a3b4c5d7",
        ),
        (DenyKind::Id, "review-1a2b3c4d", "review"),
        (DenyKind::Name, "Review", "reviewer"),
        (DenyKind::Publisher, "ana example", "ana"),
        (DenyKind::Publisher, "ANA@example.org", "example.org"),
        (
            DenyKind::Source,
            "https://git.example/team",
            "https://git.example/tea",
        ),
        (
            DenyKind::Source,
            "HTTPS://Git.Example/team/",
            "https://git.example/Team",
        ),
        (
            DenyKind::Source,
            "https://git.example",
            "https://git.example.evil",
        ),
    ] {
        assert!(entry(kind, yes).matches(&s), "{kind} {yes} should match");
        assert!(!entry(kind, no).matches(&s), "{kind} {no} should not match");
    }
}

#[test]
fn a_source_entry_names_a_catalog_by_name_location_or_its_entry_source() {
    let s = subject(SourceRef::Catalog {
        location: "/srv/catalogs/corp/marketplace.json".to_owned(),
        name: Some("corp".to_owned()),
        inner: Some(Box::new(git("https://git.example/tools/review"))),
    });
    for yes in [
        "corp",
        "/srv/catalogs/corp",
        "/srv/catalogs/corp/marketplace.json",
        "https://git.example/tools",
    ] {
        assert!(entry(DenyKind::Source, yes).matches(&s), "{yes}");
    }
    for no in ["cor", "/srv/catalogs/co", "https://git.example/tool"] {
        assert!(!entry(DenyKind::Source, no).matches(&s), "{no}");
    }
    assert!(!entry(DenyKind::Source, "x").matches(&subject(SourceRef::Unknown)));
}

#[test]
fn entries_that_could_match_nothing_are_refused() {
    for (kind, value) in [
        (DenyKind::Digest, "4f1c0a9e2b7"),
        (DenyKind::Digest, "not-hex-at-all-here"),
        (DenyKind::Name, "  "),
        (DenyKind::Source, ""),
    ] {
        let error = DenyEntry::new(kind, value, None).unwrap_err();
        assert!(matches!(error, Error::InvalidDenyEntry { .. }), "{error}");
    }
    let trimmed = DenyEntry::new(DenyKind::Name, " evil ", Some(" ".to_owned())).unwrap();
    assert_eq!((trimmed.value.as_str(), trimmed.reason), ("evil", None));
}

#[test]
fn git_hosts_are_read_from_every_url_form() {
    for (url, host) in [
        ("https://GitHub.com/a/b", Some("github.com")),
        ("git+https://git.example:8443/a.git", Some("git.example")),
        ("ssh://git@git.example:22/a.git", Some("git.example")),
        ("git@git.example:team/a.git", Some("git.example")),
        ("https://user:pw@[::1]:3000/a", Some("::1")),
        ("file:///srv/repo", None),
        ("/srv/repo", None),
    ] {
        assert_eq!(git_host(url).as_deref(), host, "{url}");
    }
}

#[test]
fn allow_lists_admit_only_what_they_name_and_absent_lists_admit_everything() {
    let allow = AllowLists {
        catalogs: Some(vec![
            "corp".to_owned(),
            "https://catalogs.example/".to_owned(),
        ]),
        git_hosts: Some(vec!["git.corp.example".to_owned()]),
        npm_scopes: Some(vec!["@corp".to_owned()]),
    };
    let catalog =
        |location: &str, name: Option<&str>, inner: Option<SourceRef>| SourceRef::Catalog {
            location: location.to_owned(),
            name: name.map(str::to_owned),
            inner: inner.map(Box::new),
        };
    for admitted in [
        git("https://GIT.corp.example/a/b"),
        git("git@git.corp.example:a/b"),
        SourceRef::Npm("@corp/review".to_owned()),
        catalog("/x/marketplace.json", Some("corp"), None),
        catalog("https://catalogs.example/main.json", None, None),
        SourceRef::Local("/home/ana/bundle".to_owned()),
        SourceRef::Archive("ab12".to_owned()),
    ] {
        assert_eq!(allow.refusal(&admitted), None, "{admitted:?}");
    }
    for (refused, says) in [
        (git("https://github.com/a/b"), "git host `github.com`"),
        (git("https://git.corp.example.evil/a"), "git host"),
        (SourceRef::Npm("review".to_owned()), "npm package `review`"),
        (SourceRef::Npm("@corpx/review".to_owned()), "npm package"),
        (
            catalog("/y/marketplace.json", Some("other"), None),
            "catalog `other`",
        ),
        (
            catalog("/x/m.json", Some("corp"), Some(git("https://github.com/a"))),
            "git host `github.com`",
        ),
    ] {
        let why = allow.refusal(&refused).unwrap_or_default();
        assert!(why.contains(says), "{refused:?}: {why}");
        assert!(why.contains("not on the managed allow list"), "{why}");
    }
    assert_eq!(
        AllowLists::default().refusal(&git("https://any.example/a")),
        None
    );
    let empty = AllowLists {
        git_hosts: Some(Vec::new()),
        ..AllowLists::default()
    };
    assert!(empty.refusal(&git("https://any.example/a")).is_some());
}

#[test]
fn block_and_unblock_keep_a_durable_user_list_and_bump_the_generation() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = PolicyStore::open(dir.path(), PolicyOptions::default());
    let before = read_generation(dir.path());
    let evil = DenyEntry::new(DenyKind::Name, "review", Some("sleeper update".to_owned())).unwrap();
    assert!(store.block(evil.clone()).unwrap());
    assert!(!store.block(entry(DenyKind::Name, "review")).unwrap());
    assert!(read_generation(dir.path()) > before);
    let found = store
        .deny_lists()
        .denied(&subject(SourceRef::Unknown))
        .unwrap();
    assert_eq!(
        (found.entry.kind, found.origin),
        (DenyKind::Name, ListOrigin::User)
    );
    // Blocking again replaced the reason; another store reads the same file.
    let other = PolicyStore::open(dir.path(), PolicyOptions::default());
    assert_eq!(other.deny_lists().entries()[0].entry.reason, None);
    let error = other
        .deny_lists()
        .admit(&subject(SourceRef::Unknown))
        .unwrap_err();
    assert!(matches!(error, Error::Denied { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("name `review` on the user deny list"),
        "{error}"
    );
    assert!(error.hint().is_some());
    let removed = store.unblock(DenyKind::Name, "review").unwrap();
    assert_eq!(removed.value, "review");
    assert!(store.deny_lists().entries().is_empty());
    let again = store.unblock(DenyKind::Name, "review").unwrap_err();
    assert!(matches!(again, Error::NotDenied(_)), "{again}");
    let text = fs::read_to_string(dir.path().join(DENY_FILE)).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["schemaVersion"],
        1
    );
}

#[test]
fn a_managed_entry_survives_the_users_unblock_and_allow_lists_gate_installs() {
    let dir = tempfile::tempdir().unwrap();
    let managed = dir.path().join("managed").join("policy.json");
    fs::create_dir_all(managed.parent().unwrap()).unwrap();
    fs::write(
        &managed,
        serde_json::json!({
            "schemaVersion": 1,
            "deny": [{ "kind": "digest", "value": DIGEST, "reason": "malicious update" }],
            "allow": { "gitHosts": ["git.corp.example"] }
        })
        .to_string(),
    )
    .unwrap();
    let options = PolicyOptions {
        managed_policy: Some(managed.clone()),
        ..PolicyOptions::default()
    };
    let mut store = PolicyStore::open(dir.path().join("plugins"), options);
    let found = store
        .deny_lists()
        .denied(&subject(SourceRef::Unknown))
        .unwrap();
    assert_eq!(found.origin, ListOrigin::Managed);
    assert!(found.to_string().contains("(malicious update)"), "{found}");
    // The user may list the same entry, but cannot remove the managed one.
    store.block(entry(DenyKind::Digest, DIGEST)).unwrap();
    let refused = store.unblock(DenyKind::Digest, DIGEST).unwrap_err();
    assert!(matches!(refused, Error::ManagedEntry { .. }), "{refused}");
    assert!(
        refused.to_string().contains("managed deny list"),
        "{refused}"
    );
    assert_eq!(store.deny_lists().entries().len(), 2);
    // The allow list refuses a git source from another host.
    let mut other = subject(git("https://github.com/a/b"));
    other.digest = "00".repeat(32);
    let error = store.deny_lists().admit(&other).unwrap_err();
    assert!(matches!(error, Error::SourceNotAllowed { .. }), "{error}");
    assert!(error.to_string().contains("github.com"), "{error}");
    other.source = git("https://git.corp.example/a/b");
    store.deny_lists().admit(&other).unwrap();
}

#[test]
fn an_unusable_list_refuses_installs_and_edits_but_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(DENY_FILE), "{ not json").unwrap();
    let mut store = PolicyStore::open(dir.path(), PolicyOptions::default());
    assert_eq!(store.deny_lists().problems().len(), 1);
    let error = store
        .deny_lists()
        .admit(&subject(SourceRef::Unknown))
        .unwrap_err();
    assert!(matches!(error, Error::UnusableList { .. }), "{error}");
    let error = store.block(entry(DenyKind::Name, "x")).unwrap_err();
    assert!(matches!(error, Error::UnusableList { .. }), "{error}");
    assert_eq!(
        fs::read_to_string(dir.path().join(DENY_FILE)).unwrap(),
        "{ not json"
    );
    fs::write(
        dir.path().join(DENY_FILE),
        r#"{"schemaVersion":1,"deny":[{"kind":"name","value":"x","extra":1}]}"#,
    )
    .unwrap();
    store.reload();
    assert_eq!(
        store.deny_lists().problems().len(),
        1,
        "unknown fields are refused"
    );
}

#[test]
fn a_subject_is_read_from_an_installed_record_and_an_author() {
    let record = serde_json::json!({
        "id": "review-1a2b3c4d", "name": "review", "digest": DIGEST,
        "source": {"kind": "catalog", "catalog": "/srv/corp/marketplace.json", "entry": "review"},
        "origin": {"catalogName": "corp"},
    });
    let author = serde_json::json!({"name": "Ana Example", "email": "ana@example.org"});
    let read = Subject::from_record(&record, &author);
    assert_eq!(
        read,
        subject(SourceRef::Catalog {
            location: "/srv/corp/marketplace.json".to_owned(),
            name: Some("corp".to_owned()),
            inner: None,
        })
    );
    for (source, expected) in [
        (
            serde_json::json!({"kind": "local", "path": "/b"}),
            SourceRef::Local("/b".to_owned()),
        ),
        (
            serde_json::json!({"kind": "git", "url": "https://g/x", "subdir": ""}),
            git("https://g/x"),
        ),
        (
            serde_json::json!({"kind": "archive", "digest": "ab"}),
            SourceRef::Archive("ab".to_owned()),
        ),
        (serde_json::json!({"kind": "future"}), SourceRef::Unknown),
    ] {
        let read = Subject::from_record(
            &serde_json::json!({"source": source}),
            &serde_json::Value::Null,
        );
        assert_eq!(read.source, expected);
        assert!(read.publisher.is_empty());
    }
}

#[test]
fn lists_without_entries_are_empty_even_with_allow_lists() {
    let dir = tempfile::tempdir().unwrap();
    let managed = dir.path().join("managed.json");
    fs::write(&managed, r#"{"schemaVersion":1,"allow":{"catalogs":[]}}"#).unwrap();
    let lists = DenyLists::load(dir.path(), Some(&managed));
    assert!(lists.is_empty());
    assert_eq!(lists.allow().catalogs, Some(Vec::new()));
    let mut store = PolicyStore::open(dir.path(), PolicyOptions::default());
    store.block(entry(DenyKind::Publisher, "x")).unwrap();
    assert!(!store.deny_lists().is_empty());
}
