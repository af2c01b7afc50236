//! Collection from a directory. The walk holds a handle on each directory it lists and opens
//! every entry relative to it (`openat` of one name, `O_NOFOLLOW`), so a directory or file
//! swapped for a symlink after the listing is refused rather than followed, and no open walks
//! a path from the root again. Symlinks are inspected with `readlink` only and never opened;
//! files are opened `O_NONBLOCK`, re-checked on the open handle and read through
//! `take(budget + 1)`, so a file swapped for a FIFO, or one that grows during the copy, cannot
//! get past the limits.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path};

use nix::dir::{Dir, Type};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag, fstatat};

use crate::diagnostic::{Diagnostic, codes};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::tree::{FileStat, InsideLink, Stop, Tree};

/// Directory names never collected, at any depth: build output and VCS state, not bundle content.
pub const SKIPPED_DIRECTORIES: [&str; 4] = [".git", "node_modules", "target", ".venv"];

/// Symlink hops followed (lexically) before a chain counts as a loop; the Linux `MAXSYMLINKS`.
const MAX_LINK_HOPS: usize = 40;

pub(crate) fn walk_dir(root: &Path, limits: Limits) -> Result<Tree> {
    walk_tree(root, Tree::new(limits))
}

/// The walk of [`walk_dir`] without reading any file: the same refusals (links, special files,
/// skipped directories, entry and depth limits), and a [`FileStat`] per regular file.
pub(crate) fn stat_dir(root: &Path, limits: Limits) -> Result<Tree> {
    let mut tree = Tree::new(limits);
    tree.stat_only = true;
    walk_tree(root, tree)
}

/// The walk of [`walk_dir`] restricted to the top-level directories named in `tops`: every
/// other root entry is passed over unread, and inside those directories the same refusals and
/// limits hold.
pub(crate) fn walk_tops(root: &Path, limits: Limits, tops: &[&str]) -> Result<Tree> {
    let mut tree = Tree::new(limits);
    tree.tops = Some(tops.iter().map(|top| (*top).to_owned()).collect());
    walk_tree(root, tree)
}

fn walk_tree(root: &Path, mut tree: Tree) -> Result<Tree> {
    let meta = std::fs::metadata(root).map_err(Error::io("read", root))?;
    if !meta.is_dir() {
        return Err(Error::NotADirectory {
            path: root.to_owned(),
        });
    }
    // The root itself may be reached through a link: it is the caller's choice of directory.
    match Dir::open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(dir) => {
            record_dir(&dir, "", &mut tree);
            tree.stopped = walk(root, dir, "", &mut tree).is_err();
        }
        Err(errno) => tree.refuse(read_failed("", &errno.into())),
    }
    Ok(tree)
}

/// Lists `dir` (the tree's `rel_dir`), then collects each entry through `dir`'s handle.
fn walk(root: &Path, mut dir: Dir, rel_dir: &str, tree: &mut Tree) -> Result<(), Stop> {
    // Never hold more names than the entry budget allows, however large the directory.
    let budget = tree
        .limits
        .max_entries
        .saturating_sub(tree.entries)
        .saturating_add(1);
    let mut entries: Vec<_> = dir
        .iter()
        .filter_map(Result::ok)
        .filter(|entry| !matches!(entry.file_name().to_bytes(), b"." | b".."))
        .take(budget)
        .collect();
    entries.sort_by(|a, b| a.file_name().cmp(b.file_name()));
    for entry in entries {
        let c_name = entry.file_name();
        if rel_dir.is_empty()
            && let Some(tops) = &tree.tops
            && !tops.iter().any(|top| top.as_bytes() == c_name.to_bytes())
        {
            continue;
        }
        let lossy = join(rel_dir, &String::from_utf8_lossy(c_name.to_bytes()));
        tree.count_entry(&lossy)?;
        let Ok(name) = c_name.to_str() else {
            tree.refuse(
                Diagnostic::error(
                    codes::NON_UTF8_NAME,
                    lossy.clone(),
                    format!("{lossy} has a name that is not UTF-8"),
                )
                .with_help("rename the entry with a UTF-8 name"),
            );
            continue;
        };
        let rel = join(rel_dir, name);
        tree.check_path(&rel)?;
        if SKIPPED_DIRECTORIES.contains(&name) {
            tree.refuse(Diagnostic::warning(
                codes::SKIPPED_DIRECTORY,
                rel.clone(),
                format!("{rel} skipped: {name} is never part of a bundle"),
            ));
            continue;
        }
        // The listing's type does not follow symlinks; a file system that leaves it unknown
        // is asked with `fstatat`, which does not follow them either.
        let file_type = match entry.file_type() {
            Some(file_type) => file_type,
            None => match fstatat(dir.as_fd(), c_name, AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(stat) => type_of_mode(stat.st_mode),
                Err(errno) => {
                    tree.refuse(read_failed(&rel, &errno.into()));
                    continue;
                }
            },
        };
        match file_type {
            Type::Symlink => classify_link(root, &rel, tree),
            Type::Directory => {
                tree.dirs.insert(rel.clone());
                match open_dir_at(&dir, c_name) {
                    Ok(child) => {
                        record_dir(&child, &rel, tree);
                        walk(root, child, &rel, tree)?;
                    }
                    Err(error) => tree.refuse(read_failed(&rel, &error)),
                }
            }
            Type::File if tree.stat_only => stat_file(&dir, c_name, rel, tree),
            Type::File => read_file(open_file_at(&dir, c_name), rel, tree)?,
            Type::Fifo | Type::CharacterDevice | Type::BlockDevice | Type::Socket => {
                tree.refuse(special_file(&rel));
            }
        }
    }
    Ok(())
}

