//! The language-neutral bundle corpus, `conformance/cases/bundles/<case>/{bundle/,expected.json}`,
//! and the runner that checks any host command against it.
//!
//! The `manifest-ok-*` and `manifest-err-*` cases are exported from
//! `crates/c2-manifest/test_data` (each `plugin.json` alone in `bundle/`); the other cases are
//! trees written for the corpus. Every `expected.json` is what the real collector says about the
//! tree, written by `--export` and compared by `validate`, so a change of verdict shows up as a
//! reviewed diff. A manifest case must also keep every diagnostic of its reviewed
//! `diagnostics.snap`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::list_dir;
use crate::report;

const CASES: &str = "conformance/cases/bundles";
const MANIFEST_DATA: &str = "crates/c2-manifest/test_data";
/// The wrong host `validate` runs: flips the verdict of the case named by its first argument.
const FLIP_HOST: &str = "conformance/hosts/flip-one-verdict.py";
/// The case the wrong host flips.
const FLIPPED_CASE: &str = "manifest-ok-minimal";

/// Diagnostic codes that describe the machine running the host, not the bundle (a bare
/// command missing from this `PATH`): not part of a case's verdict, so never compared.
pub(crate) const MACHINE_DEPENDENT: &[&str] = &["command-not-on-path"];

/// The verdict of one tree: validity and the sorted `severity code` of every diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) valid: bool,
    pub(crate) diagnostics: Vec<(String, String)>,
}

impl Verdict {
    fn to_json(&self, source: Option<&str>) -> Value {
        let diagnostics: Vec<Value> = self
            .diagnostics
            .iter()
            .map(|(severity, code)| json!({"code": code, "severity": severity}))
            .collect();
        let mut value = json!({"valid": self.valid, "diagnostics": diagnostics});
        if let Some(source) = source {
            value["source"] = json!(source);
        }
        value
    }

    /// Reads an `expected.json`, or one result of the `validate --format json` shape.
    pub(crate) fn from_json(value: &Value) -> Result<Self, String> {
        let valid = value
            .get("valid")
            .and_then(Value::as_bool)
            .ok_or("no boolean `valid`")?;
        let mut diagnostics = Vec::new();
        for d in value
            .get("diagnostics")
            .and_then(Value::as_array)
            .ok_or("no array `diagnostics`")?
        {
            let code = d
                .get("code")
                .and_then(Value::as_str)
                .ok_or("a diagnostic without a string `code`")?;
            let severity = d
                .get("severity")
                .and_then(Value::as_str)
                .ok_or("a diagnostic without a string `severity`")?;
            if MACHINE_DEPENDENT.contains(&code) {
                continue;
            }
            diagnostics.push((severity.to_owned(), code.to_owned()));
        }
        diagnostics.sort();
        Ok(Verdict { valid, diagnostics })
    }

    fn describe(&self) -> String {
        let codes: Vec<String> = self
            .diagnostics
            .iter()
            .map(|(s, c)| format!("{s} {c}"))
            .collect();
        format!(
            "{} [{}]",
            if self.valid { "valid" } else { "invalid" },
            codes.join(", ")
        )
    }
}

/// What the real collector says about `tree`.
fn judge(tree: &Path) -> Verdict {
    match c2_bundle_collector::collect_dir(tree, &c2_bundle_collector::Limits::default()) {
        Ok(bundle) => {
            let mut diagnostics: Vec<(String, String)> = bundle
                .diagnostics
                .iter()
                .map(|d| (d.severity.as_str().to_owned(), d.code.to_owned()))
                .collect();
            diagnostics.sort();
            Verdict {
                valid: bundle.is_valid(),
                diagnostics,
            }
        }
        // A refusal before any diagnostic (no plugin.json, an escaping link): invalid, no codes.
        Err(_) => Verdict {
            valid: false,
            diagnostics: Vec::new(),
        },
    }
}

/// Every case directory, sorted.
pub(crate) fn cases(root: &Path) -> Vec<PathBuf> {
    list_dir(&root.join(CASES))
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The manifest cases the corpus must hold: (case name, source dir).
fn manifest_sources(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for kind in ["ok", "err"] {
        for dir in list_dir(&root.join(MANIFEST_DATA).join(kind)) {
            if dir.join("plugin.json").is_file() {
                out.push((format!("manifest-{kind}-{}", name(&dir)), dir));
            }
        }
    }
    out
}

/// The `severity code` lines of a reviewed `diagnostics.snap` header.
fn snapshot_codes(snap: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(snap).unwrap_or_default();
    let mut sections = text.split("\n---\n");
    let _front = sections.next();
    let body = sections.next().unwrap_or("");
    let mut out: Vec<(String, String)> = body
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let severity = words.next()?;
            let code = words.next()?;
            matches!(severity, "error" | "warning").then(|| (severity.to_owned(), code.to_owned()))
        })
        .collect();
    out.sort();
    out
}

