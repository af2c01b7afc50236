//! `cargo xtask soak`: the long-running resilience checks that need a process of their own, so
//! that memory and descriptor figures are this host's alone and not those of parallel tests.
//!
//! Two checks, in this order (the stream first, while the peak resident set is still fresh):
//!
//! - the stream: a Python plugin writes 256 MiB to stdout without a newline; the host's peak
//!   resident set (VmHWM) may grow by at most the frame limit plus 16 MiB over its resident set
//!   before the stream, and the activation must fail with `frame_too_large`;
//! - the cycles: 1,000 activations and unloads of a fixture bundle (invoke `fixture.info`, which
//!   spawns and handshakes, then disable, which unloads and awaits the stop, then enable again).
//!   After each unload the plugin's pid must be gone (not alive, not a zombie); at the end no
//!   child or plugin process may be left, the open descriptor count must be back at its warm-up
//!   value, and VmRSS after the last cycle may exceed VmRSS after the warm-up by at most 5% plus
//!   a small absolute slack for allocator noise.
//!
//! It runs the debug profile: the checks are bounds and leaks, not speed, and the debug build
//! shares its artifacts with `cargo test`, so `validate` pays no release compile for it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use c2_host::{HostOptions, InstallOptions, PluginHost, StateChange, Target};
use serde_json::{Value, json};

use crate::{report, root, step};

/// Every bound of the soak; the defaults are the issue's numbers.
#[derive(Debug, Clone)]
struct Limits {
    /// Activation/unload cycles.
    cycles: usize,
    /// Cycles before the memory and descriptor baselines are taken (allocator pools, the
    /// runtime's lazily opened descriptors and the policy store's caches settle by then).
    warm_up: usize,
    /// VmRSS after the last cycle may exceed VmRSS after the warm-up by this percentage...
    rss_growth_percent: u64,
    /// ...plus this many KiB: glibc arenas and tokio's worker caches move by a few hundred KiB
    /// between two samples of an idle process, which 5% of a small debug host does not absorb.
    rss_slack_kib: u64,
    /// How long an unloaded plugin's pid may take to vanish from /proc.
    settle: Duration,
    /// Bytes the stream plugin writes without a newline.
    stream_bytes: u64,
    /// Peak growth allowed on top of the frame limit while the stream runs.
    stream_extra_kib: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cycles: 1_000,
            warm_up: 100,
            rss_growth_percent: 5,
            rss_slack_kib: 1024,
            settle: Duration::from_secs(5),
            stream_bytes: 256 * 1024 * 1024,
            stream_extra_kib: 16 * 1024,
        }
    }
}

/// `cargo xtask soak [--cycles N]`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let mut limits = Limits::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--cycles" => {
                let value = args.next().context("--cycles needs a number")?;
                limits.cycles = value
                    .parse()
                    .with_context(|| format!("--cycles needs a number, got `{value}`"))?;
                limits.warm_up = limits.warm_up.min(limits.cycles / 2);
            }
            other => bail!("unknown soak option `{other}`; the only option is --cycles N"),
        }
    }
    step(
        "cargo build -p c2-testkit --bins",
        &["build", "--locked", "-p", "c2-testkit", "--bins"],
    )?;
    let fixture = target_dir().join("debug/c2-fixture");
    if !fixture.is_file() {
        bail!("no fixture binary at {} after the build", fixture.display());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("could not start the tokio runtime")?;
    let stream = runtime.block_on(stream(&limits))?;
    let cycles = runtime.block_on(cycles(&fixture, &limits))?;
    let mut text = String::from("soak (debug profile)\n");
    stream.describe(&mut text);
    cycles.describe(&mut text, &limits);
    report(text.trim_end());
    let mut violations = stream.violations(&limits);
    violations.extend(cycles.violations(&limits));
    if !violations.is_empty() {
        for violation in &violations {
            report(&format!("soak: {violation}"));
        }
        bail!("{} soak violation(s)", violations.len());
    }
    report("xtask: soak passed");
    Ok(())
}

/// A temporary directory for a soak store, in memory when the machine offers it: each cycle
/// commits two policy revisions with fsync, and the soak measures leaks, not the disk.
fn scratch() -> Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::Builder::new().prefix("c2-soak-").tempdir_in(shm)
    } else {
        tempfile::Builder::new().prefix("c2-soak-").tempdir()
    };
    dir.context("could not create the soak's temporary directory")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// A store in a fresh temporary directory, with the working directory inside it.
