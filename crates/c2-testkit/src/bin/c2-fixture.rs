//! The fixture plugin process; its behaviour and modes are documented in the c2-testkit crate docs.
//!
//! A blocking loop over stdin lines. Responses that take time (`fixture.sleep`) are answered from
//! a thread, so every write goes through one locked writer. While more complete requests are
//! already buffered the loop holds its answers and writes them together before it next waits
//! for input, as a plugin answering a burst should: one `write` and one wake-up of the host per
//! burst, not per answer. A lone request is answered with one `write`, as before.
//!
//! `fixture.echo` answers with its args' exact JSON text, read as a borrowed raw value: a big
//! echo costs one parse and one copy, not a `Value` tree built, re-escaped and dropped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use c2_testkit::{DEFAULT_COMMANDS, ENV_COMMANDS, ENV_EVENTS, ENV_HELPER, ENV_MODE, Mode};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// How long a grandchild, or a fixture ignoring stdin EOF, lives at most.
const LINGER: Duration = Duration::from_secs(300);

fn main() -> ExitCode {
    match std::env::var(ENV_HELPER).as_deref() {
        Ok("sleep") => {
            std::thread::sleep(LINGER);
            return ExitCode::SUCCESS;
        }
        Ok("setsid") => return setsid_helper(),
        _ => {}
    }
    let modes = match c2_testkit::parse_modes(&std::env::var(ENV_MODE).unwrap_or_default()) {
        Ok(modes) => modes,
        Err(error) => {
            log(&format!("c2-fixture: {error}"));
            return ExitCode::from(2);
        }
    };
    if modes.contains(&Mode::Echo) {
        return echo();
    }
    let mut fixture = Fixture::new(modes);
    fixture.start();
    fixture.serve();
    ExitCode::SUCCESS
}

/// The raw line echo: the cheapest round trip a pipe allows, no JSON and no threads.
fn echo() -> ExitCode {
    let mut stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut line = Vec::with_capacity(128 * 1024);
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return ExitCode::SUCCESS,
            Ok(_) => {}
        }
        if out.write_all(&line).and_then(|()| out.flush()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
}

/// Leaves the process group, tells the parent so on stdout, then lives until stdin closes.
fn setsid_helper() -> ExitCode {
    if let Err(error) = nix::unistd::setsid() {
        log(&format!("c2-fixture helper: setsid failed: {error}"));
        return ExitCode::from(3);
    }
    let mut out = std::io::stdout().lock();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return ExitCode::from(3);
    }
    std::thread::spawn(|| {
        std::thread::sleep(LINGER);
        std::process::exit(0);
    });
    // Wait for the last writer of the inherited stdin to go without reading from it: the data
    // belongs to the fixture. With no events requested, poll wakes only on hang-up or error.
    let stdin = std::io::stdin();
    loop {
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::empty())];
        match nix::poll::poll(&mut fds, PollTimeout::NONE) {
            Ok(_) if fds[0].revents().is_some_and(|events| !events.is_empty()) => break,
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    ExitCode::SUCCESS
}

fn log(line: &str) {
    let mut err = std::io::stderr().lock();
    // stderr is best effort: a fixture with a closed stderr still serves the protocol.
    let _ = writeln!(err, "{line}");
}

/// The one place stdout is written.
/// Its buffers live as long as the process, so answering costs no allocation of its own.
#[derive(Debug, Default)]
struct Writer {
    reply_twice: bool,
    /// Whether answers are held while the loop has more buffered requests.
    holding: bool,
    held: Vec<u8>,
    /// The line being encoded.
    line: Vec<u8>,
}

impl Writer {
    fn raw(&mut self, bytes: &[u8]) {
        if self.holding {
            self.held.extend_from_slice(bytes);
        } else {
            write_out(bytes);
        }
    }