fn type_of_mode(mode: nix::libc::mode_t) -> Type {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => Type::Directory,
        SFlag::S_IFLNK => Type::Symlink,
        SFlag::S_IFREG => Type::File,
        SFlag::S_IFIFO => Type::Fifo,
        SFlag::S_IFCHR => Type::CharacterDevice,
        SFlag::S_IFBLK => Type::BlockDevice,
        _ => Type::Socket,
    }
}

/// Opens the subdirectory `name` of `dir`; a symlink put in its place fails (`ENOTDIR`).
fn open_dir_at(dir: &Dir, name: &CStr) -> std::io::Result<Dir> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    Ok(Dir::openat(dir.as_fd(), name, flags, Mode::empty())?)
}

/// Opens the file `name` of `dir` for reading: a symlink put in its place fails with `ELOOP`,
/// and a FIFO does not block the open.
fn open_file_at(dir: &Dir, name: &CStr) -> std::io::Result<File> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(dir.as_fd(), name, flags, Mode::empty())?;
    Ok(File::from(fd))
}

/// In a stat-only walk, the stamps of the directory `rel` from its open handle: a directory's
/// mtime and ctime move whenever an entry is added to it, removed from it or renamed in it.
fn record_dir(dir: &Dir, rel: &str, tree: &mut Tree) {
    if !tree.stat_only {
        return;
    }
    match nix::sys::stat::fstat(dir.as_fd()) {
        Ok(stat) => tree.dir_stats.push(file_stat(rel.to_owned(), &stat)),
        Err(errno) => tree.refuse(read_failed(rel, &errno.into())),
    }
}

/// The stamps `stat` gives of the entry `rel`.
pub(crate) fn file_stat(rel: String, stat: &nix::sys::stat::FileStat) -> FileStat {
    FileStat {
        rel,
        dev: stat.st_dev,
        ino: stat.st_ino,
        size: u64::try_from(stat.st_size).unwrap_or(u64::MAX),
        mode: stat.st_mode,
        mtime: (stat.st_mtime, stat.st_mtime_nsec),
        ctime: (stat.st_ctime, stat.st_ctime_nsec),
    }
}

/// The stamps of the file `name` of `dir`, without opening it (`fstatat`, not following a
/// link): what a stat-only walk records. Anything but a regular file found there now is
/// refused as a special file.
fn stat_file(dir: &Dir, name: &CStr, rel: String, tree: &mut Tree) {
    match fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) if type_of_mode(stat.st_mode) == Type::File => {
            tree.stats.push(file_stat(rel, &stat));
        }
        Ok(_) => tree.refuse(special_file(&rel)),
        Err(errno) => tree.refuse(read_failed(&rel, &errno.into())),
    }
}

fn read_file(opened: std::io::Result<File>, rel: String, tree: &mut Tree) -> Result<(), Stop> {
    let file = match opened {
        Ok(file) => file,
        Err(error) => {
            tree.refuse(read_failed(&rel, &error));
            return Ok(());
        }
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(error) => {
            tree.refuse(read_failed(&rel, &error));
            return Ok(());
        }
    };
    if !meta.is_file() {
        tree.refuse(special_file(&rel));
        return Ok(());
    }
    let executable = meta.permissions().mode() & 0o111 != 0;
    match read_bounded_sized(file, tree.read_budget(), meta.len()) {
        Ok(bytes) => tree.add_file(rel, bytes, executable),
        Err(error) => {
            tree.refuse(read_failed(&rel, &error));
            Ok(())
        }
    }
}

