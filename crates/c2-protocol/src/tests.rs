use std::fmt::Write as _;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::*;

fn decode_all(decoder: &mut LineDecoder, mut input: &[u8]) -> Vec<DecodeEvent> {
    let mut events = Vec::new();
    while let Some(event) = decoder.decode(&mut input) {
        events.push(event);
    }
    assert!(input.is_empty(), "decode must consume all input");
    events
}

fn decode_chunked(options: FrameOptions, bytes: &[u8], chunk: usize) -> Vec<DecodeEvent> {
    let mut decoder = LineDecoder::new(options);
    let mut events = Vec::new();
    for piece in bytes.chunks(chunk) {
        events.extend(decode_all(&mut decoder, piece));
        assert!(decoder.buffered_capacity() <= options.max_frame_bytes + 1);
    }
    events
}

fn render(event: &DecodeEvent) -> String {
    match event {
        DecodeEvent::Message {
            message,
            jsonrpc_absent,
        } => {
            let absent = if *jsonrpc_absent {
                " (jsonrpc absent)"
            } else {
                ""
            };
            let body = match message {
                Message::Request(r) => format!(
                    "request id={} method={:?} params={}",
                    r.id,
                    r.method,
                    show(&r.params)
                ),
                Message::Notification(n) => format!(
                    "notification method={:?} params={}",
                    n.method,
                    show(&n.params)
                ),
                Message::Response(r) => match &r.outcome {
                    Ok(v) => format!("response id={} result={}", r.id, tree(v)),
                    Err(e) => format!("response id={} error={e}", r.id),
                },
            };
            format!("{body}{absent}")
        }
        DecodeEvent::Invalid(i) => match &i.answer_to {
            Some(id) => format!("invalid, answer -32600 to id={}: {}", id, i.violation),
            None => format!("invalid, no answer: {}", i.violation),
        },
        DecodeEvent::Dropped(d) => format!("dropped {} ({} bytes): {}", d.reason, d.len, d.excerpt),
        DecodeEvent::Oversized { len } => format!("oversized frame of {len} bytes"),
    }
}

fn show(params: &Option<RawJson>) -> String {
    params
        .as_ref()
        .map_or("absent".to_owned(), |raw| tree(raw).to_string())
}

/// Raw JSON read as a value (sorted keys, compact), for stable renderings.
fn tree(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap()
}

fn handshake_outcome(event: &DecodeEvent) -> Option<String> {
    let DecodeEvent::Message {
        message:
            Message::Response(Response {
                outcome: Ok(result),
                ..
            }),
        ..
    } = event
    else {
        return None;
    };
    let result: InitializeResult = serde_json::from_str(result.get()).ok()?;
    let host = ProtocolVersion::parse(PROTOCOL_VERSION).unwrap();
    Some(
        match check_protocol_version(&host, result.protocol_version.as_deref()) {
            Ok(v) => format!("  handshake: protocol {v} accepted"),
            Err(e) => format!("  handshake refused: {e}"),
        },
    )
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the runner lists this crate's own corpus, not a bundle"
)]
fn transcript_corpus_decodes_as_snapshotted() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data");
    let options = FrameOptions {
        max_frame_bytes: 256,
    };
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("jsonl" | "bin")
            )
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "the corpus went missing");
    for path in cases {
        let bytes = std::fs::read(&path).unwrap();
        let whole = decode_chunked(options, &bytes, bytes.len().max(1));
        assert_eq!(
            whole,
            decode_chunked(options, &bytes, 1),
            "{path:?} byte by byte"
        );
        assert_eq!(
            whole,
            decode_chunked(options, &bytes, 7),
            "{path:?} in 7-byte chunks"
        );
        let mut out = String::new();
        for event in &whole {
            writeln!(out, "{}", render(event)).unwrap();
            if let Some(outcome) = handshake_outcome(event) {
                writeln!(out, "{outcome}").unwrap();
            }
        }
        let case = path.file_stem().unwrap().to_str().unwrap().to_owned();
        insta::assert_snapshot!(format!("corpus_{case}"), out);
    }
}

