use std::io;
use std::sync::Arc;
use std::time::Duration;

use c2_protocol::{
    CallError, CloseReason, Error, ErrorObject, FlushError, FrameOptions, InputEnd, Notifications,
    Peer, PeerOptions, RejectRequests, Request, RequestHandler, codes, method,
};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::Semaphore;
use tokio::time::timeout;

/// Generous: these bound a hang, they never measure speed.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// The other end of a peer's pipe, driven by hand.
pub(crate) struct Raw {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
}

impl Raw {
    pub(crate) async fn send(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    async fn recv_line(&mut self) -> Option<String> {
        timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("the peer wrote nothing")
            .unwrap()
    }

    pub(crate) async fn recv(&mut self) -> Value {
        let line = self.recv_line().await.expect("the peer closed its output");
        serde_json::from_str(&line).unwrap()
    }
}

pub(crate) fn raw_peer(
    options: PeerOptions,
    handler: impl RequestHandler,
    capacity: usize,
) -> (Peer, Notifications, Raw) {
    let (ours, theirs) = tokio::io::duplex(capacity);
    let (read, write) = tokio::io::split(ours);
    let (peer, notifications) = Peer::new(read, write, handler, options);
    let (read, write) = tokio::io::split(theirs);
    let raw = Raw {
        lines: BufReader::new(read).lines(),
        write,
    };
    (peer, notifications, raw)
}

fn peer_with_raw(options: PeerOptions) -> (Peer, Raw) {
    let (peer, _notifications, raw) = raw_peer(options, RejectRequests, 64 * 1024);
    (peer, raw)
}

async fn eventually(mut condition: impl FnMut() -> bool) {
    timeout(PATIENCE, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the condition never held");
}

pub(crate) fn spawn_request(
    peer: &Peer,
    method: &str,
    params: Option<Value>,
) -> tokio::task::JoinHandle<Result<Value, CallError>> {
    let peer = peer.clone();
    let method = method.to_owned();
    tokio::spawn(async move { peer.request(&method, params).await })
}

pub(crate) async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
    timeout(PATIENCE, task)
        .await
        .expect("the call never finished")
        .unwrap()
}

fn closed_with(result: Result<Value, CallError>) -> CloseReason {
    match result {
        Err(CallError::Closed(reason)) => reason,
        other => panic!("expected a closed connection, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_peers_call_each_other_while_handling_a_request() {
    let (a_io, b_io) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a_io);
    let (br, bw) = tokio::io::split(b_io);
    let host_handler = |request: Request, _peer: Peer| async move {
        assert_eq!(request.method, method::COMMAND_CALL);
        Ok(json!({"branch": "main"}))
    };
    let plugin_handler = |request: Request, peer: Peer| async move {
        let args =
            serde_json::from_str::<Value>(request.params.unwrap().get()).unwrap()["args"].clone();
        let status = peer
            .request(
                method::COMMAND_CALL,
                Some(json!({"name": "git.status", "args": {}})),
            )
            .await
            .map_err(|e| ErrorObject::new(codes::COMMAND_FAILED, e.to_string()))?;
        Ok(json!({"args": args, "status": status}))
    };
    let (host, _) = Peer::new(ar, aw, host_handler, PeerOptions::default());
    let (plugin, _) = Peer::new(br, bw, plugin_handler, PeerOptions::default());
    let answer = timeout(
        PATIENCE,
        host.request(
            method::COMMAND_INVOKE,
            Some(json!({"name": "my.greet", "args": 7})),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(answer, json!({"args": 7, "status": {"branch": "main"}}));
    // The plugin counts its last frame just after writing it, so the counters settle a moment later.
    eventually(|| {
        let (h, p) = (host.stats(), plugin.stats());
        (h.frames_out, h.frames_in, p.frames_out, p.frames_in) == (2, 2, 2, 2)
            && (h.bytes_out, h.bytes_in) == (p.bytes_in, p.bytes_out)
    })
    .await;
}

#[tokio::test]
async fn outgoing_ids_increase_and_responses_are_correlated() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    let first = spawn_request(&peer, "a", None);
    let second = spawn_request(&peer, "b", Some(json!([1])));
    let mut seen = vec![raw.recv().await, raw.recv().await];
    seen.sort_by_key(|m| m["id"].as_u64());
    assert_eq!(seen[0]["id"], 1);
    assert_eq!(seen[1]["id"], 2);
    for m in &seen {
        let id = &m["id"];
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": m["method"]});
        raw.send(&reply.to_string()).await;
    }
    let (first, second) = (join(first).await.unwrap(), join(second).await.unwrap());
    assert_eq!((first, second), (json!("a"), json!("b")));
    let _third = spawn_request(&peer, "c", None);
    assert_eq!(raw.recv().await["id"], 3, "ids are never reused");
}

#[tokio::test]
async fn a_remote_error_reaches_the_caller_as_data() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    let call = spawn_request(&peer, method::COMMAND_INVOKE, None);
    let id = raw.recv().await["id"].clone();
    let reply = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "no repo", "data": {"x": 1}}});
    raw.send(&reply.to_string()).await;
    match join(call).await {
        Err(CallError::Remote(e)) => assert_eq!(
            e,
            ErrorObject {
                code: -32000,
                message: "no repo".into(),
                data: Some(c2_protocol::to_raw(&json!({"x": 1})).unwrap())
            }
        ),
        other => panic!("expected a remote error, got {other:?}"),
    }
}

