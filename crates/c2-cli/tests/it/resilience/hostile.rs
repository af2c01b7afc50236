//! Runtimes and language servers that fight back (issue 16), through the built `c2-plugins`:
//! c2-testkit's `HOSTILE_RUNTIME` escapes its group, leaves a `setsid` daemon on its stdout,
//! or hangs ignoring SIGTERM, SIGINT and stdin EOF. Each case ends with: the CLI answered (or
//! died) within a bound, the documented failure, and no marked process alive. The markers are
//! the same as the rest of this suite's, so [`Cleanup`] removes whatever a failing test leaves.

use std::io::Read;

use super::*;

/// An unload or a cancellation: the stop grace (1 s), the tree kill, a loaded machine.
const BOUND: Duration = Duration::from_secs(10);

/// Writes a bundle running `python3 hostile.py` that declares `commands`, with the marker in
/// its runtime environment.
fn hostile_bundle(sandbox: &Sandbox, name: &str, commands: &[&str], marker: &str) -> PathBuf {
    sandbox.write(&format!("{name}/hostile.py"), c2_testkit::HOSTILE_RUNTIME);
    let declared: Vec<Value> = commands
        .iter()
        .map(|id| json!({"id": id, "title": format!("Hostile {id}")}))
        .collect();
    let manifest = json!({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": name,
        "version": "1.0.0",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": declared,
            "runtime": {
                "command": "python3",
                "args": ["hostile.py"],
                "env": {
                    "C2_HOSTILE_COMMANDS": json!(commands).to_string(),
                    PLUGIN_MARKER: marker,
                },
                "scopeSupport": ["user"],
            }
        }}
    });
    sandbox.write(
        &format!("{name}/plugin.json"),
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
    sandbox.work.join(name)
}

/// Starts `c2-plugins ARGS` with the host marker, stderr piped.
fn start(sandbox: &Sandbox, args: &[&str], marker: &str) -> Cleanup {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the built binary as a user would, in order to signal it"
    )]
    let host = std::process::Command::new(env!("CARGO_BIN_EXE_c2-plugins"))
        .args(args)
        .current_dir(&sandbox.work)
        .env("HOME", &sandbox.home)
        .env("C2_PLUGINS_DIR", &sandbox.plugins)
        .env("NO_COLOR", "1")
        .env(HOST_MARKER, marker)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Cleanup {
        host,
        marker: marker.to_owned(),
    }
}

/// Whether `pid` ignores SIGTERM (bit 15 of SigIgn): the hostile runtime's sign that it
/// received its hanging call.
fn ignores_sigterm(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << 14) != 0)
}

