//! `enable|disable|inherit <ID> --component <KIND>:<LOCAL-ID>` and `plan --component` through
//! the real binary with the Node `hello-runtime` pack: every listing marks the choice, a
//! disabled command is refused as `disabled`, a disabled MCP server, UI descriptor and scaffold
//! leave their surfaces, a reinstall keeps the choices and reports a vanished one once.

use serde_json::{Value, json};

use crate::{Run, Sandbox};

const MCP: &str = r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"tool": {"type": "stdio", "command": "sh", "args": ["-c", "cat"]}}}"#;

/// hello-runtime plus skills (`review`, and `extra` when asked), scaffold `web` and an MCP
/// server `tool`, under `work/hello`.
fn hello(sandbox: &Sandbox, version: &str, extra: bool) {
    let dir = sandbox.copy_hello_runtime("hello");
    let path = dir.join("plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["version"] = json!(version);
    std::fs::write(&path, manifest.to_string()).unwrap();
    sandbox.write("hello/mcp.json", MCP);
    sandbox.write("hello/scaffolds/web/index.html", "<p>hi</p>\n");
    let mut skills = vec!["review"];
    if extra {
        skills.push("extra");
    } else {
        let _ = std::fs::remove_dir_all(dir.join("skills/extra"));
    }
    for skill in skills {
        sandbox.write(
            &format!("hello/skills/{skill}/SKILL.md"),
            &format!("---\nname: {skill}\ndescription: The {skill} skill.\n---\nDo it.\n"),
        );
    }
}

fn ok(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:#?}");
    run.json()["result"].clone()
}

/// The error's message and, after it, its hint (the advice a person is shown).
fn failed(run: &Run, kind: &str) -> String {
    assert_eq!(run.code, 1, "{run:#?}");
    let error = &run.json()["error"];
    assert_eq!(error["kind"], kind, "{run:#?}");
    let message = error["message"].as_str().unwrap();
    match error["hint"].as_str() {
        Some(hint) => format!("{message}\nhint: {hint}"),
        None => message.to_owned(),
    }
}

fn install(sandbox: &Sandbox) -> Value {
    ok(&sandbox.run(&[
        "install", "hello", "--trust", "--enable", "--format", "json",
    ]))
}

fn component_state(sandbox: &Sandbox, component: &str) -> String {
    let listed = ok(&sandbox.run(&["list", "--format", "json"]));
    listed[0]["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == component)
        .unwrap_or_else(|| panic!("{component} in {listed:#}"))["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_component_switched_off_leaves_every_listing_and_surface_and_inherit_brings_it_back() {
    let sandbox = Sandbox::new();
    hello(&sandbox, "1.0.0", false);
    let id = install(&sandbox)["id"].as_str().unwrap().to_owned();
    let repo = sandbox.work.join("repo");
    crate::git_repo(&repo, &[("README.md", "hi\n")]);
    let args = json!({"cwd": repo}).to_string();
    ok(&sandbox.run(&[
        "invoke",
        "hello.status",
        "--args",
        &args,
        "--format",
        "json",
    ]));

    for component in [
        "runtime-command:hello.status",
        "mcp-server:tool",
        "scaffold:web",
        "skill:review",
        "ui-action:status",
    ] {
        let done =
            ok(&sandbox.run(&["disable", &id, "--component", component, "--format", "json"]));
        assert_eq!(done["component"], format!("{id}:{component}"));
        assert_eq!(component_state(&sandbox, component), "disabled");
    }
    let text = sandbox.run(&["disable", &id, "--component", "skill:review"]);
    assert_eq!(text.code, 0, "{text:#?}");
    assert!(
        text.stdout
            .contains(&format!("{id}:skill:review disabled in the user scope")),
        "{text:#?}"
    );

    let message = failed(
        &sandbox.run(&[
            "invoke",
            "hello.status",
            "--args",
            &args,
            "--format",
            "json",
        ]),
        "disabled",
    );
    assert!(
        message.contains(&format!(
            "c2-plugins enable {id} --component runtime-command:hello.status"
        )),
        "{message}"
    );
    // Listings: list marks the contribution, catalog the realm's components, the text says so.
    let listed = ok(&sandbox.run(&["list", "--format", "json"]));
    let skills = listed[0]["contributions"]["skill"].as_array().unwrap();
    assert_eq!(skills[0]["policy"], "disabled", "{listed:#}");
    let plain = sandbox.run(&["list"]);
    assert!(
        plain.stdout.contains("disabled components (user):")
            && plain.stdout.contains("runtime-command:hello.status"),
        "{plain:#?}"
    );
    let catalog = ok(&sandbox.run(&["catalog", "--format", "json"]));
    let row = catalog
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == format!("bundle:{id}"))
        .unwrap()
        .clone();
    assert!(
        row["components"]
            .as_array()
            .unwrap()
            .contains(&json!({"component": "mcp-server:tool", "state": "disabled"})),
        "{row:#}"
    );
    // Surfaces: the UI catalog, MCP composition and the scaffold.
    assert_eq!(ok(&sandbox.run(&["ui", "--format", "json"])), json!({}));
    let mcp = ok(&sandbox.run(&["mcp", "--format", "json"]));
    assert!(
        mcp[0]["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("disabled: component mcp-server:tool")),
        "{mcp:#}"
    );
    let refused = sandbox.run(&["mcp", "run", &format!("{id}/tool")]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains(&format!("component mcp-server:tool of {id} is disabled")),
        "{refused:#?}"
    );
    std::fs::create_dir(sandbox.work.join("site")).unwrap();
    failed(
        &sandbox.run(&["scaffold", &id, "web", "site", "--format", "json"]),
        "disabled",
    );
    assert!(!sandbox.work.join("site/index.html").exists());

    // Inherit, user-wide: the override goes and everything is back.
    for component in [
        "runtime-command:hello.status",
        "mcp-server:tool",
        "scaffold:web",
        "ui-action:status",
    ] {
        ok(&sandbox.run(&["inherit", &id, "--component", component, "--format", "json"]));
        assert_eq!(component_state(&sandbox, component), "enabled");
    }
    ok(&sandbox.run(&[
        "invoke",
        "hello.status",
        "--args",
        &args,
        "--format",
        "json",
    ]));
    assert_ne!(ok(&sandbox.run(&["ui", "--format", "json"])), json!({}));
    ok(&sandbox.run(&["scaffold", &id, "web", "site", "--format", "json"]));
    assert_eq!(component_state(&sandbox, "skill:review"), "disabled");
}

#[test]
fn a_bad_component_is_refused_with_what_is_valid_and_a_project_choice_stays_in_the_project() {
    let sandbox = Sandbox::new();
    hello(&sandbox, "1.0.0", false);
    let id = install(&sandbox)["id"].as_str().unwrap().to_owned();
    let message = failed(
        &sandbox.run(&[
            "disable",
            &id,
            "--component",
            "widget:x",
            "--format",
            "json",
        ]),
        "invalid_component",
    );
    assert!(message.contains("runtime-command"), "{message}");
    let message = failed(
        &sandbox.run(&[
            "disable",
            &id,
            "--component",
            "skill:nope",
            "--format",
            "json",
        ]),
        "unknown_component",
    );
    assert!(
        message.contains("skill:review") && message.contains("runtime-command:hello.status"),
        "{message}"
    );
    // hello-runtime runs per project: a project's choice stays in that project.
    let repo = sandbox.work.join("repo");
    crate::git_repo(&repo, &[("README.md", "hi\n")]);
    let args = json!({"cwd": repo}).to_string();
    let project = repo.to_str().unwrap();
    ok(&sandbox.run(&[
        "disable",
        &id,
        "--component",
        "runtime-command:hello.status",
        "--project",
        project,
        "--format",
        "json",
    ]));
    let message = failed(
        &sandbox.run(&[
            "invoke",
            "hello.status",
            "--args",
            &args,
            "--project",
            project,
            "--format",
            "json",
        ]),
        "disabled",
    );
    assert!(message.contains("--project"), "{message}");
    ok(&sandbox.run(&[
        "invoke",
        "hello.status",
        "--args",
        &args,
        "--format",
        "json",
    ]));
    assert_eq!(
        component_state(&sandbox, "runtime-command:hello.status"),
        "enabled",
        "the user's choice is untouched"
    );
    // `inherit` without a component still needs a project.
    let usage = sandbox.run(&["inherit", &id]);
    assert_eq!(usage.code, 2, "{usage:#?}");
    assert_eq!(component_state(&sandbox, "skill:review"), "enabled");
}

#[test]
fn a_reinstall_keeps_the_choices_and_reports_a_vanished_one_once() {
    let sandbox = Sandbox::new();
    hello(&sandbox, "1.0.0", true);
    let id = install(&sandbox)["id"].as_str().unwrap().to_owned();
    for component in ["skill:review", "skill:extra"] {
        ok(&sandbox.run(&["disable", &id, "--component", component, "--format", "json"]));
    }
    hello(&sandbox, "1.1.0", false);
    let again = sandbox.run(&["install", "hello", "--trust"]);
    assert_eq!(again.code, 0, "{again:#?}");
    let warnings: Vec<&str> = again
        .stderr
        .lines()
        .filter(|l| l.contains("skill:extra") && l.contains("dropped"))
        .collect();
    assert_eq!(warnings.len(), 1, "{again:#?}");
    assert_eq!(component_state(&sandbox, "skill:review"), "disabled");
    let policy = std::fs::read_to_string(sandbox.plugins.join("policy.json")).unwrap();
    assert!(!policy.contains("skill:extra"), "{policy}");

    hello(&sandbox, "1.2.0", false);
    let third = ok(&sandbox.run(&["install", "hello", "--format", "json"]));
    assert_eq!(third["droppedChoices"], json!([]), "{third:#}");
    assert_eq!(component_state(&sandbox, "skill:review"), "disabled");
}

#[test]
fn a_component_choice_is_planned_to_a_file_and_applied_once() {
    let sandbox = Sandbox::new();
    hello(&sandbox, "1.0.0", false);
    let id = install(&sandbox)["id"].as_str().unwrap().to_owned();
    let planned = ok(&sandbox.run(&[
        "plan",
        &id,
        "disable",
        "--component",
        "mcp-server:tool",
        "--out",
        "p.json",
        "--format",
        "json",
    ]));
    assert_eq!(planned["plan"]["component"], "mcp-server:tool");
    assert_eq!(component_state(&sandbox, "mcp-server:tool"), "enabled");
    ok(&sandbox.run(&["apply", "p.json", "--format", "json"]));
    assert_eq!(component_state(&sandbox, "mcp-server:tool"), "disabled");
    failed(
        &sandbox.run(&["apply", "p.json", "--format", "json"]),
        "stale_plan",
    );
}

#[test]
fn an_mcp_server_named_with_the_empty_string_is_switched_off_on_its_own() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "names/plugin.json",
        &json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
                "name": "names", "version": "1.0.0",
                "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}})
        .to_string(),
    );
    sandbox.write(
        "names/mcp.json",
        &json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
                "mcpServers": {
                    "": {"type": "streamable-http", "url": "https://empty.example.com/mcp"},
                    "\"q\"": {"type": "streamable-http", "url": "https://quote.example.com/mcp"},
                    "x": {"type": "streamable-http", "url": "https://x.example.com/mcp"}}})
        .to_string(),
    );
    let id = ok(&sandbox.run(&["install", "names", "--enable", "--format", "json"]))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let status = |server: &str| {
        let rows = ok(&sandbox.run(&["mcp", "--format", "json"]));
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["server"] == server)
            .unwrap_or_else(|| panic!("{server:?} in {rows:#}"))["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // Each name has its one form: the empty one and one starting with `"` as JSON strings.
    for component in [r#"mcp-server:"""#, r#"mcp-server:"\"q\"""#, "mcp-server:x"] {
        assert_eq!(
            component_state(&sandbox, component),
            "enabled",
            "{component}"
        );
    }
    ok(&sandbox.run(&[
        "disable",
        &id,
        "--component",
        r#"mcp-server:"""#,
        "--format",
        "json",
    ]));
    assert_eq!(component_state(&sandbox, r#"mcp-server:"""#), "disabled");
    assert!(
        status("").starts_with("disabled: component mcp-server:\"\""),
        "{}",
        status("")
    );
    assert_eq!(status("x"), "supported");
    assert_eq!(status("\"q\""), "supported");
    assert_eq!(component_state(&sandbox, "mcp-server:x"), "enabled");
    // A plain id may be quoted too; no local id at all is still refused.
    ok(&sandbox.run(&[
        "disable",
        &id,
        "--component",
        r#"mcp-server:"x""#,
        "--format",
        "json",
    ]));
    assert_eq!(component_state(&sandbox, "mcp-server:x"), "disabled");
    assert_eq!(status("\"q\""), "supported");
    let bare = sandbox.run(&[
        "disable",
        &id,
        "--component",
        "mcp-server:",
        "--format",
        "json",
    ]);
    assert!(
        failed(&bare, "invalid_component").contains("mcp-server:\"\""),
        "{bare:#?}"
    );
    ok(&sandbox.run(&[
        "inherit",
        &id,
        "--component",
        r#"mcp-server:"""#,
        "--format",
        "json",
    ]));
    assert_eq!(status(""), "supported");
}
