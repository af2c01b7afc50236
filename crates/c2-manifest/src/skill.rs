//! `SKILL.md` frontmatter: the block between the first two `---` lines.
//!
//! The frontmatter is read with a deliberately small YAML subset, enough for skill metadata:
//! - one `key: value` per line, keys of `[A-Za-z0-9_-]`; blank lines and `#` comment lines;
//! - values: plain scalars (trimmed, a ` #` comment stripped), `"double-quoted"` with the
//!   escapes `\" \\ \n \t`, `'single-quoted'` with `''` for a quote;
//! - `|` and `>` block scalars whose lines are indented (joined with newlines or spaces);
//! - a key with no value followed by indented lines (a nested map such as `metadata`) is kept
//!   opaque: accepted, not interpreted.
//!
//! Anything else (flow collections, anchors, multi-document streams) is a `frontmatter-syntax`
//! error, which makes the skill invalid: the collector skips it with a warning.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::chars;
use crate::diagnostic::{Diagnostic, Sink, has_errors, pointer_push};
use crate::options::SkillOptions;

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
    pub name: String,
    pub description: String,
    /// Every scalar key, `name` and `description` included; nested maps are left out.
    pub fields: BTreeMap<String, String>,
}

/// The outcome of validating one `SKILL.md`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillReport {
    /// `Some` exactly when no diagnostic is an error.
    pub skill: Option<Skill>,
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
    let skill = fields.and_then(|fields| check(&fields, folder_name, options, &mut sink));
    let skill = if sink.has_errors() { None } else { skill };
    SkillReport {
        skill,
        diagnostics: sink.finish(),
    }
}

/// A scalar with the byte offset of its key and of its value.
struct Field {
    key_at: usize,
    value_at: usize,
    value: Option<String>,
}

/// Lines of `source` with their byte offsets, line endings removed.
fn lines(source: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    source.split_inclusive('\n').map(move |raw| {
        let start = at;
        at += raw.len();
        (start, raw.trim_end_matches(['\n', '\r']))
    })
}

fn frontmatter(source: &str, sink: &mut Sink<'_>) -> Option<BTreeMap<String, Field>> {
    let body = source.strip_prefix('\u{feff}').unwrap_or(source);
    let skip = source.len() - body.len();
    let mut it = lines(body).map(|(at, line)| (at + skip, line)).peekable();
    if it.next().map(|(_, l)| l.trim_end()) != Some("---") {
        sink.error(
            "frontmatter-missing",
            "",
            0,
            "SKILL.md does not start with a `---` frontmatter block",
            Some("start the file with `---`, then `name:` and `description:` lines, then `---`"),
        );
        return None;
    }
    let mut fields: BTreeMap<String, Field> = BTreeMap::new();
    while let Some((at, line)) = it.next() {
        if line.trim_end() == "---" {
            return Some(fields);
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            syntax(sink, at, "an indented line outside a block value");
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            syntax(sink, at, "expected `key: value`");
            continue;
        };
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        {
            syntax(sink, at, &format!("`{key}` is not a simple key"));
            continue;
        }
        let value_at = at + key.len() + 1 + (rest.len() - rest.trim_start().len());
        let raw = rest.trim();
        let value = if raw.is_empty() || raw == "|" || raw == ">" || raw == "|-" || raw == ">-" {
            // A block scalar, a nested map, or an empty value: gather the indented lines.
            let mut block = Vec::new();
            while let Some((_, next)) = it.peek() {
                if next.starts_with([' ', '\t']) || (next.trim().is_empty() && !block.is_empty()) {
                    block.push(next.trim().to_owned());
                    it.next();
                } else {
                    break;
                }
            }
            while block.last().is_some_and(String::is_empty) {
                block.pop();
            }
            match raw.chars().next() {
                Some('|') => Some(block.join("\n")),
                Some('>') => Some(block.join(" ")),
                _ if block.is_empty() => Some(String::new()),
                _ => None,
            }
        } else {
            match scalar(raw) {
                Ok(v) => Some(v),
                Err(message) => {
                    syntax(sink, value_at, &message);
                    continue;
                }
            }
        };
        if fields.contains_key(key) {
            sink.error(
                "duplicate-key",
                &pointer_push("", key),
                at,
                format!("duplicate frontmatter key `{key}`"),
                Some("keep one of the two lines"),
            );
            continue;
        }
        fields.insert(
            key.to_owned(),
            Field {
                key_at: at,
                value_at,
                value,
            },
        );
    }
    sink.error(
        "frontmatter-unterminated",
        "",
        0,
        "the frontmatter block has no closing `---` line",
        Some("add a `---` line after the last frontmatter key"),
    );
    None
}

fn syntax(sink: &mut Sink<'_>, at: usize, what: &str) {
    sink.error(
        "frontmatter-syntax",
        "",
        at,
        format!("unsupported frontmatter syntax: {what}"),
        Some(
            "use one `key: value` per line; quote values that contain `: ` or start with a symbol",
        ),
    );
}

fn scalar(raw: &str) -> Result<String, String> {
    if let Some(inner) = raw.strip_prefix('"') {
        let Some(inner) = inner.strip_suffix('"') else {
            return Err("unterminated double-quoted string".into());
        };
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                other => {
                    return Err(format!(
                        "unsupported escape `\\{}`",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            }
        }
        Ok(out)
    } else if let Some(inner) = raw.strip_prefix('\'') {
        let Some(inner) = inner.strip_suffix('\'') else {
            return Err("unterminated single-quoted string".into());
        };
        Ok(inner.replace("''", "'"))
    } else if raw.starts_with(['[', '{', '&', '*', '!', '%', '@', '`']) {
        Err(format!(
            "a value starting with `{}`",
            raw.chars().next().unwrap_or_default()
        ))
    } else {
        let plain = raw.split_once(" #").map_or(raw, |(v, _)| v).trim_end();
        Ok(plain.to_owned())
    }
}

fn check(
    fields: &BTreeMap<String, Field>,
    folder: &str,
    options: &SkillOptions,
    sink: &mut Sink<'_>,
) -> Option<Skill> {
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
        Some(Field {
            value_at, value, ..
        }) => {
            let name = value.clone().unwrap_or_default();
            if name != folder {
                sink.error(
                    "skill-name-mismatch",
                    "/name",
                    *value_at,
                    format!("skill name `{name}` differs from its folder `{folder}`"),
                    Some("rename the folder or the skill so they match"),
                );
            }
            Some(name)
        }
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
        Some(Field {
            value_at, value, ..
        }) => {
            let description = value.clone().unwrap_or_default();
            let n = chars(&description);
            if description.trim().is_empty() {
                sink.error(
                    "skill-description-empty",
                    "/description",
                    *value_at,
                    "`description` is empty",
                    Some("say when the skill should be used"),
                );
            } else if n > options.max_description_chars {
                sink.error(
                    "skill-description-too-long",
                    "/description",
                    *value_at,
                    format!(
                        "`description` is {n} characters; the limit is {}",
                        options.max_description_chars
                    ),
                    Some("shorten it and move detail into the body"),
                );
            }
            Some(description)
        }
    };
    let scalars = fields
        .iter()
        .filter_map(|(k, f)| f.value.clone().map(|v| (k.clone(), v)))
        .collect();
    Some(Skill {
        name: name?,
        description: description?,
        fields: scalars,
    })
}
