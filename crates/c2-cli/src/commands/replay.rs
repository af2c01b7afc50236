//! `replay FILE`: plays one side of a recording (`--record`) against a live other side and
//! reports the first frame that differs.
//!
//! With `--against-plugin BUNDLE-DIR` it is the host: it starts the bundle's runtime, sends the
//! recorded host frames and compares what the plugin answers with the recorded plugin frames.
//! Without it, it is the plugin, on stdin and stdout (a bundle whose runtime command runs
//! `c2-plugins replay FILE`): it compares what the host sends with the recorded host frames and
//! answers with the recorded plugin frames. Either way frames are taken in recorded order; a
//! request's id from the live side is remapped in the answers sent to it, so only ids the
//! replaying side chose itself must match. Values at `--ignore` JSON Pointers (and a host's
//! `initialize` data directory) are not compared.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use c2_protocol::Direction;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::commands::record::{FORMAT, VERSION};
use crate::output::{Failure, Out};

/// The longest frame read from the live side.
const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;
/// Pointers never compared: what differs between any two runs of a host.
const ALWAYS_IGNORED: [&str; 2] = ["/params/dataDir", "/params/projectPath"];

/// `replay FILE [--against-plugin BUNDLE-DIR] [--ignore POINTER]...`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A recording written by --record
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Be the host: run this bundle's runtime and send it the recorded host frames
    #[arg(long, value_name = "BUNDLE-DIR")]
    against_plugin: Option<PathBuf>,
    /// A JSON Pointer into frames whose value is not compared (repeatable)
    #[arg(long, value_name = "POINTER")]
    ignore: Vec<String>,
}

/// One frame of a recording.
#[derive(Debug, Clone)]
struct Recorded {
    dir: Direction,
    /// The frame; a `raw` line (not JSON) as a string.
    frame: Value,
    /// Compare only the members the recorded frame has (`"match": "subset"`).
    subset: bool,
}

/// Where the live side first differed from the recording.
#[derive(Debug)]
struct Divergence {
    /// The frame's index among the recording's frames (0-based).
    index: usize,
    dir: Direction,
    /// JSON Pointer of the first differing value (empty: the whole frame).
    path: String,
    expected: Value,
    actual: Value,
}

/// Runs `replay` on its own runtime (it opens no plugin store).
pub(crate) fn run(out: &mut Out, args: &Args, wait: Duration) -> Result<ExitCode, Failure> {
    let frames = read_recording(&args.file)?;
    let mut ignore: Vec<String> = ALWAYS_IGNORED.iter().map(|p| (*p).to_owned()).collect();
    ignore.extend(args.ignore.iter().cloned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            Failure::environment("io", format!("cannot start the async runtime: {error}"))
        })?;
    let outcome = runtime.block_on(async {
        match &args.against_plugin {
            Some(dir) => against_plugin(dir, &frames, &ignore, wait).await,
            None => {
                let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
                Ok(play(
                    &frames,
                    Direction::PluginToHost,
                    stdin,
                    stdout,
                    &ignore,
                    wait,
                )
                .await)
            }
        }
    });
    runtime.shutdown_background();
    let played = frames.len();
    match outcome? {
        Ok(()) => {
            let human = format!("replayed {played} frame(s): no divergence");
            if args.against_plugin.is_none() {
                out.note(&human);
                return Ok(ExitCode::SUCCESS);
            }
            Ok(out.success(json!({"frames": played, "divergence": null}), &human))
        }
        Err(divergence) => {
            let d = &divergence;
            let message = format!(
                "frame {} ({}) differs at {}: expected {}, got {}",
                d.index,
                d.dir.as_str(),
                if d.path.is_empty() {
                    "the frame"
                } else {
                    &d.path
                },
                d.expected,
                d.actual
            );
            Err(Failure::operation("replay_diverged", message).with_detail(
                "divergence",
                json!({"index": d.index, "dir": d.dir.as_str(), "path": d.path, "expected": d.expected, "actual": d.actual}),
            ))
        }
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the recording is the user's own file, named on the command line"
)]
fn read_text(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|error| {
        Failure::environment(
            "io",
            format!("cannot read the recording {}: {error}", path.display()),
        )
    })
}

