//! Behaviour of `validate_manifest` beyond the corpus: parser safety, typed output, options.

use c2_manifest::{
    Capability, ExecutableRef, ManifestOptions, ScopeKind, Severity, UiSlot, validate_manifest,
};

const VALID: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "demo",
  "version": "1.0.0",
  "extensions": { "dev.codetwo": {
    "standardVersion": "1.2.0",
    "commands": [{ "id": "demo.run", "title": "Run", "argsSchema": { "type": "object" } }],
    "runtime": { "command": "bin/demo" },
    "ui": [{ "id": "run", "slot": "host.actions", "label": "Run", "command": "demo.run", "order": -3 }],
    "connectors": [{ "id": "c", "provider": "feishu", "command": "demo.run", "capabilities": ["tables", "messaging"] }]
  } }
}"#;

fn codes(source: &str) -> Vec<&'static str> {
    validate_manifest(source, &ManifestOptions::default())
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn a_valid_manifest_yields_the_typed_model_with_defaults_filled_in() {
    let report = validate_manifest(VALID, &ManifestOptions::default());
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let m = report.clone().into_manifest().unwrap();
    let runtime = m.codetwo.runtime.as_ref().unwrap();
    assert_eq!(runtime.scope_support, vec![ScopeKind::User]);
    assert_eq!(
        runtime.executable(),
        ExecutableRef::BundleRelative("bin/demo")
    );
    assert_eq!(m.codetwo.ui[0].slot, UiSlot::HostActions);
    assert_eq!(m.codetwo.ui[0].order, Some(-3));
    assert_eq!(
        m.codetwo.commands[0].args_schema,
        Some(serde_json::json!({ "type": "object" }))
    );
    assert_eq!(
        m.codetwo.connectors[0].capabilities,
        vec![Capability::Tables, Capability::Messaging]
    );
}

#[test]
fn an_invalid_manifest_has_no_model_and_into_manifest_counts_the_errors() {
    let report = validate_manifest(
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "X", "version": "1.0.0"}"#,
        &ManifestOptions::default(),
    );
    assert!(report.manifest.is_none());
    let err = report.into_manifest().unwrap_err();
    assert_eq!(err, c2_manifest::Error::InvalidManifest { errors: 2 });
}

#[test]
fn a_megabyte_of_open_brackets_is_a_nesting_diagnostic_not_a_stack_overflow() {
    let source = "[".repeat(1 << 20);
    assert_eq!(codes(&source), vec!["nesting-too-deep"]);
    let objects = "{\"a\":".repeat(1 << 18);
    assert_eq!(codes(&objects), vec!["nesting-too-deep"]);
}

#[test]
fn nesting_exactly_at_the_limit_parses_and_one_more_level_does_not() {
    let options = ManifestOptions {
        max_depth: 4,
        ..ManifestOptions::default()
    };
    let at = "[[[[]]]]";
    let past = "[[[[[]]]]]";
    let at_codes: Vec<_> = validate_manifest(at, &options)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect();
    let past_codes: Vec<_> = validate_manifest(past, &options)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(at_codes, vec!["wrong-type"]);
    assert_eq!(past_codes, vec!["nesting-too-deep"]);
}

#[test]
fn columns_count_chars_not_bytes() {
    let source = "{\"description\": \"日本語\", \"name\": 1}";
    let report = validate_manifest(source, &ManifestOptions::default());
    let d = report
        .diagnostics
        .iter()
        .find(|d| d.pointer == "/name")
        .unwrap();
    assert_eq!((d.line, d.column), (1, 32));
}

#[test]
fn a_byte_order_mark_is_reported_and_the_rest_is_still_checked() {
    let source = format!("\u{feff}{}", VALID.replace("\"demo\"", "\"Demo\""));
    let report = validate_manifest(&source, &ManifestOptions::default());
    let found: Vec<_> = report
        .diagnostics
        .iter()
        .map(|d| (d.code, d.line, d.column))
        .collect();
    assert_eq!(
        found,
        vec![("byte-order-mark", 1, 1), ("name-invalid", 3, 11)]
    );
}

