//! Many hosts, one store, in separate processes: a live `PluginHost` in this test process and
//! the real `c2-plugins` binary (one-shot commands, a call in flight, an `lsp` bridge) on one
//! plugins directory. Every assertion about a stop is about process liveness (`/proc`), never
//! about logs.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use c2_host::{HostOptions, PluginHost, Target};
use serde_json::json;

use crate::Sandbox;

/// The guarantee under test: a committed change reaches every live host within this.
pub(crate) const PROPAGATION: Duration = Duration::from_secs(1);
/// How long a test waits for something that has no stated bound (a process to start).
const PATIENCE: Duration = Duration::from_secs(20);
/// The commands of the fixture bundles most tests use.
pub(crate) const FIXTURE: [&str; 2] = ["fixture.info", "fixture.sleep"];

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A bundle whose runtime is the c2-testkit fixture.
pub(crate) fn fixture_bundle(sandbox: &Sandbox, name: &str, names: &[&str]) -> PathBuf {
    let dir = sandbox.work.join(name);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let fixture = c2_testkit::fixture_path().unwrap();
    let launcher = dir.join("bin/fixture");
    std::fs::write(&launcher, "#!/bin/sh\nexec \"$C2_TEST_FIXTURE\" \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": names.iter().map(|id| json!({"id": id, "title": id})).collect::<Vec<_>>(),
            "runtime": {
                "command": "bin/fixture",
                "env": {
                    "C2_TEST_FIXTURE": fixture.to_str().unwrap(),
                    "C2_FIXTURE_COMMANDS": json!(names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()).to_string(),
                },
                "scopeSupport": ["user"],
            }
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

/// Installs `dir` through the CLI (trusted and enabled unless `flags` says otherwise).
pub(crate) fn install(sandbox: &Sandbox, dir: &Path, flags: &[&str]) -> String {
    let mut args = vec!["--format", "json", "install", dir.to_str().unwrap()];
    args.extend_from_slice(flags);
    let run = sandbox.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()["result"]["id"].as_str().unwrap().to_owned()
}

pub(crate) fn cli_ok(sandbox: &Sandbox, args: &[&str]) -> String {
    let run = sandbox.run(args);
    assert_eq!(run.code, 0, "c2-plugins {args:?}: {run:#?}");
    run.stdout
}

/// Starts `c2-plugins ARGS` in the background with stdin piped.
fn spawn_cli(sandbox: &Sandbox, args: &[&str]) -> Child {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the built binary as a second live host"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    command
        .args(args)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Whether a process with this pid exists (and is not a zombie).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The live children of `pid` (every thread's).
fn children(pid: u32) -> Vec<u32> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lists a process's threads in /proc, not a bundle tree"
    )]
    let listing = std::fs::read_dir(format!("/proc/{pid}/task"));
    let Ok(tasks) = listing else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            found.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    found.retain(|&child| alive(child));
    found
}

/// Waits for `pid` to have exactly one live child and returns it.
fn only_child(pid: u32) -> u32 {
    let start = Instant::now();
    loop {
        if let [child] = children(pid)[..] {
            return child;
        }
        assert!(start.elapsed() < PATIENCE, "process {pid} started no child");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to `limit` for `ok`; returns how long it took, panics with `what` otherwise.
pub(crate) fn within(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if ok() {
            return start.elapsed();
        }
        assert!(start.elapsed() <= limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits up to `limit` for a child to exit; returns its exit code.
fn exits(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            start.elapsed() <= limit,
            "process {} did not exit",
            child.id()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub(crate) fn open_host(rt: &tokio::runtime::Runtime, sandbox: &Sandbox) -> PluginHost {
    let mut options = HostOptions::new(&sandbox.plugins);
    options.working_dir = Some(sandbox.work.clone());
    rt.block_on(c2_contributions::open(options)).unwrap()
}

pub(crate) fn has_command(host: &PluginHost, name: &str) -> bool {
    host.commands(&Target::User)
        .unwrap()
        .iter()
        .any(|c| c.name == name)
}

/// (trusted, enabled) of `id` as the host lists it, `None` when not installed.
fn listed(host: &PluginHost, id: &str) -> Option<(bool, bool)> {
    host.list()
        .into_iter()
        .find(|s| s.id == id)
        .map(|s| (s.trusted, s.enabled))
}

pub(crate) fn runtime_pid(rt: &tokio::runtime::Runtime, host: &PluginHost) -> u32 {
    let info = rt
        .block_on(host.invoke(&Target::User, "fixture.info", json!({})))
        .unwrap();
    u32::try_from(info["pid"].as_u64().unwrap()).unwrap()
}

#[test]
fn every_kind_of_cli_change_reaches_a_live_host_within_a_second() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "live", &FIXTURE);
    let id = install(&sandbox, &bundle, &["--trust", "--enable"]);
    let rt = runtime();
    let host = open_host(&rt, &sandbox);
    let mut slowest = Duration::ZERO;
    let mut record = |d: Duration| slowest = slowest.max(d);
    for round in 0..20 {
        // disable / enable
        let pid = runtime_pid(&rt, &host);
        cli_ok(&sandbox, &["disable", &id]);
        record(within(PROPAGATION, "disable stops the runtime", || {
            !alive(pid) && !has_command(&host, "fixture.info")
        }));
        assert_eq!(listed(&host, &id), Some((true, false)), "round {round}");
        cli_ok(&sandbox, &["enable", &id]);
        record(within(PROPAGATION, "enable brings the commands", || {
            has_command(&host, "fixture.info")
        }));
        // untrust / trust
        let pid = runtime_pid(&rt, &host);
        cli_ok(&sandbox, &["untrust", &id]);
        record(within(PROPAGATION, "untrust stops the runtime", || {
            !alive(pid) && !has_command(&host, "fixture.info")
        }));
        assert_eq!(listed(&host, &id), Some((false, true)), "round {round}");
        cli_ok(&sandbox, &["trust", &id]);
        record(within(PROPAGATION, "trust brings the commands", || {
            has_command(&host, "fixture.info")
        }));
        // reset / trust + enable
        let pid = runtime_pid(&rt, &host);
        cli_ok(&sandbox, &["reset", &id]);
        record(within(PROPAGATION, "reset stops the runtime", || {
            !alive(pid) && !has_command(&host, "fixture.info")
        }));
        assert_eq!(listed(&host, &id), Some((false, false)), "round {round}");
        cli_ok(&sandbox, &["trust", &id]);
        cli_ok(&sandbox, &["enable", &id]);
        record(within(PROPAGATION, "trust and enable after reset", || {
            has_command(&host, "fixture.info")
        }));
        // uninstall / install
        let pid = runtime_pid(&rt, &host);
        cli_ok(&sandbox, &["uninstall", &id]);
        // The uninstall returns only once the live host let go of the files.
        assert!(!alive(pid), "round {round}: the runtime outlived its files");
        assert!(!sandbox.plugins.join(&id).exists(), "round {round}");
        record(within(PROPAGATION, "uninstall empties the list", || {
            listed(&host, &id).is_none() && !has_command(&host, "fixture.info")
        }));
        assert_eq!(install(&sandbox, &bundle, &["--trust", "--enable"]), id);
        record(within(PROPAGATION, "install brings the commands", || {
            listed(&host, &id) == Some((true, true)) && has_command(&host, "fixture.info")
        }));
    }
    // replace: new content is a different digest, so trust lapses and the old runtime stops.
    let pid = runtime_pid(&rt, &host);
    std::fs::write(bundle.join("extra.txt"), "changed").unwrap();
    install(&sandbox, &bundle, &[]);
    assert!(!alive(pid), "the replaced runtime outlived its files");
    record(within(
        PROPAGATION,
        "replace re-applies the trust gate",
        || listed(&host, &id) == Some((false, true)) && !has_command(&host, "fixture.info"),
    ));
    eprintln!("slowest propagation to the live host: {slowest:?}");
    rt.block_on(host.shutdown());
}

/// Finds the runtime a background `c2-plugins invoke` started and returns its pid.
fn call_in_flight(sandbox: &Sandbox) -> (Child, u32) {
    let child = spawn_cli(
        sandbox,
        &["invoke", "fixture.sleep", "--args", r#"{"ms": 60000}"#],
    );
    let pid = only_child(child.id());
    (child, pid)
}

#[test]
fn a_change_in_one_host_stops_a_call_in_flight_in_another_process() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "inflight", &FIXTURE);
    let id = install(&sandbox, &bundle, &["--trust", "--enable"]);
    let rt = runtime();
    let host = open_host(&rt, &sandbox);
    let kinds = ["disable", "untrust", "reset", "uninstall", "replace"];
    let mut slowest = Duration::ZERO;
    for round in 0..20 {
        let kind = kinds[round % kinds.len()];
        let (mut cli, pid) = call_in_flight(&sandbox);
        match kind {
            "disable" => {
                rt.block_on(host.set_state(&id, &Target::User, c2_host::StateChange::Disable))
                    .unwrap();
            }
            "untrust" => {
                rt.block_on(host.untrust(&id)).unwrap();
            }
            "reset" => {
                rt.block_on(host.reset(Some(&id))).unwrap();
            }
            "uninstall" => {
                rt.block_on(host.uninstall(&id)).unwrap();
                // Files go only after the other host stopped the runtime.
                assert!(!alive(pid), "round {round}: files went before the runtime");
                assert!(!sandbox.plugins.join(&id).exists());
            }
            _ => {
                std::fs::write(bundle.join("extra.txt"), format!("round {round}")).unwrap();
                rt.block_on(host.install(bundle.to_str().unwrap(), Default::default()))
                    .unwrap();
                assert!(
                    !alive(pid),
                    "round {round}: files replaced under the runtime"
                );
            }
        }
        slowest = slowest.max(within(
            PROPAGATION,
            &format!("{kind} stops the other process's runtime"),
            || !alive(pid),
        ));
        let code = exits(&mut cli, PATIENCE);
        assert_ne!(code, Some(0), "round {round}: the call in flight succeeded");
        // Back to trusted and enabled, through the in-process host.
        let options = c2_host::InstallOptions::trusted_and_enabled();
        rt.block_on(host.install(bundle.to_str().unwrap(), options))
            .unwrap();
    }
    eprintln!("slowest stop in the other process: {slowest:?}");
    rt.block_on(host.shutdown());
}

#[test]
fn cli_untrust_then_uninstall_against_a_call_in_flight() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "flight", &FIXTURE);
    let id = install(&sandbox, &bundle, &["--trust", "--enable"]);
    let (mut cli, pid) = call_in_flight(&sandbox);
    let out = cli_ok(&sandbox, &["untrust", &id]);
    assert!(out.contains("stops: bundle:"), "{out}");
    within(PROPAGATION, "untrust stops the call's runtime", || {
        !alive(pid)
    });
    assert_ne!(exits(&mut cli, PATIENCE), Some(0));
    cli_ok(&sandbox, &["trust", &id]);

    // Uninstall straight away: it returns only after the other process stopped the runtime.
    let (mut cli, pid) = call_in_flight(&sandbox);
    cli_ok(&sandbox, &["uninstall", &id]);
    assert!(!alive(pid), "the bundle's files went while its runtime ran");
    assert!(!sandbox.plugins.join(&id).exists());
    let mut stderr = String::new();
    cli.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_ne!(exits(&mut cli, PATIENCE), Some(0), "{stderr}");
}

/// A bundle with a Python language server for `zig` and no runtime.
fn lsp_bundle(sandbox: &Sandbox) -> PathBuf {
    sandbox.write(
        "ls/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "zig-ls", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "languageServers": [{"id": "echo", "languages": ["Zig"], "command": "bin/server"}]}}}"#,
    );
    let server = sandbox.write("ls/bin/server", crate::lsp::SERVER);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    sandbox.work.join("ls")
}

/// Starts `c2-plugins lsp zig`, completes `initialize` and returns the bridge and the server.
fn live_bridge(sandbox: &Sandbox, project: &Path) -> (Child, u32) {
    let mut bridge = spawn_cli(
        sandbox,
        &["lsp", "zig", "--project", project.to_str().unwrap()],
    );
    let mut stdin = bridge.stdin.take().unwrap();
    stdin
        .write_all(&crate::lsp::frame(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
        ))
        .unwrap();
    let mut stdout = bridge.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if seen.windows(8).any(|w| w == b"\"result\"") {
                let _ = tx.send(());
            }
        }
        drop(stdin);
    });
    rx.recv_timeout(PATIENCE)
        .expect("the bridged server answered initialize");
    let server = only_child(bridge.id());
    (bridge, server)
}