#[test]
fn the_issue_stream_yields_two_drops_then_the_notification() {
    let stream = b"first\n\xff\xfe garbage\n{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":{\"level\":\"info\",\"message\":\"m\"}}\n";
    let events = decode_chunked(FrameOptions::default(), stream, stream.len());
    assert_eq!(events.len(), 3);
    assert!(
        matches!(&events[0], DecodeEvent::Dropped(d) if d.reason == DropReason::NotJson && d.excerpt == "first")
    );
    assert!(
        matches!(&events[1], DecodeEvent::Dropped(d) if d.reason == DropReason::NotUtf8 && d.excerpt == "\\xff\\xfe garbage")
    );
    let DecodeEvent::Message {
        message: Message::Notification(n),
        jsonrpc_absent: false,
    } = &events[2]
    else {
        panic!("expected the log notification, got {:?}", events[2]);
    };
    let log: LogParams = serde_json::from_str(n.params.as_ref().unwrap().get()).unwrap();
    assert_eq!(
        (n.method.as_str(), log.level),
        (method::LOG, LogLevel::Info)
    );
}

#[test]
fn oversized_frame_is_discarded_as_it_arrives() {
    let options = FrameOptions::default();
    let mut decoder = LineDecoder::new(options);
    let chunk = vec![b'a'; 64 * 1024];
    let total: usize = 64 * 1024 * 1024;
    let mut reported = Vec::new();
    for _ in 0..total / chunk.len() {
        reported.extend(decode_all(&mut decoder, &chunk));
        assert!(decoder.buffered_capacity() <= options.max_frame_bytes + 1);
    }
    // Reported once, as soon as the limit is crossed: a peer that never sends the newline
    // cannot keep the other side waiting.
    let limit = options.max_frame_bytes as u64;
    assert_eq!(reported, vec![DecodeEvent::Oversized { len: limit + 1 }]);
    let after = b"\n{\"jsonrpc\":\"2.0\",\"method\":\"log\"}\n";
    let events = decode_all(&mut decoder, after);
    assert!(
        matches!(&events[..], [DecodeEvent::Message { message: Message::Notification(n), .. }] if n.method == "log"),
        "{events:?}"
    );
    assert_eq!(
        decoder.buffered_capacity(),
        0,
        "the discarded line leaves no buffer behind"
    );
}

#[test]
fn a_frame_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not() {
    let options = FrameOptions {
        max_frame_bytes: 40,
    };
    let line = |len: usize| {
        let head = br#"{"method":"m","params":[""#;
        let tail = br#""]}"#;
        let mut l = head.to_vec();
        l.resize(len - tail.len(), b'x');
        l.extend_from_slice(tail);
        l
    };
    for (terminator, label) in [(&b"\n"[..], "lf"), (&b"\r\n"[..], "crlf")] {
        for chunk in [1, 3, 100] {
            let mut bytes = line(40);
            bytes.extend_from_slice(terminator);
            bytes.extend_from_slice(&line(41));
            bytes.extend_from_slice(terminator);
            let events = decode_chunked(options, &bytes, chunk);
            assert!(
                matches!(events[0], DecodeEvent::Message { .. }),
                "{label} {chunk}: {events:?}"
            );
            assert_eq!(
                events[1..],
                [DecodeEvent::Oversized { len: 41 }],
                "{label} {chunk}"
            );
        }
    }
}

#[test]
fn a_large_frame_does_not_pin_its_buffer() {
    let options = FrameOptions::default();
    let mut decoder = LineDecoder::new(options);
    let big = serde_json::to_vec(&json!({"method": "m", "params": ["z".repeat(1 << 20)]})).unwrap();
    decode_all(&mut decoder, &big);
    assert!(decoder.buffered_capacity() >= big.len());
    let events = decode_all(&mut decoder, b"\n");
    assert!(matches!(events[..], [DecodeEvent::Message { .. }]));
    assert_eq!(decoder.buffered_capacity(), 0);
}

#[test]
fn dropped_line_excerpts_are_escaped_and_cut_to_eighty_characters() {
    let cases: [(&[u8], &str); 5] = [
        (b"plain", "plain"),
        (b"tab\there \"q\"", "tab\\there \\\"q\\\""),
        (b"\xc3\xa9t\xc3\xa9 \xff", "été \\xff"),
        (&[b'x'; 80], &"x".repeat(80)),
        (&[b'x'; 81], &format!("{}…", "x".repeat(79))),
    ];
    for (line, want) in cases {
        let got = crate::frame::excerpt(line);
        assert_eq!(got, want);
        assert!(got.chars().count() <= EXCERPT_CHARS);
    }
    let escapes = crate::frame::excerpt(&[0xff; 100]);
    assert_eq!(escapes, format!("{}…", "\\xff".repeat(19)));
}

#[test]
fn encoder_refuses_an_oversized_message_and_stays_usable() {
    let options = FrameOptions {
        max_frame_bytes: 64,
    };
    let mut out = b"kept".to_vec();
    let big = Message::Notification(Notification {
        method: "log".into(),
        params: raw_opt(Some(json!({"message": "m".repeat(100)}))),
    });
    let err = encode_line(&big, &options, &mut out).unwrap_err();
    assert!(
        matches!(err, Error::FrameTooLarge { limit: 64, .. }),
        "{err}"
    );
    assert_eq!(out, b"kept");
    let small = Message::Response(Response {
        id: Id::from(3),
        outcome: Ok(to_raw(&Value::Null).unwrap()),
    });
    encode_line(&small, &options, &mut out).unwrap();
    assert_eq!(out, b"kept{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":null}\n");
}

#[test]
fn messages_serialize_in_the_wire_shape() {
    let cases = [
        (
            Message::Request(Request {
                id: Id::from("a"),
                method: "initialize".into(),
                params: raw_opt(Some(json!({}))),
            }),
            r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{}}"#,
        ),
        (
            Message::Notification(Notification {
                method: "event/emit".into(),
                params: None,
            }),
            r#"{"jsonrpc":"2.0","method":"event/emit"}"#,
        ),
        (
            Message::Response(Response {
                id: Id::from_json("1.5").unwrap(),
                outcome: Err(ErrorObject {
                    code: codes::HOST_BUSY,
                    message: "busy".into(),
                    data: raw_opt(Some(json!([1]))),
                }),
            }),
            r#"{"jsonrpc":"2.0","id":1.5,"error":{"code":-32003,"message":"busy","data":[1]}}"#,
        ),
    ];
    for (message, want) in cases {
        assert_eq!(serde_json::to_string(&message).unwrap(), want);
    }
}

