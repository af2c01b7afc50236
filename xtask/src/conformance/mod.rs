//! `cargo xtask conformance`: the statement list in `conformance/statements.json` checked
//! against the normative texts and the test suite, its coverage table, `docs/conformance.md`
//! generated from it, the language-neutral bundle corpus run against any host command, and the
//! protocol transcripts played against the real host. conformance/README.md is the contract.

mod corpus;
mod spec;
mod transcripts;

use spec::{AMENDED, SPECS};

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::{report, root, say};

/// The statement list's file, relative to the workspace root.
const STATEMENTS: &str = "conformance/statements.json";
/// The generated document.
const DOC: &str = "docs/conformance.md";

const KINDS: &[&str] = &[
    "manifest",
    "collector",
    "protocol",
    "lifecycle",
    "policy",
    "surfaces",
    "host-profile",
];

/// `conformance/statements.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Statements {
    /// The format's version; this code reads 1.
    pub(crate) format: u32,
    /// Host-side statements.
    pub(crate) statements: Vec<Statement>,
    /// What the protocol asks of a plugin process, each with the `c2-plugins check` check.
    pub(crate) plugin_obligations: Vec<Obligation>,
}

/// One normative statement.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Statement {
    pub(crate) id: String,
    pub(crate) spec: String,
    pub(crate) section: String,
    /// A fragment of the spec's sentence or row, in matching form (see `spec::normalize`).
    pub(crate) anchor: String,
    pub(crate) kind: String,
    /// The project's paraphrase.
    pub(crate) says: String,
    #[serde(default)]
    pub(crate) proven_by: Vec<String>,
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// One obligation of a plugin process.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Obligation {
    pub(crate) id: String,
    pub(crate) spec: String,
    pub(crate) section: String,
    pub(crate) anchor: String,
    pub(crate) says: String,
    /// The `c2-plugins check` item that verifies it (its `name`, or its prefix for `invoke`);
    /// `None` when no check can observe it, and then `reason` says why.
    pub(crate) check: Option<String>,
    /// Tests showing the check fails a plugin that breaks the obligation.
    #[serde(default)]
    pub(crate) proven_by: Vec<String>,
    /// Why no test shows the check failing, when `proven_by` is empty.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

impl Statement {
    fn verdict(&self) -> &str {
        self.status.as_deref().unwrap_or("proven")
    }
}

/// The `c2-plugins check` items (crates/c2-check).
const CHECKS: &[&str] = &[
    "bundle",
    "runtime",
    "spawn",
    "handshake",
    "protocol version",
    "commands",
    "invoke",
    "stdout",
    "stderr and log",
    "exit on stdin EOF",
];

pub(crate) fn load(root: &Path) -> Result<Statements> {
    let path = root.join(STATEMENTS);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    let statements: Statements =
        serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
    if statements.format != 1 {
        bail!(
            "{STATEMENTS}: format {} is not the format 1 this xtask reads",
            statements.format
        );
    }
    Ok(statements)
}

/// The spec texts as units, by short name; `None` when the texts are not on this machine.
fn spec_units(root: &Path) -> Result<Option<BTreeMap<&'static str, Vec<spec::Unit>>>> {
    let Some(dir) = spec::locate(root) else {
        return Ok(None);
    };
    let mut all = BTreeMap::new();
    for (name, file, flavor, _) in SPECS {
        let path = dir.join(file);
        if AMENDED.contains(name) && !path.is_file() {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        all.insert(*name, spec::units(&text, *flavor));
    }
    Ok(Some(all))
}

