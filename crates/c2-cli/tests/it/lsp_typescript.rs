//! `c2-plugins lsp` with the real typescript-language-server (on PATH: `npm install -g
//! typescript-language-server typescript`), which exits 1 when its input closes: the editor
//! going away is still a clean end, exit 0.

use crate::Sandbox;
use crate::lsp::{EDITOR_WAIT, Editor, initialize, install};

#[test]
fn the_editor_closing_stdin_ends_a_typescript_language_server_session_with_exit_0() {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .any(|dir| dir.join("typescript-language-server").is_file());
    assert!(
        found,
        "typescript-language-server is on PATH (npm install -g typescript-language-server typescript)"
    );
    let sandbox = Sandbox::new();
    sandbox.write(
        "ts/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "ts-ls", "version": "1.0.0",
            "extensions": {"dev.codetwo": {"standardVersion": "1.2.0",
              "languageServers": [{"id": "tsls", "languages": ["typescript"],
                "command": "typescript-language-server", "args": ["--stdio"]}]}}}"#,
    );
    install(&sandbox, "ts");
    let project = sandbox.work.join("project");
    std::fs::create_dir(&project).unwrap();

    let mut editor = Editor::start(&sandbox, "typescript", &project);
    editor.send(&[initialize()]);
    let deadline = std::time::Instant::now() + EDITOR_WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let message = editor.received.recv_timeout(left).expect("an answer");
        if message["id"] == 1 && message.get("method").is_none() {
            assert!(message["result"]["capabilities"].is_object(), "{message}");
            break;
        }
    }
    // The editor quits without `shutdown` and `exit`.
    drop(editor.stdin.take());
    let (code, stderr) = editor.wait_exit();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}
