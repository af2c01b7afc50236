//! Discovery of contributions by the file conventions of plugin-standard §5 and from the
//! manifest's declarations. Anything else is stored, inactive and never reported.

use std::collections::{BTreeMap, BTreeSet};

use c2_manifest::{Manifest, SkillOptions};
use serde::Deserialize;

use crate::diagnostic::{Diagnostic, codes};
use crate::inventory::{Contribution, ContributionKind, ContributionStatus, Inventory};
use crate::scaffold::SCAFFOLD_METADATA;
use crate::tree::FileEntry;

pub(crate) fn inventory(
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    manifest: Option<&Manifest>,
    skill_options: &SkillOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Inventory {
    let mut found = Vec::new();
    skills(files, dirs, skill_options, diagnostics, &mut found);
    for (path, id) in children(files, "agents/", ".md") {
        found.push(contribution(ContributionKind::Agent, id, Some(path)));
    }
    for (path, id) in children(files, "commands/", ".md") {
        found.push(contribution(
            ContributionKind::PromptCommand,
            id,
            Some(path),
        ));
    }
    mcp(files, dirs, manifest, diagnostics, &mut found);
    if let Some(manifest) = manifest {
        declared(manifest, &mut found);
    }
    for (path, id) in children(files, "scenes/", ".scene.json") {
        found.push(contribution(ContributionKind::Scene, id, Some(path)));
    }
    for (path, id) in children(files, "scenes/", ".pipeline.json") {
        found.push(contribution(ContributionKind::Pipeline, id, Some(path)));
    }
    scaffolds(
        files,
        dirs,
        "scaffolds",
        ContributionKind::Scaffold,
        diagnostics,
        &mut found,
    );
    scaffolds(
        files,
        dirs,
        "templates",
        ContributionKind::Template,
        diagnostics,
        &mut found,
    );
    for (path, kind) in [
        ("hooks/hooks.json", ContributionKind::Hooks),
        ("monitors/monitors.json", ContributionKind::Monitors),
    ] {
        if files.contains_key(path) {
            diagnostics.push(
                Diagnostic::warning(
                    codes::UNSUPPORTED_COMPONENT,
                    path.to_owned(),
                    format!(
                        "{path} is inventoried but unsupported: this host has no adapter for it"
                    ),
                )
                .with_help("it is stored and never run"),
            );
            let id = path.split('/').next().unwrap_or(path).to_owned();
            found.push(contribution(kind, id, Some(path.to_owned())));
        }
    }
    Inventory {
        contributions: found,
    }
}

fn contribution(kind: ContributionKind, id: String, path: Option<String>) -> Contribution {
    Contribution {
        kind,
        id,
        status: kind.status(),
        path,
        title: None,
        description: None,
        transport: None,
        reason: None,
    }
}

/// Direct children of `prefix` whose name ends with `suffix`, as `(path, stem)`.
fn children(
    files: &BTreeMap<String, FileEntry>,
    prefix: &str,
    suffix: &str,
) -> Vec<(String, String)> {
    files
        .range(prefix.to_owned()..)
        .take_while(|(path, _)| path.starts_with(prefix))
        .filter_map(|(path, _)| {
            let name = &path[prefix.len()..];
            let stem = name.strip_suffix(suffix)?;
            (!name.contains('/') && !stem.is_empty()).then(|| (path.clone(), stem.to_owned()))
        })
        .collect()
}

/// Direct subdirectories of `root`.
fn subdirs<'a>(dirs: &'a BTreeSet<String>, root: &str) -> impl Iterator<Item = &'a str> {
    let prefix = format!("{root}/");
    dirs.iter()
        .filter_map(move |dir| dir.strip_prefix(&prefix).filter(|name| !name.contains('/')))
}

