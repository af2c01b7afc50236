//! MCP servers for session composition (Agent Plugins 1.0.0 §7.2 and §9; decisions.md, "MCP
//! launch").
//!
//! [`McpServers::mcp_servers`] lists, for every bundle enabled in a realm, each server of its
//! root `mcp.json` with its status: `supported` with launch-ready data, `not_trusted` (a stdio
//! server of an untrusted bundle: executable content, so no launch data), `content_changed` (a
//! trusted bundle whose files on disk no longer have the trusted digest: no launch data for any
//! of its servers, since trust follows the bytes), `skipped` (an entry
//! that failed validation or resolution) or `disabled` (the whole document is invalid). For a
//! stdio server the host applies §9: `PLUGIN_ROOT` is the filesystem-resolved installed bundle
//! directory, `PLUGIN_DATA` is `<plugins-dir>/.data/<id>/mcp` (created before launch, kept
//! across reinstalls and updates, removed on uninstall), `${PLUGIN_ROOT}`/`${PLUGIN_DATA}` are
//! expanded once, non-recursively, in `args`, `env` values and `cwd`; the environment is the
//! host's, then the entry's `env`, then the two reserved variables; `cwd` defaults to the plugin
//! root and must stay inside its root after links are resolved; a `./` command must be an
//! executable file inside the root and a bare one is looked up on the host's `PATH`. Remote
//! servers carry `url` and `headers` verbatim.
//!
//! Listing never starts anything. [`McpServers::launch_mcp`] starts one stdio server through
//! c2-supervisor exactly as a session composer would, for `c2-plugins mcp run` and tests;
//! joining it to a client's streams is not the host's job (c2-relay's MCP bridge).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use c2_bundle_collector::ContributionKind;
use c2_manifest::McpTransport;
use c2_policy::Scope;
use c2_supervisor::{ExitReport, Process, ProcessSpec, ProcessStdin};
use serde::Serialize;
use tokio::process::ChildStdout;

use c2_bundle_collector::data_dir;
use c2_host::seam::{Advice, InstalledBundle, Registry, component_id};
use c2_host::{ErrorKind, HostError, PluginHost, Target};

/// The directory under a bundle's data directory that is its MCP servers' `PLUGIN_DATA`.
pub const MCP_DATA_DIR: &str = "mcp";

/// One MCP server of an enabled bundle, as a session composer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerLaunch {
    /// The installed bundle id.
    pub bundle: String,
    /// The bundle's manifest name.
    pub bundle_name: String,
    /// The server's name in `mcpServers`.
    pub server: String,
    /// `stdio`, `streamable-http`, `sse`, or the unknown `type` it declared (`-` if none).
    pub transport: String,
    /// Whether it can be used here, and if not, why.
    pub status: McpStatus,
    /// Present exactly when `status` is `supported`.
    pub launch: Option<McpLaunch>,
}

/// Whether a server can be used, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
#[non_exhaustive]
pub enum McpStatus {
    /// Launch-ready (stdio) or reachable as configured (remote).
    Supported,
    /// A stdio server of a bundle whose content is not trusted.
    NotTrusted,
    /// The bundle is trusted, but its files on disk are no longer the ones trusted: nothing
    /// of it is handed out until it is reinstalled (the reason says what changed).
    ContentChanged(String),
    /// This entry failed Agent Plugins validation or could not be resolved.
    Skipped(String),
    /// The bundle's mcp.json is invalid, so MCP is disabled for it.
    Disabled(String),
}

impl McpStatus {
    /// `supported`, `not_trusted`, `content_changed`, `skipped: <why>` or `disabled: <why>`.
    pub fn text(&self) -> String {
        match self {
            Self::Supported => "supported".to_owned(),
            Self::NotTrusted => "not_trusted".to_owned(),
            Self::ContentChanged(_) => "content_changed".to_owned(),
            Self::Skipped(why) => format!("skipped: {why}"),
            Self::Disabled(why) => format!("disabled: {why}"),
        }
    }
}

/// How to reach a supported server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
#[non_exhaustive]
pub enum McpLaunch {
    /// Start a process and speak MCP over its stdio.
    Stdio(StdioLaunch),
    /// Connect to `url` (Streamable HTTP or legacy SSE, as `transport` says) with `headers`.
    Remote {
        /// The server's URL, verbatim.
        url: String,
        /// The headers to send, verbatim.
        headers: BTreeMap<String, String>,
    },
}

/// A resolved stdio server: everything a spawn needs, nothing left to expand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StdioLaunch {
    /// The resolved executable (absolute).
    pub program: PathBuf,
    /// The arguments after expansion.
    pub args: Vec<String>,
    /// The working directory, resolved and contained.
    pub cwd: PathBuf,
    /// Set over the host's environment in this order: the entry's `env` (expanded), then
    /// `PLUGIN_ROOT` and `PLUGIN_DATA`.
    pub env: Vec<(String, String)>,
    /// The filesystem-resolved plugin root.
    pub plugin_root: PathBuf,
    /// The bundle's MCP data directory (created when the server is launched).
    pub plugin_data: PathBuf,
}

