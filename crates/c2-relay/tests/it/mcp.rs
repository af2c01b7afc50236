//! The MCP bridge: bytes both ways between a client's streams and a stdio MCP server launched
//! by the host, which side ended first, and the drain after the client closed its input.

use std::path::Path;
use std::time::Duration;

use c2_contributions::prelude::*;
use c2_host::Target;
use c2_relay::bridge_mcp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Env, write_executable};

const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "mcp-demo",
  "extensions": { "dev.codetwo": { "standardVersion": "1.2.0" } }
}"#;

const MCP: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": { "local": { "type": "stdio", "command": "./bin/server" } }
}"#;

const WAIT: Duration = Duration::from_secs(10);

/// A bundle whose one stdio MCP server `local` is `server_script`.
fn write_bundle(dir: &Path, server_script: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("plugin.json"), MANIFEST).unwrap();
    std::fs::write(dir.join("mcp.json"), MCP).unwrap();
    write_executable(&dir.join("bin/server"), server_script);
}

/// The host with a trusted, enabled bundle whose server is `script`, and the bundle's id.
async fn env_with_server(script: &str, drain: Option<Duration>) -> (Env, String) {
    let env = match drain {
        Some(drain) => Env::with(|o| o.mcp_drain = drain).await,
        None => Env::new().await,
    };
    let dir = env.path("src/mcp-demo");
    write_bundle(&dir, script);
    let id = env.install(&dir, true).await;
    (env, id)
}

#[tokio::test]
async fn bytes_go_both_ways_unparsed_until_the_client_closes() {
    let (env, id) = env_with_server("#!/bin/sh\ncat\n", None).await;
    let process = env
        .host
        .launch_mcp(&Target::User, &id, "local")
        .await
        .unwrap();
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json at all\n";
    let mut output = Vec::new();
    let report = tokio::time::timeout(WAIT, bridge_mcp(process, &input[..], &mut output))
        .await
        .unwrap();
    assert!(report.client_closed, "{report:?}");
    assert_eq!(report.error, None);
    assert_eq!(output, input);
    assert_eq!(report.to_server, input.len() as u64);
    assert_eq!(report.to_client, input.len() as u64);
    env.host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_ends_first_is_reported_as_such() {
    let (env, id) = env_with_server("#!/bin/sh\necho bye\nexit 3\n", None).await;
    let process = env
        .host
        .launch_mcp(&Target::User, &id, "local")
        .await
        .unwrap();
    // The client never closes its side.
    let (client, bridge_side) = tokio::io::duplex(1024);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let report = tokio::time::timeout(WAIT, bridge_mcp(process, bridge_in, bridge_out))
        .await
        .unwrap();
    assert!(!report.client_closed, "{report:?}");
    assert_eq!(report.error, None);
    assert_eq!(report.to_client, 4);
    assert_eq!(report.exit.exit, c2_host::Exit::Code(3));
    let mut client = client;
    client.shutdown().await.unwrap();
    let mut seen = Vec::new();
    client.read_to_end(&mut seen).await.unwrap();
    assert_eq!(seen, b"bye\n");
    env.host.shutdown().await;
}

/// Answers only after its input closed, a second later.
const LATE: &str = "#!/bin/sh\ncat >/dev/null\nsleep 1\necho late\n";

#[tokio::test]
async fn the_bridge_forwards_late_output_for_mcp_drain_and_no_longer() {
    for (drain, expect_late) in [(Duration::from_secs(20), true), (Duration::ZERO, false)] {
        let (env, id) = env_with_server(LATE, Some(drain)).await;
        let process = env
            .host
            .launch_mcp(&Target::User, &id, "local")
            .await
            .unwrap();
        let mut output = Vec::new();
        let report = bridge_mcp(process, &b""[..], &mut output).await;
        assert!(report.client_closed);
        let text = String::from_utf8(output).unwrap();
        assert_eq!(
            text.contains("late"),
            expect_late,
            "drain {drain:?}: {text:?}"
        );
    }
}