#[test]
fn an_embedder_can_reserve_more_namespaces() {
    let mut options = ManifestOptions::default();
    options.reserved_namespaces.insert("demo".to_owned());
    let report = validate_manifest(VALID, &options);
    let found: Vec<_> = report
        .diagnostics
        .iter()
        .map(|d| (d.code, d.pointer.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![(
            "command-namespace-reserved",
            "/extensions/dev.codetwo/commands/0/id"
        )]
    );
}

#[test]
fn limits_come_from_the_options() {
    let options = ManifestOptions {
        max_title_chars: 2,
        ..ManifestOptions::default()
    };
    let report = validate_manifest(VALID, &options);
    let found: Vec<_> = report.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(found, vec!["title-too-long", "label-too-long"]);
}

#[test]
fn every_diagnostic_of_a_broken_manifest_carries_code_pointer_position_and_message() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/test_data/err/many-problems/plugin.json"
    ))
    .unwrap();
    let report = validate_manifest(&source, &ManifestOptions::default());
    assert!(report.diagnostics.len() >= 15);
    for d in &report.diagnostics {
        assert!(!d.code.is_empty() && !d.message.is_empty());
        assert!(d.line >= 1 && d.column >= 1);
        // An empty `version` is only "not SemVer" (Agent Plugins §5.4): a warning.
        let expected = if d.code == "version-not-semver" {
            Severity::Warning
        } else {
            Severity::Error
        };
        assert_eq!(d.severity, expected, "{}", d.code);
        assert!(d.help.is_some(), "{} has no help", d.code);
    }
}

