//! `serve`: one live `PluginHost` for a plugins directory, serving c2-relay's relay
//! (docs/relay.md) on stdio (`--stdio`, for a frontend that spawns the service) or on a Unix
//! socket in the plugins directory (`--socket [PATH]`). One service per directory, held by
//! c2-relay's lock file naming its pid. SIGTERM, SIGINT or the end of stdin (`--stdio`) shut
//! every runtime down before the process exits. Also the CLI's side of a running service:
//! `invoke` and `invoke-ui` go through it when one answers.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use c2_host::Loading;
use c2_protocol::{ErrorObject, Peer};
use c2_relay::{Relay, RelayOptions};
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};

use crate::output::Failure;
use crate::session::{self, Settings};

/// The `uiCacheKey` every CLI call initializes with.
pub(crate) const CLI_UI_CACHE_KEY: &str = "c2-plugins-cli";

/// Where the relay listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// The process's stdin and stdout; the service ends when stdin does.
    Stdio,
    /// A Unix socket; `None` for `<plugins-dir>/.serve.sock`.
    Socket(Option<PathBuf>),
}

/// `serve`: the relay on a single-threaded runtime until a signal or the end of stdin.
pub(crate) fn blocking(
    runtime_and_settings: Result<(tokio::runtime::Runtime, Settings), Failure>,
    transport: &Transport,
    (max_connections, max_subscriptions): (usize, usize),
    announce: bool,
) -> Result<ExitCode, Failure> {
    let (runtime, settings) = runtime_and_settings?;
    let options = RelayOptions::default()
        .with_server_name("c2-plugins")
        .with_max_connections(max_connections)
        .with_max_subscriptions(max_subscriptions);
    let result = runtime.block_on(run(&settings, transport, options, announce));
    // stdin is read on a blocking thread that only the end of stdin would release.
    runtime.shutdown_background();
    result
}

/// Runs the service until a signal, or the end of stdin for `--stdio`. With `announce` (a
/// socket service under `--format json`), one ready line goes to stdout once it accepts.
pub(crate) async fn run(
    settings: &Settings,
    transport: &Transport,
    options: RelayOptions,
    announce: bool,
) -> Result<ExitCode, Failure> {
    let dir = crate::commands::plugins_dir(settings.plugins_dir.as_deref())?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the service's socket and lock live in the plugins directory, made here if missing"
    )]
    std::fs::create_dir_all(&dir).map_err(|error| {
        Failure::environment(
            "io",
            format!(
                "cannot create the plugins directory {}: {error}",
                dir.display()
            ),
        )
    })?;
    let held = c2_relay::acquire_lock(&dir).map_err(relay_failure)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(signal_failure)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(signal_failure)?;
    // A socket that cannot be bound fails before any host is opened.
    let listener = match transport {
        Transport::Stdio => None,
        Transport::Socket(path) => {
            let path = path
                .clone()
                .unwrap_or_else(|| dir.join(c2_relay::SOCKET_FILE));
            let listener = c2_relay::bind_socket(&path).map_err(relay_failure)?;
            Some((listener, path))
        }
    };
    let host = session::open_host(&dir, settings.handshake_timeout, true, Loading::All).await?;
    let relay = Relay::start(host.clone(), options)
        .await
        .map_err(relay_failure)?;
    tracing::info!(
        pid = std::process::id(),
        lock = %held.path.display(),
        "c2-plugins serve: relay {} for {}",
        c2_relay::RELAY_VERSION,
        dir.display()
    );
    let stop = async {
        tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        }
    };
    let why = match listener {
        None => {
            let peer = relay.serve(tokio::io::stdin(), tokio::io::stdout());
            let why = tokio::select! {
                why = stop => why,
                _ = peer.closed() => "the end of stdin",
            };
            peer.close();
            why
        }
        Some((listener, path)) => {
            if announce {
                announce_ready(&path, &dir);
            }
            relay.serve_socket(&listener, stop).await
        }
    };
    tracing::info!("c2-plugins serve: stopping on {why}; shutting every runtime down");
    host.shutdown().await;
    drop(held);
    Ok(ExitCode::SUCCESS)
}

/// The ready line (`c2_relay::json::ready`) on stdout, flushed: the socket accepts from now on.
fn announce_ready(socket: &Path, dir: &Path) {
    use std::io::Write;
    let line = c2_relay::json::ready(socket, dir, std::process::id());
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        tracing::warn!("c2-plugins serve: cannot write the ready line to stdout");
    }
}

fn signal_failure(error: std::io::Error) -> Failure {
    Failure::environment("io", format!("cannot listen for SIGTERM/SIGINT: {error}"))
}

/// A failure around the service (its lock, its socket, its module) as the CLI prints it.
fn relay_failure(error: c2_relay::Error) -> Failure {
    match error {
        c2_relay::Error::ServiceRunning { dir, holder, pid } => Failure::environment(
            "service_running",
            format!(
                "a `c2-plugins serve` ({holder}) already serves {}: connect to it, or stop it first (one service per plugins directory)",
                dir.display()
            ),
        )
        .with_detail("pid", pid.into()),
        c2_relay::Error::NotASocket { path } => Failure::environment(
            "io",
            format!(
                "{} exists and is not a socket: remove it or pass --socket PATH",
                path.display()
            ),
        ),
        error @ c2_relay::Error::Socket { .. } => Failure::environment(
            "io",
            format!("{error}; pass --socket PATH with a short path in a directory you own"),
        ),
        c2_relay::Error::Call { method, source } => Failure::environment(
            "io",
            format!(
                "the c2-plugins service failed during `{method}`: {source}; retry, or pass --no-service"
            ),
        ),
        c2_relay::Error::Remote(error) => failure(&error),
        other => Failure::environment("io", other.to_string()),
    }
}

