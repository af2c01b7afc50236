//! A child in its own process group, and the rules that keep signalling it safe.
//!
//! # Why signalling the group is safe, and when it stops being safe
//!
//! The child is spawned as the leader of a new process group, so the group id is the child's pid.
//! A pid cannot be handed to a new process while the old one still exists, and an unreaped
//! zombie still exists. So as long as the leader has not been reaped, no other process can own
//! that pid, no process can create a group with that id (a new group always takes its creator's
//! pid), and `killpg(pid)` reaches exactly the leader and whatever stayed in its group. Once the
//! leader is reaped the pid (and, when the group is empty, the group id) may be reused by an
//! unrelated process, so nothing here signals after reaping. One thread per child is the only
//! reaper (a pooled one, see `reaper.rs`, serving that child alone until it is reaped); every
//! signal and the reap itself happen under the same lock, checking a `reaped` flag.
//!
//! The reaper thread waits with `WNOWAIT`, which observes the exit without reaping. When the
//! leader is found dead (on its own or after SIGTERM), the group is swept with SIGKILL while the
//! zombie still pins the id, and only then reaped: the group never outlives its leader. A member
//! that called `setsid` has left the group and is out of the group's reach: under a shim (the
//! default), the shim kills it (see `shim.rs`); group-only, it goes only when the stdin it
//! inherited closes. The host signals the leader's pid directly too, so a leader that moved
//! itself into another group is still reached; the shim is asked to kill its tree with
//! [`KILL_TREE`] to its pid alone, never to the group, so that the shim outlives its tree.

use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tokio::io::AsyncWrite;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{OnceCell, watch};

use crate::error::Error;
use crate::resolve::locate_program;
use crate::shim::KILL_TREE;
use crate::spec::{Containment, ProcessSpec, SupervisorOptions};
use crate::stderr::{StderrTail, drain};

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal number.
    Signal(i32),
    /// Something else in this process reaped it first (for example SIGCHLD set to ignore), so
    /// the status is lost.
    Unknown,
}

impl Exit {
    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        self == Self::Code(0)
    }

    fn from_status(status: std::process::ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Code(code),
            (None, Some(signal)) => Self::Signal(signal),
            (None, None) => Self::Unknown,
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exited with code {code}"),
            Self::Signal(number) => match Signal::try_from(*number) {
                Ok(signal) => write!(f, "killed by signal {number} ({})", signal.as_str()),
                Err(_) => write!(f, "killed by signal {number}"),
            },
            Self::Unknown => f.write_str("exit status unavailable (reaped elsewhere)"),
        }
    }
}

/// What [`Process::stop`] observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitReport {
    /// How the direct child ended.
    pub exit: Exit,
    /// The child had already exited before `stop` began.
    pub already_exited: bool,
    /// The child outlived the grace period after SIGTERM and was killed with SIGKILL.
    pub forced: bool,
}

enum Leader {
    Running(Handle),
    Reaped,
}

/// The direct child as std or tokio spawned it (a pre-started shim is a std child).
pub(crate) enum Handle {
    Tokio(Child),
    Std(std::process::Child),
}

impl Handle {
    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        match self {
            Self::Tokio(child) => child.try_wait(),
            Self::Std(child) => child.try_wait(),
        }
    }

    fn id(&self) -> Option<u32> {
        match self {
            Self::Tokio(child) => child.id(),
            Self::Std(child) => Some(child.id()),
        }
    }

    fn start_kill(&mut self) {
        let _ = match self {
            Self::Tokio(child) => child.start_kill(),
            Self::Std(child) => child.kill(),
        };
    }
}

/// State shared by the owner's handle, the reaper thread and the stdin writer.
struct Shared {
    pid: Pid,
    label: String,
    /// The child is a shim (see `shim.rs`) that kills the runtime's tree on [`KILL_TREE`].
    shim: bool,
    leader: Mutex<Leader>,
    exit: watch::Sender<Option<Exit>>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
}