fn declared(manifest: &Manifest, found: &mut Vec<Contribution>) {
    let codetwo = &manifest.codetwo;
    for command in &codetwo.commands {
        let mut c = contribution(ContributionKind::RuntimeCommand, command.id.clone(), None);
        c.title = Some(command.title.clone());
        c.description.clone_from(&command.description);
        found.push(c);
    }
    for ui in &codetwo.ui {
        let mut c = contribution(ContributionKind::UiAction, ui.id.clone(), None);
        c.title = Some(ui.label.clone());
        c.description.clone_from(&ui.description);
        found.push(c);
    }
    for connector in &codetwo.connectors {
        let mut c = contribution(ContributionKind::Connector, connector.id.clone(), None);
        c.title = Some(connector.provider.clone());
        found.push(c);
    }
    for server in &codetwo.language_servers {
        let mut c = contribution(ContributionKind::LanguageServer, server.id.clone(), None);
        c.description = Some(format!("languages: {}", server.languages.join(", ")));
        found.push(c);
    }
}

/// `scaffold.json`: both fields optional, nothing else allowed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScaffoldMetadata {
    name: Option<String>,
    description: Option<String>,
}

fn scaffolds(
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    root: &str,
    kind: ContributionKind,
    diagnostics: &mut Vec<Diagnostic>,
    found: &mut Vec<Contribution>,
) {
    for name in subdirs(dirs, root) {
        let folder = format!("{root}/{name}");
        let mut c = contribution(kind, name.to_owned(), Some(format!("{folder}/")));
        let metadata_path = format!("{folder}/{SCAFFOLD_METADATA}");
        if let Some(entry) = files.get(&metadata_path) {
            match serde_json::from_slice::<ScaffoldMetadata>(&entry.bytes) {
                Ok(metadata) => {
                    c.title = metadata.name;
                    c.description = metadata.description;
                }
                Err(error) => diagnostics.push(
                    Diagnostic::warning(
                        codes::SCAFFOLD_METADATA_INVALID,
                        metadata_path.clone(),
                        format!("{metadata_path} is ignored: {error}"),
                    )
                    .with_help("scaffold.json holds an object with optional string fields name and description"),
                ),
            }
        }
        found.push(c);
    }
}

fn skills(
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    options: &SkillOptions,
    diagnostics: &mut Vec<Diagnostic>,
    found: &mut Vec<Contribution>,
) {
    for name in subdirs(dirs, "skills") {
        let path = format!("skills/{name}/SKILL.md");
        let Some(entry) = files.get(&path) else {
            diagnostics.push(
                Diagnostic::warning(
                    codes::SKILL_INVALID,
                    format!("skills/{name}"),
                    format!("skills/{name} skipped: it has no SKILL.md"),
                )
                .with_help("add SKILL.md or move the folder out of skills/"),
            );
            continue;
        };
        let source = String::from_utf8_lossy(&entry.bytes);
        let report = c2_manifest::validate_skill_with(&source, name, options);
        // A skill's problems never refuse the bundle: an invalid skill is only skipped.
        diagnostics.extend(report.diagnostics.into_iter().map(|d| as_warning(d, &path)));
        match report.skill {
            Some(skill) => {
                let mut c = contribution(ContributionKind::Skill, name.to_owned(), Some(path));
                c.description = Some(skill.description);
                found.push(c);
            }
            None => diagnostics.push(
                Diagnostic::warning(
                    codes::SKILL_INVALID,
                    path.clone(),
                    format!("skill {name} skipped: {path} is invalid"),
                )
                .with_help("fix the frontmatter problems reported for it"),
            ),
        }
    }
}

