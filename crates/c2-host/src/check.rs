//! `c2-plugins check`: one bundle directory's runtime, exercised the way the host would run it,
//! with a pass/fail verdict per check and, for every failure, what the author should fix.
//!
//! The check spawns the runtime exactly as activation does (bundle directory as cwd, the
//! manifest's `env` over the host's, its own process group through c2-supervisor, a fresh
//! `dataDir`), but against a stand-in host: `host.commands` is `["git.status"]`, `config` is
//! `null`, there is no `projectPath`, and every `command/call` from the plugin is answered with
//! an error saying it is not available during a check. Nothing is installed, trusted or stored.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use c2_bundle_collector::{CollectedBundle, Limits};
use c2_manifest::{CommandDecl, Manifest, RuntimeDecl};
use c2_protocol::{
    CallError, DecodeEvent, ErrorObject, HostInfo, InitializeParams, InitializeResult, LineDecoder,
    Notifications, PROTOCOL_VERSION, Peer, PeerOptions, Request, check_protocol_version, codes,
    confirm_commands, method,
};
use c2_supervisor::{Process, ProcessSpec, SupervisorOptions};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

use crate::HostOptions;
use crate::error::HostError;

/// The optional file beside `plugin.json` holding example args: `{"<command id>": [args, ...]}`.
pub const EXAMPLES_FILE: &str = "examples.json";

/// The one host command a checked plugin is told about, answered by the check's stub.
const STUB_COMMAND: &str = "git.status";

/// Every bound of a check; the defaults are the host's (decisions.md) where the host has one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckOptions {
    /// How long the runtime may take to answer `initialize`, counted from spawn (10 s).
    pub handshake_timeout: Duration,
    /// How long one `command/invoke` may take. The protocol sets no invoke timeout; a check has
    /// to end, so it waits this long (10 s) and reports a missing answer as a failure.
    pub invoke_timeout: Duration,
    /// How long the process may take to exit once its stdin is closed (1 s, the host's stop
    /// grace).
    pub exit_grace: Duration,
    /// How long the check waits, once the process has ended, for its last stderr lines to be
    /// read before quoting them (50 ms).
    pub stderr_settle: Duration,
    /// How many non-protocol stdout lines and `log` messages are quoted in the report (3).
    pub max_excerpts: usize,
    /// How many characters of a command's result are quoted in the report (240).
    pub max_result_chars: usize,
    /// Sent as `initialize.host.name`.
    pub host_name: String,
    /// Sent as `initialize.host.version`.
    pub host_version: String,
    /// The `dataDir` handed to the plugin; `None` makes a fresh directory under the system
    /// temporary directory and removes it afterwards.
    pub data_dir: Option<PathBuf>,
    /// Bounds of the connection.
    pub peer: PeerOptions,
    /// The host's bound on a `log` message (64 KiB); a longer one fails the log check.
    pub log_message_max_bytes: usize,
    /// The host's bound on a result read into a value (32 MiB); a result over it fails.
    pub max_value_tree_bytes: usize,
    /// Stop grace and stderr handling of the process.
    pub supervisor: SupervisorOptions,
    /// Bundle collection limits.
    pub limits: Limits,
}

impl CheckOptions {
    /// The check's options with the bounds `host` would apply to the same runtime.
    pub fn from_host(host: &HostOptions) -> Self {
        Self {
            handshake_timeout: host.handshake_timeout,
            invoke_timeout: Duration::from_secs(10),
            exit_grace: host.supervisor.stop_grace,
            stderr_settle: Duration::from_millis(50),
            max_excerpts: 3,
            max_result_chars: 240,
            host_name: host.host_name.clone(),
            host_version: host.host_version.clone(),
            data_dir: None,
            peer: host.peer,
            log_message_max_bytes: host.log_message_max_bytes,
            max_value_tree_bytes: host.max_value_tree_bytes,
            supervisor: host.supervisor.clone(),
            limits: host.limits,
        }
    }
}

