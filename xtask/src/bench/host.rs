//! Figures through the real host: warm invokes, context switches, 64 KiB invokes, throughput,
//! cold activation and unload, each interleaved with its raw echo baseline, free and pinned,
//! for the c2-testkit fixture and for the SDK bench plugin.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use c2_host::{HostOptions, InstallOptions, PluginHost, Target, module_name};
use c2_kernel::Realm;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::runtime::Runtime;

use super::Plan;
use super::echo::{AsyncEcho, RawEcho, StdEcho};
use super::pin::{Affinity, Mode, interleave_modes};
use super::procfs::context_switches;
use super::report::{Bar, Figure};
use super::stats::{Rounds, flatten, interleave, median, median_over_rounds, micros, p99};

/// The one command the fixture bundle declares; the fixture answers it with its args.
pub(crate) const ECHO: &str = "fixture.echo";

/// The one command of the SDK bench plugin's bundle.
const SDK_ECHO: &str = "sdk.echo";

/// A plugin the bench measures, and the bars its figures are held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    /// Prefix of its figures' names: none for the fixture, `sdk_` for the SDK plugin.
    pub(crate) prefix: &'static str,
    /// The binary (the bundle's runtime, and the baselines' raw echo).
    pub(crate) binary: &'a Path,
    command: &'static str,
    raw: RawEcho,
    /// `invoke_warm_p50` bars: free, pinned.
    warm_bars: [f64; 2],
    /// The `invoke_64k` bar, if any.
    big_bar: Option<f64>,
    /// The `cold_activation` bar.
    cold_bar: f64,
}

impl<'a> Subject<'a> {
    /// The c2-testkit fixture (issue 23's bars for the fixture).
    pub(crate) fn fixture(binary: &'a Path) -> Self {
        Self {
            prefix: "",
            binary,
            command: ECHO,
            raw: RawEcho::FIXTURE,
            warm_bars: [10.0, 3.0],
            big_bar: Some(4.0),
            cold_bar: 1.5,
        }
    }

    /// The SDK bench plugin (crates/c2-plugin-sdk/examples/bench-echo.rs).
    pub(crate) fn sdk(binary: &'a Path) -> Self {
        Self {
            prefix: "sdk_",
            binary,
            command: SDK_ECHO,
            raw: RawEcho::SDK,
            warm_bars: [12.0, 4.0],
            big_bar: None,
            cold_bar: 1.3,
        }
    }

    /// `{prefix}{stem}{mode suffix}`.
    fn name(&self, stem: &str, mode: Mode) -> String {
        format!("{}{stem}{}", self.prefix, mode.suffix())
    }
}

/// A host with one installed, trusted, enabled bundle whose runtime is the fixture binary itself
/// (copied into the bundle, so activation spawns it directly, with no shell in between).
pub(crate) struct Rig {
    _dir: TempDir,
    pub(crate) host: PluginHost,
    pub(crate) id: String,
    command: &'static str,
    /// When the bundle was installed.
    installed: Instant,
}

/// How old an installed bundle's files are before cold rounds start: past the store's 2 s
/// stamp settle time, the digest of a tree already hashed is vouched for by its files'
/// stamps (docs/decisions.md, trust follows the bytes), as it is for any bundle installed
/// before the host started; a fresher tree is hashed at every activation.
pub(crate) const BUNDLE_SETTLE: std::time::Duration = std::time::Duration::from_millis(2_500);

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rig")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Options for a host in `root`: the bench bundle carries a binary, so the per-file and
/// per-bundle limits are raised to fit it.
pub(crate) fn host_options(root: &Path) -> HostOptions {
    let mut options = HostOptions::new(root.join("plugins"));
    options.working_dir = Some(root.to_path_buf());
    options.limits.max_file_bytes = 256 * 1024 * 1024;
    options.limits.max_bundle_bytes = 256 * 1024 * 1024;
    options
}

