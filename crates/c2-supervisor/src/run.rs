use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::Error;
use crate::process::{Exit, Handle, Process, Waits, start};
use crate::spec::{Containment, ProcessSpec, RunOptions};
use crate::stderr::StderrTail;

/// What a one-shot command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// How it ended.
    pub exit: Exit,
    /// Everything it wrote to stdout (at most `RunOptions::stdout_max` bytes).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (at most `RunOptions::stderr_max` bytes).
    pub stderr: Vec<u8>,
}

/// Runs a short host command (the host's `git`) to completion: stdin is empty, both outputs are
/// collected up to their caps, and the whole group is killed when a cap is exceeded or the
/// deadline passes. A non-zero exit is not an error here: the caller reads `exit`.
pub async fn run(spec: &ProcessSpec, options: &RunOptions) -> Result<Output, Error> {
    let program = spec.program_name();
    // A one-shot host command runs in its group only: the host's own tools need no shim.
    let (mut child, _) = start(spec, std::process::Stdio::null(), &Containment::Group)?;
    let pipes = (child.stdout.take(), child.stderr.take());
    // No stop grace: a one-shot command that must be ended is killed outright. From here on, an
    // early return drops `process`, which kills the group.
    let waits = Waits {
        grace: Duration::ZERO,
        kill: Duration::from_secs(5),
    };
    let stdin = child.stdin.take();
    let process = Process::watch(
        spec,
        Handle::Tokio(child),
        stdin,
        Arc::new(StderrTail::new(0)),
        waits,
        false,
    )?;
    let (Some(stdout), Some(stderr)) = pipes else {
        return Err(Error::Read {
            program,
            stream: "stdout",
            source: std::io::Error::other("no pipe"),
        });
    };
    let work = async {
        let (stdout, stderr) = tokio::try_join!(
            read_capped(stdout, options.stdout_max, "stdout", &program),
            read_capped(stderr, options.stderr_max, "stderr", &program),
        )?;
        Ok::<_, Error>(Output {
            exit: process.exited().await,
            stdout,
            stderr,
        })
    };
    match tokio::time::timeout(options.deadline, work).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => {
            process.kill().await;
            Err(error)
        }
        Err(_) => {
            process.kill().await;
            Err(Error::DeadlineExceeded {
                program,
                deadline: options.deadline,
            })
        }
    }
}

/// Reads a stream to its end, failing as soon as it passes `cap` bytes.
async fn read_capped(
    stream: impl AsyncRead + Unpin,
    cap: usize,
    name: &'static str,
    program: &str,
) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    stream
        .take(limit)
        .read_to_end(&mut bytes)
        .await
        .map_err(|source| Error::Read {
            program: program.to_owned(),
            stream: name,
            source,
        })?;
    if bytes.len() > cap {
        return Err(Error::OutputTooLarge {
            program: program.to_owned(),
            stream: name,
            cap,
        });
    }
    Ok(bytes)
}
