//! `bisect start|good|bad|skip|status|reset`: find the enabled bundle (or pair) behind a
//! problem by halving the enabled bundles through ordinary policy changes. The search is
//! c2-policy's [`Bisection`]; its state lives in the plugins directory beside the policy
//! document, so it survives a restart and every host on the directory sees the same policy.
//! The algorithm and its step counts are in docs/operability.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use c2_host::{BUNDLE_PREFIX, PluginHost, Project, StateChange};
use c2_policy::{
    BisectFile, BisectRecord, Bisection, Outcome, PolicyOptions, PolicyStore, Restore, Scope,
    Switch, Verdict,
};
use serde_json::{Value, json};

use crate::CmdResult;
use crate::output::{Failure, Out};
use crate::session::{self, Settings};

/// `bisect` and its action.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Start: the problem shows now; disable half of the enabled bundles
    Start {
        /// The project directory whose realm to bisect [default: the user realm]
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// An enabled bundle to leave enabled throughout (repeatable)
        #[arg(long, value_name = "ID")]
        keep: Vec<String>,
    },
    /// The problem does not show with the bundles enabled now
    Good,
    /// The problem shows with the bundles enabled now
    Bad,
    /// This step cannot be judged; try another split
    Skip,
    /// The search so far and the step in progress
    Status,
    /// End the bisect: give back the enablement bisect took away
    Reset,
}

/// Runs one `bisect` action against the host of the plugins directory.
pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    settings: &Settings,
    args: &Args,
) -> CmdResult {
    let dir = super::plugins_dir(settings.plugins_dir.as_deref())?;
    let file = BisectFile::new(&dir);
    let loaded = file.load().map_err(policy_failure)?;
    match (&args.action, loaded) {
        (Action::Start { project, keep }, None) => {
            start(out, host, &dir, project.as_deref(), keep).await
        }
        (Action::Start { .. }, Some(_)) => Err(Failure::operation(
            "bisect_running",
            "a bisect is already in progress in this plugins directory",
        )
        .with_hint("judge its step with `c2-plugins bisect good|bad|skip`, or end it with `c2-plugins bisect reset`")),
        (_, None) => Err(Failure::operation(
            "no_bisect",
            "no bisect is in progress in this plugins directory",
        )
        .with_hint("start one with `c2-plugins bisect start`")),
        (Action::Status, Some(record)) => Ok(report(out, &record, &dir, "")),
        (Action::Reset, Some(record)) => reset(out, host, &dir, record).await,
        (action, Some(mut record)) => {
            let verdict = match action {
                Action::Good => Verdict::Good,
                Action::Bad => Verdict::Bad,
                _ => Verdict::Skip,
            };
            record.bisection.record(verdict);
            file.save(&record).map_err(policy_failure)?;
            apply_step(host, &dir, &mut record).await?;
            Ok(report(out, &record, &dir, ""))
        }
    }
}

async fn start(
    out: &mut Out,
    host: &PluginHost,
    dir: &Path,
    project: Option<&Path>,
    keep: &[String],
) -> CmdResult {
    let key = match project {
        Some(path) => Some(
            Project::normalize(path)
                .map_err(session::failure)?
                .key()
                .to_owned(),
        ),
        None => None,
    };
    let scope = scope(key.as_deref());
    let store = PolicyStore::open(dir, PolicyOptions::default());
    let document = store.document().cloned().unwrap_or_default();
    let mut candidates = Vec::new();
    let mut fixed = Vec::new();
    for row in host
        .catalog(&session::target(project))
        .map_err(session::failure)?
    {
        let Some(id) = row.entry.name.strip_prefix(BUNDLE_PREFIX) else {
            continue;
        };
        if !row.enabled || row.trusted != Some(true) || keep.iter().any(|k| k == id) {
            continue;
        }
        // A user entry enabled by the bundle's default cannot be given back exactly by a
        // policy change, so bisect leaves it alone.
        let switch = document.entry(&row.entry.name, &scope).map(|e| e.state);
        let scopes = serde_json::to_value(&row.entry.meta.scopes).unwrap_or_default();
        let per_project = scopes
            .as_array()
            .is_some_and(|s| s.contains(&json!("project")));
        // Nor can a project change a bundle that runs for the user only: it stays enabled too.
        let fixed_here = match scope {
            Scope::User => switch != Some(Switch::Enabled),
            _ => !per_project,
        };
        if fixed_here {
            fixed.push(id.to_owned());
            continue;
        }
        candidates.push(id.to_owned());
    }
    candidates.sort();
    let mut record = BisectRecord::new(key, store.revision(), Bisection::new(candidates));
    record.kept = keep.to_vec();
    record.kept.extend(fixed);
    BisectFile::new(dir).save(&record).map_err(policy_failure)?;
    apply_step(host, dir, &mut record).await?;
    let header = format!(
        "bisect started from policy revision {} over {} bundle(s)\n",
        record.started_from,
        record.bisection.candidates().len()
    );
    Ok(report(out, &record, dir, &header))
}

