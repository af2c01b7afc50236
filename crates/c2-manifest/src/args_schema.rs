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
//!
//! Before either, a schema [`PlainSchema::compile`] accepts is valid without asking jsonschema
//! at all: in a fresh process its first meta-schema check builds the meta-validator (~1.5 ms
//! for draft 2020-12), which every plugin start would otherwise pay. A second property test
//! holds that whatever `compile` accepts, jsonschema's meta-schema check and compiler accept.

use jsonschema::Draft;
use serde_json::Value;

use crate::plain_schema::PlainSchema;

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
    if PlainSchema::compile(schema, draft).is_some() {
        return None;
    }
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

    /// Numbers on the edges of exact comparison: integer-valued floats, `u64::MAX` beside the
    /// float nearest it, 2^53 + 1 beside 2^53, negative zero.
    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(-1)),
            Just(json!(2)),
            Just(json!(2.5)),
            Just(json!(3.0)),
            Just(json!(-0.0)),
            Just(json!(-2.5)),
            Just(json!(1e300)),
            Just(json!(-1e300)),
            Just(json!(i64::MIN)),
            Just(json!(18_446_744_073_709_551_615_u64)),
            Just(json!(1.8446744073709552e19)),
            Just(json!(9_007_199_254_740_993_u64)),
            Just(json!(9_007_199_254_740_992.0)),
        ]
    }

    /// Instances: scalars on the edges above, strings whose byte and code-point lengths differ,
    /// arrays and objects over the keys the generated schemas name.
    fn instance() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            1 => Just(Value::Null),
            1 => Just(json!(true)),
            1 => Just(json!(false)),
            3 => number(),
            1 => Just(json!("")),
            1 => Just(json!("a")),
            1 => Just(json!("ab")),
            1 => Just(json!("abc")),
            1 => Just(json!("é")),
            1 => Just(json!("日本語")),
            1 => Just(json!("😀😀")),
        ];
        let nested = scalar.clone().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-c]", inner), 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        prop_oneof![scalar, nested]
    }

    /// Mostly a value from `ok`; with weight `miss` (against 8), a near miss.
    fn pick(ok: Vec<Value>, miss: Vec<Value>, near_misses: u32) -> BoxedStrategy<Value> {
        let ok = proptest::sample::select(ok);
        if near_misses == 0 {
            ok.boxed()
        } else {
            prop_oneof![8 => ok, near_misses => proptest::sample::select(miss)].boxed()
        }
    }

    /// One keyword of a plain schema with its value: what the meta-schema accepts, or with
    /// weight `near_misses` a near miss (wrong type, negative or fractional length, duplicates,
    /// empty arrays, unknown type names).
    fn plain_member(
        inner: BoxedStrategy<Value>,
        near_misses: u32,
    ) -> impl Strategy<Value = (&'static str, Value)> {
        let m = near_misses;
        let types = pick(
            vec![
                json!("string"),
                json!("integer"),
                json!("number"),
                json!("null"),
                json!("boolean"),
                json!("array"),
                json!("object"),
                json!(["string", "null"]),
                json!(["integer", "string"]),
                json!(["number", "integer"]),
            ],
            vec![
                json!("bogus"),
                json!(["string", "string"]),
                json!(["string", "bogus"]),
                json!([]),
                json!(7),
            ],
            m,
        );
        let size = pick(
            vec![
                json!(0),
                json!(1),
                json!(2),
                json!(3),
                json!(18_446_744_073_709_551_615_u64),
            ],
            vec![json!(-1), json!(2.5), json!(3.0), json!("1")],
            m,
        );
        let required = pick(
            vec![json!(["a"]), json!(["a", "b"]), json!([])],
            vec![json!(["a", "a"]), json!([1]), json!("a")],
            m,
        );
        let enumeration = pick(
            vec![
                json!([1, "a", null]),
                json!([1.0, 2]),
                json!([{"a": 1}, [1, 2.0]]),
                json!(["日本語", true, -0.0]),
                json!([9_007_199_254_740_992.0, 18_446_744_073_709_551_615_u64]),
            ],
            vec![json!([]), json!([1, 1.0]), json!({"a": 1})],
            m,
        );
        let bound = prop_oneof![
            8 => number().boxed(),
            m.max(1) => pick(vec![json!(0)], vec![json!("1"), Value::Null], m),
        ];
        let sized = proptest::sample::select(vec![
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
        ]);
        let bounded = proptest::sample::select(vec![
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
        ]);
        let subschema = proptest::sample::select(vec!["not", "additionalProperties", "items"]);
        let combinator = proptest::sample::select(vec!["allOf", "anyOf", "oneOf"]);
        let annotation = prop_oneof![
            (Just("title"), pick(vec![json!("t")], vec![json!(1)], m)),
            (
                Just("description"),
                pick(vec![json!("d")], vec![json!([])], m)
            ),
            (
                Just("$comment"),
                pick(vec![json!("c")], vec![Value::Null], m)
            ),
            (
                Just("deprecated"),
                pick(vec![json!(true)], vec![json!("yes")], m)
            ),
            (
                Just("readOnly"),
                pick(vec![json!(false)], vec![json!(0)], m)
            ),
            (
                Just("writeOnly"),
                pick(vec![json!(true)], vec![json!({})], m)
            ),
            (
                Just("examples"),
                pick(vec![json!([1, "x"])], vec![json!(1)], m)
            ),
            (Just("default"), instance().boxed()),
            (
                Just("uniqueItems"),
                pick(vec![json!(true), json!(false)], vec![json!(1)], m)
            ),
        ];
        let lengths = if m == 0 { 1..3 } else { 0..3 };
        prop_oneof![
            3 => types.prop_map(|v| ("type", v)),
            2 => required.prop_map(|v| ("required", v)),
            1 => enumeration.prop_map(|v| ("enum", v)),
            1 => instance().prop_map(|v| ("const", v)),
            3 => (bounded, bound),
            2 => (sized, size),
            1 => annotation,
            3 => (subschema, inner.clone()),
            2 => (
                combinator,
                prop::collection::vec(inner.clone(), lengths).prop_map(Value::Array)
            ),
            3 => prop::collection::vec(("[a-c]", inner), 0..3)
                .prop_map(|m| ("properties", Value::Object(m.into_iter().collect()))),
        ]
    }

    /// Schemas made of plain keywords, with near misses at weight `near_misses` (against 8).
    fn plain_schema(near_misses: u32) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![Just(json!(true)), Just(json!(false)), Just(json!({}))];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop::collection::vec(plain_member(inner.boxed(), near_misses), 1..5).prop_map(object)
        })
    }

    /// A draft URI or none, in the spellings jsonschema knows (with and without `#`, http and
    /// https), plus draft 4 (never plain) and ones it does not know.
    fn plain_uri() -> impl Strategy<Value = Option<&'static str>> {
        prop_oneof![
            4 => Just(None),
            1 => Just(Some("http://json-schema.org/draft-06/schema#")),
            1 => Just(Some("http://json-schema.org/draft-07/schema")),
            1 => Just(Some("https://json-schema.org/draft/2019-09/schema")),
            1 => Just(Some("https://json-schema.org/draft/2020-12/schema")),
            1 => Just(Some("http://json-schema.org/draft/2020-12/schema#")),
            1 => Just(Some("http://json-schema.org/draft-04/schema#")),
            1 => Just(Some("https://json-schema.org/schema")),
            1 => Just(Some("https://example.com/my-draft")),
        ]
    }

    fn with_uri(mut schema: Value, uri: Option<&str>) -> (Value, Draft) {
        if let (Some(uri), Value::Object(members)) = (uri, &mut schema) {
            members.insert("$schema".into(), json!(uri));
        }
        (
            schema,
            uri.map_or_else(Draft::default, Draft::from_schema_uri),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// What `PlainSchema` accepts, jsonschema's meta-schema check and compiler accept.
        #[test]
        fn a_plain_schema_is_one_jsonschema_accepts(schema in plain_schema(1), uri in plain_uri()) {
            let (schema, draft) = with_uri(schema, uri);
            if PlainSchema::compile(&schema, draft).is_some() {
                prop_assert!(jsonschema::meta::validate(&schema).is_ok(), "meta: {}", schema);
                prop_assert!(
                    jsonschema::options().with_draft(draft).build(&schema).is_ok(),
                    "build: {}", schema
                );
            }
        }

        /// The same over the broader generator, whose keywords and values are mostly not plain.
        #[test]
        fn a_plain_schema_is_one_jsonschema_accepts_among_arbitrary_ones(
            schema in schema(),
            uri in draft(),
        ) {
            let (schema, draft) = with_uri(schema, uri);
            if PlainSchema::compile(&schema, draft).is_some() {
                prop_assert!(jsonschema::meta::validate(&schema).is_ok(), "meta: {}", schema);
                prop_assert!(
                    jsonschema::options().with_draft(draft).build(&schema).is_ok(),
                    "build: {}", schema
                );
            }
        }

        /// On every instance, `PlainSchema`'s verdict is jsonschema's, and a rejection comes
        /// with a violation.
        #[test]
        fn a_plain_schema_gives_jsonschemas_verdict(
            schema in plain_schema(0),
            uri in plain_uri(),
            instances in prop::collection::vec(instance(), 1..6),
        ) {
            let (schema, draft) = with_uri(schema, uri);
            let Some(plain) = PlainSchema::compile(&schema, draft) else {
                return Ok(());
            };
            // The SDK reads the draft from `$schema` as `validator_for` does.
            prop_assert!(PlainSchema::detect(&schema).is_some(), "{}", schema);
            let validator = jsonschema::validator_for(&schema).unwrap();
            for instance in &instances {
                let expected = validator.is_valid(instance);
                prop_assert_eq!(plain.is_valid(instance), expected, "{} on {}", schema, instance);
                prop_assert_eq!(plain.validate(instance).is_ok(), expected);
            }
        }
    }

    #[test]
    fn the_plain_generator_yields_plain_schemas_often_enough_to_mean_something() {
        use proptest::strategy::ValueTree as _;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = (plain_schema(1), plain_uri());
        let (mut plain, mut nontrivial) = (0, 0);
        for _ in 0..1000 {
            let (schema, uri) = strategy.new_tree(&mut runner).unwrap().current();
            let (schema, draft) = with_uri(schema, uri);
            if PlainSchema::compile(&schema, draft).is_some() {
                plain += 1;
                if schema.as_object().is_some_and(|m| m.len() >= 2) {
                    nontrivial += 1;
                }
            }
        }
        assert!(plain > 200, "only {plain} of 1000 were plain");
        assert!(
            nontrivial > 50,
            "only {nontrivial} of 1000 had two keywords or more"
        );
    }

    #[test]
    fn plain_schemas_skip_jsonschema_and_others_do_not() {
        let typical = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "additionalProperties": false
        });
        assert!(PlainSchema::compile(&typical, Draft::default()).is_some());
        for not_plain in [
            json!({"pattern": "^a"}),
            json!({"multipleOf": 2}),
            json!({"items": [{"type": "string"}]}),
            json!({"not": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}),
            json!({"minLength": 2.0}),
            json!({"anyOf": []}),
            json!({"type": ["string", "string"]}),
            json!({"required": ["a", "a"]}),
            json!({"enum": []}),
            json!(7),
        ] {
            assert!(
                PlainSchema::compile(&not_plain, Draft::default()).is_none(),
                "{not_plain}"
            );
        }
        // Draft 4 is never plain; its `exclusiveMinimum` is a boolean.
        assert!(PlainSchema::compile(&json!({"type": "string"}), Draft::Draft4).is_none());
        // `$schema` must name the draft it is compiled for.
        let seven = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
        assert!(PlainSchema::compile(&seven, Draft::Draft7).is_some());
        assert!(PlainSchema::compile(&seven, Draft::Draft202012).is_none());
        assert!(PlainSchema::detect(&seven).is_some());
    }

    #[test]
    fn nesting_past_the_depth_limit_is_left_to_jsonschema() {
        let nested = |levels: usize| {
            let mut schema = json!({"type": "string"});
            for _ in 1..levels {
                schema = json!({"not": schema});
            }
            schema
        };
        let deepest = nested(PlainSchema::MAX_DEPTH);
        let plain = PlainSchema::compile(&deepest, Draft::default()).unwrap();
        // An odd number of `not`s around `type: string` accepts exactly the non-strings.
        assert_eq!(plain.is_valid(&json!("s")), PlainSchema::MAX_DEPTH % 2 == 1);
        assert!(
            PlainSchema::compile(&nested(PlainSchema::MAX_DEPTH + 1), Draft::default()).is_none()
        );
    }

    #[test]
    fn numbers_compare_exactly_and_integers_include_integral_floats() {
        let plain = |schema: Value| PlainSchema::compile(&schema, Draft::default()).unwrap();
        let integer = plain(json!({"type": "integer"}));
        assert!(integer.is_valid(&json!(3.0)));
        assert!(integer.is_valid(&json!(1e300)));
        assert!(!integer.is_valid(&json!(2.5)));
        // u64::MAX is below the float 2^64 that `as f64` would round it to.
        let below = plain(json!({"exclusiveMaximum": 1.8446744073709552e19}));
        assert!(below.is_valid(&json!(18_446_744_073_709_551_615_u64)));
        let odd = plain(json!({"maximum": 9_007_199_254_740_992.0}));
        assert!(!odd.is_valid(&json!(9_007_199_254_740_993_u64)));
        let one = plain(json!({"enum": [1.0]}));
        assert!(one.is_valid(&json!(1)));
        assert!(plain(json!({"const": {"a": [0]}})).is_valid(&json!({"a": [-0.0]})));
        // Lengths count code points, not bytes.
        assert!(plain(json!({"maxLength": 2})).is_valid(&json!("😀😀")));
    }

    #[test]
    fn long_arrays_are_checked_for_duplicates_by_hash_with_jsonschemas_verdict() {
        let schema = json!({"uniqueItems": true});
        let plain = PlainSchema::compile(&schema, Draft::default()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut items: Vec<Value> = (0..5000).map(|i| json!(i)).collect();
        items.push(json!({"a": 1, "b": [2]}));
        let distinct = Value::Array(items.clone());
        assert!(plain.is_valid(&distinct) && validator.is_valid(&distinct));
        for duplicate in [json!(4999.0), json!({"b": [2.0], "a": 1}), json!(-0.0)] {
            let mut with = items.clone();
            with.push(duplicate.clone());
            let with = Value::Array(with);
            assert!(!plain.is_valid(&with), "{duplicate}");
            assert!(!validator.is_valid(&with), "{duplicate}");
        }
    }

    #[test]
    fn a_violation_names_the_instance_and_schema_paths() {
        let schema = json!({
            "properties": {"a/b": {"items": {"type": "string"}}},
            "required": ["x"],
        });
        let plain = PlainSchema::compile(&schema, Draft::default()).unwrap();
        let v = plain
            .validate(&json!({"x": 1, "a/b": ["s", 2]}))
            .unwrap_err();
        assert_eq!(v.instance_path, "/a~1b/1");
        assert_eq!(v.schema_path, "/properties/a~1b/items/type");
        assert_eq!(v.message, "2 is not of type \"string\"");
        let v = plain.validate(&json!({})).unwrap_err();
        assert_eq!(
            (v.instance_path.as_str(), v.schema_path.as_str()),
            ("", "/required")
        );
        assert_eq!(v.to_string(), "\"x\" is a required property");
        let closed = json!({"additionalProperties": false});
        let v = PlainSchema::detect(&closed)
            .unwrap()
            .validate(&json!({"z": 1}))
            .unwrap_err();
        assert_eq!(
            (v.instance_path.as_str(), v.schema_path.as_str()),
            ("", "/additionalProperties")
        );
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
