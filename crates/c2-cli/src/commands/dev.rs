//! `dev <DIR> [--project DIR]`: developer mode. The working directory the user named is
//! installed as a development bundle of the store, trusted for as long as this command holds
//! it, and watched: each save (debounced) is collected and validated again and, when it
//! validates, replaces the stored content, which every live host on the store reloads through
//! the store watch. A save that does not validate keeps the last good version and prints its
//! diagnostics. SIGINT or SIGTERM ends it and removes the development bundle; if this process
//! dies instead, the next host to open the store removes it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use c2_host::{PluginHost, Target};
use notify::{RecursiveMode, Watcher};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::output::{Failure, Out};
use crate::session::{self, Session, StoreUse};
use crate::{Cli, CmdResult};

/// How long the directory must be quiet after a change before it is collected again.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(250);

/// `dev`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct DevArgs {
    /// The bundle's working directory (holding plugin.json)
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Also load the project realm of this directory
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

pub(crate) fn run(cli: &Cli, out: &mut Out, args: &DevArgs) -> CmdResult {
    let (runtime, settings) = crate::runtime_and_settings(cli)?;
    let result = runtime.block_on(async {
        let session = Session::open(&settings, StoreUse::Create).await?;
        let result = develop(out, &session, args).await;
        session.host.shutdown().await;
        result
    });
    runtime.shutdown_background();
    result
}

fn failure(error: impl std::fmt::Display) -> Failure {
    Failure::environment("io", format!("developer mode cannot watch: {error}"))
}

async fn develop(out: &mut Out, session: &Session, args: &DevArgs) -> CmdResult {
    let host = &session.host;
    // Signals are caught before anything is installed, so an early Ctrl-C still cleans up.
    let mut interrupt = signal(SignalKind::interrupt()).map_err(failure)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(failure)?;
    let (sender, mut saves) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|event| !event.kind.is_access()) {
            let _ = sender.send(());
        }
    })
    .map_err(failure)?;
    watcher
        .watch(&args.dir, RecursiveMode::Recursive)
        .map_err(failure)?;
    let outcome = host.develop(&args.dir).await.map_err(session::failure)?;
    let id = outcome.record.id.clone();
    if let Some(project) = &args.project {
        let target = Target::Project(project.clone());
        host.load_realm(&target).await.map_err(session::failure)?;
    }
    out.progress(&format!(
        "developing {} {} ({id}) from {}: installed in {} as a development bundle, trusted while developer mode runs because you named this directory; watching for saves, Ctrl-C ends",
        outcome.record.name,
        outcome.record.version.as_deref().unwrap_or("-"),
        args.dir.display(),
        session.store.display(),
    ));
    let ended = loop {
        tokio::select! {
            _ = interrupt.recv() => break true,
            _ = terminate.recv() => break true,
            save = saves.recv() => if save.is_none() { break true },
        }
        // Debounce: collect once the directory has been quiet for DEBOUNCE.
        while let Ok(Some(())) = tokio::time::timeout(DEBOUNCE, saves.recv()).await {}
        if !reload(out, host, &id).await {
            break false;
        }
    };
    drop(watcher);
    if ended {
        host.end_development(Some(&id))
            .await
            .map_err(session::failure)?;
        out.progress(&format!(
            "developer mode ended: removed {id} from {}",
            session.store.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Reloads the development bundle and reports the outcome; `false` once it is no longer a
/// development bundle (developer mode was turned off elsewhere).
async fn reload(out: &mut Out, host: &PluginHost, id: &str) -> bool {
    match host.reload_development(Some(id)).await {
        Ok(marks) => {
            for mark in marks {
                let Some(record) = mark.last_reload else {
                    continue;
                };
                if record.ok {
                    out.progress(&format!("reloaded {id}"));
                } else {
                    out.progress(&format!(
                        "kept the last good version of {id}: the saved bundle does not validate"
                    ));
                }
                for line in &record.diagnostics {
                    out.progress(&format!("  {line}"));
                }
            }
            true
        }
        Err(error) if error.kind() == c2_host::ErrorKind::StoreFailed => {
            out.progress(&format!(
                "developer mode for {id} was ended elsewhere: {error}"
            ));
            false
        }
        Err(error) => {
            out.progress(&format!("cannot reload {id}: {error}"));
            true
        }
    }
}
