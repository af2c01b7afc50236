use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

/// What to start: a plugin runtime (cwd = the bundle directory), a language server (cwd = the
/// project root) or a one-shot host command all use this same spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// A bare name (looked up on `PATH`), a path relative to `cwd`, or an absolute path.
    pub program: OsString,
    /// The arguments, without the program name.
    pub args: Vec<OsString>,
    /// Added to the host's environment; a name already set on the host is overridden. A `PATH`
    /// given here is also the one a bare program name is looked up on.
    pub env: Vec<(OsString, OsString)>,
    /// The child's working directory; it must exist.
    pub cwd: PathBuf,
    /// Who owns the process (a bundle id, a server name, `git`): tags its stderr in `tracing`.
    pub label: String,
}

impl ProcessSpec {
    /// A spec with no arguments or environment additions, labelled with the program name.
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Self {
        let program = program.into();
        let label = program.to_string_lossy().into_owned();
        Self {
            program,
            args: Vec::new(),
            env: Vec::new(),
            cwd: cwd.into(),
            label,
        }
    }

    /// Appends one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds (or overrides) one environment variable.
    #[must_use]
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Sets the label used in logs and errors.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub(crate) fn program_name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// The `PATH` a bare program name is looked up on: the spec's own, else the host's.
    pub(crate) fn search_path(&self) -> Option<OsString> {
        self.env
            .iter()
            .rev()
            .find(|(name, _)| name.as_os_str() == OsStr::new("PATH"))
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var_os("PATH"))
    }
}

/// Limits of a supervised long-lived child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorOptions {
    /// How long `stop` waits after SIGTERM before SIGKILL (decisions.md: 1 second).
    pub stop_grace: Duration,
    /// Longest stderr line kept, in bytes; the rest is cut with a marker (decisions.md: 64 KiB).
    pub stderr_line_max: usize,
    /// How many of the last stderr lines are kept for error messages.
    pub stderr_tail_lines: usize,
    /// How the child's process tree is held (see [`Containment`]).
    pub containment: Containment,
    /// How long `stop` waits after the kill step (the shim's tree kill, then a SIGKILL) before
    /// giving up on the reap and reporting the exit unknown; every wait of `stop` is bounded.
    pub kill_wait: Duration,
    /// Once the leader has exited, how long a caller still waits for an answer the child wrote
    /// before it died (its stdout may be held open by a descendant, so EOF may never come).
    pub exit_drain: Duration,
    /// Keep one shim started ahead (per host process, see `warm.rs`), so that an activation
    /// does not wait for the shim's own start; the next one is started at
    /// [`Process::handshake_done`](crate::Process::handshake_done) or the stop. Off for a
    /// one-shot process, which gains nothing.
    pub warm_shim: bool,
}

/// How a long-lived child's descendants are kept within reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Containment {
    /// The child runs under a shim process (see [`shim`](crate::shim)) that is its subreaper
    /// and gets a parent-death signal: no descendant outlives the stop, the leader's exit or
    /// the host's death, whatever it does with groups, sessions or stdin. The shim is, in order:
    /// the path in `C2_SUPERVISOR_SHIM`; this executable, when its `main` called
    /// [`run_if_requested`](crate::shim::run_if_requested); `c2-supervisor-shim` beside this
    /// executable (or beside the `deps/` directory a test binary runs from). None found: the
    /// spawn fails with [`Error::NoShim`](crate::Error::NoShim).
    #[default]
    Shim,
    /// The shim at this path (a relative one is taken from the host's working directory at
    /// the spawn, as is `C2_SUPERVISOR_SHIM`).
    ShimAt(PathBuf),
    /// No shim: the child's process group only. A descendant that leaves the group (or a
    /// leader that moves to another group) is out of reach, and nothing outlives a SIGKILLed
    /// host's notice but stdin EOF. For hosts that cannot ship a second executable.
    Group,
}

impl Default for SupervisorOptions {
    fn default() -> Self {
        Self {
            stop_grace: Duration::from_secs(1),
            stderr_line_max: 64 * 1024,
            stderr_tail_lines: 20,
            containment: Containment::Shim,
            kill_wait: Duration::from_secs(5),
            exit_drain: Duration::from_millis(200),
            warm_shim: true,
        }
    }
}

/// Limits of a one-shot host command (see [`run`](crate::run)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Most stdout bytes accepted; more is an error, never a silent truncation.
    pub stdout_max: usize,
    /// Most stderr bytes accepted; more is an error.
    pub stderr_max: usize,
    /// How long the command may run before its process group is killed.
    pub deadline: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            stdout_max: 4 * 1024 * 1024,
            stderr_max: 64 * 1024,
            deadline: Duration::from_secs(30),
        }
    }
}
