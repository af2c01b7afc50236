//! The declarations beside commands in `extensions.dev.codetwo`: UI actions, connectors with
//! their capabilities, and language servers with their languages, each with a bundle-local id
//! that is well formed and unique, and (for UI actions and connectors) a command the bundle
//! declares itself.

use std::collections::{BTreeMap, HashSet};

use super::Validator;
use crate::check::is_safe_id;
use crate::json::Node;
use crate::model::{Capability, ConnectorDecl, LanguageServerDecl, UiDecl, UiSlot};

impl Validator<'_, '_> {
    fn local_id(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        what: &str,
        invalid: &'static str,
    ) -> Option<String> {
        let id = self.c.string(node, ptr)?;
        if !is_safe_id(id, self.opts.max_local_id_chars) {
            self.err(
                invalid,
                ptr,
                node,
                format!("{what} `{id}` is not a safe id"),
                Some(&format!(
                    "use 1 to {} of A-Z, a-z, 0-9, `.`, `_` and `-`, starting with a letter or digit",
                    self.opts.max_local_id_chars
                )),
            );
        }
        Some(id.to_owned())
    }

    fn unique(
        &mut self,
        seen: &mut HashSet<String>,
        id: &str,
        node: &Node<'_>,
        ptr: &str,
        code: &'static str,
        what: &str,
    ) {
        if !seen.insert(id.to_owned()) {
            self.err(
                code,
                ptr,
                node,
                format!("{what} `{id}` is declared twice"),
                Some("give every entry a unique id"),
            );
        }
    }

    fn owned_command(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        commands: &HashSet<&str>,
        code: &'static str,
    ) -> Option<String> {
        let (n, p, s) = self.c.string_field(node, ptr, "command", true)?;
        if !commands.contains(s) {
            self.err(
                code,
                &p,
                n,
                format!("`command` `{s}` is not declared in this bundle's commands"),
                Some("name a command from extensions.dev.codetwo.commands"),
            );
        }
        Some(s.to_owned())
    }

    pub(super) fn ui(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        commands: &HashSet<&str>,
    ) -> Vec<UiDecl> {
        let items = self.c.array(node, ptr).unwrap_or_default();
        self.entries(items, ptr, |v, item, p, seen| {
            v.ui_entry(item, p, commands, seen)
        })
    }

    fn ui_entry(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        commands: &HashSet<&str>,
        seen: &mut HashSet<String>,
    ) -> Option<UiDecl> {
        let members = self.c.object(node, ptr)?;
        self.c.closed(
            members,
            ptr,
            &[
                "id",
                "slot",
                "label",
                "description",
                "command",
                "input",
                "order",
            ],
        );
        let id = self.c.field(node, ptr, "id", true).and_then(|(n, p)| {
            let id = self.local_id(n, &p, "ui id", "ui-id-invalid")?;
            self.unique(seen, &id, n, &p, "ui-id-duplicate", "ui id");
            Some(id)
        });
        let slot = self
            .c
            .string_field(node, ptr, "slot", true)
            .and_then(|(n, p, s)| {
                let slot = UiSlot::parse(s);
                if slot.is_none() {
                    let all: Vec<&str> = UiSlot::ALL.iter().map(|s| s.as_str()).collect();
                    self.err(
                        "ui-slot-unknown",
                        &p,
                        n,
                        format!("unknown ui slot `{s}`"),
                        Some(&format!("use one of {}", all.join(", "))),
                    );
                }
                slot
            });
        let label = self.bounded_text(
            node,
            ptr,
            "label",
            true,
            self.opts.max_title_chars,
            "label-empty",
            "label-too-long",
        );
        let description = self.bounded_text(
            node,
            ptr,
            "description",
            false,
            self.opts.max_description_chars,
            "",
            "description-too-long",
        );
        let command = self.owned_command(node, ptr, commands, "ui-command-unknown");
        let input = self.c.field(node, ptr, "input", false).map(|(n, p)| {
            let value = n.to_json();
            let size = serde_json::to_string(&value).map_or(usize::MAX, |s| s.len());
            if size > self.opts.max_ui_input_bytes {
                self.err(
                    "ui-input-too-large",
                    &p,
                    n,
                    format!(
                        "`input` is {size} bytes serialized; the limit is {}",
                        self.opts.max_ui_input_bytes
                    ),
                    Some("keep ui input small; let the command load larger data itself"),
                );
            }
            value
        });
        let order = self
            .c
            .field(node, ptr, "order", false)
            .and_then(|(n, p)| self.order(n, &p));
        Some(UiDecl {
            id: id?,
            slot: slot?,
            label: label?,
            description,
            command: command?,
            input,
            order,
        })
    }

    pub(super) fn connectors(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        commands: &HashSet<&str>,
    ) -> Vec<ConnectorDecl> {
        let items = self.c.array(node, ptr).unwrap_or_default();
        self.entries(items, ptr, |v, item, p, seen| {
            v.connector(item, p, commands, seen)
        })
    }

