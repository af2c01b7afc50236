mod commits;
mod deny;
mod plans;
mod recovery;
use std::fs;
use std::time::{Duration, Instant};

use crate::*;
use serde_json::json;

fn review_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "mode": { "type": "string" },
            "depth": { "type": "integer", "minimum": 1, "maximum": 5 }
        },
        "required": ["mode"],
        "additionalProperties": false
    })
}

fn catalog() -> Catalog {
    Catalog::new([
        CatalogModule {
            name: "plugins".into(),
            essential: true,
            default_enabled: true,
            ..CatalogModule::default()
        },
        CatalogModule {
            name: "store".into(),
            default_enabled: true,
            dependents: vec!["plugins".into()],
            ..CatalogModule::default()
        },
        CatalogModule {
            name: "review".into(),
            project_capable: true,
            config_schema: Some(review_schema()),
            dependents: vec!["lint".into()],
            active_resources: vec!["session s1".into()],
            digest: Some("d-review".into()),
            ..CatalogModule::default()
        },
        CatalogModule {
            name: "lint".into(),
            project_capable: true,
            digest: Some("d-lint".into()),
            active_resources: vec!["lease l1".into()],
            ..CatalogModule::default()
        },
        CatalogModule {
            name: "ui".into(),
            default_enabled: true,
            ..CatalogModule::default()
        },
    ])
}

fn change(module: &str, scope: Scope, kind: ChangeKind) -> Change {
    Change {
        module: module.into(),
        scope,
        kind,
    }
}

fn project(key: &str) -> Scope {
    Scope::Project(key.into())
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: PolicyStore,
    catalog: Catalog,
    revisions: Revisions,
    now: Instant,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = PolicyStore::open(dir.path(), PolicyOptions::default());
        Self {
            _dir: dir,
            store,
            catalog: catalog(),
            revisions: Revisions::default(),
            now: Instant::now(),
        }
    }

    fn plan(&mut self, change: Change) -> Result<Plan, Error> {
        self.store
            .plan_change(change, &self.catalog, &self.revisions, self.now)
    }

    /// Applies plan `id` at the fixture's revisions and time.
    fn apply(&mut self, id: PlanId) -> Result<PendingCommit, Error> {
        self.store.apply_change(id, &self.revisions, self.now)
    }

    /// Plans, applies and confirms; returns the new revision.
    fn commit(&mut self, change: Change) -> u64 {
        let plan = self.plan(change).unwrap();
        let pending = self.apply(plan.id).unwrap();
        self.store.confirm(pending.revision).unwrap();
        pending.revision
    }

    fn desired(&self, module: &str, scope: &Scope) -> DesiredState {
        self.store.desired(&self.catalog, module, scope).unwrap()
    }

    fn reopen(&self) -> PolicyStore {
        PolicyStore::open(self._dir.path(), PolicyOptions::default())
    }
}

#[test]
fn missing_files_mean_an_empty_policy_not_safe_mode() {
    let fixture = Fixture::new();
    assert_eq!(fixture.store.source(), LoadSource::Default);
    assert!(!fixture.store.is_safe_mode());
    assert_eq!(fixture.store.document(), Some(&PolicyDocument::default()));
    assert!(fixture.desired("ui", &Scope::User).enabled);
    assert!(!fixture.desired("review", &Scope::User).enabled);
}

#[test]
fn a_committed_document_round_trips_through_the_file() {
    let mut fixture = Fixture::new();
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::Trust("d-review".into()),
    ));
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::Configure(json!({"mode": "fast", "depth": 2})),
    ));
    fixture.commit(change("lint", project("/p"), ChangeKind::Disable));
    fixture.commit(change(
        "review",
        project("/p"),
        ChangeKind::SetComponent {
            component: "review:skill:a".into(),
            state: Some(ComponentSwitch::Disabled),
        },
    ));
    let reopened = fixture.reopen();
    assert_eq!(reopened.source(), LoadSource::Primary);
    assert_eq!(reopened.document(), fixture.store.document());
    assert_eq!(reopened.revision(), 5);
    let text = fs::read_to_string(reopened.primary_path()).unwrap();
    let parsed: PolicyDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(Some(&parsed), fixture.store.document());
    assert_eq!(
        fs::read(reopened.last_good_path()).unwrap(),
        text.as_bytes()
    );
}

