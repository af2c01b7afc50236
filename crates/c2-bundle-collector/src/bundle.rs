//! From a raw tree to a [`CollectedBundle`]: the manifest, the checks the manifest crate
//! cannot do alone (symlinks on component paths, executables), the inventory and the digest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use c2_manifest::{ExecutableRef, Manifest, ManifestOptions};

#[cfg(feature = "archive")]
use crate::archive::read_archive;
use crate::archive_format::ArchiveFormat;
use crate::diagnostic::{Diagnostic, codes};
use crate::digest::content_digest;
use crate::error::{Error, Result};
use crate::inventory::Inventory;
use crate::limits::{CollectOptions, Limits};
use crate::tree::{FileEntry, Tree};
use crate::walk::{walk_dir, walk_tops};

pub(crate) const MANIFEST: &str = "plugin.json";

/// Files components are read from: a symlink at one refuses the bundle.
const COMPONENT_FILES: [&str; 4] = [
    MANIFEST,
    "mcp.json",
    "hooks/hooks.json",
    "monitors/monitors.json",
];
/// Folders components are read from: a symlink at, above or below one refuses the bundle.
const COMPONENT_DIRS: [&str; 8] = [
    "skills",
    "agents",
    "commands",
    "scenes",
    "scaffolds",
    "templates",
    "hooks",
    "monitors",
];

/// A bundle read into memory, bounded by [`Limits`]. Valid iff no diagnostic is an error.
#[derive(Debug, Clone)]
pub struct CollectedBundle {
    /// Every stored file by bundle-relative path (`/`-separated, no `.` or `..`).
    pub files: BTreeMap<String, FileEntry>,
    /// Every real directory, including empty ones.
    pub directories: BTreeSet<String>,
    /// The manifest, present exactly when plugin.json itself is valid.
    pub manifest: Option<Manifest>,
    /// The contributions found (empty when collection stopped at a limit).
    pub inventory: Inventory,
    /// [`crate::content_digest`] of `files`.
    pub digest: String,
    /// For an archive source: BLAKE3 of the archive bytes, for [`crate::SourceIdentity::Archive`].
    pub archive_digest: Option<String>,
    /// Refusals and warnings, collection order first, then manifest, then bundle checks.
    pub diagnostics: Vec<Diagnostic>,
}

impl CollectedBundle {
    /// No diagnostic is an error: the bundle may be stored.
    pub fn is_valid(&self) -> bool {
        self.error_count() == 0
    }

    /// How many diagnostics are errors.
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    /// The manifest's `name`; `None` when plugin.json is missing or invalid.
    pub fn name(&self) -> Option<&str> {
        self.manifest.as_ref().map(|m| m.name.as_str())
    }

    /// The manifest's `version`; `None` when invalid or when the manifest declares none
    /// (`version` is optional in Agent Plugins 1.0.0).
    pub fn version(&self) -> Option<&str> {
        self.manifest.as_ref().and_then(|m| m.version.as_deref())
    }

    /// Checks the collected files against `limits` again, for a caller that received a
    /// bundle collected elsewhere (perhaps under looser limits) and must apply its own before
    /// storing it. Returns one error per exceeded limit; the entry and archive limits bound
    /// reading and cannot be re-checked from the result.
    pub fn check_limits(&self, limits: &Limits) -> Vec<Diagnostic> {
        let mut tree = Tree::new(*limits);
        for path in self.directories.iter().chain(self.files.keys()) {
            if tree.check_path(path).is_err() {
                break;
            }
        }
        let mut diagnostics = tree.diagnostics;
        let refuse = |code, path: &str, message: String| {
            Diagnostic::error(code, path.to_owned(), message)
                .with_help("collect the bundle again under these limits")
        };
        if self.files.len() > limits.max_files {
            diagnostics.push(refuse(
                codes::LIMIT_FILES,
                "",
                format!("file count limit ({}) exceeded", limits.max_files),
            ));
        }
        let mut total: u64 = 0;
        for (path, entry) in &self.files {
            let len = entry.bytes.len() as u64;
            if len > limits.max_file_bytes {
                diagnostics.push(refuse(
                    codes::LIMIT_FILE_SIZE,
                    path,
                    format!(
                        "file size limit ({} bytes) exceeded by {path}",
                        limits.max_file_bytes
                    ),
                ));
            }
            total = total.saturating_add(len);
        }
        if total > limits.max_bundle_bytes {
            diagnostics.push(refuse(
                codes::LIMIT_BUNDLE_SIZE,
                "",
                format!(
                    "bundle size limit ({} bytes) exceeded",
                    limits.max_bundle_bytes
                ),
            ));
        }
        diagnostics
    }