/// Every problem of the list on its own and against the specs (when present) and the tree.
pub(crate) fn problems(
    root: &Path,
    list: &Statements,
    units: Option<&BTreeMap<&'static str, Vec<spec::Unit>>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut ids = BTreeSet::new();
    let inventory = TestInventory::scan(root);
    let mut anchors: Vec<(&str, &str)> = Vec::new();
    for s in &list.statements {
        let at = format!("{STATEMENTS}: statement `{}`", s.id);
        if !ids.insert(s.id.as_str()) {
            problems.push(format!("{at}: the id is used twice"));
        }
        if !KINDS.contains(&s.kind.as_str()) {
            problems.push(format!(
                "{at}: kind `{}` is not one of {}",
                s.kind,
                KINDS.join(", ")
            ));
        }
        if s.says.trim().is_empty() {
            problems.push(format!("{at}: `says` is empty"));
        }
        match (s.status.as_deref(), s.proven_by.is_empty()) {
            (None, true) => problems.push(format!(
                "{at}: names no test in `proven_by` and has no `status` (not-applicable or unsupported) with a reason"
            )),
            (None, false) => {}
            (Some("not-applicable" | "unsupported"), true) => {
                if s.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    problems.push(format!("{at}: status `{}` needs a `reason`", s.verdict()));
                }
            }
            (Some("not-applicable" | "unsupported"), false) => problems.push(format!(
                "{at}: has status `{}` and also `proven_by`; keep one",
                s.verdict()
            )),
            (Some(other), _) => problems.push(format!(
                "{at}: status `{other}` is not `not-applicable` or `unsupported`"
            )),
        }
        for test in &s.proven_by {
            if let Err(why) = inventory.resolve(test) {
                problems.push(format!("{at}: {why}"));
            }
        }
        check_anchor(&at, &s.spec, &s.section, &s.anchor, units, &mut problems);
        anchors.push((s.spec.as_str(), s.anchor.as_str()));
    }
    for o in &list.plugin_obligations {
        let at = format!("{STATEMENTS}: plugin obligation `{}`", o.id);
        if !ids.insert(o.id.as_str()) {
            problems.push(format!("{at}: the id is used twice"));
        }
        match o.check.as_deref() {
            Some(check) if !CHECKS.contains(&check) => problems.push(format!(
                "{at}: check `{check}` is not a `c2-plugins check` item ({})",
                CHECKS.join(", ")
            )),
            None if !o.proven_by.is_empty() => problems.push(format!(
                "{at}: names tests but no check; a test here shows a check failing"
            )),
            _ => {}
        }
        if o.proven_by.is_empty() && o.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            problems.push(format!(
                "{at}: names no test showing its check fail in `proven_by` and gives no `reason`"
            ));
        }
        for test in &o.proven_by {
            if let Err(why) = inventory.resolve(test) {
                problems.push(format!("{at}: {why}"));
            }
        }
        check_anchor(&at, &o.spec, &o.section, &o.anchor, units, &mut problems);
        anchors.push((o.spec.as_str(), o.anchor.as_str()));
    }
    if let Some(units) = units {
        for (name, file, _, _) in SPECS.iter().filter(|(name, ..)| !AMENDED.contains(name)) {
            for unit in units.get(name).into_iter().flatten() {
                if !unit.normative {
                    continue;
                }
                let covered = anchors.iter().any(|(spec, anchor)| {
                    spec == name && unit.text.contains(&spec::normalize(anchor))
                });
                if !covered {
                    problems.push(format!(
                        "{file}:{} ({}): normative text without an entry in {STATEMENTS}: \"{}\"",
                        unit.line, unit.section, unit.text
                    ));
                }
            }
        }
    }
    problems
}

