//! The one JSON vocabulary: every shape the relay answers and the `c2-plugins` command line
//! prints with `--format json` is written here, explicitly, from the host's plain types. Both
//! faces call the same function for the same result, so they cannot drift.
//!
//! The one difference between the faces is [`Revisions`]: a relay client may be JavaScript,
//! whose numbers hold integers up to 2^53 exactly, so the relay sends every 64-bit revision
//! and generation as a decimal string; the command line prints them as JSON numbers.

mod dev;

use std::collections::BTreeMap;
use std::path::PathBuf;

use c2_bundle_collector::{
    CollectedBundle, Contribution, Diagnostic, Inventory, MarketplaceCheck, Provenance,
    UpdateReview,
};
use c2_contributions::{
    ConnectorEvent, ConnectorStatus, LanguageListing, LanguageRow, LibraryItem, McpLaunch,
    McpServerLaunch, Resolved, SceneEntry, ServerOrigin, UiEntry,
};
use c2_host::{
    Applied, BundleStatus, CatalogOrigin, CatalogRow, CommandRow, ComponentState,
    ConfiguredMarketplace, DroppedChoice, HostError, ImpactView, InstallOptions, InstallOutcome,
    NextAction, OutdatedRow, PlanAction, PlanFile, PlanRevisions, PluginError, SearchHit,
    StoreChanged, UiSlot, Uninstalled, UpdateReport,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

mod health;
mod plan;
pub use dev::{dev_reloaded, developer_status};
pub(crate) use health::change_key as health_change_key;
pub use health::health;
pub(crate) use plan::PlanIn;
pub use plan::{plan, plan_action, plan_file_text, plan_from_value, read_plan};

/// How 64-bit revisions and generations are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Revisions {
    /// JSON numbers (the command line's `--format json`).
    Numbers,
    /// Decimal strings (the relay's wire: no integer a JavaScript client cannot hold).
    Text,
}

impl Revisions {
    /// One revision in this form.
    pub fn value(self, revision: u64) -> Value {
        match self {
            Revisions::Numbers => Value::from(revision),
            Revisions::Text => Value::String(revision.to_string()),
        }
    }
}

/// Bundle diagnostics: `[{code, severity, pointer, file, line, column, message, help}]`.
pub fn diagnostics(diagnostics: &[Diagnostic]) -> Value {
    diagnostics
        .iter()
        .map(|d| {
            json!({
                "code": d.code,
                "severity": d.severity.as_str(),
                "pointer": d.pointer,
                "file": d.file,
                "line": d.line,
                "column": d.column,
                "message": d.message,
                "help": d.help,
            })
        })
        .collect()
}

/// Contributions as an object keyed by kind, each an array of `{id, status, path, title}`.
pub fn contributions(inventory: &Inventory) -> Value {
    let mut by_kind: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for contribution in &inventory.contributions {
        by_kind
            .entry(kebab(&contribution.kind))
            .or_default()
            .push(contribution_json(contribution));
    }
    json!(by_kind)
}

fn contribution_json(c: &Contribution) -> Value {
    let mut v = json!({
        "id": c.id,
        "status": kebab(&c.status),
        "path": c.path,
        "title": c.title,
    });
    // MCP servers also say how they are reached and, when skipped, why.
    if c.transport.is_some() || c.reason.is_some() {
        v["transport"] = json!(c.transport);
        v["reason"] = json!(c.reason);
    }
    v
}

/// The unsupported contributions: `[{kind, id, path}]`, kinds kebab-case (e.g. `hooks`).
pub fn unsupported(inventory: &Inventory) -> Value {
    inventory
        .unsupported()
        .map(|c| json!({ "kind": kebab(&c.kind), "id": c.id, "path": c.path }))
        .collect()
}

/// The serde name of a unit enum value (kinds and statuses are kebab-case in the inventory).
fn kebab<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::from("unknown"),
    }
}

/// A validated bundle at `path`: `{path, valid, name, version, digest, diagnostics, contributions}`.
pub fn validated_bundle(path: &str, bundle: &CollectedBundle) -> Value {
    json!({
        "path": path,
        "valid": bundle.is_valid(),
        "name": bundle.name(),
        "version": bundle.version(),
        "digest": bundle.digest,
        "diagnostics": diagnostics(&bundle.diagnostics),
        "contributions": contributions(&bundle.inventory),
    })
}

