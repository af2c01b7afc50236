//! The method table: every request method the relay answers, parsed once from its name into
//! [`Method`], and each method's params as a typed struct read straight from the request's raw
//! text (unknown fields refused).

use std::path::PathBuf;

use c2_contributions::{ConnectorRequest, UiRequest};
use c2_host::PlanAction;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

macro_rules! methods {
    ($($(#[doc = $doc:literal])+ $variant:ident = $name:literal,)+) => {
        /// A relay request method.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Method {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl Method {
            /// Every method, in the order `relay/initialize` lists them.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)+];

            /// The method's name on the wire.
            pub fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)+
                }
            }

            /// The method named `name`, or `None` for a name the relay does not answer.
            pub fn parse(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(Method::$variant),)+
                    _ => None,
                }
            }
        }

        /// Every request method this relay answers: the capability list `relay/initialize`
        /// returns.
        pub const METHODS: &[&str] = &[$($name,)+];
    };
}

methods! {
    /// The first request: version and capabilities.
    Initialize = "relay/initialize",
    /// The relay's description document.
    Describe = "relay/describe",
    /// Installed bundles.
    PluginsList = "plugins/list",
    /// Validate and store a bundle.
    PluginsInstall = "plugins/install",
    /// Stop and remove a bundle.
    PluginsUninstall = "plugins/uninstall",
    /// Trust the installed content.
    PluginsTrust = "plugins/trust",
    /// Withdraw trust.
    PluginsUntrust = "plugins/untrust",
    /// Enable a bundle or a component.
    PluginsEnable = "plugins/enable",
    /// Disable a bundle or a component.
    PluginsDisable = "plugins/disable",
    /// Follow the user's choice again.
    PluginsInherit = "plugins/inherit",
    /// Clear policy.
    PluginsReset = "plugins/reset",
    /// Plan a policy change.
    PluginsPlan = "plugins/plan",
    /// Apply a plan.
    PluginsApply = "plugins/apply",
    /// A live runtime's pid.
    PluginsRuntimePid = "plugins/runtimePid",
    /// Look at the store and policy again.
    PluginsRefresh = "plugins/refresh",
    /// Every plugin runtime's health.
    HealthStatus = "health/status",
    /// The store's development bundles and their last reload.
    PluginsDeveloperStatus = "plugins/developerStatus",
    /// Develop a working directory, or end developer mode.
    PluginsSetDeveloperMode = "plugins/setDeveloperMode",
    /// Reload development bundles from their directories.
    PluginsReloadDevelopment = "plugins/reloadDevelopment",
    /// A realm's catalog.
    RealmCatalog = "realm/catalog",
    /// A realm's commands.
    RealmCommands = "realm/commands",
    /// Invoke a command.
    CommandInvoke = "command/invoke",
    /// A realm's UI descriptors.
    UiCatalog = "ui/catalog",
    /// Activate a UI descriptor.
    UiInvoke = "ui/invoke",
    /// A realm's language mappings.
    LspList = "lsp/list",
    /// What a language resolves to.
    LspResolve = "lsp/resolve",
    /// A realm's MCP servers.
    McpList = "mcp/list",
    /// A realm's skills, prompt commands and subagents.
    SkillsList = "skills/list",
    /// A realm's scenes and pipelines.
    ScenesList = "scenes/list",
    /// Declared connectors.
    ConnectorsList = "connectors/list",
    /// Register a connector provider.
    ConnectorsRegisterProvider = "connectors/registerProvider",
    /// Invoke a connector operation.
    ConnectorsInvoke = "connectors/invoke",
    /// Subscribe to an event.
    EventsSubscribe = "events/subscribe",
    /// End a subscription.
    EventsUnsubscribe = "events/unsubscribe",
    /// Publish a frontend-owned host event.
    EventsPublish = "events/publish",
    /// The configured catalogs.
    HubMarketplaces = "hub/marketplaces",
    /// Add a catalog.
    HubAddMarketplace = "hub/addMarketplace",
    /// Remove a catalog.
    HubRemoveMarketplace = "hub/removeMarketplace",
    /// Search the catalogs.
    HubSearch = "hub/search",
    /// Catalog-installed bundles against their entries.
    HubOutdated = "hub/outdated",
    /// Update catalog-installed bundles.
    HubUpdate = "hub/update",
}