fn read_recording(path: &Path) -> Result<Vec<Recorded>, Failure> {
    let text = read_text(path)?;
    let bad = |line: usize, why: &str| {
        Failure::operation(
            "invalid_recording",
            format!("{} line {line}: {why}", path.display()),
        )
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header: Value = match lines.next() {
        Some((_, line)) => serde_json::from_str(line).map_err(|e| bad(1, &e.to_string()))?,
        None => return Err(bad(1, "the file is empty")),
    };
    if header["format"] != FORMAT || header["version"] != VERSION {
        return Err(bad(1, &format!("not a {FORMAT} version {VERSION} header")));
    }
    let mut frames = Vec::new();
    for (number, line) in lines {
        let entry: Value =
            serde_json::from_str(line).map_err(|e| bad(number + 1, &e.to_string()))?;
        let Some(frame) = entry.get("frame").or_else(|| entry.get("raw")) else {
            continue;
        };
        let dir = entry["dir"]
            .as_str()
            .and_then(Direction::parse)
            .ok_or_else(|| bad(number + 1, "`dir` is neither host->plugin nor plugin->host"))?;
        frames.push(Recorded {
            dir,
            frame: frame.clone(),
            subset: entry["match"] == "subset",
        });
    }
    Ok(frames)
}

/// Starts the bundle's runtime as activation does and plays the host's side against it.
async fn against_plugin(
    dir: &Path,
    frames: &[Recorded],
    ignore: &[String],
    wait: Duration,
) -> Result<Result<(), Divergence>, Failure> {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let manifest: Value = serde_json::from_str(&read_text(&dir.join("plugin.json"))?)
        .map_err(|error| Failure::operation("invalid_bundle", format!("plugin.json: {error}")))?;
    let runtime = &manifest["extensions"]["dev.codetwo"]["runtime"];
    let Some(command) = runtime["command"].as_str() else {
        return Err(Failure::operation(
            "invalid_bundle",
            format!("{} declares no runtime to replay against", dir.display()),
        ));
    };
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let program =
        c2_supervisor::resolve_command(&dir, command, std::env::var_os("PATH").as_deref())
            .map_err(|error| Failure::operation("activation_failed", error.to_string()))?;
    let mut spec = c2_supervisor::ProcessSpec::new(program, &dir)
        .args(strings(&runtime["args"]))
        .label("replay");
    for (name, value) in runtime["env"].as_object().into_iter().flatten() {
        spec = spec.env(name, value.as_str().unwrap_or_default());
    }
    let spawned = c2_supervisor::spawn(&spec, &c2_supervisor::SupervisorOptions::default())
        .map_err(|error| Failure::operation("activation_failed", error.to_string()))?;
    let outcome = play(
        frames,
        Direction::HostToPlugin,
        spawned.stdout,
        spawned.stdin,
        ignore,
        wait,
    )
    .await;
    spawned.process.stop().await;
    Ok(outcome)
}

/// Plays the frames of side `ours` to `writer` and compares the other side's, read from
/// `reader`, in recorded order. Once the recording is played, the other side must send
/// nothing more before it closes (or `wait` passes).
async fn play<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    frames: &[Recorded],
    ours: Direction,
    reader: R,
    mut writer: W,
    ignore: &[String],
    wait: Duration,
) -> Result<(), Divergence> {
    let mut lines = Lines::new(reader);
    let mut ids: HashMap<String, Value> = HashMap::new();
    for (index, recorded) in frames.iter().enumerate() {
        let diverged = |path: String, expected: Value, actual: Value| Divergence {
            index,
            dir: recorded.dir,
            path,
            expected,
            actual,
        };
        if recorded.dir == ours {
            let mut frame = recorded.frame.clone();
            let is_answer = frame.get("method").is_none();
            if let (true, Some(id)) = (is_answer, frame.get_mut("id"))
                && let Some(live) = ids.get(&id.to_string())
            {
                *id = live.clone();
            }
            let mut line = match frame {
                Value::String(raw) => raw,
                frame => frame.to_string(),
            };
            line.push('\n');
            let written = writer.write_all(line.as_bytes()).await;
            if written.is_err() || writer.flush().await.is_err() {
                return Err(diverged(
                    String::new(),
                    recorded.frame.clone(),
                    json!("the other side closed its input"),
                ));
            }
            continue;
        }
        let actual = match tokio::time::timeout(wait, lines.next()).await {
            Ok(Some(actual)) => actual,
            Ok(None) => {
                return Err(diverged(
                    String::new(),
                    recorded.frame.clone(),
                    json!("the other side closed"),
                ));
            }
            Err(_) => {
                return Err(diverged(
                    String::new(),
                    recorded.frame.clone(),
                    json!(format!("nothing within {wait:?}")),
                ));
            }
        };
        let mut expected = recorded.frame.clone();
        let mut compared = if recorded.subset {
            members_of(&expected, &actual)
        } else {
            actual.clone()
        };
        if expected.get("method").is_some() {
            // A request of the live side: its id is its own; answers to it are remapped.
            if let (Some(recorded_id), Some(live_id)) = (expected.get("id"), actual.get("id")) {
                ids.insert(recorded_id.to_string(), live_id.clone());
                if let (Some(e), Some(c)) = (expected.as_object_mut(), compared.as_object_mut()) {
                    e.remove("id");
                    c.remove("id");
                }
            }
        }
        for pointer in ignore {
            if let (Some(e), Some(c)) =
                (expected.pointer_mut(pointer), compared.pointer_mut(pointer))
            {
                *e = Value::Null;
                *c = Value::Null;
            }
        }
        if let Some(path) = first_difference(&expected, &compared, String::new()) {
            let at = |v: &Value| v.pointer(&path).cloned().unwrap_or(Value::Null);
            return Err(diverged(path.clone(), at(&expected), at(&compared)));
        }
    }
    drop(writer);
    match tokio::time::timeout(wait, lines.next()).await {
        Ok(Some(extra)) => Err(Divergence {
            index: frames.len(),
            dir: match ours {
                Direction::HostToPlugin => Direction::PluginToHost,
                _ => Direction::HostToPlugin,
            },
            path: String::new(),
            expected: json!("no further frame"),
            actual: extra,
        }),
        _ => Ok(()),
    }
}