fn check_anchor(
    at: &str,
    spec_name: &str,
    section: &str,
    anchor: &str,
    units: Option<&BTreeMap<&'static str, Vec<spec::Unit>>>,
    problems: &mut Vec<String>,
) {
    if !SPECS.iter().any(|(name, ..)| *name == spec_name) {
        problems.push(format!(
            "{at}: spec `{spec_name}` is not one of {}",
            SPECS
                .iter()
                .map(|(name, ..)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return;
    }
    let anchor = spec::normalize(anchor);
    if anchor.len() < 12 {
        problems.push(format!(
            "{at}: the anchor `{anchor}` is too short to find one sentence"
        ));
    }
    let Some(units) = units.and_then(|u| u.get(spec_name)) else {
        return;
    };
    let found: Vec<&spec::Unit> = units.iter().filter(|u| u.text.contains(&anchor)).collect();
    if found.is_empty() {
        problems.push(format!(
            "{at}: the anchor \"{anchor}\" is not in the {spec_name} text any more; re-read the spec and update the entry"
        ));
    } else if !found.iter().any(|u| u.section == section) {
        problems.push(format!(
            "{at}: the anchor is in section `{}`, not `{section}`",
            found[0].section
        ));
    }
}

/// The integration tests, unit tests and corpus cases a `proven_by` entry may name.
#[derive(Debug, Default)]
pub(crate) struct TestInventory {
    /// `crate::it::module::name` and `crate::unit::path::name` of every test function found.
    tests: BTreeSet<String>,
    root: PathBuf,
}

impl TestInventory {
    pub(crate) fn scan(root: &Path) -> Self {
        let mut inventory = TestInventory {
            root: root.to_owned(),
            ..TestInventory::default()
        };
        let crates = root.join("crates");
        let mut members: Vec<(String, PathBuf)> = list_dir(&crates)
            .into_iter()
            .filter(|p| p.is_dir())
            .filter_map(|p| {
                let name = p.file_name()?.to_str()?.to_owned();
                Some((name, p))
            })
            .collect();
        members.push(("xtask".to_owned(), root.join("xtask")));
        for (name, dir) in members {
            for file in rust_files(&dir.join("tests/it")) {
                let module = module_path(&dir.join("tests/it"), &file);
                for test in test_functions(&file) {
                    let path = if module == "main" {
                        format!("{name}::it::{test}")
                    } else {
                        format!("{name}::it::{module}::{test}")
                    };
                    inventory.tests.insert(path);
                }
            }
            for file in rust_files(&dir.join("src")) {
                let module = module_path(&dir.join("src"), &file);
                for (inline, test) in unit_test_functions(&file) {
                    // A `mod tests { ... }` inside the file adds a `tests` segment.
                    let module = match inline {
                        true => format!("{module}::tests"),
                        false => module.clone(),
                    };
                    inventory
                        .tests
                        .insert(format!("{name}::unit::{module}::{test}"));
                }
            }
        }
        inventory
    }

    /// Ok when `reference` names a test function or a case directory that exists.
    pub(crate) fn resolve(&self, reference: &str) -> Result<(), String> {
        if reference.contains("::") {
            if self.tests.contains(reference) {
                return Ok(());
            }
            return Err(format!(
                "`{reference}` names no test function (forms: crate::it::module::test, crate::unit::module::test)"
            ));
        }
        let path = self.root.join(corpus_dir(reference));
        let transcript = reference.starts_with("conformance/transcripts/");
        let exists = if transcript {
            path.with_extension("ndjson").is_file()
        } else {
            path.is_dir()
        };
        if exists {
            Ok(())
        } else {
            Err(format!(
                "`{reference}` is not a case directory (looked at {})",
                path.display()
            ))
        }
    }

    /// The libtest runs that prove `reference` ran: the test itself, or a case's runner.
    pub(crate) fn runs_for(reference: &str) -> Option<(String, String)> {
        if let Some((krate, rest)) = reference.split_once("::it::") {
            return Some((format!("{krate} it"), rest.to_owned()));
        }
        if let Some((krate, rest)) = reference.split_once("::unit::") {
            let rest = rest.strip_prefix("lib::").unwrap_or(rest);
            let rest = rest.strip_prefix("main::").unwrap_or(rest);
            return Some((format!("{krate} unit"), rest.to_owned()));
        }
        let ok = reference.starts_with("c2-manifest/test_data/ok/");
        let err = reference.starts_with("c2-manifest/test_data/err/");
        if ok || err {
            let kind = if ok { "ok" } else { "err" };
            let runner = if ok {
                "corpus::every_ok_case_validates_without_errors_and_matches_its_snapshot"
            } else {
                "corpus::every_err_case_has_an_error_and_matches_its_snapshot"
            };
            let _ = kind;
            return Some(("c2-manifest it".to_owned(), runner.to_owned()));
        }
        for (prefix, runner) in [
            (
                "c2-manifest/test_data/mcp/ok/",
                "mcp::every_ok_mcp_case_is_clean_and_matches_its_snapshot",
            ),
            (
                "c2-manifest/test_data/mcp/err/",
                "mcp::every_err_mcp_case_disables_or_skips_and_matches_its_snapshot",
            ),
            (
                "c2-manifest/test_data/skills/",
                "skill::every_skill_corpus_case_has_the_expected_verdict_and_matches_its_snapshot",
            ),
        ] {
            if reference.starts_with(prefix) {
                return Some(("c2-manifest it".to_owned(), runner.to_owned()));
            }
        }
        // conformance/ cases are run by `cargo xtask conformance` itself.
        None
    }
}

/// The cargo target directory.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// `c2-manifest/test_data/...` lives under crates/; `conformance/...` at the root.
fn corpus_dir(reference: &str) -> PathBuf {
    if reference.starts_with("conformance/") {
        PathBuf::from(reference)
    } else {
        Path::new("crates").join(reference)
    }
}

fn list_dir(dir: &Path) -> Vec<PathBuf> {
    #[expect(
        clippy::disallowed_methods,
        reason = "xtask reads the workspace's own source tree"
    )]
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for path in list_dir(&dir) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `a/b.rs` -> `a::b`, `a/mod.rs` -> `a`, `tests.rs` -> `tests`.
fn module_path(base: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(base).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") && parts.len() > 1 {
        parts.pop();
    }
    parts.join("::")
}

/// Test functions of a source file, each with whether it sits after an inline `mod tests {`.
fn unit_test_functions(file: &Path) -> Vec<(bool, String)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let inline_at = text.find("\nmod tests {");
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if let Some(name) = test_function_after(&text[..start], line) {
            out.push((inline_at.is_some_and(|at| at < start), name));
        }
    }
    out
}

