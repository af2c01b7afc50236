//! The host killed outright: a `c2-plugins invoke` is SIGKILLed while its plugin is mid-call,
//! and the plugin must exit within a second on its own, because the only write end of its stdin
//! died with the host. Nothing signals the plugin; it is found through a marker variable that only
//! this test's bundle puts in its environment. Both kinds of plugin process are covered: the
//! c2-testkit fixture sleeping in `fixture.sleep`, and the SDK example `hello-rust` waiting on
//! its `git.status` callback, which a stand-in `git` on the host's PATH keeps busy.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Sandbox;

/// The bound the issue fixes for the stdin-close exit, plus as much again for a loaded machine.
const EXIT_BOUND: Duration = Duration::from_secs(2);
/// How long the plugin may take to appear after the invoke starts, on a loaded machine.
const START_PATIENCE: Duration = Duration::from_secs(30);

/// A workspace binary built beside this test's `deps/` directory (or at `override_var`).
pub(crate) fn built(name: &str, override_var: &str) -> PathBuf {
    let path = match std::env::var_os(override_var) {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()
            .unwrap()
            .parent()
            .and_then(|deps| deps.parent())
            .unwrap()
            .join(name),
    };
    assert!(
        path.is_file(),
        "no {name} at {}: build the workspace first (`cargo build --workspace`)",
        path.display()
    );
    path
}

/// Writes bundle `name` declaring `commands`, whose runtime is a launcher that execs `program`
/// with `env` and the marker added to the runtime environment.
pub(crate) fn bundle(
    sandbox: &Sandbox,
    name: &str,
    program: &Path,
    commands: &[&str],
    env: &[(&str, String)],
    marker: &str,
) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let launcher = sandbox.write(
        &format!("{name}/bin/launch"),
        "#!/bin/sh\nexec \"$C2_TEST_PROGRAM\" \"$@\"\n",
    );
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut runtime_env = serde_json::Map::new();
    runtime_env.insert("C2_TEST_PROGRAM".into(), json!(program.to_str().unwrap()));
    runtime_env.insert("C2_RESILIENCE_MARKER".into(), json!(marker));
    for (key, value) in env {
        runtime_env.insert((*key).into(), json!(value));
    }
    let declared: Vec<Value> = commands
        .iter()
        .map(|id| json!({"id": id, "title": format!("Test {id}")}))
        .collect();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": declared,
            "runtime": {
                "command": "bin/launch",
                "env": runtime_env,
                "scopeSupport": ["user"],
            }
        }}
    });
    sandbox.write(
        &format!("{name}/plugin.json"),
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
    sandbox.work.join(name)
}

/// Running (non-zombie) processes whose environment holds `variable=value`; a zombie's environ
/// reads empty, so an exited plugin drops out even before it is reaped.
pub(crate) fn marked(variable: &str, value: &str) -> Vec<u32> {
    let needle = format!("{variable}={value}");
    #[expect(
        clippy::disallowed_methods,
        reason = "the plugin is found by scanning /proc, which is not bundle collection"
    )]
    let entries = std::fs::read_dir("/proc").unwrap();
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
            })
        })
        .collect()
}

/// Kills the host and every process marked by this test on drop (the plugin, and whatever the
/// host started with its own environment), so a failing test leaves nothing behind.
struct Cleanup {
    host: Child,
    marker: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.host.kill();
        let _ = self.host.wait();
        let mut pids = marked(PLUGIN_MARKER, &self.marker);
        pids.extend(marked(HOST_MARKER, &self.marker));
        for pid in pids {
            #[expect(
                clippy::disallowed_methods,
                reason = "last-resort cleanup of a plugin that outlived a failed test"
            )]
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// The plugin-side marker, set in the bundle's runtime environment.
const PLUGIN_MARKER: &str = "C2_RESILIENCE_MARKER";
/// The host-side marker, inherited by anything the host starts with its own environment.
const HOST_MARKER: &str = "C2_RESILIENCE_HOST";