#[test]
fn error_codes_match_the_decisions() {
    assert_eq!(
        [
            codes::INVALID_REQUEST,
            codes::METHOD_NOT_FOUND,
            codes::INVALID_PARAMS,
            codes::COMMAND_FAILED,
            codes::UNKNOWN_COMMAND,
            codes::COMMAND_NOT_PUBLIC,
            codes::HOST_BUSY,
        ],
        [-32600, -32601, -32602, -32000, -32001, -32002, -32003]
    );
}

fn lsp(
    bytes: &[u8],
    options: ContentLengthOptions,
    chunk: usize,
) -> Result<Vec<ContentLengthEvent>, Error> {
    let mut decoder = ContentLengthDecoder::new(options);
    let mut events = Vec::new();
    for mut piece in bytes.chunks(chunk) {
        while let Some(event) = decoder.decode(&mut piece)? {
            events.push(event);
        }
        assert!(decoder.buffered_len() <= options.max_body_bytes.max(options.max_header_bytes));
    }
    Ok(events)
}

#[test]
fn content_length_headers_are_case_insensitive_and_other_headers_ignored() {
    let stream = b"content-LENGTH: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}Content-Length:  3 \n\n[1]";
    for chunk in [1, 5, stream.len()] {
        assert_eq!(
            lsp(stream, ContentLengthOptions::default(), chunk).unwrap(),
            vec![
                ContentLengthEvent::Body(b"{}".to_vec()),
                ContentLengthEvent::Body(b"[1]".to_vec())
            ]
        );
    }
}

