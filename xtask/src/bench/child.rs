//! Bounded runs of the helper processes the bench starts (the rmcp peer client, the CLI, the
//! TypeScript client): each gets a deadline, is killed when it passes it, and has its stdout
//! read by a thread so a chatty child cannot block on a full pipe.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The most stdout the bench keeps from one helper run; more is an error.
pub(crate) const MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Runs `command` to completion within `limit`; returns its exit status and stdout.
pub(crate) fn run(command: &mut Command, limit: Duration) -> Result<(ExitStatus, Vec<u8>)> {
    let what = format!("{:?}", command.get_program());
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start {what}"))?;
    let stdout = child.stdout.take().context("the child has no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.take(MAX_OUTPUT_BYTES + 1).read_to_end(&mut out);
        read.map(|_| out)
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            child.kill().ok();
            child.wait().ok();
            bail!("{what} did not finish within {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let out = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader of {what}'s stdout panicked"))??;
    if out.len() as u64 > MAX_OUTPUT_BYTES {
        bail!("{what} wrote more than {MAX_OUTPUT_BYTES} bytes to stdout");
    }
    Ok((status, out))
}

/// A `std::process::Command` for a helper; the bench's helpers are bare children on purpose
/// (the pinned rounds pin them by inheritance, and none of them is a plugin).
pub(crate) fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    #[expect(
        clippy::disallowed_methods,
        reason = "the bench's helper processes are not plugins; c2-supervisor is for plugins"
    )]
    let command = Command::new(program);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_that_finishes_gives_its_status_and_output() {
        let (status, out) = run(
            command("sh").args(["-c", "echo hi; exit 3"]),
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(status.code(), Some(3));
        assert_eq!(out, b"hi\n");
    }

    #[test]
    fn a_helper_past_its_deadline_is_killed() {
        let start = Instant::now();
        let error = run(command("sleep").arg("30"), Duration::from_millis(200)).unwrap_err();
        assert!(error.to_string().contains("did not finish"), "{error}");
        assert!(start.elapsed() < Duration::from_secs(20));
    }
}
