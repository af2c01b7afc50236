//! The `source` of a Claude Code or Codex catalog entry, brought to a [`MarketplaceSource`]:
//! a path string under the catalog root, or an object whose `source` names its type (`local`,
//! `github`, `url`, `git-subdir`, `npm`). Part of [`crate::validate_catalog`].

use crate::catalog_formats::{ignored_keys, joined, relative};
use crate::check::Checker;
use crate::json::Node;
use crate::marketplace::{MarketplaceSource, is_npm_registry_name};

/// `owner/name` of a GitHub repository.
fn is_github_repo(s: &str) -> bool {
    let part = |x: &str| {
        !x.is_empty()
            && x != ".."
            && x.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'))
    };
    s.split_once('/').is_some_and(|(o, r)| part(o) && part(r))
}

pub(crate) fn source(
    node: &Node<'_>,
    ptr: &str,
    plugin_root: Option<&str>,
    entry_version: Option<&str>,
    c: &mut Checker<'_, '_>,
) -> Option<MarketplaceSource> {
    if let Some(path) = node.as_str() {
        let path = relative(c, node, ptr, path, "the source path")?;
        return Some(MarketplaceSource::Local {
            path: joined(plugin_root, path),
        });
    }
    let members = c.object(node, ptr)?;
    let (kn, kp, kind) = c.string_field(node, ptr, "source", true)?;
    let allowed: &[&str] = match kind {
        "local" => &["source", "path"],
        "github" => &["source", "repo", "ref", "sha"],
        "url" => &["source", "url", "ref", "sha"],
        "git-subdir" => &["source", "url", "path", "ref", "sha"],
        "npm" => &["source", "package", "version", "registry"],
        other => {
            c.sink.error(
                "source-kind-unknown",
                &kp,
                kn.start,
                format!("source type `{other}` is not one this host fetches"),
                Some("use a path, or a local, github, url, git-subdir or npm source"),
            );
            return None;
        }
    };
    ignored_keys(c, members, ptr, &[allowed]);
    let text = |c: &mut Checker<'_, '_>, key: &str, required: bool| {
        c.string_field(node, ptr, key, required)
            .map(|(n, p, s)| (n, p, s.to_owned()))
    };
    // A `sha` pins the commit: it is what is checked out, and HEAD must be it.
    let reference = |c: &mut Checker<'_, '_>| {
        let sha = text(c, "sha", false).map(|(n, p, s)| {
            if s.len() != 40 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                c.sink.error(
                    "source-sha-invalid",
                    &p,
                    n.start,
                    format!("`sha` \"{s}\" is not a full 40-hex-digit commit"),
                    Some("give the full commit SHA, or leave `sha` out"),
                );
            }
            s
        });
        let named = text(c, "ref", false).map(|(_, _, s)| s);
        sha.or(named)
    };
    let git_url = |c: &mut Checker<'_, '_>| {
        text(c, "url", true).and_then(|(n, p, s)| {
            if s.trim().is_empty() || s.starts_with('-') || s.contains("::") {
                c.sink.error(
                    "source-url-invalid",
                    &p,
                    n.start,
                    format!("`url` `{s}` is not a git repository URL"),
                    Some("give the repository's clone URL"),
                );
                return None;
            }
            Some(s)
        })
    };
    match kind {
        "local" => {
            let (n, p, path) = text(c, "path", true)?;
            let path = relative(c, n, &p, &path, "the source path")?;
            Some(MarketplaceSource::Local { path })
        }
        "github" => {
            let repo = text(c, "repo", true).and_then(|(n, p, s)| {
                if is_github_repo(&s) {
                    return Some(s);
                }
                c.sink.error(
                    "source-repo-invalid",
                    &p,
                    n.start,
                    format!("`repo` `{s}` is not `owner/name`"),
                    Some("write the GitHub repository as owner/name"),
                );
                None
            });
            let r#ref = reference(c);
            Some(MarketplaceSource::Github {
                repo: repo?,
                r#ref,
                path: None,
            })
        }
        "url" | "git-subdir" => {
            let url = git_url(c);
            let path = if kind == "git-subdir" {
                text(c, "path", true).and_then(|(n, p, s)| relative(c, n, &p, &s, "`path`"))
            } else {
                Some(String::new())
            };
            let r#ref = reference(c);
            let (url, path) = (url?, path?);
            let path = (!path.is_empty()).then_some(path);
            // `owner/name` is GitHub's shorthand.
            Some(if is_github_repo(&url) && !url.contains(':') {
                MarketplaceSource::Github {
                    repo: url.trim_end_matches(".git").to_owned(),
                    r#ref,
                    path,
                }
            } else {
                MarketplaceSource::Git { url, r#ref, path }
            })
        }
        _ => {
            if let Some((n, p, _)) = text(c, "registry", false) {
                c.sink.error(
                    "source-npm-registry-unsupported",
                    &p,
                    n.start,
                    "an npm `registry` other than the one npm is configured with is not fetched",
                    Some("publish to the default registry, or use a git source"),
                );
            }
            let package = text(c, "package", true).and_then(|(n, p, s)| {
                if is_npm_registry_name(&s) {
                    return Some(s);
                }
                c.sink.error(
                    "source-npm-package-invalid",
                    &p,
                    n.start,
                    format!("npm `package` `{s}` is not a registry package name"),
                    Some(
                        "name a registry package (`name` or `@scope/name`) with an exact `version`",
                    ),
                );
                None
            });
            let version = text(c, "version", false)
                .map(|(n, p, s)| (Some((n, p)), s))
                .or_else(|| entry_version.map(|v| (None, v.to_owned())));
            let version = match version {
                Some((_, v)) if semver::Version::parse(&v).is_ok() => v,
                Some((Some((n, p)), v)) => {
                    c.sink.error(
                        "source-npm-version-invalid",
                        &p,
                        n.start,
                        format!("npm `version` \"{v}\" is not an exact SemVer version"),
                        Some("give the exact MAJOR.MINOR.PATCH to fetch: ranges and tags are refused"),
                    );
                    return None;
                }
                _ => {
                    c.sink.error(
                        "source-npm-version-invalid",
                        ptr,
                        node.start,
                        "an npm source needs an exact SemVer `version` (its own or the entry's)",
                        Some("give the exact MAJOR.MINOR.PATCH to fetch"),
                    );
                    return None;
                }
            };
            Some(MarketplaceSource::Npm {
                package: package?,
                version: Some(version),
            })
        }
    }
}