#[tokio::test]
async fn incoming_ids_are_echoed_verbatim() {
    let (peer, _n, mut raw) = raw_peer(
        PeerOptions::default(),
        |r: Request, _p: Peer| async move { Ok(json!(r.method)) },
        64 * 1024,
    );
    let long = format!("\"{}\"", "x".repeat(100_000));
    let ids = [
        r#""abc""#,
        "1.5",
        "-3",
        "18446744073709551615",
        r#""""#,
        // Past u64 and f64 precision, negative zero, exponents, escapes: echoed as written.
        "12345678901234567890123",
        "18446744073709551616",
        "-0",
        "1E2",
        "-1.50e-7",
        r#""\u00e9\n""#,
        &long,
    ];
    for id in ids {
        raw.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#))
            .await;
        let line = raw.recv_line().await.unwrap();
        assert_eq!(
            line,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"m"}}"#)
        );
    }
    assert_eq!(peer.stats().frames_in, ids.len() as u64);
}

#[tokio::test]
async fn unknown_late_and_duplicate_responses_are_dropped_and_counted() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    let late = timeout(Duration::from_millis(20), peer.request("slow", None)).await;
    assert!(late.is_err(), "nobody answered, so the caller gave up");
    assert_eq!(raw.recv().await["id"], 1);
    let call = spawn_request(&peer, "fast", None);
    assert_eq!(raw.recv().await["id"], 2);
    for line in [
        r#"{"jsonrpc":"2.0","id":2,"result":"first"}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":"again"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"late"}"#,
        r#"{"jsonrpc":"2.0","id":99,"result":"unknown"}"#,
        r#"{"jsonrpc":"2.0","id":"2","result":"wrong type"}"#,
    ] {
        raw.send(line).await;
    }
    assert_eq!(join(call).await.unwrap(), json!("first"));
    eventually(|| peer.stats().dropped_responses == 4).await;
    assert_eq!(
        peer.close_reason(),
        None,
        "stray responses never close the connection"
    );
}

#[tokio::test]
async fn excess_outgoing_requests_fail_fast_and_the_others_are_unaffected() {
    let options = PeerOptions {
        max_outgoing_requests: 2,
        ..PeerOptions::default()
    };
    let (peer, mut raw) = peer_with_raw(options);
    let calls = [
        spawn_request(&peer, "a", None),
        spawn_request(&peer, "b", None),
    ];
    let ids = [
        raw.recv().await["id"].clone(),
        raw.recv().await["id"].clone(),
    ];
    match peer.request("c", None).await {
        Err(CallError::Busy { limit: 2 }) => {}
        other => panic!("expected busy, got {other:?}"),
    }
    for id in ids {
        raw.send(&json!({"jsonrpc": "2.0", "id": id, "result": id}).to_string())
            .await;
    }
    for call in calls {
        assert!(join(call).await.is_ok());
    }
    let again = spawn_request(&peer, "d", None);
    let id = raw.recv().await["id"].clone();
    raw.send(&json!({"jsonrpc": "2.0", "id": id, "result": 0}).to_string())
        .await;
    assert_eq!(
        join(again).await.unwrap(),
        json!(0),
        "finished calls free their slots"
    );
}

