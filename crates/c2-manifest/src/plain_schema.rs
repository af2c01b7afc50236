//! Plain argument schemas: the JSON Schemas most commands declare, checked and evaluated
//! without building jsonschema's meta-validator.
//!
//! A fresh process that asks jsonschema whether a schema is valid, or compiles one, first
//! builds that draft's meta-schema validator: about 1.5 ms for draft 2020-12, paid by every
//! plugin start. jsonschema offers no public way to compile without that check. Yet a typical
//! `argsSchema` (`type`, `properties`, `required`, `enum`, bounds) needs none of its machinery:
//! [`PlainSchema::compile`] accepts a schema only when every keyword at every depth is in a
//! small set, with a value exactly as its draft's meta-schema allows, and [`PlainSchema::validate`]
//! then evaluates it with jsonschema 0.61's semantics (integer-valued floats are integers,
//! numbers compare by value in `enum`, `const` and `uniqueItems`, lengths count code points,
//! bounds compare exactly across integers and floats). Anything else yields `None`, and the
//! caller uses jsonschema. Differential property tests hold both the acceptance and the
//! verdicts equal to jsonschema's.
//!
//! Accepted drafts: 6, 7, 2019-09 and 2020-12, whose semantics agree on every keyword here.
//! Draft 4 (boolean `exclusiveMinimum`, no boolean schemas) is left to jsonschema.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};

use jsonschema::Draft;
use serde_json::{Map, Number, Value};

use crate::diagnostic::pointer_push;

/// A plain schema, compiled: see the [module docs](self) for what qualifies.
///
/// ```
/// use c2_manifest::plain_schema::PlainSchema;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "text": { "type": "string", "maxLength": 4 } },
///     "required": ["text"],
///     "additionalProperties": false
/// });
/// let plain = PlainSchema::detect(&schema).expect("a plain schema");
/// assert!(plain.validate(&json!({ "text": "hey" })).is_ok());
/// let violation = plain.validate(&json!({ "text": "hello" })).unwrap_err();
/// assert_eq!(violation.instance_path, "/text");
/// assert_eq!(violation.schema_path, "/properties/text/maxLength");
/// // `pattern` is not plain: the caller compiles this one with jsonschema.
/// assert!(PlainSchema::detect(&json!({ "pattern": "^a" })).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct PlainSchema {
    root: Node,
}

/// Why an instance does not satisfy a [`PlainSchema`]: where, by which keyword, and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer to the failing part of the instance (`""` for the whole).
    pub instance_path: String,
    /// JSON pointer to the failing keyword inside the schema.
    pub schema_path: String,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Violation {}

impl PlainSchema {
    /// Deepest nesting of subschemas [`PlainSchema::compile`] accepts; a deeper schema yields
    /// `None` (jsonschema then handles it). It bounds [`PlainSchema::validate`]'s recursion,
    /// which follows the schema, never the instance. Equal to the manifest parser's default
    /// `max_depth`, so no schema a manifest can hold is turned away for depth.
    pub const MAX_DEPTH: usize = 128;

    /// Compiles `schema`, written for `draft`, when it is plain; `None` otherwise (the caller
    /// then uses jsonschema, which decides whether the schema is valid at all). A `Some` is a
    /// promise: jsonschema's meta-schema check and its compiler both accept the schema.
    ///
    /// `$schema` is allowed at the root only, and must name `draft`.
    pub fn compile(schema: &Value, draft: Draft) -> Option<PlainSchema> {
        if !matches!(
            draft,
            Draft::Draft6 | Draft::Draft7 | Draft::Draft201909 | Draft::Draft202012
        ) {
            return None;
        }
        if let Some(uri) = schema.get("$schema") {
            let uri = uri.as_str()?;
            // The version-less URI is left to jsonschema, as is any it does not know.
            if !uri.contains("draft") || Draft::from_schema_uri(uri) != draft {
                return None;
            }
        }
        Some(PlainSchema {
            root: Compiler::default().compile(schema)?,
        })
    }

    /// [`PlainSchema::compile`] with the draft read from `$schema` (draft 2020-12 without
    /// one), as `jsonschema::validator_for` reads it.
    pub fn detect(schema: &Value) -> Option<PlainSchema> {
        let draft = match schema.get("$schema") {
            None => Draft::default(),
            Some(uri) => Draft::from_schema_uri(uri.as_str()?),
        };
        PlainSchema::compile(schema, draft)
    }