/// Reads at most `budget + 1` bytes: one byte past the budget proves the limit was exceeded.
/// For a stream of unknown size (an archive's entry); a file is read by [`read_file_bounded`].
#[cfg(any(feature = "archive", test))]
pub(crate) fn read_bounded(reader: impl Read, budget: u64) -> std::io::Result<Vec<u8>> {
    read_bounded_sized(reader, budget, 0)
}

/// [`read_bounded`] of an open file, sized by its `fstat`: one `read` for a file that is what
/// it claims, instead of doubling steps and a last one that sees its end.
pub(crate) fn read_file_bounded(file: File, budget: u64) -> std::io::Result<Vec<u8>> {
    let size = file.metadata()?.len();
    read_bounded_sized(file, budget, size)
}

/// [`read_bounded`] of a file whose `fstat` reported `size`: the bytes it had then, in one
/// `read` and without a second one to find the end. A file over `budget` still gives
/// `budget + 1` bytes, which its caller refuses. A file that grows after the `fstat` is read
/// as it was (a prefix, as a read racing a writer would see); one that reports no size
/// (procfs and the like) is read to its end, within the budget.
fn read_bounded_sized(reader: impl Read, budget: u64, size: u64) -> std::io::Result<Vec<u8>> {
    let limit = match size {
        0 => budget.saturating_add(1),
        size => size.min(budget.saturating_add(1)),
    };
    let mut bytes = Vec::with_capacity(usize::try_from(limit).unwrap_or(0));
    reader.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Resolves the link lexically inside the root, reading further links with `readlink` only,
/// so an absolute, escaping or looping chain is refused without ever being opened.
fn classify_link(root: &Path, rel: &str, tree: &mut Tree) {
    let path = root.join(rel);
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns symlink inspection"
    )]
    let target = match std::fs::read_link(&path) {
        Ok(target) => target,
        Err(error) => {
            tree.refuse(read_failed(rel, &error));
            return;
        }
    };
    let shown = target.to_string_lossy().into_owned();
    let refusal = match resolve(root, rel, &target) {
        Resolution::Inside => {
            tree.links.push(InsideLink {
                path: rel.to_owned(),
                target: shown,
            });
            return;
        }
        Resolution::Absolute => (codes::SYMLINK_ABSOLUTE, "is absolute"),
        Resolution::Escapes => (codes::SYMLINK_ESCAPES, "resolves outside the bundle"),
        Resolution::Loop => (codes::SYMLINK_LOOP, "loops"),
    };
    tree.refuse(
        Diagnostic::error(
            refusal.0,
            rel.to_owned(),
            format!("symlink {rel} -> {shown} {}", refusal.1),
        )
        .with_help("replace the symlink with the file it points to, or remove it"),
    );
}

#[derive(Debug, PartialEq, Eq)]
enum Resolution {
    Inside,
    Absolute,
    Escapes,
    Loop,
}

fn resolve(root: &Path, rel: &str, target: &Path) -> Resolution {
    let mut current: Vec<String> = rel.split('/').map(str::to_owned).collect();
    current.pop();
    let mut pending: Vec<String> = Vec::new();
    if push_components(target, &mut pending).is_err() {
        return Resolution::Absolute;
    }
    // `pending` is consumed from the back.
    pending.reverse();
    let mut hops = 0;
    let mut on_disk = true;
    while let Some(component) = pending.pop() {
        match component.as_str() {
            "." => {}
            ".." => {
                if current.pop().is_none() {
                    return Resolution::Escapes;
                }
            }
            name => {
                current.push(name.to_owned());
                if !on_disk {
                    continue;
                }
                let here = root.join(current.join("/"));
                #[expect(
                    clippy::disallowed_methods,
                    reason = "the collector owns symlink inspection"
                )]
                let meta = std::fs::symlink_metadata(&here);
                match meta {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_LINK_HOPS {
                            return Resolution::Loop;
                        }
                        #[expect(
                            clippy::disallowed_methods,
                            reason = "the collector owns symlink inspection"
                        )]
                        let Ok(next) = std::fs::read_link(&here) else {
                            on_disk = false;
                            continue;
                        };
                        current.pop();
                        let mut more = Vec::new();
                        if push_components(&next, &mut more).is_err() {
                            return Resolution::Escapes;
                        }
                        pending.extend(more.into_iter().rev());
                    }
                    Ok(_) => {}
                    // A dangling remainder is judged lexically.
                    Err(_) => on_disk = false,
                }
            }
        }
    }
    Resolution::Inside
}

