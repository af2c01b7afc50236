//! `SKILL.md` frontmatter: the block between the first two `---` lines, checked against every
//! Agent Skills rule (agentskills docs/specification.mdx; Agent Plugins §7.1 makes it binding).
//!
//! The block is YAML 1.2 (bounded by [`crate::MAX_FRONTMATTER_BYTES`], [`crate::MAX_YAML_DEPTH`]
//! and [`crate::MAX_YAML_NODES`]), one document that must be a
//! mapping with string keys. Every scalar is text whatever its form or tag: `true`, `1.0` and
//! `null` stay strings, as in the reference validator's strict YAML. Invalid YAML is a
//! `frontmatter-syntax` error with the parser's line and column, which makes the skill invalid:
//! the collector skips it with a warning. Rules: `name` 1 to 64 of `a-z 0-9 -`, no leading,
//! trailing or double `-`, equal to the folder; `description` 1 to 1024 characters, not blank;
//! `license` a string; `compatibility` 1 to 500 characters; `metadata` a map of string to
//! string; `allowed-tools` a string or a list of strings; other keys are warnings. With
//! [`SkillOptions::lenient`] a name that differs from the folder, a long description and a
//! non-string `metadata` value are warnings instead (that value is left out of `metadata`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::chars;
use crate::diagnostic::{Diagnostic, Severity, Sink, has_errors, pointer_push};
use crate::frontmatter::{self, Block};
use crate::options::SkillOptions;
use crate::yaml::Value;

/// Frontmatter keys defined by Agent Skills; any other key is a warning.
const KNOWN_KEYS: [&str; 6] = [
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
];

