//! The JSON-RPC 2.0 message model and the tolerant-reader classification of inbound objects.
//!
//! Classification reads only the envelope: `id`, `jsonrpc`, `method`, `params`, `result` and
//! `error` are borrowed as raw JSON text from the line, unknown members are skipped without
//! being built, and `params` and `result` stay raw ([`RawValue`]) for whoever consumes them. So
//! decoding a frame costs about one copy of its params or result, never a `Value` tree of a
//! document the other side chose (decisions.md "Hostile plugins": at most 4x the frame).

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::de::IgnoredAny;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::frame::DropReason;

/// The error codes this protocol uses (decisions.md "Processes and the wire").
pub mod codes {
    /// The object is not a valid request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist here.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The command ran and failed.
    pub const COMMAND_FAILED: i64 = -32000;
    /// No command of that name is registered.
    pub const UNKNOWN_COMMAND: i64 = -32001;
    /// The command is not extension-public, or is blocked in this realm.
    pub const COMMAND_NOT_PUBLIC: i64 = -32002;
    /// Too many concurrent requests; try again later.
    pub const HOST_BUSY: i64 = -32003;
}

/// A request id: a number or a string, kept as the exact JSON text it arrived as and echoed
/// back byte for byte (`12345678901234567890123`, `-0`, `1E2` and `"\u00e9"` included); it is
/// never read through a float. A plain unsigned integer (the host's own ids) is held as a
/// number, so correlating a response allocates nothing.
#[derive(Debug, Clone)]
pub struct Id(IdRepr);

#[derive(Debug, Clone)]
enum IdRepr {
    /// Text that is exactly the decimal rendering of this number.
    Plain(u64),
    /// Any other number or string, as its JSON text.
    Raw(Box<RawValue>),
}

/// The number whose decimal rendering `text` is exactly (no sign, no leading zero, no
/// fraction or exponent).
fn plain_u64(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && !(text.len() > 1 && text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}

impl Id {
    /// The id whose JSON text is `text`, if that is a JSON number or string.
    pub fn from_json(text: &str) -> Option<Id> {
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        Id::from_borrowed(raw)
    }

    fn from_borrowed(raw: &RawValue) -> Option<Id> {
        if let Some(n) = plain_u64(raw.get()) {
            return Some(Id(IdRepr::Plain(n)));
        }
        match raw.get().as_bytes().first() {
            Some(b'"' | b'-' | b'0'..=b'9') => Some(Id(IdRepr::Raw(raw.to_owned()))),
            _ => None,
        }
    }

    /// The id's JSON text, exactly as received (or as built).
    pub fn as_json(&self) -> std::borrow::Cow<'_, str> {
        match &self.0 {
            IdRepr::Plain(n) => std::borrow::Cow::Owned(n.to_string()),
            IdRepr::Raw(raw) => std::borrow::Cow::Borrowed(raw.get()),
        }
    }

    /// True for a string id.
    pub fn is_string(&self) -> bool {
        matches!(&self.0, IdRepr::Raw(raw) if raw.get().starts_with('"'))
    }

    /// The id as an unsigned integer, when its text is one written plainly (`7`, not `7.0`).
    pub fn as_u64(&self) -> Option<u64> {
        match &self.0 {
            IdRepr::Plain(n) => Some(*n),
            IdRepr::Raw(_) => None,
        }
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (IdRepr::Plain(a), IdRepr::Plain(b)) => a == b,
            (IdRepr::Raw(a), IdRepr::Raw(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

impl Eq for Id {}

impl Hash for Id {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            IdRepr::Plain(n) => n.hash(state),
            IdRepr::Raw(raw) => raw.get().hash(state),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            IdRepr::Plain(n) => serializer.serialize_u64(*n),
            IdRepr::Raw(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Id::from_borrowed(&raw)
            .ok_or_else(|| serde::de::Error::custom("an id must be a number or a string"))
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id(IdRepr::Plain(n))
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        // Cannot fail: the text is serde_json's own rendering of a string.
        let text = serde_json::Value::from(s).to_string();
        Id(IdRepr::Raw(
            RawValue::from_string(text).expect("serde_json renders valid JSON"),
        ))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            IdRepr::Plain(n) => write!(f, "{n}"),
            IdRepr::Raw(raw) => f.write_str(raw.get()),
        }
    }
}

/// Raw JSON params or a result: the exact text of the value, parsed only by its consumer.
pub type RawJson = Box<RawValue>;

/// Serializes `value` as raw JSON text (for building messages and tests).
pub fn to_raw(value: &impl Serialize) -> Result<RawJson, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

/// Reads raw params (or a result) as `T`; absent params read as `null`.
pub fn from_raw<T: serde::de::DeserializeOwned>(
    raw: Option<&RawValue>,
) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.map_or("null", RawValue::get))
}

/// Bytes charged per JSON value by [`value_tree_cost`]: a `Value` (32 bytes) plus its share of
/// the vector or map holding it, with growth slack.
const BYTES_PER_VALUE: usize = 80;

/// An upper estimate, in bytes, of the memory a `serde_json::Value` tree of this JSON text
/// would take, found by one scan without building anything: every value and key costs
/// 80 bytes (`BYTES_PER_VALUE`), plus the text itself for string contents. A document of 8 MiB of
/// `[0,0,...]` costs about 320 MiB as a tree; checking this first lets a consumer refuse it.
pub fn value_tree_cost(json: &str) -> usize {
    let bytes = json.as_bytes();
    let mut values = 1usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            // A string's contents are skipped a word at a time up to its closing quote: only a
            // quote or a backslash can end the run, and an escaped byte is never the end.
            b'"' => loop {
                match crate::scan::find_either(b'"', b'\\', &bytes[i..]) {
                    None => {
                        i = bytes.len();
                        break;
                    }
                    Some(k) if bytes[i + k] == b'\\' => i = (i + k + 2).min(bytes.len()),
                    Some(k) => {
                        i += k + 1;
                        break;
                    }
                }
            },
            b',' | b'[' | b'{' | b':' => values += 1,
            _ => {}
        }
    }
    values
        .saturating_mul(BYTES_PER_VALUE)
        .saturating_add(json.len())
}

