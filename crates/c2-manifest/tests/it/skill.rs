//! `validate_skill`: SKILL.md frontmatter.

use c2_manifest::{
    MAX_FRONTMATTER_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES, Severity, SkillOptions, validate_skill,
    validate_skill_with,
};

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
    // A flow sequence is YAML: `tags` is read (and warned about as an unknown key).
    let flow = codes("---\nname: a\ndescription: x\ntags: [a, b]\n---\n", "a");
    assert_eq!(flow, vec![("frontmatter-unknown-key", Severity::Warning)]);
    let broken = codes("---\nname: a\ndescription: x\ntags: [a, b\n---\n", "a");
    assert_eq!(broken, vec![("frontmatter-syntax", Severity::Error)]);
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

fn skill(body: &str, folder: &str) -> c2_manifest::Skill {
    let report = validate_skill(&format!("---\n{body}---\n# Body\n"), folder);
    assert!(report.is_valid(), "{body}: {:#?}", report.diagnostics);
    report.skill.unwrap()
}

#[test]
fn frontmatter_is_yaml_1_2_with_every_scalar_kept_as_text() {
    // Flow sequence and flow mapping.
    let s = skill(
        "name: a\ndescription: x\nallowed-tools: [Read, \"Bash(git:*)\"]\nmetadata: {author: me, version: 1.0}\n",
        "a",
    );
    assert_eq!(s.allowed_tools, vec!["Read", "Bash(git:*)"]);
    assert_eq!(s.metadata.get("author").map(String::as_str), Some("me"));
    assert_eq!(s.metadata.get("version").map(String::as_str), Some("1.0"));
    // A plain scalar that starts on the next line, and one continued over lines.
    let s = skill(
        "name: a\ndescription:\n  Reviews code. Use when asked\n  for a review.\n",
        "a",
    );
    assert_eq!(s.description, "Reviews code. Use when asked for a review.");
    let s = skill("name: a\ndescription: one\n  two\n\n  three\n", "a");
    assert_eq!(s.description, "one two\nthree");
    // Multi-line double- and single-quoted scalars.
    let s = skill(
        "name: a\ndescription: \"Use when: one\n  two \\u00e9\"\nlicense: 'it''s\n  two lines'\n",
        "a",
    );
    assert_eq!(s.description, "Use when: one two é");
    assert_eq!(s.fields["license"], "it's two lines");
    // Anchors and aliases.
    let s = skill("name: &n a\ndescription: x\nmetadata:\n  id: *n\n", "a");
    assert_eq!(s.metadata["id"], "a");
    // Tags change nothing: every scalar is text.
    let s = skill(
        "name: a\ndescription: !!str 1.0\nlicense: !!int 2\nmetadata:\n  on: !custom off\n",
        "a",
    );
    assert_eq!(
        (s.description.as_str(), s.fields["license"].as_str()),
        ("1.0", "2")
    );
    assert_eq!(s.metadata["on"], "off");
    // A `...` document end before the closing `---`.
    let s = skill("name: a\ndescription: x\n...\n", "a");
    assert_eq!(s.description, "x");
    // YAML-typed words stay what was written.
    let s = skill(
        "name: a\ndescription: yes\ncompatibility: null\nmetadata:\n  version: 1.0\n  n: 010\n  t: true\n  e: ~\n",
        "a",
    );
    assert_eq!(s.description, "yes");
    assert_eq!(s.fields["compatibility"], "null");
    let metadata: Vec<(&str, &str)> = s
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        metadata,
        vec![("e", "~"), ("n", "010"), ("t", "true"), ("version", "1.0")]
    );
}

