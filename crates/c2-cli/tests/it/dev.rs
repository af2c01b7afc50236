//! `c2-plugins dev` end to end: a copy of the Node pack developed while a second host
//! (`serve`) holds it. Saves of the source and the manifest are live in both within a second
//! of the debounce; a broken save keeps the last good version; SIGINT leaves nothing behind;
//! a killed developer mode is cleaned by the next open of the store.

use std::io::Read;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Sandbox;
use crate::serve::{
    Client, PATIENCE, alive, exit_code, runtime_pid, serve_on_socket, sigterm, socket_client,
    wait_gone,
};

/// `dev`'s debounce (crates/c2-cli/src/commands/dev.rs).
const DEBOUNCE: Duration = Duration::from_millis(250);
/// How long after the debounce a save must be live in every host.
const LIVE: Duration = Duration::from_secs(1);

fn source(answer: &str, extra: bool) -> String {
    let extra = if extra {
        r#".command("hello.extra", async () => ({ extra: true }))"#
    } else {
        ""
    };
    format!(
        "import {{ definePlugin }} from \"./c2-plugin-sdk.mjs\";\n\
         definePlugin().command(\"hello.status\", async () => ({{ answer: \"{answer}\" }})){extra}.run();\n"
    )
}

/// The pack's plugin.json with `hello.extra` added to its commands.
fn with_extra_command(manifest: &str) -> String {
    let mut manifest: Value = serde_json::from_str(manifest).unwrap();
    manifest["extensions"]["dev.codetwo"]["commands"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "hello.extra", "title": "Extra"}));
    serde_json::to_string_pretty(&manifest).unwrap()
}