/// Waits until a marked plugin process is mid-call in `hostile.hang`.
fn wait_for_hang(marker: &str) {
    let start = Instant::now();
    while start.elapsed() < START_PATIENCE {
        if marked(PLUGIN_MARKER, marker)
            .into_iter()
            .any(ignores_sigterm)
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the plugin never reached its hanging call");
}

/// Polls until no process carries `variable=marker`; returns what is left after `bound`.
fn left_after(variable: &str, marker: &str, bound: Duration) -> Vec<u32> {
    let start = Instant::now();
    let mut left = marked(variable, marker);
    while !left.is_empty() && start.elapsed() < bound {
        std::thread::sleep(Duration::from_millis(20));
        left = marked(variable, marker);
    }
    left
}

/// Sends `signal` (a `kill` name) to the CLI.
fn signal(cleanup: &Cleanup, signal: &str) {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test interrupts the CLI as a terminal or a service manager would"
    )]
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &cleanup.host.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (bounded) for the CLI to exit; returns its code and stderr.
fn finished(cleanup: &mut Cleanup, bound: Duration) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = cleanup.host.try_wait().unwrap() {
            let mut stderr = String::new();
            cleanup
                .host
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return (status.code(), stderr, start.elapsed());
        }
        assert!(
            start.elapsed() < bound,
            "c2-plugins did not finish within {bound:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cancelled_by(args: &[&str], name: &str, expected: i32) {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    let dir = hostile_bundle(&sandbox, "hostile-hang", &["hostile.hang"], &marker);
    let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    if args[0] == "run" {
        args.insert(1, dir.to_str().unwrap().to_owned());
    } else {
        let install = sandbox.run(&["install", dir.to_str().unwrap(), "--trust", "--enable"]);
        assert_eq!(install.code, 0, "{install:#?}");
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cleanup = start(&sandbox, &args, &marker);
    wait_for_hang(&marker);
    signal(&cleanup, name);
    let (code, stderr, took) = finished(&mut cleanup, BOUND);
    #[expect(clippy::print_stderr, reason = "the measured time is reported")]
    {
        eprintln!("{args:?}: exited {code:?} {took:?} after {name}");
    }
    assert_eq!(code, Some(expected), "{stderr}");
    assert!(
        stderr.contains(&format!("cancelled by SIG{name}")),
        "{stderr}"
    );
    let left = left_after(PLUGIN_MARKER, &marker, BOUND);
    assert!(
        left.is_empty(),
        "the hanging runtime outlived the CLI: {left:?}"
    );
}

#[test]
fn sigint_to_run_during_a_hanging_call_stops_the_runtime_and_exits_130() {
    cancelled_by(&["run", "hostile.hang"], "INT", 130);
}

#[test]
fn sigterm_to_invoke_during_a_hanging_call_stops_the_runtime_and_exits_143() {
    cancelled_by(&["invoke", "hostile.hang"], "TERM", 143);
}

#[test]
fn json_format_reports_the_cancelled_kind() {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    let dir = hostile_bundle(&sandbox, "hostile-hang", &["hostile.hang"], &marker);
    let mut cleanup = start(
        &sandbox,
        &[
            "--format",
            "json",
            "run",
            dir.to_str().unwrap(),
            "hostile.hang",
        ],
        &marker,
    );
    wait_for_hang(&marker);
    signal(&cleanup, "INT");
    let (code, _, _) = finished(&mut cleanup, BOUND);
    assert_eq!(code, Some(130));
    let mut stdout = String::new();
    cleanup
        .host
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["error"]["kind"], "cancelled", "{answer}");
    assert!(left_after(PLUGIN_MARKER, &marker, BOUND).is_empty());
}

