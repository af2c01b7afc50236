//! `uninstall <ID> [--keep-data]`: the host stops the bundle's processes in every realm, then
//! removes it, its data directory (unless `--keep-data`) and its runtime policy.

use std::path::Path;

use c2_host::{PluginHost, UninstallOptions};

use crate::CmdResult;
use crate::output::Out;
use crate::session;

pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    store: &Path,
    id: &str,
    keep_data: bool,
) -> CmdResult {
    let options = UninstallOptions { keep_data };
    let removed = host
        .uninstall_with(id, options)
        .await
        .map_err(session::failure)?;
    match &removed.record {
        Some(record) => {
            out.progress(&format!(
                "uninstalled {} {} from {}",
                record.name,
                record.version.as_deref().unwrap_or("-"),
                store.display()
            ));
            Ok(out.success(c2_relay::json::uninstalled(&removed), &record.id))
        }
        None => {
            out.progress(&format!(
                "removed {id} from {} (its installed.json was unreadable)",
                store.display()
            ));
            Ok(out.success(c2_relay::json::uninstalled(&removed), &removed.id))
        }
    }
}
