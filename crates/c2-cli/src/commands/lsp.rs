//! `lsp <LANGUAGE> --project DIR`: start the language server the active plugins map to LANGUAGE
//! in that project and bridge it to this process's stdio with Content-Length framing. stdout
//! belongs to the editor, so every message of ours, failures included, goes to stderr.

use std::path::Path;
use std::process::ExitCode;

use c2_host::{BridgeEnd, PluginHost};

use crate::CmdResult;
use crate::output::{Failure, Out};
use crate::session;

pub(crate) async fn run(
    out: &mut Out,
    host: &PluginHost,
    language: &str,
    project: &Path,
) -> CmdResult {
    let server = host
        .start_language_server(project, language)
        .await
        .map_err(session::failure)?;
    out.progress(&format!(
        "c2-plugins: {language} language server started (pid {})",
        server.pid()
    ));
    let report = server.bridge(tokio::io::stdin(), tokio::io::stdout()).await;
    match report.ended {
        BridgeEnd::ClientClosed => Ok(ExitCode::SUCCESS),
        BridgeEnd::ServerClosed => Err(Failure::operation(
            "process_exited",
            format!("the {language} language server ended: {}", report.exit.exit),
        )),
        BridgeEnd::ClientToServerFailed(why) | BridgeEnd::ServerToClientFailed(why) => {
            Err(Failure::operation(
                "command_failed",
                format!("the {language} language-server bridge failed: {why}"),
            ))
        }
    }
}