#[test]
fn a_sigkilled_host_leaves_no_runtime_that_ignores_stdin_eof_and_sigterm() {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    let dir = hostile_bundle(&sandbox, "hostile-hang", &["hostile.hang"], &marker);
    let install = sandbox.run(&["install", dir.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let mut cleanup = start(&sandbox, &["invoke", "hostile.hang"], &marker);
    wait_for_hang(&marker);
    cleanup.host.kill().unwrap();
    let killed = Instant::now();
    cleanup.host.wait().unwrap();
    let left = left_after(PLUGIN_MARKER, &marker, EXIT_BOUND);
    {
        eprintln!(
            "hostile.hang: tree gone {:?} after the host was killed",
            killed.elapsed()
        );
    }
    assert!(left.is_empty(), "{left:?} outlived the SIGKILLed host");
}

#[test]
fn run_of_a_runtime_that_escapes_its_group_unloads_within_a_bound() {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    let dir = hostile_bundle(&sandbox, "hostile-escape", &["hostile.escape"], &marker);
    let mut cleanup = start(
        &sandbox,
        &["run", dir.to_str().unwrap(), "hostile.escape"],
        &marker,
    );
    let (code, stderr, took) = finished(&mut cleanup, START_PATIENCE);
    {
        eprintln!("run hostile.escape: exited {code:?} after {took:?}");
    }
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("c2-plugins: unloaded"), "{stderr}");
    let left = left_after(PLUGIN_MARKER, &marker, BOUND);
    assert!(
        left.is_empty(),
        "the escaped runtime or its helper lives on: {left:?}"
    );
}

#[test]
fn check_reports_an_escaping_runtime_and_a_crashing_leader_as_failed_checks() {
    let sandbox = Sandbox::new();
    for (command, failed, detail) in [
        ("hostile.escape", "exit on stdin EOF", "still running"),
        (
            "hostile.daemon",
            "invoke hostile.daemon",
            "exited with code 3",
        ),
    ] {
        let marker = unique_marker();
        let name = command.replace('.', "-");
        let dir = hostile_bundle(&sandbox, &name, &[command], &marker);
        let mut cleanup = start(
            &sandbox,
            &["--format", "json", "check", dir.to_str().unwrap()],
            &marker,
        );
        let (code, stderr, took) = finished(&mut cleanup, START_PATIENCE);
        {
            eprintln!("check {command}: exited {code:?} after {took:?}");
        }
        let mut stdout = String::new();
        cleanup
            .host
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        assert_eq!(code, Some(1), "{command}: {stdout}\n{stderr}");
        let report: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{command}: {e}: {stdout}"));
        let verdict = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|check| {
                check["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(failed))
            })
            .unwrap_or_else(|| panic!("{command}: no {failed} check in {report:#}"));
        assert_eq!(verdict["pass"], false, "{command}: {verdict:#}");
        assert!(
            verdict["detail"].as_str().unwrap().contains(detail),
            "{command}: {verdict:#}"
        );
        let left = left_after(PLUGIN_MARKER, &marker, BOUND);
        assert!(left.is_empty(), "{command}: {left:?} outlived the check");
    }
}

/// A language server that ignores stdin EOF and SIGTERM, as bash-language-server 5.8 does:
/// once the CLI bridging it is SIGKILLed, it must still go.
#[test]
fn a_sigkilled_lsp_bridge_leaves_no_language_server_that_ignores_stdin_eof() {
    let sandbox = Sandbox::new();
    let marker = unique_marker();
    sandbox.write("ls/bin/hostile.py", c2_testkit::HOSTILE_RUNTIME);
    let server = sandbox.write(
        "ls/bin/server",
        "#!/bin/sh\nexec python3 \"$(dirname \"$0\")/hostile.py\" lsp\n",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    sandbox.write(
        "ls/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "stubborn-ls", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "languageServers": [{"id": "stubborn", "languages": ["Zig"], "command": "bin/server"}]}}}"#,
    );
    let installed = sandbox.run(&["install", "ls", "--trust", "--enable"]);
    assert_eq!(installed.code, 0, "{installed:#?}");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();
    let mut cleanup = start(
        &sandbox,
        &["lsp", "zig", "--project", project.to_str().unwrap()],
        &marker,
    );
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    std::io::Write::write_all(cleanup.host.stdin.as_mut().unwrap(), frame.as_bytes()).unwrap();
    // The answer proves the server runs and the bridge is up.
    let mut stdout = cleanup.host.stdout.take().unwrap();
    let (sender, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut head = [0_u8; 16];
        let read = stdout.read_exact(&mut head).map(|()| head.to_vec());
        let _ = sender.send(read);
        // Keep the pipe open until the test ends.
        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
    });
    let head = answered.recv_timeout(START_PATIENCE).unwrap().unwrap();
    assert!(head.starts_with(b"Content-Length: "), "{head:?}");
    let host = cleanup.host.id();
    let server: Vec<u32> = marked(HOST_MARKER, &marker)
        .into_iter()
        .filter(|pid| *pid != host)
        .filter(|pid| ignores_sigterm(*pid))
        .collect();
    assert!(!server.is_empty(), "the server ignores SIGTERM");
    cleanup.host.kill().unwrap();
    let killed = Instant::now();
    cleanup.host.wait().unwrap();
    let left = left_after(HOST_MARKER, &marker, EXIT_BOUND);
    {
        eprintln!(
            "lsp: server {server:?} gone {:?} after the bridge was killed",
            killed.elapsed()
        );
    }
    assert!(left.is_empty(), "{left:?} outlived the SIGKILLed bridge");
}
