//! Project automation, run as `cargo xtask <task>`.
//!
//! `validate` is the one entry point CI runs: formatting, clippy with `-D warnings`, the whole
//! test suite (which builds every example and runs the doctests), the tidy checks (crate docs,
//! layering, licences, the ratchets of xtask/src/ratchets; each is also a test of this crate, so
//! plain `cargo test` runs them), every example bundle under `packs/` through the real validator,
//! and the library crates' packaging and docs (`publish-check`). xtask is a developer tool: it may
//! run cargo and read the tree freely, and nothing in the product depends on it.
#![expect(
    clippy::disallowed_methods,
    reason = "xtask is a developer tool and may use the file system freely"
)]

mod bench;
mod conformance;
mod fuzz;
mod layering;
mod licences;
mod packs;
mod publish;
mod ratchets;
mod soak;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  validate        fmt, clippy -D warnings (also the collector without `archive`), the Rust
                  pack's build, tests, the soak, tidy checks,
                  every pack validated and checked; with CI set, a 3 s smoke of each fuzz target
  tidy            only the tidy checks (crate docs, layering, licences, ratchets) and the packs
  publish-check   library crates' metadata, `cargo package` of all of them, docs -D warnings
  soak            1,000 activation/unload cycles and a 256 MiB newline-free stream
  bench           release benchmarks as ratios to same-run baselines, free and pinned
                  (--format json, --quick, --only PHASES, --peers for the rmcp comparison)
  fuzz            every cargo-fuzz target for a while (nightly; `cargo xtask fuzz --help`)
  conformance     statement coverage table, docs/conformance.md, the protocol transcripts;
                  --host \"<command>\" runs the bundle corpus against any host (conformance/README.md);
                  --check leaves the document alone and fails when it is stale;
                  --test-output FILE also requires every named test to have passed in that
                  saved `cargo test --workspace 2>&1` output; --export rewrites the corpus
";

