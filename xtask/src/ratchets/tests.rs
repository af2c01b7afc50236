use super::lexer::lex;
use super::*;

#[test]
fn comments_and_strings_are_not_code() {
    let source = "let a = \"x // y\"; // use crate::builtins;\n/* crate::builtins /* nested */ */ let c = '\"'; let d = r#\"a \" b\"#;";
    let lexed = lex(source);
    assert!(!lexed.code.contains("builtins"), "{}", lexed.code);
    assert!(lexed.code.contains("let c ="), "{}", lexed.code);
    assert!(lexed.code.contains("let d ="), "{}", lexed.code);
    assert_eq!(lexed.code.len(), source.len());
    let texts: Vec<&str> = lexed.literals.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["x // y", "a \" b"]);
}

#[test]
fn a_lifetime_is_not_a_char_literal() {
    let lexed = lex("fn f<'a>(x: &'a str) -> char { 'b' }");
    assert!(lexed.code.contains("<'a>(x: &'a str)"), "{}", lexed.code);
    assert!(!lexed.code.contains("'b'"), "{}", lexed.code);
}

#[test]
fn dated_headings_are_recognised() {
    for heading in [
        "## Levers, 2026-12-01",
        "## Levers, the night of the release",
        "### Run of Nov 30",
        "## Notes of 30 November",
        "## Results, December 1st",
        "## Plans for Dec 2026",
        "## What changed on Tuesday",
        "## Run of Tue 1",
        "## Where it went yesterday",
    ] {
        assert!(dated(heading).is_some(), "{heading}");
    }
    for heading in [
        "## Reproduce",
        "## Free and pinned",
        "## What each figure is",
        "### `unload_p99` may miss its bar",
        "## Version 1.2.3, issue 10",
        "## Evening out the load",
    ] {
        assert_eq!(dated(heading), None, "{heading}");
    }
}

#[test]
fn core_imports_of_contributions_are_found_in_every_form() {
    for code in [
        "use crate::contributions::ui::Ui;",
        "use crate::{host::Shared, builtins::git};",
        "use super::contributions;",
        "fn f() { crate::builtins::register(); }",
        "use crate :: contributions :: mcp;",
    ] {
        assert_eq!(core_import_offsets(&lex(code).code).len(), 1, "{code}");
    }
    for code in [
        "use crate::host::Shared;",
        "// use crate::contributions::ui;",
        "let s = \"crate::builtins\";",
        "use c2_kernel::contributions;",
        "mod contributions;",
    ] {
        assert!(core_import_offsets(&lex(code).code).is_empty(), "{code}");
    }
}

#[test]
fn cli_name_literals_count_outside_hint_functions_and_tests() {
    let source = r#"
        fn message() -> String { format!("run `c2-plugins trust {}`", 1) }
        // `c2-plugins` in a comment does not count
        impl E {
            pub fn hint(&self) -> Option<&str> {
                match self { _ => Some("`c2-plugins list` shows them") }
            }
            fn hints_elsewhere(&self) -> &str { "c2-plugins reset" }
        }
        #[cfg(test)]
        mod tests {
            fn t() { assert!("c2-plugins".is_empty()); }
        }
    "#;
    assert_eq!(count_cli_literals(source), 2);
}

#[test]
fn non_exhaustive_is_seen_among_the_attributes_above_an_enum() {
    let source = "\
/// Doc.
#[derive(Debug)]
#[non_exhaustive]
pub enum Open { A }

/// Doc.
#[derive(
    Debug,
)]
pub enum Closed { A }

#[non_exhaustive]
pub struct S;
pub enum AfterStruct { A }

pub(crate) enum Private { A }
";
    let enums: Vec<(String, bool)> = public_enums(source)
        .into_iter()
        .map(|(_, name, marked)| (name, marked))
        .collect();
    assert_eq!(
        enums,
        [
            ("Open".to_owned(), true),
            ("Closed".to_owned(), false),
            ("AfterStruct".to_owned(), false),
        ]
    );
}

#[test]
fn the_enum_check_reads_every_published_crate_and_no_other() {
    let published: Vec<String> = published_sources(&crate::root())
        .unwrap()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    for name in [
        "c2-sources",
        "c2-check",
        "c2-relay",
        "c2-lock",
        "c2-host",
        "c2-protocol",
    ] {
        assert!(published.iter().any(|p| p == name), "{name}: {published:?}");
    }
    for name in ["c2-cli", "c2-testkit"] {
        assert!(
            !published.iter().any(|p| p == name),
            "{name}: {published:?}"
        );
    }
}
