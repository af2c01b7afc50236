//! What one installed bundle offers a session, read once per content digest from the parts of
//! its tree the collector reads (the collector alone walks bundle trees): its skills, its prompt
//! commands compiled to the Skill fallback, its subagents, and its scene and pipeline files.

use std::collections::{BTreeMap, BTreeSet};

use c2_bundle_collector::{BundleParts, FileEntry};
use c2_manifest::{FrontmatterValue, SkillOptions};
use serde_json::Value;

use super::{LibraryKind, SceneKind, SceneStatus};

/// One item of a bundle before policy and names are applied.
#[derive(Debug, Clone)]
pub(crate) struct RawItem {
    pub(crate) kind: LibraryKind,
    pub(crate) local_name: String,
    pub(crate) description: Option<String>,
    /// Bundle-relative path of the file.
    pub(crate) path: String,
    /// Bundle-relative path of its folder.
    pub(crate) folder: String,
    pub(crate) fields: BTreeMap<String, String>,
    pub(crate) allowed_tools: Vec<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) scripts: bool,
    /// Why the item cannot be offered (invalid), when it cannot.
    pub(crate) problem: Option<String>,
}

/// One scene or pipeline file of a bundle, checked.
#[derive(Debug, Clone)]
pub(crate) struct RawScene {
    pub(crate) kind: SceneKind,
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) version: Option<String>,
    pub(crate) status: SceneStatus,
}

/// Everything a bundle offers, read from one collection of its files.
#[derive(Debug, Clone, Default)]
pub(crate) struct BundleContent {
    pub(crate) items: Vec<RawItem>,
    pub(crate) scenes: Vec<RawScene>,
}

/// The major versions of the scene and pipeline documents this host reads.
pub(crate) const SCENE_MAJOR: u64 = 1;

/// The top-level folders whatever a bundle offers a session lives in: all [`read`] looks at.
pub(crate) const FOLDERS: [&str; 4] = ["skills", "commands", "agents", "scenes"];

/// Reads what `bundle` offers.
pub(crate) fn read(bundle: &BundleParts, skill_options: &SkillOptions) -> BundleContent {
    let mut content = BundleContent::default();
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

fn skills(bundle: &BundleParts, options: &SkillOptions, out: &mut Vec<RawItem>) {
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
        let mut item = RawItem {
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
fn prompt_command(path: String, name: String, entry: &FileEntry) -> RawItem {
    let mut item = markdown_item(LibraryKind::PromptCommand, path, name, entry);
    if item.problem.is_none() && item.description.is_none() {
        item.description = item.instructions.as_deref().and_then(first_line);
    }
    item
}

/// `agents/<name>.md`: the frontmatter for provider delegation, the body as the contract a
/// session follows inline where it cannot delegate.
fn agent(path: String, name: String, entry: &FileEntry) -> RawItem {
    markdown_item(LibraryKind::Agent, path, name, entry)
}

fn markdown_item(kind: LibraryKind, path: String, name: String, entry: &FileEntry) -> RawItem {
    let folder = path
        .rsplit_once('/')
        .map_or_else(String::new, |(dir, _)| dir.to_owned());
    let mut item = RawItem {
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
fn scene(kind: SceneKind, path: String, name: String, entry: &FileEntry) -> RawScene {
    let mut raw = RawScene {
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
