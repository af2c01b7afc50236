//! The Plugin Hub commands: `marketplace add/remove/list`, `install NAME[@VERSION]
//! --marketplace ...`, `search`, `outdated` and `update`, each an adapter over the host's catalog
//! methods (which call c2-sources). Text from a catalog is printed through `terminal_text`/`report::table`.

use std::path::Path;
use std::process::ExitCode;

use c2_bundle_collector::UpdateReview;
use c2_host::{InstallOptions, OutdatedStatus, PluginHost, Source};

use crate::CmdResult;
use crate::output::{Failure, Lines, Out, terminal_text};
use crate::report;
use crate::session;

/// Installs a catalog entry ([`Source::Catalog`], from `PluginHost::resolve_source`).
pub(crate) async fn install(
    out: &mut Out,
    host: &PluginHost,
    store: &Path,
    source: &Source,
    options: InstallOptions,
) -> CmdResult {
    let name = match source {
        Source::Catalog(entry) => entry.name.as_str(),
        _ => "",
    };
    let outcome = match host.install_source(source, options).await {
        Ok(outcome) => outcome,
        Err(c2_host::HostError::InvalidBundle { diagnostics, .. }) => {
            if !out.json() {
                let paint = report::Paint {
                    color: out.stderr_color(),
                };
                out.note(&report::render_diagnostics(&diagnostics, |_| None, paint));
            }
            return Err(Failure::operation(
                "invalid_bundle",
                format!(
                    "the catalog entry {name} is not a valid bundle ({}); nothing was installed",
                    report::counts(&diagnostics)
                ),
            )
            .with_detail("diagnostics", c2_relay::json::diagnostics(&diagnostics)));
        }
        Err(error) => return Err(session::failure(error)),
    };
    for note in &outcome.notes {
        out.progress(&format!(
            "warning: {}",
            terminal_text(note, Lines::Indented)
        ));
    }
    let record = &outcome.record;
    let origin = record.origin.as_ref();
    let verb = if outcome.replaced {
        "replaced"
    } else {
        "installed"
    };
    let mut line = format!(
        "{verb} {} {} from {} ({}) into {}",
        terminal_text(&record.name, Lines::One),
        terminal_text(record.version.as_deref().unwrap_or("-"), Lines::One),
        terminal_text(
            &origin.map_or_else(String::new, |o| o
                .catalog_name
                .clone()
                .unwrap_or_else(|| o.catalog.clone())),
            Lines::One
        ),
        origin.map_or("-", |o| o.source_kind.as_str()),
        store.display()
    );
    let enabled = options.enable || outcome.enabled_by_catalog;
    for (asked, what) in [(options.trust, "trusted"), (enabled, "enabled")] {
        if asked {
            line.push_str(&format!(", {what}"));
        }
    }
    out.progress(&line);
    let mut result = c2_relay::json::install_outcome(&outcome, options);
    result["origin"] = c2_relay::json::origin(record.origin.as_ref());
    Ok(out.success(result, &record.id))
}

pub(crate) async fn add(
    out: &mut Out,
    host: &PluginHost,
    location: &str,
    name: Option<&str>,
) -> CmdResult {
    let added = host
        .marketplace_add(location, name)
        .await
        .map_err(session::failure)?;
    // A foreign catalog's bad entries were skipped; the rest are usable.
    for skipped in &added.skipped {
        out.progress(&format!(
            "warning: skipped entry {} ({}) at {}: {}",
            skipped.index,
            terminal_text(skipped.name.as_deref().unwrap_or("-"), Lines::One),
            skipped.pointer,
            terminal_text(&skipped.reason, Lines::One)
        ));
    }
    let human = format!(
        "added catalog {} ({})",
        terminal_text(&added.name, Lines::One),
        terminal_text(&added.location, Lines::One)
    );
    Ok(out.success(c2_relay::json::marketplace(&added), &human))
}