fn main() -> ExitCode {
    // The bench and the soak host plugins in this process: xtask is their supervisor shim.
    c2_supervisor::shim::run_if_requested();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("validate") => validate(),
        Some("tidy") => tidy_all(),
        Some("publish-check") => publish::run(&root()),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bench") => bench::bench(&args[1..]),
        Some("bench-run") => bench::bench_run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("conformance") => conformance::run(&args[1..]),
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
    // A validator-only build (docs/performance.md "A small linter"): the collector without
    // its default `archive` feature must build, lint clean and pass its own tests.
    step(
        "cargo clippy -p c2-bundle-collector --no-default-features",
        &[
            "clippy",
            "-p",
            "c2-bundle-collector",
            "--no-default-features",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    step(
        "cargo test -p c2-bundle-collector --no-default-features",
        &[
            "test",
            "-p",
            "c2-bundle-collector",
            "--no-default-features",
            "--locked",
        ],
    )?;
    // c2-protocol's optional `manifest` feature (`From<&CommandDecl>`): lint and its test.
    step(
        "cargo clippy -p c2-protocol --features manifest",
        &[
            "clippy",
            "-p",
            "c2-protocol",
            "--features",
            "manifest",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    step(
        "cargo test -p c2-protocol --features manifest --lib",
        &[
            "test",
            "-p",
            "c2-protocol",
            "--features",
            "manifest",
            "--lib",
            "--locked",
        ],
    )?;
    packs::build_rust_packs(&root())?;
    let (tests, test_output) = test_workspace()?;
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        // CI also smokes every fuzz target; locally `cargo xtask fuzz` is a separate step
        // because its first, sanitizer-instrumented build takes minutes.
        fuzz::run(&["--seconds".to_owned(), "3".to_owned()])?;
    }
    soak::run(&[])?;
    tidy_all()?;
    sdk_suites()?;
    conformance::validate(&test_output)?;
    publish::run(&root())?;
    report("xtask: validate passed");
    // The plain closing line a CI reader takes as the verdict of the whole run.
    say(&format!(
        "validate: {} passed, {} failed",
        tests.passed, tests.failed
    ));
    Ok(())
}

/// What the workspace's test binaries reported, summed.
#[derive(Debug, Default, PartialEq, Eq)]
struct TestCount {
    passed: u64,
    failed: u64,
}

impl TestCount {
    /// Adds a libtest summary line (`test result: ok. 3 passed; 0 failed; ...`), if it is one.
    fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(label), Some(number)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(number) = number.parse::<u64>() else {
                continue;
            };
            match label {
                "passed" => self.passed += number,
                "failed" => self.failed += number,
                _ => {}
            }
        }
    }
}

/// `cargo test --workspace`, streaming its output (cargo's stderr merged in, so each `Running`
/// line precedes the results of its binary) while counting the tests it ran; also returns the
/// lines, from which the conformance check learns which tests passed.
fn test_workspace() -> Result<(TestCount, Vec<String>)> {
    use std::io::BufRead;
    report("xtask: cargo test");
    let args = ["test", "--workspace", "--locked"];
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let (reader, writer) = std::io::pipe().context("create a pipe for `cargo test`")?;
    #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
    let mut command = std::process::Command::new(cargo);
    command
        .args(args)
        .current_dir(root())
        .stdout(writer.try_clone().context("clone the pipe")?)
        .stderr(writer);
    let mut child = command.spawn().context("could not run `cargo test`")?;
    // The parent's copies of the write end must go, or the read below never ends.
    drop(command);
    let mut count = TestCount::default();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(reader).lines() {
        let line = line.context("read the output of `cargo test`")?;
        count.add_line(&line);
        say(&line);
        lines.push(line);
    }
    let status = child.wait().context("wait for `cargo test`")?;
    if !status.success() {
        bail!("`cargo test` failed ({status})");
    }
    if count.passed == 0 {
        bail!("`cargo test` ran no test");
    }
    Ok((count, lines))
}

/// A line on stdout, where test output belongs.
fn say(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
}

fn tidy_all() -> Result<()> {
    let root = root();
    let mut problems = tidy::problems(&root)?;
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

/// The plugin SDKs' own suites and packaging: sdks/typescript under `node --test` and `bun test`
/// (ajv installed there by `npm ci`, which .ci/run does), its types compiled by tsc, and
/// `npm pack --dry-run`; the relay client's `.d.ts` checked by the same tsc against its
/// example and its type test (its suites run from the c2-cli tests, against a real service);
/// sdks/python type-checked by mypy (--strict, for 3.10), under pytest and built into a wheel
/// (in target/, with the installed setuptools and wheel).
fn sdk_suites() -> Result<()> {
    let root = root();
    let typescript = root.join("sdks/typescript");
    let python = root.join("sdks/python");
    if !typescript.join("node_modules/ajv").is_dir() {
        bail!("sdks/typescript has no node_modules/ajv: run `npm ci` there first (.ci/run does)");
    }
    let wheels = root.join("target/sdk-wheels");
    let wheels_arg = wheels.to_string_lossy().into_owned();
    let client = root.join("clients/typescript");
    let steps: [(&str, &Path, &str, Vec<&str>); 8] = [
        (
            "sdks/typescript: node --test",
            &typescript,
            "node",
            vec!["--test", "test/"],
        ),
        (
            "sdks/typescript: bun test",
            &typescript,
            "bun",
            vec!["test"],
        ),
        (
            "sdks/typescript: the types (tsc)",
            &typescript,
            "npm",
            vec!["run", "--silent", "typecheck"],
        ),
        (
            "sdks/typescript: npm pack --dry-run",
            &typescript,
            "npm",
            vec!["pack", "--dry-run"],
        ),
        (
            "clients/typescript: the types (tsc) against the example and the type test",
            &client,
            "node",
            vec![
                "../../sdks/typescript/node_modules/typescript/bin/tsc",
                "--noEmit",
                "--strict",
                "--module",
                "nodenext",
                "--moduleResolution",
                "nodenext",
                "--target",
                "es2022",
                "--allowJs",
                "--checkJs",
                "--typeRoots",
                "../../sdks/typescript/node_modules/@types",
                "--types",
                "node",
                "examples/quickstart.js",
                "examples/windows.js",
                "test/types-check.mts",
            ],
        ),
        (
            "sdks/python: mypy --strict",
            &python,
            "python3",
            vec![
                "-m",
                "mypy",
                "--strict",
                "--python-version",
                "3.10",
                "src/c2_plugin_sdk",
            ],
        ),
        (
            "sdks/python: pytest",
            &python,
            "python3",
            vec!["-m", "pytest", "-q"],
        ),
        (
            "sdks/python: wheel",
            &python,
            "python3",
            vec![
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--wheel-dir",
                &wheels_arg,
                ".",
            ],
        ),
    ];
    for (title, dir, program, args) in steps {
        report(&format!("xtask: {title}"));
        #[expect(clippy::disallowed_methods, reason = "xtask runs the SDKs' own tools")]
        let status = std::process::Command::new(program)
            .args(&args)
            .current_dir(dir)
            .status()
            .with_context(|| format!("could not run `{program}` (.ci/run installs it)"))?;
        if !status.success() {
            bail!("{title} failed ({status})");
        }
    }
    let wheel = wheels.join("c2_plugin_sdk-0.1.0-py3-none-any.whl");
    if !wheel.is_file() {
        bail!("the Python SDK built no {}", wheel.display());
    }
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

#[cfg(test)]
mod tests {
    use super::TestCount;

    #[test]
    fn libtest_summaries_are_summed_and_other_lines_ignored() {
        let mut count = TestCount::default();
        for line in [
            "test result: ok. 94 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.18s",
            "running 3 tests",
            "test foo ... ok",
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
        ] {
            count.add_line(line);
        }
        assert_eq!(
            count,
            TestCount {
                passed: 96,
                failed: 1
            }
        );
    }
}