#[test]
fn diagnostics_serialize_with_camel_case_fields() {
    let report = validate_manifest("{", &ManifestOptions::default());
    let json = serde_json::to_value(&report.diagnostics[0]).unwrap();
    assert_eq!(json["code"], "invalid-json");
    assert_eq!(json["severity"], "error");
    assert_eq!(json["pointer"], "");
    assert_eq!(
        (json["line"].as_u64(), json["column"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn duplicate_key_pointers_escape_slashes_and_tildes() {
    let source = r#"{"extensions": {"a/b~c": {"k": 1, "k": 2}}}"#;
    let report = validate_manifest(source, &ManifestOptions::default());
    let d = report
        .diagnostics
        .iter()
        .find(|d| d.code == "duplicate-key")
        .unwrap();
    assert_eq!(d.pointer, "/extensions/a~1b~0c/k");
}

#[test]
fn connector_capabilities_bound_the_operations_the_host_may_invoke() {
    assert!(Capability::Messaging.operation_allowed("message.send"));
    assert!(!Capability::Messaging.operation_allowed("message."));
    assert!(!Capability::Messaging.operation_allowed("messages.send"));
    assert!(Capability::Tables.operation_allowed("resources.list"));
    assert!(Capability::TurnNotifications.operation_allowed("notification.turn.done"));
    assert!(!Capability::Connection.operation_allowed("resources.list"));
    let m = validate_manifest(VALID, &ManifestOptions::default())
        .manifest
        .unwrap();
    assert!(m.codetwo.connectors[0].operation_allowed("table.rows"));
    assert!(!m.codetwo.connectors[0].operation_allowed("document.read"));
}

#[test]
fn a_command_with_a_slash_is_bundle_relative_and_one_without_is_a_bare_name() {
    assert_eq!(
        ExecutableRef::parse("node"),
        ExecutableRef::BareName("node")
    );
    assert_eq!(
        ExecutableRef::parse("./bin/x"),
        ExecutableRef::BundleRelative("./bin/x")
    );
}

#[test]
fn schema_is_required_and_only_agent_plugins_1_0_0_is_recognized() {
    let bare = VALID.replacen(
        "\"$schema\": \"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json\",",
        "",
        1,
    );
    let report = validate_manifest(&bare, &ManifestOptions::default());
    let d = &report.diagnostics[0];
    assert_eq!(
        (d.code, d.pointer.as_str(), d.line),
        ("schema-missing", "", 1)
    );
    assert!(d.message.contains("`$schema`"), "{}", d.message);
    assert!(report.manifest.is_none());
    let mcp = VALID.replace("plugin.schema.json", "mcp.schema.json");
    assert_eq!(codes(&mcp), vec!["schema-unsupported"]);
    let typed = VALID.replace(
        "\"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json\"",
        "1",
    );
    assert_eq!(codes(&typed), vec!["wrong-type"]);
}

#[test]
fn version_is_optional_and_a_non_semver_version_only_warns() {
    let none = VALID.replace("  \"version\": \"1.0.0\",\n", "");
    let report = validate_manifest(&none, &ManifestOptions::default());
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    assert_eq!(report.manifest.unwrap().version, None);
    let loose = VALID.replace("\"1.0.0\"", "\"v1\"");
    let report = validate_manifest(&loose, &ManifestOptions::default());
    assert!(report.is_valid());
    assert_eq!(report.diagnostics[0].severity, Severity::Warning);
    assert_eq!(report.manifest.unwrap().version.as_deref(), Some("v1"));
}

/// A manifest with one runtime whose `commandTimeoutMs` member is the given JSON text.
fn with_timeout(value: &str) -> String {
    format!(
        r#"{{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "demo", "version": "1.0.0",
  "extensions": {{ "dev.codetwo": {{ "standardVersion": "1.2.0",
    "commands": [{{ "id": "demo.run", "title": "Run" }}],
    "runtime": {{ "command": "bin/demo", "commandTimeoutMs": {value} }} }} }} }}"#
    )
}

#[test]
fn command_timeout_ms_is_accepted_from_one_millisecond_to_one_hour() {
    for (text, expected) in [("1", 1), ("60000", 60_000), ("3600000", 3_600_000)] {
        let report = validate_manifest(&with_timeout(text), &ManifestOptions::default());
        assert!(report.is_valid(), "{text}: {:#?}", report.diagnostics);
        let m = report.into_manifest().unwrap();
        assert_eq!(
            m.codetwo.runtime.unwrap().command_timeout_ms,
            Some(expected)
        );
    }
    let m = validate_manifest(VALID, &ManifestOptions::default())
        .into_manifest()
        .unwrap();
    assert_eq!(m.codetwo.runtime.unwrap().command_timeout_ms, None);
}

#[test]
fn command_timeout_ms_out_of_range_or_not_an_integer_is_a_diagnostic_at_its_pointer() {
    for (text, code) in [
        ("0", "command-timeout-out-of-range"),
        ("-5", "command-timeout-out-of-range"),
        ("3600001", "command-timeout-out-of-range"),
        ("18446744073709551615", "command-timeout-not-integer"),
        ("1.5", "command-timeout-not-integer"),
        ("\"60000\"", "wrong-type"),
        ("null", "wrong-type"),
    ] {
        let report = validate_manifest(&with_timeout(text), &ManifestOptions::default());
        assert!(!report.is_valid(), "{text} was accepted");
        let found: Vec<_> = report.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(found, vec![code], "{text}");
        assert_eq!(
            report.diagnostics[0].pointer, "/extensions/dev.codetwo/runtime/commandTimeoutMs",
            "{text}"
        );
    }
}

#[test]
fn a_field_the_reference_text_does_not_define_beside_the_new_ones_stays_invalid() {
    // Misspellings and neighbours of the amended fields: the runtime and the connector stay
    // closed objects.
    for (runtime_extra, connector_extra) in [
        (r#", "commandTimeout": 5"#, ""),
        (r#", "timeoutMs": 5"#, ""),
        (r#", "commandTimeoutMs": 5, "callbackTimeoutMs": 5"#, ""),
        ("", r#", "observations": true"#),
    ] {
        let source = format!(
            r#"{{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "demo", "version": "1.0.0",
  "extensions": {{ "dev.codetwo": {{ "standardVersion": "1.2.0",
    "commands": [{{ "id": "demo.run", "title": "Run" }}],
    "runtime": {{ "command": "bin/demo"{runtime_extra} }},
    "connectors": [{{ "id": "c", "provider": "tracker", "command": "demo.run",
      "capabilities": ["issues", "observations"]{connector_extra} }}] }} }} }}"#
        );
        assert_eq!(codes(&source), vec!["unknown-key"], "{source}");
    }
    // A C2 field the reference does not define, next to the runtime, is refused as well.
    let hostwide = with_timeout("5").replacen(
        r#""standardVersion": "1.2.0","#,
        r#""standardVersion": "1.2.0", "observations": true,"#,
        1,
    );
    assert!(!validate_manifest(&hostwide, &ManifestOptions::default()).is_valid());
    // An unknown capability name is still refused.
    let unknown = VALID.replace(r#"["tables", "messaging"]"#, r#"["issues", "observation"]"#);
    assert!(!validate_manifest(&unknown, &ManifestOptions::default()).is_valid());
}

#[test]
fn the_issues_and_observations_capabilities_are_accepted_and_bound_operations() {
    let source = VALID.replace(
        r#"["tables", "messaging"]"#,
        r#"["issues", "observations"]"#,
    );
    let report = validate_manifest(&source, &ManifestOptions::default());
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let m = report.into_manifest().unwrap();
    let connector = &m.codetwo.connectors[0];
    assert_eq!(
        connector.capabilities,
        vec![Capability::Issues, Capability::Observations]
    );
    assert!(connector.operation_allowed("issues.list"));
    assert!(!connector.operation_allowed("issues."));
    assert!(!connector.operation_allowed("observation/record"));
    assert!(!Capability::Observations.operation_allowed("observations.record"));
}

#[test]
fn a_duplicate_key_is_found_in_a_small_object_and_past_the_scanned_keys_of_a_large_one() {
    // Few members: found by comparing with each. Many: found through the set of keys.
    for members in [2, 15, 16, 17, 40] {
        for duplicate in [0, members - 1] {
            let mut keys: Vec<String> = (0..members).map(|n| format!("\"k{n}\": {n}")).collect();
            keys.push(format!("\"k{duplicate}\": true"));
            let source = format!(
                r#"{{"name": "demo", "extensions": {{"x": {{{}}}}}}}"#,
                keys.join(", ")
            );
            let found = codes(&source)
                .into_iter()
                .filter(|code| *code == "duplicate-key")
                .count();
            assert_eq!(found, 1, "{members} members, k{duplicate} twice");
        }
    }
}
