//! Archives extracted in memory into the same tree as a directory, under the same limits.
//! Nothing touches the disk: an entry's path is only ever a key in the tree.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{Cursor, Read};

use zip::CompressionMethod;

use crate::archive_format::ArchiveFormat;
use crate::diagnostic::{Diagnostic, codes};
use crate::limits::Limits;
use crate::tree::{Stop, Tree};
use crate::walk::{SKIPPED_DIRECTORIES, read_bounded};

/// `wrapper`: the one top-level folder every entry must sit in and that is removed from
/// every path (npm's `package/`); `None` for a bundle archive, whose root is the bundle's.
pub(crate) fn read_archive(
    bytes: &[u8],
    format: ArchiveFormat,
    limits: Limits,
    wrapper: Option<&str>,
) -> Tree {
    let mut tree = Tree::new(limits);
    let mut skipped = BTreeSet::new();
    let result = match format {
        ArchiveFormat::TarGz => read_tar_gz(bytes, &mut tree, &mut skipped, wrapper),
        ArchiveFormat::Zip => read_zip(bytes, &mut tree, &mut skipped, wrapper),
    };
    tree.stopped = result.is_err();
    tree
}

/// Counts inflated bytes and fails the stream once the archive budget is spent, so headers,
/// padding and skipped entries are bounded too, not only file contents.
struct Capped<'a, R> {
    inner: R,
    remaining: u64,
    exceeded: &'a Cell<bool>,
}

impl<R: Read> Read for Capped<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.remaining == 0 {
            // Probe one byte: a stream ending exactly at the budget is fine.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.exceeded.set(true);
                    Err(std::io::Error::other("archive expands past its limit"))
                }
            };
        }
        let max = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..max])?;
        self.remaining -= read as u64;
        Ok(read)
    }
}

fn read_tar_gz(
    bytes: &[u8],
    tree: &mut Tree,
    skipped: &mut BTreeSet<String>,
    wrapper: Option<&str>,
) -> Result<(), Stop> {
    let exceeded = Cell::new(false);
    let inflating = Capped {
        inner: flate2::read::GzDecoder::new(bytes),
        remaining: tree.limits.max_archive_bytes,
        exceeded: &exceeded,
    };
    let mut archive = tar::Archive::new(inflating);
    let entries = match archive.entries() {
        Ok(entries) => entries,
        Err(error) => return stream_failed(tree, &exceeded, &error),
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(error) => return stream_failed(tree, &exceeded, &error),
        };
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        tree.count_entry(&raw)?;
        if std::str::from_utf8(&entry.path_bytes()).is_err() {
            tree.refuse(
                Diagnostic::error(
                    codes::NON_UTF8_NAME,
                    raw.clone(),
                    format!("archive entry {raw} has a name that is not UTF-8"),
                )
                .with_help("rename the entry with a UTF-8 name"),
            );
            continue;
        }
        let kind = entry.header().entry_type();
        let kind = if kind.is_file() {
            Kind::File
        } else if kind.is_dir() {
            Kind::Dir
        } else if kind.is_symlink() || kind.is_hard_link() {
            Kind::Link
        } else if kind.is_pax_global_extensions() {
            // `git archive` writes one; it is metadata, not content.
            continue;
        } else {
            Kind::Special
        };
        let Some(rel) = admit(tree, &raw, kind, skipped, wrapper)? else {
            continue;
        };
        if kind == Kind::File {
            let executable = entry.header().mode().is_ok_and(|mode| mode & 0o111 != 0);
            match read_bounded(&mut entry, tree.read_budget()) {
                Ok(content) => tree.add_file(rel, content, executable)?,
                Err(error) => return stream_failed(tree, &exceeded, &error),
            }
        }
    }
    Ok(())
}

