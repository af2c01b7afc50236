//! Developer mode's shapes: the store's status and the `dev/reloaded` event.

use c2_bundle_collector::{DeveloperStatus, DevelopmentMark};
use serde_json::{Value, json};

/// `plugins/developerStatus` (and the answer of its two siblings): `{enabled, watching,
/// pluginsDir, bundles: [{id, dir, pid, sinceMs, lastReload, held}], lastReload: {plugins,
/// atMs, ok, diagnostics} | null}`, the same document as the `plugins.developer_status`
/// command's.
pub fn developer_status(status: &DeveloperStatus) -> Value {
    serde_json::to_value(status).unwrap_or(Value::Null)
}

/// The `dev/reloaded` event of one reload: `{id, ok, diagnostics, atMs}`; `ok` false means the
/// saved content did not validate and the last good version keeps running.
pub fn dev_reloaded(mark: &DevelopmentMark) -> Value {
    match &mark.last_reload {
        Some(record) => json!({
            "id": mark.id,
            "ok": record.ok,
            "diagnostics": record.diagnostics,
            "atMs": record.at_ms,
        }),
        None => json!({ "id": mark.id, "ok": true, "diagnostics": [], "atMs": Value::Null }),
    }
}