    /// Starts holding answers, or writes what is held and stops.
    fn hold(&mut self, hold: bool) {
        if !self.held.is_empty() {
            write_out(&self.held);
            self.held.clear();
        }
        self.holding = hold;
    }

    fn send(&mut self, message: &impl Serialize) {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        // Writing a `Value` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut line, message);
        line.push(b'\n');
        self.raw(&line);
        self.line = line;
    }

    fn respond(&mut self, message: &impl Serialize) {
        self.send(message);
        if self.reply_twice {
            self.send(message);
        }
    }

    fn result(&mut self, id: &Value, result: Value) {
        self.respond(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&mut self, id: &Value, code: i64, message: &str) {
        self.respond(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }
}

/// A `command/invoke` request, borrowed from its line; any other shape (a missing member, a
/// member twice) is read as a `Value` instead.
#[derive(Deserialize)]
struct EchoCall<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    params: EchoParams<'a>,
}

#[derive(Deserialize)]
struct EchoParams<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    args: &'a RawValue,
}

/// The answer to `fixture.echo`: the args' text, byte for byte.
#[derive(Serialize)]
struct EchoAnswer<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: &'a RawValue,
}

#[derive(Debug)]
struct Fixture {
    modes: Vec<Mode>,
    out: Arc<Mutex<Writer>>,
    init: Value,
    events: Vec<Value>,
    children: Vec<std::process::Child>,
    pending_calls: HashMap<String, Value>,
    next_call: u64,
}

impl Fixture {
    fn new(modes: Vec<Mode>) -> Self {
        let reply_twice = modes.contains(&Mode::ReplyTwice);
        Self {
            modes,
            out: Arc::new(Mutex::new(Writer {
                reply_twice,
                ..Writer::default()
            })),
            init: Value::Null,
            events: Vec::new(),
            children: Vec::new(),
            pending_calls: HashMap::new(),
            next_call: 1,
        }
    }

    fn has(&self, mode: &Mode) -> bool {
        self.modes.contains(mode)
    }

    fn with_out(&self, write: impl FnOnce(&mut Writer)) {
        write(&mut c2_lock::lock(&self.out));
    }

    /// Writes any held answers: before the process exits or the loop blocks on something other
    /// than its input.
    fn flush(&self) {
        self.with_out(|out| out.hold(false));
    }

    fn start(&mut self) {
        if self.has(&Mode::IgnoreSigterm) {
            // Blocked before any thread exists, so every thread inherits the mask and SIGTERM
            // stays pending forever; installing SIG_IGN would need unsafe code.
            let mut set = nix::sys::signal::SigSet::empty();
            set.add(nix::sys::signal::Signal::SIGTERM);
            if let Err(error) = set.thread_block() {
                log(&format!("c2-fixture: cannot block SIGTERM: {error}"));
            }
        }
        if self.has(&Mode::Grandchild) {
            self.spawn_helper("sleep", Stdio::null(), Stdio::null());
        }
        if self.has(&Mode::SetsidGrandchild) {
            self.spawn_helper("setsid", Stdio::inherit(), Stdio::piped());
        }
        let modes = self.modes.clone();
        for mode in &modes {
            match mode {
                Mode::StderrFlood(bytes) => flood_stderr(*bytes),
                Mode::Banner => {
                    self.with_out(|out| out.raw(b"c2-fixture banner: this line is not JSON\n"))
                }
                Mode::InvalidUtf8 => self.with_out(|out| out.raw(b"\xff\xfe not UTF-8 \xc3\x28\n")),
                Mode::HugeLine(bytes) => self.with_out(|out| huge_line(out, *bytes)),
                _ => {}
            }
        }
    }

