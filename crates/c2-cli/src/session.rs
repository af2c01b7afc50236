//! One CLI invocation's plugin host: which store it opens, how it is opened, and how its
//! errors become the failures and exit codes of docs/cli.md.
//!
//! Every host command runs inside one `PluginHost` that is always shut down before the process
//! exits, so no plugin process outlives the command that started it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2_host::{HostError, HostOptions, Loading, PluginHost, Target};
use serde_json::Value;

use crate::output::Failure;

/// The global options a host is opened with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `--plugins-dir` as given (the environment and the default are resolved later, and
    /// `run` deliberately ignores them).
    pub(crate) plugins_dir: Option<PathBuf>,
    /// `--handshake-timeout`.
    pub(crate) handshake_timeout: Duration,
    /// `-v` count (`mcp` shows environment values only when it is set).
    pub(crate) verbose: u8,
}

/// What a command may do to a store directory that does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreUse {
    /// The command stores something: the host creates the store.
    Create,
    /// The command reads, or changes what is installed: a missing store is opened as an empty
    /// one in a throw-away directory, so the real path is not created just to look at it (and
    /// an id in it is reported as not installed, by the host).
    Existing,
}

/// A host and the throw-away directory it may live in (removed when this is dropped, after
/// the host is shut down).
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) host: PluginHost,
    /// The store the user asked for (for messages), which may differ from the opened one.
    pub(crate) store: PathBuf,
    _scratch: Option<tempfile::TempDir>,
}

impl Session {
    /// Resolves the store and opens a host on it according to `usage`.
    pub(crate) async fn open(
        settings: &Settings,
        usage: StoreUse,
        loading: Loading,
    ) -> Result<Self, Failure> {
        let store = crate::commands::plugins_dir(settings.plugins_dir.as_deref())?;
        let scratch = match usage {
            StoreUse::Existing if !store.exists() => Some(scratch_dir()?),
            _ => None,
        };
        let opened = scratch.as_ref().map_or(store.as_path(), |s| s.path());
        let host = open_host(opened, settings.handshake_timeout, false, loading).await?;
        Ok(Self {
            host,
            store,
            _scratch: scratch,
        })
    }
}

/// A private temporary directory for a store nobody keeps.
pub(crate) fn scratch_dir() -> Result<tempfile::TempDir, Failure> {
    tempfile::Builder::new()
        .prefix("c2-plugins-")
        .tempdir()
        .map_err(|error| {
            Failure::environment(
                "io",
                format!(
                    "cannot create a temporary plugin store: {error}; set TMPDIR to a writable directory"
                ),
            )
        })
}

/// Opens a host on `dir` with the CLI's working directory as the host's. `long_lived` (the
/// `serve` service) keeps a supervisor shim started ahead, so activations do not wait for it.
/// `loading`: a command that acts on one bundle loads only what it names.
pub(crate) async fn open_host(
    dir: &Path,
    handshake_timeout: Duration,
    long_lived: bool,
    loading: Loading,
) -> Result<PluginHost, Failure> {
    let working_dir = std::env::current_dir().map_err(|error| {
        Failure::environment(
            "io",
            format!("cannot read the current directory: {error}; run from an existing directory"),
        )
    })?;
    let mut options = HostOptions::new(dir).with_host_name("c2-plugins");
    options.handshake_timeout = handshake_timeout;
    options.working_dir = Some(working_dir);
    options.policy.managed_policy = crate::commands::block::managed_policy();
    options.frame_tap = crate::commands::record::tap();
    // One command per process: a shim started ahead would only be thrown away.
    options.supervisor.warm_shim = long_lived;
    options.loading = loading;
    let host = c2_contributions::open(options).await.map_err(failure)?;
    for problem in host.diagnostics() {
        tracing::warn!("{problem}");
    }
    Ok(host)
}

/// A host error as a failure: its kind, its message and hint, exit 2 for the environment's
/// faults and 1 for the operation's own; an invalid bundle carries its diagnostics in JSON, a
/// plugin's own JSON-RPC error its `code` and `data` as `pluginError`.
pub(crate) fn failure(error: HostError) -> Failure {
    let kind = error.kind().as_str().to_owned();
    let message = error.to_string();
    let hint = error.hint().map(str::to_owned);
    let plugin = error.plugin_error().map(c2_relay::json::plugin_error);
    let diagnostics = match &error {
        HostError::InvalidBundle { diagnostics, .. } => {
            Some(c2_relay::json::diagnostics(diagnostics))
        }
        _ => None,
    };
    let mut failure = if error.is_environment() {
        Failure::environment("io", message)
    } else {
        Failure::operation("command_failed", message)
    };
    failure.kind = kind;
    failure.hint = hint;
    if let Some(plugin) = plugin {
        failure = failure.with_detail("pluginError", plugin);
    }
    match diagnostics {
        Some(diagnostics) => failure.with_detail("diagnostics", diagnostics),
        None => failure,
    }
}

