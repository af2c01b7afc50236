//! The fault suite: every misbehaviour mode of the c2-testkit fixture runs under the host while a
//! healthy bystander plugin is called without pause. For each mode the bad plugin must end in the
//! state, with the error kind, that docs/resilience.md lists; the bystander must answer every call
//! from the same process throughout; and once the bad plugin is unloaded no process of it may be
//! left (plugin processes are found by their working directory, the installed bundle inside the
//! test's private store, so a grandchild that left the process group is found too).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use c2_host::{HostOptions, PluginHost, StateChange, Target};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::{Env, FixtureBundle, alive, all_pids, gone, pid_of, stat_field};

/// The bystander's one command; the fixture answers any declared command with `{command, args}`.
const BYSTANDER: &str = "bystander.echo";
/// A handshake deadline short enough for the modes that never answer, long enough for a fixture
/// that does answer on a loaded machine.
const HANDSHAKE: Duration = Duration::from_secs(3);
/// How long anything that should happen "at once" may take on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// A host with the bystander active and called in a loop by a background task.
pub(crate) struct Scene {
    pub(crate) env: Env,
    pub(crate) root: PathBuf,
    pub(crate) bystander_pid: u32,
    answers: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    chatter: JoinHandle<Result<(), String>>,
}

impl Scene {
    pub(crate) async fn new(tweak: impl FnOnce(&mut HostOptions)) -> Self {
        let env = Env::with(tweak).await;
        let root = std::fs::canonicalize(env.root.path()).unwrap();
        let dir = FixtureBundle::new("bystander")
            .commands(&[BYSTANDER])
            .write(&env.path("bundles"));
        let id = env.install_ready(&dir).await;
        assert_eq!(
            env.invoke(BYSTANDER, json!({"n": 0})).await.unwrap(),
            json!({"command": BYSTANDER, "args": {"n": 0}})
        );
        let bystander_pid = env.host.runtime_pid(&id, &Target::User).unwrap().unwrap();
        let answers = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let chatter = tokio::spawn(chatter(
            env.host.clone(),
            Arc::clone(&answers),
            Arc::clone(&stop),
        ));
        Self {
            env,
            root,
            bystander_pid,
            answers,
            stop,
            chatter,
        }
    }

    /// Installs a trusted, enabled fixture bundle misbehaving in `modes`; returns its id.
    async fn bad(&self, modes: &str) -> String {
        let name: String = modes
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = FixtureBundle::new(&format!("bad-{name}"))
            .modes(modes)
            .write(&self.env.path("bundles"));
        self.env.install_ready(&dir).await
    }

    pub(crate) fn state(&self, id: &str) -> String {
        let status = self.env.host.list().into_iter().find(|b| b.id == id);
        status.map_or_else(String::new, |b| b.state.to_string())
    }

    fn spawns(&self) -> u64 {
        self.env.host.stats().spawns
    }

    /// Uninstalls the bad bundle and waits until no process of it is left.
    pub(crate) async fn remove(&self, id: &str) {
        self.env.host.uninstall(id).await.unwrap();
        let bystander = self.bystander_pid;
        let left = settle(|| {
            plugin_processes(&self.root)
                .into_iter()
                .filter(|pid| *pid != bystander)
                .collect()
        })
        .await;
        assert!(left.is_empty(), "{id} left processes behind: {left:?}");
    }

