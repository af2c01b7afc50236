//! `scaffold <ID> <SCAFFOLD> <TARGET-DIR>`: copy an installed bundle's scaffold (or template)
//! into an existing directory. Every destination is checked first; one conflict writes nothing.

use std::path::Path;

use c2_bundle_collector::{Error, Limits};
use serde_json::json;

use crate::CmdResult;
use crate::commands::{open_existing, plugins_dir, store_failure};
use crate::output::{Failure, Out};

#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) plugins_dir: Option<&'a Path>,
    pub(crate) id: &'a str,
    pub(crate) scaffold: &'a str,
    pub(crate) target: &'a Path,
}

pub(crate) fn run(out: &mut Out, request: &Request<'_>) -> CmdResult {
    let dir = plugins_dir(request.plugins_dir)?;
    let Some(store) = open_existing(&dir)? else {
        return Err(store_failure(Error::NotInstalled {
            id: request.id.to_owned(),
        }));
    };
    let bundle = store
        .collect_installed(request.id, &Limits::default())
        .map_err(store_failure)?;
    if !bundle.is_valid() {
        // The store only holds valid bundles: this one changed on disk after install.
        return Err(Failure::environment(
            "corrupt_store",
            format!(
                "installed bundle {} no longer validates ({} error(s)); reinstall it",
                request.id,
                bundle.error_count()
            ),
        ));
    }
    // A scaffold the user disabled (`scaffold:<name>`) is not applied. Templates are not
    // switchable components.
    let component = c2_host::ComponentRef {
        kind: c2_bundle_collector::ContributionKind::Scaffold,
        local_id: request.scaffold.to_owned(),
    };
    if c2_host::disabled_for_user(&dir, request.id, &component) {
        return Err(Failure::operation(
            "disabled",
            format!(
                "component {component} of {id} is disabled in the user scope: run `c2-plugins enable {id} --component {component}` (or `inherit`) to use it",
                id = request.id
            ),
        ));
    }
    let written =
        c2_bundle_collector::apply_scaffold(&bundle.files, request.scaffold, request.target)
            .map_err(store_failure)?;
    let target = request.target.display().to_string();
    let human = written
        .iter()
        .map(|path| format!("created {}", request.target.join(path).display()))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(out.success(json!({ "target": target, "written": written }), &human))
}
