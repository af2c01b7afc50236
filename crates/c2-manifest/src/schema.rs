//! A JSON Schema (draft 2020-12) for plugin.json with `extensions.dev.codetwo` 1.2.0.
//!
//! It exists so editors can complete and lint manifests. It follows the default options and is
//! deliberately no stricter than [`crate::validate_manifest`]: rules a schema cannot say (unique
//! ids, whitespace-only text, `--` in names, cross-references between arrays, argsSchema being a
//! valid schema) are left to the validator. A test holds every valid corpus case to it, and the
//! committed copy in docs/schemas/plugin.schema.json to this function.

use serde_json::{Value, json};

use crate::manifest::AGENT_PLUGINS_SCHEMA_URL;
use crate::model::{COMMAND_TIMEOUT_MS_RANGE, Capability, UiSlot};
use crate::options::ManifestOptions;

/// The `$id` of the published schema.
pub const PLUGIN_SCHEMA_ID: &str = "https://codetwo.dev/schemas/c2-1.2.0/plugin.schema.json";

/// The JSON Schema for plugin.json, built from the default limits.
pub fn plugin_json_schema() -> Value {
    let o = ManifestOptions::default();
    let strings = json!({ "type": "array", "items": { "type": "string" } });
    let env = json!({
        "type": "object",
        "propertyNames": { "minLength": 1, "pattern": "^[^=\\u0000]+$" },
        "additionalProperties": { "type": "string" }
    });
    let executable = json!({
        "type": "string",
        "minLength": 1,
        "pattern": "^(?![/\\\\])(?![A-Za-z]:)(?!(.*[/\\\\])?\\.\\.([/\\\\]|$)).*\\S.*$",
        "description": "An executable name (resolved in the bundle root, then PATH) or a bundle-relative path; never absolute, never `..`."
    });
    let safe_id = json!({
        "type": "string",
        "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$",
        "minLength": 1,
        "maxLength": o.max_local_id_chars
    });
    let command_id = json!({
        "type": "string",
        "pattern": "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)+$",
        "maxLength": o.max_command_id_chars
    });
    let title = json!({ "type": "string", "minLength": 1, "maxLength": o.max_title_chars });
    let description = json!({ "type": "string", "maxLength": o.max_description_chars });
    let slots: Vec<&str> = UiSlot::ALL.iter().map(|s| s.as_str()).collect();
    let capabilities: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();

    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": PLUGIN_SCHEMA_ID,
        "title": "C2 bundle manifest (plugin.json)",
        "description": "Agent Plugins 1.0.0 root with the C2 Plugin Standard 1.2.0 extension under extensions.dev.codetwo.",
        "type": "object",
        "additionalProperties": false,
        "required": ["$schema", "name", "extensions"],
        "properties": {
            "$schema": { "const": AGENT_PLUGINS_SCHEMA_URL },
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": o.max_name_chars,
                "pattern": "^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$"
            },
            "version": { "type": "string", "description": "Optional; SemVer recommended, required in a marketplace entry." },
            "description": { "type": "string" },
            "author": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "name": { "type": "string" },
                    "email": { "type": "string" },
                    "url": { "type": "string" }
                }
            },
            "homepage": { "type": "string" },
            "repository": { "type": "string" },
            "license": { "type": "string" },
            "keywords": strings,
            "extensions": {
                "type": "object",
                "required": ["dev.codetwo"],
                "additionalProperties": { "type": "object" },
                "properties": { "dev.codetwo": { "$ref": "#/$defs/codetwo" } }
            }
        },
        "$defs": {
            "codetwo": {
                "type": "object",
                "additionalProperties": false,
                "required": ["standardVersion"],
                "properties": {
                    "standardVersion": { "const": crate::manifest::STANDARD_VERSION },
                    "commands": { "type": "array", "maxItems": o.max_commands, "items": { "$ref": "#/$defs/command" } },
                    "runtime": { "$ref": "#/$defs/runtime" },
                    "ui": { "type": "array", "items": { "$ref": "#/$defs/ui" } },
                    "connectors": { "type": "array", "items": { "$ref": "#/$defs/connector" } },
                    "languageServers": { "type": "array", "items": { "$ref": "#/$defs/languageServer" } }
                }
            },
            "command": {
                "type": "object",
                "additionalProperties": false,
                "required": ["id", "title"],
                "properties": {
                    "id": command_id,
                    "title": title,
                    "description": description,
                    "argsSchema": { "type": "object", "description": "A JSON Schema (draft 2020-12 by default) for the command's arguments." }
                }
            },
            "runtime": {
                "type": "object",
                "additionalProperties": false,
                "required": ["command"],
                "properties": {
                    "command": executable,
                    "protocol": { "type": "string", "pattern": "^1\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)([-+].*)?$" },
                    "args": strings,
                    "env": env,
                    "inject": { "type": "array", "uniqueItems": true, "items": { "type": "string", "pattern": "\\S" } },
                    "optionalInject": { "type": "array", "uniqueItems": true, "items": { "type": "string", "pattern": "\\S" } },
                    "scopeSupport": {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": true,
                        "items": { "enum": ["user", "project"] }
                    },
                    "commandTimeoutMs": {
                        "type": "integer",
                        "minimum": *COMMAND_TIMEOUT_MS_RANGE.start(),
                        "maximum": *COMMAND_TIMEOUT_MS_RANGE.end(),
                        "description": "The host's deadline, in milliseconds, for each command call and host callback of this runtime."
                    }
                }
            },
            "ui": {
                "type": "object",
                "additionalProperties": false,
                "required": ["id", "slot", "label", "command"],
                "properties": {
                    "id": safe_id,
                    "slot": { "enum": slots },
                    "label": title,
                    "description": description,
                    "command": command_id,
                    "input": { "description": "Any JSON, at most 16 KiB serialized." },
                    "order": { "type": "integer", "minimum": o.min_ui_order, "maximum": o.max_ui_order }
                }
            },
            "connector": {
                "type": "object",
                "additionalProperties": false,
                "required": ["id", "provider", "command", "capabilities"],
                "properties": {
                    "id": safe_id,
                    "provider": safe_id,
                    "command": command_id,
                    "capabilities": {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": true,
                        "items": { "enum": capabilities }
                    }
                }
            },
            "languageServer": {
                "type": "object",
                "additionalProperties": false,
                "required": ["id", "languages", "command"],
                "properties": {
                    "id": safe_id,
                    "languages": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": o.max_languages,
                        "items": { "type": "string", "pattern": "\\S" }
                    },
                    "command": executable,
                    "args": strings,
                    "env": env
                }
            }
        }
    })
}