/// The function name on `line` when the nearest attribute lines above it include a test one.
fn test_function_after(before: &str, line: &str) -> Option<String> {
    let t = line.trim();
    let pos = t.find("fn ")?;
    if !(t.starts_with("fn ") || t.starts_with("async fn ") || t.starts_with("pub")) {
        return None;
    }
    let is_test = before
        .lines()
        .rev()
        .map(str::trim)
        .take_while(|l| l.starts_with("#[") || l.starts_with("//") || l.ends_with(")]"))
        .any(|l| l.starts_with("#[test]") || l.starts_with("#[tokio::test"));
    if !is_test {
        return None;
    }
    let name: String = t[pos + 3..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Names of the functions under a `#[test]` or `#[tokio::test...]` attribute.
fn test_functions(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut armed = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("#[test]") || t.starts_with("#[tokio::test") {
            armed = true;
            continue;
        }
        if armed {
            if let Some(pos) = t.find("fn ") {
                let name: String = t[pos + 3..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
                armed = false;
            } else if !t.starts_with("#[") && !t.starts_with("//") && !t.is_empty() {
                armed = false;
            }
        }
    }
    out
}

/// Which tests a `cargo test --workspace` run passed, by test binary (`<crate> it` or
/// `<crate> unit`) and libtest name.
#[derive(Debug, Default)]
pub(crate) struct TestRuns {
    passed: BTreeSet<(String, String)>,
}

impl TestRuns {
    /// Reads cargo's merged output: `Running <target> (<path>)` lines say which binary the
    /// `test <name> ... ok` lines below belong to; `binaries` maps a binary's file name to its
    /// `<crate> it` / `<crate> unit` label.
    pub(crate) fn from_output(lines: &[String], binaries: &BTreeMap<String, String>) -> Self {
        let mut runs = TestRuns::default();
        let mut current: Option<String> = None;
        for line in lines {
            let t = line.trim();
            if t.starts_with("Doc-tests ") {
                current = None;
                continue;
            }
            if let Some(rest) = t.strip_prefix("Running ") {
                current = rest
                    .rsplit_once('(')
                    .map(|(_, path)| path.trim_end_matches(')'))
                    .and_then(|path| Path::new(path).file_name())
                    .and_then(|name| binaries.get(&*name.to_string_lossy()).cloned());
                continue;
            }
            if let (Some(binary), Some(rest)) = (&current, t.strip_prefix("test "))
                && let Some(name) = rest.strip_suffix(" ... ok")
            {
                runs.passed.insert((binary.clone(), name.to_owned()));
            }
        }
        runs
    }

    fn passed(&self, binary: &str, name: &str) -> bool {
        self.passed.contains(&(binary.to_owned(), name.to_owned()))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.passed.is_empty()
    }
}

/// The test binaries of the workspace, file name -> `<crate> it` / `<crate> unit`, from the
/// artifacts `cargo test --no-run` reports (a no-op build right after `cargo test`).
pub(crate) fn test_binaries() -> Result<BTreeMap<String, String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
    let output = std::process::Command::new(cargo)
        .args([
            "test",
            "--workspace",
            "--locked",
            "--no-run",
            "--message-format=json",
        ])
        .current_dir(root())
        .stderr(std::process::Stdio::null())
        .output()
        .context("could not run `cargo test --no-run`")?;
    if !output.status.success() {
        bail!("`cargo test --no-run` failed ({})", output.status);
    }
    let mut binaries = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(executable) = message.get("executable").and_then(|e| e.as_str()) else {
            continue;
        };
        let target = &message["target"];
        let kind = target["kind"][0].as_str().unwrap_or("");
        let package = message["package_id"].as_str().unwrap_or("");
        // `path+file:///.../crates/c2-host#0.1.0` or `c2-host 0.1.0 (path+...)`.
        let package_name = package_name(package);
        let label = match kind {
            "test" if target["name"] == "it" => format!("{package_name} it"),
            "lib" | "bin" => format!("{package_name} unit"),
            _ => continue,
        };
        if let Some(file) = Path::new(executable).file_name() {
            binaries.insert(file.to_string_lossy().into_owned(), label);
        }
    }
    Ok(binaries)
}

