//! `invoke` and `run`: a command's JSON result on stdout, its failure as `<command>: <message>`
//! with the host's kind. `run` is the author's loop around one bundle directory: install, trust,
//! enable, invoke and unload, each step reported on stderr as it happens.

use std::path::Path;

use c2_host::{InstallOptions, Loading, PluginHost, Target};
use serde_json::Value;

use crate::CmdResult;
use crate::commands::install;
use crate::output::{Failure, Out};
use crate::session::{self, Settings};

/// One command call: what to call, with what, where.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) command: &'a str,
    /// `--args` as given.
    pub(crate) args: Option<&'a str>,
    pub(crate) project: Option<&'a Path>,
}

pub(crate) async fn invoke(out: &mut Out, host: &PluginHost, call: &Call<'_>) -> CmdResult {
    let args = session::parse_args(call.args)?;
    let result = host
        .invoke(&session::target(call.project), call.command, args)
        .await
        .map_err(session::failure)?;
    Ok(print_result(out, result))
}

/// The result as pretty JSON (human) or `{"ok":true,"result":...}` (json).
pub(crate) fn print_result(out: &mut Out, result: Value) -> std::process::ExitCode {
    let human = serde_json::to_string_pretty(&result).unwrap_or_else(|_| "null".to_owned());
    out.success(result, &human)
}

/// `run <BUNDLE-DIR> <COMMAND>`: the store named by an explicit `--plugins-dir`, else a
/// throw-away one removed afterwards. The host is always shut down, even after a failure.
pub(crate) async fn run(
    out: &mut Out,
    settings: &Settings,
    bundle: &Path,
    call: &Call<'_>,
) -> CmdResult {
    // Everything the user typed is checked before anything is installed.
    let args = session::parse_args(call.args)?;
    let target = session::target(call.project);
    if !bundle.is_dir() {
        return Err(Failure::environment(
            "unreadable_path",
            format!(
                "{} is not a bundle directory: give the directory that holds plugin.json",
                bundle.display()
            ),
        ));
    }
    let source = bundle.to_string_lossy();
    install::preflight(out, &source)?;
    let (store, scratch) = match &settings.plugins_dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let scratch = session::scratch_dir()?;
            (scratch.path().to_owned(), Some(scratch))
        }
    };
    let host = session::open_host(&store, settings.handshake_timeout, false, Loading::All).await?;
    let result =
        session::until_signal(lifecycle(out, &host, &source, &target, call.command, args)).await;
    host.shutdown().await;
    out.progress("c2-plugins: unloaded");
    if let Some(scratch) = scratch {
        let path = scratch.path().display().to_string();
        match scratch.close() {
            Ok(()) => out.progress(&format!("c2-plugins: removed the temporary store {path}")),
            Err(error) => tracing::warn!("cannot remove the temporary store {path}: {error}"),
        }
    }
    Ok(print_result(out, result?))
}

async fn lifecycle(
    out: &mut Out,
    host: &PluginHost,
    source: &str,
    target: &Target,
    command: &str,
    args: Value,
) -> Result<Value, Failure> {
    let options = InstallOptions::trusted_and_enabled();
    let outcome = install::install(out, host, source, options).await?;
    let id = &outcome.record.id;
    out.progress(&format!(
        "c2-plugins: installed {id} (digest {})",
        outcome.record.digest
    ));
    out.progress(&format!("c2-plugins: trusted {id}"));
    out.progress(&format!("c2-plugins: enabled {id}"));
    out.progress(&format!("c2-plugins: invoking {command}"));
    host.invoke(target, command, args)
        .await
        .map_err(session::failure)
}
