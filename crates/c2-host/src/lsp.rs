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
use std::time::Duration;

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
use crate::error::{ErrorKind, HostError};
use crate::host::{PluginHost, Target, lock};
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

/// [`PluginHost::language_listing`]: every language server and language mapping of one realm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageListing {
    /// The project key, or `global` for the user realm.
    pub realm: String,
    /// One row per language (folded case), ordered by language.
    pub languages: Vec<LanguageRow>,
    /// Every installed bundle's declared servers, ordered by bundle id.
    pub servers: Vec<ServerListing>,
    /// The embedder's built-in mappings.
    pub builtins: Vec<BuiltinLanguageServer>,
}

/// One language in a [`LanguageListing`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageRow {
    /// The language id as first spelled by a provider.
    pub language: String,
    /// Who `lsp <LANGUAGE>` would start: `None` on a conflict or when nothing active maps it.
    pub winner: Option<ServerOrigin>,
    /// Two or more active providers: the language fails closed until policy removes it.
    pub conflict: bool,
    /// The active bundles' servers that map it.
    pub providers: Vec<ProviderRef>,
    /// Installed bundles that map it but are not trusted and enabled here.
    pub inactive: Vec<ProviderRef>,
    /// The built-in mapping, overridden by any active plugin provider.
    pub builtin: Option<BuiltinLanguageServer>,
}

impl LanguageRow {
    fn new(language: &str) -> Self {
        Self {
            language: language.to_owned(),
            winner: None,
            conflict: false,
            providers: Vec::new(),
            inactive: Vec::new(),
            builtin: None,
        }
    }
}

/// A bundle's server named in a [`LanguageRow`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRef {
    /// The installed bundle id.
    pub bundle: String,
    /// The server's bundle-local id.
    pub server: String,
    /// The declared command.
    pub command: String,
}

/// One declared server in a [`LanguageListing`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerListing {
    /// The installed bundle id.
    pub bundle: String,
    /// The server's bundle-local id.
    pub server: String,
    /// Its languages as declared.
    pub languages: Vec<String>,
    /// The declared command.
    pub command: String,
    /// Whether its bundle is trusted and enabled in the listed realm and the server itself
    /// is not disabled there.
    pub active: bool,
    /// Whether policy disables this server (`language-server:<id>`) in the listed realm.
    pub disabled: bool,
}

