//! The per-child supervisor process ("shim") that keeps a runtime's whole process tree inside
//! the host's reach.
//!
//! The host does not start a plugin runtime or a language server directly: it starts a shim,
//! which is either the embedder's own executable re-entered (its `main` calls
//! [`run_if_requested`] first, as `c2-plugins` does) or the `c2-supervisor-shim` binary of this
//! crate. The shim, single-threaded and in its own process:
//!
//! 1. marks itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): every descendant of the runtime
//!    whose parent dies is re-parented to the shim, whatever it does with process groups or
//!    sessions (`setsid`, `setpgid`, double forks), so the tree cannot leave it;
//! 2. asks for a parent-death signal (`PR_SET_PDEATHSIG`), so a host killed by SIGKILL still
//!    wakes it, and checks that the host is still its parent (it may have died before);
//! 3. starts the real program with the stdio, environment and directory it was given, in the
//!    shim's own process group (so the host's group signals reach both);
//! 4. waits for signals, with no event loop: until the program is started, handlers note them
//!    (a handler is reset by the exec, while a blocked mask would be inherited: std's spawn does
//!    not clear it); from then on they are blocked and read from a signalfd, so a stop wakes the
//!    shim only to read what it must act on, and its exit has little to tear down. When the
//!    runtime exits, when the host asks ([`KILL_TREE`]) or when the host dies, it kills the tree
//!    and exits the way the runtime did (same code, same signal), so the host's exit report is
//!    the runtime's.
//!
//! Killing the tree never signals a pid the shim does not pin: it SIGKILLs its own unreaped
//! children only, reaps them, and repeats; the grandchildren of a killed child are re-parented to
//! the shim (it is their subreaper) and are killed in the next round, until the shim has no child
//! left. A pid cannot be reused while it is an unreaped child of the shim, so no unrelated process
//! is ever signalled. The rounds are bounded by [`TREE_KILL_BOUND`].
//!
//! Limits, stated plainly: a descendant that kills the shim itself (any process of the same user
//! can) escapes it; the host then only sweeps the shim's process group, as without a shim. A
//! process stuck in uninterruptible sleep cannot be reaped within the bound. A descendant that
//! uses `ptrace` or a new PID namespace is still a descendant and still killed.

use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// The first argument that turns an executable into a shim; it cannot be a normal CLI argument.
pub const SHIM_FLAG: &str = "--c2-supervisor-shim-v1";

/// The name of the shim binary this crate builds; found beside the host's executable.
pub const SHIM_BIN: &str = "c2-supervisor-shim";

/// An environment variable naming the shim explicitly (an absolute path), before any lookup.
pub const SHIM_ENV: &str = "C2_SUPERVISOR_SHIM";

/// The signal the host sends the shim (to its pid only) to have the tree killed at once.
pub const KILL_TREE: Signal = Signal::SIGUSR1;

/// The parent-death signal the shim asks for; on it, the shim checks whether the host is gone.
const PARENT_DIED: Signal = Signal::SIGUSR2;

/// How long killing the tree may take before the shim exits anyway.
pub const TREE_KILL_BOUND: Duration = Duration::from_secs(5);

/// Exit code of a shim that could not start its program (as a shell's "cannot execute").
pub const EXEC_FAILED: i32 = 127;