#[test]
fn bad_content_length_headers_are_errors_that_persist() {
    let options = ContentLengthOptions {
        max_body_bytes: 1024,
        max_header_bytes: 64,
    };
    let cases: [(&[u8], HeaderError); 6] = [
        (
            b"Content-Type: x\r\n\r\n{}",
            HeaderError::MissingContentLength,
        ),
        (
            b"Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}",
            HeaderError::DuplicateContentLength,
        ),
        (
            b"Content-Length: two\r\n\r\n",
            HeaderError::InvalidContentLength {
                value: "two".into(),
            },
        ),
        (
            b"Content-Length: -2\r\n\r\n",
            HeaderError::InvalidContentLength { value: "-2".into() },
        ),
        (
            b"Content-Length: 99999999999999999999999\r\n\r\n",
            HeaderError::InvalidContentLength {
                value: "99999999999999999999999".into(),
            },
        ),
        (
            b"garbage\r\n\r\n",
            HeaderError::Malformed {
                line: "garbage".into(),
            },
        ),
    ];
    for (stream, want) in cases {
        let mut decoder = ContentLengthDecoder::new(options);
        let mut input = stream;
        let first = decoder.decode(&mut input).unwrap_err();
        assert!(
            matches!(&first, Error::ContentLengthHeader(e) if *e == want),
            "{first}"
        );
        let mut more: &[u8] = b"Content-Length: 2\r\n\r\n{}";
        assert!(
            decoder.decode(&mut more).is_err(),
            "a desynchronised stream stays failed"
        );
    }
    let endless = [b'a'; 100];
    let err = lsp(&endless, options, 7).unwrap_err();
    assert!(matches!(
        err,
        Error::ContentLengthHeader(HeaderError::TooLarge { limit: 64 })
    ));
}

#[test]
fn an_oversized_content_length_body_is_skipped_without_buffering() {
    let options = ContentLengthOptions {
        max_body_bytes: 4,
        max_header_bytes: 64,
    };
    let mut stream = b"Content-Length: 10\r\n\r\n0123456789".to_vec();
    encode_content_length(b"ok", &options, &mut stream).unwrap();
    assert_eq!(
        lsp(&stream, options, 3).unwrap(),
        vec![
            ContentLengthEvent::Oversized { len: 10 },
            ContentLengthEvent::Body(b"ok".to_vec())
        ]
    );
    let mut out = Vec::new();
    let err = encode_content_length(b"12345", &options, &mut out).unwrap_err();
    assert!(matches!(err, Error::FrameTooLarge { len: 5, limit: 4 }));
    assert!(out.is_empty());
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn structured() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        prop::collection::vec(json_value(), 0..3).prop_map(|v| Some(Value::Array(v))),
        prop::collection::btree_map(".{0,6}", json_value(), 0..3)
            .prop_map(|m| Some(Value::Object(m.into_iter().collect()))),
    ]
}

fn raw_opt(value: Option<Value>) -> Option<RawJson> {
    value.map(|v| to_raw(&v).unwrap())
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<u64>().prop_map(Id::from),
        any::<i64>().prop_map(|n| Id::from_json(&n.to_string()).unwrap()),
        ".{0,8}".prop_map(|s| Id::from(s.as_str())),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), ".{0,10}", structured()).prop_map(|(id, method, params)| Message::Request(
            Request {
                id,
                method,
                params: raw_opt(params)
            }
        )),
        (".{0,10}", structured()).prop_map(|(method, params)| Message::Notification(
            Notification {
                method,
                params: raw_opt(params)
            }
        )),
        (id(), json_value()).prop_map(|(id, v)| Message::Response(Response {
            id,
            outcome: Ok(to_raw(&v).unwrap())
        })),
        (
            id(),
            any::<i64>(),
            ".{0,10}",
            proptest::option::of(json_value())
        )
            .prop_map(|(id, code, message, data)| {
                let data = raw_opt(data.filter(|d| !d.is_null()));
                Message::Response(Response {
                    id,
                    outcome: Err(ErrorObject {
                        code,
                        message,
                        data,
                    }),
                })
            }),
    ]
}

