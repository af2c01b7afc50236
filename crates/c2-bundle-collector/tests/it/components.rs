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

/// One of each variant plus a bad entry, per Agent Plugins §7.2.1.
const MCP: &str = r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
  "files": {"type": "stdio", "command": "npx", "args": ["files", "${PLUGIN_DATA}"], "cwd": "${PLUGIN_DATA}"},
  "web": {"type": "streamable-http", "url": "https://example.org/mcp", "headers": {"X-Tenant": "t"}},
  "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
  "native": {"type": "http", "url": "https://example.org/mcp"}
}}"#;

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
    write(root, "mcp.json", MCP);
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
    let dir = everything();
    write(
        dir.path(),
        "mcp.json",
        &MCP.replace("1.0.0/mcp.schema.json", "2.0.0/mcp.schema.json"),
    );
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    let disabled: Vec<_> = bundle
        .inventory
        .of_kind(ContributionKind::McpServer)
        .map(|c| (c.id.as_str(), c.status_text()))
        .collect();
    assert_eq!(disabled.len(), 4, "{disabled:?}");
    assert!(
        disabled
            .iter()
            .all(|(_, s)| s.starts_with("disabled: mcp.json is invalid:") && s.contains("2.0.0")),
        "{disabled:?}"
    );
    let d = bundle
        .diagnostics
        .iter()
        .find(|d| d.code == codes::MCP_INVALID)
        .unwrap();
    assert!(d.message.contains("2.0.0"), "{}", d.message);
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
fn skills_as_a_file_disables_skills_only_and_the_bundle_stays_valid() {
    let dir = everything();
    std::fs::remove_dir_all(dir.path().join("skills")).unwrap();
    write(dir.path(), "skills", "not a folder");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    assert!(warning_codes(&bundle).contains(&codes::COMPONENT_WRONG_KIND));
    assert_eq!(bundle.inventory.of_kind(ContributionKind::Skill).count(), 0);
    assert_eq!(
        bundle
            .inventory
            .of_kind(ContributionKind::McpServer)
            .filter(|c| c.is_usable())
            .count(),
        3
    );
}

#[test]
fn mcp_json_as_a_directory_disables_mcp_only_and_the_bundle_stays_valid() {
    let dir = everything();
    std::fs::remove_file(dir.path().join("mcp.json")).unwrap();
    write(dir.path(), "mcp.json/servers.json", "{}");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    let d = bundle
        .diagnostics
        .iter()
        .find(|d| d.code == codes::COMPONENT_WRONG_KIND)
        .expect("a wrong-kind warning");
    assert_eq!(d.file.as_deref(), Some("mcp.json"));
    assert!(
        d.message.contains("MCP servers are disabled"),
        "{}",
        d.message
    );
    assert_eq!(
        bundle
            .inventory
            .of_kind(ContributionKind::McpServer)
            .count(),
        0
    );
    assert_eq!(bundle.inventory.of_kind(ContributionKind::Skill).count(), 1);
}

#[test]
fn every_other_component_location_of_the_wrong_kind_only_warns() {
    for (path, is_dir) in [
        ("agents", false),
        ("commands", false),
        ("scenes", false),
        ("scaffolds", false),
        ("hooks/hooks.json", true),
    ] {
        let dir = hello_bundle();
        if is_dir {
            write(dir.path(), &format!("{path}/x"), "x");
        } else {
            write(dir.path(), path, "x");
        }
        let bundle = collect(dir.path());
        assert_valid(&bundle);
        assert!(
            warning_codes(&bundle).contains(&codes::COMPONENT_WRONG_KIND),
            "{path}"
        );
    }
}

#[test]
fn a_symlinked_component_location_still_refuses_the_bundle() {
    let dir = hello_bundle();
    write(
        dir.path(),
        "real-skills/a/SKILL.md",
        "---\nname: a\ndescription: A.\n---\n",
    );
    symlink(dir.path(), "skills", "real-skills");
    assert!(!collect(dir.path()).is_valid());
    let dir = hello_bundle();
    write(dir.path(), "real.json", "{}");
    symlink(dir.path(), "mcp.json", "real.json");
    assert!(!collect(dir.path()).is_valid());
}

#[test]
fn every_mcp_server_is_inventoried_with_its_transport_and_status() {
    let bundle = collect(everything().path());
    let servers: Vec<_> = bundle
        .inventory
        .of_kind(ContributionKind::McpServer)
        .map(|c| (c.id.as_str(), c.transport.as_deref(), c.status_text()))
        .collect();
    assert_eq!(servers.len(), 4, "{servers:?}");
    assert_eq!(servers[0], ("files", Some("stdio"), "supported".to_owned()));
    assert_eq!(
        servers[1],
        ("web", Some("streamable-http"), "supported".to_owned())
    );
    assert_eq!(servers[2], ("events", Some("sse"), "supported".to_owned()));
    assert_eq!(servers[3].0, "native");
    assert!(
        servers[3]
            .2
            .starts_with("skipped: unknown MCP server type `http`"),
        "{}",
        servers[3].2
    );
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

#[test]
fn each_agent_skills_rule_skips_only_that_skill_and_names_the_rule() {
    for (folder, frontmatter, code) in [
        (
            "Upper",
            "name: Upper\ndescription: x\n",
            "skill-name-invalid",
        ),
        (
            "long-compat",
            &format!(
                "name: long-compat\ndescription: x\ncompatibility: {}\n",
                "c".repeat(501)
            ),
            "skill-compatibility-length",
        ),
        (
            "meta",
            "name: meta\ndescription: x\nmetadata: flat\n",
            "skill-field-wrong-type",
        ),
    ] {
        let dir = everything();
        write(
            dir.path(),
            &format!("skills/{folder}/SKILL.md"),
            &format!("---\n{frontmatter}---\n"),
        );
        let bundle = collect(dir.path());
        assert_valid(&bundle);
        let skills: Vec<_> = bundle
            .inventory
            .of_kind(ContributionKind::Skill)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(skills, ["review"], "{folder}");
        assert!(
            bundle.diagnostics.iter().any(|d| d.code == code
                && d.file.as_deref() == Some(format!("skills/{folder}/SKILL.md").as_str())),
            "{folder}: {:#?}",
            bundle.diagnostics
        );
    }
}

#[test]
fn a_skill_md_that_is_a_directory_is_no_skill() {
    let dir = everything();
    write(dir.path(), "skills/odd/SKILL.md/inner.md", "x");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    assert!(
        bundle
            .inventory
            .of_kind(ContributionKind::Skill)
            .all(|c| c.id != "odd")
    );
}
