//! `McpServers::mcp_servers` and `launch_mcp`: Agent Plugins §7.2 and §9 applied for session
//! composition, with real processes (the bridge to a client is c2-relay's).

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_contributions::prelude::*;
use c2_contributions::{McpLaunch, McpProcess, McpServerLaunch, McpStatus};
use c2_host::{InstallOptions, StateChange, Target};
use tokio::io::AsyncReadExt;

use crate::support::Env;

const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "mcp-demo",
  "extensions": { "dev.codetwo": { "standardVersion": "1.2.0" } }
}"#;

/// Every variant, placeholders in every expandable field, and two entries that must be skipped.
const MCP: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": {
    "local": {
      "type": "stdio",
      "command": "./bin/server",
      "args": ["--root", "${PLUGIN_ROOT}", "--data=${PLUGIN_DATA}/db", "${HOME}", "$PLUGIN_ROOT"],
      "env": { "CONFIG": "${PLUGIN_ROOT}/config.json", "LITERAL": "${OTHER}" },
      "cwd": "${PLUGIN_DATA}/work"
    },
    "shell": { "type": "stdio", "command": "sh", "args": ["-c", "exit 0"] },
    "api": { "type": "streamable-http", "url": "https://mcp.example.com/mcp", "headers": { "X-Tenant": "t1" } },
    "events": { "type": "sse", "url": "http://127.0.0.1:9/sse" },
    "bad-cwd": { "type": "stdio", "command": "sh", "cwd": "data" },
    "missing": { "type": "stdio", "command": "./bin/missing" },
    "nowhere": { "type": "stdio", "command": "c2-no-such-command-on-path" }
  }
}"#;

/// Prints what it was given, one item a line, then answers until stdin closes.
const SERVER: &str = "#!/bin/sh\nprintf 'root=%s\\ndata=%s\\npwd=%s\\nconfig=%s\\nliteral=%s\\n' \"$PLUGIN_ROOT\" \"$PLUGIN_DATA\" \"$(pwd)\" \"$CONFIG\" \"$LITERAL\"\nfor a in \"$@\"; do printf 'arg=%s\\n' \"$a\"; done\ncat >/dev/null\n";

fn write_bundle(dir: &Path, server_script: &str) {
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::write(dir.join("plugin.json"), MANIFEST).unwrap();
    std::fs::write(dir.join("mcp.json"), MCP).unwrap();
    std::fs::write(dir.join("config.json"), "{}").unwrap();
    let server = dir.join("bin/server");
    std::fs::write(&server, server_script).unwrap();
    std::fs::set_permissions(&server, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

async fn install(env: &Env, dir: &Path, trust: bool) -> String {
    env.host
        .install(
            dir.to_str().unwrap(),
            InstallOptions::default()
                .with_trust(trust)
                .with_enable(true),
        )
        .await
        .unwrap()
        .record
        .id
}

/// Closes a launched server's input and returns everything it wrote until it ended by itself
/// (the servers here end at the end of their input), then stops it.
async fn output_of(mut process: McpProcess) -> String {
    let mut output = Vec::new();
    {
        let (_, stdout, handle) = process.pipes();
        handle.close_stdin();
        tokio::time::timeout(Duration::from_secs(10), stdout.read_to_end(&mut output))
            .await
            .expect("the server ends once its input closed")
            .unwrap();
    }
    let report = process.stop().await;
    assert!(!report.forced, "{report:?}");
    String::from_utf8(output).unwrap()
}

fn by_name<'a>(rows: &'a [McpServerLaunch], name: &str) -> &'a McpServerLaunch {
    rows.iter()
        .find(|r| r.server == name)
        .unwrap_or_else(|| panic!("no server {name} in {rows:#?}"))
}

fn data_dir(env: &Env, id: &str) -> PathBuf {
    env.host
        .options()
        .plugins_dir
        .join(".data")
        .join(id)
        .join("mcp")
}

