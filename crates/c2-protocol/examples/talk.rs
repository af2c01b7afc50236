//! Talks to a plugin runtime with c2-protocol alone, no host: spawn it, run the handshake
//! (`initialize` within 10 s, protocol version, exact command confirmation), show the commands
//! it confirmed, invoke one, close its stdin.
//!
//! ```text
//! cargo run -p c2-protocol --example talk -- DIR COMMAND ARGS_JSON -- PROGRAM [ARG...]
//! # from the repository root, with Node installed:
//! cargo run -p c2-protocol --example talk -- packs/hello-runtime hello.status '{}' -- node plugin.js
//! ```
//!
//! The commands to confirm are the plugin's `plugin.json` declarations; with c2-protocol's
//! `manifest` feature they convert straight from c2-manifest's `CommandDecl`s (this example
//! reads the ids from `DIR/plugin.json` with serde_json to stay dependency-free). A real host
//! also answers the plugin's `command/call`s and supervises the process group; c2-host does.
#![expect(
    clippy::disallowed_methods,
    reason = "an example may use the file system freely"
)]
#![expect(
    clippy::print_stdout,
    reason = "an example that shows what the plugin said"
)]

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use c2_protocol::{
    CommandInvokeParams, DeclaredCommand, HandshakeOptions, HostInfo, InitializeParams,
    PROTOCOL_VERSION, RejectRequests, handshake, method,
};
use serde_json::Value;

#[tokio::main]
async fn main() -> ExitCode {
    match talk().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            println!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn talk() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: talk DIR COMMAND ARGS_JSON -- PROGRAM [ARG...]";
    let split = args.iter().position(|a| a == "--").ok_or(usage)?;
    let ([dir, command, json], [program, program_args @ ..]) = (&args[..split], &args[split + 1..])
    else {
        return Err(usage.to_owned());
    };
    let invoke_args: Value =
        serde_json::from_str(json).map_err(|e| format!("ARGS_JSON is not JSON: {e}"))?;

    // c2-protocol spawns nothing: the embedder hands it the child's pipes. (A host spawns
    // through c2-supervisor, which puts the child in its own process group.)
    #[expect(
        clippy::disallowed_methods,
        reason = "this example is an embedder spawning the plugin itself"
    )]
    let mut child = tokio::process::Command::new(program)
        .args(program_args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stdin = child.stdin.take().ok_or("no stdin")?;

    let data_dir = std::env::temp_dir().join("c2-protocol-talk");
    std::fs::create_dir_all(&data_dir).map_err(|e| format!("cannot create the data dir: {e}"))?;
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION.to_owned(),
        host: HostInfo {
            name: "c2-protocol-talk".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            commands: Vec::new(),
            observations: false,
        },
        config: Value::Null,
        data_dir: data_dir.display().to_string(),
        project_path: None,
    };
    let declared = declared_commands(Path::new(dir))?;
    // The plugin may call back (`command/call`); this host offers nothing and says so.
    let confirmed = handshake(
        stdout,
        stdin,
        RejectRequests,
        &params,
        &declared,
        &HandshakeOptions::default(),
    )
    .await
    .map_err(|e| format!("handshake failed: {e}"))?;
    let peer = confirmed.peer;
    let mut notifications = confirmed.notifications;
    tokio::spawn(async move {
        while let Some(notification) = notifications.recv().await {
            println!(
                "<- {} {}",
                notification.method,
                notification.params.unwrap_or_default()
            );
        }
    });
    let result = confirmed.result;
    println!(
        "{} {} (protocol {}) confirms:",
        result.name, result.version, confirmed.protocol_version
    );
    for command in &result.commands {
        println!("  {}", command.name);
    }

    let invoke = CommandInvokeParams {
        name: command.clone(),
        args: invoke_args,
    };
    match peer
        .request_as::<Value>(method::COMMAND_INVOKE, &invoke)
        .await
    {
        Ok(value) => println!("{command} -> {value}"),
        Err(error) => println!("{command} failed: {error}"),
    }

    // Closing stdin is the protocol's shutdown: a well-behaved plugin exits.
    peer.close();
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .map_err(|_| "the plugin did not exit within 5 s of stdin closing")?
        .map_err(|e| e.to_string())?;
    println!("exited: {status}");
    Ok(())
}

/// The commands `DIR/plugin.json` declares (`extensions.dev.codetwo.commands`: `id` and
/// `argsSchema`), which the plugin must confirm exactly.
fn declared_commands(dir: &Path) -> Result<Vec<DeclaredCommand>, String> {
    let path = dir.join("plugin.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let manifest: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let commands = manifest["extensions"]["dev.codetwo"]["commands"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    commands
        .into_iter()
        .map(|command| {
            let id = command["id"]
                .as_str()
                .ok_or_else(|| format!("a command in {} has no string id", path.display()))?;
            Ok(DeclaredCommand {
                id: id.to_owned(),
                args_schema: command.get("argsSchema").cloned(),
            })
        })
        .collect()
}