    /// Whether `instance` satisfies the schema; [`PlainSchema::validate`] without the report.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.root.check(instance).is_ok()
    }

    /// Checks `instance`, and reports the first violation found. The verdict is jsonschema's;
    /// which violation comes first when there are several, and its wording, are this module's.
    pub fn validate(&self, instance: &Value) -> Result<(), Violation> {
        self.root
            .check(instance)
            .map_err(|failure| (*failure).into_violation())
    }
}

/// A compiled subschema.
#[derive(Debug, Clone)]
enum Node {
    /// `true` accepts everything, `false` nothing.
    Bool(bool),
    Object(Box<Checks>),
}

/// The keywords of one object schema that do something.
#[derive(Debug, Clone, Default)]
struct Checks {
    /// The declared `type`s, in order, and whether each matches a kind is computed per call.
    types: Option<Vec<Kind>>,
    /// Whether `type` was written as an array (it shapes the message only).
    types_array: bool,
    required: Vec<String>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<Num>,
    maximum: Option<Num>,
    exclusive_minimum: Option<Num>,
    exclusive_maximum: Option<Num>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    properties: BTreeMap<String, Node>,
    additional_properties: Option<Node>,
    items: Option<Node>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Node>,
}

/// A JSON Schema type name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Boolean,
    Object,
    Array,
    String,
    Number,
    Integer,
}

impl Kind {
    fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "null" => Kind::Null,
            "boolean" => Kind::Boolean,
            "object" => Kind::Object,
            "array" => Kind::Array,
            "string" => Kind::String,
            "number" => Kind::Number,
            "integer" => Kind::Integer,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "boolean",
            Kind::Object => "object",
            Kind::Array => "array",
            Kind::String => "string",
            Kind::Number => "number",
            Kind::Integer => "integer",
        }
    }

    fn matches(self, instance: &Value) -> bool {
        match (self, instance) {
            (Kind::Null, Value::Null)
            | (Kind::Boolean, Value::Bool(_))
            | (Kind::Object, Value::Object(_))
            | (Kind::Array, Value::Array(_))
            | (Kind::String, Value::String(_))
            | (Kind::Number, Value::Number(_)) => true,
            (Kind::Integer, Value::Number(n)) => is_integer(n),
            _ => false,
        }
    }
}

