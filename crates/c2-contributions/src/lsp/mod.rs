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
//! Joining a server to an editor's streams is not the host's job (c2-relay's LSP bridge).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use c2_kernel::Realm;
use c2_manifest::LanguageServerDecl;
use c2_policy::Scope;
use c2_supervisor::ProcessSpec;
use serde::Serialize;

use c2_host::seam::{Advice, InstalledBundle, Registry};
use c2_host::{ErrorKind, HostError, PluginHost, Project, Target};
use c2_lock::lock;

mod server;

pub use server::LanguageServer;

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

/// [`LanguageServers::language_listing`]: every language server and language mapping of one realm.
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

/// Registers language servers with a host that is opening: their state.
pub(crate) fn install(registry: &mut Registry<'_>) {
    registry.own(Arc::new(Builtins::default()));
}

/// The language-server contribution's state: the embedder's built-in mappings, by lowercased
/// language id.
#[derive(Debug, Default)]
struct Builtins {
    servers: Mutex<BTreeMap<String, BuiltinLanguageServer>>,
}

/// Language ids match case-insensitively (plugin-standard.md §2).
pub(crate) fn fold(language: &str) -> String {
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
                bundle: provider.bundle.record().id.clone(),
                server: provider.server,
                program,
            },
            Choice::BuiltIn(builtin) => Resolved::BuiltIn(builtin),
        }
    }
}

/// Language servers: which plugin (or built-in mapping) serves a language in a project, and
/// starting it there. Implemented for [`PluginHost`].
pub trait LanguageServers {
    /// Registers (or replaces) the embedder's own server for `language`. It is used only when no
    /// active plugin maps that language in the project.
    fn register_builtin_language_server(
        &self,
        language: &str,
        program: impl Into<PathBuf>,
        args: Vec<String>,
    ) -> Result<(), HostError>;

    /// Every language mapping of the bundles active in `project`, ordered by bundle id.
    fn language_servers(&self, project: &Path) -> Result<Vec<LanguageMapping>, HostError>;

    /// Every language server and language mapping as seen from `target` (a project, or the
    /// user realm for what is enabled user-wide): each installed bundle's servers with their
    /// languages and whether the bundle is active there, and per language its active
    /// providers, the winner (the one active plugin, else the built-in mapping), conflicts and
    /// the built-in mapping. Starts nothing.
    fn language_listing(&self, target: &Target) -> Result<LanguageListing, HostError>;

    /// What `language` resolves to in `project`: the one active plugin mapping it, else the
    /// built-in mapping. Two or more active providers fail with `language_conflict`; none and no
    /// built-in fails with `unsupported`.
    fn resolve_language_server(
        &self,
        project: &Path,
        language: &str,
    ) -> Result<Resolved, HostError>;

    /// Starts the server `language` resolves to in `project`, in the project root. A plugin's
    /// server is stopped, awaited, whenever its bundle unloads in the realm it lives in.
    fn start_language_server(
        &self,
        project: &Path,
        language: &str,
    ) -> impl Future<Output = Result<LanguageServer, HostError>> + Send;
}

impl LanguageServers for PluginHost {
    fn register_builtin_language_server(
        &self,
        language: &str,
        program: impl Into<PathBuf>,
        args: Vec<String>,
    ) -> Result<(), HostError> {
        lock(&self.seam().state::<Builtins>()?.servers).insert(
            fold(language),
            BuiltinLanguageServer {
                language: language.to_owned(),
                program: program.into(),
                args,
            },
        );
        Ok(())
    }

    fn language_servers(&self, project: &Path) -> Result<Vec<LanguageMapping>, HostError> {
        let project = Project::normalize(project)?;
        let mut mappings = Vec::new();
        let scope = Scope::Project(project.key().to_owned());
        for bundle in active_bundles(self, &project) {
            let withheld = self.seam().withheld(&bundle, &scope);
            for server in &bundle.manifest().codetwo.language_servers {
                if withheld.contains(&format!("language-server:{}", server.id)) {
                    continue;
                }
                for language in &server.languages {
                    mappings.push(LanguageMapping {
                        language: language.clone(),
                        bundle: bundle.record().id.clone(),
                        server: server.id.clone(),
                        command: server.command.clone(),
                    });
                }
            }
        }
        Ok(mappings)
    }

