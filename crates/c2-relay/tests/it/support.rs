//! A temporary store with a host on it, bundle installation and process checks.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use c2_host::{HostOptions, InstallOptions, PluginHost};
use tempfile::TempDir;

/// A temporary plugins directory, a place for bundles and projects, and a host on them.
pub(crate) struct Env {
    pub(crate) root: TempDir,
    pub(crate) host: PluginHost,
}

impl Env {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub(crate) async fn with(tweak: impl FnOnce(&mut HostOptions)) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut options = HostOptions::new(root.path().join("plugins"));
        options.working_dir = Some(root.path().to_path_buf());
        tweak(&mut options);
        let host = c2_contributions::open(options).await.unwrap();
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

    /// Installs a bundle directory, enabled for the user and trusted when `trust`; returns its
    /// id.
    pub(crate) async fn install(&self, dir: &Path, trust: bool) -> String {
        self.host
            .install(
                dir.to_str().unwrap(),
                InstallOptions::default()
                    .with_trust(trust)
                    .with_enable(true),
            )
            .await
            .unwrap()
            .record
            .id
    }
}

/// Writes an executable file.
pub(crate) fn write_executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether a process with this pid exists (and is not a zombie).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until `pid` is gone; false if it is still alive after `limit`.
pub(crate) async fn gone(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}