proptest! {
    #[test]
    fn encoded_messages_decode_to_themselves(messages in prop::collection::vec(message(), 1..5), chunk in 1usize..40) {
        let options = FrameOptions::default();
        let mut stream = Vec::new();
        for m in &messages {
            encode_line(m, &options, &mut stream).unwrap();
        }
        let events = decode_chunked(options, &stream, chunk);
        let want: Vec<_> = messages.into_iter().map(|message| DecodeEvent::Message { message, jsonrpc_absent: false }).collect();
        prop_assert_eq!(events, want);
    }

    #[test]
    fn arbitrary_bytes_split_anywhere_never_overbuffer_and_decode_alike(
        bytes in prop::collection::vec(prop_oneof![4 => any::<u8>(), 1 => Just(b'\n'), 1 => Just(b'{')], 0..600),
        splits in prop::collection::vec(0usize..600, 0..8),
    ) {
        let options = FrameOptions { max_frame_bytes: 32 };
        let whole = decode_chunked(options, &bytes, bytes.len().max(1));
        let mut cuts: Vec<_> = splits.into_iter().map(|s| s.min(bytes.len())).collect();
        cuts.sort();
        let mut decoder = LineDecoder::new(options);
        let mut events = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            events.extend(decode_all(&mut decoder, &bytes[from..cut]));
            prop_assert!(decoder.buffered_capacity() <= options.max_frame_bytes + 1);
            from = cut;
        }
        prop_assert_eq!(events, whole);
    }

    #[test]
    fn content_length_bodies_round_trip_split_anywhere(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..5),
        chunk in 1usize..50,
    ) {
        let options = ContentLengthOptions::default();
        let mut stream = Vec::new();
        for body in &bodies {
            encode_content_length(body, &options, &mut stream).unwrap();
        }
        let want: Vec<_> = bodies.into_iter().map(ContentLengthEvent::Body).collect();
        prop_assert_eq!(lsp(&stream, options, chunk).unwrap(), want);
    }
}

/// Any JSON number text: sign, integer part of any length, fraction, exponent.
fn json_number_text() -> impl Strategy<Value = String> {
    "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,4})?"
}

/// Any JSON string text: each character written raw or as a `\u` escape, or a short escape.
fn json_string_text() -> impl Strategy<Value = String> {
    prop::collection::vec((any::<char>(), 0u8..3), 0..40).prop_map(|chars| {
        let mut text = String::from("\"");
        for (c, style) in chars {
            match (c, style) {
                ('"' | '\\', _) | ('\u{0}'..='\u{1f}', _) => {
                    text.push_str(&format!("\\u{:04x}", u32::from(c)));
                }
                (c, 0) if u32::from(c) <= 0xffff => {
                    text.push_str(&format!("\\u{:04X}", u32::from(c)));
                }
                ('n', 1) => text.push_str("\\n"),
                (c, _) => text.push(c),
            }
        }
        text.push('"');
        text
    })
}

proptest! {
    #[test]
    fn any_json_number_or_string_id_round_trips_byte_for_byte(
        id in prop_oneof![json_number_text(), json_string_text()],
    ) {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
        let mut decoder = LineDecoder::new(FrameOptions::default());
        let events = decode_all(&mut decoder, format!("{line}\n").as_bytes());
        let [DecodeEvent::Message { message: Message::Request(request), .. }] = &events[..] else {
            return Err(TestCaseError::fail(format!("not a request: {events:?}")));
        };
        prop_assert_eq!(request.id.as_json(), id.as_str());
        prop_assert_eq!(request.id.to_string(), id.clone());
        let answer = Message::Response(Response {
            id: request.id.clone(),
            outcome: Ok(to_raw(&Value::Null).unwrap()),
        });
        let mut out = Vec::new();
        encode_line(&answer, &FrameOptions::default(), &mut out).unwrap();
        let want = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":null}}\n");
        prop_assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}

