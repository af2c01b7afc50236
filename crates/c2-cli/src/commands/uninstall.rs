//! `uninstall <ID>`: remove an installed bundle from the store.
//!
//! For now this talks to the store directly; the host will take over (stopping the bundle's
//! processes and clearing its policy first), which is why it lives alone in this module.

use std::path::Path;

use c2_bundle_collector::Error;
use serde_json::json;

use crate::CmdResult;
use crate::commands::{open_existing, plugins_dir, store_failure};
use crate::output::Out;

pub(crate) fn run(out: &mut Out, plugins_dir_arg: Option<&Path>, id: &str) -> CmdResult {
    let dir = plugins_dir(plugins_dir_arg)?;
    let Some(store) = open_existing(&dir)? else {
        return Err(store_failure(Error::NotInstalled { id: id.to_owned() }));
    };
    let record = store.uninstall(id).map_err(store_failure)?;
    if !out.json() {
        out.note(&format!(
            "uninstalled {} {} from {}",
            record.name,
            record.version,
            dir.display()
        ));
    }
    Ok(out.success(
        json!({ "id": record.id, "name": record.name, "version": record.version }),
        &record.id,
    ))
}