/// Writes a fixture bundle: `commands` declared in the manifest and confirmed by the fixture;
/// `runtime` is the file the manifest's `bin/fixture` is made from.
pub(crate) fn write_bundle(
    dir: &Path,
    name: &str,
    commands: &[String],
    runtime: BundleRuntime<'_>,
) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let bundle = dir.join(name);
    std::fs::create_dir_all(bundle.join("bin"))?;
    let launcher = bundle.join("bin/fixture");
    let mut env = serde_json::Map::new();
    match runtime {
        BundleRuntime::Binary(fixture) => {
            std::fs::copy(fixture, &launcher)
                .with_context(|| format!("could not copy {}", fixture.display()))?;
        }
        BundleRuntime::Launcher(fixture) => {
            std::fs::write(&launcher, "#!/bin/sh\nexec \"$C2_BENCH_FIXTURE\" \"$@\"\n")?;
            env.insert(
                "C2_BENCH_FIXTURE".to_owned(),
                json!(fixture.to_string_lossy()),
            );
        }
    }
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755))?;
    let declared: Vec<Value> = commands
        .iter()
        .map(|id| json!({"id": id, "title": format!("Bench {id}")}))
        .collect();
    let confirmed: Vec<Value> = commands.iter().map(|id| json!({"name": id})).collect();
    env.insert(
        "C2_FIXTURE_COMMANDS".to_owned(),
        json!(Value::Array(confirmed).to_string()),
    );
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": declared,
            "runtime": {"command": "bin/fixture", "env": env, "scopeSupport": ["user"]},
        }}
    });
    std::fs::write(
        bundle.join("plugin.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    Ok(bundle)
}

/// What a bundle's `bin/fixture` is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BundleRuntime<'a> {
    /// A copy of the fixture binary.
    Binary(&'a Path),
    /// A small shell script that execs the fixture (cheap to install by the thousand).
    Launcher(&'a Path),
}

/// Installs `bundle` trusted and enabled; returns its installed id.
pub(crate) async fn install_ready(host: &PluginHost, bundle: &Path) -> Result<String> {
    let source = bundle.to_str().context("bundle path is not UTF-8")?;
    let outcome = host
        .install(source, InstallOptions::trusted_and_enabled())
        .await
        .with_context(|| format!("could not install {}", bundle.display()))?;
    Ok(outcome.record.id)
}

/// Writes the SDK bench plugin's bundle: its binary and a manifest declaring `sdk.echo` with
/// an `argsSchema`, as an author would.
fn write_sdk_bundle(dir: &Path, binary: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let bundle = dir.join("bench-sdk");
    std::fs::create_dir_all(bundle.join("bin"))?;
    let runtime = bundle.join("bin/bench-echo");
    std::fs::copy(binary, &runtime)
        .with_context(|| format!("could not copy {}", binary.display()))?;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o755))?;
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "bench-sdk",
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [{
                "id": SDK_ECHO,
                "title": "Echo the args",
                "argsSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "additionalProperties": false
                }
            }],
            "runtime": {"protocol": "1.0.0", "command": "bin/bench-echo", "scopeSupport": ["user"]},
        }}
    });
    std::fs::write(
        bundle.join("plugin.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    Ok(bundle)
}

impl Rig {
    /// A host with `subject`'s bundle installed, trusted, enabled and warmed by one invoke.
    pub(crate) async fn new(subject: &Subject<'_>) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let bundles = dir.path().join("bundles");
        let bundle = if subject.command == SDK_ECHO {
            write_sdk_bundle(&bundles, subject.binary)?
        } else {
            write_bundle(
                &bundles,
                "bench-echo",
                &[ECHO.to_owned()],
                BundleRuntime::Binary(subject.binary),
            )?
        };
        let host = c2_contributions::open(host_options(dir.path())).await?;
        let id = install_ready(&host, &bundle).await?;
        let rig = Self {
            _dir: dir,
            host,
            id,
            command: subject.command,
            installed: Instant::now(),
        };
        rig.invoke(json!({"text": "warm"})).await?;
        Ok(rig)
    }

    pub(crate) async fn invoke(&self, args: Value) -> Result<Value> {
        Ok(self.host.invoke(&Target::User, self.command, args).await?)
    }

    fn plugin_pid(&self) -> Result<u32> {
        self.host
            .runtime_pid(&self.id, &Target::User)?
            .context("the bench plugin is not running")
    }

    /// Unloads the live runtime the way every unload does: its module scope is disposed
    /// (commands removed, process group stopped and reaped); the kernel then re-applies the
    /// still-enabled module, so its stubs are dormant again.
    async fn unload(&self) -> Result<()> {
        let scope = self
            .host
            .kernel()
            .module_scope(&Realm::Global, &module_name(&self.id))
            .context("the bench bundle has no live scope")?;
        scope.dispose().await;
        Ok(())
    }
}

/// The text of args of about `bytes` bytes (`{"text":"..."}` is 11 bytes more).
pub(crate) fn text_of(bytes: usize) -> String {
    "x".repeat(bytes.saturating_sub(11))
}

/// Args of about `bytes` bytes, and a raw line of exactly the request frame's length.
pub(crate) fn payload(bytes: usize, command: &str) -> (Value, Vec<u8>) {
    let args = json!({ "text": text_of(bytes) });
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "command/invoke",
        "params": {"name": command, "args": args}});
    let mut line = request.to_string().into_bytes();
    line.push(b'\n');
    (args, line)
}

