//! Newline framing: a sans-IO decoder with a hard frame limit, and the matching encoder.

use std::fmt;

use serde::Serialize;

use crate::error::Error;
use crate::message::{Classified, InvalidMessage, Message, classify};

/// Limits of the newline framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameOptions {
    /// The largest frame in bytes, without its line terminator (default 8 MiB).
    pub max_frame_bytes: usize,
}

impl Default for FrameOptions {
    fn default() -> Self {
        FrameOptions {
            max_frame_bytes: 8 * 1024 * 1024,
        }
    }
}

/// One thing the decoder found in the byte stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DecodeEvent {
    /// A line holding a valid JSON-RPC message.
    Message {
        /// The message.
        message: Message,
        /// `jsonrpc` was absent (tolerated; worth one warning per connection).
        jsonrpc_absent: bool,
    },
    /// A line holding a JSON object that is not a valid message.
    Invalid(InvalidMessage),
    /// A line that is not a JSON object; decoding goes on with the next line.
    Dropped(DroppedLine),
    /// A line longer than the frame limit, reported as soon as the limit is crossed (a peer
    /// that never sends the newline must not keep the other side waiting); its bytes are
    /// discarded as they arrive, up to and including its `\n`, without a second event.
    Oversized {
        /// A lower bound of the line's length: the frame limit plus one. The decoder reports the
        /// line when it crosses the limit, before its end is known, and the same value whatever
        /// the bytes' chunking.
        len: u64,
    },
}

/// A line the decoder skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedLine {
    /// Why it was skipped.
    pub reason: DropReason,
    /// Its length in bytes, without its terminator.
    pub len: usize,
    /// Its start, escaped, at most [`EXCERPT_CHARS`] characters.
    pub excerpt: String,
}

/// The longest excerpt a [`DroppedLine`] carries, in characters.
pub const EXCERPT_CHARS: usize = 80;

/// Why a line was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// Empty or only whitespace.
    Blank,
    /// Not valid UTF-8.
    NotUtf8,
    /// Valid UTF-8 but not JSON.
    NotJson,
    /// JSON, but not an object.
    NotObject,
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::Blank => "blank line",
            DropReason::NotUtf8 => "invalid UTF-8",
            DropReason::NotJson => "not JSON",
            DropReason::NotObject => "not a JSON object",
        })
    }
}

/// Splits a byte stream into newline-terminated frames, never holding more than the frame limit.
///
/// A line ends at `\n`; one `\r` right before it is part of the terminator, so `\r\n` streams
/// decode like `\n` streams. The limit counts the line without its terminator. Bytes of a line
/// past the limit are discarded as they arrive, and the line is reported as
/// [`DecodeEvent::Oversized`] the moment it crosses the limit (not when its `\n` comes, which may
/// be never). A line still open when the stream ends is not a frame: the caller simply stops
/// feeding.
#[derive(Debug)]
pub struct LineDecoder {
    options: FrameOptions,
    buf: Vec<u8>,
    /// True while discarding the rest of an oversized line that was already reported.
    discarding: bool,
}

/// A buffer larger than this is given back to the allocator once its frame is decoded, so a
/// single big frame does not pin megabytes for the life of a connection.
const RETAINED_CAPACITY: usize = 64 * 1024;

impl LineDecoder {
    /// A decoder with these limits.
    pub fn new(options: FrameOptions) -> Self {
        LineDecoder {
            options,
            buf: Vec::new(),
            discarding: false,
        }
    }