impl StdioLaunch {
    /// The process spec a session would spawn, labelled `label`.
    pub fn process_spec(&self, label: &str) -> ProcessSpec {
        let mut spec = ProcessSpec::new(self.program.clone(), self.cwd.clone()).args(&self.args);
        spec.env = self.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        spec.label = label.to_owned();
        spec
    }
}

/// Registers MCP servers with a host that is opening: an uninstall removes the bundle's
/// `PLUGIN_DATA`, which survives reinstalls and updates but not an uninstall (Agent Plugins
/// §9.1).
pub(crate) fn install(registry: &mut Registry<'_>) {
    registry.on_uninstall(remove_mcp_data);
}

/// The MCP data directory of an installed bundle.
pub(crate) fn mcp_data_dir(plugins_dir: &Path, id: &str) -> PathBuf {
    data_dir(plugins_dir, id, None).join(MCP_DATA_DIR)
}

impl From<c2_bundle_collector::ResolvedStdio> for StdioLaunch {
    fn from(resolved: c2_bundle_collector::ResolvedStdio) -> Self {
        Self {
            program: resolved.program,
            args: resolved.args,
            cwd: resolved.cwd,
            env: resolved.env,
            plugin_root: resolved.plugin_root,
            plugin_data: resolved.plugin_data,
        }
    }
}