impl Shared {
    /// Sends `signal` to the whole group and to the leader itself (which may have moved to
    /// another group) unless the leader is reaped; true when it was delivered.
    fn signal_group(&self, signal: Signal) -> bool {
        let leader = c2_lock::lock(&self.leader);
        match *leader {
            Leader::Running(_) => {
                let group = killpg(self.pid, signal, &self.label);
                kill(self.pid, signal, &self.label) || group
            }
            Leader::Reaped => false,
        }
    }

    /// Kills the child's tree: a shim is asked to kill its runtime's whole tree (and then exits);
    /// without a shim the group and the leader get SIGKILL.
    fn kill_tree(&self) -> bool {
        if !self.shim {
            return self.signal_group(Signal::SIGKILL);
        }
        let leader = c2_lock::lock(&self.leader);
        match *leader {
            Leader::Running(_) => kill(self.pid, KILL_TREE, &self.label),
            Leader::Reaped => false,
        }
    }

    /// Called once the leader is known dead: sweep the group, then reap. True once reaped.
    fn sweep_and_reap(&self) -> bool {
        let mut leader = c2_lock::lock(&self.leader);
        let Leader::Running(child) = &mut *leader else {
            return true;
        };
        killpg(self.pid, Signal::SIGKILL, &self.label);
        let exit = match child.try_wait() {
            Ok(Some(status)) => Exit::from_status(status),
            Ok(None) => return false,
            Err(_) => Exit::Unknown,
        };
        *leader = Leader::Reaped;
        drop(leader);
        self.exit.send_replace(Some(exit));
        true
    }

    /// The status is gone (reaped by someone else); stop signalling for good.
    fn lost(&self) {
        let mut leader = c2_lock::lock(&self.leader);
        if matches!(*leader, Leader::Running(_)) {
            *leader = Leader::Reaped;
            drop(leader);
            self.exit.send_replace(Some(Exit::Unknown));
        }
    }

    fn close_stdin(&self) {
        drop(c2_lock::lock(&self.stdin).take());
    }
}

/// The only signalling call of the crate; ESRCH (the group is already empty) is not an error.
#[expect(
    clippy::disallowed_methods,
    reason = "the supervisor owns signalling; callers guarantee the group id is pinned by an unreaped leader"
)]
fn killpg(pgid: Pid, signal: Signal, label: &str) -> bool {
    match nix::sys::signal::killpg(pgid, signal) {
        Ok(()) => true,
        Err(Errno::ESRCH) => false,
        Err(error) => {
            tracing::warn!(owner = %label, pgid = pgid.as_raw(), %error, "cannot send {signal} to the process group");
            false
        }
    }
}

/// Signals one pid; the caller guarantees it is an unreaped child of this process.
#[expect(
    clippy::disallowed_methods,
    reason = "the supervisor owns signalling; callers guarantee the pid is pinned by an unreaped child"
)]
fn kill(pid: Pid, signal: Signal, label: &str) -> bool {
    match nix::sys::signal::kill(pid, signal) {
        Ok(()) => true,
        Err(Errno::ESRCH) => false,
        Err(error) => {
            tracing::warn!(owner = %label, pid = pid.as_raw(), %error, "cannot send {signal} to the process");
            false
        }
    }
}