/// `--project DIR` as a host target (the host normalizes and checks the directory).
pub(crate) fn target(project: Option<&Path>) -> Target {
    project.map_or(Target::User, |dir| Target::Project(dir.to_owned()))
}

/// `--args`: inline JSON, `@FILE` for JSON in a file, or `{}` when absent.
pub(crate) fn parse_args(text: Option<&str>) -> Result<Value, Failure> {
    let Some(text) = text else {
        return Ok(Value::Object(serde_json::Map::new()));
    };
    let (json, origin) = match text.strip_prefix('@') {
        Some(path) => {
            #[expect(
                clippy::disallowed_methods,
                reason = "`--args @FILE` names a file the user gave"
            )]
            let json = std::fs::read_to_string(path).map_err(|error| {
                Failure::environment(
                    "unreadable_path",
                    format!("cannot read the arguments file {path}: {error}"),
                )
            })?;
            (json, path.to_owned())
        }
        None => (text.to_owned(), "--args".to_owned()),
    };
    serde_json::from_str(&json).map_err(|error| {
        Failure::environment(
            "invalid_args",
            format!("{origin} is not JSON ({error}): pass a JSON value such as '{{\"name\":\"x\"}}' or @FILE"),
        )
    })
}

/// Runs `work` until it ends or the user cancels with SIGINT or SIGTERM (decisions.md, "Caller
/// cancellation at the CLI"). On a signal `work` is dropped, which abandons the call in flight
/// (the protocol's caller cancellation: its process is stopped), and the failure is `cancelled`
/// with exit code 130 (SIGINT) or 143 (SIGTERM); the caller then shuts the host down, which
/// stops every process the command started. A signal before this is listening kills the CLI
/// by its default action, and the supervisor's shims then kill the plugin trees themselves.
pub(crate) async fn until_signal<T>(
    work: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind| {
        signal(kind).map_err(|error| {
            Failure::environment(
                "io",
                format!("cannot listen for SIGINT and SIGTERM: {error}"),
            )
        })
    };
    let mut interrupt = listen(SignalKind::interrupt())?;
    let mut terminate = listen(SignalKind::terminate())?;
    let (name, exit) = tokio::select! {
        result = work => return result,
        _ = interrupt.recv() => ("SIGINT", 130),
        _ = terminate.recv() => ("SIGTERM", 143),
    };
    let mut failure = Failure::operation(
        "cancelled",
        format!(
            "cancelled by {name}: the call in flight was abandoned and every plugin process this command started is being stopped"
        ),
    );
    failure.exit = exit;
    Err(failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use c2_host::ErrorKind;

    #[test]
    fn arguments_default_to_an_empty_object_and_must_be_json() {
        assert_eq!(parse_args(None).ok(), Some(serde_json::json!({})));
        assert_eq!(
            parse_args(Some(r#"{"a":1}"#)).ok(),
            Some(serde_json::json!({"a": 1}))
        );
        let refused = parse_args(Some("{nope")).err();
        assert_eq!(
            refused.map(|f| (f.kind, f.exit)),
            Some(("invalid_args".to_owned(), 2))
        );
        let missing = parse_args(Some("@/nonexistent/args.json")).err();
        assert_eq!(missing.map(|f| f.exit), Some(2));
    }

    #[test]
    fn host_errors_keep_their_kind_and_exit_by_whose_fault_it_is() {
        let command = failure(
            HostError::new(ErrorKind::UnknownCommand, "unknown command `x`")
                .with_hint("list the commands"),
        );
        assert_eq!(
            (command.kind.as_str(), command.exit, command.hint.as_deref()),
            ("unknown_command", 1, Some("list the commands"))
        );
        let project = failure(HostError::Project {
            path: PathBuf::from("/missing"),
            reason: "cannot resolve it".to_owned(),
        });
        assert_eq!(
            (project.kind.as_str(), project.exit),
            ("invalid_project", 2)
        );
    }
}
