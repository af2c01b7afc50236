//! `cargo xtask bench`: every performance figure of the project, each a ratio to a baseline
//! measured in the same run, because absolute times on shared machines drift.
//!
//! `bench` builds the fixture, the SDK bench plugin, the CLI and this crate in release (and,
//! with `--peers`, the rmcp peer crate in bench/peers), then re-runs itself as
//! `cargo run --release -p xtask -- bench-run`, so the measured code is optimized whatever
//! profile `cargo xtask` itself was built with. Rounds of a figure and its baseline are
//! interleaved, free and pinned to one CPU, and summarised by medians (see `stats` and `pin`);
//! the report names the machine's state and flags a run that is not a measurement (`machine`).
//! docs/performance.md explains each figure and records the latest run.

mod child;
mod cpu;
mod echo;
mod host;
mod langsdk;
mod machine;
mod memory;
mod peers;
mod pin;
mod procfs;
mod relay;
mod report;
mod stats;
mod store;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::{report as say, root, step};

/// How much work each figure does; `--quick` is a smoke run, not a measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Rounds of every interleaved figure.
    rounds: usize,
    /// Timed 100-byte invokes (and echoes) per round.
    invokes_per_round: usize,
    /// Timed 64 KiB invokes (and echoes) per round.
    big_per_round: usize,
    /// Invokes per throughput sample, both serial and 64 in flight.
    throughput_calls: usize,
    /// Cold activations (and unloads) measured: enough that the p99 is not just the maximum.
    cold_rounds: usize,
    /// Calls per sample of the in-process figures (dispatch does ten times as many).
    cpu_iterations: usize,
    /// Collections per sample of the 2,000-file bundle.
    collect_iterations: usize,
    /// Installed bundles for the memory figure and the large store of the store figures.
    dormant_bundles: usize,
    /// Bundles of each store of `list_bytes_independence` (3 MB and 3 KB each).
    heavy_bundles: usize,
    /// Pairs of memory probes.
    probe_rounds: usize,
    /// Calls per round of the relay figures (the CLI's are one process each).
    relay_calls: usize,
    /// The relay service's idle window for its wake-ups, in seconds.
    idle_seconds: u64,
    /// Cold starts per round of the rmcp peer.
    peer_cold: usize,
}

impl Plan {
    const FULL: Self = Self {
        rounds: 15,
        invokes_per_round: 1_000,
        big_per_round: 200,
        throughput_calls: 4_096,
        cold_rounds: 200,
        cpu_iterations: 200,
        collect_iterations: 3,
        dormant_bundles: 1_000,
        heavy_bundles: 60,
        probe_rounds: 3,
        relay_calls: 100,
        idle_seconds: 15,
        peer_cold: 10,
    };
    const QUICK: Self = Self {
        rounds: 3,
        invokes_per_round: 100,
        big_per_round: 20,
        throughput_calls: 256,
        cold_rounds: 4,
        cpu_iterations: 10,
        collect_iterations: 1,
        dormant_bundles: 20,
        heavy_bundles: 4,
        probe_rounds: 1,
        relay_calls: 10,
        idle_seconds: 2,
        peer_cold: 2,
    };
}

/// The groups of figures, in the order they run; `--only` picks some.
const PHASES: &[&str] = &[
    "invoke",
    "64k",
    "throughput",
    "cold",
    "sdk",
    "langsdk",
    "relay",
    "validate",
    "collect",
    "dispatch",
    "dormant",
    "store",
];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    json: bool,
    quick: bool,
    /// Also the rmcp peer comparison (which needs, and so runs, the `sdk` phase).
    peers: bool,
    /// Phases to run; empty runs all.
    only: Vec<String>,
}

impl Options {
    fn runs(&self, phase: &str) -> bool {
        self.only.is_empty()
            || self.only.iter().any(|p| p == phase)
            || (phase == "sdk" && self.peers)
    }
}

fn parse_options(args: &[String]) -> Result<Options> {
    let mut options = Options {
        json: false,
        quick: false,
        peers: false,
        only: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let format = match arg.as_str() {
            "--quick" => {
                options.quick = true;
                continue;
            }
            "--peers" => {
                options.peers = true;
                continue;
            }
            "--only" => {
                let list = args.next().map(String::as_str).unwrap_or_default();
                for phase in list.split(',').filter(|p| !p.is_empty()) {
                    if !PHASES.contains(&phase) {
                        bail!(
                            "unknown bench phase `{phase}`: pick from {}",
                            PHASES.join(", ")
                        );
                    }
                    options.only.push(phase.to_owned());
                }
                if options.only.is_empty() {
                    bail!(
                        "--only takes a comma-separated list of {}",
                        PHASES.join(", ")
                    );
                }
                continue;
            }
            "--format" => args.next().map(String::as_str),
            other => match other.strip_prefix("--format=") {
                Some(format) => Some(format),
                None => {
                    bail!(
                        "unknown bench option `{other}`: use --format json|table, --quick, --peers and --only"
                    )
                }
            },
        };
        options.json = match format {
            Some("json") => true,
            Some("table") => false,
            _ => bail!("--format takes `json` or `table`"),
        };
    }
    Ok(options)
}

