//! The MCP stdio bridge: bytes between a client's streams and an MCP server the host launched.
//!
//! MCP over stdio is newline-delimited JSON; the bridge does not parse it and buffers at most
//! one fixed-size chunk per direction.

use c2_host::{ExitReport, McpProcess};
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
}

/// Copies bytes both ways until either side ends, then stops the server (stdin closed,
/// SIGTERM, grace, SIGKILL to the group). After the client closed its input, the server's
/// output is forwarded for at most the process's [`McpProcess::drain`].
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
                if let Ok(Ok(n)) = tokio::time::timeout(drain, &mut down).await {
                    to_client = n;
                }
                true
            }
            down = &mut down => {
                match down {
                    Ok(n) => to_client = n,
                    Err(e) => error = Some(format!("server to client: {e}")),
                }
                false
            }
        }
    };
    let exit = server.stop().await;
    McpBridgeReport {
        client_closed,
        error,
        to_server,
        to_client,
        exit,
    }
}