/// What a language resolves to in one project.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
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
        let scope = Scope::Project(project.key().to_owned());
        for bundle in self.active_bundles(&project) {
            let withheld = self.shared.withheld(&bundle, &scope);
            for server in &bundle.manifest.codetwo.language_servers {
                if withheld.contains(&format!("language-server:{}", server.id)) {
                    continue;
                }
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

    /// Every language server and language mapping as seen from `target` (a project, or the
    /// user realm for what is enabled user-wide): each installed bundle's servers with their
    /// languages and whether the bundle is active there, and per language its active
    /// providers, the winner (the one active plugin, else the built-in mapping), conflicts and
    /// the built-in mapping. Starts nothing.
    pub fn language_listing(&self, target: &Target) -> Result<LanguageListing, HostError> {
        let (scope, realm) = match target {
            Target::User => (Scope::User, "global".to_owned()),
            Target::Project(path) => {
                let project = Project::normalize(path)?;
                let key = project.key().to_owned();
                (Scope::Project(key.clone()), key)
            }
        };
        let active: Vec<String> = self
            .active_in(&scope)
            .iter()
            .map(|bundle| bundle.record.id.clone())
            .collect();
        let mut servers = Vec::new();
        let mut languages: BTreeMap<String, LanguageRow> = BTreeMap::new();
        let modules: Vec<Arc<InstalledBundle>> = lock(&self.shared.bundles)
            .values()
            .map(|module| module.bundle().clone())
            .collect();
        for bundle in &modules {
            let id = &bundle.record.id;
            let bundle_active = active.contains(id);
            let withheld = self.shared.withheld(bundle, &scope);
            for server in &bundle.manifest.codetwo.language_servers {
                let disabled = withheld.contains(&format!("language-server:{}", server.id));
                let is_active = bundle_active && !disabled;
                servers.push(ServerListing {
                    bundle: id.clone(),
                    server: server.id.clone(),
                    languages: server.languages.clone(),
                    command: server.command.clone(),
                    active: is_active,
                    disabled,
                });
                for language in &server.languages {
                    let row = languages
                        .entry(fold(language))
                        .or_insert_with(|| LanguageRow::new(language));
                    let provider = ProviderRef {
                        bundle: id.clone(),
                        server: server.id.clone(),
                        command: server.command.clone(),
                    };
                    if is_active {
                        row.providers.push(provider);
                    } else {
                        row.inactive.push(provider);
                    }
                }
            }
        }
        let builtins: Vec<BuiltinLanguageServer> = lock(&self.shared.language_servers.servers)
            .values()
            .cloned()
            .collect();
        for builtin in &builtins {
            languages
                .entry(fold(&builtin.language))
                .or_insert_with(|| LanguageRow::new(&builtin.language))
                .builtin = Some(builtin.clone());
        }
        let languages = languages
            .into_values()
            .map(|mut row| {
                row.conflict = row.providers.len() > 1;
                row.winner = match (row.providers.as_slice(), &row.builtin) {
                    ([one], _) => Some(ServerOrigin::Plugin {
                        bundle: one.bundle.clone(),
                        server: one.server.clone(),
                    }),
                    ([], Some(_)) => Some(ServerOrigin::BuiltIn),
                    _ => None,
                };
                row
            })
            .collect();
        Ok(LanguageListing {
            realm,
            languages,
            servers,
            builtins,
        })
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
                self.shared
                    .verify_content(&bundle)
                    .map_err(|message| HostError::command(ErrorKind::ContentChanged, message))?;
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
                        ErrorKind::ActivationFailed,
                        format!(
                            "{id} is enabled and trusted but not active here (pending or failed), so its language server cannot start"
                        ),
                    )
                    .with_hint("`c2-plugins list` shows why"));
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
                    ErrorKind::ActivationFailed,
                    format!("the language server for {language} cannot start: {error}"),
                ));
            }
        };
        // The editor's handshake is the bridge's business, not the host's: nothing to wait for.
        spawned.process.handshake_done();
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
            drain: DEFAULT_DRAIN,
            _lease: lease,
        })
    }

    /// The bundles trusted and enabled in `project` that declare language servers.
    fn active_bundles(&self, project: &Project) -> Vec<Arc<InstalledBundle>> {
        self.active_in(&Scope::Project(project.key().to_owned()))
    }

    /// The bundles trusted and enabled in `scope` that declare language servers.
    fn active_in(&self, scope: &Scope) -> Vec<Arc<InstalledBundle>> {
        let catalog = self.policy_catalog();
        let bundles: Vec<Arc<InstalledBundle>> = lock(&self.shared.bundles)
            .values()
            .map(|module| module.bundle().clone())
            .filter(|bundle| !bundle.manifest.codetwo.language_servers.is_empty())
            .collect();
        let policy = lock(&self.shared.policy);
        bundles
            .into_iter()
            .filter(|bundle| {
                policy
                    .desired(&catalog, &bundle.module_name(), scope)
                    .is_ok_and(|desired| desired.is_runnable())
            })
            .collect()
    }

    fn resolve_in(&self, project: &Project, language: &str) -> Result<Choice, HostError> {
        let wanted = fold(language);
        let mut providers: Vec<Provider> = Vec::new();
        let scope = Scope::Project(project.key().to_owned());
        for bundle in self.active_bundles(project) {
            let withheld = self.shared.withheld(&bundle, &scope);
            for server in &bundle.manifest.codetwo.language_servers {
                if withheld.contains(&format!("language-server:{}", server.id)) {
                    continue;
                }
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
                ErrorKind::LanguageConflict,
                format!(
                    "{} active plugins provide the language `{language}` in {}: {}; it stays unavailable until policy removes the conflict",
                    providers.len(),
                    project.key(),
                    names.join(", ")
                ),
            )
            .with_hint("disable all but one of them (`c2-plugins disable <ID>`)"));
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
            // The supervisor words it for runtimes; say which language server it is.
            let problem = match error {
                c2_supervisor::Error::Command { command, problem } => {
                    format!("its command `{command}` {problem}")
                }
                other => other.to_string(),
            };
            HostError::command(
                ErrorKind::ActivationFailed,
                format!(
                    "{}: the language server `{}` for `{language}` cannot start: {problem}",
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
        if inactive.is_empty() {
            HostError::command(
                ErrorKind::Unsupported,
                format!(
                    "no active plugin and no built-in mapping provides the language `{language}` in {}: install a plugin that declares it in `languageServers`",
                    project.key()
                ),
            )
        } else {
            HostError::command(
                ErrorKind::Unsupported,
                format!(
                    "no active plugin provides the language `{language}` in {}; {} declare it but are not trusted and enabled there",
                    project.key(),
                    inactive.join(", ")
                ),
            )
            .with_hint("review them, then `c2-plugins trust <ID>` and `c2-plugins enable <ID>`")
        }
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
    drain: Duration,
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

    /// How long [`bridge`](Self::bridge) keeps forwarding the server's output after the
    /// editor closed its input or sent `exit`, before the server is stopped (default 2 s).
    pub fn drain(&self) -> Duration {
        self.drain
    }

    /// Changes [`drain`](Self::drain).
    pub fn set_drain(&mut self, drain: Duration) {
        self.drain = drain;
    }

    /// Copies Content-Length frames both ways, `client_in` to the server and the server to
    /// `client_out`, re-framing each body under [`framing`](Self::framing), and watches the
    /// editor's `shutdown` and `exit` for the LSP exit rule ([`BridgeReport::verdict`]).
    ///
    /// A body over the limit in either direction ends the session: its bytes are discarded as
    /// they arrive, the editor gets a `window/showMessage` error naming the size and the limit,
    /// and the server is stopped. Returns when either side ends or fails, after stopping the
    /// server.
    pub async fn bridge<R, W>(mut self, client_in: R, mut client_out: W) -> BridgeReport
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let framing = self.framing;
        let drain = self.drain;
        let mut to_server = FlowStats::default();
        let mut to_client = FlowStats::default();
        let mut lifecycle = Lifecycle::default();
        let mut output_ended = false;
        let ended = {
            let mut down = std::pin::pin!(pump(
                &mut self.stdout,
                &mut client_out,
                framing,
                &mut to_client,
                None
            ));
            let first = {
                let up = pump(
                    client_in,
                    &mut self.stdin,
                    framing,
                    &mut to_server,
                    Some(&mut lifecycle),
                );
                tokio::select! {
                    result = up => Ok(result),
                    result = &mut down => Err(result),
                }
            };
            match first {
                Ok(Ok(())) => {
                    // The editor is done. Let the server see the end of its input and deliver what
                    // it has already answered, for at most the drain time, before it is stopped.
                    self.process.close_stdin();
                    output_ended = tokio::time::timeout(drain, &mut down).await.is_ok();
                    BridgeEnd::ClientClosed
                }
                Ok(Err(PumpError::Oversized { len, limit })) => {
                    BridgeEnd::ClientFrameTooLarge { len, limit }
                }
                Ok(Err(PumpError::Failed(reason))) => BridgeEnd::ClientToServerFailed(reason),
                Err(Ok(())) => {
                    output_ended = true;
                    BridgeEnd::ServerClosed
                }
                Err(Err(PumpError::Oversized { len, limit })) => {
                    BridgeEnd::ServerFrameTooLarge { len, limit }
                }
                Err(Err(PumpError::Failed(reason))) => BridgeEnd::ServerToClientFailed(reason),
            }
        };
        if output_ended || lifecycle.exit_sent {
            // The server closed its output or was told to exit: it is ending on its own (its
            // stdout closes a moment before its exit is reaped). Wait for that, bounded, so the
            // report tells a server that ended by itself from one the bridge had to stop.
            let _exited = tokio::time::timeout(drain, self.process.exited()).await;
        }
        let exit = self.stop().await;
        let verdict = verdict(&ended, lifecycle, &exit, &self.language, drain);
        if let Err(failure) = &verdict
            && failure.kind == "frame_too_large"
        {
            // Tell the editor why the session ends (it cannot otherwise know which of its
            // requests will never be answered).
            let _told = show_error(&mut client_out, &failure.message, framing).await;
        }
        let stderr_tail = if verdict.is_err() {
            self.settled_stderr_tail().await
        } else {
            Vec::new()
        };
        BridgeReport {
            ended,
            to_server,
            to_client,
            exit,
            shutdown_requested: lifecycle.shutdown_requested,
            exit_sent: lifecycle.exit_sent,
            verdict,
            stderr_tail,
        }
    }

    /// The stderr tail once the drain of the (now dead) group's stderr has caught up: the
    /// reaper can report the exit before the last lines were read, so wait a moment, bounded.
    async fn settled_stderr_tail(&self) -> Vec<String> {
        let mut tail = self.stderr_tail();
        for _ in 0..STDERR_SETTLE_STEPS {
            tokio::time::sleep(STDERR_SETTLE_STEP).await;
            let now = self.stderr_tail();
            if now == tail && !now.is_empty() {
                break;
            }
            tail = now;
        }
        tail
    }
}

/// How long [`LanguageServer::bridge`] waits, at most, for a failed server's last stderr lines:
/// this many steps of [`STDERR_SETTLE_STEP`] (only on a failure, never on a clean end).
const STDERR_SETTLE_STEPS: u32 = 10;
const STDERR_SETTLE_STEP: Duration = Duration::from_millis(20);

/// The default of [`LanguageServer::drain`].
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(2);

/// What the editor said about ending the session (LSP `shutdown` request, `exit` notification).
#[derive(Debug, Clone, Copy, Default)]
struct Lifecycle {
    shutdown_requested: bool,
    exit_sent: bool,
}

impl Lifecycle {
    /// Notes `shutdown` and `exit` in one editor message. Only `method` is looked at; the rest
    /// of the body is skipped without being built.
    fn observe(&mut self, body: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(borrow)]
            method: Option<std::borrow::Cow<'a, str>>,
        }
        let Ok(Probe {
            method: Some(method),
        }) = serde_json::from_slice::<Probe<'_>>(body)
        else {
            return;
        };
        match method.as_ref() {
            "shutdown" => self.shutdown_requested = true,
            "exit" => self.exit_sent = true,
            _ => {}
        }
    }
}