/// A validated catalog at `path`, with each local entry and whether its bundle is valid.
pub fn validated_marketplace(path: &str, check: &MarketplaceCheck) -> Value {
    json!({
        "path": path,
        "valid": check.is_valid(),
        "name": check.marketplace.as_ref().and_then(|m| m.name.clone()),
        "version": null,
        "diagnostics": diagnostics(&check.diagnostics),
        "contributions": {},
        "entries": check.entries.iter().map(|entry| json!({
            "name": entry.name,
            "version": entry.version,
            "path": entry.path.display().to_string(),
            "valid": entry.bundle.as_ref().is_some_and(CollectedBundle::is_valid),
        })).collect::<Vec<_>>(),
    })
}

/// A path that could not be validated at all, with the failure's kind and message.
pub fn unreadable_path(path: &str, kind: &str, message: &str) -> Value {
    json!({
        "path": path,
        "valid": false,
        "name": null,
        "version": null,
        "diagnostics": [],
        "contributions": {},
        "error": { "kind": kind, "message": message },
    })
}

/// Each component a choice can name: `[{component, state}]`.
pub fn components(components: &[ComponentState]) -> Value {
    components
        .iter()
        .map(|c| json!({ "component": c.component, "state": c.state }))
        .collect()
}

/// One installed bundle as `plugins/list` and `list` show it.
pub fn bundle_status(status: &BundleStatus, languages: &LanguageListing) -> Value {
    let record = &status.record;
    json!({
        "id": status.id,
        "name": status.name,
        "version": status.version,
        "trusted": status.trusted,
        "enabled": status.enabled,
        "state": status.state.as_str(),
        "reason": status.reason,
        "runtime": status.runtime,
        "digest": record.digest,
        "source": record.source,
        "commit": record.commit,
        "installedAt": record.installed_at,
        "provenance": provenance(record.provenance.as_ref()),
        "contributions": mark_disabled(contributions(&record.inventory), status),
        "components": components(&status.components),
        "unsupported": unsupported(&record.inventory),
        "languageServers": bundle_servers(languages, &status.id),
    })
}

/// Marks each contribution the user disabled with `"policy": "disabled"` (the others
/// `"enabled"`, when a choice can name them).
fn mark_disabled(mut contributions: Value, status: &BundleStatus) -> Value {
    let states: BTreeMap<&str, &str> = status
        .components
        .iter()
        .map(|c| (c.component.as_str(), c.state.as_str()))
        .collect();
    if let Some(kinds) = contributions.as_object_mut() {
        for (kind, entries) in kinds.iter_mut() {
            for entry in entries.as_array_mut().into_iter().flatten() {
                let key = format!("{kind}:{}", entry["id"].as_str().unwrap_or_default());
                if let Some(state) = states.get(key.as_str()) {
                    entry["policy"] = json!(state);
                }
            }
        }
    }
    contributions
}

/// `{realm, languages: [{language, winner, conflict, providers, inactive, builtin}], servers,
/// builtins}`: a realm's language listing.
pub fn language_listing(listing: &LanguageListing) -> Value {
    serde_json::to_value(listing).unwrap_or_default()
}

/// The language servers one bundle declares, each with the languages it wins and the ones in
/// conflict in the listed realm: `[{id, languages, command, active, selected, conflicts}]`.
pub fn bundle_servers(listing: &LanguageListing, bundle: &str) -> Value {
    let rows_of = |server: &str, pick: fn(&LanguageRow, &str, &str) -> bool| -> Vec<String> {
        listing
            .languages
            .iter()
            .filter(|row| pick(row, bundle, server))
            .map(|row| row.language.clone())
            .collect()
    };
    let servers: Vec<Value> = listing
        .servers
        .iter()
        .filter(|server| server.bundle == bundle)
        .map(|server| {
            json!({
                "id": server.server,
                "languages": server.languages,
                "command": server.command,
                "active": server.active,
                "selected": rows_of(&server.server, wins),
                "conflicts": rows_of(&server.server, conflicts),
            })
        })
        .collect();
    Value::Array(servers)
}

fn wins(row: &LanguageRow, bundle: &str, server: &str) -> bool {
    matches!(&row.winner, Some(ServerOrigin::Plugin { bundle: b, server: s }) if b == bundle && s == server)
}

fn conflicts(row: &LanguageRow, bundle: &str, server: &str) -> bool {
    row.conflict
        && row
            .providers
            .iter()
            .any(|p| p.bundle == bundle && p.server == server)
}

