//! A primary policy file that cannot be used: last-known-good takes over and keeps the
//! evidence, both unusable means safe mode, and `reset` is the way out.

use super::*;

#[test]
fn unknown_fields_make_the_primary_unusable() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    let with_extra = json!({"schemaVersion": 1, "revision": 9, "user": {"lint": {"state": "enabled", "colour": "red"}}});
    fs::write(fixture.store.primary_path(), with_extra.to_string()).unwrap();
    let store = fixture.reopen();
    assert_eq!(store.source(), LoadSource::LastKnownGood);
    let future = json!({"schemaVersion": 2, "revision": 9});
    fs::write(fixture.store.primary_path(), future.to_string()).unwrap();
    assert_eq!(fixture.reopen().source(), LoadSource::LastKnownGood);
}

#[test]
fn a_corrupt_primary_falls_back_to_last_known_good_and_keeps_the_evidence() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    let primary = fixture.store.primary_path();
    fs::write(&primary, b"{\"schemaVersion\": 1, \"revision\": 5, \"us").unwrap();

    let mut store = fixture.reopen();
    assert_eq!(store.source(), LoadSource::LastKnownGood);
    assert!(!store.is_safe_mode());
    assert!(
        store
            .desired(&fixture.catalog, "lint", &Scope::User)
            .unwrap()
            .enabled
    );
    assert!(matches!(
        store.diagnostics()[0],
        Diagnostic::PrimaryUnusable { .. }
    ));
    assert!(
        store
            .diagnostics()
            .contains(&Diagnostic::FellBackToLastKnownGood { revision: 1 })
    );
    assert_eq!(
        fs::read(&primary).unwrap(),
        b"{\"schemaVersion\": 1, \"revision\": 5, \"us",
        "reading never writes"
    );

    let plan = store
        .plan_change(
            change("ui", Scope::User, ChangeKind::Disable),
            &fixture.catalog,
            &fixture.revisions,
            fixture.now,
        )
        .unwrap();
    let pending = store
        .apply_change(plan.id, &fixture.revisions, fixture.now)
        .unwrap();
    let Some(Diagnostic::EvidenceKept { path }) = store.diagnostics().first().cloned() else {
        panic!(
            "expected the evidence to be kept: {:?}",
            store.diagnostics()
        )
    };
    assert_eq!(
        fs::read(&path).unwrap(),
        b"{\"schemaVersion\": 1, \"revision\": 5, \"us"
    );
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("policy.json.corrupt-")
    );
    assert_eq!(
        pending.revision, 2,
        "the unreadable revision cannot be recovered, the good one moves on"
    );
    assert_eq!(fixture.reopen().source(), LoadSource::Primary);
}

#[test]
fn an_unusable_primary_that_still_names_its_revision_is_never_reused() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    fs::write(
        fixture.store.primary_path(),
        json!({"schemaVersion": 1, "revision": 40, "bogus": 1}).to_string(),
    )
    .unwrap();
    let mut store = fixture.reopen();
    let plan = store
        .plan_change(
            change("ui", Scope::User, ChangeKind::Disable),
            &fixture.catalog,
            &fixture.revisions,
            fixture.now,
        )
        .unwrap();
    assert_eq!(
        store
            .apply_change(plan.id, &fixture.revisions, fixture.now)
            .unwrap()
            .revision,
        41
    );
}

#[test]
fn both_files_corrupt_enter_safe_mode_which_never_escapes_on_its_own() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    fs::write(fixture.store.primary_path(), b"not json").unwrap();
    fs::write(fixture.store.last_good_path(), b"neither").unwrap();

    let mut store = fixture.reopen();
    assert!(store.is_safe_mode());
    assert!(store.document().is_none());
    assert!(store.diagnostics().contains(&Diagnostic::EnteredSafeMode));
    let desired = |store: &PolicyStore, module: &str| {
        store
            .desired(&fixture.catalog, module, &Scope::User)
            .unwrap()
    };
    assert!(desired(&store, "plugins").enabled);
    assert!(
        desired(&store, "store").enabled,
        "required by an essential module"
    );
    assert!(
        !desired(&store, "ui").enabled,
        "enabled by default, but not essential"
    );
    assert!(!desired(&store, "lint").enabled);

    let refused = store.plan_change(
        change("ui", Scope::User, ChangeKind::Enable),
        &fixture.catalog,
        &fixture.revisions,
        fixture.now,
    );
    assert!(matches!(refused, Err(Error::SafeMode)));
    assert!(matches!(store.reset(Some("lint")), Err(Error::SafeMode)));
    assert!(store.reload().contains(&Diagnostic::EnteredSafeMode));
    assert_eq!(
        fs::read(store.last_good_path()).unwrap(),
        b"neither",
        "safe mode never writes last-known-good"
    );
    assert_eq!(fs::read(store.primary_path()).unwrap(), b"not json");
}

#[test]
fn reset_leaves_safe_mode_even_when_the_document_is_unchanged() {
    let fixture = Fixture::new();
    fs::write(fixture.store.primary_path(), b"{").unwrap();
    fs::write(fixture.store.last_good_path(), b"}").unwrap();
    let mut store = fixture.reopen();
    assert!(store.is_safe_mode());

    let revision = store.reset(None).unwrap();
    assert!(!store.is_safe_mode());
    let Some(Diagnostic::EvidenceKept { path }) = store.diagnostics().first().cloned() else {
        panic!(
            "expected the corrupt primary to be kept: {:?}",
            store.diagnostics()
        )
    };
    assert_eq!(fs::read(path).unwrap(), b"{");
    assert_eq!(store.document().unwrap().user.len(), 0);
    assert_eq!(fixture.reopen().source(), LoadSource::Primary);
    assert!(matches!(
        store.rollback(revision),
        Err(Error::NothingToRollBack(_))
    ));
    assert_eq!(fs::read(store.last_good_path()).unwrap(), b"}");

    let mut store = fixture.reopen();
    let again = store.reset(None).unwrap();
    assert_eq!(
        again,
        revision + 1,
        "an unchanged document is still written"
    );
    store.confirm(again).unwrap();
    assert_eq!(fixture.reopen().source(), LoadSource::Primary);
}