/// The LSP exit rule applied to how a bridge ended (see [`BridgeReport::verdict`]).
fn verdict(
    ended: &BridgeEnd,
    lifecycle: Lifecycle,
    exit: &ExitReport,
    language: &str,
    drain: Duration,
) -> Result<(), BridgeFailure> {
    let fail = |kind: &'static str, message: String| Err(BridgeFailure { kind, message });
    match ended {
        BridgeEnd::ClientFrameTooLarge { len, limit } => {
            return fail(
                "frame_too_large",
                format!(
                    "the editor sent a {len}-byte message to the {language} language server, over the {limit}-byte limit; the message was discarded and the server stopped (raise the limit or send smaller messages)"
                ),
            );
        }
        BridgeEnd::ServerFrameTooLarge { len, limit } => {
            return fail(
                "frame_too_large",
                format!(
                    "the {language} language server sent a {len}-byte message, over the {limit}-byte limit; the message was discarded and the server stopped, so a pending request may never be answered"
                ),
            );
        }
        BridgeEnd::ClientToServerFailed(why) | BridgeEnd::ServerToClientFailed(why) => {
            return fail(
                "command_failed",
                format!("the {language} language-server bridge failed: {why}"),
            );
        }
        BridgeEnd::ClientClosed | BridgeEnd::ServerClosed => {}
    }
    if lifecycle.exit_sent {
        if !lifecycle.shutdown_requested {
            return fail(
                "exit_without_shutdown",
                format!(
                    "the editor sent `exit` to the {language} language server without `shutdown` first; by the LSP exit rule the session ends with code 1"
                ),
            );
        }
        if exit.already_exited && exit.exit.success() {
            return Ok(());
        }
        if !exit.already_exited {
            return fail(
                "process_exited",
                format!(
                    "the {language} language server did not exit within {} ms of `shutdown` and `exit`; it was stopped ({})",
                    drain.as_millis(),
                    exit.exit
                ),
            );
        }
        return fail(
            "process_exited",
            format!(
                "the {language} language server {}; the editor had sent `shutdown` and `exit`, after which the LSP exit rule asks for code 0",
                exit.exit
            ),
        );
    }
    match ended {
        BridgeEnd::ServerClosed => fail(
            "process_exited",
            format!(
                "the {language} language server ended before the editor sent `exit`: {}",
                exit.exit
            ),
        ),
        // The editor went away. The bridge stopping the server is the expected end; a server
        // that had already ended on its own with a failure (it died at start, say) is reported.
        _ if exit.already_exited && !exit.exit.success() => fail(
            "process_exited",
            format!("the {language} language server ended: {}", exit.exit),
        ),
        _ => Ok(()),
    }
}

