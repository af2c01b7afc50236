//! What the fuzz targets share: turning the fuzzer's bytes into limits and chunkings, and the
//! invariants every c2-manifest report must hold whatever the input. It holds no target of its
//! own and nothing outside `fuzz/` depends on it.

use c2_manifest::{CODES, Diagnostic, Severity, render_diagnostics};

/// Splits `bytes` into consecutive chunks of 1 to `max_len` bytes, their lengths drawn from a
/// small generator seeded with `seed`, so the fuzzer steers the split points by mutating one byte.
pub fn chunks(bytes: &[u8], seed: u8, max_len: usize) -> Chunks<'_> {
    Chunks {
        rest: bytes,
        // xorshift never leaves zero, so the seed is offset into a nonzero state.
        state: u32::from(seed).wrapping_mul(2_654_435_761) | 1,
        max_len: max_len.max(1),
    }
}

/// The iterator returned by [`chunks`].
#[derive(Debug)]
pub struct Chunks<'a> {
    rest: &'a [u8],
    state: u32,
    max_len: usize,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        let len = (self.state as usize % self.max_len + 1).min(self.rest.len());
        let (chunk, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(chunk)
    }
}

/// Asserts what holds for the diagnostics of any document: every code is a documented one, every
/// message says something, every position lies inside `source`, and rendering never panics.
pub fn check_diagnostics(file: &str, source: &str, diagnostics: &[Diagnostic]) {
    let lines: Vec<&str> = source.split('\n').collect();
    for d in diagnostics {
        assert!(
            CODES.iter().any(|(code, _)| *code == d.code),
            "undocumented code {:?}",
            d.code
        );
        assert!(!d.message.is_empty(), "empty message for {:?}", d.code);
        assert!(
            d.pointer.is_empty() || d.pointer.starts_with('/'),
            "not a JSON pointer: {:?}",
            d.pointer
        );
        let line = d.line as usize;
        assert!(
            (1..=lines.len()).contains(&line),
            "line {line} outside 1..={} for {:?}",
            lines.len(),
            d.code
        );
        let width = lines[line - 1].chars().count();
        assert!(
            (1..=width + 1).contains(&(d.column as usize)),
            "column {} outside 1..={} on line {line} for {:?}",
            d.column,
            width + 1,
            d.code
        );
    }
    let plain = render_diagnostics(file, source, diagnostics, false);
    let coloured = render_diagnostics(file, source, diagnostics, true);
    assert_eq!(plain.is_empty(), diagnostics.is_empty());
    assert!(coloured.len() >= plain.len());
}

/// Whether any diagnostic is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}