fn raw_eq(a: &Option<RawJson>, b: &Option<RawJson>) -> bool {
    a.as_ref().map(|r| r.get()) == b.as_ref().map(|r| r.get())
}

/// A call that expects a response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The id the response must echo.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The params as raw JSON (an object or an array); `None` when absent (or `null`).
    pub params: Option<RawJson>,
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.method == other.method && raw_eq(&self.params, &other.params)
    }
}

/// A one-way message.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params as raw JSON (an object or an array); `None` when absent (or `null`).
    pub params: Option<RawJson>,
}

impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && raw_eq(&self.params, &other.params)
    }
}

/// The answer to a [`Request`].
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered.
    pub id: Id,
    /// `Ok(result)` as raw JSON, or `Err(error)`.
    pub outcome: Result<RawJson, ErrorObject>,
}

impl PartialEq for Response {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && match (&self.outcome, &other.outcome) {
                (Ok(a), Ok(b)) => a.get() == b.get(),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
    }
}

/// The `error` member of a failed [`Response`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`codes`], or the peer's own code.
    pub code: i64,
    /// A short human-readable message.
    pub message: String,
    /// Optional structured detail, as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<RawJson>,
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message && raw_eq(&self.data, &other.data)
    }
}

impl ErrorObject {
    /// The `-32003` answer to a request over a peer's handler bounds, with the error kind
    /// `host_busy` in `data` (the kind a host error of the same cause carries), so a client
    /// reads one field.
    pub(crate) fn host_busy(message: String) -> Self {
        Self {
            code: codes::HOST_BUSY,
            message,
            data: serde_json::value::RawValue::from_string(r#"{"kind":"host_busy"}"#.to_owned())
                .ok(),
        }
    }

    /// An error without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// Any JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A call expecting a response.
    Request(Request),
    /// A one-way message.
    Notification(Notification),
    /// The answer to a request.
    Response(Response),
}

impl From<Request> for Message {
    fn from(m: Request) -> Self {
        Message::Request(m)
    }
}

impl From<Notification> for Message {
    fn from(m: Notification) -> Self {
        Message::Notification(m)
    }
}

impl From<Response> for Message {
    fn from(m: Response) -> Self {
        Message::Response(m)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
            }
        }
        map.end()
    }
}

/// A JSON object that is not a valid JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    /// The id to answer with `-32600`: set only when the object carried a usable id and does not
    /// look like a response (a response is never answered).
    pub answer_to: Option<Id>,
    /// What is wrong with it.
    pub violation: Violation,
}

/// Why an object is not a valid JSON-RPC 2.0 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// `jsonrpc` is present but not the string `"2.0"`.
    WrongJsonrpc,
    /// `id` is neither a number nor a string.
    BadId,
    /// `method` is not a string.
    MethodNotString,
    /// `params` is neither an object nor an array.
    BadParams,
    /// The object has both `method` and `result`/`error`.
    MethodWithOutcome,
    /// A response without `id`, or with a `null` id.
    ResponseWithoutId,
    /// A response with both `result` and `error`.
    ResultAndError,
    /// `error` is not `{code: integer, message: string, data?}`.
    BadErrorObject,
    /// Neither `method` nor `result`/`error`.
    NoMethodOrOutcome,
    /// A member of the envelope (`id`, `method`, ...) appears twice.
    DuplicateMember,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Violation::WrongJsonrpc => "`jsonrpc` must be \"2.0\"",
            Violation::BadId => "`id` must be a number or a string",
            Violation::MethodNotString => "`method` must be a string",
            Violation::BadParams => "`params` must be an object or an array",
            Violation::MethodWithOutcome => {
                "a message cannot have both `method` and `result`/`error`"
            }
            Violation::ResponseWithoutId => "a response needs a non-null `id`",
            Violation::ResultAndError => "a response cannot have both `result` and `error`",
            Violation::BadErrorObject => {
                "`error` must be an object with an integer `code` and a string `message`"
            }
            Violation::NoMethodOrOutcome => "the object has neither `method` nor `result`/`error`",
            Violation::DuplicateMember => "a member of the message appears more than once",
        })
    }
}

