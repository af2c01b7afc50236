//! The relay figures (issue 21): a warm `invoke` through a running `c2-plugins serve --socket`
//! from the CLI (one `c2-plugins invoke` process per call, which finds the service on the
//! plugins directory's socket) and from the TypeScript client in clients/typescript (one node
//! process per round, one connection, many calls), against the in-process `PluginHost::invoke`
//! of the same fixture in the same run; each with its local round trip (a relay request that
//! does no host work), free and pinned. Then the service's idle resident set and its wake-ups
//! per minute while nobody calls it.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use c2_host::HostOptions;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::Plan;
use super::child;
use super::host::{BundleRuntime, ECHO, Rig, install_ready, mode_index, text_of, write_bundle};
use super::pin::{Affinity, Mode, interleave_modes};
use super::procfs::{context_switches, rss_kib_of};
use super::report::{Bar, Figure};
use super::stats::{Rounds, median, median_over_rounds, micros};

/// A command no bundle declares: the CLI's round trip asks the service for it and gets the
/// host's not-found error back, everything of a relay invoke but the plugin.
const MISSING: &str = "bench.absent";

/// How long the service may take to answer on its socket after it starts.
const SERVICE_START: Duration = Duration::from_secs(30);

/// How long one CLI call or one TypeScript client round may take.
const CALL_LIMIT: Duration = Duration::from_secs(60);

/// The socket's name in the plugins directory (c2-cli's default, docs/cli.md).
const SOCKET_FILE: &str = ".serve.sock";

/// A blocking line-JSON relay connection, for the bench's own checks.
#[derive(Debug)]
struct RawRelay {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next: u64,
}

impl RawRelay {
    fn connect(socket: &Path) -> Result<Self> {
        let stream = UnixStream::connect(socket)
            .with_context(|| format!("cannot connect to {}", socket.display()))?;
        stream.set_read_timeout(Some(CALL_LIMIT))?;
        let mut relay = Self {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            next: 1,
        };
        relay.request(
            "relay/initialize",
            json!({"protocolVersion": "1.0.0", "client": {"name": "c2-bench", "version": "1"}}),
        )?;
        Ok(relay)
    }

    /// One request; notifications before the answer are skipped.
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next;
        self.next += 1;
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes())?;
        loop {
            let mut answer = String::new();
            if self.reader.read_line(&mut answer)? == 0 {
                bail!("the service closed the connection during `{method}`");
            }
            let answer: Value = serde_json::from_str(&answer)
                .with_context(|| format!("the service's answer to `{method}` is not JSON"))?;
            if answer["id"] != json!(id) {
                continue;
            }
            if let Some(error) = answer.get("error") {
                bail!("the service refused `{method}`: {error}");
            }
            return Ok(answer["result"].clone());
        }
    }
}

/// The running service.
struct Service {
    process: c2_supervisor::Process,
    _stdin: c2_supervisor::ProcessStdin,
    socket: PathBuf,
}

impl Service {
    /// Starts `c2-plugins --plugins-dir PLUGINS serve --socket` and waits until it answers.
    fn start(runtime: &Runtime, cli: &Path, plugins: &Path, cwd: &Path) -> Result<Self> {
        let spec = c2_supervisor::ProcessSpec::new(cli, cwd)
            .arg("--plugins-dir")
            .arg(plugins)
            .args(["serve", "--socket"])
            .label("bench-serve");
        let spawned = runtime.block_on(async {
            let spawned = c2_supervisor::spawn(&spec, &c2_supervisor::SupervisorOptions::default())
                .context("could not start c2-plugins serve")?;
            // Nothing is expected on stdout; drained anyway so the service can never block on it.
            let mut stdout = spawned.stdout;
            tokio::spawn(async move {
                tokio::io::copy(&mut stdout, &mut tokio::io::sink())
                    .await
                    .ok();
            });
            anyhow::Ok((spawned.process, spawned.stdin))
        })?;
        let service = Self {
            process: spawned.0,
            _stdin: spawned.1,
            socket: plugins.join(SOCKET_FILE),
        };
        let deadline = Instant::now() + SERVICE_START;
        loop {
            match RawRelay::connect(&service.socket) {
                Ok(_) => return Ok(service),
                Err(error) if Instant::now() >= deadline => {
                    let tail = service.process.stderr_tail().join("\n");
                    return Err(error.context(format!(
                        "c2-plugins serve did not answer within {SERVICE_START:?}; its stderr:\n{tail}"
                    )));
                }
                Err(_) => {
                    // Let the runtime drain the service's output meanwhile.
                    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
                }
            }
        }
    }

