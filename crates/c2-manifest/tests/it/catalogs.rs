//! The catalog-format corpus: `test_data/catalogs/<format>/<case>/marketplace.json`, written
//! from the public documentation of Claude Code's and Codex's catalog formats. Each case's
//! reading (usable or not, the entries kept in our terms, the entries skipped and every
//! diagnostic) is snapshotted beside it as `catalog.snap`. Case names start with `valid-`
//! (no error at all), `invalid-` (no usable catalog) or `mixed-` (usable, some entries
//! skipped). Review changes with `INSTA_UPDATE=always cargo test -p c2-manifest`.

use std::fmt::Write as _;
use std::path::Path;

use c2_manifest::{
    Availability, CODES, CatalogFormat, Severity, render_diagnostics, validate_catalog,
};

fn body(source: &str, format: CatalogFormat) -> String {
    let report = validate_catalog(source, format);
    let mut out = format!("usable: {}\n", report.catalog.is_some());
    if let Some(catalog) = &report.catalog {
        writeln!(
            out,
            "catalog: {} {:?} {:?}",
            catalog.format.as_str(),
            catalog.name,
            catalog.description
        )
        .unwrap();
        for e in &catalog.entries {
            let availability = match &e.availability {
                Availability::Available => "available".to_owned(),
                Availability::NotAvailable { reason } => format!("not available: {reason}"),
                other => format!("{other:?}"),
            };
            writeln!(
                out,
                "entry {} {:?} {:?} keywords={:?} category={:?} default_enabled={}\n  {}",
                e.name,
                e.version,
                e.source,
                e.keywords,
                e.category,
                e.default_enabled,
                availability
            )
            .unwrap();
        }
    }
    for s in &report.skipped {
        writeln!(
            out,
            "skipped {} {:?} at {:?}: {}",
            s.index, s.name, s.pointer, s.reason
        )
        .unwrap();
    }
    for d in &report.diagnostics {
        writeln!(
            out,
            "{} {} at {:?} {}:{}",
            d.severity.as_str(),
            d.code,
            d.pointer,
            d.line,
            d.column
        )
        .unwrap();
    }
    out.push_str("---\n");
    out.push_str(&render_diagnostics(
        "marketplace.json",
        source,
        &report.diagnostics,
        false,
    ));
    out
}

fn check_format(dir: &str, format: CatalogFormat) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data/catalogs")
        .join(dir);
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    let known: Vec<&str> = CODES.iter().map(|(code, _)| *code).collect();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(case.join("marketplace.json")).unwrap();
        let report = validate_catalog(&source, format);
        let errors = report
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        if name.starts_with("valid-") {
            assert_eq!(errors, 0, "{dir}/{name}: {:#?}", report.diagnostics);
            assert!(
                report.catalog.is_some() && report.skipped.is_empty(),
                "{dir}/{name}"
            );
        } else if name.starts_with("invalid-") {
            assert!(errors > 0 && report.catalog.is_none(), "{dir}/{name}");
        } else {
            assert!(
                name.starts_with("mixed-"),
                "{dir}/{name}: unknown case prefix"
            );
            let catalog = report.catalog.as_ref().expect("a mixed case is usable");
            assert!(!report.skipped.is_empty(), "{dir}/{name} skips nothing");
            assert!(!catalog.entries.is_empty(), "{dir}/{name} keeps nothing");
        }
        // Every skipped entry's errors point into that entry.
        for s in &report.skipped {
            assert!(
                report
                    .diagnostics
                    .iter()
                    .any(|d| d.severity == Severity::Error && d.pointer.starts_with(&s.pointer)),
                "{dir}/{name}: {s:?}"
            );
        }
        for d in &report.diagnostics {
            assert!(
                known.contains(&d.code),
                "{dir}/{name} emits `{}`, missing from CODES",
                d.code
            );
        }
        insta::with_settings!({
            snapshot_path => case.clone(),
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => format!("{dir}/{name}"),
        }, {
            insta::assert_snapshot!("catalog", body(&source, format));
        });
    }
    cases.len()
}

#[test]
fn every_claude_catalog_case_reads_as_its_snapshot_says() {
    assert!(check_format("claude", CatalogFormat::Claude) >= 6);
}

#[test]
fn every_codex_catalog_case_reads_as_its_snapshot_says() {
    assert!(check_format("codex", CatalogFormat::Codex) >= 5);
}

#[test]
fn our_own_format_stays_all_or_nothing_through_validate_catalog() {
    let good = r#"{"standardVersion": "1.0.0", "name": "ours", "plugins": [
        {"name": "a", "version": "1.0.0", "source": {"kind": "local", "path": "a"}}]}"#;
    let report = validate_catalog(good, CatalogFormat::C2);
    let catalog = report.catalog.unwrap();
    assert_eq!(catalog.entries[0].version.as_deref(), Some("1.0.0"));
    assert_eq!(catalog.entries[0].availability, Availability::Available);
    let bad = good.replace(r#""path": "a""#, r#""path": "../a""#);
    let report = validate_catalog(&bad, CatalogFormat::C2);
    assert!(report.catalog.is_none() && report.skipped.is_empty());
}

#[test]
fn the_format_is_named_by_the_path_else_sniffed_from_the_content() {
    assert_eq!(
        CatalogFormat::from_path("/r/.claude-plugin/marketplace.json"),
        Some((CatalogFormat::Claude, 1))
    );
    assert_eq!(
        CatalogFormat::from_path("/r/.agents/plugins/marketplace.json"),
        Some((CatalogFormat::Codex, 2))
    );
    assert_eq!(CatalogFormat::from_path("/r/marketplace.json"), None);
    for (text, format) in [
        (
            r#"{"standardVersion": "1.0.0", "plugins": []}"#,
            CatalogFormat::C2,
        ),
        (
            r#"{"name": "x", "owner": {"name": "o"}, "plugins": []}"#,
            CatalogFormat::Claude,
        ),
        (
            r#"{"name": "x", "interface": {}, "plugins": []}"#,
            CatalogFormat::Codex,
        ),
        (
            r#"{"name": "x", "plugins": [{"name": "a", "policy": {}}]}"#,
            CatalogFormat::Codex,
        ),
        ("not json", CatalogFormat::C2),
    ] {
        assert_eq!(CatalogFormat::sniff(text), format, "{text}");
    }
}
