//! What a check does before it spawns anything: the bundle's validation and the args each
//! declared command will be invoked with.

use std::collections::BTreeMap;

use c2_bundle_collector::CollectedBundle;
use c2_manifest::{CommandDecl, Manifest};
use serde_json::{Value, json};

use crate::hints;
use crate::report::CheckReport;

/// The optional file beside `plugin.json` holding example args: `{"<command id>": [args, ...]}`.
pub const EXAMPLES_FILE: &str = "examples.json";

/// The bundle check; the manifest when the bundle is valid.
pub(crate) fn validated<'b>(
    bundle: &'b CollectedBundle,
    report: &mut CheckReport,
) -> Option<&'b Manifest> {
    let errors: Vec<String> = bundle
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let at = match (&d.file, d.line) {
                (Some(file), Some(line)) => format!("{file}:{line}: "),
                (Some(file), None) => format!("{file}: "),
                _ => String::new(),
            };
            let help = d
                .help
                .as_deref()
                .map_or(String::new(), |h| format!(" ({h})"));
            format!("\n  {at}[{}] {}{help}", d.code, d.message)
        })
        .collect();
    match bundle.manifest.as_ref() {
        Some(manifest) if errors.is_empty() => {
            report.pass(
                "bundle",
                format!(
                    "{} {} is a valid bundle",
                    manifest.name,
                    manifest.version.as_deref().unwrap_or("-")
                ),
            );
            Some(manifest)
        }
        _ => {
            report.fail(
                "bundle",
                format!(
                    "the bundle is invalid ({} error(s)); fix these, {} shows them with their source lines:{}",
                    errors.len(),
                    hints::VALIDATE,
                    errors.concat()
                ),
            );
            None
        }
    }
}

/// The args each declared command is invoked with, in manifest order.
pub(crate) struct Invocation<'m> {
    pub(crate) command: &'m CommandDecl,
    pub(crate) args: Vec<Value>,
}

/// Chooses the args per command: the examples file's, else `{}` when the argsSchema admits it.
/// Commands that get none, and examples that break their schema, are reported here.
pub(crate) fn plan_invocations<'m>(
    bundle: &CollectedBundle,
    manifest: &'m Manifest,
    report: &mut CheckReport,
) -> Vec<Invocation<'m>> {
    let mut examples = read_examples(bundle, manifest, report);
    let mut plan = Vec::new();
    for command in &manifest.codetwo.commands {
        let validator = match command.args_schema.as_ref() {
            None | Some(Value::Null) => None,
            Some(schema) => match jsonschema::validator_for(schema) {
                Ok(validator) => Some(validator),
                Err(error) => {
                    report.fail(
                        format!("invoke {}", command.id),
                        format!(
                            "its argsSchema cannot be compiled ({error}); fix the schema in plugin.json"
                        ),
                    );
                    continue;
                }
            },
        };
        let admits = |args: &Value| validator.as_ref().is_none_or(|v| v.is_valid(args));
        let args = match examples.remove(&command.id) {
            Some(list) => {
                let mut admitted = Vec::new();
                for (index, args) in list.into_iter().enumerate() {
                    if admits(&args) {
                        admitted.push(args);
                        continue;
                    }
                    let why = validator
                        .as_ref()
                        .and_then(|v| v.iter_errors(&args).next())
                        .map_or_else(String::new, |e| format!(" at `{}`: {e}", e.instance_path()));
                    report.fail(
                        invoke_name(&command.id, &args),
                        format!(
                            "example {} of {EXAMPLES_FILE} does not match the command's argsSchema{why}; fix the example or the schema",
                            index + 1
                        ),
                    );
                }
                admitted
            }
            None if admits(&json!({})) => vec![json!({})],
            None => {
                report.pass(
                    format!("invoke {}", command.id),
                    format!(
                        "not invoked: its argsSchema does not admit {{}}; add example args to {EXAMPLES_FILE} ({{\"{}\": [{{...}}]}}) to exercise it",
                        command.id
                    ),
                );
                Vec::new()
            }
        };
        if !args.is_empty() {
            plan.push(Invocation { command, args });
        }
    }
    plan
}

/// Reads the optional examples file; problems with it are failed checks.
fn read_examples(
    bundle: &CollectedBundle,
    manifest: &Manifest,
    report: &mut CheckReport,
) -> BTreeMap<String, Vec<Value>> {
    let Some(file) = bundle.files.get(EXAMPLES_FILE) else {
        return BTreeMap::new();
    };
    let examples: BTreeMap<String, Vec<Value>> = match serde_json::from_slice(&file.bytes) {
        Ok(examples) => examples,
        Err(error) => {
            report.fail(
                EXAMPLES_FILE,
                format!(
                    "{EXAMPLES_FILE} is not an object of arrays of args ({error}); write {{\"<command id>\": [{{...args}}, ...]}}"
                ),
            );
            return BTreeMap::new();
        }
    };
    let unknown: Vec<&str> = examples
        .keys()
        .filter(|id| !manifest.codetwo.commands.iter().any(|c| &c.id == *id))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        let count: usize = examples.values().map(Vec::len).sum();
        report.pass(EXAMPLES_FILE, format!("{count} example(s) read"));
    } else {
        report.fail(
            EXAMPLES_FILE,
            format!(
                "{EXAMPLES_FILE} names command(s) plugin.json does not declare: {}; use the ids of extensions.dev.codetwo.commands",
                unknown.join(", ")
            ),
        );
    }
    examples
}

pub(crate) fn invoke_name(id: &str, args: &Value) -> String {
    if args == &json!({}) {
        format!("invoke {id}")
    } else {
        format!("invoke {id} {args}")
    }
}
