//! The LSP bridge's pump, its lifecycle probe and the LSP exit rule, on in-memory streams.

use c2_host::{Exit, ExitReport};
use c2_protocol::{ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions};

use super::lsp::{
    BridgeEnd, BridgeFailure, BridgeFailureKind, DEFAULT_DRAIN, FlowStats, Lifecycle, PumpError,
    pump, show_error, verdict,
};

async fn run_pump(
    input: &[u8],
    framing: ContentLengthOptions,
) -> (Result<(), String>, Vec<u8>, FlowStats) {
    let mut out = Vec::new();
    let mut stats = FlowStats::default();
    let result = pump(input, &mut out, framing, &mut stats, None)
        .await
        .map_err(|error| format!("{error:?}"));
    (result, out, stats)
}

#[tokio::test]
async fn frames_are_reframed_with_only_their_length_header() {
    let input = b"Content-Type: application/vscode-jsonrpc\r\ncontent-length: 2\r\n\r\n{}Content-Length: 3\n\n[1]";
    let (result, out, stats) = run_pump(input, ContentLengthOptions::default()).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        out,
        b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]"
    );
    assert_eq!(
        stats,
        FlowStats {
            frames: 2,
            oversized: 0
        }
    );
}

#[tokio::test]
async fn an_oversized_body_ends_the_direction_after_what_came_before() {
    let framing = ContentLengthOptions {
        max_body_bytes: 4,
        ..ContentLengthOptions::default()
    };
    let input =
        b"Content-Length: 1\r\n\r\n6Content-Length: 5\r\n\r\n12345Content-Length: 1\r\n\r\n7";
    let mut out = Vec::new();
    let mut stats = FlowStats::default();
    let result = pump(&input[..], &mut out, framing, &mut stats, None).await;
    assert!(
        matches!(result, Err(PumpError::Oversized { len: 5, limit: 4 })),
        "{result:?}"
    );
    assert_eq!(out, b"Content-Length: 1\r\n\r\n6");
    assert_eq!(
        stats,
        FlowStats {
            frames: 1,
            oversized: 1
        }
    );
}

#[tokio::test]
async fn shutdown_and_exit_are_noticed_in_the_editors_direction() {
    let shutdown = br#"{"jsonrpc":"2.0","id":9,"method":"shutdown"}"#;
    let exit = br#"{"jsonrpc":"2.0","method":"exit"}"#;
    let mut input = Vec::new();
    for body in [&shutdown[..], &exit[..]] {
        input.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        input.extend_from_slice(body);
    }
    let mut lifecycle = Lifecycle::default();
    let mut stats = FlowStats::default();
    let mut out = Vec::new();
    let result = pump(
        &input[..],
        &mut out,
        ContentLengthOptions::default(),
        &mut stats,
        Some(&mut lifecycle),
    )
    .await;
    assert!(result.is_ok());
    assert!(lifecycle.shutdown_requested && lifecycle.exit_sent);
}

