//! The bundle's root `mcp.json` under Agent Plugins 1.0.0 §7.2 (with §9.2's reserved names and
//! §10.1's version match), to the letter.
//!
//! Accepted shape (closed everywhere):
//! ```text
//! { "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
//!   "mcpServers": { "<name>": <server>, ... } }
//! <server> = { "type": "stdio", "command": string, "args"?: [string],
//!              "env"?: {string: string}, "cwd"?: string }
//!          | { "type": "streamable-http" | "sse", "url": string, "headers"?: {string: string} }
//! ```
//! Failure boundaries are the spec's (§7.2.2): a document problem (not JSON, `$schema` missing,
//! unrecognized or of another Agent Plugins version than plugin.json, an unknown root key,
//! `mcpServers` missing or not an object) is an error and disables MCP for the bundle
//! (`enabled == false`); an entry problem (not an object, no or unknown `type`, an unknown field
//! or one of another variant, a bad `command`, `cwd`, `url` or header, a reserved `env` name) is
//! a warning that skips that one server, with the reason kept in [`McpReport::skipped`].
//!
//! What only the filesystem can tell (a `./` command that exists, `cwd` containment after
//! resolving links) is checked by c2-bundle-collector and c2-host; this module checks every rule
//! the text alone decides, lexical containment (`..`) included.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::Checker;
use crate::diagnostic::{Diagnostic, Severity, Sink, has_errors, pointer_push};
use crate::json::{self, Node};
use crate::manifest::AGENT_PLUGINS_SCHEMA_URL;
use crate::options::ManifestOptions;

/// The only `mcp.json` `$schema` this host recognizes (Agent Plugins 1.0.0 §7.2.1).
pub const AGENT_PLUGINS_MCP_SCHEMA_URL: &str =
    "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// The environment names a server's `env` must not set (Agent Plugins §9.2).
pub const RESERVED_ENV_NAMES: [&str; 2] = ["PLUGIN_ROOT", "PLUGIN_DATA"];

/// One valid MCP server entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    /// The member name under `mcpServers`.
    pub name: String,
    /// How the server is reached.
    pub transport: McpTransport,
}

/// The closed variants of Agent Plugins §7.2.1, as written (no placeholder expanded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum McpTransport {
    /// A local process speaking MCP over stdio.
    Stdio {
        /// One token: a bare executable name or a `./` plugin-relative path.
        command: String,
        /// Arguments passed to `command`, in order, as written.
        args: Vec<String>,
        /// Extra environment variables for the server process, as written.
        env: BTreeMap<String, String>,
        /// `./...`, `${PLUGIN_ROOT}[/...]` or `${PLUGIN_DATA}[/...]`; `None` means the plugin root.
        cwd: Option<String>,
    },
    /// The MCP Streamable HTTP transport.
    StreamableHttp {
        /// The endpoint URL, as written.
        url: String,
        /// HTTP headers sent with every request, as written.
        headers: BTreeMap<String, String>,
    },
    /// The deprecated HTTP+SSE transport of MCP 2024-11-05.
    Sse {
        /// The SSE endpoint URL, as written.
        url: String,
        /// HTTP headers sent with every request, as written.
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// The `type` value: `stdio`, `streamable-http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::StreamableHttp { .. } => "streamable-http",
            Self::Sse { .. } => "sse",
        }
    }
}

/// A server entry skipped for an entry-level problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSkipped {
    /// The member name under `mcpServers`.
    pub name: String,
    /// The declared `type` when it was a string.
    pub transport: Option<String>,
    /// The first problem, in one sentence.
    pub reason: String,
}

