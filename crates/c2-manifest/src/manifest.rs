//! plugin.json validation: Agent Plugins 1.0.0 identity plus `extensions.dev.codetwo` 1.2.0.

use std::collections::HashSet;

use serde::Serialize;

use crate::args_schema;
use crate::check::{Checker, chars, name_problem};
use crate::diagnostic::{Diagnostic, Sink, has_errors, pointer_push};
use crate::error::Error;
use crate::json::{self, Node};
use crate::model::{Author, CodeTwo, CommandDecl, Manifest};
use crate::options::ManifestOptions;

mod numbers;
mod runtime;
mod surfaces;

/// The only Agent Plugins schema this host recognizes; it is compared, never fetched.
pub const AGENT_PLUGINS_SCHEMA_URL: &str =
    "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
/// The only C2 Plugin Standard version that loads.
pub const STANDARD_VERSION: &str = "1.2.0";
/// The extension namespace C2 reads.
pub const CODETWO_NAMESPACE: &str = "dev.codetwo";

const ROOT_KEYS: [&str; 10] = [
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "extensions",
];
const CODETWO_KEYS: [&str; 6] = [
    "standardVersion",
    "commands",
    "runtime",
    "ui",
    "connectors",
    "languageServers",
];
const CODETWO_PTR: &str = "/extensions/dev.codetwo";

/// The outcome of validating a plugin.json: the typed manifest when valid, and every diagnostic.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestReport {
    /// `Some` exactly when no diagnostic is an error.
    pub manifest: Option<Manifest>,
    /// Every problem found, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl ManifestReport {
    /// No error-severity diagnostic (and so `manifest` is `Some`).
    pub fn is_valid(&self) -> bool {
        !has_errors(&self.diagnostics)
    }

    /// The manifest, or an error counting the problems that keep it from loading.
    pub fn into_manifest(self) -> Result<Manifest, Error> {
        let errors = self
            .diagnostics
            .iter()
            .filter(|d| d.severity == crate::Severity::Error)
            .count();
        match self.manifest {
            Some(m) if errors == 0 => Ok(m),
            _ => Err(Error::InvalidManifest { errors }),
        }
    }
}

/// Validates the text of a plugin.json, reporting every problem rather than the first.
pub fn validate_manifest(source: &str, options: &ManifestOptions) -> ManifestReport {
    let mut sink = Sink::new(source);
    let manifest = json::parse(source, options.max_depth, &mut sink).and_then(|root| {
        let mut v = Validator {
            c: Checker { sink: &mut sink },
            opts: options,
        };
        let manifest = v.root(&root);
        crate::hidden::manifest_identifiers(&root, v.c.sink);
        // The tree's depth is bounded by `max_depth`, so dropping it cannot exhaust the stack.
        drop(root);
        manifest
    });
    crate::hidden::scan_into(&mut sink);
    let manifest = if sink.has_errors() { None } else { manifest };
    ManifestReport {
        manifest,
        diagnostics: sink.finish(),
    }
}

struct Validator<'a, 's> {
    c: Checker<'a, 's>,
    opts: &'a ManifestOptions,
}

impl Validator<'_, '_> {
    fn err(
        &mut self,
        code: &'static str,
        ptr: &str,
        node: &Node<'_>,
        message: impl Into<String>,
        help: Option<&str>,
    ) {
        self.c.sink.error(code, ptr, node.start, message, help);
    }