#[tokio::test]
async fn an_untrusted_bundle_lists_its_stdio_servers_as_not_trusted_without_launch_data() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let id = install(&env, &dir, false).await;
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    assert_eq!(rows.len(), 7, "{rows:#?}");
    let local = by_name(&rows, "local");
    assert_eq!(local.status, McpStatus::NotTrusted);
    assert!(local.launch.is_none());
    // Remote servers run nothing on this machine: listed verbatim whatever the trust.
    let api = by_name(&rows, "api");
    assert_eq!(
        (api.transport.as_str(), &api.status),
        ("streamable-http", &McpStatus::Supported)
    );
    assert!(
        matches!(&api.launch, Some(McpLaunch::Remote { url, headers })
        if url == "https://mcp.example.com/mcp" && headers["X-Tenant"] == "t1")
    );
    assert_eq!(by_name(&rows, "events").transport, "sse");
    assert!(
        matches!(&by_name(&rows, "bad-cwd").status, McpStatus::Skipped(why) if why.contains("data"))
    );
    // Listing created nothing for an untrusted bundle and started nothing.
    assert!(!data_dir(&env, &id).exists());
    let error = env
        .host
        .launch_mcp(&Target::User, &id, "local")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "not_trusted", "{error}");
}

#[tokio::test]
async fn a_trusted_stdio_server_is_launch_ready_with_agent_plugins_section_9_applied() {
    // A plugins directory whose path holds a placeholder proves the expansion is not recursive.
    let env = Env::with(|o| {
        o.plugins_dir = o.working_dir.clone().unwrap().join("p-${PLUGIN_DATA}");
    })
    .await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let id = install(&env, &dir, true).await;
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    let names: Vec<_> = rows.iter().map(|r| r.server.as_str()).collect();
    assert_eq!(
        names,
        [
            "local", "shell", "api", "events", "bad-cwd", "missing", "nowhere"
        ],
        "document order"
    );
    let local = by_name(&rows, "local");
    assert_eq!(local.status, McpStatus::Supported);
    let Some(McpLaunch::Stdio(launch)) = &local.launch else {
        panic!("{local:#?}");
    };
    let root =
        std::fs::canonicalize(env.host.options().plugins_dir.join(&id).join("bundle")).unwrap();
    assert!(
        !data_dir(&env, &id).exists(),
        "a listing writes nothing: PLUGIN_DATA is created at launch"
    );
    let data = std::fs::canonicalize(&env.host.options().plugins_dir)
        .unwrap()
        .join(".data")
        .join(&id)
        .join("mcp");
    assert_eq!(launch.plugin_root, root);
    assert_eq!(launch.program, root.join("bin/server"));
    let (r, d) = (root.to_str().unwrap(), data.to_str().unwrap());
    assert!(
        d.contains("${PLUGIN_DATA}"),
        "the test needs a placeholder in the path: {d}"
    );
    assert_eq!(
        launch.args,
        [
            "--root",
            r,
            &format!("--data={d}/db"),
            "${HOME}",
            "$PLUGIN_ROOT"
        ]
    );
    assert_eq!(launch.cwd, data.join("work"));
    assert!(!launch.cwd.exists(), "made at launch, not by a listing");
    let env_pairs: Vec<(&str, &str)> = launch
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        env_pairs,
        [
            ("CONFIG", format!("{r}/config.json").as_str()),
            ("LITERAL", "${OTHER}"),
            ("PLUGIN_ROOT", r),
            ("PLUGIN_DATA", d),
        ]
    );
    let shell = by_name(&rows, "shell");
    let Some(McpLaunch::Stdio(shell)) = &shell.launch else {
        panic!("{shell:#?}");
    };
    assert!(shell.program.is_absolute() && shell.program.ends_with("sh"));
    assert_eq!(shell.cwd, root, "the default cwd is the plugin root");
    for (name, needle) in [
        ("missing", "cannot be resolved"),
        ("nowhere", "not found on PATH"),
    ] {
        assert!(
            matches!(&by_name(&rows, name).status, McpStatus::Skipped(why) if why.contains(needle)),
            "{name}: {:?}",
            by_name(&rows, name).status
        );
    }

    // Launched exactly as a session would: the process sees the same definition.
    let process = env
        .host
        .launch_mcp(&Target::User, &id, "local")
        .await
        .unwrap();
    assert!(
        data.is_dir() && data.join("work").is_dir(),
        "made at launch"
    );
    let text = output_of(process).await;
    for line in [
        format!("root={r}"),
        format!("data={d}"),
        format!("pwd={}", data.join("work").display()),
        format!("config={r}/config.json"),
        "literal=${OTHER}".to_owned(),
        format!("arg=--data={d}/db"),
        "arg=${HOME}".to_owned(),
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in:\n{text}"
        );
    }
    let remote = env
        .host
        .launch_mcp(&Target::User, &id, "api")
        .await
        .unwrap_err();
    assert_eq!(remote.kind(), "remote_mcp_server", "{remote}");
    let unknown = env
        .host
        .launch_mcp(&Target::User, &id, "nope")
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), "unknown_mcp_server");
}