/// The reaper thread: blocks until the leader is dead without reaping it, then sweeps and reaps.
fn watch_exit(shared: &Shared) {
    loop {
        match waitid(
            Id::Pid(shared.pid),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
        ) {
            Ok(_) => {
                if shared.sweep_and_reap() {
                    return;
                }
                // The kernel reported an exit that `try_wait` does not see yet; do not spin.
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(Errno::EINTR) => {}
            Err(error) => {
                tracing::warn!(owner = %shared.label, %error, "lost track of the child; its exit status is unknown");
                shared.lost();
                return;
            }
        }
    }
}

/// A freshly spawned supervised child and the two pipes its owner speaks over.
#[derive(Debug)]
pub struct Spawned {
    /// The handle that stops the child; dropping it kills the group.
    pub process: Process,
    /// The child's stdin; [`Process::stop`] closes it even while this is held.
    pub stdin: ProcessStdin,
    /// The child's stdout.
    pub stdout: ChildStdout,
}

/// A supervised long-lived child: its own process group, stderr drained into `tracing`.
///
/// Dropping it without [`stop`](Self::stop) SIGKILLs the group at once (no runtime needed); the
/// reaper thread then reaps the child.
pub struct Process {
    shared: Arc<Shared>,
    exit: watch::Receiver<Option<Exit>>,
    tail: Arc<StderrTail>,
    waits: Waits,
    report: OnceCell<ExitReport>,
    /// Under a shim, the program's pid once seen.
    program: std::sync::OnceLock<u32>,
    /// The shim to pre-start for the next spawn once this one's start-up is over
    /// ([`SupervisorOptions::warm_shim`]); taken by the first of `handshake_done` and `stop`.
    refill: Mutex<Option<std::path::PathBuf>>,
}

/// The bounds of [`Process::stop`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waits {
    /// After SIGTERM, before the kill.
    pub(crate) grace: Duration,
    /// After each kill step, before the next one (or giving up).
    pub(crate) kill: Duration,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("pid", &self.pid())
            .field("label", &self.shared.label)
            .field("exit", &self.try_exit())
            .finish_non_exhaustive()
    }
}

/// Starts `spec` as a supervised child. Must be called within a Tokio runtime.
pub fn spawn(spec: &ProcessSpec, options: &SupervisorOptions) -> Result<Spawned, Error> {
    let tail = Arc::new(StderrTail::new(options.stderr_tail_lines));
    let waits = Waits {
        grace: options.stop_grace,
        kill: options.kill_wait,
    };
    let prepared = prepare(spec, &options.containment)?;
    let refill = prepared.shim.clone().filter(|_| options.warm_shim);
    let (mut process, pipes) = match crate::warm::take(spec, options, &prepared)? {
        Some(warm) => {
            let process = Process::watch(
                spec,
                Handle::Std(warm.child),
                Some(warm.stdin),
                Arc::clone(&tail),
                waits,
                true,
            )?;
            (process, (Some(warm.stdout), Some(warm.stderr)))
        }
        None => {
            let (mut child, shim) = launch(spec, std::process::Stdio::piped(), prepared)?;
            let pipes = (child.stdout.take(), child.stderr.take());
            let stdin = child.stdin.take();
            let process = Process::watch(
                spec,
                Handle::Tokio(child),
                stdin,
                Arc::clone(&tail),
                waits,
                shim,
            )?;
            (process, pipes)
        }
    };
    process.refill = Mutex::new(refill);
    // From here on, an early return drops `process`, which kills the group.
    let (Some(stdout), Some(stderr)) = pipes else {
        return Err(no_pipes(spec));
    };
    tokio::spawn(drain(
        stderr,
        spec.label.clone(),
        options.stderr_line_max,
        tail,
    ));
    let stdin = ProcessStdin {
        slot: Arc::clone(&process.shared.stdin),
    };
    Ok(Spawned {
        process,
        stdin,
        stdout,
    })
}

/// What [`start`] runs, checked before anything is spawned.
pub(crate) struct Prepared {
    pub(crate) program: String,
    pub(crate) resolved: std::path::PathBuf,
    pub(crate) shim: Option<std::path::PathBuf>,
}