#[tokio::test]
async fn excess_incoming_requests_are_answered_busy_at_once() {
    let gate = Arc::new(Semaphore::new(0));
    let handler_gate = Arc::clone(&gate);
    let handler = move |_r: Request, _p: Peer| {
        let gate = Arc::clone(&handler_gate);
        async move {
            let _pass = gate
                .acquire()
                .await
                .map_err(|e| ErrorObject::new(-1, e.to_string()))?;
            Ok(json!("done"))
        }
    };
    let options = PeerOptions {
        max_incoming_requests: 2,
        ..PeerOptions::default()
    };
    let (peer, _n, mut raw) = raw_peer(options, handler, 64 * 1024);
    for id in 1..=3 {
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"command/call"}}"#
        ))
        .await;
    }
    let busy = raw.recv().await;
    assert_eq!(
        (busy["id"].clone(), busy["error"]["code"].clone()),
        (json!(3), json!(codes::HOST_BUSY))
    );
    assert_eq!(busy["error"]["data"], json!({"kind": "host_busy"}));
    gate.add_permits(2);
    let mut done = [raw.recv().await, raw.recv().await];
    done.sort_by_key(|m| m["id"].as_u64());
    assert_eq!(
        done.map(|m| (m["id"].clone(), m["result"].clone())),
        [(json!(1), json!("done")), (json!(2), json!("done"))]
    );
    assert_eq!(peer.stats().busy_rejections, 1);
    gate.add_permits(1);
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"command/call"}"#)
        .await;
    assert_eq!(
        raw.recv().await["result"],
        "done",
        "finished handlers free their slots"
    );
}

#[tokio::test]
async fn a_full_notification_queue_drops_and_counts_without_closing() {
    let options = PeerOptions {
        notification_queue: 2,
        ..PeerOptions::default()
    };
    let (peer, mut notifications, mut raw) = raw_peer(options, RejectRequests, 64 * 1024);
    for n in 0..5 {
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","method":"event/emit","params":{{"name":"e","payload":{n}}}}}"#
        ))
        .await;
    }
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .await;
    assert_eq!(
        raw.recv().await["error"]["code"],
        codes::METHOD_NOT_FOUND,
        "everything before was read"
    );
    assert_eq!(peer.stats().dropped_notifications, 3);
    let kept: Vec<_> = [
        notifications.try_recv().unwrap(),
        notifications.try_recv().unwrap(),
    ]
    .into_iter()
    .map(|n| serde_json::from_str::<Value>(n.params.unwrap().get()).unwrap()["payload"].clone())
    .collect();
    assert_eq!(kept, [json!(0), json!(1)]);
    assert!(notifications.try_recv().is_none());
    assert_eq!(peer.close_reason(), None);
}

#[tokio::test]
async fn a_malformed_request_is_answered_invalid_request_and_a_malformed_response_is_not() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    raw.send(r#"{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":"m"}}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":7}"#).await;
    raw.send(r#"{"jsonrpc":"2.0","id":6,"method":"nope"}"#)
        .await;
    let mut answers = [raw.recv().await, raw.recv().await];
    answers.sort_by_key(|m| m["id"].as_u64());
    assert_eq!(answers[0]["id"], 5);
    assert_eq!(answers[0]["error"]["code"], codes::INVALID_REQUEST);
    assert_eq!(answers[1]["id"], 6);
    assert_eq!(answers[1]["error"]["code"], codes::METHOD_NOT_FOUND);
    assert_eq!(peer.stats().invalid_messages, 2);
}

#[tokio::test]
async fn junk_lines_and_a_missing_jsonrpc_are_tolerated() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    let call = spawn_request(&peer, "m", None);
    assert_eq!(raw.recv().await["id"], 1);
    raw.write
        .write_all(b"print from a plugin\n\n\xff\xfe\n")
        .await
        .unwrap();
    raw.send(r#"{"id":1,"result":"ok"}"#).await;
    assert_eq!(join(call).await.unwrap(), json!("ok"));
    assert_eq!(peer.stats().dropped_lines, 3);
}

#[tokio::test]
async fn the_end_of_the_stream_fails_every_waiter_and_every_later_call() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    let pending = [
        spawn_request(&peer, "a", None),
        spawn_request(&peer, "b", None),
    ];
    raw.recv().await;
    raw.recv().await;
    drop(raw);
    for call in pending {
        assert_eq!(closed_with(join(call).await), CloseReason::StreamClosed);
    }
    assert_eq!(
        closed_with(peer.request("c", None).await),
        CloseReason::StreamClosed
    );
    assert!(matches!(
        peer.notify("n", None).await,
        Err(CallError::Closed(CloseReason::StreamClosed))
    ));
    assert_eq!(
        timeout(PATIENCE, peer.closed()).await.unwrap().code(),
        "stream_closed"
    );
}

