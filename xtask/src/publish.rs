//! Publishability of the library crates: each one carries the metadata crates.io shows, packages
//! without its tests, corpora or snapshots (`cargo package`), and documents itself without a
//! rustdoc warning (`cargo doc` under `-D warnings`).
//!
//! `cargo package` gets every library crate in one invocation: cargo then resolves the
//! internal dependencies not yet on crates.io against the sibling packages it is packaging, so
//! no crate has to be published first. `--no-verify` skips rebuilding each package from its
//! tarball (the build, clippy and tests have already run on the same sources).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Library crates that stay private: the test kit is a dev-dependency only.
const PRIVATE_LIBRARIES: &[&str] = &["c2-testkit"];

/// Package metadata every published crate must set.
const REQUIRED: &[&str] = &[
    "description",
    "license",
    "repository",
    "readme",
    "keywords",
    "categories",
];

/// Paths (relative to the package root) that must not be in a package: integration tests,
/// unit-test files, test corpora and snapshots.
fn is_test_material(path: &str) -> bool {
    path.starts_with("tests/")
        || path.starts_with("test_data/")
        || path.starts_with("proptest-regressions/")
        || path.contains("/snapshots/")
        || path.ends_with(".snap")
        || path == "src/tests.rs"
}

/// The workspace library crates that must be publishable, and what is wrong with their
/// manifests. `packages` is `cargo metadata --no-deps`'s `packages` array.
fn library_crates(packages: &[Value]) -> (Vec<String>, Vec<String>) {
    let mut crates = Vec::new();
    let mut problems = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        let is_lib = package["targets"].as_array().is_some_and(|targets| {
            targets.iter().any(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "lib"))
            })
        });
        if !is_lib || PRIVATE_LIBRARIES.contains(&name) {
            continue;
        }
        // `publish = false` reads as an empty registry list.
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            problems.push(format!(
                "{name}: a library crate must set `publish = true` (or be listed in PRIVATE_LIBRARIES in xtask/src/publish.rs)"
            ));
        }
        for field in REQUIRED {
            let value = &package[*field];
            let missing = value.is_null()
                || value.as_str().is_some_and(str::is_empty)
                || value.as_array().is_some_and(Vec::is_empty);
            if missing {
                problems.push(format!("{name}: `{field}` is not set in its Cargo.toml"));
            }
        }
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let internal = dep["path"].is_string();
            let normal = dep["kind"].is_null();
            if internal && normal && dep["req"].as_str().is_none_or(|req| req == "*") {
                problems.push(format!(
                    "{name}: internal dependency `{}` has no version; set one in [workspace.dependencies]",
                    dep["name"].as_str().unwrap_or_default()
                ));
            }
        }
        crates.push(name.to_owned());
    }
    crates.sort();
    (crates, problems)
}

fn cargo(root: &Path, args: &[&str], rustdocflags: Option<&str>) -> Result<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    #[expect(clippy::disallowed_methods, reason = "xtask drives cargo itself")]
    let mut command = std::process::Command::new(cargo);
    command.args(args).current_dir(root);
    if let Some(flags) = rustdocflags {
        command.env("RUSTDOCFLAGS", flags);
    }
    command.stderr(std::process::Stdio::inherit());
    let output = command
        .output()
        .with_context(|| format!("could not run `cargo {}`", args.join(" ")))?;
    if !output.status.success() {
        bail!("`cargo {}` failed ({})", args.join(" "), output.status);
    }
    String::from_utf8(output.stdout).context("cargo printed non-UTF-8")
}

/// Checks the manifests, lists each package's files, packages every library crate and builds
/// their docs with warnings denied.
pub(crate) fn run(root: &Path) -> Result<()> {
    let metadata = cargo(
        root,
        &["metadata", "--format-version", "1", "--no-deps", "--locked"],
        None,
    )?;
    let json: Value = serde_json::from_str(&metadata).context("parse cargo metadata")?;
    let packages = json["packages"]
        .as_array()
        .context("cargo metadata has no packages")?;
    let (crates, mut problems) = library_crates(packages);
    for name in &crates {
        let listed = cargo(
            root,
            &["package", "--list", "--allow-dirty", "--locked", "-p", name],
            None,
        )?;
        problems.extend(
            listed
                .lines()
                .filter(|path| is_test_material(path))
                .map(|path| format!("{name}: the package would ship `{path}`; narrow `include`")),
        );
    }
    if !problems.is_empty() {
        for problem in &problems {
            crate::report(&format!("publish: {problem}"));
        }
        bail!("{} publishability problem(s)", problems.len());
    }
    let selected: Vec<&str> = crates.iter().flat_map(|c| ["-p", c.as_str()]).collect();
    crate::report(&format!("xtask: cargo package ({})", crates.join(", ")));
    let mut package = vec!["package", "--no-verify", "--allow-dirty", "--locked"];
    package.extend(&selected);
    cargo(root, &package, None)?;
    crate::report("xtask: cargo doc --no-deps (RUSTDOCFLAGS=-D warnings)");
    let mut doc = vec!["doc", "--no-deps", "--locked"];
    doc.extend(&selected);
    cargo(root, &doc, Some("-D warnings"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{is_test_material, library_crates};

    fn package(name: &str, publish: Value, repository: Value) -> Value {
        json!({
            "name": name,
            "publish": publish,
            "description": "d", "license": "MIT", "repository": repository, "readme": "README.md",
            "keywords": ["k"], "categories": ["c"],
            "targets": [{"kind": ["lib"]}],
            "dependencies": [
                {"name": "c2-manifest", "path": "/x", "kind": null, "req": "^0.1.0"},
                {"name": "c2-testkit", "path": "/y", "kind": "dev", "req": "*"}
            ]
        })
    }

    use serde_json::Value;

    #[test]
    fn a_complete_library_passes_and_gaps_are_named() {
        let ok = package("c2-ok", Value::Null, json!("https://example.org/r"));
        let private = package("c2-private", json!([]), json!("https://example.org/r"));
        let bare = package("c2-bare", Value::Null, Value::Null);
        let testkit = package("c2-testkit", json!([]), Value::Null);
        let mut unversioned = package("c2-loose", Value::Null, json!("r"));
        unversioned["dependencies"][0]["req"] = json!("*");
        let binary = json!({"name": "c2-cli", "publish": [], "targets": [{"kind": ["bin"]}]});
        let (crates, problems) = library_crates(&[ok, private, bare, testkit, unversioned, binary]);
        assert_eq!(crates, ["c2-bare", "c2-loose", "c2-ok", "c2-private"]);
        assert_eq!(
            problems,
            [
                "c2-private: a library crate must set `publish = true` (or be listed in PRIVATE_LIBRARIES in xtask/src/publish.rs)",
                "c2-bare: `repository` is not set in its Cargo.toml",
                "c2-loose: internal dependency `c2-manifest` has no version; set one in [workspace.dependencies]",
            ]
        );
    }

    #[test]
    fn test_material_is_recognised() {
        for path in [
            "tests/it/main.rs",
            "test_data/ok/a/plugin.json",
            "src/snapshots/x.snap",
            "src/tests.rs",
            "proptest-regressions/tests.txt",
        ] {
            assert!(is_test_material(path), "{path}");
        }
        for path in [
            "src/lib.rs",
            "src/tests_support.rs",
            "README.md",
            "examples/lint.rs",
        ] {
            assert!(!is_test_material(path), "{path}");
        }
    }
}
