//! The executable surface of a collected bundle and the review of an update: what in a bundle
//! can make something run (the runtime, language servers, MCP servers, commands, hooks,
//! monitors and scripts in skills), and what an update changes in it and in the files.
//! Pure functions over a [`CollectedBundle`]; nothing is read from disk here.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use c2_manifest::McpTransport;
use serde::{Deserialize, Serialize};

use crate::bundle::CollectedBundle;

/// What sort of executable item a [`SurfaceChange`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SurfaceKind {
    /// The process runtime (`extensions.dev.codetwo.runtime`).
    Runtime,
    /// A stdio language server.
    LanguageServer,
    /// An MCP server of `mcp.json` (a stdio process or a remote URL).
    McpServer,
    /// A runtime command id.
    Command,
    /// A file under `hooks/`.
    Hook,
    /// A file under `monitors/`.
    Monitor,
    /// A file under a skill's `scripts/`, or any executable file in a skill directory.
    SkillScript,
}

impl SurfaceKind {
    /// The kind as people read it: `runtime`, `language server`, `MCP server`, ...
    pub fn label(self) -> &'static str {
        match self {
            Self::Runtime => "runtime",
            Self::LanguageServer => "language server",
            Self::McpServer => "MCP server",
            Self::Command => "command",
            Self::Hook => "hook",
            Self::Monitor => "monitor",
            Self::SkillScript => "skill script",
        }
    }
}

/// One executable item, as written in the bundle (no placeholder expanded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum SurfaceItem {
    /// A process the host would start.
    Process {
        /// The executable.
        command: String,
        /// Its arguments, in order.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// The working directory, when declared.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// A remote MCP endpoint.
    Remote {
        /// `streamable-http` or `sse`.
        transport: String,
        /// The endpoint URL.
        url: String,
    },
    /// A declared command id (it runs in the runtime).
    Command,
    /// A file that can be run: its BLAKE3 and execute bit.
    File {
        /// BLAKE3 of the bytes, hex.
        digest: String,
        /// Whether any execute bit is set.
        executable: bool,
    },
}

/// Everything in a bundle that can make something run, keyed by kind and id (the runtime's id
/// is `runtime`; a file's id is its bundle-relative path).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutableSurface {
    /// The items, sorted by kind then id.
    pub items: BTreeMap<(SurfaceKind, String), SurfaceItem>,
}

/// Added, removed or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChangeKind {
    /// Only the new content has it.
    Added,
    /// Only the old content has it.
    Removed,
    /// Both have it, differently.
    Changed,
}

/// One difference between two executable surfaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceChange {
    /// What sort of item.
    pub kind: SurfaceKind,
    /// Its id (`runtime`, a server id or name, a command id, a file path).
    pub id: String,
    /// Added, removed or changed.
    pub change: ChangeKind,
    /// The item before, `None` when added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<SurfaceItem>,
    /// The item after, `None` when removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<SurfaceItem>,
}

/// The files an update adds, removes and changes (bytes or execute bit), sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    /// Only in the new content.
    pub added: Vec<String>,
    /// Only in the old content.
    pub removed: Vec<String>,
    /// In both, with other bytes or another execute bit.
    pub changed: Vec<String>,
}

impl FileDiff {
    /// No file differs.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// What replacing one content with another changes: recorded in `installed.json` by the
/// store's replace and shown by a dry run. Trust stays bound to the content digest: any
/// change of content drops it; this says why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateReview {
    /// The installed id.
    pub id: String,
    /// The manifest version before.
    #[serde(default)]
    pub from_version: Option<String>,
    /// The manifest version after.
    #[serde(default)]
    pub to_version: Option<String>,
    /// The content digest before.
    pub from_digest: String,
    /// The content digest after.
    pub to_digest: String,
    /// The executable-surface diff; empty when only other content changed.
    pub surface: Vec<SurfaceChange>,
    /// The files added, removed and changed.
    pub files: FileDiff,
}

impl UpdateReview {
    /// Compares the old content of the installed bundle `id` with the new one.
    pub fn between(id: &str, old: &CollectedBundle, new: &CollectedBundle) -> Self {
        Self {
            id: id.to_owned(),
            from_version: old.version().map(str::to_owned),
            to_version: new.version().map(str::to_owned),
            from_digest: old.digest.clone(),
            to_digest: new.digest.clone(),
            surface: ExecutableSurface::of(old).diff(&ExecutableSurface::of(new)),
            files: file_diff(old, new),
        }
    }