#[tokio::test]
async fn an_oversized_incoming_frame_closes_the_connection() {
    let options = PeerOptions {
        frame: FrameOptions {
            max_frame_bytes: 64,
        },
        ..PeerOptions::default()
    };
    let (peer, mut raw) = peer_with_raw(options);
    let pending = spawn_request(&peer, "a", None);
    raw.recv().await;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":"{}"}}"#,
        "x".repeat(100)
    );
    raw.send(&line).await;
    let reason = closed_with(join(pending).await);
    assert_eq!(reason, CloseReason::FrameTooLarge { len: 65, limit: 64 });
    assert_eq!(reason.code(), "frame_too_large");
    assert_eq!(closed_with(peer.request("b", None).await), reason);
    assert_eq!(
        raw.recv_line().await,
        None,
        "the writer was dropped, so the other side sees its input end"
    );
}

#[tokio::test]
async fn closing_cancels_every_waiter_and_ends_the_output() {
    let (peer, mut raw) = peer_with_raw(PeerOptions::default());
    let pending = spawn_request(&peer, "a", None);
    raw.recv().await;
    let waiter = {
        let peer = peer.clone();
        tokio::spawn(async move { peer.closed().await })
    };
    peer.close();
    assert_eq!(closed_with(join(pending).await), CloseReason::Cancelled);
    assert_eq!(join(waiter).await, CloseReason::Cancelled);
    assert_eq!(
        closed_with(peer.request("b", None).await),
        CloseReason::Cancelled
    );
    assert_eq!(raw.recv_line().await, None);
    peer.close();
    assert_eq!(
        peer.close_reason(),
        Some(CloseReason::Cancelled),
        "closing twice keeps the first reason"
    );
}

#[tokio::test]
async fn a_write_error_closes_the_connection() {
    let (reader_io, _keep_reader_open) = tokio::io::duplex(1024);
    let (writer_io, gone) = tokio::io::duplex(1024);
    drop(gone);
    let (read, _) = tokio::io::split(reader_io);
    let (_, write) = tokio::io::split(writer_io);
    let (peer, _) = Peer::new(read, write, RejectRequests, PeerOptions::default());
    let reason = closed_with(peer.request("a", None).await);
    assert_eq!(reason, CloseReason::WriteFailed(io::ErrorKind::BrokenPipe));
    assert_eq!(reason.code(), "write_failed");
    assert_eq!(closed_with(peer.request("b", None).await), reason);
}

#[tokio::test]
async fn an_oversized_outbound_message_is_refused_without_poisoning_the_connection() {
    let options = PeerOptions {
        frame: FrameOptions {
            max_frame_bytes: 64,
        },
        ..PeerOptions::default()
    };
    let (peer, mut raw) = peer_with_raw(options);
    let big = Some(json!(["y".repeat(100)]));
    assert!(matches!(
        peer.request("a", big.clone()).await,
        Err(CallError::Encode(Error::FrameTooLarge { limit: 64, .. }))
    ));
    assert!(matches!(
        peer.notify("n", big).await,
        Err(CallError::Encode(Error::FrameTooLarge { .. }))
    ));
    let call = spawn_request(&peer, "b", None);
    let sent = raw.recv().await;
    assert_eq!(sent["method"], "b");
    raw.send(&json!({"jsonrpc": "2.0", "id": sent["id"], "result": 1}).to_string())
        .await;
    assert_eq!(join(call).await.unwrap(), json!(1));
    assert_eq!(peer.stats().frames_out, 1);
}

