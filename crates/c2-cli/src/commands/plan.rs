//! `plan` writes a planned policy change to a file; `apply` applies it while every revision it
//! recorded is still current, so a change planned against an older state is refused as stale.

use std::path::{Path, PathBuf};

use c2_host::{PlanAction, PlanFile, PluginHost};
use serde_json::json;

use crate::CmdResult;
use crate::commands::policy::{applied_json, impact_text};
use crate::output::{Failure, Out};
use crate::session;

/// The change `plan` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Action {
    Enable,
    Disable,
    Inherit,
    Configure,
}

#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) id: &'a str,
    pub(crate) action: Action,
    pub(crate) project: Option<&'a Path>,
    /// `--config`: JSON or @FILE, for `configure`.
    pub(crate) config: Option<&'a str>,
    /// `--out`, else `<ID>.plan.json` in the current directory.
    pub(crate) out: Option<&'a Path>,
    /// `--component <KIND>:<LOCAL-ID>`: plan one component's choice.
    pub(crate) component: Option<&'a str>,
}

/// Turns the request into the host's action; usage mistakes are refused before the host is
/// asked anything.
fn action(request: &Request<'_>) -> Result<PlanAction, Failure> {
    match (request.action, request.config) {
        (Action::Configure, Some(config)) => Ok(PlanAction::Configure {
            config: session::parse_args(Some(config))?,
        }),
        (Action::Configure, None) => Err(Failure::environment(
            "usage",
            "configure needs the new configuration: pass --config JSON or --config @FILE",
        )),
        (_, Some(_)) => Err(Failure::environment(
            "usage",
            "--config belongs to configure only: drop it or plan `configure`",
        )),
        (Action::Enable, None) => Ok(PlanAction::Enable),
        (Action::Disable, None) => Ok(PlanAction::Disable),
        (Action::Inherit, None) if request.project.is_none() && request.component.is_none() => {
            Err(Failure::environment(
                "usage",
                "inherit applies to a project only: pass --project DIR",
            ))
        }
        (Action::Inherit, None) => Ok(PlanAction::Inherit),
    }
}

pub(crate) async fn plan(out: &mut Out, host: &PluginHost, request: &Request<'_>) -> CmdResult {
    let action = action(request)?;
    let project = request.project.map(Path::to_path_buf);
    let file = host
        .plan_component(request.id, project.as_ref(), action, request.component)
        .await
        .map_err(session::failure)?;
    let path = request.out.map_or_else(
        || PathBuf::from(format!("{}.plan.json", request.id)),
        Path::to_path_buf,
    );
    let text = c2_relay::json::plan_file_text(&file);
    #[expect(
        clippy::disallowed_methods,
        reason = "`plan` writes the plan file the user named"
    )]
    std::fs::write(&path, text + "\n").map_err(|error| {
        Failure::environment(
            "unreadable_path",
            format!(
                "cannot write the plan file {}: {error}; pass --out FILE in a writable directory",
                path.display()
            ),
        )
    })?;
    let action_name = match &file.change {
        PlanAction::Enable => "enable",
        PlanAction::Disable => "disable",
        PlanAction::Inherit => "inherit",
        PlanAction::Configure { .. } => "configure",
        _ => "change",
    };
    let scope = match &file.project {
        Some(dir) => format!("project {}", dir.display()),
        None => "user".to_owned(),
    };
    let revisions = &file.revisions;
    let project_revision = revisions
        .project
        .map(|r| format!(", project {r}"))
        .unwrap_or_default();
    let what = match &file.component {
        Some(component) => format!("{} --component {component}", file.id),
        None => file.id.clone(),
    };
    let human = format!(
        "plan: {action_name} {what} ({scope})\n{}  revisions: graph {}, config {}{project_revision}\nwritten to {}: apply it with `c2-plugins apply {}`",
        impact_text(&file.impact),
        revisions.graph,
        revisions.config,
        path.display(),
        path.display()
    );
    Ok(out.success(
        json!({
            "file": path.display().to_string(),
            "plan": c2_relay::json::plan(&file, c2_relay::json::Revisions::Numbers),
        }),
        &human,
    ))
}

/// Reads a plan file; a missing file is the environment's fault, a malformed one the plan's.
#[expect(
    clippy::disallowed_methods,
    reason = "`apply` reads the plan file the user named"
)]
fn read(path: &Path) -> Result<PlanFile, Failure> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        Failure::environment(
            "unreadable_path",
            format!("cannot read the plan file {}: {error}", path.display()),
        )
    })?;
    c2_relay::json::read_plan(&text).map_err(|error| {
        Failure::operation(
            "invalid_plan",
            format!(
                "{} is not a plan file ({error}): write one with `c2-plugins plan`",
                path.display()
            ),
        )
    })
}

pub(crate) async fn apply(out: &mut Out, host: &PluginHost, path: &Path) -> CmdResult {
    let file = read(path)?;
    let applied = host.apply_plan(&file).await.map_err(session::failure)?;
    let human = format!(
        "applied the plan for {} (policy revision {})\n{}",
        file.id,
        applied.revision,
        impact_text(&applied.impact)
    );
    Ok(out.success(applied_json(&file.id, &applied), human.trim_end()))
}