/// The outcome of validating a root `mcp.json`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpReport {
    /// False when a document-level problem disables MCP for the bundle.
    pub enabled: bool,
    /// Why MCP is disabled (the first document problem); `None` when enabled.
    pub disabled_reason: Option<String>,
    /// The servers that passed, in document order; empty when disabled.
    pub servers: Vec<McpServer>,
    /// The servers skipped for entry-level problems, in document order.
    pub skipped: Vec<McpSkipped>,
    /// Every member name under `mcpServers`, in document order, whenever it is an object
    /// (so a disabled document can still say which servers it disables).
    pub declared: Vec<String>,
    /// Every problem found, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Validates the text of a root `mcp.json` for a plugin whose plugin.json declares
/// `plugin_schema` as its `$schema` (§10.1: both must name the same Agent Plugins version).
pub fn validate_mcp_for(source: &str, plugin_schema: &str) -> McpReport {
    let mut sink = Sink::new(source);
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    let mut declared = Vec::new();
    if let Some(root) = json::parse(source, ManifestOptions::default().max_depth, &mut sink) {
        document(&root, plugin_schema, &mut sink, &mut servers, &mut skipped);
        crate::hidden::mcp_identifiers(&root, &mut sink);
        declared = root
            .get("mcpServers")
            .and_then(Node::as_object)
            .map(|ms| ms.iter().map(|m| m.key.to_string()).collect())
            .unwrap_or_default();
    }
    crate::hidden::scan_into(&mut sink);
    let enabled = !sink.has_errors();
    let diagnostics = sink.finish();
    let disabled_reason = (!enabled).then(|| {
        diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone())
            .unwrap_or_default()
    });
    if !enabled {
        servers.clear();
        skipped.clear();
    }
    McpReport {
        enabled,
        disabled_reason,
        servers,
        skipped,
        declared,
        diagnostics,
    }
}

/// [`validate_mcp_for`] for a plugin.json targeting Agent Plugins 1.0.0, the only version
/// this host loads.
pub fn validate_mcp(source: &str) -> McpReport {
    validate_mcp_for(source, AGENT_PLUGINS_SCHEMA_URL)
}

/// The Agent Plugins version in a canonical schema URL of `file` (`plugin` or `mcp`).
fn schema_version<'a>(url: &'a str, file: &str) -> Option<&'a str> {
    url.strip_prefix("https://agent-plugins.org/schemas/")?
        .strip_suffix(&format!("/{file}.schema.json"))
        .filter(|v| !v.is_empty() && !v.contains('/'))
}

fn document(
    root: &Node<'_>,
    plugin_schema: &str,
    sink: &mut Sink<'_>,
    servers: &mut Vec<McpServer>,
    skipped: &mut Vec<McpSkipped>,
) {
    let mut c = Checker { sink };
    let Some(members) = c.object(root, "") else {
        return;
    };
    for m in members
        .iter()
        .filter(|m| m.key != "mcpServers" && m.key != "$schema")
    {
        c.sink.error(
            "unknown-key",
            &pointer_push("", &m.key),
            m.key_start,
            format!("unknown root key `{}`: mcp.json is closed", m.key),
            Some("mcp.json holds only `$schema` and `mcpServers` (Agent Plugins §7.2.1)"),
        );
    }
    let help = format!("add \"$schema\": \"{AGENT_PLUGINS_MCP_SCHEMA_URL}\"");
    match root.get("$schema") {
        None => c.sink.error(
            "mcp-schema-missing",
            "",
            root.start,
            "mcp.json is missing the required field `$schema`",
            Some(&help),
        ),
        Some(node) => {
            if let Some(s) = c.string(node, "/$schema") {
                let plugin_version = schema_version(plugin_schema, "plugin").unwrap_or("?");
                match schema_version(s, "mcp") {
                    Some(v) if v != plugin_version => c.sink.error(
                        "mcp-schema-version-mismatch",
                        "/$schema",
                        node.start,
                        format!(
                            "mcp.json targets Agent Plugins {v} but plugin.json targets {plugin_version}"
                        ),
                        Some(&format!(
                            "use \"https://agent-plugins.org/schemas/{plugin_version}/mcp.schema.json\" (Agent Plugins §10.1)"
                        )),
                    ),
                    Some(_) if s == AGENT_PLUGINS_MCP_SCHEMA_URL => {}
                    _ => c.sink.error(
                        "mcp-schema-unsupported",
                        "/$schema",
                        node.start,
                        format!("`$schema` `{s}` is not a recognized mcp.json schema"),
                        Some(&format!("use \"{AGENT_PLUGINS_MCP_SCHEMA_URL}\"")),
                    ),
                }
            }
        }
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
        let found = entry_sink.finish();
        let reason = found
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone());
        for mut d in found {
            d.severity = Severity::Warning;
            if failed {
                d.message = format!("{}; server `{}` is skipped", d.message, m.key);
            }
            c.sink.diagnostics.push(d);
        }
        match (server, reason) {
            (Some(s), None) => servers.push(s),
            (_, reason) => skipped.push(McpSkipped {
                name: m.key.to_string(),
                transport: m
                    .value
                    .get("type")
                    .and_then(Node::as_str)
                    .map(str::to_owned),
                reason: reason.unwrap_or_else(|| "invalid entry".to_owned()),
            }),
        }
    }
}

