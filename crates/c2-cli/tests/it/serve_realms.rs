//! Listings of a project realm through `c2-plugins serve` and the one-shot CLI: a bundle enabled
//! only in a project shows its dormant commands and UI descriptors there before anything was
//! invoked, and listing starts no process.

use serde_json::{Value, json};

use crate::serve::{counting_panel, exit_code, serve_on_socket, sigterm, socket_client};
use crate::{Sandbox, git_repo};

#[test]
fn a_bundle_enabled_only_in_a_project_lists_its_dormant_commands_and_descriptors_there_before_first_use()
 {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    let panel = counting_panel(&sandbox);
    let install = sandbox.run(&["install", panel.to_str().unwrap(), "--trust"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let id = install.stdout.trim().to_owned();
    let project = repo.to_str().unwrap();
    let enable = sandbox.run(&["enable", &id, "--project", project]);
    assert_eq!(enable.code, 0, "{enable:#?}");

    // The CLI, in a fresh process each time: nothing was ever invoked in the project.
    let commands = sandbox.run(&["commands", "--project", project, "--format", "json"]);
    assert_eq!(commands.code, 0, "{commands:#?}");
    let rows = commands.json()["result"].clone();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "acts.panel")
        .unwrap_or_else(|| panic!("acts.panel is not listed: {rows:#}"));
    assert_eq!(row["state"], "dormant", "{row:#}");
    let ui = sandbox.run(&["ui", "--project", project, "--format", "json"]);
    assert_eq!(ui.code, 0, "{ui:#?}");
    let slot = ui.json()["result"]["host.actions"].clone();
    assert_eq!(slot[0]["id"], "panel", "{slot:#}");
    assert_eq!(slot[0]["bundle"], id.as_str(), "{slot:#}");

    // The relay, likewise, and the listings start no process.
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mut client = socket_client(&socket);
    let rows = client.ok("realm/commands", json!({"project": project}));
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "acts.panel")
        .unwrap_or_else(|| panic!("acts.panel is not listed: {rows:#}"));
    assert_eq!(row["state"], "dormant", "{row:#}");
    let slots = client.ok("ui/catalog", json!({"project": project}));
    assert_eq!(slots["host.actions"][0]["id"], "panel", "{slots:#}");
    let pid = client.ok("plugins/runtimePid", json!({"id": id, "project": project}));
    assert_eq!(pid["pid"], Value::Null, "{pid:#}");
    // The user realm, where it is not enabled, lists neither.
    let user = client.ok("realm/commands", json!({}));
    assert!(
        !user
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["name"] == "acts.panel"),
        "{user:#}"
    );

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}
