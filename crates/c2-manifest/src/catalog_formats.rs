//! Catalogs in the three formats this host reads, brought to one shape ([`Catalog`]): our
//! closed `marketplace.json` (see [`crate::validate_marketplace`]), Claude Code's
//! `.claude-plugin/marketplace.json` and Codex's `.agents/plugins/marketplace.json`.
//!
//! Our own format stays all-or-nothing: one error and there is no catalog. The two foreign
//! formats are read with per-entry isolation: a root that is not usable (not an object, no
//! `name`, no `plugins` array, a bad `owner` or `metadata`) fails the catalog, but an entry
//! with an error is reported (its diagnostics carry the entry's pointer) and skipped, and the
//! rest stay usable ([`CatalogReport::skipped`]). Keys the formats define but this host does
//! not use are accepted and ignored; keys they do not define are ignored with a
//! `catalog-key-ignored` warning, as both tools themselves ignore them.
//!
//! What is read, field by field (docs/catalogs.md has the full table):
//! - Claude: `name`, `owner` (`name` required), `metadata.{description, version, pluginRoot}`
//!   (and the root `description`), `plugins[]` with `name`, `source`, `version`,
//!   `description`, `keywords` and `tags` (searched), `category`, `strict`. A string source is a
//!   path under the catalog root, prefixed by `metadata.pluginRoot`; object sources are
//!   `github`, `url`, `git-subdir` and `npm`. An entry that would supply the plugin's manifest
//!   itself (`strict: false`) or add components to it (`commands`, `agents`, `hooks`,
//!   `mcpServers`, `lspServers`, ...) is listed as not available: this host installs only
//!   what the bundle's own plugin.json declares.
//! - Codex: `name`, `interface.displayName`, `plugins[]` with `name`, `source` (a path string,
//!   or `local`, `url`, `git-subdir`), `policy.installation` (`AVAILABLE`, `NOT_AVAILABLE`:
//!   listed as not available, `INSTALLED_BY_DEFAULT`: enabled when installed),
//!   `policy.authentication`, `category`.
//!
//! Relative paths resolve against the catalog root: the directory holding `.claude-plugin/`
//! or `.agents/`, or the file's own directory for a catalog named at another path.

use serde::Serialize;

use crate::catalog_sources::source;
use crate::check::{Checker, chars, name_problem};
use crate::diagnostic::{Diagnostic, Severity, Sink, pointer_push};
use crate::json::{self, Member, Node, Value};
use crate::marketplace::{MarketplaceSource, validate_marketplace};
use crate::options::ManifestOptions;

/// The format of a catalog file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CatalogFormat {
    /// Our closed `marketplace.json` (standard §2).
    C2,
    /// Claude Code's `.claude-plugin/marketplace.json`.
    Claude,
    /// Codex's `.agents/plugins/marketplace.json`.
    Codex,
}

/// Where a catalog file sits under a catalog root, in the order a root is searched.
pub const CATALOG_FILES: [(&str, CatalogFormat); 3] = [
    ("marketplace.json", CatalogFormat::C2),
    (".claude-plugin/marketplace.json", CatalogFormat::Claude),
    (".agents/plugins/marketplace.json", CatalogFormat::Codex),
];

