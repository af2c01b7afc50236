//! The one parser of source text: which kind of source a person typed.

use std::path::{Path, PathBuf};

use c2_bundle_collector::ArchiveFormat;

use crate::error::SourceError;

/// A source as a typed value, parsed once by [`Source::parse`] and fetched by
/// [`crate::fetch`] (or, for a catalog entry, by [`crate::Catalogs::fetch_entry`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// An existing path that is not an archive file: a bundle directory (anything else fails
    /// collection).
    Directory(PathBuf),
    /// An existing `.tar.gz`, `.tgz` or `.zip` file.
    Archive(PathBuf),
    /// A git repository: `git+URL#REF:SUBDIR`, or a GitHub repository or `/tree/<ref>/<path>`
    /// URL.
    Git(GitSource),
    /// A catalog entry, `NAME[@VERSION]`.
    Catalog(EntrySpec),
}

/// A parsed git source.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GitSource {
    /// The clone URL.
    pub url: String,
    /// The branch, tag or commit; `None` is the repository's HEAD.
    pub reference: Option<String>,
    /// The bundle's directory in the repository, normalized (`./a//b/` is `a/b`; `..` stays,
    /// to be refused when fetched). Empty for the repository root.
    pub subdir: String,
}

impl GitSource {
    /// A git source of `url` at `reference`, in `subdir` (normalized like a parsed one).
    pub fn new(url: impl Into<String>, reference: Option<String>, subdir: &str) -> Self {
        Self {
            url: url.into(),
            reference,
            subdir: normalize_subdir(subdir),
        }
    }
}

/// A catalog entry asked for by name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntrySpec {
    /// The entry's name.
    pub name: String,
    /// The exact version asked for (`NAME@VERSION`).
    pub version: Option<String>,
    /// The catalog named or located by the person (`--marketplace`), else every configured one.
    pub marketplace: Option<String>,
}

/// Whether (and where) a text may name a catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryLookup<'a> {
    /// No catalog: a name is not a source.
    Off,
    /// Catalogs are configured: a `NAME[@VERSION]` that is no existing path and no git source
    /// is an entry of one of them.
    Configured,
    /// The person named the catalog: the text is `NAME[@VERSION]`, whatever else it could be.
    In(&'a str),
}

impl Source {
    /// Reads the text a person typed as a source. The decisions, in order: with a named
    /// catalog the text is an entry; an entry-shaped name (lowercase ASCII letters, digits,
    /// `-` and `.`, optionally `@VERSION`) that is no existing path is an entry when catalogs
    /// are configured; `git+...` and GitHub URLs are git sources; an existing archive file is
    /// an archive and any other existing path a directory. Anything else is refused
    /// ([`SourceError::Unsupported`]).
    pub fn parse(text: &str, lookup: EntryLookup<'_>) -> Result<Self, SourceError> {
        if let EntryLookup::In(marketplace) = lookup {
            return Ok(Self::Catalog(entry_spec(text, Some(marketplace))));
        }
        if lookup == EntryLookup::Configured && is_entry_name(text) {
            return Ok(Self::Catalog(entry_spec(text, None)));
        }
        if let Some(git) = parse_git(text) {
            return Ok(Self::Git(git));
        }
        let path = Path::new(text);
        if !path.exists() {
            return Err(SourceError::Unsupported(format!(
                "{text}: no such directory or archive; give a bundle directory, a .tar.gz/.tgz/.zip archive, a git+URL#REF:SUBDIR or a GitHub URL"
            )));
        }
        if ArchiveFormat::from_path(path).is_some() && path.is_file() {
            Ok(Self::Archive(path.to_path_buf()))
        } else {
            Ok(Self::Directory(path.to_path_buf()))
        }
    }

    /// Whether this is a catalog entry.
    pub fn is_catalog(&self) -> bool {
        matches!(self, Self::Catalog(_))
    }
}

fn entry_spec(text: &str, marketplace: Option<&str>) -> EntrySpec {
    let (name, version) = split_name(text);
    EntrySpec {
        name: name.to_owned(),
        version: version.map(str::to_owned),
        marketplace: marketplace.map(str::to_owned),
    }
}

/// `NAME[@VERSION]` as a name and a version; a trailing `@` is no version.
pub fn split_name(text: &str) -> (&str, Option<&str>) {
    match text.split_once('@') {
        Some((name, version)) if !version.is_empty() => (name, Some(version)),
        _ => (text.trim_end_matches('@'), None),
    }
}

/// An entry-shaped name that is no existing path and no git source.
fn is_entry_name(text: &str) -> bool {
    let (name, _) = split_name(text);
    let plain = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    plain && !Path::new(text).exists() && !text.starts_with("git+")
}

/// Recognises the git source forms; `None` for anything else (a path).
pub(crate) fn parse_git(source: &str) -> Option<GitSource> {
    if let Some(rest) = source.strip_prefix("git+") {
        let (url, fragment) = match rest.split_once('#') {
            Some((url, fragment)) => (url, Some(fragment)),
            None => (rest, None),
        };
        let (reference, subdir) = match fragment {
            None => (None, ""),
            Some(fragment) => match fragment.split_once(':') {
                Some((reference, subdir)) => (Some(reference), subdir),
                None => (Some(fragment), ""),
            },
        };
        return Some(GitSource::new(
            url,
            reference.filter(|r| !r.is_empty()).map(str::to_owned),
            subdir,
        ));
    }
    let rest = source
        .strip_prefix("https://github.com/")
        .or_else(|| source.strip_prefix("http://github.com/"))?;
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let (owner, repo) = (parts.first()?, parts.get(1)?);
    let repo = repo.trim_end_matches(".git");
    let url = format!("https://github.com/{owner}/{repo}.git");
    match parts.get(2) {
        None => Some(GitSource::new(url, None, "")),
        Some(&"tree") => Some(GitSource::new(
            url,
            parts.get(3).map(|r| (*r).to_owned()),
            &parts.get(4..).map(|p| p.join("/")).unwrap_or_default(),
        )),
        Some(_) => None,
    }
}

/// `./a//b/` is `a/b`, as [`c2_bundle_collector::SourceIdentity::git`] has it; `..` stays, to
/// be refused.
pub(crate) fn normalize_subdir(subdir: &str) -> String {
    subdir
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}
