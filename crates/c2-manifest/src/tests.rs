//! Unit tests of the renderer, the diagnostic conversions and the frontmatter reader.

use std::borrow::Cow;

use crate::{
    BundleDiagnostic, Diagnostic, ManifestOptions, RenderOptions, Severity, TerminalLines,
    render_bundle_diagnostics, render_diagnostic, render_diagnostics, terminal_text,
    validate_manifest,
};

fn bundle_diagnostic(line: Option<u32>, column: Option<u32>) -> BundleDiagnostic {
    BundleDiagnostic {
        code: "some-code",
        severity: Severity::Error,
        file: Some("plugin.json".to_owned()),
        pointer: Some("/name".to_owned()),
        line,
        column,
        message: "name is wrong".to_owned(),
        help: Some("fix the name".to_owned()),
    }
}

#[test]
fn a_located_diagnostic_shows_its_line_with_a_caret_under_the_column() {
    let source = "{\n  \"name\": 5\n}\n";
    let text = render_diagnostic(
        &bundle_diagnostic(Some(2), Some(11)),
        Some(source),
        &RenderOptions::new(),
    );
    let expected = [
        "error[some-code]: name is wrong",
        " --> plugin.json:2:11",
        "  |",
        "2 |   \"name\": 5",
        "  |           ^",
        "  = at: /name",
        "  = help: fix the name",
        "",
    ];
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn a_diagnostic_without_a_position_shows_only_its_file_even_with_a_source() {
    let text = render_diagnostic(
        &bundle_diagnostic(None, None),
        Some("{}\n"),
        &RenderOptions::new(),
    );
    assert_eq!(
        text,
        "error[some-code]: name is wrong\n --> plugin.json\n  = at: /name\n  = help: fix the name\n"
    );
}

#[test]
fn a_line_without_a_column_puts_the_caret_at_the_start() {
    let mut d = bundle_diagnostic(Some(1), None);
    d.pointer = None;
    d.help = None;
    d.severity = Severity::Warning;
    let text = render_diagnostic(&d, Some("name: x\n"), &RenderOptions::new());
    assert_eq!(
        text,
        "warning[some-code]: name is wrong\n --> plugin.json:1\n  |\n1 | name: x\n  | ^\n"
    );
}

#[test]
fn a_bundle_wide_diagnostic_has_no_location_line() {
    let d = BundleDiagnostic::error("limit-files", None, "too many files".to_owned())
        .with_help("ship fewer files");
    assert!(d.is_error());
    assert_eq!(
        render_diagnostic(&d, None, &RenderOptions::new()),
        "error[limit-files]: too many files\n  = help: ship fewer files\n"
    );
}

#[test]
fn colours_appear_only_when_asked_for() {
    let d = bundle_diagnostic(Some(1), Some(1));
    let plain = render_diagnostic(&d, Some("{"), &RenderOptions::new());
    let coloured = render_diagnostic(&d, Some("{"), &RenderOptions::new().with_color(true));
    assert!(!plain.contains('\x1b'));
    assert!(coloured.contains("\x1b[1;31merror[some-code]"));
    assert!(coloured.contains("\x1b[1;34m-->"));
}

#[test]
fn text_from_a_hostile_bundle_cannot_reach_the_terminal_raw() {
    let mut d = bundle_diagnostic(Some(1), Some(3));
    d.message = "bad\u{1b}]0;pwned\u{7}\nerror: forged".to_owned();
    d.file = Some("a\u{1b}[2J.json".to_owned());
    let text = render_diagnostic(&d, Some("x\u{1b}[31my\n"), &RenderOptions::new());
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("bad\\u{1b}]0;pwned\\u{7}\n  error: forged"));
    assert!(text.contains(" --> a\\u{1b}[2J.json:1:3"));
    assert!(text.contains("1 | x\\u{1b}[31my\n"));
}

#[test]
fn bundle_diagnostics_ask_for_each_file_and_are_separated_by_blank_lines() {
    let first = bundle_diagnostic(Some(1), Some(1));
    let mut second = bundle_diagnostic(Some(1), Some(2));
    second.file = Some("mcp.json".to_owned());
    let mut asked = Vec::new();
    let text = render_bundle_diagnostics(
        &[first.clone(), second.clone()],
        |file| {
            asked.push(file.to_owned());
            (file == "mcp.json").then_some(Cow::Borrowed("{}"))
        },
        &RenderOptions::new(),
    );
    assert_eq!(asked, ["plugin.json", "mcp.json"]);
    let expected = format!(
        "{}\n{}",
        render_diagnostic(&first, None, &RenderOptions::new()),
        render_diagnostic(&second, Some("{}"), &RenderOptions::new())
    );
    assert_eq!(text, expected);
}

