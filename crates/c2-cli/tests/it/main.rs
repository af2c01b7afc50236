//! Runs the real `c2-plugins` binary in temporary directories: HOME, the plugin store and the
//! working directory are all private to each test, so nothing outside them is touched.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod authoring;
mod bisect;
mod catalogs;
mod cli;
mod components;
mod dev;
mod guards;
mod host;
mod hostile;
mod hub;
mod killswitch;
mod lock;
mod lsp;
mod lsp_typescript;
mod mcp;
mod multihost;
mod replay;
mod resilience;
mod review;
mod sdk;
mod serve;
mod serve_access;
mod serve_interrupt;
mod serve_realms;
mod skills;
mod sources;
mod status;
mod store;
mod validate;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// What one invocation produced.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// stdout as the one JSON document `--format json` promises.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{self:#?}"))
    }
}

/// A private HOME, a plugin store path (not created) and a working directory.
pub(crate) struct Sandbox {
    _root: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) plugins: PathBuf,
    pub(crate) work: PathBuf,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let work = root.path().join("work");
        std::fs::create_dir(&home).unwrap();
        std::fs::create_dir(&work).unwrap();
        Self {
            plugins: root.path().join("plugins"),
            home,
            work,
            _root: root,
        }
    }

    /// Runs `c2-plugins ARGS` in `work` with `C2_PLUGINS_DIR` pointing at `plugins`.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_in(&self.work, args)
    }

    /// Runs `c2-plugins ARGS` in `cwd` with `C2_PLUGINS_DIR` pointing at `plugins`.
    pub(crate) fn run_in(&self, cwd: &Path, args: &[&str]) -> Run {
        #[expect(
            clippy::disallowed_methods,
            reason = "these tests exercise the built binary as a user would run it"
        )]
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"));
        let output = command
            .args(args)
            .current_dir(cwd)
            .env("HOME", &self.home)
            .env("C2_PLUGINS_DIR", &self.plugins)
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// Writes `text` at `rel` under `work`, creating parent directories.
    pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.work.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Copies packs/hello-runtime to `rel` under `work`.
    pub(crate) fn copy_hello_runtime(&self, rel: &str) -> PathBuf {
        for file in HELLO_RUNTIME_FILES {
            let text = std::fs::read_to_string(pack("hello-runtime").join(file)).unwrap();
            self.write(&format!("{rel}/{file}"), &text);
        }
        self.work.join(rel)
    }
}

/// Every path and file in the store, for "nothing changed" checks.
pub(crate) fn store_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                stack.push(path);
            } else {
                out.push((rel, std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// Runs `git ARGS` in `dir` with a fixed identity and no user or system configuration.
pub(crate) fn git(dir: &Path, args: &[&str]) {
    #[expect(
        clippy::disallowed_methods,
        reason = "tests build real git repositories for the host to read and clone"
    )]
    let mut command = std::process::Command::new("git");
    let output = command
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.invalid")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:#?}");
}

/// A git repository at `dir` on branch `main` with one commit of `files`.
pub(crate) fn git_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "--message", "first"]);
}

/// Every file of packs/hello-runtime (it is flat).
pub(crate) const HELLO_RUNTIME_FILES: [&str; 4] = [
    "plugin.json",
    "plugin.mjs",
    "c2-plugin-sdk.mjs",
    "README.md",
];

/// A bundle under the repository's packs/.
pub(crate) fn pack(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs")
        .join(name)
}