impl Method {
    /// Whether `$/cancelRequest` may abandon it: only calls into plugins; a policy or store
    /// change always runs to its end, so it is never left half applied.
    pub fn cancellable(self) -> bool {
        matches!(
            self,
            Method::CommandInvoke | Method::UiInvoke | Method::ConnectorsInvoke
        )
    }
}

/// Reads a method's typed params from the request's raw text in one pass; absent params read
/// as `{}`.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(
    params: Option<&RawValue>,
) -> Result<T, serde_json::Error> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
}

/// One request's method with its typed params.
#[derive(Debug)]
pub(crate) enum Call {
    Initialize(InitializeParams),
    Describe,
    PluginsList,
    PluginsInstall(InstallParams),
    PluginsUninstall(UninstallParams),
    PluginsTrust(IdParams),
    PluginsUntrust(IdParams),
    PluginsSwitch(Method, SwitchParams),
    PluginsReset(ResetParams),
    PluginsPlan(PlanParams),
    PluginsApply(Box<ApplyParams>),
    PluginsRuntimePid(StateParams),
    PluginsRefresh,
    HealthStatus,
    PluginsDeveloperStatus,
    PluginsSetDeveloperMode(DeveloperModeParams),
    PluginsReloadDevelopment(ResetParams),
    RealmCatalog(RealmParams),
    RealmCommands(RealmParams),
    CommandInvoke(InvokeParams),
    UiCatalog(RealmParams),
    UiInvoke(Box<UiRequest>),
    LspList(RealmParams),
    LspResolve(ResolveParams),
    McpList(McpParams),
    SkillsList(RealmParams),
    ScenesList(RealmParams),
    ConnectorsList,
    ConnectorsRegisterProvider(ProviderParams),
    ConnectorsInvoke(Box<ConnectorRequest>),
    EventsSubscribe(SubscribeParams),
    EventsUnsubscribe(UnsubscribeParams),
    EventsPublish(PublishParams),
    HubMarketplaces,
    HubAddMarketplace(AddMarketplaceParams),
    HubRemoveMarketplace(NameParams),
    HubSearch(SearchParams),
    HubOutdated,
    HubUpdate(UpdateParams),
}

impl Call {
    /// The typed call of `method`.
    pub(crate) fn parse(
        method: Method,
        params: Option<&RawValue>,
    ) -> Result<Self, serde_json::Error> {
        Ok(match method {
            Method::Initialize => Call::Initialize(parse(params)?),
            Method::Describe => {
                let NoParams {} = parse(params)?;
                Call::Describe
            }
            Method::PluginsList => {
                let NoParams {} = parse(params)?;
                Call::PluginsList
            }
            Method::PluginsInstall => Call::PluginsInstall(parse(params)?),
            Method::PluginsUninstall => Call::PluginsUninstall(parse(params)?),
            Method::PluginsTrust => Call::PluginsTrust(parse(params)?),
            Method::PluginsUntrust => Call::PluginsUntrust(parse(params)?),
            Method::PluginsEnable | Method::PluginsDisable | Method::PluginsInherit => {
                Call::PluginsSwitch(method, parse(params)?)
            }
            Method::PluginsReset => Call::PluginsReset(parse(params)?),
            Method::PluginsPlan => Call::PluginsPlan(parse(params)?),
            Method::PluginsApply => Call::PluginsApply(Box::new(parse(params)?)),
            Method::PluginsRuntimePid => Call::PluginsRuntimePid(parse(params)?),
            Method::PluginsRefresh => {
                let NoParams {} = parse(params)?;
                Call::PluginsRefresh
            }
            Method::HealthStatus => {
                let NoParams {} = parse(params)?;
                Call::HealthStatus
            }
            Method::PluginsDeveloperStatus => {
                let NoParams {} = parse(params)?;
                Call::PluginsDeveloperStatus
            }
            Method::PluginsSetDeveloperMode => Call::PluginsSetDeveloperMode(parse(params)?),
            Method::PluginsReloadDevelopment => Call::PluginsReloadDevelopment(parse(params)?),
            Method::RealmCatalog => Call::RealmCatalog(parse(params)?),
            Method::RealmCommands => Call::RealmCommands(parse(params)?),
            Method::CommandInvoke => Call::CommandInvoke(parse(params)?),
            Method::UiCatalog => Call::UiCatalog(parse(params)?),
            Method::UiInvoke => Call::UiInvoke(Box::new(parse(params)?)),
            Method::LspList => Call::LspList(parse(params)?),
            Method::LspResolve => Call::LspResolve(parse(params)?),
            Method::McpList => Call::McpList(parse(params)?),
            Method::SkillsList => Call::SkillsList(parse(params)?),
            Method::ScenesList => Call::ScenesList(parse(params)?),
            Method::ConnectorsList => {
                let NoParams {} = parse(params)?;
                Call::ConnectorsList
            }
            Method::ConnectorsRegisterProvider => Call::ConnectorsRegisterProvider(parse(params)?),
            Method::ConnectorsInvoke => Call::ConnectorsInvoke(Box::new(parse(params)?)),
            Method::EventsSubscribe => Call::EventsSubscribe(parse(params)?),
            Method::EventsUnsubscribe => Call::EventsUnsubscribe(parse(params)?),
            Method::EventsPublish => Call::EventsPublish(parse(params)?),
            Method::HubMarketplaces => {
                let NoParams {} = parse(params)?;
                Call::HubMarketplaces
            }
            Method::HubAddMarketplace => Call::HubAddMarketplace(parse(params)?),
            Method::HubRemoveMarketplace => Call::HubRemoveMarketplace(parse(params)?),
            Method::HubSearch => Call::HubSearch(parse(params)?),
            Method::HubOutdated => {
                let NoParams {} = parse(params)?;
                Call::HubOutdated
            }
            Method::HubUpdate => Call::HubUpdate(parse(params)?),
        })
    }
}

