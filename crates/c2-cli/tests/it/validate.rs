use std::io::Write;

use serde_json::Value;

use crate::{HELLO_RUNTIME_FILES, Sandbox, pack};

/// Five problems in one manifest: four errors and a warning, on several lines.
const BAD_MANIFEST: &str = r#"{ "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "Bad Name",
  "version": "1.0",
  "extensions": {
    "dev.codetwo": {
      "standardVersion": "1.2.0",
      "commands": [{"id": "x", "title": 5}]
    }
  }
}
"#;

#[test]
fn the_example_packs_are_valid() {
    let sandbox = Sandbox::new();
    for name in ["hello-runtime", "hello-python"] {
        let path = pack(name);
        let run = sandbox.run(&["validate", path.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(
            run.stdout.contains(&format!("{name} 1.0.0, valid")),
            "{run:#?}"
        );
        assert!(run.stdout.contains("runtime-command"), "{run:#?}");
    }
}

#[test]
fn every_problem_of_a_manifest_is_reported_with_its_source_line() {
    let sandbox = Sandbox::new();
    sandbox.write("bad/plugin.json", BAD_MANIFEST);
    let run = sandbox.run(&["validate", "bad"]);
    assert_eq!(run.code, 1, "{run:#?}");
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn json_diagnostics_carry_code_pointer_line_and_column() {
    let sandbox = Sandbox::new();
    sandbox.write("bad/plugin.json", BAD_MANIFEST);
    let run = sandbox.run(&["validate", "bad", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let json = run.json();
    let result = &json["results"][0];
    assert_eq!(result["path"], "bad");
    assert_eq!(result["valid"], false);
    assert_eq!(result["name"], Value::Null);
    let diagnostics = result["diagnostics"].as_array().unwrap();
    let codes: Vec<&str> = diagnostics
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "name-invalid",
            "version-not-semver",
            "commands-without-runtime",
            "command-id-invalid",
            "wrong-type"
        ]
    );
    let title = &diagnostics[4];
    assert_eq!(title["severity"], "error");
    assert_eq!(title["file"], "plugin.json");
    assert_eq!(title["pointer"], "/extensions/dev.codetwo/commands/0/title");
    assert_eq!(title["line"], 7);
    assert_eq!(title["column"], 41);
    assert!(title["message"].as_str().unwrap().contains("string"));
    assert_eq!(diagnostics[1]["severity"], "warning");
}

#[test]
fn json_output_names_the_bundle_and_groups_contributions_by_kind() {
    let sandbox = Sandbox::new();
    let path = pack("hello-runtime");
    let run = sandbox.run(&["--format", "json", "validate", path.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:#?}");
    let json = run.json();
    let result = &json["results"][0];
    assert_eq!(result["valid"], true);
    assert_eq!(result["name"], "hello-runtime");
    assert_eq!(result["version"], "1.0.0");
    assert_eq!(result["diagnostics"], serde_json::json!([]));
    let commands = result["contributions"]["runtime-command"]
        .as_array()
        .unwrap();
    assert_eq!(commands[0]["id"], "hello.status");
    assert_eq!(commands[0]["status"], "supported-statically");
    assert_eq!(result["contributions"]["ui-action"][0]["id"], "status");
}

#[test]
fn warnings_alone_do_not_fail_and_unsupported_contributions_are_named() {
    let sandbox = Sandbox::new();
    let bundle = sandbox.copy_hello_runtime("hooked");
    sandbox.write("hooked/hooks/hooks.json", "{}");
    let run = sandbox.run(&["validate", bundle.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.contains("warning[unsupported-component]"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("unsupported (stored, never run): hooks (hooks/hooks.json)"),
        "{run:#?}"
    );
}

#[test]
fn an_escaping_symlink_fails_validation_naming_the_link_and_its_target() {
    let sandbox = Sandbox::new();
    let bundle = sandbox.copy_hello_runtime("linked");
    std::os::unix::fs::symlink("../../outside/secret", bundle.join("escape")).unwrap();
    let run = sandbox.run(&["validate", "linked"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stdout.contains("error[symlink-escapes]"), "{run:#?}");
    assert!(
        run.stdout.contains("escape -> ../../outside/secret"),
        "{run:#?}"
    );
    assert!(run.stdout.contains(" --> escape\n"), "{run:#?}");
}

#[test]
fn a_tar_gz_archive_validates_like_its_directory() {
    let sandbox = Sandbox::new();
    let archive = sandbox.work.join("hello.tar.gz");
    let file = std::fs::File::create(&archive).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::default(),
    ));
    for name in HELLO_RUNTIME_FILES {
        builder
            .append_path_with_name(pack("hello-runtime").join(name), name)
            .unwrap();
    }
    builder
        .into_inner()
        .unwrap()
        .finish()
        .unwrap()
        .flush()
        .unwrap();

    let from_archive = sandbox.run(&["validate", "hello.tar.gz", "--format", "json"]);
    let from_dir = sandbox.run(&[
        "validate",
        pack("hello-runtime").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(from_archive.code, 0, "{from_archive:#?}");
    let (archived, plain) = (from_archive.json(), from_dir.json());
    assert_eq!(archived["results"][0]["name"], "hello-runtime");
    assert_eq!(
        archived["results"][0]["digest"],
        plain["results"][0]["digest"]
    );
}

#[test]
fn a_marketplace_whose_entries_match_their_bundles_is_valid() {
    let sandbox = Sandbox::new();
    sandbox.copy_hello_runtime("catalog/packs/hello");
    sandbox.write(
        "catalog/marketplace.json",
        r#"{"standardVersion": "1.0.0", "name": "examples", "plugins": [
  {"name": "hello-runtime", "version": "1.0.0", "source": {"kind": "local", "path": "packs/hello"}}
]}"#,
    );
    let run = sandbox.run(&["validate", "catalog/marketplace.json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("catalog examples, valid"), "{run:#?}");
    assert!(run.stdout.contains("hello-runtime  1.0.0"), "{run:#?}");
}

#[test]
fn a_marketplace_entry_that_does_not_match_its_bundle_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.copy_hello_runtime("catalog/packs/hello");
    sandbox.write(
        "catalog/marketplace.json",
        r#"{"standardVersion": "1.0.0", "plugins": [
  {"name": "hello-runtime", "version": "2.0.0", "source": {"kind": "local", "path": "packs/hello"}}
]}"#,
    );
    let run = sandbox.run(&["validate", "catalog/marketplace.json", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let json = run.json();
    assert_eq!(json["results"][0]["entries"][0]["valid"], true);
    assert_eq!(json["results"][0]["valid"], false);
    assert_eq!(
        json["results"][0]["diagnostics"][0]["code"],
        "marketplace-mismatch"
    );
}

#[test]
fn a_missing_path_exits_2_naming_it_while_other_paths_are_still_checked() {
    let sandbox = Sandbox::new();
    let good = pack("hello-python");
    let run = sandbox.run(&["validate", "no-such-bundle", good.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("no-such-bundle"), "{run:#?}");
    assert!(run.stdout.contains("hello-python 1.0.0, valid"), "{run:#?}");

    let json = sandbox.run(&["validate", "no-such-bundle", "--format", "json"]);
    assert_eq!(json.code, 2, "{json:#?}");
    assert_eq!(
        json.json()["results"][0]["error"]["kind"],
        "unreadable_path"
    );
}

#[test]
fn validate_shows_each_mcp_server_with_transport_and_status_and_stays_valid() {
    let sandbox = Sandbox::new();
    sandbox.copy_hello_runtime("hello");
    sandbox.write(
        "hello/mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
            "good": {"type": "stdio", "command": "npx"},
            "native": {"type": "http", "url": "https://example.com/mcp"}}}"#,
    );
    sandbox.write("hello/skills", "a file where a folder belongs");
    let run = sandbox.run(&["validate", "hello"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("component-wrong-kind"), "{run:#?}");
    let good = run
        .stdout
        .lines()
        .find(|l| l.contains(" good "))
        .unwrap_or_default();
    assert!(
        good.contains("supported") && good.contains("mcp.json (stdio)"),
        "{run:#?}"
    );
    let native = run
        .stdout
        .lines()
        .find(|l| l.contains(" native "))
        .unwrap_or_default();
    assert!(
        native.contains("skipped: unknown MCP server type `http`"),
        "{run:#?}"
    );
    let json = sandbox
        .run(&["validate", "hello", "--format", "json"])
        .json();
    let servers = &json["results"][0]["contributions"]["mcp-server"];
    assert_eq!(servers[0]["transport"], "stdio", "{json}");
    assert_eq!(servers[1]["status"], "skipped");
    assert!(servers[1]["reason"].as_str().unwrap().contains("http"));
}

#[test]
fn validate_warns_about_mcp_paths_under_a_folder_the_collector_skips() {
    let sandbox = Sandbox::new();
    sandbox.copy_hello_runtime("hello");
    sandbox.write(
        "hello/mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
            "npm-bin": {"type": "stdio", "command": "./node_modules/.bin/server"},
            "venv": {"type": "stdio", "command": "python3", "args": ["${PLUGIN_ROOT}/.venv/lib/server.py"]},
            "built": {"type": "stdio", "command": "node", "args": ["--x", "${PLUGIN_ROOT}/target/release/server"]},
            "fine": {"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/targets/server.js", "node_modules/x"]}}}"#,
    );
    let run = sandbox.run(&["validate", "hello"]);
    assert_eq!(run.code, 0, "warnings alone: {run:#?}");
    for (server, dir) in [
        ("npm-bin", "node_modules"),
        ("venv", ".venv"),
        ("built", "target"),
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.contains("warning[mcp-path-skipped]")
                    && l.contains(&format!("`{server}`"))
                    && l.contains(&format!("`{dir}/`"))),
            "{server}: {run:#?}"
        );
    }
    assert!(!run.stdout.contains("`fine`"), "{run:#?}");
    let json = sandbox
        .run(&["validate", "hello", "--format", "json"])
        .json();
    let skipped = json["results"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "mcp-path-skipped")
        .count();
    assert_eq!(skipped, 3, "{json:#}");
}
