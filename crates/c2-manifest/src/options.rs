//! Every limit the validators apply, with the defaults from the project's decisions.

use std::collections::BTreeSet;

use serde::Serialize;

/// The host-owned command namespaces a bundle may not claim (decisions.md, "Manifest").
pub const DEFAULT_RESERVED_NAMESPACES: [&str; 22] = [
    "plugins",
    "extensions",
    "kernel",
    "git",
    "engine",
    "providers",
    "workspace",
    "issues",
    "memory",
    "usage",
    "voice",
    "remote",
    "canvas",
    "document",
    "browser",
    "automation",
    "skills",
    "scenes",
    "terminal",
    "store",
    "connector",
    "notification",
];

/// Limits and policy for [`crate::validate_manifest`]. `Default` is the project's decisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestOptions {
    /// Command namespaces owned by the host; compared case-insensitively. An embedder may add more.
    pub reserved_namespaces: BTreeSet<String>,
    /// Deepest nesting of arrays and objects the parser accepts. It also bounds every recursion
    /// over the parsed tree, so keep it in the hundreds.
    pub max_depth: usize,
    /// Longest bundle `name`, in chars.
    pub max_name_chars: usize,
    /// Most entries in `commands`.
    pub max_commands: usize,
    /// Longest command id, in chars.
    pub max_command_id_chars: usize,
    /// Longest command `title` and ui `label`, in chars.
    pub max_title_chars: usize,
    /// Longest command and ui `description`, in chars.
    pub max_description_chars: usize,
    /// Longest ui, connector, provider and language-server id, in chars.
    pub max_local_id_chars: usize,
    /// Smallest ui `order`.
    pub min_ui_order: i32,
    /// Largest ui `order`.
    pub max_ui_order: i32,
    /// Largest ui `input`, in bytes of compact serialized JSON.
    pub max_ui_input_bytes: usize,
    /// Most languages a language server may claim.
    pub max_languages: usize,
}

impl Default for ManifestOptions {
    fn default() -> Self {
        // Inserted one by one: collecting sorts first, whose code is a cold start's page faults
        // in every SDK plugin (they validate their manifest at start).
        let mut reserved_namespaces = BTreeSet::new();
        for namespace in DEFAULT_RESERVED_NAMESPACES {
            reserved_namespaces.insert(namespace.to_owned());
        }
        Self {
            reserved_namespaces,
            max_depth: 128,
            max_name_chars: 64,
            max_commands: 100,
            max_command_id_chars: 128,
            max_title_chars: 80,
            max_description_chars: 300,
            max_local_id_chars: 64,
            min_ui_order: -100,
            max_ui_order: 100,
            max_ui_input_bytes: 16 * 1024,
            max_languages: 16,
        }
    }
}

/// Limits for [`crate::validate_skill_with`]. `Default` is the project's decisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillOptions {
    /// Longest `description`, in chars.
    pub max_description_chars: usize,
    /// Longest `name`, in chars.
    pub max_name_chars: usize,
    /// Longest `compatibility`, in chars.
    pub max_compatibility_chars: usize,
    /// Load, with warnings instead of errors, a skill whose only problems are a `name` that
    /// differs from its folder, a `description` longer than `max_description_chars`, or
    /// `metadata` values that are not strings (those values are left out), as the Agent Skills
    /// client-implementation guidance recommends for clients. Off by default, so validation
    /// reports every rule as an error; an embedder loading published skills may turn it on.
    pub lenient: bool,
}

impl Default for SkillOptions {
    fn default() -> Self {
        Self {
            max_description_chars: 1024,
            max_name_chars: 64,
            max_compatibility_chars: 500,
            lenient: false,
        }
    }
}