#[tokio::test]
async fn a_cwd_that_escapes_its_root_after_resolution_is_skipped() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let id = install(&env, &dir, true).await;
    let data = data_dir(&env, &id);
    std::fs::create_dir_all(&data).unwrap();
    std::fs::remove_dir_all(data.join("work")).ok();
    // Lexically inside PLUGIN_DATA, a link out of it once resolved.
    std::os::unix::fs::symlink(env.path("src"), data.join("work")).unwrap();
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    assert!(
        matches!(&by_name(&rows, "local").status, McpStatus::Skipped(why) if why.contains("outside")),
        "{:?}",
        by_name(&rows, "local").status
    );
}

#[tokio::test]
async fn only_enabled_bundles_are_listed_and_plugin_data_survives_reinstall_until_uninstall() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let id = install(&env, &dir, true).await;
    assert!(!env.host.mcp_servers(&Target::User).unwrap().is_empty());
    let data = data_dir(&env, &id);
    // As a launched server would: the host makes the directory at launch.
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("state.txt"), "kept").unwrap();

    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert!(env.host.mcp_servers(&Target::User).unwrap().is_empty());
    env.host
        .set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap();

    // New content from the same source: same id, untrusted again, data kept.
    write_bundle(
        &dir,
        &SERVER.replace("cat >/dev/null", "echo v2; cat >/dev/null"),
    );
    let again = install(&env, &dir, false).await;
    assert_eq!(again, id);
    assert_eq!(
        std::fs::read_to_string(data.join("state.txt")).unwrap(),
        "kept"
    );
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    assert_eq!(by_name(&rows, "local").status, McpStatus::NotTrusted);

    env.host.uninstall(&id).await.unwrap();
    assert!(!data.exists(), "PLUGIN_DATA is removed on uninstall");
    assert!(
        !data.parent().unwrap().exists(),
        "no empty data directory of the bundle is left"
    );
    assert!(env.host.mcp_servers(&Target::User).unwrap().is_empty());
}

#[tokio::test]
async fn a_project_lists_what_is_enabled_there_and_follows_the_user_switch() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let id = install(&env, &dir, true).await;
    let target = Target::Project(env.project("p1"));
    assert_eq!(
        env.host.mcp_servers(&target).unwrap().len(),
        7,
        "inherited from the user"
    );
    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert!(env.host.mcp_servers(&target).unwrap().is_empty());
}

#[tokio::test]
async fn a_command_with_a_space_is_one_token_and_launches() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    std::fs::rename(dir.join("bin/server"), dir.join("bin/probe token.sh")).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
            "token": {"type": "stdio", "command": "./bin/probe token.sh", "args": ["arg with spaces", ""]}}}"#,
    )
    .unwrap();
    let id = install(&env, &dir, true).await;
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    assert_eq!(rows[0].status, McpStatus::Supported, "{rows:#?}");
    let process = env
        .host
        .launch_mcp(&Target::User, &id, "token")
        .await
        .unwrap();
    let text = output_of(process).await;
    assert!(text.lines().any(|l| l == "arg=arg with spaces"), "{text}");
    assert!(
        text.lines().any(|l| l == "arg="),
        "an empty argument stays: {text}"
    );
}

