//! Talks to a plugin runtime with c2-protocol alone, no host: spawn it, send `initialize`,
//! check its protocol version, show the commands it confirms, invoke one, close its stdin.
//!
//! ```text
//! cargo run -p c2-protocol --example talk -- DIR COMMAND ARGS_JSON -- PROGRAM [ARG...]
//! # from the repository root, with Node installed:
//! cargo run -p c2-protocol --example talk -- packs/hello-runtime hello.status '{}' -- node plugin.js
//! ```
//!
//! A real host also checks the confirmed commands against the manifest (`confirm_commands`),
//! bounds the handshake in time, answers the plugin's `command/call`s and supervises the process
//! group; c2-host does all of that.

#![expect(
    clippy::print_stdout,
    reason = "an example that shows what the plugin said"
)]

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use c2_protocol::{
    CommandInvokeParams, HostInfo, InitializeParams, InitializeResult, PROTOCOL_VERSION, Peer,
    PeerOptions, RejectRequests, check_protocol_version, method,
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
    // The plugin may call back (`command/call`); this host offers nothing and says so.
    let (peer, mut notifications) =
        Peer::new(stdout, stdin, RejectRequests, PeerOptions::default());
    tokio::spawn(async move {
        while let Some(notification) = notifications.recv().await {
            println!(
                "<- {} {}",
                notification.method,
                notification.params.unwrap_or_default()
            );
        }
    });

    let data_dir = std::env::temp_dir().join("c2-protocol-talk");
    std::fs::create_dir_all(&data_dir).map_err(|e| format!("cannot create the data dir: {e}"))?;
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION.to_owned(),
        host: HostInfo {
            name: "c2-protocol-talk".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            commands: Vec::new(),
        },
        config: Value::Null,
        data_dir: data_dir.display().to_string(),
        project_path: None,
    };
    // The protocol gives the plugin 10 s to answer `initialize`.
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        peer.request_with(method::INITIALIZE, &params),
    )
    .await
    .map_err(|_| "no answer to initialize within 10 s")?
    .map_err(|e| format!("initialize failed: {e}"))?;
    let result: InitializeResult =
        serde_json::from_value(answer).map_err(|e| format!("bad initialize result: {e}"))?;
    let ours = semver::Version::parse(PROTOCOL_VERSION).map_err(|e| e.to_string())?;
    check_protocol_version(&ours, result.protocol_version.as_deref()).map_err(|e| e.to_string())?;
    println!("{} {} confirms:", result.name, result.version);
    for confirmed in &result.commands {
        println!("  {}", confirmed.name);
    }

    let invoke = CommandInvokeParams {
        name: command.clone(),
        args: invoke_args,
    };
    match peer.request_with(method::COMMAND_INVOKE, &invoke).await {
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
