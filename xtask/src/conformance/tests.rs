use std::collections::BTreeMap;
use std::path::Path;

use super::spec::{Flavor, normalize, units};
use super::{Statements, TestInventory, TestRuns, corpus, problems, unrun};

const PLAIN: &str = "\
Title line

2. Bundle manifest

Every bundle MUST carry one file. Nothing else is said here. Hosts SHOULD NOT guess.

Field\tRequired\tContract
name\tyes\tNon-empty.

Term\tMeaning
Bundle\tA directory.
";

#[test]
fn plain_texts_split_into_sentences_rows_and_sections() {
    let all = units(PLAIN, Flavor::Plain);
    let normative: Vec<(&str, &str)> = all
        .iter()
        .filter(|u| u.normative)
        .map(|u| (u.section.as_str(), u.text.as_str()))
        .collect();
    assert_eq!(
        normative,
        [
            ("2. Bundle manifest", "Every bundle MUST carry one file."),
            ("2. Bundle manifest", "Hosts SHOULD NOT guess."),
            ("2. Bundle manifest", "name yes Non-empty."),
        ]
    );
    assert!(
        all.iter()
            .any(|u| u.text == "Bundle A directory." && !u.normative)
    );
    assert!(
        all.iter()
            .any(|u| u.text == "Nothing else is said here." && !u.normative)
    );
}

#[test]
fn markdown_skips_fences_headers_and_the_non_normative_appendix() {
    let text = "## 5.3 Required fields\n\n| Field | Type |\n| --- | --- |\n| `name` | string |\n\n```json\n{\"a\": \"MUST\"}\n```\n\nClients MUST reject it, e.g. Here.\n\n## Appendix A: Checklist\n\nClients MUST do it.\n";
    let all = units(text, Flavor::Markdown);
    let normative: Vec<&str> = all
        .iter()
        .filter(|u| u.normative)
        .map(|u| u.text.as_str())
        .collect();
    assert_eq!(
        normative,
        ["name string", "Clients MUST reject it, e.g. Here."]
    );
    assert_eq!(normalize("a `b`\t|  c"), "a b c");
}

fn list(json: &str) -> Statements {
    serde_json::from_str(json).unwrap()
}

fn spec_units(text: &str) -> BTreeMap<&'static str, Vec<super::spec::Unit>> {
    let mut map = BTreeMap::new();
    map.insert("standard", units(text, Flavor::Plain));
    map.insert("protocol", Vec::new());
    map.insert("agent-plugins", Vec::new());
    map
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

#[test]
fn an_uncovered_sentence_a_moved_anchor_and_a_missing_test_are_each_reported() {
    let statements = list(
        r#"{"format": 1, "plugin_obligations": [], "statements": [
            {"id": "a", "spec": "standard", "section": "2. Bundle manifest",
             "anchor": "Every bundle MUST carry", "kind": "manifest", "says": "one file",
             "proven_by": ["xtask::unit::conformance::tests::no_such_test"]},
            {"id": "b", "spec": "standard", "section": "1. Elsewhere",
             "anchor": "name yes Non-empty", "kind": "manifest", "says": "a name",
             "status": "unsupported", "reason": "not yet"}
        ]}"#,
    );
    let found = problems(root(), &statements, Some(&spec_units(PLAIN)));
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("no_such_test"), "{found:#?}");
    assert!(found[1].contains("not `1. Elsewhere`"), "{found:#?}");
    assert!(found[2].contains("Hosts SHOULD NOT guess."), "{found:#?}");
}

#[test]
fn an_entry_needs_evidence_or_a_status_with_a_reason() {
    let statements = list(
        r#"{"format": 1, "plugin_obligations": [], "statements": [
            {"id": "a", "spec": "standard", "section": "2. Bundle manifest",
             "anchor": "Every bundle MUST carry", "kind": "manifest", "says": "one file"},
            {"id": "b", "spec": "standard", "section": "2. Bundle manifest",
             "anchor": "Hosts SHOULD NOT guess", "kind": "bogus", "says": "x",
             "status": "not-applicable"}
        ]}"#,
    );
    let found = problems(root(), &statements, None);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("names no test"), "{found:#?}");
    assert!(found[1].contains("kind `bogus`"), "{found:#?}");
    assert!(found[2].contains("needs a `reason`"), "{found:#?}");
}