async fn open_host(root: &Path) -> Result<PluginHost> {
    let mut options = HostOptions::new(root.join("plugins"));
    options.working_dir = Some(root.to_path_buf());
    c2_contributions::open(options)
        .await
        .context("could not open the soak host")
}

async fn install_ready(host: &PluginHost, bundle: &Path) -> Result<String> {
    let source = bundle.to_str().context("bundle path is not UTF-8")?;
    let outcome = host
        .install(source, InstallOptions::trusted_and_enabled())
        .await
        .with_context(|| format!("could not install {}", bundle.display()))?;
    Ok(outcome.record.id)
}

/// Writes a bundle `name` under `parent` whose runtime is `bin/<file>` with `script` as its
/// content, declaring `commands`, with `env` for the runtime.
fn write_bundle(
    parent: &Path,
    name: &str,
    (file, script): (&str, &str),
    commands: &[&str],
    env: &serde_json::Map<String, Value>,
) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent.join(name);
    std::fs::create_dir_all(dir.join("bin"))?;
    let runtime = dir.join("bin").join(file);
    std::fs::write(&runtime, script)?;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o755))?;
    let declared: Vec<Value> = commands
        .iter()
        .map(|id| json!({"id": id, "title": format!("Soak {id}")}))
        .collect();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": declared,
            "runtime": {"command": format!("bin/{file}"), "env": env, "scopeSupport": ["user"]},
        }}
    });
    std::fs::write(
        dir.join("plugin.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    Ok(dir)
}

/// The stream plugin: writes its budget of `x` bytes in 1 MiB chunks with no newline, noting
/// after each chunk how far it got, then waits for stdin to close. It never answers
/// `initialize`, so only the frame limit can end the activation early.
const STREAM_SCRIPT: &str = r#"#!/usr/bin/env python3
import os, sys
total = int(os.environ["C2_SOAK_STREAM_BYTES"])
progress = os.environ["C2_SOAK_PROGRESS"]
chunk = b"x" * (1 << 20)
out = sys.stdout.buffer
written = 0
try:
    while written < total:
        out.write(chunk[: min(len(chunk), total - written)])
        out.flush()
        written += min(len(chunk), total - written)
        with open(progress, "w") as f:
            f.write(str(written))
except (BrokenPipeError, OSError):
    sys.exit(0)
sys.stdin.buffer.read()
"#;

/// What the stream check saw.
#[derive(Debug)]
struct Stream {
    frame_limit_kib: u64,
    rss_before_kib: u64,
    hwm_after_kib: u64,
    hwm_reset: bool,
    kind: String,
    written: u64,
    elapsed: Duration,
}

async fn stream(limits: &Limits) -> Result<Stream> {
    let dir = scratch()?;
    let root = std::fs::canonicalize(dir.path())?;
    let host = open_host(&root).await?;
    let frame_limit = host.options().peer.frame.max_frame_bytes;
    let progress = root.join("stream-progress");
    let mut env = serde_json::Map::new();
    env.insert(
        "C2_SOAK_STREAM_BYTES".to_owned(),
        json!(limits.stream_bytes.to_string()),
    );
    env.insert(
        "C2_SOAK_PROGRESS".to_owned(),
        json!(progress.to_string_lossy()),
    );
    let bundle = write_bundle(
        &root.join("bundles"),
        "soak-stream",
        ("stream", STREAM_SCRIPT),
        &["stream.go"],
        &env,
    )?;
    install_ready(&host, &bundle).await?;
    // Resetting the peak to the current resident set makes VmHWM measure this check alone; a
    // kernel that refuses keeps the older, higher peak, which only makes the bound stricter.
    let hwm_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let rss_before_kib = status_kib("VmRSS")?;
    let start = Instant::now();
    let outcome = host.invoke(&Target::User, "stream.go", json!({})).await;
    let elapsed = start.elapsed();
    let hwm_after_kib = status_kib("VmHWM")?;
    host.shutdown().await;
    let written = std::fs::read_to_string(&progress)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    let kind = match outcome {
        Ok(value) => format!("success ({value})"),
        Err(error) => error.kind().as_str().to_owned(),
    };
    Ok(Stream {
        frame_limit_kib: u64::try_from(frame_limit / 1024).unwrap_or(u64::MAX),
        rss_before_kib,
        hwm_after_kib,
        hwm_reset,
        kind,
        written,
        elapsed,
    })
}

impl Stream {
    fn growth_kib(&self) -> u64 {
        self.hwm_after_kib.saturating_sub(self.rss_before_kib)
    }

    fn describe(&self, text: &mut String) {
        let _ = writeln!(
            text,
            "  stream: {} of {} MiB written before the stop, ended `{}` in {:.1} s",
            self.written / (1024 * 1024),
            256,
            self.kind,
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            text,
            "  stream: peak grew {} KiB over VmRSS {} KiB (bound: frame limit {} KiB + 16 MiB; peak reset: {})",
            self.growth_kib(),
            self.rss_before_kib,
            self.frame_limit_kib,
            if self.hwm_reset { "yes" } else { "no" }
        );
    }

    fn violations(&self, limits: &Limits) -> Vec<String> {
        let mut found = Vec::new();
        if self.kind != "frame_too_large" {
            found.push(format!(
                "the 256 MiB stream ended `{}`, not `frame_too_large`",
                self.kind
            ));
        }
        let bound = self.frame_limit_kib + limits.stream_extra_kib;
        if self.growth_kib() > bound {
            found.push(format!(
                "the stream grew the host's peak by {} KiB, over the {bound} KiB bound",
                self.growth_kib()
            ));
        }
        found
    }
}

/// What the cycles saw.
#[derive(Debug, Default)]
struct Cycles {
    done: usize,
    leaked: Vec<u32>,
    zombies: Vec<u32>,
    left_after_shutdown: Vec<u32>,
    rss_warm_kib: u64,
    rss_end_kib: u64,
    fds_before: usize,
    fds_warm: usize,
    fds_end: usize,
    elapsed: Duration,
}

async fn cycles(fixture: &Path, limits: &Limits) -> Result<Cycles> {
    let dir = scratch()?;
    let root = std::fs::canonicalize(dir.path())?;
    let mut seen = Cycles {
        fds_before: fd_count()?,
        ..Cycles::default()
    };
    let host = open_host(&root).await?;
    let mut env = serde_json::Map::new();
    env.insert(
        "C2_SOAK_FIXTURE".to_owned(),
        json!(fixture.to_string_lossy()),
    );
    env.insert(
        "C2_FIXTURE_COMMANDS".to_owned(),
        json!(json!([{"name": "fixture.info"}]).to_string()),
    );
    let bundle = write_bundle(
        &root.join("bundles"),
        "soak-cycle",
        ("fixture", "#!/bin/sh\nexec \"$C2_SOAK_FIXTURE\" \"$@\"\n"),
        &["fixture.info"],
        &env,
    )?;
    let id = install_ready(&host, &bundle).await?;
    let start = Instant::now();
    for cycle in 1..=limits.cycles {
        let info = host
            .invoke(&Target::User, "fixture.info", json!({"env": []}))
            .await
            .with_context(|| format!("cycle {cycle}: the activation failed"))?;
        let pid = info["pid"]
            .as_u64()
            .and_then(|pid| u32::try_from(pid).ok())
            .with_context(|| format!("cycle {cycle}: fixture.info gave no pid: {info}"))?;
        host.set_state(&id, &Target::User, StateChange::Disable)
            .await
            .with_context(|| format!("cycle {cycle}: the unload failed"))?;
        match settle(pid, limits.settle).await {
            Proc::Gone => {}
            Proc::Zombie => seen.zombies.push(pid),
            Proc::Alive => seen.leaked.push(pid),
        }
        host.set_state(&id, &Target::User, StateChange::Enable)
            .await
            .with_context(|| format!("cycle {cycle}: the re-enable failed"))?;
        if cycle == limits.warm_up {
            seen.rss_warm_kib = status_kib("VmRSS")?;
            seen.fds_warm = settled_fd_count().await?;
        }
        seen.done = cycle;
    }
    seen.elapsed = start.elapsed();
    seen.rss_end_kib = status_kib("VmRSS")?;
    seen.fds_end = settled_fd_count().await?;
    host.shutdown().await;
    drop(host);
    let deadline = Instant::now() + limits.settle;
    loop {
        seen.left_after_shutdown = descendants(&root);
        if seen.left_after_shutdown.is_empty() || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(seen)
}

impl Cycles {
    fn rss_bound_kib(&self, limits: &Limits) -> u64 {
        self.rss_warm_kib
            + self.rss_warm_kib * limits.rss_growth_percent / 100
            + limits.rss_slack_kib
    }

    fn describe(&self, text: &mut String, limits: &Limits) {
        let per_cycle = self.elapsed.as_secs_f64() * 1000.0 / self.done.max(1) as f64;
        let _ = writeln!(
            text,
            "  cycles: {} activation/unload cycles in {:.1} s ({per_cycle:.1} ms each)",
            self.done,
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            text,
            "  cycles: {} leaked, {} zombie, {} left after shutdown",
            self.leaked.len(),
            self.zombies.len(),
            self.left_after_shutdown.len()
        );
        let _ = writeln!(
            text,
            "  cycles: open descriptors {} before, {} after cycle {}, {} after the last",
            self.fds_before, self.fds_warm, limits.warm_up, self.fds_end
        );
        let _ = writeln!(
            text,
            "  cycles: VmRSS {} KiB after cycle {}, {} KiB after the last (bound {} KiB: +{}% +{} KiB)",
            self.rss_warm_kib,
            limits.warm_up,
            self.rss_end_kib,
            self.rss_bound_kib(limits),
            limits.rss_growth_percent,
            limits.rss_slack_kib
        );
    }

    fn violations(&self, limits: &Limits) -> Vec<String> {
        let mut found = Vec::new();
        if !self.leaked.is_empty() {
            found.push(format!("unloaded plugins still alive: {:?}", self.leaked));
        }
        if !self.zombies.is_empty() {
            found.push(format!("unloaded plugins left zombies: {:?}", self.zombies));
        }
        if !self.left_after_shutdown.is_empty() {
            found.push(format!(
                "processes left after shutdown: {:?}",
                self.left_after_shutdown
            ));
        }
        if self.fds_end > self.fds_warm {
            found.push(format!(
                "descriptors leaked: {} after the warm-up, {} after the last cycle",
                self.fds_warm, self.fds_end
            ));
        }
        if self.rss_end_kib > self.rss_bound_kib(limits) {
            found.push(format!(
                "VmRSS not flat: {} KiB after the warm-up, {} KiB after the last cycle",
                self.rss_warm_kib, self.rss_end_kib
            ));
        }
        found
    }
}

/// Where a pid stands in /proc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proc {
    Gone,
    Zombie,
    Alive,
}

fn proc_state(pid: u32) -> Proc {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Proc::Gone;
    };
    match stat.rsplit_once(')').map(|(_, rest)| rest.trim_start()) {
        Some(rest) if rest.starts_with('Z') || rest.starts_with('X') => Proc::Zombie,
        _ => Proc::Alive,
    }
}