/// Invoke latencies and context switches (and, for the fixture, the async echo), free and
/// pinned, every side interleaved.
pub(crate) fn warm(
    runtime: &Runtime,
    affinity: &Affinity,
    rig: &Rig,
    subject: &Subject<'_>,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let with_async = subject.prefix.is_empty();
    let (args, line) = payload(100, subject.command);
    let mut floor = StdEcho::spawn_raw(subject.binary, subject.raw)?;
    let mut async_echo = if with_async {
        Some(runtime.block_on(async { AsyncEcho::spawn(subject.binary) })?)
    } else {
        None
    };
    let plugin = rig.plugin_pid()?.to_string();
    let floor_pid = floor.pid().to_string();
    let errors = RefCell::new(Vec::new());
    let ctx_host: RefCell<[Rounds; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let ctx_floor: RefCell<[Rounds; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let n = plan.invokes_per_round;
    let plugin_pid = rig.plugin_pid()?;
    let mut host_side = |mode: Mode| {
        if let Err(error) = affinity.verify(plugin_pid, mode) {
            errors.borrow_mut().push(error);
            return Vec::new();
        }
        let before = context_switches("self") + context_switches(&plugin);
        let samples = runtime.block_on(async {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                if let Err(error) = rig.invoke(args.clone()).await {
                    errors.borrow_mut().push(error);
                    break;
                }
                samples.push(micros(start.elapsed()));
            }
            samples
        });
        let after = context_switches("self") + context_switches(&plugin);
        ctx_host.borrow_mut()[mode_index(mode)].push(vec![(after - before) as f64 / n as f64]);
        samples
    };
    let mut floor_side = |mode: Mode| {
        let before = context_switches("self") + context_switches(&floor_pid);
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            if let Err(error) = floor.round_trip(&line) {
                errors.borrow_mut().push(error);
                break;
            }
            samples.push(micros(start.elapsed()));
        }
        let after = context_switches("self") + context_switches(&floor_pid);
        ctx_floor.borrow_mut()[mode_index(mode)].push(vec![(after - before) as f64 / n as f64]);
        samples
    };
    let mut async_side = |_mode: Mode| {
        let Some(echo) = async_echo.as_mut() else {
            return Vec::new();
        };
        runtime.block_on(async {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                if let Err(error) = echo.round_trip(&line).await {
                    errors.borrow_mut().push(error);
                    break;
                }
                samples.push(micros(start.elapsed()));
            }
            samples
        })
    };
    let by_mode = if with_async {
        interleave_modes(
            affinity,
            plan.rounds,
            &mut [&mut host_side, &mut floor_side, &mut async_side],
        )?
    } else {
        interleave_modes(
            affinity,
            plan.rounds,
            &mut [&mut host_side, &mut floor_side],
        )?
    };
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a warm round trip failed"));
    }
    let (ctx_host, ctx_floor) = (ctx_host.into_inner(), ctx_floor.into_inner());
    for (m, mode) in Mode::BOTH.into_iter().enumerate() {
        let sides = &by_mode[m];
        let (host, floor_rounds) = (&sides[0], &sides[1]);
        let p50 = latency(
            subject.name("invoke_warm_p50", mode),
            host,
            floor_rounds,
            subject.name("echo_floor_p50", mode),
            median,
            Bar::RatioAtMost(subject.warm_bars[m]),
        );
        // p99 within 2x of the p50 ratio (issue 23), so the bar follows the p50 figure.
        let p99_bar = Bar::RatioAtMost(((2.0 * p50.ratio()) * 100.0).round() / 100.0);
        figures.push(p50);
        figures.push(latency(
            subject.name("invoke_warm_p99", mode),
            host,
            floor_rounds,
            subject.name("echo_floor_p99", mode),
            p99,
            p99_bar,
        ));
        figures.push(Figure {
            name: subject.name("invoke_ctx_switches", mode),
            value: median_over_rounds(&ctx_host[m], median),
            unit: "switches/call",
            baseline: subject.name("echo_floor_ctx_switches", mode),
            baseline_value: median_over_rounds(&ctx_floor[m], median),
            bar: Bar::RatioAtMost(3.0),
        });
        if let Some(async_rounds) = sides.get(2) {
            figures.push(latency(
                format!("echo_async_p50{}", mode.suffix()),
                async_rounds,
                floor_rounds,
                subject.name("echo_floor_p50", mode),
                median,
                Bar::None,
            ));
            figures.push(latency(
                format!("echo_async_p99{}", mode.suffix()),
                async_rounds,
                floor_rounds,
                subject.name("echo_floor_p99", mode),
                p99,
                Bar::None,
            ));
        }
    }
    floor.kill_and_wait()?;
    if let Some(echo) = async_echo {
        runtime.block_on(echo.stop());
    }
    Ok(())
}

