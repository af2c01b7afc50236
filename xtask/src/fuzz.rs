//! `cargo xtask fuzz`: every cargo-fuzz target in `fuzz/`, one after the other, for a fixed time
//! each. A target first replays its regression cases (`fuzz/regressions/<target>/`), then fuzzes
//! from a fresh corpus seeded with `fuzz/seeds/<target>/`. Any crash fails the task with the
//! saved input and the command that reproduces it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context, Result, bail};

use crate::{report, root};

const USAGE: &str = "\
usage: cargo xtask fuzz [--seconds N] [--target NAME]

  --seconds N     fuzz each target for N seconds (default 10)
  --target NAME   run only this target (default: every target `cargo fuzz list` shows)";

/// libFuzzer options on every run, past the per-run time. The memory cap is the one a crash
/// report should be read against; an input that takes longer than the timeout counts as a hang.
const LIBFUZZER_LIMITS: [&str; 2] = ["-rss_limit_mb=2048", "-timeout=20"];

#[derive(Debug)]
struct Args {
    seconds: u32,
    target: Option<String>,
}

fn parse(args: &[String]) -> Result<Args> {
    let mut parsed = Args {
        seconds: 10,
        target: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("`{arg}` needs a value\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--seconds" => {
                let raw = value()?;
                parsed.seconds = raw.parse().ok().filter(|&n| n > 0).with_context(|| {
                    format!("--seconds wants a whole number above 0, not `{raw}`")
                })?;
            }
            "--target" => parsed.target = Some(value()?.clone()),
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    Ok(parsed)
}

/// The cargo-fuzz release the targets are known to build with.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        report(USAGE);
        return Ok(());
    }
    let args = parse(args)?;
    let root = root();
    ensure_cargo_fuzz()?;
    let all = list_targets(&root)?;
    let targets = match &args.target {
        Some(name) if all.contains(name) => vec![name.clone()],
        Some(name) => bail!(
            "no fuzz target `{name}`; the targets are: {}",
            all.join(", ")
        ),
        None => all,
    };

    report("xtask: building the fuzz targets (nightly, sanitizer on; the first build is slow)");
    let mut build = vec!["build"];
    build.extend(args.target.as_deref());
    let status = fuzz_command(&root, &build)
        .status()
        .context("could not run `cargo +nightly fuzz build`")?;
    if !status.success() {
        bail!("`cargo +nightly fuzz build --fuzz-dir fuzz` failed ({status})");
    }

    let mut failures = Vec::new();
    for target in &targets {
        if let Err(error) = fuzz_one(&root, target, args.seconds) {
            report(&format!("xtask: fuzz {target}: FAILED\n{error:#}"));
            failures.push(target.as_str());
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} fuzz target(s) failed: {}",
            failures.len(),
            targets.len(),
            failures.join(", ")
        );
    }
    report(&format!(
        "xtask: fuzz passed ({} target(s), {} s each)",
        targets.len(),
        args.seconds
    ));
    Ok(())
}

/// Installs cargo-fuzz when `cargo fuzz` is missing; the nightly toolchain itself is the
/// developer's to install (`rustup toolchain install nightly`).
fn ensure_cargo_fuzz() -> Result<()> {
    let present = cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    report(&format!(
        "xtask: cargo-fuzz is missing; running `cargo install cargo-fuzz --locked --version {CARGO_FUZZ_VERSION}`"
    ));
    let status = cargo()
        .args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            CARGO_FUZZ_VERSION,
        ])
        .status()
        .context("could not run `cargo install cargo-fuzz`")?;
    if !status.success() {
        bail!(
            "`cargo install cargo-fuzz --locked` failed ({status}); install it by hand and retry"
        );
    }
    Ok(())
}

/// The targets `fuzz/Cargo.toml` declares, so adding one there is all it takes to run it here.
fn list_targets(root: &Path) -> Result<Vec<String>> {
    let out = checked_output(fuzz_command(root, &["list"]), "cargo +nightly fuzz list")?;
    let targets: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if targets.is_empty() {
        bail!("`cargo fuzz list` found no target in fuzz/");
    }
    Ok(targets)
}

