//! `SKILL.md` frontmatter: the block between the first two `---` lines, checked against every
//! Agent Skills rule (agentskills docs/specification.mdx; Agent Plugins §7.1 makes it binding).
//!
//! The frontmatter is read with a deliberately small YAML subset, enough for skill metadata:
//! - one `key: value` per line, keys of `[A-Za-z0-9_.-]` or quoted; blank and `#` comment lines;
//! - values: plain scalars (trimmed, a ` #` comment stripped, continuation lines folded; one
//!   containing `: ` must be quoted, as YAML requires), `"double-quoted"` with the escapes
//!   `\" \\ \n \t`, `'single-quoted'` with `''` for a quote, and `|`/`>` block scalars
//!   with YAML's chomping;
//! - a key alone on its line followed by a block mapping (`metadata`) or a block sequence
//!   (`allowed-tools`) one level deep; anything deeper is accepted as YAML and typed "nested",
//!   so a rule that wants a string rejects it. Every value is text: `true`, `1` and `null`
//!   stay strings, as in the reference validator's strict YAML.
//!
//! Anything else (flow collections, anchors, tags, multi-document streams) is a
//! `frontmatter-syntax` error, which makes the skill invalid: the collector skips it with a
//! warning. Rules: `name` 1 to 64 of `a-z 0-9 -`, no leading, trailing or double `-`, equal
//! to the folder; `description` 1 to 1024 characters, not blank; `license` a string;
//! `compatibility` 1 to 500 characters; `metadata` a map of string to string; `allowed-tools`
//! a string or a list of strings; other keys are warnings.

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
    let skill = fields.and_then(|fields| check(&fields, folder_name, options, &mut sink));
    let skill = if sink.has_errors() { None } else { skill };
    SkillReport {
        skill,
        diagnostics: sink.finish(),
    }
}

/// A frontmatter value in the supported YAML subset.
#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    /// A scalar: plain, quoted or a `|`/`>` block. YAML-typed words (`true`, `1`, `null`) stay
    /// text, as in the reference validator's strict YAML.
    Str(String),
    /// A block mapping one level deep: `(key, offset, value)`.
    Map(Vec<(String, usize, Yaml)>),
    /// A block sequence one level deep: `(offset, item)`.
    List(Vec<(usize, Yaml)>),
    /// Anything nested deeper: accepted as YAML, never a string.
    Nested,
    /// A value whose syntax was already reported: no rule reports it again.
    Invalid,
}

impl Yaml {
    fn kind(&self) -> &'static str {
        match self {
            Yaml::Str(_) => "a string",
            Yaml::Map(_) => "a mapping",
            Yaml::List(_) => "a list",
            Yaml::Nested => "a nested structure",
            Yaml::Invalid => "invalid YAML",
        }
    }
}

/// A top-level value with the byte offset of its key and of its value.
struct Field {
    key_at: usize,
    value_at: usize,
    value: Yaml,
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

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// `key: rest` (or `key:`), the key plain `[A-Za-z0-9_.-]+` or quoted; `None` when the line
/// is not a mapping entry.
fn split_key(line: &str) -> Option<(String, &str)> {
    let (key, after) = if line.starts_with(['"', '\'']) {
        let q = line.chars().next()?;
        let close = line[1..].find(q)? + 1;
        (scalar(&line[..=close]).ok()?, &line[close + 1..])
    } else {
        let colon = line.find(':')?;
        let key = &line[..colon];
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return None;
        }
        (key.to_owned(), &line[colon..])
    };
    let rest = after.strip_prefix(':')?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, rest))
}