/// Integers per drafts 6 and later: any number without a fractional part, `3.0` included.
fn is_integer(n: &Number) -> bool {
    n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Turns schema values into [`Node`]s, refusing (with `None`) anything not plain.
#[derive(Default)]
struct Compiler {
    depth: usize,
}

impl Compiler {
    fn compile(&mut self, schema: &Value) -> Option<Node> {
        let members = match schema {
            Value::Bool(b) => return Some(Node::Bool(*b)),
            Value::Object(members) => members,
            _ => return None,
        };
        if self.depth >= PlainSchema::MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let checks = self.checks(members, self.depth == 1);
        self.depth -= 1;
        Some(Node::Object(Box::new(checks?)))
    }

    fn checks(&mut self, members: &Map<String, Value>, root: bool) -> Option<Checks> {
        let mut c = Checks::default();
        for (key, value) in members {
            match key.as_str() {
                // Matched against the draft by the caller.
                "$schema" if root => {}
                "type" => {
                    let (types, array) = types(value)?;
                    c.types = Some(types);
                    c.types_array = array;
                }
                "required" => c.required = unique_strings(value)?,
                "enum" => {
                    let values = value.as_array().filter(|v| !v.is_empty() && unique(v))?;
                    c.enumeration = Some(values.clone());
                }
                "const" => c.constant = Some(value.clone()),
                "minimum" => c.minimum = Some(Num::of(value)?),
                "maximum" => c.maximum = Some(Num::of(value)?),
                "exclusiveMinimum" => c.exclusive_minimum = Some(Num::of(value)?),
                "exclusiveMaximum" => c.exclusive_maximum = Some(Num::of(value)?),
                "minLength" => c.min_length = Some(value.as_u64()?),
                "maxLength" => c.max_length = Some(value.as_u64()?),
                "minItems" => c.min_items = Some(value.as_u64()?),
                "maxItems" => c.max_items = Some(value.as_u64()?),
                "minProperties" => c.min_properties = Some(value.as_u64()?),
                "maxProperties" => c.max_properties = Some(value.as_u64()?),
                "uniqueItems" => c.unique_items = value.as_bool()?,
                "title" | "description" | "$comment" => {
                    value.as_str()?;
                }
                "deprecated" | "readOnly" | "writeOnly" => {
                    value.as_bool()?;
                }
                "examples" => {
                    value.as_array()?;
                }
                "default" => {}
                "properties" => {
                    for (name, schema) in value.as_object()? {
                        let node = self.compile(schema)?;
                        c.properties.insert(name.clone(), node);
                    }
                }
                "additionalProperties" => c.additional_properties = Some(self.compile(value)?),
                // The array (tuple) form differs between drafts; it is left to jsonschema.
                "items" => c.items = Some(self.compile(value)?),
                "not" => c.not = Some(self.compile(value)?),
                "allOf" => c.all_of = self.schema_array(value)?,
                "anyOf" => c.any_of = self.schema_array(value)?,
                "oneOf" => c.one_of = self.schema_array(value)?,
                _ => return None,
            }
        }
        Some(c)
    }

    /// A non-empty array of schemas.
    fn schema_array(&mut self, value: &Value) -> Option<Vec<Node>> {
        let schemas = value.as_array().filter(|s| !s.is_empty())?;
        schemas.iter().map(|s| self.compile(s)).collect()
    }
}

/// `type`: a known name, or a non-empty array of unique known names.
fn types(value: &Value) -> Option<(Vec<Kind>, bool)> {
    match value {
        Value::String(name) => Some((vec![Kind::parse(name)?], false)),
        Value::Array(names) if !names.is_empty() => {
            let mut kinds = Vec::with_capacity(names.len());
            for name in names {
                let kind = Kind::parse(name.as_str()?)?;
                if kinds.contains(&kind) {
                    return None;
                }
                kinds.push(kind);
            }
            Some((kinds, true))
        }
        _ => None,
    }
}

/// `required`: an array of unique strings (empty allowed).
fn unique_strings(value: &Value) -> Option<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for name in value.as_array()? {
        let name = name.as_str()?;
        if names.iter().any(|n| n == name) {
            return None;
        }
        names.push(name.to_owned());
    }
    Some(names)
}

/// A JSON number as serde_json holds it, compared exactly across representations.
#[derive(Debug, Clone, Copy)]
enum Num {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

impl Num {
    /// A schema bound: a number (serde_json's are always finite).
    fn of(value: &Value) -> Option<Num> {
        match value {
            Value::Number(n) => Num::from_number(n),
            _ => None,
        }
    }

    fn from_number(n: &Number) -> Option<Num> {
        if let Some(u) = n.as_u64() {
            Some(Num::Unsigned(u))
        } else if let Some(i) = n.as_i64() {
            Some(Num::Signed(i))
        } else {
            n.as_f64().filter(|f| f.is_finite()).map(Num::Float)
        }
    }

