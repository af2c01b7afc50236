//! The store figures: what opening, listing and installing cost as a user's store grows, and
//! what re-installing an installed bundle costs. Each is a whole fresh process (the CLI, or
//! this binary as a probe that opens a host), timed from spawn to exit, against the same work
//! on a small store or against the bare reads it cannot avoid, in the same rounds, free and
//! pinned.
//!
//! - `host_open_1000`: open a host on a store of N installed, trusted, enabled 10-command
//!   bundles and answer the first `commands`, against reading and parsing those N
//!   `installed.json` and `plugin.json` files.
//! - `cli_list_1000`: `c2-plugins list` on N bundles against 10.
//! - `install_into_1000`: `c2-plugins install --trust --enable` of one more bundle into a store
//!   of N against into one of 10 (each round uninstalls it again, untimed).
//! - `list_bytes_independence`: `c2-plugins list` on 60 bundles of 3 MB against 60 of 3 KB: the
//!   cost of a listing follows the rows, not the bytes in the store.
//! - `replace_installed`: `c2-plugins install` of a bundle that is installed, trusted and
//!   enabled, against installing it into a store where it is not.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use c2_host::Target;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::Plan;
use super::child;
use super::host::{BUNDLE_SETTLE, BundleRuntime, host_options, install_ready, write_bundle};
use super::pin::{Affinity, Mode, interleave_modes};
use super::report::{Bar, Figure};
use super::stats::{flatten, median, micros};

/// Commands per bundle of the large store, as in `dormant_bundle_kib`.
const COMMANDS: usize = 10;
/// Bundles of the small stores.
const SMALL: usize = 10;
/// The bytes of each heavy bundle's data file, and of each light one's.
const HEAVY_BYTES: usize = 3 * 1024 * 1024;
const LIGHT_BYTES: usize = 3 * 1024;
/// The longest one timed process may take.
const LIMIT: Duration = Duration::from_secs(120);

/// The child side of `host_open`: opens a host on the store under `root`, asks for the user
/// realm's commands, and prints their count.
pub(crate) fn probe_open(root: &Path) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let commands = runtime.block_on(async {
        let host = c2_contributions::open(host_options(root)).await?;
        let commands = host.commands(&Target::User)?.len();
        host.shutdown().await;
        anyhow::Ok(commands)
    })?;
    answer(&json!({ "commands": commands }));
    Ok(())
}

/// The child side of `host_open`'s baseline: reads and parses every bundle's `installed.json`
/// and `plugin.json` in the store under `root`, and prints how many it read.
pub(crate) fn probe_read(root: &Path) -> Result<()> {
    let plugins = root.join("plugins");
    let mut read = 0;
    #[expect(
        clippy::disallowed_methods,
        reason = "the baseline is the bare reads of the store's records"
    )]
    for entry in std::fs::read_dir(&plugins)? {
        let entry = entry?;
        // The store's own files (policy, locks) and dot-directories are not bundles.
        if !entry.file_type()?.is_dir() || entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let dir = entry.path();
        for name in ["installed.json", "bundle/plugin.json"] {
            let path = dir.join(name);
            #[expect(
                clippy::disallowed_methods,
                reason = "the baseline is the bare reads of the store's records"
            )]
            let bytes = std::fs::read(&path)
                .with_context(|| format!("could not read {}", path.display()))?;
            let _: Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            read += 1;
        }
    }
    answer(&json!({ "files": read }));
    Ok(())
}

fn answer(line: &Value) {
    #[expect(
        clippy::print_stdout,
        reason = "the probe answers its parent on stdout"
    )]
    {
        println!("{line}");
    }
}

/// A store under a temporary directory (`<root>/plugins`, as [`host_options`] has it).
struct Store {
    root: tempfile::TempDir,
}

impl Store {
    fn plugins(&self) -> PathBuf {
        self.root.path().join("plugins")
    }
}