/// The frontmatter's top-level keys. Nesting is read with explicit loops over two levels; no
/// recursion follows the input's depth.
fn frontmatter(source: &str, sink: &mut Sink<'_>) -> Option<BTreeMap<String, Field>> {
    let body = source.strip_prefix('\u{feff}').unwrap_or(source);
    let skip = source.len() - body.len();
    let all: Vec<(usize, &str)> = lines(body).map(|(at, line)| (at + skip, line)).collect();
    if all.first().map(|(_, l)| l.trim_end()) != Some("---") {
        sink.error(
            "frontmatter-missing",
            "",
            0,
            "SKILL.md does not start with a `---` frontmatter block",
            Some("start the file with `---`, then `name:` and `description:` lines, then `---`"),
        );
        return None;
    }
    let Some(close) = all
        .iter()
        .skip(1)
        .position(|(_, l)| l.trim_end() == "---")
        .map(|i| i + 1)
    else {
        sink.error(
            "frontmatter-unterminated",
            "",
            0,
            "the frontmatter block has no closing `---` line",
            Some("add a `---` line after the last frontmatter key"),
        );
        return None;
    };
    let block = &all[1..close];
    let mut fields: BTreeMap<String, Field> = BTreeMap::new();
    let mut i = 0;
    while i < block.len() {
        let (at, line) = block[i];
        i += 1;
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            syntax(sink, at, "an indented line outside a block value");
            continue;
        }
        let Some((key, rest)) = split_key(line) else {
            syntax(sink, at, "expected `key: value`");
            continue;
        };
        let value_at = at + (line.len() - rest.trim_start().len());
        let raw = strip_comment(rest.trim());
        // The lines that belong to this key: indented ones, blank ones, and (for a sequence
        // written at the key's own indentation) lines starting with `- `.
        let start = i;
        while i < block.len() {
            let next = block[i].1;
            let belongs = next.starts_with([' ', '\t'])
                || next.trim().is_empty()
                || (raw.is_empty() && (next.starts_with("- ") || next == "-"));
            if !belongs {
                break;
            }
            i += 1;
        }
        let mut end = i;
        while end > start && block[end - 1].1.trim().is_empty() {
            end -= 1;
        }
        i = end;
        let children = &block[start..end];
        let value = if raw.is_empty() {
            nested(children, sink).or(Some(Yaml::Invalid))
        } else if let Some(chomp) = raw.strip_prefix(['|', '>']) {
            block_scalar(raw.starts_with('|'), chomp, children, at, sink).or(Some(Yaml::Invalid))
        } else {
            match scalar(raw) {
                Ok(mut v) => {
                    // A plain scalar may continue on indented lines, folded with spaces.
                    for (cat, c) in children {
                        let c = c.trim();
                        if c.is_empty() || c.starts_with('#') {
                            continue;
                        }
                        if raw.starts_with(['"', '\'']) || c.contains(": ") || c.ends_with(':') {
                            syntax(sink, *cat, "an indented line outside a block value");
                            break;
                        }
                        v.push(' ');
                        v.push_str(strip_comment(c));
                    }
                    Some(Yaml::Str(v))
                }
                Err(message) => {
                    syntax(sink, value_at, &message);
                    Some(Yaml::Invalid)
                }
            }
        };
        let Some(value) = value else { continue };
        if fields.contains_key(&key) {
            sink.error(
                "duplicate-key",
                &pointer_push("", &key),
                at,
                format!("duplicate frontmatter key `{key}`"),
                Some("keep one of the two lines"),
            );
            continue;
        }
        fields.insert(
            key,
            Field {
                key_at: at,
                value_at,
                value,
            },
        );
    }
    Some(fields)
}

/// A ` #` comment ends a plain value.
fn strip_comment(raw: &str) -> &str {
    if raw.starts_with('#') {
        return "";
    }
    if raw.starts_with(['"', '\'']) {
        return raw;
    }
    raw.split_once(" #").map_or(raw, |(v, _)| v).trim_end()
}

/// `|` keeps newlines, `>` folds them into spaces; the default keeps one final newline and
/// `-` none, as YAML's chomping does.
fn block_scalar(
    literal: bool,
    chomp: &str,
    children: &[(usize, &str)],
    at: usize,
    sink: &mut Sink<'_>,
) -> Option<Yaml> {
    if !matches!(chomp, "" | "-" | "+") {
        syntax(sink, at, "an unsupported block scalar header");
        return None;
    }
    let base = children
        .iter()
        .find(|(_, l)| !l.trim().is_empty())
        .map_or(0, |(_, l)| indent(l));
    let texts: Vec<&str> = children
        .iter()
        .map(|(_, l)| if l.len() >= base { &l[base..] } else { "" })
        .collect();
    let mut out = if literal {
        texts.join("\n")
    } else {
        texts.join(" ")
    };
    if chomp != "-" && !out.is_empty() {
        out.push('\n');
    }
    Some(Yaml::Str(out))
}