impl CatalogFormat {
    /// The stable lowercase name: `c2`, `claude` or `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::C2 => "c2",
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }

    /// The format a catalog file's `/`-separated path names by where it sits (a path ending
    /// in `.claude-plugin/marketplace.json` or `.agents/plugins/marketplace.json`), and how
    /// many directories above the file its catalog root is. `None` for any other path.
    pub fn from_path(path: &str) -> Option<(Self, usize)> {
        let path = path.trim_end_matches('/');
        if path.ends_with(".claude-plugin/marketplace.json") {
            Some((Self::Claude, 1))
        } else if path.ends_with(".agents/plugins/marketplace.json") {
            Some((Self::Codex, 2))
        } else {
            None
        }
    }

    /// The format of a catalog file found elsewhere, by its content: ours when the root has
    /// `standardVersion`, Claude's when it has `owner` or `metadata`, Codex's when it has
    /// `interface` or an entry has `policy`, else ours (whose validator then says what is
    /// wrong).
    pub fn sniff(text: &str) -> Self {
        let Ok(serde_json::Value::Object(root)) = serde_json::from_str::<serde_json::Value>(text)
        else {
            return Self::C2;
        };
        let entry_has = |key: &str| {
            root.get("plugins")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|list| list.iter().any(|e| e.get(key).is_some()))
        };
        if root.contains_key("standardVersion") {
            Self::C2
        } else if root.contains_key("owner") || root.contains_key("metadata") {
            Self::Claude
        } else if root.contains_key("interface") || entry_has("policy") {
            Self::Codex
        } else {
            Self::C2
        }
    }
}

/// A catalog of any format, in this host's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    /// The file's format.
    pub format: CatalogFormat,
    /// The catalog's name (optional in ours, required in the foreign formats).
    pub name: Option<String>,
    /// A one-line summary of the catalog, when it has one.
    pub description: Option<String>,
    /// The usable entries, in document order (a skipped entry is not here).
    pub entries: Vec<CatalogEntry>,
}

/// One usable catalog entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// The bundle's Agent Plugins name; it must equal the `name` in the bundle's plugin.json.
    pub name: String,
    /// The version the catalog lists; `None` when the format or the entry gives none (the
    /// bundle's own version is then the one that counts).
    pub version: Option<String>,
    /// A one-line summary, when the entry has one.
    pub description: Option<String>,
    /// Search terms (keywords, and Claude's `tags`).
    pub keywords: Vec<String>,
    /// The entry's category, when it has one.
    pub category: Option<String>,
    /// Where the bundle is fetched from, relative paths already under the catalog root.
    pub source: MarketplaceSource,
    /// Whether it may be installed.
    pub availability: Availability,
    /// The catalog asks for the bundle to be enabled when it is installed (Codex's
    /// `INSTALLED_BY_DEFAULT`); trust is never implied.
    pub default_enabled: bool,
}

/// Whether a listed entry may be installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "status")]
#[non_exhaustive]
pub enum Availability {
    /// It may be installed.
    Available,
    /// It is listed but refused at install, for `reason`.
    NotAvailable {
        /// Why, as a sentence fragment (lowercase, no trailing period).
        reason: String,
    },
}

/// An entry that was reported and left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedEntry {
    /// Its index in `plugins`.
    pub index: usize,
    /// Its name, when it had a string one.
    pub name: Option<String>,
    /// Its JSON pointer (`/plugins/3`).
    pub pointer: String,
    /// The first error that made it unusable.
    pub reason: String,
}

/// The outcome of reading a catalog file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogReport {
    /// `Some` when the catalog is usable: for ours, when nothing is wrong; for the foreign
    /// formats, when the root is, whatever its entries.
    pub catalog: Option<Catalog>,
    /// Every problem found, in source order (a skipped entry's errors included).
    pub diagnostics: Vec<Diagnostic>,
    /// The entries left out, each with its first error.
    pub skipped: Vec<SkippedEntry>,
}

/// Reads the text of a catalog file in `format`.
pub fn validate_catalog(source: &str, format: CatalogFormat) -> CatalogReport {
    if format == CatalogFormat::C2 {
        let report = validate_marketplace(source);
        let catalog = report.marketplace.map(|m| Catalog {
            format,
            name: m.name,
            description: m.description,
            entries: m
                .plugins
                .into_iter()
                .map(|e| CatalogEntry {
                    name: e.name,
                    version: Some(e.version),
                    description: e.description,
                    keywords: e.keywords,
                    category: None,
                    source: e.source,
                    availability: Availability::Available,
                    default_enabled: false,
                })
                .collect(),
        });
        return CatalogReport {
            catalog,
            diagnostics: report.diagnostics,
            skipped: Vec::new(),
        };
    }
    let mut sink = Sink::new(source);
    let mut skipped = Vec::new();
    let catalog =
        json::parse(source, ManifestOptions::default().max_depth, &mut sink).and_then(|root| {
            foreign(
                &root,
                format,
                &mut Checker { sink: &mut sink },
                &mut skipped,
            )
        });
    CatalogReport {
        catalog,
        diagnostics: sink.finish(),
        skipped,
    }
}

