//! Language servers contributed by bundles (plugin-standard.md §2, `languageServers`).
//!
//! Resolution is per project: the active bundles of that project (trusted and enabled there,
//! by the same policy resolution that drives the live graph) map Monaco language ids to server
//! declarations, compared case-insensitively. Exactly one active provider wins; two or more
//! fail the language closed until policy removes the conflict; none falls back to a built-in
//! mapping the embedder registered. Plugin mappings always win over built-in ones.
//!
//! A started server runs in the project root with its declared arguments and environment, as a
//! supervised process group. Its lifetime belongs to the bundle: it is registered in a child
//! scope of the bundle module's scope in the realm that module lives in (the project realm for
//! project-capable bundles, else the global one), so whatever unloads the bundle there
//! (disable, untrust, replace, uninstall, shutdown) stops the server, awaited. A built-in
//! server gets a host-owned root scope, so shutdown stops it too. The owner of the
//! [`LanguageServer`] holds the only strong handle to the process: dropping it kills the group.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use c2_kernel::{Lease, Realm, ScopeHandle};
use c2_manifest::LanguageServerDecl;
use c2_policy::Scope;
use c2_protocol::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, encode_content_length,
};
use c2_supervisor::{Exit, ExitReport, Process, ProcessSpec, ProcessStdin};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::ChildStdout;

use crate::bundle::InstalledBundle;
use crate::error::HostError;
use crate::host::{PluginHost, lock};
use crate::paths::Project;

/// How many bytes one read of a bridged stream asks for. Memory stays bounded by the decoder's
/// limits whatever this is; it only sets how much is moved per wake-up.
const READ_CHUNK: usize = 64 * 1024;

/// One language an active bundle maps to one of its servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageMapping {
    /// The language id as the manifest spells it.
    pub language: String,
    /// The installed bundle id.
    pub bundle: String,
    /// The server's bundle-local id.
    pub server: String,
    /// The declared command, before resolution.
    pub command: String,
}

/// A language server the embedder ships, used when no active plugin maps the language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuiltinLanguageServer {
    /// The language id as registered.
    pub language: String,
    /// An absolute path, or a bare name looked up on `PATH`.
    pub program: PathBuf,
    /// Arguments, passed verbatim.
    pub args: Vec<String>,
}

/// What a language resolves to in one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// The one active plugin that maps the language.
    Plugin {
        /// The installed bundle id.
        bundle: String,
        /// The server declaration from the manifest.
        server: LanguageServerDecl,
        /// The executable, resolved by the runtime rule against the bundle directory.
        program: PathBuf,
    },
    /// No active plugin maps it; the embedder's built-in mapping does.
    BuiltIn(BuiltinLanguageServer),
}

/// Who provides a live [`LanguageServer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ServerOrigin {
    /// A bundle's declared server.
    Plugin {
        /// The installed bundle id.
        bundle: String,
        /// The server's bundle-local id.
        server: String,
    },
    /// The embedder's built-in mapping.
    BuiltIn,
}

/// The embedder's built-in mappings, by lowercased language id.
#[derive(Debug, Default)]
pub(crate) struct Builtins {
    servers: Mutex<BTreeMap<String, BuiltinLanguageServer>>,
}

/// Language ids match case-insensitively (plugin-standard.md §2).
fn fold(language: &str) -> String {
    language.to_lowercase()
}

/// An active bundle's server that maps the language being resolved.
struct Provider {
    bundle: Arc<InstalledBundle>,
    server: LanguageServerDecl,
}

/// A resolution with what starting it needs.
enum Choice {
    Plugin {
        provider: Provider,
        program: PathBuf,
    },
    BuiltIn(BuiltinLanguageServer),
}

impl Choice {
    fn into_resolved(self) -> Resolved {
        match self {
            Choice::Plugin { provider, program } => Resolved::Plugin {
                bundle: provider.bundle.record.id.clone(),
                server: provider.server,
                program,
            },
            Choice::BuiltIn(builtin) => Resolved::BuiltIn(builtin),
        }
    }
}

impl PluginHost {
    /// Registers (or replaces) the embedder's own server for `language`. It is used only when no
    /// active plugin maps that language in the project.
    pub fn register_builtin_language_server(
        &self,
        language: &str,
        program: impl Into<PathBuf>,
        args: Vec<String>,
    ) {
        lock(&self.shared.language_servers.servers).insert(
            fold(language),
            BuiltinLanguageServer {
                language: language.to_owned(),
                program: program.into(),
                args,
            },
        );
    }

