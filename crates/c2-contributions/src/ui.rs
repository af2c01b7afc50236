//! UI descriptors and the dynamic `host.actions` slot.
//!
//! Activation verifies, in order: the bundle is installed, trusted and enabled in the selected
//! realm; the descriptor belongs to it; its command is declared by the same bundle and is
//! registered in that realm by this same runtime. Only then is the command invoked with
//! `{context, input}`, where `context` is built by the host: a caller cannot forge it. The
//! frontend may supply only what it owns ([`UiContext`]: its session's `cwd`, checked to lie
//! inside the project of a project activation, and `sessionId`).
//! `host.actions` documents returned by `render` are checked against the standard's bounds
//! before a frontend sees them, and `invoke` replays the cached item input. The cache is kept
//! per caller-supplied session key ([`Ui::invoke_ui_keyed`]), so two frontends that
//! render one slot each invoke their own items; [`Ui::invoke_ui`] uses
//! [`DEFAULT_UI_SESSION`].

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use c2_kernel::Realm;
use c2_manifest::{HostAction, UiSlot, validate_host_actions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use c2_host::seam::{Registry, realm_scope, realm_text};
use c2_host::{ErrorKind, HostError, PluginHost, Target, UiOperation};
use c2_lock::lock;

/// The session key of [`Ui::invoke_ui`]: every caller that does not say otherwise
/// shares one `host.actions` render per descriptor and realm.
pub const DEFAULT_UI_SESSION: &str = "";

/// Registers UI descriptors with a host that is opening: the object that owns their state.
pub(crate) fn install(registry: &mut Registry<'_>) {
    registry.own(std::sync::Arc::new(UiState::default()));
    registry.command(
        "plugins.invoke_ui",
        "Activate a bundle's UI descriptor",
        |host, value| Box::pin(async move { invoke_ui_json(&host, value).await }),
    );
}

/// `plugins.invoke_ui` with JSON arguments.
async fn invoke_ui_json(host: &PluginHost, args: Value) -> Result<Value, c2_kernel::Error> {
    let request: UiRequest = serde_json::from_value(args).map_err(|error| {
        c2_kernel::Error::typed(HostError::new(
            ErrorKind::InvalidArgs,
            format!("plugins.invoke_ui: {error}"),
        ))
    })?;
    host.invoke_ui(&request)
        .await
        .map_err(c2_kernel::Error::typed)
}

/// The UI contribution's state.
#[derive(Debug, Default)]
struct UiState {
    /// The last validated `host.actions` render per (session key, bundle, descriptor, realm),
    /// bounded by `HostOptions::max_host_actions_renders`.
    renders: std::sync::Mutex<RenderCache>,
}

/// The validated `host.actions` renders, by session key and then (bundle, descriptor, realm),
/// each stamped with when it was rendered so the oldest goes first past the bound.
#[derive(Debug, Default)]
struct RenderCache {
    next_stamp: u64,
    entries: BTreeMap<(String, String), (u64, Vec<HostAction>)>,
}

impl RenderCache {
    fn get(&self, session: &str, key: &str) -> Option<&Vec<HostAction>> {
        self.entries
            .get(&(session.to_owned(), key.to_owned()))
            .map(|(_, actions)| actions)
    }

    fn insert(&mut self, session: &str, key: String, actions: Vec<HostAction>, bound: usize) {
        self.next_stamp += 1;
        self.entries
            .insert((session.to_owned(), key), (self.next_stamp, actions));
        while self.entries.len() > bound.max(1) {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (stamp, _))| *stamp)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(oldest) => self.entries.remove(&oldest),
                None => break,
            };
        }
    }

    fn forget(&mut self, prefix: &str) -> usize {
        let before = self.entries.len();
        self.entries
            .retain(|(session, _), _| !session.starts_with(prefix));
        before - self.entries.len()
    }
}

