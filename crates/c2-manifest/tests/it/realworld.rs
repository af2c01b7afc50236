//! The real-world Agent Skills corpus (`../shared/corpora/agent-skills-realworld/`, 753 skills
//! from ten public collections), read in place: every `SKILL.md` whose frontmatter is valid
//! YAML parses without `frontmatter-syntax`, and the verdicts are summarized in a snapshot.
//! The corpus lives outside the repository; `C2_SKILLS_CORPUS` names another copy. The test is
//! never skipped: without the corpus it fails and says where it looked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use c2_manifest::{SkillOptions, validate_skill_with};

const CORPUS: &str = "shared/corpora/agent-skills-realworld";

/// The corpus: `C2_SKILLS_CORPUS`, else `shared/corpora/...` beside an ancestor of this crate.
fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("C2_SKILLS_CORPUS") {
        return PathBuf::from(dir);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|a| a.join(CORPUS))
        .find(|d| d.join("skills").is_dir())
        .unwrap_or_else(|| {
            panic!(
                "the real-world skills corpus `{CORPUS}` is not beside any ancestor of {}; set C2_SKILLS_CORPUS to it",
                here.display()
            )
        })
}

/// Every `SKILL.md` under `root`, as (path relative to `root`, folder name, text), sorted.
fn skill_files(root: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test reads a fixed corpus of skill folders, not a bundle"
        )]
        let entries = std::fs::read_dir(&dir).unwrap();
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == "SKILL.md") {
                let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
                let bytes = std::fs::read(&path).unwrap();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, folder, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out.sort();
    out
}

/// Skills in the corpus whose frontmatter is not valid YAML, with the reason: the only ones
/// allowed a `frontmatter-syntax` diagnostic.
const INVALID_YAML: &[(&str, &str)] = &[];

#[test]
fn the_real_world_corpus_parses_as_yaml_and_its_verdicts_are_stable() {
    let root = corpus_dir();
    let files = skill_files(&root.join("skills"));
    assert!(files.len() >= 750, "{} skills", files.len());
    let lenient = SkillOptions {
        lenient: true,
        ..SkillOptions::default()
    };
    let mut syntax = Vec::new();
    let mut codes: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut valid, mut valid_lenient) = (0, 0);
    for (path, folder, text) in &files {
        let report = validate_skill_with(text, folder, &SkillOptions::default());
        for d in &report.diagnostics {
            *codes.entry(d.code).or_default() += 1;
            if d.code == "frontmatter-syntax" {
                syntax.push(format!("{path}:{}:{} {}", d.line, d.column, d.message));
            }
        }
        valid += usize::from(report.is_valid());
        let loose = validate_skill_with(text, folder, &lenient);
        valid_lenient += usize::from(loose.skill.is_some());
    }
    let unexpected: Vec<&String> = syntax
        .iter()
        .filter(|s| !INVALID_YAML.iter().any(|(p, _)| s.starts_with(p)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "frontmatter-syntax on skills not listed as invalid YAML:\n{}",
        unexpected
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let mut summary = format!(
        "skills: {}\nvalid: {valid}\nloaded with SkillOptions::lenient: {valid_lenient}\ndiagnostics by code:\n",
        files.len()
    );
    for (code, n) in &codes {
        summary.push_str(&format!("  {code}: {n}\n"));
    }
    insta::assert_snapshot!(summary);
}