#[tokio::test]
async fn installing_enabling_trusting_and_listing_never_start_a_server() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    let marker = env.path("started");
    write_bundle(
        &dir,
        &format!("#!/bin/sh\ntouch '{}'\ncat >/dev/null\n", marker.display()),
    );
    let id = install(&env, &dir, true).await;
    env.host
        .set_state(&id, &Target::User, StateChange::Enable)
        .await
        .unwrap();
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    assert_eq!(by_name(&rows, "local").status, McpStatus::Supported);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!marker.exists(), "a server started without launch_mcp");
    let process = env
        .host
        .launch_mcp(&Target::User, &id, "local")
        .await
        .unwrap();
    output_of(process).await;
    assert!(marker.exists(), "launch_mcp starts it");
}

#[tokio::test]
async fn servers_of_an_invalid_mcp_json_are_listed_disabled_with_the_reason() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    std::fs::write(
        dir.join("mcp.json"),
        MCP.replace("1.0.0/mcp.schema.json", "1.1.0/mcp.schema.json"),
    )
    .unwrap();
    install(&env, &dir, true).await;
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    assert_eq!(rows.len(), 7);
    for row in &rows {
        assert!(row.launch.is_none());
        assert!(
            matches!(&row.status, McpStatus::Disabled(why) if why.contains("1.1.0")),
            "{row:#?}"
        );
    }
}

#[tokio::test]
async fn an_mcp_json_past_the_file_limit_is_not_read() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    install(&env, &dir, true).await;
    assert_eq!(env.host.mcp_servers(&Target::User).unwrap().len(), 7);
    let exact = MCP.len() as u64;
    let at = Env::with(|o| {
        o.plugins_dir = env.host.options().plugins_dir.clone();
        o.limits.max_file_bytes = exact;
    })
    .await;
    assert_eq!(
        at.host.mcp_servers(&Target::User).unwrap().len(),
        7,
        "at the limit"
    );
    drop(at);
    let past = Env::with(|o| {
        o.plugins_dir = env.host.options().plugins_dir.clone();
        o.limits.max_file_bytes = exact - 1;
    })
    .await;
    assert!(
        past.host.mcp_servers(&Target::User).unwrap().is_empty(),
        "one byte past it"
    );
}

#[tokio::test]
async fn a_stdio_server_whose_installed_files_changed_is_refused_as_content_changed() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let id = install(&env, &dir, true).await;
    let rows = env.host.mcp_servers(&Target::User).unwrap();
    let Some(McpLaunch::Stdio(launch)) = &by_name(&rows, "local").launch else {
        panic!("local is a stdio server: {rows:#?}");
    };
    let marker = env.path("edited-server-ran");
    std::fs::write(
        launch.plugin_root.join("bin/server"),
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    let error = env
        .host
        .launch_mcp(&Target::User, &id, "local")
        .await
        .expect_err("an edited server must not launch");
    assert_eq!(error.kind(), "content_changed", "{error}");
    assert!(error.to_string().contains("changed on disk"), "{error}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!marker.exists(), "the edited server ran");
}

#[tokio::test]
async fn a_project_disable_of_a_bundle_with_language_servers_leaves_its_mcp_servers_user_wide() {
    let env = Env::new().await;
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, SERVER);
    let mut manifest: serde_json::Value = serde_json::from_str(MANIFEST).unwrap();
    manifest["extensions"]["dev.codetwo"]["languageServers"] =
        serde_json::json!([{"id": "ls", "languages": ["zig"], "command": "bin/server"}]);
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let id = install(&env, &dir, true).await;
    let project = env.project("p1");
    let target = Target::Project(project.clone());
    env.host
        .set_state(&id, &target, StateChange::Disable)
        .await
        .unwrap();
    // Its language servers are off in the project; its MCP servers follow the user's switch.
    assert!(env.host.language_servers(&project).unwrap().is_empty());
    assert_eq!(env.host.mcp_servers(&target).unwrap().len(), 7);
    env.host
        .set_state(&id, &Target::User, StateChange::Disable)
        .await
        .unwrap();
    assert!(env.host.mcp_servers(&target).unwrap().is_empty());
}