    fn root(&mut self, root: &Node<'_>) -> Option<Manifest> {
        let members = self.c.object(root, "")?;
        for m in members {
            let key = m.key.as_ref();
            if ROOT_KEYS.contains(&key) {
                continue;
            }
            let ptr = pointer_push("", key);
            if key == "runtime" {
                self.c.sink.error(
                    "runtime-at-root",
                    &ptr,
                    m.key_start,
                    "`runtime` is not a root key",
                    Some("move it under extensions.dev.codetwo.runtime"),
                );
            } else if CODETWO_KEYS.contains(&key) {
                self.c.sink.error(
                    "unknown-root-key",
                    &ptr,
                    m.key_start,
                    format!("unknown root key `{key}`"),
                    Some(&format!("move it under extensions.dev.codetwo.{key}")),
                );
            } else {
                self.c.sink.error(
                    "unknown-root-key",
                    &ptr,
                    m.key_start,
                    format!("unknown root key `{key}`"),
                    Some(&format!(
                        "remove it; C2 1.2.0 allows only {}",
                        ROOT_KEYS.join(", ")
                    )),
                );
            }
        }

        let schema = self.schema(root);
        let name = self.name(root);
        let version = self.version(root);
        let description = self
            .c
            .string_field(root, "", "description", false)
            .map(|(_, _, s)| s.to_owned());
        let author = self.author(root);
        let homepage = self
            .c
            .string_field(root, "", "homepage", false)
            .map(|(_, _, s)| s.to_owned());
        let repository = self
            .c
            .string_field(root, "", "repository", false)
            .map(|(_, _, s)| s.to_owned());
        let license = self
            .c
            .string_field(root, "", "license", false)
            .map(|(_, _, s)| s.to_owned());
        let keywords = match self.c.field(root, "", "keywords", false) {
            Some((node, ptr)) => self
                .c
                .strings(node, &ptr)
                .into_iter()
                .map(|(_, _, s)| s.to_owned())
                .collect(),
            None => Vec::new(),
        };
        let codetwo = self.extensions(root);
        Some(Manifest {
            schema: schema?,
            name: name?,
            version,
            description,
            author,
            homepage,
            repository,
            license,
            keywords,
            codetwo: codetwo?,
        })
    }

    fn name(&mut self, root: &Node<'_>) -> Option<String> {
        let (node, ptr, name) = self.c.string_field(root, "", "name", true)?;
        let help =
            "use 1 to 64 of a-z, 0-9, `-` and `.`, starting and ending with a letter or digit";
        let problem = name_problem(name);
        if let Some(message) = problem {
            self.err("name-invalid", &ptr, node, message, Some(help));
        }
        let n = chars(name);
        if n > self.opts.max_name_chars {
            self.err(
                "name-too-long",
                &ptr,
                node,
                format!(
                    "`name` is {n} characters; the limit is {}",
                    self.opts.max_name_chars
                ),
                Some("shorten the name"),
            );
        }
        Some(name.to_owned())
    }

    /// `$schema` is required and selects the rules: only Agent Plugins 1.0.0 is recognized
    /// (Agent Plugins §5.2, §5.3). It is compared, never fetched.
    fn schema(&mut self, root: &Node<'_>) -> Option<String> {
        let help = format!("add \"$schema\": \"{AGENT_PLUGINS_SCHEMA_URL}\" as the first root key");
        let Some(node) = root.get("$schema") else {
            self.err(
                "schema-missing",
                "",
                root,
                "plugin.json is missing the required field `$schema`",
                Some(&help),
            );
            return None;
        };
        let ptr = pointer_push("", "$schema");
        let s = self.c.string(node, &ptr)?;
        if s != AGENT_PLUGINS_SCHEMA_URL {
            self.err(
                "schema-unsupported",
                &ptr,
                node,
                format!(
                    "`$schema` names `{s}`, an Agent Plugins version this host does not support"
                ),
                Some(&format!(
                    "set \"$schema\": \"{AGENT_PLUGINS_SCHEMA_URL}\" (Agent Plugins 1.0.0)"
                )),
            );
            return None;
        }
        Some(s.to_owned())
    }

    /// `version` is optional (Agent Plugins §5.3, §5.4): any string, not SemVer is a warning.
    fn version(&mut self, root: &Node<'_>) -> Option<String> {
        let (node, ptr, version) = self.c.string_field(root, "", "version", false)?;
        if semver::Version::parse(version).is_err() {
            self.c.sink.warning(
                "version-not-semver",
                &ptr,
                node.start,
                format!("`version` \"{version}\" is not a SemVer version"),
                Some("use MAJOR.MINOR.PATCH, e.g. \"1.0.0\"; a marketplace entry requires it"),
            );
        }
        Some(version.to_owned())
    }

    fn author(&mut self, root: &Node<'_>) -> Option<Author> {
        let (node, ptr) = self.c.field(root, "", "author", false)?;
        let members = self.c.object(node, &ptr)?;
        self.c.closed(members, &ptr, &["name", "email", "url"]);
        let mut get = |key| {
            self.c
                .string_field(node, &ptr, key, false)
                .map(|(_, _, s)| s.to_owned())
        };
        Some(Author {
            name: get("name"),
            email: get("email"),
            url: get("url"),
        })
    }