#[test]
fn only_the_method_counts_and_other_bodies_are_ignored() {
    let mut lifecycle = Lifecycle::default();
    lifecycle.observe(br#"{"jsonrpc":"2.0","id":1,"result":{"method":"shutdown"}}"#);
    lifecycle.observe(b"[0,0,0]");
    lifecycle.observe(b"not json");
    lifecycle.observe(br#"{"method":"\u0065xit"}"#);
    assert!(!lifecycle.shutdown_requested);
    assert!(lifecycle.exit_sent, "an escaped method name is still read");
}

fn report(exit: Exit, already_exited: bool) -> ExitReport {
    ExitReport {
        exit,
        already_exited,
        forced: false,
    }
}

fn kind(result: Result<(), BridgeFailure>) -> &'static str {
    result.err().map_or("ok", |failure| failure.kind.name())
}

#[test]
fn the_lsp_exit_rule() {
    let drain = DEFAULT_DRAIN;
    let clean = Lifecycle {
        shutdown_requested: true,
        exit_sent: true,
        server_spoke: true,
    };
    let exit_only = Lifecycle {
        shutdown_requested: false,
        exit_sent: true,
        server_spoke: true,
    };
    let spoke = Lifecycle {
        server_spoke: true,
        ..Lifecycle::default()
    };
    let none = Lifecycle::default();
    let closed = BridgeEnd::ServerClosed;
    let gone = BridgeEnd::ClientClosed;
    let zero = report(Exit::Code(0), true);
    let cases = [
        (&closed, clean, zero.clone(), "ok"),
        (&gone, clean, zero.clone(), "ok"),
        (
            &closed,
            clean,
            report(Exit::Code(3), true),
            "process_exited",
        ),
        (
            &gone,
            clean,
            report(Exit::Signal(15), false),
            "process_exited",
        ),
        (
            &closed,
            exit_only,
            report(Exit::Code(1), true),
            "exit_without_shutdown",
        ),
        (&closed, none, zero.clone(), "process_exited"),
        (&gone, none, report(Exit::Signal(15), false), "ok"),
        (&gone, none, zero.clone(), "ok"),
        (&gone, none, report(Exit::Code(2), true), "process_exited"),
        // The editor went away from a server that had answered: its code on a closed input
        // does not matter (typescript-language-server exits 1 there).
        (&gone, spoke, report(Exit::Code(1), true), "ok"),
        (
            &closed,
            spoke,
            report(Exit::Code(1), true),
            "process_exited",
        ),
    ];
    for (ended, lifecycle, exit, expected) in cases {
        assert_eq!(
            kind(verdict(ended, lifecycle, &exit, "python", drain)),
            expected,
            "{ended:?} {lifecycle:?} {exit:?}"
        );
    }
    let oversized = BridgeEnd::ServerFrameTooLarge { len: 9, limit: 4 };
    let failure = verdict(&oversized, clean, &zero, "python", drain).unwrap_err();
    assert_eq!(failure.kind, BridgeFailureKind::FrameTooLarge);
    assert!(failure.message.contains("9-byte") && failure.message.contains("4-byte"));
}

#[tokio::test]
async fn a_broken_header_ends_the_direction_with_the_reason() {
    let input = b"Content-Length: 2\r\n\r\n{}Content-Length: two\r\n\r\n{}";
    let (result, out, stats) = run_pump(input, ContentLengthOptions::default()).await;
    let reason = result.unwrap_err();
    assert!(reason.contains("two"), "{reason}");
    assert_eq!(out, b"Content-Length: 2\r\n\r\n{}");
    assert_eq!(stats.frames, 1);
}

#[tokio::test]
async fn a_partial_frame_at_the_end_is_not_forwarded() {
    let (result, out, stats) = run_pump(
        b"Content-Length: 10\r\n\r\n{\"a\"",
        ContentLengthOptions::default(),
    )
    .await;
    assert_eq!(result, Ok(()));
    assert!(out.is_empty());
    assert_eq!(stats.frames, 0);
}

#[tokio::test]
async fn the_editor_is_told_who_speaks_when_the_caller_names_itself() {
    for (sender, expected) in [("host-app", "host-app: too big"), ("", "too big")] {
        let mut out = Vec::new();
        show_error(&mut out, sender, "too big", ContentLengthOptions::default())
            .await
            .unwrap();
        let mut decoder = ContentLengthDecoder::new(ContentLengthOptions::default());
        let mut input = &out[..];
        let Some(ContentLengthEvent::Body(body)) = decoder.decode(&mut input).unwrap() else {
            panic!("one frame: {out:?}");
        };
        let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(message["method"], "window/showMessage");
        assert_eq!(message["params"]["type"], 1);
        assert_eq!(message["params"]["message"], expected);
    }
}

#[tokio::test]
async fn a_header_declaring_a_body_over_the_limit_ends_the_direction_without_waiting_for_it() {
    let framing = ContentLengthOptions {
        max_body_bytes: 4,
        ..ContentLengthOptions::default()
    };
    // The sender declares a body over the limit, sends part of it and then nothing, without
    // closing its side (and the same after a frame that fits).
    for input in [
        &b"Content-Length: 1000\r\n\r\n{\"jsonrpc\""[..],
        &b"Content-Length: 1\r\n\r\n6Content-Length: 1000\r\n\r\n"[..],
    ] {
        let (mut sender, from) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut sender, input)
            .await
            .unwrap();
        let mut out = Vec::new();
        let mut stats = FlowStats::default();
        let result = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            pump(from, &mut out, framing, &mut stats, None),
        )
        .await
        .expect("the direction ends without the rest of the body");
        assert!(
            matches!(
                result,
                Err(PumpError::Oversized {
                    len: 1000,
                    limit: 4
                })
            ),
            "{result:?}"
        );
        assert_eq!(stats.oversized, 1);
        drop(sender);
    }
}