    /// The bytes currently allocated for a partial line; never more than the frame limit plus 1.
    pub fn buffered_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Consumes bytes from the front of `input` until one event is complete, and returns it.
    /// Returns `None` once `input` is empty and no event is complete; call again with more bytes.
    pub fn decode(&mut self, input: &mut &[u8]) -> Option<DecodeEvent> {
        // The partial line may hold a trailing `\r` beyond the limit, hence the `+ 1`.
        let hold = self.options.max_frame_bytes.saturating_add(1);
        while !input.is_empty() {
            let newline = crate::scan::find(b'\n', input);
            let chunk_len = newline.unwrap_or(input.len());
            let (chunk, rest) = input.split_at(chunk_len);
            *input = match newline {
                Some(_) => &rest[1..],
                None => rest,
            };
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                continue;
            }
            if newline.is_some() && self.buf.is_empty() {
                // The whole line is in the caller's bytes: no copy.
                return Some(self.finish(chunk));
            }
            let len = self.buf.len() + chunk_len;
            if len > hold {
                self.release();
                self.discarding = newline.is_none();
                return Some(self.oversized());
            }
            self.grow_to(len, hold);
            self.buf.extend_from_slice(chunk);
            if newline.is_some() {
                let line = std::mem::take(&mut self.buf);
                let event = self.finish(&line);
                self.buf = line;
                self.buf.clear();
                if self.buf.capacity() > RETAINED_CAPACITY {
                    self.release();
                }
                return Some(event);
            }
        }
        None
    }

    /// Grows the buffer without ever exceeding `hold`, so the limit bounds capacity, not just length.
    fn grow_to(&mut self, len: usize, hold: usize) {
        let cap = self.buf.capacity();
        if len <= cap {
            return;
        }
        // Past the retained size, reserve the whole limit at once: untouched capacity costs no
        // resident memory, while growing by doubling would copy the line (and hold both
        // copies) at every step.
        let target = if len > RETAINED_CAPACITY {
            hold
        } else {
            len.max(cap.saturating_mul(2)).max(256).min(hold)
        };
        self.buf.reserve_exact(target - self.buf.len());
    }

    fn release(&mut self) {
        self.buf = Vec::new();
    }

    fn finish(&self, raw: &[u8]) -> DecodeEvent {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.len() > self.options.max_frame_bytes {
            return self.oversized();
        }
        parse_line(line)
    }

    fn oversized(&self) -> DecodeEvent {
        DecodeEvent::Oversized {
            len: self.options.max_frame_bytes as u64 + 1,
        }
    }
}

fn parse_line(line: &[u8]) -> DecodeEvent {
    let dropped = |reason| {
        DecodeEvent::Dropped(DroppedLine {
            reason,
            len: line.len(),
            excerpt: excerpt(line),
        })
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return dropped(DropReason::Blank);
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return dropped(DropReason::NotUtf8);
    };
    match classify(text) {
        Ok(Classified::Message {
            message,
            jsonrpc_absent,
        }) => DecodeEvent::Message {
            message,
            jsonrpc_absent,
        },
        Ok(Classified::Invalid(invalid)) => DecodeEvent::Invalid(invalid),
        Err(reason) => dropped(reason),
    }
}

/// The start of `line`, escaped so control characters and invalid bytes are visible, at most
/// [`EXCERPT_CHARS`] characters, ending in `…` when cut.
pub(crate) fn excerpt(line: &[u8]) -> String {
    // Every byte yields at least one output character, so this many bytes always suffice.
    let head = &line[..line.len().min(EXCERPT_CHARS * 4)];
    let mut pieces: Vec<String> = Vec::new();
    for chunk in head.utf8_chunks() {
        pieces.extend(chunk.valid().chars().map(|c| c.escape_debug().to_string()));
        pieces.extend(chunk.invalid().iter().map(|b| format!("\\x{b:02x}")));
    }
    let mut out = String::new();
    let mut used = 0;
    for (i, piece) in pieces.iter().enumerate() {
        let n = piece.chars().count();
        let last = i + 1 == pieces.len() && head.len() == line.len();
        let room = if last {
            EXCERPT_CHARS
        } else {
            EXCERPT_CHARS - 1
        };
        if used + n > room {
            out.push('…');
            return out;
        }
        out.push_str(piece);
        used += n;
    }
    if head.len() < line.len() {
        out.push('…');
    }
    out
}

/// Appends `message` to `out` as one compact JSON line ending in `\n`.
///
/// A message over the frame limit is refused and `out` is left as it was, so the connection
/// stays usable.
pub fn encode_line(
    message: &impl Serialize,
    options: &FrameOptions,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let start = out.len();
    if let Err(e) = serde_json::to_writer(&mut *out, message) {
        out.truncate(start);
        return Err(Error::Serialize(e));
    }
    let len = out.len() - start;
    if len > options.max_frame_bytes {
        out.truncate(start);
        return Err(Error::FrameTooLarge {
            len,
            limit: options.max_frame_bytes,
        });
    }
    out.push(b'\n');
    Ok(())
}