/// A UI activation request from a frontend.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiRequest {
    /// The installed bundle id.
    pub id: String,
    /// The descriptor's bundle-local id.
    pub ui: String,
    /// The project realm; the user realm when absent.
    #[serde(default)]
    pub project: Option<PathBuf>,
    /// The frontend's session, passed through in `context.sessionId`.
    #[serde(default)]
    pub session_id: Option<String>,
    /// `host.actions` only: [`UiOperation::Render`] (the default) or [`UiOperation::Invoke`].
    #[serde(default)]
    pub operation: Option<UiOperation>,
    /// `host.actions` invoke: the rendered action to activate.
    #[serde(default)]
    pub action_id: Option<String>,
    /// The part of the activation context the frontend owns (its session's `cwd`, its
    /// `sessionId`). The host builds the rest (`projectPath`, `operation`, `actionId`) and
    /// checks what is given here; other fields are accepted and ignored.
    #[serde(default)]
    pub context: Option<UiContext>,
}

/// What a frontend may supply of a UI activation's `context`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiContext {
    /// The session's working directory: absolute, and inside the project for a project
    /// realm. Absent: the project directory, or [`c2_host::HostOptions::working_dir`] in the
    /// user realm.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The frontend's session; [`UiRequest::session_id`] wins when both are given.
    #[serde(default)]
    pub session_id: Option<String>,
}

impl UiContext {
    /// Sets [`UiContext::cwd`].
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets [`UiContext::session_id`].
    #[must_use]
    pub fn with_session_id(mut self, session: impl Into<String>) -> Self {
        self.session_id = Some(session.into());
        self
    }
}

/// One descriptor in the catalog view, for a frontend to render.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiEntry {
    /// The installed bundle id.
    pub bundle: String,
    /// The descriptor's bundle-local id.
    pub id: String,
    /// The slot.
    pub slot: UiSlot,
    /// The label.
    pub label: String,
    /// The description.
    pub description: Option<String>,
    /// The command it invokes.
    pub command: String,
    /// Sort key within the slot (0 when absent).
    pub order: i32,
}

/// UI descriptors and `host.actions`: what a frontend shows in its slots and how it activates
/// them. Implemented for [`PluginHost`].
pub trait Ui {
    /// The descriptors of every trusted, enabled bundle in a realm, grouped by slot and ordered
    /// by `order` (then bundle and id).
    fn ui_catalog(&self, target: &Target) -> Result<BTreeMap<UiSlot, Vec<UiEntry>>, HostError>;

    /// Renders a `host.actions` descriptor ([`UiOperation::Render`], whatever
    /// `request.operation` says) and returns its validated actions, cached under `session`
    /// for a later [`UiOperation::Invoke`] like [`Ui::invoke_ui_keyed`]. A descriptor
    /// of another slot is refused `invalid_args` before anything runs.
    ///
    /// # Cancel safety
    ///
    /// As [`PluginHost::invoke`]: dropping the future stops the plugin's process.
    fn render_host_actions(
        &self,
        request: &UiRequest,
        session: &str,
    ) -> impl Future<Output = Result<Vec<HostAction>, HostError>> + Send;

    /// Activates a UI descriptor after every ownership check; see the module docs. A
    /// `host.actions` render is cached under [`DEFAULT_UI_SESSION`].
    ///
    /// # Cancel safety
    ///
    /// As [`PluginHost::invoke`]: dropping the future stops the plugin's process.
    fn invoke_ui(
        &self,
        request: &UiRequest,
    ) -> impl Future<Output = Result<Value, HostError>> + Send;

    /// Forgets the `host.actions` renders of every session key that starts with `prefix`
    /// (a frontend that closed); returns how many were dropped.
    fn forget_ui_sessions(&self, prefix: &str) -> usize;

    /// [`Ui::invoke_ui`] with the `host.actions` render cache keyed additionally by
    /// `session`: an `invoke` replays only an item a render under the same key produced, so
    /// frontends (or connections, or sessions) that render one slot do not overwrite each
    /// other. The key is the caller's; it never reaches the plugin (`context.sessionId` is the
    /// request's `sessionId`, or else its `context.sessionId`).
    ///
    /// # Cancel safety
    ///
    /// As [`PluginHost::invoke`]: dropping the future stops the plugin's process.
    fn invoke_ui_keyed(
        &self,
        request: &UiRequest,
        session: &str,
    ) -> impl Future<Output = Result<Value, HostError>> + Send;
}

