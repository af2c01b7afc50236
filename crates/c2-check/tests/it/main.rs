//! `check_bundle` end to end against real runtimes: the c2-testkit fixture, the Node and Python
//! packs, and the hostile Python runtime of the c2-host tests.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod check;
mod hostile;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A fixture bundle: `commands` are declared in the manifest and confirmed by the fixture
/// unless a mode says otherwise.
pub(crate) struct FixtureBundle {
    name: String,
    commands: Vec<&'static str>,
    modes: String,
}

impl FixtureBundle {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            commands: vec!["fixture.echo", "fixture.info"],
            modes: String::new(),
        }
    }

    pub(crate) fn modes(mut self, modes: &str) -> Self {
        self.modes = modes.to_owned();
        self
    }

    pub(crate) fn commands(mut self, commands: &[&'static str]) -> Self {
        self.commands = commands.to_vec();
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
                        "C2_FIXTURE_EVENTS": "[]",
                    },
                    "scopeSupport": ["user"],
                }
            }}
        });
        std::fs::write(
            dir.join("plugin.json"),
            serde_json::to_string_pretty(&manifest).unwrap(),
        )
        .unwrap();
        dir
    }
}

/// Whether a process with this pid exists (and is not a zombie).
fn alive(pid: u32) -> bool {
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