/// What a language resolves to in a project: `{kind: "plugin", bundle, server, program}` or
/// `{kind: "builtIn", builtin}`.
pub fn resolved(resolved: &Resolved) -> Value {
    match resolved {
        Resolved::Plugin {
            bundle,
            server,
            program,
        } => json!({ "kind": "plugin", "bundle": bundle, "server": server, "program": program }),
        Resolved::BuiltIn(builtin) => json!({ "kind": "builtIn", "builtin": builtin }),
        _ => Value::Null,
    }
}

/// A connector event, with the owning bundle id the host authenticated. (Still the serde form
/// of c2-host's `ConnectorEvent`.)
pub fn connector_event(event: &ConnectorEvent) -> Value {
    serde_json::to_value(event).unwrap_or(Value::Null)
}

/// An installed bundle: the install's result.
pub fn install_outcome(outcome: &InstallOutcome, options: InstallOptions) -> Value {
    let record = &outcome.record;
    json!({
        "id": record.id,
        "name": record.name,
        "version": record.version,
        "digest": record.digest,
        "source": record.source,
        "commit": record.commit,
        "provenance": provenance(record.provenance.as_ref()),
        "replaced": outcome.replaced,
        "trusted": options.trust,
        "enabled": options.enable || outcome.enabled_by_catalog,
        "notes": outcome.notes,
        "droppedChoices": dropped_choices(&outcome.dropped_choices),
        "contributions": contributions(&record.inventory),
        "unsupported": unsupported(&record.inventory),
    })
}

/// Component choices a replace dropped: `[{id, component, scope}]`.
pub fn dropped_choices(dropped: &[DroppedChoice]) -> Value {
    dropped
        .iter()
        .map(|d| json!({ "id": d.id, "component": d.component, "scope": d.scope }))
        .collect()
}

/// A removed bundle: `{id, name, version}` (`null`s when its record was unreadable).
pub fn uninstalled(removed: &Uninstalled) -> Value {
    let record = removed.record.as_ref();
    json!({
        "id": removed.id,
        "name": record.map(|r| &r.name),
        "version": record.and_then(|r| r.version.as_ref()),
    })
}

/// What a change starts, stops and reloads.
pub fn impact(impact: &ImpactView) -> Value {
    let mut object = Map::new();
    object.insert("starts".to_owned(), json!(impact.starts));
    object.insert("stops".to_owned(), json!(impact.stops));
    object.insert("reloads".to_owned(), json!(impact.reloads));
    object.insert("dependents".to_owned(), json!(impact.dependents));
    object.insert("resources".to_owned(), json!(impact.resources));
    for (key, list) in [
        ("enables", &impact.enables),
        ("disables", &impact.disables),
        ("userRuntimes", &impact.user_runtimes),
    ] {
        if !list.is_empty() {
            object.insert(key.to_owned(), json!(list));
        }
    }
    Value::Object(object)
}

/// A committed policy change: `{id, revision, impact}`.
pub fn applied(id: &str, applied: &Applied, revisions: Revisions) -> Value {
    json!({
        "id": id,
        "revision": revisions.value(applied.revision),
        "impact": impact(&applied.impact),
    })
}

/// A cleared policy: `{id, revision}`.
pub fn reset(id: Option<&str>, revision: u64, revisions: Revisions) -> Value {
    json!({ "id": id, "revision": revisions.value(revision) })
}

/// A realm's catalog rows.
pub fn catalog_rows(rows: &[CatalogRow], revisions: Revisions) -> Value {
    rows.iter()
        .map(|row| {
            let entry = &row.entry;
            let mut object = Map::new();
            object.insert("name".to_owned(), json!(entry.name));
            object.insert(
                "meta".to_owned(),
                serde_json::to_value(&entry.meta).unwrap_or_default(),
            );
            object.insert("revision".to_owned(), revisions.value(entry.revision));
            object.insert("inject".to_owned(), json!(entry.inject));
            object.insert("optionalInject".to_owned(), json!(entry.optional_inject));
            object.insert("configSchema".to_owned(), json!(entry.config_schema));
            object.insert(
                "state".to_owned(),
                serde_json::to_value(&entry.state).unwrap_or_default(),
            );
            object.insert("trusted".to_owned(), json!(row.trusted));
            object.insert("enabled".to_owned(), json!(row.enabled));
            if let Some(scopes) = &row.runtime_scopes {
                object.insert("runtimeScopes".to_owned(), json!(scopes));
            }
            if let Some(states) = &row.components {
                object.insert("components".to_owned(), components(states));
            }
            Value::Object(object)
        })
        .collect()
}

