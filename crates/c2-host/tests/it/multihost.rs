//! Two `PluginHost`s on one plugins directory (as the desktop and a TUI would be): each sees
//! the other's committed changes within a second, `refresh` forces a look, and the typed
//! `StoreChanged` event says what changed. The cross-process versions of these tests, with
//! the real `c2-plugins` binary, are in c2-cli's tests.

use std::time::{Duration, Instant};

use c2_host::{
    HostOptions, InstallOptions, PluginHost, StateChange, StoreChanged, Target, WatchMode,
};
use serde_json::json;

use crate::support::{Env, FixtureBundle, alive, options, pid_of};

const PROPAGATION: Duration = Duration::from_secs(1);

async fn second_host(env: &Env, tweak: impl FnOnce(&mut HostOptions)) -> PluginHost {
    let mut options = options(env.root.path());
    tweak(&mut options);
    PluginHost::open(options).await.unwrap()
}

async fn within(what: &str, mut ok: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() <= PROPAGATION, "{what}: not within 1 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    start.elapsed()
}

fn has(host: &PluginHost, command: &str) -> bool {
    host.commands(&Target::User)
        .unwrap()
        .iter()
        .any(|c| c.name == command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_sees_an_install_at_once_and_can_trust_it() {
    let env = Env::new().await;
    let other = second_host(&env, |_| {}).await;
    // Notifications normally; polling if this user ran out of inotify instances.
    assert!(other.watch_mode().is_some());
    let dir = FixtureBundle::new("shared").write(&env.path("bundles"));
    let id = env
        .host
        .install(dir.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap()
        .record
        .id;
    // No wait: an entry point that names an id looks at the store first.
    other.trust(&id).await.unwrap();
    other
        .set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    within("the installing host sees trust and enablement", || {
        has(&env.host, "fixture.echo")
    })
    .await;
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let pid = pid_of(&info);
    other.uninstall(&id).await.unwrap();
    // The other host stopped its runtime before the files went.
    assert!(!alive(pid));
    assert!(env.host.list().is_empty());
    assert!(!has(&env.host, "fixture.echo"));
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_event_says_what_changed_wherever_it_was_made() {
    let env = Env::new().await;
    let other = second_host(&env, |_| {}).await;
    let scope = other
        .kernel()
        .open_scope(&c2_kernel::Realm::Global, "test-frontend")
        .unwrap();
    let mut events = scope.subscribe_typed::<StoreChanged>().unwrap();
    let mut next = async || {
        tokio::time::timeout(PROPAGATION, events.recv())
            .await
            .expect("a StoreChanged within 1 s")
            .unwrap()
    };
    let dir = FixtureBundle::new("evented").write(&env.path("bundles"));
    let id = env
        .host
        .install(dir.to_str().unwrap(), InstallOptions::default())
        .await
        .unwrap()
        .record
        .id;
    let installed = next().await;
    assert_eq!(installed.installed, vec![id.clone()]);
    env.host.trust(&id).await.unwrap();
    let trusted = next().await;
    assert_eq!(trusted.policy, vec![id.clone()]);
    assert!(trusted.policy_revision > installed.policy_revision);
    // A change made through the host itself is published the same way.
    other
        .set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    assert_eq!(next().await.policy, vec![id.clone()]);
    env.host.uninstall(&id).await.unwrap();
    let removed = next().await;
    assert_eq!(removed.removed, vec![id]);
    assert!(removed.generation > installed.generation);
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_forces_a_look_when_nothing_woke_the_host() {
    let env = Env::new().await;
    let id = env
        .install_ready(&FixtureBundle::new("forced").write(&env.path("bundles")))
        .await;
    // Polling so rarely that only `refresh` can see the change in this test.
    let other = second_host(&env, |o| {
        o.store_watch.notifications = false;
        o.store_watch.poll_interval = Duration::from_secs(3600);
    })
    .await;
    assert_eq!(other.watch_mode(), Some(WatchMode::Polling));
    let pid = pid_of(
        &other
            .invoke(&Target::User, "fixture.info", json!({}))
            .await
            .unwrap(),
    );
    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(alive(pid), "nothing should have woken the polling host yet");
    let changed = other.refresh().await.unwrap().expect("a change");
    assert_eq!(changed.policy, vec![id.clone()]);
    assert!(!alive(pid), "refresh returns once the runtime is stopped");
    assert!(!has(&other, "fixture.echo"));
    assert_eq!(other.refresh().await.unwrap(), None, "nothing new");
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_notifications_the_poll_sees_a_change_within_a_second() {
    let env = Env::new().await;
    let id = env
        .install_ready(&FixtureBundle::new("polled").write(&env.path("bundles")))
        .await;
    let other = second_host(&env, |o| o.store_watch.notifications = false).await;
    assert_eq!(other.watch_mode(), Some(WatchMode::Polling));
    for _ in 0..3 {
        let pid = pid_of(
            &other
                .invoke(&Target::User, "fixture.info", json!({}))
                .await
                .unwrap(),
        );
        env.host.untrust(&id).await.unwrap();
        within("the polling host stops the runtime", || !alive(pid)).await;
        env.host.trust(&id).await.unwrap();
        within("the polling host registers the commands", || {
            has(&other, "fixture.echo")
        })
        .await;
    }
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_changes_from_two_hosts_end_in_one_state_both_agree_on() {
    let env = Env::new().await;
    let id = env
        .install_ready(&FixtureBundle::new("raced").write(&env.path("bundles")))
        .await;
    let other = second_host(&env, |_| {}).await;
    for round in 0..10 {
        let (a, b) = tokio::join!(
            env.host.set_state(&id, &Target::User, StateChange::Disable),
            other.set_state(&id, &Target::User, StateChange::Enable),
        );
        // Both commit (the loser plans again on what the winner wrote).
        a.unwrap();
        b.unwrap();
        let view = |host: &PluginHost| {
            host.list()
                .into_iter()
                .map(|s| (s.id, s.trusted, s.enabled))
                .collect::<Vec<_>>()
        };
        within(&format!("round {round}: both hosts agree"), || {
            view(&env.host) == view(&other)
                && has(&env.host, "fixture.echo") == view(&env.host)[0].2
                && has(&other, "fixture.echo") == view(&other)[0].2
        })
        .await;
    }
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uninstall_waits_at_most_retire_wait_and_never_deletes_a_loaded_tree() {
    let env = Env::with(|o| o.retire_wait = Duration::from_millis(200)).await;
    let id = env
        .install_ready(&FixtureBundle::new("held").write(&env.path("bundles")))
        .await;
    // A host that is never woken keeps the bundle loaded, and so keeps its lease.
    let deaf = second_host(&env, |o| {
        o.store_watch.notifications = false;
        o.store_watch.poll_interval = Duration::from_secs(3600);
    })
    .await;
    let pid = pid_of(
        &deaf
            .invoke(&Target::User, "fixture.info", json!({}))
            .await
            .unwrap(),
    );
    let started = Instant::now();
    env.host.uninstall(&id).await.unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(env.host.list().is_empty(), "gone from the store at once");
    // The files are kept in the trash while the deaf host still runs from them.
    assert!(alive(pid));
    let trash = env.path("plugins/.trash");
    #[expect(
        clippy::disallowed_methods,
        reason = "the test counts the store's trash slots"
    )]
    let held = || std::fs::read_dir(&trash).map_or(0, Iterator::count);
    assert_eq!(held(), 1);
    deaf.refresh().await.unwrap();
    assert!(!alive(pid));
    // The next open finds the tree unleased and deletes it.
    let third = second_host(&env, |_| {}).await;
    assert_eq!(held(), 0);
    for host in [deaf, third] {
        host.shutdown().await;
    }
}

/// The store's trash slots: a retired tree still held by some host stays there.
fn trash_slots(env: &Env) -> usize {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test counts the store's trash slots"
    )]
    let slots = std::fs::read_dir(env.path("plugins/.trash")).map_or(0, Iterator::count);
    slots
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replace_with_no_other_host_alive_does_not_wait_for_its_own_lease() {
    // A self-wait would last the whole retire_wait: 30 s makes it unmistakable.
    let retire_wait = Duration::from_secs(30);
    let env = Env::with(|o| o.retire_wait = retire_wait).await;
    let dir = FixtureBundle::new("mine").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    // Loaded and running: this host holds the tree's lease.
    let pid = pid_of(&env.invoke("fixture.info", json!({})).await.unwrap());
    let started = Instant::now();
    let outcome = env
        .host
        .install(dir.to_str().unwrap(), InstallOptions::trusted_and_enabled())
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(outcome.replaced);
    assert_eq!(outcome.record.id, id);
    assert!(took < retire_wait / 3, "the replace waited: {took:?}");
    // The old tree was deleted at once, not left for a later open.
    assert_eq!(trash_slots(&env), 0);
    // The old process went with the old tree; the bundle runs again from the new one.
    assert!(!alive(pid));
    let again = pid_of(&env.invoke("fixture.info", json!({})).await.unwrap());
    assert_ne!(again, pid);

    let started = Instant::now();
    env.host.uninstall(&id).await.unwrap();
    let took = started.elapsed();
    assert!(took < retire_wait / 3, "the uninstall waited: {took:?}");
    assert_eq!(trash_slots(&env), 0);
    assert!(!alive(again));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replace_while_another_host_holds_the_bundle_still_waits() {
    let retire_wait = Duration::from_millis(300);
    let env = Env::with(|o| o.retire_wait = retire_wait).await;
    let dir = FixtureBundle::new("shared-replace").write(&env.path("bundles"));
    env.install_ready(&dir).await;
    // A host that is never woken keeps the bundle loaded, and so keeps its lease.
    let deaf = second_host(&env, |o| {
        o.store_watch.notifications = false;
        o.store_watch.poll_interval = Duration::from_secs(3600);
    })
    .await;
    let pid = pid_of(
        &deaf
            .invoke(&Target::User, "fixture.info", json!({}))
            .await
            .unwrap(),
    );
    // New content, so the deaf host's refresh below replaces its runtime.
    #[expect(
        clippy::disallowed_methods,
        reason = "the test edits its bundle source"
    )]
    std::fs::write(dir.join("NOTES.md"), "new content\n").unwrap();
    let started = Instant::now();
    env.host
        .install(dir.to_str().unwrap(), InstallOptions::trusted_and_enabled())
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(waited >= retire_wait, "{waited:?}");
    // The deaf host still runs from the old tree: it stays in the trash.
    assert!(alive(pid));
    assert_eq!(trash_slots(&env), 1);
    deaf.refresh().await.unwrap();
    assert!(!alive(pid));
    deaf.shutdown().await;
}