#[test]
fn ids_that_are_not_numbers_or_strings_are_refused() {
    for id in ["true", "{}", "[1]"] {
        assert_eq!(Id::from_json(id), None, "{id}");
    }
    assert_eq!(Id::from_json("7").unwrap().as_u64(), Some(7));
    assert_eq!(Id::from_json("07"), None, "not JSON");
    for id in ["7.0", "-7", "1e2", "\"7\"", "18446744073709551616"] {
        assert_eq!(Id::from_json(id).unwrap().as_u64(), None, "{id}");
    }
}

#[test]
fn an_object_with_a_duplicated_member_is_invalid_not_junk() {
    assert_eq!(
        classify(r#"{"id":1,"id":2,"method":"m"}"#),
        Ok(Classified::Invalid(InvalidMessage {
            answer_to: None,
            violation: Violation::DuplicateMember,
        }))
    );
    assert_eq!(classify("[1,2]"), Err(DropReason::NotObject));
    assert_eq!(classify("{"), Err(DropReason::NotJson));
    // A null result is a result, not an absent one.
    let Ok(Classified::Message {
        message: Message::Response(r),
        ..
    }) = classify(r#"{"jsonrpc":"2.0","id":1,"result":null}"#)
    else {
        panic!("a null result must classify as a response");
    };
    assert_eq!(r.outcome.unwrap().get(), "null");
}

#[test]
fn the_tree_cost_estimate_charges_dense_documents_and_ignores_string_contents() {
    let zeros = format!("[0{}]", ",0".repeat(100_000));
    assert!(
        value_tree_cost(&zeros) >= 100_000 * 32,
        "a Value is 32 bytes"
    );
    let text = format!("{{\"s\":\"{}\"}}", ",[{:".repeat(10_000));
    assert!(
        value_tree_cost(&text) < text.len() + 10 * 80,
        "string contents are not values"
    );
    let escaped = r#"["a\"b,c", 1]"#;
    // The array and its two elements; the comma inside the string is not a separator.
    assert_eq!(value_tree_cost(escaped), 3 * 80 + escaped.len());
}

/// `From<&CommandDecl>` takes exactly what the handshake compares: the id and the schema.
#[cfg(feature = "manifest")]
#[test]
fn a_manifest_command_declaration_converts_into_a_declared_command() {
    let manifest = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "conv",
  "extensions": {
    "dev.codetwo": {
      "standardVersion": "1.2.0",
      "commands": [
        { "id": "conv.a", "title": "A", "argsSchema": { "type": "object" } },
        { "id": "conv.b", "title": "B", "description": "no schema" }
      ],
      "runtime": { "command": "node" }
    }
  }
}"#;
    let report = c2_manifest::validate_manifest(manifest, &c2_manifest::ManifestOptions::default());
    let manifest = report.manifest.expect("a valid manifest");
    let declared: Vec<DeclaredCommand> = manifest
        .codetwo
        .commands
        .iter()
        .map(DeclaredCommand::from)
        .collect();
    assert_eq!(
        declared,
        [
            DeclaredCommand {
                id: "conv.a".to_owned(),
                args_schema: Some(json!({"type": "object"})),
            },
            DeclaredCommand {
                id: "conv.b".to_owned(),
                args_schema: None,
            },
        ]
    );
}

/// The byte-at-a-time scan `value_tree_cost` replaced: the skipping scan must charge exactly
/// what it charged, whatever the text (valid JSON or not, strings cut short included).
fn value_tree_cost_by_bytes(json: &str) -> usize {
    let mut values = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in json.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b'[' | b'{' | b':' => values += 1,
            _ => {}
        }
    }
    values.saturating_mul(80).saturating_add(json.len())
}