/// A realm's command rows: `[{name, owner, realm, visibility, state, title, description}]`.
pub fn command_rows(rows: &[CommandRow]) -> Value {
    rows.iter()
        .map(|row| {
            json!({
                "name": row.name,
                "owner": row.owner,
                "realm": row.realm_label(),
                "visibility": row.visibility.as_str(),
                "state": row.state.as_str(),
                "title": row.title,
                "description": row.description,
            })
        })
        .collect()
}

/// What a refresh found changed in the store or its policy.
pub fn store_changed(changed: &StoreChanged, revisions: Revisions) -> Value {
    json!({
        "generation": revisions.value(changed.generation),
        "policyRevision": revisions.value(changed.policy_revision),
        "installed": changed.installed,
        "removed": changed.removed,
        "replaced": changed.replaced,
        "policy": changed.policy,
    })
}

/// One skill, prompt command or subagent of a realm's content library.
pub fn library_item(item: &LibraryItem) -> Value {
    json!({
        "bundle": item.bundle,
        "bundleName": item.bundle_name,
        "kind": item.kind.text(),
        "localName": item.local_name,
        "name": item.name,
        "description": item.description,
        "path": item.path,
        "folder": item.folder,
        "fields": item.fields,
        "allowedTools": item.allowed_tools,
        "instructions": item.instructions,
        "scripts": item.scripts,
        "status": item.status.text(),
    })
}

/// A realm's content library: every item, offered or not.
pub fn skill_library(items: &[LibraryItem]) -> Value {
    Value::Array(items.iter().map(library_item).collect())
}

/// One scene or pipeline file of a realm.
pub fn scene_entry(entry: &SceneEntry) -> Value {
    json!({
        "bundle": entry.bundle,
        "bundleName": entry.bundle_name,
        "kind": entry.kind.text(),
        "name": entry.name,
        "path": entry.path,
        "version": entry.version,
        "status": entry.status.text(),
    })
}

/// A realm's scenes and pipelines.
pub fn scene_library(entries: &[SceneEntry]) -> Value {
    Value::Array(entries.iter().map(scene_entry).collect())
}

/// One MCP server a session is composed with; `env_values` adds the stdio environment's values.
pub fn mcp_server(r: &McpServerLaunch, env_values: bool) -> Value {
    let launch = match &r.launch {
        Some(McpLaunch::Stdio(l)) => json!({
            "command": l.program,
            "args": l.args,
            "cwd": l.cwd,
            "env": l.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            "envValues": env_values.then(|| {
                l.env
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect::<Map<_, _>>()
            }),
            "pluginRoot": l.plugin_root,
            "pluginData": l.plugin_data,
        }),
        Some(McpLaunch::Remote { url, headers }) => json!({ "url": url, "headers": headers }),
        _ => Value::Null,
    };
    json!({
        "bundle": r.bundle,
        "bundleName": r.bundle_name,
        "server": r.server,
        "transport": r.transport,
        "status": r.status.text(),
        "launch": launch,
    })
}

/// An update's review: `{id, from, to, fromDigest, toDigest, reason, surface: [{kind, id,
/// change, before, after, text}], files: {added, removed, changed}}`.
pub fn update_review(review: &UpdateReview) -> Value {
    let surface: Vec<Value> = review
        .surface
        .iter()
        .map(|change| {
            let mut value = serde_json::to_value(change).unwrap_or_default();
            value["text"] = json!(change.describe());
            value
        })
        .collect();
    json!({ "id": review.id, "from": review.from_version, "to": review.to_version,
            "fromDigest": review.from_digest, "toDigest": review.to_digest,
            "reason": review.reason(), "surface": surface, "files": review.files })
}

/// A dry run of an update: `{dryRun: true, pending: [review], current, failed}`.
pub fn update_dry_run(report: &UpdateReport) -> Value {
    let pending: Vec<Value> = report.pending.iter().map(update_review).collect();
    json!({ "dryRun": true, "pending": pending, "current": report.current, "failed": report.failed })
}

/// A catalog update: `{updated: [{id, from, to, digest, notes, review}], current, failed}`.
pub fn update_report(report: &UpdateReport) -> Value {
    let updated: Vec<Value> = report
        .updated
        .iter()
        .map(|u| {
            json!({
                "id": u.id,
                "from": u.from,
                "to": u.to,
                "digest": u.outcome.record.digest,
                "notes": u.outcome.notes,
                "review": u.outcome.record.review.as_ref().map(update_review),
            })
        })
        .collect();
    json!({ "updated": updated, "current": report.current, "failed": report.failed })
}

