//! Ratchets: conventions the tree is moving towards, checked so that it can only get closer.
//!
//! Each check returns the problems (the test and `cargo xtask tidy` fail on any) and notes
//! (printed, never failing: an allowance that can now be lowered or removed). A ratchet holds
//! today's exceptions in a table with today's numbers; a change may lower a number, never raise
//! it, and the lead removes entries as the code gets there. The tables are in [`allowances`].

mod allowances;
mod lexer;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use allowances::{CLOSED_ENUMS, HOST_SRC_CEILING, LITERAL_ALLOWANCE, LONG_FILES};
use lexer::{bodies_after, is_ident, lex, line_of, test_spans, word_offsets};

/// What a check found.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Each one fails the check.
    pub(crate) problems: Vec<String>,
    /// Allowances that can be tightened; informational.
    pub(crate) notes: Vec<String>,
}

impl Findings {
    pub(crate) fn extend(&mut self, other: Findings) {
        self.problems.extend(other.problems);
        self.notes.extend(other.notes);
    }
}

/// Every ratchet.
pub(crate) fn check_all(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    findings.extend(file_lengths(root)?);
    findings.extend(host_size(root)?);
    findings.extend(dated_headings(root)?);
    findings.extend(host_core_imports(root)?);
    findings.extend(cli_name_literals(root)?);
    findings.extend(non_exhaustive_enums(root)?);
    Ok(findings)
}

/// The longest a source file may be, in lines.
pub(crate) const MAX_LINES: usize = 800;

/// No `*.rs` file under crates/, xtask/, packs/ or fuzz/ is longer than [`MAX_LINES`] lines,
/// except those in [`LONG_FILES`], each of which may not grow past its recorded length.
pub(crate) fn file_lengths(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let mut seen = BTreeMap::new();
    for file in files(root, &["crates", "xtask", "packs", "fuzz"], "rs")? {
        let lines = read(&file)?.lines().count();
        let name = relative(root, &file);
        match LONG_FILES.iter().find(|(path, _)| *path == name) {
            Some((_, ceiling)) if lines > *ceiling => findings.problems.push(format!(
                "{name} has {lines} lines, more than its ceiling of {ceiling} in the long-file list \
                 (xtask/src/ratchets/allowances.rs): a listed file may only shrink; split it or move \
                 code out instead of adding to it"
            )),
            Some(_) if lines <= MAX_LINES => findings.notes.push(format!(
                "{name} is down to {lines} lines, within {MAX_LINES}: remove its entry from the \
                 long-file list"
            )),
            Some(_) => {}
            None if lines > MAX_LINES => findings.problems.push(format!(
                "{name} has {lines} lines, more than {MAX_LINES}: split it into modules with one job \
                 each (new long files are not allowed; the list in xtask/src/ratchets/allowances.rs \
                 only holds the older ones)"
            )),
            None => {}
        }
        seen.insert(name, lines);
    }
    for (path, _) in LONG_FILES {
        if !seen.contains_key(*path) {
            findings.notes.push(format!(
                "{path} is in the long-file list but no longer exists: remove its entry"
            ));
        }
    }
    Ok(findings)
}

/// c2-host's `src/` holds no more than [`HOST_SRC_CEILING`] lines in all.
pub(crate) fn host_size(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let mut total = 0;
    for file in files(root, &["crates/c2-host/src"], "rs")? {
        total += read(&file)?.lines().count();
    }
    if total > HOST_SRC_CEILING {
        findings.problems.push(format!(
            "crates/c2-host/src holds {total} lines, more than its ceiling of {HOST_SRC_CEILING} \
             (xtask/src/ratchets/allowances.rs): c2-host is the thin lifecycle; put the mechanism \
             in the crate that owns it and keep only the wiring here"
        ));
    } else if total < HOST_SRC_CEILING {
        findings.notes.push(format!(
            "crates/c2-host/src is down to {total} lines: lower HOST_SRC_CEILING to it"
        ));
    }
    Ok(findings)
}

