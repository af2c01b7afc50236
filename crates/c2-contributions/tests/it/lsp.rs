//! Language servers: per-project resolution, conflicts, the built-in fallback, bundle-owned
//! lifetime and the project root as working directory (the bridge to an editor is c2-relay's).
//! The server is a small Python script speaking Content-Length framing.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_contributions::prelude::*;
use c2_contributions::{LanguageServer, Resolved, ServerOrigin};
use c2_host::{InstallOptions, StateChange, Target};
use c2_protocol::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, encode_content_length,
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::support::{Env, FixtureBundle, alive, gone};

const WAIT: Duration = Duration::from_secs(10);

/// Answers `initialize` with a fixed result and `test/echo` with what it was sent plus where and
/// how it runs; records its start in `$LS_MARKER` when set; exits on `exit` or end of input.
const SERVER: &str = r#"#!/usr/bin/env python3
import json, os, sys

if os.environ.get("LS_MARKER"):
    with open(os.environ["LS_MARKER"], "a") as marker:
        marker.write("%d\n" % os.getpid())

def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, value = line.decode().split(":", 1)
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return json.loads(sys.stdin.buffer.read(length))

def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()

while True:
    message = read()
    if message is None or message.get("method") == "exit":
        break
    if message.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"capabilities": {"hoverProvider": True},
                         "serverInfo": {"name": "echo-ls"}}})
    elif message.get("method") == "test/echo":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"params": message.get("params"), "cwd": os.getcwd(),
                         "pid": os.getpid(), "argv": sys.argv[1:],
                         "name": os.environ.get("LS_NAME")}})
"#;