/// A configured catalog (`hub/marketplaces` rows, `hub/addMarketplace`, `hub/removeMarketplace`).
/// (Still the serde form of c2-host's `ConfiguredMarketplace`.)
pub fn marketplace(marketplace: &ConfiguredMarketplace) -> Value {
    serde_json::to_value(marketplace).unwrap_or_default()
}

/// The configured catalogs.
pub fn marketplaces(marketplaces: &[ConfiguredMarketplace]) -> Value {
    marketplaces.iter().map(marketplace).collect()
}

/// Catalog search hits. (Still the serde form of c2-host's `SearchHit`.)
pub fn search_hits(hits: &[SearchHit]) -> Value {
    serde_json::to_value(hits).unwrap_or_default()
}

/// Catalog-installed bundles compared with their entries. (Still the serde form of c2-host's
/// `OutdatedRow`.)
pub fn outdated_rows(rows: &[OutdatedRow]) -> Value {
    serde_json::to_value(rows).unwrap_or_default()
}

/// Where an installed bundle's bytes came from: `{kind, location, reference?, commit?, subdir?,
/// npm?: {name, version, integrity}, sha256?, catalog?, installedAt}`, `null` when unknown
/// (installed by an older version). (The serde form of the collector's `Provenance`.)
pub fn provenance(provenance: Option<&Provenance>) -> Value {
    serde_json::to_value(provenance).unwrap_or_default()
}

/// The catalog entry a bundle was installed from (`origin`). (Still the serde form of the
/// collector's `CatalogOrigin`.)
pub fn origin(origin: Option<&CatalogOrigin>) -> Value {
    serde_json::to_value(origin).unwrap_or_default()
}

/// A realm's UI descriptors per slot. (The descriptor's shape is still the serde form of
/// c2-host's `UiEntry`.)
pub fn ui_catalog(slots: &BTreeMap<UiSlot, Vec<UiEntry>>) -> Value {
    serde_json::to_value(slots).unwrap_or_default()
}

/// The declared connectors and whether their provider is supported. (Still the serde form of
/// c2-host's `ConnectorStatus`.)
pub fn connectors(connectors: &[ConnectorStatus]) -> Value {
    serde_json::to_value(connectors).unwrap_or_default()
}

/// A plugin's own JSON-RPC error: `{code, data?}`.
pub fn plugin_error(plugin: &PluginError) -> Value {
    let mut object = Map::new();
    object.insert("code".to_owned(), Value::from(plugin.code));
    if let Some(data) = &plugin.data {
        object.insert("data".to_owned(), data.clone());
    }
    Value::Object(object)
}

/// The fields a host error carries beside its message: `kind`, `environment` (whose fault),
/// `hint`, a plugin's own error (`pluginError`) and an invalid bundle's `diagnostics`.
pub fn error_data(error: &HostError) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert(
        "kind".to_owned(),
        Value::String(error.kind().as_str().to_owned()),
    );
    data.insert(
        "environment".to_owned(),
        Value::Bool(error.is_environment()),
    );
    if let Some(hint) = error.hint() {
        data.insert("hint".to_owned(), Value::String(hint.to_owned()));
    }
    if let Some(next) = error.next_action() {
        data.insert("next".to_owned(), next_action(next));
    }
    if let Some(plugin) = error.plugin_error() {
        data.insert("pluginError".to_owned(), plugin_error(plugin));
    }
    if let HostError::InvalidBundle { diagnostics: d, .. } = error {
        data.insert("diagnostics".to_owned(), diagnostics(d));
    }
    data
}

/// The line `c2-plugins serve --socket --format json` prints on stdout once the socket
/// accepts connections: `{"ready":true,"socket","pluginsDir","pid","relayVersion"}`, so a
/// frontend that started the service waits for it instead of polling the socket.
pub fn ready(socket: &std::path::Path, plugins_dir: &std::path::Path, pid: u32) -> Value {
    json!({
        "ready": true,
        "socket": socket,
        "pluginsDir": plugins_dir,
        "pid": pid,
        "relayVersion": crate::RELAY_VERSION,
    })
}

/// A failure's next action: `{action, id?, component?, project?}` (absent members omitted).
pub fn next_action(next: &NextAction) -> Value {
    let mut action = Map::new();
    action.insert("action".to_owned(), Value::from(next.action));
    for (key, value) in [
        ("id", &next.id),
        ("component", &next.component),
        ("project", &next.project),
    ] {
        if let Some(value) = value {
            action.insert(key.to_owned(), Value::from(value.as_str()));
        }
    }
    Value::Object(action)
}
