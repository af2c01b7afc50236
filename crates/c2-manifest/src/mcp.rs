//! The bundle's root `mcp.json` under Agent Plugins 1.0.0 rules.
//!
//! Accepted shape:
//! ```text
//! { "mcpServers": { "<name>": <server>, ... } }
//! <server> = { "type"?: "stdio", "command": string, "args"?: [string], "env"?: {string: string} }
//!          | { "type": "http" | "sse", "url": "http(s)://...", "headers"?: {string: string} }
//! ```
//! A document-level problem (not JSON, not an object, `mcpServers` missing or not an object)
//! is an error and disables MCP for the bundle (`enabled == false`). An entry-level problem is a
//! warning that skips that one server. Unknown keys, at the root or in an entry, are reported as
//! warnings and ignored, as Agent Plugins prescribes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::Checker;
use crate::diagnostic::{Diagnostic, Severity, Sink, has_errors, pointer_push};
use crate::json::{self, Node};
use crate::options::ManifestOptions;

/// One usable MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    pub name: String,
    pub transport: McpTransport,
}

/// How the host reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// The outcome of validating a root `mcp.json`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpReport {
    /// False when a document-level problem disables MCP for the bundle.
    pub enabled: bool,
    /// The servers that passed, in document order; empty when disabled.
    pub servers: Vec<McpServer>,
    /// Names of the servers skipped for entry-level problems.
    pub skipped: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Validates the text of a root `mcp.json`.
pub fn validate_mcp(source: &str) -> McpReport {
    let mut sink = Sink::new(source);
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    if let Some(root) = json::parse(source, ManifestOptions::default().max_depth, &mut sink) {
        document(&root, &mut sink, &mut servers, &mut skipped);
    }
    let enabled = !sink.has_errors();
    if !enabled {
        servers.clear();
    }
    McpReport {
        enabled,
        servers,
        skipped,
        diagnostics: sink.finish(),
    }
}

fn document(
    root: &Node,
    sink: &mut Sink<'_>,
    servers: &mut Vec<McpServer>,
    skipped: &mut Vec<String>,
) {
    let mut c = Checker { sink };
    let Some(members) = c.object(root, "") else {
        return;
    };
    for m in members.iter().filter(|m| m.key != "mcpServers") {
        c.sink.warning(
            "unknown-key",
            &pointer_push("", &m.key),
            m.key_start,
            format!("unknown root key `{}` is ignored", m.key),
            Some("mcp.json holds only `mcpServers`"),
        );
    }
    let Some((list, ptr)) = c.field(root, "", "mcpServers", true) else {
        return;
    };
    let Some(entries) = c.object(list, &ptr) else {
        return;
    };
    for m in entries {
        let p = pointer_push(&ptr, &m.key);
        // Entry problems are collected apart and downgraded: they skip the server, not MCP.
        let mut entry_sink = Sink::new(c.sink.source());
        let server = entry(
            &m.key,
            &m.value,
            &p,
            &mut Checker {
                sink: &mut entry_sink,
            },
        );
        let failed = entry_sink.has_errors();
        for mut d in entry_sink.finish() {
            d.severity = Severity::Warning;
            if failed && !d.message.contains("skipped") {
                d.message = format!("{}; server `{}` is skipped", d.message, m.key);
            }
            c.sink.diagnostics.push(d);
        }
        match server {
            Some(s) if !failed => servers.push(s),
            _ => skipped.push(m.key.clone()),
        }
    }
}

fn entry(name: &str, node: &Node, ptr: &str, c: &mut Checker<'_, '_>) -> Option<McpServer> {
    if name.trim().is_empty() {
        c.sink.error(
            "mcp-server-name-empty",
            ptr,
            node.start,
            "an MCP server has an empty name",
            Some("name the server"),
        );
    }
    let members = c.object(node, ptr)?;
    let kind = match c.string_field(node, ptr, "type", false) {
        None => "stdio",
        Some((n, p, t)) => match t {
            "stdio" | "http" | "sse" => t,
            other => {
                c.sink.error(
                    "mcp-transport-unknown",
                    &p,
                    n.start,
                    format!("unknown MCP transport `{other}`"),
                    Some("use \"stdio\" (the default), \"http\" or \"sse\""),
                );
                return None;
            }
        },
    };
    let allowed: &[&str] = if kind == "stdio" {
        &["type", "command", "args", "env"]
    } else {
        &["type", "url", "headers"]
    };
    for m in members
        .iter()
        .filter(|m| !allowed.contains(&m.key.as_str()))
    {
        c.sink.warning(
            "unknown-key",
            &pointer_push(ptr, &m.key),
            m.key_start,
            format!("unknown key `{}` in a {kind} server is ignored", m.key),
            Some(&format!("a {kind} server takes {}", allowed.join(", "))),
        );
    }
    let transport = if kind == "stdio" {
        let command = c.string_field(node, ptr, "command", true).map(|(n, p, s)| {
            if s.trim().is_empty() {
                c.sink.error(
                    "command-empty",
                    &p,
                    n.start,
                    "`command` is empty",
                    Some("name the server's executable"),
                );
            }
            s.to_owned()
        });
        let args = match c.field(node, ptr, "args", false) {
            Some((n, p)) => c
                .strings(n, &p)
                .into_iter()
                .map(|(_, _, s)| s.to_owned())
                .collect(),
            None => Vec::new(),
        };
        let env = c
            .field(node, ptr, "env", false)
            .map(|(n, p)| c.env(n, &p))
            .unwrap_or_default();
        McpTransport::Stdio {
            command: command?,
            args,
            env,
        }
    } else {
        let url = c.string_field(node, ptr, "url", true).map(|(n, p, s)| {
            if !(s.starts_with("https://") || s.starts_with("http://"))
                || s.len() <= "https://".len()
            {
                c.sink.error(
                    "mcp-url-invalid",
                    &p,
                    n.start,
                    format!("`url` `{s}` is not an http(s) URL"),
                    Some("use an absolute http:// or https:// URL"),
                );
            }
            s.to_owned()
        });
        let headers = match c.field(node, ptr, "headers", false) {
            Some((n, p)) => {
                let mut out = BTreeMap::new();
                for m in c.object(n, &p).unwrap_or_default() {
                    if let Some(v) = c.string(&m.value, &pointer_push(&p, &m.key)) {
                        out.insert(m.key.clone(), v.to_owned());
                    }
                }
                out
            }
            None => BTreeMap::new(),
        };
        if kind == "http" {
            McpTransport::Http { url: url?, headers }
        } else {
            McpTransport::Sse { url: url?, headers }
        }
    };
    Some(McpServer {
        name: name.to_owned(),
        transport,
    })
}

impl McpReport {
    /// No error-severity diagnostic (and so MCP is enabled).
    pub fn is_valid(&self) -> bool {
        !has_errors(&self.diagnostics)
    }
}