pub(crate) fn remove(out: &mut Out, host: &PluginHost, name: &str) -> CmdResult {
    let removed = host.marketplace_remove(name).map_err(session::failure)?;
    let human = format!(
        "removed catalog {}",
        terminal_text(&removed.name, Lines::One)
    );
    Ok(out.success(c2_relay::json::marketplace(&removed), &human))
}

pub(crate) fn list(out: &mut Out, host: &PluginHost) -> CmdResult {
    let list = host.marketplaces().map_err(session::failure)?;
    if out.json() {
        return Ok(out.success(c2_relay::json::marketplaces(&list), ""));
    }
    if list.is_empty() {
        out.print("no catalogs configured: `c2-plugins marketplace add PATH|URL` adds one");
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![["NAME", "LOCATION"].map(str::to_owned)];
    rows.extend(list.into_iter().map(|m| [m.name, m.location]));
    out.print(report::table(&rows, "").trim_end());
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn search(
    out: &mut Out,
    host: &PluginHost,
    text: &str,
    marketplace: Option<&str>,
) -> CmdResult {
    let hits = host
        .search(text, marketplace)
        .await
        .map_err(session::failure)?;
    if out.json() {
        return Ok(out.success(c2_relay::json::search_hits(&hits), ""));
    }
    if hits.is_empty() {
        out.print(&format!(
            "no catalog entry matches `{}`",
            terminal_text(text, Lines::One)
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![
        [
            "NAME",
            "VERSION",
            "CATALOG",
            "SOURCE",
            "INSTALLED",
            "DESCRIPTION",
        ]
        .map(str::to_owned),
    ];
    for hit in hits {
        // An entry the catalog withholds says so first; the reason is in the JSON.
        let description = hit.description.unwrap_or_default();
        let description = match hit.not_available {
            Some(_) => format!("(not available) {description}")
                .trim_end()
                .to_owned(),
            None => description,
        };
        rows.push([
            hit.name,
            hit.version.unwrap_or_else(|| "-".to_owned()),
            hit.catalog,
            hit.source_kind,
            hit.installed.unwrap_or_else(|| "-".to_owned()),
            description,
        ]);
    }
    out.print(report::table(&rows, "").trim_end());
    Ok(ExitCode::SUCCESS)
}

/// Exits 1 when a catalog could not be read (fail closed: "nothing outdated" is not known).
pub(crate) async fn outdated(out: &mut Out, host: &PluginHost) -> CmdResult {
    let rows = host.outdated().await;
    let failed = rows
        .iter()
        .any(|r| r.status == OutdatedStatus::CatalogFailed);
    let code = if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    if out.json() {
        out.success(c2_relay::json::outdated_rows(&rows), "");
        return Ok(code);
    }
    let shown: Vec<_> = rows
        .iter()
        .filter(|r| r.status != OutdatedStatus::Current)
        .collect();
    if shown.is_empty() {
        out.print(&format!(
            "every bundle installed from a catalog is current ({} checked)",
            rows.len()
        ));
        return Ok(code);
    }
    let mut table = vec![["ID", "INSTALLED", "AVAILABLE", "STATUS", "CATALOG"].map(str::to_owned)];
    for row in shown {
        let status = match &row.reason {
            Some(reason) => format!("{}: {reason}", row.status.as_str()),
            None => row.status.as_str().to_owned(),
        };
        table.push([
            row.id.clone(),
            row.installed.clone().unwrap_or_else(|| "-".to_owned()),
            row.available.clone().unwrap_or_else(|| "-".to_owned()),
            status,
            row.catalog.clone(),
        ]);
    }
    out.print(report::table(&table, "").trim_end());
    Ok(code)
}

/// `update [ID] [--dry-run]`.
#[derive(Debug, clap::Args)]
pub(crate) struct UpdateArgs {
    /// The installed bundle to update [default: every bundle installed from a catalog]
    #[arg(value_name = "ID")]
    id: Option<String>,
    /// Show what each update would change (executable surface and files); apply nothing
    #[arg(long)]
    dry_run: bool,
}

/// Exits 1 when any update failed (those bundles stay as they were).
pub(crate) async fn update(out: &mut Out, host: &PluginHost, args: &UpdateArgs) -> CmdResult {
    let id = args.id.as_deref();
    let report = host
        .update_with(id, args.dry_run)
        .await
        .map_err(session::failure)?;
    // With one id, its failure is the command's failure, in the usual shape.
    if id.is_some()
        && let Some(failed) = report.failed.first()
    {
        let mut failure = Failure::operation("command_failed", failed.message.clone());
        failure.kind = failed.kind.as_str().to_owned();
        return Err(failure);
    }
    for updated in &report.updated {
        for note in &updated.outcome.notes {
            out.progress(&format!(
                "warning: {}",
                terminal_text(note, Lines::Indented)
            ));
        }
    }
    let code = if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if out.json() {
        let result = if args.dry_run {
            c2_relay::json::update_dry_run(&report)
        } else {
            c2_relay::json::update_report(&report)
        };
        out.success(result, "");
        return Ok(code);
    }
    let mut lines = Vec::new();
    for review in &report.pending {
        lines.extend(review_lines(review));
    }
    for u in &report.updated {
        lines.push(format!(
            "updated {} {} -> {}",
            u.id,
            terminal_text(u.from.as_deref().unwrap_or("-"), Lines::One),
            terminal_text(&u.to, Lines::One)
        ));
        if let Some(review) = u.outcome.record.review.as_ref()
            && !review.surface.is_empty()
        {
            lines.extend(surface_lines(review));
        }
    }
    for id in &report.current {
        lines.push(format!("{id} is current"));
    }
    for f in &report.failed {
        lines.push(format!(
            "{} not updated ({}): {}",
            f.id,
            f.kind,
            terminal_text(&f.message, Lines::Indented)
        ));
    }
    if lines.is_empty() {
        lines.push("no bundle was installed from a catalog".to_owned());
    }
    out.print(&lines.join("\n"));
    Ok(code)
}

/// `marketplace` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum MarketplaceAction {
    /// Read and validate a catalog, then add it to the configured catalogs
    Add {
        /// A marketplace.json, a directory holding one, a git+URL#REF:DIR or a GitHub URL
        #[arg(value_name = "PATH|URL")]
        location: String,
        /// The name to keep it under [default: the catalog's `name`]
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// Remove a configured catalog (installed bundles keep their origin)
    Remove {
        /// The configured catalog's name
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// The configured catalogs
    List,
}

/// A dry run's block for one bundle: the versions, the executable-surface diff, the file diff.
fn review_lines(review: &UpdateReview) -> Vec<String> {
    let version =
        |v: &Option<String>| terminal_text(v.as_deref().unwrap_or("-"), Lines::One).into_owned();
    let mut lines = vec![format!(
        "{} {} -> {} would be updated (dry run: nothing applied)",
        review.id,
        version(&review.from_version),
        version(&review.to_version)
    )];
    if review.surface.is_empty() {
        lines.push(format!("  {}", review.reason()));
    } else {
        lines.extend(surface_lines(review));
    }
    let files = &review.files;
    lines.push(format!(
        "  files: {} added, {} removed, {} changed",
        files.added.len(),
        files.removed.len(),
        files.changed.len()
    ));
    for (mark, paths) in [
        ("+", &files.added),
        ("-", &files.removed),
        ("~", &files.changed),
    ] {
        for path in paths {
            lines.push(format!("    {mark} {}", terminal_text(path, Lines::One)));
        }
    }
    lines
}

/// `  executable surface changed:` then one line per change.
fn surface_lines(review: &UpdateReview) -> Vec<String> {
    let mut lines = vec![format!(
        "  executable surface changed ({}):",
        review.surface.len()
    )];
    for change in &review.surface {
        let text = change.describe();
        lines.push(format!("    {}", terminal_text(&text, Lines::One)));
    }
    lines
}
