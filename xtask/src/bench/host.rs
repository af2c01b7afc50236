//! Figures through the real host: warm invokes, context switches, 64 KiB invokes, throughput,
//! cold activation and unload, each interleaved with its raw echo baseline.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use c2_host::{HostOptions, InstallOptions, PluginHost, Target, module_name};
use c2_kernel::Realm;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::runtime::Runtime;

use super::Plan;
use super::echo::{AsyncEcho, StdEcho};
use super::procfs::context_switches;
use super::report::{Bar, Figure};
use super::stats::{Rounds, flatten, interleave, median, median_over_rounds, micros, p99};

/// The one command the bench bundle declares; the fixture answers it with its args.
const ECHO: &str = "fixture.echo";

/// A host with one installed, trusted, enabled bundle whose runtime is the fixture binary itself
/// (copied into the bundle, so activation spawns it directly, with no shell in between).
pub(crate) struct Rig {
    _dir: TempDir,
    pub(crate) host: PluginHost,
    pub(crate) id: String,
}

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

impl Rig {
    pub(crate) async fn new(fixture: &Path) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let bundle = write_bundle(
            &dir.path().join("bundles"),
            "bench-echo",
            &[ECHO.to_owned()],
            BundleRuntime::Binary(fixture),
        )?;
        let host = PluginHost::open(host_options(dir.path())).await?;
        let id = install_ready(&host, &bundle).await?;
        let rig = Self {
            _dir: dir,
            host,
            id,
        };
        rig.invoke(json!({"warm": true})).await?;
        Ok(rig)
    }

    pub(crate) async fn invoke(&self, args: Value) -> Result<Value> {
        Ok(self.host.invoke(&Target::User, ECHO, args).await?)
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

/// Args of about `bytes` bytes, and a raw line of exactly the request frame's length.
fn payload(bytes: usize) -> (Value, Vec<u8>) {
    let args = json!({ "text": "x".repeat(bytes.saturating_sub(11)) });
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "command/invoke",
        "params": {"name": ECHO, "args": args}});
    let mut line = request.to_string().into_bytes();
    line.push(b'\n');
    (args, line)
}

/// Invoke latencies, context switches and the async echo, three ways interleaved.
pub(crate) fn warm(
    runtime: &Runtime,
    rig: &Rig,
    fixture: &Path,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let (args, line) = payload(100);
    let mut floor = StdEcho::spawn(fixture)?;
    let mut async_echo = runtime.block_on(async { AsyncEcho::spawn(fixture) })?;
    let plugin = rig.plugin_pid()?.to_string();
    let floor_pid = floor.pid().to_string();
    let errors = RefCell::new(Vec::new());
    let ctx_host = RefCell::new(Vec::new());
    let ctx_floor = RefCell::new(Vec::new());
    let n = plan.invokes_per_round;
    let mut host_side = || {
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
        ctx_host
            .borrow_mut()
            .push(vec![(after - before) as f64 / n as f64]);
        samples
    };
    let mut floor_side = || {
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
        ctx_floor
            .borrow_mut()
            .push(vec![(after - before) as f64 / n as f64]);
        samples
    };
    let mut async_side = || {
        runtime.block_on(async {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                if let Err(error) = async_echo.round_trip(&line).await {
                    errors.borrow_mut().push(error);
                    break;
                }
                samples.push(micros(start.elapsed()));
            }
            samples
        })
    };
    let sides = interleave(
        plan.rounds,
        &mut [&mut host_side, &mut floor_side, &mut async_side],
    );
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a warm round trip failed"));
    }
    let [host, floor_rounds, async_rounds] = &sides[..] else {
        bail!("interleave returned the wrong number of sides");
    };
    figures.push(latency(
        "invoke_warm_p50",
        host,
        floor_rounds,
        "echo_floor_p50",
        median,
        Bar::RatioAtMost(10.0),
    ));
    figures.push(latency(
        "invoke_warm_p99",
        host,
        floor_rounds,
        "echo_floor_p99",
        p99,
        Bar::RatioAtMost(10.0),
    ));
    figures.push(Figure {
        name: "invoke_ctx_switches",
        value: median_over_rounds(&ctx_host.into_inner(), median),
        unit: "switches/call",
        baseline: "echo_floor_ctx_switches",
        baseline_value: median_over_rounds(&ctx_floor.into_inner(), median),
        bar: Bar::RatioAtMost(3.0),
    });
    figures.push(latency(
        "echo_async_p50",
        async_rounds,
        floor_rounds,
        "echo_floor_p50",
        median,
        Bar::None,
    ));
    figures.push(latency(
        "echo_async_p99",
        async_rounds,
        floor_rounds,
        "echo_floor_p99",
        p99,
        Bar::None,
    ));
    floor.kill_and_wait()?;
    runtime.block_on(async_echo.stop());
    Ok(())
}

