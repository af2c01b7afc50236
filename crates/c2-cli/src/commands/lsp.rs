//! `lsp <LANGUAGE> --project DIR`: start the language server the active plugins map to LANGUAGE
//! in that project and bridge it to this process's stdio with Content-Length framing. stdout
//! belongs to the editor, so every message of ours, failures included, goes to stderr.
//!
//! A server that crashes before the editor's `exit` is restarted within c2-relay's default crash
//! budget (3 restarts within 3 minutes) and brought back to the session; past the budget the
//! session ends with the reason.
//!
//! The exit code follows the LSP exit rule: 0 after the editor's `shutdown` and `exit` when the
//! server exits 0 (or when the editor simply goes away: whatever the server's code on its
//! closed input, unless it never answered anything and failed), 1 for
//! `exit` without `shutdown`, a server that ends on its own, or a frame over the limit (the
//! editor is also told with `window/showMessage`). A failure shows the server's last stderr
//! lines.
//!
//! `lsp --list [--project DIR]`: every language mapping of that realm, starting nothing.

use std::path::Path;
use std::process::ExitCode;

use c2_contributions::prelude::*;
use c2_contributions::{LanguageListing, ServerOrigin};
use c2_host::PluginHost;
use c2_relay::{BridgeFailureKind, LspBridgeOptions, LspRestartBudget};

use crate::CmdResult;
use crate::output::{Failure, Out};
use crate::report;
use crate::session;

pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    language: &str,
    project: &Path,
) -> CmdResult {
    let server = host
        .start_language_server(project, language)
        .await
        .map_err(session::failure)?;
    out.progress(&format!(
        "c2-plugins: {language} language server started (pid {})",
        server.pid()
    ));
    let options = LspBridgeOptions {
        sender: "c2-plugins".to_owned(),
        ..LspBridgeOptions::default()
    };
    // A server that crashes under the editor is restarted within the default crash budget
    // (docs/cli.md); one the host stopped (its bundle unloaded) is not.
    let mut restarts = 0u32;
    let restart = || {
        restarts += 1;
        out.progress(&format!(
            "c2-plugins: the {language} language server crashed; restarting it (restart {restarts})"
        ));
        async move {
            host.start_language_server(project, language)
                .await
                .map_err(|error| error.to_string())
        }
    };
    // `--record`: the editor's frames and the server's, Content-Length framed.
    let tap = crate::commands::record::tap();
    let (editor_in, editor_out) =
        c2_protocol::tap_editor_streams(tap.as_ref(), tokio::io::stdin(), tokio::io::stdout());
    let report = c2_relay::bridge_lsp_supervised(
        server,
        editor_in,
        editor_out,
        options,
        LspRestartBudget::default(),
        restart,
    )
    .await;
    match report.verdict {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // Why a server ended on its own is usually in its stderr, shown only with -v otherwise.
        Err(failure) if failure.kind == BridgeFailureKind::ProcessExited => {
            Err(Failure::operation(
                failure.kind.name(),
                with_stderr_tail(failure.message, &report.stderr_tail),
            ))
        }
        Err(failure) => Err(Failure::operation(failure.kind.name(), failure.message)),
    }
}

/// The message, then the server's last stderr lines, each on its own indented line with
/// control characters escaped, so nothing the server wrote can pass for a line of ours.
pub(crate) fn with_stderr_tail(message: String, tail: &[String]) -> String {
    if tail.is_empty() {
        return format!("{message} (it wrote nothing to stderr)");
    }
    let mut text = format!("{message}; its last stderr lines:");
    for line in tail {
        text.push_str("\n  | ");
        for c in line.chars() {
            if c.is_control() {
                text.extend(c.escape_default());
            } else {
                text.push(c);
            }
        }
    }
    text
}

/// `lsp --list`.
pub(crate) fn list(out: &mut Out, host: &PluginHost, project: Option<&Path>) -> CmdResult {
    let listing = host
        .language_listing(&session::target(project))
        .map_err(session::failure)?;
    let human = if listing.languages.is_empty() {
        format!(
            "no language servers are installed or built in ({})",
            realm_text(&listing)
        )
    } else {
        format!(
            "language servers in {}:\n{}",
            realm_text(&listing),
            languages_table(&listing)
        )
    };
    Ok(out.success(c2_relay::json::language_listing(&listing), &human))
}

fn realm_text(listing: &LanguageListing) -> String {
    if listing.realm == "global" {
        "the user realm".to_owned()
    } else {
        format!("project {}", listing.realm)
    }
}

/// One line per language and provider: active providers, providers that are installed but
/// not active here, and the built-in mapping, each with what it means for `lsp <LANGUAGE>`.
pub(crate) fn languages_table(listing: &LanguageListing) -> String {
    let mut rows = vec![["LANGUAGE", "PROVIDER", "SERVER", "COMMAND", "STATUS"].map(str::to_owned)];
    for row in &listing.languages {
        for provider in &row.providers {
            let status = if row.conflict {
                format!(
                    "conflict: {} active providers, none starts until policy removes the conflict",
                    row.providers.len()
                )
            } else {
                "selected".to_owned()
            };
            rows.push([
                row.language.clone(),
                provider.bundle.clone(),
                provider.server.clone(),
                provider.command.clone(),
                status,
            ]);
        }
        for provider in &row.inactive {
            rows.push([
                row.language.clone(),
                provider.bundle.clone(),
                provider.server.clone(),
                provider.command.clone(),
                "inactive: not trusted and enabled here".to_owned(),
            ]);
        }
        if let Some(builtin) = &row.builtin {
            let status = match &row.winner {
                Some(ServerOrigin::BuiltIn) => "selected",
                _ if row.conflict => "not used: the plugin conflict fails the language closed",
                _ => "overridden by the plugin mapping",
            };
            let mut command = builtin.program.display().to_string();
            for arg in &builtin.args {
                command.push(' ');
                command.push_str(arg);
            }
            rows.push([
                row.language.clone(),
                "built-in".to_owned(),
                "-".to_owned(),
                command,
                status.to_owned(),
            ]);
        }
        if row.providers.is_empty() && row.builtin.is_none() {
            // Only inactive providers: say so once more in plain words.
            rows.push([
                row.language.clone(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "unavailable: no active provider".to_owned(),
            ]);
        }
    }
    report::table(&rows, "  ")
}
