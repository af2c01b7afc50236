//! Handshake rules: protocol version compatibility and exact command confirmation.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use crate::error::{CommandMismatch, ConfirmationError, VersionError};
use crate::types::InitializeResult;

/// Accepts the plugin's `protocolVersion` iff it parses as SemVer with the host's major version.
pub fn check_protocol_version(
    host: &semver::Version,
    plugin: Option<&str>,
) -> Result<semver::Version, VersionError> {
    let Some(found) = plugin else {
        return Err(VersionError::Missing { host: host.clone() });
    };
    let plugin = semver::Version::parse(found.trim()).map_err(|e| VersionError::Unparseable {
        host: host.clone(),
        found: found.to_owned(),
        reason: e.to_string(),
    })?;
    if plugin.major != host.major {
        return Err(VersionError::OtherMajor {
            host: host.clone(),
            plugin,
        });
    }
    Ok(plugin)
}

/// A command as the manifest declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredCommand {
    /// The command id.
    pub id: String,
    /// Its `argsSchema`, if declared; `Some(Value::Null)` counts as absent.
    pub args_schema: Option<Value>,
}

/// Checks that `result.commands` holds exactly the declared ids and schemas, and reports every
/// difference: missing, extra and duplicated commands, and changed schemas.
pub fn confirm_commands(
    declared: &[DeclaredCommand],
    result: &InitializeResult,
) -> Result<(), ConfirmationError> {
    let mut confirmed: BTreeMap<&str, Vec<Option<&Value>>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for command in &result.commands {
        let entry = confirmed.entry(command.name.as_str()).or_default();
        if entry.is_empty() {
            order.push(&command.name);
        }
        entry.push(present(command.schema.as_ref()));
    }
    let declared_ids: HashSet<&str> = declared.iter().map(|c| c.id.as_str()).collect();

    let mut mismatches = Vec::new();
    let mut seen = HashSet::new();
    for command in declared {
        if !seen.insert(command.id.as_str()) {
            continue;
        }
        if !confirmed.contains_key(command.id.as_str()) {
            mismatches.push(CommandMismatch::Missing {
                name: command.id.clone(),
            });
        }
    }
    for name in &order {
        if !declared_ids.contains(name) {
            mismatches.push(CommandMismatch::Extra {
                name: (*name).to_owned(),
            });
        }
    }
    for name in &order {
        let count = confirmed[name].len();
        if count > 1 {
            mismatches.push(CommandMismatch::Duplicated {
                name: (*name).to_owned(),
                count,
            });
        }
    }
    seen.clear();
    for command in declared {
        if !seen.insert(command.id.as_str()) {
            continue;
        }
        let Some(schemas) = confirmed.get(command.id.as_str()) else {
            continue;
        };
        let want = present(command.args_schema.as_ref());
        if let Some(got) = schemas.iter().find(|got| **got != want) {
            mismatches.push(CommandMismatch::SchemaChanged {
                name: command.id.clone(),
                declared: want.cloned(),
                confirmed: got.cloned(),
            });
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(ConfirmationError { mismatches })
    }
}

fn present(schema: Option<&Value>) -> Option<&Value> {
    schema.filter(|s| !s.is_null())
}