/// 0 for free, 1 for pinned: the index of a mode in [`Mode::BOTH`] and in the pairs of
/// per-mode results.
pub(crate) fn mode_index(mode: Mode) -> usize {
    match mode {
        Mode::Free => 0,
        Mode::Pinned => 1,
    }
}

pub(crate) fn latency(
    name: String,
    subject: &Rounds,
    baseline: &Rounds,
    baseline_name: String,
    statistic: fn(&[f64]) -> Option<f64>,
    bar: Bar,
) -> Figure {
    Figure {
        name,
        value: median_over_rounds(subject, statistic),
        unit: "us",
        baseline: baseline_name,
        baseline_value: median_over_rounds(baseline, statistic),
        bar,
    }
}

/// 64 KiB args through the host against a raw 64 KiB echo, free and pinned.
pub(crate) fn big(
    runtime: &Runtime,
    affinity: &Affinity,
    rig: &Rig,
    subject: &Subject<'_>,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let (args, line) = payload(64 * 1024, subject.command);
    let mut floor = StdEcho::spawn_raw(subject.binary, subject.raw)?;
    let errors = RefCell::new(Vec::new());
    let n = plan.big_per_round;
    let mut host_side = |_mode: Mode| {
        runtime.block_on(async {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                if let Err(error) = rig.invoke(args.clone()).await {
                    errors.borrow_mut().push(error);
                    break;
                }
                samples.push(micros(start.elapsed()));
            }
            samples
        })
    };
    let mut floor_side = |_mode: Mode| {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            if let Err(error) = floor.round_trip(&line) {
                errors.borrow_mut().push(error);
                break;
            }
            samples.push(micros(start.elapsed()));
        }
        samples
    };
    let by_mode = interleave_modes(
        affinity,
        plan.rounds,
        &mut [&mut host_side, &mut floor_side],
    )?;
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a 64 KiB round trip failed"));
    }
    for (m, mode) in Mode::BOTH.into_iter().enumerate() {
        figures.push(latency(
            subject.name("invoke_64k", mode),
            &by_mode[m][0],
            &by_mode[m][1],
            subject.name("echo_floor_64k_p50", mode),
            median,
            subject.big_bar.map_or(Bar::None, Bar::RatioAtMost),
        ));
    }
    floor.kill_and_wait()?;
    Ok(())
}

