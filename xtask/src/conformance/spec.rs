//! Reads the normative texts into units: every prose sentence and every table row, each with
//! the section it sits in and whether it is normative (an upper-case RFC 2119 keyword, or a row
//! of a table that states rules). The statement list anchors its entries in these units, and a
//! normative unit that no entry anchors is a gap `validate` reports.

use std::path::{Path, PathBuf};

/// One sentence or table row of a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The heading the unit sits under, as written (`2. Bundle manifest`, `5.2 Manifest object`).
    pub(crate) section: String,
    /// 1-based line of the unit.
    pub(crate) line: usize,
    /// The text as matched: whitespace collapsed, backticks dropped, cell separators spaces.
    pub(crate) text: String,
    /// Carries a keyword or is a rule-table row.
    pub(crate) normative: bool,
}

/// How a text marks its headings and tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// The C2 texts: plain lines, tab-separated tables, numbered or short headings.
    Plain,
    /// Agent Plugins: Markdown headings, pipe tables, fenced code.
    Markdown,
}

/// The keywords that make a sentence normative (`MUST NOT` and `SHOULD NOT` contain these).
const KEYWORDS: &[&str] = &["MUST", "SHOULD", "REQUIRED", "SHALL"];

/// Tables whose rows are not rules: a glossary and a description of version segments.
const PLAIN_TABLES_WITHOUT_RULES: &[&str] = &["Term"];
const MARKDOWN_SECTIONS_WITHOUT_RULES: &[&str] = &["3. Terminology", "10.2 Plugin versions"];

/// Where Agent Plugins stops being normative (its own words: appendix and design notes).
const MARKDOWN_NON_NORMATIVE_FROM: &str = "Appendix A";

/// Matching form: whitespace collapsed, backticks dropped, table separators made spaces.
pub(crate) fn normalize(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|c| *c != '`')
        .map(|c| if c == '|' || c == '\t' { ' ' } else { c })
        .collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn has_keyword(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .any(|word| KEYWORDS.contains(&word))
}

