use c2_protocol::{ErrorObject, codes};
use serde_json::json;

use crate::observe::excerpt;
use crate::plan::invoke_name;
use crate::session::judge_error;

#[test]
fn an_excerpt_is_cut_on_a_character_with_a_marker() {
    assert_eq!(excerpt("short", 10), "short");
    assert_eq!(excerpt("ééé", 2), "éé…");
}

#[test]
fn an_invocation_with_empty_args_is_named_by_its_command_alone() {
    assert_eq!(invoke_name("a.b", &json!({})), "invoke a.b");
    assert_eq!(invoke_name("a.b", &json!({"n": 1})), "invoke a.b {\"n\":1}");
}

#[test]
fn only_error_answers_that_refuse_a_declared_command_or_its_args_fail() {
    let answer = |code| judge_error("a.b", &ErrorObject::new(code, "no")).0;
    assert!(!answer(codes::METHOD_NOT_FOUND));
    assert!(!answer(codes::UNKNOWN_COMMAND));
    assert!(!answer(codes::INVALID_PARAMS));
    assert!(!answer(codes::INVALID_REQUEST));
    assert!(answer(codes::COMMAND_FAILED));
}