/// Invocations per second with 64 in flight against the serial rate, same host and plugin.
pub(crate) fn throughput(
    runtime: &Runtime,
    rig: &Rig,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    const IN_FLIGHT: usize = 64;
    let (args, _) = payload(100, ECHO);
    let per_task = plan.throughput_calls.div_ceil(IN_FLIGHT);
    let total = per_task * IN_FLIGHT;
    let errors = RefCell::new(Vec::new());
    let mut concurrent = || {
        runtime.block_on(async {
            let start = Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..IN_FLIGHT {
                let host = rig.host.clone();
                let args = args.clone();
                tasks.spawn(async move {
                    for _ in 0..per_task {
                        host.invoke(&Target::User, ECHO, args.clone()).await?;
                    }
                    Ok::<(), c2_host::HostError>(())
                });
            }
            while let Some(done) = tasks.join_next().await {
                match done {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => errors.borrow_mut().push(anyhow::Error::from(error)),
                    Err(error) => errors.borrow_mut().push(anyhow::Error::from(error)),
                }
            }
            vec![total as f64 / start.elapsed().as_secs_f64()]
        })
    };
    let mut serial = || {
        runtime.block_on(async {
            let start = Instant::now();
            for _ in 0..total {
                if let Err(error) = rig.invoke(args.clone()).await {
                    errors.borrow_mut().push(error);
                    break;
                }
            }
            vec![total as f64 / start.elapsed().as_secs_f64()]
        })
    };
    // Throughput is a rate, not a latency: free rounds only.
    let sides = interleave(plan.rounds, &mut [&mut concurrent, &mut serial]);
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a throughput invoke failed"));
    }
    figures.push(Figure {
        name: "invoke_throughput".to_owned(),
        value: median_over_rounds(&sides[0], median),
        unit: "calls/s",
        baseline: "invoke_serial_rate".to_owned(),
        baseline_value: median_over_rounds(&sides[1], median),
        bar: Bar::RatioAtLeast(5.0),
    });
    Ok(())
}