    /// The exact order of two numbers; an integer and a float compare by value, not by the
    /// float nearest the integer.
    fn cmp(self, other: Num) -> Ordering {
        match (self.split(), other.split()) {
            (Ok(a), Ok(b)) => a.cmp(&b),
            (Ok(a), Err(b)) => cmp_int_float(a, b),
            (Err(a), Ok(b)) => cmp_int_float(b, a).reverse(),
            (Err(a), Err(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        }
    }

    /// The integer, or the float.
    fn split(self) -> Result<i128, f64> {
        match self {
            Num::Unsigned(u) => Ok(i128::from(u)),
            Num::Signed(i) => Ok(i128::from(i)),
            Num::Float(f) => Err(f),
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Unsigned(u) => write!(f, "{u}"),
            Num::Signed(i) => write!(f, "{i}"),
            Num::Float(x) => write!(f, "{x}"),
        }
    }
}

/// 2^127 as an `f64`: past every `i128` that a `u64` or `i64` can hold.
const TWO_POW_127: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;

/// Compares integer `a` with finite float `b` exactly.
fn cmp_int_float(a: i128, b: f64) -> Ordering {
    if b >= TWO_POW_127 {
        return Ordering::Less;
    }
    if b < -TWO_POW_127 {
        return Ordering::Greater;
    }
    let whole = b.trunc();
    // |whole| < 2^127 and it has no fractional part, so the cast is exact.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "|whole| < 2^127 and integral: exact"
    )]
    let whole_int = whole as i128;
    match a.cmp(&whole_int) {
        Ordering::Equal if b > whole => Ordering::Less,
        Ordering::Equal if b < whole => Ordering::Greater,
        order => order,
    }
}

/// Equality as JSON Schema defines it: numbers by value (`1 == 1.0`), objects regardless of
/// member order. Recursion follows the values' depth, which the JSON parser that built them
/// bounds (serde_json: 128).
fn equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(a), Value::Number(b)) => match (Num::from_number(a), Num::from_number(b)) {
            (Some(a), Some(b)) => a.cmp(b) == Ordering::Equal,
            _ => false,
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| equal(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => false,
    }
}

/// Arrays up to this long are checked for duplicates pair by pair; longer ones by hash.
const PAIRWISE_UNIQUE: usize = 16;

/// Whether no two items are [`equal`]: pairwise for short arrays, through a hash consistent
/// with [`equal`] for long ones, so an 8 MiB array costs linear time, not quadratic.
fn unique(items: &[Value]) -> bool {
    if items.len() <= PAIRWISE_UNIQUE {
        return items
            .iter()
            .enumerate()
            .all(|(i, a)| items[i + 1..].iter().all(|b| !equal(a, b)));
    }
    let state = RandomState::new();
    let mut buckets: HashMap<u64, Vec<&Value>> = HashMap::with_capacity(items.len());
    for item in items {
        let bucket = buckets.entry(hash_value(&state, item)).or_default();
        if bucket.iter().any(|other| equal(item, other)) {
            return false;
        }
        bucket.push(item);
    }
    true
}

/// A hash under which [`equal`] values collide: integral numbers hash as their integer, member
/// order does not count.
fn hash_value(state: &RandomState, value: &Value) -> u64 {
    let mut hasher = state.build_hasher();
    match value {
        Value::Null => 0u8.hash(&mut hasher),
        Value::Bool(b) => (1u8, b).hash(&mut hasher),
        Value::String(s) => (2u8, s).hash(&mut hasher),
        Value::Number(n) => {
            3u8.hash(&mut hasher);
            match Num::from_number(n) {
                Some(Num::Unsigned(u)) => i128::from(u).hash(&mut hasher),
                Some(Num::Signed(i)) => i128::from(i).hash(&mut hasher),
                Some(Num::Float(f)) if f.fract() == 0.0 && f.abs() < TWO_POW_127 => {
                    // Exact: integral and within range. `-0.0` becomes 0, as `equal` has it.
                    #[allow(
                        clippy::cast_possible_truncation,
                        reason = "integral and below 2^127: exact"
                    )]
                    (f as i128).hash(&mut hasher);
                }
                Some(Num::Float(f)) => f.to_bits().hash(&mut hasher),
                None => {}
            }
        }
        Value::Array(items) => {
            4u8.hash(&mut hasher);
            for item in items {
                hash_value(state, item).hash(&mut hasher);
            }
        }
        Value::Object(members) => {
            5u8.hash(&mut hasher);
            let mut sum = 0u64;
            for (key, value) in members {
                let mut member = state.build_hasher();
                key.hash(&mut member);
                hash_value(state, value).hash(&mut member);
                sum = sum.wrapping_add(member.finish());
            }
            sum.hash(&mut hasher);
        }
    }
    hasher.finish()
}

/// A violation being reported: paths gathered innermost first while the check unwinds.
struct Failure {
    instance: Vec<String>,
    schema: Vec<String>,
    message: String,
}

impl Failure {
    fn new(keyword: &str, message: String) -> Box<Failure> {
        Box::new(Failure {
            instance: Vec::new(),
            schema: vec![keyword.to_owned()],
            message,
        })
    }

    fn into_violation(self) -> Violation {
        Violation {
            instance_path: pointer(&self.instance),
            schema_path: pointer(&self.schema),
            message: self.message,
        }
    }
}