fn write_server(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, SERVER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn language_servers(name: &str, languages: &[&str], marker: &Path) -> Value {
    json!([{
        "id": "echo",
        "languages": languages,
        "command": "bin/server",
        "args": ["--name", name, "two words"],
        "env": {"LS_NAME": name, "LS_MARKER": marker.to_str().unwrap()},
    }])
}

/// A bundle with only `languageServers` (no runtime) under `bundles/<name>`.
fn server_bundle(env: &Env, name: &str, languages: &[&str]) -> PathBuf {
    let dir = env.path("bundles").join(name);
    write_server(&dir.join("bin/server"));
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "languageServers": language_servers(name, languages, &marker(env, name)),
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

/// Where a bundle's server records that it started.
fn marker(env: &Env, name: &str) -> PathBuf {
    env.path(&format!("{name}.started"))
}

async fn install(env: &Env, dir: &Path, trust: bool) -> String {
    env.host
        .install(
            dir.to_str().unwrap(),
            InstallOptions::default()
                .with_trust(trust)
                .with_enable(true),
        )
        .await
        .unwrap()
        .record
        .id
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// Reads Content-Length frames from one stream, keeping what arrived past the last one.
struct FrameReader {
    decoder: ContentLengthDecoder,
    ready: VecDeque<Value>,
}

impl FrameReader {
    fn new() -> Self {
        Self {
            decoder: ContentLengthDecoder::new(ContentLengthOptions::default()),
            ready: VecDeque::new(),
        }
    }

    async fn next(&mut self, from: &mut (impl AsyncRead + Unpin)) -> Value {
        let mut chunk = vec![0u8; 4096];
        while self.ready.is_empty() {
            let read = tokio::time::timeout(WAIT, from.read(&mut chunk))
                .await
                .expect("the server answers in time")
                .unwrap();
            assert!(read > 0, "the stream ended before a frame arrived");
            let mut input = &chunk[..read];
            while let Some(event) = self.decoder.decode(&mut input).unwrap() {
                let ContentLengthEvent::Body(body) = event else {
                    panic!("unexpected {event:?}");
                };
                self.ready.push_back(serde_json::from_slice(&body).unwrap());
            }
        }
        self.ready.pop_front().unwrap()
    }
}

fn frame(message: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_content_length(
        message.to_string().as_bytes(),
        &ContentLengthOptions::default(),
        &mut out,
    )
    .unwrap();
    out
}

async fn send(to: &mut (impl AsyncWrite + Unpin), message: &Value) {
    to.write_all(&frame(message)).await.unwrap();
    to.flush().await.unwrap();
}

/// One request to a started server, and its response.
async fn request(server: &mut LanguageServer, id: u64, method: &str, params: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    send(server.stdin_mut(), &message).await;
    FrameReader::new().next(server.stdout_mut()).await
}

async fn ended_in_time(server: &LanguageServer) -> bool {
    tokio::time::timeout(WAIT, server.exited()).await.is_ok()
}

#[tokio::test]
async fn an_active_mapping_resolves_case_insensitively_and_its_server_runs_in_the_project_root() {
    let env = Env::new().await;
    let dir = server_bundle(&env, "zig-tools", &["Zig", "zon"]);
    let id = install(&env, &dir, true).await;
    let project = env.project("app");

    let mappings = env.host.language_servers(&project).unwrap();
    let languages: Vec<&str> = mappings.iter().map(|m| m.language.as_str()).collect();
    assert_eq!(languages, ["Zig", "zon"]);
    assert!(
        mappings
            .iter()
            .all(|m| m.bundle == id && m.server == "echo")
    );

    let Resolved::Plugin {
        bundle, program, ..
    } = env.host.resolve_language_server(&project, "ZIG").unwrap()
    else {
        panic!("a plugin provides zig");
    };
    assert_eq!(bundle, id);
    assert!(
        program.ends_with("bundle/bin/server"),
        "{}",
        program.display()
    );

    let mut server = env
        .host
        .start_language_server(&project, "zIg")
        .await
        .unwrap();
    assert_eq!(
        server.origin(),
        &ServerOrigin::Plugin {
            bundle: id.clone(),
            server: "echo".to_owned()
        }
    );
    let init = request(&mut server, 1, "initialize", json!({"processId": null})).await;
    assert_eq!(init["id"], json!(1));
    assert_eq!(init["result"]["serverInfo"]["name"], json!("echo-ls"));
    let echo = request(&mut server, 2, "test/echo", json!({"text": "hé"})).await;
    assert_eq!(echo["result"]["params"], json!({"text": "hé"}));
    assert_eq!(echo["result"]["cwd"], json!(canonical(&project)));
    assert_eq!(
        echo["result"]["argv"],
        json!(["--name", "zig-tools", "two words"])
    );
    assert_eq!(echo["result"]["name"], json!("zig-tools"));
    assert_eq!(echo["result"]["pid"], json!(server.pid()));

    let report = server.stop().await;
    assert!(!report.forced, "{report:?}");
    assert!(gone(server.pid(), WAIT).await);
    env.host.shutdown().await;
}

#[tokio::test]
async fn two_active_providers_fail_the_language_closed_until_one_is_disabled() {
    let env = Env::new().await;
    let first = install(&env, &server_bundle(&env, "zls-a", &["zig"]), true).await;
    let second = install(&env, &server_bundle(&env, "zls-b", &["Zig"]), true).await;
    let project = env.project("app");

    let error = env
        .host
        .resolve_language_server(&project, "zig")
        .unwrap_err();
    assert_eq!(error.kind(), "language_conflict");
    let message = error.to_string();
    assert!(
        message.contains(&first) && message.contains(&second),
        "{message}"
    );
    assert!(message.contains("policy"), "{message}");
    let error = env
        .host
        .start_language_server(&project, "ZIG")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "language_conflict");
    assert!(!marker(&env, "zls-a").exists() && !marker(&env, "zls-b").exists());

    env.host
        .set_state(&first, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    let Resolved::Plugin { bundle, .. } =
        env.host.resolve_language_server(&project, "zig").unwrap()
    else {
        panic!("the remaining plugin provides zig");
    };
    assert_eq!(bundle, second);
    let server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    assert_eq!(
        server.origin(),
        &ServerOrigin::Plugin {
            bundle: second,
            server: "echo".to_owned()
        }
    );
    server.stop().await;
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_plugin_mapping_beats_the_builtin_one_and_the_builtin_serves_the_rest() {
    let env = Env::new().await;
    let id = install(&env, &server_bundle(&env, "zls", &["zig"]), true).await;
    // Run by the interpreter rather than exec'd: a script written just now could still be held
    // open for writing by a child another test forked meanwhile (ETXTBSY).
    let script = env.path("builtin/server.py");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, SERVER).unwrap();
    let script = script.to_str().unwrap().to_owned();
    env.host
        .register_builtin_language_server("zig", "python3", vec![script.clone()])
        .unwrap();
    env.host
        .register_builtin_language_server("Rust", "python3", vec![script, "--builtin".to_owned()])
        .unwrap();
    let project = env.project("app");

    let Resolved::Plugin { bundle, .. } =
        env.host.resolve_language_server(&project, "Zig").unwrap()
    else {
        panic!("the plugin wins over the built-in zig mapping");
    };
    assert_eq!(bundle, id);
    let Resolved::BuiltIn(rust) = env.host.resolve_language_server(&project, "rust").unwrap()
    else {
        panic!("no plugin maps rust");
    };
    assert_eq!(rust.program, Path::new("python3"));

    let mut server = env
        .host
        .start_language_server(&project, "RUST")
        .await
        .unwrap();
    assert_eq!(server.origin(), &ServerOrigin::BuiltIn);
    let echo = request(&mut server, 7, "test/echo", json!([])).await;
    assert_eq!(echo["result"]["cwd"], json!(canonical(&project)));
    assert_eq!(echo["result"]["argv"], json!(["--builtin"]));

    let error = env
        .host
        .resolve_language_server(&project, "cobol")
        .unwrap_err();
    assert_eq!(error.kind(), "unsupported");

    // A built-in server is stopped with the host as well.
    let pid = server.pid();
    env.host.shutdown().await;
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);
}

#[tokio::test]
async fn disabling_the_bundle_terminates_its_live_server() {
    let env = Env::new().await;
    let id = install(&env, &server_bundle(&env, "zls", &["zig"]), true).await;
    let project = env.project("app");
    let mut server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    request(&mut server, 1, "initialize", json!({})).await;
    let pid = server.pid();
    assert!(alive(pid));

    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);
    let error = env
        .host
        .resolve_language_server(&project, "zig")
        .unwrap_err();
    assert_eq!(error.kind(), "unsupported");
    assert!(error.to_string().contains(&id), "{error}");
    env.host.shutdown().await;
}

#[tokio::test]
async fn untrusting_or_uninstalling_the_bundle_terminates_its_live_server() {
    let env = Env::new().await;
    let id = install(&env, &server_bundle(&env, "zls", &["zig"]), true).await;
    let project = env.project("app");
    let server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    let pid = server.pid();
    env.host.untrust(&id).await.unwrap();
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);

    env.host.trust(&id).await.unwrap();
    let server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    let pid = server.pid();
    env.host.uninstall(&id).await.unwrap();
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);
    env.host.shutdown().await;
}