#[test]
fn the_tree_cost_skips_strings_exactly_like_the_byte_scan() {
    let big = format!("{{\"text\":\"{}\"}}", "x".repeat(64 * 1024));
    for text in [
        "",
        "\"",
        "\"\\",
        "\"\\\"",
        r#""a\\",1"#,
        r#"["\\\"",[1,2],{"k":"v\"\\"}]"#,
        r#"{"é":"\u00e9,[","x":[1,{"y":"\\"}]}"#,
        "\"unterminated, [ { :",
        big.as_str(),
    ] {
        assert_eq!(
            value_tree_cost(text),
            value_tree_cost_by_bytes(text),
            "{text:.80}"
        );
    }
    assert_eq!(value_tree_cost(&big), 3 * 80 + big.len());
}

proptest! {
    #[test]
    fn the_tree_cost_matches_the_byte_scan_on_any_text(
        text in "[\"\\\\,:\\[\\]{}a é0]{0,64}",
    ) {
        prop_assert_eq!(value_tree_cost(&text), value_tree_cost_by_bytes(&text));
    }

    #[test]
    fn the_tree_cost_matches_the_byte_scan_on_any_json(value in json_value()) {
        let text = value.to_string();
        prop_assert_eq!(value_tree_cost(&text), value_tree_cost_by_bytes(&text));
    }
}

// The byte searches (scan.rs) against a plain search.
proptest! {
    #[test]
    fn scan_find_agrees_with_a_plain_search(hay in proptest::collection::vec(any::<u8>(), 0..200), needle: u8) {
        prop_assert_eq!(crate::scan::find(needle, &hay), hay.iter().position(|&b| b == needle));
    }

    #[test]
    fn scan_find_either_agrees_with_a_plain_search(
        hay in proptest::collection::vec(prop_oneof![Just(b'"'), Just(b'\\'), any::<u8>()], 0..200),
    ) {
        prop_assert_eq!(
            crate::scan::find_either(b'"', b'\\', &hay),
            hay.iter().position(|&b| b == b'"' || b == b'\\')
        );
    }
}

#[test]
fn scan_searches_long_haystacks_to_their_end() {
    let mut hay = vec![b'x'; 64 * 1024 + 7];
    assert_eq!(crate::scan::find(b'\n', &hay), None);
    *hay.last_mut().unwrap() = b'\n';
    assert_eq!(crate::scan::find(b'\n', &hay), Some(64 * 1024 + 6));
    hay[40_000] = b'\\';
    assert_eq!(crate::scan::find_either(b'"', b'\\', &hay), Some(40_000));
}

#[test]
fn host_event_names_are_the_hosts_own_and_its_namespaces() {
    for name in [
        "engine/event",
        "skills/changed",
        "scenes/changed",
        "engine/anything",
        "host/x",
        "plugins/changed",
        "kernel/stop",
    ] {
        assert!(crate::is_host_event(name), "{name}");
    }
    for name in [
        "connector/event",
        "skills/changed2",
        "myplugin/skills/changed",
        "engines/x",
        "hostile/echo",
        "",
    ] {
        assert!(!crate::is_host_event(name), "{name}");
    }
}

#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<(Direction, String)>>);

impl FrameObserver for Seen {
    fn frame(&self, direction: Direction, line: &[u8]) {
        let line = String::from_utf8_lossy(line);
        self.0.lock().unwrap().push((direction, line.into()));
    }
}

#[tokio::test]
async fn a_tap_shows_whole_frames_in_either_direction_and_changes_no_byte() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let seen = std::sync::Arc::new(Seen::default());
    let tap = FrameTap::new(seen.clone());
    let mut out = tap.host_output(Vec::new());
    for part in [&b"{\"a\":"[..], b"1}\r\n\n{\"b\"", b":2}\n"] {
        out.write_all(part).await.unwrap();
    }
    let mut read = tap.plugin_output(&b"{\"c\":3}\n{\"partial\""[..]);
    let mut bytes = Vec::new();
    read.read_to_end(&mut bytes).await.unwrap();
    assert_eq!(bytes, b"{\"c\":3}\n{\"partial\"");
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (Direction::HostToPlugin, "{\"a\":1}".to_owned()),
            (Direction::HostToPlugin, "{\"b\":2}".to_owned()),
            (Direction::PluginToHost, "{\"c\":3}".to_owned()),
        ]
    );
}
