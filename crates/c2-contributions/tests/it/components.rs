//! Per-component policy end to end with the fixture runtime: a disabled contribution leaves
//! every surface (stubs and calls, UI catalog and activation, connectors, language-server
//! resolution, MCP composition, listings), in the user realm and in a project realm; a
//! runtime whose every command is disabled never starts; unknown kinds and local ids are
//! refused with the valid ones.

use std::path::Path;
use std::time::Duration;

use c2_contributions::prelude::*;
use c2_contributions::{ConnectorRequest, McpStatus, Resolved, UiRequest};
use c2_host::{ComponentRef, HostError, StateChange, Target};
use serde_json::json;

use crate::support::{
    Env, KIT_LANGUAGE as LANGUAGE, assert_disabled, component, component_kit as kit,
};

fn ui_ids(env: &Env, target: &Target) -> Vec<String> {
    env.host
        .ui_catalog(target)
        .unwrap()
        .values()
        .flatten()
        .map(|entry| entry.id.clone())
        .collect()
}

fn ui(id: &str, project: Option<&Path>) -> UiRequest {
    UiRequest {
        id: id.to_owned(),
        ui: "panel".to_owned(),
        project: project.map(Path::to_path_buf),
        ..Default::default()
    }
}

fn connector(id: &str, project: Option<&Path>) -> ConnectorRequest {
    ConnectorRequest {
        id: id.to_owned(),
        connector: "chat".to_owned(),
        operation: "message.send".to_owned(),
        input: json!({"text": "hi"}),
        project: project.map(Path::to_path_buf),
    }
}

fn mcp_status(env: &Env, target: &Target) -> McpStatus {
    env.host
        .mcp_servers(target)
        .unwrap()
        .into_iter()
        .find(|row| row.server == "tool")
        .expect("the tool server is listed")
        .status
}