#[test]
fn a_document_diagnostic_converts_into_a_bundle_diagnostic_without_loss() {
    let source = "{\n  \"name\": \"Bad Name\"\n}\n";
    let report = validate_manifest(source, &ManifestOptions::default());
    let d: Diagnostic = report.diagnostics[0].clone();
    let converted = d.clone().in_file("plugin.json");
    assert_eq!(converted.code, d.code);
    assert_eq!(converted.severity, d.severity);
    assert_eq!(converted.file.as_deref(), Some("plugin.json"));
    assert_eq!(converted.pointer.as_deref(), Some(d.pointer.as_str()));
    assert_eq!(
        (converted.line, converted.column),
        (Some(d.line), Some(d.column))
    );
    assert_eq!((&converted.message, &converted.help), (&d.message, &d.help));
    // The document renderer is the same renderer.
    assert_eq!(
        render_diagnostics("plugin.json", source, &report.diagnostics, true),
        render_bundle_diagnostics(
            &report
                .diagnostics
                .iter()
                .map(|d| d.clone().in_file("plugin.json"))
                .collect::<Vec<_>>(),
            |_| Some(Cow::Borrowed(source)),
            &RenderOptions::new().with_color(true),
        )
    );
}

#[test]
fn plugin_text_cannot_drive_the_terminal_or_forge_a_host_line() {
    let hostile = "boom\u{1b}[2J\u{1b}]0;pwned\u{7}\r\nc2-plugins: trusted evil-123\u{202e}";
    assert_eq!(
        terminal_text(hostile, TerminalLines::Indented),
        "boom\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\r\n  c2-plugins: trusted evil-123\\u{202e}"
    );
    assert_eq!(
        terminal_text("a\nb\u{9b}c", TerminalLines::One),
        "a\\nb\\u{9b}c"
    );
    // Indented continuation lines and plain text are left alone.
    let host = "failed; last stderr lines:\n  one\n\ttwo";
    assert!(matches!(terminal_text(host, TerminalLines::Indented), Cow::Borrowed(t) if t == host));
    assert!(matches!(
        terminal_text("plain é 漢 \t", TerminalLines::One),
        Cow::Borrowed(_)
    ));
    for text in [hostile, "x\u{85}y", "\u{7f}"] {
        for lines in [TerminalLines::One, TerminalLines::Indented] {
            let safe = terminal_text(text, lines);
            assert!(
                !safe.chars().any(|c| c.is_control() && c != '\n'),
                "{safe:?}"
            );
            assert!(
                safe.split('\n').skip(1).all(|l| l.starts_with(' ')),
                "{safe:?}"
            );
        }
    }
}

fn text(value: &str) -> crate::FrontmatterValue {
    crate::FrontmatterValue::Text(value.to_owned())
}

fn list(items: &[&str]) -> crate::FrontmatterValue {
    crate::FrontmatterValue::List(items.iter().map(|&i| i.to_owned()).collect())
}

#[test]
fn frontmatter_reads_scalars_and_lists_as_text_and_leaves_out_nested_maps() {
    let source = "\u{feff}---\nhint: [issue-number, 'two']\ntools:\n  - Read\n  - \"Grep\"\n\
                  model: \"strong\"\nplain: 1.0\nnested:\n  a: b\nblock: |\n  one\n  two\n---\nBody.\n";
    let front = crate::parse_frontmatter(source);
    assert!(front.present && front.is_valid(), "{:?}", front.diagnostics);
    assert_eq!(
        front.fields,
        [
            ("hint".to_owned(), list(&["issue-number", "two"])),
            ("tools".to_owned(), list(&["Read", "Grep"])),
            ("model".to_owned(), text("strong")),
            ("plain".to_owned(), text("1.0")),
            ("block".to_owned(), text("one\ntwo\n")),
        ]
    );
    assert_eq!(front.body, "Body.\n");
}

#[test]
fn a_file_without_frontmatter_is_all_body() {
    let front = crate::parse_frontmatter("# Title\n---\n");
    assert!(!front.present && front.is_valid());
    assert!(front.fields.is_empty());
    assert_eq!(front.body, "# Title\n---\n");
}

#[test]
fn an_unterminated_block_is_an_error_and_leaves_the_file_as_body() {
    let front = crate::parse_frontmatter("---\ndescription: x\n");
    assert!(front.present && !front.is_valid());
    assert_eq!(front.diagnostics[0].code, "frontmatter-unterminated");
    assert!(front.fields.is_empty());
    assert_eq!(front.body, "---\ndescription: x\n");
}

#[test]
fn invalid_yaml_is_a_syntax_error_at_its_line_and_column() {
    let front = crate::parse_frontmatter("---\nok: 1\nbad: [a, b\n---\nBody.\n");
    assert!(!front.is_valid());
    let first = &front.diagnostics[0];
    assert_eq!(first.code, "frontmatter-syntax");
    assert!(first.line >= 3, "{first:?}");
    assert!(front.fields.is_empty());
    assert_eq!(front.body, "Body.\n");
}