    /// Validates the collected `plugin.json` again under `options` (an embedder's reserved
    /// namespaces, say) and returns its diagnostics, for a caller whose options decide
    /// validity before anything is stored. A bundle without a readable manifest gives the
    /// missing-manifest error.
    pub fn check_manifest(&self, options: &ManifestOptions) -> Vec<Diagnostic> {
        let text = self
            .files
            .get(MANIFEST)
            .and_then(|entry| std::str::from_utf8(&entry.bytes).ok());
        let Some(text) = text else {
            return vec![Diagnostic::error(
                codes::MISSING_MANIFEST,
                MANIFEST.to_owned(),
                "no readable plugin.json at the bundle root".to_owned(),
            )];
        };
        c2_manifest::validate_manifest(text, options)
            .diagnostics
            .into_iter()
            .map(|d| from_document(d, MANIFEST))
            .collect()
    }
}

/// The files and directories under some top-level folders of a bundle directory (`skills`,
/// `commands`, ...), read with the walk's refusals and limits and nothing else of the bundle:
/// what a reader of one part of an installed bundle needs, without reading or hashing the
/// rest. Nothing is checked against a digest here: the caller vouches for the tree first
/// ([`crate::Store::current_digest`]).
#[derive(Debug, Clone, Default)]
pub struct BundleParts {
    /// Every file under the folders, by bundle-relative path.
    pub files: BTreeMap<String, FileEntry>,
    /// Every directory under them, the folders themselves included.
    pub directories: BTreeSet<String>,
    /// A limit stopped the walk or an entry was refused: the parts are not the whole folders.
    pub refused: bool,
}

/// Reads the parts of the bundle at `root` under the top-level folders `tops` (see
/// [`BundleParts`]). `Err` only when the directory itself cannot be read.
pub fn read_parts(root: &Path, limits: Limits, tops: &[&str]) -> Result<BundleParts> {
    let tree = walk_tops(root, limits, tops)?;
    Ok(BundleParts {
        refused: tree.stopped || tree.diagnostics.iter().any(Diagnostic::is_error),
        files: tree.files,
        directories: tree.dirs,
    })
}

/// Whether any of the top-level entries `tops` exists in the bundle directory at `root`, of
/// whatever kind (a link or a file counts: [`read_parts`] then refuses it). One `fstatat` each
/// relative to the opened root, nothing read: how a reader of some folders of a bundle skips
/// one that has none of them.
pub fn has_any_part(root: &Path, tops: &[&str]) -> bool {
    use std::os::fd::AsFd;
    let flags =
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC;
    let Ok(dir) = nix::fcntl::open(root, flags, nix::sys::stat::Mode::empty()) else {
        return false;
    };
    tops.iter().any(|top| {
        nix::sys::stat::fstatat(dir.as_fd(), *top, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).is_ok()
    })
}

/// Collects a bundle directory (the selected directory is the root; nothing above or below
/// is searched) under `options` (a [`CollectOptions`], or just `&Limits` for the default
/// validator options). `Err` only when the directory itself cannot be read.
pub fn collect_dir(root: &Path, options: impl Into<CollectOptions>) -> Result<CollectedBundle> {
    let options = options.into();
    let tree = walk_dir(root, options.limits)?;
    Ok(analyze(tree, None, &options))
}

