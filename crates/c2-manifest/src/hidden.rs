//! Hidden text: characters a reviewer cannot see that change what a text is or how it reads.
//! Bidirectional controls reorder what is displayed; invisible and other format characters
//! (zero-width space, joiner and non-joiner, word joiner, a byte-order mark inside text, the
//! soft hyphen, tag characters, stray variation selectors, fillers) hide content. In running
//! text each is a warning with its line and column; in an identifier it is an error, since an
//! identifier that looks like another is how one thing passes for another.

use crate::diagnostic::{BundleDiagnostic, Diagnostic, Sink};
use crate::json::{Node, Value};

/// Warning: a bidirectional control character in bundle text.
pub(crate) const BIDI_CONTROL: &str = "bidi-control";
/// Warning: an invisible or format character in bundle text.
pub(crate) const INVISIBLE_CHARACTER: &str = "invisible-character";
/// Error: an identifier holds a hidden character.
pub(crate) const HIDDEN_IN_IDENTIFIER: &str = "hidden-character-in-identifier";

/// At most this many hidden-text warnings per document, then one that counts the rest.
const MAX_REPORTED: usize = 16;

/// The sort of hidden character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HiddenKind {
    /// Reorders how the text around it is displayed (U+202A–202E, U+2066–2069, U+200E,
    /// U+200F, U+061C).
    Bidi,
    /// Displays as nothing: zero-width and format characters, tags, variation selectors,
    /// fillers.
    Invisible,
}

/// One hidden character in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenChar {
    /// Byte offset in the text.
    pub offset: usize,
    /// The character.
    pub ch: char,
    /// Bidirectional control or invisible.
    pub kind: HiddenKind,
}

impl HiddenChar {
    /// `U+202E (right-to-left override)`.
    pub fn describe(&self) -> String {
        format!("U+{:04X} ({})", u32::from(self.ch), char_name(self.ch))
    }
}

/// Whether `c` is a hidden character at all, whatever surrounds it.
pub fn hidden_kind(c: char) -> Option<HiddenKind> {
    match u32::from(c) {
        0x202A..=0x202E | 0x2066..=0x2069 | 0x200E | 0x200F | 0x061C => Some(HiddenKind::Bidi),
        0x00AD
        | 0x034F
        | 0x0600..=0x0605
        | 0x06DD
        | 0x070F
        | 0x0890
        | 0x0891
        | 0x08E2
        | 0x115F
        | 0x1160
        | 0x17B4
        | 0x17B5
        | 0x180B..=0x180F
        | 0x200B..=0x200D
        | 0x2060..=0x2064
        | 0x206A..=0x206F
        | 0x3164
        | 0xFE00..=0xFE0F
        | 0xFEFF
        | 0xFFA0
        | 0xFFF9..=0xFFFB
        | 0x110BD
        | 0x110CD
        | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A
        | 0xE0000..=0xE007F
        | 0xE0100..=0xE01EF => Some(HiddenKind::Invisible),
        _ => None,
    }
}

/// The first hidden character of an identifier (a name, a command id, a component id, a
/// server name): any at all, since no identifier needs one.
pub fn identifier_hidden_char(identifier: &str) -> Option<char> {
    if identifier.is_ascii() {
        return None;
    }
    identifier.chars().find(|&c| hidden_kind(c).is_some())
}