/// A skill's validated frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    /// The skill's name; it equals its folder's name.
    pub name: String,
    /// What the skill does and when to use it.
    pub description: String,
    /// Every scalar key, `name` and `description` included; `metadata` and a list
    /// `allowed-tools` are left out.
    pub fields: BTreeMap<String, String>,
    /// `metadata`, a map of string to string.
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`, split on whitespace when written as a string.
    pub allowed_tools: Vec<String>,
}

/// The outcome of validating one `SKILL.md`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillReport {
    /// `Some` exactly when no diagnostic is an error.
    pub skill: Option<Skill>,
    /// Every problem found, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl SkillReport {
    /// No error-severity diagnostic.
    pub fn is_valid(&self) -> bool {
        !has_errors(&self.diagnostics)
    }
}

/// Validates the frontmatter of a `SKILL.md` found in folder `folder_name`, with default limits.
pub fn validate_skill(source: &str, folder_name: &str) -> SkillReport {
    validate_skill_with(source, folder_name, &SkillOptions::default())
}

/// Validates the frontmatter of a `SKILL.md` found in folder `folder_name`.
pub fn validate_skill_with(source: &str, folder_name: &str, options: &SkillOptions) -> SkillReport {
    let mut sink = Sink::new(source);
    let fields = frontmatter(source, &mut sink);
    let skill = fields
        .as_ref()
        .and_then(|fields| check(fields, folder_name, options, &mut sink));
    if let Some(name) = fields.as_ref().and_then(|fields| fields.get("name"))
        && let Value::Str(text) = &name.value
    {
        crate::hidden::check_identifier(&mut sink, "/name", name.value_at, "the skill name", text);
    }
    crate::hidden::scan_into(&mut sink);
    let skill = if sink.has_errors() { None } else { skill };
    SkillReport {
        skill,
        diagnostics: sink.finish(),
    }
}

/// A top-level value with the byte offset of its key and of its value.
struct Field {
    key_at: usize,
    value_at: usize,
    value: Value,
}

/// The frontmatter's top-level keys: the block between the first two `---` lines, read as
/// one YAML document that must be a mapping.
fn frontmatter(source: &str, sink: &mut Sink<'_>) -> Option<BTreeMap<String, Field>> {
    let (start, close) = match frontmatter::locate(source) {
        Block::Found { start, close, .. } => (start, close),
        Block::Absent => {
            sink.error(
                "frontmatter-missing",
                "",
                0,
                "SKILL.md does not start with a `---` frontmatter block",
                Some(
                    "start the file with `---`, then `name:` and `description:` lines, then `---`",
                ),
            );
            return None;
        }
        Block::Unterminated => {
            frontmatter::unterminated(sink);
            return None;
        }
    };
    let mut fields = BTreeMap::new();
    for (key, key_at, node) in frontmatter::entries(source, start, close, sink)? {
        fields.entry(key).or_insert(Field {
            key_at,
            value_at: node.at,
            value: node.value,
        });
    }
    Some(fields)
}

/// What breaks the Agent Skills `name` rules (length aside), if anything.
fn skill_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("`name` is empty".to_owned())
    } else if let Some(c) = name
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
    {
        Some(format!(
            "skill name `{name}` contains `{c}`; only lowercase a-z, 0-9 and `-` are allowed"
        ))
    } else if name.starts_with('-') || name.ends_with('-') {
        Some(format!("skill name `{name}` starts or ends with `-`"))
    } else if name.contains("--") {
        Some(format!("skill name `{name}` contains `--`"))
    } else {
        None
    }
}

fn check(
    fields: &BTreeMap<String, Field>,
    folder: &str,
    options: &SkillOptions,
    sink: &mut Sink<'_>,
) -> Option<Skill> {
    // What the client-implementation guidance lets a client load with a warning.
    let lenient = if options.lenient {
        Severity::Warning
    } else {
        Severity::Error
    };
    for (key, f) in fields {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            sink.warning(
                "frontmatter-unknown-key",
                &pointer_push("", key),
                f.key_at,
                format!("unknown frontmatter key `{key}` is ignored"),
                Some(&format!("known keys are {}", KNOWN_KEYS.join(", "))),
            );
        }
    }
    let wrong_type = |sink: &mut Sink<'_>, key: &str, f: &Field, expected: &str| {
        sink.error(
            "skill-field-wrong-type",
            &pointer_push("", key),
            f.value_at,
            format!("`{key}` must be {expected}, found {}", f.value.kind()),
            Some("see the Agent Skills specification for the field's form"),
        );
    };
    let name = match fields.get("name") {
        None => {
            sink.error(
                "skill-name-missing",
                "",
                0,
                "the frontmatter has no `name`",
                Some(&format!("add `name: {folder}`")),
            );
            None
        }
        Some(f) => match &f.value {
            Value::Str(name) => {
                let n = chars(name);
                if let Some(problem) = skill_name_problem(name) {
                    sink.error(
                        "skill-name-invalid",
                        "/name",
                        f.value_at,
                        problem,
                        Some("use 1 to 64 of a-z, 0-9 and `-`, not starting or ending with `-`, without `--`"),
                    );
                } else if n > options.max_name_chars {
                    sink.error(
                        "skill-name-too-long",
                        "/name",
                        f.value_at,
                        format!(
                            "skill name is {n} characters; the limit is {}",
                            options.max_name_chars
                        ),
                        Some("shorten the name and rename the folder to match"),
                    );
                }
                if name != folder {
                    sink.push(
                        lenient,
                        "skill-name-mismatch",
                        "/name",
                        f.value_at,
                        format!("skill name `{name}` differs from its folder `{folder}`"),
                        Some("rename the folder or the skill so they match"),
                    );
                }
                Some(name.clone())
            }
            _ => {
                wrong_type(sink, "name", f, "a string");
                None
            }
        },
    };
    let description = match fields.get("description") {
        None => {
            sink.error(
                "skill-description-missing",
                "",
                0,
                "the frontmatter has no `description`",
                Some("add `description:` saying when to use the skill"),
            );
            None
        }
        Some(f) => match &f.value {
            Value::Str(description) => {
                let n = chars(description);
                if description.trim().is_empty() {
                    sink.error(
                        "skill-description-empty",
                        "/description",
                        f.value_at,
                        "`description` is empty",
                        Some("say when the skill should be used"),
                    );
                } else if n > options.max_description_chars {
                    sink.push(
                        lenient,
                        "skill-description-too-long",
                        "/description",
                        f.value_at,
                        format!(
                            "`description` is {n} characters; the limit is {}",
                            options.max_description_chars
                        ),
                        Some("shorten it and move detail into the body"),
                    );
                }
                Some(description.clone())
            }
            _ => {
                wrong_type(sink, "description", f, "a string");
                None
            }
        },
    };
    if let Some(f) = fields.get("license")
        && !matches!(f.value, Value::Str(_))
    {
        wrong_type(sink, "license", f, "a string");
    }
    if let Some(f) = fields.get("compatibility") {
        match &f.value {
            Value::Str(text) => {
                let n = chars(text);
                if n == 0 || n > options.max_compatibility_chars {
                    sink.error(
                        "skill-compatibility-length",
                        "/compatibility",
                        f.value_at,
                        format!(
                            "`compatibility` is {n} characters; it must be 1 to {}",
                            options.max_compatibility_chars
                        ),
                        Some("state the environment the skill needs in a sentence, or remove the field"),
                    );
                }
            }
            _ => wrong_type(sink, "compatibility", f, "a string"),
        }
    }
    let mut metadata = BTreeMap::new();
    if let Some(f) = fields.get("metadata") {
        match &f.value {
            Value::Map(entries) => {
                for (key, _, value) in entries {
                    match &value.value {
                        Value::Str(v) => {
                            metadata.insert(key.clone(), v.clone());
                        }
                        other => sink.push(
                            lenient,
                            "skill-field-wrong-type",
                            &pointer_push("/metadata", key),
                            value.at,
                            format!("`metadata.{key}` must be a string, found {}", other.kind()),
                            Some("`metadata` maps string keys to string values"),
                        ),
                    }
                }
            }
            _ => wrong_type(sink, "metadata", f, "a mapping of strings to strings"),
        }
    }
    let mut allowed_tools = Vec::new();
    if let Some(f) = fields.get("allowed-tools") {
        match &f.value {
            Value::Str(text) => {
                allowed_tools = text.split_whitespace().map(str::to_owned).collect()
            }
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    match &item.value {
                        Value::Str(v) => allowed_tools.push(v.clone()),
                        other => sink.error(
                            "skill-field-wrong-type",
                            &pointer_push("/allowed-tools", &i.to_string()),
                            item.at,
                            format!(
                                "`allowed-tools` item {i} must be a string, found {}",
                                other.kind()
                            ),
                            Some("list tool names as strings"),
                        ),
                    }
                }
            }
            _ => wrong_type(sink, "allowed-tools", f, "a string or a list of strings"),
        }
    }
    let scalars = fields
        .iter()
        .filter_map(|(k, f)| match &f.value {
            Value::Str(v) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect();
    Some(Skill {
        name: name?,
        description: description?,
        fields: scalars,
        metadata,
        allowed_tools,
    })
}
