//! `--record FILE` (on `run`, `invoke`, `serve` and `lsp`): every frame of every plugin
//! connection the command's host opens, as NDJSON. The first line is a header (format,
//! version, what was recorded, the wall clock at start, the redacted keys); each further line
//! is `{"t":MS,"dir":"host->plugin"|"plugin->host","frame":{...}}`, `t` in milliseconds since
//! the start on a monotonic clock. Values under the redacted keys (any depth, any case) are
//! replaced by `"[redacted]"`.
//!
//! The tap hands frames to a writer thread through a bounded queue and never waits: a frame
//! that finds the queue full is counted, not recorded. The file stops growing at
//! [`RECORD_MAX_BYTES`] with a note line. The format is docs/operability.md's; `replay` reads it.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use c2_protocol::{Direction, FrameObserver, FrameTap};
use serde_json::{Value, json};

use crate::output::Failure;

/// The recording format's name, in its header line.
pub(crate) const FORMAT: &str = "c2-plugins-recording";
/// The recording format's version.
pub(crate) const VERSION: u64 = 1;
/// The most bytes a recording grows to; past it recording stops with a note.
pub(crate) const RECORD_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Frames waiting for the writer thread; more are counted as dropped.
const QUEUE: usize = 4096;
/// Keys whose values are always redacted.
pub(crate) const DEFAULT_REDACT: [&str; 6] = [
    "token",
    "password",
    "secret",
    "authorization",
    "apiKey",
    "api_key",
];

/// `--record FILE` and `--redact KEY`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RecordArgs {
    /// Record every frame each side sent to FILE, as NDJSON (docs/operability.md)
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// With --record, also redact values under KEY (repeatable; token, password, secret,
    /// authorization and api keys always are)
    #[arg(long, value_name = "KEY", requires = "record")]
    pub(crate) redact: Vec<String>,
}

static TAP: OnceLock<FrameTap> = OnceLock::new();

/// The tap every host this process opens passes its plugin connections through, if recording.
pub(crate) fn tap() -> Option<FrameTap> {
    TAP.get().cloned()
}

enum Entry {
    Frame(u64, Direction, Vec<u8>),
    Oversized(u64, Direction),
    Finish,
}

struct Observer {
    start: Instant,
    queue: SyncSender<Entry>,
    dropped: Arc<AtomicU64>,
}

impl Observer {
    fn send(&self, entry: Entry) {
        if let Err(TrySendError::Full(_)) = self.queue.try_send(entry) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl FrameObserver for Observer {
    fn frame(&self, direction: Direction, line: &[u8]) {
        self.send(Entry::Frame(self.now(), direction, line.to_vec()));
    }

    fn oversized(&self, direction: Direction) {
        self.send(Entry::Oversized(self.now(), direction));
    }
}

/// A recording in progress; dropping it writes what is queued and closes the file.
pub(crate) struct Recording {
    queue: SyncSender<Entry>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording").finish_non_exhaustive()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = self.queue.send(Entry::Finish);
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Starts recording when `args` ask for it: creates the file, writes the header, and installs
/// the tap every host of this process uses.
pub(crate) fn start(command: &crate::Command) -> Result<Option<Recording>, Failure> {
    let Some((command, args)) = args_of(command) else {
        return Ok(None);
    };
    let Some(path) = &args.record else {
        return Ok(None);
    };
    let mut keys: BTreeSet<String> = DEFAULT_REDACT.iter().map(|k| k.to_lowercase()).collect();
    keys.extend(args.redact.iter().map(|k| k.to_lowercase()));
    let mut file = create(path)?;
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let header = json!({
        "format": FORMAT,
        "version": VERSION,
        "command": command,
        "recorded": "every frame of every plugin connection, as each side sent it",
        "startedAtUnixMs": wall,
        "redacted": keys,
        "maxBytes": RECORD_MAX_BYTES,
    });
    let mut line = header.to_string();
    line.push('\n');
    file.write_all(line.as_bytes())
        .map_err(|error| io_failure(path, &error))?;
    let (queue, entries) = std::sync::mpsc::sync_channel(QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let observer = Observer {
        start: Instant::now(),
        queue: queue.clone(),
        dropped: dropped.clone(),
    };
    let _ = TAP.set(FrameTap::new(Arc::new(observer)));
    let written = line.len() as u64;
    let writer = std::thread::Builder::new()
        .name("c2-record".to_owned())
        .spawn(move || write_loop(file, written, &entries, &keys, &dropped))
        .map_err(|error| io_failure(path, &error))?;
    Ok(Some(Recording {
        queue,
        writer: Some(writer),
    }))
}

#[expect(
    clippy::disallowed_methods,
    reason = "the recording is the user's own file, named on the command line"
)]
fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, Failure> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|error| io_failure(path, &error))
}