/// A heading line of a plain C2 text: `N. Title`, or a short capitalized line without final
/// punctuation or diagram characters.
fn plain_heading(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() || t.len() > 60 || t.contains('\t') {
        return false;
    }
    if t.ends_with(['.', ':', ',', ';', ')', '}', ']', '{', '[', '"']) {
        return false;
    }
    if t.contains(['{', '}', '"', '→', '│', '▶', '─', '•', '#', '/', '$']) {
        return false;
    }
    t.chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Splits a paragraph into sentences at `. `, `? ` or `! ` before an upper-case letter,
/// a digit, a backtick or a quote.
fn sentences(paragraph: &str) -> Vec<String> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 2 < chars.len() {
        if matches!(chars[i], '.' | '?' | '!')
            && chars[i + 1] == ' '
            && (chars[i + 2].is_ascii_uppercase()
                || chars[i + 2].is_ascii_digit()
                || matches!(chars[i + 2], '`' | '"' | '“'))
            && !ends_with_abbreviation(&chars[start..=i])
        {
            out.push(chars[start..=i].iter().collect::<String>());
            start = i + 2;
            i += 2;
            continue;
        }
        i += 1;
    }
    if start < chars.len() {
        out.push(chars[start..].iter().collect::<String>());
    }
    out.into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn ends_with_abbreviation(sentence: &[char]) -> bool {
    let text: String = sentence.iter().collect();
    ["e.g.", "i.e.", "etc."].iter().any(|a| text.ends_with(a))
}

/// Every unit of `text`.
pub(crate) fn units(text: &str, flavor: Flavor) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut section = String::new();
    let mut in_fence = false;
    let mut table_rules = false;
    let mut previous_was_table = false;
    let mut normative_part = true;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        match flavor {
            Flavor::Markdown => {
                if line.starts_with("```") {
                    in_fence = !in_fence;
                    continue;
                }
                if in_fence {
                    continue;
                }
                if let Some(title) = line
                    .strip_prefix("#### ")
                    .or_else(|| line.strip_prefix("### "))
                    .or_else(|| line.strip_prefix("## "))
                    .or_else(|| line.strip_prefix("# "))
                {
                    section = title.trim().to_owned();
                    if section.starts_with(MARKDOWN_NON_NORMATIVE_FROM) {
                        normative_part = false;
                    }
                    previous_was_table = false;
                    continue;
                }
                if line.starts_with('|') {
                    let is_separator = line.chars().all(|c| matches!(c, '|' | '-' | ' ' | ':'));
                    let is_header = !previous_was_table;
                    previous_was_table = true;
                    if is_separator || is_header {
                        continue;
                    }
                    let rules = normative_part
                        && !MARKDOWN_SECTIONS_WITHOUT_RULES.contains(&section.as_str());
                    units.push(Unit {
                        section: section.clone(),
                        line: line_no,
                        text: normalize(line),
                        normative: rules,
                    });
                    continue;
                }
                previous_was_table = false;
                if line.starts_with('>') || line.starts_with("**") {
                    continue;
                }
            }
            Flavor::Plain => {
                if line.contains('\t') {
                    let first = line.split('\t').next().unwrap_or("").trim();
                    if !previous_was_table {
                        // A header row: it decides whether the rows below state rules.
                        table_rules = !PLAIN_TABLES_WITHOUT_RULES.contains(&first);
                        previous_was_table = true;
                        continue;
                    }
                    units.push(Unit {
                        section: section.clone(),
                        line: line_no,
                        text: normalize(line),
                        normative: table_rules,
                    });
                    continue;
                }
                previous_was_table = false;
                if plain_heading(line) {
                    section = line.to_owned();
                    continue;
                }
                // JSON examples and code lines are not prose.
                if line.starts_with(['{', '}', '"', ']', '[', '#'])
                    || line.starts_with("cd ")
                    || line.starts_with("cargo ")
                    || line.starts_with("bun ")
                    || line.starts_with("const")
                {
                    continue;
                }
            }
        }
        if line.is_empty() {
            continue;
        }
        for sentence in sentences(line) {
            let text = normalize(&sentence);
            units.push(Unit {
                section: section.clone(),
                line: line_no,
                normative: normative_part && has_keyword(&text),
                text,
            });
        }
    }
    units
}

/// Where the normative texts are: `C2_SPEC_DIR`, else a `shared/spec` beside or above the
/// workspace (the layout of the project's machines).
pub(crate) fn locate(root: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("C2_SPEC_DIR") {
        return Some(PathBuf::from(dir));
    }
    let mut dir = root.parent();
    while let Some(candidate) = dir {
        let spec = candidate.join("shared/spec");
        if spec.join("plugin-standard.md").is_file() {
            return Some(spec);
        }
        dir = candidate.parent();
    }
    None
}

/// The texts a statement can cite, by the short name entries use.
pub(crate) const SPECS: &[(&str, &str, Flavor, &str)] = &[
    (
        "standard",
        "plugin-standard.md",
        Flavor::Plain,
        "C2 Plugin Standard 1.2.0",
    ),
    (
        "protocol",
        "plugin-protocol.md",
        Flavor::Plain,
        "C2 Plugin Protocol 1.0.0",
    ),
    (
        "agent-plugins",
        "agent-plugins-1.0.0/spec.md",
        Flavor::Markdown,
        "Agent Plugins 1.0.0",
    ),
    (
        "reference-standard",
        "reference/plugin-standard.md",
        Flavor::Markdown,
        "C2 Plugin Standard 1.2.0, amended reference text (third source)",
    ),
    (
        "reference-protocol",
        "reference/plugin-protocol.md",
        Flavor::Markdown,
        "C2 Plugin Protocol 1.0.0, amended reference text (third source)",
    ),
];

/// The third source: the reference host's amended text (IchenDEV/C2 `docs/reference/`), cited
/// only by the statements this host implements from it. Its normative sentences need no entry
/// each, and its anchors are checked only where a copy sits in the spec directory's
/// `reference/`.
pub(crate) const AMENDED: &[&str] = &["reference-standard", "reference-protocol"];
