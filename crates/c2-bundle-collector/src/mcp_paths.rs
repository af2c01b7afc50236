//! Agent Plugins §9 path resolution for a stdio MCP server of an installed bundle: the
//! filesystem-resolved `PLUGIN_ROOT`, the `PLUGIN_DATA` directory, one non-recursive expansion
//! of both placeholders in `args`, `env` values and `cwd`, the environment overlay, and
//! containment checked after links are resolved. It starts nothing; the host spawns what this
//! returns.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A stdio server entry of a validated `mcp.json`, as written.
#[derive(Debug, Clone, Copy)]
pub struct McpStdioEntry<'a> {
    /// One token: a bare executable name or a `./` plugin-relative path.
    pub command: &'a str,
    /// The arguments, as written.
    pub args: &'a [String],
    /// The extra environment variables, as written.
    pub env: &'a BTreeMap<String, String>,
    /// `./...`, `${PLUGIN_ROOT}[/...]` or `${PLUGIN_DATA}[/...]`; `None` means the plugin root.
    pub cwd: Option<&'a str>,
}

/// Whether [`resolve_mcp_stdio`] makes the directories it resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataDirs {
    /// Create `PLUGIN_DATA` and a working folder the entry names under it: for a launch.
    Create,
    /// Create nothing: a missing `PLUGIN_DATA` (or working folder under it) is resolved through
    /// its nearest existing ancestor, for a listing that must leave the disk as it is.
    Leave,
}

/// A resolved stdio server: everything a spawn needs, nothing left to expand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedStdio {
    /// The resolved executable (absolute).
    pub program: PathBuf,
    /// The arguments after expansion.
    pub args: Vec<String>,
    /// The working directory, resolved and contained.
    pub cwd: PathBuf,
    /// Set over the host's environment in this order: the entry's `env` (expanded), then
    /// `PLUGIN_ROOT` and `PLUGIN_DATA`.
    pub env: Vec<(String, String)>,
    /// The filesystem-resolved plugin root.
    pub plugin_root: PathBuf,
    /// The resolved `PLUGIN_DATA` directory (exists after a [`DataDirs::Create`] resolution).
    pub plugin_data: PathBuf,
}