impl Ui for PluginHost {
    fn ui_catalog(&self, target: &Target) -> Result<BTreeMap<UiSlot, Vec<UiEntry>>, HostError> {
        let realm = self.seam().realm(target)?;
        let active: HashSet<String> = self
            .kernel()
            .commands(&realm)
            .into_iter()
            .map(|c| format!("{}\u{0}{}", c.owner, c.name))
            .collect();
        let mut slots: BTreeMap<UiSlot, Vec<UiEntry>> = BTreeMap::new();
        let scope = realm_scope(&realm);
        for bundle in self.seam().installed() {
            let bundle = &bundle;
            let withheld = self.seam().withheld(bundle, &scope);
            for ui in &bundle.manifest().codetwo.ui {
                if !active.contains(&format!("{}\u{0}{}", bundle.module_name(), ui.command))
                    || withheld.contains(&format!("ui-action:{}", ui.id))
                {
                    continue;
                }
                slots.entry(ui.slot).or_default().push(UiEntry {
                    bundle: bundle.record().id.clone(),
                    id: ui.id.clone(),
                    slot: ui.slot,
                    label: ui.label.clone(),
                    description: ui.description.clone(),
                    command: ui.command.clone(),
                    order: ui.order.unwrap_or(0),
                });
            }
        }
        for entries in slots.values_mut() {
            entries.sort_by(|a, b| (a.order, &a.bundle, &a.id).cmp(&(b.order, &b.bundle, &b.id)));
        }
        Ok(slots)
    }

    async fn render_host_actions(
        &self,
        request: &UiRequest,
        session: &str,
    ) -> Result<Vec<HostAction>, HostError> {
        let bundle = self.seam().bundle(&request.id)?;
        if let Some(ui) = bundle
            .manifest()
            .codetwo
            .ui
            .iter()
            .find(|u| u.id == request.ui)
            && ui.slot != UiSlot::HostActions
        {
            return Err(HostError::new(
                ErrorKind::InvalidArgs,
                format!(
                    "`{}` of {} is a {} descriptor, not host.actions: activate it with invoke_ui",
                    ui.id,
                    bundle.record().id,
                    ui.slot.as_str()
                ),
            ));
        }
        let render = UiRequest {
            operation: Some(UiOperation::Render),
            action_id: None,
            ..request.clone()
        };
        let mut rendered = self.invoke_ui_keyed(&render, session).await?;
        serde_json::from_value(rendered["actions"].take()).map_err(|error| {
            HostError::new(
                ErrorKind::CommandFailed,
                format!("a validated host.actions render did not read back: {error}"),
            )
        })
    }

    async fn invoke_ui(&self, request: &UiRequest) -> Result<Value, HostError> {
        self.invoke_ui_keyed(request, DEFAULT_UI_SESSION).await
    }

    fn forget_ui_sessions(&self, prefix: &str) -> usize {
        // A host opened without the UI contribution has no renders to forget.
        self.seam()
            .state::<UiState>()
            .map_or(0, |ui| lock(&ui.renders).forget(prefix))
    }