#[tokio::test]
async fn an_oversized_handler_result_is_answered_as_a_command_failure() {
    let options = PeerOptions {
        frame: FrameOptions {
            max_frame_bytes: 256,
        },
        ..PeerOptions::default()
    };
    let handler = |_r: Request, _p: Peer| async move { Ok(json!("z".repeat(1000))) };
    let (_peer, _n, mut raw) = raw_peer(options, handler, 64 * 1024);
    raw.send(r#"{"jsonrpc":"2.0","id":"big","method":"command/invoke"}"#)
        .await;
    let answer = raw.recv().await;
    assert_eq!(answer["id"], "big");
    assert_eq!(answer["error"]["code"], codes::COMMAND_FAILED);
}

#[tokio::test]
async fn a_full_outbound_queue_refuses_notifications_and_holds_requests_back() {
    let options = PeerOptions {
        outbound_queue: 1,
        ..PeerOptions::default()
    };
    // A 64-byte pipe nobody reads: the first request's write blocks and keeps the only slot.
    let (peer, _n, mut raw) = raw_peer(options, RejectRequests, 64);
    let blocked = spawn_request(&peer, "first", Some(json!(["w".repeat(500)])));
    // Let the first request take the slot and block on the full pipe.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(matches!(
        timeout(PATIENCE, peer.notify("n", None)).await.unwrap(),
        Err(CallError::QueueFull { limit: 1 })
    ));
    let waiting = spawn_request(&peer, "second", None);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        !waiting.is_finished(),
        "a request waits for room instead of failing"
    );
    let mut ids = Vec::new();
    for _ in 0..2 {
        let m = raw.recv().await;
        ids.push((m["method"].clone(), m["id"].clone()));
    }
    assert_eq!(ids[0].0, "first");
    assert_eq!(ids[1].0, "second");
    for (_, id) in ids {
        raw.send(&json!({"jsonrpc": "2.0", "id": id, "result": null}).to_string())
            .await;
    }
    assert!(join(blocked).await.is_ok());
    assert!(join(waiting).await.is_ok());
}

#[tokio::test]
async fn a_request_cancelled_mid_write_is_finished_before_the_next_frame() {
    let (peer, mut raw) = {
        let (peer, _n, raw) = raw_peer(PeerOptions::default(), RejectRequests, 64);
        (peer, raw)
    };
    let big = "q".repeat(300);
    let cancelled = spawn_request(&peer, "first", Some(json!([big])));
    // Let it write what fits in the pipe and block on the rest.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(peer.stats().frames_out, 0);
    cancelled.abort();
    assert!(
        timeout(PATIENCE, cancelled)
            .await
            .unwrap()
            .unwrap_err()
            .is_cancelled()
    );
    let next = spawn_request(&peer, "second", None);
    let first = raw.recv().await;
    assert_eq!(
        first["params"][0],
        big.as_str(),
        "the cut frame was completed, not interleaved"
    );
    let second = raw.recv().await;
    assert_eq!(second["method"], "second");
    raw.send(&json!({"jsonrpc": "2.0", "id": first["id"], "result": 1}).to_string())
        .await;
    raw.send(&json!({"jsonrpc": "2.0", "id": second["id"], "result": 2}).to_string())
        .await;
    assert_eq!(join(next).await.unwrap(), json!(2));
    eventually(|| peer.stats().dropped_responses == 1).await;
}

#[tokio::test]
async fn a_handler_that_panics_still_gets_its_request_answered() {
    let handler = |r: Request, _p: Peer| async move {
        if r.method == "explode" {
            panic!("the handler blew up on purpose");
        }
        Ok(json!("fine"))
    };
    let (peer, _n, mut raw) = raw_peer(PeerOptions::default(), handler, 64 * 1024);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"explode"}"#)
        .await;
    let answer = raw.recv().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(1), json!(codes::COMMAND_FAILED))
    );
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"calm"}"#)
        .await;
    assert_eq!(raw.recv().await["result"], "fine");
    assert_eq!(peer.close_reason(), None);
}

/// A sink that counts the `write` calls reaching it.
struct CountingSink {
    inner: WriteHalf<DuplexStream>,
    writes: Arc<std::sync::atomic::AtomicUsize>,
}