/// Root keys each foreign format defines.
const CLAUDE_ROOT: &[&str] = &[
    "$schema",
    "name",
    "owner",
    "metadata",
    "description",
    "version",
    "plugins",
];
const CODEX_ROOT: &[&str] = &["$schema", "name", "interface", "plugins"];

/// Entry keys Claude defines that only describe the plugin (read or harmlessly ignored).
const CLAUDE_ENTRY: &[&str] = &[
    "name",
    "source",
    "version",
    "description",
    "keywords",
    "tags",
    "category",
    "strict",
    "author",
    "homepage",
    "repository",
    "license",
    "$schema",
];
/// Entry keys Claude defines that add to the plugin's manifest: this host never takes them.
const CLAUDE_COMPONENTS: &[&str] = &[
    "commands",
    "agents",
    "skills",
    "hooks",
    "mcpServers",
    "lspServers",
    "outputStyles",
    "userConfig",
    "channels",
    "dependencies",
];
const CODEX_ENTRY: &[&str] = &["name", "source", "policy", "category", "interface"];

/// Warns about each key the format does not define (it is ignored).
pub(crate) fn ignored_keys(
    c: &mut Checker<'_, '_>,
    members: &[Member<'_>],
    ptr: &str,
    known: &[&[&str]],
) {
    for m in members {
        if !known.iter().any(|set| set.contains(&m.key.as_ref())) {
            c.sink.warning(
                "catalog-key-ignored",
                &pointer_push(ptr, &m.key),
                m.key_start,
                format!(
                    "`{}` is not a key this catalog format defines; it is ignored",
                    m.key
                ),
                Some("remove it, or check its spelling"),
            );
        }
    }
}

fn foreign(
    root: &Node<'_>,
    format: CatalogFormat,
    c: &mut Checker<'_, '_>,
    skipped: &mut Vec<SkippedEntry>,
) -> Option<Catalog> {
    let members = c.object(root, "")?;
    let claude = format == CatalogFormat::Claude;
    ignored_keys(
        c,
        members,
        "",
        &[if claude { CLAUDE_ROOT } else { CODEX_ROOT }],
    );
    let name = c.string_field(root, "", "name", true).map(|(n, p, s)| {
        if s.trim().is_empty() || s.chars().any(char::is_control) {
            c.sink.error(
                "catalog-name-invalid",
                &p,
                n.start,
                "the catalog `name` must be non-empty and free of control characters",
                Some("name the catalog in kebab-case"),
            );
        }
        s.to_owned()
    });
    let mut description = None;
    let mut plugin_root = None;
    if claude {
        owner(root, c);
        description = c
            .string_field(root, "", "description", false)
            .map(|(_, _, s)| s.to_owned());
        c.string_field(root, "", "version", false);
        if let Some((meta, p)) = c.field(root, "", "metadata", false)
            && let Some(fields) = c.object(meta, &p)
        {
            ignored_keys(c, fields, &p, &[&["description", "version", "pluginRoot"]]);
            if let Some((_, _, s)) = c.string_field(meta, &p, "description", false) {
                description = Some(s.to_owned());
            }
            c.string_field(meta, &p, "version", false);
            plugin_root = c
                .string_field(meta, &p, "pluginRoot", false)
                .and_then(|(n, p, s)| relative(c, n, &p, s, "`metadata.pluginRoot`"));
        }
    } else if let Some((interface, p)) = c.field(root, "", "interface", false)
        && c.object(interface, &p).is_some()
    {
        description = c
            .string_field(interface, &p, "displayName", false)
            .map(|(_, _, s)| s.to_owned());
    }
    let list = c
        .field(root, "", "plugins", true)
        .and_then(|(n, p)| c.array(n, &p).map(|items| (items, p)));
    if c.sink.has_errors() {
        return None;
    }
    let (items, ptr) = list?;
    let mut entries: Vec<CatalogEntry> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let p = pointer_push(&ptr, &index.to_string());
        let before = c.sink.diagnostics.len();
        let mut entry = entry(item, &p, format, plugin_root.as_deref(), c);
        if let Some(e) = &entry
            && entries.iter().any(|seen| seen.name == e.name)
        {
            c.sink.error(
                "entry-duplicate",
                &pointer_push(&p, "name"),
                item.start,
                format!("`{}` is listed twice; the first entry is kept", e.name),
                Some("keep one entry per bundle"),
            );
        }
        let first_error = c.sink.diagnostics[before..]
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone());
        if let Some(reason) = first_error {
            skipped.push(SkippedEntry {
                index,
                name: item.get("name").and_then(Node::as_str).map(str::to_owned),
                pointer: p,
                reason,
            });
            entry = None;
        }
        entries.extend(entry);
    }
    Some(Catalog {
        format,
        name,
        description,
        entries,
    })
}

