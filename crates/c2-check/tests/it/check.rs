//! `check_bundle` against real runtimes: the packs pass, and each misbehaviour of the fixture
//! fails the one check it breaks, saying what to fix.

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_check::{CheckItem, CheckOptions, CheckReport, check_bundle};
use serde_json::json;

use c2_testkit::bundles::{FixtureBundle, gone};

fn pack(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs")
        .join(name)
}

/// Copies a flat pack into `parent` so a test may add files beside its manifest.
fn copy_pack(name: &str, parent: &Path) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for file in [
        "plugin.json",
        "plugin.py",
        "c2_plugin_sdk.py",
        "plugin.mjs",
        "c2-plugin-sdk.mjs",
        "README.md",
    ] {
        let from = pack(name).join(file);
        if from.exists() {
            std::fs::copy(&from, dir.join(file)).unwrap();
        }
    }
    dir
}

/// A fixture bundle with two harmless commands (the fixture's full set includes `fixture.crash`,
/// which a check would invoke with `{}`).
fn fixture(parent: &Path, name: &str, modes: &str) -> PathBuf {
    FixtureBundle::new(name)
        .commands(&["fixture.echo", "fixture.info"])
        .modes(modes)
        .write(parent)
}

async fn check(dir: &Path) -> CheckReport {
    check_with(dir, CheckOptions::default()).await
}

async fn check_with(dir: &Path, options: CheckOptions) -> CheckReport {
    check_bundle(dir, &options).await.unwrap()
}

fn item<'r>(report: &'r CheckReport, name: &str) -> &'r CheckItem {
    report
        .checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check named {name:?} in {report:#?}"))
}

fn failed(report: &CheckReport) -> Vec<&str> {
    report
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| c.name.as_str())
        .collect()
}

#[tokio::test]
async fn a_well_behaved_fixture_passes_every_check() {
    let root = tempfile::tempdir().unwrap();
    let report = check(&fixture(root.path(), "good", "")).await;
    assert!(report.ok, "{report:#?}");
    for name in [
        "bundle",
        "spawn",
        "handshake",
        "protocol version",
        "commands",
        "invoke fixture.echo",
        "invoke fixture.info",
        "exit on stdin EOF",
        "stdout",
    ] {
        assert!(item(&report, name).pass, "{name}: {report:#?}");
    }
}

#[tokio::test]
async fn the_node_and_python_packs_pass() {
    for name in ["hello-runtime", "hello-python"] {
        let report = check(&pack(name)).await;
        assert!(report.ok, "{name}: {report:#?}");
    }
}

#[tokio::test]
async fn a_callback_during_check_gets_the_stub_error_and_is_reported() {
    let report = check(&pack("hello-runtime")).await;
    let invoke = item(&report, "invoke hello.status");
    assert!(invoke.pass, "{report:#?}");
    assert!(
        invoke
            .detail
            .contains("git.status is not available during `c2-plugins check`"),
        "{invoke:?}"
    );
    assert!(
        invoke.detail.contains("it called `git.status`"),
        "{invoke:?}"
    );
}

#[tokio::test]
async fn a_banner_on_stdout_fails_the_stdout_check_with_the_line_and_the_fix() {
    let root = tempfile::tempdir().unwrap();
    let report = check(&fixture(root.path(), "banner", "banner")).await;
    assert!(!report.ok);
    assert_eq!(failed(&report), ["stdout"], "{report:#?}");
    let stdout = item(&report, "stdout");
    assert!(
        stdout
            .detail
            .contains("1 non-protocol line(s): `c2-fixture banner"),
        "{stdout:?}"
    );
    assert!(
        stdout
            .detail
            .contains("write logs to stderr or use the log notification"),
        "{stdout:?}"
    );
}

