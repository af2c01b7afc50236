//! `git.status`: the host's initial extension-public command (read-only).
//!
//! The host runs `git status --porcelain=v2 --branch -z` through c2-supervisor's one-shot runner
//! and turns it into `{branch, head, files: [{path, status}]}`. `status` is the two-letter code of
//! `git status --short` (`" M"`, `"A "`, `"??"`, `"R "`, `"UU"`...), which tools and people both read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use c2_kernel::{
    BoxFuture, CallContext, CommandSpec, Error as KernelError, Module, ModuleMeta, Realm, Role,
    ScopeContext, command_handler,
};
use c2_supervisor::{ProcessSpec, RunOptions};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{ErrorKind, raise};
use crate::seam::Registry;

/// The built-in module that publishes `git.status` to extensions.
#[derive(Debug)]
pub(crate) struct GitModule {
    git: PathBuf,
    working_dir: PathBuf,
    run: RunOptions,
}

impl GitModule {
    pub(crate) const NAME: &'static str = "git";

    pub(crate) fn new(git: PathBuf, working_dir: PathBuf, run: RunOptions) -> Self {
        Self {
            git,
            working_dir,
            run,
        }
    }
}

/// Registers `git.status` with a host that is opening.
pub(crate) fn install(registry: &mut Registry<'_>) {
    let options = registry.options();
    let git = GitModule::new(
        options.git_program.clone(),
        options.resolved_working_dir().to_owned(),
        options.run.clone(),
    );
    registry.module(Arc::new(git), 1);
}

impl Module for GitModule {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn meta(&self) -> ModuleMeta {
        ModuleMeta::new(Role::BuiltIn, "c2", "vcs")
    }

    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            let git = self.git.clone();
            let base = self.working_dir.clone();
            let run = self.run.clone();
            let spec = CommandSpec::new("Git status")
                .description(
                    "Branch, head commit and changed files of the git working tree containing `cwd` (read-only).",
                )
                .extension_public();
            let spec = CommandSpec {
                args_schema: Some(json!({
                    "type": "object",
                    "properties": { "cwd": { "type": "string" } },
                    "additionalProperties": false
                })),
                ..spec
            };
            ctx.register_command(
                "git.status",
                spec,
                command_handler(move |call: CallContext, args: Value| {
                    let git = git.clone();
                    let base = base.clone();
                    let run = run.clone();
                    async move { status(&git, &base, &run, &call.realm, &args).await }
                }),
            )
        })
    }
}

/// Resolves `cwd` in the caller's realm: relative to the project of a project realm, else to
/// the host's working directory.
fn resolve_cwd(base: &Path, realm: &Realm, args: &Value) -> Result<PathBuf, KernelError> {
    let cwd = match args.get("cwd") {
        None | Some(Value::Null) => ".",
        Some(Value::String(cwd)) => cwd.as_str(),
        Some(_) => {
            return Err(raise(ErrorKind::InvalidArgs, "`cwd` must be a string"));
        }
    };
    if let Some(object) = args.as_object()
        && let Some(unknown) = object.keys().find(|k| *k != "cwd")
    {
        return Err(raise(
            ErrorKind::InvalidArgs,
            format!("unknown argument `{unknown}`: git.status takes only `cwd`"),
        ));
    }
    let base = match realm {
        Realm::Project(key) => PathBuf::from(key.as_str()),
        Realm::Global => base.to_path_buf(),
    };
    let dir = base.join(cwd);
    if !dir.is_dir() {
        return Err(raise(
            ErrorKind::InvalidArgs,
            format!("{} is not a directory", dir.display()),
        ));
    }
    Ok(dir)
}

