//! Bundles and processes for the host's end-to-end tests (c2-host, c2-contributions): a
//! fixture bundle that runs the `c2-fixture` binary, a bundle with one of each switchable
//! component, a git repository to point a runtime at, and checks of processes in `/proc`.
#![expect(
    clippy::disallowed_methods,
    reason = "test fixtures write bundles, read /proc and prepare repositories with git"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fixture_path;

/// A fixture bundle: `commands` are declared in the manifest and confirmed by the fixture
/// unless a mode says otherwise.
#[derive(Debug)]
pub struct FixtureBundle {
    /// The manifest's `name`, and the directory [`FixtureBundle::write`] creates.
    pub name: String,
    /// The declared (and confirmed) commands.
    pub commands: Vec<&'static str>,
    /// `C2_FIXTURE_MODE`: the fixture's misbehaviour modes.
    pub modes: String,
    /// The event names the fixture answers as `events`.
    pub events: Vec<&'static str>,
    /// Whether the runtime declares project scope too.
    pub project: bool,
    /// `extensions.dev.codetwo.ui`, when set.
    pub ui: Option<Value>,
}

impl FixtureBundle {
    /// The fixture with its full command set, well-behaved, user scope only.
    pub fn new(name: &str) -> Self {
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

    /// With the misbehaviour `modes`.
    pub fn modes(mut self, modes: &str) -> Self {
        self.modes = modes.to_owned();
        self
    }

    /// With the event names `events`.
    pub fn events(mut self, events: &[&'static str]) -> Self {
        self.events = events.to_vec();
        self
    }

    /// With only `commands` declared.
    pub fn commands(mut self, commands: &[&'static str]) -> Self {
        self.commands = commands.to_vec();
        self
    }

    /// With a runtime that declares project scope too.
    pub fn project_capable(mut self) -> Self {
        self.project = true;
        self
    }

    /// Writes the bundle under `parent/<name>` and returns its directory.
    pub fn write(&self, parent: &Path) -> PathBuf {
        let dir = parent.join(&self.name);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let fixture = fixture_path().unwrap();
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
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Every pid in /proc.
pub fn all_pids() -> Vec<u32> {
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
pub fn stat_field(pid: u32, index: usize) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(index + 1)?.parse().ok()
}

/// Waits until `pid` is gone; false if it is still alive after `limit`.
pub async fn gone(pid: u32, limit: Duration) -> bool {
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
pub fn pid_of(info: &Value) -> u32 {
    u32::try_from(info["pid"].as_u64().unwrap()).unwrap()
}

/// Runs `git ARGS` in `dir` with a fixed identity and no user or system configuration;
/// returns its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    run(dir, "git", args)
}

/// Runs `PROGRAM ARGS` in `dir` (a system tool preparing a fixture: git, tar, a digest), with
/// git's identity fixed and no user or system git configuration; returns its stdout and fails
/// the test if it fails.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "the tests prepare repositories, tarballs and digests with the system tools"
    )]
    let output = std::process::Command::new(program)
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
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A git repository with one commit and one untracked file.
pub fn git_repo(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=trunk"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(dir, &["add", "README.md"]);
    git(dir, &["commit", "--quiet", "-m", "first"]);
    std::fs::write(dir.join("new.txt"), "untracked\n").unwrap();
}

/// The language [`component_kit`]'s language server maps.
pub const KIT_LANGUAGE: &str = "kitlang";

/// A project-capable fixture bundle with one of each switchable component: commands
/// `fixture.echo` and `fixture.info`, UI `panel` and `host.actions` `acts`, connector `chat`, language server `ls`, MCP
/// server `tool`, skills `review` (and `extra` when `extra`), scaffold `starter`.
pub fn component_kit(parent: &Path, version: &str, extra: bool, project: bool) -> PathBuf {
    let mut bundle = FixtureBundle::new("kit").commands(&["fixture.echo", "fixture.info"]);
    if project {
        bundle = bundle.project_capable();
    }
    let dir = bundle.write(parent);
    let path = dir.join("plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["version"] = json!(version);
    let codetwo = &mut manifest["extensions"]["dev.codetwo"];
    codetwo["ui"] = json!([{"id": "panel", "slot": "composer.toolbar", "label": "Panel",
                            "command": "fixture.echo"},
                           {"id": "acts", "slot": "host.actions", "label": "Acts",
                            "command": "fixture.echo"}]);
    codetwo["connectors"] = json!([{"id": "chat", "provider": "example-chat",
                                    "command": "fixture.echo", "capabilities": ["messaging"]}]);
    codetwo["languageServers"] =
        json!([{"id": "ls", "languages": [KIT_LANGUAGE], "command": "bin/ls"}]);
    std::fs::write(&path, manifest.to_string()).unwrap();
    let ls = dir.join("bin/ls");
    std::fs::write(&ls, "#!/bin/sh\ncat >/dev/null\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ls, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"tool": {"type": "stdio", "command": "sh", "args": ["-c", "cat"]}}}"#,
    )
    .unwrap();
    let mut skills = vec!["review"];
    if extra {
        skills.push("extra");
    } else {
        let _ = std::fs::remove_dir_all(dir.join("skills/extra"));
    }
    for skill in skills {
        std::fs::create_dir_all(dir.join("skills").join(skill)).unwrap();
        std::fs::write(
            dir.join("skills").join(skill).join("SKILL.md"),
            format!("---\nname: {skill}\ndescription: The {skill} skill.\n---\nDo {skill}.\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.join("scaffolds/starter")).unwrap();
    std::fs::write(dir.join("scaffolds/starter/README.md"), "hello\n").unwrap();
    dir
}