/// Checks the spec (a runtime, the working directory, the program and its execute bit) and
/// finds the shim `containment` asks for.
pub(crate) fn prepare(spec: &ProcessSpec, containment: &Containment) -> Result<Prepared, Error> {
    let program = spec.program_name();
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Error::NoRuntime { program });
    }
    if !spec.cwd.is_dir() {
        return Err(Error::Cwd {
            program,
            cwd: spec.cwd.clone(),
        });
    }
    let search_path = spec.search_path();
    let Some(resolved) = locate_program(&spec.program, &spec.cwd, search_path.as_deref()) else {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no such program");
        return Err(Error::Spawn {
            program,
            resolved: None,
            source,
        });
    };
    // A shim execs the program itself, so a missing execute bit is caught here, synchronously.
    if let Err(errno) = nix::unistd::access(&resolved, nix::unistd::AccessFlags::X_OK) {
        return Err(Error::Spawn {
            program,
            resolved: Some(resolved),
            source: std::io::Error::from_raw_os_error(errno as i32),
        });
    }
    let shim = crate::shim::locate(containment).map_err(|looked| Error::NoShim {
        program: program.clone(),
        looked,
    })?;
    Ok(Prepared {
        program,
        resolved,
        shim,
    })
}

/// Spawns the child (under a shim unless `containment` says group only); `stdin` is piped for
/// long-lived children and null for one-shot commands. True when the child is a shim.
pub(crate) fn start(
    spec: &ProcessSpec,
    stdin: std::process::Stdio,
    containment: &Containment,
) -> Result<(Child, bool), Error> {
    let prepared = prepare(spec, containment)?;
    launch(spec, stdin, prepared)
}

/// Spawns a prepared spec.
pub(crate) fn launch(
    spec: &ProcessSpec,
    stdin: std::process::Stdio,
    prepared: Prepared,
) -> Result<(Child, bool), Error> {
    let Prepared {
        program,
        resolved,
        shim,
    } = prepared;
    #[expect(
        clippy::disallowed_methods,
        reason = "c2-supervisor is the one crate that spawns processes, and this is where it does"
    )]
    let mut command = match &shim {
        Some(shim) => {
            let mut command = tokio::process::Command::new(shim);
            command.args(crate::shim::shim_args(
                std::process::id(),
                resolved.as_os_str(),
                &spec.program,
                &spec.args,
            ));
            command
        }
        None => {
            let mut command = tokio::process::Command::new(&resolved);
            command.arg0(&spec.program).args(&spec.args);
            command
        }
    };
    command
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .current_dir(&spec.cwd)
        // A new group whose id is the child's pid; std's safe way (no pre_exec, fast spawn path).
        .process_group(0)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // "Text file busy": the executable was written moments ago and another thread's fork still
    // holds the writing descriptor between its fork and exec. That window closes within
    // milliseconds, so a short bounded retry turns a rare spurious failure into a start.
    let mut backoff = Duration::from_millis(2);
    let mut retries = 0;
    loop {
        match command.spawn() {
            Ok(child) => return Ok((child, shim.is_some())),
            Err(source)
                if source.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32)
                    && retries < ETXTBSY_RETRIES =>
            {
                retries += 1;
                std::thread::sleep(backoff);
                backoff *= 2;
            }
            Err(source) => {
                return Err(Error::Spawn {
                    program,
                    resolved: Some(resolved),
                    source,
                });
            }
        }
    }
}

/// Spawn attempts after the first that a "text file busy" failure gets (about 1 s in all).
const ETXTBSY_RETRIES: u32 = 9;

/// std creates every pipe it is asked for; this only guards the `Option`s it hands them out in.
fn no_pipes(spec: &ProcessSpec) -> Error {
    Error::Spawn {
        program: spec.program_name(),
        resolved: None,
        source: std::io::Error::other("the standard pipes were not created"),
    }
}

fn pid_of(pid: u32) -> Pid {
    Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX))
}