fn read_zip(
    bytes: &[u8],
    tree: &mut Tree,
    skipped: &mut BTreeSet<String>,
    wrapper: Option<&str>,
) -> Result<(), Stop> {
    // The zip reader indexes the whole central directory by name before anything else:
    // that costs memory per entry, and a repeated name silently keeps one copy. So the
    // central directory is counted and checked for repeated names first, from the bytes.
    let count = scan_central_directory(bytes, tree)?;
    let mut archive = match zip::ZipArchive::new(Cursor::new(bytes)) {
        Ok(archive) => archive,
        Err(error) => {
            tree.refuse(malformed(&error.to_string()));
            return Err(Stop);
        }
    };
    // The reader must have found the directory that was checked: same entries, no repeat.
    if archive.has_duplicate_names() {
        tree.refuse(duplicate("(a name in the central directory)"));
        return Err(Stop);
    }
    if archive.len() as u64 != count {
        tree.refuse(malformed(
            "the archive holds more than one central directory",
        ));
        return Err(Stop);
    }
    for index in 0..archive.len() {
        let mut entry = match archive.by_index(index) {
            Ok(entry) => entry,
            Err(error) => {
                tree.refuse(malformed(&error.to_string()));
                return Err(Stop);
            }
        };
        let Ok(raw) = entry.name().map(|name| name.into_owned()) else {
            tree.refuse(malformed("an entry name cannot be decoded"));
            return Err(Stop);
        };
        tree.count_entry(&raw)?;
        let mode_type = entry.unix_mode().map(|mode| mode & 0o170_000);
        let kind = if entry.is_symlink() || mode_type == Some(0o120_000) {
            Kind::Link
        } else if entry.is_dir() {
            Kind::Dir
        } else if matches!(mode_type, None | Some(0) | Some(0o100_000)) {
            Kind::File
        } else {
            Kind::Special
        };
        let Some(rel) = admit(tree, &raw, kind, skipped, wrapper)? else {
            continue;
        };
        if kind == Kind::File {
            if !matches!(
                entry.compression(),
                CompressionMethod::Stored | CompressionMethod::Deflated
            ) {
                tree.refuse(
                    Diagnostic::error(
                        codes::ARCHIVE_UNSUPPORTED_COMPRESSION,
                        rel.clone(),
                        format!(
                            "archive entry {rel} uses {:?} compression",
                            entry.compression()
                        ),
                    )
                    .with_help("repack the archive with deflate compression"),
                );
                continue;
            }
            let executable = entry.unix_mode().is_some_and(|mode| mode & 0o111 != 0);
            match read_bounded(&mut entry, tree.read_budget()) {
                Ok(content) => tree.add_file(rel, content, executable)?,
                Err(error) => {
                    tree.refuse(malformed(&format!("{rel}: {error}")));
                    return Err(Stop);
                }
            }
        }
    }
    Ok(())
}

const EOCD_SIGNATURE: u32 = 0x0605_4b50;
const EOCD_LEN: usize = 22;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const ZIP64_LOCATOR_LEN: usize = 20;
const ZIP64_EOCD_SIGNATURE: u32 = 0x0606_4b50;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const CENTRAL_LEN: usize = 46;

fn le16(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at + 2)?;
    Some(u64::from(u16::from_le_bytes([b[0], b[1]])))
}

fn le32(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at + 4)?;
    Some(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
}

fn le64(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at + 8)?;
    let mut word = [0u8; 8];
    word.copy_from_slice(b);
    Some(u64::from_le_bytes(word))
}

/// Where the central directory is and how many entries it announces.
struct CentralDirectory {
    entries: u64,
    offset: usize,
    size: usize,
}

/// Finds the end-of-central-directory record (and its zip64 form) by reading only the tail
/// of the archive.
fn locate_central_directory(bytes: &[u8]) -> Option<CentralDirectory> {
    let earliest = bytes.len().checked_sub(EOCD_LEN)?;
    let latest = bytes.len().saturating_sub(EOCD_LEN + usize::from(u16::MAX));
    // The record's comment runs to the end of the archive; a signature inside a comment
    // whose length does not fit is not the record.
    let eocd = (latest..=earliest).rev().find(|&at| {
        le32(bytes, at) == Some(u64::from(EOCD_SIGNATURE))
            && le16(bytes, at + 20).is_some_and(|len| at + EOCD_LEN + len as usize == bytes.len())
    })?;
    let mut entries = le16(bytes, eocd + 10)?;
    let mut size = le32(bytes, eocd + 12)?;
    let mut offset = le32(bytes, eocd + 16)?;
    let zip64 = entries == 0xFFFF || size == 0xFFFF_FFFF || offset == 0xFFFF_FFFF;
    if zip64 {
        let locator = eocd.checked_sub(ZIP64_LOCATOR_LEN)?;
        if le32(bytes, locator) != Some(u64::from(ZIP64_LOCATOR_SIGNATURE)) {
            return None;
        }
        let record = usize::try_from(le64(bytes, locator + 8)?).ok()?;
        if le32(bytes, record) != Some(u64::from(ZIP64_EOCD_SIGNATURE)) {
            return None;
        }
        entries = le64(bytes, record + 32)?;
        size = le64(bytes, record + 40)?;
        offset = le64(bytes, record + 48)?;
    }
    Some(CentralDirectory {
        entries,
        offset: usize::try_from(offset).ok()?,
        size: usize::try_from(size).ok()?,
    })
}