/// `plugins/setDeveloperMode`: `enabled` with the working directory `path` develops it;
/// `enabled: false` ends developer mode for every development bundle of the store.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct DeveloperModeParams {
    pub(crate) enabled: bool,
    #[serde(default)]
    pub(crate) path: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct InitializeParams {
    pub(crate) protocol_version: String,
    #[serde(default)]
    #[expect(dead_code, reason = "accepted for the client's own logs; not used yet")]
    pub(crate) client: Option<Value>,
    #[serde(default)]
    pub(crate) ui_cache_key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct InstallParams {
    pub(crate) source: String,
    #[serde(default)]
    pub(crate) trust: bool,
    #[serde(default)]
    pub(crate) enable: bool,
    /// A catalog (path, URL or configured name): `source` is then NAME[@VERSION].
    pub(crate) marketplace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddMarketplaceParams {
    pub(crate) location: String,
    pub(crate) name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NameParams {
    pub(crate) name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchParams {
    pub(crate) text: String,
    pub(crate) marketplace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateParams {
    pub(crate) id: Option<String>,
    #[serde(default, rename = "dryRun")]
    pub(crate) dry_run: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct UninstallParams {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) keep_data: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdParams {
    pub(crate) id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResetParams {
    #[serde(default)]
    pub(crate) id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateParams {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) project: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SwitchParams {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) project: Option<PathBuf>,
    /// `<kind>:<local-id>`: switch one component instead of the bundle.
    #[serde(default)]
    pub(crate) component: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RealmParams {
    #[serde(default)]
    pub(crate) project: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct McpParams {
    #[serde(default)]
    pub(crate) project: Option<PathBuf>,
    #[serde(default)]
    pub(crate) env_values: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InvokeParams {
    pub(crate) command: String,
    #[serde(default)]
    pub(crate) args: Option<Value>,
    #[serde(default)]
    pub(crate) project: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanParams {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) project: Option<PathBuf>,
    pub(crate) change: PlanAction,
    /// `<kind>:<local-id>`: plan one component's choice.
    #[serde(default)]
    pub(crate) component: Option<String>,
}

/// `plugins/apply`: the plan as `plugins/plan` answered it (revisions as decimal strings; JSON
/// numbers are accepted too).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyParams {
    pub(crate) plan: crate::json::PlanIn,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SubscribeParams {
    pub(crate) event: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UnsubscribeParams {
    pub(crate) subscription: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishParams {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) payload: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoParams {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveParams {
    pub(crate) language: String,
    pub(crate) project: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderParams {
    pub(crate) provider: String,
}