fn latency(
    name: &'static str,
    subject: &Rounds,
    baseline: &Rounds,
    baseline_name: &'static str,
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

/// 64 KiB args through the host against a raw 64 KiB echo.
pub(crate) fn big(
    runtime: &Runtime,
    rig: &Rig,
    fixture: &Path,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let (args, line) = payload(64 * 1024);
    let mut floor = StdEcho::spawn(fixture)?;
    let errors = RefCell::new(Vec::new());
    let n = plan.big_per_round;
    let mut host_side = || {
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
    let mut floor_side = || {
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
    let sides = interleave(plan.rounds, &mut [&mut host_side, &mut floor_side]);
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a 64 KiB round trip failed"));
    }
    figures.push(latency(
        "invoke_64k",
        &sides[0],
        &sides[1],
        "echo_floor_64k_p50",
        median,
        Bar::RatioAtMost(4.0),
    ));
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
    let (args, _) = payload(100);
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
    let sides = interleave(plan.rounds, &mut [&mut concurrent, &mut serial]);
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a throughput invoke failed"));
    }
    figures.push(Figure {
        name: "invoke_throughput",
        value: median_over_rounds(&sides[0], median),
        unit: "calls/s",
        baseline: "invoke_serial_rate",
        baseline_value: median_over_rounds(&sides[1], median),
        bar: Bar::RatioAtLeast(5.0),
    });
    Ok(())
}

/// Cold activation and unload of the bench bundle against spawning the fixture for one raw
/// echo and killing it.
pub(crate) fn cold_and_unload(
    runtime: &Runtime,
    rig: &Rig,
    fixture: &Path,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let (args, line) = payload(100);
    let errors = RefCell::new(Vec::new());
    let unloads = RefCell::new(Vec::new());
    let kills = RefCell::new(Vec::new());
    // The rig arrives warm; start every round from a dormant stub.
    runtime.block_on(rig.unload())?;
    let mut host_side = || {
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
            unloads.borrow_mut().push(micros(start.elapsed()));
            vec![cold]
        })
    };
    let mut raw_side = || {
        let start = Instant::now();
        let spawned = StdEcho::spawn(fixture).and_then(|mut echo| {
            echo.round_trip(&line)?;
            Ok(echo)
        });
        let cold = micros(start.elapsed());
        match spawned {
            Ok(echo) => {
                let start = Instant::now();
                match echo.kill_and_wait() {
                    Ok(()) => kills.borrow_mut().push(micros(start.elapsed())),
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
    let sides = interleave(plan.cold_rounds, &mut [&mut host_side, &mut raw_side]);
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a cold activation or unload failed"));
    }
    figures.push(Figure {
        name: "cold_activation",
        value: median(&flatten(&sides[0])).unwrap_or(f64::NAN),
        unit: "us",
        baseline: "spawn_and_echo",
        baseline_value: median(&flatten(&sides[1])).unwrap_or(f64::NAN),
        bar: Bar::RatioAtMost(1.5),
    });
    figures.push(Figure {
        name: "unload_p99",
        value: p99(&unloads.into_inner()).unwrap_or(f64::NAN),
        unit: "us",
        baseline: "kill_and_wait_p99",
        baseline_value: p99(&kills.into_inner()).unwrap_or(f64::NAN),
        bar: Bar::RatioAtMost(2.0),
    });
    Ok(())
}
