//! Differential test against `skills-ref`, the Agent Skills reference validator (PyPI; .ci/run
//! installs it). A generated corpus and a hand-written one are written as skill folders, the
//! reference validator judges them all in one Python process, and `validate_skill` must give
//! the same verdict on each. Every case where the two deliberately differ is listed in
//! `DOCUMENTED` with the specification's wording; the test also holds that they still differ
//! there, so the list cannot go stale. docs/decisions.md repeats the list.
//!
//! The test is never skipped: without `skills-ref` it fails and says how to install it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use c2_manifest::validate_skill;

/// One skill folder: its name, its SKILL.md, and why the verdicts differ when they do.
struct Case {
    folder: String,
    text: String,
    differs: Option<&'static str>,
}

fn case(folder: &str, text: &str) -> Case {
    Case {
        folder: folder.to_owned(),
        text: text.to_owned(),
        differs: None,
    }
}

fn documented(folder: &str, text: &str, why: &'static str) -> Case {
    Case {
        differs: Some(why),
        ..case(folder, text)
    }
}

fn fm(body: &str) -> String {
    format!("---\n{body}---\n# Body\n\nInstructions.\n")
}

/// The deliberate differences, each with the Agent Skills specification's own words.
const UNKNOWN_KEY: &str = "decisions.md: unknown frontmatter keys are warnings; the specification's field table defines six fields but says nothing about others, while skills-ref rejects them";
const COMPAT_EMPTY: &str = "spec, compatibility: \"Must be 1-500 characters if provided\"; skills-ref checks only the upper bound";
const METADATA_MAP: &str = "spec, metadata: \"A map from string keys to string values\"; skills-ref does not check metadata's shape";
const LICENSE_STRING: &str = "spec, license: \"License name or reference to a bundled license file\" (a string); skills-ref does not check its type";
const TOOLS_SHAPE: &str = "spec, allowed-tools: \"Accepts either a space-delimited string or a YAML sequence of strings\"; skills-ref does not check its type";
const NAME_ASCII: &str = "spec, name: \"May only contain unicode lowercase alphanumeric characters (`a-z`) and hyphens\"; we read the parenthesis as the set, skills-ref allows any Unicode lowercase letter";
const NAME_SPACES: &str = "spec, name: only `a-z` and hyphens; skills-ref strips surrounding whitespace from a quoted name first";
const STRICT_YAML: &str = "Agent Skills frontmatter is YAML and YAML 1.2 allows flow collections, anchors, aliases and tags; skills-ref reads it with strictyaml, which refuses them";
const BOM: &str = "YAML allows a byte-order mark before the stream and editors hide it; skills-ref reads the file without skipping it";