static HOOKED: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main`: when this process was started as a shim, it runs the shim and
/// exits (never returns); otherwise it returns at once and records that this executable can be
/// re-entered as a shim, so [`Containment::Shim`](crate::Containment::Shim) uses it.
///
/// Call it before starting threads or an async runtime: the shim must be single-threaded.
pub fn run_if_requested() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() == Some(OsStr::new(SHIM_FLAG)) {
        let code = run(args.collect());
        std::process::exit(code);
    }
    HOOKED.store(true, Ordering::Relaxed);
}

/// Whether this executable called [`run_if_requested`] and so can serve as its own shim.
pub(crate) fn hooked() -> bool {
    HOOKED.load(Ordering::Relaxed)
}

/// The arguments the host passes after [`SHIM_FLAG`]: its pid, the resolved program, the
/// program's `argv[0]`, then its arguments.
pub(crate) fn shim_args(
    host: u32,
    program: &OsStr,
    arg0: &OsStr,
    args: &[OsString],
) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len() + 4);
    out.push(OsString::from(SHIM_FLAG));
    out.push(OsString::from(host.to_string()));
    out.push(program.to_owned());
    out.push(arg0.to_owned());
    out.extend(args.iter().cloned());
    out
}

#[expect(
    clippy::print_stderr,
    reason = "the shim's stderr is the runtime's, drained by the host into its log and error tails"
)]
fn say(message: &str) {
    eprintln!("c2-supervisor-shim: {message}");
}

/// The shim itself; returns the exit code when it does not end by re-raising a signal.
fn run(args: Vec<OsString>) -> i32 {
    let mut args = args.into_iter();
    let host = args.next().and_then(|pid| {
        std::str::from_utf8(pid.as_bytes())
            .ok()?
            .parse::<i32>()
            .ok()
    });
    let next = args.next();
    let source = match (host, next) {
        (Some(_), Some(flag)) if flag == OsStr::new(crate::warm::WARM_FLAG) => Source::Warm,
        (Some(_), Some(program)) => match args.next() {
            Some(arg0) => Source::Given(crate::warm::Decoded {
                program,
                arg0,
                cwd: std::path::PathBuf::new(),
                args: args.collect(),
                env: Vec::new(),
            }),
            None => Source::Missing,
        },
        _ => Source::Missing,
    };
    let (Some(host), false) = (host, matches!(source, Source::Missing)) else {
        say(
            "started without its arguments (host pid, program, argv[0]); it is started by c2-supervisor only",
        );
        return 2;
    };
    let host = Pid::from_raw(host);
    match supervise(host, source) {
        Ok(status) => exit_like(status),
        Err(message) => {
            say(&message);
            EXEC_FAILED
        }
    }
}

/// Where the program to run comes from.
enum Source {
    /// On the command line (a cold start; directory and environment are the shim's own).
    Given(crate::warm::Decoded),
    /// In a frame on stdin (a pre-started shim).
    Warm,
    Missing,
}

/// Reads exactly `buf.len()` bytes from stdin, unbuffered.
fn read_stdin(buf: &mut [u8]) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut done = 0;
    while done < buf.len() {
        match nix::unistd::read(&stdin, &mut buf[done..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// The signals the shim takes: the runtime ended (SIGCHLD), the host stops it (SIGTERM,
/// [`KILL_TREE`]), the host may be gone ([`PARENT_DIED`]), and the ones the shim must outlive
/// because they are the program's business (SIGINT, SIGHUP, SIGQUIT, sent to the whole group by
/// a terminal).
const TAKEN: [Signal; 7] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    KILL_TREE,
    PARENT_DIED,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// How the shim hears its signals: until the program is started, through handlers that note
/// them (a handler is reset to the default action by the exec, while a blocked mask would be
/// inherited by the program: std's spawn does not clear it); from then on, blocked and read
/// from a signalfd, so the shim runs no event loop and a signal wakes it only to be read.
struct Signals {
    /// Noted by a handler, per signal of [`TAKEN`].
    noted: [Arc<AtomicBool>; TAKEN.len()],
    /// Once the program is started.
    fd: Option<SignalFd>,
}

impl Signals {
    /// Installs the handlers; from here on no signal of [`TAKEN`] ends the shim.
    fn listen() -> Result<Self, String> {
        let noted: [Arc<AtomicBool>; TAKEN.len()] = Default::default();
        for (signal, flag) in TAKEN.iter().zip(&noted) {
            signal_hook::flag::register(*signal as i32, Arc::clone(flag))
                .map_err(|error| format!("cannot listen for signals: {error}"))?;
        }
        Ok(Self { noted, fd: None })
    }

    /// Called once the program is started: blocks the signals and opens the signalfd.
    fn block(&mut self) -> Result<(), String> {
        let mut set = SigSet::empty();
        for signal in TAKEN {
            set.add(signal);
        }
        set.thread_block()
            .map_err(|error| format!("cannot block its signals: {error}"))?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|error| format!("cannot listen for signals: {error}"))?;
        self.fd = Some(fd);
        Ok(())
    }

    /// The signals the handlers noted (before the block), each once; clears the notes.
    fn noted(&self) -> impl Iterator<Item = Signal> + '_ {
        TAKEN
            .into_iter()
            .zip(&self.noted)
            .filter(|(_, flag)| flag.swap(false, Ordering::AcqRel))
            .map(|(signal, _)| signal)
    }

    /// The next signal, waiting for it; `None` when the signalfd failed.
    fn next(&self) -> Option<Signal> {
        let fd = self.fd.as_ref()?;
        loop {
            match fd.read_signal() {
                Ok(Some(info)) => {
                    if let Ok(signal) = Signal::try_from(info.ssi_signo as i32) {
                        return Some(signal);
                    }
                }
                Ok(None) => {
                    let mut ready = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
                    match poll(&mut ready, PollTimeout::NONE) {
                        Ok(_) | Err(Errno::EINTR) => {}
                        Err(_) => return None,
                    }
                }
                Err(Errno::EINTR) => {}
                Err(_) => return None,
            }
        }
    }
}

/// Why the shim stops waiting for the runtime.
enum Wake {
    /// Check for ended children and wait again.
    Again,
    /// Kill the tree now.
    Kill,
}

/// What one signal asks of the shim. `early`: a handler noted it before the block, perhaps
/// before the program existed.
fn act(signal: Signal, early: bool, runtime: Pid, host: Pid) -> Wake {
    match signal {
        // A SIGTERM to the group that came before the program existed missed it: pass it on.
        Signal::SIGTERM if early => terminate(runtime),
        Signal::SIGTERM => forward_term(runtime),
        signal if signal == KILL_TREE => return Wake::Kill,
        // A parent-death signal also comes when the host *thread* that spawned the shim ends
        // while the host lives on: only a changed parent means the host is gone.
        signal if signal == PARENT_DIED && nix::unistd::getppid() != host => return Wake::Kill,
        // SIGCHLD is handled by the reap that follows every wake; SIGINT, SIGHUP and SIGQUIT
        // are the program's business.
        _ => {}
    }
    Wake::Again
}

/// Arms the guards, starts the program and waits for a reason to kill its tree; returns the
/// program's status (`None` when it was lost).
fn supervise(host: Pid, source: Source) -> Result<Option<ExitStatus>, String> {
    // Listening before anything can arrive.
    let mut signals = Signals::listen()?;
    // A shim that cannot hold the tree must not run the program unguarded.
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|error| format!("cannot become a child subreaper: {error}"))?;
    nix::sys::prctl::set_pdeathsig(PARENT_DIED)
        .map_err(|error| format!("cannot ask for a parent-death signal: {error}"))?;
    // No core file of the shim when it re-raises a crash signal of the runtime.
    let _ = nix::sys::prctl::set_dumpable(false);
    if nix::unistd::getppid() != host {
        return Err("the host died before the program started; starting nothing".to_owned());
    }
    let spec = match source {
        Source::Given(spec) => spec,
        // An idle shim waits here; its host gone, stdin reaches EOF and it ends quietly.
        Source::Warm => match crate::warm::decode(read_stdin) {
            Ok(spec) => spec,
            Err(_) if nix::unistd::getppid() != host => return Ok(None),
            Err(message) => return Err(message),
        },
        Source::Missing => return Err("no program to start".to_owned()),
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "the shim is c2-supervisor's own process; it starts the runtime it supervises"
    )]
    let mut command = std::process::Command::new(&spec.program);
    command
        .arg0(&spec.arg0)
        .args(&spec.args)
        .envs(spec.env.iter().map(|(n, v)| (n, v)));
    if !spec.cwd.as_os_str().is_empty() {
        command.current_dir(&spec.cwd);
    }
    let started = spawn_retrying(&mut command).map_err(|error| {
        format!(
            "cannot start `{}`: {error}; check that it is an executable the system can run",
            spec.program.to_string_lossy()
        )
    })?;
    let runtime = Pid::from_raw(i32::try_from(started.id()).unwrap_or(i32::MAX));
    // Never waited through std: the shim reaps every child with waitpid(-1).
    drop(started);
    // The program's start is what the host waits for; what the shim still has to set up is
    // not. On a busy or single CPU, let the program run first (a no-op when nothing else is
    // runnable here); a signal that comes meanwhile is noted by its handler.
    let _ = nix::sched::sched_yield();
    let blocked = signals.block();
    // The shim lets go of the program's stdin and stdout: the host must see stdout EOF when
    // the program closes it, exactly as without a shim. Its stderr stays for its own messages.
    #[expect(
        clippy::disallowed_methods,
        reason = "the shim points its own stdio at /dev/null"
    )]
    let null = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
        .and_then(|null| {
            nix::unistd::dup2_stdin(&null)?;
            nix::unistd::dup2_stdout(&null)?;
            Ok(())
        });
    if let Err(error) = null {
        say(&format!(
            "cannot let go of stdin and stdout ({error}); killing the program"
        ));
        kill_tree(runtime, &mut None);
        return Err("the program was not started".to_owned());
    }
    if let Err(message) = blocked {
        say(&format!("{message}; killing the program"));
        kill_tree(runtime, &mut None);
        return Err("the program was not started".to_owned());
    }
    // The shim keeps no hold on the bundle or project directory (and is not mistaken for a
    // process working in it).
    let _ = std::env::set_current_dir("/");
    let mut status = None;
    // What the handlers noted came before the block, maybe before the program existed.
    let mut wake = Wake::Again;
    for signal in signals.noted() {
        if matches!(act(signal, true, runtime, host), Wake::Kill) {
            wake = Wake::Kill;
        }
    }
    while matches!(wake, Wake::Again) {
        // A SIGCHLD read with an earlier signal, or noted before the block, is not lost: reap
        // before waiting.
        reap_ready(runtime, &mut status);
        if status.is_some() {
            break;
        }
        wake = match signals.next() {
            Some(signal) => act(signal, false, runtime, host),
            // The signalfd failed: the shim could no longer hear the host ask, nor the host
            // die, so it does not keep the program.
            None => {
                say("lost its signals; killing the program");
                Wake::Kill
            }
        };
    }
    kill_tree(runtime, &mut status);
    Ok(status)
}

/// Spawns, retrying briefly on "text file busy" (an executable written moments ago).
fn spawn_retrying(command: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut backoff = Duration::from_millis(2);
    let mut retries = 0;
    loop {
        match command.spawn() {
            Err(error) if error.raw_os_error() == Some(Errno::ETXTBSY as i32) && retries < 9 => {
                retries += 1;
                std::thread::sleep(backoff);
                backoff *= 2;
            }
            other => return other,
        }
    }
}

/// The runtime may have left the shim's process group, so the group SIGTERM missed it; send it
/// its own (the runtime is an unreaped child, so its pid is pinned).
fn forward_term(runtime: Pid) {
    let ours = nix::unistd::getpgid(None).ok();
    if nix::unistd::getpgid(Some(runtime)).ok() != ours {
        terminate(runtime);
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the shim signals only its own unreaped child"
)]
fn terminate(runtime: Pid) {
    let _ = nix::sys::signal::kill(runtime, Signal::SIGTERM);
}

/// Reaps every child that has ended; records the runtime's status.
fn reap_ready(runtime: Pid, status: &mut Option<ExitStatus>) {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(ended) => note(runtime, ended, status),
        }
    }
}

fn note(runtime: Pid, ended: WaitStatus, status: &mut Option<ExitStatus>) {
    match ended {
        WaitStatus::Exited(pid, code) if pid == runtime => {
            *status = Some(ExitStatus::from_raw((code & 0xff) << 8));
        }
        WaitStatus::Signaled(pid, signal, _) if pid == runtime => {
            *status = Some(ExitStatus::from_raw(signal as i32));
        }
        _ => {}
    }
}

/// SIGKILLs every child, reaps it, and repeats with the grandchildren re-parented to the shim,
/// until no child is left or [`TREE_KILL_BOUND`] passes.
#[expect(
    clippy::disallowed_methods,
    reason = "the shim signals only its own unreaped children, whose pids are pinned"
)]
fn kill_tree(runtime: Pid, status: &mut Option<ExitStatus>) {
    let start = Instant::now();
    while start.elapsed() < TREE_KILL_BOUND {
        // The common stop: the runtime is reaped and left nothing behind. No child at all
        // (waitpid is the authority, re-parented orphans included) ends the kill without
        // reading the children list.
        match waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
            Err(Errno::ECHILD) => return,
            Ok(WaitStatus::StillAlive) | Err(_) => {}
            Ok(ended) => {
                note(runtime, ended, status);
                continue;
            }
        }
        let children = own_children();
        for child in &children {
            let _ = nix::sys::signal::kill(*child, Signal::SIGKILL);
        }
        if children.is_empty() {
            // The children list can lag a re-parenting; waitpid is the authority.
            match waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
                Err(Errno::ECHILD) => return,
                Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(1)),
                Ok(ended) => note(runtime, ended, status),
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
            continue;
        }
        // Block for the first killed child, then take whatever else has ended.
        match waitpid(None, Some(WaitPidFlag::__WALL)) {
            Ok(ended) => note(runtime, ended, status),
            Err(Errno::ECHILD) => return,
            Err(_) => {}
        }
        reap_ready(runtime, status);
    }
    say("the runtime's process tree did not die within the bound; exiting anyway");
}

/// The shim's children: it has one thread, the one that spawned them and the one orphans are
/// re-parented to.
fn own_children() -> Vec<Pid> {
    children_of(std::process::id())
}

/// The children of single-threaded process `me`, oldest first.
pub(crate) fn children_of(me: u32) -> Vec<Pid> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the supervisor reads /proc for the processes it supervises"
    )]
    let listed = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children"));
    match listed {
        Ok(text) => text
            .split_whitespace()
            .filter_map(|pid| pid.parse().ok())
            .map(Pid::from_raw)
            .collect(),
        Err(_) => children_by_scan(me),
    }
}

/// Without `CONFIG_PROC_CHILDREN`: every process whose parent is the shim.
fn children_by_scan(me: u32) -> Vec<Pid> {
    #[expect(
        clippy::disallowed_methods,
        reason = "listing /proc for the shim's children is not bundle collection"
    )]
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .map(Pid::from_raw)
        .collect()
}

/// The parent pid, from the fourth field of /proc/<pid>/stat.
pub(crate) fn parent_of(pid: i32) -> Option<u32> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the supervisor reads /proc for the processes it supervises"
    )]
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Ends the shim the way the runtime ended: its exit code, or death by its signal. A signal the
/// shim listens for is put back to its default action first, then raised, in this process: no
/// exec, so a stop costs no more than the program's own exit.
fn exit_like(status: Option<ExitStatus>) -> i32 {
    let Some(status) = status else {
        // The runtime's status was lost (the bound passed): report a kill.
        return 128 + Signal::SIGKILL as i32;
    };
    if let Some(code) = status.code() {
        return code;
    }
    let number = status.signal().unwrap_or(Signal::SIGKILL as i32);
    // Returns only for a signal whose default action does not end a process (a stop, or one
    // ignored by default), which cannot have ended the program either.
    if let Err(error) = signal_hook::low_level::emulate_default_handler(number) {
        say(&format!("cannot re-raise signal {number}: {error}"));
    }
    // Still here: the shell convention stands in for the signal.
    128 + number
}

/// A shim path as the host sees it now: a relative one is made absolute against the host's
/// working directory, where it was found, because the shim is started in the program's
/// directory (a cold start) or in `/` (a warm one), where the same relative path names nothing.
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The shim to start for `containment`: `Ok(None)` for group-only containment, `Err` with the
/// paths tried when none exists.
pub(crate) fn locate(
    containment: &crate::Containment,
) -> Result<Option<std::path::PathBuf>, Vec<std::path::PathBuf>> {
    use std::path::PathBuf;
    match containment {
        crate::Containment::Group => Ok(None),
        crate::Containment::ShimAt(path) if path.is_file() => Ok(Some(absolute(path))),
        crate::Containment::ShimAt(path) => Err(vec![path.clone()]),
        crate::Containment::Shim => {
            let mut looked = Vec::new();
            if let Some(explicit) = std::env::var_os(SHIM_ENV) {
                let path = PathBuf::from(explicit);
                return if path.is_file() {
                    Ok(Some(absolute(&path)))
                } else {
                    Err(vec![path])
                };
            }
            let Ok(exe) = std::env::current_exe() else {
                return Err(looked);
            };
            if hooked() {
                return Ok(Some(exe));
            }
            let mut dir = exe.parent().map(PathBuf::from).unwrap_or_default();
            let beside = dir.join(SHIM_BIN);
            if beside.is_file() {
                return Ok(Some(beside));
            }
            looked.push(beside);
            if dir.file_name().is_some_and(|name| name == "deps") {
                dir.pop();
                let above = dir.join(SHIM_BIN);
                if above.is_file() {
                    return Ok(Some(above));
                }
                looked.push(above);
            }
            Err(looked)
        }
    }
}