/// The value of a key written alone on its line: empty, a mapping or a sequence.
fn nested(children: &[(usize, &str)], sink: &mut Sink<'_>) -> Option<Yaml> {
    let items: Vec<(usize, &str)> = children
        .iter()
        .copied()
        .filter(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .collect();
    let Some(&(_, first)) = items.first() else {
        return Some(Yaml::Str(String::new()));
    };
    let base = indent(first);
    let is_list = first.trim_start().starts_with("- ") || first.trim() == "-";
    let mut map = Vec::new();
    let mut list = Vec::new();
    // Whether the last mapping entry opened a block scalar (its deeper lines are its text).
    let mut in_block = false;
    for (at, line) in items {
        let depth = indent(line);
        if depth > base {
            // Belongs to the previous entry: its block text, or a deeper structure.
            if in_block {
                continue;
            }
            if let Some(last) = list.last_mut() {
                *last = (at, Yaml::Nested);
            } else if let Some((_, _, v)) = map.last_mut() {
                *v = Yaml::Nested;
            } else {
                syntax(sink, at, "an indented line outside a block value");
                return None;
            }
            continue;
        }
        if depth < base {
            syntax(sink, at, "inconsistent indentation");
            return None;
        }
        let text = &line[base..];
        if is_list {
            let Some(item) = text.strip_prefix('-') else {
                syntax(sink, at, "a mapping entry inside a sequence");
                return None;
            };
            let item = strip_comment(item.trim());
            let value = if item.is_empty() || split_key(item).is_some() {
                Yaml::Nested
            } else {
                match scalar(item) {
                    Ok(v) => Yaml::Str(v),
                    Err(message) => {
                        syntax(sink, at, &message);
                        return None;
                    }
                }
            };
            list.push((at, value));
        } else {
            let Some((key, rest)) = split_key(text) else {
                syntax(sink, at, "expected `key: value`");
                return None;
            };
            let raw = strip_comment(rest.trim());
            in_block = raw.starts_with(['|', '>']);
            let value = if raw.is_empty() || in_block {
                Yaml::Str(String::new())
            } else {
                match scalar(raw) {
                    Ok(v) => Yaml::Str(v),
                    Err(message) => {
                        syntax(sink, at, &message);
                        return None;
                    }
                }
            };
            if map.iter().any(|(k, _, _)| *k == key) {
                sink.error(
                    "duplicate-key",
                    "",
                    at,
                    format!("duplicate key `{key}` in a frontmatter mapping"),
                    Some("keep one of the two lines"),
                );
                return None;
            }
            map.push((key, at, value));
        }
    }
    Some(if is_list {
        Yaml::List(list)
    } else {
        Yaml::Map(map)
    })
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
    } else if raw.starts_with(['[', '{', '&', '*', '!', '%', '@', '`', '|', '>'])
        || raw.starts_with("- ")
        || raw.starts_with("? ")
        || raw.starts_with(": ")
    {
        Err(format!(
            "a value starting with `{}` (quote it)",
            raw.chars().next().unwrap_or_default()
        ))
    } else {
        let plain = strip_comment(raw);
        if plain.contains(": ") || plain.ends_with(':') {
            return Err("a plain value containing `: ` (quote it)".to_owned());
        }
        Ok(plain.to_owned())
    }
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
        if f.value == Yaml::Invalid {
            return; // its syntax error says it all
        }
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
            Yaml::Str(name) => {
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
                    sink.error(
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
            Yaml::Str(description) => {
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
                    sink.error(
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
        && !matches!(f.value, Yaml::Str(_))
    {
        wrong_type(sink, "license", f, "a string");
    }
    if let Some(f) = fields.get("compatibility") {
        match &f.value {
            Yaml::Str(text) => {
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
            Yaml::Map(entries) => {
                for (key, at, value) in entries {
                    match value {
                        Yaml::Str(v) => {
                            metadata.insert(key.clone(), v.clone());
                        }
                        other => sink.error(
                            "skill-field-wrong-type",
                            &pointer_push("/metadata", key),
                            *at,
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
            Yaml::Str(text) => allowed_tools = text.split_whitespace().map(str::to_owned).collect(),
            Yaml::List(items) => {
                for (i, (at, item)) in items.iter().enumerate() {
                    match item {
                        Yaml::Str(v) => allowed_tools.push(v.clone()),
                        other => sink.error(
                            "skill-field-wrong-type",
                            &pointer_push("/allowed-tools", &i.to_string()),
                            *at,
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
            Yaml::Str(v) => Some((k.clone(), v.clone())),
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