impl tokio::io::AsyncWrite for CountingSink {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn a_burst_of_calls_is_written_in_fewer_writes_than_frames_and_in_order() {
    const CALLS: usize = 32;
    let (ours, theirs) = tokio::io::duplex(1024 * 1024);
    let (read, write) = tokio::io::split(ours);
    let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sink = CountingSink {
        inner: write,
        writes: Arc::clone(&writes),
    };
    let (peer, _n) = Peer::new(read, sink, RejectRequests, PeerOptions::default());
    let (their_read, their_write) = tokio::io::split(theirs);
    let mut raw = Raw {
        lines: BufReader::new(their_read).lines(),
        write: their_write,
    };
    // Spawned back to back on the test's one thread: every caller queues its frame before
    // the writer task gets its turn.
    let calls: Vec<_> = (0..CALLS)
        .map(|i| spawn_request(&peer, &format!("m{i}"), None))
        .collect();
    for i in 0..CALLS {
        let request = raw.recv().await;
        assert_eq!(
            request["method"],
            format!("m{i}"),
            "frames keep their order"
        );
        raw.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": i}).to_string())
            .await;
    }
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(join(call).await.unwrap(), json!(i));
    }
    let writes = writes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        writes < CALLS,
        "{CALLS} queued frames took {writes} writes; a burst should share them"
    );
    assert_eq!(peer.stats().frames_out, CALLS as u64);
}

#[tokio::test]
async fn closing_releases_callers_waiting_for_a_write_slot() {
    let options = PeerOptions {
        outbound_queue: 1,
        ..PeerOptions::default()
    };
    // A 64-byte pipe nobody reads: the first frame's write blocks and keeps the only slot.
    let (peer, _n, _raw) = raw_peer(options, RejectRequests, 64);
    let first = spawn_request(&peer, "first", Some(json!(["w".repeat(500)])));
    let second = spawn_request(&peer, "second", None);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!second.is_finished(), "the second call waits for the slot");
    peer.close();
    assert_eq!(closed_with(join(first).await), CloseReason::Cancelled);
    assert_eq!(closed_with(join(second).await), CloseReason::Cancelled);
    assert!(matches!(
        peer.notify("late", None).await,
        Err(CallError::Closed(CloseReason::Cancelled))
    ));
}

/// Options whose byte bound, not frame bound, is the one a test reaches.
fn byte_bounded(max_outbound_bytes: usize) -> PeerOptions {
    PeerOptions {
        max_outbound_bytes,
        ..PeerOptions::default()
    }
}

#[tokio::test]
async fn requests_over_the_outbound_byte_bound_wait_for_room() {
    // A 64-byte pipe nobody reads yet: the first request's write blocks, holding 1,000 bytes.
    let (peer, _n, mut raw) = raw_peer(byte_bounded(1500), RejectRequests, 64);
    let first = spawn_request(&peer, "first", Some(json!(["w".repeat(950)])));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = spawn_request(&peer, "second", Some(json!(["w".repeat(950)])));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!second.is_finished(), "a request over the byte bound waits");
    assert_eq!(peer.close_reason(), None);
    for want in ["first", "second"] {
        let m = raw.recv().await;
        assert_eq!(m["method"], want);
        raw.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": want}).to_string())
            .await;
    }
    assert_eq!(join(first).await.unwrap(), json!("first"));
    assert_eq!(join(second).await.unwrap(), json!("second"));
}

#[tokio::test]
async fn a_notification_over_the_outbound_byte_bound_closes_the_connection() {
    let (peer, _n, _raw) = raw_peer(byte_bounded(1500), RejectRequests, 64);
    let pending = spawn_request(&peer, "pending", None);
    let big = json!(["n".repeat(900)]);
    assert!(
        timeout(PATIENCE, peer.notify("first", Some(big.clone())))
            .await
            .unwrap()
            .is_ok()
    );
    let overflow = timeout(PATIENCE, peer.notify("second", Some(big)))
        .await
        .unwrap();
    let reason = CloseReason::OutboundOverflow { limit: 1500 };
    assert!(
        matches!(overflow, Err(CallError::Closed(r)) if r == reason),
        "{overflow:?}"
    );
    assert_eq!(peer.close_reason(), Some(reason));
    assert_eq!(reason.code(), "outbound_overflow");
    assert_eq!(closed_with(join(pending).await), reason);
}

