//! Git sources: cloned with the system `git` through c2-supervisor's one-shot runner into a
//! temporary directory inside the store, checked out at the requested ref with hooks,
//! submodules and symlinks disabled, and collected like a directory; the exact commit is
//! recorded. Nothing from the repository runs. A ref or URL that starts with `-` is refused
//! before git sees it, and the subdirectory must be a real directory of the commit's trees and
//! of the checkout: a symlink or a submodule on the way refuses the source.

use std::path::Path;

use c2_bundle_collector::{InstallRequest, Provenance, ProvenanceKind, SourceIdentity};
use c2_supervisor::ProcessSpec;

use crate::error::SourceError;
use crate::fetch::{FetchOptions, Fetched, WorkDir};
use crate::source::GitSource;

pub(crate) async fn fetch_git(
    source: &GitSource,
    options: &FetchOptions,
) -> Result<Fetched, SourceError> {
    let work = WorkDir::new(options)?;
    let (checkout, dir, commit) = checkout(source, options, &work.0).await?;
    let skipped = remove_link_placeholders(options, &checkout, &commit, source).await?;
    let mut bundle = c2_bundle_collector::collect_dir(&dir, &options.collect)?;
    for rel in skipped {
        bundle.diagnostics.push(c2_bundle_collector::Diagnostic {
            code: c2_bundle_collector::codes::SYMLINK_SKIPPED,
            severity: c2_bundle_collector::Severity::Warning,
            file: Some(rel.clone()),
            pointer: None,
            line: None,
            column: None,
            message: format!("symlink {rel} skipped: git sources are checked out without symlinks"),
            help: Some("replace the symlink with the file it points to".to_owned()),
        });
    }
    let mut request = InstallRequest::new(SourceIdentity::git(&source.url, &source.subdir));
    let kind = if source.url.starts_with("https://github.com/") {
        ProvenanceKind::Github
    } else {
        ProvenanceKind::Git
    };
    let mut provenance = Provenance::new(kind, &source.url, request.installed_at);
    provenance.reference.clone_from(&source.reference);
    provenance.commit = Some(commit.clone());
    provenance.subdir = Some(source.subdir.clone());
    request.provenance = Some(provenance);
    request.commit = Some(commit);
    Ok(Fetched::new(bundle, request, options))
}

/// A git checkout that lives as long as its [`WorkDir`]: a catalog read from a repository.
#[derive(Debug)]
pub(crate) struct Checkout {
    pub(crate) _work: WorkDir,
    /// The source's subdirectory in the checkout.
    pub(crate) dir: std::path::PathBuf,
}

/// Clones and checks out a git source (hardened like [`fetch_git`]) and keeps the checkout.
pub(crate) async fn checkout_git(
    source: &GitSource,
    options: &FetchOptions,
) -> Result<Checkout, SourceError> {
    let work = WorkDir::new(options)?;
    let (checkout, dir, commit) = self::checkout(source, options, &work.0).await?;
    remove_link_placeholders(options, &checkout, &commit, source).await?;
    Ok(Checkout { _work: work, dir })
}

/// Clones into `work/checkout` and checks the requested ref out detached; returns the
/// checkout, the source's subdirectory in it and HEAD, which must be the resolved commit.
async fn checkout(
    source: &GitSource,
    options: &FetchOptions,
    work: &Path,
) -> Result<(std::path::PathBuf, std::path::PathBuf, String), SourceError> {
    if let Some(reference) = source.reference.as_deref()
        && reference.starts_with('-')
    {
        return Err(SourceError::Unsafe(format!(
            "the ref `{reference}` starts with `-`, so git would read it as an option; nothing was fetched: name a branch, tag or commit"
        )));
    }
    if source.url.starts_with('-') {
        return Err(SourceError::Unsafe(format!(
            "the URL `{}` starts with `-`; nothing was fetched: give a repository URL",
            source.url
        )));
    }
    let checkout = work.join("checkout");
    git(
        options,
        work,
        &[
            "clone",
            "--quiet",
            "--no-checkout",
            "--no-recurse-submodules",
            // No template directory: no hooks copied in from the user's `init.templateDir`.
            "--template=",
            "--",
            &source.url,
            "checkout",
        ],
    )
    .await?;
    let reference = source.reference.as_deref().unwrap_or("HEAD");
    // A branch other than the default one exists only as a remote-tracking ref after clone.
    let mut commit = None;
    for candidate in [
        format!("{reference}^{{commit}}"),
        format!("refs/remotes/origin/{reference}^{{commit}}"),
    ] {
        let args = [
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &candidate,
        ];
        if let Ok(found) = git(options, &checkout, &args).await {
            commit = Some(found.trim().to_owned());
            break;
        }
    }
    let commit = commit.ok_or_else(|| {
        SourceError::Git(format!(
            "`{reference}` is not a branch, tag or commit of {}: check the ref after `#`",
            source.url
        ))
    })?;
    check_subdirectory_in_tree(options, &checkout, &commit, source).await?;
    git(
        options,
        &checkout,
        &[
            "checkout",
            "--quiet",
            "--detach",
            "--no-recurse-submodules",
            &commit,
            "--",
        ],
    )
    .await?;
    // What is on disk is HEAD: it must be the commit resolved above, compared in full.
    let head = git(
        options,
        &checkout,
        &["rev-parse", "--verify", "--end-of-options", "HEAD^{commit}"],
    )
    .await?;
    if head.trim() != commit {
        return Err(SourceError::Git(format!(
            "the checkout of {} is at {} instead of {commit}; nothing was stored",
            source.url,
            head.trim()
        )));
    }
    // Checked again on disk, without following anything: the checkout must agree.
    let dir = c2_bundle_collector::resolve_subdirectory(&checkout, &source.subdir)
        .map_err(|why| unsafe_subdirectory(source, &why.to_string()))?;
    Ok((checkout, dir, commit))
}