/// A connection to the service for `dir`, or `None` when no service for it answers within
/// `patience`.
pub(crate) async fn connect_service(dir: &Path, patience: Duration) -> Option<Peer> {
    let client = c2_relay::client::ClientInfo {
        name: "c2-plugins",
        version: env!("CARGO_PKG_VERSION"),
        ui_cache_key: CLI_UI_CACHE_KEY,
    };
    c2_relay::client::connect(dir, patience, client).await
}

/// One call through the service; its failure is the one the in-process command would print.
pub(crate) async fn call_service(
    peer: &Peer,
    method: &str,
    params: Value,
) -> Result<Value, Failure> {
    c2_relay::client::call(peer, method, params)
        .await
        .map_err(relay_failure)
}

/// The relay's error as the CLI's failure: the host's kind, message and exit, and its detail.
pub(crate) fn failure(error: &ErrorObject) -> Failure {
    let data: serde_json::Map<String, Value> = error
        .data
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let mut failure = if data.get("environment") == Some(&Value::Bool(true)) {
        Failure::environment("io", error.message.clone())
    } else {
        Failure::operation("command_failed", error.message.clone())
    };
    if let Some(kind) = data.get("kind").and_then(Value::as_str) {
        failure.kind = kind.to_owned();
    }
    failure.hint = data.get("hint").and_then(Value::as_str).map(str::to_owned);
    for (key, value) in data {
        if !matches!(key.as_str(), "kind" | "environment" | "hint" | "next") {
            failure.detail.insert(key, value);
        }
    }
    failure
}

/// `invoke` and `invoke-ui` through a running `serve` for the same plugins directory, when one
/// answers and `--no-service` was not given; `None` to run in-process.
pub(crate) async fn through_service(
    command: &crate::Command,
    settings: &Settings,
    out: &mut crate::output::Out,
) -> Option<crate::CmdResult> {
    let absolute = |project: &Option<PathBuf>| {
        project
            .as_deref()
            .map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned()))
    };
    let (method, params) = match command {
        // A recording needs the plugin's connection in this process.
        crate::Command::Invoke {
            command,
            call,
            no_service: false,
        } if call.record.record.is_none() => {
            // What the user typed is checked as the in-process command checks it.
            let args = match session::parse_args(call.args.as_deref()) {
                Ok(args) => args,
                Err(failure) => return Some(Err(failure)),
            };
            let params = serde_json::json!({
                "command": command, "args": args, "project": absolute(&call.project.project),
            });
            ("command/invoke", params)
        }
        crate::Command::InvokeUi {
            id,
            ui,
            project,
            session,
            operation,
            action,
            no_service: false,
        } => {
            let operation = operation.map(|op| match op {
                crate::commands::ui::Operation::Render => "render",
                crate::commands::ui::Operation::Invoke => "invoke",
            });
            let params = serde_json::json!({
                "id": id, "ui": ui, "project": absolute(&project.project), "sessionId": session,
                "operation": operation, "actionId": action,
            });
            ("ui/invoke", params)
        }
        _ => return None,
    };
    let dir = crate::commands::plugins_dir(settings.plugins_dir.as_deref()).ok()?;
    let peer = connect_service(&dir, settings.handshake_timeout).await?;
    // Absent options are left out, as the in-process request leaves them unset.
    let params = match params {
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.into_iter()
                .filter(|(key, value)| key == "args" || !value.is_null())
                .collect(),
        ),
        other => other,
    };
    let result = session::until_signal(call_service(&peer, method, params)).await;
    Some(result.map(|result| crate::commands::invoke::print_result(out, result)))
}

#[cfg(test)]
mod tests {
    use c2_host::HostError;
    use serde_json::json;

    #[test]
    fn a_relay_error_becomes_the_failure_the_in_process_command_prints() {
        let errors = || {
            [
                HostError::new(c2_host::ErrorKind::NotTrusted, "x is not trusted")
                    .with_hint("trust it first"),
                HostError::from(c2_host::KernelError::remote_failure(
                    "command_failed",
                    "quota used up",
                    c2_kernel::RemoteError::new(-32050, Some(json!({"retryAfter": 30}))),
                )),
                HostError::NotInstalled { id: "x".to_owned() },
                HostError::Io {
                    action: "read",
                    path: "/nonexistent".into(),
                    source: std::io::Error::other("disk full"),
                },
            ]
        };
        for (relayed, local) in errors().into_iter().zip(errors()) {
            let through = super::failure(&c2_relay::error_object(relayed));
            let here = crate::session::failure(local);
            assert_eq!(
                (
                    &through.kind,
                    &through.message,
                    through.exit,
                    &through.hint,
                    &through.detail
                ),
                (
                    &here.kind,
                    &here.message,
                    here.exit,
                    &here.hint,
                    &here.detail
                )
            );
        }
        let plugin = crate::session::failure(errors().into_iter().nth(1).unwrap());
        assert_eq!(
            plugin.detail["pluginError"],
            json!({"code": -32050, "data": {"retryAfter": 30}})
        );
        let last = errors().into_iter().last().unwrap();
        assert_eq!(
            crate::session::failure(last).exit,
            2,
            "the environment's fault exits 2"
        );
    }
}
