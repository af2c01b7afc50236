//! Plans: single use, bound to the revisions they were made at, expiring and bounded in number;
//! only `confirm` makes a commit last-known-good.

use super::*;

#[test]
fn a_plan_is_single_use() {
    let mut fixture = Fixture::new();
    let plan = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    let pending = fixture.apply(plan.id).unwrap();
    fixture.store.confirm(pending.revision).unwrap();
    let again = fixture.apply(plan.id);
    assert!(matches!(again, Err(Error::UnknownPlan(id)) if id == plan.id));
}

#[test]
fn a_plan_is_stale_when_the_config_revision_moved() {
    let mut fixture = Fixture::new();
    let first = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    let result = fixture.apply(first.id);
    assert!(
        matches!(
            result,
            Err(Error::StalePlan {
                kind: RevisionKind::Config,
                planned: 0,
                current: 1
            })
        ),
        "{result:?}"
    );
    assert!(
        result
            .unwrap_err()
            .to_string()
            .starts_with("stale plan: the config revision moved")
    );
}

#[test]
fn a_plan_is_stale_when_the_graph_revision_moved() {
    let mut fixture = Fixture::new();
    fixture.revisions.graph = 7;
    let plan = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    assert_eq!(plan.revisions.graph, 7);
    fixture.revisions.graph = 8;
    let result = fixture.apply(plan.id);
    assert!(
        matches!(
            result,
            Err(Error::StalePlan {
                kind: RevisionKind::Graph,
                planned: 7,
                current: 8
            })
        ),
        "{result:?}"
    );
    assert_eq!(fixture.store.revision(), 0);
}

#[test]
fn a_plan_is_stale_when_its_project_revision_moved_but_not_another_projects() {
    let mut fixture = Fixture::new();
    fixture.revisions.projects.insert("/p".into(), 2);
    let plan = fixture
        .plan(change("lint", project("/p"), ChangeKind::Enable))
        .unwrap();
    assert_eq!(plan.revisions.project, Some(2));
    let other = fixture
        .plan(change("lint", project("/q"), ChangeKind::Enable))
        .unwrap();
    fixture.revisions.projects.insert("/p".into(), 3);
    let result = fixture.apply(plan.id);
    assert!(
        matches!(
            result,
            Err(Error::StalePlan {
                kind: RevisionKind::Project,
                planned: 2,
                current: 3
            })
        ),
        "{result:?}"
    );
    assert!(fixture.apply(other.id).is_ok());
}

#[test]
fn a_plan_expires() {
    let mut fixture = Fixture::new();
    let plan = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    assert_eq!(plan.expires_at, fixture.now + Duration::from_secs(600));
    let late = fixture.now + Duration::from_secs(600);
    let result = fixture
        .store
        .apply_change(plan.id, &fixture.revisions, late);
    assert!(
        matches!(result, Err(Error::PlanExpired(id)) if id == plan.id),
        "{result:?}"
    );
    assert_eq!(fixture.store.revision(), 0);
}

#[test]
fn outstanding_plans_are_bounded_and_expired_ones_make_room() {
    let mut fixture = Fixture::new();
    for _ in 0..64 {
        fixture
            .plan(change("ui", Scope::User, ChangeKind::Disable))
            .unwrap();
    }
    let refused = fixture.plan(change("ui", Scope::User, ChangeKind::Disable));
    assert!(
        matches!(refused, Err(Error::TooManyPlans { limit: 64 })),
        "{refused:?}"
    );
    fixture.now += Duration::from_secs(601);
    assert!(
        fixture
            .plan(change("ui", Scope::User, ChangeKind::Disable))
            .is_ok()
    );
}

#[test]
fn a_change_awaiting_confirmation_blocks_the_next_apply() {
    let mut fixture = Fixture::new();
    let first = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    let pending = fixture.apply(first.id).unwrap();
    let second = fixture
        .plan(change("lint", Scope::User, ChangeKind::Enable))
        .unwrap();
    let blocked = fixture.apply(second.id);
    assert!(matches!(blocked, Err(Error::CommitPending(revision)) if revision == pending.revision));
    assert!(
        fixture.store.plan(second.id).is_some(),
        "the blocked plan is kept"
    );
}

#[test]
fn only_confirm_makes_last_known_good_and_rollback_leaves_it_untouched() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    let good = fs::read(fixture.store.last_good_path()).unwrap();

    let plan = fixture
        .plan(change("ui", Scope::User, ChangeKind::Disable))
        .unwrap();
    let pending = fixture.apply(plan.id).unwrap();
    assert_eq!(pending.revision, 2);
    assert_eq!(
        fs::read(fixture.store.last_good_path()).unwrap(),
        good,
        "not yet confirmed"
    );
    assert!(!fixture.desired("ui", &Scope::User).enabled);

    let restored = fixture.store.rollback(pending.revision).unwrap();
    assert_eq!(restored, 3, "a rollback writes a new revision");
    assert!(fixture.desired("ui", &Scope::User).enabled);
    assert_eq!(fs::read(fixture.store.last_good_path()).unwrap(), good);
    let reopened = fixture.reopen();
    assert_eq!(reopened.revision(), 3);
    assert!(
        reopened
            .desired(&fixture.catalog, "ui", &Scope::User)
            .unwrap()
            .enabled
    );
    assert!(reopened.document().unwrap().user.contains_key("lint"));
    assert!(matches!(
        fixture.store.confirm(pending.revision),
        Err(Error::NoPendingCommit(2))
    ));
}
