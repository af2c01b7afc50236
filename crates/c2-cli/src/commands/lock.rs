//! `lock [--output FILE]`, `lock verify FILE` and `install --locked FILE`: the installed set
//! as a lock file (the format is c2-sources' [`LockFile`]), drift between a lock and the
//! store, and a store made to hold exactly a lock's set.
//!
//! `install --locked` fetches every entry from its recorded provenance and verifies every
//! digest before anything is stored; one mismatch refuses the whole set. It then stores each
//! bundle and trusts and enables it as the lock records: the lock binds trust to the digest
//! it names, and only content with that digest is stored.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use c2_host::{HostError, InstallOptions, PluginHost, StateChange, Target};
use c2_policy::{PolicyOptions, PolicyStore, Switch};
use c2_sources::{Drift, LockEnablement, LockEntry, LockFile};
use serde_json::{Value, json};

use crate::CmdResult;
use crate::output::{Failure, Lines, Out, terminal_text};
use crate::report;
use crate::session;

/// `lock [--output FILE]` and `lock verify FILE`.
#[derive(Debug, clap::Args)]
pub(crate) struct LockArgs {
    /// Write the lock file here [default: stdout]
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(subcommand)]
    action: Option<LockAction>,
}

/// `lock` subcommands.
#[derive(Debug, clap::Subcommand)]
enum LockAction {
    /// Report how the store differs from a lock file (exit 1 on any difference)
    Verify {
        /// The lock file
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

pub(crate) fn run(out: &mut Out, host: &PluginHost, args: &LockArgs) -> CmdResult {
    match &args.action {
        Some(LockAction::Verify { file }) => verify(out, host, file),
        None => write(out, host, args.output.as_deref()),
    }
}

fn source_failure(error: c2_sources::SourceError) -> Failure {
    session::failure(HostError::from(error))
}

/// The lock of what the host has installed, with each project's own choice read from the
/// policy file.
fn current(host: &PluginHost) -> Result<LockFile, Failure> {
    let policy = PolicyStore::open(&host.options().plugins_dir, PolicyOptions::default());
    let projects = policy
        .document()
        .map(|d| d.projects.clone())
        .unwrap_or_default();
    let entries = host
        .list()
        .iter()
        .map(|s| {
            let mut enabled = LockEnablement::user(s.enabled);
            for (project, entries) in &projects {
                match entries.get(&s.module).map(|e| e.state) {
                    Some(Switch::Enabled) => enabled.projects.insert(project.clone(), true),
                    Some(Switch::Disabled) => enabled.projects.insert(project.clone(), false),
                    _ => None,
                };
            }
            LockEntry::from_record(&s.record, s.trusted, enabled)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(source_failure)?;
    Ok(LockFile::new(entries))
}

fn write(out: &mut Out, host: &PluginHost, output: Option<&Path>) -> CmdResult {
    let lock = current(host)?;
    let text = lock.to_text();
    let Some(path) = output else {
        if out.json() {
            let value = serde_json::to_value(&lock).unwrap_or(Value::Null);
            return Ok(out.success(value, ""));
        }
        out.print(text.trim_end());
        return Ok(ExitCode::SUCCESS);
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "`lock --output` writes the lock file the user named"
    )]
    std::fs::write(path, &text).map_err(|error| {
        Failure::environment(
            "unreadable_path",
            format!("cannot write the lock file {}: {error}", path.display()),
        )
    })?;
    let count = lock.plugins.len();
    let human = format!("locked {} in {}", bundles(count), path.display());
    let value = json!({"path": path, "plugins": count});
    Ok(out.success(value, &human))
}

fn verify(out: &mut Out, host: &PluginHost, file: &Path) -> CmdResult {
    let lock = LockFile::read(file).map_err(source_failure)?;
    let records: Vec<_> = host.list().into_iter().map(|s| s.record).collect();
    let drift = c2_sources::drift(&lock, &records);
    let code = if drift.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if out.json() {
        let rows = serde_json::to_value(&drift).unwrap_or(Value::Null);
        out.success(json!({"clean": drift.is_empty(), "drift": rows}), "");
        return Ok(code);
    }
    if drift.is_empty() {
        out.print(&format!(
            "the store matches {} ({})",
            file.display(),
            bundles(lock.plugins.len())
        ));
        return Ok(code);
    }
    out.print(report::table(&drift_rows(&drift), "").trim_end());
    Ok(code)
}

fn drift_rows(drift: &[Drift]) -> Vec<[String; 4]> {
    let mut rows = vec![["ID", "DRIFT", "LOCKED", "INSTALLED"].map(str::to_owned)];
    for row in drift {
        let kind = serde_json::to_value(row.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let text = |v: &Option<String>| {
            terminal_text(v.as_deref().unwrap_or("-"), Lines::One).into_owned()
        };
        rows.push([
            row.id.clone(),
            kind,
            text(&row.locked),
            text(&row.installed),
        ]);
    }
    rows
}

pub(crate) async fn install(
    out: &mut Out,
    host: &PluginHost,
    store: &Path,
    file: &Path,
) -> CmdResult {
    let lock = LockFile::read(file).map_err(source_failure)?;
    // Every entry is fetched and verified first: nothing is stored unless all of them match.
    let fetched = host.fetch_locked(&lock).await.map_err(session::failure)?;
    let mut installed = Vec::with_capacity(fetched.len());
    for (entry, fetched) in lock.plugins.iter().zip(fetched) {
        let options = InstallOptions::default()
            .with_trust(entry.trusted)
            .with_enable(entry.enabled.user);
        let outcome = host
            .install_fetched(fetched, options)
            .await
            .map_err(session::failure)?;
        for (project, on) in &entry.enabled.projects {
            let (target, state) = (Target::Project(PathBuf::from(project)), switch(*on));
            if let Err(error) = host.set_state(&entry.id, &target, state).await {
                out.progress(&format!(
                    "warning: {} not {} in {project}: {error}",
                    entry.id,
                    if *on { "enabled" } else { "disabled" }
                ));
            }
        }
        for note in &outcome.notes {
            out.progress(&format!(
                "warning: {}",
                terminal_text(note, Lines::Indented)
            ));
        }
        installed.push(c2_relay::json::install_outcome(&outcome, options));
    }
    let human = format!(
        "installed {} from {} into {}",
        bundles(installed.len()),
        file.display(),
        store.display()
    );
    out.progress(&human);
    let ids: Vec<&str> = lock.plugins.iter().map(|e| e.id.as_str()).collect();
    Ok(out.success(json!({"installed": installed}), &ids.join("\n")))
}

fn switch(on: bool) -> StateChange {
    if on {
        StateChange::Enable
    } else {
        StateChange::Disable
    }
}

fn bundles(count: usize) -> String {
    if count == 1 {
        "1 bundle".to_owned()
    } else {
        format!("{count} bundles")
    }
}
