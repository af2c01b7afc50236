//! Every example bundle under packs/ validated through the real collector and validator, the
//! same code path `c2-plugins validate` and the installer use.

use std::path::Path;

use anyhow::{Context, Result};
use c2_bundle_collector::{Limits, check_marketplace, collect_dir};

/// Runs `c2-plugins check`'s logic on a pack: spawn, handshake, exact confirmation, every
/// invocable command, no stray stdout, exit on stdin EOF.
fn check_runtime(dir: &Path, name: &str) -> Result<Vec<String>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start an async runtime for the pack checks")?;
    let report = runtime
        .block_on(c2_check::check_bundle(
            dir,
            &c2_check::CheckOptions::default(),
        ))
        .with_context(|| format!("check {name}"))?;
    Ok(report
        .checks
        .iter()
        .filter(|check| !check.pass)
        .map(|check| format!("{name}: check `{}` failed: {}", check.name, check.detail))
        .collect())
}

/// Packs that are Rust crates ship their runtime as `bin/<crate>` inside the bundle: build them
/// with the size-optimized `pack` profile and copy the binary in, so the packs validate and run.
const RUST_PACKS: &[&str] = &["hello-rust"];

pub(crate) fn build_rust_packs(root: &Path) -> Result<()> {
    for pack in RUST_PACKS {
        crate::step(
            &format!("build packs/{pack} (pack profile)"),
            &["build", "--locked", "-p", pack, "--profile", "pack"],
        )?;
        let built = root.join("target/pack").join(pack);
        let bin = root.join("packs").join(pack).join("bin");
        std::fs::create_dir_all(&bin).with_context(|| format!("create {}", bin.display()))?;
        let dest = bin.join(pack);
        // Replace, never write through: a running copy of the old binary keeps its inode.
        let staged = bin.join(format!(".{pack}.new"));
        std::fs::copy(&built, &staged)
            .with_context(|| format!("copy {} to {}", built.display(), staged.display()))?;
        std::fs::rename(&staged, &dest).with_context(|| format!("install {}", dest.display()))?;
    }
    Ok(())
}

pub(crate) fn check(root: &Path) -> Result<Vec<String>> {
    let packs = root.join("packs");
    let mut problems = Vec::new();
    let mut checked = 0;
    #[expect(clippy::disallowed_methods, reason = "xtask lists the example packs")]
    let entries = std::fs::read_dir(&packs).with_context(|| format!("read {}", packs.display()))?;
    let mut dirs: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("plugin.json").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        checked += 1;
        let name = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
        match collect_dir(&dir, &Limits::default()) {
            Ok(bundle) => {
                for diagnostic in bundle.diagnostics.iter().filter(|d| d.is_error()) {
                    problems.push(format!(
                        "{name}: {} [{}] {}",
                        diagnostic.file.as_deref().unwrap_or("bundle"),
                        diagnostic.code,
                        diagnostic.message
                    ));
                }
                let has_runtime = bundle
                    .manifest
                    .as_ref()
                    .is_some_and(|m| m.codetwo.runtime.is_some());
                if bundle.is_valid() && has_runtime {
                    problems.extend(check_runtime(&dir, &name)?);
                }
            }
            Err(error) => problems.push(format!("{name}: cannot be collected: {error}")),
        }
    }
    if checked == 0 {
        problems.push("packs/ holds no bundle: the examples are part of the contract".to_owned());
    }
    problems.extend(check_catalog(&packs, &dirs_named(&packs)?)?);
    Ok(problems)
}

/// The names of the pack directories (those with a plugin.json).
fn dirs_named(packs: &Path) -> Result<Vec<String>> {
    #[expect(clippy::disallowed_methods, reason = "xtask lists the example packs")]
    let entries = std::fs::read_dir(packs).with_context(|| format!("read {}", packs.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("plugin.json").is_file())
        .filter_map(|path| Some(path.file_name()?.to_str()?.to_owned()))
        .collect();
    names.sort();
    Ok(names)
}

/// packs/marketplace.json is the example catalog (README, "Catalogs"): valid, and listing
/// every pack, each at the name and version its plugin.json declares.
fn check_catalog(packs: &Path, packs_named: &[String]) -> Result<Vec<String>> {
    let path = packs.join("marketplace.json");
    let check = check_marketplace(&path, &Limits::default())
        .with_context(|| format!("check {}", path.display()))?;
    let mut problems: Vec<String> = check
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("packs/marketplace.json: [{}] {}", d.code, d.message))
        .collect();
    let mut listed: Vec<String> = check.entries.iter().map(|e| e.name.clone()).collect();
    listed.sort();
    if check.is_valid() && listed != packs_named {
        problems.push(format!(
            "packs/marketplace.json lists {listed:?}, the packs are {packs_named:?}: list every pack"
        ));
    }
    Ok(problems)
}
