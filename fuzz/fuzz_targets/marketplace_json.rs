//! Feeds arbitrary bytes (lossily decoded) to the `marketplace.json` validator: it may not panic,
//! a report is valid exactly when it carries a marketplace, and every diagnostic is documented and
//! points inside the text.
#![no_main]

use c2_manifest::validate_marketplace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let report = validate_marketplace(&text);
    assert_eq!(report.is_valid(), report.marketplace.is_some());
    assert_eq!(report.is_valid(), !c2_fuzz::has_errors(&report.diagnostics));
    c2_fuzz::check_diagnostics("marketplace.json", &text, &report.diagnostics);
});