fn forwarded(options: &Options) -> Vec<String> {
    let mut args = Vec::new();
    if options.json {
        args.extend(["--format".to_owned(), "json".to_owned()]);
    }
    if options.quick {
        args.push("--quick".to_owned());
    }
    if options.peers {
        args.push("--peers".to_owned());
    }
    if !options.only.is_empty() {
        args.extend(["--only".to_owned(), options.only.join(",")]);
    }
    args
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// Waits (bounded) for the 1-minute load average to come under the publishable limit, saying
/// so; a run that starts over it anyway is flagged as before.
fn wait_for_a_quiet_machine(cpus: usize) {
    let limit = machine::LOAD_PER_CPU * cpus as f64;
    let mut said = false;
    let settled = machine::settle_load(
        limit,
        machine::LOAD_SETTLE_BOUND,
        machine::LOAD_SETTLE_POLL,
        || procfs::load_average().map(|l| l[0]),
        |poll| {
            if !said {
                say(&format!(
                    "xtask: bench: the 1-minute load average is over {limit:.2} ({} per CPU); waiting up to {}s for it to settle (a build just ran?)",
                    machine::LOAD_PER_CPU,
                    machine::LOAD_SETTLE_BOUND.as_secs()
                ));
                said = true;
            }
            std::thread::sleep(poll);
        },
    );
    match settled {
        machine::Settled::Quiet { load, waited } if !waited.is_zero() => say(&format!(
            "xtask: bench: load average {load:.2} after {}s; measuring",
            waited.as_secs()
        )),
        machine::Settled::StillBusy { load } => say(&format!(
            "xtask: bench: load average still {load:.2}; measuring anyway, and the run will be flagged"
        )),
        machine::Settled::Quiet { .. } | machine::Settled::Unknown => {}
    }
}

/// `cargo xtask bench`: build in release, then measure in a release build of this crate.
pub(crate) fn bench(args: &[String]) -> Result<()> {
    let options = parse_options(args)?;
    step(
        "cargo build --release -p c2-testkit -p c2-cli -p c2-supervisor --bins",
        &[
            "build",
            "--release",
            "--locked",
            "-p",
            "c2-testkit",
            "-p",
            "c2-cli",
            "-p",
            "c2-supervisor",
            "--bins",
        ],
    )?;
    step(
        "cargo build --release -p c2-plugin-sdk --example bench-echo",
        &[
            "build",
            "--release",
            "--locked",
            "-p",
            "c2-plugin-sdk",
            "--example",
            "bench-echo",
        ],
    )?;
    let target = target_dir();
    let fixture = target.join("release/c2-fixture");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let peers = if options.peers {
        Some(peers::build(&target)?)
    } else {
        None
    };
    say("xtask: cargo run --release -p xtask -- bench-run");
    #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
    let status = std::process::Command::new(cargo)
        .args([
            "run",
            "--release",
            "--locked",
            "--quiet",
            "-p",
            "xtask",
            "--",
            "bench-run",
        ])
        .args(forwarded(&options))
        .env("C2_FIXTURE_BIN", &fixture)
        .env(SDK_BIN, target.join("release/examples/bench-echo"))
        .env(CLI_BIN, target.join("release/c2-plugins"))
        .envs(peers.map(|path| (peers::BIN, path)))
        // The host's shim is the small dedicated binary, as for an embedder that ships it:
        // re-entering this 79 MB executable costs every activation a far larger exec.
        .env(
            c2_supervisor::shim::SHIM_ENV,
            target_dir()
                .join("release")
                .join(c2_supervisor::shim::SHIM_BIN),
        )
        .current_dir(root())
        .status()
        .context("could not run the release bench")?;
    if !status.success() {
        bail!("the release bench failed ({status})");
    }
    Ok(())
}

/// The variable naming the SDK bench plugin's binary for `bench-run`.
const SDK_BIN: &str = "C2_BENCH_SDK_BIN";

/// The variable naming the `c2-plugins` binary for `bench-run`.
const CLI_BIN: &str = "C2_PLUGINS_BIN";

/// `bench-run`: the measurements themselves (or, with `--probe-dormant DIR`, the memory probe).
pub(crate) fn bench_run(args: &[String]) -> Result<()> {
    if let [flag, dir] = args
        && flag == "--probe-dormant"
    {
        return memory::probe(std::path::Path::new(dir));
    }
    if let [flag, dir, n] = args
        && flag == "--make-store"
    {
        let n = n
            .parse()
            .context("--make-store DIR N: N is a count of bundles")?;
        return store::make_store(&fixture_path()?, std::path::Path::new(dir), n);
    }
    if let [flag, dir] = args {
        match flag.as_str() {
            "--probe-open" => return store::probe_open(std::path::Path::new(dir)),
            "--probe-read" => return store::probe_read(std::path::Path::new(dir)),
            _ => {}
        }
    }
    let options = parse_options(args)?;
    if cfg!(debug_assertions) {
        say("xtask: warning: bench-run is a debug build; run `cargo xtask bench` for real figures");
    }
    let plan = if options.quick {
        Plan::QUICK
    } else {
        Plan::FULL
    };
    let fixture = fixture_path()?;
    let quiet = machine::QuietFloor::load(&root())?;
    let affinity = pin::Affinity::detect()?;
    if !options.quick {
        wait_for_a_quiet_machine(affinity.cpus);
    }
    let load_start = procfs::load_average();
    say(&format!(
        "xtask: bench: {} CPUs, pinned rounds on CPU {}, load average {}",
        affinity.cpus,
        affinity.cpu,
        load_start.map_or("unknown".to_owned(), |l| format!("{:.2}", l[0]))
    ));
    say("xtask: bench: the floor, free and pinned");
    let [floor, floor_pinned] = floor_probe(&fixture, &affinity, &plan)?;
    let figures = measure(&fixture, &affinity, &plan, &options)?;
    check_rows(&figures, &options)?;
    let machine = machine::Machine {
        cpus: affinity.cpus,
        pinned_cpu: affinity.cpu,
        load_start,
        load_end: procfs::load_average(),
        floor,
        floor_pinned,
        quiet,
        quick: options.quick,
    };
    #[expect(clippy::print_stdout, reason = "the figures are the task's output")]
    if options.json {
        println!("{}", report::json(&figures, &machine));
    } else {
        print!("{}", report::table(&figures, &machine));
    }
    let flagged = report::flagged(&figures, &machine);
    let missed = |flagged_rows: bool| -> Vec<&str> {
        figures
            .iter()
            .zip(&flagged)
            .filter(|(f, flagged)| f.pass() == Some(false) && **flagged == flagged_rows)
            .map(|(f, _)| f.name.as_str())
            .collect()
    };
    let (failed, failed_flagged) = (missed(false), missed(true));
    if !failed.is_empty() {
        say(&format!(
            "xtask: {} bar(s) missed: {}; docs/performance.md says why",
            failed.len(),
            failed.join(", ")
        ));
    }
    if !failed_flagged.is_empty() {
        say(&format!(
            "xtask: {} bar(s) missed on flagged rows, which are not a measurement: {}",
            failed_flagged.len(),
            failed_flagged.join(", ")
        ));
    }
    let reasons = machine.reasons();
    if !reasons.is_empty() {
        let texts: Vec<&str> = reasons.iter().map(|r| r.text.as_str()).collect();
        let whole = reasons.iter().any(|r| r.scope == machine::Scope::All);
        say(&format!(
            "xtask: bench: FLAGGED ({}): {}",
            texts.join("; "),
            if whole {
                "not a measurement, do not publish"
            } else {
                "do not publish the rows marked *; the others are a measurement"
            }
        ));
    }
    Ok(())
}

/// Rows measured in both modes, by phase: each appears as `name` and `name_pinned`.
const BOTH_MODES: &[(&str, &[&str])] = &[
    (
        "invoke",
        &[
            "invoke_warm_p50",
            "invoke_warm_p99",
            "invoke_ctx_switches",
            "echo_async_p50",
            "echo_async_p99",
        ],
    ),
    ("64k", &["invoke_64k"]),
    (
        "store",
        &[
            "host_open_1000",
            "cli_list_1000",
            "install_into_1000",
            "list_bytes_independence",
            "replace_installed",
        ],
    ),
    (
        "cold",
        &["cold_activation", "unload_p99", "unload_vs_kill_p99"],
    ),
    (
        "sdk",
        &[
            "sdk_invoke_warm_p50",
            "sdk_invoke_warm_p99",
            "sdk_invoke_ctx_switches",
            "sdk_invoke_64k",
            "sdk_cold_activation",
            "sdk_unload_p99",
            "sdk_unload_vs_kill_p99",
        ],
    ),
    (
        "relay",
        &[
            "relay_cli_invoke_p50",
            "relay_cli_round_trip_p50",
            "relay_ts_invoke_p50",
            "relay_ts_round_trip_p50",
        ],
    ),
    (
        "peers",
        &[
            "rmcp_warm_p50",
            "rmcp_64k",
            "rmcp_cold",
            "vs_rmcp_warm_p50",
            "vs_rmcp_64k",
            "vs_rmcp_cold",
        ],
    ),
];

/// Rows measured once, by phase.
const ONE_MODE: &[(&str, &[&str])] = &[
    ("invoke", &["health_meter_share"]),
    ("throughput", &["invoke_throughput"]),
    (
        "langsdk",
        &[
            "ts_sdk_call_p50",
            "ts_sdk_cold",
            "py_sdk_call_p50",
            "py_sdk_cold",
        ],
    ),
    (
        "relay",
        &["relay_idle_rss_kib", "relay_idle_wakeups_per_min"],
    ),
    ("validate", &["validate_manifest"]),
    ("collect", &["collect_bundle"]),
    (
        "dispatch",
        &[
            "dispatch_scale",
            "dispatch_scale_spread",
            "register_dispose_scale",
        ],
    ),
    ("dormant", &["dormant_bundle_kib"]),
];

/// Every row a run with `options` must report, in no particular order.
fn expected_rows(options: &Options) -> Vec<String> {
    let runs = |phase: &str| {
        if phase == "peers" {
            options.peers
        } else {
            options.runs(phase)
        }
    };
    let mut rows = Vec::new();
    for (phase, names) in BOTH_MODES {
        if runs(phase) {
            for name in *names {
                rows.push((*name).to_owned());
                rows.push(format!("{name}{}", pin::Mode::Pinned.suffix()));
            }
        }
    }
    for (phase, names) in ONE_MODE {
        if runs(phase) {
            rows.extend(names.iter().map(|n| (*n).to_owned()));
        }
    }
    rows
}

/// Fails the run when a row it should have reported is missing (or reported twice), so
/// `--quick` proves the whole harness ran.
fn check_rows(figures: &[report::Figure], options: &Options) -> Result<()> {
    let mut names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
        bail!("the bench reported `{}` twice", twice[0]);
    }
    let missing: Vec<String> = expected_rows(options)
        .into_iter()
        .filter(|row| names.binary_search(&row.as_str()).is_err())
        .collect();
    if !missing.is_empty() {
        bail!("the bench did not report {}", missing.join(", "));
    }
    Ok(())
}

