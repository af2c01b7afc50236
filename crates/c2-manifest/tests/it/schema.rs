//! The published JSON Schema: kept equal to the committed file and to the validator's ok cases.
//!
//! Regenerate the committed file with `UPDATE_EXPECT=1 cargo test -p c2-manifest`.

use std::path::Path;

use c2_manifest::{ManifestOptions, plugin_json_schema, validate_manifest};

use crate::corpus::cases;

fn committed_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/plugin.schema.json")
}

#[test]
fn the_committed_schema_file_equals_the_generated_schema() {
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&plugin_json_schema()).unwrap()
    );
    let path = committed_path();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/schemas/plugin.schema.json is stale; run `UPDATE_EXPECT=1 cargo test -p c2-manifest` and commit it"
    );
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let schema = plugin_json_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    jsonschema::meta::validate(&schema).unwrap();
}

#[test]
fn every_ok_corpus_case_validates_against_the_schema() {
    let validator = jsonschema::validator_for(&plugin_json_schema()).unwrap();
    for case in cases("ok") {
        let value: serde_json::Value = serde_json::from_str(&case.source).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "ok case `{}` fails the schema: {errors:#?}",
            case.name
        );
    }
}

#[test]
fn the_schema_rejects_typical_err_cases_too() {
    let validator = jsonschema::validator_for(&plugin_json_schema()).unwrap();
    for name in [
        "unknown-root-key",
        "runtime-at-root",
        "standard-version-1-1-0",
        "title-81-chars",
        "ui-order-101",
        "ls-languages-17",
        "command-id-single-segment",
        "runtime-command-parent-dir",
    ] {
        let case = cases("err").into_iter().find(|c| c.name == name).unwrap();
        let value: serde_json::Value = serde_json::from_str(&case.source).unwrap();
        assert!(
            !validator.is_valid(&value),
            "the schema accepts err case `{name}`"
        );
        assert!(!validate_manifest(&case.source, &ManifestOptions::default()).is_valid());
    }
}
