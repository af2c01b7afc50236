//! `cargo xtask bench`: every performance figure of the project, each a ratio to a baseline
//! measured in the same run, because absolute times on shared machines drift.
//!
//! `bench` builds the fixture and this crate in release, then re-runs itself as
//! `cargo run --release -p xtask -- bench-run`, so the measured code is optimized whatever
//! profile `cargo xtask` itself was built with. Rounds of a figure and its baseline are
//! interleaved and summarised by medians (see `stats`). docs/performance.md explains each
//! figure and records the latest run.

mod cpu;
mod echo;
mod host;
mod memory;
mod procfs;
mod report;
mod stats;

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
    /// Installed bundles for the memory figure.
    dormant_bundles: usize,
    /// Pairs of memory probes.
    probe_rounds: usize,
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
        probe_rounds: 3,
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
        probe_rounds: 1,
    };
}

/// The groups of figures, in the order they run; `--only` picks some.
const PHASES: &[&str] = &[
    "invoke",
    "64k",
    "throughput",
    "cold",
    "validate",
    "collect",
    "dispatch",
    "dormant",
];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    json: bool,
    quick: bool,
    /// Phases to run; empty runs all.
    only: Vec<String>,
}

impl Options {
    fn runs(&self, phase: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == phase)
    }
}

fn parse_options(args: &[String]) -> Result<Options> {
    let mut options = Options {
        json: false,
        quick: false,
        only: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let format = match arg.as_str() {
            "--quick" => {
                options.quick = true;
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
                    bail!("unknown bench option `{other}`: use --format json|table and --quick")
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
    if !options.only.is_empty() {
        args.extend(["--only".to_owned(), options.only.join(",")]);
    }
    args
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// `cargo xtask bench`: build in release, then measure in a release build of this crate.
pub(crate) fn bench(args: &[String]) -> Result<()> {
    let options = parse_options(args)?;
    step(
        "cargo build --release -p c2-testkit -p c2-supervisor --bins",
        &[
            "build",
            "--release",
            "--locked",
            "-p",
            "c2-testkit",
            "-p",
            "c2-supervisor",
            "--bins",
        ],
    )?;
    let fixture = target_dir().join("release/c2-fixture");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
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

/// `bench-run`: the measurements themselves (or, with `--probe-dormant DIR`, the memory probe).
pub(crate) fn bench_run(args: &[String]) -> Result<()> {
    if let [flag, dir] = args
        && flag == "--probe-dormant"
    {
        return memory::probe(std::path::Path::new(dir));
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
    let figures = measure(&fixture, &plan, &options)?;
    #[expect(clippy::print_stdout, reason = "the figures are the task's output")]
    if options.json {
        println!("{}", report::json(&figures));
    } else {
        print!("{}", report::table(&figures));
    }
    let failed: Vec<&str> = figures
        .iter()
        .filter(|f| f.pass() == Some(false))
        .map(|f| f.name)
        .collect();
    if !failed.is_empty() {
        say(&format!(
            "xtask: {} bar(s) missed: {}; docs/performance.md says why",
            failed.len(),
            failed.join(", ")
        ));
    }
    Ok(())
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
    plan: &Plan,
    options: &Options,
) -> Result<Vec<report::Figure>> {
    // The host's own runtime flavour: the CLI runs a current-thread runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut figures = Vec::new();
    if ["invoke", "64k", "throughput", "cold"]
        .iter()
        .any(|p| options.runs(p))
    {
        let rig = runtime.block_on(host::Rig::new(fixture))?;
        if options.runs("invoke") {
            say("xtask: bench: invoke latency, context switches, async echo");
            host::warm(&runtime, &rig, fixture, plan, &mut figures)?;
        }
        if options.runs("64k") {
            say("xtask: bench: 64 KiB invokes");
            host::big(&runtime, &rig, fixture, plan, &mut figures)?;
        }
        if options.runs("throughput") {
            say("xtask: bench: throughput");
            host::throughput(&runtime, &rig, plan, &mut figures)?;
        }
        if options.runs("cold") {
            say("xtask: bench: cold activation and unload");
            host::cold_and_unload(&runtime, &rig, fixture, plan, &mut figures)?;
        }
        runtime.block_on(rig.host.shutdown());
    }
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
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_accept_both_format_spellings_and_quick() {
        let json = Options {
            json: true,
            quick: true,
            only: Vec::new(),
        };
        assert_eq!(parse_options(&args("--format json --quick")).unwrap(), json);
        assert_eq!(parse_options(&args("--quick --format=json")).unwrap(), json);
        assert!(!parse_options(&args("--format table")).unwrap().json);
    }

    #[test]
    fn only_selects_phases_and_nothing_selects_all() {
        let options = parse_options(&args("--only throughput,64k")).unwrap();
        assert!(options.runs("throughput") && options.runs("64k"));
        assert!(!options.runs("invoke"));
        let all = parse_options(&[]).unwrap();
        assert!(PHASES.iter().all(|p| all.runs(p)));
    }

    #[test]
    fn unknown_options_and_formats_are_refused() {
        assert!(parse_options(&args("--fast")).is_err());
        assert!(parse_options(&args("--format yaml")).is_err());
        assert!(parse_options(&args("--format")).is_err());
        assert!(parse_options(&args("--only warp")).is_err());
        assert!(parse_options(&args("--only")).is_err());
    }

    #[test]
    fn options_survive_forwarding_to_the_release_run() {
        for text in [
            "",
            "--quick",
            "--format json",
            "--format json --quick --only invoke,dormant",
        ] {
            let options = parse_options(&args(text)).unwrap();
            assert_eq!(parse_options(&forwarded(&options)).unwrap(), options);
        }
    }
}
