//! What a bundle offers a session (plugin-standard §5; decisions.md, "The content library"),
//! read from the parts of its tree under [`LIBRARY_FOLDERS`]: its skills, its prompt commands
//! compiled to the Skill fallback, its subagents, and its scene and pipeline files, each with
//! what a host needs to offer it or say why it cannot. Which items a realm offers, under which
//! names, is the host's.

use std::collections::{BTreeMap, BTreeSet};

use c2_manifest::{FrontmatterValue, SkillOptions};
use serde::Serialize;
use serde_json::Value;

use crate::bundle::BundleParts;
use crate::inventory::{ContributionKind, Inventory};
use crate::tree::FileEntry;

/// What sort of library item it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LibraryKind {
    /// An Agent Skill: `skills/<name>/SKILL.md`.
    Skill,
    /// A prompt command compiled to the Skill fallback: `commands/<name>.md`.
    PromptCommand,
    /// A subagent: `agents/<name>.md`, delegated or followed inline.
    Agent,
}

impl LibraryKind {
    /// `skill`, `prompt-command` or `agent`.
    pub fn text(self) -> &'static str {
        match self {
            Self::Skill => "skill",
            Self::PromptCommand => "prompt-command",
            Self::Agent => "agent",
        }
    }

    /// The namespace its names live in: skills and prompt commands share one (both are
    /// invoked as skills); subagents have their own.
    pub fn namespace(self) -> u8 {
        match self {
            Self::Skill | Self::PromptCommand => 0,
            Self::Agent => 1,
        }
    }
}

/// A scene or a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SceneKind {
    /// `scenes/<name>.scene.json`.
    Scene,
    /// `scenes/<name>.pipeline.json`.
    Pipeline,
}

impl SceneKind {
    /// `scene` or `pipeline`.
    pub fn text(self) -> &'static str {
        match self {
            Self::Scene => "scene",
            Self::Pipeline => "pipeline",
        }
    }
}

/// Whether a scene file can be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
#[non_exhaustive]
pub enum SceneStatus {
    /// A JSON object with a `version` of a major version this host reads.
    Valid,
    /// Why it cannot be used.
    Invalid(String),
}

impl SceneStatus {
    /// `valid` or `invalid: <why>`.
    pub fn text(&self) -> String {
        match self {
            Self::Valid => "valid".to_owned(),
            Self::Invalid(why) => format!("invalid: {why}"),
        }
    }
}

/// One skill, prompt command or subagent of a bundle, before a host applies policy and names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LibraryPart {
    /// What sort of item it is.
    pub kind: LibraryKind,
    /// The bundle-local name: the skill's folder, the file's stem.
    pub local_name: String,
    /// The frontmatter's `description`; for a prompt command without one, its first line.
    pub description: Option<String>,
    /// Bundle-relative path of the file.
    pub path: String,
    /// Bundle-relative path of its folder.
    pub folder: String,
    /// The other scalar frontmatter fields, a block list joined with `, `.
    pub fields: BTreeMap<String, String>,
    /// `allowed-tools`, as a list.
    pub allowed_tools: Vec<String>,
    /// For a prompt command or a subagent, the body after the frontmatter, verbatim.
    pub instructions: Option<String>,
    /// Whether the item's folder holds executable files (a skill's scripts).
    pub scripts: bool,
    /// Why the item cannot be offered (invalid), when it cannot.
    pub problem: Option<String>,
}

/// One scene or pipeline file of a bundle, checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScenePart {
    /// Scene or pipeline.
    pub kind: SceneKind,
    /// The document's `name`, else the file's stem.
    pub name: String,
    /// Bundle-relative path of the file.
    pub path: String,
    /// The document's `version`, when it has one.
    pub version: Option<String>,
    /// Whether it can be used.
    pub status: SceneStatus,
}

/// Everything a bundle offers a session, read from its [`LIBRARY_FOLDERS`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BundleLibrary {
    /// Its skills, prompt commands and subagents.
    pub items: Vec<LibraryPart>,
    /// Its scene and pipeline files.
    pub scenes: Vec<ScenePart>,
}

impl BundleLibrary {
    /// What a bundle whose files cannot be read offers: each skill, prompt command and
    /// subagent its `inventory` recorded at install, with `why` as its problem.
    pub fn unreadable(inventory: &Inventory, why: &str) -> Self {
        let mut library = Self::default();
        for c in &inventory.contributions {
            let kind = match c.kind {
                ContributionKind::Skill => LibraryKind::Skill,
                ContributionKind::PromptCommand => LibraryKind::PromptCommand,
                ContributionKind::Agent => LibraryKind::Agent,
                _ => continue,
            };
            let path = c.path.clone().unwrap_or_default();
            library.items.push(LibraryPart {
                kind,
                local_name: c.id.clone(),
                description: c.description.clone(),
                folder: path
                    .rsplit_once('/')
                    .map(|(d, _)| d.to_owned())
                    .unwrap_or_default(),
                path,
                fields: BTreeMap::new(),
                allowed_tools: Vec::new(),
                instructions: None,
                scripts: false,
                problem: Some(why.to_owned()),
            });
        }
        library
    }
}

