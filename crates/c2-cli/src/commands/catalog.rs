//! `catalog` and `commands`: what a realm holds, as the host sees it after reconciling.
//!
//! Rows are read through their JSON form so this crate needs no kernel types.

use std::path::Path;

use c2_contributions::prelude::*;
use c2_host::PluginHost;
use serde_json::Value;

use crate::CmdResult;
use crate::output::Out;
use crate::report;
use crate::session;

pub(crate) fn catalog(out: &mut Out, host: &PluginHost, project: Option<&Path>) -> CmdResult {
    let rows = host
        .catalog(&session::target(project))
        .map_err(session::failure)?;
    let mut rows = c2_relay::json::catalog_rows(&rows, c2_relay::json::Revisions::Numbers);
    let languages = host
        .language_listing(&session::target(project))
        .map_err(session::failure)?;
    // Each bundle row also carries its language servers, the languages it wins in this realm
    // and the ones in conflict.
    for row in rows.as_array_mut().into_iter().flatten() {
        let bundle = row["name"]
            .as_str()
            .and_then(|name| name.strip_prefix(c2_host::BUNDLE_PREFIX))
            .map(str::to_owned);
        if let (Some(bundle), Some(object)) = (bundle, row.as_object_mut()) {
            object.insert(
                "languageServers".to_owned(),
                c2_relay::json::bundle_servers(&languages, &bundle),
            );
        }
    }
    let mut table = vec![
        [
            "NAME",
            "ROLE",
            "ORIGIN",
            "CATEGORY",
            "SCOPES",
            "ESSENTIAL",
            "DEFAULT",
            "TRUSTED",
            "ENABLED",
            "STATE",
        ]
        .map(str::to_owned),
    ];
    for row in rows.as_array().into_iter().flatten() {
        let meta = &row["meta"];
        let runtime_user_only = row["runtimeScopes"]
            .as_array()
            .is_some_and(|scopes| !scopes.iter().any(|s| s == "project"));
        let scopes: Vec<&str> = meta["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            // The project scope of a bundle whose runtime is user-only is its language servers'.
            .map(|s| match s {
                "project" if runtime_user_only => "project(lsp)",
                other => other,
            })
            .collect();
        table.push([
            text(&row["name"]),
            text(&meta["role"]),
            text(&meta["origin"]),
            text(&meta["category"]),
            scopes.join(","),
            flag(&meta["essential"]),
            text(&meta["defaultState"]).replace('_', "-"),
            flag(&row["trusted"]),
            flag(&row["enabled"]),
            module_state(&row["state"]),
        ]);
    }
    let mut human = report::table(&table, "");
    for row in rows.as_array().into_iter().flatten() {
        let disabled: Vec<&str> = row["components"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["state"] == "disabled")
            .filter_map(|c| c["component"].as_str())
            .collect();
        if !disabled.is_empty() {
            human.push_str(&format!(
                "{}: disabled components: {}\n",
                text(&row["name"]),
                disabled.join(", ")
            ));
        }
    }
    if !languages.languages.is_empty() {
        human.push_str("\nlanguage servers:\n");
        human.push_str(&super::lsp::languages_table(&languages));
    }
    Ok(out.success(rows, &human))
}

pub(crate) async fn commands(
    out: &mut Out,
    host: &PluginHost,
    project: Option<&Path>,
) -> CmdResult {
    let target = session::target(project);
    // A project realm's dormant commands are listed before anything was invoked there.
    host.load_realm(&target).await.map_err(session::failure)?;
    let rows = host.commands(&target).map_err(session::failure)?;
    let mut table =
        vec![["NAME", "OWNER", "REALM", "VISIBILITY", "STATE", "TITLE"].map(str::to_owned)];
    for row in &rows {
        table.push([
            row.name.clone(),
            row.owner.clone(),
            row.realm_label(),
            row.visibility.to_string(),
            row.state.to_string(),
            row.title.clone(),
        ]);
    }
    let human = report::table(&table, "");
    Ok(out.success(c2_relay::json::command_rows(&rows), &human))
}

/// A kernel module state (`{"state": "failed", "reason": ...}`) as one cell.
fn module_state(state: &Value) -> String {
    let name = text(&state["state"]);
    if let Some(reason) = state["reason"].as_str() {
        return format!("{name}: {reason}");
    }
    let missing: Vec<&str> = state["missing"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if missing.is_empty() {
        name
    } else {
        format!("{name}: waiting for {}", missing.join(", "))
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

fn flag(value: &Value) -> String {
    match value.as_bool() {
        Some(true) => "yes".to_owned(),
        Some(false) => "no".to_owned(),
        None => "-".to_owned(),
    }
}
