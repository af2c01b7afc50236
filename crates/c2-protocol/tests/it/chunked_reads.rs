//! A peer whose reads are smaller than every frame still decodes each frame whole.

use c2_protocol::{PeerOptions, RejectRequests};
use serde_json::json;
use tokio::time::timeout;

use crate::peer::{PATIENCE, join, raw_peer, spawn_request};

#[tokio::test]
async fn frames_read_a_few_bytes_at_a_time_are_decoded_whole() {
    // A read chunk smaller than every frame: each line arrives over many reads, two of them
    // sharing one write, and the reads fill an unzeroed buffer that is reused every time.
    let options = PeerOptions {
        read_chunk_bytes: 3,
        ..PeerOptions::default()
    };
    let (peer, mut notifications, mut raw) = raw_peer(options, RejectRequests, 64 * 1024);
    let call = spawn_request(&peer, "demo/ask", Some(json!({"q": 1})));
    let request = raw.recv().await;
    assert_eq!(request["method"], "demo/ask");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"text": "é".repeat(40)}});
    let event = json!({"jsonrpc": "2.0", "method": "demo/said", "params": {"n": 2}});
    raw.send(&format!("{answer}\n{event}")).await;
    assert_eq!(join(call).await.unwrap(), json!({"text": "é".repeat(40)}));
    let notification = timeout(PATIENCE, notifications.recv())
        .await
        .unwrap()
        .expect("the notification was lost");
    assert_eq!(notification.method, "demo/said");
    assert_eq!(peer.stats().frames_in, 2);
}