/// The machine's own floor, free and pinned: the fixture's raw echo over blocking pipes, the
/// same round trip as `echo_floor_p50`, measured first so every run (whatever `--only` says)
/// can be judged against `bench/quiet-floor.json`.
fn floor_probe(
    fixture: &std::path::Path,
    affinity: &pin::Affinity,
    plan: &Plan,
) -> Result<[machine::Spread; 2]> {
    let (_, line) = host::payload(100, host::ECHO);
    let mut echo = echo::StdEcho::spawn(fixture)?;
    let mut errors = Vec::new();
    let n = plan.invokes_per_round;
    let mut side = |_mode: pin::Mode| {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let start = std::time::Instant::now();
            if let Err(error) = echo.round_trip(&line) {
                errors.push(error);
                break;
            }
            samples.push(stats::micros(start.elapsed()));
        }
        samples
    };
    let [free, pinned] = pin::interleave_modes(affinity, plan.rounds, &mut [&mut side])?;
    if let Some(error) = errors.into_iter().next() {
        return Err(error.context("the floor probe failed"));
    }
    echo.kill_and_wait()?;
    Ok([
        machine::Spread::of(&free[0]),
        machine::Spread::of(&pinned[0]),
    ])
}

/// A binary `bench` built and named in `variable`, or next to this executable.
fn built(variable: &str, relative: &str) -> Result<PathBuf> {
    let path = match std::env::var_os(variable) {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()?
            .parent()
            .context("the running executable has no directory")?
            .join(relative),
    };
    if !path.is_file() {
        bail!(
            "no binary at {} ({variable}): run `cargo xtask bench`, which builds it",
            path.display()
        );
    }
    Ok(path)
}

