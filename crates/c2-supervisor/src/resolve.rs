use std::ffi::OsStr;
use std::fs::Metadata;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::error::{CommandProblem, Error};

/// Resolves a manifest `runtime.command` (decisions.md): a bare name is an executable regular
/// file in the bundle root if one exists, else the first executable on `search_path`; a name with
/// `/` is bundle-relative, never absolute, without `..`, existing inside the bundle and not
/// passing through a symlink. A symlink in the bundle root does not count as the bundle's
/// program, and only absolute `PATH` entries are searched (an empty or relative entry would
/// resolve against whatever the current directory happens to be).
pub fn resolve_command(
    bundle_dir: &Path,
    command: &str,
    search_path: Option<&OsStr>,
) -> Result<PathBuf, Error> {
    let fail = |problem| Error::Command {
        command: command.to_owned(),
        problem,
    };
    if command.is_empty() {
        return Err(fail(CommandProblem::Empty));
    }
    if !command.contains('/') {
        let local = bundle_dir.join(command);
        return match lstat(&local) {
            Ok(meta) if is_executable_file(&meta) => Ok(local),
            _ => search(command, search_path).ok_or_else(|| fail(CommandProblem::NotFound)),
        };
    }
    let relative = Path::new(command);
    if relative.is_absolute() {
        return Err(fail(CommandProblem::Absolute));
    }
    let mut path = bundle_dir.to_path_buf();
    let mut shown = PathBuf::new();
    let mut last = None;
    for component in relative.components() {
        match component {
            Component::Normal(part) => {
                path.push(part);
                shown.push(part);
            }
            Component::CurDir => continue,
            Component::ParentDir => return Err(fail(CommandProblem::ParentSegment)),
            Component::RootDir | Component::Prefix(_) => {
                return Err(fail(CommandProblem::Absolute));
            }
        }
        let meta = match lstat(&path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(fail(CommandProblem::Missing(shown.display().to_string())));
            }
            Err(error) => return Err(fail(CommandProblem::Io(error.to_string()))),
        };
        if meta.file_type().is_symlink() {
            return Err(fail(CommandProblem::Symlink(shown.display().to_string())));
        }
        last = Some(meta);
    }
    match last {
        Some(meta) if !meta.is_file() => Err(fail(CommandProblem::NotAFile)),
        Some(meta) if !is_executable_file(&meta) => Err(fail(CommandProblem::NotExecutable)),
        Some(_) => Ok(path),
        None => Err(fail(CommandProblem::NotAFile)),
    }
}

/// The absolute path a spec's program runs from: absolute as given, relative to `cwd` when it
/// has a `/` (std leaves that ambiguous, so it is made explicit here), else searched on `PATH`.
pub(crate) fn locate_program(
    program: &OsStr,
    cwd: &Path,
    search_path: Option<&OsStr>,
) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.is_absolute() {
        Some(path.to_path_buf())
    } else if program.as_encoded_bytes().contains(&b'/') {
        Some(cwd.join(path))
    } else {
        search(program, search_path)
    }
}

/// The first executable regular file named `name` in an absolute `PATH` entry; symlinks on
/// `PATH` are followed, as a shell would.
fn search(name: impl AsRef<OsStr>, search_path: Option<&OsStr>) -> Option<PathBuf> {
    let search_path = search_path?;
    std::env::split_paths(search_path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name.as_ref()))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|meta| is_executable_file(&meta)))
}

fn is_executable_file(meta: &Metadata) -> bool {
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

#[expect(
    clippy::disallowed_methods,
    reason = "command resolution must see a symlink itself rather than follow it; this is the supervisor's only lstat"
)]
fn lstat(path: &Path) -> std::io::Result<Metadata> {
    std::fs::symlink_metadata(path)
}
