//! `dev <DIR> [--project DIR]`: developer mode. The working directory the user named is
//! installed as a development bundle of the store, trusted for as long as this command holds
//! it, and watched: each save (debounced) is collected and validated again and, when it
//! validates, replaces the stored content, which every live host on the store reloads through
//! the store watch. A save that does not validate keeps the last good version and prints its
//! diagnostics. SIGINT or SIGTERM ends it and removes the development bundle; if this process
//! dies instead, the next host to open the store removes it.

use std::path::PathBuf;

use c2_bundle_collector::DevelopmentMark;
use c2_host::{Loading, Target};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::output::{Failure, Out};
use crate::session::{self, Session, StoreUse};
use crate::{Cli, CmdResult};

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
    // An invalid working directory is refused with its diagnostics before any store is opened.
    if let Some(text) = args.dir.to_str() {
        crate::commands::install::preflight(out, text)?;
    }
    let (runtime, settings) = crate::runtime_and_settings(cli)?;
    let result = runtime.block_on(async {
        let session = Session::open(&settings, StoreUse::Create, Loading::All).await?;
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
    let outcome = host.develop(&args.dir).await.map_err(session::failure)?;
    let id = outcome.record.id.clone();
    let (sender, mut reloads) = mpsc::unbounded_channel();
    let watching = c2_relay::watch_development(host.clone(), id.clone(), &args.dir, move |r| {
        let _ = sender.send(r);
    });
    let watch = match watching {
        Ok(watch) => watch,
        Err(error) => {
            host.end_development(Some(&id))
                .await
                .map_err(session::failure)?;
            return Err(failure(error));
        }
    };
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
    let ended_here = loop {
        tokio::select! {
            _ = interrupt.recv() => break true,
            _ = terminate.recv() => break true,
            reload = reloads.recv() => match reload {
                Some(Ok(mark)) => report(out, &mark),
                Some(Err(error)) => out.progress(&format!("cannot reload {id}: {error}")),
                None => {
                    out.progress(&format!("developer mode for {id} was ended elsewhere"));
                    break false;
                }
            },
        }
    };
    drop(watch);
    if ended_here {
        host.end_development(Some(&id))
            .await
            .map_err(session::failure)?;
        out.progress(&format!(
            "developer mode ended: removed {id} from {}",
            session.store.display()
        ));
    }
    // One document when it ends: the development bundle and whether this command removed it.
    let result = serde_json::json!({ "id": id, "removed": ended_here });
    Ok(out.success(result, ""))
}

/// Prints one reload's outcome and its diagnostics.
fn report(out: &mut Out, mark: &DevelopmentMark) {
    let Some(record) = &mark.last_reload else {
        return;
    };
    if record.ok {
        out.progress(&format!("reloaded {}", mark.id));
    } else {
        out.progress(&format!(
            "kept the last good version of {}: the saved bundle does not validate",
            mark.id
        ));
    }
    for line in &record.diagnostics {
        out.progress(&format!("  {line}"));
    }
}