/// The major version of the scene and pipeline documents read as valid.
pub const SCENE_MAJOR: u64 = 1;

/// The top-level folders whatever a bundle offers a session lives in: all [`read_library`]
/// looks at.
pub const LIBRARY_FOLDERS: [&str; 4] = ["skills", "commands", "agents", "scenes"];

/// Whether `inventory` lists a skill, prompt command, subagent, scene or pipeline.
pub fn inventory_offers_library(inventory: &Inventory) -> bool {
    inventory.contributions.iter().any(|c| {
        matches!(
            c.kind,
            ContributionKind::Skill
                | ContributionKind::PromptCommand
                | ContributionKind::Agent
                | ContributionKind::Scene
                | ContributionKind::Pipeline
        )
    })
}

/// Whether the bundle installed at `root` with `inventory` may offer a session anything: its
/// inventory lists something for the library ([`inventory_offers_library`]), or one of the
/// [`LIBRARY_FOLDERS`] exists now. When neither holds, a reader need not walk the tree at all
/// (four `lstat` calls); a folder that appears later makes this true again.
pub fn may_offer_library(inventory: &Inventory, root: &std::path::Path) -> bool {
    inventory_offers_library(inventory) || crate::bundle::has_any_part(root, &LIBRARY_FOLDERS)
}

/// Reads what `bundle` offers a session from its parts (see [`crate::read_parts`]).
pub fn read_library(bundle: &BundleParts, skill_options: &SkillOptions) -> BundleLibrary {
    let mut content = BundleLibrary::default();
    skills(bundle, skill_options, &mut content.items);
    for (path, name, entry) in children(&bundle.files, "commands/", ".md") {
        content.items.push(prompt_command(path, name, entry));
    }
    for (path, name, entry) in children(&bundle.files, "agents/", ".md") {
        content.items.push(agent(path, name, entry));
    }
    for (suffix, kind) in [
        (".scene.json", SceneKind::Scene),
        (".pipeline.json", SceneKind::Pipeline),
    ] {
        for (path, name, entry) in children(&bundle.files, "scenes/", suffix) {
            content.scenes.push(scene(kind, path, name, entry));
        }
    }
    content
}

/// Direct children of `prefix` ending in `suffix`, as `(path, stem, entry)`.
fn children<'a>(
    files: &'a BTreeMap<String, FileEntry>,
    prefix: &str,
    suffix: &str,
) -> Vec<(String, String, &'a FileEntry)> {
    files
        .range(prefix.to_owned()..)
        .take_while(|(path, _)| path.starts_with(prefix))
        .filter_map(|(path, entry)| {
            let name = &path[prefix.len()..];
            let stem = name.strip_suffix(suffix)?;
            (!name.contains('/') && !stem.is_empty())
                .then(|| (path.clone(), stem.to_owned(), entry))
        })
        .collect()
}

fn skills(bundle: &BundleParts, options: &SkillOptions, out: &mut Vec<LibraryPart>) {
    let names: BTreeSet<&str> = bundle
        .directories
        .iter()
        .filter_map(|dir| dir.strip_prefix("skills/"))
        .filter(|name| !name.contains('/'))
        .collect();
    for name in names {
        let folder = format!("skills/{name}");
        let path = format!("{folder}/SKILL.md");
        let scripts = bundle
            .files
            .range(format!("{folder}/")..)
            .take_while(|(p, _)| p.starts_with(&format!("{folder}/")))
            .any(|(_, entry)| entry.executable);
        let mut item = LibraryPart {
            kind: LibraryKind::Skill,
            local_name: name.to_owned(),
            description: None,
            path: path.clone(),
            folder,
            fields: BTreeMap::new(),
            allowed_tools: Vec::new(),
            instructions: None,
            scripts,
            problem: None,
        };
        let Some(entry) = bundle.files.get(&path) else {
            item.problem = Some("the folder has no SKILL.md".to_owned());
            out.push(item);
            continue;
        };
        let source = String::from_utf8_lossy(&entry.bytes);
        let report = c2_manifest::validate_skill_with(&source, name, options);
        match report.skill {
            Some(skill) => {
                item.description = Some(skill.description);
                item.fields = skill.fields;
                item.fields.remove("name");
                item.fields.remove("description");
                item.allowed_tools = skill.allowed_tools;
            }
            None => {
                let why = report
                    .diagnostics
                    .iter()
                    .find(|d| d.severity == c2_manifest::Severity::Error)
                    .map_or_else(|| "SKILL.md is invalid".to_owned(), |d| d.message.clone());
                item.problem = Some(format!("SKILL.md is invalid: {why}"));
            }
        }
        out.push(item);
    }
}