fn package_name(id: &str) -> String {
    // `path+file:///.../crates/c2-host#0.1.0`, `...#name@0.1.0`, or `c2-host 0.1.0 (path+...)`.
    match id.split_once('#') {
        Some((_, after)) if after.contains('@') => {
            after.split('@').next().unwrap_or(after).to_owned()
        }
        Some((before, _)) => before.rsplit('/').next().unwrap_or(before).to_owned(),
        None => id.split_whitespace().next().unwrap_or(id).to_owned(),
    }
}

/// Problems of tests that exist but did not pass in `runs`.
pub(crate) fn unrun(list: &Statements, runs: &TestRuns) -> Vec<String> {
    let mut problems = Vec::new();
    let references = list.statements.iter().map(|s| (&s.id, &s.proven_by)).chain(
        list.plugin_obligations
            .iter()
            .map(|o| (&o.id, &o.proven_by)),
    );
    for (id, tests) in references {
        for test in tests {
            if let Some((binary, name)) = TestInventory::runs_for(test)
                && !runs.passed(&binary, &name)
            {
                problems.push(format!(
                    "{STATEMENTS}: `{id}` names `{test}`, which did not pass in this `cargo test` run"
                ));
            }
        }
    }
    problems
}

/// Coverage per spec and section, in spec order.
fn coverage(list: &Statements) -> Vec<(String, String, [usize; 3])> {
    let mut rows: Vec<(String, String, [usize; 3])> = Vec::new();
    for s in &list.statements {
        let title = SPECS
            .iter()
            .find(|(name, ..)| *name == s.spec)
            .map_or(s.spec.as_str(), |(.., title)| *title);
        let slot = match s.verdict() {
            "proven" => 0,
            "unsupported" => 1,
            _ => 2,
        };
        match rows
            .iter_mut()
            .find(|(spec, section, _)| spec == title && *section == s.section)
        {
            Some(row) => row.2[slot] += 1,
            None => {
                let mut counts = [0; 3];
                counts[slot] = 1;
                rows.push((title.to_owned(), s.section.clone(), counts));
            }
        }
    }
    rows
}