#[test]
fn cli_changes_stop_a_live_lsp_bridge_in_another_process() {
    let sandbox = Sandbox::new();
    let bundle = lsp_bundle(&sandbox);
    let id = install(&sandbox, &bundle, &["--trust", "--enable"]);
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    for (change, restore) in [
        (vec!["disable", &id], vec![vec!["enable", &id]]),
        (vec!["untrust", &id], vec![vec!["trust", &id]]),
        (
            vec!["reset", &id],
            vec![vec!["trust", &id], vec!["enable", &id]],
        ),
        (vec!["uninstall", &id], vec![]),
    ] {
        let (mut bridge, server) = live_bridge(&sandbox, &project);
        let out = cli_ok(&sandbox, &change);
        if change[0] != "uninstall" && change[0] != "reset" {
            assert!(out.contains("stops: bundle:"), "{out}");
        }
        within(
            PROPAGATION,
            &format!("{} stops the server", change[0]),
            || !alive(server),
        );
        exits(&mut bridge, PATIENCE);
        for args in restore {
            cli_ok(&sandbox, &args);
        }
    }
    assert!(!sandbox.plugins.join(&id).exists());
}

#[test]
fn enable_of_a_bundle_without_a_process_promises_no_start() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "skills/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "only-skills", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#,
    );
    sandbox.write(
        "skills/skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Says hello.\n---\nSay hello.\n",
    );
    let id = install(&sandbox, &sandbox.work.join("skills"), &["--trust"]);
    let enabled = cli_ok(&sandbox, &["enable", &id]);
    assert!(!enabled.contains("starts:"), "{enabled}");
    assert!(
        enabled.contains(&format!("enables: bundle:{id}")),
        "{enabled}"
    );
    let disabled = cli_ok(&sandbox, &["disable", &id]);
    assert!(!disabled.contains("stops:"), "{disabled}");
    assert!(
        disabled.contains(&format!("disables: bundle:{id}")),
        "{disabled}"
    );
}