/// Writes a `window/showMessage` error notification to the editor.
async fn show_error<W: AsyncWrite + Unpin>(
    to: &mut W,
    message: &str,
    framing: ContentLengthOptions,
) -> Result<(), String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "window/showMessage",
        "params": { "type": 1, "message": format!("c2-plugins: {message}") },
    })
    .to_string();
    let mut frame = Vec::new();
    encode_content_length(body.as_bytes(), &framing, &mut frame).map_err(|e| e.to_string())?;
    to.write_all(&frame).await.map_err(|e| e.to_string())?;
    to.flush().await.map_err(|e| e.to_string())
}

/// Frames moved in one direction of a bridge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowStats {
    /// Bodies forwarded.
    pub frames: u64,
    /// Bodies over the limit (at most one: the first ends the bridge).
    pub oversized: u64,
}

/// Why a bridge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BridgeEnd {
    /// The client's input reached its end (the editor went away).
    ClientClosed,
    /// The server's output reached its end (it exited or was stopped).
    ServerClosed,
    /// Reading the client, its framing, or writing to the server failed.
    ClientToServerFailed(String),
    /// Reading the server, its framing, or writing to the client failed.
    ServerToClientFailed(String),
    /// The editor sent a body over the limit.
    ClientFrameTooLarge {
        /// Its declared length in bytes.
        len: u64,
        /// The limit it broke.
        limit: usize,
    },
    /// The server sent a body over the limit.
    ServerFrameTooLarge {
        /// Its declared length in bytes.
        len: u64,
        /// The limit it broke.
        limit: usize,
    },
}