#[test]
fn the_inventory_knows_real_tests_and_cases_and_nothing_else() {
    let inventory = TestInventory::scan(root());
    for real in [
        "xtask::unit::conformance::tests::the_inventory_knows_real_tests_and_cases_and_nothing_else",
        "c2-manifest::it::corpus::every_code_in_the_table_is_unique_and_kebab_case",
        "xtask::unit::main::tests::libtest_summaries_are_summed_and_other_lines_ignored",
        "c2-manifest/test_data/err/name-uppercase",
        "conformance/cases/bundles/manifest-ok-minimal",
    ] {
        assert_eq!(inventory.resolve(real), Ok(()), "{real}");
    }
    for made_up in [
        "c2-manifest::it::corpus::no_such_test",
        "xtask::unit::main::libtest_summaries_are_summed_and_other_lines_ignored",
        "c2-manifest/test_data/err/no-such-case",
    ] {
        assert!(inventory.resolve(made_up).is_err(), "{made_up}");
    }
}

#[test]
fn mcp_and_skill_corpus_cases_are_proven_by_their_own_runners() {
    let inventory = TestInventory::scan(root());
    for (case, runner) in [
        (
            "c2-manifest/test_data/mcp/ok/spec-example",
            "mcp::every_ok_mcp_case_is_clean_and_matches_its_snapshot",
        ),
        (
            "c2-manifest/test_data/mcp/err/url-userinfo",
            "mcp::every_err_mcp_case_disables_or_skips_and_matches_its_snapshot",
        ),
        (
            "c2-manifest/test_data/skills/err/pdf_processing",
            "skill::every_skill_corpus_case_has_the_expected_verdict_and_matches_its_snapshot",
        ),
    ] {
        assert_eq!(inventory.resolve(case), Ok(()), "{case}");
        assert_eq!(
            TestInventory::runs_for(case),
            Some(("c2-manifest it".to_owned(), runner.to_owned())),
            "{case}"
        );
    }
    assert!(
        inventory
            .resolve("c2-manifest/test_data/mcp/err/no-such-case")
            .is_err()
    );
}

#[test]
fn a_machine_dependent_warning_is_not_part_of_a_verdict() {
    let with = serde_json::json!({"valid": true, "diagnostics": [
        {"code": "command-not-on-path", "severity": "warning"},
        {"code": "unknown-key", "severity": "warning"}]});
    let without = serde_json::json!({"valid": true, "diagnostics": [
        {"code": "unknown-key", "severity": "warning"}]});
    assert_eq!(
        corpus::Verdict::from_json(&with),
        corpus::Verdict::from_json(&without)
    );
    let other = serde_json::json!({"valid": true, "diagnostics": []});
    assert_ne!(
        corpus::Verdict::from_json(&with),
        corpus::Verdict::from_json(&other)
    );
}

#[test]
fn passed_tests_are_attributed_to_the_binary_of_the_running_line_above_them() {
    let lines: Vec<String> = [
        "     Running tests/it/main.rs (target/debug/deps/it-1111)",
        "test corpus::every_code_in_the_table_is_unique_and_kebab_case ... ok",
        "     Running tests/it/main.rs (target/debug/deps/it-2222)",
        "test lsp::dropping_a_live_server_kills_it ... FAILED",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let binaries: BTreeMap<String, String> = [
        ("it-1111".to_owned(), "c2-manifest it".to_owned()),
        ("it-2222".to_owned(), "c2-host it".to_owned()),
    ]
    .into_iter()
    .collect();
    let runs = TestRuns::from_output(&lines, &binaries);
    let statements = list(
        r#"{"format": 1, "plugin_obligations": [], "statements": [
            {"id": "a", "spec": "standard", "section": "s", "anchor": "an anchor text",
             "kind": "manifest", "says": "x", "proven_by": [
                "c2-manifest::it::corpus::every_code_in_the_table_is_unique_and_kebab_case",
        "c2-host::it::lsp::dropping_a_live_server_kills_it",
                "c2-host::it::corpus::every_code_in_the_table_is_unique_and_kebab_case",
                "c2-manifest/test_data/ok/minimal"]}
        ]}"#,
    );
    let found = unrun(&statements, &runs);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("dropping_a_live_server_kills_it"));
    assert!(found[1].contains("c2-host::it::corpus"));
    // The ok corpus case is proven by its runner, which did not run here.
    assert!(found[2].contains("test_data/ok/minimal"));
}

