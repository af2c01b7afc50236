//! `extensions.dev.codetwo.runtime`: the process a trusted bundle runs, its command (a bare
//! executable name or a path inside the bundle, never absolute and never through `..`),
//! arguments, environment, the services it injects and the scopes it supports. A language
//! server's command and arguments follow the same rules.

use super::Validator;
use crate::json::Node;
use crate::model::{RuntimeDecl, ScopeKind};

impl Validator<'_, '_> {
    pub(super) fn executable(&mut self, node: &Node<'_>, ptr: &str, command: &str) {
        if command.trim().is_empty() {
            self.err(
                "command-empty",
                ptr,
                node,
                "`command` is empty",
                Some("name an executable, e.g. \"node\" or \"bin/server\""),
            );
            return;
        }
        let absolute = command.starts_with(['/', '\\'])
            || (command.len() >= 2
                && command.as_bytes()[0].is_ascii_alphabetic()
                && command.as_bytes()[1] == b':');
        if absolute {
            self.err(
                "command-absolute",
                ptr,
                node,
                format!("`command` `{command}` is an absolute path"),
                Some("use a bare executable name or a path relative to the bundle root"),
            );
        }
        if command.split(['/', '\\']).any(|seg| seg == "..") {
            self.err(
                "command-parent-dir",
                ptr,
                node,
                format!("`command` `{command}` has a `..` segment"),
                Some(
                    "keep the executable inside the bundle and name it relative to the bundle root",
                ),
            );
        }
    }

    pub(super) fn runtime(&mut self, node: &Node<'_>, ptr: &str) -> Option<RuntimeDecl> {
        let members = self.c.object(node, ptr)?;
        self.c.closed(
            members,
            ptr,
            &[
                "command",
                "protocol",
                "args",
                "env",
                "inject",
                "optionalInject",
                "scopeSupport",
                "commandTimeoutMs",
            ],
        );
        let command = self
            .c
            .string_field(node, ptr, "command", true)
            .map(|(n, p, s)| {
                self.executable(n, &p, s);
                s.to_owned()
            });
        let protocol = self
            .c
            .string_field(node, ptr, "protocol", false)
            .map(|(n, p, s)| {
                match semver::Version::parse(s) {
                    Ok(v) if v.major == 1 => {}
                    Ok(v) => self.err(
                        "protocol-unsupported",
                        &p,
                        n,
                        format!("protocol major version {} is not supported", v.major),
                        Some("this host speaks C2 Plugin Protocol 1.x; declare \"1.0.0\""),
                    ),
                    Err(_) => self.err(
                        "protocol-invalid",
                        &p,
                        n,
                        format!("`protocol` \"{s}\" is not a SemVer version"),
                        Some("declare \"1.0.0\""),
                    ),
                }
                s.to_owned()
            });
        let args = self.args(node, ptr);
        let env = self
            .c
            .field(node, ptr, "env", false)
            .map(|(n, p)| self.c.env(n, &p))
            .unwrap_or_default();
        let inject = self.inject(node, ptr, "inject");
        let optional_inject = self.inject(node, ptr, "optionalInject");
        let scope_support = match self.c.field(node, ptr, "scopeSupport", false) {
            None => vec![ScopeKind::User],
            Some((n, p)) => self.scope_support(n, &p),
        };
        let command_timeout_ms = self
            .c
            .field(node, ptr, "commandTimeoutMs", false)
            .and_then(|(n, p)| self.command_timeout(n, &p));
        Some(RuntimeDecl {
            command: command?,
            protocol,
            args,
            env,
            inject,
            optional_inject,
            scope_support,
            command_timeout_ms,
        })
    }

    pub(super) fn args(&mut self, node: &Node<'_>, ptr: &str) -> Vec<String> {
        match self.c.field(node, ptr, "args", false) {
            Some((n, p)) => self
                .c
                .strings(n, &p)
                .into_iter()
                .map(|(_, _, s)| s.to_owned())
                .collect(),
            None => Vec::new(),
        }
    }

    fn inject(&mut self, node: &Node<'_>, ptr: &str, key: &str) -> Vec<String> {
        let Some((n, p)) = self.c.field(node, ptr, key, false) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for (item, ip, s) in self.c.strings(n, &p) {
            if s.trim().is_empty() {
                self.err(
                    "inject-empty",
                    &ip,
                    item,
                    format!("`{key}` has an empty service name"),
                    Some("remove the entry or name a service"),
                );
            } else if out.iter().any(|o| o == s) {
                self.err(
                    "inject-duplicate",
                    &ip,
                    item,
                    format!("service `{s}` is listed twice in `{key}`"),
                    Some("remove the duplicate"),
                );
            } else {
                out.push(s.to_owned());
            }
        }
        out
    }

    fn scope_support(&mut self, node: &Node<'_>, ptr: &str) -> Vec<ScopeKind> {
        let items = self.c.strings(node, ptr);
        if node.as_array().is_some_and(<[Node<'_>]>::is_empty) {
            self.err(
                "scope-support-empty",
                ptr,
                node,
                "`scopeSupport` must not be empty",
                Some("list \"user\", \"project\" or both, or omit it to mean [\"user\"]"),
            );
        }
        let mut out = Vec::new();
        for (item, p, s) in items {
            match ScopeKind::parse(s) {
                None => self.err(
                    "scope-unknown",
                    &p,
                    item,
                    format!("unknown scope `{s}`"),
                    Some("use \"user\" or \"project\""),
                ),
                Some(k) if out.contains(&k) => {
                    self.err(
                        "scope-duplicate",
                        &p,
                        item,
                        format!("scope `{s}` is listed twice"),
                        Some("remove the duplicate"),
                    );
                }
                Some(k) => out.push(k),
            }
        }
        out
    }
}