    /// Every language mapping of the bundles active in `project`, ordered by bundle id.
    pub fn language_servers(&self, project: &Path) -> Result<Vec<LanguageMapping>, HostError> {
        let project = Project::normalize(project)?;
        let mut mappings = Vec::new();
        for bundle in self.active_bundles(&project) {
            for server in &bundle.manifest.codetwo.language_servers {
                for language in &server.languages {
                    mappings.push(LanguageMapping {
                        language: language.clone(),
                        bundle: bundle.record.id.clone(),
                        server: server.id.clone(),
                        command: server.command.clone(),
                    });
                }
            }
        }
        Ok(mappings)
    }

    /// What `language` resolves to in `project`: the one active plugin mapping it, else the
    /// built-in mapping. Two or more active providers fail with `language_conflict`; none and no
    /// built-in fails with `unsupported`.
    pub fn resolve_language_server(
        &self,
        project: &Path,
        language: &str,
    ) -> Result<Resolved, HostError> {
        let project = Project::normalize(project)?;
        self.resolve_in(&project, language)
            .map(Choice::into_resolved)
    }

    /// Starts the server `language` resolves to in `project`, in the project root. A plugin's
    /// server is stopped, awaited, whenever its bundle unloads in the realm it lives in.
    pub async fn start_language_server(
        &self,
        project: &Path,
        language: &str,
    ) -> Result<LanguageServer, HostError> {
        let project = Project::normalize(project)?;
        // Held until the server is attached to its owner scope, so no policy change can slip
        // between the decision and the attachment.
        let _changes = self.shared.changes.lock().await;
        let choice = self.resolve_in(&project, language)?;
        let kernel = &self.shared.kernel;
        let (spec, owner, lease, origin) = match choice {
            Choice::Plugin {
                provider: Provider { bundle, server },
                program,
            } => {
                let id = bundle.record.id.clone();
                let realm = if bundle.project_capable() {
                    // The project realm needs its desired state before it can be built.
                    Realm::project(self.register_project(project.path())?)
                } else {
                    Realm::Global
                };
                // Builds a project realm on first use and keeps it from being reclaimed while
                // the server lives; a no-op for the global realm.
                let lease = kernel.lease(&realm).await?;
                let name = bundle.module_name();
                let Some(scope) = kernel.module_scope(&realm, &name) else {
                    return Err(HostError::command(
                        "activation_failed",
                        format!(
                            "{id} is enabled and trusted but not active here (pending or failed), so its language server cannot start: `c2-plugins list` shows why"
                        ),
                    ));
                };
                let mut spec = ProcessSpec::new(program, project.path())
                    .args(&server.args)
                    .label(format!("{id}/{}", server.id));
                for (name, value) in &server.env {
                    spec = spec.env(name, value);
                }
                let origin = ServerOrigin::Plugin {
                    bundle: id,
                    server: server.id,
                };
                (spec, scope.child()?, lease, origin)
            }
            Choice::BuiltIn(builtin) => {
                let spec = ProcessSpec::new(builtin.program.as_os_str(), project.path())
                    .args(&builtin.args)
                    .label(format!("language-server:{}", builtin.language));
                let owner = kernel.open_scope(
                    &Realm::Global,
                    format!("language-server:{}", builtin.language),
                )?;
                let lease = kernel.lease(&Realm::Global).await?;
                (spec, owner, lease, ServerOrigin::BuiltIn)
            }
        };
        self.launch(spec, owner, lease, origin, language).await
    }

    /// Spawns `spec` and ties it to `owner`: disposing the scope stops the process.
    async fn launch(
        &self,
        spec: ProcessSpec,
        owner: ScopeHandle,
        lease: Lease,
        origin: ServerOrigin,
        language: &str,
    ) -> Result<LanguageServer, HostError> {
        let spawned = match c2_supervisor::spawn(&spec, &self.shared.options.supervisor) {
            Ok(spawned) => spawned,
            Err(error) => {
                owner.dispose().await;
                return Err(HostError::command(
                    "activation_failed",
                    format!("the language server for {language} cannot start: {error}"),
                ));
            }
        };
        let process = Arc::new(spawned.process);
        // The scope holds only a weak handle: the owner of the `LanguageServer` decides how long
        // the process may live, the scope only how long it is allowed to.
        let watched = Arc::downgrade(&process);
        let attached = owner.on_cleanup(move || async move {
            if let Some(process) = watched.upgrade() {
                process.stop().await;
            }
        });
        if let Err(error) = attached {
            process.stop().await;
            owner.dispose().await;
            return Err(error.into());
        }
        Ok(LanguageServer {
            process,
            stdin: spawned.stdin,
            stdout: spawned.stdout,
            owner,
            origin,
            language: language.to_owned(),
            framing: ContentLengthOptions::default(),
            _lease: lease,
        })
    }

