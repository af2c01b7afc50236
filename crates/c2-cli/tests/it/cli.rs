use crate::{Sandbox, pack};

#[test]
fn an_unknown_command_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["frobnicate"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    let run = sandbox.run(&["validate"]);
    assert_eq!(run.code, 2, "{run:#?}");
}

#[test]
fn format_json_means_the_same_before_or_after_the_command() {
    let sandbox = Sandbox::new();
    let path = pack("hello-runtime");
    let path = path.to_str().unwrap();
    let before = sandbox.run(&["--format", "json", "validate", path]);
    let after = sandbox.run(&["validate", path, "--format", "json"]);
    assert_eq!(before.code, 0, "{before:#?}");
    assert_eq!(before.json(), after.json());
}

#[test]
fn schema_prints_the_plugin_json_schema_in_both_formats() {
    let sandbox = Sandbox::new();
    let human = sandbox.run(&["schema"]);
    let json = sandbox.run(&["schema", "--format", "json"]);
    assert_eq!(human.code, 0, "{human:#?}");
    assert_eq!(human.json(), json.json());
    assert_eq!(human.json(), c2_manifest::plugin_json_schema());
}
