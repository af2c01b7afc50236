//! One run of a bundle's runtime against the stand-in host: spawn, the protocol's handshake,
//! each planned `command/invoke`, the exit on stdin EOF, then what stdout and stderr carried.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use c2_lock::lock;
use c2_manifest::{Manifest, RuntimeDecl};
use c2_protocol::{
    CallError, CloseReason, DeclaredCommand, ErrorObject, HandshakeError, HandshakeOptions,
    HostInfo, InitializeParams, InitializeResult, LineDecoder, PROTOCOL_VERSION, Peer, Verdicts,
    codes, initialize_start, method,
};
use c2_supervisor::{Process, ProcessSpec};
use serde_json::{Value, json};

use crate::error::Error;
use crate::hints;
use crate::observe::{
    LogMessages, STUB_COMMAND, StdoutLog, StdoutTap, collect_logs, excerpt, report_stderr,
    report_stdout, stub_host,
};
use crate::options::CheckOptions;
use crate::plan::{Invocation, invoke_name};
use crate::report::CheckReport;

/// The data directory handed to the plugin: the caller's, or a fresh one removed afterwards.
pub(crate) struct DataDir {
    pub(crate) path: PathBuf,
    owned: bool,
}

impl DataDir {
    #[expect(
        clippy::disallowed_methods,
        reason = "the check creates the data directory it hands the plugin under test"
    )]
    pub(crate) fn create(given: Option<&Path>) -> Result<Self, Error> {
        if let Some(path) = given {
            std::fs::create_dir_all(path).map_err(|source| Error::Io {
                action: "create the data directory",
                path: path.to_owned(),
                source,
            })?;
            return Ok(Self {
                path: path.to_owned(),
                owned: false,
            });
        }
        let base = std::env::temp_dir();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut attempt = 0u32;
        loop {
            let path = base.join(format!(
                "c2-check-{}-{stamp:x}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path, owned: true }),
                // Another check of this process made the same name: try the next one.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(source) => {
                    return Err(Error::Io {
                        action: "create a temporary data directory in",
                        path: base,
                        source,
                    });
                }
            }
        }
    }

    pub(crate) fn remove(self) {
        if self.owned {
            // A plugin may leave read-only files behind; a stale temp dir is not worth failing for.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// One run of the runtime against the stand-in host.
pub(crate) struct Session<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) manifest: &'a Manifest,
    pub(crate) runtime: &'a RuntimeDecl,
    pub(crate) options: &'a CheckOptions,
    pub(crate) data_dir: &'a Path,
}

