//! Property tests: no input panics a validator, and validation is deterministic.

use c2_manifest::{
    ManifestOptions, render_diagnostics, validate_manifest, validate_marketplace, validate_mcp,
    validate_skill,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("name"),
            Just("version"),
            Just("extensions"),
            Just("dev.codetwo"),
            Just("1.2.0")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        ".{0,8}",
                        Just("name".to_owned()),
                        Just("extensions".to_owned()),
                        Just("dev.codetwo".to_owned()),
                        Just("commands".to_owned()),
                        Just("runtime".to_owned()),
                        Just("ui".to_owned()),
                        Just("id".to_owned()),
                    ],
                    inner,
                ),
                0..8,
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn exercise(text: &str) {
    let report = validate_manifest(text, &ManifestOptions::default());
    assert_eq!(report.manifest.is_some(), report.is_valid());
    let _ = render_diagnostics("plugin.json", text, &report.diagnostics, true);
    let _ = validate_mcp(text);
    let _ = validate_marketplace(text);
    let skill = validate_skill(text, "x");
    let _ = render_diagnostics("SKILL.md", text, &skill.diagnostics, false);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_json_never_panics_and_always_parses(value in arb_json()) {
        for text in [serde_json::to_string(&value).unwrap(), serde_json::to_string_pretty(&value).unwrap()] {
            exercise(&text);
            let report = validate_manifest(&text, &ManifestOptions::default());
            prop_assert!(report.diagnostics.iter().all(|d| d.code != "invalid-json"), "{text}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_json_text_fragments_never_panic(parts in prop::collection::vec(
        prop_oneof![Just("{"), Just("}"), Just("["), Just("]"), Just(","), Just(":"), Just("\""), Just("\\u"),
            Just("\\"), Just("1e9"), Just("-0.5"), Just("true"), Just("\u{feff}"), Just("é"), Just("\n"), Just("\"k\"")],
        0..64,
    )) {
        exercise(&parts.concat());
    }

    #[test]
    fn arbitrary_yaml_frontmatter_never_panics_and_is_valid_exactly_with_a_skill(parts in prop::collection::vec(
        prop_oneof![Just("name: x\n"), Just("description: d\n"), Just("metadata:\n"), Just("  k: v\n"),
            Just("- "), Just("["), Just("]"), Just("{"), Just("}"), Just(", "), Just(": "), Just("&a "),
            Just("*a"), Just("!!str "), Just("|\n"), Just(">-\n"), Just("\""), Just("'"), Just("..."),
            Just("# c"), Just("\n"), Just("  "), Just("\t"), Just("é"), Just("? "), Just("%YAML 1.2\n")],
        0..48,
    )) {
        let text = format!("---\n{}\n---\nbody\n", parts.concat());
        let report = validate_skill(&text, "x");
        prop_assert_eq!(report.is_valid(), report.skill.is_some());
        for d in &report.diagnostics {
            prop_assert!(d.line >= 1 && d.line as usize <= text.lines().count() + 1);
        }
        exercise(&text);
    }

    #[test]
    fn a_generated_valid_manifest_validates_the_same_way_every_time(
        name in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?",
        ns in "[a-z][a-z0-9_]{2,10}",
        title in "\\PC{1,80}",
        description in "\\PC{0,300}",
        order in -100i32..=100,
    ) {
        prop_assume!(!name.contains("--") && title.trim() != "");
        prop_assume!(!c2_manifest::DEFAULT_RESERVED_NAMESPACES.contains(&ns.as_str()));
        let manifest = json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": name, "version": "1.0.0",
            "extensions": { "dev.codetwo": {
                "standardVersion": "1.2.0",
                "commands": [{ "id": format!("{ns}.run"), "title": title, "description": description }],
                "runtime": { "command": "node" },
                "ui": [{ "id": "a", "slot": "rail.features", "label": title, "command": format!("{ns}.run"), "order": order }]
            } }
        });
        let text = serde_json::to_string_pretty(&manifest).unwrap();
        let first = validate_manifest(&text, &ManifestOptions::default());
        prop_assert!(first.is_valid(), "{:#?}", first.diagnostics);
        let second = validate_manifest(&text, &ManifestOptions::default());
        prop_assert_eq!(serde_json::to_value(&first).unwrap(), serde_json::to_value(&second).unwrap());
    }
}