    /// The service process itself (under the supervisor shim, the shim's child), checked to be
    /// `c2-plugins` so its figures are not the shim's.
    fn pid(&self) -> Result<u32> {
        let pid = self
            .process
            .program_pid()
            .context("the service's pid is not known")?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() != "c2-plugins" {
            bail!(
                "process {pid} is `{}`, not the c2-plugins service",
                comm.trim_end()
            );
        }
        Ok(pid)
    }
}

/// One TypeScript client round's samples, microseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TsRound {
    invoke_us: Vec<f64>,
    round_trip_us: Vec<f64>,
}

/// One `c2-plugins invoke COMMAND` through the service; `Ok(true)` when it exited 0.
fn cli_invoke(cli: &Path, plugins: &Path, command: &str, args: &str) -> Result<bool> {
    let mut call = child::command(cli);
    call.arg("--plugins-dir")
        .arg(plugins)
        .args(["invoke", command, "--args", args])
        .stderr(std::process::Stdio::null());
    let (status, _) = child::run(&mut call, CALL_LIMIT)?;
    Ok(status.success())
}

/// Times `calls` CLI calls of `command`; `expect_ok` says whether each must succeed.
fn cli_side(
    cli: &Path,
    plugins: &Path,
    command: &str,
    args: &str,
    calls: usize,
    expect_ok: bool,
) -> Result<Vec<f64>> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let ok = cli_invoke(cli, plugins, command, args)?;
        samples.push(micros(start.elapsed()));
        if ok != expect_ok {
            bail!(
                "`c2-plugins invoke {command}` through the service {}",
                if ok { "succeeded" } else { "failed" }
            );
        }
    }
    Ok(samples)
}

fn ts_round(socket: &Path, calls: usize) -> Result<TsRound> {
    let script = crate::root().join("bench/relay-client.mjs");
    let mut node = child::command("node");
    node.arg(script)
        .arg(socket)
        .arg(ECHO)
        .arg(calls.to_string())
        .arg(text_of(100).len().to_string());
    let (status, out) = child::run(&mut node, CALL_LIMIT)?;
    if !status.success() {
        bail!("the TypeScript relay client failed ({status}); its stderr is above");
    }
    serde_json::from_slice(&out).context("the TypeScript relay client's output is not its JSON")
}

/// Context switches of every thread of `pid` over `seconds` of idleness, per minute.
fn idle_wakeups_per_minute(runtime: &Runtime, pid: &str, seconds: u64) -> f64 {
    let before = context_switches(pid);
    let start = Instant::now();
    runtime.block_on(async { tokio::time::sleep(Duration::from_secs(seconds)).await });
    let after = context_switches(pid);
    (after.saturating_sub(before)) as f64 * 60.0 / start.elapsed().as_secs_f64()
}