#[cfg(unix)]
#[test]
fn policy_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let mut fixture = Fixture::new();
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    for path in [
        fixture.store.primary_path(),
        fixture.store.last_good_path(),
        fixture._dir.path().join(LOCK_FILE),
    ] {
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
}

#[test]
fn user_and_project_policy_resolve_through_one_store() {
    let mut fixture = Fixture::new();
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::Trust("d-review".into()),
    ));
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::Configure(json!({"mode": "user"})),
    ));
    fixture.commit(change("review", project("/a"), ChangeKind::Enable));
    fixture.commit(change(
        "review",
        project("/b"),
        ChangeKind::Configure(json!({"mode": "b"})),
    ));

    assert!(!fixture.desired("review", &Scope::User).enabled);
    let a = fixture.desired("review", &project("/a"));
    assert!(a.is_runnable());
    assert_eq!(a.config, Some(json!({"mode": "user"})));
    let b = fixture.desired("review", &project("/b"));
    assert!(!b.enabled, "project /b inherits the disabled user default");
    assert_eq!(b.config, Some(json!({"mode": "b"})));
}

#[test]
fn a_project_inherits_enables_and_disables_independently() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    assert!(fixture.desired("lint", &project("/p")).enabled);
    fixture.commit(change("lint", project("/p"), ChangeKind::Disable));
    assert!(!fixture.desired("lint", &project("/p")).enabled);
    assert!(fixture.desired("lint", &project("/q")).enabled);
    assert!(fixture.desired("lint", &Scope::User).enabled);
    fixture.commit(change("lint", Scope::User, ChangeKind::Disable));
    fixture.commit(change("lint", project("/p"), ChangeKind::Enable));
    assert!(fixture.desired("lint", &project("/p")).enabled);
    fixture.commit(change("lint", project("/p"), ChangeKind::Inherit));
    assert!(!fixture.desired("lint", &project("/p")).enabled);
    assert!(
        fixture.store.document().unwrap().projects.is_empty(),
        "an inheriting entry is not stored"
    );
}

#[test]
fn component_overrides_are_independent_of_the_plugin_switch() {
    let mut fixture = Fixture::new();
    let skill = "review:skill:a".to_owned();
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::SetComponent {
            component: skill.clone(),
            state: Some(ComponentSwitch::Disabled),
        },
    ));
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    fixture.commit(change("review", Scope::User, ChangeKind::Disable));
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    let user = fixture.desired("review", &Scope::User);
    assert!(user.enabled);
    assert_eq!(
        user.components.get(&skill),
        Some(&ComponentSwitch::Disabled)
    );

    fixture.commit(change(
        "review",
        project("/p"),
        ChangeKind::SetComponent {
            component: skill.clone(),
            state: Some(ComponentSwitch::Enabled),
        },
    ));
    assert_eq!(
        fixture
            .desired("review", &project("/p"))
            .components
            .get(&skill),
        Some(&ComponentSwitch::Enabled)
    );
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::SetComponent {
            component: skill.clone(),
            state: None,
        },
    ));
    assert!(
        fixture
            .desired("review", &Scope::User)
            .components
            .is_empty()
    );
}

#[test]
fn trust_is_bound_to_the_installed_digest() {
    let mut fixture = Fixture::new();
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    assert!(!fixture.desired("review", &Scope::User).trusted);
    let wrong = fixture.plan(change(
        "review",
        Scope::User,
        ChangeKind::Trust("d-other".into()),
    ));
    assert!(
        matches!(wrong, Err(Error::DigestMismatch { .. })),
        "{wrong:?}"
    );
    let plan = fixture
        .plan(change(
            "review",
            Scope::User,
            ChangeKind::Trust("d-review".into()),
        ))
        .unwrap();
    assert_eq!(plan.impact.starts, vec!["review".to_owned()]);
    fixture.apply(plan.id).unwrap();
    assert!(fixture.desired("review", &Scope::User).trusted);
    let entry = fixture
        .store
        .document()
        .unwrap()
        .entry("review", &Scope::User)
        .unwrap();
    assert!(entry.is_trusted("d-review"));
    assert!(!entry.is_trusted("d-changed"));

    fixture.catalog = Catalog::new(catalog().modules().cloned().map(|mut module| {
        if module.name == "review" {
            module.digest = Some("d-changed".into());
        }
        module
    }));
    assert!(
        !fixture.desired("review", &Scope::User).trusted,
        "new content is not trusted"
    );
    assert!(matches!(
        fixture.plan(change("review", project("/p"), ChangeKind::Untrust)),
        Err(Error::TrustIsUserWide)
    ));
    assert!(matches!(
        fixture.plan(change("ui", Scope::User, ChangeKind::Trust("x".into()))),
        Err(Error::NotTrustable(_))
    ));
}