/// Refuses a zip whose central directory announces or holds more entries than
/// [`Limits::max_entries`], or names one path twice after normalization, before a single
/// entry is inflated or indexed. Costs one hash per entry, at most `max_entries` of them.
fn scan_central_directory(bytes: &[u8], tree: &mut Tree) -> Result<u64, Stop> {
    let Some(directory) = locate_central_directory(bytes) else {
        tree.refuse(malformed("no end of central directory record"));
        return Err(Stop);
    };
    let max = tree.limits.max_entries;
    if directory.entries > max as u64 {
        tree.refuse(too_many_entries(max, directory.entries));
        return Err(Stop);
    }
    let Some(records) = directory
        .offset
        .checked_add(directory.size)
        .and_then(|end| bytes.get(directory.offset..end))
    else {
        tree.refuse(malformed("the central directory lies outside the archive"));
        return Err(Stop);
    };
    let mut seen = std::collections::HashSet::new();
    let mut at = 0;
    let mut count: u64 = 0;
    while at < records.len() {
        let header = (
            le32(records, at),
            le16(records, at + 28),
            le16(records, at + 30),
            le16(records, at + 32),
        );
        let (Some(signature), Some(name_len), Some(extra_len), Some(comment_len)) = header else {
            tree.refuse(malformed("a central directory record is truncated"));
            return Err(Stop);
        };
        if signature != u64::from(CENTRAL_SIGNATURE) {
            // Whatever follows the records (a zip64 end record, say) is not an entry.
            break;
        }
        count += 1;
        if count > max as u64 {
            tree.refuse(too_many_entries(max, count));
            return Err(Stop);
        }
        let name_start = at + CENTRAL_LEN;
        // Lengths are 16-bit, so none of these sums can overflow.
        let name_end = name_start + usize::try_from(name_len).unwrap_or(usize::MAX);
        let Some(name) = records.get(name_start..name_end) else {
            tree.refuse(malformed("a central directory record is truncated"));
            return Err(Stop);
        };
        let shown = String::from_utf8_lossy(name);
        if let Ok(Some(rel)) = normalize(&shown)
            && !seen.insert(blake3::hash(rel.as_bytes()))
        {
            tree.refuse(duplicate(&rel));
            return Err(Stop);
        }
        at = name_end
            + usize::try_from(extra_len).unwrap_or(usize::MAX)
            + usize::try_from(comment_len).unwrap_or(usize::MAX);
    }
    if count != directory.entries {
        tree.refuse(malformed(&format!(
            "the central directory holds {count} entries but its end record announces {}",
            directory.entries
        )));
        return Err(Stop);
    }
    Ok(count)
}

fn too_many_entries(max: usize, found: u64) -> Diagnostic {
    Diagnostic::error(
        codes::LIMIT_ENTRIES,
        None,
        format!(
            "entry count limit ({max}) exceeded: the zip's central directory lists {found} or more entries"
        ),
    )
    .with_help("remove files, folders or links from the bundle")
}

fn duplicate(rel: &str) -> Diagnostic {
    Diagnostic::error(
        codes::ARCHIVE_DUPLICATE_ENTRY,
        rel.to_owned(),
        format!("archive entry {rel} appears twice"),
    )
    .with_help("repack the archive")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    Special,
}

