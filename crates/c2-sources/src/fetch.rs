//! Fetching at the edge: a parsed source becomes a bundle collected once, with the caller's
//! [`CollectOptions`], and the request that records its installation.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use c2_bundle_collector::{
    CollectOptions, CollectedBundle, InstallRequest, Provenance, ProvenanceKind, SourceIdentity,
};
use c2_supervisor::RunOptions;

use crate::catalog::HubOptions;
use crate::error::SourceError;
use crate::git;
use crate::source::Source;

/// Where and how sources are fetched. [`FetchOptions::new`] has the defaults; assign the
/// public fields for the rest.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FetchOptions {
    /// The plugin store: temporary checkouts and npm work directories live under
    /// `.git-fetch/` in it and are removed when the fetch ends.
    pub work_dir: PathBuf,
    /// What every bundle is collected with: the caller's limits and validator options. The
    /// returned [`Fetched::collected_with`] is this, so a caller with the same options need
    /// not check the bundle again.
    pub collect: CollectOptions,
    /// The `git` program (`git`, found on `PATH`).
    pub git_program: PathBuf,
    /// Caps and deadline of one `git` command.
    pub git_run: RunOptions,
    /// Catalog sources: programs, deadlines and size bounds.
    pub hub: HubOptions,
}

impl FetchOptions {
    /// The defaults for a store at `work_dir`.
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            work_dir: work_dir.into(),
            collect: CollectOptions::default(),
            git_program: PathBuf::from("git"),
            git_run: RunOptions::default(),
            hub: HubOptions::default(),
        }
    }
}

/// A collected bundle and how to record its installation.
#[derive(Debug)]
#[non_exhaustive]
pub struct Fetched {
    /// The bundle, collected once under [`Fetched::collected_with`].
    pub bundle: CollectedBundle,
    /// The source identity, commit and catalog origin to record.
    pub request: InstallRequest,
    /// The options the bundle was collected and validated with.
    pub collected_with: CollectOptions,
    /// The catalog entry asks for the bundle to be enabled when it is installed (Codex's
    /// `INSTALLED_BY_DEFAULT`); never trust.
    pub default_enabled: bool,
}

impl Fetched {
    pub(crate) fn new(
        bundle: CollectedBundle,
        request: InstallRequest,
        options: &FetchOptions,
    ) -> Self {
        Self {
            bundle,
            request,
            collected_with: options.collect.clone(),
            default_enabled: false,
        }
    }
}

/// Fetches a directory, archive or git source and collects it with `options.collect`. A
/// catalog entry is fetched through [`crate::Catalogs::fetch_entry`] (it needs the store's
/// configured catalogs); here it is refused as unsupported.
pub async fn fetch(source: &Source, options: &FetchOptions) -> Result<Fetched, SourceError> {
    match source {
        Source::Git(git) => git::fetch_git(git, options).await,
        Source::Directory(path) | Source::Archive(path) => fetch_path(path, &options.collect),
        Source::Catalog(entry) => Err(SourceError::Unsupported(format!(
            "{}: a catalog entry is fetched from its catalog",
            entry.name
        ))),
    }
}

/// Collects a local directory or archive ([`Source::Directory`], [`Source::Archive`]) with
/// `collect`; nothing is awaited, so a caller without a runtime can use it.
pub fn fetch_path(path: &Path, collect: &CollectOptions) -> Result<Fetched, SourceError> {
    let bundle = c2_bundle_collector::collect(path, collect)?;
    let resolved = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let (identity, kind, sha256) = match &bundle.archive_digest {
        Some(digest) => {
            // Read again for the SHA-256 a provenance records; the bytes must be the ones
            // collected.
            let mut options = FetchOptions::new(".");
            options.collect = collect.clone();
            let bytes = crate::remote::read_local_file(&resolved, &options)?;
            let identity = SourceIdentity::Archive {
                digest: digest.clone(),
            };
            if SourceIdentity::archive(&bytes) != identity {
                return Err(SourceError::FetchFailed(format!(
                    "{} changed while it was read; nothing was stored",
                    path.display()
                )));
            }
            let sha256 = crate::remote::sha256_hex(&bytes);
            (identity, ProvenanceKind::Archive, Some(sha256))
        }
        None => (
            SourceIdentity::local(path)?,
            ProvenanceKind::Directory,
            None,
        ),
    };
    let mut request = InstallRequest::new(identity);
    let location = resolved.display().to_string();
    let mut provenance = Provenance::new(kind, location, request.installed_at);
    provenance.sha256 = sha256;
    request.provenance = Some(provenance);
    Ok(Fetched {
        bundle,
        request,
        collected_with: collect.clone(),
        default_enabled: false,
    })
}

/// A private temporary directory inside the store, removed when dropped.
#[derive(Debug)]
pub(crate) struct WorkDir(pub(crate) PathBuf);

#[expect(
    clippy::disallowed_methods,
    reason = "a fetch's private work directory is c2-sources' own scratch space"
)]
impl WorkDir {
    pub(crate) fn new(options: &FetchOptions) -> Result<Self, SourceError> {
        let work = options.work_dir.join(".git-fetch").join(unique_name());
        std::fs::create_dir_all(&work).map_err(SourceError::io("create", &work))?;
        Ok(Self(work))
    }

    /// Creates the directory `name` inside this one.
    pub(crate) fn subdir(&self, name: &str) -> Result<PathBuf, SourceError> {
        let dir = self.0.join(name);
        std::fs::create_dir_all(&dir).map_err(SourceError::io("create", &dir))?;
        Ok(dir)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!("cannot remove {}: {error}", self.0.display());
        }
        // The shared parent goes too once empty, so a fetch leaves no trace in the store.
        if let Some(parent) = self.0.parent() {
            let _ignored = std::fs::remove_dir(parent);
        }
    }
}

fn unique_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}
