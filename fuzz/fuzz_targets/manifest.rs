//! Feeds arbitrary bytes (lossily decoded) to the plugin.json validator and the renderer:
//! neither may panic, and a report is valid exactly when it carries a manifest.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let report = c2_manifest::validate_manifest(&text, &c2_manifest::ManifestOptions::default());
    assert_eq!(report.is_valid(), report.manifest.is_some());
    let _ = c2_manifest::render_diagnostics("plugin.json", &text, &report.diagnostics, false);
});
