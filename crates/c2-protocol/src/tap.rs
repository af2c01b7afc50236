//! A frame tap: stream wrappers that show every frame crossing a connection (newline framing,
//! or Content-Length framing for a language server's) to an observer, without changing a byte
//! of it. The peer reads and writes through them as
//! through the bare streams; recording (to a file, bounded) is the observer's business.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::{ContentLengthDecoder, ContentLengthEvent, ContentLengthOptions};

/// Which side sent a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Direction {
    /// The host wrote it to the plugin's stdin.
    HostToPlugin,
    /// The plugin wrote it to its stdout.
    PluginToHost,
}

impl Direction {
    /// `host->plugin` or `plugin->host`, as recordings name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HostToPlugin => "host->plugin",
            Direction::PluginToHost => "plugin->host",
        }
    }

    /// The direction named by [`Direction::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "host->plugin" => Some(Direction::HostToPlugin),
            "plugin->host" => Some(Direction::PluginToHost),
            _ => None,
        }
    }
}

/// Sees each frame as it crosses the tap. Called on the connection's IO path: it must return
/// at once (hand the bytes to a queue, never wait on a file or a lock held elsewhere).
pub trait FrameObserver: Send + Sync + 'static {
    /// One whole frame without its line terminator.
    fn frame(&self, direction: Direction, line: &[u8]);
    /// A line longer than the tap's limit went by; its bytes are not shown.
    fn oversized(&self, direction: Direction) {
        let _ = direction;
    }
}

/// A shareable observer: cheap to clone into each connection's stream wrappers.
#[derive(Clone)]
pub struct FrameTap {
    observer: Arc<dyn FrameObserver>,
    max_frame_bytes: usize,
}

impl fmt::Debug for FrameTap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameTap")
            .field("max_frame_bytes", &self.max_frame_bytes)
            .finish_non_exhaustive()
    }
}

impl FrameTap {
    /// A tap showing frames of up to 8 MiB (the protocol's frame limit) to `observer`.
    pub fn new(observer: Arc<dyn FrameObserver>) -> Self {
        Self {
            observer,
            max_frame_bytes: crate::FrameOptions::default().max_frame_bytes,
        }
    }

    /// Wraps the stream the plugin writes (its stdout, read by the host).
    pub fn plugin_output<R>(&self, inner: R) -> TapRead<R> {
        TapRead {
            inner,
            lines: Some(self.splitter(Direction::PluginToHost)),
        }
    }

    /// Wraps the stream the host writes (the plugin's stdin).
    pub fn host_output<W>(&self, inner: W) -> TapWrite<W> {
        TapWrite {
            inner,
            lines: Some(self.splitter(Direction::HostToPlugin)),
        }
    }

    /// Wraps a stream read in `direction` (for a tap on the plugin's side of a connection).
    pub fn reader<R>(&self, inner: R, direction: Direction) -> TapRead<R> {
        TapRead {
            inner,
            lines: Some(self.splitter(direction)),
        }
    }

    /// Wraps a stream written in `direction`.
    pub fn writer<W>(&self, inner: W, direction: Direction) -> TapWrite<W> {
        TapWrite {
            inner,
            lines: Some(self.splitter(direction)),
        }
    }

    fn splitter(&self, direction: Direction) -> Splitter {
        Splitter {
            tap: self.clone(),
            direction,
            partial: Vec::new(),
            skipping: false,
            bodies: None,
        }
    }

    fn body_splitter(&self, direction: Direction) -> Splitter {
        Splitter {
            bodies: Some(Some(ContentLengthDecoder::new(ContentLengthOptions {
                max_body_bytes: self.max_frame_bytes,
                ..ContentLengthOptions::default()
            }))),
            ..self.splitter(direction)
        }
    }
}

/// A language-server bridge's editor streams (what the editor sends, what it receives) behind
/// `tap` with Content-Length framing: the editor is the host's side, the server the plugin's.
/// Passed through untouched when there is no tap.
pub fn tap_editor_streams<R, W>(
    tap: Option<&FrameTap>,
    editor_in: R,
    editor_out: W,
) -> (TapRead<R>, TapWrite<W>) {
    (
        TapRead {
            inner: editor_in,
            lines: tap.map(|tap| tap.body_splitter(Direction::HostToPlugin)),
        },
        TapWrite {
            inner: editor_out,
            lines: tap.map(|tap| tap.body_splitter(Direction::PluginToHost)),
        },
    )
}

/// A plugin connection's streams (its stdout, its stdin) behind `tap`, or passed through
/// untouched when there is none.
pub fn tap_plugin_streams<R, W>(
    tap: Option<&FrameTap>,
    stdout: R,
    stdin: W,
) -> (TapRead<R>, TapWrite<W>) {
    match tap {
        Some(tap) => (tap.plugin_output(stdout), tap.host_output(stdin)),
        None => (
            TapRead {
                inner: stdout,
                lines: None,
            },
            TapWrite {
                inner: stdin,
                lines: None,
            },
        ),
    }
}

/// Cuts the bytes going by into lines, holding at most one frame's worth.
struct Splitter {
    tap: FrameTap,
    direction: Direction,
    partial: Vec<u8>,
    /// Inside a line that went over the limit: dropped up to its newline.
    skipping: bool,
    /// Content-Length framing instead of lines; `Some(None)` once a broken header ended it.
    bodies: Option<Option<ContentLengthDecoder>>,
}

impl Splitter {
    fn feed(&mut self, bytes: &[u8]) {
        match &mut self.bodies {
            None => self.feed_lines(bytes),
            Some(decoder) => {
                let mut input = bytes;
                while let Some(active) = decoder {
                    match active.decode(&mut input) {
                        Ok(Some(ContentLengthEvent::Body(body))) => {
                            self.tap.observer.frame(self.direction, &body);
                        }
                        Ok(Some(_)) => self.tap.observer.oversized(self.direction),
                        Ok(None) => break,
                        // The stream is out of step for good: stop showing it.
                        Err(_) => *decoder = None,
                    }
                }
            }
        }
    }

    fn feed_lines(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (chunk, end) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (&bytes[..at], true),
                None => (bytes, false),
            };
            bytes = &bytes[chunk.len() + usize::from(end)..];
            if !self.skipping {
                if self.partial.len() + chunk.len() > self.tap.max_frame_bytes {
                    self.partial.clear();
                    self.skipping = true;
                    self.tap.observer.oversized(self.direction);
                } else {
                    self.partial.extend_from_slice(chunk);
                }
            }
            if end {
                if !self.skipping {
                    let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
                    if !line.iter().all(u8::is_ascii_whitespace) {
                        self.tap.observer.frame(self.direction, line);
                    }
                }
                self.partial.clear();
                self.skipping = false;
            }
        }
    }
}

/// A reader that shows each line it reads to a [`FrameTap`].
pub struct TapRead<R> {
    inner: R,
    lines: Option<Splitter>,
}

impl<R> fmt::Debug for TapRead<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TapRead").finish_non_exhaustive()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for TapRead<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(lines)) = (&poll, &mut this.lines) {
            lines.feed(&buf.filled()[before..]);
        }
        poll
    }
}

/// A writer that shows each line written through it to a [`FrameTap`].
pub struct TapWrite<W> {
    inner: W,
    lines: Option<Splitter>,
}

impl<W> fmt::Debug for TapWrite<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TapWrite").finish_non_exhaustive()
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for TapWrite<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(written)), Some(lines)) = (&poll, &mut this.lines) {
            lines.feed(&buf[..*written]);
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
