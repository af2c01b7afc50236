//! Source-tree conventions that a compiler does not check.
//!
//! `cargo xtask tidy` (and `validate`) runs them all through [`problems`]; each is also a test of
//! this crate, so a plain `cargo test --workspace` checks them too. The layering and licence
//! checks read `cargo metadata` (under `cargo test` with `--frozen`, offline, for this platform's
//! packages); the ratchets read files.

use std::path::Path;

use anyhow::Result;

use crate::layering::Metadata;
use crate::ratchets;

/// Every tidy problem of the tree at `root` but the packs' (those need processes); the
/// ratchets' notes are reported on the way.
pub(crate) fn problems(root: &Path) -> Result<Vec<String>> {
    let metadata = Metadata::load(root)?;
    let mut problems = Vec::new();
    problems.extend(crate_docs(root, &metadata));
    problems.extend(crate::layering::check(&metadata));
    problems.extend(crate::licences::check(root, &metadata)?);
    let findings = ratchets::check_all(root)?;
    for note in &findings.notes {
        crate::report(&format!("tidy: note: {note}"));
    }
    problems.extend(findings.problems);
    Ok(problems)
}

/// Every workspace library opens with a `//!` paragraph that says its one job.
pub(crate) fn crate_docs(root: &Path, metadata: &Metadata) -> Vec<String> {
    let mut problems = Vec::new();
    for member in &metadata.members {
        let Some(lib) = &member.lib_path else {
            continue;
        };
        let relative = lib.strip_prefix(root).unwrap_or(lib).display().to_string();
        match std::fs::read_to_string(lib) {
            Ok(text) => {
                let first = text.lines().find(|line| !line.trim().is_empty());
                match first {
                    Some(line) if line.starts_with("//!") && line.len() > 10 => {}
                    _ => problems.push(format!(
                        "{relative}: must open with a `//!` paragraph saying the crate's one job"
                    )),
                }
            }
            Err(error) => problems.push(format!("{relative}: cannot read: {error}")),
        }
    }
    problems
}

/// The tidy checks as tests: `cargo test` fails on the first convention broken.
#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use super::*;
    use crate::ratchets::Findings;

    fn root() -> PathBuf {
        crate::root()
    }

    fn metadata() -> &'static Metadata {
        static METADATA: OnceLock<Metadata> = OnceLock::new();
        METADATA.get_or_init(|| Metadata::load_offline(&root()).expect("cargo metadata --frozen"))
    }

    fn assert_none(check: &str, problems: &[String]) {
        assert!(
            problems.is_empty(),
            "{check}: {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }

    fn assert_findings(check: &str, findings: &Findings) {
        for note in &findings.notes {
            eprintln!("{check}: note: {note}");
        }
        assert_none(check, &findings.problems);
    }

    #[test]
    fn every_library_opens_with_its_job() {
        assert_none("crate docs", &crate_docs(&root(), metadata()));
    }

    #[test]
    fn crates_depend_only_as_the_layering_table_allows() {
        assert_none("layering", &crate::layering::check(metadata()));
    }

    #[test]
    fn every_licence_is_allowed() {
        let problems = crate::licences::check(&root(), metadata()).expect("licence check");
        assert_none("licences", &problems);
    }

    #[test]
    fn no_source_file_grows_past_its_length_limit() {
        assert_findings(
            "file length",
            &ratchets::file_lengths(&root()).expect("read the tree"),
        );
    }

    #[test]
    fn no_doc_heading_is_dated_outside_reports() {
        assert_findings(
            "dated headings",
            &ratchets::dated_headings(&root()).expect("read docs/"),
        );
    }

    #[test]
    fn the_host_core_imports_no_contribution() {
        assert_findings(
            "c2-host core imports",
            &ratchets::host_core_imports(&root()).expect("read c2-host"),
        );
    }

    #[test]
    fn library_messages_leave_the_cli_name_to_hints() {
        assert_findings(
            "c2-plugins literals",
            &ratchets::cli_name_literals(&root()).expect("read the crates"),
        );
    }

    #[test]
    fn public_enums_of_published_crates_are_non_exhaustive() {
        assert_findings(
            "non_exhaustive",
            &ratchets::non_exhaustive_enums(&root()).expect("read the crates"),
        );
    }
}
