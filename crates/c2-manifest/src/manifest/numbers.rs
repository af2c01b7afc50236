//! The bounded integer fields of plugin.json: a ui `order` and a runtime `commandTimeoutMs`.

use super::Validator;
use crate::json::{self, Node};
use crate::model::COMMAND_TIMEOUT_MS_RANGE;

impl Validator<'_, '_> {
    pub(super) fn order(&mut self, node: &Node<'_>, ptr: &str) -> Option<i32> {
        let (min, max) = (self.opts.min_ui_order, self.opts.max_ui_order);
        let json::Value::Number(n) = &node.value else {
            self.c.wrong_type(node, ptr, "an integer");
            return None;
        };
        let Some(v) = n.as_i64() else {
            self.err(
                "ui-order-not-integer",
                ptr,
                node,
                format!("`order` {n} is not an integer"),
                Some(&format!("use a whole number from {min} to {max}")),
            );
            return None;
        };
        match i32::try_from(v) {
            Ok(v) if (min..=max).contains(&v) => Some(v),
            _ => {
                self.err(
                    "ui-order-out-of-range",
                    ptr,
                    node,
                    format!("`order` {v} is outside {min}..={max}"),
                    Some(&format!("use a whole number from {min} to {max}")),
                );
                None
            }
        }
    }

    pub(super) fn command_timeout(&mut self, node: &Node<'_>, ptr: &str) -> Option<u64> {
        let (min, max) = (
            *COMMAND_TIMEOUT_MS_RANGE.start(),
            *COMMAND_TIMEOUT_MS_RANGE.end(),
        );
        let json::Value::Number(n) = &node.value else {
            self.c.wrong_type(node, ptr, "an integer");
            return None;
        };
        let hint = format!("use a whole number of milliseconds from {min} to {max}");
        let Some(v) = n.as_i64() else {
            self.err(
                "command-timeout-not-integer",
                ptr,
                node,
                format!("`commandTimeoutMs` {n} is not an integer"),
                Some(&hint),
            );
            return None;
        };
        match u64::try_from(v) {
            Ok(v) if COMMAND_TIMEOUT_MS_RANGE.contains(&v) => Some(v),
            _ => {
                self.err(
                    "command-timeout-out-of-range",
                    ptr,
                    node,
                    format!("`commandTimeoutMs` {v} is outside {min}..={max}"),
                    Some(&hint),
                );
                None
            }
        }
    }
}