#[test]
fn yaml_errors_keep_their_line_and_column() {
    let report = validate_skill(
        "---\nname: a\ndescription: x\nmetadata:\n  a: b\n c: d\n---\n",
        "a",
    );
    let d = &report.diagnostics[0];
    assert_eq!((d.code, d.line), ("frontmatter-syntax", 6), "{d:#?}");
    let report = validate_skill("---\nname: a\ndescription: Use when: x\n---\n", "a");
    let d = &report.diagnostics[0];
    assert_eq!((d.code, d.line, d.column), ("frontmatter-syntax", 3, 22));
    assert!(
        d.message.starts_with("the frontmatter is not valid YAML: "),
        "{d:#?}"
    );
    // A multi-byte character before the error counts as one column.
    let report = validate_skill("---\nname: a\ndescription: é: x\n---\n", "a");
    let d = &report.diagnostics[0];
    assert_eq!((d.code, d.line, d.column), ("frontmatter-syntax", 3, 15));
    // Values point at themselves.
    let report = validate_skill("---\nname: a\ndescription:\n  - x\n---\n", "a");
    let d = &report.diagnostics[0];
    assert_eq!((d.code, d.line, d.column), ("skill-field-wrong-type", 4, 3));
}

#[test]
fn frontmatter_shape_problems_have_their_own_codes() {
    let only = |text: &str| {
        let report = validate_skill(text, "a");
        assert!(!report.is_valid(), "{text}");
        report
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        only("---\n- a\n- b\n---\n"),
        vec!["frontmatter-not-mapping"]
    );
    assert_eq!(
        only("---\njust text\n---\n"),
        vec!["frontmatter-not-mapping"]
    );
    assert_eq!(
        only("---\nname: a\ndescription: x\n? [k]\n: v\n---\n"),
        vec!["frontmatter-key-not-string"]
    );
    assert_eq!(
        only("---\nname: a\ndescription: x\n...\nname: b\n---\n"),
        vec!["frontmatter-syntax"]
    );
    assert_eq!(
        only("---\nname: a\ndescription: x\nmetadata:\n  k: v\n  k: w\n---\n"),
        vec!["duplicate-key"]
    );
    // An empty block has no keys.
    assert_eq!(
        only("---\n---\n"),
        vec!["skill-name-missing", "skill-description-missing"]
    );
}

#[test]
fn a_billion_laughs_is_refused_without_being_expanded() {
    let mut body = String::from("name: a\ndescription: x\nmetadata:\n  l0: &l0 lol\n");
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 10].join(", ");
        body.push_str(&format!("  l{i}: &l{i} [{refs}]\n"));
    }
    let started = std::time::Instant::now();
    let report = validate_skill(&format!("---\n{body}---\n"), "a");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    let codes: Vec<_> = report.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, vec!["frontmatter-aliases-too-large"]);
    let d = &report.diagnostics[0];
    assert!(d.message.contains(&MAX_YAML_NODES.to_string()), "{d:#?}");
    assert!(d.line > 4, "{d:#?}");
    // Aliases that stay under the bound are read.
    let s = skill(
        "name: a\ndescription: x\nallowed-tools: &t [Read]\ncompatibility: &c git\nlicense: *c\n",
        "a",
    );
    assert_eq!(s.fields["license"], "git");
}