fn fuzz_one(root: &Path, target: &str, seconds: u32) -> Result<()> {
    let regressions = files_in(&root.join("fuzz/regressions").join(target))?;
    if !regressions.is_empty() {
        report(&format!(
            "xtask: fuzz {target}: replaying {} regression case(s)",
            regressions.len()
        ));
        let mut args = vec!["run".to_owned(), target.to_owned()];
        args.extend(regressions.iter().map(|p| p.display().to_string()));
        args.push("--".to_owned());
        args.extend(LIBFUZZER_LIMITS.map(str::to_owned));
        let out = fuzz_command(root, &args)
            .output()
            .context("could not run `cargo +nightly fuzz run`")?;
        if !out.status.success() {
            bail!("{}", crash_report(root, target, &out));
        }
    }

    let corpus = std::env::temp_dir().join(format!("c2-fuzz-{target}-{}", std::process::id()));
    std::fs::create_dir_all(&corpus)
        .with_context(|| format!("could not create {}", corpus.display()))?;
    // libFuzzer writes new inputs only to the first corpus directory, so the committed seeds,
    // given second, are read and never touched.
    let seeds = root.join("fuzz/seeds").join(target);
    let mut args = vec![
        "run".to_owned(),
        target.to_owned(),
        corpus.display().to_string(),
    ];
    if seeds.is_dir() {
        args.push(seeds.display().to_string());
    }
    args.push("--".to_owned());
    args.push(format!("-max_total_time={seconds}"));
    args.extend(LIBFUZZER_LIMITS.map(str::to_owned));
    let out = fuzz_command(root, &args)
        .output()
        .context("could not run `cargo +nightly fuzz run`");
    // The corpus is scratch: what matters from a crash is its artifact under fuzz/artifacts/.
    let _ = std::fs::remove_dir_all(&corpus);
    let out = out?;
    if !out.status.success() {
        bail!("{}", crash_report(root, target, &out));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("Done "))
        .unwrap_or("done");
    report(&format!("xtask: fuzz {target}: {summary}"));
    Ok(())
}

/// What a developer needs after a crash: the panic or sanitizer report, the input that caused it
/// and the command that replays it. libFuzzer's whole output is kept in a log beside the
/// artifacts, because the sanitizer's stack alone runs to a hundred lines.
fn crash_report(root: &Path, target: &str, out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let start = lines
        .iter()
        .position(|line| line.contains("panicked at"))
        .or_else(|| lines.iter().position(|line| line.contains("ERROR: ")))
        .unwrap_or(lines.len().saturating_sub(CRASH_EXCERPT_LINES));
    let mut text: Vec<&str> = lines[start..]
        .iter()
        .copied()
        .take(CRASH_EXCERPT_LINES)
        .collect();
    text.extend(lines.iter().filter(|line| line.starts_with("SUMMARY: ")));
    let mut text = text.join("\n");
    text.push_str(&format!(
        "\n\n`cargo fuzz run {target}` exited with {}",
        out.status
    ));

    let log = root
        .join("fuzz/artifacts")
        .join(target)
        .join("xtask-fuzz.log");
    let saved = log
        .parent()
        .map(std::fs::create_dir_all)
        .and_then(Result::ok)
        .and_then(|()| std::fs::write(&log, stderr.as_bytes()).ok());
    if saved.is_some() {
        text.push_str(&format!("\nfull output:    {}", shown(root, &log)));
    }

    // Fuzzing saves the input as an artifact; replaying names each file as it starts it.
    let input = lines
        .iter()
        .find_map(|line| line.split_once("Test unit written to ").map(|(_, p)| p))
        .or_else(|| {
            lines
                .iter()
                .rev()
                .find_map(|line| line.strip_prefix("Running: "))
        });
    if let Some(input) = input {
        // libFuzzer runs in the repository root, so a relative path is already relative to it.
        let input = shown(root, Path::new(input.trim()));
        text.push_str(&format!(
            "\ncrashing input: {input}\n\
             reproduce:      cargo +nightly fuzz run --fuzz-dir fuzz {target} {input}"
        ));
        if !input.starts_with("fuzz/regressions/") {
            text.push_str(&format!(
                "\nkeep it:        copy it to fuzz/regressions/{target}/ (see fuzz/README.md)"
            ));
        }
    }
    text
}

