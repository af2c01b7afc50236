//! Checking a command's `argsSchema`: is it a JSON Schema the host can compile?
//!
//! A schema is valid when it satisfies its draft's meta-schema and then compiles. Compiling
//! can refuse a meta-valid schema only through a few keywords: a `pattern` or
//! `patternProperties` regex the engine rejects, a `$ref` that does not resolve, an `$id` that
//! is not a URI, a `format` or content keyword the compiler is strict about. Most argument
//! schemas use none of them (`type`, `properties`, `required`, `enum`, bounds), and compiling
//! one costs several times its meta-schema check, mostly in building a reference registry for
//! a document with no references. So a schema made only of [`PLAIN_KEYWORDS`] is checked
//! against its meta-schema alone; any other schema is compiled. The differential property
//! test below holds the two verdicts equal over generated schemas.

use jsonschema::Draft;
use serde_json::Value;

/// Keywords whose compilation cannot fail once the meta-schema has accepted their value.
/// Anything else, anywhere in the schema, sends it to the compiler.
const PLAIN_KEYWORDS: &[&str] = &[
    "type",
    "required",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords whose value is one subschema.
const SCHEMA_KEYWORDS: &[&str] = &["not", "additionalProperties", "additionalItems"];

/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf"];

/// Why a schema is not a valid `argsSchema`: the JSON pointer inside the schema and the
/// compiler's message.
pub(crate) type Problem = (String, String);

/// Checks `schema` (written for `draft`) the way compiling it would, and returns the first
/// problem.
pub(crate) fn check(schema: &Value, draft: Draft) -> Option<Problem> {
    let error = if is_plain(schema, true) {
        jsonschema::meta::validate(schema).err()
    } else {
        jsonschema::options().with_draft(draft).build(schema).err()
    };
    error.map(|e| (e.instance_path().as_str().to_owned(), e.to_string()))
}

/// Whether every keyword of `schema`, at every depth, is one whose compilation adds nothing
/// to the meta-schema check. `root` allows `$schema`, which the caller has already matched
/// against the drafts it knows. Walks an explicit stack, not the call stack.
fn is_plain(schema: &Value, root: bool) -> bool {
    let mut stack = vec![(schema, root)];
    while let Some((schema, root)) = stack.pop() {
        let members = match schema {
            Value::Bool(_) => continue,
            Value::Object(members) => members,
            _ => return false,
        };
        for (key, value) in members {
            let plain = match key.as_str() {
                "$schema" => root,
                "properties" => match value.as_object() {
                    Some(properties) => {
                        stack.extend(properties.values().map(|s| (s, false)));
                        true
                    }
                    None => false,
                },
                "items" => {
                    match value {
                        Value::Array(items) => stack.extend(items.iter().map(|s| (s, false))),
                        _ => stack.push((value, false)),
                    }
                    true
                }
                k if SCHEMA_KEYWORDS.contains(&k) => {
                    stack.push((value, false));
                    true
                }
                k if SCHEMA_ARRAY_KEYWORDS.contains(&k) => match value.as_array() {
                    Some(items) => {
                        stack.extend(items.iter().map(|s| (s, false)));
                        true
                    }
                    None => false,
                },
                k => PLAIN_KEYWORDS.contains(&k),
            };
            if !plain {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;

    /// Values that sit on the edges of what each keyword accepts.
    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(-1)),
            Just(json!(2.5)),
            Just(json!(3.0)),
            Just(json!(-0.0)),
            Just(json!(1e300)),
            Just(json!(18_446_744_073_709_551_615_u64)),
            Just(json!(1.8446744073709552e19)),
            Just(json!(true)),
            Just(json!(false)),
            Just(Value::Null),
            Just(json!("string")),
            Just(json!("integer")),
            Just(json!("bogus")),
            Just(json!("")),
            Just(json!([])),
            Just(json!(["a", "a"])),
            Just(json!(["a", "b"])),
            Just(json!(["string", "null"])),
            Just(json!(["string", "string"])),
            Just(json!([1, "a", null])),
            Just(json!({})),
            Just(json!({"a": 1})),
        ]
    }

    fn keyword() -> impl Strategy<Value = &'static str> {
        let all: Vec<&'static str> = PLAIN_KEYWORDS
            .iter()
            .chain(SCHEMA_KEYWORDS)
            .chain(SCHEMA_ARRAY_KEYWORDS)
            .chain(&["properties", "items", "pattern", "$ref", "$id", "format"])
            .copied()
            .collect();
        proptest::sample::select(all)
    }

    fn schema() -> impl Strategy<Value = Value> {
        let leaf_schema = prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!({})),
            prop::collection::vec((keyword(), leaf()), 0..4).prop_map(object),
        ];
        leaf_schema.prop_recursive(4, 48, 6, |inner| {
            prop::collection::vec(
                (
                    keyword(),
                    prop_oneof![
                        leaf(),
                        inner.clone(),
                        prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                        prop::collection::vec(("[a-c]", inner), 0..3)
                            .prop_map(|m| Value::Object(m.into_iter().collect())),
                    ],
                ),
                0..5,
            )
            .prop_map(object)
        })
    }

    fn object(members: Vec<(&'static str, Value)>) -> Value {
        let map: Map<String, Value> = members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        Value::Object(map)
    }

    fn draft() -> impl Strategy<Value = Option<&'static str>> {
        prop_oneof![
            Just(None),
            Just(Some("http://json-schema.org/draft-04/schema#")),
            Just(Some("http://json-schema.org/draft-06/schema#")),
            Just(Some("http://json-schema.org/draft-07/schema#")),
            Just(Some("https://json-schema.org/draft/2019-09/schema")),
            Just(Some("https://json-schema.org/draft/2020-12/schema")),
        ]
    }

    fn compiled(schema: &Value, draft: Draft) -> Option<Problem> {
        jsonschema::options()
            .with_draft(draft)
            .build(schema)
            .err()
            .map(|e| (e.instance_path().as_str().to_owned(), e.to_string()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8192))]

        /// The meta-schema check alone gives the compiler's verdict, and the same first
        /// problem, for every schema it is used on.
        #[test]
        fn plain_schemas_get_the_compilers_verdict(mut schema in schema(), uri in draft()) {
            if let (Some(uri), Value::Object(members)) = (uri, &mut schema) {
                members.insert("$schema".into(), json!(uri));
            }
            let draft = uri.map_or_else(Draft::default, Draft::from_schema_uri);
            prop_assert_eq!(check(&schema, draft), compiled(&schema, draft), "{}", schema);
        }
    }

    #[test]
    fn compile_only_problems_are_still_found() {
        let bad_regex = json!({"properties": {"a": {"type": "string", "pattern": "("}}});
        assert!(!is_plain(&bad_regex, true));
        assert!(check(&bad_regex, Draft::default()).is_some());
        let dangling = json!({"properties": {"a": {"$ref": "#/$defs/missing"}}});
        assert!(check(&dangling, Draft::default()).is_some());
    }

    #[test]
    fn typical_argument_schemas_take_the_meta_schema_path() {
        let typical = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "a file"},
                "mode": {"enum": ["fast", "slow"]},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        assert!(is_plain(&typical, true));
        assert_eq!(check(&typical, Draft::default()), None);
        // `$schema` below the root declares an embedded resource: the compiler decides.
        assert!(!is_plain(&json!({"not": {"$schema": "x"}}), true));
    }
}
