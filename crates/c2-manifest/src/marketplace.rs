//! `marketplace.json`: a distributable catalog of bundles (standard §2, "Validate and distribute").
//!
//! Accepted shape, every object closed:
//! ```text
//! { "$schema"?: string, "standardVersion": "1.0.0", "name"?: string, "description"?: string,
//!   "plugins": [ { "name": <Agent Plugins name>, "version": <SemVer>, "description"?: string,
//!                  "keywords"?: [string], "source": <source> } ] }
//! <source> = { "kind": "local",   "path": <relative path without ..> }
//!          | { "kind": "github",  "repo": "owner/name", "ref"?: string, "path"?: <relative path> }
//!          | { "kind": "git",     "url": string, "ref"?: string, "path"?: <relative path> }
//!          | { "kind": "npm",     "package": <npm name> | <relative path starting with .>,
//!              "version"?: <exact SemVer, registry packages only> }
//!          | { "kind": "archive", "url": "https://..." | <relative path without ..>,
//!              "sha256"?: <64 hex digits> }
//! ```
//! Entry names follow the Agent Plugins name rule (1 to 64 characters, Agent Plugins §5.5) and
//! are unique. An npm `package` is either a registry name (`name` or `@scope/name`) fetched at
//! an exact version (the npm `version`, else the entry's own), or a path under the catalog's
//! directory starting with `.`; every other npm spec form (`file:`, `~`, git and GitHub
//! shorthands, URLs, aliases, tags, ranges) is refused. The catalog is `Some` only when there is
//! no error at all.

use serde::Serialize;

use crate::check::{Checker, chars, name_problem};
use crate::diagnostic::{Diagnostic, Sink, has_errors, pointer_push};
use crate::json::{self, Node};
use crate::options::ManifestOptions;

/// The only marketplace standard version that loads.
pub const MARKETPLACE_STANDARD_VERSION: &str = "1.0.0";

/// A valid catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Marketplace {
    /// `standardVersion`: always [`MARKETPLACE_STANDARD_VERSION`].
    pub standard_version: String,
    /// The catalog's display name; optional.
    pub name: Option<String>,
    /// A one-line summary of the catalog; optional.
    pub description: Option<String>,
    /// The entries, in document order.
    pub plugins: Vec<MarketplaceEntry>,
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceEntry {
    /// The bundle's Agent Plugins name; it must equal the `name` in the bundle's plugin.json.
    pub name: String,
    /// The bundle's SemVer version; it must equal the `version` in the bundle's plugin.json.
    pub version: String,
    /// A one-line summary shown in the catalog; optional.
    pub description: Option<String>,
    /// Search terms (`c2-plugins search` matches them); empty when absent.
    pub keywords: Vec<String>,
    /// Where the bundle is fetched from.
    pub source: MarketplaceSource,
}

/// Where an entry's bundle comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum MarketplaceSource {
    /// A directory next to the catalog.
    Local {
        /// Path relative to the catalog's directory, without `..`.
        path: String,
    },
    /// A GitHub repository.
    Github {
        /// `owner/name`.
        repo: String,
        /// The branch, tag or commit to check out, when the entry names one.
        r#ref: Option<String>,
        /// The bundle's subdirectory in the repository, when it is not at the root.
        path: Option<String>,
    },
    /// Any git repository.
    Git {
        /// The clone URL, as written.
        url: String,
        /// The branch, tag or commit to check out, when the entry names one.
        r#ref: Option<String>,
        /// The bundle's subdirectory in the repository, when it is not at the root.
        path: Option<String>,
    },
    /// An npm package whose tarball is the bundle.
    Npm {
        /// A registry package name (`name` or `@scope/name`), or a directory or tarball under
        /// the catalog's directory when it starts with `.`.
        package: String,
        /// The exact SemVer version of a registry package: the npm `version` when the source
        /// gives one, else the entry's `version`. `None` for a path under the catalog.
        version: Option<String>,
    },
    /// A `.tar.gz`, `.tgz` or `.zip` bundle served over HTTPS.
    Archive {
        /// The `https://` URL of the archive.
        url: String,
        /// The SHA-256 the archive bytes must have (64 hex digits), when the entry pins one.
        sha256: Option<String>,
    },
}

