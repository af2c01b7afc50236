//! A temporary store and a host with every contribution on it; the fixture bundles and process
//! checks come from c2-testkit, shared with c2-host's tests.

use std::path::{Path, PathBuf};

use c2_host::{HostError, HostOptions, InstallOptions, PluginHost, Target};
use serde_json::Value;
use tempfile::TempDir;

pub(crate) use c2_testkit::bundles::{
    FixtureBundle, KIT_LANGUAGE, alive, component_kit, git_repo, gone, pid_of,
};

/// A temporary root (plugins under `plugins/`, bundles and projects beside it) and a host
/// opened on it with [`c2_contributions::ALL`].
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
        let host = c2_contributions::open(host_options).await.unwrap();
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
}