fn table(list: &Statements) -> String {
    let mut out = String::from("| spec | section | proven | unsupported | not applicable |\n");
    out.push_str("|---|---|---:|---:|---:|\n");
    let mut total = [0; 3];
    for (spec, section, counts) in coverage(list) {
        let _ = writeln!(
            out,
            "| {spec} | {section} | {} | {} | {} |",
            counts[0], counts[1], counts[2]
        );
        for i in 0..3 {
            total[i] += counts[i];
        }
    }
    let _ = writeln!(
        out,
        "| **all** | | **{}** | **{}** | **{}** |",
        total[0], total[1], total[2]
    );
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// docs/conformance.md, generated.
pub(crate) fn document(list: &Statements) -> String {
    let mut out = String::from(
        "# Conformance\n\n\
         Generated by `cargo xtask conformance` from `conformance/statements.json`; do not edit by\n\
         hand. Every normative statement of the C2 Plugin Standard 1.2.0, the C2 Plugin Protocol\n\
         1.0.0 and the parts of Agent Plugins 1.0.0 that C2 builds on, in the project's words,\n\
         with the test or corpus case that proves it, or why it is unsupported or not applicable.\n\
         A third source, marked as such, is the reference host's amended text of the standard and\n\
         the protocol (IchenDEV/C2 `docs/reference/`): only the statements this host implements\n\
         from it are listed; docs/decisions.md compares it with the held text rule by rule.\n\
         `cargo xtask validate` fails when a normative sentence has no entry, when a named test or\n\
         case does not exist, or when a named test did not pass. conformance/README.md describes\n\
         the formats and how another host runs the corpora.\n\n## Coverage\n\n",
    );
    out.push_str(&table(list));
    for (name, _, _, title) in SPECS {
        let mut wrote_heading = false;
        let mut section = "";
        for s in list.statements.iter().filter(|s| s.spec == *name) {
            if !wrote_heading {
                let _ = write!(out, "\n## {title}\n");
                wrote_heading = true;
            }
            if s.section != section {
                section = &s.section;
                let _ = write!(
                    out,
                    "\n### {section}\n\n| id | kind | statement | evidence |\n|---|---|---|---|\n"
                );
            }
            let evidence = if s.proven_by.is_empty() {
                format!(
                    "**{}**: {}",
                    s.verdict(),
                    s.reason.as_deref().unwrap_or_default()
                )
            } else {
                s.proven_by
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join("<br>")
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                s.id,
                s.kind,
                cell(&s.says),
                cell(&evidence)
            );
        }
    }
    out.push_str(
        "\n## Plugin obligations\n\n\
         What the protocol asks of a plugin process, each with the `c2-plugins check` item that\n\
         verifies it and the tests showing that check fails a plugin that breaks it.\n\n\
         | id | obligation | check | tests |\n|---|---|---|---|\n",
    );
    for o in &list.plugin_obligations {
        let tests = if o.proven_by.is_empty() {
            format!("**untested**: {}", o.reason.as_deref().unwrap_or_default())
        } else {
            o.proven_by
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let check = o
            .check
            .as_deref()
            .map_or("none".to_owned(), |c| format!("`{c}`"));
        let _ = writeln!(
            out,
            "| `{}` | {} | {check} | {} |",
            o.id,
            cell(&o.says),
            tests
        );
    }
    out
}

/// Options of `cargo xtask conformance`.
#[derive(Debug, Default)]
struct Options {
    host: Option<String>,
    check: bool,
    gaps: bool,
    export: bool,
    test_output: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--host" => {
                options.host = Some(
                    args.next()
                        .context("--host needs a command, e.g. --host \"c2-plugins validate --format json\"")?
                        .clone(),
                );
            }
            "--check" => options.check = true,
            "--test-output" => {
                options.test_output = Some(PathBuf::from(args.next().context(
                    "--test-output needs the file holding `cargo test --workspace 2>&1` output",
                )?));
            }
            "--gaps" => options.gaps = true,
            "--export" => options.export = true,
            other => bail!(
                "unknown conformance option `{other}`; options: --host \"<command>\", --check, --export, --gaps, --test-output FILE"
            ),
        }
    }
    Ok(options)
}

