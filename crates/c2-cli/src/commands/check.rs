//! `check <BUNDLE-DIR>`: an adapter over `c2_check::check_bundle`, which validates the bundle,
//! runs its runtime against a stand-in host and judges what it does. One line per check, or
//! `{"ok", "checks": [{"name", "pass", "detail"}]}` with `--format json`; exit 0 only when every
//! check passed, 1 when one failed, 2 when the directory cannot be read.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use c2_check::{CheckOptions, CheckReport};
use serde_json::json;

use crate::CmdResult;
use crate::commands::store_failure;
use crate::output::{Failure, Lines, Out, terminal_text};
use crate::report::Paint;

pub(crate) fn run(out: &mut Out, bundle: &Path, handshake_timeout: Duration) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            Failure::environment("io", format!("cannot start the async runtime: {error}"))
        })?;
    let mut options = CheckOptions::default()
        .with_host_name("c2-plugins")
        .with_handshake_timeout(handshake_timeout);
    // One check per process: a shim started ahead would only be thrown away.
    options.supervisor.warm_shim = false;
    let report = runtime
        .block_on(c2_check::check_bundle(bundle, &options))
        .map_err(failure)?;
    if out.json() {
        out.print_json(&json!({ "ok": report.ok, "checks": report.checks }));
    } else {
        let text = human(&report, Paint { color: out.color });
        out.print(&text);
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn failure(error: c2_check::Error) -> Failure {
    match error {
        c2_check::Error::Collect(error) => store_failure(error),
        other => Failure::environment("io", other.to_string()),
    }
}

/// `PASS name: detail` per check, continuation lines indented, then a verdict line.
fn human(report: &CheckReport, paint: Paint) -> String {
    let mut text = String::new();
    for check in &report.checks {
        let tag = paint.verdict(if check.pass { "PASS" } else { "FAIL" }, check.pass);
        // The detail quotes the plugin (its errors, logs, stderr).
        let detail = terminal_text(&check.detail, Lines::Indented).replace('\n', "\n      ");
        text.push_str(&format!("{tag}  {}: {detail}\n", check.name));
    }
    let failed = report.checks.iter().filter(|c| !c.pass).count();
    let total = report.checks.len();
    let verdict = if report.ok {
        paint.verdict(&format!("check passed: all {total} checks"), true)
    } else {
        paint.verdict(
            &format!("check failed: {failed} of {total} checks failed"),
            false,
        )
    };
    text.push_str(&verdict);
    text
}
