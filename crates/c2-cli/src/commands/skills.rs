//! `skills [--project DIR]`: the skills, prompt commands and subagents a session in that realm
//! is offered, and `scenes [--project DIR]`: the realm's scene and pipeline files with their
//! status. Both only read: nothing runs.

use std::path::Path;
use std::process::ExitCode;

use c2_contributions::prelude::*;
use c2_host::PluginHost;

use crate::CmdResult;
use crate::output::Out;
use crate::{report, session};

/// `skills`: one row per item of every enabled bundle, offered or not.
pub(crate) fn skills(out: &mut Out, host: &PluginHost, project: Option<&Path>) -> CmdResult {
    let items = host
        .skill_library(&session::target(project))
        .map_err(session::failure)?;
    if out.json() {
        return Ok(out.success(c2_relay::json::skill_library(&items), ""));
    }
    if items.is_empty() {
        out.print("no skills: no enabled bundle in this realm ships skills, commands or agents");
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = vec![["NAME", "KIND", "BUNDLE", "SCRIPTS", "STATUS"].map(str::to_owned)];
    for item in &items {
        table.push([
            item.name
                .clone()
                .unwrap_or_else(|| format!("({})", item.local_name)),
            item.kind.text().to_owned(),
            item.bundle.clone(),
            if item.scripts { "yes" } else { "-" }.to_owned(),
            item.status.text(),
        ]);
    }
    out.print(&report::table(&table, ""));
    Ok(ExitCode::SUCCESS)
}

/// `scenes`: one row per scene or pipeline file of every enabled bundle.
pub(crate) fn scenes(out: &mut Out, host: &PluginHost, project: Option<&Path>) -> CmdResult {
    let entries = host
        .scene_library(&session::target(project))
        .map_err(session::failure)?;
    if out.json() {
        return Ok(out.success(c2_relay::json::scene_library(&entries), ""));
    }
    if entries.is_empty() {
        out.print("no scenes: no enabled bundle in this realm ships scenes or pipelines");
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = vec![["NAME", "KIND", "BUNDLE", "VERSION", "STATUS"].map(str::to_owned)];
    for entry in &entries {
        table.push([
            entry.name.clone(),
            entry.kind.text().to_owned(),
            entry.bundle.clone(),
            entry.version.clone().unwrap_or_else(|| "-".to_owned()),
            entry.status.text(),
        ]);
    }
    out.print(&report::table(&table, ""));
    Ok(ExitCode::SUCCESS)
}