#[tokio::test]
async fn a_disabled_component_leaves_every_surface_in_the_user_realm_and_comes_back() {
    let env = Env::new().await;
    env.host.register_provider("example-chat").unwrap();
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, true))
        .await;
    let user = Target::User;
    let project = env.project("app");

    // Everything is there first. The echo is no host.actions document, so a render that
    // reaches the plugin fails its validation.
    assert_eq!(ui_ids(&env, &user), ["panel", "acts"]);
    env.host.invoke_ui(&ui(&id, None)).await.unwrap();
    let acts = UiRequest {
        ui: "acts".to_owned(),
        ..ui(&id, None)
    };
    let rendered = env.host.invoke_ui(&acts).await.unwrap_err();
    assert_eq!(rendered.kind(), "invalid_host_actions", "{rendered}");
    env.host
        .invoke_connector(&connector(&id, None))
        .await
        .unwrap();
    assert!(matches!(
        env.host.resolve_language_server(&project, LANGUAGE),
        Ok(Resolved::Plugin { .. })
    ));
    assert_eq!(mcp_status(&env, &user), McpStatus::Supported);

    for text in [
        "ui-action:panel",
        "ui-action:acts",
        "connector:chat",
        "language-server:ls",
        "mcp-server:tool",
        "skill:review",
        "scaffold:starter",
        "runtime-command:fixture.echo",
    ] {
        env.set(&id, &user, text, StateChange::Disable).await;
        assert_eq!(env.listed_state(&id, text), "disabled", "{text}");
        assert_eq!(env.catalog_state(&id, &user, text), "disabled", "{text}");
    }
    assert_eq!(
        env.listed_state(&id, "runtime-command:fixture.info"),
        "enabled"
    );

    assert!(ui_ids(&env, &user).is_empty(), "the UI catalog drops it");
    assert_disabled(
        &env.host.invoke_ui(&ui(&id, None)).await.unwrap_err(),
        "ui-action:panel",
    );
    assert_disabled(
        &env.host.invoke_ui(&acts).await.unwrap_err(),
        "ui-action:acts",
    );
    let statuses = env.host.connectors();
    assert!(statuses.iter().all(|c| c.disabled), "{statuses:?}");
    assert_disabled(
        &env.host
            .invoke_connector(&connector(&id, None))
            .await
            .unwrap_err(),
        "connector:chat",
    );
    // The project inherits the user's choices.
    let unresolved = env
        .host
        .resolve_language_server(&project, LANGUAGE)
        .unwrap_err();
    assert_eq!(unresolved.kind(), "unsupported", "{unresolved}");
    assert!(env.host.language_servers(&project).unwrap().is_empty());
    let listing = env.host.language_listing(&user).unwrap();
    assert!(listing.servers.iter().all(|s| s.disabled && !s.active));
    assert!(
        matches!(mcp_status(&env, &user), McpStatus::Disabled(why) if why.contains("mcp-server:tool"))
    );
    let launch = env.host.launch_mcp(&user, &id, "tool").await.unwrap_err();
    assert_disabled(&launch, "mcp-server:tool");
    // The disabled command is not registered and a call is refused as `disabled`; the other
    // command still runs.
    let commands = env.host.commands(&user).unwrap();
    assert!(commands.iter().all(|c| c.name != "fixture.echo"));
    assert_disabled(
        &env.invoke("fixture.echo", json!({})).await.unwrap_err(),
        "runtime-command:fixture.echo",
    );
    env.invoke("fixture.info", json!({})).await.unwrap();
    let store = env.host.options().plugins_dir.clone();
    assert!(c2_host::disabled_for_user(
        &store,
        &id,
        &component("scaffold:starter")
    ));

    // Inherit drops the override: everything is back.
    for text in [
        "ui-action:panel",
        "ui-action:acts",
        "connector:chat",
        "language-server:ls",
        "mcp-server:tool",
        "runtime-command:fixture.echo",
    ] {
        env.set(&id, &user, text, StateChange::Inherit).await;
        assert_eq!(env.listed_state(&id, text), "enabled", "{text}");
    }
    assert_eq!(ui_ids(&env, &user), ["panel", "acts"]);
    env.host.invoke_ui(&ui(&id, None)).await.unwrap();
    assert_eq!(
        env.host.invoke_ui(&acts).await.unwrap_err().kind(),
        "invalid_host_actions"
    );
    env.host
        .invoke_connector(&connector(&id, None))
        .await
        .unwrap();
    assert!(env.host.resolve_language_server(&project, LANGUAGE).is_ok());
    assert_eq!(mcp_status(&env, &user), McpStatus::Supported);
    assert_eq!(
        env.invoke("fixture.echo", json!({"x": 1})).await.unwrap(),
        json!({"x": 1})
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_runtime_whose_every_command_is_disabled_never_starts() {
    let env = Env::new().await;
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, true))
        .await;
    for text in [
        "runtime-command:fixture.echo",
        "runtime-command:fixture.info",
    ] {
        env.set(&id, &Target::User, text, StateChange::Disable)
            .await;
    }
    for command in ["fixture.echo", "fixture.info"] {
        assert_disabled(
            &env.invoke(command, json!({})).await.unwrap_err(),
            &format!("runtime-command:{command}"),
        );
    }
    // The UI and the connector go through those commands: refused before anything runs.
    assert!(ui_ids(&env, &Target::User).is_empty());
    env.host.register_provider("example-chat").unwrap();
    assert!(
        env.host
            .invoke_connector(&connector(&id, None))
            .await
            .is_err()
    );
    assert!(env.host.invoke_ui(&ui(&id, None)).await.is_err());
    assert_eq!(env.host.stats().spawns, 0, "no process was spawned");
    assert_eq!(env.host.runtime_pid(&id, &Target::User).unwrap(), None);
    // One command back: the process starts on its first call.
    env.set(
        &id,
        &Target::User,
        "runtime-command:fixture.info",
        StateChange::Enable,
    )
    .await;
    env.invoke("fixture.info", json!({})).await.unwrap();
    assert_eq!(env.host.stats().spawns, 1);
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_project_choice_overrides_the_user_and_inherit_removes_it() {
    let env = Env::new().await;
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, true))
        .await;
    let (app, other) = (env.project("app"), env.project("other"));
    let in_app = Target::Project(app.clone());
    // The user disables the panel and echo; the project turns echo back on.
    env.set(&id, &Target::User, "ui-action:panel", StateChange::Disable)
        .await;
    env.set(
        &id,
        &Target::User,
        "runtime-command:fixture.echo",
        StateChange::Disable,
    )
    .await;
    env.set(
        &id,
        &in_app,
        "runtime-command:fixture.echo",
        StateChange::Enable,
    )
    .await;
    assert_eq!(
        env.host
            .invoke(&in_app, "fixture.echo", json!({"p": 1}))
            .await
            .unwrap(),
        json!({"p": 1})
    );
    assert_disabled(
        &env.invoke("fixture.echo", json!({})).await.unwrap_err(),
        "runtime-command:fixture.echo",
    );
    assert_eq!(
        env.catalog_state(&id, &in_app, "runtime-command:fixture.echo"),
        "enabled"
    );
    assert_eq!(
        env.catalog_state(&id, &in_app, "ui-action:panel"),
        "disabled",
        "the project inherits what it does not override"
    );
    assert_eq!(
        ui_ids(&env, &in_app),
        ["acts"],
        "only the panel is disabled there"
    );

    // A project's own disable does not reach the user realm's process or another project.
    env.set(
        &id,
        &in_app,
        "runtime-command:fixture.info",
        StateChange::Disable,
    )
    .await;
    env.set(&id, &in_app, "language-server:ls", StateChange::Disable)
        .await;
    env.set(&id, &in_app, "mcp-server:tool", StateChange::Disable)
        .await;
    let refused = env
        .host
        .invoke(&in_app, "fixture.info", json!({}))
        .await
        .unwrap_err();
    assert_disabled(&refused, "runtime-command:fixture.info");
    assert!(
        refused
            .hint()
            .is_some_and(|hint| hint.contains("--project")),
        "{refused}: {:?}",
        refused.hint()
    );
    env.invoke("fixture.info", json!({})).await.unwrap();
    env.host
        .invoke(&Target::Project(other.clone()), "fixture.info", json!({}))
        .await
        .unwrap();
    assert!(env.host.resolve_language_server(&app, LANGUAGE).is_err());
    assert!(env.host.resolve_language_server(&other, LANGUAGE).is_ok());
    assert!(matches!(mcp_status(&env, &in_app), McpStatus::Disabled(_)));
    assert_eq!(mcp_status(&env, &Target::User), McpStatus::Supported);

    // Inherit in the project: it follows the user again.
    for text in [
        "runtime-command:fixture.echo",
        "runtime-command:fixture.info",
        "language-server:ls",
        "mcp-server:tool",
    ] {
        env.set(&id, &in_app, text, StateChange::Inherit).await;
    }
    assert_disabled(
        &env.host
            .invoke(&in_app, "fixture.echo", json!({}))
            .await
            .unwrap_err(),
        "runtime-command:fixture.echo",
    );
    env.host
        .invoke(&in_app, "fixture.info", json!({}))
        .await
        .unwrap();
    assert!(env.host.resolve_language_server(&app, LANGUAGE).is_ok());
    env.host.shutdown().await;
}