/// Agent Plugins §7.2.2: a bad document disables MCP, a bad entry skips that server; neither
/// refuses the bundle. Every server is inventoried with its transport and status.
fn mcp(
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    manifest: Option<&Manifest>,
    diagnostics: &mut Vec<Diagnostic>,
    found: &mut Vec<Contribution>,
) {
    const PATH: &str = "mcp.json";
    if dirs.contains(PATH) {
        diagnostics.push(wrong_kind(
            PATH,
            "a regular file",
            "a directory",
            "MCP servers",
        ));
        return;
    }
    let Some(entry) = files.get(PATH) else {
        return;
    };
    let source = String::from_utf8_lossy(&entry.bytes);
    let plugin_schema =
        manifest.map_or(c2_manifest::AGENT_PLUGINS_SCHEMA_URL, |m| m.schema.as_str());
    let report = c2_manifest::validate_mcp_for(&source, plugin_schema);
    diagnostics.extend(report.diagnostics.into_iter().map(|d| as_warning(d, PATH)));
    if let Some(why) = &report.disabled_reason {
        diagnostics.push(
            Diagnostic::warning(
                codes::MCP_INVALID,
                PATH.to_owned(),
                format!("mcp.json is invalid, so MCP is disabled for this bundle: {why}"),
            )
            .with_help("fix the document-level problems reported for mcp.json"),
        );
    }
    if let Some(why) = &report.disabled_reason {
        for name in report.declared {
            let mut c = contribution(ContributionKind::McpServer, name, Some(PATH.to_owned()));
            c.status = ContributionStatus::Disabled;
            c.reason = Some(format!("mcp.json is invalid: {why}"));
            found.push(c);
        }
    }
    for server in report.servers {
        skipped_paths(&server, diagnostics);
        let transport = server.transport.kind();
        let mut c = contribution(
            ContributionKind::McpServer,
            server.name,
            Some(PATH.to_owned()),
        );
        c.description = Some(format!("transport: {transport}"));
        c.transport = Some(transport.to_owned());
        found.push(c);
    }
    for skipped in report.skipped {
        let mut c = contribution(
            ContributionKind::McpServer,
            skipped.name,
            Some(PATH.to_owned()),
        );
        c.status = ContributionStatus::Skipped;
        c.transport = skipped.transport;
        c.reason = Some(skipped.reason);
        found.push(c);
    }
}

/// Warns about a stdio server's `./` command or `${PLUGIN_ROOT}/...` argument under a folder
/// the collector never stores (`node_modules`, `.venv`, `target`, `.git`): valid as text, it
/// cannot resolve once installed.
fn skipped_paths(server: &c2_manifest::McpServer, diagnostics: &mut Vec<Diagnostic>) {
    let c2_manifest::McpTransport::Stdio { command, args, .. } = &server.transport else {
        return;
    };
    let skipped_in = |path: &str| {
        path.split('/')
            .find(|part| crate::SKIPPED_DIRECTORIES.contains(part))
            .map(str::to_owned)
    };
    let mut found: Vec<(String, String)> = Vec::new();
    if let Some(rel) = command.strip_prefix("./")
        && let Some(dir) = skipped_in(rel)
    {
        found.push((format!("command `{command}`"), dir));
    }
    for arg in args {
        if let Some(rel) = arg.strip_prefix("${PLUGIN_ROOT}/")
            && let Some(dir) = skipped_in(rel)
        {
            found.push((format!("argument `{arg}`"), dir));
        }
    }
    for (what, dir) in found {
        diagnostics.push(
            Diagnostic::warning(
                codes::MCP_PATH_SKIPPED,
                "mcp.json".to_owned(),
                format!(
                    "MCP server `{}`: its {what} points under `{dir}/`, which is never part of an installed bundle, so the server cannot be resolved once installed",
                    server.name
                ),
            )
            .with_help(format!(
                "ship what it needs outside {}, or run a command found on PATH",
                crate::SKIPPED_DIRECTORIES.join(", ")
            )),
        );
    }
}

/// A fixed component location that exists but is not of the expected kind (Agent Plugins
/// §6.2): that component type is disabled, the bundle still loads.
pub(crate) fn wrong_kind(path: &str, expected: &str, found: &str, what: &str) -> Diagnostic {
    Diagnostic::warning(
        codes::COMPONENT_WRONG_KIND,
        path.to_owned(),
        format!("{path} must be {expected}, found {found}: {what} are disabled for this bundle"),
    )
    .with_help(format!(
        "make {path} {expected}, or remove it if the bundle has no {what}"
    ))
}

/// A skill's or mcp.json's finding, which only skips or disables that component; a hidden
/// character in an identifier stays an error and refuses the bundle.
fn as_warning(d: c2_manifest::Diagnostic, file: &str) -> Diagnostic {
    let mut carried = crate::bundle::from_document(d, file);
    if carried.code != codes::HIDDEN_IN_IDENTIFIER {
        carried.severity = c2_manifest::Severity::Warning;
    }
    carried
}
