//! `info <ID>`: one installed bundle in full: where its bytes came from (provenance), its
//! digest, trust, enablement, state and components. JSON is the bundle's `list` record.

use std::process::ExitCode;

use c2_bundle_collector::Provenance;
use c2_contributions::prelude::*;
use c2_host::{HostError, PluginHost, Target};

use crate::CmdResult;
use crate::output::{Lines, Out, terminal_text};
use crate::report;

pub(crate) fn run(out: &mut Out, host: &PluginHost, id: &str) -> CmdResult {
    let Some(status) = host.list().into_iter().find(|s| s.id == id) else {
        return Err(crate::session::failure(HostError::NotInstalled {
            id: id.to_owned(),
        }));
    };
    if out.json() {
        let languages = host
            .language_listing(&Target::User)
            .map_err(crate::session::failure)?;
        let value = c2_relay::json::bundle_status(&status, &languages);
        return Ok(out.success(value, ""));
    }
    let record = &status.record;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut rows: Vec<(&str, String)> = vec![
        ("id", status.id.clone()),
        ("name", status.name.clone()),
        (
            "version",
            status.version.clone().unwrap_or_else(|| "-".to_owned()),
        ),
        ("digest", record.digest.clone()),
        ("trusted", yes_no(status.trusted).to_owned()),
        ("enabled (user)", yes_no(status.enabled).to_owned()),
        ("state", status.state.to_string()),
        (
            "contributions",
            report::inventory_summary(&record.inventory),
        ),
    ];
    match &record.provenance {
        Some(provenance) => rows.extend(provenance_rows(provenance)),
        None => rows.push((
            "provenance",
            "unknown (recorded before provenance was kept)".to_owned(),
        )),
    }
    for component in &status.components {
        rows.push((
            "component",
            format!("{} {}", component.component, component.state),
        ));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let text: String = rows
        .iter()
        .map(|(key, value)| format!("{key:<width$}  {}\n", terminal_text(value, Lines::One)))
        .collect();
    out.print(text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// The provenance as `source ...` rows, only the fields that apply.
fn provenance_rows(p: &Provenance) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("source kind", p.kind.as_str().to_owned()),
        ("source", p.location.clone()),
    ];
    let optional = [
        ("requested ref", p.reference.clone()),
        ("commit", p.commit.clone()),
        ("subdirectory", p.subdir.clone().filter(|s| !s.is_empty())),
        (
            "npm package",
            p.npm.as_ref().map(|n| format!("{}@{}", n.name, n.version)),
        ),
        ("npm integrity", p.npm.as_ref().map(|n| n.integrity.clone())),
        ("sha256", p.sha256.clone()),
        (
            "catalog",
            p.catalog.as_ref().map(|c| {
                let name = c.catalog_name.as_deref().unwrap_or(&c.catalog);
                format!("{name} ({})", c.catalog)
            }),
        ),
        (
            "catalog entry",
            p.catalog
                .as_ref()
                .map(|c| format!("{}@{}", c.entry, c.version)),
        ),
        (
            "installed at",
            Some(p.installed_at.clone()).filter(|t| !t.is_empty()),
        ),
    ];
    rows.extend(
        optional
            .into_iter()
            .filter_map(|(key, value)| value.map(|v| (key, v))),
    );
    rows
}