#[tokio::test]
async fn unknown_kinds_and_local_ids_are_refused_with_the_valid_ones() {
    let env = Env::new().await;
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, false))
        .await;
    let error = HostError::from(ComponentRef::parse("widget:panel").unwrap_err());
    assert_eq!(error.kind(), "invalid_component");
    assert!(error.to_string().contains("ui-action"), "{error}");
    assert_eq!(
        HostError::from(ComponentRef::parse("panel").unwrap_err()).kind(),
        "invalid_component"
    );
    let error = env
        .host
        .set_component(
            &id,
            &Target::User,
            &component("skill:nope"),
            StateChange::Disable,
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "unknown_component", "{error}");
    for valid in [
        "skill:review",
        "runtime-command:fixture.echo",
        "mcp-server:tool",
    ] {
        assert!(error.to_string().contains(valid), "{error}");
    }
    // A user-only runtime: its command's choice is the user's alone. (This bundle is
    // project-capable through its language server.)
    let project = Target::Project(env.project("app"));
    let error = env
        .host
        .set_component(
            &id,
            &project,
            &component("runtime-command:fixture.echo"),
            StateChange::Disable,
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "project_scope_not_supported", "{error}");
    for text in ["skill:review", "mcp-server:tool", "ui-action:panel"] {
        let error = env
            .host
            .set_component(&id, &project, &component(text), StateChange::Disable)
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            "project_scope_not_supported",
            "{text}: {error}"
        );
    }
    // Its language server does run per project: that choice is the project's.
    env.set(&id, &project, "language-server:ls", StateChange::Disable)
        .await;
    let Target::Project(dir) = &project else {
        unreachable!()
    };
    assert!(env.host.resolve_language_server(dir, LANGUAGE).is_err());
    assert!(
        env.host
            .resolve_language_server(&env.project("other"), LANGUAGE)
            .is_ok()
    );
    let unchanged = env.host.list()[0].components.clone();
    assert!(
        unchanged.iter().all(|c| c.state == "enabled"),
        "{unchanged:?}"
    );
    env.host.shutdown().await;
}

#[tokio::test]
async fn disabling_a_component_of_a_live_bundle_reaches_its_running_processes() {
    let env = Env::new().await;
    let id = env
        .install_ready(&kit(&env.path("bundles"), "1.0.0", false, true))
        .await;
    let app = env.project("app");
    let in_app = Target::Project(app.clone());
    // A live runtime: disabling one of its commands reloads the scope, so the process that
    // still offered it stops; the next call starts one that is never asked for it.
    let before = crate::support::pid_of(&env.invoke("fixture.info", json!({})).await.unwrap());
    env.set(
        &id,
        &Target::User,
        "runtime-command:fixture.echo",
        StateChange::Disable,
    )
    .await;
    assert!(
        crate::support::gone(before, Duration::from_secs(10)).await,
        "the old process stopped"
    );
    let after = crate::support::pid_of(&env.invoke("fixture.info", json!({})).await.unwrap());
    assert_ne!(before, after);
    // A live language server in a project: disabling it there stops it.
    let server = env
        .host
        .start_language_server(&app, LANGUAGE)
        .await
        .unwrap();
    assert!(server.try_exit().is_none());
    env.set(&id, &in_app, "language-server:ls", StateChange::Disable)
        .await;
    let exited = tokio::time::timeout(Duration::from_secs(10), server.exited()).await;
    assert!(exited.is_ok(), "the running server was stopped");
    let refused = env
        .host
        .start_language_server(&app, LANGUAGE)
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), "unsupported", "{refused}");
    env.host.shutdown().await;
}
