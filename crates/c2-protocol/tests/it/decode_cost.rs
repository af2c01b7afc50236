//! Decoding one frame costs at most 4x its size (decisions.md "Hostile plugins": typed decode
//! with raw params and results, never a `Value` tree of a document the other side chose).
//!
//! Measured as the peak resident set of a process that does nothing else: the test runs itself
//! again, alone, in a child, so no other test's allocations blur the peak. The child builds
//! each 8 MiB frame with its exact capacity (no transient peak of its own), notes VmRSS, feeds
//! the frame to a [`LineDecoder`] in 64 KiB reads like the peer does, and reports how far
//! VmHWM rose over that VmRSS.

use std::time::{Duration, Instant};

use c2_protocol::{DecodeEvent, FrameOptions, LineDecoder, Message};

const CHILD: &str = "C2_DECODE_COST_CHILD";
const FRAME: usize = 8 * 1024 * 1024 - 64;

fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap()
}

/// A frame of `head`, then `[0,0,0,...` up to [`FRAME`] bytes, then `tail`.
fn zeros_frame(head: &str, tail: &str) -> Vec<u8> {
    let mut frame = Vec::with_capacity(FRAME + 1);
    frame.extend_from_slice(head.as_bytes());
    frame.extend_from_slice(b"[0");
    while frame.len() + 2 + 1 + tail.len() < FRAME {
        frame.extend_from_slice(b",0");
    }
    frame.push(b']');
    frame.extend_from_slice(tail.as_bytes());
    frame.push(b'\n');
    frame
}

/// The hostile frames: where the 8 MiB array sits.
const SHAPES: [(&str, &str, &str); 5] = [
    (
        "notification",
        r#"{"jsonrpc":"2.0","method":"event/emit","params":"#,
        "}",
    ),
    (
        "request",
        r#"{"jsonrpc":"2.0","id":1,"method":"command/call","params":"#,
        "}",
    ),
    ("result", r#"{"jsonrpc":"2.0","id":1,"result":"#, "}"),
    (
        "error_data",
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":"#,
        "}}",
    ),
    (
        "unknown_member",
        r#"{"jsonrpc":"2.0","method":"log","junk":"#,
        "}",
    ),
];

/// Runs in the child: decodes the one hostile frame named and prints `cost name growth_kib
/// millis ok`. One shape per child, so memory freed by an earlier frame cannot hide the peak.
#[expect(
    clippy::print_stdout,
    reason = "the child reports to the parent test on stdout"
)]
fn measure(only: &str) {
    for (name, head, tail) in SHAPES.into_iter().filter(|(name, ..)| *name == only) {
        let frame = zeros_frame(head, tail);
        // Resetting the peak makes VmHWM measure this frame alone; a kernel that refuses keeps
        // the older, higher peak, which only makes the bound stricter.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let before = status_kib("VmRSS");
        let start = Instant::now();
        let mut decoder = LineDecoder::new(FrameOptions::default());
        let mut events = Vec::new();
        for chunk in frame.chunks(64 * 1024) {
            let mut input = chunk;
            while let Some(event) = decoder.decode(&mut input) {
                events.push(event);
            }
        }
        let elapsed = start.elapsed();
        let growth = status_kib("VmHWM").saturating_sub(before);
        let ok = matches!(
            events.as_slice(),
            [DecodeEvent::Message {
                message: Message::Notification(_) | Message::Request(_) | Message::Response(_),
                ..
            }]
        );
        println!("\ncost {name} {growth} {} {ok}", elapsed.as_millis());
        drop(events);
    }
}

#[test]
fn one_hostile_frame_costs_at_most_four_times_its_size_to_decode() {
    if let Some(shape) = std::env::var_os(CHILD) {
        measure(shape.to_str().unwrap());
        return;
    }
    let bound_kib = (4 * FRAME / 1024) as u64;
    let mut seen = 0;
    for (shape, ..) in SHAPES {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test runs itself alone in a child to measure a clean peak resident set"
        )]
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "decode_cost::one_hostile_frame_costs_at_most_four_times_its_size_to_decode",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, shape)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the child failed: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        for line in stdout.lines().filter_map(|l| l.strip_prefix("cost ")) {
            let fields: Vec<&str> = line.split(' ').collect();
            let [name, growth, millis, ok] = fields[..] else {
                panic!("bad line {line:?}");
            };
            let growth: u64 = growth.parse().unwrap();
            let millis: u64 = millis.parse().unwrap();
            assert_eq!(
                ok, "true",
                "{name}: the frame did not decode as one message"
            );
            assert!(
                growth <= bound_kib,
                "{name}: decoding an 8 MiB frame raised the peak by {growth} KiB, over 4x the frame ({bound_kib} KiB)"
            );
            // Generous for an unoptimized build on a loaded machine; a Value tree took seconds even
            // optimized.
            assert!(
                Duration::from_millis(millis) < Duration::from_secs(20),
                "{name}: decoding took {millis} ms"
            );
            seen += 1;
            eprintln!("decoding the {name} frame raised the peak by {growth} KiB in {millis} ms");
        }
    }
    assert_eq!(seen, 5, "the children reported {seen} of 5 shapes");
}
