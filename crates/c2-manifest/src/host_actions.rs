//! `host.actions` documents (plugin-standard.md §2): what a runtime's `render` may return for
//! the dynamic `host.actions` slot, checked against the standard's bounds before a frontend
//! sees it. Pure: a JSON value in, the validated actions or the first reason out.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Bounds of a `host.actions` document (plugin-standard.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostActionsLimits {
    /// Actions per render.
    pub max_actions: usize,
    /// Serialized bytes of one action's `input`.
    pub max_input_bytes: usize,
    /// Characters of a label or accessibility label.
    pub max_label_chars: usize,
    /// Characters of a detail line.
    pub max_detail_chars: usize,
}

impl Default for HostActionsLimits {
    fn default() -> Self {
        Self {
            max_actions: 8,
            max_input_bytes: 4 * 1024,
            max_label_chars: 80,
            max_detail_chars: 300,
        }
    }
}

impl HostActionsLimits {
    /// Sets [`HostActionsLimits::max_actions`].
    #[must_use]
    pub fn with_max_actions(mut self, value: usize) -> Self {
        self.max_actions = value;
        self
    }

    /// Sets [`HostActionsLimits::max_input_bytes`].
    #[must_use]
    pub fn with_max_input_bytes(mut self, value: usize) -> Self {
        self.max_input_bytes = value;
        self
    }

    /// Sets [`HostActionsLimits::max_label_chars`].
    #[must_use]
    pub fn with_max_label_chars(mut self, value: usize) -> Self {
        self.max_label_chars = value;
        self
    }

    /// Sets [`HostActionsLimits::max_detail_chars`].
    #[must_use]
    pub fn with_max_detail_chars(mut self, value: usize) -> Self {
        self.max_detail_chars = value;
        self
    }
}

/// One validated `host.actions` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostAction {
    /// Unique, safe id within the document.
    pub id: String,
    /// Non-empty label.
    pub label: String,
    /// Optional detail line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `default`, `running`, `attention` or `failure`.
    #[serde(default = "default_state")]
    pub state: String,
    /// Whether the action can be activated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Object replayed on `invoke`.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Optional accessibility label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accessibility_label: Option<String>,
}

fn default_state() -> String {
    "default".to_owned()
}

fn empty_object() -> Value {
    json!({})
}

const STATES: [&str; 4] = ["default", "running", "attention", "failure"];

fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn plain_text(field: &str, text: &str, max: usize, required: bool) -> Result<(), String> {
    if required && text.trim().is_empty() {
        return Err(format!("`{field}` must not be empty"));
    }
    if text.chars().count() > max {
        return Err(format!("`{field}` is longer than {max} characters"));
    }
    if text.contains(['<', '>']) || text.chars().any(|c| c.is_control()) {
        return Err(format!(
            "`{field}` contains markup or control characters; the host renders plain text only"
        ));
    }
    Ok(())
}

/// Checks a `render` result: an array of actions, or `{"actions": [...]}`.
pub fn validate_host_actions(
    document: &Value,
    limits: &HostActionsLimits,
) -> Result<Vec<HostAction>, String> {
    let items = match document {
        Value::Array(items) => items,
        Value::Object(object) => match (object.get("actions"), object.len()) {
            (Some(Value::Array(items)), 1) => items,
            _ => {
                return Err(
                    "the document must be an array of actions or exactly {\"actions\": [...]}"
                        .to_owned(),
                );
            }
        },
        _ => {
            return Err(
                "the document must be an array of actions or {\"actions\": [...]}".to_owned(),
            );
        }
    };
    if items.len() > limits.max_actions {
        return Err(format!(
            "{} actions rendered; at most {} are allowed",
            items.len(),
            limits.max_actions
        ));
    }
    let mut seen = HashSet::new();
    let mut actions = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let action: HostAction = serde_json::from_value(item.clone())
            .map_err(|error| format!("action {index}: {error}"))?;
        let at = |problem: String| format!("action {index} (`{}`): {problem}", action.id);
        if !safe_id(&action.id) {
            return Err(at(
                "the id must be 1 to 64 of A-Z a-z 0-9 . _ - starting with a letter or digit"
                    .to_owned(),
            ));
        }
        if !seen.insert(action.id.clone()) {
            return Err(at("the id is used twice".to_owned()));
        }
        plain_text("label", &action.label, limits.max_label_chars, true).map_err(at)?;
        if let Some(detail) = &action.detail {
            plain_text("detail", detail, limits.max_detail_chars, false).map_err(at)?;
        }
        if let Some(label) = &action.accessibility_label {
            plain_text("accessibilityLabel", label, limits.max_label_chars, true).map_err(at)?;
        }
        if !STATES.contains(&action.state.as_str()) {
            return Err(at(format!(
                "state `{}` is not one of default, running, attention, failure",
                action.state
            )));
        }
        if !action.input.is_object() {
            return Err(at("`input` must be an object".to_owned()));
        }
        let size = serde_json::to_vec(&action.input).map_or(usize::MAX, |v| v.len());
        if size > limits.max_input_bytes {
            return Err(at(format!(
                "`input` is {size} bytes serialized; at most {} are allowed",
                limits.max_input_bytes
            )));
        }
        actions.push(action);
    }
    Ok(actions)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(document: Value) -> Result<Vec<HostAction>, String> {
        validate_host_actions(&document, &HostActionsLimits::default())
    }

    fn action(id: &str) -> Value {
        json!({"id": id, "label": "Run", "state": "running", "input": {"n": 1}})
    }

    #[test]
    fn a_valid_document_is_accepted_in_both_shapes() {
        assert_eq!(check(json!([action("a"), action("b")])).unwrap().len(), 2);
        assert_eq!(
            check(json!({"actions": [action("a")]})).unwrap()[0].state,
            "running"
        );
        let defaults = check(json!([{"id": "a", "label": "x"}])).unwrap();
        assert_eq!(
            (defaults[0].state.as_str(), &defaults[0].input),
            ("default", &json!({}))
        );
    }

    #[test]
    fn every_kind_of_violation_is_rejected_with_a_reason() {
        let nine: Vec<Value> = (0..9).map(|i| action(&format!("a{i}"))).collect();
        assert!(check(json!(nine)).unwrap_err().contains("at most 8"));
        assert!(
            check(json!([action("a"), action("a")]))
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            check(json!([action("bad id")]))
                .unwrap_err()
                .contains("id must be")
        );
        let mut unknown = action("a");
        unknown["onClick"] = json!("alert(1)");
        assert!(
            check(json!([unknown]))
                .unwrap_err()
                .contains("unknown field")
        );
        let mut markup = action("a");
        markup["label"] = json!("<b>Run</b>");
        assert!(check(json!([markup])).unwrap_err().contains("markup"));
        let mut empty = action("a");
        empty["label"] = json!("  ");
        assert!(check(json!([empty])).unwrap_err().contains("empty"));
        let mut state = action("a");
        state["state"] = json!("blinking");
        assert!(check(json!([state])).unwrap_err().contains("state"));
        let mut big = action("a");
        big["input"] = json!({"blob": "x".repeat(5000)});
        assert!(check(json!([big])).unwrap_err().contains("bytes"));
        let mut not_object = action("a");
        not_object["input"] = json!([1]);
        assert!(check(json!([not_object])).unwrap_err().contains("object"));
        assert!(check(json!("nope")).is_err());
        assert!(check(json!({"actions": [], "extra": 1})).is_err());
    }
}
