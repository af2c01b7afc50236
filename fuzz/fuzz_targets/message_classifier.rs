//! Classifies every JSON object the input parses to. A valid message must serialize to an object
//! that classifies back to the same message (now with `jsonrpc` present); an invalid one may ask
//! for an answer only when it carried a usable id and is not a response; and `LineDecoder` must
//! reach the same verdict from the object's compact line.
#![no_main]

use c2_protocol::{Classified, DecodeEvent, FrameOptions, LineDecoder, Message, classify};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let text = serde_json::to_string(&object).expect("a parsed object serializes");
    let classified = classify(&text).expect("an object classifies");
    agrees_with_decoder(&object, &classified);
    match classified {
        Classified::Message {
            message,
            jsonrpc_absent,
        } => {
            assert_eq!(jsonrpc_absent, !object.contains_key("jsonrpc"));
            assert_shape(&object, &message);
            let echoed = serde_json::to_string(&message).expect("a message serializes");
            let again = classify(&echoed);
            assert_eq!(
                again,
                Ok(Classified::Message {
                    message,
                    jsonrpc_absent: false,
                }),
                "a serialized message did not classify back to itself"
            );
        }
        Classified::Invalid(invalid) => {
            if let Some(id) = invalid.answer_to {
                let looks_like_response = !object.contains_key("method")
                    && (object.contains_key("result") || object.contains_key("error"));
                assert!(!looks_like_response, "asked to answer a response");
                assert_eq!(object.get("id"), Some(&serde_json::to_value(&id).unwrap()));
            }
        }
    }
});

/// The kind of a valid message follows from which members are present.
fn assert_shape(object: &Map<String, Value>, message: &Message) {
    let has_id = object.get("id").is_some_and(|id| !id.is_null());
    match message {
        Message::Request(r) => {
            assert!(has_id);
            assert_eq!(object.get("method"), Some(&Value::String(r.method.clone())));
        }
        Message::Notification(n) => {
            assert!(!has_id);
            assert_eq!(object.get("method"), Some(&Value::String(n.method.clone())));
        }
        Message::Response(_) => {
            assert!(has_id);
            assert!(!object.contains_key("method"));
        }
    }
}

fn agrees_with_decoder(object: &Map<String, Value>, classified: &Classified) {
    let mut line = serde_json::to_vec(object).expect("a parsed object serializes");
    line.push(b'\n');
    let mut decoder = LineDecoder::new(FrameOptions {
        max_frame_bytes: line.len(),
    });
    let event = decoder.decode(&mut line.as_slice());
    let want = match classified.clone() {
        Classified::Message {
            message,
            jsonrpc_absent,
        } => DecodeEvent::Message {
            message,
            jsonrpc_absent,
        },
        Classified::Invalid(invalid) => DecodeEvent::Invalid(invalid),
    };
    assert_eq!(event, Some(want), "the decoder disagrees with classify");
}