    /// The bundles trusted and enabled in `project` that declare language servers.
    fn active_bundles(&self, project: &Project) -> Vec<Arc<InstalledBundle>> {
        let catalog = self.policy_catalog();
        let bundles: Vec<Arc<InstalledBundle>> = lock(&self.shared.bundles)
            .values()
            .map(|module| module.bundle().clone())
            .filter(|bundle| !bundle.manifest.codetwo.language_servers.is_empty())
            .collect();
        let policy = lock(&self.shared.policy);
        let scope = Scope::Project(project.key().to_owned());
        bundles
            .into_iter()
            .filter(|bundle| {
                policy
                    .desired(&catalog, &bundle.module_name(), &scope)
                    .is_ok_and(|desired| desired.is_runnable())
            })
            .collect()
    }

    fn resolve_in(&self, project: &Project, language: &str) -> Result<Choice, HostError> {
        let wanted = fold(language);
        let mut providers: Vec<Provider> = Vec::new();
        for bundle in self.active_bundles(project) {
            for server in &bundle.manifest.codetwo.language_servers {
                if server.languages.iter().any(|l| fold(l) == wanted) {
                    providers.push(Provider {
                        bundle: bundle.clone(),
                        server: server.clone(),
                    });
                }
            }
        }
        if providers.len() > 1 {
            let names: Vec<String> = providers
                .iter()
                .map(|p| format!("{} (server `{}`)", p.bundle.record.id, p.server.id))
                .collect();
            return Err(HostError::command(
                "language_conflict",
                format!(
                    "{} active plugins provide the language `{language}` in {}: {}; it stays unavailable until policy removes the conflict: disable all but one of them (`c2-plugins disable <ID>`)",
                    providers.len(),
                    project.key(),
                    names.join(", ")
                ),
            ));
        }
        let Some(provider) = providers.pop() else {
            let builtin = lock(&self.shared.language_servers.servers)
                .get(&wanted)
                .cloned();
            return builtin
                .map(Choice::BuiltIn)
                .ok_or_else(|| self.unsupported(project, language, &wanted));
        };
        let program = c2_supervisor::resolve_command(
            &provider.bundle.dir,
            &provider.server.command,
            std::env::var_os("PATH").as_deref(),
        )
        .map_err(|error| {
            HostError::command(
                "activation_failed",
                format!(
                    "{}: language server `{}` cannot be found: {error}",
                    provider.bundle.record.id, provider.server.id
                ),
            )
        })?;
        Ok(Choice::Plugin { provider, program })
    }

    /// No provider: say which installed bundles would provide it if they were active.
    fn unsupported(&self, project: &Project, language: &str, wanted: &str) -> HostError {
        let inactive: Vec<String> = lock(&self.shared.bundles)
            .values()
            .filter(|module| {
                module
                    .bundle()
                    .manifest
                    .codetwo
                    .language_servers
                    .iter()
                    .any(|s| s.languages.iter().any(|l| fold(l) == wanted))
            })
            .map(|module| module.bundle().record.id.clone())
            .collect();
        let message = if inactive.is_empty() {
            format!(
                "no active plugin and no built-in mapping provides the language `{language}` in {}: install a plugin that declares it in `languageServers`",
                project.key()
            )
        } else {
            format!(
                "no active plugin provides the language `{language}` in {}; {} declare it but are not trusted and enabled there: review them, then `c2-plugins trust <ID>` and `c2-plugins enable <ID>`",
                project.key(),
                inactive.join(", ")
            )
        };
        HostError::command("unsupported", message)
    }
}

/// A live language server. Write requests to [`stdin_mut`](Self::stdin_mut), read replies
/// from [`stdout_mut`](Self::stdout_mut), or hand both to [`bridge`](Self::bridge).
///
/// Dropping it kills the process group at once; [`stop`](Self::stop) ends it gracefully.
pub struct LanguageServer {
    process: Arc<Process>,
    stdin: ProcessStdin,
    stdout: ChildStdout,
    owner: ScopeHandle,
    origin: ServerOrigin,
    language: String,
    framing: ContentLengthOptions,
    _lease: Lease,
}

