//! `mcp [--project DIR]`: the MCP servers a session in that realm would be composed with, and
//! `mcp run <ID>/<SERVER> [--project DIR]`: launch one stdio server exactly as a session would
//! and bridge it to this process's stdio. Listing never starts a server. During `run`, stdout
//! belongs to the MCP client, so every message of ours, failures included, goes to stderr.

use std::path::Path;
use std::process::ExitCode;

use c2_contributions::McpLaunch;
use c2_contributions::prelude::*;
use c2_host::PluginHost;
use serde_json::Value;

use crate::CmdResult;
use crate::output::{Failure, Lines, Out, terminal_text};
use crate::{report, session};

/// `mcp`: one row per server; `-v` adds the values of the stdio environment.
pub(crate) fn list(
    out: &mut Out,
    host: &PluginHost,
    project: Option<&Path>,
    env_values: bool,
) -> CmdResult {
    let rows = host
        .mcp_servers(&session::target(project))
        .map_err(session::failure)?;
    if out.json() {
        let value: Vec<Value> = rows
            .iter()
            .map(|r| c2_relay::json::mcp_server(r, env_values))
            .collect();
        return Ok(out.success(Value::Array(value), ""));
    }
    if rows.is_empty() {
        out.print("no MCP servers: no enabled bundle in this realm ships an mcp.json");
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = vec![["BUNDLE", "SERVER", "TRANSPORT", "STATUS"].map(str::to_owned)];
    for r in &rows {
        table.push([
            r.bundle.clone(),
            r.server.clone(),
            r.transport.clone(),
            r.status.text(),
        ]);
    }
    let mut text = report::table(&table, "");
    // Everything below came from a bundle's mcp.json: one line each, control characters
    // escaped (the table escapes its own cells).
    let one = |text: &str| terminal_text(text, Lines::One).into_owned();
    for r in &rows {
        let (bundle, server) = (one(&r.bundle), one(&r.server));
        match &r.launch {
            Some(McpLaunch::Stdio(launch)) => {
                text.push_str(&format!(
                    "\n{bundle}/{server}:\n  command {}\n  args    {}\n  cwd     {}\n  env     {}",
                    one(&launch.program.display().to_string()),
                    one(&serde_json::to_string(&launch.args).unwrap_or_default()),
                    one(&launch.cwd.display().to_string()),
                    launch
                        .env
                        .iter()
                        .map(|(k, v)| if env_values {
                            one(&format!("{k}={v}"))
                        } else {
                            one(k)
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                ));
            }
            Some(McpLaunch::Remote { url, headers }) => {
                let names: Vec<String> = headers.keys().map(|name| one(name)).collect();
                text.push_str(&format!(
                    "\n{bundle}/{server}:\n  url     {}\n  headers {}",
                    one(url),
                    if names.is_empty() {
                        "-".to_owned()
                    } else {
                        names.join(" ")
                    }
                ));
            }
            _ => {}
        }
    }
    out.print(&text);
    Ok(ExitCode::SUCCESS)
}

/// `mcp run <ID>/<SERVER>`.
pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    target: &str,
    project: Option<&Path>,
) -> CmdResult {
    let Some((id, server)) = target.split_once('/') else {
        return Err(Failure::operation(
            "invalid_target",
            format!("`{target}` is not <ID>/<SERVER>: `c2-plugins mcp` lists the servers"),
        ));
    };
    let process = host
        .launch_mcp(&session::target(project), id, server)
        .await
        .map_err(session::failure)?;
    out.progress(&format!(
        "c2-plugins: MCP server {id}/{server} started (pid {})",
        process.pid()
    ));
    let report = c2_relay::bridge_mcp(process, tokio::io::stdin(), tokio::io::stdout()).await;
    // Why a server failed is usually in its stderr, shown only with -v otherwise.
    let tail = |message: String| super::lsp::with_stderr_tail(message, &report.stderr_tail);
    match (&report.error, report.client_closed) {
        (Some(why), _) => Err(Failure::operation(
            "command_failed",
            tail(format!("the MCP bridge to {id}/{server} failed: {why}")),
        )),
        (None, true) if report.server_failed() => Err(Failure::operation(
            "process_exited",
            tail(format!(
                "the MCP server {id}/{server} failed after its client closed its input: {}",
                report.exit.exit
            )),
        )),
        (None, true) => Ok(ExitCode::SUCCESS),
        (None, false) => Err(Failure::operation(
            "process_exited",
            tail(format!(
                "the MCP server {id}/{server} ended before its client: {}",
                report.exit.exit
            )),
        )),
    }
}
