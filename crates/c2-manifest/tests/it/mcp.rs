//! `validate_mcp`: the mcp.json corpus (`test_data/mcp/{ok,err}/<case>/mcp.json`, each with its
//! outcome snapshotted beside it) and the failure boundaries of Agent Plugins §7.2.2.

use std::path::{Path, PathBuf};

use c2_manifest::{
    CODES, McpReport, McpTransport, Severity, render_diagnostics, validate_mcp, validate_mcp_for,
};

fn cases(kind: &str) -> Vec<(String, PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data/mcp")
        .join(kind);
    #[expect(
        clippy::disallowed_methods,
        reason = "the corpus runner lists its own test data, not a bundle"
    )]
    let entries = std::fs::read_dir(dir).unwrap();
    let mut out: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let source = std::fs::read_to_string(p.join("mcp.json")).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p,
                source,
            )
        })
        .collect();
    out.sort();
    out
}

fn body(source: &str, report: &McpReport) -> String {
    let mut s = format!("enabled: {}\n", report.enabled);
    if let Some(why) = &report.disabled_reason {
        s.push_str(&format!("disabled: {why}\n"));
    }
    for server in &report.servers {
        s.push_str(&format!(
            "supported {} {}\n",
            server.name,
            serde_json::to_string(&server.transport).unwrap()
        ));
    }
    for skipped in &report.skipped {
        s.push_str(&format!(
            "skipped {} ({}): {}\n",
            skipped.name,
            skipped.transport.as_deref().unwrap_or("-"),
            skipped.reason
        ));
    }
    for d in &report.diagnostics {
        s.push_str(&format!(
            "{} {} at {:?} {}:{}\n",
            d.severity.as_str(),
            d.code,
            d.pointer,
            d.line,
            d.column
        ));
    }
    s.push_str("---\n");
    s.push_str(&render_diagnostics(
        "mcp.json",
        source,
        &report.diagnostics,
        false,
    ));
    s
}

fn check_kind(kind: &str) -> usize {
    let known: Vec<&str> = CODES.iter().map(|(c, _)| *c).collect();
    let cases = cases(kind);
    for (name, dir, source) in &cases {
        let report = validate_mcp(source);
        let clean = report.enabled && report.skipped.is_empty();
        if kind == "ok" {
            assert!(
                clean && report.diagnostics.is_empty(),
                "{name}: {:#?}",
                report.diagnostics
            );
        } else {
            assert!(!clean, "err case `{name}` neither disables MCP nor skips");
            assert!(!report.diagnostics.is_empty(), "{name}");
        }
        // The boundaries: errors only when MCP is disabled, entry problems only warn.
        let errors = report
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error);
        assert_eq!(errors, !report.enabled, "{name}");
        for d in &report.diagnostics {
            assert!(known.contains(&d.code), "{name}: `{}` not in CODES", d.code);
            assert!(d.line >= 1 && d.column >= 1, "{name}");
            assert!(
                d.help.is_some()
                    || d.code == "wrong-type"
                    || d.code == "invalid-json"
                    || d.code == "missing-field",
                "{name}: {} has no help",
                d.code
            );
        }
        insta::with_settings!({
            snapshot_path => dir.clone(),
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => format!("mcp/{kind}/{name}"),
        }, {
            insta::assert_snapshot!("outcome", body(source, &report));
        });
    }
    cases.len()
}

#[test]
fn every_ok_mcp_case_is_clean_and_matches_its_snapshot() {
    assert!(check_kind("ok") >= 16);
}

#[test]
fn every_err_mcp_case_disables_or_skips_and_matches_its_snapshot() {
    assert!(check_kind("err") >= 55);
}

#[test]
fn the_three_variants_are_typed() {
    let report = validate_mcp(
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
            "local": {"type": "stdio", "command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}, "cwd": "${PLUGIN_DATA}"},
            "web": {"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X": "y"}},
            "old": {"type": "sse", "url": "http://localhost:9/sse"}
        }}"#,
    );
    assert!(
        report.enabled && report.is_valid(),
        "{:#?}",
        report.diagnostics
    );
    let kinds: Vec<_> = report
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.transport.kind()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("local", "stdio"),
            ("web", "streamable-http"),
            ("old", "sse")
        ]
    );
    assert!(matches!(
        &report.servers[0].transport,
        McpTransport::Stdio { command, cwd: Some(cwd), .. } if command == "npx" && cwd == "${PLUGIN_DATA}"
    ));
    let json = serde_json::to_value(&report.servers[1].transport).unwrap();
    assert_eq!(json["type"], "streamable-http");
}

#[test]
fn a_bad_entry_skips_only_that_server_and_says_why() {
    let report = validate_mcp(
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
            "ok": {"type": "stdio", "command": "a"},
            "bad": {"type": "stdio", "command": "a", "env": {"PLUGIN_DATA": "x"}},
            "native": {"type": "http", "url": "https://x.example/mcp"}}}"#,
    );
    assert!(report.enabled);
    assert_eq!(report.servers.len(), 1);
    let skipped: Vec<_> = report
        .skipped
        .iter()
        .map(|s| (s.name.as_str(), s.transport.as_deref()))
        .collect();
    assert_eq!(
        skipped,
        vec![("bad", Some("stdio")), ("native", Some("http"))]
    );
    assert!(report.skipped[0].reason.contains("PLUGIN_DATA"));
    assert!(
        report
            .diagnostics
            .iter()
            .all(|d| d.severity == Severity::Warning && d.message.contains("skipped"))
    );
}

#[test]
fn the_mcp_version_must_match_the_plugin_version() {
    let source = r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {}}"#;
    assert!(validate_mcp(source).enabled);
    let report = validate_mcp_for(
        source,
        "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json",
    );
    assert!(!report.enabled);
    assert_eq!(report.diagnostics[0].code, "mcp-schema-version-mismatch");
    assert!(
        report
            .disabled_reason
            .as_deref()
            .is_some_and(|r| r.contains("1.0.0") && r.contains("1.1.0"))
    );
}

#[test]
fn the_mcp_examples_in_the_readme_and_the_author_guide_validate() {
    for doc in ["README.md", "docs/plugin-authors.md"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(doc);
        let text = std::fs::read_to_string(&path).unwrap();
        let after = text
            .split_once("<!-- mcp-example -->")
            .unwrap_or_else(|| panic!("{doc} has no mcp-example marker"))
            .1;
        let block = after
            .split_once("```json\n")
            .and_then(|(_, rest)| rest.split_once("```"))
            .unwrap_or_else(|| panic!("{doc}: no json block after the marker"))
            .0;
        let report = validate_mcp(block);
        assert!(
            report.enabled && report.skipped.is_empty() && report.diagnostics.is_empty(),
            "{doc}: {:#?}",
            report.diagnostics
        );
        let kinds: Vec<_> = report.servers.iter().map(|s| s.transport.kind()).collect();
        assert!(
            kinds.contains(&"stdio") && kinds.contains(&"streamable-http"),
            "{doc}"
        );
    }
}