const STDIO_KEYS: [&str; 5] = ["type", "command", "args", "env", "cwd"];
const REMOTE_KEYS: [&str; 3] = ["type", "url", "headers"];

fn entry(name: &str, node: &Node<'_>, ptr: &str, c: &mut Checker<'_, '_>) -> Option<McpServer> {
    let members = c.object(node, ptr)?;
    let Some((tnode, tptr, kind)) = c.string_field(node, ptr, "type", false) else {
        if node.get("type").is_none() {
            c.sink.error(
                "mcp-type-missing",
                ptr,
                node.start,
                format!("MCP server `{name}` has no `type`"),
                Some("add \"type\": \"stdio\", \"streamable-http\" or \"sse\""),
            );
        }
        return None;
    };
    let allowed: &[&str] = match kind {
        "stdio" => &STDIO_KEYS,
        "streamable-http" | "sse" => &REMOTE_KEYS,
        other => {
            let help = if other == "http" {
                "\"http\" is a client-native name; Agent Plugins calls it \"streamable-http\""
            } else {
                "use \"stdio\", \"streamable-http\" or \"sse\""
            };
            c.sink.error(
                "mcp-transport-unknown",
                &tptr,
                tnode.start,
                format!("unknown MCP server type `{other}`"),
                Some(help),
            );
            return None;
        }
    };
    for m in members
        .iter()
        .filter(|m| !allowed.contains(&m.key.as_ref()))
    {
        let other_variant = if kind == "stdio" {
            REMOTE_KEYS.contains(&m.key.as_ref())
        } else {
            STDIO_KEYS.contains(&m.key.as_ref())
        };
        let message = if other_variant {
            format!("`{}` belongs to another MCP variant, not to {kind}", m.key)
        } else {
            format!("unknown field `{}` in a {kind} server", m.key)
        };
        c.sink.error(
            "unknown-key",
            &pointer_push(ptr, &m.key),
            m.key_start,
            message,
            Some(&format!(
                "a {kind} server takes only {} (Agent Plugins §7.2.1)",
                allowed.join(", ")
            )),
        );
    }
    let transport = if kind == "stdio" {
        stdio(node, ptr, c)?
    } else {
        let url = c
            .string_field(node, ptr, "url", true)
            .map(|(n, p, s)| {
                if let Err(why) = check_url(s) {
                    c.sink.error(
                        "mcp-url-invalid",
                        &p,
                        n.start,
                        format!("`url` `{s}` {why}"),
                        Some("use an absolute https:// URL (http:// only for localhost or a loopback IP), without user information or a fragment"),
                    );
                }
                s.to_owned()
            });
        let headers = c
            .field(node, ptr, "headers", false)
            .map(|(n, p)| headers(n, &p, c))
            .unwrap_or_default();
        if kind == "sse" {
            McpTransport::Sse { url: url?, headers }
        } else {
            McpTransport::StreamableHttp { url: url?, headers }
        }
    };
    Some(McpServer {
        name: name.to_owned(),
        transport,
    })
}