/// `cargo xtask conformance [--host "<command>"] [--check] [--export] [--gaps]`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let options = parse(args)?;
    let root = root();
    if let Some(host) = &options.host {
        let outcome = corpus::run_host(&root, host)?;
        say(&outcome.summary());
        if !outcome.failures.is_empty() {
            for failure in &outcome.failures {
                report(&format!("conformance: {failure}"));
            }
            bail!(
                "{} case(s) disagree with their expected.json",
                outcome.failures.len()
            );
        }
        return Ok(());
    }
    if options.export {
        corpus::export(&root)?;
        report("xtask: conformance corpus exported to conformance/cases/");
        return Ok(());
    }
    let list = load(&root)?;
    let units = spec_units(&root)?;
    if options.gaps {
        for problem in problems(&root, &list, units.as_ref()) {
            say(&problem);
        }
        return Ok(());
    }
    let runs = match &options.test_output {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("read {}", file.display()))?;
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            Some(TestRuns::from_output(&lines, &test_binaries()?))
        }
        None => None,
    };
    statements(&root, &list, units.as_ref(), options.check, runs.as_ref())?;
    let played = transcripts::run_all(&root)?;
    report(&format!(
        "xtask: {played} protocol transcript(s) played against the host"
    ));
    Ok(())
}

/// The statement checks, the table and the document; with `runs`, also that every named test
/// passed in that run.
fn statements(
    root: &Path,
    list: &Statements,
    units: Option<&BTreeMap<&'static str, Vec<spec::Unit>>>,
    check_doc: bool,
    runs: Option<&TestRuns>,
) -> Result<()> {
    let mut problems = problems(root, list, units);
    if let Some(runs) = runs {
        problems.extend(unrun(list, runs));
    }
    if units.is_none() {
        report(
            "conformance: the spec texts were not found (set C2_SPEC_DIR to the directory holding plugin-standard.md); anchors and coverage of the texts were not re-checked",
        );
    }
    let doc = document(list);
    let doc_path = root.join(DOC);
    if check_doc {
        let current = std::fs::read_to_string(&doc_path).unwrap_or_default();
        if current != doc {
            problems.push(format!(
                "{DOC} is not what `cargo xtask conformance` generates from {STATEMENTS}; run it and commit the result"
            ));
        }
    } else {
        std::fs::write(&doc_path, &doc).with_context(|| format!("write {}", doc_path.display()))?;
    }
    say(table(list).trim_end());
    if !problems.is_empty() {
        for problem in &problems {
            report(&format!("conformance: {problem}"));
        }
        bail!("{} conformance problem(s)", problems.len());
    }
    Ok(())
}

/// What `validate` runs after the tests: the statement checks against that run, the document
/// up to date, the exported corpus up to date, the corpus through the `c2-plugins` binary (all
/// agree) and through a wrapper that flips one verdict (the runner must catch exactly that
/// case), and the transcripts against the real host.
pub(crate) fn validate(lines: &[String]) -> Result<()> {
    let root = root();
    let list = load(&root)?;
    let units = spec_units(&root)?;
    let binaries = test_binaries()?;
    let runs = TestRuns::from_output(lines, &binaries);
    if runs.is_empty() {
        bail!("no passed test could be attributed to a test binary in the `cargo test` output");
    }
    statements(&root, &list, units.as_ref(), true, Some(&runs))?;
    corpus::check_export(&root)?;
    corpus::prove_runner(&root)?;
    let played = transcripts::run_all(&root)?;
    report(&format!(
        "xtask: conformance passed ({} statements, {} plugin obligations, {played} transcripts)",
        list.statements.len(),
        list.plugin_obligations.len()
    ));
    Ok(())
}
