//! The plugin SDKs of sdks/ against their own language: the per-call cost of a runtime on the
//! TypeScript SDK (on Node) and on the Python SDK, each against a raw line echo in the same
//! language, and their cold start (spawn to the `initialize` answer) against spawning the
//! interpreter on a script that answers its first line. The plugins are driven directly over
//! pipes, without the host, so the figures are the SDKs' own. Informational rows. The bounds
//! we would hold: a per-call ratio of at most 2 on Node (argument checking and JSON-RPC
//! dispatch on top of one parse and one write; about 1.3 measured) and at most 6 on Python
//! (whose raw echo is a bare blocking loop, while the SDK dispatches each line through asyncio;
//! about 5 measured), and a cold ratio of at most 1.5 on both (the SDK file, the manifest and,
//! for Python, asyncio imported on top of the interpreter's own start).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::report::{Bar, Figure};
use super::stats::{flatten, interleave, median, median_over_rounds, micros};
use super::{Plan, child};
use crate::root;

const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "bench-sdk",
  "version": "1.0.0",
  "extensions": {"dev.codetwo": {
    "standardVersion": "1.2.0",
    "commands": [{"id": "bench.echo", "title": "Echo", "description": "Returns its args.",
      "argsSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}],
    "runtime": {"protocol": "1.0.0", "command": "node", "args": ["plugin.mjs"]}
  }}
}"#;

const TS_PLUGIN: &str = r#"import { definePlugin } from "./c2-plugin-sdk.mjs";
definePlugin().command("bench.echo", (args) => args).run();
"#;

const TS_RAW: &str = r#"import * as readline from "node:readline";
readline.createInterface({ input: process.stdin }).on("line", (line) => process.stdout.write(line + "\n"));
"#;

const PY_PLUGIN: &str = r#"from c2_plugin_sdk import Plugin
plugin = Plugin()
plugin.command("bench.echo", lambda args, ctx: args)
plugin.run()
"#;

const PY_RAW: &str = r#"import sys
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
"#;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1.0.0","host":{"name":"bench","version":"0","commands":[]},"dataDir":"/tmp"}}"#;

/// One language: its interpreter, and the SDK runtime and the raw echo as argv tails.
struct Language {
    prefix: &'static str,
    program: &'static str,
    sdk: &'static [&'static str],
    raw: &'static [&'static str],
}

const LANGUAGES: [Language; 2] = [
    Language {
        prefix: "ts_sdk",
        program: "node",
        sdk: &["plugin.mjs"],
        raw: &["raw.mjs"],
    },
    Language {
        prefix: "py_sdk",
        program: "python3",
        sdk: &["-u", "plugin.py"],
        raw: &["-u", "raw.py"],
    },
];

/// A process on pipes, one line out for each line in.
struct Talker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Talker {
    fn spawn(dir: &Path, program: &str, args: &[&str]) -> Result<Self> {
        let mut child = child::command(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("could not start {program}"))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        })
    }

    fn round_trip(&mut self, line: &str) -> Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        self.line.clear();
        if self.stdout.read_line(&mut self.line)? == 0 {
            bail!("the process closed its stdout");
        }
        Ok(())
    }

    fn end(self) -> Result<()> {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait()?;
        if !status.success() {
            bail!("the process exited with {status}");
        }
        Ok(())
    }
}