    /// Starts this executable again as a grandchild of the host; for `setsid` waits until it has
    /// left the group, so a test never races the `setsid` call.
    fn spawn_helper(&mut self, helper: &str, stdin: Stdio, stdout: Stdio) {
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(error) => return log(&format!("c2-fixture: cannot find own executable: {error}")),
        };
        #[expect(
            clippy::disallowed_methods,
            reason = "the dev-only fixture starts its own grandchildren to exercise the supervisor"
        )]
        let mut command = std::process::Command::new(exe);
        command
            .env(ENV_HELPER, helper)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::null());
        match command.spawn() {
            Ok(mut child) => {
                if let Some(stdout) = child.stdout.take() {
                    let mut ready = String::new();
                    let _ = BufReader::new(stdout).read_line(&mut ready);
                }
                self.children.push(child);
            }
            Err(error) => log(&format!(
                "c2-fixture: cannot start the {helper} grandchild: {error}"
            )),
        }
    }

    fn serve(&mut self) {
        // Our own buffer, so the loop can see whether another request is already in it.
        let mut stdin = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
        let mut line = Vec::new();
        loop {
            // Hold answers exactly while another complete request is already buffered.
            let more = stdin.buffer().contains(&b'\n');
            self.with_out(|out| out.hold(more));
            line.clear();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Ok(call) = serde_json::from_slice::<EchoCall<'_>>(&line)
                && call.method == "command/invoke"
                && call.params.name == "fixture.echo"
            {
                self.with_out(|out| {
                    out.respond(&EchoAnswer {
                        jsonrpc: "2.0",
                        id: call.id,
                        result: call.params.args,
                    });
                });
                continue;
            }
            match serde_json::from_slice::<Value>(&line) {
                Ok(message) => self.handle(message),
                Err(error) => log(&format!(
                    "c2-fixture: dropped a line that is not JSON: {error}"
                )),
            }
        }
        self.flush();
        if self.has(&Mode::IgnoreStdinEof) {
            std::thread::sleep(LINGER);
        }
    }

    fn handle(&mut self, mut message: Value) {
        let id = message.get("id").cloned();
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let params = message.get_mut("params").map_or(Value::Null, Value::take);
        match (method.as_deref(), id) {
            (Some("initialize"), Some(id)) => self.initialize(&id, params),
            (Some("command/invoke"), Some(id)) => self.invoke(id, params),
            (Some(other), Some(id)) => {
                self.with_out(|out| out.error(&id, -32601, &format!("method not found: {other}")));
            }
            (Some("event/emit"), None) => self.events.push(params),
            (Some(_), None) => {}
            (None, Some(id)) => self.host_response(&id, &message),
            (None, None) => log("c2-fixture: dropped a message with neither method nor id"),
        }
    }

    fn initialize(&mut self, id: &Value, params: Value) {
        self.init = params;
        if self.has(&Mode::NoInit) {
            return;
        }
        let slow = self.modes.iter().find_map(|mode| match mode {
            Mode::SlowInit(ms) => Some(*ms),
            _ => None,
        });
        if let Some(ms) = slow {
            self.flush();
            std::thread::sleep(Duration::from_millis(ms));
        }
        let mut result = json!({
            "name": "c2-fixture",
            "version": "0.1.0",
            "protocolVersion": "1.0.0",
            "commands": self.answered_commands(),
            "events": json_env(ENV_EVENTS, "[]"),
        });
        if let Some(version) = self.modes.iter().find_map(|mode| match mode {
            Mode::Protocol(version) => Some(version.clone()),
            _ => None,
        }) {
            result["protocolVersion"] = Value::String(version);
        }
        if self.has(&Mode::NoProtocolVersion)
            && let Some(object) = result.as_object_mut()
        {
            object.remove("protocolVersion");
        }
        if self.has(&Mode::ReplyUnknownId) {
            self.with_out(|out| {
                out.send(&json!({"jsonrpc": "2.0", "id": "fixture-unknown-id", "result": null}))
            });
        }
        self.with_out(|out| out.result(id, result));
        if self.has(&Mode::ExitAfterInit) {
            self.flush();
            std::process::exit(0);
        }
        if self.has(&Mode::CloseStdout) {
            self.flush();
            #[expect(
                clippy::disallowed_methods,
                reason = "a test fixture points its own stdout at /dev/null"
            )]
            let closed = std::fs::File::open("/dev/null")
                .map_err(|error| error.to_string())
                .and_then(|null| nix::unistd::dup2_stdout(null).map_err(|error| error.to_string()));
            if let Err(error) = closed {
                log(&format!("c2-fixture: cannot close stdout: {error}"));
            }
        }
    }

    fn declared_commands(&self) -> Vec<Value> {
        match json_env(ENV_COMMANDS, DEFAULT_COMMANDS) {
            Value::Array(commands) => commands,
            _ => Vec::new(),
        }
    }

    fn answered_commands(&self) -> Vec<Value> {
        let mut commands = self.declared_commands();
        if self.has(&Mode::ExtraCommand) {
            commands.push(json!({"name": "fixture.extra"}));
        }
        if self.has(&Mode::MissingCommand) {
            commands.pop();
        }
        if self.has(&Mode::DuplicateCommand)
            && let Some(first) = commands.first().cloned()
        {
            commands.push(first);
        }
        if self.has(&Mode::SchemaDrift)
            && let Some(Value::Object(first)) = commands.first_mut()
        {
            first.insert(
                "schema".to_owned(),
                json!({"type": "object", "description": "drifted"}),
            );
        }
        commands
    }

    fn invoke(&mut self, id: Value, mut params: Value) {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let args = params.get_mut("args").map_or(Value::Null, Value::take);
        match name.as_str() {
            "fixture.echo" => self.with_out(|out| out.result(&id, args)),
            "fixture.info" => {
                let info = self.info(&args);
                self.with_out(|out| out.result(&id, info));
            }
            "fixture.call" => self.call_host(id, &args),
            "fixture.request" => self.request_host(id, &args),
            "fixture.emit" => {
                let notification = json!({"jsonrpc": "2.0", "method": "event/emit", "params": {
                    "name": args.get("name").cloned().unwrap_or(Value::Null),
                    "payload": args.get("payload").cloned().unwrap_or(Value::Null),
                }});
                self.with_out(|out| {
                    out.send(&notification);
                    out.result(&id, Value::Null);
                });
            }
            "fixture.log" => {
                let notification = json!({"jsonrpc": "2.0", "method": "log", "params": {
                    "level": args.get("level").cloned().unwrap_or_else(|| json!("info")),
                    "message": args.get("message").cloned().unwrap_or_else(|| json!("")),
                }});
                self.with_out(|out| {
                    out.send(&notification);
                    out.result(&id, Value::Null);
                });
            }
            "fixture.sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                let out = Arc::clone(&self.out);
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    c2_lock::lock(&out).result(&id, json!({"slept": ms}));
                });
            }
            "fixture.fail" => {
                let message = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("fixture failure");
                self.with_out(|out| out.error(&id, -32000, message));
            }
            "fixture.events" => {
                let events = Value::Array(self.events.clone());
                self.with_out(|out| out.result(&id, events));
            }
            "fixture.crash" => {
                let code = args.get("code").and_then(Value::as_i64).unwrap_or(1);
                self.flush();
                std::process::exit(i32::try_from(code).unwrap_or(1));
            }
            other => {
                let declared = self
                    .declared_commands()
                    .iter()
                    .any(|command| command.get("name").and_then(Value::as_str) == Some(other));
                if declared {
                    self.with_out(|out| out.result(&id, json!({"command": other, "args": args})));
                } else {
                    self.with_out(|out| {
                        out.error(&id, -32000, &format!("fixture: unknown command {other}"))
                    });
                }
            }
        }
    }

    fn info(&self, args: &Value) -> Value {
        let env: serde_json::Map<String, Value> = match args.get("env").and_then(Value::as_array) {
            Some(names) => names
                .iter()
                .filter_map(Value::as_str)
                .map(|name| {
                    let value = std::env::var(name).map_or(Value::Null, Value::String);
                    (name.to_owned(), value)
                })
                .collect(),
            None => std::env::vars()
                .filter(|(name, _)| name.starts_with("C2_"))
                .map(|(name, value)| (name, Value::String(value)))
                .collect(),
        };
        let cwd = std::env::current_dir().map_or(Value::Null, |cwd| json!(cwd.to_string_lossy()));
        let children: Vec<u32> = self.children.iter().map(std::process::Child::id).collect();
        json!({
            "pid": std::process::id(),
            "pgid": nix::unistd::getpgrp().as_raw(),
            "cwd": cwd,
            "env": env,
            "dataDir": self.init.get("dataDir").cloned().unwrap_or(Value::Null),
            "projectPath": self.init.get("projectPath").cloned().unwrap_or(Value::Null),
            "hostCommands": self.init.pointer("/host/commands").cloned().unwrap_or(Value::Null),
            "hostObservations": self.init.pointer("/host/observations").cloned().unwrap_or(Value::Null),
            "config": self.init.get("config").cloned().unwrap_or(Value::Null),
            "children": children,
        })
    }

    fn call_host(&mut self, invoke_id: Value, args: &Value) {
        let call_id = format!("fixture-call-{}", self.next_call);
        self.next_call += 1;
        self.pending_calls.insert(call_id.clone(), invoke_id);
        let request = json!({"jsonrpc": "2.0", "id": call_id, "method": "command/call", "params": {
            "name": args.get("name").cloned().unwrap_or(Value::Null),
            "args": args.get("args").cloned().unwrap_or(Value::Null),
        }});
        self.with_out(|out| out.send(&request));
    }

    fn request_host(&mut self, invoke_id: Value, args: &Value) {
        let call_id = format!("fixture-call-{}", self.next_call);
        self.next_call += 1;
        self.pending_calls.insert(call_id.clone(), invoke_id);
        let request = json!({"jsonrpc": "2.0", "id": call_id,
            "method": args.get("method").cloned().unwrap_or(Value::Null),
            "params": args.get("params").cloned().unwrap_or(Value::Null),
        });
        self.with_out(|out| out.send(&request));
    }

    fn host_response(&mut self, id: &Value, message: &Value) {
        let Some(invoke_id) = id.as_str().and_then(|id| self.pending_calls.remove(id)) else {
            return log(&format!(
                "c2-fixture: dropped a response to unknown id {id}"
            ));
        };
        let reply = match message.get("error") {
            Some(error) => json!({"jsonrpc": "2.0", "id": invoke_id, "error": error}),
            None => json!({"jsonrpc": "2.0", "id": invoke_id,
                "result": message.get("result").cloned().unwrap_or(Value::Null)}),
        };
        self.with_out(|out| out.respond(&reply));
    }
}

fn json_env(name: &str, default: &str) -> Value {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    serde_json::from_str(&text).unwrap_or_else(|error| {
        log(&format!(
            "c2-fixture: {name} is not JSON ({error}); using {default}"
        ));
        serde_json::from_str(default).unwrap_or(Value::Null)
    })
}

fn flood_stderr(bytes: u64) {
    let line = [b"x".repeat(99), b"\n".to_vec()].concat();
    let mut err = std::io::stderr().lock();
    let mut left = bytes;
    while left > 0 {
        let take = usize::try_from(left.min(100)).unwrap_or(100);
        if err.write_all(&line[line.len() - take..]).is_err() {
            return;
        }
        left -= take as u64;
    }
    let _ = err.flush();
}

fn write_out(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    // A host that stopped reading is stopping us; the next stdin EOF ends the process.
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

fn huge_line(out: &mut Writer, bytes: u64) {
    let chunk = vec![b'x'; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let take = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        out.raw(&chunk[..take]);
        left -= take as u64;
    }
    out.raw(b"\n");
}
