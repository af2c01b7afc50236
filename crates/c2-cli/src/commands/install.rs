//! `install <SOURCE> [--trust] [--enable]` through the host: a directory, an archive or a git
//! source is validated, stored atomically and, if asked, trusted and enabled. Nothing from the
//! bundle runs.
//!
//! A local source is validated here first, before any store is opened, so a refused bundle
//! leaves no trace and its diagnostics show the offending source lines.

use std::path::Path;

use c2_bundle_collector::{Diagnostic, Limits};
use c2_host::{HostError, InstallOptions, InstallOutcome, PluginHost};

use crate::output::{Failure, Lines, Out, terminal_text};
use crate::report::{self, Paint};
use crate::session;

/// Validates a local directory or archive (git sources are left to the host); an invalid bundle
/// is refused with its diagnostics and their source lines. Warnings of a valid bundle are left
/// to the host's install notes, so they are shown once.
pub(crate) fn preflight(out: &mut Out, source: &str) -> Result<(), Failure> {
    let path = Path::new(source);
    if !path.exists() {
        return Ok(());
    }
    let bundle = c2_bundle_collector::collect(path, &Limits::default())
        .map_err(crate::commands::store_failure)?;
    if bundle.is_valid() {
        return Ok(());
    }
    if !out.json() {
        let rendered = report::render_diagnostics(
            &bundle.diagnostics,
            |file| {
                bundle
                    .files
                    .get(file)
                    .map(|entry| String::from_utf8_lossy(&entry.bytes))
            },
            Paint {
                color: out.stderr_color(),
            },
        );
        out.note(&rendered);
    }
    Err(invalid(source, &bundle.diagnostics))
}

fn invalid(source: &str, diagnostics: &[Diagnostic]) -> Failure {
    Failure::operation(
        "invalid_bundle",
        format!(
            "{source} is not a valid bundle ({}); nothing was installed: fix the diagnostics above and install again",
            report::counts(diagnostics)
        ),
    )
    .with_detail("diagnostics", c2_relay::json::diagnostics(diagnostics))
}

/// Installs through the host, showing its notes; the host's own refusal of an invalid bundle
/// (a git source) is rendered like a local one, without source lines.
pub(crate) async fn install(
    out: &mut Out,
    host: &PluginHost,
    source: &str,
    options: InstallOptions,
) -> Result<InstallOutcome, Failure> {
    match host.install(source, options).await {
        Ok(outcome) => {
            for note in &outcome.notes {
                out.progress(&format!(
                    "warning: {}",
                    terminal_text(note, Lines::Indented)
                ));
            }
            Ok(outcome)
        }
        Err(HostError::InvalidBundle { diagnostics, .. }) => {
            if !out.json() {
                let paint = Paint {
                    color: out.stderr_color(),
                };
                out.note(&report::render_diagnostics(&diagnostics, |_| None, paint));
            }
            Err(invalid(source, &diagnostics))
        }
        Err(error) => Err(session::failure(error)),
    }
}

pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    store: &Path,
    source: &str,
    options: InstallOptions,
) -> crate::CmdResult {
    let outcome = install(out, host, source, options).await?;
    let record = &outcome.record;
    let verb = if outcome.replaced {
        "replaced"
    } else {
        "installed"
    };
    let mut line = format!(
        "{verb} {} {} from {source} into {}",
        terminal_text(&record.name, Lines::One),
        terminal_text(record.version.as_deref().unwrap_or("-"), Lines::One),
        store.display()
    );
    for (asked, what) in [(options.trust, "trusted"), (options.enable, "enabled")] {
        if asked {
            line.push_str(&format!(", {what}"));
        }
    }
    out.progress(&line);
    Ok(out.success(
        c2_relay::json::install_outcome(&outcome, options),
        &record.id,
    ))
}