fn bundle(dir: &Path) -> Result<()> {
    let root = root();
    std::fs::write(dir.join("plugin.json"), MANIFEST)?;
    std::fs::copy(
        root.join("sdks/typescript/src/index.js"),
        dir.join("c2-plugin-sdk.mjs"),
    )?;
    std::fs::copy(
        root.join("sdks/python/src/c2_plugin_sdk/__init__.py"),
        dir.join("c2_plugin_sdk.py"),
    )?;
    for (name, text) in [
        ("plugin.mjs", TS_PLUGIN),
        ("raw.mjs", TS_RAW),
        ("plugin.py", PY_PLUGIN),
        ("raw.py", PY_RAW),
    ] {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// Per-call latencies of `calls` round trips after a warm-up, in µs.
fn calls(dir: &Path, program: &str, args: &[&str], calls: usize) -> Result<Vec<f64>> {
    let mut talker = Talker::spawn(dir, program, args)?;
    talker.round_trip(INITIALIZE)?;
    let invoke = |n: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"command/invoke","params":{{"name":"bench.echo","args":{{"n":{n}}}}}}}"#
        )
    };
    for n in 1..=calls.min(100) {
        talker.round_trip(&invoke(n))?;
    }
    let mut samples = Vec::with_capacity(calls);
    for n in 1..=calls {
        let line = invoke(n);
        let start = Instant::now();
        talker.round_trip(&line)?;
        samples.push(micros(start.elapsed()));
    }
    talker.end()?;
    Ok(samples)
}

/// Spawn-to-first-answer times of `starts` fresh processes, in µs.
fn cold(dir: &Path, program: &str, args: &[&str], starts: usize) -> Result<Vec<f64>> {
    let mut samples = Vec::with_capacity(starts);
    for _ in 0..starts {
        let start = Instant::now();
        let mut talker = Talker::spawn(dir, program, args)?;
        talker.round_trip(INITIALIZE)?;
        samples.push(micros(start.elapsed()));
        talker.end()?;
    }
    Ok(samples)
}

/// Runs `work` as one side of an interleaving, keeping its first error.
fn side<'a>(
    errors: &'a std::cell::RefCell<Vec<anyhow::Error>>,
    mut work: impl FnMut() -> Result<Vec<f64>> + 'a,
) -> impl FnMut() -> Vec<f64> + 'a {
    move || match work() {
        Ok(samples) => samples,
        Err(error) => {
            errors.borrow_mut().push(error);
            Vec::new()
        }
    }
}

pub(crate) fn measure(plan: &Plan, figures: &mut Vec<Figure>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    bundle(dir.path())?;
    let errors = std::cell::RefCell::new(Vec::new());
    for language in &LANGUAGES {
        let here = dir.path();
        let n = plan.invokes_per_round;
        let mut sdk = side(&errors, || calls(here, language.program, language.sdk, n));
        let mut raw = side(&errors, || calls(here, language.program, language.raw, n));
        let per_call = interleave(plan.rounds, &mut [&mut sdk, &mut raw]);
        let starts = plan.peer_cold;
        let mut sdk = side(&errors, || {
            cold(here, language.program, language.sdk, starts)
        });
        let mut raw = side(&errors, || {
            cold(here, language.program, language.raw, starts)
        });
        let starts = interleave(plan.rounds, &mut [&mut sdk, &mut raw]);
        if let Some(error) = errors.borrow_mut().drain(..).next() {
            return Err(error.context(format!("the {} bench plugin failed", language.prefix)));
        }
        let prefix = language.prefix;
        let program = language.program;
        figures.push(Figure {
            name: format!("{prefix}_call_p50"),
            value: median_over_rounds(&per_call[0], median),
            unit: "us",
            baseline: format!("{program} raw line echo p50"),
            baseline_value: median_over_rounds(&per_call[1], median),
            bar: Bar::None,
        });
        figures.push(Figure {
            name: format!("{prefix}_cold"),
            value: median(&flatten(&starts[0])).unwrap_or(f64::NAN),
            unit: "us",
            baseline: format!("{program} spawn and first answer"),
            baseline_value: median(&flatten(&starts[1])).unwrap_or(f64::NAN),
            bar: Bar::None,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bench_plugin_and_raw_echo_answers_its_calls_and_starts() {
        let dir = tempfile::tempdir().unwrap();
        bundle(dir.path()).unwrap();
        for language in &LANGUAGES {
            for args in [language.sdk, language.raw] {
                let samples = calls(dir.path(), language.program, args, 5).unwrap();
                assert_eq!(samples.len(), 5);
                assert_eq!(
                    cold(dir.path(), language.program, args, 1).unwrap().len(),
                    1
                );
            }
        }
    }
}
