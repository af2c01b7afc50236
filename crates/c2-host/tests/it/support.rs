//! A temporary store and a host on it; the fixture bundles and process checks come from
//! c2-testkit, shared with c2-contributions' tests.

use std::path::{Path, PathBuf};

use c2_host::{HostOptions, InstallOptions, PluginHost, Target};
use serde_json::Value;
use tempfile::TempDir;

pub(crate) use c2_testkit::bundles::{
    FixtureBundle, alive, all_pids, component_kit, git, git_repo, gone, pid_of, stat_field,
};

/// A temporary plugins directory, a place for bundles and projects, and a host on them.
pub(crate) struct Env {
    pub(crate) root: TempDir,
    pub(crate) host: PluginHost,
}

pub(crate) fn options(root: &Path) -> HostOptions {
    let mut options = HostOptions::new(root.join("plugins"));
    options.working_dir = Some(root.to_path_buf());
    options
}

impl Env {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub(crate) async fn with(tweak: impl FnOnce(&mut HostOptions)) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut options = options(root.path());
        tweak(&mut options);
        let host = PluginHost::open(options).await.unwrap();
        Self { root, host }
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    /// A project directory under the temp root.
    pub(crate) fn project(&self, name: &str) -> PathBuf {
        let dir = self.path(&format!("projects/{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Installs a bundle directory, trusted and enabled for the user; returns its id.
    pub(crate) async fn install_ready(&self, dir: &Path) -> String {
        let outcome = self
            .host
            .install(dir.to_str().unwrap(), InstallOptions::trusted_and_enabled())
            .await
            .unwrap();
        outcome.record.id
    }

    pub(crate) async fn invoke(
        &self,
        name: &str,
        args: Value,
    ) -> Result<Value, c2_host::HostError> {
        self.host.invoke(&Target::User, name, args).await
    }
}
