//! Project automation, run as `cargo xtask <task>`.
//!
//! `validate` is the one entry point CI runs: formatting, clippy with `-D warnings`, the whole
//! test suite, the tidy checks (crate docs, layering, licences) and every example bundle under
//! `packs/` through the real validator. xtask is a developer tool: it may run cargo and read the
//! tree freely, and nothing in the product depends on it.

mod bench;
mod fuzz;
mod layering;
mod licences;
mod packs;
mod soak;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  validate        fmt, clippy -D warnings, the Rust pack's build, tests, the soak, tidy checks,
                  every pack validated and checked; with CI set, a 3 s smoke of each fuzz target
  tidy            only the tidy checks (crate docs, layering, licences) and the packs
  soak            1,000 activation/unload cycles and a 256 MiB newline-free stream
  bench           release benchmarks as ratios to same-run baselines (--format json, --quick)
  fuzz            every cargo-fuzz target for a while (nightly; `cargo xtask fuzz --help`)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("validate") => validate(),
        Some("tidy") => tidy_all(),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bench") => bench::bench(&args[1..]),
        Some("bench-run") => bench::bench_run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            eprint_usage();
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(anyhow::anyhow!("unknown task `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            report(&format!("xtask: error: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

#[expect(
    clippy::print_stderr,
    reason = "xtask talks to the developer on stderr"
)]
fn report(line: &str) {
    eprintln!("{line}");
}

fn eprint_usage() {
    report(USAGE.trim_end());
}

/// The workspace root: xtask lives one level below it.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

fn validate() -> Result<()> {
    step("cargo fmt --check", &["fmt", "--all", "--", "--check"])?;
    step(
        "cargo clippy",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    packs::build_rust_packs(&root())?;
    step("cargo test", &["test", "--workspace", "--locked"])?;
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        // CI also smokes every fuzz target; locally `cargo xtask fuzz` is a separate step
        // because its first, sanitizer-instrumented build takes minutes.
        fuzz::run(&["--seconds".to_owned(), "3".to_owned()])?;
    }
    soak::run(&[])?;
    tidy_all()?;
    report("xtask: validate passed");
    Ok(())
}

fn tidy_all() -> Result<()> {
    let root = root();
    let metadata = layering::Metadata::load(&root)?;
    let mut problems = Vec::new();
    problems.extend(tidy::crate_docs(&root, &metadata));
    problems.extend(layering::check(&metadata));
    problems.extend(licences::check(&root, &metadata)?);
    problems.extend(packs::check(&root)?);
    if !problems.is_empty() {
        for problem in &problems {
            report(&format!("tidy: {problem}"));
        }
        bail!("{} tidy problem(s)", problems.len());
    }
    report("xtask: tidy passed");
    Ok(())
}

/// Runs one cargo step in the workspace root, streaming its output.
fn step(title: &str, args: &[&str]) -> Result<()> {
    report(&format!("xtask: {title}"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
    let status = std::process::Command::new(cargo)
        .args(args)
        .current_dir(root())
        .status()
        .with_context(|| format!("could not run `cargo {}`", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
