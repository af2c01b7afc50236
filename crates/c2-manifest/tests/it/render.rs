//! `render_diagnostics`: the human format, snapshotted.

use c2_manifest::{ManifestOptions, render_diagnostics, validate_manifest, validate_skill};

const SOURCE: &str = "{\n  \"name\": \"Demo\",\n  \"version\": \"1.0\",\n\t\"runtime\": {}\n}\n";

#[test]
fn errors_and_warnings_render_with_source_line_caret_and_help() {
    let report = validate_manifest(SOURCE, &ManifestOptions::default());
    insta::assert_snapshot!(render_diagnostics(
        "packs/demo/plugin.json",
        SOURCE,
        &report.diagnostics,
        false
    ));
}

#[test]
fn colour_codes_appear_only_when_asked_for() {
    let report = validate_manifest(SOURCE, &ManifestOptions::default());
    let plain = render_diagnostics("plugin.json", SOURCE, &report.diagnostics, false);
    let coloured = render_diagnostics("plugin.json", SOURCE, &report.diagnostics, true);
    assert!(!plain.contains('\x1b'));
    assert!(coloured.contains("\x1b[1;31merror"));
    assert!(coloured.contains("\x1b[1;33mwarning"));
}

#[test]
fn an_error_at_the_end_of_input_puts_the_caret_after_the_last_character() {
    let report = validate_manifest("{\n  \"name\": ", &ManifestOptions::default());
    insta::assert_snapshot!(render_diagnostics(
        "plugin.json",
        "{\n  \"name\": ",
        &report.diagnostics,
        false
    ));
}

#[test]
fn skill_diagnostics_render_against_the_markdown_source() {
    let source = "---\nname: other\ndescription: x\n---\n";
    let report = validate_skill(source, "review");
    insta::assert_snapshot!(render_diagnostics(
        "skills/review/SKILL.md",
        source,
        &report.diagnostics,
        false
    ));
}

#[test]
fn a_diagnostic_past_the_last_line_renders_without_a_source_excerpt() {
    let diagnostic = c2_manifest::Diagnostic {
        code: "invalid-json",
        severity: c2_manifest::Severity::Error,
        pointer: String::new(),
        line: 9,
        column: 1,
        message: "unexpected end of input".to_owned(),
        help: None,
    };
    let rendered = render_diagnostics("plugin.json", "{\n", &[diagnostic], false);
    assert_eq!(
        rendered,
        "error[invalid-json]: unexpected end of input\n --> plugin.json:9:1\n"
    );
}
