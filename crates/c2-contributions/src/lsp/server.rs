//! A started language server: the handle its owner holds, tied to the scope that may stop it.

use std::sync::Arc;

use c2_kernel::{Lease, ScopeHandle};
use c2_supervisor::{Exit, ExitReport, Process, ProcessSpec, ProcessStdin};
use tokio::process::ChildStdout;

use super::ServerOrigin;
use c2_host::{ErrorKind, HostError, PluginHost};

/// Spawns `spec` and ties it to `owner`: disposing the scope stops the process.
pub(super) async fn launch(
    host: &PluginHost,
    spec: ProcessSpec,
    owner: ScopeHandle,
    lease: Lease,
    origin: ServerOrigin,
    language: &str,
) -> Result<LanguageServer, HostError> {
    let spawned = match c2_supervisor::spawn(&spec, &host.options().supervisor) {
        Ok(spawned) => spawned,
        Err(error) => {
            owner.dispose().await;
            return Err(HostError::new(
                ErrorKind::ActivationFailed,
                format!("the language server for {language} cannot start: {error}"),
            ));
        }
    };
    // The editor's handshake is the bridge's business, not the host's: nothing to wait for.
    spawned.process.handshake_done();
    let process = Arc::new(spawned.process);
    // The scope holds only a weak handle: the owner of the `LanguageServer` decides how long
    // the process may live, the scope only how long it is allowed to.
    let watched = Arc::downgrade(&process);
    let attached = owner.on_cleanup(move || async move {
        if let Some(process) = watched.upgrade() {
            process.stop().await;
        }
    });
    if let Err(error) = attached {
        process.stop().await;
        owner.dispose().await;
        return Err(error.into());
    }
    Ok(LanguageServer {
        process,
        stdin: spawned.stdin,
        stdout: spawned.stdout,
        owner,
        origin,
        language: language.to_owned(),
        _lease: lease,
    })
}
/// A live language server. Write requests to [`stdin_mut`](Self::stdin_mut), read replies
/// from [`stdout_mut`](Self::stdout_mut), or hand it to a bridge (c2-relay's LSP bridge joins
/// it to an editor's streams through [`pipes`](Self::pipes)).
///
/// Dropping it kills the process group at once; [`stop`](Self::stop) ends it gracefully.
pub struct LanguageServer {
    process: Arc<Process>,
    stdin: ProcessStdin,
    stdout: ChildStdout,
    owner: ScopeHandle,
    origin: ServerOrigin,
    language: String,
    _lease: Lease,
}

impl std::fmt::Debug for LanguageServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanguageServer")
            .field("language", &self.language)
            .field("origin", &self.origin)
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

impl Drop for LanguageServer {
    fn drop(&mut self) {
        // The process dies with the last strong handle (ours); the scope that watched it is
        // released in the background so it does not linger in the bundle's scope.
        if self.owner.is_current()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let owner = self.owner.clone();
            runtime.spawn(async move { owner.dispose().await });
        }
    }
}

impl LanguageServer {
    /// The server's process id (under the supervisor shim, the shim's child; the shim's own pid
    /// until the shim has started it).
    pub fn pid(&self) -> u32 {
        self.process
            .program_pid()
            .unwrap_or_else(|| self.process.pid())
    }

    /// Who provides it.
    pub fn origin(&self) -> &ServerOrigin {
        &self.origin
    }

    /// The language id it was started for, as asked.
    pub fn language(&self) -> &str {
        &self.language
    }

    /// The server's stdin: Content-Length framed requests go here.
    pub fn stdin_mut(&mut self) -> &mut ProcessStdin {
        &mut self.stdin
    }

    /// The server's stdout: Content-Length framed responses come from here.
    pub fn stdout_mut(&mut self) -> &mut ChildStdout {
        &mut self.stdout
    }

    /// The server's stdin and stdout and its process at once, for a bridge that drives both
    /// directions and closes the server's input (`Process::close_stdin`) when its client's
    /// input ends.
    pub fn pipes(&mut self) -> (&mut ProcessStdin, &mut ChildStdout, &Process) {
        (&mut self.stdin, &mut self.stdout, &self.process)
    }

    /// How it ended, if it has; never blocks.
    pub fn try_exit(&self) -> Option<Exit> {
        self.process.try_exit()
    }

    /// Waits until it has ended: on its own, through [`stop`](Self::stop), or because its
    /// bundle unloaded.
    pub async fn exited(&self) -> Exit {
        self.process.exited().await
    }

    /// The host stopped it (its bundle unloaded, or it was stopped): its end is not a crash.
    pub fn stopped_by_host(&self) -> bool {
        !self.owner.is_current()
    }

    /// The last stderr lines, for error messages.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.process.stderr_tail()
    }

    /// Stops it (stdin closed, SIGTERM, grace, SIGKILL to the group, reaped) and releases its
    /// scope. Idempotent.
    pub async fn stop(&self) -> ExitReport {
        if self.owner.is_current() {
            self.owner.dispose().await;
        }
        self.process.stop().await
    }
}