/// Segments (innermost first) as a JSON pointer.
fn pointer(segments: &[String]) -> String {
    segments
        .iter()
        .rev()
        .fold(String::new(), |out, segment| pointer_push(&out, segment))
}

/// Adds one level of instance and schema path to a failure from below.
fn within(failure: Box<Failure>, instance: Option<&str>, schema: &[&str]) -> Box<Failure> {
    let mut failure = failure;
    if let Some(segment) = instance {
        failure.instance.push(segment.to_owned());
    }
    failure
        .schema
        .extend(schema.iter().rev().map(|s| (*s).to_owned()));
    failure
}

/// Strings longer than this many characters are named by their length in messages, not
/// quoted, so a message stays short whatever the instance.
const QUOTED_STRING_CHARS: usize = 64;

/// The instance as a message shows it: scalars as JSON, short strings quoted, the rest by kind.
fn shown(instance: &Value) -> String {
    match instance {
        Value::String(s) if s.chars().count() > QUOTED_STRING_CHARS => {
            format!("a string of {} characters", s.chars().count())
        }
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(members) => format!("an object with {} properties", members.len()),
        scalar => scalar.to_string(),
    }
}

type Checked = Result<(), Box<Failure>>;

impl Node {
    /// Evaluates the node. Recursion follows the compiled schema, whose depth
    /// [`PlainSchema::MAX_DEPTH`] bounds.
    fn check(&self, instance: &Value) -> Checked {
        match self {
            Node::Bool(true) => Ok(()),
            Node::Bool(false) => Err(Box::new(Failure {
                instance: Vec::new(),
                schema: Vec::new(),
                message: format!("no value is allowed here; found {}", shown(instance)),
            })),
            Node::Object(checks) => checks.check(instance),
        }
    }
}

impl Checks {
    fn check(&self, instance: &Value) -> Checked {
        self.check_type(instance)?;
        self.check_values(instance)?;
        match instance {
            Value::Number(n) => self.check_number(n)?,
            Value::String(s) => self.check_string(s)?,
            Value::Array(items) => self.check_array(items)?,
            Value::Object(members) => self.check_object(members)?,
            _ => {}
        }
        self.check_combinators(instance)
    }

    fn check_type(&self, instance: &Value) -> Checked {
        let Some(types) = &self.types else {
            return Ok(());
        };
        if types.iter().any(|kind| kind.matches(instance)) {
            return Ok(());
        }
        let names: Vec<String> = types.iter().map(|k| format!("\"{}\"", k.name())).collect();
        let message = if self.types_array {
            format!("{} is not of types {}", shown(instance), names.join(", "))
        } else {
            format!("{} is not of type {}", shown(instance), names.join(", "))
        };
        Err(Failure::new("type", message))
    }

    fn check_values(&self, instance: &Value) -> Checked {
        if let Some(values) = &self.enumeration
            && !values.iter().any(|v| equal(v, instance))
        {
            return Err(Failure::new(
                "enum",
                format!("{} is not one of the values `enum` lists", shown(instance)),
            ));
        }
        if let Some(value) = &self.constant
            && !equal(value, instance)
        {
            return Err(Failure::new(
                "const",
                format!("{} is not the value `const` names", shown(instance)),
            ));
        }
        Ok(())
    }

    fn check_number(&self, n: &Number) -> Checked {
        let Some(value) = Num::from_number(n) else {
            return Ok(());
        };
        let bounds = [
            ("minimum", self.minimum, Ordering::Less, "less than"),
            ("maximum", self.maximum, Ordering::Greater, "greater than"),
        ];
        for (keyword, limit, wrong, words) in bounds {
            if let Some(limit) = limit
                && value.cmp(limit) == wrong
            {
                return Err(Failure::new(
                    keyword,
                    format!("{value} is {words} the {keyword} of {limit}"),
                ));
            }
        }
        let exclusive = [
            (
                "exclusiveMinimum",
                self.exclusive_minimum,
                Ordering::Greater,
                "less than or equal to",
            ),
            (
                "exclusiveMaximum",
                self.exclusive_maximum,
                Ordering::Less,
                "greater than or equal to",
            ),
        ];
        for (keyword, limit, right, words) in exclusive {
            if let Some(limit) = limit
                && value.cmp(limit) != right
            {
                return Err(Failure::new(
                    keyword,
                    format!("{value} is {words} the {keyword} of {limit}"),
                ));
            }
        }
        Ok(())
    }

