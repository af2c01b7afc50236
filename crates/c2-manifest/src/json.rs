//! A small JSON parser that remembers where everything is.
//!
//! serde_json gives no positions and keeps the last of two duplicate keys without a word, so
//! the validators parse with this instead: every value and key keeps its byte offset, duplicate
//! keys, a byte-order mark and over-deep nesting become diagnostics, and the parser is an
//! explicit state machine over a stack, so `[[[[…` of any length cannot exhaust the call stack.
//! Recursion elsewhere in the crate (conversion, drop) is bounded by the nesting limit.
//! Strings and keys without escapes borrow from the source: most of a manifest is copied
//! nowhere.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::diagnostic::{Sink, pointer_push};

/// A parsed value with the byte offset where it starts in the source `'s`.
#[derive(Debug, Clone)]
pub(crate) struct Node<'s> {
    pub(crate) value: Value<'s>,
    pub(crate) start: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum Value<'s> {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(Cow<'s, str>),
    Array(Vec<Node<'s>>),
    Object(Vec<Member<'s>>),
}

/// One `"key": value` pair; only the first of duplicate keys is kept.
#[derive(Debug, Clone)]
pub(crate) struct Member<'s> {
    pub(crate) key: Cow<'s, str>,
    pub(crate) key_start: usize,
    pub(crate) value: Node<'s>,
}

impl<'s> Node<'s> {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn as_object(&self) -> Option<&[Member<'s>]> {
        match &self.value {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&[Node<'s>]> {
        match &self.value {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Node<'s>> {
        self.as_object()?
            .iter()
            .find(|m| m.key == key)
            .map(|m| &m.value)
    }

    /// A short noun for messages: "a string", "an object", ...
    pub(crate) fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }

    /// The same value as serde_json sees it; depth is bounded by the parser's nesting limit.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match &self.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::Value::Number(n.clone()),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(Node::to_json).collect())
            }
            Value::Object(members) => serde_json::Value::Object(
                members
                    .iter()
                    .map(|m| (m.key.to_string(), m.value.to_json()))
                    .collect(),
            ),
        }
    }
}

enum Frame<'s> {
    Array {
        start: usize,
        items: Vec<Node<'s>>,
    },
    Object {
        start: usize,
        members: Vec<Member<'s>>,
        /// The keys so far, once the object has more than [`SCANNED_KEYS`] of them.
        seen: HashSet<Cow<'s, str>>,
        key: Cow<'s, str>,
        key_start: usize,
    },
}

/// Up to this many members, a duplicate key is found by comparing with each (no hashing, no
/// copy of the key); past it, every key goes into a set, so a hostile object of many keys
/// still costs linear time.
const SCANNED_KEYS: usize = 16;

/// Whether `key` is the first of its name in the object whose members so far are `members`.
#[expect(
    clippy::ptr_arg,
    reason = "the set keeps a copy of the `Cow`, which borrows from the source when it can"
)]
fn first_key<'s>(
    members: &[Member<'s>],
    seen: &mut HashSet<Cow<'s, str>>,
    key: &Cow<'s, str>,
) -> bool {
    if members.len() < SCANNED_KEYS {
        return members.iter().all(|member| member.key != *key);
    }
    if seen.is_empty() {
        seen.extend(members.iter().map(|member| member.key.clone()));
    }
    seen.insert(key.clone())
}

/// Parses `source` into a tree, reporting problems into `sink`.
///
/// A leading byte-order mark is reported and skipped so the rest of the document is still
/// checked; a syntax error or over-deep nesting stops the parse and yields `None`.
pub(crate) fn parse<'s>(
    source: &'s str,
    max_depth: usize,
    sink: &mut Sink<'_>,
) -> Option<Node<'s>> {
    let mut parser = Parser {
        text: source,
        src: source.as_bytes(),
        pos: 0,
        max_depth,
    };
    if source.starts_with('\u{feff}') {
        sink.error(
            "byte-order-mark",
            "",
            0,
            "the file starts with a UTF-8 byte-order mark",
            Some("save the file as UTF-8 without a byte-order mark"),
        );
        parser.pos = '\u{feff}'.len_utf8();
    }
    match parser.run(sink) {
        Ok(node) => Some(node),
        Err(Failure {
            offset,
            code,
            message,
            help,
        }) => {
            sink.error(code, "", offset, message, help);
            None
        }
    }
}

struct Failure {
    offset: usize,
    code: &'static str,
    message: String,
    help: Option<&'static str>,
}

struct Parser<'s> {
    /// The source, and the same as bytes.
    text: &'s str,
    src: &'s [u8],
    pos: usize,
    max_depth: usize,
}

type Step<T> = Result<T, Failure>;

