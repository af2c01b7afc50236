//! Every third-party licence is on the allow-list in deny.toml.
//!
//! The check reads `licenses.allow` from deny.toml and evaluates each package's SPDX expression
//! from `cargo metadata`, so CI needs no extra tool. `OR` needs one allowed side, `AND` both;
//! the legacy `A/B` form means `A OR B`.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::layering::Metadata;

pub(crate) fn check(root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    let deny = std::fs::read_to_string(root.join("deny.toml")).context("read deny.toml")?;
    let allow = allow_list(&deny)?;
    let mut problems = Vec::new();
    for (name, version, licence) in &metadata.third_party {
        match licence {
            None => problems.push(format!(
                "{name} {version} declares no licence expression: review it and add an exception"
            )),
            Some(expr) => match allowed(expr, &allow) {
                Ok(true) => {}
                Ok(false) => problems.push(format!(
                    "{name} {version} is licensed `{expr}`, which is not on the allow-list in deny.toml"
                )),
                Err(error) => problems.push(format!("{name} {version}: licence `{expr}`: {error}")),
            },
        }
    }
    Ok(problems)
}

/// The strings of the `allow = [...]` array in the `[licenses]` table.
fn allow_list(deny: &str) -> Result<Vec<String>> {
    let section = deny
        .split("\n[")
        .find(|part| part.trim_start_matches('[').starts_with("licenses]"))
        .context("deny.toml has no [licenses] table")?;
    let start = section
        .find("allow")
        .context("deny.toml [licenses] has no allow list")?;
    let rest = &section[start..];
    let open = rest.find('[').context("deny.toml allow is not an array")?;
    let close = rest
        .find(']')
        .context("deny.toml allow array is not closed")?;
    let items: Vec<String> = rest[open + 1..close]
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .flat_map(|line| line.split(','))
        .map(|item| item.trim().trim_matches('"').to_owned())
        .filter(|item| !item.is_empty())
        .collect();
    if items.is_empty() {
        bail!("deny.toml allow list is empty");
    }
    Ok(items)
}

/// Evaluates an SPDX licence expression against the allow-list.
fn allowed(expr: &str, allow: &[String]) -> Result<bool, String> {
    let normalized = expr
        .replace('/', " OR ")
        .replace('(', " ( ")
        .replace(')', " ) ");
    let tokens: Vec<&str> = normalized.split_whitespace().collect();
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        allow,
    };
    let value = parser.or()?;
    if parser.at != tokens.len() {
        return Err(format!("unexpected `{}`", tokens[parser.at]));
    }
    Ok(value)
}

struct Parser<'a> {
    tokens: &'a [&'a str],
    at: usize,
    allow: &'a [String],
}

impl Parser<'_> {
    fn or(&mut self) -> Result<bool, String> {
        let mut value = self.and()?;
        while self.tokens.get(self.at) == Some(&"OR") {
            self.at += 1;
            value |= self.and()?;
        }
        Ok(value)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut value = self.term()?;
        while self.tokens.get(self.at) == Some(&"AND") {
            self.at += 1;
            value &= self.term()?;
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<bool, String> {
        match self.tokens.get(self.at) {
            Some(&"(") => {
                self.at += 1;
                let value = self.or()?;
                if self.tokens.get(self.at) != Some(&")") {
                    return Err("unbalanced parentheses".to_owned());
                }
                self.at += 1;
                Ok(value)
            }
            Some(id) => {
                self.at += 1;
                let mut licence = (*id).to_owned();
                if self.tokens.get(self.at) == Some(&"WITH") {
                    let exception = self
                        .tokens
                        .get(self.at + 1)
                        .ok_or("WITH needs an exception")?;
                    licence = format!("{licence} WITH {exception}");
                    self.at += 2;
                }
                Ok(self.allow.contains(&licence))
            }
            None => Err("expression ends early".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow() -> Vec<String> {
        vec![
            "MIT".into(),
            "Apache-2.0".into(),
            "Apache-2.0 WITH LLVM-exception".into(),
        ]
    }

    #[test]
    fn or_needs_one_allowed_side() {
        assert_eq!(allowed("MIT OR LGPL-2.1-or-later", &allow()), Ok(true));
        assert_eq!(allowed("GPL-3.0 OR LGPL-2.1-or-later", &allow()), Ok(false));
    }

    #[test]
    fn and_needs_both_sides() {
        assert_eq!(
            allowed("(MIT OR Apache-2.0) AND Unicode-3.0", &allow()),
            Ok(false)
        );
        assert_eq!(allowed("(MIT OR Apache-2.0) AND MIT", &allow()), Ok(true));
    }

    #[test]
    fn legacy_slash_means_or_and_with_is_kept_whole() {
        assert_eq!(allowed("GPL-2.0/MIT", &allow()), Ok(true));
        assert_eq!(
            allowed("Apache-2.0 WITH LLVM-exception", &allow()),
            Ok(true)
        );
        assert_eq!(
            allowed("GPL-2.0 WITH Classpath-exception-2.0", &allow()),
            Ok(false)
        );
    }

    #[test]
    fn a_malformed_expression_is_an_error() {
        assert!(allowed("(MIT", &allow()).is_err());
        assert!(allowed("MIT OR", &allow()).is_err());
    }

    #[test]
    fn the_allow_list_is_read_from_the_licenses_table() {
        let deny = "[graph]\nallow = [\"nope\"]\n\n[licenses]\nallow = [\n  \"MIT\", # note\n  \"ISC\",\n]\n";
        assert_eq!(
            allow_list(deny).unwrap(),
            vec!["MIT".to_owned(), "ISC".to_owned()]
        );
    }
}