fn hand_written() -> Vec<Case> {
    let mut v = vec![
        case("minimal", &fm("name: minimal\ndescription: A skill.\n")),
        case(
            "pdf-processing",
            &fm(
                "name: pdf-processing\ndescription: Extract PDF text. Use when handling PDFs.\nlicense: Apache-2.0\nmetadata:\n  author: example-org\n  version: \"1.0\"\n",
            ),
        ),
        case(
            "tools",
            &fm("name: tools\ndescription: x\nallowed-tools: Bash(git:*) Bash(jq:*) Read\n"),
        ),
        case(
            "tools-list",
            &fm("name: tools-list\ndescription: x\nallowed-tools:\n  - Bash(git:*)\n  - Read\n"),
        ),
        case(
            "tools-list-flush",
            &fm("name: tools-list-flush\ndescription: x\nallowed-tools:\n- Read\n- Write\n"),
        ),
        case(
            "colon-plain",
            &fm("name: colon-plain\ndescription: Use when: x\n"),
        ),
        case(
            "colon-quoted",
            &fm("name: colon-quoted\ndescription: \"Use when: x\"\n"),
        ),
        case("flow-list", &fm("name: flow-list\ndescription: [a, b]\n")),
        documented(
            "flow-map",
            &fm("name: flow-map\ndescription: x\nmetadata: {}\n"),
            STRICT_YAML,
        ),
        case("dup", &fm("name: dup\ndescription: x\ndescription: y\n")),
        case(
            "dup-metadata",
            &fm("name: dup-metadata\ndescription: x\nmetadata:\n  a: 1\n  a: 2\n"),
        ),
        case(
            "crlf",
            "---\r\nname: crlf\r\ndescription: x\r\n---\r\nBody\r\n",
        ),
        case(
            "comments",
            &fm("# leading comment\nname: comments\n\ndescription: x # trailing\n"),
        ),
        case(
            "literal",
            &fm("name: literal\ndescription: |\n  one\n  two\n"),
        ),
        case(
            "folded",
            &fm("name: folded\ndescription: >-\n  one\n  two\n"),
        ),
        case(
            "single-quoted",
            &fm("name: single-quoted\ndescription: 'it''s fine'\n"),
        ),
        case(
            "double-quoted",
            &fm("name: double-quoted\ndescription: \"tab\\tquote\\\"\"\n"),
        ),
        case(
            "typed-words",
            &fm("name: typed-words\ndescription: null\nmetadata:\n  n: 1\n  b: true\n"),
        ),
        case("123", &fm("name: 123\ndescription: digits only\n")),
        case("folder", &fm("name: 123\ndescription: x\n")),
        case("no-frontmatter", "# Title\n\nname: no-frontmatter\n"),
        case("unterminated", "---\nname: unterminated\ndescription: x\n"),
        case("no-description", &fm("name: no-description\n")),
        case("no-name", &fm("description: x\n")),
        case(
            "empty-description",
            &fm("name: empty-description\ndescription:\n"),
        ),
        case(
            "blank-description",
            &fm("name: blank-description\ndescription: \"   \"\n"),
        ),
        case(
            "nested-block",
            &fm("name: nested-block\ndescription: x\nmetadata:\n  notes: |\n    line\n"),
        ),
        case(
            "indented-stray",
            &fm("name: indented-stray\ndescription: x\n  stray: y\n"),
        ),
        case(
            "continued",
            &fm("name: continued\ndescription: a long\n  description\n"),
        ),
        case(
            "compat",
            &fm("name: compat\ndescription: x\ncompatibility: Requires git and docker\n"),
        ),
        case(
            "compat-map",
            &fm("name: compat-map\ndescription: x\ncompatibility:\n  a: b\n"),
        ),
        case(
            "literal-1024",
            &fm(&format!(
                "name: literal-1024\ndescription: |\n  {}\n",
                "x".repeat(1023)
            )),
        ),
        case(
            "literal-1025",
            &fm(&format!(
                "name: literal-1025\ndescription: |\n  {}\n",
                "x".repeat(1024)
            )),
        ),
        case(
            "strip-1024",
            &fm(&format!(
                "name: strip-1024\ndescription: |-\n  {}\n",
                "x".repeat(1024)
            )),
        ),
        case(
            "emoji-1024",
            &fm(&format!(
                "name: emoji-1024\ndescription: {}\n",
                "é".repeat(1024)
            )),
        ),
        documented(
            "unknown-key",
            &fm("name: unknown-key\ndescription: x\nmodel: fast\n"),
            UNKNOWN_KEY,
        ),
        documented(
            "compat-empty",
            &fm("name: compat-empty\ndescription: x\ncompatibility: \"\"\n"),
            COMPAT_EMPTY,
        ),
        documented(
            "metadata-scalar",
            &fm("name: metadata-scalar\ndescription: x\nmetadata: author\n"),
            METADATA_MAP,
        ),
        documented(
            "metadata-list",
            &fm("name: metadata-list\ndescription: x\nmetadata:\n  - a\n"),
            METADATA_MAP,
        ),
        documented(
            "metadata-nested",
            &fm("name: metadata-nested\ndescription: x\nmetadata:\n  a:\n    b: c\n"),
            METADATA_MAP,
        ),
        documented(
            "license-map",
            &fm("name: license-map\ndescription: x\nlicense:\n  id: MIT\n"),
            LICENSE_STRING,
        ),
        documented(
            "tools-map",
            &fm("name: tools-map\ndescription: x\nallowed-tools:\n  a: b\n"),
            TOOLS_SHAPE,
        ),
        documented(
            "tools-list-map",
            &fm("name: tools-list-map\ndescription: x\nallowed-tools:\n  - a: b\n"),
            TOOLS_SHAPE,
        ),
        documented("café", &fm("name: café\ndescription: x\n"), NAME_ASCII),
        documented(
            "spaced",
            &fm("name: \" spaced \"\ndescription: x\n"),
            NAME_SPACES,
        ),
        documented("bom", "\u{feff}---\nname: bom\ndescription: x\n---\n", BOM),
    ];
    v.push(case("a", &fm("name: a\ndescription: x\n")));
    // YAML 1.2 beyond the simplest forms: each construct once.
    v.extend([
        documented(
            "yaml-flow-sequence",
            &fm("name: yaml-flow-sequence\ndescription: x\nallowed-tools: [Read, \"Bash(git:*)\"]\n"),
            STRICT_YAML,
        ),
        documented(
            "yaml-flow-mapping",
            &fm("name: yaml-flow-mapping\ndescription: x\nmetadata: {author: me, version: 1.0}\n"),
            STRICT_YAML,
        ),
        case(
            "yaml-next-line",
            &fm("name: yaml-next-line\ndescription:\n  Reviews code. Use when asked\n  for a review.\n"),
        ),
        case(
            "yaml-plain-lines",
            &fm("name: yaml-plain-lines\ndescription: one\n  two\n\n  three\n"),
        ),
        case(
            "yaml-double-lines",
            &fm("name: yaml-double-lines\ndescription: \"Use when: one\n  two \\u00e9\"\n"),
        ),
        case(
            "yaml-single-lines",
            &fm("name: yaml-single-lines\ndescription: 'it''s\n  two lines'\n"),
        ),
        documented(
            "yaml-anchor",
            &fm("name: &n yaml-anchor\ndescription: x\nmetadata:\n  id: *n\n"),
            STRICT_YAML,
        ),
        documented(
            "yaml-tag",
            &fm("name: yaml-tag\ndescription: !!str 1.0\n"),
            STRICT_YAML,
        ),
        case(
            "yaml-document-end",
            &fm("name: yaml-document-end\ndescription: x\n...\n"),
        ),
        case(
            "yaml-typed-words",
            &fm("name: yaml-typed-words\ndescription: yes\nlicense: 1.0\nmetadata:\n  version: 1.0\n  on: off\n"),
        ),
        case(
            "yaml-comments",
            &fm("# top\nname: yaml-comments # the name\ndescription: >- # folded\n  x\n"),
        ),
        case(
            "yaml-bad-indent",
            &fm("name: yaml-bad-indent\ndescription: x\nmetadata:\n  a: b\n c: d\n"),
        ),
        case(
            "yaml-unclosed-flow",
            &fm("name: yaml-unclosed-flow\ndescription: [x\n"),
        ),
        case(
            "yaml-laughs",
            &fm("name: yaml-laughs\ndescription: x\nmetadata:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"),
        ),
    ]);
    // The SKILL.md corpus under test_data/skills is judged too.
    for kind in ["ok", "err"] {
        for (folder, _, text) in crate::skill::corpus(kind) {
            v.push(case(&folder, &text));
        }
    }
    v
}