/// Builds a store of `n` installed, trusted, enabled bundles, each with `extra` bytes of data.
fn build(runtime: &Runtime, fixture: &Path, n: usize, extra: usize, tag: &str) -> Result<Store> {
    let store = Store {
        root: tempfile::tempdir()?,
    };
    fill(runtime, fixture, store.root.path(), n, extra, tag)?;
    Ok(store)
}

/// `bench-run --make-store DIR N`: the large store of `host_open_1000` with `n` bundles, kept
/// under `dir` for profiling (`--plugins-dir DIR/plugins`, `HOME=DIR`).
pub(crate) fn make_store(fixture: &Path, dir: &Path, n: usize) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    fill(&runtime, fixture, dir, n, 0, "large")
}

fn fill(
    runtime: &Runtime,
    fixture: &Path,
    root: &Path,
    n: usize,
    extra: usize,
    tag: &str,
) -> Result<()> {
    let sources = root.join("sources");
    runtime.block_on(async {
        let host = c2_contributions::open(host_options(root)).await?;
        for i in 0..n {
            let commands: Vec<String> = (0..COMMANDS)
                .map(|c| format!("{tag}{i}.command{c}"))
                .collect();
            let bundle = write_bundle(
                &sources,
                &format!("bench-{tag}-{i:04}"),
                &commands,
                BundleRuntime::Launcher(fixture),
            )?;
            if extra > 0 {
                std::fs::create_dir_all(bundle.join("lib"))?;
                std::fs::write(bundle.join("lib/data.bin"), data(extra, i))?;
            }
            install_ready(&host, &bundle).await?;
        }
        host.shutdown().await;
        anyhow::Ok(())
    })
}

/// `len` bytes that differ from bundle to bundle (no two trees share a digest).
fn data(len: usize, seed: usize) -> Vec<u8> {
    let mut state = (seed as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Runs `command` to a successful end; its wall time in microseconds.
fn timed(command: &mut std::process::Command) -> Result<f64> {
    let start = Instant::now();
    let (status, out) = child::run(command, LIMIT)?;
    let elapsed = micros(start.elapsed());
    if !status.success() {
        bail!(
            "{:?} failed ({status}): {}",
            command.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out)
        );
    }
    Ok(elapsed)
}

fn cli(bin: &Path, store: &Store, args: &[&str]) -> std::process::Command {
    let mut command = child::command(bin);
    command
        .arg("--plugins-dir")
        .arg(store.plugins())
        .args(args)
        .env("HOME", store.root.path())
        .stderr(std::process::Stdio::null());
    command
}

fn probe(store: &Store, flag: &str) -> std::process::Command {
    let mut command = child::command(std::env::current_exe().unwrap_or_default());
    command.arg("bench-run").arg(flag).arg(store.root.path());
    command
}

/// One figure, free and pinned: the median of `measured` against that of `base`.
struct Pair<'a> {
    name: &'static str,
    baseline: &'static str,
    bar: f64,
    measured: Box<dyn FnMut() -> Result<f64> + 'a>,
    base: Box<dyn FnMut() -> Result<f64> + 'a>,
}

fn run_pair(
    affinity: &Affinity,
    rounds: usize,
    pair: Pair<'_>,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let Pair {
        name,
        baseline,
        bar,
        mut measured,
        mut base,
    } = pair;
    // One untimed run of each side first: page cache, stamp manifests, the CLI's binary.
    measured()?;
    base()?;
    let errors = RefCell::new(Vec::new());
    let by_mode = {
        let mut side_a = |_: Mode| sample(measured(), &errors);
        let mut side_b = |_: Mode| sample(base(), &errors);
        interleave_modes(affinity, rounds, &mut [&mut side_a, &mut side_b])?
    };
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context(format!("a round of {name} failed")));
    }
    for (m, mode) in Mode::BOTH.into_iter().enumerate() {
        figures.push(Figure {
            name: format!("{name}{}", mode.suffix()),
            value: median(&flatten(&by_mode[m][0])).unwrap_or(f64::NAN),
            unit: "us",
            baseline: format!("{baseline}{}", mode.suffix()),
            baseline_value: median(&flatten(&by_mode[m][1])).unwrap_or(f64::NAN),
            bar: Bar::RatioAtMost(bar),
        });
    }
    Ok(())
}

