//! Feeds arbitrary bytes (lossily decoded) to the `mcp.json` validator: it may not panic, MCP is
//! enabled exactly when no diagnostic is an error, a disabled document yields no server, a server
//! is either kept or skipped, and every diagnostic is documented and points inside the text.
#![no_main]

use c2_manifest::validate_mcp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let report = validate_mcp(&text);
    assert_eq!(report.enabled, !c2_fuzz::has_errors(&report.diagnostics));
    if !report.enabled {
        assert!(report.servers.is_empty());
    }
    for server in &report.servers {
        assert!(
            !report.skipped.iter().any(|s| s.name == server.name),
            "server {:?} both kept and skipped",
            server.name
        );
        assert!(report.declared.contains(&server.name));
    }
    c2_fuzz::check_diagnostics("mcp.json", &text, &report.diagnostics);
});