impl CheckOptions {
    /// Sets [`CheckOptions::host_name`].
    #[must_use]
    pub fn with_host_name(mut self, name: impl Into<String>) -> Self {
        self.host_name = name.into();
        self
    }

    /// Sets [`CheckOptions::host_version`].
    #[must_use]
    pub fn with_host_version(mut self, version: impl Into<String>) -> Self {
        self.host_version = version.into();
        self
    }

    /// Sets [`CheckOptions::data_dir`].
    #[must_use]
    pub fn with_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    crate::options::setters! {
        "CheckOptions";
        with_handshake_timeout => handshake_timeout: Duration,
        with_invoke_timeout => invoke_timeout: Duration,
        with_exit_grace => exit_grace: Duration,
        with_stderr_settle => stderr_settle: Duration,
        with_max_excerpts => max_excerpts: usize,
        with_max_result_chars => max_result_chars: usize,
        with_peer => peer: PeerOptions,
        with_log_message_max_bytes => log_message_max_bytes: usize,
        with_max_value_tree_bytes => max_value_tree_bytes: usize,
        with_supervisor => supervisor: SupervisorOptions,
        with_limits => limits: Limits,
    }
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self::from_host(&HostOptions::new(PathBuf::new()))
    }
}

/// One verdict: `detail` says what was seen and, on failure, what to fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckItem {
    /// A short stable name, e.g. `handshake` or `invoke hello.status`.
    pub name: String,
    /// Whether the check passed.
    pub pass: bool,
    /// What was seen; on failure, what to fix.
    pub detail: String,
}

/// Every verdict of one check run, in the order they were made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// True iff every check passed.
    pub ok: bool,
    /// The verdicts.
    pub checks: Vec<CheckItem>,
}

impl CheckReport {
    fn pass(&mut self, name: impl Into<String>, detail: impl Into<String>) {
        self.push(name, true, detail);
    }

    fn fail(&mut self, name: impl Into<String>, detail: impl Into<String>) {
        self.push(name, false, detail);
    }

    fn push(&mut self, name: impl Into<String>, pass: bool, detail: impl Into<String>) {
        self.checks.push(CheckItem {
            name: name.into(),
            pass,
            detail: detail.into(),
        });
    }

    fn finish(mut self) -> Self {
        self.ok = !self.checks.is_empty() && self.checks.iter().all(|c| c.pass);
        self
    }
}

/// Checks the bundle directory `dir`: validates it, runs its runtime against a stand-in host
/// and reports every verdict. `Err` only when `dir` cannot be read at all or the data directory
/// cannot be made; everything the bundle does wrong is a failed [`CheckItem`].
pub async fn check_bundle(dir: &Path, options: &CheckOptions) -> Result<CheckReport, HostError> {
    let mut report = CheckReport::default();
    // The runtime is resolved here and spawned in `dir`: a relative path would resolve twice.
    let dir = &std::path::absolute(dir).map_err(|source| HostError::Io {
        action: "resolve the bundle directory",
        path: dir.to_owned(),
        source,
    })?;
    let bundle = c2_bundle_collector::collect_dir(dir, &options.limits)?;
    let Some(manifest) = validated(&bundle, &mut report) else {
        return Ok(report.finish());
    };
    let Some(runtime) = manifest.codetwo.runtime.as_ref() else {
        report.fail(
            "runtime",
            "plugin.json declares no extensions.dev.codetwo.runtime, so there is no process to check; add one, or use `c2-plugins validate` for a bundle without a runtime",
        );
        return Ok(report.finish());
    };
    let plan = plan_invocations(&bundle, manifest, &mut report);
    let data_dir = DataDir::create(options.data_dir.as_deref())?;
    let session = Session {
        dir,
        manifest,
        runtime,
        options,
        data_dir: &data_dir.path,
    };
    session.run(&plan, &mut report).await;
    data_dir.remove();
    Ok(report.finish())
}