#[test]
fn a_frontmatter_over_its_bounds_or_not_a_mapping_is_an_error() {
    let big = format!(
        "---\nx: {}\n---\n",
        "a".repeat(crate::MAX_FRONTMATTER_BYTES)
    );
    assert_eq!(
        crate::parse_frontmatter(&big).diagnostics[0].code,
        "frontmatter-too-large"
    );
    let scalar = crate::parse_frontmatter("---\njust text\n---\n");
    assert_eq!(scalar.diagnostics[0].code, "frontmatter-not-mapping");
    assert_eq!(
        (scalar.diagnostics[0].line, scalar.diagnostics[0].column),
        (2, 1)
    );
    let empty = crate::parse_frontmatter("---\n---\nBody.");
    assert!(empty.is_valid() && empty.fields.is_empty());
    assert_eq!(empty.body, "Body.");
}

#[test]
fn hidden_characters_are_found_in_text_but_not_where_they_have_a_visible_job() {
    let found = crate::hidden_chars("a\u{202e}b\u{200b}c\u{feff}d\u{ad}e\u{e0041}");
    let chars: Vec<char> = found.iter().map(|h| h.ch).collect();
    assert_eq!(
        chars,
        ['\u{202e}', '\u{200b}', '\u{feff}', '\u{ad}', '\u{e0041}']
    );
    assert_eq!(found[0].kind, crate::HiddenKind::Bidi);
    assert_eq!(found[1].offset, 5);
    // A leading byte-order mark, emoji joiners and variation selectors, a flag's tags.
    for visible in [
        "\u{feff}text",
        "\u{1f468}\u{200d}\u{1f469}",
        "\u{2764}\u{fe0f}",
        "1\u{fe0f}\u{20e3}",
        "\u{1f3f4}\u{e0067}\u{e0062}\u{e007f}",
    ] {
        assert!(crate::hidden_chars(visible).is_empty(), "{visible:?}");
    }
    // Next to ASCII a joiner has no job.
    assert_eq!(crate::hidden_chars("ab\u{200d}c").len(), 1);
    assert_eq!(
        crate::identifier_hidden_char("x\u{200d}y"),
        Some('\u{200d}')
    );
    assert_eq!(crate::identifier_hidden_char("plain-id"), None);
}

#[test]
fn no_ascii_character_is_hidden_so_ascii_text_is_not_scanned_character_by_character() {
    for byte in 0..=0x7f_u8 {
        assert_eq!(crate::hidden_kind(char::from(byte)), None, "{byte:#04x}");
    }
}

#[test]
fn hidden_text_warnings_carry_line_and_column_and_stop_after_sixteen() {
    let found = crate::scan_hidden_text("line one\nsee \u{2066}this\u{2069}\n");
    assert_eq!(found.len(), 2);
    assert_eq!(
        (found[0].code, found[0].line, found[0].column),
        ("bidi-control", 2, 5)
    );
    assert_eq!(found[0].severity, Severity::Warning);
    let many = crate::scan_hidden_text(&"x\u{200b}".repeat(40));
    assert_eq!(many.len(), 17);
    assert!(many[16].message.starts_with("24 more hidden characters"));
    assert_eq!(
        terminal_text("a\u{200b}b\u{e0041}", TerminalLines::One),
        "a\\u{200b}b\\u{e0041}"
    );
}

#[test]
fn look_alike_names_are_one_edit_apart_or_equal_once_folded() {
    use crate::{Lookalike, lookalike, within_one_edit};
    assert_eq!(lookalike("reviewer", "reviewer"), Some(Lookalike::SameName));
    for (a, b) in [
        ("reviewer", "reviewr"),
        ("reviewer", "reveiwer"),
        ("reviewer", "reviewers"),
        ("reviewer", "reviewar"),
        ("ab", "ba"),
    ] {
        assert_eq!(lookalike(a, b), Some(Lookalike::OneEdit), "{a} {b}");
        assert!(within_one_edit(b, a), "{b} {a}");
    }
    for (a, b) in [
        ("modern-lint", "modem-lint"),
        ("Linter", "linter"),
        ("l0gger", "logger"),
        ("code_review", "code-review"),
        ("pаypal", "paypal"),
        ("vvatch", "watch"),
    ] {
        assert_eq!(lookalike(a, b), Some(Lookalike::Confusable), "{a} {b}");
    }
    for (a, b) in [
        ("reviewer", "reviewing"),
        ("lint", "fmt"),
        ("abc", "cab"),
        ("", "ab"),
    ] {
        assert_eq!(lookalike(a, b), None, "{a} {b}");
    }
}

#[test]
fn a_skeleton_folds_pairs_left_to_right_without_overlap() {
    use crate::{Lookalike, lookalike, skeleton};
    for (name, folded) in [
        ("rrnn", "rmn"),
        ("vvv", "wv"),
        ("rnvv", "mw"),
        ("Vrnv", "vmv"),
        ("I\u{200b}O_x", "lo-x"),
        ("", ""),
    ] {
        assert_eq!(skeleton(name), folded, "{name:?}");
    }
    // Compared lazily, a skeleton that is a prefix of the other's is still no match.
    assert_eq!(lookalike("modern-lint-extra", "modem-lint"), None);
    assert_eq!(lookalike("rn-tool", "m-tool"), Some(Lookalike::Confusable));
}
