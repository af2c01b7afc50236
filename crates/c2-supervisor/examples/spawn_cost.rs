//! Measures what containment costs a spawn and a stop: starts a line-echo program (by default
//! c2-testkit's fixture in `echo` mode), waits for its first echoed line, then stops it, in
//! interleaved rounds of each containment mode, and prints the median, p90 and p99 of both.
//!
//! ```sh
//! cargo build --release -p c2-testkit --bin c2-fixture
//! cargo run --release -p c2-supervisor --example spawn_cost -- target/release/c2-fixture 300
//! ```
//!
//! Modes: `raw` (the bench's baseline: a plain std spawn, then SIGKILL and wait), `group` (no
//! shim), `cold` (a shim started for the spawn), `warm` (the shim started ahead, the default),
//! `warm-settled` (warm, with the stop 10 ms after the start, once the successor shim
//! `handshake_done` starts is up, so it does not compete with the stop). The example calls
//! `run_if_requested`, so it is its own shim unless `C2_SUPERVISOR_SHIM` names another one (for
//! example a large executable re-entered).

use std::time::{Duration, Instant};

use c2_supervisor::{Containment, ProcessSpec, SupervisorOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[expect(
    clippy::print_stdout,
    reason = "an example that reports its measurements"
)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    c2_supervisor::shim::run_if_requested();
    let mut args = std::env::args().skip(1);
    let program = args
        .next()
        .ok_or("usage: spawn_cost PROGRAM [ROUNDS] [MODES, comma-separated]")?;
    let rounds: usize = args.next().map_or(Ok(200), |n| n.parse())?;
    let modes: Vec<String> = args
        .next()
        .unwrap_or_else(|| "group,cold,warm".to_owned())
        .split(',')
        .map(str::to_owned)
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut starts = vec![Vec::new(); modes.len()];
    let mut stops = vec![Vec::new(); modes.len()];
    runtime.block_on(async {
        for round in 0..rounds + 10 {
            for (i, mode) in modes
                .iter()
                .enumerate()
                .cycle()
                .skip(round % modes.len())
                .take(modes.len())
            {
                let (start, stop) = once(&program, mode).await?;
                if round >= 10 {
                    starts[i].push(start);
                    stops[i].push(stop);
                }
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    c2_supervisor::release_warm_shim();
    println!("mode   start p50/p90/p99 (us)    stop p50/p90/p99 (us)");
    for (i, mode) in modes.iter().enumerate() {
        let (a, b) = (stats(&mut starts[i]), stats(&mut stops[i]));
        println!(
            "{mode:<6} {:>6.0} {:>6.0} {:>6.0}       {:>6.0} {:>6.0} {:>6.0}",
            a.0, a.1, a.2, b.0, b.1, b.2
        );
    }
    Ok(())
}

async fn once(
    program: &str,
    mode: &str,
) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    if mode == "raw" {
        return raw_once(program);
    }
    let mut options = SupervisorOptions::default();
    match mode {
        "group" => {
            options.containment = Containment::Group;
            options.warm_shim = false;
        }
        "cold" => options.warm_shim = false,
        "warm" | "warm-settled" => {}
        other => {
            return Err(
                format!("unknown mode {other}: raw, group, cold, warm or warm-settled").into(),
            );
        }
    }
    let spec = ProcessSpec::new(program, std::env::temp_dir())
        .env("C2_FIXTURE_MODE", "echo")
        .label("spawn-cost");
    let begun = Instant::now();
    let mut spawned = c2_supervisor::spawn(&spec, &options)?;
    spawned.stdin.write_all(b"ping\n").await?;
    let mut line = String::new();
    BufReader::new(&mut spawned.stdout)
        .read_line(&mut line)
        .await?;
    let start = begun.elapsed();
    spawned.process.handshake_done();
    if mode == "warm-settled" {
        // The next warm shim, started by `handshake_done`, is up before the stop begins.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let begun = Instant::now();
    spawned.process.stop().await;
    Ok((start, begun.elapsed()))
}

/// The bench's baseline: std spawn, one echoed line, SIGKILL and wait.
fn raw_once(program: &str) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    use std::io::{BufRead, Write};
    let begun = Instant::now();
    #[expect(
        clippy::disallowed_methods,
        reason = "the raw baseline spawns directly"
    )]
    let mut child = std::process::Command::new(program)
        .env("C2_FIXTURE_MODE", "echo")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
    stdin.write_all(b"ping\n")?;
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    let start = begun.elapsed();
    let begun = Instant::now();
    child.kill()?;
    child.wait()?;
    Ok((start, begun.elapsed()))
}

fn stats(samples: &mut [Duration]) -> (f64, f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e6)
    };
    (at(0.5), at(0.9), at(0.99))
}