    fn extensions(&mut self, root: &Node<'_>) -> Option<CodeTwo> {
        let Some((ext, ptr)) = self.c.field(root, "", "extensions", false) else {
            self.c.sink.error(
                "codetwo-missing",
                "",
                root.start,
                "`extensions.dev.codetwo` is required",
                Some("add \"extensions\": { \"dev.codetwo\": { \"standardVersion\": \"1.2.0\" } }"),
            );
            return None;
        };
        let members = self.c.object(ext, &ptr)?;
        for m in members {
            if m.value.as_object().is_none() {
                let p = pointer_push(&ptr, &m.key);
                self.err(
                    "extension-not-object",
                    &p,
                    &m.value,
                    format!(
                        "extension namespace `{}` must be an object, found {}",
                        m.key,
                        m.value.kind()
                    ),
                    None,
                );
            }
        }
        let Some(codetwo) = ext.get(CODETWO_NAMESPACE) else {
            self.c.sink.error(
                "codetwo-missing",
                &ptr,
                ext.start,
                "`extensions.dev.codetwo` is required",
                Some("add \"dev.codetwo\": { \"standardVersion\": \"1.2.0\" }"),
            );
            return None;
        };
        self.codetwo(codetwo)
    }

    fn codetwo(&mut self, node: &Node<'_>) -> Option<CodeTwo> {
        let ptr = CODETWO_PTR;
        let members = node.as_object()?;
        self.c.closed(members, ptr, &CODETWO_KEYS);
        let standard_version = self.c.string_field(node, ptr, "standardVersion", true).map(|(n, p, s)| {
            if s != STANDARD_VERSION {
                self.err(
                    "standard-version-unsupported",
                    &p,
                    n,
                    format!("standard version \"{s}\" is not supported; only \"{STANDARD_VERSION}\" loads"),
                    Some("set \"standardVersion\": \"1.2.0\" and check the manifest against that standard"),
                );
            }
            s.to_owned()
        });

        let commands_field = self.c.field(node, ptr, "commands", false);
        let commands = commands_field
            .as_ref()
            .map(|(n, p)| self.commands(n, p))
            .unwrap_or_default();
        let runtime_field = self.c.field(node, ptr, "runtime", false);
        let runtime = runtime_field.as_ref().and_then(|(n, p)| self.runtime(n, p));
        let command_ids: HashSet<&str> = commands.iter().map(|c| c.id.as_str()).collect();
        let ui_field = self.c.field(node, ptr, "ui", false);
        let ui = ui_field
            .as_ref()
            .map(|(n, p)| self.ui(n, p, &command_ids))
            .unwrap_or_default();
        let connectors_field = self.c.field(node, ptr, "connectors", false);
        let connectors = connectors_field
            .as_ref()
            .map(|(n, p)| self.connectors(n, p, &command_ids))
            .unwrap_or_default();
        let ls_field = self.c.field(node, ptr, "languageServers", false);
        let language_servers = ls_field
            .as_ref()
            .map(|(n, p)| self.language_servers(n, p))
            .unwrap_or_default();

        // Cross-rules. A present-but-malformed runtime still counts as declared, so its own
        // diagnostics are not joined by a misleading "needs a runtime".
        let has_runtime = runtime_field.is_some();
        let declared = |field: &Option<(&Node<'_>, String)>| {
            field
                .as_ref()
                .is_some_and(|(n, _)| n.as_array().is_some_and(|a| !a.is_empty()))
        };
        if let Some((n, p)) = &runtime_field
            && !declared(&commands_field)
        {
            self.err(
                "runtime-without-commands",
                p,
                n,
                "a runtime needs at least one command",
                Some("declare the runtime's commands in extensions.dev.codetwo.commands"),
            );
        }
        for (field, code, what) in [
            (&commands_field, "commands-without-runtime", "commands"),
            (&ui_field, "ui-without-runtime", "ui actions"),
            (
                &connectors_field,
                "connectors-without-runtime",
                "connectors",
            ),
        ] {
            if !has_runtime
                && declared(field)
                && let Some((n, p)) = field
            {
                self.err(
                    code,
                    p,
                    n,
                    format!("{what} need a runtime to implement them"),
                    Some("declare extensions.dev.codetwo.runtime"),
                );
            }
        }

        Some(CodeTwo {
            standard_version: standard_version?,
            commands,
            runtime,
            ui,
            connectors,
            language_servers,
        })
    }

