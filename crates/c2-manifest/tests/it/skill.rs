//! `validate_skill`: SKILL.md frontmatter.

use c2_manifest::{Severity, SkillOptions, validate_skill, validate_skill_with};

fn codes(source: &str, folder: &str) -> Vec<(&'static str, Severity)> {
    validate_skill(source, folder)
        .diagnostics
        .iter()
        .map(|d| (d.code, d.severity))
        .collect()
}

#[test]
fn a_well_formed_skill_is_valid_and_keeps_its_scalar_fields() {
    let source = "---\nname: review\ndescription: \"Review code: carefully\"\nlicense: 'MIT'\nmetadata:\n  owner: team\n---\n# Body\n";
    let report = validate_skill(source, "review");
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let skill = report.skill.unwrap();
    assert_eq!(skill.description, "Review code: carefully");
    assert_eq!(skill.fields.get("license").map(String::as_str), Some("MIT"));
    assert!(!skill.fields.contains_key("metadata"));
}

#[test]
fn block_scalars_fold_or_keep_newlines() {
    let folded = validate_skill("---\nname: a\ndescription: >\n  one\n  two\n---\n", "a")
        .skill
        .unwrap();
    assert_eq!(folded.description, "one two\n");
    let literal = validate_skill("---\nname: a\ndescription: |\n  one\n  two\n---\n", "a")
        .skill
        .unwrap();
    assert_eq!(literal.description, "one\ntwo\n");
}

#[test]
fn the_name_must_equal_the_folder() {
    let report = validate_skill("---\nname: other\ndescription: x\n---\n", "review");
    let d = &report.diagnostics[0];
    assert_eq!((d.code, d.line, d.column), ("skill-name-mismatch", 2, 7));
    assert!(report.skill.is_none());
}

#[test]
fn description_length_is_counted_in_chars_up_to_the_limit() {
    let at = format!("---\nname: a\ndescription: {}\n---\n", "é".repeat(1024));
    let past = format!("---\nname: a\ndescription: {}\n---\n", "é".repeat(1025));
    assert!(codes(&at, "a").is_empty());
    assert_eq!(
        codes(&past, "a"),
        vec![("skill-description-too-long", Severity::Error)]
    );
    let tight = validate_skill_with(
        &at,
        "a",
        &SkillOptions {
            max_description_chars: 10,
            ..SkillOptions::default()
        },
    );
    assert!(!tight.is_valid());
}

#[test]
fn missing_or_empty_fields_are_errors() {
    assert_eq!(
        codes("---\ndescription: x\n---\n", "a"),
        vec![("skill-name-missing", Severity::Error)]
    );
    assert_eq!(
        codes("---\nname: a\n---\n", "a"),
        vec![("skill-description-missing", Severity::Error)]
    );
    assert_eq!(
        codes("---\nname: a\ndescription: \"  \"\n---\n", "a"),
        vec![("skill-description-empty", Severity::Error)]
    );
}

#[test]
fn unknown_keys_are_warnings_and_the_skill_stays_valid() {
    let report = validate_skill("---\nname: a\ndescription: x\nmodel: fast\n---\n", "a");
    assert!(report.is_valid());
    assert_eq!(report.diagnostics[0].code, "frontmatter-unknown-key");
    assert_eq!(report.diagnostics[0].severity, Severity::Warning);
}

#[test]
fn frontmatter_structure_problems_are_reported() {
    assert_eq!(
        codes("# no frontmatter\n", "a"),
        vec![("frontmatter-missing", Severity::Error)]
    );
    assert_eq!(
        codes("---\nname: a\n", "a"),
        vec![("frontmatter-unterminated", Severity::Error)]
    );
    let flow = codes("---\nname: a\ndescription: x\ntags: [a, b]\n---\n", "a");
    assert!(
        flow.contains(&("frontmatter-syntax", Severity::Error)),
        "{flow:?}"
    );
    let dup = codes("---\nname: a\nname: a\ndescription: x\n---\n", "a");
    assert_eq!(dup, vec![("duplicate-key", Severity::Error)]);
}

#[test]
fn crlf_line_endings_and_a_byte_order_mark_are_accepted() {
    let report = validate_skill("\u{feff}---\r\nname: a\r\ndescription: x\r\n---\r\n", "a");
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    assert_eq!(report.skill.unwrap().description, "x");
}