/// One round's sample, or none with the error kept.
fn sample(result: Result<f64>, errors: &RefCell<Vec<anyhow::Error>>) -> Vec<f64> {
    match result {
        Ok(micros) => vec![micros],
        Err(error) => {
            errors.borrow_mut().push(error);
            Vec::new()
        }
    }
}

/// Every store figure.
pub(crate) fn measure(
    runtime: &Runtime,
    affinity: &Affinity,
    fixture: &Path,
    bin: &Path,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let n = plan.dormant_bundles;
    let large = build(runtime, fixture, n, 0, "large")?;
    let small = build(runtime, fixture, SMALL, 0, "small")?;
    let heavy = build(runtime, fixture, plan.heavy_bundles, HEAVY_BYTES, "heavy")?;
    let light = build(runtime, fixture, plan.heavy_bundles, LIGHT_BYTES, "light")?;
    let replacing = build(runtime, fixture, SMALL, 0, "replacing")?;
    // The bundle the install figures add, and its installed id (the same in every store).
    let extra_dir = tempfile::tempdir()?;
    let extra = write_bundle(
        extra_dir.path(),
        "bench-extra",
        &["extra.command0".to_owned()],
        BundleRuntime::Launcher(fixture),
    )?;
    let extra_text = extra
        .to_str()
        .context("bundle path is not UTF-8")?
        .to_owned();
    let id = runtime.block_on(async {
        let host = c2_contributions::open(host_options(replacing.root.path())).await?;
        let id = install_ready(&host, &extra).await?;
        host.shutdown().await;
        anyhow::Ok(id)
    })?;
    // Stamp manifests vouch only for files older than the clock's resolution.
    std::thread::sleep(BUNDLE_SETTLE);
    let install = ["install", extra_text.as_str(), "--trust", "--enable"];
    let uninstall = ["uninstall", id.as_str()];

    run_pair(
        affinity,
        plan.rounds,
        Pair {
            name: "host_open_1000",
            baseline: "read_records_1000",
            bar: 3.0,
            measured: Box::new(|| timed(&mut probe(&large, "--probe-open"))),
            base: Box::new(|| timed(&mut probe(&large, "--probe-read"))),
        },
        figures,
    )?;
    run_pair(
        affinity,
        plan.rounds,
        Pair {
            name: "cli_list_1000",
            baseline: "cli_list_10",
            bar: 4.0,
            measured: Box::new(|| timed(&mut cli(bin, &large, &["list"]))),
            base: Box::new(|| timed(&mut cli(bin, &small, &["list"]))),
        },
        figures,
    )?;
    let into = |store: &Store| -> Result<f64> {
        let micros = timed(&mut cli(bin, store, &install))?;
        timed(&mut cli(bin, store, &uninstall))?;
        Ok(micros)
    };
    run_pair(
        affinity,
        plan.rounds,
        Pair {
            name: "install_into_1000",
            baseline: "install_into_10",
            bar: 1.5,
            measured: Box::new(|| into(&large)),
            base: Box::new(|| into(&small)),
        },
        figures,
    )?;
    run_pair(
        affinity,
        plan.rounds,
        Pair {
            name: "list_bytes_independence",
            baseline: "list_light_store",
            bar: 1.5,
            measured: Box::new(|| timed(&mut cli(bin, &heavy, &["list"]))),
            base: Box::new(|| timed(&mut cli(bin, &light, &["list"]))),
        },
        figures,
    )?;
    // `replacing` holds the extra bundle installed, trusted and enabled; `small` does not.
    run_pair(
        affinity,
        plan.rounds,
        Pair {
            name: "replace_installed",
            baseline: "install_fresh",
            bar: 1.5,
            measured: Box::new(|| timed(&mut cli(bin, &replacing, &install))),
            base: Box::new(|| into(&small)),
        },
        figures,
    )?;
    Ok(())
}
