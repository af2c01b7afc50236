//! The kill switch end to end: `c2-plugins block` stops a running plugin in another live host
//! within a second and `unblock` lets it load again; a blocked name is refused at install with
//! nothing stored; a managed entry survives the user's unblock; a managed allow list of git
//! hosts refuses a source from another host before anything is fetched.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::multihost::{
    FIXTURE, PROPAGATION, alive, cli_ok, fixture_bundle, has_command, open_host, runtime,
    runtime_pid, within,
};
use crate::sources::stored;
use crate::{Run, Sandbox};

/// Runs `c2-plugins ARGS` with `C2_PLUGINS_MANAGED_POLICY` naming `managed`.
fn run_managed(sandbox: &Sandbox, managed: &Path, args: &[&str]) -> Run {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the built binary with the managed policy variable set"
    )]
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
    let output = command
        .args(args)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("C2_PLUGINS_MANAGED_POLICY", managed)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// A managed policy file outside the store.
fn managed_file(sandbox: &Sandbox, policy: &Value) -> PathBuf {
    sandbox.write("admin/managed-policy.json", &policy.to_string())
}

fn listed_state(sandbox: &Sandbox, id: &str) -> Value {
    let run = sandbox.run(&["--format", "json", "list"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let all = run.json()["result"].clone();
    all.as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_blocked_digest_stops_a_running_plugin_in_another_live_host_within_a_second() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "sleeper", &FIXTURE);
    let run = sandbox.run(&[
        "--format",
        "json",
        "install",
        bundle.to_str().unwrap(),
        "--trust",
        "--enable",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let id = run.json()["result"]["id"].as_str().unwrap().to_owned();
    let digest = run.json()["result"]["digest"].as_str().unwrap().to_owned();
    let rt = runtime();
    let host = open_host(&rt, &sandbox);
    let mut slowest = Duration::ZERO;
    for round in 0..5 {
        let pid = runtime_pid(&rt, &host);
        let reason = format!("round {round}: malicious update");
        cli_ok(&sandbox, &["block", "digest", &digest, "--reason", &reason]);
        let took = within(
            PROPAGATION,
            "block stops the runtime in the live host",
            || !alive(pid) && !has_command(&host, "fixture.info"),
        );
        assert!(took < Duration::from_secs(1), "round {round}: {took:?}");
        slowest = slowest.max(took);
        // Shown as blocked with the entry that matched, here and in the CLI's listing.
        let status = host.list().into_iter().find(|s| s.id == id).unwrap();
        assert_eq!(status.state.as_str(), "blocked", "round {round}");
        let why = status.reason.unwrap_or_default();
        assert!(why.contains(&format!("digest `{digest}`")), "{why}");
        assert!(why.contains(&reason), "{why}");
        let row = listed_state(&sandbox, &id);
        assert_eq!(row["state"], "blocked", "{row}");
        assert_eq!(
            (row["trusted"].clone(), row["enabled"].clone()),
            (json!(true), json!(true))
        );
        // A call now is refused, naming the entry; unblocking brings it back with trust and
        // enablement unchanged.
        let refused = rt
            .block_on(host.invoke(&c2_host::Target::User, "fixture.info", json!({})))
            .unwrap_err();
        assert_eq!(refused.kind(), c2_host::ErrorKind::Denied, "{refused}");
        assert!(
            refused.to_string().contains("on the user deny list"),
            "{refused}"
        );
        assert!(
            refused.hint().unwrap().contains("block --list"),
            "{refused}"
        );
        cli_ok(&sandbox, &["unblock", "digest", &digest]);
        within(PROPAGATION, "unblock brings the commands back", || {
            has_command(&host, "fixture.info")
        });
        assert_eq!(listed_state(&sandbox, &id)["state"], "ready");
    }
    eprintln!("slowest block propagation: {slowest:?}");
    rt.block_on(host.shutdown());
}

#[test]
fn block_by_name_refuses_install_and_stores_nothing() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "typosquat", &FIXTURE);
    let run = sandbox.run(&["block", "name", "typosquat", "--reason", "lookalike name"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("blocked name `typosquat`"), "{run:#?}");
    let run = sandbox.run(&["--format", "json", "install", bundle.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:#?}");
    let error = &run.json()["error"];
    assert_eq!(error["kind"], "denied", "{run:#?}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("name `typosquat` on the user deny list (lookalike name)"),
        "{message}"
    );
    assert!(message.contains("nothing was stored"), "{message}");
    assert!(
        error["hint"].as_str().unwrap().contains("block --list"),
        "{run:#?}"
    );
    assert_eq!(stored(&sandbox), Vec::<String>::new());
    // Listed, then gone: the install goes through.
    let list = sandbox.run(&["--format", "json", "block", "--list"]);
    assert_eq!(
        list.json()["result"]["deny"][0]["value"],
        "typosquat",
        "{list:#?}"
    );
    assert_eq!(
        list.json()["result"]["deny"][0]["origin"],
        "user",
        "{list:#?}"
    );
    cli_ok(&sandbox, &["unblock", "name", "typosquat"]);
    let run = sandbox.run(&["unblock", "name", "typosquat"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("not on the deny list"), "{run:#?}");
    cli_ok(&sandbox, &["install", bundle.to_str().unwrap()]);
    assert_eq!(stored(&sandbox).len(), 1);
}

#[test]
fn a_managed_entry_survives_the_users_unblock() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "sleeper", &FIXTURE);
    let managed = managed_file(
        &sandbox,
        &json!({"schemaVersion": 1, "deny": [{"kind": "name", "value": "sleeper", "reason": "incident 42"}]}),
    );
    let run = run_managed(
        &sandbox,
        &managed,
        &["--format", "json", "unblock", "name", "sleeper"],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(run.json()["error"]["kind"], "managed_entry", "{run:#?}");
    assert!(
        run.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("managed deny list"),
        "{run:#?}"
    );
    // The user blocking and unblocking the same entry leaves the managed one in force.
    let run = run_managed(&sandbox, &managed, &["block", "name", "sleeper"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let run = run_managed(&sandbox, &managed, &["unblock", "name", "sleeper"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let run = run_managed(&sandbox, &managed, &["block", "--list"]);
    assert!(
        run.stdout
            .contains("managed  name       sleeper incident 42"),
        "{run:#?}"
    );
    let run = run_managed(
        &sandbox,
        &managed,
        &["--format", "json", "install", bundle.to_str().unwrap()],
    );
    assert_eq!(run.json()["error"]["kind"], "denied", "{run:#?}");
    assert!(
        run.stdout.contains("managed deny list (incident 42)"),
        "{run:#?}"
    );
    assert_eq!(stored(&sandbox), Vec::<String>::new());
    // The refused unblock changed nothing: the user's own entry is still there, and only
    // without the managed file can the user remove it and install.
    let run = sandbox.run(&["block", "--list"]);
    assert_eq!(run.stdout.trim(), "user     name       sleeper", "{run:#?}");
    cli_ok(&sandbox, &["unblock", "name", "sleeper"]);
    let run = sandbox.run(&["block", "--list"]);
    assert_eq!(run.stdout.trim(), "deny list: empty", "{run:#?}");
    cli_ok(&sandbox, &["install", bundle.to_str().unwrap()]);
}

#[test]
fn a_managed_allow_list_refuses_a_git_source_from_another_host() {
    let sandbox = Sandbox::new();
    let managed = managed_file(
        &sandbox,
        &json!({"schemaVersion": 1, "allow": {"gitHosts": ["git.corp.example"]}}),
    );
    // Refused before anything is fetched: the host is never contacted.
    let run = run_managed(
        &sandbox,
        &managed,
        &[
            "--format",
            "json",
            "install",
            "git+https://github.com/example/tool.git#main",
        ],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        run.json()["error"]["kind"],
        "source_not_allowed",
        "{run:#?}"
    );
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("git host `github.com`"), "{message}");
    assert!(message.contains("git.corp.example"), "{message}");
    // A local repository has no host at all, so it is outside the list too.
    let repo = sandbox.work.join("repo");
    let files: Vec<(&str, String)> = crate::HELLO_RUNTIME_FILES
        .iter()
        .map(|f| {
            (
                *f,
                std::fs::read_to_string(crate::pack("hello-runtime").join(f)).unwrap(),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(f, t)| (*f, t.as_str())).collect();
    crate::git_repo(&repo, &files);
    let source = format!("git+file://{}#main", repo.display());
    let run = run_managed(
        &sandbox,
        &managed,
        &["--format", "json", "install", &source],
    );
    assert_eq!(
        run.json()["error"]["kind"],
        "source_not_allowed",
        "{run:#?}"
    );
    assert_eq!(stored(&sandbox), Vec::<String>::new());
    // The same source installs without the managed policy.
    cli_ok(&sandbox, &["install", &source]);
    assert_eq!(stored(&sandbox).len(), 1);
}

#[test]
fn a_managed_file_replaced_by_an_administrator_stops_the_plugin_in_a_live_host() {
    let sandbox = Sandbox::new();
    let bundle = fixture_bundle(&sandbox, "sleeper", &FIXTURE);
    let managed = managed_file(&sandbox, &json!({"schemaVersion": 1}));
    let run = sandbox.run(&[
        "--format",
        "json",
        "install",
        bundle.to_str().unwrap(),
        "--trust",
        "--enable",
    ]);
    let digest = run.json()["result"]["digest"].as_str().unwrap().to_owned();
    let rt = runtime();
    let mut options = c2_host::HostOptions::new(&sandbox.plugins);
    options.working_dir = Some(sandbox.work.clone());
    options.policy.managed_policy = Some(managed.clone());
    let host = rt.block_on(c2_contributions::open(options)).unwrap();
    let pid = runtime_pid(&rt, &host);
    // Written beside and renamed into place, as an administrator's tool does.
    let policy = json!({"schemaVersion": 1, "deny": [{"kind": "digest", "value": &digest[..16]}]});
    let temp = managed.with_extension("tmp");
    std::fs::write(&temp, policy.to_string()).unwrap();
    std::fs::rename(&temp, &managed).unwrap();
    let took = within(PROPAGATION, "the managed entry stops the runtime", || {
        !alive(pid) && !has_command(&host, "fixture.info")
    });
    assert!(took < Duration::from_secs(1), "{took:?}");
    let status = host.list().into_iter().next().unwrap();
    assert_eq!(status.state.as_str(), "blocked");
    assert!(status.reason.unwrap().contains("managed deny list"));
    // Edited in place back to no entries: the bundle loads again.
    std::fs::write(&managed, json!({"schemaVersion": 1}).to_string()).unwrap();
    within(PROPAGATION, "the edit brings the commands back", || {
        has_command(&host, "fixture.info")
    });
    rt.block_on(host.shutdown());
}

fn bundle_json(name: &str, version: &str) -> String {
    json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
           "name": name, "version": version,
           "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
    .to_string()
}

fn publish(sandbox: &Sandbox, version: &str) {
    sandbox.write("hub/delta/plugin.json", &bundle_json("delta", version));
    let entry =
        json!({"name": "delta", "version": version, "source": {"kind": "local", "path": "delta"}});
    let catalog = json!({"standardVersion": "1.0.0", "name": "cli-hub", "plugins": [entry]});
    sandbox.write("hub/marketplace.json", &catalog.to_string());
}

#[test]
fn an_update_to_blocked_content_or_from_a_catalog_off_the_allow_list_is_refused() {
    let sandbox = Sandbox::new();
    publish(&sandbox, "1.0.0");
    let catalog = sandbox.work.join("hub/marketplace.json");
    cli_ok(&sandbox, &["marketplace", "add", catalog.to_str().unwrap()]);
    let id = cli_ok(&sandbox, &["install", "delta"]).trim().to_owned();
    // The next version is known bad before it is published: its digest is blocked.
    publish(&sandbox, "1.1.0");
    let dir = sandbox.work.join("hub/delta");
    let validated = sandbox.run(&["--format", "json", "validate", dir.to_str().unwrap()]);
    let digest = validated.json()["results"][0]["digest"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{validated:#?}"));
    cli_ok(
        &sandbox,
        &["block", "digest", &digest, "--reason", "sleeper update"],
    );
    let update = sandbox.run(&["--format", "json", "update", &id]);
    assert_eq!(update.code, 1, "{update:#?}");
    assert_eq!(update.json()["error"]["kind"], "denied", "{update:#?}");
    assert!(update.stdout.contains("(sleeper update)"), "{update:#?}");
    // The old version is left as it was (installed without trust), not blocked.
    let row = listed_state(&sandbox, &id);
    assert_eq!(
        (row["version"].clone(), row["state"].clone()),
        (json!("1.0.0"), json!("untrusted"))
    );
    // A managed allow list of catalogs that does not name this one refuses it, storing nothing.
    let managed = managed_file(
        &sandbox,
        &json!({"schemaVersion": 1, "allow": {"catalogs": ["corp"]}}),
    );
    cli_ok(&sandbox, &["unblock", "digest", &digest]);
    let refused = run_managed(&sandbox, &managed, &["--format", "json", "update", &id]);
    assert_eq!(
        refused.json()["error"]["kind"],
        "source_not_allowed",
        "{refused:#?}"
    );
    assert!(refused.stdout.contains("catalog `cli-hub`"), "{refused:#?}");
    assert_eq!(listed_state(&sandbox, &id)["version"], "1.0.0");
    let allowed = managed_file(
        &sandbox,
        &json!({"schemaVersion": 1, "allow": {"catalogs": ["cli-hub"]}}),
    );
    let run = run_managed(&sandbox, &allowed, &["update", &id]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(listed_state(&sandbox, &id)["version"], "1.1.0");
}
