//! The check against a runtime that fights back on the wire: the hostile Python runtime of the
//! c2-host tests, one misbehaviour per check run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

/// How long a check may take on a loaded 2-core machine, with an unoptimized build decoding
/// 8 MiB frames.
const ANSWER_BOUND: Duration = Duration::from_secs(30);

/// The hostile runtime: `hostile.go {"mode": ...}` misbehaves as asked.
const HOSTILE_PY: &str = include_str!("../../../c2-host/tests/it/hostile.py");

/// Writes the hostile bundle `name` under `parent`, declaring `hostile.go`.
fn hostile_bundle(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hostile.py"), HOSTILE_PY).unwrap();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [{"id": "hostile.go", "title": "Misbehave"}],
            "runtime": {"command": "python3", "args": ["hostile.py"], "scopeSupport": ["user"]}
        }}
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    dir
}

/// `c2-plugins check` with `hostile.go` invoked once in `mode`.
async fn check_mode(parent: &Path, mode: &str) -> c2_check::CheckReport {
    let dir = hostile_bundle(parent, &format!("checked-{mode}"));
    std::fs::write(
        dir.join(c2_check::EXAMPLES_FILE),
        json!({"hostile.go": [{"mode": mode}]}).to_string(),
    )
    .unwrap();
    let start = Instant::now();
    let report = tokio::time::timeout(
        ANSWER_BOUND,
        c2_check::check_bundle(&dir, &c2_check::CheckOptions::default()),
    )
    .await
    .unwrap_or_else(|_| panic!("{mode}: the check did not end within {ANSWER_BOUND:?}"))
    .unwrap();
    assert!(start.elapsed() < ANSWER_BOUND);
    report
}

fn failed_detail(report: &c2_check::CheckReport, prefix: &str) -> String {
    let item = report
        .checks
        .iter()
        .find(|c| c.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no check {prefix:?} in {report:#?}"));
    assert!(!item.pass, "{item:?} passed");
    assert!(!report.ok);
    item.detail.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_each_wire_misbehaviour_as_a_failed_check() {
    let root = tempfile::tempdir().unwrap();
    let parent = root.path();
    let overflow = check_mode(parent, "call-flood").await;
    let detail = failed_detail(&overflow, "invoke hostile.go");
    assert!(detail.contains("stopped reading"), "{detail}");
    let zeros = check_mode(parent, "zeros-result").await;
    let detail = failed_detail(&zeros, "invoke hostile.go");
    assert!(detail.contains("result_too_large"), "{detail}");
    let logs = check_mode(parent, "log-flood").await;
    let detail = failed_detail(&logs, "stderr and log");
    assert!(detail.contains("65536-byte bound"), "{detail}");
    let forged = check_mode(parent, "forge").await;
    let detail = failed_detail(&forged, "event names");
    assert!(
        detail.contains("`engine/event`, `skills/changed`"),
        "{detail}"
    );
    // A well-behaved call of the same runtime passes every check.
    let plain = check_mode(parent, "plain").await;
    assert!(plain.ok, "{plain:#?}");
}
