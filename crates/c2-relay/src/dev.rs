//! Developer mode's watcher: a development bundle's working directory is watched, and each
//! save, once the directory has been quiet for [`DEBOUNCE`], reloads the bundle through the
//! host ([`PluginHost::reload_development`]) and publishes [`DEV_RELOADED`] on the host's
//! bus. The relay runs one for each directory a client develops (`plugins/setDeveloperMode`);
//! the command line's `dev` runs one for its directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use c2_bundle_collector::DevelopmentMark;
use c2_host::{HostError, PluginHost};
use c2_lock::lock;
use c2_protocol::{ErrorObject, codes};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::connection::error_object;

/// How long a working directory must be quiet after a change before it is collected again.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

/// The event published after each reload of a development bundle: `{id, ok, diagnostics}`
/// ([`crate::json::dev_reloaded`]).
pub const DEV_RELOADED: &str = "dev/reloaded";

/// A running watch; dropping it stops watching (the development bundle stays).
#[derive(Debug)]
pub struct DevWatch {
    _watcher: RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DevWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches `dir`, the working directory of the development bundle `id`: each debounced save
/// reloads it, publishes [`DEV_RELOADED`] and hands the outcome to `report`. The watch ends
/// by itself (dropping `report`) once the bundle is no longer a development bundle (developer
/// mode was ended elsewhere). Must be called inside a tokio runtime.
pub fn watch_development(
    host: PluginHost,
    id: String,
    dir: &Path,
    mut report: impl FnMut(Result<DevelopmentMark, HostError>) + Send + 'static,
) -> Result<DevWatch, notify::Error> {
    let (sender, mut saves) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|event| !event.kind.is_access()) {
            let _ = sender.send(());
        }
    })?;
    watcher.watch(dir, RecursiveMode::Recursive)?;
    let task = tokio::spawn(async move {
        while saves.recv().await.is_some() {
            while let Ok(Some(())) = tokio::time::timeout(DEBOUNCE, saves.recv()).await {}
            let outcome = host.reload_development(Some(&id)).await;
            // A failed reload (a file that vanished mid-save, say) ends the watch only when
            // the bundle is no longer a development bundle.
            let ended = outcome.is_err()
                && !host
                    .developer_status()
                    .is_ok_and(|status| status.bundles.iter().any(|b| b.mark.id == id));
            for mark in outcome.iter().flatten() {
                host.kernel()
                    .emit(DEV_RELOADED, crate::json::dev_reloaded(mark));
            }
            report(outcome.and_then(|marks| {
                marks
                    .into_iter()
                    .next()
                    .ok_or_else(|| HostError::NotInstalled { id: id.clone() })
            }));
            if ended {
                break;
            }
        }
    });
    Ok(DevWatch {
        _watcher: watcher,
        task,
    })
}

/// The relay's watches, by development bundle id.
pub(crate) type Watches = Arc<Mutex<BTreeMap<String, DevWatch>>>;

/// `plugins/developerStatus`.
pub(crate) fn status(host: &PluginHost) -> Result<Value, ErrorObject> {
    let status = host.developer_status().map_err(error_object)?;
    Ok(crate::json::developer_status(&status))
}

/// `plugins/setDeveloperMode`: `enabled` develops `path` (installed, trusted while this
/// service holds it, and watched); `enabled: false` stops every watch and ends developer mode
/// for every development bundle of the store.
pub(crate) async fn set_mode(
    host: &PluginHost,
    watches: &Watches,
    enabled: bool,
    path: Option<&Path>,
) -> Result<Value, ErrorObject> {
    match (enabled, path) {
        (true, Some(path)) => {
            let outcome = host.develop(path).await.map_err(error_object)?;
            let id = outcome.record.id;
            match watch_development(host.clone(), id.clone(), path, |_| {}) {
                Ok(watch) => {
                    lock(watches).insert(id, watch);
                }
                Err(error) => {
                    host.end_development(Some(&id))
                        .await
                        .map_err(error_object)?;
                    let message = format!("cannot watch {}: {error}", path.display());
                    return Err(ErrorObject::new(codes::COMMAND_FAILED, message));
                }
            }
        }
        (true, None) => {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                "developer mode needs `path`, the working directory to develop",
            ));
        }
        (false, _) => {
            lock(watches).clear();
            host.end_development(None).await.map_err(error_object)?;
        }
    }
    status(host)
}