/// `actual` cut down to the members `expected` has, at every depth of objects.
fn members_of(expected: &Value, actual: &Value) -> Value {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => Value::Object(
            a.iter()
                .filter_map(|(key, value)| Some((key.clone(), members_of(e.get(key)?, value))))
                .collect(),
        ),
        _ => actual.clone(),
    }
}

/// The JSON Pointer of the first place `actual` differs from `expected`, if any.
fn first_difference(expected: &Value, actual: &Value, path: String) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            keys.into_iter().find_map(|key| {
                let child = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (e.get(key), a.get(key)) {
                    (Some(x), Some(y)) => first_difference(x, y, child),
                    _ => Some(child),
                }
            })
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{path}/{i}"))),
        _ if expected == actual => None,
        _ => Some(path),
    }
}

/// JSON lines read from the live side, each at most [`MAX_FRAME_BYTES`]; a line that is not
/// JSON comes back as a string, so it is reported rather than skipped.
struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    done: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(reader: R) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            done: false,
        }
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(at) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=at).collect();
                let text = String::from_utf8_lossy(&line);
                let text = text.trim();
                if text.is_empty() {
                    continue;
                }
                return Some(
                    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
                );
            }
            if self.done || self.buf.len() > MAX_FRAME_BYTES {
                return None;
            }
            let mut chunk = [0u8; 8192];
            match self.reader.read(&mut chunk).await {
                Ok(0) | Err(_) => self.done = true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}