#[test]
fn the_crash_budget_restarts_with_doubling_backoff_then_gives_up_and_forgets_old_crashes() {
    use std::time::{Duration, Instant};

    use super::supervise::{CrashLog, LspRestartBudget, MAX_LSP_RESTART_BACKOFF};

    let budget = LspRestartBudget {
        restarts: 3,
        window: Duration::from_secs(60),
        backoff: Duration::from_millis(500),
    };
    let mut log = CrashLog::new(budget);
    let t0 = Instant::now();
    assert_eq!(log.crashed(t0), Some(Duration::from_millis(500)));
    assert_eq!(log.crashed(t0), Some(Duration::from_secs(1)));
    assert_eq!(log.crashed(t0), Some(Duration::from_secs(2)));
    assert_eq!(log.crashed(t0), None, "the fourth crash in the window");
    // Crashes out of the window no longer count.
    let later = t0 + Duration::from_secs(120);
    assert_eq!(log.crashed(later), Some(Duration::from_millis(500)));
    let mut slow = CrashLog::new(LspRestartBudget {
        restarts: 40,
        backoff: Duration::from_secs(1),
        ..budget
    });
    for _ in 0..10 {
        slow.crashed(t0);
    }
    assert_eq!(slow.crashed(t0), Some(MAX_LSP_RESTART_BACKOFF));
}

#[test]
fn the_tracker_replays_the_session_in_order_and_answers_what_the_crash_left_unanswered() {
    use super::supervise::Tracker;

    let mut tracker = Tracker::default();
    let editor = |tracker: &mut Tracker, text: &str| tracker.editor_said(text.as_bytes());
    let server = |tracker: &mut Tracker, text: &str| tracker.server_said(text.as_bytes());
    editor(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
    );
    assert!(server(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    ));
    editor(
        &mut tracker,
        r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    );
    let open = |uri: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"{uri}","text":""}}}}}}"#
        )
    };
    let change = |uri: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"textDocument/didChange","params":{{"textDocument":{{"uri":"{uri}"}},"contentChanges":[]}}}}"#
        )
    };
    let close = |uri: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"textDocument/didClose","params":{{"textDocument":{{"uri":"{uri}"}}}}}}"#
        )
    };
    editor(&mut tracker, &open("file:///a"));
    editor(&mut tracker, &change("file:///a"));
    editor(&mut tracker, &open("file:///b"));
    editor(&mut tracker, &close("file:///b"));
    editor(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":"h","method":"textDocument/hover","params":{}}"#,
    );
    editor(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}"#,
    );
    assert!(server(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":7,"result":null}"#
    ));
    assert_eq!(tracker.unreplayable(), None);

    let answers = tracker.abandon("typescript");
    assert_eq!(answers.len(), 1, "only the unanswered request");
    let answer: serde_json::Value = serde_json::from_slice(&answers[0]).unwrap();
    assert_eq!(answer["id"], "h");
    assert_eq!(answer["error"]["code"], -32803);
    let (initialize, rest) = tracker.replay();
    assert!(
        String::from_utf8(initialize.unwrap())
            .unwrap()
            .contains("initialize")
    );
    let rest: Vec<String> = rest
        .into_iter()
        .map(|body| String::from_utf8(body).unwrap())
        .collect();
    assert_eq!(rest.len(), 3, "{rest:?}");
    assert!(rest[0].contains("initialized"));
    assert_eq!(rest[1], open("file:///a"));
    assert_eq!(rest[2], change("file:///a"));
    // The new server's answer to the replayed `initialize` is the bridge's; the next is not.
    assert!(!server(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    ));
    assert!(server(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    ));

    // A question of the server's still unanswered makes the session unreplayable.
    assert!(server(
        &mut tracker,
        r#"{"jsonrpc":"2.0","id":3,"method":"workspace/configuration"}"#
    ));
    assert!(tracker.unreplayable().is_some());
    editor(&mut tracker, r#"{"jsonrpc":"2.0","id":3,"result":[]}"#);
    assert_eq!(tracker.unreplayable(), None);
    editor(
        &mut tracker,
        r#"{"jsonrpc":"2.0","method":"workspace/didChangeWorkspaceFolders","params":{}}"#,
    );
    assert!(tracker.unreplayable().is_some());
}
