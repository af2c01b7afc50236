//! `ui` and `invoke-ui` (extensions of docs/cli.md): the UI descriptors a realm offers, per
//! slot, and activating one through the host's ownership checks. The host builds the context.

use std::fmt::Write as _;
use std::path::Path;

use c2_contributions::UiRequest;
use c2_contributions::prelude::*;
use c2_host::{PluginHost, UiOperation, UiSlot};

use crate::CmdResult;
use crate::commands::invoke::print_result;
use crate::output::Out;
use crate::session;

/// `--operation` of `invoke-ui` (for `host.actions` descriptors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Operation {
    Render,
    Invoke,
}

pub(crate) async fn catalog(out: &mut Out, host: &PluginHost, project: Option<&Path>) -> CmdResult {
    let target = session::target(project);
    // A project realm's descriptors are listed before anything was invoked there.
    host.load_realm(&target).await.map_err(session::failure)?;
    let slots = host.ui_catalog(&target).map_err(session::failure)?;
    let mut human = String::new();
    // Slots by name, as they always were listed.
    let mut by_name: Vec<_> = slots.iter().collect();
    by_name.sort_by_key(|(slot, _)| slot.as_str());
    for (slot, entries) in by_name {
        let _ = writeln!(human, "{}:", slot.as_str());
        let rows: Vec<[String; 4]> = entries
            .iter()
            .map(|entry| {
                [
                    entry.order.to_string(),
                    format!("{} {}", entry.bundle, entry.id),
                    entry.label.clone(),
                    format!("-> {}", entry.command),
                ]
            })
            .collect();
        human.push_str(&crate::report::table(&rows, "  "));
    }
    if human.is_empty() {
        human
            .push_str("no UI descriptors in this realm (only trusted, enabled bundles offer them)");
    }
    Ok(out.success(c2_relay::json::ui_catalog(&slots), human.trim_end()))
}

#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) id: &'a str,
    pub(crate) ui: &'a str,
    pub(crate) project: Option<&'a Path>,
    pub(crate) session: Option<&'a str>,
    pub(crate) operation: Option<Operation>,
    pub(crate) action: Option<&'a str>,
}

pub(crate) async fn invoke(out: &mut Out, host: &PluginHost, request: &Request<'_>) -> CmdResult {
    let request = UiRequest {
        id: request.id.to_owned(),
        ui: request.ui.to_owned(),
        project: request.project.map(Path::to_path_buf),
        session_id: request.session.map(str::to_owned),
        operation: request.operation.map(|op| match op {
            Operation::Render => UiOperation::Render,
            Operation::Invoke => UiOperation::Invoke,
        }),
        action_id: request.action.map(str::to_owned),
        context: None,
    };
    if request.operation == Some(UiOperation::Invoke) && host_actions(host, &request).await? {
        // This process holds no earlier render: it renders the slot now, so the invoke still
        // replays only an item the slot currently offers.
        let render = UiRequest {
            operation: Some(UiOperation::Render),
            action_id: None,
            ..request.clone()
        };
        host.invoke_ui(&render).await.map_err(session::failure)?;
    }
    let result = host.invoke_ui(&request).await.map_err(session::failure)?;
    Ok(print_result(out, result))
}

/// Whether the request names a `host.actions` descriptor the realm offers.
async fn host_actions(
    host: &PluginHost,
    request: &UiRequest,
) -> Result<bool, crate::output::Failure> {
    let target = session::target(request.project.as_deref());
    host.load_realm(&target).await.map_err(session::failure)?;
    let slots = host.ui_catalog(&target).map_err(session::failure)?;
    Ok(slots.get(&UiSlot::HostActions).is_some_and(|entries| {
        entries
            .iter()
            .any(|entry| entry.bundle == request.id && entry.id == request.ui)
    }))
}
