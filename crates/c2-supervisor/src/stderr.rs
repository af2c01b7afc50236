use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// The last stderr lines of a child, for error messages.
#[derive(Debug)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    keep: usize,
}

impl StderrTail {
    pub(crate) fn new(keep: usize) -> Self {
        Self {
            lines: Mutex::new(VecDeque::with_capacity(keep.min(64))),
            keep,
        }
    }

    fn push(&self, line: String) {
        if self.keep == 0 {
            return;
        }
        let mut lines = c2_lock::lock(&self.lines);
        if lines.len() == self.keep {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub(crate) fn snapshot(&self) -> Vec<String> {
        c2_lock::lock(&self.lines).iter().cloned().collect()
    }
}

/// Splits a byte stream into lines of at most `max` bytes; memory stays bounded by `max` however
/// long a line is, because the excess is counted, never stored.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    max: usize,
    current: Vec<u8>,
    cut: usize,
}

impl LineSplitter {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            current: Vec::new(),
            cut: 0,
        }
    }

    pub(crate) fn push(&mut self, mut chunk: &[u8], emit: &mut impl FnMut(String)) {
        while !chunk.is_empty() {
            let (part, rest, ended) = match chunk.iter().position(|&byte| byte == b'\n') {
                Some(at) => (&chunk[..at], &chunk[at + 1..], true),
                None => (chunk, &[][..], false),
            };
            let room = self.max.saturating_sub(self.current.len());
            let kept = part.len().min(room);
            self.current.extend_from_slice(&part[..kept]);
            self.cut += part.len() - kept;
            if ended {
                emit(self.take());
            }
            chunk = rest;
        }
    }

    /// The unterminated last line, if any.
    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(String)) {
        if !self.current.is_empty() || self.cut > 0 {
            emit(self.take());
        }
    }

    fn take(&mut self) -> String {
        if self.current.last() == Some(&b'\r') {
            self.current.pop();
        }
        let mut line = String::from_utf8_lossy(&self.current).into_owned();
        if self.cut > 0 {
            line.push_str(&format!(
                " [… {} more bytes cut: line longer than {} bytes]",
                self.cut, self.max
            ));
        }
        self.current.clear();
        self.cut = 0;
        line
    }
}

/// Reads the child's stderr to its end, so a chatty child never blocks on a full pipe.
pub(crate) async fn drain(
    mut stderr: ChildStderr,
    label: String,
    line_max: usize,
    tail: std::sync::Arc<StderrTail>,
) {
    let mut splitter = LineSplitter::new(line_max);
    let mut emit = |line: String| {
        tracing::info!(target: "c2_supervisor::stderr", owner = %label, "{line}");
        tail.push(line);
    };
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) => break,
            Ok(n) => splitter.push(&buffer[..n], &mut emit),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!(owner = %label, %error, "stopped reading the child's stderr");
                break;
            }
        }
    }
    splitter.finish(&mut emit);
}