#[tokio::test]
async fn answers_over_the_outbound_byte_bound_close_the_connection() {
    // The other side sends requests whose answers echo 7,000 bytes, and never reads them.
    let (peer, _n, mut raw) = raw_peer(
        byte_bounded(16 * 1024),
        |r: Request, _p: Peer| async move {
            let params: Value = serde_json::from_str(r.params.unwrap().get()).unwrap();
            Err(ErrorObject::new(
                codes::UNKNOWN_COMMAND,
                format!("unknown command {}", params["name"]),
            ))
        },
        64,
    );
    let name = "x".repeat(7000);
    for id in 0..10 {
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": "command/call", "params": {"name": name}});
        // Once the peer closes, its end of the pipe is gone: the write fails, as it should.
        if raw
            .write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .is_err()
        {
            break;
        }
        if peer.close_reason().is_some() {
            break;
        }
    }
    let reason = timeout(PATIENCE, peer.closed()).await.unwrap();
    assert_eq!(reason, CloseReason::OutboundOverflow { limit: 16 * 1024 });
}

#[tokio::test]
async fn one_frame_larger_than_the_byte_bound_still_goes_into_an_empty_queue() {
    let (peer, _n, mut raw) = raw_peer(byte_bounded(100), RejectRequests, 64 * 1024);
    let call = spawn_request(&peer, "big", Some(json!(["b".repeat(500)])));
    let m = raw.recv().await;
    raw.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": 1}).to_string())
        .await;
    assert_eq!(join(call).await.unwrap(), json!(1));
}

#[tokio::test]
async fn incoming_notifications_over_the_byte_bound_are_dropped_and_counted() {
    let options = PeerOptions {
        max_queued_notification_bytes: 2500,
        ..PeerOptions::default()
    };
    let (peer, mut notifications, mut raw) = raw_peer(options, RejectRequests, 64 * 1024);
    let big = "z".repeat(1000);
    for n in 0..4 {
        raw.send(&json!({"jsonrpc": "2.0", "method": "m", "params": [n, big]}).to_string())
            .await;
    }
    eventually(|| peer.stats().frames_in == 4).await;
    // Two fit in 2,500 bytes; the other two are dropped, and the connection goes on.
    assert_eq!(peer.stats().dropped_notifications, 2);
    assert!(notifications.try_recv().is_some());
    assert!(notifications.try_recv().is_some());
    assert!(notifications.try_recv().is_none());
    // Taking them off made room again.
    raw.send(&json!({"jsonrpc": "2.0", "method": "m", "params": [4, big]}).to_string())
        .await;
    eventually(|| peer.stats().frames_in == 5).await;
    assert!(notifications.try_recv().is_some());
    assert_eq!(peer.close_reason(), None);
}

#[tokio::test]
async fn incoming_requests_over_the_byte_bound_are_answered_busy() {
    let options = PeerOptions {
        max_incoming_request_bytes: 1500,
        ..PeerOptions::default()
    };
    let gate = Arc::new(Semaphore::new(0));
    let held = Arc::clone(&gate);
    let (peer, _n, mut raw) = raw_peer(
        options,
        move |r: Request, _p: Peer| {
            let held = Arc::clone(&held);
            async move {
                let _ = held.acquire().await;
                Ok(json!(r.method))
            }
        },
        64 * 1024,
    );
    let big = "b".repeat(1000);
    // The first is held by the handler; the second would take 2,000 bytes in handling.
    for id in [1, 2] {
        raw.send(&json!({"jsonrpc": "2.0", "id": id, "method": "m", "params": [big]}).to_string())
            .await;
    }
    let busy = raw.recv().await;
    assert_eq!(busy["id"], 2);
    assert_eq!(busy["error"]["code"], codes::HOST_BUSY);
    assert_eq!(busy["error"]["data"]["kind"], "host_busy");
    assert_eq!(peer.stats().busy_rejections, 1);
    gate.add_permits(1);
    let answer = raw.recv().await;
    assert_eq!(
        (answer["id"].clone(), answer["result"].clone()),
        (json!(1), json!("m"))
    );
    // Once it is answered, its bytes are given back.
    raw.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "m", "params": [big]}).to_string())
        .await;
    gate.add_permits(1);
    assert_eq!(raw.recv().await["id"], 3);
}

fn half_closing() -> PeerOptions {
    PeerOptions {
        on_input_end: InputEnd::HalfClose,
        ..PeerOptions::default()
    }
}

/// A handler that answers `"late"` once `gate` gets a permit.
fn gated(gate: &Arc<Semaphore>) -> impl RequestHandler {
    let gate = Arc::clone(gate);
    move |_r: Request, _p: Peer| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.unwrap().forget();
            Ok(json!("late"))
        }
    }
}