    fn language_listing(&self, target: &Target) -> Result<LanguageListing, HostError> {
        let (scope, realm) = if let Target::Project(path) = target {
            let project = Project::normalize(path)?;
            let key = project.key().to_owned();
            (Scope::Project(key.clone()), key)
        } else {
            (Scope::User, "global".to_owned())
        };
        let active: Vec<String> = active_in(self, &scope)
            .iter()
            .map(|bundle| bundle.record().id.clone())
            .collect();
        let mut servers = Vec::new();
        let mut languages: BTreeMap<String, LanguageRow> = BTreeMap::new();
        for bundle in &self.seam().installed() {
            let id = &bundle.record().id;
            let bundle_active = active.contains(id);
            let withheld = self.seam().withheld(bundle, &scope);
            for server in &bundle.manifest().codetwo.language_servers {
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
        let builtins: Vec<BuiltinLanguageServer> = lock(&self.seam().state::<Builtins>()?.servers)
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

    fn resolve_language_server(
        &self,
        project: &Path,
        language: &str,
    ) -> Result<Resolved, HostError> {
        let project = Project::normalize(project)?;
        resolve_in(self, &project, language).map(Choice::into_resolved)
    }

    async fn start_language_server(
        &self,
        project: &Path,
        language: &str,
    ) -> Result<LanguageServer, HostError> {
        let project = Project::normalize(project)?;
        // Held until the server is attached to its owner scope, so no policy change can slip
        // between the decision and the attachment.
        let _changes = self.seam().hold_changes().await;
        let choice = resolve_in(self, &project, language)?;
        let kernel = self.kernel();
        let (spec, owner, lease, origin) = match choice {
            Choice::Plugin {
                provider: Provider { bundle, server },
                program,
            } => {
                let id = bundle.record().id.clone();
                self.seam().verify_content(&bundle)?;
                let realm = if bundle.project_capable() {
                    // The project realm needs its desired state before it can be built.
                    self.seam()
                        .realm(&Target::Project(project.path().to_owned()))?
                } else {
                    Realm::Global
                };
                // Builds a project realm on first use and keeps it from being reclaimed while
                // the server lives; a no-op for the global realm.
                let lease = kernel.lease(&realm).await?;
                let name = bundle.module_name();
                let Some(scope) = kernel.module_scope(&realm, name) else {
                    return Err(HostError::new(
                        ErrorKind::ActivationFailed,
                        format!(
                            "{id} is enabled and trusted but not active here (pending or failed), so its language server cannot start"
                        ),
                    )
                    .advise(Advice::ListStates));
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
        server::launch(self, spec, owner, lease, origin, language).await
    }
}

/// The bundles trusted and enabled in `project` that declare language servers.
fn active_bundles(host: &PluginHost, project: &Project) -> Vec<Arc<InstalledBundle>> {
    active_in(host, &Scope::Project(project.key().to_owned()))
}

/// The bundles trusted and enabled in `scope` that declare language servers.
fn active_in(host: &PluginHost, scope: &Scope) -> Vec<Arc<InstalledBundle>> {
    let bundles: Vec<Arc<InstalledBundle>> = host
        .seam()
        .installed()
        .into_iter()
        .filter(|bundle| !bundle.manifest().codetwo.language_servers.is_empty())
        .collect();
    host.seam()
        .desired_bundles(bundles, |_| scope.clone(), |desired| desired.is_runnable())
}

fn resolve_in(host: &PluginHost, project: &Project, language: &str) -> Result<Choice, HostError> {
    let wanted = fold(language);
    let mut providers: Vec<Provider> = Vec::new();
    let scope = Scope::Project(project.key().to_owned());
    for bundle in active_bundles(host, project) {
        let withheld = host.seam().withheld(&bundle, &scope);
        for server in &bundle.manifest().codetwo.language_servers {
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
            .map(|p| format!("{} (server `{}`)", p.bundle.record().id, p.server.id))
            .collect();
        return Err(HostError::new(
            ErrorKind::LanguageConflict,
            format!(
                "{} active plugins provide the language `{language}` in {}: {}; it stays unavailable until policy removes the conflict",
                providers.len(),
                project.key(),
                names.join(", ")
            ),
        )
        .advise(Advice::DisableAllButOne));
    }
    let Some(provider) = providers.pop() else {
        let builtin = lock(&host.seam().state::<Builtins>()?.servers)
            .get(&wanted)
            .cloned();
        return builtin
            .map(Choice::BuiltIn)
            .ok_or_else(|| unsupported(host, project, language, &wanted));
    };
    let program = c2_supervisor::resolve_command(
        provider.bundle.dir(),
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
        HostError::new(
            ErrorKind::ActivationFailed,
            format!(
                "{}: the language server `{}` for `{language}` cannot start: {problem}",
                provider.bundle.record().id,
                provider.server.id
            ),
        )
    })?;
    Ok(Choice::Plugin { provider, program })
}

/// No provider: say which installed bundles would provide it if they were active.
fn unsupported(host: &PluginHost, project: &Project, language: &str, wanted: &str) -> HostError {
    let inactive: Vec<String> = host
        .seam()
        .installed()
        .into_iter()
        .filter(|bundle| {
            bundle
                .manifest()
                .codetwo
                .language_servers
                .iter()
                .any(|s| s.languages.iter().any(|l| fold(l) == wanted))
        })
        .map(|bundle| bundle.record().id.clone())
        .collect();
    if inactive.is_empty() {
        HostError::new(
            ErrorKind::Unsupported,
            format!(
                "no active plugin and no built-in mapping provides the language `{language}` in {}: install a plugin that declares it in `languageServers`",
                project.key()
            ),
        )
    } else {
        HostError::new(
            ErrorKind::Unsupported,
            format!(
                "no active plugin provides the language `{language}` in {}; {} declare it but are not trusted and enabled there",
                project.key(),
                inactive.join(", ")
            ),
        )
        .advise(Advice::ReviewTrustAndEnable)
    }
}
