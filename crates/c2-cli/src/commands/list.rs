//! `list`: installed bundles with trust, enablement, runtime state and contributions, then
//! the user realm's language mappings (each server's languages, the winner per language,
//! conflicts and built-in mappings; `lsp --list --project DIR` shows one project's).

use std::path::Path;
use std::process::ExitCode;

use c2_contributions::prelude::*;
use c2_host::{BundleStatus, PluginHost, Target};
use serde_json::Value;

use crate::CmdResult;
use crate::output::Out;
use crate::report;

pub(crate) fn run(out: &mut Out, host: &PluginHost, store: &Path) -> CmdResult {
    let listed = host.list();
    let languages = host
        .language_listing(&Target::User)
        .map_err(crate::session::failure)?;
    if out.json() {
        let records: Vec<Value> = listed
            .iter()
            .map(|status| c2_relay::json::bundle_status(status, &languages))
            .collect();
        return Ok(out.success(Value::Array(records), ""));
    }
    if listed.is_empty() {
        out.print(&format!("no bundles installed in {}", store.display()));
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![
        [
            "ID",
            "NAME",
            "VERSION",
            "TRUSTED",
            "ENABLED",
            "STATE",
            "CONTRIBUTIONS",
        ]
        .map(str::to_owned),
    ];
    for status in &listed {
        let inventory = &status.record.inventory;
        let mut contributions = report::inventory_summary(inventory);
        let unsupported = inventory.unsupported().count();
        if unsupported > 0 {
            contributions.push_str(&format!(" ({unsupported} unsupported)"));
        }
        rows.push([
            status.id.clone(),
            status.name.clone(),
            status.version.clone().unwrap_or_else(|| "-".to_owned()),
            yes_no(status.trusted),
            yes_no(status.enabled),
            state_text(status),
            contributions,
        ]);
    }
    let mut text = report::table(&rows, "");
    for status in &listed {
        let disabled: Vec<&str> = status
            .components
            .iter()
            .filter(|c| c.state == "disabled")
            .map(|c| c.component.as_str())
            .collect();
        if !disabled.is_empty() {
            text.push_str(&format!(
                "{}: disabled components (user): {}\n",
                status.id,
                disabled.join(", ")
            ));
        }
    }
    if !languages.languages.is_empty() {
        text.push_str("\nlanguage servers (user-wide; `c2-plugins lsp --list --project DIR` for a project):\n");
        text.push_str(&super::lsp::languages_table(&languages));
    }
    out.print(&text);
    Ok(ExitCode::SUCCESS)
}

/// `failed: <why>` and `pending: <why>` carry their reason; other states are one word.
fn state_text(status: &BundleStatus) -> String {
    match &status.reason {
        Some(reason) => format!("{}: {reason}", status.state),
        None => status.state.to_string(),
    }
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}
