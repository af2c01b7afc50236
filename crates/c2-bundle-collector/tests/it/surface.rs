//! The executable surface of a bundle and the review of a replace: what an update changes in
//! what can run, beside the files it adds, removes and changes.

use c2_bundle_collector::{
    ChangeKind, ExecutableSurface, InstallRequest, SourceIdentity, Store, StoreOptions,
    SurfaceItem, SurfaceKind, UpdateReview,
};

use crate::support::*;

const MCP: &str = r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
  "files": {"type": "stdio", "command": "npx", "args": ["files"], "cwd": "${PLUGIN_DATA}"},
  "web": {"type": "streamable-http", "url": "https://example.org/mcp"}
}}"#;

fn kinds(surface: &ExecutableSurface) -> Vec<(SurfaceKind, String)> {
    surface.items.keys().cloned().collect()
}

#[test]
fn the_surface_holds_the_runtime_commands_mcp_servers_hooks_and_skill_scripts_only() {
    let dir = hello_bundle();
    let root = dir.path();
    write(root, "mcp.json", MCP);
    write(root, "hooks/hooks.json", "{}");
    write(
        root,
        "skills/review/SKILL.md",
        "---\nname: review\ndescription: d\n---\n",
    );
    write(root, "skills/review/scripts/check.py", "print(1)\n");
    write_exec(root, "skills/review/tool", "#!/bin/sh\n");
    write(root, "skills/review/notes.md", "notes\n");
    let surface = ExecutableSurface::of(&collect(root));
    assert_eq!(
        kinds(&surface),
        vec![
            (SurfaceKind::Runtime, "runtime".to_owned()),
            (SurfaceKind::McpServer, "files".to_owned()),
            (SurfaceKind::McpServer, "web".to_owned()),
            (SurfaceKind::Command, "hello.run".to_owned()),
            (SurfaceKind::Hook, "hooks/hooks.json".to_owned()),
            (
                SurfaceKind::SkillScript,
                "skills/review/scripts/check.py".to_owned()
            ),
            (SurfaceKind::SkillScript, "skills/review/tool".to_owned()),
        ]
    );
    let files = &surface.items[&(SurfaceKind::McpServer, "files".to_owned())];
    assert_eq!(
        files,
        &SurfaceItem::Process {
            command: "npx".to_owned(),
            args: vec!["files".to_owned()],
            env: Default::default(),
            cwd: Some("${PLUGIN_DATA}".to_owned()),
        }
    );
}

#[test]
fn a_review_names_each_surface_change_and_every_changed_file() {
    let old_dir = hello_bundle();
    let new_dir = hello_bundle();
    let new = new_dir.path();
    let manifest = MANIFEST
        .replace(r#""--greeting""#, r#""--shout""#)
        .replace(
            r#""runtime":"#,
            r#""languageServers": [{"id": "zls", "languages": ["zig"], "command": "zls", "args": ["--stdio"]}], "runtime":"#,
        );
    write(new, "plugin.json", &manifest);
    write(new, "README.md", "# hello again\n");
    write(new, "skills/review/scripts/run.sh", "echo\n");
    let review = UpdateReview::between("x", &collect(old_dir.path()), &collect(new));
    let described: Vec<String> = review.surface.iter().map(|c| c.describe()).collect();
    assert_eq!(
        described,
        vec![
            r#"runtime changed: args ["--greeting", "lib/greet.txt"] -> ["--shout", "lib/greet.txt"]"#
                .to_owned(),
            r#"language server `zls` added (command `zls`, args ["--stdio"])"#.to_owned(),
            "skill script `skills/review/scripts/run.sh` added (file)".to_owned(),
        ]
    );
    assert_eq!(review.surface[1].change, ChangeKind::Added);
    assert_eq!(review.files.added, vec!["skills/review/scripts/run.sh"]);
    assert_eq!(review.files.changed, vec!["README.md", "plugin.json"]);
    assert!(review.files.removed.is_empty());
    assert!(
        review
            .reason()
            .starts_with("executable surface changed: runtime changed")
    );
}

#[test]
fn content_that_changes_no_executable_item_says_so() {
    let old_dir = hello_bundle();
    let new_dir = hello_bundle();
    write(new_dir.path(), "README.md", "# other words\n");
    let review = UpdateReview::between("x", &collect(old_dir.path()), &collect(new_dir.path()));
    assert!(review.surface.is_empty());
    assert_eq!(review.files.changed, vec!["README.md"]);
    assert_eq!(
        review.reason(),
        "content changed, executable surface unchanged"
    );
}

#[test]
fn a_replace_records_its_review_and_a_same_content_reinstall_records_none() {
    let store_dir = tempfile::tempdir().unwrap();
    let store = Store::open(store_dir.path(), StoreOptions::default()).unwrap();
    let src = hello_bundle();
    let request = InstallRequest::new(SourceIdentity::local(src.path()).unwrap());
    let first = store.install(&collect(src.path()), &request).unwrap();
    assert_eq!(first.review, None);
    let again = store.install(&collect(src.path()), &request).unwrap();
    assert_eq!(again.review, None);
    write(src.path(), "hooks/hooks.json", "{}");
    let changed = collect(src.path());
    let preview = store.review_replace(&first.id, &changed).unwrap();
    assert_eq!(
        store
            .review_replace(&first.id, &collect(src.path()))
            .unwrap()
            .reason(),
        preview.reason()
    );
    let stored = store.install(&changed, &request).unwrap();
    assert_eq!(stored.review.as_ref(), Some(&preview));
    assert_eq!(preview.from_digest, first.digest);
    assert_eq!(
        preview.reason(),
        "executable surface changed: hook `hooks/hooks.json` added (file)"
    );
    assert_eq!(store.get(&first.id).unwrap().review, Some(preview));
}

#[test]
fn hidden_text_in_commands_agents_and_runtime_scripts_warns_and_in_their_names_refuses() {
    let dir = hello_bundle();
    let root = dir.path();
    write_exec(root, "bin/hello", "#!/bin/sh\necho hi # \u{202e}gnp.exe\n");
    write(root, "lib/greet.txt", "hello \u{2066}there\u{2069}\n");
    write(
        root,
        "agents/reviewer.md",
        "# reviewer\nSay \u{200b}nothing.\n",
    );
    write(root, "commands/dep\u{200d}loy.md", "Deploy it.\n");
    write(root, "README.md", "not scanned \u{202e}\n");
    let bundle = collect(root);
    let found: Vec<String> = bundle
        .diagnostics
        .iter()
        .map(|d| {
            format!(
                "{} {} {} {}:{}",
                d.severity.as_str(),
                d.code,
                d.file.as_deref().unwrap_or("-"),
                d.line.unwrap_or(0),
                d.column.unwrap_or(0)
            )
        })
        .collect();
    insta::assert_snapshot!(found.join("\n"));
    assert!(!bundle.is_valid());
}
