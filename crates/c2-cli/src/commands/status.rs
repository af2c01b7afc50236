//! `status [--project DIR]` and `top [--project DIR] [--iterations N]`: per-plugin health.
//!
//! The live runtimes belong to a running `c2-plugins serve` for the plugins directory, so both
//! ask it (`health/status` over its socket) when one answers, unless `--no-service` is given.
//! Without one, this process reports the runtimes of the host it opened: every one dormant,
//! nothing counted (a one-shot process has run nothing). `--project DIR` keeps the user realm's
//! rows and that project's. `top` shows the table again every second until Ctrl-C, or
//! `--iterations N` times; with `--format json` it prints one JSON document per line each time.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use c2_host::PluginHost;
use serde_json::{Value, json};

use crate::CmdResult;
use crate::output::{Failure, Out};
use crate::report;
use crate::serve;
use crate::session::Settings;

/// How often `top` refreshes.
const TOP_INTERVAL: Duration = Duration::from_secs(1);

/// `status` and `top` (extends docs/cli.md).
#[derive(Debug, clap::Subcommand)]
pub(crate) enum HealthCommand {
    /// Per-plugin health: state, pid, uptime, starts and crashes, calls and latency, memory,
    /// CPU and descriptors, from a running `serve` (else every runtime dormant)
    Status {
        #[command(flatten)]
        project: crate::ProjectArg,
        /// Report this process's own host even when a `c2-plugins serve` answers
        #[arg(long)]
        no_service: bool,
    },
    /// `status`, live: refreshed every second until Ctrl-C
    Top {
        #[command(flatten)]
        project: crate::ProjectArg,
        /// Stop after N refreshes
        #[arg(long, value_name = "N")]
        iterations: Option<u64>,
        /// Report this process's own host even when a `c2-plugins serve` answers
        #[arg(long)]
        no_service: bool,
    },
}

