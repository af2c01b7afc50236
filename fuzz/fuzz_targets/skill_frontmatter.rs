//! Feeds arbitrary bytes (lossily decoded) to the `SKILL.md` frontmatter validator, with the
//! default limits and with a small description limit. It may not panic; a report is valid exactly
//! when it carries a skill; a valid skill is named after its folder, keeps its description within
//! the limit and lists both among its fields; every diagnostic is documented and points inside
//! the text.
//!
//! Input layout: byte 0 picks the description limit (0 to 63), then the folder name up to the
//! first `\n`, then the file.
#![no_main]

use c2_manifest::{SkillOptions, SkillReport, validate_skill, validate_skill_with};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (folder, source) = text.split_once('\n').unwrap_or((&text, ""));
    let options = SkillOptions {
        max_description_chars: usize::from(limit % 64),
        ..SkillOptions::default()
    };
    let tight = validate_skill_with(source, folder, &options);
    check(&tight, source, folder, &options);
    let default = validate_skill(source, folder);
    check(&default, source, folder, &SkillOptions::default());
    if tight.is_valid() {
        assert_eq!(
            default.skill, tight.skill,
            "a looser limit changed a valid skill"
        );
    }
});

fn check(report: &SkillReport, source: &str, folder: &str, options: &SkillOptions) {
    assert_eq!(report.is_valid(), report.skill.is_some());
    assert_eq!(report.is_valid(), !c2_fuzz::has_errors(&report.diagnostics));
    if let Some(skill) = &report.skill {
        assert_eq!(skill.name, folder);
        assert!(skill.description.chars().count() <= options.max_description_chars);
        assert_eq!(skill.fields.get("name"), Some(&skill.name));
        assert_eq!(skill.fields.get("description"), Some(&skill.description));
    }
    c2_fuzz::check_diagnostics("SKILL.md", source, &report.diagnostics);
}