    fn commands(&mut self, node: &Node<'_>, ptr: &str) -> Vec<CommandDecl> {
        let Some(items) = self.c.array(node, ptr) else {
            return Vec::new();
        };
        if items.len() > self.opts.max_commands {
            self.err(
                "commands-too-many",
                ptr,
                node,
                format!(
                    "{} commands are declared; the limit is {}",
                    items.len(),
                    self.opts.max_commands
                ),
                Some("split the bundle or merge commands"),
            );
        }
        self.entries(items, ptr, |v, item, p, seen| v.command(item, p, seen))
    }

    /// Checks every entry of a declaration array with `entry`, which sees the ids met so far
    /// (for uniqueness), and keeps the entries that came out valid.
    fn entries<T>(
        &mut self,
        items: &[Node<'_>],
        ptr: &str,
        mut entry: impl FnMut(&mut Self, &Node<'_>, &str, &mut HashSet<String>) -> Option<T>,
    ) -> Vec<T> {
        let mut seen = HashSet::with_capacity(items.len());
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            // An index needs no escaping in a JSON pointer.
            if let Some(decl) = entry(self, item, &format!("{ptr}/{i}"), &mut seen) {
                out.push(decl);
            }
        }
        out
    }

    fn command(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        seen: &mut HashSet<String>,
    ) -> Option<CommandDecl> {
        let members = self.c.object(node, ptr)?;
        self.c
            .closed(members, ptr, &["id", "title", "description", "argsSchema"]);
        let id = self
            .c
            .string_field(node, ptr, "id", true)
            .map(|(n, p, id)| {
                self.command_id(n, &p, id);
                if !seen.insert(id.to_owned()) {
                    self.err(
                        "command-id-duplicate",
                        &p,
                        n,
                        format!("command id `{id}` is declared twice"),
                        Some("give every command a unique id"),
                    );
                }
                id.to_owned()
            });
        let title = self.bounded_text(
            node,
            ptr,
            "title",
            true,
            self.opts.max_title_chars,
            "title-empty",
            "title-too-long",
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
        let args_schema = self
            .c
            .field(node, ptr, "argsSchema", false)
            .and_then(|(n, p)| self.args_schema(n, &p));
        Some(CommandDecl {
            id: id?,
            title: title?,
            description,
            args_schema,
        })
    }

    fn command_id(&mut self, node: &Node<'_>, ptr: &str, id: &str) {
        let well_formed = id.contains('.')
            && id.split('.').all(|s| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            });
        if !well_formed {
            self.err(
                "command-id-invalid",
                ptr,
                node,
                format!("command id `{id}` is not `namespace.verb`"),
                Some("use two or more dot-separated segments of A-Z, a-z, 0-9, `_` and `-`, e.g. \"review.run\""),
            );
        }
        let n = chars(id);
        if n > self.opts.max_command_id_chars {
            self.err(
                "command-id-too-long",
                ptr,
                node,
                format!(
                    "command id is {n} characters; the limit is {}",
                    self.opts.max_command_id_chars
                ),
                Some("shorten the id"),
            );
        }
        let namespace = id.split('.').next().unwrap_or_default();
        if self
            .opts
            .reserved_namespaces
            .iter()
            .any(|r| r.eq_ignore_ascii_case(namespace))
        {
            self.err(
                "command-namespace-reserved",
                ptr,
                node,
                format!("namespace `{namespace}` belongs to the host"),
                Some("use a namespace of your own, such as your bundle's name"),
            );
        }
    }

    /// A string field bounded in characters: `required` fields must not be blank.
    #[expect(
        clippy::too_many_arguments,
        reason = "each argument is one of the field's rules"
    )]
    fn bounded_text(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        key: &str,
        required: bool,
        max: usize,
        empty_code: &'static str,
        long_code: &'static str,
    ) -> Option<String> {
        self.c
            .string_field(node, ptr, key, required)
            .map(|(n, p, s)| {
                self.text(n, &p, s, required, max, empty_code, long_code, key);
                s.to_owned()
            })
    }

    /// A human text: `required` ones must not be blank, and none may exceed `max` chars.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call shape for every bounded text field"
    )]
    fn text(
        &mut self,
        node: &Node<'_>,
        ptr: &str,
        s: &str,
        required: bool,
        max: usize,
        empty_code: &'static str,
        long_code: &'static str,
        what: &str,
    ) {
        if required && s.trim().is_empty() {
            self.err(
                empty_code,
                ptr,
                node,
                format!("`{what}` is empty or only whitespace"),
                Some(&format!("write a short {what}")),
            );
        }
        let n = chars(s);
        if n > max {
            self.err(
                long_code,
                ptr,
                node,
                format!("`{what}` is {n} characters; the limit is {max}"),
                Some(&format!("shorten it to at most {max} characters")),
            );
        }
    }

    fn args_schema(&mut self, node: &Node<'_>, ptr: &str) -> Option<serde_json::Value> {
        if node.as_object().is_none() {
            self.err(
                "args-schema-not-object",
                ptr,
                node,
                format!(
                    "`argsSchema` must be a JSON Schema object, found {}",
                    node.kind()
                ),
                Some("use an object such as { \"type\": \"object\" }"),
            );
            return None;
        }
        let before = self.c.sink.diagnostics.len();
        self.remote_refs(node, ptr);
        if let Some(meta) = node.get("$schema") {
            let p = pointer_push(ptr, "$schema");
            match meta.as_str() {
                Some(uri) if KNOWN_DRAFTS.contains(&uri.trim_end_matches('#')) => {}
                Some(uri) => self.err(
                    "args-schema-unknown-draft",
                    &p,
                    meta,
                    format!("`$schema` names a draft this validator does not know: `{uri}`"),
                    Some("omit `$schema` (draft 2020-12) or name draft-04, -06, -07, 2019-09 or 2020-12"),
                ),
                None => self.c.wrong_type(meta, &p, "a string"),
            }
        }
        let value = node.to_json();
        if self.c.sink.diagnostics.len() > before {
            // Compiling would only repeat these problems (or try to resolve a remote reference).
            return Some(value);
        }
        // One call reports both a meta-schema violation (with its path inside the schema) and
        // a schema that is well-formed but cannot compile (an invalid regex, say). The draft is
        // named here (one `KNOWN_DRAFTS` lists, or the default), which spares detecting it again.
        let draft = node.get("$schema").and_then(Node::as_str).map_or_else(
            jsonschema::Draft::default,
            jsonschema::Draft::from_schema_uri,
        );
        let problem = args_schema::check(&value, draft);
        if let Some((inner, message)) = problem {
            let p = format!("{ptr}{inner}");
            let at = node_at(node, &inner).unwrap_or(node);
            self.err(
                "args-schema-invalid",
                &p,
                at,
                format!("`argsSchema` is not a valid JSON Schema: {message}"),
                Some("fix the schema; see https://json-schema.org/draft/2020-12"),
            );
        }
        Some(value)
    }

    /// Reports every `$ref`-like keyword that is not a same-document fragment.
    fn remote_refs(&mut self, node: &Node<'_>, ptr: &str) {
        if let Some(members) = node.as_object() {
            for m in members {
                let p = pointer_push(ptr, &m.key);
                if matches!(m.key.as_ref(), "$ref" | "$dynamicRef" | "$recursiveRef")
                    && let Some(target) = m.value.as_str()
                    && !target.starts_with('#')
                {
                    self.err(
                        "args-schema-remote-ref",
                        &p,
                        &m.value,
                        format!("`{}` points outside the schema: `{target}`", m.key),
                        Some("inline the referenced schema under `$defs` and refer to it as \"#/$defs/name\""),
                    );
                }
                self.remote_refs(&m.value, &p);
            }
        } else if let Some(items) = node.as_array() {
            for (i, item) in items.iter().enumerate() {
                self.remote_refs(item, &pointer_push(ptr, &i.to_string()));
            }
        }
    }
}

/// `$schema` values (without a trailing `#`) for the drafts the jsonschema crate bundles.
const KNOWN_DRAFTS: [&str; 12] = [
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-06/schema",
    "https://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-04/schema",
    "https://json-schema.org/schema",
    "http://json-schema.org/schema",
];

/// The node at a JSON pointer below `node`, for pointing at a spot inside a nested schema.
fn node_at<'n, 's>(node: &'n Node<'s>, pointer: &str) -> Option<&'n Node<'s>> {
    let mut cur = node;
    for raw in pointer.split('/').skip(1) {
        let token = raw.replace("~1", "/").replace("~0", "~");
        cur = match &cur.value {
            json::Value::Object(_) => cur.get(&token)?,
            json::Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}