    fn check_string(&self, s: &str) -> Checked {
        if self.min_length.is_none() && self.max_length.is_none() {
            return Ok(());
        }
        let length = s.chars().count() as u64;
        if let Some(min) = self.min_length
            && length < min
        {
            return Err(Failure::new(
                "minLength",
                format!("a string of {length} characters is shorter than {min}"),
            ));
        }
        if let Some(max) = self.max_length
            && length > max
        {
            return Err(Failure::new(
                "maxLength",
                format!("a string of {length} characters is longer than {max}"),
            ));
        }
        Ok(())
    }

    fn check_array(&self, items: &[Value]) -> Checked {
        let count = items.len() as u64;
        if let Some(min) = self.min_items
            && count < min
        {
            return Err(Failure::new(
                "minItems",
                format!("an array of {count} items has fewer than {min}"),
            ));
        }
        if let Some(max) = self.max_items
            && count > max
        {
            return Err(Failure::new(
                "maxItems",
                format!("an array of {count} items has more than {max}"),
            ));
        }
        if self.unique_items && !unique(items) {
            return Err(Failure::new(
                "uniqueItems",
                "the array's items are not unique".to_owned(),
            ));
        }
        if let Some(schema) = &self.items {
            for (index, item) in items.iter().enumerate() {
                schema
                    .check(item)
                    .map_err(|f| within(f, Some(&index.to_string()), &["items"]))?;
            }
        }
        Ok(())
    }

    fn check_object(&self, members: &Map<String, Value>) -> Checked {
        let count = members.len() as u64;
        if let Some(min) = self.min_properties
            && count < min
        {
            return Err(Failure::new(
                "minProperties",
                format!("an object with {count} properties has fewer than {min}"),
            ));
        }
        if let Some(max) = self.max_properties
            && count > max
        {
            return Err(Failure::new(
                "maxProperties",
                format!("an object with {count} properties has more than {max}"),
            ));
        }
        if let Some(missing) = self
            .required
            .iter()
            .find(|name| !members.contains_key(*name))
        {
            return Err(Failure::new(
                "required",
                format!("\"{missing}\" is a required property"),
            ));
        }
        for (name, value) in members {
            if let Some(schema) = self.properties.get(name) {
                schema
                    .check(value)
                    .map_err(|f| within(f, Some(name), &["properties", name]))?;
            } else if let Some(schema) = &self.additional_properties {
                if matches!(schema, Node::Bool(false)) {
                    return Err(Failure::new(
                        "additionalProperties",
                        format!(
                            "additional properties are not allowed (\"{name}\" was unexpected)"
                        ),
                    ));
                }
                schema
                    .check(value)
                    .map_err(|f| within(f, Some(name), &["additionalProperties"]))?;
            }
        }
        Ok(())
    }

    fn check_combinators(&self, instance: &Value) -> Checked {
        for (index, schema) in self.all_of.iter().enumerate() {
            schema
                .check(instance)
                .map_err(|f| within(f, None, &["allOf", &index.to_string()]))?;
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| s.check(instance).is_ok()) {
            return Err(Failure::new(
                "anyOf",
                format!(
                    "{} is valid under none of `anyOf`'s schemas",
                    shown(instance)
                ),
            ));
        }
        if !self.one_of.is_empty() {
            let valid = self
                .one_of
                .iter()
                .filter(|s| s.check(instance).is_ok())
                .take(2)
                .count();
            if valid != 1 {
                let words = if valid == 0 { "none" } else { "more than one" };
                return Err(Failure::new(
                    "oneOf",
                    format!(
                        "{} is valid under {words} of `oneOf`'s schemas",
                        shown(instance)
                    ),
                ));
            }
        }
        if let Some(schema) = &self.not
            && schema.check(instance).is_ok()
        {
            return Err(Failure::new(
                "not",
                format!(
                    "{} is valid under the schema `not` forbids",
                    shown(instance)
                ),
            ));
        }
        Ok(())
    }
}
