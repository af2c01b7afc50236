//! `c2-plugins serve --socket` against a local account other than the service's: the socket's
//! mode keeps it out, and with the mode opened up the service still reads the client's
//! credentials and closes on it. The client runs as `nobody` through `setpriv`, so these tests
//! need root (CI runs as root).

use std::path::Path;

use serde_json::json;

use crate::Sandbox;
use crate::serve::{exit_code, serve_on_socket, sigterm, socket_client};

/// What a client running as `nobody` (uid 65534) gets from `socket`: `Err(kind)` when it cannot
/// connect, else every byte the service sent before closing (the client sends `relay/initialize`
/// and waits at most 30 s). `setpriv` drops the test's root identity for the client alone.
fn connect_as_nobody(socket: &Path) -> Result<String, String> {
    const CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect-error:" + type(e).__name__)
    sys.exit(0)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"relay/initialize","params":{"protocolVersion":"2.0.0"}}\n')
except (BrokenPipeError, ConnectionResetError):
    pass  # closed before the request was read: what is left to read is still reported
got = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:
        break  # closed with our request unread
    except OSError as e:
        print("recv-error:" + type(e).__name__)
        sys.exit(0)
    if not chunk:
        break
    got += chunk
print("closed:" + got.decode("utf-8", "replace"))
"#;
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs a client as another user, as a hostile local account would"
    )]
    let output = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            CLIENT,
        ])
        .arg(socket)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "setpriv needs the test to run as root (CI does): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    match said.strip_prefix("connect-error:") {
        Some(kind) => Err(kind.to_owned()),
        None => Ok(said
            .strip_prefix("closed:")
            .unwrap_or_else(|| panic!("the client failed: {said}"))
            .to_owned()),
    }
}

#[test]
fn a_client_of_another_uid_is_refused_by_the_socket_mode_and_then_by_its_credentials() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    // Let `nobody` reach the socket's directory, so only the socket itself stands in the way.
    let root = sandbox.plugins.parent().unwrap().to_owned();
    for dir in [&root, &sandbox.plugins] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    // First wall: the socket's mode.
    assert_eq!(
        connect_as_nobody(&socket),
        Err("PermissionError".to_owned())
    );
    // Second wall: with the mode opened up (a careless umask, a chmod by hand), the service
    // still reads the client's credentials and closes on it without a single byte.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(connect_as_nobody(&socket), Ok(String::new()));
    // The refusal is logged, and the service goes on serving its own user.
    let mut client = socket_client(&socket);
    assert!(client.ok("plugins/list", json!({})).is_array());
    let log = std::fs::read_to_string(sandbox.work.join("serve.log")).unwrap();
    assert!(
        log.contains("refused a relay client: its uid 65534 is not the service's uid 0"),
        "{log}"
    );
    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}
