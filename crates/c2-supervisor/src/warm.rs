//! One pre-started shim per host process, so that an activation does not wait for the shim's
//! own start (an exec and its event loop, about a millisecond).
//!
//! A warm shim is started in the background with `--warm` once a spawn's start-up is over
//! (`Process::handshake_done`, or its stop), so that its exec does not compete with the
//! program's own start: it arms itself exactly like a cold one (subreaper, parent-death
//! signal, the host-is-my-parent check) and then waits for its spec on stdin: one frame, read
//! unbuffered so not a byte of the program's own stdin is consumed. The host writes the frame
//! into the pipe that becomes the program's stdin, and from then on the shim is an ordinary one.
//! The program's environment is the host's as it was when the shim started, plus the spec's;
//! everything else (arguments, `argv[0]`, working directory, the process group) is as cold.
//! An idle shim whose host exits sees stdin EOF (and its parent-death signal) and exits.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::error::Error;
use crate::process::Prepared;
use crate::spec::{ProcessSpec, SupervisorOptions};

/// The shim's second argument when it is started ahead of its spec.
pub(crate) const WARM_FLAG: &str = "--warm";

/// The frame's magic, then a little-endian u32 payload length.
const MAGIC: &[u8; 4] = b"C2W1";

/// Largest spec frame accepted by the shim (arguments and environment of one program).
pub(crate) const FRAME_MAX: usize = 16 * 1024 * 1024;

/// A warm shim handed a spec: the direct child and its pipes, registered with this runtime.
pub(crate) struct Warm {
    pub(crate) child: std::process::Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

struct Idle {
    shim: PathBuf,
    child: std::process::Child,
}

static IDLE: Mutex<Option<Idle>> = Mutex::new(None);
static FILLING: AtomicBool = AtomicBool::new(false);
/// Bumped by [`release`]: a shim whose start began before is discarded, not kept.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Hands `spec` to the idle shim, if there is a live one for this shim path. `Ok(None)`: spawn
/// cold. Either way the next one is started later, by [`refill`].
pub(crate) fn take(
    spec: &ProcessSpec,
    options: &SupervisorOptions,
    prepared: &Prepared,
) -> Result<Option<Warm>, Error> {
    let Some(shim) = prepared.shim.as_ref().filter(|_| options.warm_shim) else {
        return Ok(None);
    };
    let idle = c2_lock::lock(&IDLE).take();
    // The next shim is not started here: on two CPUs its start competes with the program's
    // own. The caller starts it through `Process::handshake_done` (or the stop) once its
    // start-up exchange is over.
    Ok(hand_over(idle, spec, shim, prepared))
}

/// Writes the spec frame to `idle` and takes its pipes; `None` when there is no usable shim.
fn hand_over(
    idle: Option<Idle>,
    spec: &ProcessSpec,
    shim: &PathBuf,
    prepared: &Prepared,
) -> Option<Warm> {
    let mut idle = idle?;
    if idle.shim != *shim || !matches!(idle.child.try_wait(), Ok(None)) {
        discard(idle);
        return None;
    }
    let frame = encode(spec, prepared);
    let pipes = (
        idle.child.stdin.take(),
        idle.child.stdout.take(),
        idle.child.stderr.take(),
    );
    let (Some(mut stdin), Some(stdout), Some(stderr)) = pipes else {
        discard(idle);
        return None;
    };
    if stdin.write_all(&frame).is_err() {
        drop(stdin);
        discard(idle);
        return None;
    }
    let converted = (
        ChildStdin::from_std(stdin),
        ChildStdout::from_std(stdout),
        ChildStderr::from_std(stderr),
    );
    match converted {
        (Ok(stdin), Ok(stdout), Ok(stderr)) => Some(Warm {
            child: idle.child,
            stdin,
            stdout,
            stderr,
        }),
        _ => {
            discard(idle);
            None
        }
    }
}

/// Kills and reaps an idle shim (it is an unreaped child, so its pid is pinned); it has no
/// program yet, so there is no tree to kill.
fn discard(mut idle: Idle) {
    drop(idle.child.stdin.take());
    let _ = idle.child.kill();
    let _ = idle.child.wait();
}

/// Drops the idle shim of this process, if any (for a host that wants no child left, such as
/// a leak check). The next spawn starts cold and starts a new one.
pub fn release() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    let idle = c2_lock::lock(&IDLE).take();
    if let Some(idle) = idle {
        discard(idle);
    }
}

