//! The JSON-RPC 2.0 message model and the tolerant-reader classification of inbound objects.

use std::fmt;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Number, Value};

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

/// A request id: a number or a string, echoed back exactly as received.
///
/// A number keeps its original [`serde_json::Number`], so `1`, `-1` and `1.5` round-trip unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id.
    Number(Number),
    /// A string id.
    String(String),
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A call that expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response must echo.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The params; `None` when absent (or `null`) on the wire.
    pub params: Option<Value>,
}

/// A one-way message.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params; `None` when absent (or `null`) on the wire.
    pub params: Option<Value>,
}

/// The answer to a [`Request`].
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered.
    pub id: Id,
    /// `Ok(result)` or `Err(error)`.
    pub outcome: Result<Value, ErrorObject>,
}

/// The `error` member of a failed [`Response`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`codes`], or the peer's own code.
    pub code: i64,
    /// A short human-readable message.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
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

/// Reads a JSON object as a message, tolerating an absent `jsonrpc` and unknown members.
pub fn classify(mut object: Map<String, Value>) -> Classified {
    let looks_like_response = !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"));
    let id = match object.remove("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(Id::Number(n))),
        Some(Value::String(s)) => Ok(Some(Id::String(s))),
        Some(_) => Err(Violation::BadId),
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
    let jsonrpc_absent = match object.get("jsonrpc") {
        None => true,
        Some(Value::String(s)) if s == "2.0" => false,
        Some(_) => return invalid(Violation::WrongJsonrpc, id),
    };
    let message = match object.remove("method") {
        Some(Value::String(method)) => {
            if object.contains_key("result") || object.contains_key("error") {
                return invalid(Violation::MethodWithOutcome, id);
            }
            let params = match object.remove("params") {
                None | Some(Value::Null) => None,
                Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
                Some(_) => return invalid(Violation::BadParams, id),
            };
            match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            }
        }
        Some(_) => return invalid(Violation::MethodNotString, id),
        None => {
            let result = object.remove("result");
            let error = object.remove("error");
            let outcome = match (result, error) {
                (Some(_), Some(_)) => return invalid(Violation::ResultAndError, id),
                (Some(result), None) => Ok(result),
                (None, Some(error)) => match serde_json::from_value::<ErrorObject>(error) {
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