/// Waits up to `limit` for `pid` to vanish; returns where it stands then.
async fn settle(pid: u32, limit: Duration) -> Proc {
    let start = Instant::now();
    loop {
        let state = proc_state(pid);
        if state == Proc::Gone || start.elapsed() > limit {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Processes that are this process's children (zombies included) or run with a working
/// directory under `root` (plugins and any grandchild, whatever its group or session).
fn descendants(root: &Path) -> Vec<u32> {
    let me = std::process::id();
    #[expect(
        clippy::disallowed_methods,
        reason = "listing /proc to find leaked processes is not bundle collection"
    )]
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let child = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let (_, rest) = stat.rsplit_once(')')?;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(me);
            #[expect(
                clippy::disallowed_methods,
                reason = "a process's working directory is read from /proc, not a bundle"
            )]
            let inside = std::fs::read_link(format!("/proc/{pid}/cwd"))
                .is_ok_and(|cwd| cwd.starts_with(root));
            child || inside
        })
        .collect()
}

/// A `Key: value kB` field of /proc/self/status, in KiB.
fn status_kib(key: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .with_context(|| format!("/proc/self/status has no {key}"))
}

/// The fewest open descriptors seen over about 100 ms, without the supervisor's idle shim.
/// After an activation the supervisor starts the next shim ahead, whose pipes stay open while
/// it waits (present at one count and not yet at another, by timing alone), so it is released
/// first; and its pre-start thread may still hold pipes for a moment, so the count is the
/// minimum over the window. A leak stays, so the minimum still shows one.
async fn settled_fd_count() -> Result<usize> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    c2_supervisor::release_warm_shim();
    let mut fewest = fd_count()?;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        fewest = fewest.min(fd_count()?);
    }
    Ok(fewest)
}

fn fd_count() -> Result<usize> {
    #[expect(
        clippy::disallowed_methods,
        reason = "counting /proc/self/fd entries is not bundle collection"
    )]
    let entries = std::fs::read_dir("/proc/self/fd").context("cannot list /proc/self/fd")?;
    // The listing's own descriptor is counted too, the same way every time.
    Ok(entries.count())
}