/// A root holding one corpus case whose tree is invalid.
fn one_case_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("conformance/cases/bundles/one");
    std::fs::create_dir_all(case.join("bundle")).unwrap();
    std::fs::write(case.join("bundle/plugin.json"), "{}").unwrap();
    std::fs::write(
        case.join("expected.json"),
        r#"{"valid": false, "diagnostics": [{"code": "name-missing", "severity": "error"}]}"#,
    )
    .unwrap();
    dir
}

#[test]
fn the_runner_accepts_an_agreeing_host_and_names_a_disagreeing_one() {
    let root = one_case_root();
    let agree = r#"printf '{"results":[{"valid":false,"diagnostics":[{"code":"name-missing","severity":"error"}]}]}' #"#;
    let outcome = corpus::run_host(root.path(), agree).unwrap();
    assert_eq!(
        (outcome.cases, outcome.failures.len()),
        (1, 0),
        "{outcome:?}"
    );

    let flipped = r#"printf '{"results":[{"valid":true,"diagnostics":[{"code":"name-missing","severity":"error"}]}]}' #"#;
    let outcome = corpus::run_host(root.path(), flipped).unwrap();
    assert_eq!(outcome.failed_cases(), ["one"], "{outcome:?}");

    let other_code = r#"printf '{"results":[{"valid":false,"diagnostics":[{"code":"name-invalid","severity":"error"}]}]}' #"#;
    let outcome = corpus::run_host(root.path(), other_code).unwrap();
    assert_eq!(outcome.failed_cases(), ["one"], "{outcome:?}");

    let garbage = "echo not json #";
    let outcome = corpus::run_host(root.path(), garbage).unwrap();
    assert!(
        outcome.failures[0].contains("not one JSON document"),
        "{outcome:?}"
    );
}

/// Plays `frames` (recording lines) with `outcome` as a transcript file in a temporary directory.
fn play(frames: &str, outcome: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.ndjson");
    let header = format!(
        r#"{{"format": "c2-plugins-recording", "version": 1, "conformance": {{"commands": [{{"id": "t.run", "title": "Run"}}], "invoke": {{"command": "t.run"}}, "outcome": {outcome}}}}}"#
    );
    std::fs::write(&file, format!("{header}\n{frames}")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(super::transcripts::play(root(), &file))
}

const GOOD_SCRIPT: &str = r#"{"t": 0, "dir": "host->plugin", "match": "subset", "frame": {"id": 1, "method": "initialize"}}
{"t": 0, "dir": "plugin->host", "frame": {"jsonrpc": "2.0", "id": 1, "result": {"name": "t", "version": "1.0.0", "protocolVersion": "1.0.0", "commands": [{"name": "t.run"}]}}}
{"t": 0, "dir": "host->plugin", "match": "subset", "frame": {"id": 2, "method": "command/invoke", "params": {"name": "t.run"}}}
{"t": 0, "dir": "plugin->host", "frame": {"jsonrpc": "2.0", "id": 2, "result": 7}}
"#;

#[test]
fn a_transcript_fails_on_a_wrong_outcome_or_a_host_message_the_script_did_not_expect() {
    play(GOOD_SCRIPT, r#"{"result": 7}"#).unwrap();
    let wrong_outcome = play(GOOD_SCRIPT, r#"{"result": 8}"#).unwrap_err();
    assert!(
        format!("{wrong_outcome:#}").contains("expected the outcome"),
        "{wrong_outcome:#}"
    );
    let other_method = GOOD_SCRIPT.replace("command/invoke", "event/emit");
    let unexpected = play(&other_method, r#"{"error_kind": "unloaded"}"#).unwrap_err();
    assert!(
        format!("{unexpected:#}").contains("expected the outcome"),
        "{unexpected:#}"
    );
}