fn io_failure(path: &Path, error: &std::io::Error) -> Failure {
    Failure::environment(
        "io",
        format!("cannot write the recording {}: {error}", path.display()),
    )
}

/// Writes entries until told to finish; stops recording (with a note) at the size limit.
fn write_loop(
    mut file: std::io::BufWriter<std::fs::File>,
    mut written: u64,
    entries: &Receiver<Entry>,
    keys: &BTreeSet<String>,
    dropped: &AtomicU64,
) {
    let mut full = false;
    let mut last = 0;
    while let Ok(entry) = entries.recv() {
        let line = match entry {
            Entry::Finish => break,
            _ if full => continue,
            Entry::Frame(t, direction, bytes) => {
                last = t;
                let dir = direction.as_str();
                // `t` and `dir` first, as people read the lines; a line that is not JSON is `raw`.
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(mut frame) => {
                        redact(&mut frame, keys);
                        Value::String(format!(r#"{{"t":{t},"dir":"{dir}","frame":{frame}}}"#))
                    }
                    Err(_) => {
                        let raw = Value::String(String::from_utf8_lossy(&bytes).into_owned());
                        Value::String(format!(r#"{{"t":{t},"dir":"{dir}","raw":{raw}}}"#))
                    }
                }
            }
            Entry::Oversized(t, direction) => {
                json!({"t": t, "dir": direction.as_str(), "note": "a frame over the frame limit went by unrecorded"})
            }
        };
        let mut text = match line {
            Value::String(text) => text,
            other => other.to_string(),
        };
        text.push('\n');
        if written + text.len() as u64 > RECORD_MAX_BYTES {
            full = true;
            let note = json!({"t": last, "note": format!("recording stopped: the size limit of {RECORD_MAX_BYTES} bytes was reached")});
            text = note.to_string() + "\n";
        }
        written += text.len() as u64;
        if file.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
    let dropped = dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        let note = json!({"t": last, "note": format!("{dropped} frame(s) not recorded: the recorder fell behind")});
        let _ = file.write_all((note.to_string() + "\n").as_bytes());
    }
    let _ = file.flush();
}

/// Replaces the value under every key in `keys` (compared in lower case), at any depth.
pub(crate) fn redact(value: &mut Value, keys: &BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if keys.contains(&key.to_lowercase()) {
                    *inner = Value::String("[redacted]".to_owned());
                } else {
                    redact(inner, keys);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact(item, keys)),
        _ => {}
    }
}

/// The `--record` options of a command that takes them, with its name for the header.
fn args_of(command: &crate::Command) -> Option<(&'static str, &RecordArgs)> {
    use crate::Command;
    match command {
        Command::Run { call, .. } => Some(("run", &call.record)),
        Command::Invoke { call, .. } => Some(("invoke", &call.record)),
        Command::Serve { record, .. } => Some(("serve", record)),
        Command::Lsp { record, .. } => Some(("lsp", record)),
        _ => None,
    }
}