#[tokio::test]
async fn after_a_half_close_requests_taken_in_are_still_answered_and_notifications_go_out() {
    let gate = Arc::new(Semaphore::new(0));
    let (peer, _n, mut raw) = raw_peer(half_closing(), gated(&gate), 64 * 1024);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"slow"}"#)
        .await;
    raw.write.shutdown().await.unwrap();
    assert_eq!(
        timeout(PATIENCE, peer.input_ended()).await.unwrap(),
        CloseReason::StreamClosed
    );
    assert_eq!(
        peer.close_reason(),
        None,
        "a half-close keeps the output open"
    );
    // Both requests were taken in before the end, and neither is answered yet.
    assert!(matches!(
        peer.flush(Duration::from_millis(20)).await,
        Err(FlushError::TimedOut { unanswered: 2, .. })
    ));
    gate.add_permits(2);
    peer.notify("log", Some(json!({"level": "info", "message": "bye"})))
        .await
        .unwrap();
    timeout(PATIENCE, peer.flush(PATIENCE))
        .await
        .unwrap()
        .unwrap();
    let mut seen: Vec<Value> = Vec::new();
    for _ in 0..3 {
        seen.push(raw.recv().await);
    }
    let mut ids: Vec<Value> = seen.iter().map(|m| m["id"].clone()).collect();
    ids.sort_by_key(|id| id.as_u64());
    assert_eq!(ids, [Value::Null, json!(1), json!(2)]);
    assert!(
        seen.iter()
            .filter(|m| !m["id"].is_null())
            .all(|m| m["result"] == "late")
    );
    peer.close();
    assert_eq!(raw.recv_line().await, None, "close ends the output");
}

#[tokio::test]
async fn after_a_half_close_our_own_requests_fail_at_once_and_later_ones_are_refused() {
    let (peer, mut raw) = peer_with_raw(half_closing());
    let pending = spawn_request(&peer, "a", None);
    raw.recv().await;
    raw.write.shutdown().await.unwrap();
    assert_eq!(closed_with(join(pending).await), CloseReason::StreamClosed);
    assert_eq!(
        closed_with(peer.request("b", None).await),
        CloseReason::StreamClosed
    );
    assert_eq!(peer.close_reason(), None);
    peer.notify("still", None).await.unwrap();
    assert_eq!(raw.recv().await["method"], "still");
    assert_eq!(peer.flush(PATIENCE).await, Ok(()));
}

#[tokio::test]
async fn a_request_waiting_for_outbound_room_fails_when_input_ends() {
    // One frame's worth of bytes, and an other side that does not read: the second request
    // waits for room that never comes.
    let options = PeerOptions {
        max_outbound_bytes: 64,
        ..half_closing()
    };
    let (peer, _n, raw) = raw_peer(options, RejectRequests, 64);
    let big = json!({ "pad": "x".repeat(200) });
    let first = spawn_request(&peer, "first", Some(big.clone()));
    let second = spawn_request(&peer, "second", Some(big));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let Raw { lines, mut write } = raw;
    write.shutdown().await.unwrap();
    assert_eq!(closed_with(join(second).await), CloseReason::StreamClosed);
    assert_eq!(closed_with(join(first).await), CloseReason::StreamClosed);
    drop(lines);
}

#[tokio::test]
async fn by_default_the_end_of_input_closes_everything_and_drops_unfinished_answers() {
    let gate = Arc::new(Semaphore::new(0));
    let (peer, _n, mut raw) = raw_peer(PeerOptions::default(), gated(&gate), 64 * 1024);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#)
        .await;
    raw.write.shutdown().await.unwrap();
    assert_eq!(
        timeout(PATIENCE, peer.closed()).await.unwrap(),
        CloseReason::StreamClosed
    );
    assert_eq!(
        timeout(PATIENCE, peer.input_ended()).await.unwrap(),
        CloseReason::StreamClosed
    );
    gate.add_permits(1);
    assert_eq!(
        raw.recv_line().await,
        None,
        "the answer is dropped with the writer"
    );
    assert_eq!(
        peer.flush(PATIENCE).await,
        Err(FlushError::Closed(CloseReason::StreamClosed))
    );
}