#[test]
fn a_plan_file_is_single_use_across_processes() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "planned", &FIXTURE);
    let id = install(&sandbox, &bundle, &["--trust"]);
    let plan = sandbox.work.join("enable.plan.json");
    cli_ok(
        &sandbox,
        &["plan", &id, "enable", "--out", plan.to_str().unwrap()],
    );
    let plan_arg = plan.to_str().unwrap();
    let codes: Vec<i32> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| sandbox.run(&["apply", plan_arg]).code))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(
        codes.iter().filter(|&&c| c == 0).count(),
        1,
        "exactly one apply wins: {codes:?}"
    );
    // And later, from yet another process, it is stale too.
    assert_eq!(sandbox.run(&["apply", plan_arg]).code, 1);
}

/// Every bundle's (digest, trusted, enabled) as a host lists it.
fn view(host: &PluginHost) -> Vec<(String, String, bool, bool)> {
    let mut rows: Vec<_> = host
        .list()
        .into_iter()
        .map(|s| (s.id, s.record.digest, s.trusted, s.enabled))
        .collect();
    rows.sort();
    rows
}

/// A small deterministic generator, so a failing soak can be replayed from its seed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % n as u64).unwrap()
    }
}

#[test]
fn soak_random_changes_from_four_processes_against_two_live_hosts() {
    let sandbox = Sandbox::new();
    let commands: Vec<String> = (0..3).map(|i| format!("soak{i}.ping")).collect();
    let bundles: Vec<PathBuf> = (0..3)
        .map(|i| fixture_bundle(&sandbox, &format!("soak{i}"), &[commands[i].as_str()]))
        .collect();
    let ids: Vec<String> = bundles
        .iter()
        .map(|b| install(&sandbox, b, &["--trust", "--enable"]))
        .collect();
    let rt = runtime();
    let hosts = [open_host(&rt, &sandbox), open_host(&rt, &sandbox)];
    let seen_pids = std::sync::Mutex::new(Vec::<(usize, String, u32)>::new());
    let done = std::sync::atomic::AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|scope| {
        // The live hosts keep activating whatever is runnable.
        let activity = scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                for (h, host) in hosts.iter().enumerate() {
                    for (id, command) in ids.iter().zip(&commands) {
                        // Fails whenever the bundle is not runnable here at the moment.
                        let called = rt.block_on(host.invoke(&Target::User, command, json!({})));
                        if called.is_ok()
                            && let Ok(Some(pid)) = host.runtime_pid(id, &Target::User)
                        {
                            seen_pids.lock().unwrap().push((h, id.clone(), pid));
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        // However a worker ends, the activity loop ends with it.
        struct Done<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _done = Done(&done);
        let workers: Vec<_> = (0..4u64)
            .map(|worker| {
                let (sandbox, ids, bundles) = (&sandbox, &ids, &bundles);
                scope.spawn(move || {
                    let mut rng = Lcg(0x5eed + worker);
                    for _ in 0..50 {
                        let which = rng.below(ids.len());
                        let id = ids[which].as_str();
                        let bundle = bundles[which].to_str().unwrap();
                        let args: Vec<&str> = match rng.below(8) {
                            0 => vec!["enable", id],
                            1 => vec!["disable", id],
                            2 => vec!["trust", id],
                            3 => vec!["untrust", id],
                            4 => vec!["uninstall", id],
                            5 => vec!["install", bundle, "--trust", "--enable"],
                            6 => vec!["reset", id],
                            _ => vec!["install", bundle],
                        };
                        // A change may lose a race (not installed any more, for example): it
                        // must fail cleanly, never hang or crash.
                        let run = sandbox.run(&args);
                        assert!(
                            matches!(run.code, 0..=2) && !run.stderr.contains("panicked"),
                            "{args:?}: {run:#?}"
                        );
                    }
                })
            })
            .collect();
        let ended: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        if ended.iter().all(Result::is_ok) {
            // End with something runnable, so the final checks see a live owner. Only once
            // every worker is done: a concurrent uninstall may rightly defeat an install.
            let bundle = bundles[0].to_str().unwrap();
            let run = sandbox.run(&["install", bundle, "--trust", "--enable"]);
            assert_eq!(run.code, 0, "{run:#?}");
        }
        drop(_done);
        activity.join().unwrap();
        for worker in ended {
            worker.unwrap();
        }
    });
    let changes_took = start.elapsed();
    // The truth: a host opened now on the store.
    let fresh = open_host(&rt, &sandbox);
    let truth = view(&fresh);
    for (h, host) in hosts.iter().enumerate() {
        within(
            PROPAGATION,
            &format!("host {h} agrees with the store"),
            || view(host) == truth,
        );
    }
    // No process is left that policy says should not run, in either host.
    let runnable: Vec<&String> = truth
        .iter()
        .filter(|(_, _, trusted, enabled)| *trusted && *enabled)
        .map(|(id, ..)| id)
        .collect();
    for (h, id, pid) in seen_pids.lock().unwrap().iter() {
        if alive(*pid) {
            assert!(
                runnable.contains(&id),
                "host {h}: {id}'s process {pid} runs although policy says it should not"
            );
            assert_eq!(
                hosts[*h].runtime_pid(id, &Target::User).unwrap(),
                Some(*pid),
                "host {h}: a process {pid} of {id} that the host no longer owns"
            );
        }
    }
    for (h, host) in hosts.iter().enumerate() {
        for (id, ..) in &truth {
            if !runnable.contains(&id) {
                assert_eq!(
                    host.runtime_pid(id, &Target::User).unwrap(),
                    None,
                    "host {h}: {id} runs"
                );
            }
        }
    }
    eprintln!(
        "soak: 200 changes in {changes_took:?}, {} activations seen, final {truth:?}",
        seen_pids.lock().unwrap().len()
    );
    for host in hosts.iter().chain([&fresh]) {
        rt.block_on(host.shutdown());
    }
}

/// What `finish_retired` logs when another host still holds a removed tree.
const HELD_WARNING: &str = "another host still has the removed bundle loaded";

#[test]
fn reinstalling_a_running_bundle_with_no_other_host_does_not_wait() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "again", &FIXTURE);
    install(&sandbox, &bundle, &["--trust", "--enable"]);
    let started = Instant::now();
    let run = sandbox.run(&["install", bundle.to_str().unwrap(), "--trust", "--enable"]);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains(HELD_WARNING), "{run:#?}");
    // The default retire_wait is 5 s: a self-wait lasts all of it.
    assert!(took < Duration::from_secs(5), "{took:?}");
    #[expect(
        clippy::disallowed_methods,
        reason = "the test counts the store's trash slots"
    )]
    let held = std::fs::read_dir(sandbox.plugins.join(".trash")).map_or(0, Iterator::count);
    assert_eq!(held, 0, "the old tree was deleted at once");
}

#[test]
fn reinstalling_a_bundle_another_process_runs_waits_and_warns() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "held", &FIXTURE);
    install(&sandbox, &bundle, &["--trust", "--enable"]);
    let rt = runtime();
    // A live host that is never woken keeps the bundle loaded, and so its lease.
    let mut options = HostOptions::new(&sandbox.plugins);
    options.working_dir = Some(sandbox.work.clone());
    options.store_watch.notifications = false;
    options.store_watch.poll_interval = Duration::from_secs(3600);
    let host = rt.block_on(c2_contributions::open(options)).unwrap();
    let pid = runtime_pid(&rt, &host);
    // New content, so the live host's refresh below replaces its runtime.
    std::fs::write(bundle.join("NOTES.md"), "new content\n").unwrap();
    let started = Instant::now();
    let run = sandbox.run(&["install", bundle.to_str().unwrap(), "--trust", "--enable"]);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains(HELD_WARNING), "{run:#?}");
    assert!(took >= Duration::from_secs(5), "{took:?}");
    assert!(alive(pid));
    rt.block_on(host.refresh()).unwrap();
    assert!(!alive(pid));
    rt.block_on(host.shutdown());
}