impl Session<'_> {
    pub(crate) async fn run(&self, plan: &[Invocation<'_>], report: &mut CheckReport) {
        let options = self.options;
        let program = match c2_supervisor::resolve_command(
            self.dir,
            &self.runtime.command,
            std::env::var_os("PATH").as_deref(),
        ) {
            Ok(program) => program,
            Err(error) => {
                report.fail(
                    "spawn",
                    format!(
                        "{error}; runtime.command must name an executable in the bundle (e.g. bin/run, marked executable) or a program on PATH"
                    ),
                );
                return;
            }
        };
        let mut spec = ProcessSpec::new(&program, self.dir)
            .args(&self.runtime.args)
            .label(format!("check:{}", self.manifest.name));
        for (name, value) in &self.runtime.env {
            spec = spec.env(name, value);
        }
        let spawned_at = tokio::time::Instant::now();
        let spawned = match c2_supervisor::spawn(&spec, &options.supervisor) {
            Ok(spawned) => spawned,
            Err(error) => {
                report.fail(
                    "spawn",
                    format!(
                        "{error}; check runtime.command and runtime.args in plugin.json and that the program can run here"
                    ),
                );
                return;
            }
        };
        report.pass(
            "spawn",
            format!(
                "started {} (pid {}) in the bundle directory",
                program.display(),
                spawned.process.pid()
            ),
        );
        let process = spawned.process;
        let stdout = Arc::new(Mutex::new(StdoutLog::default()));
        let tap = StdoutTap {
            inner: spawned.stdout,
            decoder: LineDecoder::new(options.peer.frame),
            log: stdout.clone(),
            max_excerpts: options.max_excerpts,
        };
        let calls = Arc::new(Mutex::new(Vec::new()));
        let (peer, notifications) =
            Peer::new(tap, spawned.stdin, stub_host(calls.clone()), options.peer);
        let logs = Arc::new(Mutex::new(LogMessages::default()));
        let pump = tokio::spawn(collect_logs(
            notifications,
            logs.clone(),
            options.max_excerpts,
            options.log_message_max_bytes,
        ));

        let answered = self.handshake(&peer, &process, spawned_at, report).await;
        if let Some(result) = &answered {
            self.confirm(result, report);
            for invocation in plan {
                if !self
                    .invoke(invocation, &peer, &process, &calls, report)
                    .await
                {
                    break;
                }
            }
        }
        self.exit_on_eof(&peer, &process, answered.is_some(), report)
            .await;
        pump.abort();
        report_stdout(&peer, &lock(&stdout), report);
        report_stderr(
            &process,
            &lock(&logs),
            options.log_message_max_bytes,
            report,
        );
    }

    /// The protocol's handshake options for this check.
    fn handshake_options(&self) -> HandshakeOptions {
        HandshakeOptions::new()
            .with_peer(self.options.peer)
            .with_timeout(self.options.handshake_timeout)
    }

    /// The handshake's start step: sends `initialize`; the parsed answer when one came in time.
    async fn handshake(
        &self,
        peer: &Peer,
        process: &Process,
        spawned_at: tokio::time::Instant,
        report: &mut CheckReport,
    ) -> Option<InitializeResult> {
        let options = self.options;
        let params = InitializeParams {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            host: HostInfo {
                name: options.host_name.clone(),
                version: options.host_version.clone(),
                commands: vec![STUB_COMMAND.to_owned()],
                observations: false,
            },
            config: Value::Null,
            data_dir: self.data_dir.to_string_lossy().into_owned(),
            project_path: None,
        };
        let answer = initialize_start(peer, &params, &self.handshake_options(), spawned_at).await;
        match answer {
            Ok(result) => {
                report.pass(
                    "handshake",
                    format!("answered initialize as {} {}", result.name, result.version),
                );
                Some(result)
            }
            Err(HandshakeError::TimedOut { timeout }) => {
                report.fail(
                    "handshake",
                    format!(
                        "no answer to initialize within {timeout:?} of spawn; read stdin line by line and answer initialize first, at once (the host kills a runtime that misses the window). {}",
                        stderr_hint(process)
                    ),
                );
                None
            }
            Err(HandshakeError::Malformed(error)) => {
                report.fail(
                    "handshake",
                    format!(
                        "the initialize result is malformed ({error}); answer {{\"name\", \"version\", \"protocolVersion\": \"{PROTOCOL_VERSION}\", \"commands\": [...], \"events\": [...]}}"
                    ),
                );
                None
            }
            // The call failed (the connection closed, an error answer); the start step judges
            // nothing else.
            Err(error) => {
                let exit = settle_exit(process, self.options).await;
                report.fail(
                    "handshake",
                    format!(
                        "{error}{exit}; the runtime must keep running and answer initialize on stdout. {}",
                        stderr_hint(process)
                    ),
                );
                None
            }
        }
    }

    /// The handshake's finish step, each verdict reported on its own: the protocol version and
    /// the exact command/schema confirmation.
    fn confirm(&self, result: &InitializeResult, report: &mut CheckReport) {
        let handshake = self.handshake_options();
        let host = &handshake.host_version;
        let declared: Vec<DeclaredCommand> = self
            .manifest
            .codetwo
            .commands
            .iter()
            .map(DeclaredCommand::from)
            .collect();
        let verdicts = Verdicts::of(result, &declared, &handshake);
        match verdicts.protocol_version {
            Ok(version) => report.pass(
                "protocol version",
                format!("{version} is compatible with the host's {host}"),
            ),
            Err(error) => report.fail(
                "protocol version",
                format!(
                    "{error}; answer initialize with \"protocolVersion\": \"{PROTOCOL_VERSION}\""
                ),
            ),
        }
        match verdicts.commands {
            Ok(()) => report.pass(
                "commands",
                format!(
                    "initialize confirmed exactly the {} declared command(s) and their argsSchemas",
                    declared.len()
                ),
            ),
            Err(error) => report.fail(
                "commands",
                format!(
                    "{error}\nconfirm exactly the ids and argsSchemas of plugin.json (reading them from plugin.json at start means they cannot drift); the host refuses and kills a runtime whose confirmation differs"
                ),
            ),
        }
    }

    /// Invokes one command with each of its args; false when the connection is gone.
    async fn invoke(
        &self,
        invocation: &Invocation<'_>,
        peer: &Peer,
        process: &Process,
        calls: &Mutex<Vec<String>>,
        report: &mut CheckReport,
    ) -> bool {
        let id = &invocation.command.id;
        for args in &invocation.args {
            let name = invoke_name(id, args);
            let params = json!({ "name": id, "args": args });
            // A leader that exits fails the call at once, even if a descendant holds stdout.
            let answer = tokio::time::timeout(self.options.invoke_timeout, async {
                process
                    .until_exit(
                        self.options.supervisor.exit_drain,
                        peer.request_raw(method::COMMAND_INVOKE, &params),
                    )
                    .await
                    .unwrap_or(Err(CallError::Closed(CloseReason::StreamClosed)))
            })
            .await;
            let called = std::mem::take(&mut *lock(calls));
            let called = if called.is_empty() {
                String::new()
            } else {
                format!(
                    "; it called {} (a check answers every command/call with an error; try {} for real answers)",
                    called.join(", "),
                    hints::RUN
                )
            };
            match answer {
                Err(_) => {
                    report.fail(
                        name,
                        format!(
                            "no answer within {:?}{called}; answer every command/invoke with a result or an error (a caller without an answer hangs)",
                            self.options.invoke_timeout
                        ),
                    );
                }
                Ok(Ok(raw)) => {
                    let shown = excerpt(raw.get(), self.options.max_result_chars);
                    let cost = c2_protocol::value_tree_cost(raw.get());
                    let bound = self.options.max_value_tree_bytes;
                    if cost > bound {
                        report.fail(
                            name,
                            format!(
                                "answered {} bytes of JSON that would take about {cost} bytes in memory, over the host's {bound}-byte bound, so the host refuses it as result_too_large; return less{called}",
                                raw.get().len()
                            ),
                        );
                    } else {
                        report.pass(name, format!("answered {shown}{called}"));
                    }
                }
                Ok(Err(CallError::Remote(error))) => {
                    let (pass, detail) = judge_error(id, &error);
                    report.push(name, pass, format!("{detail}{called}"));
                }
                Ok(Err(CallError::Closed(reason))) => {
                    let exit = settle_exit(process, self.options).await;
                    report.fail(
                        name,
                        format!(
                            "the connection closed before the answer ({reason}{exit}); a command must not end the process or close stdout. {}",
                            stderr_hint(process)
                        ),
                    );
                    return false;
                }
                Ok(Err(error)) => report.fail(name, format!("{error}{called}")),
            }
        }
        true
    }

    /// Closes stdin and waits the grace period for the process to go.
    async fn exit_on_eof(
        &self,
        peer: &Peer,
        process: &Process,
        handshaken: bool,
        report: &mut CheckReport,
    ) {
        const NAME: &str = "exit on stdin EOF";
        let grace = self.options.exit_grace;
        if let Some(exit) = process.try_exit() {
            // Before a handshake the handshake check has already reported the exit.
            if handshaken {
                report.fail(
                    NAME,
                    format!(
                        "the process {exit} before its stdin closed; a runtime keeps serving until stdin reaches EOF"
                    ),
                );
            }
        } else {
            process.close_stdin();
            match tokio::time::timeout(grace, process.exited()).await {
                Ok(exit) => report.pass(NAME, format!("{exit} within {grace:?} of stdin closing")),
                Err(_) => {
                    report.fail(
                        NAME,
                        format!(
                            "still running {grace:?} after its stdin closed, so it was killed; exit when stdin reaches EOF (that is how a runtime whose host was killed leaves no orphan)"
                        ),
                    );
                }
            }
        }
        process.stop().await;
        // The reader may still hold the last bytes of stdout: let it reach the end.
        let _ = tokio::time::timeout(grace, peer.closed()).await;
        peer.close();
        // stderr is drained by another task; give it a moment to read the last lines.
        tokio::time::sleep(self.options.stderr_settle).await;
    }
}