/// The outcome of validating a `marketplace.json`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceReport {
    /// `Some` exactly when no diagnostic is an error.
    pub marketplace: Option<Marketplace>,
    /// Every problem found, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl MarketplaceReport {
    /// No error-severity diagnostic.
    pub fn is_valid(&self) -> bool {
        !has_errors(&self.diagnostics)
    }
}

/// Validates the text of a `marketplace.json`.
pub fn validate_marketplace(source: &str) -> MarketplaceReport {
    let mut sink = Sink::new(source);
    let marketplace = json::parse(source, ManifestOptions::default().max_depth, &mut sink)
        .and_then(|root| catalog(&root, &mut Checker { sink: &mut sink }));
    let marketplace = if sink.has_errors() { None } else { marketplace };
    MarketplaceReport {
        marketplace,
        diagnostics: sink.finish(),
    }
}

fn catalog(root: &Node<'_>, c: &mut Checker<'_, '_>) -> Option<Marketplace> {
    let members = c.object(root, "")?;
    c.closed(
        members,
        "",
        &[
            "$schema",
            "standardVersion",
            "name",
            "description",
            "plugins",
        ],
    );
    let standard_version = c
        .string_field(root, "", "standardVersion", true)
        .map(|(n, p, s)| {
            if s != MARKETPLACE_STANDARD_VERSION {
                c.sink.error(
                    "standard-version-unsupported",
                    &p,
                    n.start,
                    format!("marketplace standard version \"{s}\" is not supported"),
                    Some("set \"standardVersion\": \"1.0.0\""),
                );
            }
            s.to_owned()
        });
    let name = c
        .string_field(root, "", "name", false)
        .map(|(_, _, s)| s.to_owned());
    let description = c
        .string_field(root, "", "description", false)
        .map(|(_, _, s)| s.to_owned());
    let mut plugins = Vec::new();
    let mut seen = std::collections::HashSet::new();
    if let Some((list, ptr)) = c.field(root, "", "plugins", true) {
        for (i, item) in c.array(list, &ptr).unwrap_or_default().iter().enumerate() {
            if let Some(e) = entry(item, &pointer_push(&ptr, &i.to_string()), c, &mut seen) {
                plugins.push(e);
            }
        }
    }
    Some(Marketplace {
        standard_version: standard_version?,
        name,
        description,
        plugins,
    })
}

fn entry(
    node: &Node<'_>,
    ptr: &str,
    c: &mut Checker<'_, '_>,
    seen: &mut std::collections::HashSet<String>,
) -> Option<MarketplaceEntry> {
    let members = c.object(node, ptr)?;
    c.closed(
        members,
        ptr,
        &["name", "version", "description", "keywords", "source"],
    );
    let name = c.string_field(node, ptr, "name", true).map(|(n, p, s)| {
        if let Some(message) = name_problem(s) {
            c.sink.error(
                "name-invalid",
                &p,
                n.start,
                message,
                Some("use the bundle's plugin.json name"),
            );
        }
        let max = ManifestOptions::default().max_name_chars;
        let length = chars(s);
        if length > max {
            c.sink.error(
                "name-too-long",
                &p,
                n.start,
                format!("`name` is {length} characters; the limit is {max}"),
                Some("use the bundle's plugin.json name, at most 64 characters"),
            );
        }
        if !seen.insert(s.to_owned()) {
            c.sink.error(
                "entry-duplicate",
                &p,
                n.start,
                format!("`{s}` is listed twice"),
                Some("keep one entry per bundle"),
            );
        }
        s.to_owned()
    });
    let version = c.string_field(node, ptr, "version", true).map(|(n, p, s)| {
        if semver::Version::parse(s).is_err() {
            c.sink.error(
                "version-not-semver",
                &p,
                n.start,
                format!("`version` \"{s}\" is not a SemVer version"),
                Some("use MAJOR.MINOR.PATCH matching the bundle's plugin.json"),
            );
        }
        s.to_owned()
    });
    let description = c
        .string_field(node, ptr, "description", false)
        .map(|(_, _, s)| s.to_owned());
    let keywords = c
        .field(node, ptr, "keywords", false)
        .map(|(n, p)| {
            c.strings(n, &p)
                .into_iter()
                .map(|(_, _, s)| s.to_owned())
                .collect()
        })
        .unwrap_or_default();
    let source = c
        .field(node, ptr, "source", true)
        .and_then(|(n, p)| source(n, &p, c));
    // A registry npm package without its own `version` is fetched at the entry's version.
    let source = match (source, &version) {
        (
            Some(MarketplaceSource::Npm {
                package,
                version: None,
            }),
            Some(entry_version),
        ) if !is_npm_path(&package) => Some(MarketplaceSource::Npm {
            package,
            version: Some(entry_version.clone()),
        }),
        (source, _) => source,
    };
    Some(MarketplaceEntry {
        name: name?,
        version: version?,
        description,
        keywords,
        source: source?,
    })
}

