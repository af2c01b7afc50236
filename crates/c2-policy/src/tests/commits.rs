//! Commits and what a store reads again before one: another process's write makes a plan
//! stale; a store that wrote last reads again only after another write or a hand edit.

use super::*;

#[test]
fn a_plan_is_stale_when_another_process_wrote_the_policy() {
    let mut fixture = Fixture::new();
    let plan = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    let mut other = fixture.reopen();
    let theirs = other
        .plan_change(
            change("lint", Scope::User, ChangeKind::Enable),
            &fixture.catalog,
            &fixture.revisions,
            fixture.now,
        )
        .unwrap();
    other
        .apply_change(theirs.id, &fixture.revisions, fixture.now)
        .unwrap();
    let result = fixture.apply(plan.id);
    assert!(
        matches!(
            result,
            Err(Error::StalePlan {
                kind: RevisionKind::Config,
                ..
            })
        ),
        "{result:?}"
    );
    assert!(
        fixture.store.document().unwrap().user.contains_key("lint"),
        "the store sees the other write"
    );
}

#[test]
fn a_store_that_wrote_last_reads_again_only_after_another_write_or_a_hand_edit() {
    let mut fixture = Fixture::new();
    fixture.commit(change("ui", Scope::User, ChangeKind::Disable));
    // Nothing else wrote: the next commit goes on from what this store wrote.
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    // A store change of this process (an install) leaves its view current.
    let bumped = crate::bump_generation(fixture._dir.path()).unwrap();
    fixture.store.note_store_write(bumped);
    let revision = fixture.commit(change("lint", Scope::User, ChangeKind::Disable));
    assert_eq!(fixture.reopen().document().unwrap().revision, revision);

    // A hand edit written in place, no generation bump: the next commit still sees it.
    let plan = fixture
        .plan(change("ui", Scope::User, ChangeKind::Enable))
        .unwrap();
    let path = fixture._dir.path().join(crate::PRIMARY_FILE);
    let mut edited: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // Another length as well as other bytes: an edit within the file system's clock tick is
    // told apart by its size.
    edited["revision"] = serde_json::json!(revision + 1_000_000);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, &serde_json::to_vec(&edited).unwrap()).unwrap();
    drop(file);
    let result = fixture.apply(plan.id);
    assert!(
        matches!(
            result,
            Err(Error::StalePlan {
                kind: RevisionKind::Config,
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(
        fixture.store.document().unwrap().revision,
        revision + 1_000_000
    );
}