#[test]
fn trust_and_enable_is_one_revision_with_the_rules_of_both() {
    let mut fixture = Fixture::new();
    let before = fixture.store.revision();
    for (scope, kind) in [
        (Scope::User, ChangeKind::TrustAndEnable("d-other".into())),
        (project("/p"), ChangeKind::TrustAndEnable("d-review".into())),
    ] {
        let refused = fixture.plan(change("review", scope, kind));
        assert!(
            matches!(
                refused,
                Err(Error::DigestMismatch { .. } | Error::TrustIsUserWide)
            ),
            "{refused:?}"
        );
    }
    let revision = fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::TrustAndEnable("d-review".into()),
    ));
    assert_eq!(revision, before + 1, "one revision");
    let desired = fixture.desired("review", &Scope::User);
    assert!(desired.trusted && desired.enabled, "{desired:?}");
}

#[test]
fn scope_support_is_checked() {
    let mut fixture = Fixture::new();
    assert!(matches!(
        fixture.plan(change("ui", project("/p"), ChangeKind::Disable)),
        Err(Error::ProjectScopeNotSupported(module)) if module == "ui"
    ));
    assert!(matches!(
        fixture.plan(change("review", Scope::User, ChangeKind::Inherit)),
        Err(Error::InheritIsProjectOnly)
    ));
    assert!(matches!(
        fixture.plan(change("ghost", Scope::User, ChangeKind::Enable)),
        Err(Error::UnknownModule(_))
    ));
}

#[test]
fn essential_modules_and_what_they_require_cannot_be_disabled() {
    let mut fixture = Fixture::new();
    let direct = fixture.plan(change("plugins", Scope::User, ChangeKind::Disable));
    assert!(
        matches!(&direct, Err(Error::EssentialProtected { essential }) if essential == "plugins"),
        "{direct:?}"
    );
    let required = fixture.plan(change("store", Scope::User, ChangeKind::Disable));
    assert!(
        matches!(&required, Err(Error::EssentialProtected { essential }) if essential == "plugins"),
        "{required:?}"
    );
    assert!(
        fixture
            .plan(change("ui", Scope::User, ChangeKind::Disable))
            .is_ok()
    );
}

#[test]
fn an_essential_module_stays_enabled_even_if_the_file_says_otherwise() {
    let fixture = Fixture::new();
    let document =
        json!({"schemaVersion": 1, "revision": 3, "user": {"plugins": {"state": "disabled"}}});
    fs::write(fixture.store.primary_path(), document.to_string()).unwrap();
    let store = fixture.reopen();
    assert!(
        store
            .desired(&fixture.catalog, "plugins", &Scope::User)
            .unwrap()
            .enabled
    );
}

#[test]
fn the_impact_names_stops_dependents_and_live_resources() {
    let mut fixture = Fixture::new();
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::Trust("d-review".into()),
    ));
    let stop = fixture
        .plan(change("review", Scope::User, ChangeKind::Disable))
        .unwrap();
    assert_eq!(
        stop.impact,
        Impact {
            starts: vec![],
            stops: vec!["review".into()],
            reloads: vec![],
            dependents: vec!["lint".into()],
            resources: vec!["review: session s1".into(), "lint: lease l1".into()],
        }
    );
    let reload = fixture
        .plan(change(
            "review",
            Scope::User,
            ChangeKind::Configure(json!({"mode": "m"})),
        ))
        .unwrap();
    assert_eq!(reload.impact.reloads, vec!["review".to_owned()]);
    assert_eq!(reload.impact.dependents, vec!["lint".to_owned()]);
    let nothing = fixture
        .plan(change("review", Scope::User, ChangeKind::Enable))
        .unwrap();
    assert!(nothing.impact.is_empty());
}

