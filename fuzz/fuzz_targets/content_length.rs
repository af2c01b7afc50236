//! Feeds a byte stream to `ContentLengthDecoder` whole, byte by byte and in chunks whose split
//! points come from the input. All three must agree, the decoder must never hold more than its
//! limits allow, a header error must stick, and every body must survive being encoded and decoded
//! again.
//!
//! Input layout: byte 0 is the body limit and byte 1 the header limit (0 to 255 bytes each, small
//! so that the oversized and header-too-large paths run often), byte 2 seeds the chunk lengths,
//! the rest is the stream.
#![no_main]

use c2_protocol::{
    ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions, Error, HeaderError,
    encode_content_length,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&[body, header, seed], stream)) = data.split_first_chunk::<3>() else {
        return;
    };
    let options = ContentLengthOptions {
        max_body_bytes: usize::from(body),
        max_header_bytes: usize::from(header),
    };

    let whole = decode_all(options, std::iter::once(stream));
    let bytewise = decode_all(options, stream.chunks(1));
    assert_eq!(bytewise, whole, "byte-by-byte feeding changed the outcome");
    let max_chunk = options.max_body_bytes + options.max_header_bytes + 3;
    let chunked = decode_all(options, c2_fuzz::chunks(stream, seed, max_chunk));
    assert_eq!(chunked, whole, "chunked feeding changed the outcome");

    let bodies: Vec<&[u8]> = whole
        .events
        .iter()
        .filter_map(|event| match event {
            ContentLengthEvent::Body(body) => Some(body.as_slice()),
            ContentLengthEvent::Oversized { .. } => None,
        })
        .collect();
    round_trip(options.max_body_bytes, &bodies);
});

#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<ContentLengthEvent>,
    error: Option<HeaderError>,
}

fn decode_all<'a>(
    options: ContentLengthOptions,
    pieces: impl Iterator<Item = &'a [u8]>,
) -> Outcome {
    let bound = options.max_body_bytes.max(options.max_header_bytes);
    let mut decoder = ContentLengthDecoder::new(options);
    let mut events = Vec::new();
    for piece in pieces {
        let mut input = piece;
        loop {
            let result = decoder.decode(&mut input);
            assert!(
                decoder.buffered_len() <= bound,
                "holds {} bytes with limits {options:?}",
                decoder.buffered_len()
            );
            match result {
                Ok(Some(event)) => {
                    match &event {
                        ContentLengthEvent::Body(body) => {
                            assert!(body.len() <= options.max_body_bytes);
                        }
                        ContentLengthEvent::Oversized { len } => {
                            assert!(*len > options.max_body_bytes as u64);
                        }
                    }
                    events.push(event);
                }
                Ok(None) => {
                    assert!(input.is_empty(), "returned None with input left");
                    break;
                }
                Err(Error::ContentLengthHeader(error)) => {
                    // The stream is desynchronised for good: the same error, whatever comes next.
                    for mut more in [input, b"Content-Length: 0\r\n\r\n".as_slice()] {
                        match decoder.decode(&mut more) {
                            Err(Error::ContentLengthHeader(again)) => assert_eq!(again, error),
                            other => panic!("after {error:?} the decoder returned {other:?}"),
                        }
                    }
                    return Outcome {
                        events,
                        error: Some(error),
                    };
                }
                Err(other) => panic!("decoding returned a non-header error: {other:?}"),
            }
        }
    }
    Outcome {
        events,
        error: None,
    }
}

/// Encodes `bodies` and decodes them again with a roomy header limit: the same bodies come back.
fn round_trip(max_body_bytes: usize, bodies: &[&[u8]]) {
    let options = ContentLengthOptions {
        max_body_bytes,
        ..ContentLengthOptions::default()
    };
    let mut stream = Vec::new();
    for body in bodies {
        encode_content_length(body, &options, &mut stream).expect("a decoded body fits its limit");
    }
    let decoded = decode_all(options, std::iter::once(stream.as_slice()));
    let want: Vec<ContentLengthEvent> = bodies
        .iter()
        .map(|body| ContentLengthEvent::Body(body.to_vec()))
        .collect();
    assert_eq!(
        decoded,
        Outcome {
            events: want,
            error: None
        }
    );
}
