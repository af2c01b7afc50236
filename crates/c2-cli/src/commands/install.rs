//! `install <SOURCE> [--trust] [--enable]` through the host: a directory, an archive or a git
//! source is validated, stored atomically and, if asked, trusted and enabled. Nothing from the
//! bundle runs.
//!
//! A local source is validated here first, before any store is opened, so a refused bundle
//! leaves no trace and its diagnostics show the offending source lines.

use std::path::Path;

use c2_bundle_collector::{CollectOptions, Diagnostic};
use c2_host::{HostError, InstallOptions, InstallOutcome, PluginHost, Source};
use c2_sources::{EntryLookup, Fetched, SourceError};

use crate::output::{Failure, Lines, Out, terminal_text};
use crate::report::{self, Paint};
use crate::session;

/// Collects and validates a local directory or archive (git sources and catalog entries are
/// left to the host) with the options the command line's host installs with; an invalid bundle
/// is refused with its diagnostics and their source lines. A valid one is returned, for the
/// host to store without collecting it again; its warnings are left to the host's install
/// notes, so they are shown once.
pub(crate) fn preflight(out: &mut Out, source: &str) -> Result<Option<Fetched>, Failure> {
    let Ok(Source::Directory(path) | Source::Archive(path)) =
        Source::parse(source, EntryLookup::Off)
    else {
        return Ok(None);
    };
    let fetched =
        c2_sources::fetch_path(&path, &CollectOptions::default()).map_err(|error| match error {
            SourceError::Store(error) => crate::commands::store_failure(error),
            other => session::failure(other.into()),
        })?;
    let bundle = &fetched.bundle;
    if bundle.is_valid() {
        return Ok(Some(fetched));
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
    let result = host.install(source, options).await;
    finish(out, source, result)
}

/// What `install` stores: a source the host fetches, or a bundle [`preflight`] collected.
pub(crate) enum Installing {
    Source(Source),
    Fetched(Box<Fetched>),
}

/// [`install`] of a source already parsed (by `PluginHost::resolve_source`) or collected.
pub(crate) async fn install_source(
    out: &mut Out,
    host: &PluginHost,
    text: &str,
    installing: Installing,
    options: InstallOptions,
) -> Result<InstallOutcome, Failure> {
    let result = match installing {
        Installing::Source(source) => host.install_source(&source, options).await,
        Installing::Fetched(fetched) => host.install_fetched(*fetched, options).await,
    };
    finish(out, text, result)
}

fn finish(
    out: &mut Out,
    source: &str,
    result: Result<InstallOutcome, HostError>,
) -> Result<InstallOutcome, Failure> {
    match result {
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
    text: &str,
    installing: Installing,
    options: InstallOptions,
) -> crate::CmdResult {
    let outcome = install_source(out, host, text, installing, options).await?;
    let source = text;
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
