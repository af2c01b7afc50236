//! YAML 1.2 for `SKILL.md` frontmatter, read from saphyr-parser's events into a small bounded
//! tree. Every scalar stays text whatever its tag or form (`1.0`, `yes` and `null` are strings),
//! so the field rules see what the author wrote. The tree is built with an explicit stack, never
//! by recursion over the input, under three bounds: [`MAX_FRONTMATTER_BYTES`] of text,
//! [`MAX_YAML_DEPTH`] levels of nesting and [`MAX_YAML_NODES`] nodes with every alias counted
//! as the nodes it stands for (a "billion laughs" document is refused, never expanded).

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScanError, Span};

use crate::diagnostic::{Sink, pointer_push};

/// The largest frontmatter block read, in bytes; a larger one is `frontmatter-too-large`.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The deepest nesting of mappings and sequences in frontmatter; deeper is `nesting-too-deep`.
pub const MAX_YAML_DEPTH: usize = 32;
/// The most nodes a frontmatter document may stand for, each alias counted as every node of
/// what it refers to; more is `frontmatter-aliases-too-large` (or `frontmatter-too-large`
/// without aliases).
pub const MAX_YAML_NODES: usize = 10_000;

/// A YAML node: where it starts (a byte offset in the whole source) and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) at: usize,
    pub(crate) value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Any scalar, as text.
    Str(String),
    /// A mapping with string keys: `(key, key offset, value)` in document order.
    Map(Vec<(String, usize, Node)>),
    /// A sequence.
    List(Vec<Node>),
}

impl Value {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Map(_) => "a mapping",
            Value::List(_) => "a list",
        }
    }
}

/// A node with its size (nodes in it, itself included) and height (levels of nesting below).
#[derive(Debug, Clone)]
struct Built {
    node: Node,
    size: usize,
    height: usize,
}

/// A collection being read.
#[derive(Debug)]
struct Frame {
    at: usize,
    anchor: usize,
    size: usize,
    height: usize,
    kind: FrameKind,
}

#[derive(Debug)]
enum FrameKind {
    List(Vec<Node>),
    /// Entries so far and the key waiting for its value.
    Map(Vec<(String, usize, Node)>, Option<(String, usize)>),
}

/// Char indices (saphyr-parser's positions) to byte offsets in the source; positions mostly
/// arrive in order, so the walk resumes where it stopped.
struct Offsets<'a> {
    text: &'a str,
    base: usize,
    chars: usize,
    bytes: usize,
}

impl Offsets<'_> {
    fn byte(&mut self, char_index: usize) -> usize {
        if char_index < self.chars {
            self.chars = 0;
            self.bytes = 0;
        }
        let rest = &self.text[self.bytes..];
        match rest.char_indices().nth(char_index - self.chars) {
            Some((i, _)) => {
                self.bytes += i;
                self.chars = char_index;
            }
            None => {
                self.chars += rest.chars().count();
                self.bytes = self.text.len();
            }
        }
        self.base + self.bytes
    }
}

fn syntax(sink: &mut Sink<'_>, at: usize, message: &str) {
    sink.error(
        "frontmatter-syntax",
        "",
        at,
        format!("the frontmatter is not valid YAML: {message}"),
        Some("fix the YAML; quote a value that contains `: ` or starts with a YAML indicator"),
    );
}

fn scan_error(sink: &mut Sink<'_>, offsets: &mut Offsets<'_>, error: &ScanError) {
    let at = offsets.byte(error.marker().index());
    let info = error.info().trim_end_matches('.');
    // The scanner reads ahead of the events and stops flow nesting at 256 levels itself.
    if info == "recursion limit exceeded" {
        too_deep(sink, at);
    } else {
        syntax(sink, at, info);
    }
}