fn fixture_path() -> Result<PathBuf> {
    let path = match std::env::var_os("C2_FIXTURE_BIN") {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()?
            .parent()
            .context("the running executable has no directory")?
            .join("c2-fixture"),
    };
    if !path.is_file() {
        bail!(
            "no fixture binary at {}: run `cargo xtask bench`, which builds it",
            path.display()
        );
    }
    Ok(path)
}

fn measure(
    fixture: &std::path::Path,
    affinity: &pin::Affinity,
    plan: &Plan,
    options: &Options,
) -> Result<Vec<report::Figure>> {
    // The host's own runtime flavour: the CLI runs a current-thread runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut figures = Vec::new();
    if ["invoke", "64k", "throughput", "cold", "relay"]
        .iter()
        .any(|p| options.runs(p))
    {
        let subject = host::Subject::fixture(fixture);
        let rig = runtime.block_on(host::Rig::new(&subject))?;
        if options.runs("invoke") {
            say("xtask: bench: invoke latency, context switches, async echo (free and pinned)");
            host::warm(&runtime, affinity, &rig, &subject, plan, &mut figures)?;
            affinity.apply(pin::Mode::Pinned)?;
            cpu::health_meter(plan, &mut figures)?;
            affinity.apply(pin::Mode::Free)?;
        }
        if options.runs("64k") {
            say("xtask: bench: 64 KiB invokes (free and pinned)");
            host::big(&runtime, affinity, &rig, &subject, plan, &mut figures)?;
        }
        if options.runs("throughput") {
            say("xtask: bench: throughput");
            affinity.apply(pin::Mode::Free)?;
            host::throughput(&runtime, &rig, plan, &mut figures)?;
        }
        if options.runs("relay") {
            say(
                "xtask: bench: the relay (c2-plugins serve) from the CLI and the TypeScript client",
            );
            let cli = built(CLI_BIN, "c2-plugins")?;
            relay::measure(&runtime, affinity, &rig, fixture, &cli, plan, &mut figures)?;
        }
        if options.runs("cold") {
            say("xtask: bench: cold activation and unload (free and pinned)");
            host::cold_and_unload(&runtime, affinity, &rig, &subject, plan, &mut figures)?;
        }
        runtime.block_on(rig.host.shutdown());
    }
    if options.runs("sdk") {
        let sdk = built(SDK_BIN, "examples/bench-echo")?;
        let subject = host::Subject::sdk(&sdk);
        let rig = runtime.block_on(host::Rig::new(&subject))?;
        say("xtask: bench: the SDK plugin: warm, 64 KiB, cold and unload (free and pinned)");
        host::warm(&runtime, affinity, &rig, &subject, plan, &mut figures)?;
        host::big(&runtime, affinity, &rig, &subject, plan, &mut figures)?;
        host::cold_and_unload(&runtime, affinity, &rig, &subject, plan, &mut figures)?;
        runtime.block_on(rig.host.shutdown());
    }
    if options.runs("langsdk") {
        affinity.apply(pin::Mode::Free)?;
        say("xtask: bench: the TypeScript and Python SDKs against their own language");
        langsdk::measure(plan, &mut figures)?;
    }
    if options.peers {
        say("xtask: bench: the rmcp peer (bench/peers), free and pinned");
        let bin = built(peers::BIN, "c2-bench-peers")?;
        peers::measure(&bin, affinity, plan, &mut figures)?;
    }
    affinity.apply(pin::Mode::Free)?;
    if options.runs("validate") {
        say("xtask: bench: validate_manifest");
        cpu::validate_manifest(plan, &mut figures)?;
    }
    if options.runs("collect") {
        say("xtask: bench: collect_bundle");
        cpu::collect_bundle(plan, &mut figures)?;
    }
    if options.runs("dispatch") {
        say("xtask: bench: dispatch_scale");
        cpu::dispatch_scale(&runtime, plan, &mut figures)?;
        say("xtask: bench: register_dispose_scale");
        cpu::register_dispose_scale(&runtime, plan, &mut figures)?;
    }
    if options.runs("dormant") {
        say(&format!(
            "xtask: bench: dormant memory over {} bundles",
            plan.dormant_bundles
        ));
        memory::dormant(&runtime, fixture, plan, &mut figures)?;
    }
    if options.runs("store") {
        say(&format!(
            "xtask: bench: the store at {} bundles against 10 (free and pinned)",
            plan.dormant_bundles
        ));
        let cli = built(CLI_BIN, "c2-plugins")?;
        store::measure(&runtime, affinity, fixture, &cli, plan, &mut figures)?;
    }
    Ok(figures)
}

#[cfg(test)]
mod tests;