/// A small deterministic generator (no seed from the clock: a failure reproduces).
struct Lcg(u64);

impl Lcg {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        &items[(self.0 >> 33) as usize % items.len()]
    }
}

fn generated() -> Vec<Case> {
    let long = "a".repeat(64);
    let too_long = "a".repeat(65);
    let names: Vec<&str> = vec![
        "a",
        "pdf-processing",
        "x1",
        "a-b-c",
        "9lives",
        &long,
        "A",
        "Pdf",
        "-a",
        "a-",
        "a--b",
        "a_b",
        "a.b",
        "a b",
        &too_long,
        "",
    ];
    let d1024 = "d".repeat(1024);
    let d1025 = "d".repeat(1025);
    let descriptions: Vec<String> = vec![
        "A skill.".into(),
        d1024.clone(),
        d1025.clone(),
        "\"Use when: reviewing\"".into(),
        "\"\"".into(),
        "'  '".into(),
        "Reviews code, then reports".into(),
    ];
    let c500 = "c".repeat(500);
    let c501 = "c".repeat(501);
    let optional: Vec<String> = vec![
        String::new(),
        "license: MIT\n".into(),
        "license: Proprietary. LICENSE.txt has complete terms\n".into(),
        format!("compatibility: {c500}\n"),
        format!("compatibility: {c501}\n"),
        "compatibility: Requires Python 3.14+ and uv\n".into(),
        "metadata:\n  author: example-org\n  version: \"1.0\"\n".into(),
        "allowed-tools: Read Write\n".into(),
        "allowed-tools:\n  - Read\n  - Bash(git:*)\n".into(),
    ];
    let mut rng = Lcg(0x5eed);
    let mut out = Vec::new();
    for name in &names {
        for description in &descriptions {
            for _ in 0..3 {
                let extra = rng.pick(&optional);
                let extra2 = rng.pick(&optional);
                let mismatch = *rng.pick(&[false, false, false, true]);
                let folder = if name.is_empty() {
                    "empty-name".to_owned()
                } else if mismatch {
                    format!("{name}-folder")
                } else {
                    (*name).to_owned()
                };
                let name_line = if name.is_empty() {
                    "name: \"\"\n".to_owned()
                } else {
                    format!("name: {name}\n")
                };
                let extras = if extra2.split(':').next() == extra.split(':').next() {
                    extra.clone()
                } else {
                    format!("{extra}{extra2}")
                };
                out.push(case(
                    &folder,
                    &fm(&format!("{name_line}description: {description}\n{extras}")),
                ));
            }
        }
    }
    out
}