fn stdio(node: &Node<'_>, ptr: &str, c: &mut Checker<'_, '_>) -> Option<McpTransport> {
    let command = c
        .string_field(node, ptr, "command", true)
        .map(|(n, p, s)| {
            if let Err(why) = check_command(s) {
                c.sink.error(
                    "mcp-command-invalid",
                    &p,
                    n.start,
                    format!("`command` `{}` {why}", s.escape_debug()),
                    Some("use one executable token: a bare name such as \"npx\" or a path inside the bundle starting with \"./\"; put arguments in `args`"),
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
    let env = match c.field(node, ptr, "env", false) {
        Some((n, p)) => {
            if let Some(members) = n.as_object() {
                for m in members {
                    if RESERVED_ENV_NAMES.contains(&m.key.as_ref()) {
                        c.sink.error(
                            "mcp-env-reserved",
                            &pointer_push(&p, &m.key),
                            m.key_start,
                            format!("`env` must not set `{}`: the host supplies it", m.key),
                            Some("remove it; use ${PLUGIN_ROOT} or ${PLUGIN_DATA} in a value instead (Agent Plugins §9.2)"),
                        );
                    }
                }
            }
            c.env(n, &p)
        }
        None => BTreeMap::new(),
    };
    let cwd = c.string_field(node, ptr, "cwd", false).map(|(n, p, s)| {
        if let Err(why) = check_cwd(s) {
            c.sink.error(
                "mcp-cwd-invalid",
                &p,
                n.start,
                format!("`cwd` `{s}` {why}"),
                Some("use \"./dir\", \"${PLUGIN_ROOT}[/dir]\" or \"${PLUGIN_DATA}[/dir]\", without `..` leaving it"),
            );
        }
        s.to_owned()
    });
    Some(McpTransport::Stdio {
        command: command?,
        args,
        env,
        cwd,
    })
}

/// `..` segments that climb above the start of `path` (`/`-separated, relative).
fn escapes(path: &str) -> bool {
    let mut depth = 0usize;
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            _ => depth += 1,
        }
    }
    false
}

/// Agent Plugins §7.2.1 `command`: one token, bare or `./`, never expanded.
fn check_command(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("is empty");
    }
    // One token is the whole string: a space is part of the file name (`./bin/probe token.sh`),
    // never a separator, and nothing is split or expanded. Only NUL cannot name a file.
    if s.contains('\0') {
        return Err("contains NUL, which no file name can");
    }
    if let Some(rest) = s.strip_prefix("./") {
        if rest.is_empty() || rest.ends_with('/') {
            return Err("names a directory, not an executable");
        }
        if escapes(rest) {
            return Err("leaves the plugin root through `..`");
        }
        return Ok(());
    }
    if s.contains("${PLUGIN_ROOT}") || s.contains("${PLUGIN_DATA}") {
        return Err("uses a placeholder, but `command` is never expanded");
    }
    if s.contains('/') {
        return Err("is neither a bare name nor a plugin-relative path starting with `./`");
    }
    if s == "." || s == ".." {
        return Err("is not an executable name");
    }
    Ok(())
}

/// Agent Plugins §7.2.1 `cwd` forms, with lexical containment.
fn check_cwd(s: &str) -> Result<(), &'static str> {
    let rest = if let Some(rest) = s.strip_prefix("./") {
        rest
    } else if let Some(rest) = s
        .strip_prefix("${PLUGIN_ROOT}")
        .or_else(|| s.strip_prefix("${PLUGIN_DATA}"))
    {
        match rest.strip_prefix('/') {
            Some(rest) => rest,
            None if rest.is_empty() => rest,
            None => return Err("is not one of the allowed forms"),
        }
    } else {
        return Err("is not one of the allowed forms");
    };
    if rest.contains('\0') {
        return Err("contains NUL");
    }
    if escapes(rest) {
        return Err("leaves its root through `..`");
    }
    Ok(())
}