/// Reads the installed bundle's `mcp.json`, bounded by the collector's file limit (the
/// collector refused a bigger one at install; one past it now is not read at all).
fn read_mcp_json(dir: &Path, limit: u64) -> Option<String> {
    let bytes = c2_bundle_collector::read_contained_file(dir, "mcp.json", limit).ok()?;
    if bytes.len() as u64 > limit {
        let path = dir.join("mcp.json");
        tracing::warn!(path = %path.display(), limit, "mcp.json is past the file size limit; MCP is off for this bundle");
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// MCP servers: what a session composer may launch, and launching one stdio server. Implemented
/// for [`PluginHost`].
pub trait McpServers {
    /// Every MCP server of every bundle enabled in `target`, in bundle-id then document order,
    /// each with its status and (when supported) launch-ready data. Nothing is started and
    /// nothing is written: a stdio server's `PLUGIN_DATA` (and a `cwd` inside it) is created
    /// when it is launched.
    fn mcp_servers(&self, target: &Target) -> Result<Vec<McpServerLaunch>, HostError>;

    /// Starts the stdio server `server` of bundle `id`, enabled in `target`, exactly as a
    /// session composer would: the definition from [`mcp_servers`](McpServers::mcp_servers), spawned
    /// through c2-supervisor in its own process group. A remote, untrusted, skipped or disabled
    /// server is refused with the reason.
    fn launch_mcp(
        &self,
        target: &Target,
        id: &str,
        server: &str,
    ) -> impl Future<Output = Result<McpProcess, HostError>> + Send;
}

impl McpServers for PluginHost {
    fn mcp_servers(&self, target: &Target) -> Result<Vec<McpServerLaunch>, HostError> {
        mcp_rows(self, target, None)
    }

    async fn launch_mcp(
        &self,
        target: &Target,
        id: &str,
        server: &str,
    ) -> Result<McpProcess, HostError> {
        let bundle = self.seam().bundle(id)?;
        let refuse = HostError::new;
        // A server the policy disables is refused as such, in the scope the listing uses.
        let realm = self.seam().realm(target)?;
        let realm = if bundle.runtime_project_capable() {
            realm
        } else {
            c2_kernel::Realm::Global
        };
        self.seam().refuse_withheld(
            &bundle,
            &realm,
            c2_bundle_collector::ContributionKind::McpServer,
            server,
        )?;
        let entry = mcp_rows(self, target, Some((id, server)))?
            .into_iter()
            .find(|e| e.bundle == id && e.server == server)
            .ok_or_else(|| {
                refuse(
                    ErrorKind::UnknownMcpServer,
                    format!(
                        "bundle {id} has no MCP server `{server}` enabled here (a bundle must be enabled in this scope)"
                    ),
                )
                .advise(Advice::ListMcpServers)
            })?;
        let launch = match (&entry.status, entry.launch) {
            (McpStatus::Supported, Some(McpLaunch::Stdio(launch))) => launch,
            (McpStatus::Supported, Some(McpLaunch::Remote { url, .. })) => {
                return Err(refuse(
                    ErrorKind::RemoteMcpServer,
                    format!(
                        "{id}/{server} is a remote {} server at {url}: a session connects to it, there is no process to run",
                        entry.transport
                    ),
                ));
            }
            (McpStatus::ContentChanged(why), _) => {
                return Err(refuse(ErrorKind::ContentChanged, why.clone()));
            }
            (McpStatus::NotTrusted, _) => {
                return Err(refuse(
                    ErrorKind::NotTrusted,
                    format!("{id}/{server} runs code from an untrusted bundle"),
                )
                .advise(Advice::ReviewThenTrust(id)));
            }
            (status, _) => {
                return Err(refuse(
                    ErrorKind::McpServerUnusable,
                    format!("{id}/{server} cannot run: {}", status.text()),
                ));
            }
        };
        // Trust follows the bytes that run: the listing above handed out launch data only
        // because the files on disk are still the ones installed (and trusted).
        let spec = launch.process_spec(&format!("{id}/{server}"));
        let spawned = c2_supervisor::spawn(&spec, &self.options().supervisor).map_err(|e| {
            refuse(
                ErrorKind::SpawnFailed,
                format!("{id}/{server} did not start: {e}"),
            )
        })?;
        // The client's handshake is the bridge's business, not the host's: nothing to wait for.
        spawned.process.handshake_done();
        // The shim starts the program at once: wait for it, bounded, so `pid` names it.
        for _ in 0..PROGRAM_PID_STEPS {
            if spawned.process.program_pid().is_some() || spawned.process.try_exit().is_some() {
                break;
            }
            tokio::time::sleep(PROGRAM_PID_STEP).await;
        }
        Ok(McpProcess {
            process: spawned.process,
            stdin: spawned.stdin,
            stdout: spawned.stdout,
            launch,
            drain: self.options().mcp_drain,
        })
    }
}

/// The rows of [`mcp_servers`](McpServers::mcp_servers); the data directories of the one server
/// `launching` names (bundle id, server) are created.
fn mcp_rows(
    host: &PluginHost,
    target: &Target,
    launching: Option<(&str, &str)>,
) -> Result<Vec<McpServerLaunch>, HostError> {
    let realm = host.seam().realm(target)?;
    let scope = match &realm {
        c2_kernel::Realm::Global => Scope::User,
        c2_kernel::Realm::Project(key) => Scope::Project(key.as_str().to_owned()),
    };
    let mut bundles: Vec<Arc<InstalledBundle>> = host.seam().installed();
    bundles.sort_by(|a, b| a.record().id.cmp(&b.record().id));
    let enabled = host.seam().desired_bundles(
        bundles,
        |b| {
            // MCP servers are not project-isolated (C2 scopes): a project's own entry
            // counts only for a project-capable runtime; otherwise (a user-only runtime,
            // or language servers alone) the project sees the user's switch.
            if b.runtime_project_capable() {
                scope.clone()
            } else {
                Scope::User
            }
        },
        |d| d.enabled,
    );
    let limit = host.options().limits.max_file_bytes;
    let search = std::env::var_os("PATH");
    let mut out = Vec::new();
    for bundle in enabled {
        let Some(text) = read_mcp_json(bundle.dir(), limit) else {
            continue;
        };
        let trusted = host.seam().is_trusted(&bundle);
        // Trust follows the bytes: launch data is handed out only for the content whose
        // digest is the trusted one, so a trusted bundle is re-read and digested here, once
        // per listing (an untrusted one gets no stdio launch data anyway).
        let changed = if trusted {
            host.seam()
                .verify_content(&bundle)
                .err()
                .map(|e| e.to_string())
        } else {
            None
        };
        // The same scope as the switch above: a project's choice counts only where the
        // project's own entry does.
        let choice_scope = if bundle.runtime_project_capable() {
            &scope
        } else {
            &Scope::User
        };
        let withheld = host.seam().withheld(&bundle, choice_scope);
        let where_text = match choice_scope {
            Scope::User => "the user scope".to_owned(),
            Scope::Project(key) => format!("project {key}"),
        };
        let report = c2_manifest::validate_mcp_for(&text, &bundle.manifest().schema);
        let row = |server: &str, transport: &str, status, launch| McpServerLaunch {
            bundle: bundle.record().id.clone(),
            bundle_name: bundle.manifest().name.clone(),
            server: server.to_owned(),
            transport: transport.to_owned(),
            status,
            launch,
        };
        let mut rows: Vec<(usize, McpServerLaunch)> = Vec::new();
        let order = |name: &str| {
            report
                .declared
                .iter()
                .position(|d| d == name)
                .unwrap_or(usize::MAX)
        };
        if let Some(why) = &report.disabled_reason {
            for name in &report.declared {
                rows.push((
                    order(name),
                    row(
                        name,
                        "-",
                        McpStatus::Disabled(format!("mcp.json is invalid: {why}")),
                        None,
                    ),
                ));
            }
        }
        for skipped in &report.skipped {
            rows.push((
                order(&skipped.name),
                row(
                    &skipped.name,
                    skipped.transport.as_deref().unwrap_or("-"),
                    McpStatus::Skipped(skipped.reason.clone()),
                    None,
                ),
            ));
        }
        for server in &report.servers {
            let kind = server.transport.kind();
            let component = component_id(ContributionKind::McpServer, &server.name);
            let (status, launch) = match &server.transport {
                _ if withheld.contains(&component) => (
                    McpStatus::Disabled(format!(
                        "component {component} is disabled in {where_text}: {}",
                        Advice::EnableComponentCommand {
                            id: &bundle.record().id,
                            component: &component,
                        }
                        .hint()
                    )),
                    None,
                ),
                McpTransport::Stdio { .. } if !trusted => (McpStatus::NotTrusted, None),
                _ if changed.is_some() => (
                    McpStatus::ContentChanged(changed.clone().unwrap_or_default()),
                    None,
                ),
                McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let data = mcp_data_dir(&host.options().plugins_dir, &bundle.record().id);
                    let entry = c2_bundle_collector::McpStdioEntry {
                        command,
                        args,
                        env,
                        cwd: cwd.as_deref(),
                    };
                    match c2_bundle_collector::resolve_mcp_stdio(
                        bundle.dir(),
                        &data,
                        entry,
                        search.as_deref(),
                        if launching == Some((bundle.record().id.as_str(), server.name.as_str())) {
                            c2_bundle_collector::DataDirs::Create
                        } else {
                            c2_bundle_collector::DataDirs::Leave
                        },
                    ) {
                        Ok(launch) => (McpStatus::Supported, Some(McpLaunch::Stdio(launch.into()))),
                        Err(why) => (McpStatus::Skipped(why.to_string()), None),
                    }
                }
                McpTransport::StreamableHttp { url, headers }
                | McpTransport::Sse { url, headers } => (
                    McpStatus::Supported,
                    Some(McpLaunch::Remote {
                        url: url.clone(),
                        headers: headers.clone(),
                    }),
                ),
            };
            rows.push((order(&server.name), row(&server.name, kind, status, launch)));
        }
        rows.sort_by_key(|(i, _)| *i);
        out.extend(rows.into_iter().map(|(_, r)| r));
    }
    Ok(out)
}

/// Removes a bundle's MCP data directory (uninstall), and the bundle's data directory
/// too when nothing else is left in it.
fn remove_mcp_data(host: &PluginHost, id: &str) -> Result<(), HostError> {
    let dir = mcp_data_dir(&host.options().plugins_dir, id);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(HostError::Io {
                action: "remove the MCP data directory",
                path: dir,
                source,
            });
        }
    }
    // Only an empty directory is removed; one holding other data stays, as it should.
    if let Some(parent) = dir.parent() {
        let _kept_or_gone = std::fs::remove_dir(parent);
    }
    Ok(())
}