fn unique_marker() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Installs `bundle` trusted and enabled, runs `c2-plugins invoke COMMAND --args ARGS` with
/// `path_prefix` ahead of PATH, waits for the marked plugin (and, with a prefix, for a stand-in
/// tool the host started on the plugin's behalf), SIGKILLs the host mid-call and
/// returns how long the plugin took to exit (failing if it outlives [`EXIT_BOUND`]).
fn kill_host_mid_call(
    sandbox: &Sandbox,
    bundle: &Path,
    marker: &str,
    (name, args): (&str, &str),
    path_prefix: Option<&Path>,
) -> Duration {
    let install = sandbox.run(&["install", bundle.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(prefix) = path_prefix {
        let mut dirs = vec![prefix.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        path = std::env::join_paths(dirs).unwrap();
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the built binary as a user would, in order to kill it"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    let host = command
        .args(["invoke", name, "--args", args])
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env("PATH", path)
        .env(HOST_MARKER, marker)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut cleanup = Cleanup {
        host,
        marker: marker.to_owned(),
    };
    let start = Instant::now();
    let mut plugins = marked(PLUGIN_MARKER, marker);
    while plugins.is_empty() && start.elapsed() < START_PATIENCE {
        std::thread::sleep(Duration::from_millis(10));
        plugins = marked(PLUGIN_MARKER, marker);
    }
    assert!(!plugins.is_empty(), "the plugin never started");
    if path_prefix.is_some() {
        // The stand-in tools run as the host's children with its environment: one of them
        // running means the plugin's callback reached the host, so the plugin is mid-call.
        let host_pid = cleanup.host.id();
        let busy = || {
            marked(HOST_MARKER, marker)
                .into_iter()
                .any(|pid| pid != host_pid)
        };
        while !busy() && start.elapsed() < START_PATIENCE {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(busy(), "the plugin never called back into the host");
    }
    // Let the handshake and the call reach the plugin, so it is mid-call when the host dies.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        cleanup.host.try_wait().unwrap(),
        None,
        "the host ended before the kill"
    );
    cleanup.host.kill().unwrap();
    let killed = Instant::now();
    let status = cleanup.host.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    let mut left = marked(PLUGIN_MARKER, marker);
    while !left.is_empty() && killed.elapsed() < EXIT_BOUND {
        std::thread::sleep(Duration::from_millis(10));
        left = marked(PLUGIN_MARKER, marker);
    }
    let took = killed.elapsed();
    #[expect(
        clippy::print_stderr,
        reason = "the measured exit time is the figure this test reports"
    )]
    {
        eprintln!("{name}: plugins {plugins:?} exited {took:?} after the host was killed");
    }
    assert!(
        left.is_empty(),
        "plugins {left:?} still ran {took:?} after the host was killed"
    );
    took
}

#[test]
fn a_sigkilled_host_leaves_no_fixture_running_because_its_stdin_closes() {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    let fixture = built("c2-fixture", "C2_FIXTURE_BIN");
    let dir = bundle(
        &sandbox,
        "sleeper",
        &fixture,
        &["fixture.sleep"],
        &[(
            "C2_FIXTURE_COMMANDS",
            json!([{"name": "fixture.sleep"}]).to_string(),
        )],
        &marker,
    );
    kill_host_mid_call(
        &sandbox,
        &dir,
        &marker,
        ("fixture.sleep", r#"{"ms": 60000}"#),
        None,
    );
}

#[test]
fn a_sigkilled_host_leaves_no_sdk_plugin_running_because_its_stdin_closes() {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    let hello = built("hello-rust", "C2_HELLO_RUST_BIN");
    let dir = bundle(
        &sandbox,
        "hello-rust",
        &hello,
        &["hello-rust.greet", "hello-rust.status"],
        &[],
        &marker,
    );
    // The host's `git` is a stand-in that takes a while, so hello-rust.status waits on its
    // git.status callback when the host dies. It ends on its own; Cleanup kills it sooner.
    let fake = sandbox.work.join("fake-bin");
    let git = sandbox.write("fake-bin/git", "#!/bin/sh\nexec sleep 20\n");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let args = json!({"cwd": sandbox.work.to_str().unwrap()}).to_string();
    kill_host_mid_call(
        &sandbox,
        &dir,
        &marker,
        ("hello-rust.status", &args),
        Some(&fake),
    );
}

mod hostile;