/// Applies the path and type rules to one entry. `Ok(Some(rel))` for a file to read;
/// directories are recorded here; refused or skipped entries give `Ok(None)`.
fn admit(
    tree: &mut Tree,
    raw: &str,
    kind: Kind,
    skipped: &mut BTreeSet<String>,
    wrapper: Option<&str>,
) -> Result<Option<String>, Stop> {
    let rel = match normalize(raw) {
        Ok(Some(rel)) => match wrapper {
            None => rel,
            Some(wrapper) if rel == wrapper => return Ok(None),
            Some(wrapper) => match rel
                .strip_prefix(wrapper)
                .and_then(|rest| rest.strip_prefix('/'))
            {
                Some(inner) => inner.to_owned(),
                None => {
                    tree.refuse(
                        Diagnostic::error(
                            codes::ARCHIVE_UNSAFE_PATH,
                            raw.to_owned(),
                            format!("archive entry {raw:?} is outside the {wrapper}/ folder"),
                        )
                        .with_help(format!("pack every file under {wrapper}/")),
                    );
                    return Ok(None);
                }
            },
        },
        Ok(None) => return Ok(None),
        Err(why) => {
            tree.refuse(
                Diagnostic::error(
                    codes::ARCHIVE_UNSAFE_PATH,
                    raw.to_owned(),
                    format!("archive entry {raw:?} {why}"),
                )
                .with_help("repack the archive with plain relative paths"),
            );
            return Ok(None);
        }
    };
    tree.check_path(&rel)?;
    if let Some(prefix) = skipped_prefix(&rel) {
        if skipped.insert(prefix.clone()) {
            tree.refuse(Diagnostic::warning(
                codes::SKIPPED_DIRECTORY,
                prefix.clone(),
                format!("{prefix} skipped: it is never part of a bundle"),
            ));
        }
        return Ok(None);
    }
    match kind {
        Kind::Link => {
            tree.refuse(
                Diagnostic::error(
                    codes::ARCHIVE_LINK,
                    rel.clone(),
                    format!("archive entry {rel} is a symlink or hard link"),
                )
                .with_help("replace the link with the file it points to"),
            );
            return Ok(None);
        }
        Kind::Special => {
            tree.refuse(
                Diagnostic::error(
                    codes::ARCHIVE_SPECIAL_ENTRY,
                    rel.clone(),
                    format!("archive entry {rel} is not a regular file or directory"),
                )
                .with_help("remove it from the archive"),
            );
            return Ok(None);
        }
        Kind::Dir | Kind::File => {}
    }
    if tree.files.contains_key(&rel) || (kind == Kind::File && tree.dirs.contains(&rel)) {
        tree.refuse(duplicate(&rel));
        return Ok(None);
    }
    let mut ancestor = rel.as_str();
    while let Some((parent, _)) = ancestor.rsplit_once('/') {
        tree.dirs.insert(parent.to_owned());
        ancestor = parent;
    }
    if kind == Kind::Dir {
        tree.dirs.insert(rel);
        return Ok(None);
    }
    Ok(Some(rel))
}

/// `./a//b/` becomes `a/b`; the archive root itself is `None`.
fn normalize(raw: &str) -> Result<Option<String>, &'static str> {
    if raw.starts_with('/') {
        return Err("is an absolute path");
    }
    if raw.contains('\\') {
        return Err("contains a backslash");
    }
    if raw.contains('\0') {
        return Err("contains a NUL byte");
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("contains a .. component"),
            name => parts.push(name),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

fn skipped_prefix(rel: &str) -> Option<String> {
    let mut prefix = String::new();
    for part in rel.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        if SKIPPED_DIRECTORIES.contains(&part) {
            return Some(prefix);
        }
    }
    None
}

fn stream_failed(
    tree: &mut Tree,
    exceeded: &Cell<bool>,
    error: &std::io::Error,
) -> Result<(), Stop> {
    if exceeded.get() {
        tree.refuse(
            Diagnostic::error(
                codes::LIMIT_ARCHIVE_SIZE,
                None,
                format!(
                    "archive expanded-size limit ({} bytes) exceeded",
                    tree.limits.max_archive_bytes
                ),
            )
            .with_help("the archive expands too far; ship a smaller bundle"),
        );
    } else {
        tree.refuse(malformed(&error.to_string()));
    }
    Err(Stop)
}

fn malformed(detail: &str) -> Diagnostic {
    Diagnostic::error(
        codes::ARCHIVE_MALFORMED,
        None,
        format!("the archive cannot be read: {detail}"),
    )
    .with_help("recreate the archive")
}