/// How long [`McpServers::launch_mcp`] waits, at most, to see the program the shim started:
/// this many steps of `PROGRAM_PID_STEP`.
const PROGRAM_PID_STEPS: u32 = 100;
const PROGRAM_PID_STEP: std::time::Duration = std::time::Duration::from_millis(10);

/// A running stdio MCP server started by [`McpServers::launch_mcp`]. Dropping it kills its
/// process group.
#[derive(Debug)]
pub struct McpProcess {
    process: Process,
    stdin: ProcessStdin,
    stdout: ChildStdout,
    launch: StdioLaunch,
    drain: std::time::Duration,
}

impl McpProcess {
    /// The server's pid: under the supervisor shim the shim's child, the program itself (the
    /// shim's own pid, which is the process group id, only if the program was never seen).
    pub fn pid(&self) -> u32 {
        self.process
            .program_pid()
            .unwrap_or_else(|| self.process.pid())
    }

    /// What was launched.
    pub fn launch(&self) -> &StdioLaunch {
        &self.launch
    }

    /// The last stderr lines.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.process.stderr_tail()
    }

    /// How long a bridge keeps forwarding the server's output after its client closed its
    /// input (`HostOptions::mcp_drain`).
    pub fn drain(&self) -> std::time::Duration {
        self.drain
    }

    /// The server's stdin and stdout and its process at once, for a bridge that drives both
    /// directions and closes the server's input (`Process::close_stdin`) when its client's
    /// input ends.
    pub fn pipes(&mut self) -> (&mut ProcessStdin, &mut ChildStdout, &Process) {
        (&mut self.stdin, &mut self.stdout, &self.process)
    }

    /// Stops it (stdin closed, SIGTERM, grace, SIGKILL to the group, reaped). Idempotent.
    pub async fn stop(&self) -> ExitReport {
        self.process.stop().await
    }
}
