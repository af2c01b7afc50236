//! The layering table of docs/ARCHITECTURE.md, enforced from `cargo metadata`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Which workspace crates each workspace crate may depend on (normal and build dependencies).
/// Keep in step with the table in docs/ARCHITECTURE.md.
const ALLOWED: &[(&str, &[&str])] = &[
    // The one poison-tolerant lock helper, below everything.
    ("c2-lock", &[]),
    ("c2-manifest", &[]),
    // c2-manifest only through the optional `manifest` feature
    // (`From<&CommandDecl> for DeclaredCommand`).
    ("c2-protocol", &["c2-lock", "c2-manifest"]),
    ("c2-kernel", &["c2-lock"]),
    ("c2-policy", &[]),
    ("c2-supervisor", &["c2-lock"]),
    ("c2-bundle-collector", &["c2-lock", "c2-manifest"]),
    (
        "c2-sources",
        &["c2-manifest", "c2-bundle-collector", "c2-supervisor"],
    ),
    (
        "c2-host",
        &[
            "c2-lock",
            "c2-manifest",
            "c2-bundle-collector",
            "c2-sources",
            "c2-protocol",
            "c2-supervisor",
            "c2-kernel",
            "c2-policy",
        ],
    ),
    // What bundles contribute beyond commands, built on the host's seam: c2-host and what
    // c2-host may use.
    (
        "c2-contributions",
        &[
            "c2-lock",
            "c2-host",
            "c2-manifest",
            "c2-bundle-collector",
            "c2-sources",
            "c2-protocol",
            "c2-supervisor",
            "c2-kernel",
            "c2-policy",
        ],
    ),
    // The relay and the one JSON vocabulary, which writes the collector's diagnostics,
    // inventories and catalog checks (c2-host's signatures name only the bundle holding them).
    (
        "c2-relay",
        &[
            "c2-lock",
            "c2-host",
            "c2-contributions",
            "c2-protocol",
            "c2-kernel",
            "c2-bundle-collector",
        ],
    ),
    (
        "c2-check",
        &[
            "c2-lock",
            "c2-manifest",
            "c2-bundle-collector",
            "c2-protocol",
            "c2-supervisor",
        ],
    ),
    (
        "c2-cli",
        &[
            "c2-relay",
            "c2-lock",
            "c2-host",
            "c2-contributions",
            "c2-check",
            "c2-sources",
            "c2-manifest",
            "c2-bundle-collector",
            "c2-protocol",
            "c2-supervisor",
            "c2-kernel",
            "c2-policy",
        ],
    ),
    ("c2-plugin-sdk", &["c2-lock", "c2-protocol", "c2-manifest"]),
    ("c2-testkit", &["c2-lock", "c2-plugin-sdk", "c2-protocol"]),
    (
        "xtask",
        &[
            "c2-lock",
            "c2-manifest",
            "c2-bundle-collector",
            "c2-host",
            "c2-contributions",
            "c2-check",
            "c2-kernel",
            "c2-supervisor",
        ],
    ),
    // Example packs that are crates: plugins built on the SDK, nothing else.
    ("hello-rust", &["c2-plugin-sdk"]),
];

/// Dev-dependencies may additionally use the test kit; nothing may use it as a normal dependency.
const DEV_ONLY: &str = "c2-testkit";

#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) lib_path: Option<PathBuf>,
    /// (dependency name, kind) where kind is "normal", "dev" or "build".
    pub(crate) workspace_deps: Vec<(String, String)>,
}

#[derive(Debug)]
pub(crate) struct Metadata {
    pub(crate) members: Vec<Member>,
    /// Every non-workspace package: (name, version, licence expression).
    pub(crate) third_party: Vec<(String, String, Option<String>)>,
}

impl Metadata {
    pub(crate) fn load(root: &Path) -> Result<Self> {
        Self::load_with(root, &["--locked"])
    }

    /// As [`Metadata::load`], without the network and for this machine's platform only (the
    /// packages of other platforms may never have been downloaded): what the tests use.
    #[cfg(test)]
    pub(crate) fn load_offline(root: &Path) -> Result<Self> {
        Self::load_with(root, &["--frozen", "--filter-platform", "host-tuple"])
    }