#[test]
fn frontmatter_size_depth_and_node_count_are_bounded() {
    let fm = |body: &str| format!("---\n{body}---\n");
    let codes = |text: &str| -> Vec<&'static str> {
        validate_skill(text, "a")
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect()
    };
    // Size: at the limit it parses, past it nothing is parsed.
    let head = "name: a\ndescription: x\nlicense: ";
    let at_limit = format!(
        "{head}{}\n",
        "l".repeat(MAX_FRONTMATTER_BYTES - head.len() - 1)
    );
    assert_eq!(at_limit.len(), MAX_FRONTMATTER_BYTES);
    assert!(codes(&fm(&at_limit)).is_empty());
    let past = format!("{head}{}\n", "l".repeat(MAX_FRONTMATTER_BYTES - head.len()));
    assert_eq!(codes(&fm(&past)), vec!["frontmatter-too-large"]);
    // Depth: block and flow nesting.
    let nest = |depth: usize| {
        let mut body = String::from("name: a\ndescription: x\nx-deep:\n");
        for level in 1..depth {
            body.push_str(&format!("{}k:\n", "  ".repeat(level)));
        }
        body.push_str(&format!("{}k: v\n", "  ".repeat(depth)));
        body
    };
    assert_eq!(
        codes(&fm(&nest(MAX_YAML_DEPTH - 1))),
        vec!["frontmatter-unknown-key"]
    );
    assert_eq!(codes(&fm(&nest(MAX_YAML_DEPTH))), vec!["nesting-too-deep"]);
    let flow = |depth: usize| {
        format!(
            "name: a\ndescription: x\nx-deep: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    assert_eq!(
        codes(&fm(&flow(MAX_YAML_DEPTH - 1))),
        vec!["frontmatter-unknown-key"]
    );
    assert_eq!(codes(&fm(&flow(MAX_YAML_DEPTH))), vec!["nesting-too-deep"]);
    assert_eq!(codes(&fm(&flow(1000))), vec!["nesting-too-deep"]);
    // Node count without aliases.
    let many = |n: usize| {
        format!(
            "name: a\ndescription: x\nx-many: [{}]\n",
            vec!["1"; n].join(",")
        )
    };
    // The root mapping, 3 keys, 2 scalar values and the sequence itself take 7 nodes.
    assert_eq!(
        codes(&fm(&many(MAX_YAML_NODES - 7))),
        vec!["frontmatter-unknown-key"]
    );
    assert_eq!(
        codes(&fm(&many(MAX_YAML_NODES - 6))),
        vec!["frontmatter-too-large"]
    );
}

#[test]
fn the_lenient_option_loads_what_client_guidance_tolerates_with_warnings() {
    let lenient = SkillOptions {
        lenient: true,
        ..SkillOptions::default()
    };
    assert!(!SkillOptions::default().lenient);
    let long = "d".repeat(1100);
    let text = format!(
        "---\nname: other\ndescription: {long}\nmetadata:\n  author: me\n  tags: [a, b]\n  nested:\n    k: v\n---\n"
    );
    let found = |options: &SkillOptions| {
        let report = validate_skill_with(&text, "review", options);
        let codes: Vec<_> = report
            .diagnostics
            .iter()
            .map(|d| (d.code, d.severity, d.pointer.clone()))
            .collect();
        (report.skill, codes)
    };
    let (strict_skill, strict) = found(&SkillOptions::default());
    assert!(strict_skill.is_none());
    let (skill, warned) = found(&lenient);
    let expected = |severity| {
        vec![
            ("skill-name-mismatch", severity, "/name".to_owned()),
            (
                "skill-description-too-long",
                severity,
                "/description".to_owned(),
            ),
            (
                "skill-field-wrong-type",
                severity,
                "/metadata/tags".to_owned(),
            ),
            (
                "skill-field-wrong-type",
                severity,
                "/metadata/nested".to_owned(),
            ),
        ]
    };
    assert_eq!(strict, expected(Severity::Error));
    assert_eq!(warned, expected(Severity::Warning));
    let skill = skill.expect("loaded with warnings");
    assert_eq!(skill.name, "other");
    assert_eq!(skill.description, long);
    assert_eq!(skill.metadata.len(), 1);
    assert_eq!(skill.metadata["author"], "me");
    // Every other rule stays an error.
    for body in [
        "name: Other\ndescription: x\n",
        "name: review\ndescription: \"\"\n",
        "name: review\ndescription: x\nmetadata: text\n",
        "name: review\ndescription: x\nlicense: [a]\n",
        "name: review\ndescription: x\ncompatibility: \"\"\n",
        "name: review\ndescription: [x]\n",
        "name: review\ndescription: x: y\n",
        "description: x\n",
    ] {
        let report = validate_skill_with(&format!("---\n{body}---\n"), "review", &lenient);
        assert!(report.skill.is_none(), "{body}: {:#?}", report.diagnostics);
    }
}
