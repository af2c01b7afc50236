use c2_bundle_collector::{ContributionKind, ContributionStatus, codes};

use crate::support::*;

const FULL_MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "everything",
  "version": "2.0.0",
  "description": "One of each contribution.",
  "extensions": {
    "dev.codetwo": {
      "standardVersion": "1.2.0",
      "commands": [
        { "id": "hello.run", "title": "Say hello", "description": "Greets." },
        { "id": "hello.chat", "title": "Chat connector" }
      ],
      "runtime": { "command": "bin/hello" },
      "ui": [{ "id": "greet", "slot": "composer.above", "label": "Greet", "command": "hello.run" }],
      "connectors": [{ "id": "workspace", "provider": "feishu", "command": "hello.chat", "capabilities": ["messaging"] }],
      "languageServers": [{ "id": "zls", "languages": ["zig"], "command": "zls" }]
    }
  }
}"#;

fn everything() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "plugin.json", FULL_MANIFEST);
    write_exec(root, "bin/hello", "#!/bin/sh\n");
    write(
        root,
        "skills/review/SKILL.md",
        "---\nname: review\ndescription: Reviews code.\n---\nBody.\n",
    );
    write(
        root,
        "skills/broken/SKILL.md",
        "---\nname: not-broken\ndescription: Wrong folder.\n---\n",
    );
    write(root, "agents/reviewer.md", "# reviewer\n");
    write(root, "agents/notes.txt", "not an agent\n");
    write(root, "commands/deploy.md", "Deploy it.\n");
    write(
        root,
        "mcp.json",
        r#"{"mcpServers": {"files": {"command": "npx", "args": ["files"]}, "web": {"type": "http", "url": "https://example.org/mcp"}}}"#,
    );
    write(root, "scenes/intro.scene.json", "{}");
    write(root, "scenes/build.pipeline.json", "{}");
    write(
        root,
        "scaffolds/rust-app/scaffold.json",
        r#"{"name": "Rust app", "description": "A binary crate."}"#,
    );
    write(root, "scaffolds/rust-app/src/main.rs", "fn main() {}\n");
    write(root, "templates/readme/README.md", "# title\n");
    write(root, "hooks/hooks.json", "{}");
    write(root, "monitors/monitors.json", "{}");
    write(root, "docs/notes.md", "stored, inactive\n");
    dir
}

#[test]
fn every_kind_of_contribution_is_inventoried_with_its_status() {
    let dir = everything();
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    insta::assert_snapshot!(serde_json::to_string_pretty(&bundle.inventory).unwrap());
}

#[test]
fn other_files_are_stored_but_never_reported_as_contributions() {
    let dir = everything();
    let bundle = collect(dir.path());
    assert!(
        bundle.files.contains_key("docs/notes.md") && bundle.files.contains_key("agents/notes.txt")
    );
    let paths: Vec<_> = bundle
        .inventory
        .contributions
        .iter()
        .filter_map(|c| c.path.as_deref())
        .collect();
    assert!(
        !paths
            .iter()
            .any(|p| p.starts_with("docs/") || p.ends_with(".txt")),
        "{paths:?}"
    );
}

#[test]
fn an_invalid_skill_is_skipped_with_a_warning_and_the_bundle_stays_valid() {
    let dir = everything();
    let bundle = collect(dir.path());
    assert!(
        bundle
            .inventory
            .of_kind(ContributionKind::Skill)
            .all(|c| c.id == "review")
    );
    let d = bundle
        .diagnostics
        .iter()
        .find(|d| d.code == codes::SKILL_INVALID)
        .unwrap();
    assert_eq!(d.file.as_deref(), Some("skills/broken/SKILL.md"));
}

#[test]
fn a_skill_folder_without_skill_md_is_skipped_with_a_warning() {
    let dir = everything();
    write(dir.path(), "skills/empty/notes.md", "x");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    assert!(
        bundle
            .diagnostics
            .iter()
            .any(|d| d.code == codes::SKILL_INVALID && d.file.as_deref() == Some("skills/empty"))
    );
}

#[test]
fn hooks_and_monitors_are_reported_unsupported_with_a_warning() {
    let dir = everything();
    let bundle = collect(dir.path());
    let unsupported: Vec<_> = bundle.inventory.unsupported().map(|c| c.kind).collect();
    assert_eq!(
        unsupported,
        [ContributionKind::Hooks, ContributionKind::Monitors]
    );
    assert_eq!(
        bundle
            .diagnostics
            .iter()
            .filter(|d| d.code == codes::UNSUPPORTED_COMPONENT)
            .count(),
        2
    );
}

#[test]
fn a_bad_mcp_document_disables_mcp_without_refusing_the_bundle() {
    let dir = everything();
    write(dir.path(), "mcp.json", "[1, 2]");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    assert_eq!(
        bundle
            .inventory
            .of_kind(ContributionKind::McpServer)
            .count(),
        0
    );
    assert!(warning_codes(&bundle).contains(&codes::MCP_INVALID));
}

#[test]
fn a_scaffold_with_bad_metadata_is_still_inventoried_by_folder_name() {
    let dir = everything();
    write(
        dir.path(),
        "scaffolds/rust-app/scaffold.json",
        r#"{"name": 3}"#,
    );
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    let scaffold = bundle
        .inventory
        .of_kind(ContributionKind::Scaffold)
        .next()
        .unwrap();
    assert_eq!(
        (scaffold.id.as_str(), scaffold.title.as_deref()),
        ("rust-app", None)
    );
    assert!(warning_codes(&bundle).contains(&codes::SCAFFOLD_METADATA_INVALID));
}

#[test]
fn a_component_folder_that_is_a_file_is_refused() {
    let dir = hello_bundle();
    write(dir.path(), "skills", "not a folder");
    only_error(&collect(dir.path()), codes::COMPONENT_NOT_DIRECTORY);
}

#[test]
fn statuses_follow_the_standard_table() {
    use ContributionKind as K;
    use ContributionStatus as S;
    assert_eq!(K::Skill.status(), S::Supported);
    assert_eq!(K::Agent.status(), S::SupportedWithFallback);
    assert_eq!(K::PromptCommand.status(), S::SupportedAsContent);
    assert_eq!(K::RuntimeCommand.status(), S::SupportedStatically);
    assert_eq!(K::Connector.status(), S::HostRendered);
    assert_eq!(K::UiAction.status(), S::HostRendered);
    assert_eq!(K::Hooks.status(), S::InventoriedUnsupported);
    assert_eq!(K::Monitors.status(), S::InventoriedUnsupported);
}
