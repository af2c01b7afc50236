//! `dormant_bundle_kib`: what one installed, trusted, enabled, dormant 10-command bundle costs
//! the host. A store of N such bundles is built here, then two fresh child processes open a
//! host, one on an empty store and one on the full store, and report their resident set; the
//! difference over N is the figure. Children keep the build's garbage out of the measurement.

use std::path::Path;

use anyhow::{Context, Result, bail};
use c2_host::Target;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use super::Plan;
use super::host::{BundleRuntime, host_options, install_ready, write_bundle};
use super::report::{Bar, Figure};

/// The child side: open a host on the store under `root`, report VmRSS and the command count
/// as one JSON line on stdout.
pub(crate) fn probe(root: &Path) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let line = runtime.block_on(async {
        let host = c2_contributions::open(host_options(root)).await?;
        let rss = super::procfs::rss_kib().context("no VmRSS in /proc/self/status")?;
        let commands = host.commands(&Target::User)?.len();
        let spawns = host.stats().spawns;
        host.shutdown().await;
        anyhow::Ok(json!({"rss_kib": rss, "commands": commands, "spawns": spawns}))
    })?;
    #[expect(
        clippy::print_stdout,
        reason = "the probe answers its parent on stdout"
    )]
    {
        println!("{line}");
    }
    Ok(())
}

fn run_probe(root: &Path) -> Result<Value> {
    let exe = std::env::current_exe()?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the memory probe is this very binary in a fresh process"
    )]
    let output = std::process::Command::new(exe)
        .arg("bench-run")
        .arg("--probe-dormant")
        .arg(root)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("could not run the memory probe")?;
    if !output.status.success() {
        bail!("the memory probe failed ({})", output.status);
    }
    serde_json::from_slice(&output.stdout).context("the memory probe answered no JSON")
}

pub(crate) fn dormant(
    runtime: &Runtime,
    fixture: &Path,
    plan: &Plan,
    figures: &mut Vec<Figure>,
) -> Result<()> {
    const COMMANDS: usize = 10;
    let n = plan.dormant_bundles;
    let empty = tempfile::tempdir()?;
    let full = tempfile::tempdir()?;
    runtime.block_on(async {
        let host = c2_contributions::open(host_options(full.path())).await?;
        for i in 0..n {
            let commands: Vec<String> = (0..COMMANDS)
                .map(|c| format!("dormant{i}.command{c}"))
                .collect();
            let bundle = write_bundle(
                &full.path().join("bundles"),
                &format!("bench-dormant-{i:04}"),
                &commands,
                BundleRuntime::Launcher(fixture),
            )?;
            install_ready(&host, &bundle).await?;
        }
        host.shutdown().await;
        anyhow::Ok(())
    })?;
    let mut rss_empty = Vec::new();
    let mut rss_full = Vec::new();
    for _ in 0..plan.probe_rounds {
        let baseline = run_probe(empty.path())?;
        let measured = run_probe(full.path())?;
        let expected = n * COMMANDS;
        let commands = measured["commands"].as_u64().unwrap_or(0) as usize;
        if commands < expected || measured["spawns"] != json!(0) {
            bail!(
                "the full store should hold {expected} dormant commands and no process, the probe saw {measured}"
            );
        }
        rss_empty.push(baseline["rss_kib"].as_f64().unwrap_or(f64::NAN));
        rss_full.push(measured["rss_kib"].as_f64().unwrap_or(f64::NAN));
    }
    let empty_kib = super::stats::median(&rss_empty).unwrap_or(f64::NAN);
    let full_kib = super::stats::median(&rss_full).unwrap_or(f64::NAN);
    figures.push(Figure {
        name: "dormant_bundle_kib".to_owned(),
        value: (full_kib - empty_kib) / n as f64,
        unit: "KiB/bundle",
        baseline: "empty_host_rss_kib".to_owned(),
        baseline_value: empty_kib,
        bar: Bar::ValueAtMost(32.0),
    });
    Ok(())
}