/// `--export`: copies every manifest case in, removes stale ones, and rewrites every
/// `expected.json` from the collector.
pub(crate) fn export(root: &Path) -> Result<()> {
    let cases_dir = root.join(CASES);
    std::fs::create_dir_all(&cases_dir)?;
    let sources = manifest_sources(root);
    let wanted: BTreeSet<&str> = sources.iter().map(|(n, _)| n.as_str()).collect();
    for dir in cases(root) {
        let case = name(&dir);
        if case.starts_with("manifest-") && !wanted.contains(case.as_str()) {
            std::fs::remove_dir_all(&dir).with_context(|| format!("remove {}", dir.display()))?;
        }
    }
    for (case, source) in &sources {
        let bundle = cases_dir.join(case).join("bundle");
        std::fs::create_dir_all(&bundle)?;
        std::fs::copy(source.join("plugin.json"), bundle.join("plugin.json"))
            .with_context(|| format!("copy {}", source.display()))?;
    }
    for dir in cases(root) {
        let source = source_of(root, &dir);
        let verdict = judge(&dir.join("bundle"));
        let text = serde_json::to_string_pretty(&verdict.to_json(source.as_deref()))? + "\n";
        std::fs::write(dir.join("expected.json"), text)?;
    }
    Ok(())
}

fn source_of(root: &Path, case_dir: &Path) -> Option<String> {
    let case = name(case_dir);
    let rest = case.strip_prefix("manifest-")?;
    let (kind, rest) = rest.split_once('-')?;
    let path = format!("{MANIFEST_DATA}/{kind}/{rest}");
    root.join(&path).is_dir().then_some(path)
}

/// The committed corpus equals a fresh export, and each manifest case keeps its snapshot's
/// diagnostics.
pub(crate) fn check_export(root: &Path) -> Result<()> {
    let mut problems = Vec::new();
    let present: BTreeSet<String> = cases(root).iter().map(|d| name(d)).collect();
    for (case, source) in manifest_sources(root) {
        if !present.contains(&case) {
            problems.push(format!(
                "{CASES}/{case} is missing (exported from {})",
                source.display()
            ));
            continue;
        }
        let ours = std::fs::read(root.join(CASES).join(&case).join("bundle/plugin.json")).ok();
        let theirs = std::fs::read(source.join("plugin.json")).ok();
        if ours != theirs {
            problems.push(format!(
                "{CASES}/{case}/bundle/plugin.json differs from {}",
                source.display()
            ));
        }
        let verdict = judge(&root.join(CASES).join(&case).join("bundle"));
        for code in snapshot_codes(&source.join("diagnostics.snap")) {
            if !verdict.diagnostics.contains(&code) {
                problems.push(format!(
                    "{CASES}/{case}: the collector no longer reports `{} {}` of its reviewed diagnostics.snap",
                    code.0, code.1
                ));
            }
        }
    }
    for dir in cases(root) {
        let case = name(&dir);
        if case.starts_with("manifest-") && source_of(root, &dir).is_none() {
            problems.push(format!("{CASES}/{case} has no source case any more"));
            continue;
        }
        let expected = read_expected(&dir);
        let fresh = judge(&dir.join("bundle"));
        match expected {
            Ok(expected) if expected == fresh => {}
            Ok(expected) => problems.push(format!(
                "{CASES}/{case}/expected.json says {} but the collector says {}",
                expected.describe(),
                fresh.describe()
            )),
            Err(why) => problems.push(format!("{CASES}/{case}/expected.json: {why}")),
        }
    }
    if !problems.is_empty() {
        for problem in &problems {
            report(&format!("conformance: {problem}"));
        }
        bail!(
            "{} corpus problem(s); `cargo xtask conformance --export` rewrites the corpus from the collector, then review the diff",
            problems.len()
        );
    }
    Ok(())
}