#[test]
fn every_agent_skills_rule_has_its_code() {
    let fm = |body: &str| format!("---\n{body}---\n");
    let long = "a".repeat(65);
    for (folder, body, code) in [
        ("Pdf", "name: Pdf\ndescription: x\n", "skill-name-invalid"),
        ("-a", "name: -a\ndescription: x\n", "skill-name-invalid"),
        ("a--b", "name: a--b\ndescription: x\n", "skill-name-invalid"),
        ("a_b", "name: a_b\ndescription: x\n", "skill-name-invalid"),
        (
            long.as_str(),
            &format!("name: {long}\ndescription: x\n"),
            "skill-name-too-long",
        ),
        (
            "a",
            "name:\n  - a\ndescription: x\n",
            "skill-field-wrong-type",
        ),
        (
            "a",
            "name: a\ndescription: x\ncompatibility: \"\"\n",
            "skill-compatibility-length",
        ),
        (
            "a",
            &format!(
                "name: a\ndescription: x\ncompatibility: {}\n",
                "c".repeat(501)
            ),
            "skill-compatibility-length",
        ),
        (
            "a",
            "name: a\ndescription: x\nmetadata: nope\n",
            "skill-field-wrong-type",
        ),
        (
            "a",
            "name: a\ndescription: x\nmetadata:\n  k:\n    deep: v\n",
            "skill-field-wrong-type",
        ),
        (
            "a",
            "name: a\ndescription: x\nlicense:\n  - MIT\n",
            "skill-field-wrong-type",
        ),
        (
            "a",
            "name: a\ndescription: x\nallowed-tools:\n  k: v\n",
            "skill-field-wrong-type",
        ),
        (
            "a",
            "name: a\ndescription: Use when: x\n",
            "frontmatter-syntax",
        ),
    ] {
        let report = validate_skill(&fm(body), folder);
        assert!(!report.is_valid(), "{body}");
        assert!(
            report.diagnostics.iter().any(|d| d.code == code),
            "{body}: {:#?}",
            report.diagnostics
        );
    }
}

#[test]
fn metadata_and_allowed_tools_are_typed() {
    let report = validate_skill(
        "---\nname: a\ndescription: x\nmetadata:\n  author: me\n  version: \"1.0\"\nallowed-tools:\n  - Read\n  - Bash(git:*)\ncompatibility: Requires git\n---\n",
        "a",
    );
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let skill = report.skill.unwrap();
    assert_eq!(
        skill.metadata.get("version").map(String::as_str),
        Some("1.0")
    );
    assert_eq!(skill.allowed_tools, vec!["Read", "Bash(git:*)"]);
    let spaced = validate_skill(
        "---\nname: a\ndescription: x\nallowed-tools: Read Write\n---\n",
        "a",
    );
    assert_eq!(spaced.skill.unwrap().allowed_tools, vec!["Read", "Write"]);
}

/// The SKILL.md corpus: `test_data/skills/{ok,err}/<folder>/SKILL.md`, each written from one
/// Agent Skills rule, with its outcome snapshotted beside it. The skills-ref differential test
/// judges the same files.
pub(crate) fn corpus(kind: &str) -> Vec<(String, std::path::PathBuf, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data/skills")
        .join(kind);
    #[expect(
        clippy::disallowed_methods,
        reason = "the corpus runner lists its own test data, not a bundle"
    )]
    let entries = std::fs::read_dir(dir).unwrap();
    let mut out: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .map(|p| {
            let text = std::fs::read_to_string(p.join("SKILL.md")).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p,
                text,
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_skill_corpus_case_has_the_expected_verdict_and_matches_its_snapshot() {
    let known: Vec<&str> = c2_manifest::CODES.iter().map(|(c, _)| *c).collect();
    for kind in ["ok", "err"] {
        let cases = corpus(kind);
        assert!(cases.len() >= 10, "{kind}");
        for (folder, dir, text) in cases {
            let report = validate_skill(&text, &folder);
            assert_eq!(
                report.is_valid(),
                kind == "ok",
                "{kind}/{folder}: {:#?}",
                report.diagnostics
            );
            let mut body = format!("valid: {}\n", report.is_valid());
            for d in &report.diagnostics {
                assert!(known.contains(&d.code), "{folder}: {}", d.code);
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
            body.push_str(&c2_manifest::render_diagnostics(
                "SKILL.md",
                &text,
                &report.diagnostics,
                false,
            ));
            insta::with_settings!({
                snapshot_path => dir.clone(),
                prepend_module_to_snapshot => false,
                omit_expression => true,
                description => format!("skills/{kind}/{folder}"),
            }, {
                insta::assert_snapshot!("outcome", body);
            });
        }
    }
}
