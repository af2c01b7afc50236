//! `validate <PATH>...`: bundle directories and archives through the bounded collector (the
//! whole bundle, not only plugin.json), and `marketplace.json` catalogs through their
//! cross-check. Every path is reported; the exit code is the worst outcome.

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use c2_bundle_collector::{CollectedBundle, Limits, MarketplaceCheck};
use serde_json::{Value, json};

use crate::CmdResult;
use crate::commands::store_failure;
use crate::output::{Failure, Out};
use crate::report::{self, Paint};

/// The file name that selects the catalog check instead of bundle collection.
const MARKETPLACE_FILE: &str = "marketplace.json";

pub(crate) fn run(out: &mut Out, paths: &[PathBuf]) -> CmdResult {
    let limits = Limits::default();
    let checked: Vec<(&Path, Checked)> = paths
        .iter()
        .map(|path| (path.as_path(), check(path, &limits)))
        .collect();

    let unreadable = checked
        .iter()
        .any(|(_, c)| matches!(c, Checked::Unreadable(_)));
    let invalid = checked.iter().any(|(_, c)| !c.is_valid());
    if out.json() {
        let results: Vec<Value> = checked.iter().map(|(p, c)| c.to_json(p)).collect();
        out.print_json(&json!({ "results": results }));
    } else {
        let paint = Paint { color: out.color };
        let mut text = String::new();
        for (path, checked) in &checked {
            if let Checked::Unreadable(failure) = checked {
                out.fail(failure);
                continue;
            }
            text.push_str(&checked.to_human(path, paint));
            text.push('\n');
        }
        text.push_str(&summary(&checked, paint));
        out.print(&text);
    }
    Ok(if unreadable {
        ExitCode::from(2)
    } else if invalid {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What one path turned out to be.
enum Checked {
    Bundle(Box<CollectedBundle>),
    /// The catalog check and the catalog's text (for showing the offending lines).
    Marketplace(MarketplaceCheck, Option<String>),
    Unreadable(Failure),
}

fn check(path: &Path, limits: &Limits) -> Checked {
    let is_marketplace = path
        .file_name()
        .is_some_and(|name| name == MARKETPLACE_FILE);
    if is_marketplace {
        match c2_bundle_collector::check_marketplace(path, limits) {
            Ok(check) => {
                let text = read_text(path, limits.max_file_bytes);
                Checked::Marketplace(check, text)
            }
            Err(error) => Checked::Unreadable(store_failure(error)),
        }
    } else {
        match c2_bundle_collector::collect(path, limits) {
            Ok(mut bundle) => {
                let search_path = std::env::var_os("PATH");
                let warnings = path_warnings(&bundle, search_path.as_deref());
                bundle.diagnostics.extend(warnings);
                Checked::Bundle(Box::new(bundle))
            }
            Err(error) => Checked::Unreadable(store_failure(error)),
        }
    }
}

/// The code of the warning for a bare command found neither in the bundle root nor on `PATH`.
pub(crate) const COMMAND_NOT_ON_PATH: &str = "command-not-on-path";

/// A warning (not an error: `PATH` differs between machines) for each runtime or
/// language-server command that is a bare name, not shipped in the bundle root and not found
/// on `search_path` now, so it would fail to start here.
fn path_warnings(
    bundle: &CollectedBundle,
    search_path: Option<&std::ffi::OsStr>,
) -> Vec<c2_bundle_collector::Diagnostic> {
    let Some(manifest) = &bundle.manifest else {
        return Vec::new();
    };
    let codetwo = &manifest.codetwo;
    let runtime = codetwo.runtime.iter().map(|runtime| {
        (
            "the runtime".to_owned(),
            "/extensions/dev.codetwo/runtime/command".to_owned(),
            runtime.executable(),
        )
    });
    let servers = codetwo
        .language_servers
        .iter()
        .enumerate()
        .map(|(i, server)| {
            (
                format!("the language server `{}`", server.id),
                format!("/extensions/dev.codetwo/languageServers/{i}/command"),
                server.executable(),
            )
        });
    runtime
        .chain(servers)
        .filter_map(|(owner, pointer, executable)| {
            let c2_manifest::ExecutableRef::BareName(name) = executable else {
                return None;
            };
            if bundle.files.contains_key(name) || on_path(name, search_path) {
                return None;
            }
            Some(c2_bundle_collector::Diagnostic {
                code: COMMAND_NOT_ON_PATH,
                severity: c2_manifest::Severity::Warning,
                file: Some("plugin.json".to_owned()),
                pointer: Some(pointer),
                line: None,
                column: None,
                message: format!(
                    "{owner} command `{name}` is not in the bundle root and not on PATH here, so it cannot start on this machine"
                ),
                help: Some(format!(
                    "install `{name}` where the host runs, or ship it in the bundle and name it by a bundle-relative path"
                )),
            })
        })
        .collect()
}

/// Whether an executable regular file `name` is in one of the absolute directories of
/// `search_path` (relative entries are ignored, as the supervisor ignores them).
fn on_path(name: &str, search_path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(search_path) = search_path else {
        return false;
    };
    std::env::split_paths(search_path)
        .filter(|dir| dir.is_absolute())
        .any(|dir| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// The catalog text, read again (bounded) only to show source lines; the check itself
/// already read and validated it.
#[expect(
    clippy::disallowed_methods,
    reason = "re-reads, bounded, a catalog the user named, only to quote its lines"
)]
fn read_text(path: &Path, max_bytes: u64) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max_bytes)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

impl Checked {
    fn is_valid(&self) -> bool {
        match self {
            Checked::Bundle(bundle) => bundle.is_valid(),
            Checked::Marketplace(check, _) => check.is_valid(),
            Checked::Unreadable(_) => false,
        }
    }

    fn diagnostics(&self) -> &[c2_bundle_collector::Diagnostic] {
        match self {
            Checked::Bundle(bundle) => &bundle.diagnostics,
            Checked::Marketplace(check, _) => &check.diagnostics,
            Checked::Unreadable(_) => &[],
        }
    }

    fn to_human(&self, path: &Path, paint: Paint) -> String {
        let verdict = if self.is_valid() {
            paint.verdict("valid", true)
        } else {
            paint.verdict("invalid", false)
        };
        let diagnostics = self.diagnostics();
        let (label, body) = match self {
            Checked::Bundle(bundle) => {
                let label = match (bundle.name(), bundle.version()) {
                    (Some(name), Some(version)) => format!("{name} {version}, "),
                    (Some(name), None) => format!("{name} -, "),
                    _ => String::new(),
                };
                let rendered = report::render_diagnostics(
                    diagnostics,
                    |file| {
                        bundle
                            .files
                            .get(file)
                            .map(|entry| String::from_utf8_lossy(&entry.bytes))
                    },
                    paint,
                );
                (
                    label,
                    join_blocks(&rendered, &report::render_inventory(&bundle.inventory)),
                )
            }
            Checked::Marketplace(check, text) => {
                let label = match check.marketplace.as_ref().and_then(|m| m.name.as_deref()) {
                    Some(name) => format!("catalog {name}, "),
                    None => "catalog, ".to_owned(),
                };
                let rendered = report::render_diagnostics(
                    diagnostics,
                    |_| text.as_deref().map(Cow::Borrowed),
                    paint,
                );
                (label, join_blocks(&rendered, &render_entries(check)))
            }
            Checked::Unreadable(failure) => (String::new(), failure.message.clone()),
        };
        let header = format!(
            "{}: {label}{verdict} ({})",
            path.display(),
            report::counts(diagnostics)
        );
        join_blocks(&header, &body)
    }

    fn to_json(&self, path: &Path) -> Value {
        let path = path.display().to_string();
        match self {
            Checked::Bundle(bundle) => c2_relay::json::validated_bundle(&path, bundle),
            Checked::Marketplace(check, _) => c2_relay::json::validated_marketplace(&path, check),
            Checked::Unreadable(failure) => {
                c2_relay::json::unreadable_path(&path, &failure.kind, &failure.message)
            }
        }
    }
}

/// The catalog's local entries and what was found at each.
fn render_entries(check: &MarketplaceCheck) -> String {
    if check.entries.is_empty() {
        return "local entries: none\n".to_owned();
    }
    let rows: Vec<[String; 4]> = check
        .entries
        .iter()
        .map(|entry| {
            let state = match &entry.bundle {
                None => "unreadable",
                Some(bundle) if bundle.is_valid() => "valid",
                Some(_) => "invalid",
            };
            [
                entry.name.clone(),
                entry.version.clone(),
                entry.path.display().to_string(),
                state.to_owned(),
            ]
        })
        .collect();
    format!(
        "local entries ({}):\n{}",
        check.entries.len(),
        report::table(&rows, "  ")
    )
}

/// `first`, a blank line, then `second`, each ending in one newline; empty blocks vanish.
fn join_blocks(first: &str, second: &str) -> String {
    let blocks: Vec<&str> = [first, second]
        .into_iter()
        .map(str::trim_end)
        .filter(|b| !b.is_empty())
        .collect();
    let mut text = blocks.join("\n\n");
    text.push('\n');
    text
}

fn summary(checked: &[(&Path, Checked)], paint: Paint) -> String {
    let valid = checked.iter().filter(|(_, c)| c.is_valid()).count();
    let unreadable = checked
        .iter()
        .filter(|(_, c)| matches!(c, Checked::Unreadable(_)))
        .count();
    let invalid = checked.len() - valid - unreadable;
    let all: Vec<_> = checked
        .iter()
        .flat_map(|(_, c)| c.diagnostics().iter().cloned())
        .collect();
    let mut line = format!(
        "{}: {valid} valid, {invalid} invalid",
        report::plural(checked.len(), "path checked", "paths checked"),
    );
    if unreadable > 0 {
        line.push_str(&format!(", {unreadable} unreadable"));
    }
    line.push_str(&format!(" ({})", report::counts(&all)));
    paint.verdict(&line, valid == checked.len())
}