impl<'s> Parser<'s> {
    fn fail<T>(
        &self,
        offset: usize,
        message: impl Into<String>,
        help: Option<&'static str>,
    ) -> Step<T> {
        Err(Failure {
            offset,
            code: "invalid-json",
            message: message.into(),
            help,
        })
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn run(&mut self, sink: &mut Sink<'_>) -> Step<Node<'s>> {
        let mut stack: Vec<Frame<'s>> = Vec::new();
        'value: loop {
            self.skip_ws();
            let start = self.pos;
            let mut node = match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    if stack.len() >= self.max_depth {
                        return Err(Failure {
                            offset: start,
                            code: "nesting-too-deep",
                            message: format!(
                                "values are nested deeper than {} levels",
                                self.max_depth
                            ),
                            help: Some("flatten the document"),
                        });
                    }
                    self.pos += 1;
                    self.skip_ws();
                    if open == b'[' {
                        if self.peek() == Some(b']') {
                            self.pos += 1;
                            Node {
                                value: Value::Array(Vec::new()),
                                start,
                            }
                        } else {
                            stack.push(Frame::Array {
                                start,
                                items: Vec::new(),
                            });
                            continue 'value;
                        }
                    } else if self.peek() == Some(b'}') {
                        self.pos += 1;
                        Node {
                            value: Value::Object(Vec::new()),
                            start,
                        }
                    } else {
                        let (key, key_start) = self.key()?;
                        stack.push(Frame::Object {
                            start,
                            members: Vec::new(),
                            seen: HashSet::new(),
                            key,
                            key_start,
                        });
                        continue 'value;
                    }
                }
                Some(b'"') => {
                    let s = self.string()?;
                    Node {
                        value: Value::String(s),
                        start,
                    }
                }
                Some(b't') => self.literal("true", Value::Bool(true))?,
                Some(b'f') => self.literal("false", Value::Bool(false))?,
                Some(b'n') => self.literal("null", Value::Null)?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b']' | b'}') if self.src[..start].trim_ascii_end().ends_with(b",") => {
                    let comma = self.src[..start].trim_ascii_end().len().saturating_sub(1);
                    return self.fail(
                        comma,
                        "trailing comma",
                        Some("remove the comma before the closing bracket"),
                    );
                }
                Some(b'/') => {
                    return self.fail(
                        start,
                        "comments are not allowed in JSON",
                        Some("remove the comment"),
                    );
                }
                Some(b'\'') => {
                    return self.fail(
                        start,
                        "strings must use double quotes",
                        Some("replace the single quotes with double quotes"),
                    );
                }
                Some(_) => {
                    return self.fail(
                        start,
                        format!("expected a value, found {}", self.describe(start)),
                        None,
                    );
                }
                None => return self.fail(start, "unexpected end of input: expected a value", None),
            };
            // Attach the finished value to its container, closing containers as they end.
            loop {
                let Some(frame) = stack.pop() else {
                    self.skip_ws();
                    if self.pos < self.src.len() {
                        return self.fail(
                            self.pos,
                            format!("unexpected {} after the document", self.describe(self.pos)),
                            Some("a JSON file holds exactly one value; remove the extra text"),
                        );
                    }
                    return Ok(node);
                };
                match frame {
                    Frame::Array { start, mut items } => {
                        items.push(node);
                        self.skip_ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                stack.push(Frame::Array { start, items });
                                continue 'value;
                            }
                            Some(b']') => {
                                self.pos += 1;
                                node = Node {
                                    value: Value::Array(items),
                                    start,
                                };
                            }
                            _ => {
                                return self.fail(
                                    self.pos,
                                    format!(
                                        "expected `,` or `]`, found {}",
                                        self.describe(self.pos)
                                    ),
                                    None,
                                );
                            }
                        }
                    }
                    Frame::Object {
                        start,
                        mut members,
                        mut seen,
                        key,
                        key_start,
                    } => {
                        if first_key(&members, &mut seen, &key) {
                            members.push(Member {
                                key,
                                key_start,
                                value: node,
                            });
                        } else {
                            sink.error(
                                "duplicate-key",
                                &pointer_push(&pointer_of(&stack), &key),
                                key_start,
                                format!("duplicate key `{key}`"),
                                Some("remove one of the two entries; JSON readers disagree on which one wins"),
                            );
                        }
                        self.skip_ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                self.skip_ws();
                                let (key, key_start) = self.key()?;
                                stack.push(Frame::Object {
                                    start,
                                    members,
                                    seen,
                                    key,
                                    key_start,
                                });
                                continue 'value;
                            }
                            Some(b'}') => {
                                self.pos += 1;
                                node = Node {
                                    value: Value::Object(members),
                                    start,
                                };
                            }
                            _ => {
                                return self.fail(
                                    self.pos,
                                    format!(
                                        "expected `,` or `}}`, found {}",
                                        self.describe(self.pos)
                                    ),
                                    None,
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Reads `"key"` and the `:` after it; the parser is positioned on the key.
    fn key(&mut self) -> Step<(Cow<'s, str>, usize)> {
        let at = self.pos;
        match self.peek() {
            Some(b'"') => {}
            Some(b'}') if self.src[..at].trim_ascii_end().ends_with(b",") => {
                let comma = self.src[..at].trim_ascii_end().len().saturating_sub(1);
                return self.fail(
                    comma,
                    "trailing comma",
                    Some("remove the comma before the closing brace"),
                );
            }
            Some(b'\'') => {
                return self.fail(
                    at,
                    "keys must use double quotes",
                    Some("replace the single quotes with double quotes"),
                );
            }
            _ => {
                return self.fail(
                    at,
                    format!("expected a string key, found {}", self.describe(at)),
                    Some("object keys are double-quoted strings"),
                );
            }
        }
        let key = self.string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return self.fail(
                self.pos,
                format!(
                    "expected `:` after the key, found {}",
                    self.describe(self.pos)
                ),
                None,
            );
        }
        self.pos += 1;
        Ok((key, at))
    }

    fn describe(&self, at: usize) -> String {
        match std::str::from_utf8(&self.src[at..])
            .ok()
            .and_then(|s| s.chars().next())
        {
            None if at >= self.src.len() => "the end of input".to_owned(),
            Some(c) if c.is_control() => format!("{c:?}"),
            Some(c) => format!("`{c}`"),
            None => "an invalid character".to_owned(),
        }
    }

    fn literal(&mut self, word: &'static str, value: Value<'s>) -> Step<Node<'s>> {
        let start = self.pos;
        if self.src[start..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(Node { value, start })
        } else {
            self.fail(
                start,
                format!("expected a value, found {}", self.describe(start)),
                Some("JSON literals are `true`, `false` and `null`"),
            )
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - from
    }

    fn number(&mut self) -> Step<Node<'s>> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return self.fail(start, "numbers must not have leading zeros", None);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.fail(self.pos, "expected a digit", None),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return self.fail(self.pos, "expected a digit after the decimal point", None);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.fail(self.pos, "expected a digit in the exponent", None);
            }
        }
        // The grammar above admits only ASCII, so the slice is valid UTF-8.
        let text = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or_default();
        match serde_json::from_str::<serde_json::Number>(text) {
            Ok(n) => Ok(Node {
                value: Value::Number(n),
                start,
            }),
            Err(_) => self.fail(start, "number out of range", None),
        }
    }

    fn string(&mut self) -> Step<Cow<'s, str>> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            self.pos += self.src[run_start..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(self.src.len() - run_start);
            // Stops only at ASCII bytes, so the run ends on a char boundary of the source.
            let run = self.text.get(run_start..self.pos).unwrap_or_default();
            match self.peek() {
                None => {
                    return self.fail(open, "unterminated string", Some("add the closing `\"`"));
                }
                // A string without escapes is the source's own text.
                Some(b'"') if run_start == open + 1 => {
                    self.pos += 1;
                    return Ok(Cow::Borrowed(run));
                }
                Some(b'"') => {
                    self.pos += 1;
                    out.push_str(run);
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    out.push_str(run);
                    let esc = self.pos;
                    self.pos += 1;
                    let c =
                        match self.peek() {
                            Some(b'"') => '"',
                            Some(b'\\') => '\\',
                            Some(b'/') => '/',
                            Some(b'b') => '\u{8}',
                            Some(b'f') => '\u{c}',
                            Some(b'n') => '\n',
                            Some(b'r') => '\r',
                            Some(b't') => '\t',
                            Some(b'u') => {
                                self.pos += 1;
                                let hi = self.hex4(esc)?;
                                let c = if (0xD800..0xDC00).contains(&hi) {
                                    if !self.src[self.pos..].starts_with(b"\\u") {
                                        return self.fail(
                                            esc,
                                            "unpaired surrogate in a \\u escape",
                                            None,
                                        );
                                    }
                                    self.pos += 2;
                                    let lo = self.hex4(esc)?;
                                    if !(0xDC00..0xE000).contains(&lo) {
                                        return self.fail(
                                            esc,
                                            "unpaired surrogate in a \\u escape",
                                            None,
                                        );
                                    }
                                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                                } else {
                                    char::from_u32(hi)
                                };
                                match c {
                                    Some(c) => out.push(c),
                                    None => {
                                        return self.fail(
                                            esc,
                                            "unpaired surrogate in a \\u escape",
                                            None,
                                        );
                                    }
                                }
                                continue;
                            }
                            _ => return self.fail(
                                esc,
                                "invalid escape sequence",
                                Some("valid escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"),
                            ),
                        };
                    self.pos += 1;
                    out.push(c);
                }
                Some(_) => {
                    return self.fail(
                        self.pos,
                        "control character in a string",
                        Some("escape it, e.g. write \\n for a newline"),
                    );
                }
            }
        }
    }

    fn hex4(&mut self, esc: usize) -> Step<u32> {
        let digits = self
            .src
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok());
        match digits.and_then(|d| {
            u32::from_str_radix(d, 16)
                .ok()
                .filter(|_| d.bytes().all(|b| b.is_ascii_hexdigit()))
        }) {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => self.fail(esc, "a \\u escape needs four hex digits", None),
        }
    }
}

/// The pointer of the value currently being read in the innermost open container.
fn pointer_of(stack: &[Frame<'_>]) -> String {
    let mut pointer = String::new();
    for frame in stack {
        let token = match frame {
            Frame::Array { items, .. } => items.len().to_string(),
            Frame::Object { key, .. } => key.to_string(),
        };
        pointer = pointer_push(&pointer, &token);
    }
    pointer
}