    /// Why trust is dropped, in one line: `executable surface changed: ...` with every
    /// change, or `content changed, executable surface unchanged`.
    pub fn reason(&self) -> String {
        if self.from_digest == self.to_digest {
            return "content unchanged".to_owned();
        }
        if self.surface.is_empty() {
            return "content changed, executable surface unchanged".to_owned();
        }
        let changes: Vec<String> = self.surface.iter().map(SurfaceChange::describe).collect();
        format!("executable surface changed: {}", changes.join("; "))
    }

    /// Why a bundle is untrusted when the user trusted `trusted_digest` and this replace
    /// dropped that trust; `None` when the trust was for other content.
    pub fn lost_trust(&self, trusted_digest: Option<&str>) -> Option<String> {
        (trusted_digest == Some(self.from_digest.as_str())).then(|| {
            format!(
                "trust was for the content before the update: {}",
                self.reason()
            )
        })
    }
}

impl ExecutableSurface {
    /// The surface of a collected bundle: its manifest, root `mcp.json` and files.
    pub fn of(bundle: &CollectedBundle) -> Self {
        let mut items = BTreeMap::new();
        let process =
            |command: &str, args: &[String], env: &BTreeMap<String, String>| SurfaceItem::Process {
                command: command.to_owned(),
                args: args.to_vec(),
                env: env.clone(),
                cwd: None,
            };
        if let Some(manifest) = &bundle.manifest {
            let codetwo = &manifest.codetwo;
            if let Some(runtime) = &codetwo.runtime {
                let item = process(&runtime.command, &runtime.args, &runtime.env);
                items.insert((SurfaceKind::Runtime, "runtime".to_owned()), item);
            }
            for server in &codetwo.language_servers {
                let item = process(&server.command, &server.args, &server.env);
                items.insert((SurfaceKind::LanguageServer, server.id.clone()), item);
            }
            for command in &codetwo.commands {
                items.insert(
                    (SurfaceKind::Command, command.id.clone()),
                    SurfaceItem::Command,
                );
            }
        }
        if let Some(text) = bundle
            .files
            .get("mcp.json")
            .and_then(|f| std::str::from_utf8(&f.bytes).ok())
        {
            for server in c2_manifest::validate_mcp(text).servers {
                let item = match server.transport {
                    McpTransport::Stdio {
                        command,
                        args,
                        env,
                        cwd,
                    } => SurfaceItem::Process {
                        command,
                        args,
                        env,
                        cwd,
                    },
                    McpTransport::StreamableHttp { url, .. } => SurfaceItem::Remote {
                        transport: "streamable-http".to_owned(),
                        url,
                    },
                    McpTransport::Sse { url, .. } => SurfaceItem::Remote {
                        transport: "sse".to_owned(),
                        url,
                    },
                };
                items.insert((SurfaceKind::McpServer, server.name), item);
            }
        }
        for (path, entry) in &bundle.files {
            let Some(kind) = file_kind(path, entry.executable) else {
                continue;
            };
            let item = SurfaceItem::File {
                digest: blake3::hash(&entry.bytes).to_hex().to_string(),
                executable: entry.executable,
            };
            items.insert((kind, path.clone()), item);
        }
        Self { items }
    }

    /// What changes from `self` (old) to `new`, sorted by kind then id.
    pub fn diff(&self, new: &Self) -> Vec<SurfaceChange> {
        let mut changes = Vec::new();
        for (key, before) in &self.items {
            let after = new.items.get(key);
            if after == Some(before) {
                continue;
            }
            changes.push(SurfaceChange {
                kind: key.0,
                id: key.1.clone(),
                change: if after.is_some() {
                    ChangeKind::Changed
                } else {
                    ChangeKind::Removed
                },
                before: Some(before.clone()),
                after: after.cloned(),
            });
        }
        for (key, after) in &new.items {
            if !self.items.contains_key(key) {
                changes.push(SurfaceChange {
                    kind: key.0,
                    id: key.1.clone(),
                    change: ChangeKind::Added,
                    before: None,
                    after: Some(after.clone()),
                });
            }
        }
        changes.sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
        changes
    }
}