/// Claude's required `owner`: an object with a string `name`.
fn owner(root: &Node<'_>, c: &mut Checker<'_, '_>) {
    if let Some((node, p)) = c.field(root, "", "owner", true)
        && c.object(node, &p).is_some()
    {
        c.string_field(node, &p, "name", true);
    }
}

/// A relative path without `..` that does not start at the root, normalized (`./a//b/` is
/// `a/b`); `None` (reported) otherwise.
pub(crate) fn relative(
    c: &mut Checker<'_, '_>,
    node: &Node<'_>,
    ptr: &str,
    path: &str,
    what: &str,
) -> Option<String> {
    let bad = path.trim().is_empty()
        || path.starts_with(['/', '\\'])
        || path.contains(':')
        || path.split(['/', '\\']).any(|s| s == "..");
    if bad {
        c.sink.error(
            "catalog-path-invalid",
            ptr,
            node.start,
            format!("{what} `{path}` must be a relative path inside the catalog, without `..`"),
            Some("write it relative to the catalog root, as `./plugins/name`"),
        );
        return None;
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    Some(parts.join("/"))
}

pub(crate) fn joined(root: Option<&str>, path: String) -> String {
    match root {
        Some(root) if !root.is_empty() => {
            if path.is_empty() {
                root.to_owned()
            } else {
                format!("{root}/{path}")
            }
        }
        _ => path,
    }
}

fn entry(
    node: &Node<'_>,
    ptr: &str,
    format: CatalogFormat,
    plugin_root: Option<&str>,
    c: &mut Checker<'_, '_>,
) -> Option<CatalogEntry> {
    let members = c.object(node, ptr)?;
    let claude = format == CatalogFormat::Claude;
    let known: &[&[&str]] = if claude {
        &[CLAUDE_ENTRY, CLAUDE_COMPONENTS]
    } else {
        &[CODEX_ENTRY]
    };
    ignored_keys(c, members, ptr, known);
    let name = c
        .string_field(node, ptr, "name", true)
        .and_then(|(n, p, s)| {
            let max = ManifestOptions::default().max_name_chars;
            let problem = name_problem(s).or_else(|| {
                (chars(s) > max)
                    .then(|| format!("`name` is {} characters; the limit is {max}", chars(s)))
            });
            if let Some(message) = problem {
                c.sink.error(
                "name-invalid",
                &p,
                n.start,
                message,
                Some("an entry's name must be the Agent Plugins name in the bundle's plugin.json"),
            );
                return None;
            }
            Some(s.to_owned())
        });
    let version = if claude {
        c.string_field(node, ptr, "version", false).map(|(n, p, s)| {
            if semver::Version::parse(s).is_err() {
                c.sink.error(
                    "version-not-semver",
                    &p,
                    n.start,
                    format!("`version` \"{s}\" is not a SemVer version"),
                    Some("use MAJOR.MINOR.PATCH matching the bundle's plugin.json, or leave it out"),
                );
            }
            s.to_owned()
        })
    } else {
        None
    };
    let description = if claude {
        c.string_field(node, ptr, "description", false)
            .map(|(_, _, s)| s.to_owned())
    } else {
        None
    };
    let mut keywords = Vec::new();
    if claude {
        for key in ["keywords", "tags"] {
            if let Some((n, p)) = c.field(node, ptr, key, false) {
                keywords.extend(c.strings(n, &p).into_iter().map(|(_, _, s)| s.to_owned()));
            }
        }
    }
    let category = c
        .string_field(node, ptr, "category", false)
        .map(|(_, _, s)| s.to_owned());
    let mut availability = Availability::Available;
    let mut default_enabled = false;
    if claude {
        if let Some((n, p)) = c.field(node, ptr, "strict", false) {
            match &n.value {
                Value::Bool(false) => {
                    availability = Availability::NotAvailable {
                        reason: "its catalog entry is marked `strict: false`, so the entry would be the plugin's manifest; this host installs only a bundle whose own plugin.json declares it, with an extensions.dev.codetwo namespace".to_owned(),
                    };
                }
                Value::Bool(true) => {}
                _ => c.wrong_type(n, &p, "a boolean"),
            }
        }
        let added: Vec<&str> = members
            .iter()
            .map(|m| m.key.as_ref())
            .filter(|k| CLAUDE_COMPONENTS.contains(k))
            .collect();
        if !added.is_empty() && availability == Availability::Available {
            availability = Availability::NotAvailable {
                reason: format!(
                    "its catalog entry adds components to the plugin ({}); this host installs only what the bundle's own plugin.json declares",
                    added.join(", ")
                ),
            };
        }
    } else if let Some((policy, p)) = c.field(node, ptr, "policy", false)
        && let Some(fields) = c.object(policy, &p)
    {
        ignored_keys(
            c,
            fields,
            &p,
            &[&["installation", "authentication", "products"]],
        );
        if let Some((n, p, s)) = c.string_field(policy, &p, "installation", false) {
            match s {
                "AVAILABLE" => {}
                "NOT_AVAILABLE" => {
                    availability = Availability::NotAvailable {
                        reason: "the catalog marks it NOT_AVAILABLE".to_owned(),
                    };
                }
                "INSTALLED_BY_DEFAULT" => default_enabled = true,
                other => c.sink.error(
                    "policy-installation-unknown",
                    &p,
                    n.start,
                    format!("`policy.installation` \"{other}\" is not AVAILABLE, NOT_AVAILABLE or INSTALLED_BY_DEFAULT"),
                    Some("use one of AVAILABLE, NOT_AVAILABLE, INSTALLED_BY_DEFAULT"),
                ),
            }
        }
        if let Some((n, p, s)) = c.string_field(policy, &p, "authentication", false)
            && !matches!(s, "ON_INSTALL" | "ON_USE")
        {
            c.sink.error(
                "policy-authentication-unknown",
                &p,
                n.start,
                format!("`policy.authentication` \"{s}\" is not ON_INSTALL or ON_USE"),
                Some("use ON_INSTALL or ON_USE"),
            );
        }
    }
    let source = c
        .field(node, ptr, "source", true)
        .and_then(|(n, p)| source(n, &p, plugin_root, version.as_deref(), c));
    Some(CatalogEntry {
        name: name?,
        version,
        description,
        keywords,
        category,
        source: source?,
        availability,
        default_enabled,
    })
}