fn scope(key: Option<&str>) -> Scope {
    key.map_or(Scope::User, |key| Scope::Project(key.to_owned()))
}

fn target(record: &BisectRecord) -> c2_host::Target {
    let project = record.project.as_deref().map(Path::new);
    session::target(project)
}

/// Makes the policy match the step in progress: the candidates it names enabled, the others
/// disabled. Each change is one ordinary plan/apply, and the state file is saved after each,
/// so an interrupted step still knows what bisect disabled.
async fn apply_step(
    host: &PluginHost,
    dir: &Path,
    record: &mut BisectRecord,
) -> Result<(), Failure> {
    let Some(testing) = record.bisection.testing() else {
        return Ok(());
    };
    let file = BisectFile::new(dir);
    let target = target(record);
    let scope = scope(record.project.as_deref());
    for id in record.bisection.candidates().to_vec() {
        let wanted = testing.contains(&id);
        let disabled = record.disabled.get(&id).copied();
        let applied = match (wanted, disabled) {
            (true, Some(restore)) => {
                let applied = host.set_state(&id, &target, change(restore)).await;
                if applied.is_ok() {
                    record.disabled.remove(&id);
                }
                applied
            }
            (false, None) => {
                let store = PolicyStore::open(dir, PolicyOptions::default());
                let module = format!("{BUNDLE_PREFIX}{id}");
                let switch = store
                    .document()
                    .and_then(|d| d.entry(&module, &scope))
                    .map(|e| e.state);
                let restore = match switch {
                    Some(Switch::Enabled) => Restore::Enable,
                    _ => Restore::Inherit,
                };
                // Saved before the change: a crash right after it still knows what to restore.
                record.disabled.insert(id.clone(), restore);
                file.save(record).map_err(policy_failure)?;
                let applied = host.set_state(&id, &target, StateChange::Disable).await;
                if applied.is_err() {
                    record.disabled.remove(&id);
                    file.save(record).map_err(policy_failure)?;
                }
                applied
            }
            _ => continue,
        };
        record.last_written = applied.map_err(session::failure)?.revision;
        file.save(record).map_err(policy_failure)?;
    }
    Ok(())
}

fn change(restore: Restore) -> StateChange {
    match restore {
        Restore::Enable => StateChange::Enable,
        _ => StateChange::Inherit,
    }
}

async fn reset(out: &mut Out, host: &PluginHost, dir: &Path, record: BisectRecord) -> CmdResult {
    let store = PolicyStore::open(dir, PolicyOptions::default());
    let scope = scope(record.project.as_deref());
    let outside = store.revision() != record.last_written;
    let target = target(&record);
    let mut restored = Vec::new();
    let mut left = Vec::new();
    for (id, restore) in &record.disabled {
        let module = format!("{BUNDLE_PREFIX}{id}");
        let switch = store
            .document()
            .and_then(|d| d.entry(&module, &scope))
            .map(|e| e.state);
        if switch != Some(Switch::Disabled) {
            // Someone else changed this bundle since bisect disabled it: theirs stands.
            left.push(id.clone());
            continue;
        }
        host.set_state(id, &target, change(*restore))
            .await
            .map_err(session::failure)?;
        restored.push(id.clone());
    }
    BisectFile::new(dir).remove().map_err(policy_failure)?;
    let revision = PolicyStore::open(dir, PolicyOptions::default()).revision();
    let mut human = if outside {
        format!(
            "policy changed outside bisect since revision {}: restored only what bisect changed (policy revision {revision})\n",
            record.last_written
        )
    } else {
        format!(
            "restored the enablement of policy revision {} (policy revision {revision})\n",
            record.started_from
        )
    };
    if !restored.is_empty() {
        let _ = writeln!(human, "  re-enabled: {}", restored.join(", "));
    }
    if !left.is_empty() {
        let _ = writeln!(
            human,
            "  changed by someone else, left as they are: {}",
            left.join(", ")
        );
    }
    let json = json!({
        "startedFrom": record.started_from,
        "revision": revision,
        "changedOutside": outside,
        "restored": restored,
        "leftAsChanged": left,
    });
    Ok(out.success(json, human.trim_end()))
}