/// Why a bridged session did not end cleanly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeFailure {
    /// `process_exited`, `exit_without_shutdown`, `frame_too_large` or `command_failed`.
    pub kind: &'static str,
    /// What happened, for the user.
    pub message: String,
}

impl std::fmt::Display for BridgeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
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
    /// The editor sent the `shutdown` request.
    pub shutdown_requested: bool,
    /// The editor sent the `exit` notification.
    pub exit_sent: bool,
    /// The LSP exit rule applied: `Ok` when the editor sent `shutdown` then `exit` and the
    /// server exited 0 by itself, or when the editor went away and the server had not failed
    /// on its own; otherwise why not (`exit` without `shutdown` is a failure, as in LSP where
    /// it means exit code 1).
    pub verdict: Result<(), BridgeFailure>,
    /// The server's last stderr lines when the verdict is a failure (empty otherwise).
    pub stderr_tail: Vec<String>,
}

/// Why one direction of a bridge stopped early.
#[derive(Debug)]
enum PumpError {
    /// A body over the limit; its bytes were discarded.
    Oversized { len: u64, limit: usize },
    /// Reading, framing or writing failed.
    Failed(String),
}

/// Moves frames from `from` to `to` until `from` ends; a partial frame at the end is dropped.
/// A body over the limit ends it with [`PumpError::Oversized`]. With `lifecycle`, every body
/// is also checked for `shutdown` and `exit`.
async fn pump<R, W>(
    mut from: R,
    mut to: W,
    framing: ContentLengthOptions,
    stats: &mut FlowStats,
    mut lifecycle: Option<&mut Lifecycle>,
) -> Result<(), PumpError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let failed = |what: &str, error: std::io::Error| PumpError::Failed(format!("{what}: {error}"));
    let mut decoder = ContentLengthDecoder::new(framing);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut frame = Vec::new();
    loop {
        let read = from
            .read(&mut chunk)
            .await
            .map_err(|e| failed("cannot read", e))?;
        if read == 0 {
            return Ok(());
        }
        let mut input = &chunk[..read];
        while let Some(event) = decoder
            .decode(&mut input)
            .map_err(|e| PumpError::Failed(e.to_string()))?
        {
            match event {
                ContentLengthEvent::Body(body) => {
                    if let Some(lifecycle) = lifecycle.as_deref_mut() {
                        lifecycle.observe(&body);
                    }
                    frame.clear();
                    encode_content_length(&body, &framing, &mut frame)
                        .map_err(|e| PumpError::Failed(e.to_string()))?;
                    to.write_all(&frame)
                        .await
                        .map_err(|e| failed("cannot write", e))?;
                    stats.frames += 1;
                }
                ContentLengthEvent::Oversized { len } => {
                    tracing::warn!(
                        len,
                        limit = framing.max_body_bytes,
                        "a language-server frame over the limit: the session ends"
                    );
                    stats.oversized += 1;
                    // What was already forwarded is delivered before the session ends.
                    let _flushed = to.flush().await;
                    return Err(PumpError::Oversized {
                        len,
                        limit: framing.max_body_bytes,
                    });
                }
            }
        }
        to.flush().await.map_err(|e| failed("cannot write", e))?;
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
        let result = pump(input, &mut out, framing, &mut stats, None)
            .await
            .map_err(|error| format!("{error:?}"));
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
    async fn an_oversized_body_ends_the_direction_after_what_came_before() {
        let framing = ContentLengthOptions {
            max_body_bytes: 4,
            ..ContentLengthOptions::default()
        };
        let input =
            b"Content-Length: 1\r\n\r\n6Content-Length: 5\r\n\r\n12345Content-Length: 1\r\n\r\n7";
        let mut out = Vec::new();
        let mut stats = FlowStats::default();
        let result = pump(&input[..], &mut out, framing, &mut stats, None).await;
        assert!(
            matches!(result, Err(PumpError::Oversized { len: 5, limit: 4 })),
            "{result:?}"
        );
        assert_eq!(out, b"Content-Length: 1\r\n\r\n6");
        assert_eq!(
            stats,
            FlowStats {
                frames: 1,
                oversized: 1
            }
        );
    }

    #[tokio::test]
    async fn shutdown_and_exit_are_noticed_in_the_editors_direction() {
        let shutdown = br#"{"jsonrpc":"2.0","id":9,"method":"shutdown"}"#;
        let exit = br#"{"jsonrpc":"2.0","method":"exit"}"#;
        let mut input = Vec::new();
        for body in [&shutdown[..], &exit[..]] {
            input.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            input.extend_from_slice(body);
        }
        let mut lifecycle = Lifecycle::default();
        let mut stats = FlowStats::default();
        let mut out = Vec::new();
        let result = pump(
            &input[..],
            &mut out,
            ContentLengthOptions::default(),
            &mut stats,
            Some(&mut lifecycle),
        )
        .await;
        assert!(result.is_ok());
        assert!(lifecycle.shutdown_requested && lifecycle.exit_sent);
    }

    #[test]
    fn only_the_method_counts_and_other_bodies_are_ignored() {
        let mut lifecycle = Lifecycle::default();
        lifecycle.observe(br#"{"jsonrpc":"2.0","id":1,"result":{"method":"shutdown"}}"#);
        lifecycle.observe(b"[0,0,0]");
        lifecycle.observe(b"not json");
        lifecycle.observe(br#"{"method":"\u0065xit"}"#);
        assert!(!lifecycle.shutdown_requested);
        assert!(lifecycle.exit_sent, "an escaped method name is still read");
    }

    fn report(exit: Exit, already_exited: bool) -> ExitReport {
        ExitReport {
            exit,
            already_exited,
            forced: false,
        }
    }

    fn kind(result: Result<(), BridgeFailure>) -> &'static str {
        result.err().map_or("ok", |failure| failure.kind)
    }

    #[test]
    fn the_lsp_exit_rule() {
        let drain = DEFAULT_DRAIN;
        let clean = Lifecycle {
            shutdown_requested: true,
            exit_sent: true,
        };
        let exit_only = Lifecycle {
            shutdown_requested: false,
            exit_sent: true,
        };
        let none = Lifecycle::default();
        let closed = BridgeEnd::ServerClosed;
        let gone = BridgeEnd::ClientClosed;
        let zero = report(Exit::Code(0), true);
        let cases = [
            (&closed, clean, zero.clone(), "ok"),
            (&gone, clean, zero.clone(), "ok"),
            (
                &closed,
                clean,
                report(Exit::Code(3), true),
                "process_exited",
            ),
            (
                &gone,
                clean,
                report(Exit::Signal(15), false),
                "process_exited",
            ),
            (
                &closed,
                exit_only,
                report(Exit::Code(1), true),
                "exit_without_shutdown",
            ),
            (&closed, none, zero.clone(), "process_exited"),
            (&gone, none, report(Exit::Signal(15), false), "ok"),
            (&gone, none, zero.clone(), "ok"),
            (&gone, none, report(Exit::Code(2), true), "process_exited"),
        ];
        for (ended, lifecycle, exit, expected) in cases {
            assert_eq!(
                kind(verdict(ended, lifecycle, &exit, "python", drain)),
                expected,
                "{ended:?} {lifecycle:?} {exit:?}"
            );
        }
        let oversized = BridgeEnd::ServerFrameTooLarge { len: 9, limit: 4 };
        let failure = verdict(&oversized, clean, &zero, "python", drain).unwrap_err();
        assert_eq!(failure.kind, "frame_too_large");
        assert!(failure.message.contains("9-byte") && failure.message.contains("4-byte"));
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