/// Collects a `.tar.gz`, `.tgz` or `.zip` archive in memory (feature `archive`, on by
/// default). `plugin.json` must be at the archive root: an archive wrapping the bundle in one
/// top-level folder is refused.
#[cfg(feature = "archive")]
pub fn collect_archive(path: &Path, options: impl Into<CollectOptions>) -> Result<CollectedBundle> {
    let options = options.into();
    let limits = &options.limits;
    let format = ArchiveFormat::from_path(path).ok_or_else(|| Error::UnsupportedArchive {
        path: path.to_owned(),
    })?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns reading bundle archives"
    )]
    let file = std::fs::File::open(path).map_err(Error::io("open", path))?;
    let meta = file.metadata().map_err(Error::io("inspect", path))?;
    if !meta.is_file() {
        return Err(Error::UnsupportedArchive {
            path: path.to_owned(),
        });
    }
    let bytes = crate::walk::read_bounded(file, limits.max_archive_bytes)
        .map_err(Error::io("read", path))?;
    Ok(collect_archive_bytes(&bytes, format, &options))
}

/// [`collect_archive`] for bytes already in memory (feature `archive`, on by default).
#[cfg(feature = "archive")]
pub fn collect_archive_bytes(
    bytes: &[u8],
    format: ArchiveFormat,
    options: impl Into<CollectOptions>,
) -> CollectedBundle {
    let options = options.into();
    let limits = &options.limits;
    let archive_digest = Some(blake3::hash(bytes).to_hex().to_string());
    if bytes.len() as u64 > limits.max_archive_bytes {
        let mut tree = Tree::new(*limits);
        tree.refuse(
            Diagnostic::error(
                codes::LIMIT_ARCHIVE_SIZE,
                None,
                format!(
                    "archive size limit ({} bytes) exceeded",
                    limits.max_archive_bytes
                ),
            )
            .with_help("ship a smaller bundle"),
        );
        tree.stopped = true;
        return analyze(tree, archive_digest, &options);
    }
    analyze(
        read_archive(bytes, format, *limits, None),
        archive_digest,
        &options,
    )
}

/// Collects a tarball made by `npm pack` (feature `archive`): every entry sits in npm's
/// `package/` folder, which is removed (the one wrapping folder accepted, and only here),
/// under the archive limits.
#[cfg(feature = "archive")]
pub fn collect_npm_tarball_bytes(
    bytes: &[u8],
    options: impl Into<CollectOptions>,
) -> CollectedBundle {
    let options = options.into();
    let limits = &options.limits;
    let archive_digest = Some(blake3::hash(bytes).to_hex().to_string());
    if bytes.len() as u64 > limits.max_archive_bytes {
        return collect_archive_bytes(bytes, ArchiveFormat::TarGz, options);
    }
    analyze(
        read_archive(
            bytes,
            ArchiveFormat::TarGz,
            *limits,
            Some(NPM_PACKAGE_FOLDER),
        ),
        archive_digest,
        &options,
    )
}

/// The folder `npm pack` puts a package's files in.
pub const NPM_PACKAGE_FOLDER: &str = "package";

/// A directory, or an archive recognized by its extension (refused with
/// [`Error::ArchiveSupportNotBuilt`] when the `archive` feature is off), collected under
/// `options` (a [`CollectOptions`], or just `&Limits` for the default validator options).
pub fn collect(path: &Path, options: impl Into<CollectOptions>) -> Result<CollectedBundle> {
    let options = options.into();
    if ArchiveFormat::from_path(path).is_some() && path.is_file() {
        #[cfg(feature = "archive")]
        return collect_archive(path, &options);
        #[cfg(not(feature = "archive"))]
        return Err(Error::ArchiveSupportNotBuilt {
            path: path.to_owned(),
        });
    }
    collect_dir(path, &options)
}

