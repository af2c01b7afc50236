//! Feeds a byte stream to `LineDecoder` whole, byte by byte and in chunks whose split points come
//! from the input. All three must yield the events of a plain line-by-line model of the framing,
//! and the decoder must never hold more than the frame limit plus one byte.
//!
//! Input layout: byte 0 is the frame limit (0 to 255 bytes: small, so the oversized paths run
//! often, yet roomy enough for real messages),
//! byte 1 seeds the chunk lengths, the rest is the stream.
#![no_main]

use c2_protocol::{
    Classified, DecodeEvent, DropReason, EXCERPT_CHARS, FrameOptions, LineDecoder, classify,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&[limit, seed], stream)) = data.split_first_chunk::<2>() else {
        return;
    };
    let options = FrameOptions {
        max_frame_bytes: usize::from(limit),
    };
    let expected = model(stream, options.max_frame_bytes);

    let whole = decode_all(options, std::iter::once(stream));
    assert_eq!(whole.len(), expected.len(), "one event per complete line");
    for (event, want) in whole.iter().zip(&expected) {
        want.check(event);
    }

    let bytewise = decode_all(options, stream.chunks(1));
    assert_eq!(bytewise, whole, "byte-by-byte feeding changed the events");
    let max_chunk = options.max_frame_bytes * 2 + 3;
    let chunked = decode_all(options, c2_fuzz::chunks(stream, seed, max_chunk));
    assert_eq!(chunked, whole, "chunked feeding changed the events");
});

fn decode_all<'a>(
    options: FrameOptions,
    pieces: impl Iterator<Item = &'a [u8]>,
) -> Vec<DecodeEvent> {
    let mut decoder = LineDecoder::new(options);
    let mut events = Vec::new();
    for piece in pieces {
        let mut input = piece;
        loop {
            let event = decoder.decode(&mut input);
            assert!(
                decoder.buffered_capacity() <= options.max_frame_bytes + 1,
                "holds {} bytes with a limit of {}",
                decoder.buffered_capacity(),
                options.max_frame_bytes
            );
            match event {
                Some(event) => events.push(event),
                None => {
                    assert!(input.is_empty(), "returned None with input left");
                    break;
                }
            }
        }
    }
    events
}

/// What one complete line must decode to. A dropped line's excerpt is checked only for its
/// length: the escaping is the decoder's own business.
enum Expected {
    Exact(DecodeEvent),
    Dropped { reason: DropReason, len: usize },
}

impl Expected {
    fn check(&self, event: &DecodeEvent) {
        match (self, event) {
            (Expected::Exact(want), got) => assert_eq!(got, want),
            (Expected::Dropped { reason, len }, DecodeEvent::Dropped(got)) => {
                assert_eq!((got.reason, got.len), (*reason, *len));
                assert!(got.excerpt.chars().count() <= EXCERPT_CHARS);
                assert_eq!(got.excerpt.is_empty(), *len == 0);
            }
            (Expected::Dropped { reason, len }, got) => {
                panic!("expected a {reason} of {len} bytes to be dropped, got {got:?}")
            }
        }
    }
}

/// The framing as the protocol states it, one line at a time with no buffering concerns.
fn model(stream: &[u8], limit: usize) -> Vec<Expected> {
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    // What follows the last `\n` is a line still open when the stream ends: not a frame, unless
    // it already crossed the limit (and its `\r` allowance), which is reported at once.
    let open = lines.pop().unwrap_or_default();
    let oversized = || Expected::Exact(DecodeEvent::Oversized { len: limit as u64 + 1 });
    let tail = (open.len() > limit + 1).then(oversized);
    lines
        .into_iter()
        .map(|raw| {
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            if line.len() > limit {
                return oversized();
            }
            let dropped = |reason| Expected::Dropped {
                reason,
                len: line.len(),
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                return dropped(DropReason::Blank);
            }
            let Ok(text) = std::str::from_utf8(line) else {
                return dropped(DropReason::NotUtf8);
            };
            // The decoder must agree with the classifier, and the classifier with a full
            // parse on what is JSON and what is an object.
            let parsed = serde_json::from_str::<Value>(text);
            match classify(text) {
                Ok(classified) => {
                    assert!(matches!(parsed, Ok(Value::Object(_))), "classified a non-object");
                    Expected::Exact(match classified {
                        Classified::Message {
                            message,
                            jsonrpc_absent,
                        } => DecodeEvent::Message {
                            message,
                            jsonrpc_absent,
                        },
                        Classified::Invalid(invalid) => DecodeEvent::Invalid(invalid),
                    })
                }
                Err(reason) => {
                    let want = match parsed {
                        Ok(Value::Object(_)) => panic!("refused an object as {reason}"),
                        Ok(_) => DropReason::NotObject,
                        Err(_) => DropReason::NotJson,
                    };
                    assert_eq!(reason, want);
                    dropped(reason)
                }
            }
        })
        .chain(tail)
        .collect()
}