fn relative_path(c: &mut Checker<'_, '_>, node: &Node<'_>, ptr: &str, path: &str) {
    if path.trim().is_empty()
        || path.starts_with(['/', '\\'])
        || path.split(['/', '\\']).any(|s| s == "..")
    {
        c.sink.error(
            "source-path-invalid",
            ptr,
            node.start,
            format!("`path` `{path}` must be a non-empty relative path without `..`"),
            Some("name a folder relative to the catalog or repository root"),
        );
    }
}

/// An npm `package` naming a directory or tarball under the catalog's directory.
fn is_npm_path(package: &str) -> bool {
    package.starts_with(['.', '/'])
}

/// An npm registry package name: `name` or `@scope/name`, each part 1 or more of
/// `a-z 0-9 - . _`, not starting with `.` or `_` (npm's rules for new packages) nor `-` (an
/// option to `npm pack`), at most 214 characters in all. Anything else npm would read as
/// another spec form (a path, a URL, a git or `npm:` alias spec, `name@range`).
pub fn is_npm_registry_name(package: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '_', '-'])
            && p.chars()
                .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-' | '.' | '_'))
    };
    let name = match package.strip_prefix('@') {
        Some(scoped) => match scoped.split_once('/') {
            Some((scope, name)) => part(scope).then_some(name),
            None => None,
        },
        None => Some(package),
    };
    package.len() <= 214 && name.is_some_and(part)
}

/// `package`: a path under the catalog starting with `.`, or a registry name.
fn npm_package(c: &mut Checker<'_, '_>, node: &Node<'_>, ptr: &str, package: &str) {
    if is_npm_path(package) {
        relative_path(c, node, ptr, package);
    } else if !is_npm_registry_name(package) {
        c.sink.error(
            "source-npm-package-invalid",
            ptr,
            node.start,
            format!("npm `package` `{package}` is neither a registry package name nor a path under the catalog"),
            Some("name a registry package (`name` or `@scope/name`) with an exact `version`, or a folder or tarball beside the catalog as `./path`"),
        );
    }
}

/// `version`: an exact SemVer version, and only for a registry package.
fn npm_version(
    c: &mut Checker<'_, '_>,
    node: &Node<'_>,
    ptr: &str,
    version: &str,
    package: Option<&str>,
) {
    if package.is_some_and(is_npm_path) {
        c.sink.error(
            "source-npm-version-invalid",
            ptr,
            node.start,
            format!("npm `version` \"{version}\" is given for a path under the catalog"),
            Some("remove `version`: a path names one folder or tarball"),
        );
    } else if semver::Version::parse(version).is_err() {
        c.sink.error(
            "source-npm-version-invalid",
            ptr,
            node.start,
            format!("npm `version` \"{version}\" is not an exact SemVer version"),
            Some("give the exact MAJOR.MINOR.PATCH to fetch: ranges, tags and other specs are refused"),
        );
    }
}