/// Splits a relative link target; an absolute one (or a prefix) is an error.
fn push_components(target: &Path, out: &mut Vec<String>) -> Result<(), ()> {
    for component in target.components() {
        match component {
            Component::Normal(name) => out.push(name.to_string_lossy().into_owned()),
            Component::CurDir => out.push(".".to_owned()),
            Component::ParentDir => out.push("..".to_owned()),
            Component::RootDir | Component::Prefix(_) => return Err(()),
        }
    }
    Ok(())
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        return name.to_owned();
    }
    let mut path = String::with_capacity(dir.len() + 1 + name.len());
    path.push_str(dir);
    path.push('/');
    path.push_str(name);
    path
}

fn special_file(rel: &str) -> Diagnostic {
    Diagnostic::error(
        codes::SPECIAL_FILE,
        rel.to_owned(),
        format!("{rel} is a FIFO, socket or device, which a bundle may not contain"),
    )
    .with_help("remove it from the bundle")
}

fn read_failed(rel: &str, error: &std::io::Error) -> Diagnostic {
    let shown = if rel.is_empty() { "." } else { rel };
    Diagnostic::error(
        codes::READ_FAILED,
        shown.to_owned(),
        format!("cannot read {shown}: {error}"),
    )
    .with_help("check the file's permissions")
}

/// Why a subdirectory of a trusted root cannot be the root of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubdirectoryRefusal {
    /// Empty components, `.`, `..`, a backslash or a NUL: not a plain relative path.
    NotPlain,
    /// This prefix of the subdirectory is a symlink (never followed, whatever it points to).
    Symlink(String),
    /// This prefix does not exist.
    Missing(String),
    /// This prefix is a file, a FIFO or a device, not a directory.
    NotADirectory(String),
    /// This path is a directory, a FIFO or a device, not a regular file.
    NotAFile(String),
}

impl std::fmt::Display for SubdirectoryRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotPlain => {
                f.write_str("it is not a plain relative path (no `.`, `..` or empty parts)")
            }
            Self::Symlink(at) => write!(f, "{at} is a symlink, which is never followed"),
            Self::Missing(at) => write!(f, "{at} does not exist"),
            Self::NotADirectory(at) => write!(f, "{at} is not a directory"),
            Self::NotAFile(at) => write!(f, "{at} is not a regular file"),
        }
    }
}

/// Resolves `subdir` (`/`-separated, relative) inside `root` one component at a time without
/// following any symlink, so the result is a real directory inside `root`: a symlink anywhere
/// on the way refuses it, wherever it points. An empty `subdir` is `root` itself.
pub fn resolve_subdirectory(
    root: &Path,
    subdir: &str,
) -> std::result::Result<std::path::PathBuf, SubdirectoryRefusal> {
    let mut path = root.to_path_buf();
    let mut shown = String::new();
    if subdir.is_empty() {
        return Ok(path);
    }
    for part in subdir.split('/') {
        if part.is_empty() || part == "." || part == ".." || part.contains(['\\', '\0']) {
            return Err(SubdirectoryRefusal::NotPlain);
        }
        path.push(part);
        if !shown.is_empty() {
            shown.push('/');
        }
        shown.push_str(part);
        #[expect(
            clippy::disallowed_methods,
            reason = "the collector owns symlink inspection"
        )]
        let meta = std::fs::symlink_metadata(&path);
        match meta {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SubdirectoryRefusal::Symlink(shown));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(SubdirectoryRefusal::NotADirectory(shown)),
            Err(_) => return Err(SubdirectoryRefusal::Missing(shown)),
        }
    }
    Ok(path)
}

/// Reads the file `rel` (`/`-separated, relative) inside `root` without following any
/// symlink: its directories are resolved as [`resolve_subdirectory`] does and the file itself
/// is opened `O_NOFOLLOW` and must be a regular file. At most `max_bytes` are read; `Ok`
/// with more than `max_bytes` bytes means the file is larger (the caller names the limit).
/// For an archive or a catalog shipped beside a catalog.
pub fn read_contained_file(
    root: &Path,
    rel: &str,
    max_bytes: u64,
) -> std::result::Result<Vec<u8>, SubdirectoryRefusal> {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", rel),
    };
    if name.is_empty() || name == "." || name == ".." || name.contains(['\\', '\0']) {
        return Err(SubdirectoryRefusal::NotPlain);
    }
    let dir = resolve_subdirectory(root, dir)?;
    let path = dir.join(name);
    let file = match open_nofollow(&path) {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(SubdirectoryRefusal::Symlink(rel.to_owned()));
        }
        Err(_) => return Err(SubdirectoryRefusal::Missing(rel.to_owned())),
    };
    let size = match file.metadata() {
        Ok(meta) if meta.is_file() => meta.len(),
        _ => return Err(SubdirectoryRefusal::NotAFile(rel.to_owned())),
    };
    read_bounded_sized(file, max_bytes, size)
        .map_err(|_| SubdirectoryRefusal::Missing(rel.to_owned()))
}