    /// The bystander answered throughout and still answers from the same process; then the
    /// host shuts down and leaves no plugin process behind.
    pub(crate) async fn finish(self) {
        // Two more answers prove the bystander outlived the fault, not just preceded it.
        let seen = self.answers.load(Ordering::Relaxed);
        let start = Instant::now();
        while self.answers.load(Ordering::Relaxed) < seen + 2 && start.elapsed() < PATIENCE {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.stop.store(true, Ordering::Relaxed);
        let outcome = self.chatter.await.unwrap();
        assert_eq!(outcome, Ok(()), "the bystander failed");
        assert!(
            self.answers.load(Ordering::Relaxed) >= seen + 2,
            "the bystander stopped answering"
        );
        let ids: Vec<String> = self.env.host.list().into_iter().map(|b| b.id).collect();
        let bystander = ids.iter().find(|id| id.starts_with("bystander")).unwrap();
        assert_eq!(
            self.env.host.runtime_pid(bystander, &Target::User).unwrap(),
            Some(self.bystander_pid),
            "the bystander was restarted"
        );
        self.env.host.shutdown().await;
        assert!(gone(self.bystander_pid, PATIENCE).await);
        let left = settle(|| plugin_processes(&self.root)).await;
        assert!(left.is_empty(), "shutdown left processes behind: {left:?}");
    }
}

/// Calls the bystander until told to stop; the first wrong answer ends it with an error.
async fn chatter(
    host: PluginHost,
    answers: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    let mut n = 1_u64;
    while !stop.load(Ordering::Relaxed) {
        let answer = host
            .invoke(&Target::User, BYSTANDER, json!({ "n": n }))
            .await
            .map_err(|error| format!("call {n}: {} ({error})", error.kind()))?;
        let expected = json!({"command": BYSTANDER, "args": {"n": n}});
        if answer != expected {
            return Err(format!("call {n}: {answer}"));
        }
        answers.fetch_add(1, Ordering::Relaxed);
        n += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Polls `find` until it comes back empty or `PATIENCE` runs out; returns the last answer.
async fn settle(find: impl Fn() -> Vec<u32>) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let found = find();
        if found.is_empty() || start.elapsed() > PATIENCE {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Live (non-zombie) processes whose working directory is under `root`: every plugin process
/// and grandchild of this test's store, whatever its process group.
fn plugin_processes(root: &Path) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| alive(*pid))
        .filter(|pid| {
            #[expect(
                clippy::disallowed_methods,
                reason = "a process's working directory is read from /proc, not a bundle"
            )]
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
            cwd.is_ok_and(|cwd| cwd.starts_with(root))
        })
        .collect()
}

/// The process group of `pid`, from the fifth field of /proc/<pid>/stat.
fn pgid(pid: u32) -> Option<u32> {
    stat_field(pid, 1)
}

/// Live members of process group `group`.
fn group_members(group: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| alive(*pid) && pgid(*pid) == Some(group))
        .collect()
}