/// Cold activation and unload of the bench bundle against spawning the same binary for one raw
/// echo and killing it, free and pinned.
pub(crate) fn cold_and_unload(
    runtime: &Runtime,
    affinity: &Affinity,
    rig: &Rig,
    subject: &Subject<'_>,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let (args, line) = payload(100, subject.command);
    let errors = RefCell::new(Vec::new());
    let unloads: RefCell<[Vec<f64>; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let kills: RefCell<[Vec<f64>; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    // The rig arrives warm; start every round from a dormant stub, with settled files.
    runtime.block_on(async {
        let settled = rig.installed + BUNDLE_SETTLE;
        tokio::time::sleep_until(settled.into()).await;
        rig.unload().await
    })?;
    let mut host_side = |mode: Mode| {
        runtime.block_on(async {
            let start = Instant::now();
            if let Err(error) = rig.invoke(args.clone()).await {
                errors.borrow_mut().push(error);
                return Vec::new();
            }
            let cold = micros(start.elapsed());
            let start = Instant::now();
            if let Err(error) = rig.unload().await {
                errors.borrow_mut().push(error);
                return Vec::new();
            }
            unloads.borrow_mut()[mode_index(mode)].push(micros(start.elapsed()));
            vec![cold]
        })
    };
    let mut raw_side = |mode: Mode| {
        let start = Instant::now();
        let spawned = StdEcho::spawn_raw(subject.binary, subject.raw).and_then(|mut echo| {
            echo.round_trip(&line)?;
            Ok(echo)
        });
        let cold = micros(start.elapsed());
        match spawned {
            Ok(echo) => {
                let start = Instant::now();
                match echo.kill_and_wait() {
                    Ok(()) => kills.borrow_mut()[mode_index(mode)].push(micros(start.elapsed())),
                    Err(error) => errors.borrow_mut().push(error),
                }
                vec![cold]
            }
            Err(error) => {
                errors.borrow_mut().push(error);
                Vec::new()
            }
        }
    };
    // The unload's baseline: the same stop sequence (close stdin, SIGTERM the group, wait,
    // reap) of a bare echo child under the same supervisor and shim, after one echo.
    let stops: RefCell<[Vec<f64>; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let supervisor = rig.host.options().supervisor.clone();
    let cwd = std::env::temp_dir();
    let mut shim_side = |mode: Mode| {
        runtime.block_on(async {
            let spec = c2_supervisor::ProcessSpec::new(subject.binary, &cwd)
                .env(subject.raw.variable, subject.raw.value)
                .label("bench-echo");
            let echoed = async {
                use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
                let mut spawned = c2_supervisor::spawn(&spec, &supervisor)?;
                spawned.stdin.write_all(&line).await?;
                spawned.stdin.flush().await?;
                let mut answer = Vec::new();
                tokio::io::BufReader::new(&mut spawned.stdout)
                    .read_until(b'\n', &mut answer)
                    .await?;
                anyhow::ensure!(!answer.is_empty(), "the echo child answered nothing");
                anyhow::Ok(spawned)
            };
            match echoed.await {
                Ok(spawned) => {
                    let start = Instant::now();
                    spawned.process.stop().await;
                    stops.borrow_mut()[mode_index(mode)].push(micros(start.elapsed()));
                }
                Err(error) => errors.borrow_mut().push(error),
            }
            Vec::new()
        })
    };
    let by_mode = interleave_modes(
        affinity,
        plan.cold_rounds,
        &mut [&mut host_side, &mut raw_side, &mut shim_side],
    )?;
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a cold activation or unload failed"));
    }
    let (unloads, kills, stops) = (unloads.into_inner(), kills.into_inner(), stops.into_inner());
    for (m, mode) in Mode::BOTH.into_iter().enumerate() {
        figures.push(Figure {
            name: subject.name("cold_activation", mode),
            value: median(&flatten(&by_mode[m][0])).unwrap_or(f64::NAN),
            unit: "us",
            baseline: subject.name("spawn_and_echo", mode),
            baseline_value: median(&flatten(&by_mode[m][1])).unwrap_or(f64::NAN),
            bar: Bar::RatioAtMost(subject.cold_bar),
        });
        figures.push(Figure {
            name: subject.name("unload_p99", mode),
            value: p99(&unloads[m]).unwrap_or(f64::NAN),
            unit: "us",
            baseline: subject.name("shim_stop_p99", mode),
            baseline_value: p99(&stops[m]).unwrap_or(f64::NAN),
            bar: Bar::RatioAtMost(1.5),
        });
        figures.push(Figure {
            name: subject.name("unload_vs_kill_p99", mode),
            value: p99(&unloads[m]).unwrap_or(f64::NAN),
            unit: "us",
            baseline: subject.name("kill_and_wait_p99", mode),
            baseline_value: p99(&kills[m]).unwrap_or(f64::NAN),
            bar: Bar::None,
        });
    }
    Ok(())
}