/// No markdown heading under docs/ outside docs/reports/ is dated. Docs describe the system as it
/// is; a dated account belongs in docs/reports/, frozen.
///
/// A heading is an ATX heading (a line of one to six `#` and a space, outside fenced code
/// blocks). It is dated when, compared case-insensitively and word by word, it contains:
/// - an ISO date, `YYYY-MM-DD` (`2026-11-30`);
/// - a month name or its three-letter abbreviation (`Sept` too) next to a day or a year:
///   `Nov 30`, `30 November`, `December 1st`, `Nov 2026`;
/// - a weekday's full name (`Tuesday`), or its abbreviation before a number or a month
///   (`Tue 1`, `Sun, Dec`);
/// - a part of a day pinned to a date, `night of`, `morning of`, `afternoon of`, `evening of`,
///   or the words `tonight`, `yesterday`.
pub(crate) fn dated_headings(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let reports = root.join("docs").join("reports");
    for file in files(root, &["docs"], "md")? {
        if file.starts_with(&reports) {
            continue;
        }
        let text = read(&file)?;
        let mut fence: Option<&str> = None;
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            for marker in ["```", "~~~"] {
                if trimmed.starts_with(marker) {
                    fence = match fence {
                        None => Some(marker),
                        Some(open) if open == marker => None,
                        other => other,
                    };
                }
            }
            if fence.is_some() || !is_heading(line) {
                continue;
            }
            if let Some(why) = dated(line) {
                findings.problems.push(format!(
                    "{}:{}: the heading `{}` is dated ({why}): docs describe the system as it is; \
                     move a dated account to docs/reports/ or drop the date from the heading",
                    relative(root, &file),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    Ok(findings)
}

fn is_heading(line: &str) -> bool {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

const MONTHS: &[&str] = &[
    "jan",
    "january",
    "feb",
    "february",
    "mar",
    "march",
    "apr",
    "april",
    "may",
    "jun",
    "june",
    "jul",
    "july",
    "aug",
    "august",
    "sep",
    "sept",
    "september",
    "oct",
    "october",
    "nov",
    "november",
    "dec",
    "december",
];
const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const WEEKDAY_ABBREVIATIONS: &[&str] = &[
    "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
];
const PARTS_OF_DAY: &[&str] = &["night", "morning", "afternoon", "evening"];

/// Why a heading is dated, if it is (the rules are on [`dated_headings`]).
pub(crate) fn dated(heading: &str) -> Option<&'static str> {
    let lower = heading.to_lowercase();
    let bytes = lower.as_bytes();
    let iso = bytes.windows(10).any(|w| {
        w.iter().enumerate().all(|(k, b)| match k {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
    });
    if iso {
        return Some("an ISO date");
    }
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let day = |w: &str| {
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let suffix = &w[digits.len()..];
        !digits.is_empty()
            && digits.len() <= 2
            && digits.chars().all(|c| c.is_ascii_digit())
            && ["", "st", "nd", "rd", "th"].contains(&suffix)
    };
    let year = |w: &str| w.len() == 4 && w.chars().all(|c| c.is_ascii_digit());
    for (k, word) in words.iter().enumerate() {
        let next = words.get(k + 1).copied().unwrap_or_default();
        let previous = k.checked_sub(1).map_or("", |p| words[p]);
        if MONTHS.contains(word) && (day(next) || year(next) || day(previous)) {
            return Some("a month and a day or year");
        }
        if WEEKDAYS.contains(word) {
            return Some("a weekday");
        }
        if WEEKDAY_ABBREVIATIONS.contains(word) && (day(next) || MONTHS.contains(&next)) {
            return Some("a weekday and a date");
        }
        if PARTS_OF_DAY.contains(word) && next == "of" {
            return Some("a part of a day");
        }
        if ["tonight", "yesterday"].contains(word) {
            return Some("a day relative to when it was written");
        }
    }
    None
}

/// c2-host has no `contributions` module (`contributions/` or `contributions.rs`): the
/// contributions are the c2-contributions crate, which depends on c2-host, never the other way
/// round (the layering table). And c2-host's core (every file under crates/c2-host/src/ except
/// `builtins/`, the module file `builtins.rs`, and `lib.rs`, the facade that declares and
/// re-exports every module) never imports a built-in, nor a contribution should one come back:
/// no `use` whose path starts at `crate`, `super` or `self` and names `contributions` or
/// `builtins`, and no qualified path `crate::contributions::...` or `crate::builtins::...`
/// anywhere in its code.
pub(crate) fn host_core_imports(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let src = root.join("crates/c2-host/src");
    if !src.is_dir() {
        return Ok(findings);
    }
    for module in ["contributions", "contributions.rs"] {
        if src.join(module).exists() {
            findings.problems.push(format!(
                "crates/c2-host/src/{module}: c2-host has no contributions module; what bundles \
                 contribute beyond commands is the c2-contributions crate, built on c2_host::seam"
            ));
        }
    }
    for file in files(root, &["crates/c2-host/src"], "rs")? {
        let inside = file.strip_prefix(&src).unwrap_or(&file);
        let first = inside
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if [
            "contributions",
            "builtins",
            "contributions.rs",
            "builtins.rs",
            "lib.rs",
        ]
        .contains(&first.as_str())
        {
            continue;
        }
        let text = read(&file)?;
        let code = lex(&text).code;
        for offset in core_import_offsets(&code) {
            findings.problems.push(format!(
                "{}:{}: a core file of c2-host reaches into `contributions` or `builtins`: the core \
                 must not depend on a contribution; let the contribution call the core through its \
                 seam (or move this code into the contribution)",
                relative(root, &file),
                line_of(&text, offset)
            ));
        }
    }
    Ok(findings)
}

/// Offsets of imports of, or paths into, `contributions`/`builtins` in comment-free code.
pub(crate) fn core_import_offsets(code: &str) -> Vec<usize> {
    let squeezed = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let names_module = |path: &str| {
        path.split(|c: char| !is_ident(c))
            .any(|segment| segment == "contributions" || segment == "builtins")
    };
    let mut offsets = Vec::new();
    for start in word_offsets(code, "use") {
        let end = code[start..].find(';').map_or(code.len(), |k| start + k);
        let path = squeezed(&code[start + 3..end]);
        let path = path.trim_start_matches("::");
        let rooted = ["crate::", "super::", "self::"]
            .iter()
            .any(|root| path.starts_with(root));
        if rooted && names_module(path) {
            offsets.push(start);
        }
    }
    for start in word_offsets(code, "crate") {
        let rest = squeezed(&code[start..(start + 64).min(code.len())]);
        let qualified = ["crate::contributions", "crate::builtins"]
            .iter()
            .any(|p| rest.starts_with(p));
        if qualified
            && !offsets
                .iter()
                .any(|&o| o < start && code[o..start].find(';').is_none())
        {
            offsets.push(start);
        }
    }
    offsets.sort_unstable();
    offsets
}

/// Workspace crates that are not libraries: the CLI, the test kit, xtask and the packs.
const NOT_LIBRARIES: &[&str] = &["c2-cli", "c2-testkit"];

/// No string literal in a library crate (every crate under crates/ but those in
/// [`NOT_LIBRARIES`]; xtask and packs/ are outside crates/) contains `c2-plugins`, the CLI's
/// name, outside the crate's hint table: library messages say what went wrong; what a person
/// should run next is a hint. The hint table is the body of any function named `hint` (the
/// `hint()` method of an error) and any file named `hint.rs` or `hints.rs`. Test code is not
/// looked at: `tests.rs` files, `tests/` directories and inline `#[cfg(test)]` items.
/// [`LITERAL_ALLOWANCE`] holds today's count per file, which may only go down.
pub(crate) fn cli_name_literals(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (name, src) in library_sources(root)? {
        if NOT_LIBRARIES.contains(&name.as_str()) {
            continue;
        }
        for file in files(root, &[src.as_str()], "rs")? {
            let base = file.file_name().unwrap_or_default().to_string_lossy();
            if base == "tests.rs" || base == "hint.rs" || base == "hints.rs" {
                continue;
            }
            if file.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let count = count_cli_literals(&read(&file)?);
            if count > 0 {
                counts.insert(relative(root, &file), count);
            }
        }
    }
    for (file, count) in &counts {
        let allowed = LITERAL_ALLOWANCE
            .iter()
            .find(|(path, _)| path == file)
            .map_or(0, |(_, n)| *n);
        if *count > allowed {
            findings.problems.push(format!(
                "{file}: {count} string literal(s) name the CLI (`c2-plugins`), {allowed} allowed: a \
                 library message says what went wrong, not which command to run; put the advice in \
                 the error's `hint()` (the crate's hint table) and keep the message free of it"
            ));
        }
    }
    for (file, allowed) in LITERAL_ALLOWANCE {
        let count = counts.get(*file).copied().unwrap_or(0);
        if count < *allowed {
            findings.notes.push(format!(
                "{file}: {count} string literal(s) name the CLI, {allowed} allowed: lower its \
                 allowance (xtask/src/ratchets/allowances.rs) to {count}"
            ));
        }
    }
    Ok(findings)
}

/// String literals naming `c2-plugins` outside `fn hint` bodies and inline test items.
pub(crate) fn count_cli_literals(source: &str) -> usize {
    let lexed = lex(source);
    let mut exempt = bodies_after(
        &lexed.code,
        word_offsets(&lexed.code, "fn").filter(|&k| {
            let after = lexed.code[k + 2..].trim_start();
            after.starts_with("hint") && !after["hint".len()..].starts_with(|c: char| is_ident(c))
        }),
    );
    exempt.extend(test_spans(&lexed.code));
    lexed
        .literals
        .iter()
        .filter(|(offset, text)| {
            text.contains("c2-plugins") && !exempt.iter().any(|(s, e)| s <= offset && offset < e)
        })
        .count()
}

/// Every `pub enum` of a published crate (`publish = true` in its Cargo.toml) is
/// `#[non_exhaustive]`, so a later variant is not a breaking change, or is named in
/// [`CLOSED_ENUMS`] with the reason it is deliberately closed. The crate's `unreachable_pub` lint
/// makes every `pub enum` in its sources part of its public API, so all of src/ is read (but
/// `tests.rs` files and inline `#[cfg(test)]` items). An attribute counts when it is among the
/// attributes and doc comments right above the `enum` line.
pub(crate) fn non_exhaustive_enums(root: &Path) -> Result<Findings> {
    let mut findings = Findings::default();
    let mut found: Vec<(String, String, bool)> = Vec::new();
    for (name, src) in published_sources(root)? {
        for file in files(root, &[src.as_str()], "rs")? {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = read(&file)?;
            for (line, enum_name, marked) in public_enums(&text) {
                if marked {
                    found.push((name.clone(), enum_name, true));
                    continue;
                }
                let closed = CLOSED_ENUMS
                    .iter()
                    .any(|(krate, e, _)| *krate == name && *e == enum_name);
                if !closed {
                    findings.problems.push(format!(
                        "{}:{line}: `pub enum {enum_name}` of the published crate {name} is not \
                         #[non_exhaustive]: add the attribute (and a wildcard arm to matches outside \
                         the crate), or, if its set of variants is closed for good, name it in \
                         CLOSED_ENUMS (xtask/src/ratchets/allowances.rs) with the reason",
                        relative(root, &file)
                    ));
                }
                found.push((name.clone(), enum_name, false));
            }
        }
    }
    for (krate, enum_name, _) in CLOSED_ENUMS {
        let state = found
            .iter()
            .find(|(k, e, _)| k == krate && e == enum_name)
            .map(|(_, _, marked)| *marked);
        match state {
            None => findings.notes.push(format!(
                "{krate}::{enum_name} is in CLOSED_ENUMS but no such public enum exists: remove it"
            )),
            Some(true) => findings.notes.push(format!(
                "{krate}::{enum_name} is #[non_exhaustive] now: remove it from CLOSED_ENUMS"
            )),
            Some(false) => {}
        }
    }
    Ok(findings)
}

/// `(line, name, has #[non_exhaustive])` of each `pub enum` (not `pub(crate)`) outside test code.
pub(crate) fn public_enums(text: &str) -> Vec<(usize, String, bool)> {
    let code = lex(text).code;
    let tests = test_spans(&code);
    let lines: Vec<&str> = text.lines().collect();
    let mut offset = 0;
    let mut enums = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let here = offset;
        offset += line.len() + 1;
        let Some(rest) = line.trim_start().strip_prefix("pub enum ") else {
            continue;
        };
        if tests.iter().any(|(s, e)| *s <= here && here < *e) {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|&c| is_ident(c) || c == '$')
            .collect();
        let mut marked = false;
        for above in lines[..index].iter().rev() {
            let above = above.trim();
            let ends_item = above.ends_with(['}', ';', '{']) && !above.starts_with("//");
            if above.is_empty() || ends_item {
                break;
            }
            if above.starts_with("#[non_exhaustive]") {
                marked = true;
            }
        }
        enums.push((index + 1, name, marked));
    }
    enums
}

/// [`library_sources`] of the crates whose Cargo.toml says `publish = true` (as xtask's
/// publish check requires of every library crate that is not private), whatever their number.
pub(crate) fn published_sources(root: &Path) -> Result<Vec<(String, String)>> {
    let mut published = Vec::new();
    for (name, src) in library_sources(root)? {
        let manifest = read(&root.join(&src).with_file_name("Cargo.toml"))?;
        if manifest
            .lines()
            .any(|line| line.split_whitespace().collect::<String>() == "publish=true")
        {
            published.push((name, src));
        }
    }
    Ok(published)
}

/// `(crate name, path of its src/ relative to the root)` of every crate under crates/.
fn library_sources(root: &Path) -> Result<Vec<(String, String)>> {
    let mut crates = Vec::new();
    let dir = root.join("crates");
    #[expect(clippy::disallowed_methods, reason = "xtask reads the source tree")]
    let entries = std::fs::read_dir(&dir).with_context(|| format!("list {}", dir.display()))?;
    for entry in entries {
        let path = entry.context("list crates/")?.path();
        if path.join("Cargo.toml").is_file() && path.join("src").is_dir() {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            crates.push((name.clone(), format!("crates/{name}/src")));
        }
    }
    crates.sort();
    Ok(crates)
}

/// Files ending in `.{extension}` under each of `dirs` (relative to the root), sorted; `target`
/// and hidden directories are skipped.
fn files(root: &Path, dirs: &[&str], extension: &str) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = dirs
        .iter()
        .map(|d| root.join(d))
        .filter(|d| d.is_dir())
        .collect();
    while let Some(dir) = pending.pop() {
        #[expect(clippy::disallowed_methods, reason = "xtask reads the source tree")]
        let entries = std::fs::read_dir(&dir).with_context(|| format!("list {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("list {}", dir.display()))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry
                .file_type()
                .with_context(|| format!("stat {}", path.display()))?;
            if kind.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    pending.push(path);
                }
            } else if kind.is_file() && path.extension().is_some_and(|e| e == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))
}

/// A path relative to the root, with `/` separators.
fn relative(root: &Path, path: &Path) -> String {
    let inside = path.strip_prefix(root).unwrap_or(path);
    inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