/// The bundle check; the manifest when the bundle is valid.
fn validated<'b>(bundle: &'b CollectedBundle, report: &mut CheckReport) -> Option<&'b Manifest> {
    let errors: Vec<String> = bundle
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let at = match (&d.file, d.line) {
                (Some(file), Some(line)) => format!("{file}:{line}: "),
                (Some(file), None) => format!("{file}: "),
                _ => String::new(),
            };
            let help = d
                .help
                .as_deref()
                .map_or(String::new(), |h| format!(" ({h})"));
            format!("\n  {at}[{}] {}{help}", d.code, d.message)
        })
        .collect();
    match bundle.manifest.as_ref() {
        Some(manifest) if errors.is_empty() => {
            report.pass(
                "bundle",
                format!(
                    "{} {} is a valid bundle",
                    manifest.name,
                    manifest.version.as_deref().unwrap_or("-")
                ),
            );
            Some(manifest)
        }
        _ => {
            report.fail(
                "bundle",
                format!(
                    "the bundle is invalid ({} error(s)); fix these, `c2-plugins validate` shows them with their source lines:{}",
                    errors.len(),
                    errors.concat()
                ),
            );
            None
        }
    }
}

/// The args each declared command is invoked with, in manifest order.
struct Invocation<'m> {
    command: &'m CommandDecl,
    args: Vec<Value>,
}

/// Chooses the args per command: the examples file's, else `{}` when the argsSchema admits it.
/// Commands that get none, and examples that break their schema, are reported here.
fn plan_invocations<'m>(
    bundle: &CollectedBundle,
    manifest: &'m Manifest,
    report: &mut CheckReport,
) -> Vec<Invocation<'m>> {
    let mut examples = read_examples(bundle, manifest, report);
    let mut plan = Vec::new();
    for command in &manifest.codetwo.commands {
        let validator = match command.args_schema.as_ref() {
            None | Some(Value::Null) => None,
            Some(schema) => match jsonschema::validator_for(schema) {
                Ok(validator) => Some(validator),
                Err(error) => {
                    report.fail(
                        format!("invoke {}", command.id),
                        format!(
                            "its argsSchema cannot be compiled ({error}); fix the schema in plugin.json"
                        ),
                    );
                    continue;
                }
            },
        };
        let admits = |args: &Value| validator.as_ref().is_none_or(|v| v.is_valid(args));
        let args = match examples.remove(&command.id) {
            Some(list) => {
                let mut admitted = Vec::new();
                for (index, args) in list.into_iter().enumerate() {
                    if admits(&args) {
                        admitted.push(args);
                        continue;
                    }
                    let why = validator
                        .as_ref()
                        .and_then(|v| v.iter_errors(&args).next())
                        .map_or_else(String::new, |e| format!(" at `{}`: {e}", e.instance_path()));
                    report.fail(
                        invoke_name(&command.id, &args),
                        format!(
                            "example {} of {EXAMPLES_FILE} does not match the command's argsSchema{why}; fix the example or the schema",
                            index + 1
                        ),
                    );
                }
                admitted
            }
            None if admits(&json!({})) => vec![json!({})],
            None => {
                report.pass(
                    format!("invoke {}", command.id),
                    format!(
                        "not invoked: its argsSchema does not admit {{}}; add example args to {EXAMPLES_FILE} ({{\"{}\": [{{...}}]}}) to exercise it",
                        command.id
                    ),
                );
                Vec::new()
            }
        };
        if !args.is_empty() {
            plan.push(Invocation { command, args });
        }
    }
    plan
}

