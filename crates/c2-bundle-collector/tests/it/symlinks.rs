use c2_bundle_collector::codes;

use crate::support::*;

#[test]
fn a_symlink_escaping_the_bundle_is_refused_naming_the_link_and_its_target() {
    let dir = hello_bundle();
    symlink(dir.path(), "docs/secret", "../../outside");
    let bundle = collect(dir.path());
    let d = only_error(&bundle, codes::SYMLINK_ESCAPES);
    assert_eq!(d.file.as_deref(), Some("docs/secret"));
    assert!(
        d.message.contains("docs/secret") && d.message.contains("../../outside"),
        "{d:?}"
    );
    assert!(!bundle.files.contains_key("docs/secret"));
}

#[test]
fn an_absolute_symlink_is_refused() {
    let dir = hello_bundle();
    symlink(dir.path(), "etc-passwd", "/etc/passwd");
    let d = only_error(&collect(dir.path()), codes::SYMLINK_ABSOLUTE);
    assert!(d.message.contains("/etc/passwd"), "{d:?}");
}

#[test]
fn a_symlink_chain_that_leaves_the_bundle_through_a_second_link_is_refused() {
    let dir = hello_bundle();
    symlink(dir.path(), "hop", "../..");
    symlink(dir.path(), "docs/first", "../hop");
    let bundle = collect(dir.path());
    let escapes: Vec<_> = bundle
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::SYMLINK_ESCAPES)
        .filter_map(|d| d.file.as_deref())
        .collect();
    assert_eq!(escapes, ["docs/first", "hop"]);
}

#[test]
fn a_looping_symlink_is_refused() {
    let dir = hello_bundle();
    symlink(dir.path(), "loop-a", "loop-b");
    symlink(dir.path(), "loop-b", "loop-a");
    let bundle = collect(dir.path());
    assert!(!bundle.is_valid());
    assert!(
        error_codes(&bundle)
            .iter()
            .all(|code| *code == codes::SYMLINK_LOOP),
        "{:#?}",
        bundle.diagnostics
    );
    assert_eq!(error_codes(&bundle).len(), 2);
}

#[test]
fn a_symlink_inside_the_bundle_off_component_paths_is_skipped_with_a_warning() {
    let dir = hello_bundle();
    symlink(dir.path(), "docs/readme", "../README.md");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    assert_eq!(warning_codes(&bundle), [codes::SYMLINK_SKIPPED]);
    assert!(
        !bundle.files.contains_key("docs/readme"),
        "a symlink is never stored"
    );
}

#[test]
fn a_symlinked_plugin_json_is_refused() {
    let dir = hello_bundle();
    std::fs::rename(dir.path().join("plugin.json"), dir.path().join("real.json")).unwrap();
    symlink(dir.path(), "plugin.json", "real.json");
    let d = only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
    assert_eq!(d.file.as_deref(), Some("plugin.json"));
}

#[test]
fn a_symlinked_skills_folder_is_refused() {
    let dir = hello_bundle();
    write(
        dir.path(),
        "shared/x/SKILL.md",
        "---\nname: x\ndescription: d\n---\n",
    );
    symlink(dir.path(), "skills", "shared");
    let d = only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
    assert!(d.message.contains("skills -> shared"), "{d:?}");
}

#[test]
fn a_symlink_under_a_component_folder_is_refused() {
    let dir = hello_bundle();
    symlink(dir.path(), "agents/reviewer.md", "../README.md");
    let d = only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
    assert_eq!(d.file.as_deref(), Some("agents/reviewer.md"));
}

#[test]
fn a_symlinked_mcp_json_is_refused() {
    let dir = hello_bundle();
    write(dir.path(), "real-mcp.json", r#"{"mcpServers": {}}"#);
    symlink(dir.path(), "mcp.json", "real-mcp.json");
    only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
}

#[test]
fn a_runtime_command_reached_through_a_symlinked_folder_is_refused() {
    let dir = hello_bundle();
    std::fs::rename(dir.path().join("bin"), dir.path().join("real-bin")).unwrap();
    symlink(dir.path(), "bin", "real-bin");
    let d = only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
    assert_eq!(d.file.as_deref(), Some("bin"));
    assert!(d.message.contains("bin/hello"), "{d:?}");
}

#[test]
fn a_runtime_command_that_is_a_symlink_is_refused() {
    let dir = hello_bundle();
    std::fs::rename(
        dir.path().join("bin/hello"),
        dir.path().join("bin/real-hello"),
    )
    .unwrap();
    symlink(dir.path(), "bin/hello", "real-hello");
    only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
}

#[test]
fn a_script_named_in_runtime_args_that_is_a_symlink_is_refused() {
    let dir = hello_bundle();
    std::fs::rename(
        dir.path().join("lib/greet.txt"),
        dir.path().join("lib/real.txt"),
    )
    .unwrap();
    symlink(dir.path(), "lib/greet.txt", "real.txt");
    only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
}

#[test]
fn a_symlinked_scaffold_folder_is_refused() {
    let dir = hello_bundle();
    write(dir.path(), "starter/main.rs", "fn main() {}\n");
    symlink(dir.path(), "scaffolds/starter", "../starter");
    only_error(&collect(dir.path()), codes::SYMLINK_COMPONENT_PATH);
}