/// Parses `text` (the frontmatter block, which starts at byte `base` of the source) into its
/// root node: `None` after reporting why when it is not one bounded YAML document. An empty
/// document is an empty mapping.
pub(crate) fn parse(text: &str, base: usize, sink: &mut Sink<'_>) -> Option<Node> {
    if text.len() > MAX_FRONTMATTER_BYTES {
        sink.error(
            "frontmatter-too-large",
            "",
            base,
            format!(
                "the frontmatter is {} bytes; the limit is {MAX_FRONTMATTER_BYTES}",
                text.len()
            ),
            Some("keep the frontmatter to the skill's metadata and move the rest into the body"),
        );
        return None;
    }
    let mut offsets = Offsets {
        text,
        base,
        chars: 0,
        bytes: 0,
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Built> = HashMap::new();
    // Nodes stood for so far, aliases expanded.
    let mut total = 0usize;
    let mut root: Option<Built> = None;
    let mut documents = 0usize;
    for item in Parser::new_from_str(text) {
        let (event, span): (Event<'_>, Span) = match item {
            Ok(pair) => pair,
            Err(error) => {
                scan_error(sink, &mut offsets, &error);
                return None;
            }
        };
        let at = offsets.byte(span.start.index());
        let done = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    sink.error(
                        "frontmatter-syntax",
                        "",
                        at,
                        "the frontmatter holds more than one YAML document",
                        Some("keep one document between the `---` lines"),
                    );
                    return None;
                }
                None
            }
            Event::Scalar(text, _, anchor, _) => {
                let built = Built {
                    node: Node {
                        at,
                        value: Value::Str(text.into_owned()),
                    },
                    size: 1,
                    height: 0,
                };
                if anchor != 0 {
                    anchors.insert(anchor, built.clone());
                }
                Some(built)
            }
            Event::Alias(anchor) => {
                let Some(target) = anchors.get(&anchor) else {
                    syntax(sink, at, "an alias refers to an anchor not yet complete");
                    return None;
                };
                if total.saturating_add(target.size) > MAX_YAML_NODES {
                    sink.error(
                        "frontmatter-aliases-too-large",
                        "",
                        at,
                        format!(
                            "the frontmatter's aliases stand for more than {MAX_YAML_NODES} nodes"
                        ),
                        Some("write the values out instead of repeating them through aliases"),
                    );
                    return None;
                }
                // Counted here in full; `attach` adds only the alias node itself.
                total += target.size - 1;
                let mut built = target.clone();
                built.node.at = at;
                Some(built)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_YAML_DEPTH {
                    too_deep(sink, at);
                    return None;
                }
                let kind = if matches!(event, Event::SequenceStart(..)) {
                    FrameKind::List(Vec::new())
                } else {
                    FrameKind::Map(Vec::new(), None)
                };
                stack.push(Frame {
                    at,
                    anchor,
                    size: 1,
                    height: 0,
                    kind,
                });
                total += 1;
                if total > MAX_YAML_NODES {
                    too_many(sink, at);
                    return None;
                }
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = stack.pop() else {
                    syntax(sink, at, "a collection ends that never started");
                    return None;
                };
                let value = match frame.kind {
                    FrameKind::List(items) => Value::List(items),
                    FrameKind::Map(entries, _) => Value::Map(entries),
                };
                let built = Built {
                    node: Node {
                        at: frame.at,
                        value,
                    },
                    size: frame.size,
                    height: frame.height,
                };
                if frame.anchor != 0 {
                    anchors.insert(frame.anchor, built.clone());
                }
                // The frame was counted when it opened.
                total -= 1;
                Some(built)
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => None,
        };
        let Some(built) = done else { continue };
        total += 1;
        if total > MAX_YAML_NODES {
            too_many(sink, at);
            return None;
        }
        if stack.len() + built.height > MAX_YAML_DEPTH {
            too_deep(sink, at);
            return None;
        }
        match stack.last_mut() {
            None => root = Some(built),
            Some(frame) => {
                frame.size = frame.size.saturating_add(built.size);
                frame.height = frame.height.max(built.height + 1);
                match &mut frame.kind {
                    FrameKind::List(items) => items.push(built.node),
                    FrameKind::Map(entries, pending) => match pending.take() {
                        Some((key, key_at)) => {
                            if entries.iter().any(|(k, _, _)| *k == key) {
                                let (pointer, message) = if stack.len() == 1 {
                                    (
                                        pointer_push("", &key),
                                        format!("duplicate frontmatter key `{key}`"),
                                    )
                                } else {
                                    (
                                        String::new(),
                                        format!("duplicate key `{key}` in a frontmatter mapping"),
                                    )
                                };
                                sink.error(
                                    "duplicate-key",
                                    &pointer,
                                    key_at,
                                    message,
                                    Some("keep one of the two lines"),
                                );
                            } else {
                                entries.push((key, key_at, built.node));
                            }
                        }
                        None => match built.node.value {
                            Value::Str(key) => *pending = Some((key, built.node.at)),
                            other => {
                                sink.error(
                                    "frontmatter-key-not-string",
                                    "",
                                    built.node.at,
                                    format!("a frontmatter key is {}, not a string", other.kind()),
                                    Some("use plain text keys"),
                                );
                                return None;
                            }
                        },
                    },
                }
            }
        }
    }
    let root = root.map_or(
        Node {
            at: base,
            value: Value::Map(Vec::new()),
        },
        |b| b.node,
    );
    // An empty document (no node, or an empty scalar) has no keys.
    match &root.value {
        Value::Str(s) if s.is_empty() => Some(Node {
            at: root.at,
            value: Value::Map(Vec::new()),
        }),
        _ => Some(root),
    }
}

fn too_deep(sink: &mut Sink<'_>, at: usize) {
    sink.error(
        "nesting-too-deep",
        "",
        at,
        format!("the frontmatter nests deeper than {MAX_YAML_DEPTH} levels"),
        Some("flatten the frontmatter; skill metadata is a flat mapping"),
    );
}

fn too_many(sink: &mut Sink<'_>, at: usize) {
    sink.error(
        "frontmatter-too-large",
        "",
        at,
        format!("the frontmatter holds more than {MAX_YAML_NODES} values"),
        Some("keep the frontmatter to the skill's metadata and move the rest into the body"),
    );
}
