//! The MCP stdio bridge: bytes between a client's streams and an MCP server the host launched.
//!
//! MCP over stdio is newline-delimited JSON; the bridge does not parse it and buffers at most
//! one fixed-size chunk per direction.

use c2_contributions::McpProcess;
use c2_host::ExitReport;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// How an MCP bridge ended.
#[derive(Debug)]
pub struct McpBridgeReport {
    /// True when the client closed its input first; false when the server ended first.
    pub client_closed: bool,
    /// A copy error, if one ended the bridge.
    pub error: Option<String>,
    /// Bytes copied client to server.
    pub to_server: u64,
    /// Bytes copied server to client.
    pub to_client: u64,
    /// How the server process ended.
    pub exit: ExitReport,
    /// The server's last stderr lines when the bridge ended with a failure (a copy error, the
    /// server ending first, or the server failing on its own); empty otherwise.
    pub stderr_tail: Vec<String>,
}

impl McpBridgeReport {
    /// Whether the server exited on its own, before it was stopped, with a failure (a code
    /// other than 0, a signal): a failure of the session whenever it happened, also after
    /// the client closed its input.
    pub fn server_failed(&self) -> bool {
        self.exit.already_exited && !self.exit.exit.success()
    }

    /// Whether the session failed: a copy error, the server ending before its client, or
    /// [`server_failed`](Self::server_failed).
    pub fn failed(&self) -> bool {
        self.error.is_some() || !self.client_closed || self.server_failed()
    }
}

/// Copies bytes both ways until either side ends, then stops the server (stdin closed,
/// SIGTERM, grace, SIGKILL to the group). After the client closed its input, the server's
/// output is forwarded, and its own exit awaited, for at most the process's
/// [`McpProcess::drain`]; a server still running then is stopped, which is a clean end. A
/// server that ended first is given the same time to be reaped, so its own exit status is the
/// one reported.
pub async fn bridge_mcp<R, W>(
    mut server: McpProcess,
    mut client_in: R,
    mut client_out: W,
) -> McpBridgeReport
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let drain = server.drain();
    let mut error = None;
    let mut to_server = 0;
    let mut to_client = 0;
    let client_closed = {
        let (stdin, stdout, process) = server.pipes();
        let mut down = std::pin::pin!(async {
            let n = tokio::io::copy(stdout, &mut client_out).await;
            let _ = client_out.flush().await;
            n
        });
        let up = async {
            let n = tokio::io::copy(&mut client_in, stdin).await;
            let _ = stdin.shutdown().await;
            n
        };
        tokio::select! {
            up = up => {
                match up {
                    Ok(n) => to_server = n,
                    Err(e) => error = Some(format!("client to server: {e}")),
                }
                process.close_stdin();
                let _drained = tokio::time::timeout(drain, async {
                    if let Ok(n) = (&mut down).await {
                        to_client = n;
                    }
                    process.exited().await;
                })
                .await;
                true
            }
            down = &mut down => {
                match down {
                    Ok(n) => to_client = n,
                    Err(e) => error = Some(format!("server to client: {e}")),
                }
                let _reaped = tokio::time::timeout(drain, process.exited()).await;
                false
            }
        }
    };
    let exit = server.stop().await;
    let mut report = McpBridgeReport {
        client_closed,
        error,
        to_server,
        to_client,
        exit,
        stderr_tail: Vec::new(),
    };
    if report.failed() {
        report.stderr_tail = settled_stderr_tail(&server).await;
    }
    report
}

/// The stderr tail once the drain of the (now dead) group's stderr has caught up: the reaper
/// can report the exit before the last lines were read, so wait a moment, bounded.
async fn settled_stderr_tail(server: &McpProcess) -> Vec<String> {
    let mut tail = server.stderr_tail();
    for _ in 0..STDERR_SETTLE_STEPS {
        tokio::time::sleep(STDERR_SETTLE_STEP).await;
        let now = server.stderr_tail();
        if now == tail && !now.is_empty() {
            break;
        }
        tail = now;
    }
    tail
}

/// How long a failed bridge waits, at most, for the server's last stderr lines.
const STDERR_SETTLE_STEPS: u32 = 10;
const STDERR_SETTLE_STEP: std::time::Duration = std::time::Duration::from_millis(20);
