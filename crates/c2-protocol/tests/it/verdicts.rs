//! The handshake's two rules on plain values, without a plugin: the protocol version check
//! (`check_protocol_version`) and the exact confirmation of the declared commands
//! (`confirm_commands`), with the messages a plugin author reads.

use std::fmt::Write as _;

use c2_protocol::{
    CommandInfo, CommandMismatch, DeclaredCommand, InitializeResult, ProtocolVersion,
    check_protocol_version, confirm_commands,
};
use serde_json::{Value, json};

fn host_version() -> ProtocolVersion {
    ProtocolVersion::parse("1.0.0").unwrap()
}

#[test]
fn same_major_versions_are_compatible() {
    for v in ["1.0.0", "1.4.2", "1.0.0-beta.1", " 1.1.0 "] {
        assert!(
            check_protocol_version(&host_version(), Some(v)).is_ok(),
            "{v}"
        );
    }
}

#[test]
fn missing_unparseable_and_other_major_versions_are_refused_readably() {
    let mut out = String::new();
    for v in [None, Some("one"), Some("1.0"), Some("2.0.0"), Some("0.9.0")] {
        let err = check_protocol_version(&host_version(), v).unwrap_err();
        writeln!(out, "{v:?}: {err}").unwrap();
    }
    insta::assert_snapshot!(out);
}

fn declared(list: &[(&str, Option<Value>)]) -> Vec<DeclaredCommand> {
    list.iter()
        .map(|(id, schema)| DeclaredCommand {
            id: (*id).into(),
            args_schema: schema.clone(),
        })
        .collect()
}

fn confirmed(list: &[(&str, Option<Value>)]) -> InitializeResult {
    InitializeResult {
        name: "p".into(),
        version: "1.0.0".into(),
        protocol_version: Some("1.0.0".into()),
        commands: list
            .iter()
            .map(|(name, schema)| CommandInfo {
                name: (*name).into(),
                description: None,
                schema: schema.clone(),
            })
            .collect(),
        events: vec![],
    }
}

#[test]
fn exact_commands_and_schemas_are_confirmed() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let reordered = json!({"properties": {"a": {"type": "string"}}, "type": "object"});
    let d = declared(&[
        ("a.one", Some(schema)),
        ("a.two", None),
        ("a.three", Some(Value::Null)),
    ]);
    let c = confirmed(&[
        ("a.three", Some(Value::Null)),
        ("a.one", Some(reordered)),
        ("a.two", None),
    ]);
    assert_eq!(confirm_commands(&d, &c), Ok(()));
}

#[test]
fn every_mismatch_kind_is_reported_with_an_actionable_message() {
    let obj = json!({"type": "object"});
    let other = json!({"type": "object", "additionalProperties": false});
    let cases = [
        (
            "missing",
            declared(&[("a.one", None), ("a.two", None)]),
            confirmed(&[("a.one", None)]),
        ),
        (
            "extra",
            declared(&[("a.one", None)]),
            confirmed(&[("a.one", None), ("a.zzz", None)]),
        ),
        (
            "duplicated",
            declared(&[("a.one", None)]),
            confirmed(&[("a.one", None), ("a.one", None)]),
        ),
        (
            "schema_changed",
            declared(&[("a.one", Some(obj.clone()))]),
            confirmed(&[("a.one", Some(other.clone()))]),
        ),
        (
            "schema_added",
            declared(&[("a.one", None)]),
            confirmed(&[("a.one", Some(obj.clone()))]),
        ),
        (
            "schema_dropped",
            declared(&[("a.one", Some(obj.clone()))]),
            confirmed(&[("a.one", Some(Value::Null))]),
        ),
        (
            "all_at_once",
            declared(&[
                ("a.one", Some(obj.clone())),
                ("a.two", None),
                ("a.three", None),
            ]),
            confirmed(&[
                ("a.three", None),
                ("a.one", Some(other)),
                ("x.extra", None),
                ("a.three", Some(obj)),
            ]),
        ),
    ];
    for (name, d, c) in cases {
        let err = confirm_commands(&d, &c).unwrap_err();
        insta::assert_snapshot!(format!("mismatch_{name}"), err.to_string());
    }
}

#[test]
fn mismatches_are_reported_as_data() {
    let d = declared(&[("a.one", None), ("a.two", None)]);
    let c = confirmed(&[("a.two", Some(json!(true))), ("a.x", None), ("a.x", None)]);
    assert_eq!(
        confirm_commands(&d, &c).unwrap_err().mismatches,
        vec![
            CommandMismatch::Missing {
                name: "a.one".into()
            },
            CommandMismatch::Extra { name: "a.x".into() },
            CommandMismatch::Duplicated {
                name: "a.x".into(),
                count: 2
            },
            CommandMismatch::SchemaChanged {
                name: "a.two".into(),
                declared: None,
                confirmed: Some(json!(true))
            },
        ]
    );
}