/// `commands/<name>.md` compiled to the Skill fallback (decisions.md, "Prompt commands").
fn prompt_command(path: String, name: String, entry: &FileEntry) -> LibraryPart {
    let mut item = markdown_item(LibraryKind::PromptCommand, path, name, entry);
    if item.problem.is_none() && item.description.is_none() {
        item.description = item.instructions.as_deref().and_then(first_line);
    }
    item
}

/// `agents/<name>.md`: the frontmatter for provider delegation, the body as the contract a
/// session follows inline where it cannot delegate.
fn agent(path: String, name: String, entry: &FileEntry) -> LibraryPart {
    markdown_item(LibraryKind::Agent, path, name, entry)
}

fn markdown_item(kind: LibraryKind, path: String, name: String, entry: &FileEntry) -> LibraryPart {
    let folder = path
        .rsplit_once('/')
        .map_or_else(String::new, |(dir, _)| dir.to_owned());
    let mut item = LibraryPart {
        kind,
        local_name: name,
        description: None,
        path,
        folder,
        fields: BTreeMap::new(),
        allowed_tools: Vec::new(),
        instructions: None,
        scripts: false,
        problem: None,
    };
    let Ok(text) = std::str::from_utf8(&entry.bytes) else {
        item.problem = Some("the file is not UTF-8 text".to_owned());
        return item;
    };
    let front = c2_manifest::parse_frontmatter(text);
    if let Some(error) = front
        .diagnostics
        .iter()
        .find(|d| d.severity == c2_manifest::Severity::Error)
    {
        item.problem = Some(error.message.clone());
        return item;
    }
    for (key, value) in front.fields {
        match (key.as_str(), value) {
            ("description", FrontmatterValue::Text(text)) if !text.trim().is_empty() => {
                item.description = Some(text);
            }
            ("allowed-tools", FrontmatterValue::Text(text)) => {
                item.allowed_tools = split_tools(&text);
            }
            ("allowed-tools", FrontmatterValue::List(list)) => item.allowed_tools = list,
            ("name" | "description", _) => {}
            (_, FrontmatterValue::Text(text)) => {
                item.fields.insert(key, text);
            }
            (_, FrontmatterValue::List(list)) => {
                item.fields.insert(key, list.join(", "));
            }
            _ => {}
        }
    }
    item.instructions = Some(front.body.to_owned());
    item
}

/// `allowed-tools` written as one string: comma- or space-separated tool patterns, a
/// pattern's own parentheses kept together (`Bash(git add:*)`).
fn split_tools(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' | ' ' | '\t' if depth == 0 => {
                if !current.trim().is_empty() {
                    out.push(current.trim().to_owned());
                }
                current.clear();
            }
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// The first non-blank line of `body`, a leading Markdown heading mark removed.
fn first_line(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.trim_start_matches('#').trim().to_owned())
        .filter(|line| !line.is_empty())
}

/// A scene or pipeline file, checked as far as its version field and JSON shape allow.
fn scene(kind: SceneKind, path: String, name: String, entry: &FileEntry) -> ScenePart {
    let mut raw = ScenePart {
        kind,
        name,
        path,
        version: None,
        status: SceneStatus::Valid,
    };
    let value: Value = match serde_json::from_slice(&entry.bytes) {
        Ok(value) => value,
        Err(error) => {
            raw.status = SceneStatus::Invalid(format!("not JSON: {error}"));
            return raw;
        }
    };
    let Some(object) = value.as_object() else {
        raw.status = SceneStatus::Invalid("the document is not a JSON object".to_owned());
        return raw;
    };
    if let Some(name) = object.get("name").and_then(Value::as_str) {
        raw.name = name.to_owned();
    }
    let version = match object.get("version") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        Some(_) => {
            raw.status = SceneStatus::Invalid("`version` is neither a string nor a number".into());
            return raw;
        }
        None => {
            raw.status = SceneStatus::Invalid("the document has no `version` field".to_owned());
            return raw;
        }
    };
    raw.version = Some(version.clone());
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u64>().ok());
    if major != Some(SCENE_MAJOR) {
        raw.status = SceneStatus::Invalid(format!(
            "version `{version}` is not one this host reads (major version {SCENE_MAJOR})"
        ));
        return raw;
    }
    let list = match kind {
        SceneKind::Pipeline => "steps",
        _ => "",
    };
    if !list.is_empty() && object.get(list).is_some_and(|v| !v.is_array()) {
        raw.status = SceneStatus::Invalid(format!("`{list}` is not an array"));
    }
    raw
}
