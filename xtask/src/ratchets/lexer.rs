//! Just enough of Rust's lexical grammar to tell code from comments and string literals.
//!
//! The ratchets look for paths in code and for words in string literals; a comment or a doc
//! comment must count as neither. This is not a parser: it knows line and block comments
//! (nested), string literals with escapes, raw strings (`r"..."`, `r#"..."#`, byte forms alike),
//! and tells a char literal (`'x'`, `'\n'`) from a lifetime (`'a`).

/// A source file split into code and string literals.
#[derive(Debug)]
pub(crate) struct Lexed {
    /// The source with every comment and string literal blanked to spaces (newlines kept), so
    /// byte offsets and line numbers match the original.
    pub(crate) code: String,
    /// Each string literal's text (between its quotes, escapes left as written) and the byte
    /// offset of its opening quote.
    pub(crate) literals: Vec<(usize, String)>,
}

pub(crate) fn lex(source: &str) -> Lexed {
    let chars: Vec<(usize, char)> = source.char_indices().collect();
    let mut code = String::with_capacity(source.len());
    let mut literals = Vec::new();
    let mut i = 0;
    // Appends `chars[from..to]` blanked: spaces, newlines kept, same byte length.
    let blank = |code: &mut String, from: usize, to: usize| {
        for &(_, c) in &chars[from..to] {
            if c == '\n' {
                code.push('\n');
            } else {
                code.extend(std::iter::repeat_n(' ', c.len_utf8()));
            }
        }
    };
    let at = |k: usize| chars.get(k).map(|&(_, c)| c);
    let offset = |k: usize| chars.get(k).map_or(source.len(), |&(o, _)| o);
    while i < chars.len() {
        let c = chars[i].1;
        let previous_is_ident = i > 0 && is_ident(chars[i - 1].1);
        if c == '/' && at(i + 1) == Some('/') {
            let end = (i..chars.len())
                .find(|&k| chars[k].1 == '\n')
                .unwrap_or(chars.len());
            blank(&mut code, i, end);
            i = end;
        } else if c == '/' && at(i + 1) == Some('*') {
            let mut depth = 0usize;
            let mut k = i;
            while k < chars.len() {
                if chars[k].1 == '/' && at(k + 1) == Some('*') {
                    depth += 1;
                    k += 2;
                } else if chars[k].1 == '*' && at(k + 1) == Some('/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            let end = k.min(chars.len());
            blank(&mut code, i, end);
            i = end;
        } else if let Some((hashes, open)) = raw_string_start(&chars, i, previous_is_ident) {
            // `open` is the index of the opening quote.
            let mut k = open + 1;
            let end = loop {
                if k >= chars.len() {
                    break chars.len();
                }
                if chars[k].1 == '"' && (1..=hashes).all(|h| at(k + h) == Some('#')) {
                    break k;
                }
                k += 1;
            };
            literals.push((
                offset(open),
                source[offset(open + 1)..offset(end)].to_owned(),
            ));
            let stop = (end + 1 + hashes).min(chars.len());
            blank(&mut code, i, stop);
            i = stop;
        } else if c == '"' {
            let mut k = i + 1;
            while k < chars.len() && chars[k].1 != '"' {
                k += if chars[k].1 == '\\' { 2 } else { 1 };
            }
            let end = k.min(chars.len());
            literals.push((offset(i), source[offset(i + 1)..offset(end)].to_owned()));
            let stop = (end + 1).min(chars.len());
            blank(&mut code, i, stop);
            i = stop;
        } else if c == '\'' {
            // A char literal is `'\...'` or one char between quotes; anything else is a
            // lifetime or a label, which stays code.
            let end = if at(i + 1) == Some('\\') {
                (i + 2..chars.len()).find(|&k| chars[k].1 == '\'')
            } else if at(i + 2) == Some('\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut code, i, end + 1);
                    i = end + 1;
                }
                None => {
                    code.push(c);
                    i += 1;
                }
            }
        } else {
            code.push(c);
            i += 1;
        }
    }
    Lexed { code, literals }
}

/// At `r"`, `r#"`, `br#"` (not inside an identifier): the number of `#` and the quote's index.
fn raw_string_start(
    chars: &[(usize, char)],
    i: usize,
    previous_is_ident: bool,
) -> Option<(usize, usize)> {
    if previous_is_ident {
        return None;
    }
    let mut k = i;
    if chars.get(k).map(|&(_, c)| c) == Some('b') {
        k += 1;
    }
    if chars.get(k).map(|&(_, c)| c) != Some('r') {
        return None;
    }
    k += 1;
    let mut hashes = 0;
    while chars.get(k).map(|&(_, c)| c) == Some('#') {
        hashes += 1;
        k += 1;
    }
    (chars.get(k).map(|&(_, c)| c) == Some('"')).then_some((hashes, k))
}

pub(crate) fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The 1-based line of a byte offset.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Byte ranges of the brace-delimited bodies that follow each match of `starts` in `code`
/// (comment- and string-free code from [`lex`]): the span from the match to its closing brace.
pub(crate) fn bodies_after(code: &str, starts: impl Iterator<Item = usize>) -> Vec<(usize, usize)> {
    let bytes = code.as_bytes();
    let mut spans = Vec::new();
    for start in starts {
        let Some(open) = code[start..].find(['{', ';']).map(|k| start + k) else {
            continue;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut end = code.len();
        for (k, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        spans.push((start, end));
    }
    spans
}

/// Offsets where `word` occurs in `code` as a whole identifier.
pub(crate) fn word_offsets<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(word).filter_map(move |(k, _)| {
        let before = code[..k].chars().next_back();
        let after = code[k + word.len()..].chars().next();
        (!before.is_some_and(is_ident) && !after.is_some_and(is_ident)).then_some(k)
    })
}

/// The spans of `#[cfg(test)]` items (a test module written inline) in lexed code.
pub(crate) fn test_spans(code: &str) -> Vec<(usize, usize)> {
    let compact: Vec<usize> = code.match_indices("#[cfg(test)]").map(|(k, _)| k).collect();
    bodies_after(code, compact.into_iter())
}