/// The search so far, the step in progress (or the result) and what to do next.
fn report(
    out: &mut Out,
    record: &BisectRecord,
    dir: &Path,
    header: &str,
) -> std::process::ExitCode {
    let bisection = &record.bisection;
    let steps = bisection.steps().len();
    let mut human = header.to_owned();
    let testing = bisection.testing();
    match (bisection.outcome(), &testing) {
        (Some(outcome), _) => {
            let _ = writeln!(human, "{} after {steps} step(s)", outcome_text(outcome));
            let _ = writeln!(
                human,
                "run `c2-plugins bisect reset` to restore the enablement of policy revision {}",
                record.started_from
            );
        }
        (None, Some(enabled)) => {
            if let Some(suspect) = bisection.suspect() {
                let _ = writeln!(human, "suspect: {suspect} (isolated after {steps} step(s))");
            }
            let what = if bisection.is_confirming() {
                "confirming"
            } else {
                "halving"
            };
            let _ = writeln!(
                human,
                "step {} ({what}): {} of {} bundle(s) enabled: {}",
                steps + 1,
                enabled.len(),
                bisection.candidates().len(),
                list(enabled)
            );
            let disabled: Vec<String> = record.disabled.keys().cloned().collect();
            let _ = writeln!(human, "  disabled by bisect: {}", list(&disabled));
            human.push_str(
                "check whether the problem shows, then run `c2-plugins bisect good`, `bad` or `skip`\n",
            );
        }
        (None, None) => {}
    }
    if !record.kept.is_empty() {
        let _ = writeln!(human, "  left enabled: {}", record.kept.join(", "));
    }
    let json = json!({
        "stateFile": dir.join(c2_policy::BISECT_FILE),
        "startedFrom": record.started_from,
        "project": record.project,
        "candidates": bisection.candidates(),
        "kept": record.kept,
        "steps": bisection.steps(),
        "testing": testing,
        "confirming": bisection.is_confirming(),
        "suspect": bisection.suspect(),
        "disabledByBisect": record.disabled.keys().collect::<Vec<_>>(),
        "outcome": bisection.outcome().map(|o| serde_json::to_value(o).unwrap_or(Value::Null)),
    });
    out.success(json, human.trim_end())
}

fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Culprit { id } => format!("culprit: {id}"),
        Outcome::Pair { ids } => {
            format!("culprit pair (fails only together): {}, {}", ids[0], ids[1])
        }
        Outcome::Set { ids } => format!(
            "no pair fails alone; smallest failing set found: {}",
            ids.join(", ")
        ),
        Outcome::Inconclusive { suspects } => {
            format!("inconclusive (skipped steps); suspects: {}", list(suspects))
        }
        _ => "ended".to_owned(),
    }
}

trait WithHint {
    fn with_hint(self, hint: &str) -> Self;
}

impl WithHint for Failure {
    fn with_hint(mut self, hint: &str) -> Self {
        self.hint = Some(hint.to_owned());
        self
    }
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

fn policy_failure(error: c2_policy::Error) -> Failure {
    let hint = error.hint();
    let failure = Failure::environment("io", error.to_string());
    match hint {
        Some(hint) => failure.with_hint(hint),
        None => failure,
    }
}
