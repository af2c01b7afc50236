//! Content-Length bodies read from a byte stream, one at a time: the one read-and-decode loop
//! both language-server bridges pump through (the plain one and the supervised one).

use c2_protocol::{ContentLengthDecoder, ContentLengthEvent};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::lsp::{PumpError, READ_CHUNK};

/// What [`Bodies::next`] found.
#[derive(Debug)]
pub(super) enum Next {
    /// One complete body.
    Body(Vec<u8>),
    /// Every body of the last read was handed out: a writer flushes here.
    Drained,
    /// A body over the limit, of this announced length: the session ends. Reported as soon as
    /// its header is read, not after its bytes (a sender may never send them).
    Oversized(u64),
    /// The end of the input.
    End,
}

/// A stream read in chunks of [`READ_CHUNK`] bytes and decoded into bodies.
#[derive(Debug)]
pub(super) struct Bodies<R> {
    from: R,
    decoder: ContentLengthDecoder,
    chunk: Vec<u8>,
    /// The part of `chunk` not decoded yet.
    start: usize,
    end: usize,
    /// Whether the last read's bodies were all handed out (and [`Next::Drained`] said so).
    drained: bool,
}

impl<R: AsyncRead + Unpin> Bodies<R> {
    /// Bodies of `from`, decoded by `decoder` (which may have read part of the stream before).
    pub(super) fn new(from: R, decoder: ContentLengthDecoder) -> Self {
        Self {
            from,
            decoder,
            chunk: vec![0u8; READ_CHUNK],
            start: 0,
            end: 0,
            drained: true,
        }
    }

    /// The next body, the end of a read's bodies, a body over the limit or the end of input.
    pub(super) async fn next(&mut self) -> Result<Next, PumpError> {
        loop {
            if !self.drained {
                let mut input = &self.chunk[self.start..self.end];
                let event = self
                    .decoder
                    .decode(&mut input)
                    .map_err(|e| PumpError::Failed(e.to_string()))?;
                self.start = self.end - input.len();
                match event {
                    Some(ContentLengthEvent::Body(body)) => return Ok(Next::Body(body)),
                    Some(ContentLengthEvent::Oversized { len }) => return Ok(Next::Oversized(len)),
                    None => {
                        if let Some(len) = self.decoder.oversized_body() {
                            return Ok(Next::Oversized(len));
                        }
                        self.drained = true;
                        return Ok(Next::Drained);
                    }
                }
            }
            let read = self
                .from
                .read(&mut self.chunk)
                .await
                .map_err(|e| PumpError::Failed(format!("cannot read: {e}")))?;
            if read == 0 {
                return Ok(Next::End);
            }
            (self.start, self.end, self.drained) = (0, read, false);
        }
    }
}