#[test]
fn configuration_is_validated_against_the_schema_listing_every_issue() {
    let mut fixture = Fixture::new();
    assert!(
        fixture
            .plan(change(
                "review",
                Scope::User,
                ChangeKind::Configure(json!({"mode": "x", "depth": 5}))
            ))
            .is_ok()
    );
    let result = fixture.plan(change(
        "review",
        Scope::User,
        ChangeKind::Configure(json!({"depth": 9, "extra": true})),
    ));
    let Err(Error::InvalidConfig { module, issues }) = result else {
        panic!("expected invalid config, got {result:?}")
    };
    assert_eq!(module, "review");
    let paths: Vec<&str> = issues
        .iter()
        .map(|issue| issue.instance_path.as_str())
        .collect();
    assert_eq!(issues.len(), 3, "{issues:?}");
    assert!(paths.contains(&"/depth"), "{paths:?}");
    assert_eq!(
        paths.iter().filter(|path| path.is_empty()).count(),
        2,
        "required and additionalProperties at the root"
    );
    let below = fixture.plan(change(
        "review",
        Scope::User,
        ChangeKind::Configure(json!({"mode": "x", "depth": 0})),
    ));
    assert!(
        matches!(&below, Err(Error::InvalidConfig { issues, .. }) if issues.len() == 1 && issues[0].instance_path == "/depth")
    );
    assert!(matches!(
        fixture.plan(change("ui", Scope::User, ChangeKind::Configure(json!({})))),
        Err(Error::NotConfigurable(_))
    ));
    assert_eq!(fixture.store.revision(), 0, "nothing was written");
}

#[test]
fn reset_of_one_plugin_clears_it_in_every_scope() {
    let mut fixture = Fixture::new();
    fixture.commit(change("lint", Scope::User, ChangeKind::Enable));
    fixture.commit(change("lint", project("/p"), ChangeKind::Disable));
    fixture.commit(change("review", Scope::User, ChangeKind::Enable));
    let revision = fixture.store.reset(Some("lint")).unwrap();
    let document = fixture.store.document().unwrap();
    assert_eq!(document.revision, revision);
    assert!(!document.user.contains_key("lint"));
    assert!(document.projects.is_empty());
    assert!(document.user.contains_key("review"));
    fixture.store.rollback(revision).unwrap();
    assert!(fixture.store.document().unwrap().user.contains_key("lint"));
}

mod properties {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use crate::*;

    fn switch() -> impl Strategy<Value = Switch> {
        prop_oneof![
            Just(Switch::Inherit),
            Just(Switch::Enabled),
            Just(Switch::Disabled)
        ]
    }

    fn entry() -> impl Strategy<Value = PluginPolicy> {
        (
            switch(),
            proptest::option::of("[a-f0-9]{4}"),
            proptest::option::of(any::<i64>()),
            proptest::collection::btree_map("[a-z:]{1,6}", any::<bool>(), 0..3),
        )
            .prop_map(|(state, trusted_digest, config, components)| PluginPolicy {
                state,
                trusted_digest,
                config: config.map(|n| serde_json::json!({ "n": n })),
                components: components
                    .into_iter()
                    .map(|(id, on)| {
                        (
                            id,
                            if on {
                                ComponentSwitch::Enabled
                            } else {
                                ComponentSwitch::Disabled
                            },
                        )
                    })
                    .collect(),
            })
    }

    fn document() -> impl Strategy<Value = PolicyDocument> {
        let entries = || proptest::collection::btree_map("[a-z]{1,5}", entry(), 0..4);
        (
            any::<u64>(),
            entries(),
            proptest::collection::btree_map("/[a-z]{1,5}", entries(), 0..3),
        )
            .prop_map(|(revision, user, projects)| PolicyDocument {
                schema_version: SCHEMA_VERSION,
                revision,
                user,
                projects: projects.into_iter().collect::<BTreeMap<_, _>>(),
            })
    }