#[tokio::test]
async fn a_schema_that_drifts_from_the_manifest_fails_the_commands_check() {
    let root = tempfile::tempdir().unwrap();
    let report = check(&fixture(root.path(), "drift", "schema-drift")).await;
    assert_eq!(failed(&report), ["commands"], "{report:#?}");
    let commands = item(&report, "commands");
    assert!(
        commands.detail.contains("`fixture.echo` has schema")
            && commands.detail.contains("but no argsSchema in plugin.json"),
        "{commands:?}"
    );
    assert!(
        commands
            .detail
            .contains("confirm exactly the ids and argsSchemas of plugin.json"),
        "{commands:?}"
    );
}

#[tokio::test]
async fn a_runtime_that_ignores_stdin_eof_fails_and_is_killed() {
    let root = tempfile::tempdir().unwrap();
    let report = check(&fixture(root.path(), "stubborn", "ignore-stdin-eof")).await;
    assert_eq!(failed(&report), ["exit on stdin EOF"], "{report:#?}");
    let exit = item(&report, "exit on stdin EOF");
    assert!(
        exit.detail.contains("exit when stdin reaches EOF"),
        "{exit:?}"
    );
    let spawn = item(&report, "spawn");
    let pid: u32 = spawn
        .detail
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap();
    assert!(
        gone(pid, Duration::from_secs(10)).await,
        "the fixture outlived its check"
    );
}

#[tokio::test]
async fn a_missed_handshake_fails_within_the_configured_timeout() {
    let root = tempfile::tempdir().unwrap();
    let options = CheckOptions::default().with_handshake_timeout(Duration::from_millis(300));
    let report = check_with(&fixture(root.path(), "silent", "no-init"), options).await;
    assert!(!report.ok);
    let handshake = item(&report, "handshake");
    assert!(!handshake.pass);
    assert!(
        handshake
            .detail
            .contains("no answer to initialize within 300ms"),
        "{handshake:?}"
    );
    assert!(
        !report.checks.iter().any(|c| c.name.starts_with("invoke")),
        "{report:#?}"
    );
}

#[tokio::test]
async fn example_args_are_invoked_and_an_example_outside_the_schema_fails() {
    let root = tempfile::tempdir().unwrap();
    let dir = copy_pack("hello-python", root.path());
    std::fs::write(
        dir.join(c2_check::EXAMPLES_FILE),
        json!({"hello-python.greet": [{"name": "Ada"}, {"name": 5}]}).to_string(),
    )
    .unwrap();
    let report = check(&dir).await;
    assert!(item(&report, "examples.json").pass, "{report:#?}");
    let good = item(&report, r#"invoke hello-python.greet {"name":"Ada"}"#);
    assert!(good.pass && good.detail.contains("Ada"), "{good:?}");
    assert_eq!(
        failed(&report),
        [r#"invoke hello-python.greet {"name":5}"#],
        "{report:#?}"
    );
    let bad = item(&report, r#"invoke hello-python.greet {"name":5}"#);
    assert!(
        bad.detail
            .contains("does not match the command's argsSchema at `/name`"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn an_examples_file_naming_an_undeclared_command_fails() {
    let root = tempfile::tempdir().unwrap();
    let dir = copy_pack("hello-python", root.path());
    std::fs::write(
        dir.join(c2_check::EXAMPLES_FILE),
        json!({"hello-python.nope": [{}]}).to_string(),
    )
    .unwrap();
    let report = check(&dir).await;
    assert_eq!(failed(&report), ["examples.json"], "{report:#?}");
    assert!(
        item(&report, "examples.json")
            .detail
            .contains("hello-python.nope"),
        "{report:#?}"
    );
}

#[tokio::test]
async fn an_invalid_bundle_fails_before_anything_is_spawned() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("broken");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("plugin.json"), "{\"name\": 3}").unwrap();
    let report = check(&dir).await;
    assert!(!report.ok);
    assert_eq!(report.checks.len(), 1, "{report:#?}");
    assert!(!item(&report, "bundle").pass);
    assert!(
        item(&report, "bundle").detail.contains("plugin.json"),
        "{report:#?}"
    );
}

#[tokio::test]
async fn an_unreadable_path_is_an_error_not_a_report() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nowhere");
    assert!(
        check_bundle(&missing, &CheckOptions::default())
            .await
            .is_err()
    );
}