#[tokio::test]
async fn replacing_the_bundle_terminates_the_server_of_the_old_content() {
    let env = Env::new().await;
    let dir = server_bundle(&env, "zls", &["zig"]);
    let id = install(&env, &dir, true).await;
    let project = env.project("app");
    let server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    let pid = server.pid();
    std::fs::write(dir.join("README.md"), "changed\n").unwrap();
    assert_eq!(install(&env, &dir, true).await, id);
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);
    env.host.shutdown().await;
}

#[tokio::test]
async fn an_untrusted_bundles_server_never_starts() {
    let env = Env::new().await;
    let id = install(&env, &server_bundle(&env, "zls", &["zig"]), false).await;
    let project = env.project("app");
    assert!(env.host.language_servers(&project).unwrap().is_empty());
    let error = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "unsupported");
    assert!(error.to_string().contains(&id), "{error}");
    assert!(!marker(&env, "zls").exists());
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_project_capable_bundle_disabled_in_one_project_stops_only_that_projects_server() {
    let env = Env::new().await;
    let dir = FixtureBundle::new("scoped-ls")
        .commands(&["fixture.echo"])
        .project_capable()
        .write(&env.path("bundles"));
    write_server(&dir.join("bin/server"));
    let path = dir.join("plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["extensions"]["dev.codetwo"]["languageServers"] =
        language_servers("scoped-ls", &["zig"], &marker(&env, "scoped-ls"));
    std::fs::write(&path, manifest.to_string()).unwrap();
    let id = env.install_ready(&dir).await;
    let a = env.project("a");
    let b = env.project("b");
    let in_a = env.host.start_language_server(&a, "zig").await.unwrap();
    let mut in_b = env.host.start_language_server(&b, "zig").await.unwrap();

    env.host
        .set_state(&id, &Target::Project(a.clone()), StateChange::Disable)
        .await
        .unwrap();
    assert!(ended_in_time(&in_a).await);
    assert!(gone(in_a.pid(), WAIT).await);
    assert_eq!(
        env.host
            .resolve_language_server(&a, "zig")
            .unwrap_err()
            .kind(),
        "unsupported"
    );
    let echo = request(&mut in_b, 1, "test/echo", json!(null)).await;
    assert_eq!(echo["result"]["cwd"], json!(canonical(&b)));
    assert!(in_b.try_exit().is_none());
    in_b.stop().await;
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_missing_server_command_is_worded_as_a_language_server() {
    let env = Env::new().await;
    let dir = env.path("bundles").join("absent-ls");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "absent-ls",
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "languageServers": [{"id": "zls", "languages": ["zig"], "command": "c2-no-such-language-server"}],
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let id = install(&env, &dir, true).await;
    let error = env
        .host
        .start_language_server(&env.project("app"), "zig")
        .await
        .unwrap_err();
    let message = error.to_string();
    assert_eq!(error.kind(), "activation_failed");
    assert!(
        message.contains(&format!("{id}: the language server `zls` for `zig`"))
            && message.contains("`c2-no-such-language-server`")
            && message.contains("PATH")
            && !message.contains("runtime command"),
        "{message}"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn disabling_one_provider_in_a_project_resolves_the_conflict_there_only() {
    let env = Env::new().await;
    let first = install(&env, &server_bundle(&env, "zls-a", &["zig"]), true).await;
    let second = install(&env, &server_bundle(&env, "zls-b", &["Zig"]), true).await;
    env.host
        .register_builtin_language_server("zig", "python3", vec!["-c".to_owned()])
        .unwrap();
    let app = env.project("app");
    let other = env.project("other");

    let listing = env
        .host
        .language_listing(&Target::Project(app.clone()))
        .unwrap();
    let zig = &listing.languages[0];
    assert!(zig.conflict && zig.winner.is_none(), "{zig:?}");
    assert_eq!(zig.providers.len(), 2);
    assert!(zig.builtin.is_some(), "the built-in mapping is listed");

    env.host
        .set_state(&second, &Target::Project(app.clone()), StateChange::Disable)
        .await
        .unwrap();
    let listing = env
        .host
        .language_listing(&Target::Project(app.clone()))
        .unwrap();
    let zig = &listing.languages[0];
    assert!(!zig.conflict, "{zig:?}");
    assert_eq!(
        zig.winner,
        Some(ServerOrigin::Plugin {
            bundle: first.clone(),
            server: "echo".to_owned()
        })
    );
    assert_eq!(zig.inactive[0].bundle, second);
    let server = env.host.start_language_server(&app, "zig").await.unwrap();
    assert_eq!(
        server.origin(),
        &ServerOrigin::Plugin {
            bundle: first.clone(),
            server: "echo".to_owned()
        }
    );

    // Elsewhere, and user-wide, both stay enabled: the conflict stands there.
    assert_eq!(
        env.host
            .resolve_language_server(&other, "zig")
            .unwrap_err()
            .kind(),
        "language_conflict"
    );
    let user = env.host.language_listing(&Target::User).unwrap();
    assert!(user.languages[0].conflict);
    assert!(user.servers.iter().all(|s| s.active), "{user:?}");
    let status = env.host.list();
    assert!(
        status.iter().all(|s| s.enabled),
        "user-wide enablement stays"
    );

    // Disabling the winner in that project stops its server there; the other takes over.
    let pid = server.pid();
    env.host
        .set_state(&first, &Target::Project(app.clone()), StateChange::Disable)
        .await
        .unwrap();
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);
    env.host
        .set_state(&second, &Target::Project(app.clone()), StateChange::Inherit)
        .await
        .unwrap();
    let Resolved::Plugin { bundle, .. } = env.host.resolve_language_server(&app, "zig").unwrap()
    else {
        panic!("a plugin mapping wins");
    };
    assert_eq!(bundle, second);
    env.host.shutdown().await;
}

#[tokio::test]
async fn dropping_a_live_server_kills_it() {
    let env = Env::new().await;
    install(&env, &server_bundle(&env, "zls", &["zig"]), true).await;
    let project = env.project("app");
    let server = env
        .host
        .start_language_server(&project, "zig")
        .await
        .unwrap();
    let pid = server.pid();
    assert!(alive(pid));
    server.stop().await;
    assert!(gone(pid, WAIT).await);
    env.host.shutdown().await;
}

/// A fixture-runtime bundle whose runtime is user-only and that also maps `languages`.
fn user_only_runtime_with_server(env: &Env, name: &str, languages: &[&str]) -> PathBuf {
    let dir = FixtureBundle::new(name)
        .commands(&["fixture.info"])
        .write(&env.path("bundles"));
    write_server(&dir.join("bin/server"));
    let path = dir.join("plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        manifest["extensions"]["dev.codetwo"]["runtime"]["scopeSupport"],
        json!(["user"])
    );
    manifest["extensions"]["dev.codetwo"]["languageServers"] =
        language_servers(name, languages, &marker(env, name));
    std::fs::write(&path, manifest.to_string()).unwrap();
    dir
}

#[tokio::test]
async fn a_bundle_with_a_user_only_runtime_can_leave_a_conflict_in_one_project() {
    let env = Env::new().await;
    let plain = install(&env, &server_bundle(&env, "zls-plain", &["zig"]), true).await;
    let runtime = env
        .install_ready(&user_only_runtime_with_server(&env, "zls-rt", &["zig"]))
        .await;
    let app = env.project("app");
    let other = env.project("other");
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let user_pid = crate::support::pid_of(&info);
    assert_eq!(
        env.host
            .resolve_language_server(&app, "zig")
            .unwrap_err()
            .kind(),
        "language_conflict"
    );

    // Accepted for the project although the runtime is user-only, and said so.
    let applied = env
        .host
        .set_state(
            &runtime,
            &Target::Project(app.clone()),
            StateChange::Disable,
        )
        .await
        .unwrap();
    let module = format!("bundle:{runtime}");
    assert_eq!(applied.impact.stops, std::slice::from_ref(&module));
    assert_eq!(applied.impact.user_runtimes, std::slice::from_ref(&module));
    let row = env
        .host
        .catalog(&Target::Project(app.clone()))
        .unwrap()
        .into_iter()
        .find(|row| row.entry.name == module)
        .expect("the bundle is in the project catalog");
    assert!(!row.enabled);
    assert_eq!(row.runtime_scopes, Some(vec!["user".to_owned()]));
    let server = env.host.start_language_server(&app, "zig").await.unwrap();
    assert_eq!(
        server.origin(),
        &ServerOrigin::Plugin {
            bundle: plain.clone(),
            server: "echo".to_owned()
        }
    );
    // Elsewhere and user-wide the conflict stands; the user-wide enablement stays.
    assert_eq!(
        env.host
            .resolve_language_server(&other, "zig")
            .unwrap_err()
            .kind(),
        "language_conflict"
    );
    assert!(
        env.host.language_listing(&Target::User).unwrap().languages[0].conflict,
        "user-wide the conflict stands"
    );
    assert!(env.host.list().iter().all(|s| s.enabled));

    // The runtime keeps its one user-realm process: the user realm and a project that does
    // not disable it are answered by it (the kernel's fallback, no project process); the
    // project that disables it is refused, not answered by the user realm's process.
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(crate::support::pid_of(&info), user_pid);
    assert_eq!(info["projectPath"], Value::Null);
    let elsewhere = env
        .host
        .invoke(&Target::Project(other.clone()), "fixture.info", json!({}))
        .await
        .unwrap();
    assert_eq!(crate::support::pid_of(&elsewhere), user_pid);
    assert_eq!(elsewhere["projectPath"], Value::Null);
    let blocked = env
        .host
        .invoke(&Target::Project(app.clone()), "fixture.info", json!({}))
        .await
        .unwrap_err();
    assert_eq!(blocked.kind(), "blocked", "{blocked}");
    assert!(alive(user_pid));

    // Enabling it for the project again brings the conflict back there.
    let applied = env
        .host
        .set_state(&runtime, &Target::Project(app.clone()), StateChange::Enable)
        .await
        .unwrap();
    assert_eq!(applied.impact.user_runtimes, std::slice::from_ref(&module));
    assert_eq!(
        env.host
            .resolve_language_server(&app, "zig")
            .unwrap_err()
            .kind(),
        "language_conflict"
    );
    let info = env
        .host
        .invoke(&Target::Project(app.clone()), "fixture.info", json!({}))
        .await
        .unwrap();
    assert_eq!(crate::support::pid_of(&info), user_pid);
    server.stop().await;
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_user_only_runtimes_server_lives_in_the_project_and_stops_with_its_disable_there() {
    let env = Env::new().await;
    let runtime = env
        .install_ready(&user_only_runtime_with_server(&env, "zls-rt", &["zig"]))
        .await;
    let app = env.project("app");
    let server = env.host.start_language_server(&app, "zig").await.unwrap();
    let pid = server.pid();
    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    let user_pid = crate::support::pid_of(&info);
    env.host
        .set_state(
            &runtime,
            &Target::Project(app.clone()),
            StateChange::Disable,
        )
        .await
        .unwrap();
    assert!(ended_in_time(&server).await);
    assert!(gone(pid, WAIT).await);
    assert!(alive(user_pid), "the user realm's runtime keeps running");

    let info = env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(crate::support::pid_of(&info), user_pid);
    // A user-wide change is the runtime's own: it stops the process, and names no user runtime.
    let user_wide = env
        .host
        .set_state(&runtime, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert_eq!(user_wide.impact.stops, [format!("bundle:{runtime}")]);
    assert!(user_wide.impact.user_runtimes.is_empty(), "{user_wide:?}");
    assert!(gone(user_pid, WAIT).await);
    env.host.shutdown().await;
}