/// All the relay figures.
pub(crate) fn measure(
    runtime: &Runtime,
    affinity: &Affinity,
    rig: &Rig,
    fixture: &Path,
    cli: &Path,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let plugins = dir.path().join("plugins");
    // The service's bundle: the fixture behind a launcher script, so it fits the default
    // per-file limit the service runs with; installed by an in-process host that then closes.
    let bundle = write_bundle(
        &dir.path().join("bundles"),
        "bench-relay",
        &[ECHO.to_owned()],
        BundleRuntime::Launcher(fixture),
    )?;
    let id = runtime.block_on(async {
        let mut options = HostOptions::new(plugins.clone());
        options.working_dir = Some(dir.path().to_path_buf());
        let host = c2_contributions::open(options).await?;
        let id = install_ready(&host, &bundle).await?;
        host.shutdown().await;
        anyhow::Ok(id)
    })?;
    let service = Service::start(runtime, cli, &plugins, dir.path())?;
    let args = json!({ "text": text_of(100) }).to_string();
    // The first call activates the runtime inside the service; the service then reports it
    // running, which also proves the CLI went through the service and not in-process.
    if !cli_invoke(cli, &plugins, ECHO, &args)? {
        bail!("`c2-plugins invoke {ECHO}` failed against the bench's service");
    }
    let mut check = RawRelay::connect(&service.socket)?;
    let pid = check.request("plugins/runtimePid", json!({"id": id}))?;
    if !pid["pid"].is_u64() {
        bail!("the CLI's invoke did not go through the service: it runs no runtime ({pid})");
    }
    drop(check);

    let n = plan.relay_calls;
    let in_process_args = json!({ "text": text_of(100) });
    let errors = RefCell::new(Vec::new());
    let ts_round_trips: RefCell<[Rounds; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let mut in_process = |_mode: Mode| {
        runtime.block_on(async {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                if let Err(error) = rig.invoke(in_process_args.clone()).await {
                    errors.borrow_mut().push(error);
                    break;
                }
                samples.push(micros(start.elapsed()));
            }
            samples
        })
    };
    let mut cli_warm = |_mode: Mode| {
        cli_side(cli, &plugins, ECHO, &args, n, true).unwrap_or_else(|error| {
            errors.borrow_mut().push(error);
            Vec::new()
        })
    };
    let mut cli_trip = |_mode: Mode| {
        cli_side(cli, &plugins, MISSING, "{}", n, false).unwrap_or_else(|error| {
            errors.borrow_mut().push(error);
            Vec::new()
        })
    };
    let mut ts = |mode: Mode| match ts_round(&service.socket, n) {
        Ok(round) => {
            ts_round_trips.borrow_mut()[mode_index(mode)].push(round.round_trip_us);
            round.invoke_us
        }
        Err(error) => {
            errors.borrow_mut().push(error);
            Vec::new()
        }
    };
    let by_mode = interleave_modes(
        affinity,
        plan.rounds,
        &mut [&mut in_process, &mut cli_warm, &mut cli_trip, &mut ts],
    )?;
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("a relay call failed"));
    }
    let ts_round_trips = ts_round_trips.into_inner();
    for (m, mode) in Mode::BOTH.into_iter().enumerate() {
        let s = mode.suffix();
        let p50 = |rounds: &Rounds| median_over_rounds(rounds, median);
        let sides = &by_mode[m];
        let in_process = p50(&sides[0]);
        let clients = [
            ("cli", p50(&sides[1]), p50(&sides[2])),
            ("ts", p50(&sides[3]), p50(&ts_round_trips[m])),
        ];
        for (client, invoke, round_trip) in clients {
            // The bar of issue 21: at most 1.5x the in-process invoke plus one local round trip.
            figures.push(Figure {
                name: format!("relay_{client}_invoke_p50{s}"),
                value: invoke,
                unit: "us",
                baseline: format!("1.5x_inprocess_p50+{client}_round_trip{s}"),
                baseline_value: 1.5 * in_process + round_trip,
                bar: Bar::RatioAtMost(1.0),
            });
            figures.push(Figure {
                name: format!("relay_{client}_round_trip_p50{s}"),
                value: round_trip,
                unit: "us",
                baseline: format!("relay_inprocess_invoke_p50{s}"),
                baseline_value: in_process,
                bar: Bar::None,
            });
        }
    }
    affinity.apply(Mode::Free)?;
    let pid = service.pid()?.to_string();
    let wakeups = idle_wakeups_per_minute(runtime, &pid, plan.idle_seconds);
    let rss = rss_kib_of(&pid).map_or(f64::NAN, |kib| kib as f64);
    figures.push(Figure {
        name: "relay_idle_rss_kib".to_owned(),
        value: rss,
        unit: "KiB",
        baseline: "-".to_owned(),
        baseline_value: f64::NAN,
        bar: Bar::None,
    });
    figures.push(Figure {
        name: "relay_idle_wakeups_per_min".to_owned(),
        value: wakeups,
        unit: "switches/min",
        baseline: "-".to_owned(),
        baseline_value: f64::NAN,
        bar: Bar::None,
    });
    let report = runtime.block_on(service.process.stop());
    if report.forced {
        bail!("c2-plugins serve did not stop on SIGTERM within the grace period: killed");
    }
    Ok(())
}
