//! A temporary store and a host on it, with the checks the component suites share. One file
//! for two test binaries: c2-host's (a host with the built-ins only) and c2-contributions'
//! (every contribution wired), each of which names its wiring as `INSTALLS` in the module that
//! includes this one.

use std::path::{Path, PathBuf};

use c2_host::{
    ComponentRef, HostError, HostOptions, InstallOptions, PluginHost, StateChange, Target,
};
use serde_json::Value;
use tempfile::TempDir;

use super::INSTALLS;

/// A temporary root (plugins under `plugins/`, bundles and projects beside it) and a host
/// opened on it with the including binary's `INSTALLS`.
pub(crate) struct Env {
    pub(crate) root: TempDir,
    pub(crate) host: PluginHost,
}

/// The options of a host on the store under `root`, running in `root`.
pub(crate) fn options(root: &Path) -> HostOptions {
    let mut options = HostOptions::new(root.join("plugins"));
    options.working_dir = Some(root.to_path_buf());
    options
}

impl Env {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    /// A host whose options `tweak` adjusted first.
    pub(crate) async fn with(tweak: impl FnOnce(&mut HostOptions)) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut host_options = options(root.path());
        tweak(&mut host_options);
        let host = PluginHost::open_with(host_options, INSTALLS).await.unwrap();
        Self { root, host }
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    /// `projects/<name>` under the root, created.
    pub(crate) fn project(&self, name: &str) -> PathBuf {
        let dir = self.path(&format!("projects/{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Installs the bundle at `dir`, trusted and enabled for the user; returns its id.
    pub(crate) async fn install_ready(&self, dir: &Path) -> String {
        let source = dir.to_str().unwrap();
        let options = InstallOptions::trusted_and_enabled();
        self.host.install(source, options).await.unwrap().record.id
    }

    /// Invokes `name` in the user realm.
    pub(crate) async fn invoke(&self, name: &str, args: Value) -> Result<Value, HostError> {
        self.host.invoke(&Target::User, name, args).await
    }

    /// Switches the component `text` of bundle `id` in `target`, which must succeed.
    pub(crate) async fn set(&self, id: &str, target: &Target, text: &str, state: StateChange) {
        self.host
            .set_component(id, target, &component(text), state)
            .await
            .unwrap_or_else(|error| panic!("{text} {state:?}: {error}"));
    }

    /// The state `list` shows for the component `text` of bundle `id`.
    pub(crate) fn listed_state(&self, id: &str, text: &str) -> String {
        let status = self.host.list().into_iter().find(|s| s.id == id).unwrap();
        status
            .components
            .iter()
            .find(|c| c.component == text)
            .unwrap_or_else(|| panic!("{text} in {:?}", status.components))
            .state
            .clone()
    }

    /// The state the catalog of `target` shows for the component `text` of bundle `id`.
    pub(crate) fn catalog_state(&self, id: &str, target: &Target, text: &str) -> String {
        let module = c2_host::module_name(id);
        let row = self
            .host
            .catalog(target)
            .unwrap()
            .into_iter()
            .find(|row| row.entry.name == module)
            .unwrap();
        let components = row.components.expect("a bundle row lists its components");
        components
            .into_iter()
            .find(|c| c.component == text)
            .unwrap()
            .state
    }
}

/// The component named `text`, which must parse.
pub(crate) fn component(text: &str) -> ComponentRef {
    ComponentRef::parse(text).unwrap()
}

/// `error` refuses a disabled component, names `text` and says how to enable it.
pub(crate) fn assert_disabled(error: &HostError, text: &str) {
    assert_eq!(error.kind(), "disabled", "{error}");
    let message = error.to_string();
    assert!(message.contains(text), "{message}");
    let hint = error.hint().unwrap_or_default();
    assert!(hint.contains("--component"), "says how: {message} / {hint}");
}
