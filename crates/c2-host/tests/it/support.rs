//! A temporary store, fixture bundles and process checks shared by the tests.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use c2_host::{HostOptions, InstallOptions, PluginHost, Target};
use serde_json::{Value, json};
use tempfile::TempDir;

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

/// A fixture bundle: `commands` are declared in the manifest and confirmed by the fixture
/// unless a mode says otherwise.
pub(crate) struct FixtureBundle {
    pub(crate) name: String,
    pub(crate) commands: Vec<&'static str>,
    pub(crate) modes: String,
    pub(crate) events: Vec<&'static str>,
    pub(crate) project: bool,
    /// `extensions.dev.codetwo.ui`, when set.
    pub(crate) ui: Option<Value>,
}

impl FixtureBundle {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            commands: vec![
                "fixture.echo",
                "fixture.info",
                "fixture.call",
                "fixture.emit",
                "fixture.sleep",
                "fixture.fail",
                "fixture.events",
                "fixture.crash",
                "fixture.log",
            ],
            modes: String::new(),
            events: Vec::new(),
            project: false,
            ui: None,
        }
    }

    pub(crate) fn modes(mut self, modes: &str) -> Self {
        self.modes = modes.to_owned();
        self
    }

    pub(crate) fn events(mut self, events: &[&'static str]) -> Self {
        self.events = events.to_vec();
        self
    }

    pub(crate) fn commands(mut self, commands: &[&'static str]) -> Self {
        self.commands = commands.to_vec();
        self
    }

    pub(crate) fn project_capable(mut self) -> Self {
        self.project = true;
        self
    }

    /// Writes the bundle under `parent/<name>` and returns its directory.
    pub(crate) fn write(&self, parent: &Path) -> PathBuf {
        let dir = parent.join(&self.name);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let fixture = c2_testkit::fixture_path().unwrap();
        let launcher = dir.join("bin/fixture");
        std::fs::write(&launcher, "#!/bin/sh\nexec \"$C2_TEST_FIXTURE\" \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        let commands: Vec<Value> = self
            .commands
            .iter()
            .map(|id| json!({"id": id, "title": format!("Fixture {id}")}))
            .collect();
        let confirmed: Vec<Value> = self.commands.iter().map(|id| json!({"name": id})).collect();
        let scopes = if self.project {
            json!(["user", "project"])
        } else {
            json!(["user"])
        };
        let manifest = json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": self.name,
            "version": "1.0.0",
            "extensions": {"dev.codetwo": {
                "standardVersion": "1.2.0",
                "commands": commands,
                "runtime": {
                    "command": "bin/fixture",
                    "env": {
                        "C2_TEST_FIXTURE": fixture.to_str().unwrap(),
                        "C2_FIXTURE_MODE": self.modes,
                        "C2_FIXTURE_COMMANDS": Value::Array(confirmed).to_string(),
                        "C2_FIXTURE_EVENTS": json!(self.events).to_string(),
                    },
                    "scopeSupport": scopes,
                }
            }}
        });
        let mut manifest = manifest;
        if let Some(ui) = &self.ui {
            manifest["extensions"]["dev.codetwo"]["ui"] = ui.clone();
        }
        std::fs::write(
            dir.join("plugin.json"),
            serde_json::to_string_pretty(&manifest).unwrap(),
        )
        .unwrap();
        dir
    }
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

/// Every pid in /proc.
pub(crate) fn all_pids() -> Vec<u32> {
    #[expect(
        clippy::disallowed_methods,
        reason = "listing /proc to find processes is not bundle collection"
    )]
    let entries = std::fs::read_dir("/proc").unwrap();
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// Field `index` after the state in /proc/<pid>/stat: 0 is the parent, 1 the process group.
pub(crate) fn stat_field(pid: u32, index: usize) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(index + 1)?.parse().ok()
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

/// The pid reported by `fixture.info`.
pub(crate) fn pid_of(info: &Value) -> u32 {
    u32::try_from(info["pid"].as_u64().unwrap()).unwrap()
}

/// Runs `git ARGS` in `dir` with a fixed identity and no user or system configuration;
/// returns its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "the tests prepare repositories with git"
    )]
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
