//! Content-Length framing for language-server traffic: a sans-IO decoder and an encoder.

use crate::error::{Error, HeaderError};
use crate::frame::excerpt;

/// Limits of the Content-Length framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentLengthOptions {
    /// The largest body in bytes (default 8 MiB, the same bound as a newline frame).
    pub max_body_bytes: usize,
    /// The largest header section in bytes, up to and including its blank line (default 8 KiB).
    pub max_header_bytes: usize,
}

impl Default for ContentLengthOptions {
    fn default() -> Self {
        ContentLengthOptions {
            max_body_bytes: 8 * 1024 * 1024,
            max_header_bytes: 8 * 1024,
        }
    }
}

/// One thing the decoder found in the byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentLengthEvent {
    /// A complete body, exactly `Content-Length` bytes.
    Body(Vec<u8>),
    /// A body over the limit; its bytes were discarded as they arrived and decoding goes on.
    Oversized {
        /// The announced `Content-Length`.
        len: u64,
    },
}

#[derive(Debug)]
enum State {
    Header,
    Body { len: usize },
    Skipping { len: u64, remaining: u64 },
    Failed(HeaderError),
}

/// Splits a byte stream into Content-Length framed bodies.
///
/// Header names are case-insensitive; every header but `Content-Length` (such as
/// `Content-Type`) is ignored. Header lines end in `\r\n`; a bare `\n` is accepted too. A header
/// error desynchronises the stream for good, so the decoder then keeps returning that error.
#[derive(Debug)]
pub struct ContentLengthDecoder {
    options: ContentLengthOptions,
    state: State,
    buf: Vec<u8>,
}

impl ContentLengthDecoder {
    /// A decoder with these limits.
    pub fn new(options: ContentLengthOptions) -> Self {
        ContentLengthDecoder {
            options,
            state: State::Header,
            buf: Vec::new(),
        }
    }

    /// The bytes currently held for a partial header or body.
    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }

    /// The declared length of a body over the limit whose bytes are being discarded, from the
    /// moment its header is read (before [`ContentLengthEvent::Oversized`], which comes only
    /// once the last of its bytes has). A consumer that ends the stream on an oversized body
    /// asks this after each [`decode`](Self::decode), so a sender that declares a huge body
    /// and then goes silent cannot keep it waiting.
    pub fn oversized_body(&self) -> Option<u64> {
        match self.state {
            State::Skipping { len, .. } => Some(len),
            _ => None,
        }
    }

    /// Consumes bytes from the front of `input` until one event is complete, and returns it.
    /// Returns `Ok(None)` once `input` is empty and no event is complete.
    pub fn decode(&mut self, input: &mut &[u8]) -> Result<Option<ContentLengthEvent>, Error> {
        loop {
            match &mut self.state {
                State::Failed(e) => return Err(Error::ContentLengthHeader(e.clone())),
                State::Header => {
                    let Some(len) = self.take_header(input) else {
                        return Ok(None);
                    };
                    match len {
                        Err(e) => {
                            self.buf = Vec::new();
                            self.state = State::Failed(e.clone());
                            return Err(Error::ContentLengthHeader(e));
                        }
                        Ok(len) if len > self.options.max_body_bytes as u64 => {
                            self.state = State::Skipping {
                                len,
                                remaining: len,
                            };
                        }
                        Ok(len) => {
                            // Bounded by the limit just checked.
                            let len = len as usize;
                            self.buf.reserve_exact(len);
                            self.state = State::Body { len };
                        }
                    }
                }
                State::Body { len } => {
                    let want = *len - self.buf.len();
                    let take = want.min(input.len());
                    self.buf.extend_from_slice(&input[..take]);
                    *input = &input[take..];
                    if self.buf.len() < *len {
                        return Ok(None);
                    }
                    self.state = State::Header;
                    return Ok(Some(ContentLengthEvent::Body(std::mem::take(
                        &mut self.buf,
                    ))));
                }
                State::Skipping { len, remaining } => {
                    let take = (*remaining).min(input.len() as u64);
                    *input = &input[take as usize..];
                    *remaining -= take;
                    if *remaining > 0 {
                        return Ok(None);
                    }
                    let len = *len;
                    self.state = State::Header;
                    return Ok(Some(ContentLengthEvent::Oversized { len }));
                }
            }
        }
    }

    /// Buffers header bytes; once the blank line arrives, parses the section.
    fn take_header(&mut self, input: &mut &[u8]) -> Option<Result<u64, HeaderError>> {
        while let Some((&byte, rest)) = input.split_first() {
            *input = rest;
            self.buf.push(byte);
            if self.buf.len() > self.options.max_header_bytes {
                return Some(Err(HeaderError::TooLarge {
                    limit: self.options.max_header_bytes,
                }));
            }
            if byte == b'\n' && (self.buf.ends_with(b"\n\n") || self.buf.ends_with(b"\n\r\n")) {
                let header = std::mem::take(&mut self.buf);
                return Some(parse_header(&header));
            }
        }
        None
    }
}

fn parse_header(header: &[u8]) -> Result<u64, HeaderError> {
    let mut length = None;
    for line in header.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(HeaderError::Malformed {
                line: excerpt(line),
            });
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if !name.eq_ignore_ascii_case(b"content-length") {
            continue;
        }
        if length.is_some() {
            return Err(HeaderError::DuplicateContentLength);
        }
        let value = value.trim_ascii();
        let parsed = std::str::from_utf8(value)
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok());
        match parsed {
            Some(n) => length = Some(n),
            None => {
                return Err(HeaderError::InvalidContentLength {
                    value: excerpt(value),
                });
            }
        }
    }
    length.ok_or(HeaderError::MissingContentLength)
}

/// Appends `body` to `out` with its `Content-Length` header; a body over the limit is refused and
/// `out` is left as it was.
pub fn encode_content_length(
    body: &[u8],
    options: &ContentLengthOptions,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if body.len() > options.max_body_bytes {
        return Err(Error::FrameTooLarge {
            len: body.len(),
            limit: options.max_body_bytes,
        });
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    Ok(())
}