fn children_of(info: &Value) -> Vec<u32> {
    info["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u32::try_from(c.as_u64().unwrap()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_faults_fail_closed_with_their_kind_while_the_bystander_answers() {
    let scene = Scene::new(|o| o.handshake_timeout = HANDSHAKE).await;
    for (modes, kind) in [
        ("no-init", "handshake_timeout"),
        ("slow-init:60000", "handshake_timeout"),
        // No protocol at all: the host's own `initialize` comes back as a request, is refused with
        // -32601, and that refusal, echoed, answers the handshake.
        ("echo", "activation_failed"),
        ("protocol:2.0.0", "protocol_mismatch"),
        ("no-protocol-version", "protocol_mismatch"),
        ("extra-command", "command_set_mismatch"),
        ("missing-command", "command_set_mismatch"),
        ("duplicate-command", "command_set_mismatch"),
        ("schema-drift", "command_set_mismatch"),
        // One byte over the default 8 MiB frame limit, before the `initialize` answer.
        ("huge-line:8388609", "frame_too_large"),
    ] {
        let id = scene.bad(modes).await;
        let spawns = scene.spawns();
        let error = scene
            .env
            .invoke("fixture.echo", json!({}))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), kind, "{modes}: {error}");
        assert_eq!(scene.state(&id), "failed", "{modes}");
        assert_eq!(
            scene.env.host.runtime_pid(&id, &Target::User).unwrap(),
            None,
            "{modes}"
        );
        // Fail closed: the same generation is not spawned again.
        let again = scene
            .env
            .invoke("fixture.info", json!({}))
            .await
            .unwrap_err();
        assert_eq!(again.kind(), kind, "{modes}: {again}");
        assert_eq!(scene.spawns(), spawns + 1, "{modes}");
        scene.remove(&id).await;
    }
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noise_and_stray_responses_are_dropped_and_the_plugin_keeps_working() {
    let scene = Scene::new(|_| {}).await;
    for modes in [
        "banner",
        "invalid-utf8",
        "reply-twice",
        "reply-unknown-id",
        "stderr-flood:10000000",
    ] {
        let id = scene.bad(modes).await;
        let spawns = scene.spawns();
        for n in 0..3 {
            assert_eq!(
                scene
                    .env
                    .invoke("fixture.echo", json!({"modes": modes, "n": n}))
                    .await
                    .unwrap(),
                json!({"modes": modes, "n": n}),
                "{modes}"
            );
        }
        assert_eq!(scene.state(&id), "active", "{modes}");
        assert_eq!(scene.spawns(), spawns + 1, "{modes}");
        scene.remove(&id).await;
    }
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_exits_after_the_handshake_is_restarted_by_the_next_call() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.bad("exit-after-init").await;
    let spawns = scene.spawns();
    let first = scene
        .env
        .invoke("fixture.echo", json!(1))
        .await
        .unwrap_err();
    assert_eq!(first.kind(), "process_exited", "{first}");
    assert_eq!(scene.spawns(), spawns + 1);
    let second = scene
        .env
        .invoke("fixture.echo", json!(2))
        .await
        .unwrap_err();
    assert_eq!(second.kind(), "process_exited", "{second}");
    assert_eq!(scene.spawns(), spawns + 2, "the second call restarts it");
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_closes_stdout_after_the_handshake_is_stopped() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.bad("close-stdout").await;
    let error = scene
        .env
        .invoke("fixture.echo", json!(1))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "process_exited", "{error}");
    let bystander = scene.bystander_pid;
    let left = settle(|| {
        plugin_processes(&scene.root)
            .into_iter()
            .filter(|pid| *pid != bystander)
            .collect()
    })
    .await;
    assert!(
        left.is_empty(),
        "the stdout-less process lives on: {left:?}"
    );
    assert_eq!(scene.state(&id), "ready");
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_that_ignore_sigterm_or_stdin_eof_are_killed_by_unload() {
    let scene = Scene::new(|_| {}).await;
    for modes in [
        "ignore-sigterm",
        "ignore-stdin-eof",
        "ignore-sigterm,ignore-stdin-eof",
    ] {
        let id = scene.bad(modes).await;
        let info = scene.env.invoke("fixture.info", json!({})).await.unwrap();
        let pid = pid_of(&info);
        scene
            .env
            .host
            .set_state(&id, &Target::User, StateChange::Disable)
            .await
            .unwrap();
        // The stop is awaited: SIGKILL after the grace has already been sent and reaped.
        assert!(gone(pid, PATIENCE).await, "{modes}: {pid} survived");
        assert_eq!(scene.state(&id), "disabled", "{modes}");
        assert_eq!(
            scene
                .env
                .invoke("fixture.echo", json!({}))
                .await
                .unwrap_err()
                .kind(),
            "disabled",
            "{modes}"
        );
        scene.remove(&id).await;
    }
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unloading_a_plugin_with_a_grandchild_leaves_no_group_member() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.bad("grandchild").await;
    let info = scene.env.invoke("fixture.info", json!({})).await.unwrap();
    let pid = pid_of(&info);
    let group = pgid(pid).unwrap();
    let children = children_of(&info);
    assert!(!children.is_empty(), "{info}");
    assert!(group_members(group).len() >= 2, "{info}");
    scene
        .env
        .host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert!(gone(pid, PATIENCE).await);
    for child in children {
        assert!(gone(child, PATIENCE).await, "grandchild {child} survived");
    }
    let left = settle(|| group_members(group)).await;
    assert!(left.is_empty(), "group {group} still has {left:?}");
    scene.remove(&id).await;
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_that_left_the_group_exits_when_its_inherited_stdin_closes() {
    let scene = Scene::new(|_| {}).await;
    let id = scene.bad("setsid-grandchild").await;
    let info = scene.env.invoke("fixture.info", json!({})).await.unwrap();
    let pid = pid_of(&info);
    let children = children_of(&info);
    assert_eq!(children.len(), 1, "{info}");
    let escaped = children[0];
    // It really escaped: a group signal cannot reach it.
    assert_ne!(pgid(escaped), pgid(pid), "{info}");
    scene
        .env
        .host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert!(gone(pid, PATIENCE).await);
    // The host closed the only write end of the fixture's stdin, which the grandchild inherited.
    assert!(
        gone(escaped, PATIENCE).await,
        "the escaped grandchild {escaped} outlived its stdin"
    );
    scene.remove(&id).await;
    scene.finish().await;
}

mod hostile;