/// Runs `status` or `top` on `host` (used only when no service answers).
pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    settings: &Settings,
    command: &HealthCommand,
) -> CmdResult {
    let (project, no_service, iterations) = match command {
        HealthCommand::Status {
            project,
            no_service,
        } => (project.project.as_deref(), *no_service, Some(1)),
        HealthCommand::Top {
            project,
            iterations,
            no_service,
        } => (project.project.as_deref(), *no_service, *iterations),
    };
    let dir = crate::commands::plugins_dir(settings.plugins_dir.as_deref())?;
    let top = matches!(command, HealthCommand::Top { .. });
    let mut shown = 0u64;
    loop {
        let (service, mut value) = snapshot(host, &dir, settings, no_service).await?;
        keep_realms(&mut value, project);
        let human = render(&value, service, &dir);
        value["service"] = json!(service);
        shown += 1;
        if !top {
            return Ok(out.success(value, &human));
        }
        if out.json() {
            out.print(&json!({ "ok": true, "result": value }).to_string());
        } else {
            // A terminal gets the table in place; a pipe gets one table after the other.
            let clear = if out.color { "\x1b[H\x1b[2J" } else { "" };
            out.print(&format!("{clear}{human}"));
        }
        if iterations.is_some_and(|n| shown >= n) {
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(TOP_INTERVAL).await;
    }
}

/// The health rows, from the service when one answers, else from `host`; and which.
async fn snapshot(
    host: &PluginHost,
    dir: &Path,
    settings: &Settings,
    no_service: bool,
) -> Result<(bool, Value), Failure> {
    if !no_service && let Some(peer) = serve::connect_service(dir, settings.handshake_timeout).await
    {
        let value = serve::call_service(&peer, "health/status", json!({})).await?;
        return Ok((true, value));
    }
    Ok((false, c2_relay::json::health(&host.health())))
}

/// Keeps the user realm's rows and `project`'s (all rows without one).
fn keep_realms(value: &mut Value, project: Option<&Path>) {
    let Some(project) = project else { return };
    let key = std::path::absolute(project).unwrap_or_else(|_| project.to_owned());
    let key = std::fs::canonicalize(&key).unwrap_or(key);
    let key = key.to_string_lossy();
    if let Some(rows) = value["runtimes"].as_array_mut() {
        rows.retain(|row| row["realm"] == "global" || row["realm"] == key.as_ref());
    }
}

/// The table, then each row's last failure with its stderr lines.
fn render(value: &Value, service: bool, dir: &Path) -> String {
    let source = if service {
        format!("the running service for {}", dir.display())
    } else {
        format!(
            "no `c2-plugins serve` runs for {}: the runtimes as this process sees them",
            dir.display()
        )
    };
    let empty = Vec::new();
    let rows = value["runtimes"].as_array().unwrap_or(&empty);
    if rows.is_empty() {
        return format!("no plugin runtimes ({source})");
    }
    let header = [
        "BUNDLE", "REALM", "STATE", "PID", "UPTIME", "STARTS", "CRASHES", "CALLS", "FAILED", "P50",
        "P99", "RSS", "CPU", "FDS", "DROPPED",
    ];
    let mut table = vec![header.map(str::to_owned)];
    for row in rows {
        let number = |v: &Value| v.as_u64().map_or_else(|| "-".to_owned(), |n| n.to_string());
        let usage = &row["usage"];
        let running = row["state"] == "running";
        let used = |text: String| if running { text } else { "-".to_owned() };
        table.push([
            text(&row["bundle"]),
            text(&row["realm"]),
            text(&row["state"]),
            number(&row["pid"]),
            row["uptimeMs"]
                .as_u64()
                .map_or_else(|| "-".to_owned(), millis),
            number(&row["starts"]),
            number(&row["crashes"]),
            number(&row["calls"]["served"]),
            number(&row["calls"]["failed"]),
            micros(&row["calls"]["p50Us"]),
            micros(&row["calls"]["p99Us"]),
            used(bytes(usage["rssBytes"].as_u64().unwrap_or(0))),
            used(millis(usage["cpuMs"].as_u64().unwrap_or(0))),
            used(number(&usage["openFds"])),
            number(&row["droppedEvents"]),
        ]);
    }
    let mut out = format!("plugin runtimes ({source}):\n");
    out.push_str(&report::table(&table, "  "));
    for row in rows {
        let failure = &row["lastFailure"];
        if failure.is_null() {
            continue;
        }
        let ago = failure["agoMs"].as_u64().map_or_else(String::new, millis);
        let _ = write!(
            out,
            "{} ({}): last failure {ago} ago: {}: {}",
            text(&row["bundle"]),
            text(&row["realm"]),
            text(&failure["kind"]),
            text(&failure["message"]),
        );
        for line in failure["stderrTail"].as_array().unwrap_or(&empty) {
            let line: String = text(line)
                .chars()
                .flat_map(|c| {
                    let escaped: Vec<char> = if c.is_control() {
                        c.escape_default().collect()
                    } else {
                        vec![c]
                    };
                    escaped
                })
                .collect();
            let _ = write!(out, "\n  | {line}");
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// `850ms`, `12.3s`, `5m03s`, `2h05m`.
fn millis(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

/// A latency bucket bound in µs: `320µs`, `2.6ms`, `1.2s`; `-` before the first call.
fn micros(value: &Value) -> String {
    match value.as_u64() {
        None => "-".to_owned(),
        Some(us @ 0..1_000) => format!("{us}µs"),
        Some(us @ 1_000..1_000_000) => format!("{:.1}ms", us as f64 / 1000.0),
        Some(us) => format!("{:.1}s", us as f64 / 1_000_000.0),
    }
}

/// `512KiB`, `12.5MiB`, `1.2GiB`.
fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let n = n as f64;
    if n < KIB * KIB {
        format!("{:.0}KiB", n / KIB)
    } else if n < KIB * KIB * KIB {
        format!("{:.1}MiB", n / KIB / KIB)
    } else {
        format!("{:.1}GiB", n / KIB / KIB / KIB)
    }
}