async fn status(
    git: &Path,
    base: &Path,
    run: &RunOptions,
    realm: &Realm,
    args: &Value,
) -> Result<Value, KernelError> {
    let dir = resolve_cwd(base, realm, args)?;
    let spec = ProcessSpec::new(git, &dir)
        .args([
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=all",
        ])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .label("git");
    let output = c2_supervisor::run(&spec, run)
        .await
        .map_err(|error| raise(ErrorKind::GitFailed, error.to_string()))?;
    if !output.exit.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(raise(
            ErrorKind::NotAWorkingTree,
            format!(
                "{} is not inside a git working tree ({}): {}",
                dir.display(),
                output.exit,
                stderr.trim()
            ),
        ));
    }
    let status =
        parse_porcelain_v2(&output.stdout).map_err(|error| raise(ErrorKind::GitFailed, error))?;
    serde_json::to_value(status).map_err(|error| raise(ErrorKind::GitFailed, error.to_string()))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GitStatus {
    pub(crate) branch: Option<String>,
    pub(crate) head: Option<String>,
    pub(crate) files: Vec<GitFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GitFile {
    pub(crate) path: String,
    pub(crate) status: String,
}

/// Parses the NUL-separated output of `git status --porcelain=v2 --branch -z`.
pub(crate) fn parse_porcelain_v2(output: &[u8]) -> Result<GitStatus, String> {
    let text = String::from_utf8_lossy(output);
    let mut records = text.split('\0').filter(|r| !r.is_empty());
    let mut status = GitStatus {
        branch: None,
        head: None,
        files: Vec::new(),
    };
    while let Some(record) = records.next() {
        let (kind, rest) = record.split_once(' ').unwrap_or((record, ""));
        match kind {
            "#" => {
                if let Some(oid) = rest.strip_prefix("branch.oid ") {
                    status.head = (oid != "(initial)").then(|| oid.to_owned());
                } else if let Some(head) = rest.strip_prefix("branch.head ") {
                    status.branch = (head != "(detached)").then(|| head.to_owned());
                }
            }
            // Ordinary: XY sub mH mI mW hH hI path
            "1" => {
                let fields: Vec<&str> = rest.splitn(8, ' ').collect();
                let [xy, .., path] = fields.as_slice() else {
                    return Err(format!("unexpected git status record `{record}`"));
                };
                if fields.len() != 8 {
                    return Err(format!("unexpected git status record `{record}`"));
                }
                status.files.push(file(path, xy));
            }
            // Renamed or copied: XY sub mH mI mW hH hI Xscore path, then the original path.
            "2" => {
                let fields: Vec<&str> = rest.splitn(9, ' ').collect();
                if fields.len() != 9 {
                    return Err(format!("unexpected git status record `{record}`"));
                }
                status.files.push(file(fields[8], fields[0]));
                records.next();
            }
            // Unmerged: XY sub m1 m2 m3 mW h1 h2 h3 path
            "u" => {
                let fields: Vec<&str> = rest.splitn(10, ' ').collect();
                if fields.len() != 10 {
                    return Err(format!("unexpected git status record `{record}`"));
                }
                status.files.push(file(fields[9], fields[0]));
            }
            "?" => status.files.push(GitFile {
                path: rest.to_owned(),
                status: "??".to_owned(),
            }),
            "!" => {}
            _ => return Err(format!("unexpected git status record `{record}`")),
        }
    }
    Ok(status)
}

fn file(path: &str, xy: &str) -> GitFile {
    GitFile {
        path: path.to_owned(),
        status: xy.replace('.', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_head_and_every_record_kind_are_parsed() {
        let out = b"# branch.oid 0123abcd\0# branch.head main\0\
1 .M N... 100644 100644 100644 aaa bbb src/lib.rs\0\
1 A. N... 000000 100644 100644 000 ccc new file.txt\0\
2 R. N... 100644 100644 100644 ddd eee R100 renamed.rs\0old.rs\0\
u UU N... 100644 100644 100644 100644 f1 f2 f3 conflict.rs\0\
? untracked.md\0! ignored.log\0";
        let status = parse_porcelain_v2(out).unwrap();
        assert_eq!(status.branch.as_deref(), Some("main"));
        assert_eq!(status.head.as_deref(), Some("0123abcd"));
        let files: Vec<(&str, &str)> = status
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.status.as_str()))
            .collect();
        assert_eq!(
            files,
            vec![
                ("src/lib.rs", " M"),
                ("new file.txt", "A "),
                ("renamed.rs", "R "),
                ("conflict.rs", "UU"),
                ("untracked.md", "??"),
            ]
        );
    }

    #[test]
    fn a_fresh_repository_has_no_head_and_a_detached_head_no_branch() {
        let fresh = parse_porcelain_v2(b"# branch.oid (initial)\0# branch.head main\0").unwrap();
        assert_eq!((fresh.head, fresh.branch.as_deref()), (None, Some("main")));
        let detached = parse_porcelain_v2(b"# branch.oid abc\0# branch.head (detached)\0").unwrap();
        assert_eq!(detached.branch, None);
    }

    #[test]
    fn a_malformed_record_is_an_error_not_a_guess() {
        assert!(parse_porcelain_v2(b"1 .M short\0").is_err());
        assert!(parse_porcelain_v2(b"Z what\0").is_err());
    }
}