fn unsafe_subdirectory(source: &GitSource, why: &str) -> SourceError {
    SourceError::Unsafe(format!(
        "the subdirectory `{}` of {} cannot be a bundle root: {why}; nothing was stored: name a real directory of the repository",
        source.subdir, source.url
    ))
}

/// Walks the subdirectory through the commit's trees, one component at a time: each must be
/// a tree object, never a symlink (mode 120000) or a submodule (160000).
async fn check_subdirectory_in_tree(
    options: &FetchOptions,
    checkout: &Path,
    commit: &str,
    source: &GitSource,
) -> Result<(), SourceError> {
    if source.subdir.is_empty() {
        return Ok(());
    }
    let mut prefix = String::new();
    for part in source.subdir.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(unsafe_subdirectory(
                source,
                "it is not a plain relative path (no `.`, `..` or empty parts)",
            ));
        }
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        let listing = git(
            options,
            checkout,
            &["ls-tree", "-z", "--full-tree", commit, "--", &prefix],
        )
        .await?;
        let mode = listing
            .split('\0')
            .filter_map(|record| record.split_once('\t'))
            .find(|(_, path)| *path == prefix)
            .and_then(|(meta, _)| meta.split(' ').next());
        let why = match mode {
            Some("040000") => continue,
            Some("120000") => format!("{prefix} is a symlink, which is never followed"),
            Some("160000") => format!("{prefix} is a submodule, which is never fetched"),
            Some(_) => format!("{prefix} is a file, not a directory"),
            None => format!("{prefix} does not exist at {commit}"),
        };
        return Err(unsafe_subdirectory(source, &why));
    }
    Ok(())
}

/// With `core.symlinks=false` git writes a symlink as a small file holding its target; those
/// placeholders are removed so they are never stored as content. Returns their bundle paths.
async fn remove_link_placeholders(
    options: &FetchOptions,
    checkout: &Path,
    commit: &str,
    source: &GitSource,
) -> Result<Vec<String>, SourceError> {
    let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit];
    if !source.subdir.is_empty() {
        args.extend(["--", source.subdir.as_str()]);
    }
    let listing = git(options, checkout, &args).await?;
    let mut skipped = Vec::new();
    for (meta, path) in listing
        .split('\0')
        .filter_map(|record| record.split_once('\t'))
    {
        if !meta.starts_with("120000 ") {
            continue;
        }
        let rel = match source.subdir.as_str() {
            "" => path,
            subdir => match path
                .strip_prefix(subdir)
                .and_then(|rest| rest.strip_prefix('/'))
            {
                Some(rel) => rel,
                None => continue,
            },
        };
        let placeholder = checkout.join(path);
        match std::fs::remove_file(&placeholder) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(SourceError::io("remove", &placeholder)(error)),
        }
        skipped.push(rel.to_owned());
    }
    Ok(skipped)
}

/// Runs git with hooks, symlinks, submodules, prompts, fsmonitor, the `ext::` transport and
/// the system configuration out of the way; returns stdout.
async fn git(options: &FetchOptions, cwd: &Path, args: &[&str]) -> Result<String, SourceError> {
    let spec = ProcessSpec::new(&options.git_program, cwd)
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.symlinks=false",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "submodule.recurse=false",
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "advice.detachedHead=false",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .label("git");
    let output = c2_supervisor::run(&spec, &options.git_run)
        .await
        .map_err(|error| SourceError::Git(error.to_string()))?;
    if !output.exit.success() {
        return Err(SourceError::Git(format!(
            "`git {}` {}: {}",
            args.join(" "),
            output.exit,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