/// Why a stdio server entry cannot be resolved; the message is the reason it is skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpPathError {
    /// The installed bundle directory cannot be resolved.
    #[error("the plugin root {} cannot be resolved: {reason}", path.display())]
    Root {
        /// The bundle directory.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// `PLUGIN_DATA` cannot be created.
    #[error("cannot create PLUGIN_DATA {}: {reason}", path.display())]
    CreateData {
        /// The data directory.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// `PLUGIN_DATA` cannot be resolved.
    #[error("PLUGIN_DATA {} cannot be resolved: {reason}", path.display())]
    Data {
        /// The data directory.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// The root or data path is not UTF-8, so it cannot be expanded into text.
    #[error("the plugin root or data path is not UTF-8")]
    NotUtf8,
    /// A `./` command that is not an executable regular file.
    #[error("command {command} is not an executable file (chmod +x it)")]
    NotExecutable {
        /// The command as written.
        command: String,
    },
    /// A bare command that is not on `PATH`.
    #[error("command `{command}` is not found on PATH")]
    NotOnPath {
        /// The command as written.
        command: String,
    },
    /// A working folder under `PLUGIN_DATA` that cannot be created.
    #[error("cannot create cwd {path}: {reason}")]
    CreateCwd {
        /// The expanded working folder.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A command or cwd path that cannot be resolved.
    #[error("{what} {} cannot be resolved: {reason}", path.display())]
    Unresolvable {
        /// `command` or `cwd`.
        what: &'static str,
        /// The path as joined or expanded.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// A command or cwd that resolves outside the directory it must stay in.
    #[error("{what} {} resolves to {}, outside {}", path.display(), real.display(), base.display())]
    Outside {
        /// `command` or `cwd`.
        what: &'static str,
        /// The path as joined or expanded.
        path: PathBuf,
        /// Where it resolves to.
        real: PathBuf,
        /// The directory it must stay in.
        base: PathBuf,
    },
    /// A cwd that is not a directory.
    #[error("cwd {} is not a directory", path.display())]
    CwdNotADirectory {
        /// The resolved working folder.
        path: PathBuf,
    },
}

/// One exact-occurrence, non-recursive replacement of both placeholders (Agent Plugins §9.2):
/// text a replacement introduced is never scanned again, anything else stays literal.
pub fn expand_plugin_paths(text: &str, root: &str, data: &str) -> String {
    const ROOT: &str = "${PLUGIN_ROOT}";
    const DATA: &str = "${PLUGIN_DATA}";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(ROOT) {
            out.push_str(root);
            rest = after;
        } else if let Some(after) = rest.strip_prefix(DATA) {
            out.push_str(data);
            rest = after;
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first executable `name` on `search` (a `PATH` value).
fn search_path(name: &str, search: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(search?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable_file(candidate))
}

/// `path` resolved through links, required to stay under `base` (already resolved). A
/// `pending` path may not exist yet: it is resolved through its nearest existing ancestor.
fn contained(
    path: &Path,
    base: &Path,
    what: &'static str,
    pending: bool,
) -> Result<PathBuf, McpPathError> {
    let real = if pending {
        resolve_pending(path)
    } else {
        std::fs::canonicalize(path)
    };
    let real = real.map_err(|e| McpPathError::Unresolvable {
        what,
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if !real.starts_with(base) {
        return Err(McpPathError::Outside {
            what,
            path: path.to_path_buf(),
            real,
            base: base.to_path_buf(),
        });
    }
    Ok(real)
}

/// `path` resolved through links where it exists; a missing tail of plain names is appended to
/// its nearest existing ancestor, resolved.
fn resolve_pending(path: &Path) -> std::io::Result<PathBuf> {
    let mut tail = Vec::new();
    let mut existing = path;
    loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => return Ok(tail.iter().rev().fold(real, |acc, name| acc.join(name))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                match (existing.file_name(), existing.parent()) {
                    (Some(name), Some(parent)) if !matches!(name.to_str(), Some("." | "..")) => {
                        tail.push(name.to_owned());
                        existing = parent;
                    }
                    _ => return Err(error),
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// Applies Agent Plugins §9 to a validated stdio `entry` of the bundle installed at `root`,
/// whose `PLUGIN_DATA` is `data`. With [`DataDirs::Create`] both are made if missing (with a
/// working folder the entry names under `PLUGIN_DATA`), so what is returned is ready to
/// spawn; with [`DataDirs::Leave`] nothing is made. A bare command is looked up on `search`
/// (a `PATH` value).
#[expect(
    clippy::disallowed_methods,
    reason = "the collector makes PLUGIN_DATA and a working folder inside it, as the store's data directories"
)]
pub fn resolve_mcp_stdio(
    root: &Path,
    data: &Path,
    entry: McpStdioEntry<'_>,
    search: Option<&OsStr>,
    dirs: DataDirs,
) -> Result<ResolvedStdio, McpPathError> {
    let create = dirs == DataDirs::Create;
    let McpStdioEntry {
        command,
        args,
        env,
        cwd,
    } = entry;
    let root = std::fs::canonicalize(root).map_err(|e| McpPathError::Root {
        path: root.to_path_buf(),
        reason: e.to_string(),
    })?;
    if create {
        std::fs::create_dir_all(data).map_err(|e| McpPathError::CreateData {
            path: data.to_path_buf(),
            reason: e.to_string(),
        })?;
    }
    let data = resolve_pending(data).map_err(|e| McpPathError::Data {
        path: data.to_path_buf(),
        reason: e.to_string(),
    })?;
    let (root_text, data_text) = match (root.to_str(), data.to_str()) {
        (Some(r), Some(d)) => (r.to_owned(), d.to_owned()),
        _ => return Err(McpPathError::NotUtf8),
    };
    let program = match command.strip_prefix("./") {
        Some(rel) => {
            let real = contained(&root.join(rel), &root, "command", false)?;
            if !is_executable_file(&real) {
                return Err(McpPathError::NotExecutable {
                    command: command.to_owned(),
                });
            }
            real
        }
        None => search_path(command, search).ok_or_else(|| McpPathError::NotOnPath {
            command: command.to_owned(),
        })?,
    };
    let mut pending = false;
    let cwd = match cwd {
        None => root.clone(),
        Some(raw) => {
            let expanded = expand_plugin_paths(raw, &root_text, &data_text);
            if raw.starts_with("${PLUGIN_DATA}") {
                // The data directory is the host's to manage: a sub-directory is made on demand.
                let inside = Path::new(&expanded).starts_with(&data);
                if inside && create {
                    std::fs::create_dir_all(&expanded).map_err(|e| McpPathError::CreateCwd {
                        path: expanded.clone(),
                        reason: e.to_string(),
                    })?;
                }
                if inside && !create && !Path::new(&expanded).exists() {
                    // Left to be made at launch: checked against where it will be.
                    pending = true;
                }
                contained(Path::new(&expanded), &data, "cwd", pending)?
            } else {
                let path = match raw.strip_prefix("./") {
                    Some(rel) => root.join(rel),
                    None => PathBuf::from(&expanded),
                };
                contained(&path, &root, "cwd", false)?
            }
        }
    };
    if !pending && !cwd.is_dir() {
        return Err(McpPathError::CwdNotADirectory { path: cwd });
    }
    let mut overlay: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.clone(), expand_plugin_paths(v, &root_text, &data_text)))
        .collect();
    overlay.push(("PLUGIN_ROOT".to_owned(), root_text.clone()));
    overlay.push(("PLUGIN_DATA".to_owned(), data_text.clone()));
    Ok(ResolvedStdio {
        program,
        args: args
            .iter()
            .map(|a| expand_plugin_paths(a, &root_text, &data_text))
            .collect(),
        cwd,
        env: overlay,
        plugin_root: root,
        plugin_data: data,
    })
}