/// Starts one idle shim on a short-lived thread, unless one is idle or being started.
pub(crate) fn refill(shim: PathBuf) {
    if c2_lock::lock(&IDLE).is_some() {
        return;
    }
    if FILLING.swap(true, Ordering::AcqRel) {
        return;
    }
    let generation = GENERATION.load(Ordering::Acquire);
    let started = std::thread::Builder::new()
        .name("c2-shim-warm".to_owned())
        .stack_size(64 * 1024)
        .spawn(move || {
            if let Some(child) = start_idle(&shim) {
                let idle = Idle { shim, child };
                let mut slot = c2_lock::lock(&IDLE);
                // Released meanwhile: the host wants no child left.
                let unwanted = if GENERATION.load(Ordering::Acquire) == generation {
                    slot.replace(idle)
                } else {
                    Some(idle)
                };
                drop(slot);
                if let Some(unwanted) = unwanted {
                    discard(unwanted);
                }
            }
            FILLING.store(false, Ordering::Release);
        });
    if started.is_err() {
        FILLING.store(false, Ordering::Release);
    }
}

fn start_idle(shim: &PathBuf) -> Option<std::process::Child> {
    #[expect(
        clippy::disallowed_methods,
        reason = "c2-supervisor pre-starts the shim it will hand a spec to"
    )]
    let mut command = std::process::Command::new(shim);
    command
        .arg(crate::shim::SHIM_FLAG)
        .arg(std::process::id().to_string())
        .arg(WARM_FLAG)
        .current_dir("/")
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    match command.spawn() {
        Ok(child) => Some(child),
        Err(error) => {
            tracing::debug!(%error, "cannot pre-start a supervisor shim; spawns start cold");
            None
        }
    }
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

/// The spec frame: program, `argv[0]`, working directory, the arguments, the environment.
pub(crate) fn encode(spec: &ProcessSpec, prepared: &Prepared) -> Vec<u8> {
    let mut payload = Vec::new();
    field(&mut payload, prepared.resolved.as_os_str().as_bytes());
    field(&mut payload, spec.program.as_bytes());
    field(&mut payload, spec.cwd.as_os_str().as_bytes());
    count(&mut payload, spec.args.len());
    for arg in &spec.args {
        field(&mut payload, arg.as_bytes());
    }
    count(&mut payload, spec.env.len());
    for (name, value) in &spec.env {
        field(&mut payload, name.as_bytes());
        field(&mut payload, value.as_bytes());
    }
    let mut frame = Vec::with_capacity(payload.len() + 8);
    frame.extend_from_slice(MAGIC);
    count(&mut frame, payload.len());
    frame.extend_from_slice(&payload);
    frame
}

/// A spec as the shim reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub(crate) program: std::ffi::OsString,
    pub(crate) arg0: std::ffi::OsString,
    pub(crate) cwd: PathBuf,
    pub(crate) args: Vec<std::ffi::OsString>,
    pub(crate) env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

/// Reads one frame from `read` (called with exactly the bytes still wanted, so nothing past
/// the frame is consumed).
pub(crate) fn decode(
    mut read: impl FnMut(&mut [u8]) -> std::io::Result<()>,
) -> Result<Decoded, String> {
    let mut head = [0_u8; 8];
    read(&mut head).map_err(|error| format!("no spec on stdin ({error})"))?;
    if &head[..4] != MAGIC {
        return Err("stdin does not start with a spec frame".to_owned());
    }
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if len > FRAME_MAX {
        return Err(format!("the spec frame of {len} bytes is over {FRAME_MAX}"));
    }
    let mut payload = vec![0_u8; len];
    read(&mut payload).map_err(|error| format!("the spec frame is cut short ({error})"))?;
    let mut cursor = Cursor(payload.as_slice());
    let program = cursor.field()?;
    let arg0 = cursor.field()?;
    let cwd = PathBuf::from(cursor.field()?);
    let mut args = Vec::new();
    for _ in 0..cursor.number()? {
        args.push(cursor.field()?);
    }
    let mut env = Vec::new();
    for _ in 0..cursor.number()? {
        let name = cursor.field()?;
        env.push((name, cursor.field()?));
    }
    Ok(Decoded {
        program,
        arg0,
        cwd,
        args,
        env,
    })
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn number(&mut self) -> Result<usize, String> {
        let (n, tail) = self
            .0
            .split_first_chunk::<4>()
            .ok_or("the spec frame is cut short")?;
        self.0 = tail;
        Ok(u32::from_le_bytes(*n) as usize)
    }

    fn field(&mut self) -> Result<std::ffi::OsString, String> {
        let n = self.number()?;
        if self.0.len() < n {
            return Err("the spec frame is cut short".to_owned());
        }
        let (bytes, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(OsStr::from_bytes(bytes).to_owned())
    }
}