    async fn invoke_ui_keyed(
        &self,
        request: &UiRequest,
        session: &str,
    ) -> Result<Value, HostError> {
        let (target, realm, bundle) = self
            .seam()
            .contribution(&request.id, request.project.as_ref())?;
        let supplied = request.context.clone().unwrap_or_default();
        let Some(ui) = bundle
            .manifest()
            .codetwo
            .ui
            .iter()
            .find(|u| u.id == request.ui)
        else {
            return Err(HostError::new(
                ErrorKind::UnknownUi,
                format!(
                    "{} declares no UI descriptor `{}`",
                    bundle.record().id,
                    request.ui
                ),
            ));
        };
        self.seam().refuse_withheld(
            &bundle,
            &realm,
            c2_bundle_collector::ContributionKind::UiAction,
            &ui.id,
        )?;
        self.seam()
            .verify_owned_command(&bundle, &ui.command, &realm)?;
        let project_path = match &realm {
            Realm::Global => Value::Null,
            Realm::Project(key) => Value::String(key.as_str().to_owned()),
        };
        let cwd = match (&realm, &supplied.cwd) {
            (_, Some(cwd)) if !cwd.is_absolute() => {
                return Err(HostError::new(
                    ErrorKind::InvalidArgs,
                    format!(
                        "context.cwd `{}` is relative: give the session's absolute directory",
                        cwd.display()
                    ),
                ));
            }
            (Realm::Project(key), Some(cwd)) if !cwd.starts_with(key.as_str()) => {
                return Err(HostError::new(
                    ErrorKind::InvalidArgs,
                    format!(
                        "context.cwd `{}` is outside the project {}: a project activation runs in its project",
                        cwd.display(),
                        key.as_str()
                    ),
                ));
            }
            (_, Some(cwd)) => cwd.to_string_lossy().into_owned(),
            (Realm::Global, None) => self
                .options()
                .resolved_working_dir()
                .to_string_lossy()
                .into_owned(),
            (Realm::Project(key), None) => key.as_str().to_owned(),
        };
        let mut context = Map::new();
        context.insert("cwd".to_owned(), Value::String(cwd));
        context.insert("projectPath".to_owned(), project_path);
        context.insert(
            "sessionId".to_owned(),
            request
                .session_id
                .clone()
                .or(supplied.session_id)
                .map_or(Value::Null, Value::String),
        );
        let mut input = ui.input.clone().unwrap_or_else(|| json!({}));
        let host_actions = ui.slot == UiSlot::HostActions;
        let cache_key = format!(
            "{}\u{0}{}\u{0}{}",
            bundle.record().id,
            ui.id,
            realm_text(&realm)
        );
        if host_actions {
            let operation = request.operation.unwrap_or_default();
            if operation == UiOperation::Invoke {
                let Some(action_id) = &request.action_id else {
                    return Err(HostError::new(
                        ErrorKind::InvalidArgs,
                        "invoke needs `actionId`",
                    ));
                };
                let cached = lock(&self.seam().state::<UiState>()?.renders)
                    .get(session, &cache_key)
                    .and_then(|items| items.iter().find(|a| &a.id == action_id).cloned());
                let Some(action) = cached else {
                    return Err(HostError::new(
                        ErrorKind::UnknownAction,
                        format!("no rendered action `{action_id}`: render the slot again"),
                    ));
                };
                context.insert("actionId".to_owned(), Value::String(action.id));
                input = action.input;
            }
            context.insert(
                "operation".to_owned(),
                Value::String(operation.as_str().to_owned()),
            );
        } else if request.operation.is_some() || request.action_id.is_some() {
            return Err(HostError::new(
                ErrorKind::InvalidArgs,
                "`operation` and `actionId` apply only to host.actions descriptors",
            ));
        }
        let args = json!({ "context": Value::Object(context), "input": input });
        let result = self.invoke(&target, &ui.command, args).await?;
        if host_actions && request.operation.unwrap_or_default() == UiOperation::Render {
            let actions = validate_host_actions(&result, &self.options().host_actions).map_err(
                |problem| {
                    HostError::new(
                        ErrorKind::InvalidHostActions,
                        format!(
                            "{} rendered an invalid host.actions document: {problem}",
                            bundle.record().id
                        ),
                    )
                },
            )?;
            lock(&self.seam().state::<UiState>()?.renders).insert(
                session,
                cache_key,
                actions.clone(),
                self.options().max_host_actions_renders,
            );
            return serde_json::to_value(json!({ "actions": actions }))
                .map_err(|error| HostError::new(ErrorKind::CommandFailed, error.to_string()));
        }
        Ok(result)
    }
}
