//! The two baselines of every run: the fixture in `echo` mode driven through blocking std pipes
//! (the floor), and the same echo driven from a tokio runtime the way the host drives plugins.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// How a plugin binary is told to be a raw line echo: an environment variable and its value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawEcho {
    pub(crate) variable: &'static str,
    pub(crate) value: &'static str,
}

impl RawEcho {
    /// The c2-testkit fixture's `echo` mode.
    pub(crate) const FIXTURE: Self = Self {
        variable: c2_testkit_env::MODE,
        value: "echo",
    };
    /// The SDK bench plugin's raw mode (crates/c2-plugin-sdk/examples/bench-echo.rs).
    pub(crate) const SDK: Self = Self {
        variable: "C2_SDK_ECHO_MODE",
        value: "raw",
    };
}

/// A raw echo child over blocking pipes.
#[derive(Debug)]
pub(crate) struct StdEcho {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl StdEcho {
    /// The fixture in its `echo` mode.
    pub(crate) fn spawn(fixture: &Path) -> Result<Self> {
        Self::spawn_raw(fixture, RawEcho::FIXTURE)
    }

    /// `binary` with the environment variable that selects its raw echo.
    pub(crate) fn spawn_raw(binary: &Path, mode: RawEcho) -> Result<Self> {
        let fixture = binary;
        #[expect(
            clippy::disallowed_methods,
            reason = "the floor is a bare std child on purpose: no supervisor, no runtime"
        )]
        let mut command = std::process::Command::new(fixture);
        command
            .env(mode.variable, mode.value)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command
            .spawn()
            .with_context(|| format!("could not start {}", fixture.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("the echo child has no pipes");
        };
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::with_capacity(128 * 1024, stdout),
            line: Vec::with_capacity(128 * 1024),
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` (ending in a newline) and reads the echo back.
    pub(crate) fn round_trip(&mut self, line: &[u8]) -> Result<()> {
        self.stdin.write_all(line)?;
        self.stdin.flush()?;
        self.line.clear();
        self.stdout.read_until(b'\n', &mut self.line)?;
        if self.line.len() != line.len() {
            bail!(
                "the echo child answered {} bytes for {}",
                self.line.len(),
                line.len()
            );
        }
        Ok(())
    }

    /// The unload baseline: SIGKILL and reap.
    pub(crate) fn kill_and_wait(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

/// The fixture in echo mode over tokio pipes, spawned through c2-supervisor like a plugin.
#[derive(Debug)]
pub(crate) struct AsyncEcho {
    process: c2_supervisor::Process,
    stdin: c2_supervisor::ProcessStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    line: Vec<u8>,
}

impl AsyncEcho {
    /// Must run inside the bench's runtime.
    pub(crate) fn spawn(fixture: &Path) -> Result<Self> {
        let spec = c2_supervisor::ProcessSpec::new(fixture, std::env::temp_dir())
            .env(c2_testkit_env::MODE, "echo")
            .label("bench-echo");
        let spawned = c2_supervisor::spawn(&spec, &c2_supervisor::SupervisorOptions::default())
            .context("could not start the async echo child")?;
        Ok(Self {
            process: spawned.process,
            stdin: spawned.stdin,
            stdout: tokio::io::BufReader::with_capacity(128 * 1024, spawned.stdout),
            line: Vec::with_capacity(128 * 1024),
        })
    }

    pub(crate) async fn round_trip(&mut self, line: &[u8]) -> Result<()> {
        self.stdin.write_all(line).await?;
        self.stdin.flush().await?;
        self.line.clear();
        self.stdout.read_until(b'\n', &mut self.line).await?;
        if self.line.len() != line.len() {
            bail!(
                "the echo child answered {} bytes for {}",
                self.line.len(),
                line.len()
            );
        }
        Ok(())
    }

    pub(crate) async fn stop(self) {
        self.process.stop().await;
    }
}

/// The fixture's environment names; xtask does not link c2-testkit (it is dev-only by the
/// layering rules), so the one variable it needs is named here.
mod c2_testkit_env {
    pub(crate) const MODE: &str = "C2_FIXTURE_MODE";
}