fn source(node: &Node<'_>, ptr: &str, c: &mut Checker<'_, '_>) -> Option<MarketplaceSource> {
    let members = c.object(node, ptr)?;
    let (kn, kp, kind) = c.string_field(node, ptr, "kind", true)?;
    let allowed: &[&str] = match kind {
        "local" => &["kind", "path"],
        "github" => &["kind", "repo", "ref", "path"],
        "git" => &["kind", "url", "ref", "path"],
        "npm" => &["kind", "package", "version"],
        "archive" => &["kind", "url", "sha256"],
        other => {
            c.sink.error(
                "source-kind-unknown",
                &kp,
                kn.start,
                format!("unknown source kind `{other}`"),
                Some("use local, github, git, npm or archive"),
            );
            return None;
        }
    };
    c.closed(members, ptr, allowed);
    let opt = |c: &mut Checker<'_, '_>, key| {
        c.string_field(node, ptr, key, false)
            .map(|(_, _, s)| s.to_owned())
    };
    let path = c
        .string_field(node, ptr, "path", kind == "local")
        .map(|(n, p, s)| {
            relative_path(c, n, &p, s);
            s.to_owned()
        });
    Some(match kind {
        "local" => MarketplaceSource::Local { path: path? },
        "github" => {
            let repo = c.string_field(node, ptr, "repo", true).map(|(n, p, s)| {
                let ok = s.split_once('/').is_some_and(|(o, r)| {
                    let part = |x: &str| {
                        !x.is_empty()
                            && x.chars().all(|ch| {
                                ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.')
                            })
                    };
                    part(o) && part(r) && r != ".." && o != ".."
                });
                if !ok {
                    c.sink.error(
                        "source-repo-invalid",
                        &p,
                        n.start,
                        format!("`repo` `{s}` is not `owner/name`"),
                        Some("write the GitHub repository as owner/name"),
                    );
                }
                s.to_owned()
            });
            MarketplaceSource::Github {
                repo: repo?,
                r#ref: opt(c, "ref"),
                path,
            }
        }
        "git" => {
            let url = c
                .string_field(node, ptr, "url", true)
                .map(|(_, _, s)| s.to_owned());
            MarketplaceSource::Git {
                url: url?,
                r#ref: opt(c, "ref"),
                path,
            }
        }
        "npm" => {
            let package = c.string_field(node, ptr, "package", true).map(|(n, p, s)| {
                npm_package(c, n, &p, s);
                s.to_owned()
            });
            let version = c
                .string_field(node, ptr, "version", false)
                .map(|(n, p, s)| {
                    npm_version(c, n, &p, s, package.as_deref());
                    s.to_owned()
                });
            MarketplaceSource::Npm {
                package: package?,
                version,
            }
        }
        _ => {
            let url = c.string_field(node, ptr, "url", true).map(|(n, p, s)| {
                // An https URL, or a path relative to the catalog for an archive shipped
                // beside it (anything else with a scheme, `..` or a leading `/` is refused).
                if !s.starts_with("https://") {
                    if s.contains("://") || s.contains(':') {
                        c.sink.error(
                            "source-url-invalid",
                            &p,
                            n.start,
                            format!("archive `url` `{s}` is not https"),
                            Some("serve archives over https://, or give a path relative to the catalog"),
                        );
                    } else {
                        relative_path(c, n, &p, s);
                    }
                }
                s.to_owned()
            });
            let sha256 = c.string_field(node, ptr, "sha256", false).map(|(n, p, s)| {
                if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                    c.sink.error(
                        "source-sha256-invalid",
                        &p,
                        n.start,
                        "`sha256` must be 64 hex digits",
                        Some("paste the archive's SHA-256 digest in hex"),
                    );
                }
                s.to_owned()
            });
            MarketplaceSource::Archive { url: url?, sha256 }
        }
    })
}