fn read_expected(dir: &Path) -> Result<Verdict, String> {
    let path = dir.join("expected.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    Verdict::from_json(&value)
}

/// What a host said about the corpus.
#[derive(Debug, Default)]
pub(crate) struct HostOutcome {
    pub(crate) cases: usize,
    /// `<case>: <what differs>` per disagreeing case.
    pub(crate) failures: Vec<String>,
}

impl HostOutcome {
    pub(crate) fn summary(&self) -> String {
        format!(
            "conformance corpus: {} case(s), {} agree, {} disagree",
            self.cases,
            self.cases - self.failures.len(),
            self.failures.len()
        )
    }

    /// The names of the disagreeing cases.
    pub(crate) fn failed_cases(&self) -> Vec<&str> {
        self.failures
            .iter()
            .filter_map(|f| f.split_once(':').map(|(case, _)| case))
            .collect()
    }
}

/// Bounds of one host invocation.
const HOST_DEADLINE: Duration = Duration::from_secs(60);

/// Runs `sh -c '<host> "$1"' <bundle dir>` for every case and compares the first result of its
/// stdout JSON (`{"results":[{"valid","diagnostics":[{"code","severity"}]}]}`) with the
/// case's `expected.json`. The exit status is not judged: invalid bundles exit non-zero.
pub(crate) fn run_host(root: &Path, host: &str) -> Result<HostOutcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start an async runtime for the corpus")?;
    let mut outcome = HostOutcome::default();
    for dir in cases(root) {
        let case = name(&dir);
        outcome.cases += 1;
        let expected = match read_expected(&dir) {
            Ok(expected) => expected,
            Err(why) => {
                outcome
                    .failures
                    .push(format!("{case}: expected.json: {why}"));
                continue;
            }
        };
        let bundle = dir.join("bundle");
        let mut spec = c2_supervisor::ProcessSpec::new("sh", root);
        spec.args = vec![
            "-c".into(),
            format!("{host} \"$1\"").into(),
            "sh".into(),
            bundle.into_os_string(),
        ];
        let options = c2_supervisor::RunOptions {
            deadline: HOST_DEADLINE,
            ..c2_supervisor::RunOptions::default()
        };
        let output = match runtime.block_on(c2_supervisor::run(&spec, &options)) {
            Ok(output) => output,
            Err(error) => {
                outcome
                    .failures
                    .push(format!("{case}: the host did not run: {error}"));
                continue;
            }
        };
        let said = serde_json::from_slice::<Value>(&output.stdout)
            .map_err(|e| format!("stdout is not one JSON document ({e})"))
            .and_then(|v| {
                v.get("results")
                    .and_then(|r| r.get(0))
                    .cloned()
                    .ok_or_else(|| "stdout has no `results[0]`".to_owned())
            })
            .and_then(|r| Verdict::from_json(&r));
        match said {
            Ok(said) if said == expected => {}
            Ok(said) => outcome.failures.push(format!(
                "{case}: expected {} but the host said {}",
                expected.describe(),
                said.describe()
            )),
            Err(why) => outcome.failures.push(format!(
                "{case}: {why}; stderr: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )),
        }
    }
    if outcome.cases == 0 {
        bail!("no case under {CASES}");
    }
    Ok(outcome)
}

/// The runner contract proven with two hosts: the `c2-plugins` binary agrees on every case, and
/// a wrapper around it that flips one case's verdict is caught on exactly that case.
pub(crate) fn prove_runner(root: &Path) -> Result<()> {
    let binary = super::target_dir().join("debug/c2-plugins");
    if !binary.is_file() {
        bail!(
            "no c2-plugins binary at {} (cargo test builds it)",
            binary.display()
        );
    }
    let real = format!("'{}' validate --format json", binary.display());
    let good = run_host(root, &real)?;
    report(&format!("conformance: c2-plugins: {}", good.summary()));
    if !good.failures.is_empty() {
        for failure in &good.failures {
            report(&format!("conformance: c2-plugins: {failure}"));
        }
        bail!("the c2-plugins binary disagrees with the corpus");
    }
    let wrong = format!(
        "python3 '{}' {FLIPPED_CASE} {real}",
        root.join(FLIP_HOST).display()
    );
    let caught = run_host(root, &wrong)?;
    report(&format!(
        "conformance: the flipping host: {}",
        caught.summary()
    ));
    if caught.failed_cases() != [FLIPPED_CASE] {
        bail!(
            "the runner should catch exactly `{FLIPPED_CASE}` from the flipping host, it caught {:?}",
            caught.failed_cases()
        );
    }
    Ok(())
}
