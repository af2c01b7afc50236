//! The JSON of per-runtime health: the `health/status` result and the `health/changed` payload,
//! and `c2-plugins status --format json`.

use c2_host::RuntimeHealth;
use serde_json::{Value, json};

/// `{"runtimes": [...]}`: one object per plugin runtime and realm. Durations are whole
/// milliseconds (`uptimeMs`, `cpuMs`, `windowMs`, `agoMs`), latencies whole microseconds
/// (`p50Us`, `p99Us`, the upper bound of the latency bucket; `null` before the first call).
pub fn health(rows: &[RuntimeHealth]) -> Value {
    let runtimes: Vec<Value> = rows.iter().map(runtime).collect();
    json!({ "runtimes": runtimes })
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn runtime(row: &RuntimeHealth) -> Value {
    let health = &row.health;
    let micros = |d: Option<std::time::Duration>| {
        d.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    };
    let failure = health.last_failure.as_ref().map(|failure| {
        json!({
            "kind": failure.kind,
            "message": failure.message,
            "stderrTail": failure.stderr_tail,
            "agoMs": millis(failure.ago),
        })
    });
    json!({
        "bundle": row.bundle,
        "realm": row.realm,
        "state": health.state.name(),
        "pid": health.pid,
        "uptimeMs": health.uptime.map(millis),
        "starts": health.starts,
        "crashes": health.crashes,
        "windowMs": millis(health.window),
        "lastFailure": failure,
        "calls": {
            "served": health.calls.served,
            "failed": health.calls.failed,
            "p50Us": micros(health.calls.p50),
            "p99Us": micros(health.calls.p99),
        },
        "usage": {
            "rssBytes": health.usage.rss_bytes,
            "cpuMs": millis(health.usage.cpu_time),
            "openFds": health.usage.open_fds,
            "processes": health.usage.processes,
        },
        "droppedEvents": health.dropped_events,
    })
}

/// What `health/changed` compares: every field but those that move on their own while a
/// runtime runs (uptime, usage, the age of the last failure).
pub(crate) fn change_key(rows: &[RuntimeHealth]) -> Value {
    let mut value = health(rows);
    if let Some(runtimes) = value["runtimes"].as_array_mut() {
        for runtime in runtimes {
            if let Some(object) = runtime.as_object_mut() {
                object.remove("uptimeMs");
                object.remove("usage");
                if let Some(failure) = object.get_mut("lastFailure").and_then(Value::as_object_mut)
                {
                    failure.remove("agoMs");
                }
            }
        }
    }
    value
}