    proptest! {
        #[test]
        fn any_document_survives_the_file_format_unchanged(document in document()) {
            let bytes = serde_json::to_vec_pretty(&document).unwrap();
            prop_assert_eq!(PolicyDocument::from_slice(&bytes), Ok(document));
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_reader(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = PolicyDocument::from_slice(&bytes);
        }
    }
}

#[test]
fn every_policy_write_and_every_bump_moves_the_store_generation() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read_generation(dir.path()), 0);
    let mut store = PolicyStore::open(dir.path(), PolicyOptions::default());
    let revision = store.reset(None).unwrap();
    store.confirm(revision).unwrap();
    assert_eq!(read_generation(dir.path()), 1, "confirm is no change");
    assert_eq!(bump_generation(dir.path()).unwrap(), 2);
    assert_eq!(read_generation(dir.path()), 2);
    store.reset(Some("review")).unwrap();
    assert_eq!(read_generation(dir.path()), 3);
}

fn watched(
    dir: &std::path::Path,
    notifications: bool,
) -> (StoreWatch, std::sync::mpsc::Receiver<()>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let options = WatchOptions {
        notifications,
        poll_interval: Duration::from_millis(50),
    };
    let watch = StoreWatch::start(dir, &options, move || {
        let _ = tx.send(());
    })
    .unwrap();
    (watch, rx)
}

#[test]
fn the_watcher_wakes_for_commits_and_not_for_locks_or_reads() {
    for notifications in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        // The lock files exist once a store has been used; creating them is a directory change.
        drop(fsio::lock(dir.path()).unwrap());
        fs::write(dir.path().join(".lock"), b"").unwrap();
        let (watch, woken) = watched(dir.path(), notifications);
        let expected = if notifications {
            WatchMode::Notifications
        } else {
            WatchMode::Polling
        };
        assert_eq!(watch.mode(), expected);
        // Reads and lock churn (every reader opens a lock file for writing) are not changes.
        let store = PolicyStore::open(dir.path(), PolicyOptions::default());
        for _ in 0..3 {
            drop(fsio::lock(dir.path()).unwrap());
            fs::write(dir.path().join(".lock"), b"").unwrap();
            read_generation(dir.path());
        }
        assert!(
            woken.recv_timeout(Duration::from_millis(300)).is_err(),
            "woken without a change ({expected:?})"
        );
        drop(store);
        // A policy commit in another store object (another process, as far as files go).
        let mut other = PolicyStore::open(dir.path(), PolicyOptions::default());
        other.reset(None).unwrap();
        woken
            .recv_timeout(Duration::from_secs(1))
            .expect("woken by a policy write");
        while woken.try_recv().is_ok() {}
        // A bundle directory arriving is a change too.
        fs::create_dir(dir.path().join("some-bundle")).unwrap();
        woken
            .recv_timeout(Duration::from_secs(1))
            .expect("woken by a bundle directory");
        drop(watch);
    }
}

#[test]
fn dropping_the_watcher_stops_its_thread_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let (watch, woken) = watched(dir.path(), true);
    let started = Instant::now();
    drop(watch);
    assert!(started.elapsed() < Duration::from_secs(1));
    // The callback (and its sender) went with the thread.
    assert!(matches!(
        woken.recv_timeout(Duration::from_millis(100)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
    ));
}

#[test]
fn forgetting_components_drops_them_in_every_scope_and_keeps_the_rest() {
    let mut fixture = Fixture::new();
    let (gone, kept) = (
        "review:skill:gone".to_owned(),
        "review:skill:kept".to_owned(),
    );
    for (scope, component) in [
        (Scope::User, &gone),
        (Scope::User, &kept),
        (project("/p"), &gone),
    ] {
        fixture.commit(change(
            "review",
            scope,
            ChangeKind::SetComponent {
                component: component.clone(),
                state: Some(ComponentSwitch::Disabled),
            },
        ));
    }
    assert!(matches!(
        fixture.plan(change(
            "review",
            project("/p"),
            ChangeKind::ForgetComponents(vec![gone.clone()])
        )),
        Err(Error::ForgetIsEveryScope)
    ));
    fixture.commit(change(
        "review",
        Scope::User,
        ChangeKind::ForgetComponents(vec![gone.clone()]),
    ));
    let user = fixture.desired("review", &Scope::User);
    assert_eq!(
        user.components.keys().collect::<Vec<_>>(),
        vec![&kept],
        "only the forgotten id left the user entry"
    );
    let document = fixture.store.document().unwrap();
    assert!(
        document.entry("review", &project("/p")).is_none(),
        "the project entry said only that and was pruned"
    );
}