/// Opens a path for reading without following a final symlink.
#[expect(
    clippy::disallowed_methods,
    reason = "the collector owns reading bundle files"
)]
pub(crate) fn open_nofollow(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path)
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests {
    use super::*;

    /// Collects the entry `swapped` of `dir` the way the walk does, into a fresh tree.
    fn read_swapped(dir: &Path) -> Tree {
        let mut tree = Tree::new(Limits::default());
        let parent = Dir::open(dir, OFlag::O_RDONLY, Mode::empty()).unwrap();
        read_file(
            open_file_at(&parent, c"swapped"),
            "swapped".to_owned(),
            &mut tree,
        )
        .unwrap();
        tree
    }

    /// The listing said "regular file", but by the time it is opened the path is a FIFO:
    /// the open must not block and the handle's own type must refuse it.
    #[test]
    fn a_fifo_swapped_in_after_listing_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("swapped");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let tree = read_swapped(dir.path());
        assert_eq!(tree.diagnostics.len(), 1);
        assert_eq!(tree.diagnostics[0].code, codes::SPECIAL_FILE);
        assert!(tree.files.is_empty());
    }

    /// The listing said "regular file", but by the time it is opened the path is a symlink:
    /// `O_NOFOLLOW` makes the open fail instead of reading the link's target.
    #[test]
    fn a_symlink_swapped_in_after_listing_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), "outside").unwrap();
        let path = dir.path().join("swapped");
        std::os::unix::fs::symlink(dir.path().join("secret"), &path).unwrap();
        let tree = read_swapped(dir.path());
        assert_eq!(tree.diagnostics.len(), 1);
        assert_eq!(tree.diagnostics[0].code, codes::READ_FAILED);
        assert!(tree.files.is_empty());
    }

    /// The listing said "directory", but by the time it is opened the name is a symlink to a
    /// directory outside the bundle: the walk must not descend through it.
    #[test]
    fn a_directory_swapped_for_a_symlink_after_listing_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("swapped")).unwrap();
        let parent = Dir::open(dir.path(), OFlag::O_RDONLY, Mode::empty()).unwrap();
        let error = open_dir_at(&parent, c"swapped").unwrap_err();
        assert!(
            matches!(
                error.raw_os_error(),
                Some(nix::libc::ENOTDIR | nix::libc::ELOOP)
            ),
            "{error}"
        );
    }

    #[test]
    fn entries_of_unknown_type_are_typed_without_following_links() {
        assert_eq!(type_of_mode(SFlag::S_IFLNK.bits() | 0o777), Type::Symlink);
        assert_eq!(type_of_mode(SFlag::S_IFDIR.bits() | 0o755), Type::Directory);
        assert_eq!(type_of_mode(SFlag::S_IFREG.bits() | 0o644), Type::File);
        assert_eq!(type_of_mode(SFlag::S_IFIFO.bits()), Type::Fifo);
    }

    #[test]
    fn link_resolution_is_lexical_and_stays_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        assert_eq!(
            resolve(root, "a/b/l", Path::new("../../x")),
            Resolution::Inside
        );
        assert_eq!(
            resolve(root, "a/b/l", Path::new("../../../x")),
            Resolution::Escapes
        );
        assert_eq!(
            resolve(root, "l", Path::new("./a/../..")),
            Resolution::Escapes
        );
        assert_eq!(resolve(root, "l", Path::new("/a")), Resolution::Absolute);
        std::os::unix::fs::symlink("l", root.join("l")).unwrap();
        assert_eq!(resolve(root, "l", Path::new("l")), Resolution::Loop);
    }

    #[test]
    fn a_read_stops_one_byte_past_the_budget() {
        let bytes = read_bounded(&[1u8; 100][..], 10).unwrap();
        assert_eq!(bytes.len(), 11);
        assert_eq!(read_bounded(&[1u8; 10][..], 10).unwrap().len(), 10);
    }
}