/// Passes an error answer unless its code says the runtime does not serve the declared command
/// or rejects args its own schema admits.
pub(crate) fn judge_error(id: &str, error: &ErrorObject) -> (bool, String) {
    let what = format!("error {}: {}", error.code, error.message);
    match error.code {
        codes::METHOD_NOT_FOUND => (false, format!("{what}; answer the method command/invoke")),
        codes::UNKNOWN_COMMAND => (
            false,
            format!("{what}; the runtime must implement every declared command, including {id}"),
        ),
        codes::INVALID_PARAMS | codes::INVALID_REQUEST => (
            false,
            format!(
                "{what}; these args match the command's argsSchema, so the runtime must accept them (or the schema must be tightened)"
            ),
        ),
        _ => (
            true,
            format!(
                "answered with {what} (an error answer is valid; make sure it is the one you meant)"
            ),
        ),
    }
}

/// `, it exited with code 1` once the reaper has reported within the exit grace (the last
/// stderr lines then get `stderr_settle` to be read), else nothing.
async fn settle_exit(process: &Process, options: &CheckOptions) -> String {
    match tokio::time::timeout(options.exit_grace, process.exited()).await {
        Ok(exit) => {
            tokio::time::sleep(options.stderr_settle).await;
            format!(", it {exit}")
        }
        Err(_) => String::new(),
    }
}

pub(crate) fn stderr_hint(process: &Process) -> String {
    let tail = process.stderr_tail();
    if tail.is_empty() {
        "It wrote nothing to stderr.".to_owned()
    } else {
        format!("Last stderr lines:\n  {}", tail.join("\n  "))
    }
}