    fn load_with(root: &Path, flags: &[&str]) -> Result<Self> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
        let output = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1"])
            .args(flags)
            .current_dir(root)
            .output()
            .context("could not run `cargo metadata`")?;
        if !output.status.success() {
            bail!(
                "`cargo metadata` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let json: Value = serde_json::from_slice(&output.stdout).context("parse cargo metadata")?;
        Self::from_json(&json)
    }

    fn from_json(json: &Value) -> Result<Self> {
        let members_ids: Vec<&str> = json["workspace_members"]
            .as_array()
            .context("cargo metadata has no workspace_members")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let packages = json["packages"]
            .as_array()
            .context("cargo metadata has no packages")?;
        let member_names: Vec<&str> = packages
            .iter()
            .filter(|p| members_ids.contains(&p["id"].as_str().unwrap_or_default()))
            .filter_map(|p| p["name"].as_str())
            .collect();
        let mut members = Vec::new();
        let mut third_party = Vec::new();
        for package in packages {
            let name = package["name"].as_str().unwrap_or_default().to_owned();
            if !members_ids.contains(&package["id"].as_str().unwrap_or_default()) {
                third_party.push((
                    name,
                    package["version"].as_str().unwrap_or_default().to_owned(),
                    package["license"].as_str().map(str::to_owned),
                ));
                continue;
            }
            let lib_path = package["targets"].as_array().and_then(|targets| {
                targets
                    .iter()
                    .find(|t| {
                        t["kind"]
                            .as_array()
                            .is_some_and(|k| k.iter().any(|k| k == "lib"))
                    })
                    .and_then(|t| t["src_path"].as_str())
                    .map(PathBuf::from)
            });
            let workspace_deps = package["dependencies"]
                .as_array()
                .map(|deps| {
                    deps.iter()
                        .filter_map(|d| {
                            let dep = d["name"].as_str()?;
                            member_names.contains(&dep).then(|| {
                                let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                                (dep.to_owned(), kind)
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            members.push(Member {
                name,
                lib_path,
                workspace_deps,
            });
        }
        members.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self {
            members,
            third_party,
        })
    }
}

pub(crate) fn check(metadata: &Metadata) -> Vec<String> {
    let mut problems = Vec::new();
    for member in &metadata.members {
        let Some((_, allowed)) = ALLOWED.iter().find(|(name, _)| *name == member.name) else {
            problems.push(format!(
                "crate {} is not in the layering table (xtask/src/layering.rs and docs/ARCHITECTURE.md)",
                member.name
            ));
            continue;
        };
        for (dep, kind) in &member.workspace_deps {
            // A dev-dependency on the crate itself only turns on its test features (the
            // collector's `fault-injection` for its crash tests).
            let ok = allowed.contains(&dep.as_str())
                || (kind == "dev" && (dep == DEV_ONLY || *dep == member.name));
            if dep == DEV_ONLY && kind != "dev" && member.name != DEV_ONLY {
                problems.push(format!(
                    "{} depends on {DEV_ONLY} as a {kind} dependency: the test kit is dev-only",
                    member.name
                ));
            } else if !ok {
                problems.push(format!(
                    "{} may not depend on {dep} ({kind}): the layering table allows only [{}]",
                    member.name,
                    allowed.join(", ")
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(deps: &[(&str, &str, &str)]) -> Metadata {
        let members = ALLOWED
            .iter()
            .map(|(name, _)| Member {
                name: (*name).to_owned(),
                lib_path: None,
                workspace_deps: deps
                    .iter()
                    .filter(|(from, _, _)| from == name)
                    .map(|(_, to, kind)| ((*to).to_owned(), (*kind).to_owned()))
                    .collect(),
            })
            .collect();
        Metadata {
            members,
            third_party: Vec::new(),
        }
    }

    #[test]
    fn an_allowed_dependency_passes() {
        assert!(
            check(&metadata(&[(
                "c2-bundle-collector",
                "c2-manifest",
                "normal"
            )]))
            .is_empty()
        );
    }

    #[test]
    fn a_crate_may_dev_depend_on_itself_for_its_test_features() {
        let own = ("c2-bundle-collector", "c2-bundle-collector", "dev");
        assert!(check(&metadata(&[own])).is_empty());
    }

    #[test]
    fn a_pure_crate_depending_on_another_is_refused() {
        let problems = check(&metadata(&[("c2-manifest", "c2-protocol", "normal")]));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("c2-manifest may not depend on c2-protocol"));
    }

    #[test]
    fn each_crate_has_one_row() {
        for (k, (name, _)) in ALLOWED.iter().enumerate() {
            assert!(
                ALLOWED[k + 1..].iter().all(|(other, _)| other != name),
                "{name} has more than one row in ALLOWED: only the first one counts"
            );
        }
    }

    #[test]
    fn the_test_kit_is_allowed_only_as_a_dev_dependency() {
        assert!(check(&metadata(&[("c2-supervisor", "c2-testkit", "dev")])).is_empty());
        let problems = check(&metadata(&[("c2-host", "c2-testkit", "normal")]));
        assert!(problems[0].contains("dev-only"), "{problems:?}");
    }
}
