//! Protocol transcripts, `conformance/transcripts/<name>.ndjson`, played against the real host.
//!
//! Each transcript is a recording (the format of `--record`, docs/operability.md) whose header
//! declares, under `conformance`, the bundle's commands, the command a frontend invokes and the
//! host outcome; its frames are the plugin side: host frames to expect, plugin frames to send.
//! The runner writes a bundle whose runtime is `conformance/replay/replay.py` (standard-library
//! Python that plays the script), installs it trusted and enabled into a fresh `PluginHost`,
//! invokes the command, and requires both the outcome and the whole script to have happened.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use c2_host::{HostOptions, InstallOptions, Target};
use serde_json::{Value, json};

use super::list_dir;
use crate::report;

const TRANSCRIPTS: &str = "conformance/transcripts";
const REPLAY: &str = "conformance/replay/replay.py";
/// How long one invocation may take before the transcript fails (handshake timeouts included).
const INVOKE_BOUND: Duration = Duration::from_secs(60);

/// Every transcript file, sorted.
pub(crate) fn files(root: &Path) -> Vec<PathBuf> {
    list_dir(&root.join(TRANSCRIPTS))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ndjson"))
        .collect()
}

/// Plays every transcript; the number played, or every failure.
pub(crate) fn run_all(root: &Path) -> Result<usize> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("start an async runtime for the transcripts")?;
    let mut failures = Vec::new();
    let files = files(root);
    for file in &files {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match runtime.block_on(play(root, file)) {
            Ok(()) => {}
            Err(error) => failures.push(format!("{TRANSCRIPTS}/{name}.ndjson: {error:#}")),
        }
    }
    if files.is_empty() {
        bail!("no transcript under {TRANSCRIPTS}");
    }
    if !failures.is_empty() {
        for failure in &failures {
            report(&format!("conformance: {failure}"));
        }
        bail!("{} transcript(s) failed", failures.len());
    }
    Ok(files.len())
}

/// The expected host outcome of a transcript.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The invocation returns this value.
    Result(Value),
    /// The invocation fails with this `HostError::kind`.
    ErrorKind(String),
}

impl Outcome {
    pub(crate) fn parse(value: &Value) -> Result<Self> {
        if let Some(result) = value.get("result") {
            return Ok(Outcome::Result(result.clone()));
        }
        if let Some(kind) = value.get("error_kind").and_then(Value::as_str) {
            return Ok(Outcome::ErrorKind(kind.to_owned()));
        }
        bail!("`outcome` needs `result` or `error_kind`")
    }
}

pub(crate) async fn play(root: &Path, file: &Path) -> Result<()> {
    let text = std::fs::read_to_string(file)?;
    let header: Value = serde_json::from_str(text.lines().next().unwrap_or_default())
        .context("the first line is not a JSON header")?;
    if header["format"] != "c2-plugins-recording" || header["version"] != 1 {
        bail!("not a c2-plugins-recording version 1 file");
    }
    let transcript = header
        .get("conformance")
        .context("the header has no `conformance` object")?;
    let commands = transcript
        .get("commands")
        .and_then(Value::as_array)
        .context("`commands` must be the manifest's command array")?;
    let invoke = transcript.get("invoke").context("no `invoke`")?;
    let command = invoke
        .get("command")
        .and_then(Value::as_str)
        .context("`invoke.command` must be a string")?;
    let args = invoke.get("args").cloned().unwrap_or_else(|| json!({}));
    let expected = Outcome::parse(transcript.get("outcome").context("no `outcome`")?)?;
    let handshake_timeout = transcript
        .get("handshake_timeout_ms")
        .and_then(Value::as_u64)
        .map(Duration::from_millis);

    let scratch = tempfile::Builder::new()
        .prefix("c2-transcript-")
        .tempdir()?;
    let base = std::fs::canonicalize(scratch.path())?;
    let bundle = base.join("bundle");
    std::fs::create_dir_all(&bundle)?;
    std::fs::copy(root.join(REPLAY), bundle.join("replay.py")).context("copy the replay script")?;
    let report_path = base.join("replay-report.json");
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "transcript",
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": commands,
            "runtime": {
                "command": "python3",
                "args": ["replay.py"],
                "env": {
                    "C2_TRANSCRIPT": file.display().to_string(),
                    "C2_REPLAY_REPORT": report_path.display().to_string(),
                },
            },
        }}
    });
    std::fs::write(
        bundle.join("plugin.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;

    let plugins_dir = base.join("plugins");
    let mut options = HostOptions::new(&plugins_dir);
    options.working_dir = Some(base.clone());
    if let Some(timeout) = handshake_timeout {
        options.handshake_timeout = timeout;
    }
    let host = c2_contributions::open(options)
        .await
        .context("open the host")?;
    let source = bundle.to_str().context("bundle path is not UTF-8")?;
    let installed = host
        .install(source, InstallOptions::trusted_and_enabled())
        .await
        .context("install the transcript's bundle")?;
    // The store layout (docs/decisions.md): `<plugins-dir>/<id>/bundle/`.
    let installed_dir = plugins_dir.join(&installed.record.id).join("bundle");
    let answer = tokio::time::timeout(INVOKE_BOUND, host.invoke(&Target::User, command, args))
        .await
        .with_context(|| format!("`{command}` did not finish within {INVOKE_BOUND:?}"))?;
    host.shutdown().await;

    let got = match answer {
        Ok(value) => Outcome::Result(value),
        Err(error) => Outcome::ErrorKind(error.kind().as_str().to_owned()),
    };
    if got != expected {
        bail!("expected the outcome {expected:?}, the host gave {got:?}");
    }
    let progress: Value = serde_json::from_str(
        &std::fs::read_to_string(&report_path)
            .context("the replay script never started (no progress report)")?,
    )?;
    if let Some(mismatch) = progress.get("mismatch").and_then(Value::as_str) {
        bail!("the host's messages differ from the script: {mismatch}");
    }
    // The protocol: the process starts with the bundle directory as its working directory.
    let cwd = progress.get("cwd").and_then(Value::as_str).unwrap_or("");
    if Path::new(cwd) != installed_dir {
        bail!(
            "the runtime ran in `{cwd}`, not in its installed bundle directory {}",
            installed_dir.display()
        );
    }
    if progress["steps_done"] != progress["total"] {
        bail!(
            "the script stopped after {} of {} steps",
            progress["steps_done"],
            progress["total"]
        );
    }
    Ok(())
}
