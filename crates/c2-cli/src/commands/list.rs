//! `list`: the installed bundles with their contributions. A store directory that does not
//! exist lists nothing and is not created.
//!
//! For now this reads the store directly; the host will add trust, enablement and process
//! state, which is why it lives alone in this module.

use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::CmdResult;
use crate::commands::{open_existing, plugins_dir, store_failure};
use crate::output::Out;
use crate::report;

pub(crate) fn run(out: &mut Out, plugins_dir_arg: Option<&Path>) -> CmdResult {
    let dir = plugins_dir(plugins_dir_arg)?;
    let listed = match open_existing(&dir)? {
        Some(store) => store.list().map_err(store_failure)?,
        None => Vec::new(),
    };

    let records: Vec<Value> = listed
        .iter()
        .map(|bundle| match &bundle.record {
            Ok(record) => json!({
                "id": record.id,
                "name": record.name,
                "version": record.version,
                "digest": record.digest,
                "source": record.source,
                "installedAt": record.installed_at,
                "contributions": report::contributions_json(&record.inventory),
                "unsupported": report::unsupported_json(&record.inventory),
            }),
            Err(error) => json!({ "id": bundle.id, "error": error.to_string() }),
        })
        .collect();
    if out.json() {
        return Ok(out.success(Value::Array(records), ""));
    }
    if listed.is_empty() {
        out.print(&format!("no bundles installed in {}", dir.display()));
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![[
        "ID".to_owned(),
        "NAME".to_owned(),
        "VERSION".to_owned(),
        "CONTRIBUTIONS".to_owned(),
    ]];
    for bundle in &listed {
        rows.push(match &bundle.record {
            Ok(record) => {
                let mut summary = report::inventory_summary(&record.inventory);
                let unsupported = record.inventory.unsupported().count();
                if unsupported > 0 {
                    summary.push_str(&format!(" ({unsupported} unsupported)"));
                }
                [
                    record.id.clone(),
                    record.name.clone(),
                    record.version.clone(),
                    summary,
                ]
            }
            Err(error) => [
                bundle.id.clone(),
                "?".to_owned(),
                "?".to_owned(),
                format!("unreadable: {error}"),
            ],
        });
    }
    out.print(&report::table(&rows, ""));
    Ok(ExitCode::SUCCESS)
}