impl Process {
    /// Wraps a spawned child and hands it to a reaper thread (see `reaper.rs`).
    pub(crate) fn watch(
        spec: &ProcessSpec,
        child: Handle,
        stdin: Option<ChildStdin>,
        tail: Arc<StderrTail>,
        waits: Waits,
        shim: bool,
    ) -> Result<Self, Error> {
        let Some(raw) = child.id() else {
            // Only a child that was already waited on has no id, and nobody has waited on it yet.
            return Err(no_pipes(spec));
        };
        let (sender, exit) = watch::channel(None);
        let shared = Arc::new(Shared {
            pid: pid_of(raw),
            label: spec.label.clone(),
            shim,
            leader: Mutex::new(Leader::Running(child)),
            exit: sender,
            stdin: Arc::new(Mutex::new(stdin)),
        });
        let watched = Arc::clone(&shared);
        let started = crate::reaper::REAPERS.run(Box::new(move || watch_exit(&watched)));
        if let Err(source) = started {
            shared.signal_group(Signal::SIGKILL);
            if let Leader::Running(child) = &mut *c2_lock::lock(&shared.leader) {
                // Killed just above; tokio's orphan queue reaps it if this does not.
                child.start_kill();
            }
            return Err(Error::Watch {
                program: spec.program_name(),
                pid: raw,
                source,
            });
        }
        Ok(Self {
            shared,
            exit,
            tail,
            waits,
            report: OnceCell::new(),
            program: std::sync::OnceLock::new(),
            refill: Mutex::new(None),
        })
    }

    /// Tells the supervisor that the owner's start-up exchange with the child (a handshake,
    /// say) is over, so the background work held back so as not to compete with it for the
    /// CPU begins now: pre-starting the shim the next spawn will take
    /// ([`SupervisorOptions::warm_shim`]). Optional and idempotent; without it that work
    /// begins when the process is stopped.
    pub fn handshake_done(&self) {
        let shim = c2_lock::lock(&self.refill).take();
        if let Some(shim) = shim {
            crate::warm::refill(shim);
        }
    }

    /// The direct child's pid, which is also its process group id: under a shim, the shim's.
    pub fn pid(&self) -> u32 {
        u32::try_from(self.shared.pid.as_raw()).unwrap_or_default()
    }

    /// The pid of the program the spec named: without a shim the direct child's; under a shim
    /// its first child, once the shim has started it (`None` before that, and if it never saw
    /// it alive). Remembered once seen, so it names the program even after it has exited.
    pub fn program_pid(&self) -> Option<u32> {
        if !self.shared.shim {
            return Some(self.pid());
        }
        if let Some(pid) = self.program.get() {
            return Some(*pid);
        }
        if self.try_exit().is_some() {
            return None;
        }
        let first = crate::shim::children_of(self.pid()).first().copied()?;
        let first = u32::try_from(first.as_raw()).ok()?;
        Some(*self.program.get_or_init(|| first))
    }

    /// Whether the child runs under a supervisor shim (see [`Containment`]).
    pub fn contained(&self) -> bool {
        self.shared.shim
    }

    /// The owner's label given in the spec.
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    /// How the child ended, if it has (reaped, group swept); never blocks.
    pub fn try_exit(&self) -> Option<Exit> {
        *self.exit.borrow()
    }