fn analyze(
    tree: Tree,
    archive_digest: Option<String>,
    options: &CollectOptions,
) -> CollectedBundle {
    let Tree {
        files,
        dirs,
        links,
        mut diagnostics,
        stopped,
        ..
    } = tree;
    if stopped {
        // Checking a partial tree would only add misleading findings (a missing manifest
        // that was simply not reached); the limit refusal says all there is to say.
        let digest = content_digest(&files);
        let inventory = Inventory::default();
        return CollectedBundle {
            files,
            directories: dirs,
            manifest: None,
            inventory,
            digest,
            archive_digest,
            diagnostics,
        };
    }
    let is_archive = archive_digest.is_some();
    let manifest = read_manifest(
        &files,
        &dirs,
        &links,
        is_archive,
        &options.manifest,
        &mut diagnostics,
    );

    let executables = manifest.as_ref().map(executable_paths).unwrap_or_default();
    check_links(&links, manifest.as_ref(), &executables, &mut diagnostics);
    for (owner, path, bare) in &executables {
        check_executable(owner, path, *bare, &files, &dirs, &links, &mut diagnostics);
    }
    // A location of the wrong kind disables that component type, never the bundle
    // (Agent Plugins §6.2, §11.3); mcp.json as a directory is reported by the inventory.
    for dir in COMPONENT_DIRS {
        if files.contains_key(dir) {
            diagnostics.push(crate::components::wrong_kind(
                dir,
                "a directory",
                "a regular file",
                dir,
            ));
        }
    }
    for file in &COMPONENT_FILES[2..] {
        if dirs.contains(*file) {
            diagnostics.push(crate::components::wrong_kind(
                file,
                "a regular file",
                "a directory",
                file.split('/').next().unwrap_or(file),
            ));
        }
    }
    crate::hidden_text::check(&files, &dirs, manifest.as_ref(), &mut diagnostics);
    let inventory = crate::components::inventory(
        &files,
        &dirs,
        manifest.as_ref(),
        &options.skills,
        &mut diagnostics,
    );
    let digest = content_digest(&files);
    CollectedBundle {
        files,
        directories: dirs,
        manifest,
        inventory,
        digest,
        archive_digest,
        diagnostics,
    }
}

fn read_manifest(
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    links: &[crate::tree::InsideLink],
    is_archive: bool,
    options: &ManifestOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Manifest> {
    let Some(entry) = files.get(MANIFEST) else {
        let refused = diagnostics
            .iter()
            .any(|d| d.is_error() && d.file.as_deref() == Some(MANIFEST));
        if refused || links.iter().any(|link| link.path == MANIFEST) {
            // Already refused (a symlink, a FIFO, an unreadable entry): say it once.
            return None;
        }
        let top: BTreeSet<&str> = files
            .keys()
            .chain(dirs.iter())
            .map(|p| p.split('/').next().unwrap_or(p))
            .collect();
        let wrapped = match top.iter().next() {
            Some(only) if top.len() == 1 && files.contains_key(&format!("{only}/{MANIFEST}")) => {
                Some(*only)
            }
            _ => None,
        };
        let diagnostic = match wrapped {
            Some(folder) if is_archive => Diagnostic::error(
                codes::ARCHIVE_WRAPPED_ROOT,
                format!("{folder}/{MANIFEST}"),
                format!("plugin.json is inside the top-level folder {folder}, not at the archive root"),
            )
            .with_help(format!("repack the archive from inside {folder} so plugin.json is at its root")),
            _ => Diagnostic::error(codes::MISSING_MANIFEST, MANIFEST.to_owned(), "no plugin.json at the bundle root".to_owned())
                .with_help("select the directory that holds plugin.json; parents and children are not searched"),
        };
        diagnostics.push(diagnostic);
        return None;
    };
    let Ok(source) = std::str::from_utf8(&entry.bytes) else {
        diagnostics.push(
            Diagnostic::error(
                codes::MANIFEST_NOT_UTF8,
                MANIFEST.to_owned(),
                "plugin.json is not UTF-8".to_owned(),
            )
            .with_help("save plugin.json as UTF-8"),
        );
        return None;
    };
    let report = c2_manifest::validate_manifest(source, options);
    diagnostics.extend(
        report
            .diagnostics
            .into_iter()
            .map(|d| from_document(d, MANIFEST)),
    );
    report.manifest
}

/// Carries a c2-manifest diagnostic over, naming the file it was found in.
pub(crate) fn from_document(d: c2_manifest::Diagnostic, file: &str) -> Diagnostic {
    d.in_file(file)
}

/// `(owner, path)` of every executable the manifest names that may be a bundle file: a
/// command containing `/` (normalized), or a bare name (a bundle-root file if one exists).
fn executable_paths(manifest: &Manifest) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    let codetwo = &manifest.codetwo;
    let runtime = codetwo
        .runtime
        .as_ref()
        .map(|r| ("runtime".to_owned(), r.executable()));
    let servers = codetwo
        .language_servers
        .iter()
        .map(|ls| (format!("language server {}", ls.id), ls.executable()));
    for (owner, executable) in runtime.into_iter().chain(servers) {
        let (path, bare) = match executable {
            ExecutableRef::BareName(name) => (name.to_owned(), true),
            ExecutableRef::BundleRelative(path) => (normalize_relative(path), false),
        };
        found.push((owner, path, bare));
    }
    found
}