const DRIVER: &str = r#"
import json, sys
from pathlib import Path
from skills_ref.validator import validate
dirs = json.load(sys.stdin)
print(json.dumps([validate(Path(d)) for d in dirs]))
"#;

/// The reference validator's error lists, one per folder.
fn skills_ref(dirs: &[PathBuf]) -> Vec<Vec<String>> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the differential test runs the reference validator; nothing of a bundle runs"
    )]
    let mut child = std::process::Command::new("python3")
        .args(["-c", DRIVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 must be installed");
    let input = serde_json::to_vec(dirs).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "skills-ref did not run; install it with `python3 -m pip install skills-ref==0.1.1` (.ci/run does): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn write_corpus(root: &Path, cases: &[Case]) -> Vec<PathBuf> {
    let _ = std::fs::remove_dir_all(root);
    cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let dir = root.join(i.to_string()).join(&c.folder);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("SKILL.md"), &c.text).unwrap();
            dir
        })
        .collect()
}

#[test]
fn verdicts_equal_the_skills_ref_reference_validator_except_where_documented() {
    let mut cases = hand_written();
    let hand = cases.len();
    cases.extend(generated());
    assert!(cases.len() >= 300, "{} cases", cases.len());
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skills-ref-corpus");
    let dirs = write_corpus(&root, &cases);
    let theirs = skills_ref(&dirs);
    assert_eq!(theirs.len(), cases.len());
    let mut disagreements = Vec::new();
    let (mut valid, mut invalid) = (0, 0);
    for (i, (c, errors)) in cases.iter().zip(&theirs).enumerate() {
        let ours = validate_skill(&c.text, &c.folder);
        let (ours_ok, theirs_ok) = (ours.is_valid(), errors.is_empty());
        if theirs_ok {
            valid += 1;
        } else {
            invalid += 1;
        }
        match c.differs {
            None if ours_ok != theirs_ok => disagreements.push(format!(
                "case {i} ({}) `{}`: ours valid={ours_ok} {:?}, skills-ref valid={theirs_ok} {errors:?}",
                if i < hand { "hand-written" } else { "generated" },
                c.folder,
                ours.diagnostics.iter().map(|d| d.code).collect::<Vec<_>>(),
            )),
            Some(why) if ours_ok == theirs_ok => disagreements.push(format!(
                "case {i} `{}` is documented as a difference ({why}) but both say valid={ours_ok}",
                c.folder
            )),
            _ => {}
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // Both verdicts are well represented, so agreement means something.
    assert!(
        valid >= 50 && invalid >= 100,
        "valid {valid}, invalid {invalid}"
    );
}
