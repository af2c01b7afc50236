//! Feeds arbitrary bytes (lossily decoded) to the plugin.json validator twice: with the default
//! options and with every limit tightened so the limit checks run on small inputs. Neither may
//! panic; a report is valid exactly when it carries a manifest; every diagnostic is documented and
//! points inside the text; and tightening limits can only take validity away, never grant it.
#![no_main]

use c2_manifest::{ManifestOptions, validate_manifest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let default = validate_manifest(&text, &ManifestOptions::default());
    assert_eq!(default.is_valid(), default.manifest.is_some());
    assert_eq!(
        default.is_valid(),
        !c2_fuzz::has_errors(&default.diagnostics)
    );
    c2_fuzz::check_diagnostics("plugin.json", &text, &default.diagnostics);

    let tight = validate_manifest(&text, &tight_options());
    assert_eq!(tight.is_valid(), tight.manifest.is_some());
    c2_fuzz::check_diagnostics("plugin.json", &text, &tight.diagnostics);
    if tight.is_valid() {
        assert!(
            default.is_valid(),
            "valid under tight limits but not under the defaults: {:?}",
            default.diagnostics
        );
    }
});

fn tight_options() -> ManifestOptions {
    ManifestOptions {
        max_depth: 8,
        max_name_chars: 8,
        max_commands: 2,
        max_command_id_chars: 16,
        max_title_chars: 8,
        max_description_chars: 16,
        max_local_id_chars: 8,
        min_ui_order: -2,
        max_ui_order: 2,
        max_ui_input_bytes: 32,
        max_languages: 2,
        ..ManifestOptions::default()
    }
}
