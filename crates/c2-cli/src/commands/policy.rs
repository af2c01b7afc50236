//! `trust`, `untrust`, `enable`, `disable`, `inherit` and `reset`: each one policy change that
//! the host plans, applies, reconciles in every realm and confirms (or rolls back).

use std::fmt::Write as _;
use std::path::Path;

use c2_host::{Applied, ComponentRef, ImpactView, PluginHost, StateChange};
use serde_json::json;

use crate::CmdResult;
use crate::output::Out;
use crate::session;

/// A change of one installed bundle.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change {
    Trust,
    Untrust,
    State(StateChange),
}

impl Change {
    fn past_tense(self) -> &'static str {
        match self {
            Change::Trust => "trusted",
            Change::Untrust => "untrusted",
            Change::State(StateChange::Enable) => "enabled",
            Change::State(StateChange::Disable) => "disabled",
            Change::State(StateChange::Inherit) => "inherits the user's choice",
            Change::State(_) => "changed",
        }
    }
}

pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    id: &str,
    change: Change,
    project: Option<&Path>,
) -> CmdResult {
    let applied = match change {
        Change::Trust => host.trust(id).await,
        Change::Untrust => host.untrust(id).await,
        Change::State(state) => host.set_state(id, &session::target(project), state).await,
    }
    .map_err(session::failure)?;
    let scope = match project {
        Some(dir) => format!(" in project {}", dir.display()),
        None => String::new(),
    };
    let human = format!(
        "{id} {}{scope} (policy revision {})\n{}",
        change.past_tense(),
        applied.revision,
        impact_text(&applied.impact)
    );
    Ok(out.success(applied_json(id, &applied), human.trim_end()))
}

/// `enable`, `disable` or `inherit`: of one component when `which` names one, else of
/// the whole bundle.
pub(crate) async fn switch(
    out: &mut Out,
    host: &PluginHost,
    id: &str,
    which: Option<&str>,
    state: StateChange,
    project: Option<&Path>,
) -> CmdResult {
    match which {
        Some(c) => component(out, host, id, c, state, project).await,
        None => run(out, host, id, Change::State(state), project).await,
    }
}

/// `enable|disable|inherit <ID> --component <KIND>:<LOCAL-ID>`: one component's choice.
pub(crate) async fn component(
    out: &mut Out,
    host: &PluginHost,
    id: &str,
    component: &str,
    state: StateChange,
    project: Option<&Path>,
) -> CmdResult {
    let parsed = ComponentRef::parse(component).map_err(|error| session::failure(error.into()))?;
    let applied = host
        .set_component(id, &session::target(project), &parsed, state)
        .await
        .map_err(session::failure)?;
    let scope = match project {
        Some(dir) => format!("project {}", dir.display()),
        None => "the user scope".to_owned(),
    };
    let done = match state {
        StateChange::Enable => "enabled",
        StateChange::Disable => "disabled",
        StateChange::Inherit => "follows the plugin again (override dropped)",
        _ => "changed",
    };
    let key = parsed.policy_key(id);
    let human = format!(
        "{key} {done} in {scope} (policy revision {})\n{}",
        applied.revision,
        impact_text(&applied.impact)
    );
    let mut json = applied_json(id, &applied);
    json["component"] = json!(key);
    Ok(out.success(json, human.trim_end()))
}

pub(crate) async fn reset(out: &mut Out, host: &PluginHost, id: Option<&str>) -> CmdResult {
    let revision = host.reset(id).await.map_err(session::failure)?;
    let human = match id {
        Some(id) => format!("cleared the policy of {id} (policy revision {revision})"),
        None => format!("cleared all policy (policy revision {revision})"),
    };
    Ok(out.success(
        c2_relay::json::reset(id, revision, c2_relay::json::Revisions::Numbers),
        &human,
    ))
}

/// A committed change in the one JSON vocabulary, revisions as numbers.
pub(crate) fn applied_json(id: &str, applied: &Applied) -> serde_json::Value {
    c2_relay::json::applied(id, applied, c2_relay::json::Revisions::Numbers)
}

/// One line per non-empty part of an impact, or `no runtime change`.
pub(crate) fn impact_text(impact: &ImpactView) -> String {
    let parts = [
        ("starts", &impact.starts),
        ("stops", &impact.stops),
        ("enables", &impact.enables),
        ("disables", &impact.disables),
        ("reloads", &impact.reloads),
        ("dependents", &impact.dependents),
        ("live resources", &impact.resources),
    ];
    let mut text = String::new();
    for (label, names) in parts {
        if !names.is_empty() {
            let _ = writeln!(text, "  {label}: {}", names.join(", "));
        }
    }
    if text.is_empty() {
        text.push_str("  no runtime change\n");
    }
    if !impact.user_runtimes.is_empty() {
        let _ = writeln!(
            text,
            "  runtime stays user-wide: {} (in this project the change governs its language servers and whether its commands are reachable)",
            impact.user_runtimes.join(", ")
        );
    }
    text
}