/// Agent Plugins §7.2.1 `url`: absolute http(s), no userinfo, no fragment, https unless the
/// host is exactly `localhost` or a loopback IP literal.
fn check_url(s: &str) -> Result<(), &'static str> {
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains whitespace or a control character");
    }
    let (scheme, rest) = s.split_once("://").ok_or("is not an absolute URL")?;
    let https = if scheme.eq_ignore_ascii_case("https") {
        true
    } else if scheme.eq_ignore_ascii_case("http") {
        false
    } else {
        return Err("is not an http or https URL");
    };
    if s.contains('#') {
        return Err("has a fragment");
    }
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("has user information");
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or("has an unterminated IPv6 literal")?;
        if !(after.is_empty() || after.starts_with(':')) {
            return Err("has a malformed host");
        }
        let ip: std::net::Ipv6Addr = addr.parse().map_err(|_| "has an invalid IPv6 literal")?;
        check_port(after.strip_prefix(':'))?;
        if !https && !ip.is_loopback() {
            return Err("uses http:// for a host that is not loopback; use https://");
        }
        return Ok(());
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        check_port(port)?;
        host
    };
    if host.is_empty() {
        return Err("has no host");
    }
    if !https {
        let loopback = host == "localhost"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !loopback {
            return Err("uses http:// for a host that is not loopback; use https://");
        }
    }
    Ok(())
}

fn check_port(port: Option<&str>) -> Result<(), &'static str> {
    match port {
        None => Ok(()),
        Some(p) if p.is_empty() || p.parse::<u16>().is_ok() => Ok(()),
        Some(_) => Err("has an invalid port"),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// RFC 9110 field-value: no CR, LF or NUL, no other control but HTAB, no leading or trailing
/// whitespace.
fn header_value_ok(v: &str) -> bool {
    v.chars().all(|c| c == '\t' || !c.is_control())
        && !v.starts_with([' ', '\t'])
        && !v.ends_with([' ', '\t'])
}

fn headers(node: &Node<'_>, ptr: &str, c: &mut Checker<'_, '_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for m in c.object(node, ptr).unwrap_or_default() {
        let p = pointer_push(ptr, &m.key);
        if m.key.is_empty() || !m.key.chars().all(is_tchar) {
            c.sink.error(
                "mcp-header-invalid",
                &p,
                m.key_start,
                format!("`{}` is not a valid HTTP header name", m.key.escape_debug()),
                Some("a header name is one or more of A-Z a-z 0-9 and !#$%&'*+-.^_`|~"),
            );
        }
        if let Some(first) = seen.insert(m.key.to_ascii_lowercase(), m.key.to_string()) {
            c.sink.error(
                "mcp-header-duplicate",
                &p,
                m.key_start,
                format!(
                    "header `{}` repeats `{first}`: header names are case-insensitive",
                    m.key
                ),
                Some("keep one of them"),
            );
        }
        if let Some(v) = c.string(&m.value, &p) {
            if !header_value_ok(v) {
                c.sink.error(
                    "mcp-header-invalid",
                    &p,
                    m.value.start,
                    format!("the value of header `{}` is not a valid HTTP field value", m.key),
                    Some("no CR, LF, NUL or other control characters, and no leading or trailing whitespace"),
                );
            }
            out.insert(m.key.to_string(), v.to_owned());
        }
    }
    out
}

impl McpReport {
    /// No error-severity diagnostic (and so MCP is enabled).
    pub fn is_valid(&self) -> bool {
        !has_errors(&self.diagnostics)
    }
}