/// The hidden characters of running text that a reader should be told about. Characters with
/// a visible job are left alone: a byte-order mark at the very start, a zero-width joiner or
/// non-joiner between two non-ASCII characters (emoji sequences, Indic scripts), a variation
/// selector 1–16 after a non-ASCII character or before a combining keycap, tag characters in a
/// flag sequence.
pub fn hidden_chars(text: &str) -> Vec<HiddenChar> {
    // Every hidden character is outside ASCII: most manifests and documents are read once
    // (`is_ascii` runs a word at a time) instead of being split into characters.
    if text.is_ascii() {
        return Vec::new();
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut found = Vec::new();
    for (i, &(offset, ch)) in chars.iter().enumerate() {
        let Some(kind) = hidden_kind(ch) else {
            continue;
        };
        let before = i.checked_sub(1).map(|j| chars[j].1);
        let after = chars.get(i + 1).map(|&(_, c)| c);
        let visible_job = match u32::from(ch) {
            0xFEFF => offset == 0,
            0x200C | 0x200D => {
                before.is_some_and(|c| !c.is_ascii() && hidden_kind(c).is_none())
                    && after.is_some_and(|c| !c.is_ascii() && hidden_kind(c).is_none())
            }
            0xFE00..=0xFE0F => {
                before.is_some_and(|c| !c.is_ascii() && hidden_kind(c).is_none())
                    || after == Some('\u{20E3}')
            }
            0xE0020..=0xE007F => chars[..i]
                .iter()
                .rev()
                .map(|&(_, c)| c)
                .find(|c| !(0xE0020..=0xE007E).contains(&u32::from(*c)))
                .is_some_and(|c| c == '\u{1F3F4}'),
            _ => false,
        };
        if !visible_job {
            found.push(HiddenChar { offset, ch, kind });
        }
    }
    found
}

/// Every hidden character of running text as a warning with its line and column (at most
/// 16, then one warning that counts the rest). For the bundle files no other validator reads
/// (prompt commands, subagents, runtime scripts); plugin.json, mcp.json and SKILL.md are
/// scanned by their validators.
pub fn scan_hidden_text(text: &str) -> Vec<Diagnostic> {
    let mut sink = Sink::new(text);
    scan_into(&mut sink);
    sink.finish()
}

/// [`scan_hidden_text`] into a validator's sink.
pub(crate) fn scan_into(sink: &mut Sink<'_>) {
    let found = hidden_chars(sink.source());
    for hidden in found.iter().take(MAX_REPORTED) {
        let (code, effect) = match hidden.kind {
            HiddenKind::Bidi => (BIDI_CONTROL, "reorders how the text around it is displayed"),
            HiddenKind::Invisible => (INVISIBLE_CHARACTER, "displays as nothing"),
        };
        sink.warning(
            code,
            "",
            hidden.offset,
            format!("hidden character {}: it {effect}", hidden.describe()),
            Some("remove it, or write what it is for visibly; a reviewer cannot see it"),
        );
    }
    if let Some(next) = found.get(MAX_REPORTED) {
        sink.warning(
            INVISIBLE_CHARACTER,
            "",
            next.offset,
            format!(
                "{} more hidden characters from here on are not listed one by one",
                found.len() - MAX_REPORTED
            ),
            Some("remove them; a reviewer cannot see them"),
        );
    }
}

/// What to do about a hidden character in an identifier of a document.
const IDENTIFIER_HELP: &str = "use only visible characters in identifiers";

/// An error when `value` (the identifier `what` at `pointer`) holds a hidden character.
pub(crate) fn check_identifier(
    sink: &mut Sink<'_>,
    pointer: &str,
    offset: usize,
    what: &str,
    value: &str,
) {
    report_identifier(sink, offset, value, || {
        (pointer.to_owned(), what.to_owned())
    });
}

/// [`check_identifier`] with the pointer and the name (`named`) written only for an identifier
/// that holds a hidden character: most never do.
fn report_identifier(
    sink: &mut Sink<'_>,
    offset: usize,
    value: &str,
    named: impl FnOnce() -> (String, String),
) {
    if let Some(ch) = identifier_hidden_char(value) {
        let (pointer, what) = named();
        sink.error(
            HIDDEN_IN_IDENTIFIER,
            &pointer,
            offset,
            identifier_message(&what, value, ch),
            Some(IDENTIFIER_HELP),
        );
    }
}

/// The message of a hidden character in an identifier.
fn identifier_message(what: &str, value: &str, ch: char) -> String {
    let hidden = HiddenChar {
        offset: 0,
        ch,
        kind: HiddenKind::Invisible,
    };
    format!(
        "{what} {:?} holds the hidden character {}, so it can pass for another",
        value,
        hidden.describe()
    )
}

/// The error for an identifier that is not in a document but a file or folder name (a prompt
/// command's or subagent's file stem, a skill folder), about `file`: `what` names it.
pub fn hidden_identifier_diagnostic(
    what: &str,
    identifier: &str,
    file: &str,
) -> Option<BundleDiagnostic> {
    let ch = identifier_hidden_char(identifier)?;
    let message = identifier_message(what, identifier, ch);
    Some(
        BundleDiagnostic::error(HIDDEN_IN_IDENTIFIER, Some(file.to_owned()), message)
            .with_help("rename it with visible characters only"),
    )
}

/// Identifiers of plugin.json: the name, and the ids of commands, UI actions, connectors and
/// language servers (and the command a UI action or connector names).
pub(crate) fn manifest_identifiers(root: &Node<'_>, sink: &mut Sink<'_>) {
    if let Some(name) = root.get("name") {
        string_identifier(sink, name, "/name", "the bundle name");
    }
    let Some(codetwo) = root.get("extensions").and_then(|e| e.get("dev.codetwo")) else {
        return;
    };
    for (list, fields) in [
        ("commands", &["id"][..]),
        ("ui", &["id", "command"][..]),
        ("connectors", &["id", "command"][..]),
        ("languageServers", &["id"][..]),
    ] {
        let Some(items) = codetwo.get(list).and_then(Node::as_array) else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            for field in fields {
                if let Some(Node {
                    value: Value::String(value),
                    start,
                }) = item.get(field)
                {
                    report_identifier(sink, *start, value, || {
                        (
                            format!("/extensions/dev.codetwo/{list}/{i}/{field}"),
                            format!("{list}[{i}].{field}"),
                        )
                    });
                }
            }
        }
    }
}

/// Server names of mcp.json.
pub(crate) fn mcp_identifiers(root: &Node<'_>, sink: &mut Sink<'_>) {
    if let Some(servers) = root.get("mcpServers").and_then(Node::as_object) {
        for member in servers {
            report_identifier(sink, member.key_start, &member.key, || {
                (
                    crate::diagnostic::pointer_push("/mcpServers", &member.key),
                    "the MCP server name".to_owned(),
                )
            });
        }
    }
}

fn string_identifier(sink: &mut Sink<'_>, node: &Node<'_>, pointer: &str, what: &str) {
    if let Value::String(value) = &node.value {
        check_identifier(sink, pointer, node.start, what, value);
    }
}

/// A short name for the hidden characters people meet most.
fn char_name(c: char) -> &'static str {
    match u32::from(c) {
        0x200B => "zero width space",
        0x200C => "zero width non-joiner",
        0x200D => "zero width joiner",
        0x200E => "left-to-right mark",
        0x200F => "right-to-left mark",
        0x2060 => "word joiner",
        0xFEFF => "byte-order mark",
        0x00AD => "soft hyphen",
        0x061C => "arabic letter mark",
        0x202A => "left-to-right embedding",
        0x202B => "right-to-left embedding",
        0x202C => "pop directional formatting",
        0x202D => "left-to-right override",
        0x202E => "right-to-left override",
        0x2066 => "left-to-right isolate",
        0x2067 => "right-to-left isolate",
        0x2068 => "first strong isolate",
        0x2069 => "pop directional isolate",
        0xE0000..=0xE007F => "tag character",
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF => "variation selector",
        0x115F | 0x1160 | 0x3164 | 0xFFA0 => "hangul filler",
        _ => "invisible format character",
    }
}