    /// Waits until the child has ended on its own or through [`stop`](Self::stop).
    pub async fn exited(&self) -> Exit {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(exit) => (*exit).unwrap_or(Exit::Unknown),
            // The sender lives in `shared`, which this handle holds, so it cannot be gone.
            Err(_) => Exit::Unknown,
        }
    }

    /// Runs `request` until it completes or the child's leader exits: a descendant may hold
    /// stdout open after the leader died, so EOF is not a reliable sign of the exit. After the
    /// exit the request gets `drain` to complete with an answer written before it; then it is
    /// dropped and the exit is returned.
    pub async fn until_exit<F: std::future::Future>(
        &self,
        drain: Duration,
        request: F,
    ) -> Result<F::Output, Exit> {
        tokio::pin!(request);
        let exit = tokio::select! {
            biased;
            result = &mut request => return Ok(result),
            exit = self.exited() => exit,
        };
        tokio::time::timeout(drain, request).await.map_err(|_| exit)
    }

    /// A channel that turns `Some` when the child has ended, for `select!` loops.
    pub fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.exit.clone()
    }

    /// The last stderr lines, oldest first, for error messages.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.tail.snapshot()
    }

    /// Closes the child's stdin (a well-behaved plugin exits on it); writes then fail.
    pub fn close_stdin(&self) {
        self.shared.close_stdin();
    }

    /// Stops the child: closes stdin, SIGTERMs the group (and the leader, wherever its group),
    /// waits up to the grace period for the child to exit, then kills the tree: under a shim,
    /// the shim SIGKILLs every descendant of the runtime, whatever its group or session, and
    /// exits; without one, the group and the leader get SIGKILL. Returns once the direct child
    /// is reaped. Every wait is bounded: should the child still not be reaped `kill_wait` after
    /// the kill (a wedged shim gets a SIGKILL to its group then, and another `kill_wait`), the
    /// report says [`Exit::Unknown`] and a warning is logged. Idempotent: every caller,
    /// concurrent or later, gets the same report. Cancelling the future is safe: a later call
    /// resumes.
    pub async fn stop(&self) -> ExitReport {
        self.report
            .get_or_init(|| async {
                let already_exited = self.try_exit().is_some();
                self.close_stdin();
                self.shared.signal_group(Signal::SIGTERM);
                let forced = match self.exit_within(self.waits.grace).await {
                    Some(_) => false,
                    None => self.shared.kill_tree(),
                };
                let exit = self.reaped_after_kill().await;
                self.handshake_done();
                ExitReport {
                    exit,
                    already_exited,
                    forced,
                }
            })
            .await
            .clone()
    }

    /// The exit, if it comes within `bound`.
    async fn exit_within(&self, bound: Duration) -> Option<Exit> {
        tokio::time::timeout(bound, self.exited()).await.ok()
    }

    /// Waits for the reap after the tree was killed, escalating once if a shim does not go.
    async fn reaped_after_kill(&self) -> Exit {
        if let Some(exit) = self.exit_within(self.waits.kill).await {
            return exit;
        }
        if self.shared.shim {
            tracing::warn!(owner = %self.shared.label, pid = self.pid(), "the supervisor shim did not exit after killing the tree; sending SIGKILL to its group");
            self.shared.signal_group(Signal::SIGKILL);
            if let Some(exit) = self.exit_within(self.waits.kill).await {
                return exit;
            }
        }
        tracing::warn!(owner = %self.shared.label, pid = self.pid(), "the child was not reaped after SIGKILL (uninterruptible sleep?); giving up waiting");
        Exit::Unknown
    }

    /// Kills the tree at once and waits (bounded) for the reap.
    pub(crate) async fn kill(&self) -> Exit {
        self.close_stdin();
        self.shared.kill_tree();
        self.reaped_after_kill().await
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.shared.close_stdin();
        self.shared.kill_tree();
    }
}

/// The child's stdin, shared with its [`Process`] so that stopping closes it; dropping it closes
/// the pipe too.
#[derive(Debug)]
pub struct ProcessStdin {
    slot: Arc<Mutex<Option<ChildStdin>>>,
}

impl Drop for ProcessStdin {
    fn drop(&mut self) {
        drop(c2_lock::lock(&self.slot).take());
    }
}

impl ProcessStdin {
    fn poll_with<T>(
        &self,
        op: impl FnOnce(Pin<&mut ChildStdin>) -> Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        let mut slot = c2_lock::lock(&self.slot);
        match slot.as_mut() {
            Some(stdin) => op(Pin::new(stdin)),
            None => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the child's stdin is closed because it is being stopped",
            ))),
        }
    }
}

impl AsyncWrite for ProcessStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.poll_with(|stdin| stdin.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_with(|stdin| stdin.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut slot = c2_lock::lock(&self.slot);
        match slot.as_mut() {
            Some(stdin) => Pin::new(stdin).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}