/// `./bin//x` is `bin/x`. The manifest validator has already refused absolute and `..` paths.
pub(crate) fn normalize_relative(path: &str) -> String {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

fn check_executable(
    owner: &str,
    path: &str,
    bare: bool,
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    links: &[crate::tree::InsideLink],
    diagnostics: &mut Vec<Diagnostic>,
) {
    if links
        .iter()
        .any(|link| link.path == path || path.starts_with(&format!("{}/", link.path)))
    {
        // Refused as a symlinked component path already.
        return;
    }
    match files.get(path) {
        Some(entry) if entry.executable => {}
        Some(_) => diagnostics.push(
            Diagnostic::error(
                codes::COMMAND_NOT_EXECUTABLE,
                path.to_owned(),
                format!("the {owner} command {path} is not executable"),
            )
            .with_help(format!(
                "run chmod +x {path}, or name an interpreter as the command and {path} in args"
            )),
        ),
        // A bare name with no bundle-root file is looked up on PATH at spawn.
        None if bare => {}
        None if dirs.contains(path) => diagnostics.push(
            Diagnostic::error(
                codes::COMMAND_NOT_REGULAR,
                path.to_owned(),
                format!("the {owner} command {path} is a directory, not a regular file"),
            )
            .with_help("point the command at the executable file"),
        ),
        None => diagnostics.push(
            Diagnostic::error(
                codes::COMMAND_MISSING,
                path.to_owned(),
                format!("the {owner} command {path} is not in the bundle"),
            )
            .with_help("add the executable to the bundle or fix the command path"),
        ),
    }
}

/// Inside symlinks are skipped with a warning unless they sit on a component path.
fn check_links(
    links: &[crate::tree::InsideLink],
    manifest: Option<&Manifest>,
    executables: &[(String, String, bool)],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut exact: Vec<String> = COMPONENT_FILES.iter().map(|s| (*s).to_owned()).collect();
    exact.extend(executables.iter().map(|(_, path, _)| path.clone()));
    // Arguments often name the script an interpreter runs (`node dist/plugin.js`).
    if let Some(manifest) = manifest {
        let codetwo = &manifest.codetwo;
        let args = codetwo.runtime.iter().flat_map(|r| r.args.iter()).chain(
            codetwo
                .language_servers
                .iter()
                .flat_map(|ls| ls.args.iter()),
        );
        exact.extend(
            args.filter(|arg| !arg.starts_with('-'))
                .map(|arg| normalize_relative(arg))
                .filter(|arg| !arg.is_empty()),
        );
    }
    for link in links {
        let under = |component: &str| component.starts_with(&format!("{}/", link.path));
        let hit = exact
            .iter()
            .find(|component| **component == link.path || under(component))
            .cloned()
            .or_else(|| {
                COMPONENT_DIRS
                    .iter()
                    .find(|dir| {
                        **dir == link.path
                            || under(dir)
                            || link.path.starts_with(&format!("{dir}/"))
                    })
                    .map(|dir| format!("{dir}/"))
            });
        let diagnostic = match hit {
            Some(component) => Diagnostic::error(
                codes::SYMLINK_COMPONENT_PATH,
                link.path.clone(),
                format!(
                    "symlink {} -> {} is on the component path {component}",
                    link.path, link.target
                ),
            )
            .with_help("replace the symlink with the real file or directory"),
            None => Diagnostic::warning(
                codes::SYMLINK_SKIPPED,
                link.path.clone(),
                format!(
                    "symlink {} -> {} skipped: symlinks are never stored",
                    link.path, link.target
                ),
            ),
        };
        diagnostics.push(diagnostic);
    }
}