/// The outcome of reading one JSON object as a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Classified {
    /// A valid message.
    Message {
        /// The message.
        message: Message,
        /// `jsonrpc` was absent (tolerated; the peer warns once per connection).
        jsonrpc_absent: bool,
    },
    /// A well-formed object of the wrong shape.
    Invalid(InvalidMessage),
}

/// The envelope of a message, borrowed from its line: nothing but these members is looked at,
/// and the rest are skipped without being built.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A member that is present, `null` included (a plain `Option` would read `null` as absent,
/// and `"result": null` is a result).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

/// Reads one line of JSON text as a message, tolerating an absent `jsonrpc` and unknown
/// members. `Err` says why the text is not a message object at all (not JSON, not an object).
///
/// Only the envelope is parsed; `params` and `result` are copied once as raw text, so the cost
/// is bounded by the line's size whatever its shape.
pub fn classify(text: &str) -> Result<Classified, DropReason> {
    // Tells apart not JSON and not an object without building anything. (The check on `{`
    // comes first: serde would read a struct from an array too.)
    let not_a_message = || match serde_json::from_str::<IgnoredAny>(text) {
        Ok(_) => DropReason::NotObject,
        Err(_) => DropReason::NotJson,
    };
    if !text.trim_start().starts_with('{') {
        return Err(not_a_message());
    }
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => Ok(classify_envelope(&envelope)),
        Err(_) => match not_a_message() {
            // A JSON object the envelope refused has a member twice.
            DropReason::NotObject => Ok(Classified::Invalid(InvalidMessage {
                answer_to: None,
                violation: Violation::DuplicateMember,
            })),
            reason => Err(reason),
        },
    }
}

fn is_null(raw: Option<&RawValue>) -> bool {
    raw.is_none_or(|r| r.get() == "null")
}

fn classify_envelope(e: &Envelope<'_>) -> Classified {
    let looks_like_response = e.method.is_none() && (e.result.is_some() || e.error.is_some());
    let id = match e.id {
        None => Ok(None),
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) => Id::from_borrowed(raw).map(Some).ok_or(Violation::BadId),
    };
    let invalid = |violation, id: Option<Id>| {
        Classified::Invalid(InvalidMessage {
            answer_to: if looks_like_response { None } else { id },
            violation,
        })
    };
    let id = match id {
        Ok(id) => id,
        Err(v) => return invalid(v, None),
    };
    let jsonrpc_absent = match e.jsonrpc {
        None => true,
        Some(raw) if raw.get() == "\"2.0\"" => false,
        Some(raw) if serde_json::from_str::<&str>(raw.get()).is_ok_and(|s| s == "2.0") => false,
        Some(raw) if serde_json::from_str::<String>(raw.get()).is_ok_and(|s| s == "2.0") => false,
        Some(_) => return invalid(Violation::WrongJsonrpc, id),
    };
    let message = match e.method {
        Some(raw) => {
            let Ok(method) = serde_json::from_str::<String>(raw.get()) else {
                return invalid(Violation::MethodNotString, id);
            };
            if e.result.is_some() || e.error.is_some() {
                return invalid(Violation::MethodWithOutcome, id);
            }
            let params = match e.params {
                p if is_null(p) => None,
                Some(p) if matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => {
                    Some(p.to_owned())
                }
                Some(_) => return invalid(Violation::BadParams, id),
                None => None,
            };
            match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            }
        }
        None => {
            let outcome = match (e.result, e.error) {
                (Some(_), Some(_)) => return invalid(Violation::ResultAndError, id),
                (Some(result), None) => Ok(result.to_owned()),
                (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
                    Ok(e) => Err(e),
                    Err(_) => return invalid(Violation::BadErrorObject, id),
                },
                (None, None) => return invalid(Violation::NoMethodOrOutcome, id),
            };
            let Some(id) = id else {
                return invalid(Violation::ResponseWithoutId, None);
            };
            Message::Response(Response { id, outcome })
        }
    };
    Classified::Message {
        message,
        jsonrpc_absent,
    }
}