/// Lines of libFuzzer's output shown after a crash; the rest is in the log.
const CRASH_EXCERPT_LINES: usize = 24;

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The regular files directly in `dir`, sorted; none when `dir` does not exist. Dot files and
/// READMEs are notes, not inputs.
fn files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "xtask lists the fuzz regression cases"
    )]
    let entries = std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_file())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && !n.starts_with("README"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// `cargo +nightly fuzz <args> --fuzz-dir fuzz`, run from the repository root.
///
/// This goes through the rustup proxy on PATH rather than `$CARGO`: `+nightly` must pick the
/// toolchain, while `$CARGO` is the pinned stable cargo that runs xtask and knows no `+`.
fn fuzz_command(root: &Path, args: &[impl AsRef<str>]) -> Command {
    let mut command = cargo();
    command.arg("+nightly").arg("fuzz");
    let mut args = args.iter().map(AsRef::as_ref);
    if let Some(subcommand) = args.next() {
        command.arg(subcommand).args(["--fuzz-dir", "fuzz"]);
    }
    command.args(args).current_dir(root);
    command
}

fn cargo() -> Command {
    #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
    let mut command = Command::new("cargo");
    // Set by the stable cargo that runs xtask; left in place they would pin the nested,
    // nightly cargo to stable.
    command
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC");
    command
}

fn checked_output(mut command: Command, title: &str) -> Result<Output> {
    let out = command
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not run `{title}`"))?;
    if !out.status.success() {
        bail!("`{title}` failed ({})", out.status);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn no_arguments_fuzz_every_target_for_ten_seconds() {
        let parsed = parse(&[]).unwrap();
        assert_eq!((parsed.seconds, parsed.target), (10, None));
    }

    #[test]
    fn seconds_and_target_are_taken_in_any_order() {
        let parsed = parse(&args(&["--target", "frame_decoder", "--seconds", "3"])).unwrap();
        assert_eq!(
            (parsed.seconds, parsed.target.as_deref()),
            (3, Some("frame_decoder"))
        );
    }

    #[test]
    fn zero_seconds_is_refused_because_libfuzzer_reads_it_as_forever() {
        let error = parse(&args(&["--seconds", "0"])).unwrap_err();
        assert!(error.to_string().contains("above 0"), "{error}");
    }

    #[test]
    fn a_flag_without_its_value_or_an_unknown_flag_is_refused() {
        assert!(parse(&args(&["--seconds"])).is_err());
        assert!(parse(&args(&["--jobs", "2"])).is_err());
    }

    #[test]
    fn a_crash_report_names_the_artifact_and_the_command_that_replays_it() {
        let out = failed(
            "INFO: noise\n\
             thread '<unnamed>' panicked at fuzz_targets/mcp_json.rs:10:5:\nboom\n\
             ==1== ERROR: libFuzzer: deadly signal\n\
             artifact_prefix='fuzz/artifacts/mcp_json/'; \
             Test unit written to fuzz/artifacts/mcp_json/crash-abc\n\
             SUMMARY: libFuzzer: deadly signal\n",
        );
        let root = std::env::temp_dir().join(format!("xtask-fuzz-test-{}", std::process::id()));
        let text = crash_report(&root, "mcp_json", &out);
        assert!(text.starts_with("thread '<unnamed>' panicked at"), "{text}");
        assert!(text.contains("boom"), "{text}");
        assert!(!text.contains("INFO: noise"), "{text}");
        assert!(
            text.contains("crashing input: fuzz/artifacts/mcp_json/crash-abc"),
            "{text}"
        );
        assert!(
            text.contains(
                "reproduce:      cargo +nightly fuzz run --fuzz-dir fuzz mcp_json \
                 fuzz/artifacts/mcp_json/crash-abc"
            ),
            "{text}"
        );
        assert!(text.contains("keep it:"), "{text}");
        let log = std::fs::read_to_string(root.join("fuzz/artifacts/mcp_json/xtask-fuzz.log"));
        std::fs::remove_dir_all(&root).unwrap();
        assert!(log.unwrap().contains("INFO: noise"));
    }

    #[test]
    fn a_failing_regression_case_is_named_and_not_offered_for_keeping() {
        let out = failed(
            "Running: fuzz/regressions/frame_decoder/a\n\
             Running: fuzz/regressions/frame_decoder/b\n\
             thread '<unnamed>' panicked at x.rs:1:1:\nboom\n",
        );
        let root = std::env::temp_dir().join(format!("xtask-fuzz-test2-{}", std::process::id()));
        let text = crash_report(&root, "frame_decoder", &out);
        std::fs::remove_dir_all(&root).unwrap();
        assert!(
            text.contains("crashing input: fuzz/regressions/frame_decoder/b"),
            "{text}"
        );
        assert!(!text.contains("keep it:"), "{text}");
    }

    fn failed(stderr: &str) -> Output {
        use std::os::unix::process::ExitStatusExt as _;
        Output {
            status: std::process::ExitStatus::from_raw(77 << 8),
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }
}