impl std::fmt::Debug for LanguageServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanguageServer")
            .field("language", &self.language)
            .field("origin", &self.origin)
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

impl Drop for LanguageServer {
    fn drop(&mut self) {
        // The process dies with the last strong handle (ours); the scope that watched it is
        // released in the background so it does not linger in the bundle's scope.
        if self.owner.is_current()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let owner = self.owner.clone();
            runtime.spawn(async move { owner.dispose().await });
        }
    }
}

impl LanguageServer {
    /// The server's process id (under the supervisor shim, the shim's child; the shim's own pid
    /// until the shim has started it).
    pub fn pid(&self) -> u32 {
        self.process
            .program_pid()
            .unwrap_or_else(|| self.process.pid())
    }

    /// Who provides it.
    pub fn origin(&self) -> &ServerOrigin {
        &self.origin
    }

    /// The language id it was started for, as asked.
    pub fn language(&self) -> &str {
        &self.language
    }

    /// The server's stdin: Content-Length framed requests go here.
    pub fn stdin_mut(&mut self) -> &mut ProcessStdin {
        &mut self.stdin
    }

    /// The server's stdout: Content-Length framed responses come from here.
    pub fn stdout_mut(&mut self) -> &mut ChildStdout {
        &mut self.stdout
    }

    /// The framing limits [`bridge`](Self::bridge) enforces (8 MiB bodies, 8 KiB headers).
    pub fn framing(&self) -> ContentLengthOptions {
        self.framing
    }

    /// Changes the framing limits of [`bridge`](Self::bridge).
    pub fn set_framing(&mut self, framing: ContentLengthOptions) {
        self.framing = framing;
    }

    /// How it ended, if it has; never blocks.
    pub fn try_exit(&self) -> Option<Exit> {
        self.process.try_exit()
    }

    /// Waits until it has ended: on its own, through [`stop`](Self::stop), or because its
    /// bundle unloaded.
    pub async fn exited(&self) -> Exit {
        self.process.exited().await
    }

    /// The last stderr lines, for error messages.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.process.stderr_tail()
    }

    /// Stops it (stdin closed, SIGTERM, grace, SIGKILL to the group, reaped) and releases its
    /// scope. Idempotent.
    pub async fn stop(&self) -> ExitReport {
        if self.owner.is_current() {
            self.owner.dispose().await;
        }
        self.process.stop().await
    }

    /// Copies Content-Length frames both ways, `client_in` to the server and the server to
    /// `client_out`, re-framing each body under [`framing`](Self::framing): an oversized body is
    /// discarded as it arrives and counted. Returns when either side ends or fails, after
    /// stopping the server.
    pub async fn bridge<R, W>(mut self, client_in: R, client_out: W) -> BridgeReport
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let framing = self.framing;
        let mut to_server = FlowStats::default();
        let mut to_client = FlowStats::default();
        let ended = {
            let mut down =
                std::pin::pin!(pump(&mut self.stdout, client_out, framing, &mut to_client));
            let first = {
                let up = pump(client_in, &mut self.stdin, framing, &mut to_server);
                tokio::select! {
                    result = up => Ok(result),
                    result = &mut down => Err(result),
                }
            };
            match first {
                Ok(Ok(())) => {
                    // The editor is done. Let the server see the end of its input and deliver what
                    // it has already answered, for at most the stop grace, before it is stopped.
                    self.process.close_stdin();
                    let _drained = tokio::time::timeout(DRAIN_AFTER_CLIENT_CLOSED, &mut down).await;
                    BridgeEnd::ClientClosed
                }
                Ok(Err(reason)) => BridgeEnd::ClientToServerFailed(reason),
                Err(Ok(())) => BridgeEnd::ServerClosed,
                Err(Err(reason)) => BridgeEnd::ServerToClientFailed(reason),
            }
        };
        let exit = self.stop().await;
        BridgeReport {
            ended,
            to_server,
            to_client,
            exit,
        }
    }
}

/// How long a bridge keeps forwarding the server's output after the client closed its input.
const DRAIN_AFTER_CLIENT_CLOSED: std::time::Duration = std::time::Duration::from_secs(1);

/// Frames moved in one direction of a bridge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowStats {
    /// Bodies forwarded.
    pub frames: u64,
    /// Bodies over the limit, discarded as they arrived.
    pub oversized: u64,
}

