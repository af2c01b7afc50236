//! `--peers`: the rmcp comparison. bench/peers is a crate of its own (not a workspace member,
//! so rmcp never enters the workspace's build or lock file); `bench` builds it in release and
//! this module runs its client round by round, free and pinned alternating. A pinned round
//! starts the client with this thread pinned, so the client, its runtime's threads and the
//! server it spawns inherit the one CPU.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::Plan;
use super::child;
use super::host::{mode_index, text_of};
use super::pin::{Affinity, Mode, interleave_modes};
use super::report::{Bar, Figure};
use super::stats::{Rounds, flatten, median, median_over_rounds};

/// The variable naming the peer binary for `bench-run`.
pub(crate) const BIN: &str = "C2_BENCH_PEERS_BIN";

/// The longest one client run may take (it runs `--warm`, `--big` and `--cold` calls).
const CLIENT_LIMIT: Duration = Duration::from_secs(300);

/// Builds bench/peers in release into its own directory under the target dir.
pub(crate) fn build(target: &Path) -> Result<PathBuf> {
    let dir = target.join("bench-peers");
    let dir_text = dir.to_str().context("the target directory is not UTF-8")?;
    crate::step(
        "cargo build --release --manifest-path bench/peers/Cargo.toml",
        &[
            "build",
            "--release",
            "--locked",
            "--manifest-path",
            "bench/peers/Cargo.toml",
            "--target-dir",
            dir_text,
        ],
    )?;
    Ok(dir.join("release/c2-bench-peers"))
}

/// One client run's samples, microseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    warm_us: Vec<f64>,
    big_us: Vec<f64>,
    cold_us: Vec<f64>,
}

fn run_client(bin: &Path, plan: &Plan) -> Result<Run> {
    let mut command = child::command(bin);
    command.args([
        "client",
        "--warm",
        &plan.invokes_per_round.to_string(),
        "--big",
        &plan.big_per_round.to_string(),
        "--cold",
        &plan.peer_cold.to_string(),
        "--text-bytes",
        &text_of(100).len().to_string(),
    ]);
    let (status, out) = child::run(&mut command, CLIENT_LIMIT)?;
    if !status.success() {
        bail!("the rmcp peer client failed ({status}); its stderr is above");
    }
    serde_json::from_slice(&out).context("the rmcp peer client's output is not its JSON line")
}

/// A measured figure's value, by name.
fn value_of(figures: &[Figure], name: &str) -> f64 {
    figures
        .iter()
        .find(|f| f.name == name)
        .map_or(f64::NAN, |f| f.value)
}

/// A baseline's value, by the baseline's name.
fn baseline_of(figures: &[Figure], name: &str) -> f64 {
    figures
        .iter()
        .find(|f| f.baseline == name)
        .map_or(f64::NAN, |f| f.baseline_value)
}

/// Runs the peer client `plan.rounds` times in each mode and adds the rmcp rows and the
/// `vs_rmcp_*` ratios against the SDK figures already in `figures`.
pub(crate) fn measure(
    bin: &Path,
    affinity: &Affinity,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    let errors = RefCell::new(Vec::new());
    let big: RefCell<[Rounds; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let cold: RefCell<[Rounds; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let mut side = |mode: Mode| match run_client(bin, plan) {
        Ok(run) => {
            big.borrow_mut()[mode_index(mode)].push(run.big_us);
            cold.borrow_mut()[mode_index(mode)].push(run.cold_us);
            run.warm_us
        }
        Err(error) => {
            errors.borrow_mut().push(error);
            Vec::new()
        }
    };
    let [free, pinned] = interleave_modes(affinity, plan.rounds, &mut [&mut side])?;
    if let Some(error) = errors.into_inner().into_iter().next() {
        return Err(error.context("the rmcp peer failed"));
    }
    let (big, cold) = (big.into_inner(), cold.into_inner());
    let warm = [&free[0], &pinned[0]];
    let mut rows = Vec::new();
    for (m, mode) in Mode::BOTH.into_iter().enumerate() {
        let s = mode.suffix();
        let rmcp_warm = median_over_rounds(warm[m], median);
        let rmcp_big = median_over_rounds(&big[m], median);
        let rmcp_cold = median(&flatten(&cold[m])).unwrap_or(f64::NAN);
        for (name, value, baseline) in [
            (
                format!("rmcp_warm_p50{s}"),
                rmcp_warm,
                format!("sdk_echo_floor_p50{s}"),
            ),
            (
                format!("rmcp_64k{s}"),
                rmcp_big,
                format!("sdk_echo_floor_64k_p50{s}"),
            ),
            (
                format!("rmcp_cold{s}"),
                rmcp_cold,
                format!("sdk_spawn_and_echo{s}"),
            ),
        ] {
            rows.push(Figure {
                baseline_value: baseline_of(figures, &baseline),
                name,
                value,
                unit: "us",
                baseline,
                bar: Bar::None,
            });
        }
        let versus = [
            (
                "warm_p50",
                "sdk_invoke_warm_p50",
                rmcp_warm,
                "rmcp_warm_p50",
                Bar::RatioAtMost(0.25),
            ),
            ("64k", "sdk_invoke_64k", rmcp_big, "rmcp_64k", Bar::None),
            (
                "cold",
                "sdk_cold_activation",
                rmcp_cold,
                "rmcp_cold",
                Bar::RatioAtMost(0.8),
            ),
        ];
        for (stem, sdk, rmcp, rmcp_name, bar) in versus {
            // The figures: warm free and pinned, 64 KiB and cold free; the other
            // pinned ratios are informational.
            let bar = if mode == Mode::Pinned && stem != "warm_p50" {
                Bar::None
            } else {
                bar
            };
            rows.push(Figure {
                name: format!("vs_rmcp_{stem}{s}"),
                value: value_of(figures, &format!("{sdk}{s}")),
                unit: "us",
                baseline: format!("{rmcp_name}{s}"),
                baseline_value: rmcp,
                bar,
            });
        }
    }
    figures.extend(rows);
    Ok(())
}
