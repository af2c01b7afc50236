use std::path::{Path, PathBuf};
use std::time::Duration;

/// What can go wrong when resolving, starting or running a process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The OS refused to start the program.
    #[error(
        "cannot start `{program}` ({}): {source}; check that it exists and is executable",
        describe_resolved(.resolved.as_deref())
    )]
    Spawn {
        /// The program as the spec named it.
        program: String,
        /// The absolute path that was executed, or `None` when no candidate was found on `PATH`.
        resolved: Option<PathBuf>,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// [`Containment::Shim`](crate::Containment::Shim) was asked for and no shim was found.
    #[error(
        "cannot start `{program}`: no supervisor shim found (looked for {}); build it (`cargo build -p c2-supervisor --bins`), set C2_SUPERVISOR_SHIM to its path, or call c2_supervisor::shim::run_if_requested() first in main",
        describe_paths(.looked)
    )]
    NoShim {
        /// The program as the spec named it.
        program: String,
        /// The paths that were tried.
        looked: Vec<PathBuf>,
    },
    /// The working directory of the spec is not a directory.
    #[error("cannot start `{program}`: its working directory {} is not a directory; create it first", .cwd.display())]
    Cwd {
        /// The program as the spec named it.
        program: String,
        /// The missing working directory.
        cwd: PathBuf,
    },
    /// Spawning needs a Tokio runtime: the pipes register with its reactor.
    #[error("cannot start `{program}` outside a Tokio runtime; call it from within one")]
    NoRuntime {
        /// The program as the spec named it.
        program: String,
    },
    /// The thread that notices the child's exit could not be started; the child was killed.
    #[error(
        "cannot watch `{program}` (pid {pid}): {source}; the process was killed, retry when the system has resources"
    )]
    Watch {
        /// The program as the spec named it.
        program: String,
        /// The killed child.
        pid: u32,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A bundle command that breaks the resolution rules.
    #[error("runtime command `{command}` {problem}")]
    Command {
        /// The command as the manifest named it.
        command: String,
        /// What is wrong and what to do.
        problem: CommandProblem,
    },
    /// A one-shot command wrote more than its cap on one stream; it was killed.
    #[error(
        "`{program}` wrote more than {cap} bytes to {stream}; it was killed (raise the cap or narrow the command)"
    )]
    OutputTooLarge {
        /// The program as the spec named it.
        program: String,
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The cap in bytes.
        cap: usize,
    },
    /// A one-shot command outlived its deadline; its group was killed.
    #[error(
        "`{program}` did not finish within {deadline:?}; its process group was killed (raise the deadline or check the command)"
    )]
    DeadlineExceeded {
        /// The program as the spec named it.
        program: String,
        /// The deadline.
        deadline: Duration,
    },
    /// Reading a one-shot command's output failed.
    #[error("cannot read the {stream} of `{program}`: {source}")]
    Read {
        /// The program as the spec named it.
        program: String,
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Why a bundle command cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandProblem {
    /// Empty string.
    #[error("is empty; name a program")]
    Empty,
    /// An absolute path.
    #[error("is absolute; use a path relative to the bundle root")]
    Absolute,
    /// A `..` segment.
    #[error("contains a `..` segment; use a path inside the bundle")]
    ParentSegment,
    /// A component does not exist.
    #[error("does not exist in the bundle (missing {0}); ship the file or fix the path")]
    Missing(String),
    /// A component is a symbolic link.
    #[error("passes through the symlink {0}; ship a regular file instead")]
    Symlink(String),
    /// The final component is not a regular file.
    #[error("is not a regular file in the bundle; point it at the program itself")]
    NotAFile,
    /// The file has no execute permission.
    #[error("is not executable; set its execute bit (chmod +x)")]
    NotExecutable,
    /// A bare name found neither in the bundle root nor on `PATH`.
    #[error(
        "is neither an executable in the bundle root nor on PATH; ship it in the bundle or install it"
    )]
    NotFound,
    /// The file system refused to answer.
    #[error("cannot be inspected ({0}); check the bundle's permissions")]
    Io(String),
}

fn describe_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    if shown.is_empty() {
        "no candidate: the current executable is unknown".to_owned()
    } else {
        shown.join(", ")
    }
}

fn describe_resolved(resolved: Option<&Path>) -> String {
    match resolved {
        Some(path) => format!("resolved to {}", path.display()),
        None => "not found on PATH".to_owned(),
    }
}