/// Reads the optional examples file; problems with it are failed checks.
fn read_examples(
    bundle: &CollectedBundle,
    manifest: &Manifest,
    report: &mut CheckReport,
) -> BTreeMap<String, Vec<Value>> {
    let Some(file) = bundle.files.get(EXAMPLES_FILE) else {
        return BTreeMap::new();
    };
    let examples: BTreeMap<String, Vec<Value>> = match serde_json::from_slice(&file.bytes) {
        Ok(examples) => examples,
        Err(error) => {
            report.fail(
                EXAMPLES_FILE,
                format!(
                    "{EXAMPLES_FILE} is not an object of arrays of args ({error}); write {{\"<command id>\": [{{...args}}, ...]}}"
                ),
            );
            return BTreeMap::new();
        }
    };
    let unknown: Vec<&str> = examples
        .keys()
        .filter(|id| !manifest.codetwo.commands.iter().any(|c| &c.id == *id))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        let count: usize = examples.values().map(Vec::len).sum();
        report.pass(EXAMPLES_FILE, format!("{count} example(s) read"));
    } else {
        report.fail(
            EXAMPLES_FILE,
            format!(
                "{EXAMPLES_FILE} names command(s) plugin.json does not declare: {}; use the ids of extensions.dev.codetwo.commands",
                unknown.join(", ")
            ),
        );
    }
    examples
}

fn invoke_name(id: &str, args: &Value) -> String {
    if args == &json!({}) {
        format!("invoke {id}")
    } else {
        format!("invoke {id} {args}")
    }
}

/// The data directory handed to the plugin: the caller's, or a fresh one removed afterwards.
struct DataDir {
    path: PathBuf,
    owned: bool,
}

impl DataDir {
    fn create(given: Option<&Path>) -> Result<Self, HostError> {
        if let Some(path) = given {
            std::fs::create_dir_all(path).map_err(|source| HostError::Io {
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
                    return Err(HostError::Io {
                        action: "create a temporary data directory in",
                        path: base,
                        source,
                    });
                }
            }
        }
    }