/// Which surface kind a bundle file belongs to, if any.
fn file_kind(path: &str, executable: bool) -> Option<SurfaceKind> {
    let mut parts = path.split('/');
    match parts.next()? {
        "hooks" => Some(SurfaceKind::Hook),
        "monitors" => Some(SurfaceKind::Monitor),
        "skills" => {
            let _skill = parts.next()?;
            let rest: Vec<&str> = parts.collect();
            let in_scripts = rest.len() > 1 && rest[0] == "scripts";
            (!rest.is_empty() && (in_scripts || executable)).then_some(SurfaceKind::SkillScript)
        }
        _ => None,
    }
}

fn file_diff(old: &CollectedBundle, new: &CollectedBundle) -> FileDiff {
    let mut diff = FileDiff::default();
    for (path, before) in &old.files {
        match new.files.get(path) {
            None => diff.removed.push(path.clone()),
            Some(after) if after != before => diff.changed.push(path.clone()),
            Some(_) => {}
        }
    }
    diff.added = new
        .files
        .keys()
        .filter(|path| !old.files.contains_key(*path))
        .cloned()
        .collect();
    diff
}

impl SurfaceChange {
    /// One line: `language server `rust` added (command `ra`, args ["--stdio"])`,
    /// `runtime changed: args ["a"] -> ["b"]`.
    pub fn describe(&self) -> String {
        let mut text = self.kind.label().to_owned();
        if self.kind != SurfaceKind::Runtime {
            let _ = write!(text, " `{}`", self.id);
        }
        match (&self.before, &self.after) {
            (None, Some(after)) => {
                let _ = write!(text, " added ({})", item_text(after));
            }
            (Some(before), None) => {
                let _ = write!(text, " removed (was {})", item_text(before));
            }
            (Some(before), Some(after)) => {
                let _ = write!(text, " changed: {}", changed_text(before, after));
            }
            (None, None) => {}
        }
        text
    }
}

fn item_text(item: &SurfaceItem) -> String {
    match item {
        SurfaceItem::Process {
            command,
            args,
            env,
            cwd,
        } => {
            let mut text = format!("command `{command}`");
            if !args.is_empty() {
                let _ = write!(text, ", args {args:?}");
            }
            if !env.is_empty() {
                let _ = write!(text, ", env {env:?}");
            }
            if let Some(cwd) = cwd {
                let _ = write!(text, ", cwd `{cwd}`");
            }
            text
        }
        SurfaceItem::Remote { transport, url } => format!("{transport} `{url}`"),
        SurfaceItem::Command => "declared".to_owned(),
        SurfaceItem::File { executable, .. } => {
            if *executable {
                "executable file".to_owned()
            } else {
                "file".to_owned()
            }
        }
    }
}

fn changed_text(before: &SurfaceItem, after: &SurfaceItem) -> String {
    match (before, after) {
        (
            SurfaceItem::Process {
                command: c1,
                args: a1,
                env: e1,
                cwd: d1,
            },
            SurfaceItem::Process {
                command: c2,
                args: a2,
                env: e2,
                cwd: d2,
            },
        ) => {
            let mut parts = Vec::new();
            if c1 != c2 {
                parts.push(format!("command `{c1}` -> `{c2}`"));
            }
            if a1 != a2 {
                parts.push(format!("args {a1:?} -> {a2:?}"));
            }
            if e1 != e2 {
                parts.push(format!("env {e1:?} -> {e2:?}"));
            }
            if d1 != d2 {
                parts.push(format!("cwd {d1:?} -> {d2:?}"));
            }
            parts.join(", ")
        }
        (
            SurfaceItem::File {
                digest: d1,
                executable: x1,
            },
            SurfaceItem::File {
                digest: d2,
                executable: x2,
            },
        ) => {
            let mut parts = Vec::new();
            if d1 != d2 {
                parts.push("new content".to_owned());
            }
            if x1 != x2 {
                parts.push(format!("executable {x1} -> {x2}"));
            }
            parts.join(", ")
        }
        _ => format!("{} -> {}", item_text(before), item_text(after)),
    }
}
