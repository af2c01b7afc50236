//! Where a bundle comes from: a directory, an archive, or a git repository.
//!
//! Git sources (`git+URL#REF:SUBDIR`, or a GitHub repository or `/tree/<ref>/<path>` URL) are
//! cloned with the system `git` through c2-supervisor's one-shot runner into a temporary
//! directory inside the store, checked out at the requested ref with hooks disabled, collected
//! like a directory, and the exact commit is recorded. Nothing from the repository runs.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use c2_bundle_collector::{CollectedBundle, InstallRequest, SourceIdentity};
use c2_supervisor::ProcessSpec;

use crate::error::HostError;
use crate::options::HostOptions;

/// A collected bundle and how to record its installation.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) bundle: CollectedBundle,
    pub(crate) request: InstallRequest,
}

/// A parsed git source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitSource {
    pub(crate) url: String,
    pub(crate) reference: Option<String>,
    pub(crate) subdir: String,
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
        return Some(GitSource {
            url: url.to_owned(),
            reference: reference.filter(|r| !r.is_empty()).map(str::to_owned),
            subdir: subdir.trim_matches('/').to_owned(),
        });
    }
    let rest = source
        .strip_prefix("https://github.com/")
        .or_else(|| source.strip_prefix("http://github.com/"))?;
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let (owner, repo) = (parts.first()?, parts.get(1)?);
    let repo = repo.trim_end_matches(".git");
    let url = format!("https://github.com/{owner}/{repo}.git");
    match parts.get(2) {
        None => Some(GitSource {
            url,
            reference: None,
            subdir: String::new(),
        }),
        Some(&"tree") => Some(GitSource {
            url,
            reference: parts.get(3).map(|r| (*r).to_owned()),
            subdir: parts.get(4..).map(|p| p.join("/")).unwrap_or_default(),
        }),
        Some(_) => None,
    }
}

pub(crate) async fn fetch(source: &str, options: &HostOptions) -> Result<Fetched, HostError> {
    if let Some(git) = parse_git(source) {
        return fetch_git(&git, options).await;
    }
    let path = Path::new(source);
    if !path.exists() {
        return Err(HostError::UnsupportedSource(format!(
            "{source}: no such directory or archive; give a bundle directory, a .tar.gz/.tgz/.zip archive, a git+URL#REF:SUBDIR or a GitHub URL"
        )));
    }
    let bundle = c2_bundle_collector::collect(path, &options.limits)?;
    let identity = match &bundle.archive_digest {
        Some(digest) => SourceIdentity::Archive {
            digest: digest.clone(),
        },
        None => SourceIdentity::local(path)?,
    };
    Ok(Fetched {
        bundle,
        request: InstallRequest::new(identity),
    })
}

async fn fetch_git(source: &GitSource, options: &HostOptions) -> Result<Fetched, HostError> {
    let work = options.plugins_dir.join(".git-fetch").join(unique_name());
    std::fs::create_dir_all(&work).map_err(HostError::io("create", &work))?;
    let result = clone_and_collect(source, options, &work).await;
    if let Err(error) = std::fs::remove_dir_all(&work) {
        tracing::warn!("cannot remove {}: {error}", work.display());
    }
    result
}

async fn clone_and_collect(
    source: &GitSource,
    options: &HostOptions,
    work: &Path,
) -> Result<Fetched, HostError> {
    let checkout = work.join("checkout");
    git(
        options,
        work,
        &[
            "clone",
            "--quiet",
            "--no-checkout",
            "--no-recurse-submodules",
            "--",
            &source.url,
            "checkout",
        ],
    )
    .await?;
    let reference = source.reference.as_deref().unwrap_or("HEAD");
    git(
        options,
        &checkout,
        &["checkout", "--quiet", "--detach", reference, "--"],
    )
    .await?;
    let commit = git(options, &checkout, &["rev-parse", "HEAD"]).await?;
    let dir: PathBuf = if source.subdir.is_empty() {
        checkout.clone()
    } else {
        if source
            .subdir
            .split('/')
            .any(|part| part == ".." || part.is_empty())
        {
            return Err(HostError::UnsupportedSource(format!(
                "the subdirectory `{}` must be a plain relative path",
                source.subdir
            )));
        }
        checkout.join(&source.subdir)
    };
    if !dir.is_dir() {
        return Err(HostError::UnsupportedSource(format!(
            "`{}` is not a directory at {reference} of {}",
            source.subdir, source.url
        )));
    }
    let bundle = c2_bundle_collector::collect(&dir, &options.limits)?;
    let mut request = InstallRequest::new(SourceIdentity::git(&source.url, &source.subdir));
    request.commit = Some(commit.trim().to_owned());
    Ok(Fetched { bundle, request })
}

/// Runs git with hooks, prompts and system configuration out of the way; returns stdout.
async fn git(options: &HostOptions, cwd: &Path, args: &[&str]) -> Result<String, HostError> {
    let spec = ProcessSpec::new(&options.git_program, cwd)
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "advice.detachedHead=false",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .label("git");
    let output = c2_supervisor::run(&spec, &options.run)
        .await
        .map_err(|error| HostError::Git(error.to_string()))?;
    if !output.exit.success() {
        return Err(HostError::Git(format!(
            "`git {}` {}: {}",
            args.join(" "),
            output.exit,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn unique_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_plus_urls_carry_a_ref_and_a_subdirectory() {
        assert_eq!(
            parse_git("git+file:///repo#v1:packs/a/"),
            Some(GitSource {
                url: "file:///repo".into(),
                reference: Some("v1".into()),
                subdir: "packs/a".into()
            })
        );
        assert_eq!(
            parse_git("git+https://x/r.git"),
            Some(GitSource {
                url: "https://x/r.git".into(),
                reference: None,
                subdir: String::new()
            })
        );
    }

    #[test]
    fn github_repository_and_tree_urls_are_git_sources() {
        assert_eq!(
            parse_git("https://github.com/o/r/tree/main/packs/hello"),
            Some(GitSource {
                url: "https://github.com/o/r.git".into(),
                reference: Some("main".into()),
                subdir: "packs/hello".into()
            })
        );
        assert_eq!(parse_git("https://github.com/o/r").unwrap().reference, None);
        assert_eq!(parse_git("https://github.com/o/r/blob/main/x"), None);
        assert_eq!(parse_git("./packs/hello"), None);
    }
}