    fn remove(self) {
        if self.owned {
            // A plugin may leave read-only files behind; a stale temp dir is not worth failing for.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// One run of the runtime against the stand-in host.
struct Session<'a> {
    dir: &'a Path,
    manifest: &'a Manifest,
    runtime: &'a RuntimeDecl,
    options: &'a CheckOptions,
    data_dir: &'a Path,
}

impl Session<'_> {
    async fn run(&self, plan: &[Invocation<'_>], report: &mut CheckReport) {
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
        let deadline = tokio::time::Instant::now() + options.handshake_timeout;
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

        let answered = self.handshake(&peer, &process, deadline, report).await;
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

    /// Sends `initialize`; the parsed answer when one came in time.
    async fn handshake(
        &self,
        peer: &Peer,
        process: &Process,
        deadline: tokio::time::Instant,
        report: &mut CheckReport,
    ) -> Option<InitializeResult> {
        let options = self.options;
        let params = InitializeParams {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            host: HostInfo {
                name: options.host_name.clone(),
                version: options.host_version.clone(),
                commands: vec![STUB_COMMAND.to_owned()],
            },
            config: Value::Null,
            data_dir: self.data_dir.to_string_lossy().into_owned(),
            project_path: None,
        };
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        let answer =
            tokio::time::timeout_at(deadline, peer.request(method::INITIALIZE, Some(params))).await;
        let value = match answer {
            Err(_) => {
                report.fail(
                    "handshake",
                    format!(
                        "no answer to initialize within {:?} of spawn; read stdin line by line and answer initialize first, at once (the host kills a runtime that misses the window). {}",
                        options.handshake_timeout,
                        stderr_hint(process)
                    ),
                );
                return None;
            }
            Ok(Err(error)) => {
                let exit = settle_exit(process, self.options).await;
                report.fail(
                    "handshake",
                    format!(
                        "initialize failed: {error}{exit}; the runtime must keep running and answer initialize on stdout. {}",
                        stderr_hint(process)
                    ),
                );
                return None;
            }
            Ok(Ok(value)) => value,
        };
        match serde_json::from_value::<InitializeResult>(value) {
            Ok(result) => {
                report.pass(
                    "handshake",
                    format!("answered initialize as {} {}", result.name, result.version),
                );
                Some(result)
            }
            Err(error) => {
                report.fail(
                    "handshake",
                    format!(
                        "the initialize result is malformed ({error}); answer {{\"name\", \"version\", \"protocolVersion\": \"{PROTOCOL_VERSION}\", \"commands\": [...], \"events\": [...]}}"
                    ),
                );
                None
            }
        }
    }

    /// The protocol version and the exact command/schema confirmation.
    fn confirm(&self, result: &InitializeResult, report: &mut CheckReport) {
        let host = c2_protocol::ProtocolVersion::parse(PROTOCOL_VERSION)
            .unwrap_or(c2_protocol::ProtocolVersion::CURRENT);
        match check_protocol_version(&host, result.protocol_version.as_deref()) {
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
        let declared = crate::bundle::declared_commands(self.manifest);
        match confirm_commands(&declared, result) {
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
            let answer = tokio::time::timeout(
                self.options.invoke_timeout,
                crate::runtime::until_exit(
                    process,
                    self.options.supervisor.exit_drain,
                    peer.request_raw(method::COMMAND_INVOKE, &params),
                ),
            )
            .await;
            let called = std::mem::take(&mut *lock(calls));
            let called = if called.is_empty() {
                String::new()
            } else {
                format!(
                    "; it called {} (a check answers every command/call with an error; try `c2-plugins run` for real answers)",
                    called.join(", ")
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
fn judge_error(id: &str, error: &ErrorObject) -> (bool, String) {
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

fn stderr_hint(process: &Process) -> String {
    let tail = process.stderr_tail();
    if tail.is_empty() {
        "It wrote nothing to stderr.".to_owned()
    } else {
        format!("Last stderr lines:\n  {}", tail.join("\n  "))
    }
}

fn report_stdout(peer: &Peer, log: &StdoutLog, report: &mut CheckReport) {
    let stats = peer.stats();
    let mut problems = Vec::new();
    if stats.dropped_lines > 0 {
        let quoted: Vec<String> = log.excerpts.iter().map(|e| format!("`{e}`")).collect();
        problems.push(format!(
            "{} non-protocol line(s): {}",
            stats.dropped_lines,
            quoted.join(", ")
        ));
    }
    if stats.invalid_messages > 0 {
        problems.push(format!(
            "{} JSON object(s) that are not JSON-RPC 2.0 messages",
            stats.invalid_messages
        ));
    }
    if let Some(len) = log.oversized {
        problems.push(format!("a line of {len} bytes, over the frame limit"));
    }
    if problems.is_empty() {
        report.pass(
            "stdout",
            format!("{} protocol frame(s), nothing else", stats.frames_in),
        );
    } else {
        report.fail(
            "stdout",
            format!(
                "stdout carried {}; stdout is the protocol channel: write logs to stderr or use the log notification",
                problems.join(" and ")
            ),
        );
    }
}

fn report_stderr(process: &Process, logs: &LogMessages, log_max: usize, report: &mut CheckReport) {
    let tail = process.stderr_tail();
    let stderr = if tail.is_empty() {
        "nothing on stderr".to_owned()
    } else {
        format!("last stderr line(s):\n  {}", tail.join("\n  "))
    };
    let log = if logs.count == 0 {
        "no log notifications".to_owned()
    } else {
        format!(
            "{} log notification(s), first: {}",
            logs.count,
            logs.first.join("; ")
        )
    };
    if logs.oversized > 0 {
        report.fail(
            "stderr and log",
            format!(
                "{log}; {} of them over the host's {log_max}-byte bound (the longest {} bytes), which the host cuts; log less per message. {stderr}",
                logs.oversized, logs.longest
            ),
        );
    } else {
        report.pass("stderr and log", format!("{log}; {stderr}"));
    }
    if !logs.forged_events.is_empty() {
        let names: Vec<String> = logs
            .forged_events
            .iter()
            .map(|n| format!("`{}`", n.escape_debug()))
            .collect();
        report.fail(
            "event names",
            format!(
                "the plugin emitted {}, which only the host may emit (engine/, host/, plugins/, kernel/, skills/changed, scenes/changed); the host drops them. Name your events after your plugin, e.g. `<plugin>/changed`",
                names.join(", ")
            ),
        );
    }
}

fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The check's host side: every `command/call` fails, saying why; it records what was called.
fn stub_host(calls: Arc<Mutex<Vec<String>>>) -> impl c2_protocol::RequestHandler {
    move |request: Request, _peer: Peer| {
        let calls = calls.clone();
        async move {
            if request.method != method::COMMAND_CALL {
                return Err(ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!(
                        "method not found: {}; a plugin may call only command/call",
                        request.method
                    ),
                ));
            }
            #[derive(serde::Deserialize)]
            struct Named {
                #[serde(default)]
                name: String,
            }
            let name = c2_protocol::from_raw::<Named>(request.params.as_deref())
                .map(|p| p.name)
                .unwrap_or_default();
            lock(&calls).push(format!("`{name}`"));
            if name == STUB_COMMAND {
                Err(ErrorObject::new(
                    codes::COMMAND_FAILED,
                    format!("{STUB_COMMAND} is not available during `c2-plugins check`"),
                ))
            } else {
                Err(ErrorObject::new(
                    codes::UNKNOWN_COMMAND,
                    format!(
                        "unknown command `{name}`: host.commands lists what the host publishes"
                    ),
                ))
            }
        }
    }
}

#[derive(Debug, Default)]
struct LogMessages {
    count: usize,
    first: Vec<String>,
    /// Log messages over the host's bound, and the longest one's length.
    oversized: usize,
    longest: usize,
    /// Host event names the plugin tried to emit, each once.
    forged_events: Vec<String>,
}

async fn collect_logs(
    mut notifications: Notifications,
    logs: Arc<Mutex<LogMessages>>,
    max: usize,
    log_max: usize,
) {
    while let Some(notification) = notifications.recv().await {
        if notification.method == method::EVENT_EMIT {
            #[derive(serde::Deserialize)]
            struct Named {
                name: String,
            }
            if let Ok(Named { name }) = c2_protocol::from_raw(notification.params.as_deref())
                && crate::runtime::is_host_event(&name)
            {
                let mut logs = lock(&logs);
                if !logs.forged_events.contains(&name) && logs.forged_events.len() < max {
                    logs.forged_events.push(name);
                }
            }
            continue;
        }
        if notification.method != method::LOG {
            continue;
        }
        #[derive(serde::Deserialize)]
        struct Line {
            #[serde(default)]
            level: Option<String>,
            #[serde(default)]
            message: String,
        }
        let Line { level, message } = c2_protocol::from_raw(notification.params.as_deref())
            .unwrap_or(Line {
                level: None,
                message: String::new(),
            });
        let level = level.as_deref().unwrap_or("?");
        let mut logs = lock(&logs);
        logs.count += 1;
        if message.len() > log_max {
            logs.oversized += 1;
            logs.longest = logs.longest.max(message.len());
        }
        if logs.first.len() < max {
            logs.first
                .push(format!("{level}: {}", excerpt(&message, 80)));
        }
    }
}

/// What the tap saw on stdout besides protocol frames.
#[derive(Debug, Default)]
struct StdoutLog {
    excerpts: Vec<String>,
    oversized: Option<u64>,
}

/// Reads the plugin's stdout for the peer and, on the side, decodes it once more to keep
/// excerpts of the lines the peer drops (the peer only counts them).
struct StdoutTap<R> {
    inner: R,
    decoder: LineDecoder,
    log: Arc<Mutex<StdoutLog>>,
    max_excerpts: usize,
}

impl<R: AsyncRead + Unpin> AsyncRead for StdoutTap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            let mut fresh = &buf.filled()[before..];
            while let Some(event) = this.decoder.decode(&mut fresh) {
                let mut log = lock(&this.log);
                match event {
                    DecodeEvent::Dropped(line) if log.excerpts.len() < this.max_excerpts => {
                        log.excerpts.push(line.excerpt);
                    }
                    DecodeEvent::Oversized { len } => log.oversized = Some(len),
                    _ => {}
                }
            }
        }
        poll
    }
}

impl<R> std::fmt::Debug for StdoutTap<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdoutTap").finish_non_exhaustive()
    }
}
