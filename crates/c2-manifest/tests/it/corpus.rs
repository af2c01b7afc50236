//! The conformance corpus: `test_data/{ok,err}/<case>/plugin.json`, each with its rendered
//! diagnostics snapshotted beside it as `diagnostics.snap` (insta). Review changes with
//! `INSTA_UPDATE=always cargo test -p c2-manifest` and read the changed `.snap` files.

use std::path::{Path, PathBuf};

use c2_manifest::{CODES, ManifestOptions, Severity, render_diagnostics, validate_manifest};

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    pub(crate) source: String,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data")
}

/// Every case under `test_data/<kind>`, sorted by name.
pub(crate) fn cases(kind: &str) -> Vec<Case> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the corpus runner lists its own test data, not a bundle"
    )]
    let entries = std::fs::read_dir(data_dir().join(kind)).unwrap();
    let mut cases: Vec<Case> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|dir| Case {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            source: std::fs::read_to_string(dir.join("plugin.json")).unwrap(),
            dir,
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

fn snapshot_body(source: &str) -> String {
    let report = validate_manifest(source, &ManifestOptions::default());
    let mut body = format!("valid: {}\n", report.is_valid());
    for d in &report.diagnostics {
        body.push_str(&format!(
            "{} {} at {:?} {}:{}\n",
            d.severity.as_str(),
            d.code,
            d.pointer,
            d.line,
            d.column
        ));
    }
    body.push_str("---\n");
    body.push_str(&render_diagnostics(
        "plugin.json",
        source,
        &report.diagnostics,
        false,
    ));
    body
}

fn check_kind(kind: &str) -> usize {
    let cases = cases(kind);
    let known: Vec<&str> = CODES.iter().map(|(code, _)| *code).collect();
    for case in &cases {
        let report = validate_manifest(&case.source, &ManifestOptions::default());
        let errors = report
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        match kind {
            "ok" => assert_eq!(
                errors, 0,
                "ok case `{}` has errors: {:#?}",
                case.name, report.diagnostics
            ),
            _ => assert!(errors > 0, "err case `{}` has no error", case.name),
        }
        assert_eq!(
            report.manifest.is_some(),
            report.is_valid(),
            "case `{}`",
            case.name
        );
        for d in &report.diagnostics {
            assert!(
                known.contains(&d.code),
                "case `{}` emits `{}`, which is missing from CODES",
                case.name,
                d.code
            );
            assert!(
                d.line >= 1 && d.column >= 1,
                "case `{}`: positions are 1-based",
                case.name
            );
        }
        insta::with_settings!({
            snapshot_path => case.dir.clone(),
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => format!("{kind}/{}", case.name),
        }, {
            insta::assert_snapshot!("diagnostics", snapshot_body(&case.source));
        });
    }
    cases.len()
}

#[test]
fn every_ok_case_validates_without_errors_and_matches_its_snapshot() {
    assert!(check_kind("ok") >= 30);
}

#[test]
fn every_err_case_has_an_error_and_matches_its_snapshot() {
    assert!(check_kind("err") >= 80);
}

#[test]
fn every_code_in_the_table_is_unique_and_kebab_case() {
    let mut seen = std::collections::HashSet::new();
    for (code, _) in CODES {
        assert!(seen.insert(code), "`{code}` is listed twice");
        assert!(
            code.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "`{code}` is not kebab-case"
        );
    }
}