    fn connector(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        commands: &HashSet<&str>,
        seen: &mut HashSet<String>,
    ) -> Option<ConnectorDecl> {
        let members = self.c.object(node, ptr)?;
        self.c
            .closed(members, ptr, &["id", "provider", "command", "capabilities"]);
        let id = self.c.field(node, ptr, "id", true).and_then(|(n, p)| {
            let id = self.local_id(n, &p, "connector id", "connector-id-invalid")?;
            self.unique(seen, &id, n, &p, "connector-id-duplicate", "connector id");
            Some(id)
        });
        let provider = self
            .c
            .field(node, ptr, "provider", true)
            .and_then(|(n, p)| self.local_id(n, &p, "provider", "provider-invalid"));
        let command = self.owned_command(node, ptr, commands, "connector-command-unknown");
        let capabilities = self
            .c
            .field(node, ptr, "capabilities", true)
            .map(|(n, p)| self.capabilities(n, &p));
        Some(ConnectorDecl {
            id: id?,
            provider: provider?,
            command: command?,
            capabilities: capabilities?,
        })
    }

    fn capabilities(&mut self, node: &Node<'_>, ptr: &str) -> Vec<Capability> {
        let items = self.c.strings(node, ptr);
        if node.as_array().is_some_and(<[Node<'_>]>::is_empty) {
            self.err(
                "capabilities-empty",
                ptr,
                node,
                "`capabilities` must not be empty",
                Some("declare at least one capability, e.g. \"connection\""),
            );
        }
        let mut out = Vec::new();
        for (item, p, s) in items {
            match Capability::parse(s) {
                None => {
                    let all: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
                    self.err(
                        "capability-unknown",
                        &p,
                        item,
                        format!("unknown capability `{s}`"),
                        Some(&format!("use one of {}", all.join(", "))),
                    );
                }
                Some(c) if out.contains(&c) => {
                    self.err(
                        "capability-duplicate",
                        &p,
                        item,
                        format!("capability `{s}` is listed twice"),
                        Some("remove the duplicate"),
                    );
                }
                Some(c) => out.push(c),
            }
        }
        out
    }

    pub(super) fn language_servers(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
    ) -> Vec<LanguageServerDecl> {
        let items = self.c.array(node, ptr).unwrap_or_default();
        self.entries(items, ptr, |v, item, p, seen| {
            v.language_server(item, p, seen)
        })
    }

    fn language_server(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        seen: &mut HashSet<String>,
    ) -> Option<LanguageServerDecl> {
        let members = self.c.object(node, ptr)?;
        self.c
            .closed(members, ptr, &["id", "languages", "command", "args", "env"]);
        let id = self.c.field(node, ptr, "id", true).and_then(|(n, p)| {
            let id = self.local_id(n, &p, "language server id", "language-server-id-invalid")?;
            self.unique(
                seen,
                &id,
                n,
                &p,
                "language-server-id-duplicate",
                "language server id",
            );
            Some(id)
        });
        let languages = self
            .c
            .field(node, ptr, "languages", true)
            .map(|(n, p)| self.languages(n, &p));
        let command = self
            .c
            .string_field(node, ptr, "command", true)
            .map(|(n, p, s)| {
                self.executable(n, &p, s);
                s.to_owned()
            });
        let args = self.args(node, ptr);
        let env: BTreeMap<String, String> = self
            .c
            .field(node, ptr, "env", false)
            .map(|(n, p)| self.c.env(n, &p))
            .unwrap_or_default();
        Some(LanguageServerDecl {
            id: id?,
            languages: languages?,
            command: command?,
            args,
            env,
        })
    }

    fn languages(&mut self, node: &Node<'_>, ptr: &str) -> Vec<String> {
        let items = self.c.strings(node, ptr);
        let max = self.opts.max_languages;
        if let Some(all) = node.as_array() {
            if all.is_empty() {
                self.err(
                    "languages-empty",
                    ptr,
                    node,
                    "`languages` must name at least one language",
                    Some("add a Monaco language id, e.g. \"rust\""),
                );
            } else if all.len() > max {
                self.err(
                    "languages-too-many",
                    ptr,
                    node,
                    format!("{} languages are listed; the limit is {max}", all.len()),
                    Some("split them across several language servers"),
                );
            }
        }
        let mut out: Vec<String> = Vec::new();
        for (item, p, s) in items {
            if s.trim().is_empty() {
                self.err(
                    "language-empty",
                    &p,
                    item,
                    "a language id is empty",
                    Some("remove it or name a Monaco language id"),
                );
            } else if out.iter().any(|o| o.to_lowercase() == s.to_lowercase()) {
                self.err(
                    "language-duplicate",
                    &p,
                    item,
                    format!("language `{s}` is listed twice (matching ignores case)"),
                    Some("remove the duplicate"),
                );
            } else {
                out.push(s.to_owned());
            }
        }
        out
    }
}
