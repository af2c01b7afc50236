use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use c2_policy::{
    Catalog, CatalogModule, Change, ChangeKind, Error, LoadSource, PolicyDocument, PolicyOptions,
    PolicyStore, Revisions, Scope,
};
use serde_json::json;

const ROLE_VAR: &str = "C2_POLICY_IT_ROLE";
const DIR_VAR: &str = "C2_POLICY_IT_DIR";
const COUNT_VAR: &str = "C2_POLICY_IT_COUNT";
const READY: &str = "writer ready";
const KILLS: usize = 200;
const INCREMENTS_PER_WRITER: u64 = 25;

fn catalog() -> Catalog {
    Catalog::new([CatalogModule {
        name: "counter".into(),
        default_enabled: true,
        config_schema: Some(json!({
            "type": "object",
            "properties": { "n": { "type": "integer", "minimum": 1 } },
            "required": ["n"],
            "additionalProperties": false
        })),
        ..CatalogModule::default()
    }])
}

/// Writes revision `N` with configuration `{"n": N}`, so content proves which commit it is.
/// Returns false when another writer got there first.
fn write_next(store: &mut PolicyStore, catalog: &Catalog) -> bool {
    store.reload();
    let next = store.revision() + 1;
    let revisions = Revisions::default();
    let change = Change {
        module: "counter".into(),
        scope: Scope::User,
        kind: ChangeKind::Configure(json!({ "n": next })),
    };
    let plan = store
        .plan_change(change, catalog, &revisions, Instant::now())
        .unwrap();
    match store.apply_change(plan.id, &revisions, Instant::now()) {
        Ok(pending) => {
            assert_eq!(pending.revision, next);
            store.confirm(pending.revision).unwrap();
            true
        }
        Err(Error::StalePlan { .. }) => false,
        Err(other) => panic!("apply failed: {other}"),
    }
}

/// Child side: runs until killed (`crash`) or until it has made its count of writes (`counter`).
fn run_child(role: &str) {
    let dir = std::env::var(DIR_VAR).unwrap();
    let catalog = catalog();
    let mut store = PolicyStore::open(&dir, PolicyOptions::default());
    match role {
        "crash" => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{READY}").unwrap();
            out.flush().unwrap();
            drop(out);
            loop {
                write_next(&mut store, &catalog);
            }
        }
        "counter" => {
            let count: u64 = std::env::var(COUNT_VAR).unwrap().parse().unwrap();
            let mut done = 0;
            while done < count {
                if write_next(&mut store, &catalog) {
                    done += 1;
                }
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the crash test must SIGKILL a real writer process; it re-executes this test binary"
)]
fn spawn_child(test: &str, role: &str, dir: &Path, stdout: Stdio) -> Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--test-threads=1", "--quiet"])
        .env(ROLE_VAR, role)
        .env(DIR_VAR, dir)
        .env(COUNT_VAR, INCREMENTS_PER_WRITER.to_string())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The revision of a document whose content matches it; panics on anything else.
fn committed_revision(document: &PolicyDocument, context: &str) -> u64 {
    let config = document
        .user
        .get("counter")
        .and_then(|entry| entry.config.clone());
    match document.revision {
        0 => assert_eq!(config, None, "{context}"),
        revision => assert_eq!(
            config,
            Some(json!({ "n": revision })),
            "{context}: torn or mixed content"
        ),
    }
    document.revision
}

/// The store loads cleanly from the primary (or is untouched), and both files hold a commit.
fn check_store(dir: &Path, context: &str) -> u64 {
    let store = PolicyStore::open(dir, PolicyOptions::default());
    assert!(
        store.diagnostics().is_empty(),
        "{context}: {:?}",
        store.diagnostics()
    );
    assert!(
        matches!(store.source(), LoadSource::Primary | LoadSource::Default),
        "{context}"
    );
    let revision = committed_revision(store.document().unwrap(), context);
    if let Ok(bytes) = std::fs::read(store.last_good_path()) {
        let last_good: PolicyDocument = serde_json::from_slice(&bytes).unwrap();
        assert!(
            committed_revision(&last_good, context) <= revision,
            "{context}: last-known-good ahead of primary"
        );
    }
    revision
}

fn seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |elapsed| elapsed.as_nanos() as u64)
        | 1
}

#[test]
fn a_writer_killed_at_random_moments_always_leaves_exactly_a_committed_revision() {
    if let Ok(role) = std::env::var(ROLE_VAR) {
        return run_child(&role);
    }
    let dir = tempfile::tempdir().unwrap();
    let seed = seed();
    let mut random = seed;
    let mut last = 0;
    for kill in 0..KILLS {
        let mut child = spawn_child(
            "crash::a_writer_killed_at_random_moments_always_leaves_exactly_a_committed_revision",
            "crash",
            dir.path(),
            Stdio::piped(),
        );
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let ready = stdout
            .lines()
            .map_while(Result::ok)
            .any(|line| line == READY);
        assert!(ready, "the writer child did not start");
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        std::thread::sleep(Duration::from_millis(1 + random % 20));
        child.kill().unwrap();
        child.wait().unwrap();
        let context = format!("kill {kill} (seed {seed})");
        let revision = check_store(dir.path(), &context);
        assert!(
            revision >= last,
            "{context}: revision went back from {last} to {revision}"
        );
        last = revision;
    }
    assert!(
        last > 0,
        "no writer ever committed, so no kill tested anything"
    );
}

#[test]
fn two_writers_at_once_never_tear_or_lose_a_write() {
    if let Ok(role) = std::env::var(ROLE_VAR) {
        return run_child(&role);
    }
    let dir = tempfile::tempdir().unwrap();
    let test = "crash::two_writers_at_once_never_tear_or_lose_a_write";
    let children = [
        spawn_child(test, "counter", dir.path(), Stdio::null()),
        spawn_child(test, "counter", dir.path(), Stdio::null()),
    ];
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "writer failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let revision = check_store(dir.path(), "after both writers");
    assert_eq!(revision, 2 * INCREMENTS_PER_WRITER);
    let last_good: PolicyDocument =
        serde_json::from_slice(&std::fs::read(dir.path().join(c2_policy::LAST_GOOD_FILE)).unwrap())
            .unwrap();
    assert_eq!(last_good.revision, 2 * INCREMENTS_PER_WRITER);
}
