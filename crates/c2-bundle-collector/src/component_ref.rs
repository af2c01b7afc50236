//! The name of one contribution of a bundle, `<kind>:<local-id>`, as a per-component choice
//! names it (plugin-standard.md §2, §3): which kinds a choice can name, the one written form
//! of each name, and its parser. Policy stores a choice under `<installed-id>:<kind>:<local-id>`.

use std::collections::BTreeSet;
use std::fmt;

use crate::inventory::ContributionKind;
use crate::store::InstalledRecord;

/// The contribution kinds a per-component choice can name, in the inventory's spelling.
pub const COMPONENT_KINDS: [ContributionKind; 7] = [
    ContributionKind::Skill,
    ContributionKind::UiAction,
    ContributionKind::Connector,
    ContributionKind::LanguageServer,
    ContributionKind::McpServer,
    ContributionKind::Scaffold,
    ContributionKind::RuntimeCommand,
];

/// One contribution of a bundle, `<kind>:<local-id>` (e.g. `skill:review`,
/// `runtime-command:review.run`, `mcp-server:""` for an MCP server named with the empty
/// string).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentRef {
    /// One of [`COMPONENT_KINDS`].
    pub kind: ContributionKind,
    /// The bundle-local id (a skill's folder, a command id, an MCP server's name, ...).
    pub local_id: String,
}

/// Text that is not the `<kind>:<local-id>` of a component a choice can name; the message
/// says why and what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidComponent(pub String);

impl ComponentRef {
    /// Parses `<kind>:<local-id>`; an unknown kind is refused with the valid ones.
    pub fn parse(text: &str) -> Result<Self, InvalidComponent> {
        let valid = || {
            COMPONENT_KINDS
                .iter()
                .map(|kind| kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some((kind, local_id)) = text.split_once(':') else {
            return Err(InvalidComponent(format!(
                "`{text}` is not `<kind>:<local-id>` (e.g. `skill:review`); kinds: {}",
                valid()
            )));
        };
        let kind = COMPONENT_KINDS
            .iter()
            .copied()
            .find(|candidate| candidate.as_str() == kind)
            .ok_or_else(|| {
                InvalidComponent(format!(
                    "`{kind}` is not a component kind a choice can name; use one of: {}",
                    valid()
                ))
            })?;
        if local_id.is_empty() {
            return Err(InvalidComponent(format!(
                "`{text}` names no local id after the kind (an empty one is written `{}:\"\"`)",
                kind.as_str()
            )));
        }
        // A local id starting with `"` is a JSON string literal: the form of every id that the
        // plain form cannot carry (the empty one, one starting with `"`), and allowed for any.
        let local_id = if local_id.starts_with('"') {
            serde_json::from_str::<String>(local_id).map_err(|_| {
                InvalidComponent(format!(
                    "`{text}`: a local id starting with `\"` must be one JSON string, e.g. `{}:\"\"`",
                    kind.as_str()
                ))
            })?
        } else {
            local_id.to_owned()
        };
        Ok(Self { kind, local_id })
    }

    /// The policy identity of this component of installed bundle `id`.
    pub fn policy_key(&self, id: &str) -> String {
        format!("{id}:{self}")
    }
}

impl fmt::Display for ComponentRef {
    /// `<kind>:<local-id>`, the local id plain unless it is empty or starts with `"`; then it
    /// is written as a JSON string (`mcp-server:""`), so every id has one form and
    /// [`ComponentRef::parse`] reads back exactly the id that was written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.as_str();
        if self.local_id.is_empty() || self.local_id.starts_with('"') {
            let quoted = serde_json::to_string(&self.local_id).map_err(|_| fmt::Error)?;
            write!(f, "{kind}:{quoted}")
        } else {
            write!(f, "{kind}:{}", self.local_id)
        }
    }
}

/// The `<kind>:<local-id>` form of one contribution (see [`ComponentRef`]'s `Display`).
pub fn component_id(kind: ContributionKind, local_id: &str) -> String {
    if local_id.is_empty() || local_id.starts_with('"') {
        return ComponentRef {
            kind,
            local_id: local_id.to_owned(),
        }
        .to_string();
    }
    let kind = kind.as_str();
    let mut id = String::with_capacity(kind.len() + 1 + local_id.len());
    id.push_str(kind);
    id.push(':');
    id.push_str(local_id);
    id
}

impl InstalledRecord {
    /// The components of this bundle a choice can name, as `<kind>:<local-id>`.
    pub fn switchable(&self) -> BTreeSet<String> {
        self.inventory
            .contributions
            .iter()
            .filter(|c| COMPONENT_KINDS.contains(&c.kind))
            .map(|c| component_id(c.kind, &c.id))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_as_it_is_serialized() {
        use ContributionKind::*;
        for kind in [
            Skill,
            Agent,
            PromptCommand,
            McpServer,
            RuntimeCommand,
            Connector,
            Scene,
            Pipeline,
            Scaffold,
            Template,
            LanguageServer,
            UiAction,
            Hooks,
            Monitors,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.as_str())
            );
        }
    }

    #[test]
    fn every_component_local_id_has_one_form_that_parses_back_to_it() {
        for local_id in [
            "",
            "x",
            "\"",
            "\"q\"",
            "a:b",
            " spaced ",
            "\u{1b}[31m",
            "x\"",
        ] {
            let component = ComponentRef {
                kind: ContributionKind::McpServer,
                local_id: local_id.to_owned(),
            };
            let text = component.to_string();
            assert_eq!(ComponentRef::parse(&text).unwrap(), component, "{text}");
            assert_eq!(component_id(component.kind, local_id), text);
        }
        assert_eq!(
            ComponentRef {
                kind: ContributionKind::McpServer,
                local_id: String::new()
            }
            .to_string(),
            r#"mcp-server:"""#
        );
        for bad in [
            "mcp-server:",
            r#"mcp-server:"open"#,
            r#"mcp-server:"a"b"#,
            "widget:panel",
            "panel",
        ] {
            assert!(ComponentRef::parse(bad).is_err(), "{bad}");
        }
    }
}
