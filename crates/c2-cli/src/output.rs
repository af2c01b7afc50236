//! Output in the two formats of docs/cli.md, exit codes, logging and colours.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    Human,
    Json,
}

/// A failed operation: `kind` is the snake_case name used in JSON output.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) kind: String,
    pub(crate) message: String,
    /// 1: the operation failed or found problems; 2: usage or environment error.
    pub(crate) exit: u8,
    /// Advice after the message (``run `c2-plugins trust ID` ``): a `hint` line in human output,
    /// the `hint` field of the JSON `error` object.
    pub(crate) hint: Option<String>,
    /// Extra fields of the JSON `error` object (for example the diagnostics of a refused
    /// bundle). Human output shows them before the failure, so they are not repeated here.
    pub(crate) detail: serde_json::Map<String, Value>,
}

impl Failure {
    pub(crate) fn operation(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind: kind.to_owned(),
            message: message.into(),
            exit: 1,
            hint: None,
            detail: serde_json::Map::new(),
        }
    }

    pub(crate) fn environment(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind: kind.to_owned(),
            message: message.into(),
            exit: 2,
            hint: None,
            detail: serde_json::Map::new(),
        }
    }

    /// Adds a field to the JSON `error` object.
    pub(crate) fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.detail.insert(key.to_owned(), value);
        self
    }
}

/// Where command output goes: stdout for results, stderr for everything a person reads along
/// the way. In JSON mode stdout receives exactly one document.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) format: Format,
    pub(crate) color: bool,
    /// `-q`: progress and notes are not shown, only failures.
    pub(crate) quiet: bool,
}

impl Out {
    pub(crate) fn new(format: Format, quiet: bool) -> Self {
        let color = format == Format::Human
            && std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Self {
            format,
            color,
            quiet,
        }
    }

    pub(crate) fn json(&self) -> bool {
        self.format == Format::Json
    }

    /// Writes text to stdout, ending in a newline, in one `write_all`: a reader on a pipe gets
    /// the whole output in one read, not the part up to its last newline and then the rest. A
    /// closed stdout (for example `| head`) is not an error worth a panic.
    pub(crate) fn print(&mut self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = if text.ends_with('\n') {
            stdout.write_all(text.as_bytes())
        } else {
            stdout.write_all(format!("{text}\n").as_bytes())
        };
        let _ = stdout.flush();
    }

    /// Writes one JSON document to stdout.
    pub(crate) fn print_json(&mut self, value: &Value) {
        let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
        self.print(&text);
    }

    /// A line for the person at the terminal (progress, lifecycle steps, warnings), on stderr.
    pub(crate) fn note(&mut self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{text}");
    }

    /// A progress line or note on stderr (lifecycle steps, warnings), unless `-q` was given.
    pub(crate) fn progress(&mut self, text: &str) {
        if !self.quiet {
            self.note(text);
        }
    }

    /// Prints a successful result: `{"ok":true,"result":...}` in JSON mode.
    pub(crate) fn success(&mut self, result: Value, human: &str) -> ExitCode {
        if self.json() {
            self.print_json(&json!({ "ok": true, "result": result }));
        } else if !human.is_empty() {
            self.print(human);
        }
        ExitCode::SUCCESS
    }

    /// Prints a failure in the chosen format and returns its exit code.
    pub(crate) fn fail(&mut self, failure: &Failure) -> ExitCode {
        if self.json() {
            let mut error = failure.detail.clone();
            error.insert("kind".to_owned(), json!(failure.kind));
            error.insert("message".to_owned(), json!(failure.message));
            if let Some(hint) = &failure.hint {
                error.insert("hint".to_owned(), json!(hint));
            }
            self.print_json(&json!({ "ok": false, "error": error }));
        } else {
            let prefix = if self.stderr_color() {
                "\x1b[1;31merror\x1b[0m"
            } else {
                "error"
            };
            self.note(&format!(
                "{prefix}: {}",
                terminal_text(&failure.message, Lines::Indented)
            ));
            if let Some(hint) = &failure.hint {
                self.note(&format!("hint: {}", terminal_text(hint, Lines::Indented)));
            }
        }
        ExitCode::from(failure.exit)
    }

    /// Whether text written to stderr may carry ANSI colours.
    pub(crate) fn stderr_color(&self) -> bool {
        std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    }
}

/// Text from a plugin or a bundle made safe to print on a terminal in human format, and how
/// it treats line breaks: c2-manifest's `terminal_text`, the one place this is done (the
/// diagnostic renderer uses it too; decisions.md "Hostile plugins"). JSON output needs none
/// (JSON escapes control characters).
pub(crate) use c2_manifest::{TerminalLines as Lines, terminal_text};

/// Logs go to stderr through tracing; `RUST_LOG` overrides the verbosity flags. Every field
/// of an event (its message included) goes through [`terminal_text`], since plugin log
/// messages and stderr lines reach the log.
pub(crate) fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let fields = tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        let text = terminal_text(&text, Lines::Indented);
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{}={text}", field.name())
        }
    });
    let _ = tracing_subscriber::fmt()
        .fmt_fields(tracing_subscriber::field::MakeExt::delimited(fields, " "))
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .with_target(false)
        .without_time()
        .try_init();
}

/// Parses `10s`, `500ms`, `2m` or a bare number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration: write e.g. 10s, 500ms or 2m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("`{text}`: unknown unit `{unit}`; use ms, s or m")),
    };
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 86_400.0 {
        return Err(format!("`{text}` must be more than 0 and at most a day"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5h").is_err());
    }
}