fn spawn_dev(sandbox: &Sandbox, log: &str) -> Child {
    let log = std::fs::File::create(sandbox.work.join(log)).unwrap();
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs developer mode as an author would"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    command
        .args(["dev", "pack"])
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn read_log(sandbox: &Sandbox, log: &str) -> String {
    let mut text = String::new();
    std::fs::File::open(sandbox.work.join(log))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Waits (bounded) until the log holds `needle` `times` times.
fn wait_log(sandbox: &Sandbox, log: &str, needle: &str, times: usize) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = read_log(sandbox, log);
        if text.matches(needle).count() >= times {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "no `{needle}` in the dev log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `command` through the service until its result satisfies `check`; returns when.
fn wait_answer(client: &mut Client, command: &str, check: impl Fn(&Value) -> bool) -> Instant {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let response = client.call("command/invoke", json!({"command": command}));
        if check(&response["result"]) {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "{command} never answered as expected: {response:#}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls the service's listing until it holds the bundle trusted with content other than
/// `old` (the saved content is loaded, runnable, and its next call starts it); returns that
/// digest and when. The first call's process start is not part of the reload.
fn wait_reloaded(client: &mut Client, old: &str) -> (String, Instant) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listed = client.ok("plugins/list", json!({}));
        let bundle = &listed[0];
        if bundle["trusted"] == true && bundle["digest"].as_str().is_some_and(|d| d != old) {
            return (
                bundle["digest"].as_str().unwrap().to_owned(),
                Instant::now(),
            );
        }
        assert!(
            Instant::now() < deadline,
            "the service never reloaded: {listed:#}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls the service's user realm until it offers `command` (a manifest edit is live: the
/// next call starts the new content); returns when.
fn wait_command(client: &mut Client, command: &str) -> Instant {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let commands = client.ok("realm/commands", json!({}));
        if commands
            .as_array()
            .is_some_and(|rows| rows.iter().any(|row| row["name"] == command))
        {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "{command} never registered: {commands:#}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill(child: &Child, signal: &str) {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test signals developer mode as a terminal (or a crash) would"
    )]
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn development_marks(sandbox: &Sandbox) -> Vec<String> {
    match std::fs::read_dir(sandbox.plugins.join(".development")) {
        Ok(entries) => entries
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn in_process(sandbox: &Sandbox, command: &str) -> Value {
    let run = sandbox.run(&["--format", "json", "invoke", "--no-service", command]);
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()["result"].clone()
}

#[test]
fn dev_reloads_saves_in_every_host_keeps_the_last_good_version_and_leaves_nothing_behind() {
    let sandbox = Sandbox::new();
    let pack = sandbox.copy_hello_runtime("pack");
    let manifest_path = pack.join("plugin.json");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    sandbox.write("pack/plugin.mjs", &source("one", false));
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);

    let mut dev = spawn_dev(&sandbox, "dev.log");
    let started = wait_log(&sandbox, "dev.log", "watching for saves", 1);
    assert!(
        started.contains("trusted while developer mode runs because you named this directory"),
        "{started}"
    );
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "one");
    let listed = client.ok("plugins/list", json!({}));
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    let digest = listed[0]["digest"].as_str().unwrap().to_owned();

    // A source edit is live in the service within a second of the debounce.
    let saved = Instant::now();
    sandbox.write("pack/plugin.mjs", &source("two", false));
    let (_, live) = wait_reloaded(&mut client, &digest);
    println!("the source edit was live after {:?}", live - saved);
    assert!(
        live - saved < DEBOUNCE + LIVE,
        "the source edit took {:?}",
        live - saved
    );
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "two");
    wait_log(&sandbox, "dev.log", "reloaded", 1);
    assert_eq!(in_process(&sandbox, "hello.status")["answer"], "two");

    // A manifest edit (a new command) likewise.
    let saved = Instant::now();
    sandbox.write("pack/plugin.mjs", &source("two", true));
    std::fs::write(&manifest_path, with_extra_command(&manifest)).unwrap();
    let live = wait_command(&mut client, "hello.extra");
    println!("the manifest edit was live after {:?}", live - saved);
    assert!(
        live - saved < DEBOUNCE + LIVE,
        "the manifest edit took {:?}",
        live - saved
    );
    wait_answer(&mut client, "hello.extra", |r| r["extra"] == true);
    assert_eq!(in_process(&sandbox, "hello.extra")["extra"], true);

    // A broken save keeps the last good version answering, and its diagnostics are printed.
    std::fs::write(&manifest_path, "{ \"name\": ").unwrap();
    let log = wait_log(&sandbox, "dev.log", "kept the last good version", 1);
    assert!(
        log.contains("error["),
        "the diagnostics are printed:\n{log}"
    );
    std::thread::sleep(DEBOUNCE + LIVE);
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "two");
    wait_answer(&mut client, "hello.extra", |r| r["extra"] == true);

    // The next good save reloads.
    std::fs::write(&manifest_path, with_extra_command(&manifest)).unwrap();
    sandbox.write("pack/plugin.mjs", &source("three", true));
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "three");

    // Ctrl-C: the development bundle leaves the store and every host; no process is left.
    let pid = runtime_pid(&mut client, &id).expect("the service runs the bundle");
    kill(&dev, "-INT");
    assert_eq!(exit_code(&mut dev), 0, "{}", read_log(&sandbox, "dev.log"));
    wait_log(&sandbox, "dev.log", "developer mode ended", 1);
    wait_gone(pid);
    let deadline = Instant::now() + PATIENCE;
    while client.ok("plugins/list", json!({})) != json!([]) {
        assert!(
            Instant::now() < deadline,
            "the service still lists the bundle"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!sandbox.plugins.join(&id).exists());
    assert_eq!(development_marks(&sandbox), Vec::<String>::new());

    // A crash (SIGKILL) is cleaned by the next open of the store.
    let mut dev = spawn_dev(&sandbox, "dev-2.log");
    wait_log(&sandbox, "dev-2.log", "watching for saves", 1);
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "three");
    let pid = runtime_pid(&mut client, &id).expect("the service runs the bundle");
    kill(&dev, "-KILL");
    exit_code(&mut dev);
    assert!(
        alive(pid),
        "the service keeps running the bundle until the store changes"
    );
    let listed = sandbox.run(&["--format", "json", "list"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    assert_eq!(listed.json()["result"], json!([]), "{listed:#?}");
    assert!(!sandbox.plugins.join(&id).exists());
    assert_eq!(development_marks(&sandbox), Vec::<String>::new());
    wait_gone(pid);

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}

#[test]
fn the_relay_develops_a_directory_publishes_each_reload_and_ends_developer_mode() {
    let sandbox = Sandbox::new();
    let pack = sandbox.copy_hello_runtime("pack");
    let manifest_path = pack.join("plugin.json");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    sandbox.write("pack/plugin.mjs", &source("one", false));
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    client.ok("events/subscribe", json!({"event": "dev/reloaded"}));

    let status = client.ok(
        "plugins/setDeveloperMode",
        json!({"enabled": true, "path": pack}),
    );
    assert_eq!(status["enabled"], true, "{status:#}");
    assert_eq!(status["watching"], true, "{status:#}");
    let id = status["bundles"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(status["bundles"][0]["held"], true, "{status:#}");
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "one");

    // A save is reloaded by the service's own watch and published.
    sandbox.write("pack/plugin.mjs", &source("two", false));
    let reloaded = client.notification("events/event");
    assert_eq!(reloaded["params"]["name"], "dev/reloaded", "{reloaded:#}");
    assert_eq!(reloaded["params"]["payload"]["id"], id.as_str());
    assert_eq!(reloaded["params"]["payload"]["ok"], true, "{reloaded:#}");
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "two");

    // A broken save is published with its diagnostics; the last good version keeps answering.
    std::fs::write(&manifest_path, "{ \"name\": ").unwrap();
    let refused = client.notification("events/event");
    assert_eq!(refused["params"]["payload"]["ok"], false, "{refused:#}");
    assert!(
        refused["params"]["payload"]["diagnostics"]
            .as_array()
            .is_some_and(|d| !d.is_empty()),
        "{refused:#}"
    );
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "two");

    // An explicit reload answers the status with the last reload's outcome.
    std::fs::write(&manifest_path, &manifest).unwrap();
    let _ = client.notification("events/event");
    sandbox.write("pack/plugin.mjs", &source("three", false));
    let status = client.ok("plugins/reloadDevelopment", json!({"id": id}));
    assert_eq!(status["lastReload"]["ok"], true, "{status:#}");
    assert_eq!(status["lastReload"]["plugins"], json!([id]), "{status:#}");
    wait_answer(&mut client, "hello.status", |r| r["answer"] == "three");

    // Ending developer mode removes the development bundle.
    let pid = runtime_pid(&mut client, &id).expect("the service runs the bundle");
    let status = client.ok("plugins/setDeveloperMode", json!({"enabled": false}));
    assert_eq!(status["enabled"], false, "{status:#}");
    assert_eq!(client.ok("plugins/list", json!({})), json!([]));
    wait_gone(pid);
    assert_eq!(development_marks(&sandbox), Vec::<String>::new());
    let refused = client.call("plugins/setDeveloperMode", json!({"enabled": true}));
    assert!(refused.get("error").is_some(), "{refused:#}");

    // The service's shutdown ends the developer mode it holds.
    client.ok(
        "plugins/setDeveloperMode",
        json!({"enabled": true, "path": pack}),
    );
    assert!(sandbox.plugins.join(&id).exists());
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
    assert!(!sandbox.plugins.join(&id).exists());
    assert_eq!(development_marks(&sandbox), Vec::<String>::new());
}
