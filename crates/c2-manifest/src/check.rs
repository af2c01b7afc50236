//! Shared checking helpers over the span-tracking tree, used by every validator.

use crate::diagnostic::{Sink, pointer_push};
use crate::json::{Member, Node};

/// A validator's view of one document: the diagnostics sink plus typed accessors that report
/// a type mismatch or a missing field as they go.
#[derive(Debug)]
pub(crate) struct Checker<'a, 's> {
    pub(crate) sink: &'a mut Sink<'s>,
}

impl Checker<'_, '_> {
    pub(crate) fn wrong_type(&mut self, node: &Node<'_>, ptr: &str, expected: &str) {
        self.sink.error(
            "wrong-type",
            ptr,
            node.start,
            format!(
                "`{}` must be {expected}, found {}",
                display_ptr(ptr),
                node.kind()
            ),
            None,
        );
    }

    pub(crate) fn object<'n>(&mut self, node: &'n Node<'n>, ptr: &str) -> Option<&'n [Member<'n>]> {
        let members = node.as_object();
        if members.is_none() {
            self.wrong_type(node, ptr, "an object");
        }
        members
    }

    pub(crate) fn array<'n>(&mut self, node: &'n Node<'n>, ptr: &str) -> Option<&'n [Node<'n>]> {
        let items = node.as_array();
        if items.is_none() {
            self.wrong_type(node, ptr, "an array");
        }
        items
    }

    pub(crate) fn string<'n>(&mut self, node: &'n Node<'n>, ptr: &str) -> Option<&'n str> {
        let s = node.as_str();
        if s.is_none() {
            self.wrong_type(node, ptr, "a string");
        }
        s
    }

    /// A member of `obj` with its pointer; a missing required one is reported at the object.
    pub(crate) fn field<'n>(
        &mut self,
        obj: &'n Node<'n>,
        ptr: &str,
        key: &str,
        required: bool,
    ) -> Option<(&'n Node<'n>, String)> {
        match obj.get(key) {
            Some(node) => Some((node, pointer_push(ptr, key))),
            None => {
                if required {
                    self.sink.error(
                        "missing-field",
                        ptr,
                        obj.start,
                        format!(
                            "`{}` is missing the required field `{key}`",
                            display_ptr(ptr)
                        ),
                        Some(&format!("add \"{key}\"")),
                    );
                }
                None
            }
        }
    }

    /// A string member; absent or of the wrong type gives `None`.
    pub(crate) fn string_field<'n>(
        &mut self,
        obj: &'n Node<'n>,
        ptr: &str,
        key: &str,
        required: bool,
    ) -> Option<(&'n Node<'n>, String, &'n str)> {
        let (node, p) = self.field(obj, ptr, key, required)?;
        let s = self.string(node, &p)?;
        Some((node, p, s))
    }

    /// Reports every key of `members` not in `allowed` as `unknown-key`.
    pub(crate) fn closed(&mut self, members: &[Member<'_>], ptr: &str, allowed: &[&str]) {
        for m in members {
            if !allowed.contains(&m.key.as_ref()) {
                self.sink.error(
                    "unknown-key",
                    &pointer_push(ptr, &m.key),
                    m.key_start,
                    format!("unknown key `{}` in `{}`", m.key, display_ptr(ptr)),
                    Some(&format!(
                        "remove it; allowed keys are {}",
                        allowed.join(", ")
                    )),
                );
            }
        }
    }

    /// An array of strings; elements of another type are reported and skipped.
    pub(crate) fn strings<'n>(
        &mut self,
        node: &'n Node<'n>,
        ptr: &str,
    ) -> Vec<(&'n Node<'n>, String, &'n str)> {
        let mut out = Vec::new();
        for (i, item) in self.array(node, ptr).unwrap_or_default().iter().enumerate() {
            let p = pointer_push(ptr, &i.to_string());
            if let Some(s) = self.string(item, &p) {
                out.push((item, p, s));
            }
        }
        out
    }

    /// An object of string values whose keys are valid environment variable names.
    pub(crate) fn env(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
    ) -> std::collections::BTreeMap<String, String> {
        let mut out = std::collections::BTreeMap::new();
        for m in self.object(node, ptr).unwrap_or_default() {
            let p = pointer_push(ptr, &m.key);
            if m.key.is_empty() || m.key.contains(['=', '\0']) {
                self.sink.error(
                    "env-key-invalid",
                    &p,
                    m.key_start,
                    format!(
                        "environment variable name `{}` is empty or contains `=` or NUL",
                        m.key.escape_debug()
                    ),
                    Some("use a non-empty name without `=` or NUL"),
                );
            }
            if let Some(v) = self.string(&m.value, &p) {
                out.insert(m.key.to_string(), v.to_owned());
            }
        }
        out
    }
}

/// A pointer as shown in messages: the root reads as `/`.
pub(crate) fn display_ptr(ptr: &str) -> &str {
    if ptr.is_empty() { "/" } else { ptr }
}

/// Length as the decisions count it: Unicode scalar values.
pub(crate) fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A "safe id": 1 to `max` of `[A-Za-z0-9._-]`, starting with a letter or digit.
pub(crate) fn is_safe_id(s: &str, max: usize) -> bool {
    let mut it = s.chars();
    it.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && chars(s) <= max
}

/// What breaks the Agent Plugins name rules (length aside), if anything.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("`name` must not be empty".to_owned())
    } else if let Some(c) = name
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-' | '.'))
    {
        Some(format!(
            "`name` contains `{c}`; only lowercase a-z, 0-9, `-` and `.` are allowed"
        ))
    } else if !name.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !name.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        Some("`name` must start and end with a letter or digit".to_owned())
    } else if name.contains("--") || name.contains("..") {
        Some("`name` must not contain `--` or `..`".to_owned())
    } else {
        None
    }
}
