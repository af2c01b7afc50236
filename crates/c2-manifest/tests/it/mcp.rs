//! `validate_mcp`: document problems disable MCP, entry problems skip one server.

use c2_manifest::{McpTransport, Severity, validate_mcp};

#[test]
fn stdio_http_and_sse_servers_are_accepted() {
    let report = validate_mcp(
        r#"{"mcpServers": {
            "local": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}},
            "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "y"}},
            "old": {"type": "sse", "url": "http://localhost:9/sse"}
        }}"#,
    );
    assert!(
        report.enabled && report.is_valid(),
        "{:#?}",
        report.diagnostics
    );
    let names: Vec<_> = report.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["local", "web", "old"]);
    assert!(
        matches!(&report.servers[0].transport, McpTransport::Stdio { command, .. } if command == "npx")
    );
    assert!(matches!(
        &report.servers[2].transport,
        McpTransport::Sse { .. }
    ));
}

#[test]
fn a_bad_entry_skips_only_that_server_with_a_warning() {
    let report = validate_mcp(
        r#"{"mcpServers": {"ok": {"command": "a"}, "bad": {"args": []}, "worse": {"type": "ws", "url": "x"}}}"#,
    );
    assert!(report.enabled);
    assert_eq!(report.servers.len(), 1);
    assert_eq!(report.skipped, vec!["bad".to_owned(), "worse".to_owned()]);
    let found: Vec<_> = report
        .diagnostics
        .iter()
        .map(|d| (d.code, d.severity, d.pointer.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("missing-field", Severity::Warning, "/mcpServers/bad"),
            (
                "mcp-transport-unknown",
                Severity::Warning,
                "/mcpServers/worse/type"
            ),
        ]
    );
    assert!(report.diagnostics[0].message.contains("skipped"));
}

#[test]
fn a_bad_document_disables_mcp() {
    for source in [
        "{",
        "[]",
        "{}",
        r#"{"mcpServers": []}"#,
        r#"{"mcpServers": {"a": {"command": "x"}}, "mcpServers": {}}"#,
    ] {
        let report = validate_mcp(source);
        assert!(!report.enabled, "{source}");
        assert!(report.servers.is_empty(), "{source}");
    }
}

#[test]
fn unknown_keys_are_reported_and_ignored() {
    let report =
        validate_mcp(r#"{"mcpServers": {"a": {"command": "x", "cwd": "."}}, "version": 1}"#);
    assert!(report.enabled);
    assert_eq!(report.servers.len(), 1);
    assert!(
        report
            .diagnostics
            .iter()
            .all(|d| d.code == "unknown-key" && d.severity == Severity::Warning)
    );
    assert_eq!(report.diagnostics.len(), 2);
}

#[test]
fn remote_servers_need_an_http_url() {
    let report = validate_mcp(r#"{"mcpServers": {"a": {"type": "http", "url": "ftp://x"}}}"#);
    assert_eq!(report.skipped, vec!["a".to_owned()]);
    assert_eq!(report.diagnostics[0].code, "mcp-url-invalid");
}