/// Why a bridge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeEnd {
    /// The client's input reached its end (the editor went away).
    ClientClosed,
    /// The server's output reached its end (it exited or was stopped).
    ServerClosed,
    /// Reading the client, its framing, or writing to the server failed.
    ClientToServerFailed(String),
    /// Reading the server, its framing, or writing to the client failed.
    ServerToClientFailed(String),
}

/// What [`LanguageServer::bridge`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeReport {
    /// Which side ended it.
    pub ended: BridgeEnd,
    /// Client to server.
    pub to_server: FlowStats,
    /// Server to client.
    pub to_client: FlowStats,
    /// How the server ended.
    pub exit: ExitReport,
}

/// Moves frames from `from` to `to` until `from` ends; a partial frame at the end is dropped.
async fn pump<R, W>(
    mut from: R,
    mut to: W,
    framing: ContentLengthOptions,
    stats: &mut FlowStats,
) -> Result<(), String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut decoder = ContentLengthDecoder::new(framing);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut frame = Vec::new();
    loop {
        let read = from
            .read(&mut chunk)
            .await
            .map_err(|error| format!("cannot read: {error}"))?;
        if read == 0 {
            return Ok(());
        }
        let mut input = &chunk[..read];
        while let Some(event) = decoder.decode(&mut input).map_err(|e| e.to_string())? {
            match event {
                ContentLengthEvent::Body(body) => {
                    frame.clear();
                    encode_content_length(&body, &framing, &mut frame)
                        .map_err(|e| e.to_string())?;
                    to.write_all(&frame)
                        .await
                        .map_err(|error| format!("cannot write: {error}"))?;
                    stats.frames += 1;
                }
                ContentLengthEvent::Oversized { len } => {
                    tracing::warn!(
                        len,
                        limit = framing.max_body_bytes,
                        "a language-server frame over the limit was discarded"
                    );
                    stats.oversized += 1;
                }
            }
        }
        to.flush()
            .await
            .map_err(|error| format!("cannot write: {error}"))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run_pump(
        input: &[u8],
        framing: ContentLengthOptions,
    ) -> (Result<(), String>, Vec<u8>, FlowStats) {
        let mut out = Vec::new();
        let mut stats = FlowStats::default();
        let result = pump(input, &mut out, framing, &mut stats).await;
        (result, out, stats)
    }

    #[tokio::test]
    async fn frames_are_reframed_with_only_their_length_header() {
        let input = b"Content-Type: application/vscode-jsonrpc\r\ncontent-length: 2\r\n\r\n{}Content-Length: 3\n\n[1]";
        let (result, out, stats) = run_pump(input, ContentLengthOptions::default()).await;
        assert_eq!(result, Ok(()));
        assert_eq!(
            out,
            b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]"
        );
        assert_eq!(
            stats,
            FlowStats {
                frames: 2,
                oversized: 0
            }
        );
    }

    #[tokio::test]
    async fn an_oversized_body_is_dropped_and_counted_and_the_next_one_passes() {
        let framing = ContentLengthOptions {
            max_body_bytes: 4,
            ..ContentLengthOptions::default()
        };
        let input = b"Content-Length: 5\r\n\r\n12345Content-Length: 1\r\n\r\n7";
        let (result, out, stats) = run_pump(input, framing).await;
        assert_eq!(result, Ok(()));
        assert_eq!(out, b"Content-Length: 1\r\n\r\n7");
        assert_eq!(
            stats,
            FlowStats {
                frames: 1,
                oversized: 1
            }
        );
    }

    #[tokio::test]
    async fn a_broken_header_ends_the_direction_with_the_reason() {
        let input = b"Content-Length: 2\r\n\r\n{}Content-Length: two\r\n\r\n{}";
        let (result, out, stats) = run_pump(input, ContentLengthOptions::default()).await;
        let reason = result.unwrap_err();
        assert!(reason.contains("two"), "{reason}");
        assert_eq!(out, b"Content-Length: 2\r\n\r\n{}");
        assert_eq!(stats.frames, 1);
    }

    #[tokio::test]
    async fn a_partial_frame_at_the_end_is_not_forwarded() {
        let (result, out, stats) = run_pump(
            b"Content-Length: 10\r\n\r\n{\"a\"",
            ContentLengthOptions::default(),
        )
        .await;
        assert_eq!(result, Ok(()));
        assert!(out.is_empty());
        assert_eq!(stats.frames, 0);
    }

    #[test]
    fn language_ids_fold_case() {
        assert_eq!(fold("TypeScriptReact"), fold("typescriptreact"));
        assert_ne!(fold("c"), fold("cpp"));
    }
}
